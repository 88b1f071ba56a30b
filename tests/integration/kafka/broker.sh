#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft, combined broker+controller) for
# sluice's tests, listening on 127.0.0.1 only.
#
#   broker.sh fetch    download the jars with mvn (cached; a second run is offline)
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
#   broker.sh libdir   print the folder of the broker's jars (fetch first)
#   broker.sh java ARGS...
#                      java with the broker's jars on the class path and
#                      their logging off: the tests' Java tools
#                      (tests/tools/*.java) and Kafka's command classes
#
# Environment: SLUICE_TEST_KAFKA_PORT (default 39092), SLUICE_TEST_KAFKA_DIR
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
port=${SLUICE_TEST_KAFKA_PORT:-39092}
cport=$((port + 1))
dir=${SLUICE_TEST_KAFKA_DIR:-/tmp/sluice-test-kafka-$port}
lib=$here/target/lib
pidfile=$dir/broker.pid
log=$dir/broker.log
start_deadline=${SLUICE_TEST_KAFKA_START_TIMEOUT:-90}

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

fetch() {
    if [ -f "$lib/kafka_2.13-3.9.1.jar" ]; then
        return 0
    fi
    echo "broker: fetching Apache Kafka jars with mvn" >&2
    (cd "$here" && mvn -q -B dependency:copy-dependencies \
        -DoutputDirectory=target/lib -DincludeScope=runtime) >&2
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
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
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
    # shellcheck disable=SC2086 # word-split on purpose: key=value pairs
    [ -z "${SLUICE_TEST_KAFKA_PROPS:-}" ] ||
        printf '%s\n' $SLUICE_TEST_KAFKA_PROPS >>"$dir/server.properties"
    cat >"$dir/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.log.LogCleaner=INFO
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.kafka.request.logger=WARN
EOF
}

java_cmd() {
    java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
        -Dlog4j.configuration="file:$dir/log4j.properties" \
        -cp "$lib/*" "$@"
}

start() {
    if running_pid >/dev/null && answers; then
        echo "broker: already running on 127.0.0.1:$port" >&2
        return 0
    fi
    stop >/dev/null 2>&1 || true
    fetch
    rm -rf "$dir"
    mkdir -p "$dir/data"
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
        ${SLUICE_TEST_KAFKA_JVM_OPTS:-} \
        -Dlog4j.configuration="file:$dir/log4j.properties" \
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
    echo "broker: up on 127.0.0.1:$port in ${ms} ms (log: $log)" >&2
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
java)
    shift
    [ -f "$lib/kafka_2.13-3.9.1.jar" ] || {
        echo "broker: no Kafka jars in $lib (broker.sh fetch)" >&2
        exit 1
    }
    # Logging off, as the tests' tools have always run: stdout is theirs.
    exec java -Dlog4j.configuration=file:/dev/null -cp "$lib/*" "$@"
    ;;
*)
    echo "usage: $0 fetch|start|stop|restart [DOWN_SECONDS]|pause|resume|status|logs [N]|bootstrap|libdir|java ARGS..." >&2
    exit 2
    ;;
esac
