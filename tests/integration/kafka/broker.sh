#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A single-node Apache Kafka broker (KRaft, combined broker+controller) for
# sluice's tests, listening on 127.0.0.1 only.
#
#   broker.sh fetch    download the jars with mvn into target/lib-VERSION
#                      (cached; a second run does not call mvn)
#   broker.sh start    fetch, format a fresh data dir, start, wait until it answers
#   broker.sh stop     stop it (harmless when it is not running; a paused
#                      broker is resumed first, and killed if it will not go)
#   broker.sh restart [DOWN_SECONDS]
#                      stop it, keep its data dir, stay down DOWN_SECONDS
#                      (default 0), start it again on the same port and wait
#                      until it answers (fault tests)
#   broker.sh pause    SIGSTOP the broker JVM: connections stay open, nothing
#                      answers (fault tests)
#   broker.sh resume   SIGCONT it
#   broker.sh status   exit 0 when it answers
#   broker.sh logs     print the tail of the broker log (tests call it on failure)
#   broker.sh bootstrap
#                      print its bootstrap address
#   broker.sh libdir   print the folder of the version's jars (fetch first)
#   broker.sh common-props
#                      print the server.properties lines every test broker
#                      shares (cluster.sh's nodes)
#   broker.sh logconf DIR LOG
#                      write the version's logging file into DIR (the log
#                      goes to LOG) and print the JVM option that reads it
#                      (cluster.sh's nodes)
#   broker.sh java ARGS...
#                      java with the version's jars on the class path and
#                      their logging off: the tests' Java tools
#                      (tests/tools/*.java) and Kafka's command classes
#
# Environment: SLUICE_TEST_KAFKA_VERSION (the Apache Kafka release, default
# 3.9.1; 3.9.x and 4.1.x are tested: Kafka 4 logs with Log4j 2, see
# write_config), SLUICE_TEST_KAFKA_PORT (default 39092), SLUICE_TEST_KAFKA_DIR
# (runtime dir: data, log and pid; default /tmp/sluice-test-kafka-$PORT),
# SLUICE_TEST_KAFKA_JVM_OPTS (more JVM options for the broker, e.g.
# -Xlog:gc:file=/tmp/gc.log to see its pauses), SLUICE_TEST_KAFKA_PROPS
# (more server.properties lines, space-separated key=value, appended last so
# they win; e.g. transaction.partition.verification.enable=false to measure
# what Kafka's transaction verification costs, bench/NOTES.md).
#
# The log cleaner is tuned to act within seconds so tests can watch compaction.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${SLUICE_TEST_KAFKA_VERSION:-3.9.1}
port=${SLUICE_TEST_KAFKA_PORT:-39092}
cport=$((port + 1))
dir=${SLUICE_TEST_KAFKA_DIR:-/tmp/sluice-test-kafka-$port}
lib=$here/target/lib-$version
pidfile=$dir/broker.pid
log=$dir/broker.log
start_deadline=${SLUICE_TEST_KAFKA_START_TIMEOUT:-90}

# The logging backend, as each release's own distribution ships it: Kafka
# 3.x logs through SLF4J to reload4j (log4j 1 properties), Kafka 4.x through
# SLF4J to Log4j 2 (log4j-slf4j-impl; -Dlog4j2.configurationFile).  pom.xml
# has a profile of the same name for each.
case $version in
*[!0-9.]*) logging= ;;
3.*.*) logging=reload4j ;;
4.*.*) logging=log4j2 ;;
*) logging= ;;
esac
[ -n "$logging" ] || {
    echo "broker: SLUICE_TEST_KAFKA_VERSION=$version: not a Kafka 3.x or 4.x release such as 3.9.1 (3.9.x and 4.1.x are tested)" >&2
    exit 2
}

answers() {
    kcat -b "127.0.0.1:$port" -L -m 3 -J >/dev/null 2>&1
}

running_pid() {
    [ -f "$pidfile" ] || return 1
    local pid
    pid=$(cat "$pidfile")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

# mvn_copy DIR [MVN ARGS] — the version's runtime jars into DIR.
mvn_copy() {
    local out=$1
    shift
    (cd "$here" && mvn -q -B dependency:copy-dependencies \
        -Dkafka.version="$version" -DoutputDirectory="$out" \
        -DincludeScope=runtime "$@") >&2
}

# fetch — the version's jars into $lib.  They are copied into a fresh
# folder that is renamed to $lib only once mvn succeeded, so a folder named
# for a version always holds all of its jars and the next run needs no mvn.
# Kafka 4's Log4j 2 binding is of the Log4j 2 release its kafka-server pom
# picks (log4j-core), so a first copy without a binding finds it out.
fetch() {
    if [ -f "$lib/kafka_2.13-$version.jar" ]; then
        return 0
    fi
    echo "broker: fetching Apache Kafka $version jars with mvn" >&2
    mkdir -p "$here/target"
    local tmp core
    tmp=$(mktemp -d "$lib.part.XXXXXX")
    if [ "$logging" = log4j2 ]; then
        # '!reload4j': no binding profile at all.
        mvn_copy "$tmp" -P '!reload4j' && core=$(ls "$tmp"/log4j-core-*.jar) &&
            core=${core##*/log4j-core-} &&
            mvn_copy "$tmp" -P log4j2 -Dlog4j2.version="${core%.jar}"
    else
        mvn_copy "$tmp" -P reload4j
    fi || {
        rm -rf "$tmp"
        echo "broker: mvn could not fetch Apache Kafka $version" >&2
        return 1
    }
    [ -f "$tmp/kafka_2.13-$version.jar" ] || {
        rm -rf "$tmp"
        echo "broker: mvn fetched no kafka_2.13-$version.jar" >&2
        return 1
    }
    if ! mv -T "$tmp" "$lib" 2>/dev/null; then
        rm -rf "$tmp"
        # Another fetch of the same version won the race, or $lib is a
        # leftover of something else.
        [ -f "$lib/kafka_2.13-$version.jar" ] || {
            echo "broker: $lib is in the way (no kafka_2.13-$version.jar in it)" >&2
            return 1
        }
    fi
}

# common_props — the settings every test broker shares, single or in a
# cluster (cluster.sh: broker.sh common-props).
common_props() {
    cat <<EOF
num.partitions=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
# Make the cleaner visible within seconds.
log.cleaner.backoff.ms=500
log.cleaner.min.compaction.lag.ms=0
log.cleaner.min.cleanable.ratio=0.01
log.segment.delete.delay.ms=1000
log.retention.check.interval.ms=1000
log.cleaner.dedupe.buffer.size=33554432
# Transactions: short timeouts so an aborted producer does not stall tests.
transaction.abort.timed.out.transaction.cleanup.interval.ms=2000
transaction.remove.expired.transaction.cleanup.interval.ms=10000
EOF
}

write_config() {
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
EOF
    common_props >>"$dir/server.properties"
    # shellcheck disable=SC2086 # word-split on purpose: key=value pairs
    [ -z "${SLUICE_TEST_KAFKA_PROPS:-}" ] ||
        printf '%s\n' $SLUICE_TEST_KAFKA_PROPS >>"$dir/server.properties"
    write_log_config "$dir" "$log"
}

# write_log_config DIR LOG — the logging backend's file in DIR, sending
# everything to LOG: the same levels and the one file, in each backend's
# own format (cluster.sh uses it for its nodes too: broker.sh logconf).
write_log_config() {
    local d=$1 f=$2
    if [ "$logging" = reload4j ]; then
        cat >"$d/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$f
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.kafka.request.logger=WARN
EOF
    else
        cat >"$d/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $f
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = INFO
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
# New in Kafka 4.1: a WARN at each retention check (every second here) for
# each segment holding a timestamp ahead of the clock, as 0127 writes; it
# would fill the log tail that run.sh prints for a failing test.
logger.future.name = LogFutureTimestampLogger
logger.future.level = ERROR
EOF
    fi
}

# log_opts — the JVM option that points the backend at write_config's file.
log_opts() {
    local d=${1:-$dir}
    if [ "$logging" = reload4j ]; then
        echo "-Dlog4j.configuration=file:$d/log4j.properties"
    else
        echo "-Dlog4j2.configurationFile=$d/log4j2.properties"
    fi
}

# A short-lived JVM (the storage tool, the tests' tools): the quick
# compiler alone and the serial collector (a broker's own start took 4
# CPU-s here, 2 with the quick compiler alone).
quick_jvm="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

java_cmd() {
    # shellcheck disable=SC2086 # word-split on purpose: a list of options
    java $quick_jvm -Xmx1g -Djava.awt.headless=true "$(log_opts)" \
        -cp "$lib/*" "$@"
}

# same_version — fails when the broker in $dir runs another Kafka release
# than SLUICE_TEST_KAFKA_VERSION asks for: tests meant for one version must
# not quietly run against the other, nor a restart upgrade its data.  A dir
# without a version file is from before the choice, which was 3.9.1 only.
same_version() {
    local was
    was=$(cat "$dir/version" 2>/dev/null) || was=3.9.1
    [ "$was" = "$version" ] && return 0
    echo "broker: the broker in $dir is Kafka $was, not $version (SLUICE_TEST_KAFKA_VERSION); stop it first" >&2
    return 1
}

start() {
    if running_pid >/dev/null && answers; then
        same_version || return 1
        echo "broker: Kafka $version already running on 127.0.0.1:$port" >&2
        return 0
    fi
    stop >/dev/null 2>&1 || true
    fetch
    rm -rf "$dir"
    mkdir -p "$dir/data"
    echo "$version" >"$dir/version"
    write_config
    java_cmd kafka.tools.StorageTool format -t "sluice-test-cluster-0001" \
        -c "$dir/server.properties" --ignore-formatted >"$dir/format.log" 2>&1 || {
        cat "$dir/format.log" >&2
        return 1
    }
    launch
}

# launch — starts the JVM on the data dir as it is and waits until the
# broker answers.
launch() {
    local t0
    t0=$(date +%s%N)
    # shellcheck disable=SC2086 # word-split on purpose: a list of options
    nohup java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
        ${SLUICE_TEST_KAFKA_JVM_OPTS:-} "$(log_opts)" \
        -cp "$lib/*" kafka.Kafka "$dir/server.properties" \
        >>"$dir/stdout.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    local end=$(($(date +%s) + start_deadline))
    until answers; do
        if ! running_pid >/dev/null; then
            echo "broker: exited during start" >&2
            tail -50 "$dir/stdout.log" "$log" >&2 2>/dev/null || true
            return 1
        fi
        if [ "$(date +%s)" -ge "$end" ]; then
            echo "broker: did not answer within ${start_deadline}s" >&2
            tail -50 "$log" >&2 2>/dev/null || true
            stop
            return 1
        fi
        sleep 0.2
    done
    local ms=$((($(date +%s%N) - t0) / 1000000))
    echo "broker: Kafka $version up on 127.0.0.1:$port in ${ms} ms (log: $log)" >&2
}

stop() {
    local pid
    if ! pid=$(running_pid); then
        rm -f "$pidfile"
        return 0
    fi
    # A paused JVM ignores SIGTERM until it runs again.
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "broker: did not stop in 30s; killing" >&2
        kill -9 "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$pidfile"
    echo "broker: stopped" >&2
}

# restart [DOWN_SECONDS] — the same broker, data kept: stop, stay down,
# start again.
restart() {
    local down=${1:-0}
    [ -f "$dir/server.properties" ] || {
        echo "broker: nothing to restart in $dir (start it first)" >&2
        return 1
    }
    same_version || return 1
    stop
    # The port must be free before the JVM binds it again.
    local end=$(($(date +%s) + 30))
    while ss -Htln "sport = :$port" 2>/dev/null | grep -q .; do
        if [ "$(date +%s)" -ge "$end" ]; then
            echo "broker: port $port still bound 30s after stop" >&2
            return 1
        fi
        sleep 0.2
    done
    [ "$down" = 0 ] || sleep "$down"
    launch
}

# signal_broker SIG — sends SIG to the running broker JVM.
signal_broker() {
    local pid
    pid=$(running_pid) || {
        echo "broker: not running on 127.0.0.1:$port" >&2
        return 1
    }
    kill -s "$1" "$pid"
}

case "${1:-}" in
fetch) fetch ;;
start) start ;;
stop) stop ;;
restart) restart "${2:-0}" ;;
pause) signal_broker STOP ;;
resume) signal_broker CONT ;;
status) answers ;;
logs) tail -n "${2:-200}" "$log" 2>/dev/null || true ;;
bootstrap) echo "127.0.0.1:$port" ;;
libdir) echo "$lib" ;;
common-props) common_props ;;
logconf)
    # logconf DIR LOG — writes the version's logging file into DIR, sending
    # the log to LOG, and prints the JVM option that reads it.
    write_log_config "$2" "$3"
    log_opts "$2"
    ;;
java)
    shift
    [ -f "$lib/kafka_2.13-$version.jar" ] || {
        echo "broker: no Kafka $version jars in $lib (broker.sh fetch)" >&2
        exit 1
    }
    # Logging off, as the tests' tools have always run: stdout is theirs.
    # Log4j 2 with no file of its own prints its ERROR lines there, and
    # takes reload4j's -Dlog4j.configuration for a file it cannot read.
    if [ "$logging" = reload4j ]; then
        off=-Dlog4j.configuration=file:/dev/null
    else
        off=-Dlog4j2.level=OFF
    fi
    # shellcheck disable=SC2086 # word-split on purpose: a list of options
    exec java $quick_jvm "$off" -cp "$lib/*" "$@"
    ;;
*)
    echo "usage: $0 fetch|start|stop|restart [DOWN_SECONDS]|pause|resume|status|logs [N]|bootstrap|libdir|java ARGS..." >&2
    exit 2
    ;;
esac
