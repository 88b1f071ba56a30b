#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A three-node Apache Kafka cluster (KRaft, each node a combined
# broker+controller) for sluice's cluster fault tests, each node in a
# network namespace of its own.  Needs root (ip netns, iptables).
#
#   198.18.NET.1      the host side: a bridge in the root namespace, where
#                     sluice and the tests' readers and writers run
#   198.18.NET.1{1,2,3}
#                     node 1, 2, 3, each in netns slcNETnI behind a veth
#                     pair on the bridge
#
# Every topic is replicated on all three nodes (default.replication.factor,
# __consumer_offsets and __transaction_state: 3), min.insync.replicas=2.
# Each node listens on
#   :9092 INTERNAL    between the nodes (replication)
#   :9093 CONTROLLER  the KRaft quorum
#   :9094 CLIENT      clients, advertised as the node's own address
#   :9095 PROXIED     clients, advertised as 198.18.NET.1:1909I, where a
#                     delaying proxy (tests/tools/slowproxy.c) forwards to
#                     it: a client that bootstraps there (bootstrap-proxied)
#                     reaches node I only through its proxy, so `slow` can
#                     delay one node's link
#
# With SLUICE_TEST_CLUSTER_SASL=1 at start, each node also listens on
#   :9096 SECURE      SASL_SSL, SCRAM-SHA-512 over TLS (a CA and node
#                     certificates made with openssl at start, the CA in
#                     DIR/tls/ca.pem), users admin and sluice (passwords
#                     admin-secret, sluice-secret), and the StandardAuthorizer
#                     decides: super users are User:admin and User:ANONYMOUS
#                     (the plaintext listeners: the harness's own clients
#                     and the nodes themselves); nobody else may do what no
#                     ACL allows (allow.everyone.if.no.acl.found=false).
#
#   cluster.sh start          fetch the jars (broker.sh fetch), make the
#                             namespaces, format, start all three nodes and
#                             their proxies, wait until each answers and the
#                             cluster has three brokers
#   cluster.sh stop           stop everything, remove the namespaces, the
#                             bridge and the data (harmless when nothing runs)
#   cluster.sh kill I         kill -9 node I (its data stays)
#   cluster.sh up I           start node I again on its data; wait until it
#                             answers
#   cluster.sh restart I      graceful stop of node I, then up I
#   cluster.sh pause I | resume I
#                             SIGSTOP / SIGCONT node I
#   cluster.sh cut I [both|in|out]
#                             drop packets between node I and the host side
#                             (in: host to node only; out: node to host only)
#   cluster.sh isolate I      drop packets between node I and the other two
#                             nodes; the host side still reaches it
#   cluster.sh heal [I]       remove every cut and isolation (of node I)
#   cluster.sh slow I MS      delay node I's proxied link by MS each way
#                             (0 undoes it)
#   cluster.sh bootstrap      the CLIENT listeners, comma-separated
#   cluster.sh bootstrap-proxied
#                             the proxies' addresses, comma-separated
#   cluster.sh bootstrap-secure
#                             the SECURE listeners (SASL), comma-separated
#   cluster.sh ca             the CA file a SECURE client trusts
#                             the proxies' addresses, comma-separated
#   cluster.sh addr I         node I's address
#   cluster.sh leader TOPIC P the node id leading partition P of TOPIC
#   cluster.sh status [I]     exit 0 when node I (every node) answers
#   cluster.sh logs I [N]     the tail of node I's log
#   cluster.sh pids           the node JVMs' pids, one line each "I PID"
#
# Environment: SLUICE_TEST_KAFKA_VERSION (as broker.sh: 3.9.x, 4.1.x),
# SLUICE_TEST_CLUSTER_NET (0-255, the third octet; default 0),
# SLUICE_TEST_CLUSTER_DIR (default /tmp/sluice-test-cluster-NET),
# SLUICE_TEST_CLUSTER_PROPS (more server.properties lines for every node,
# space-separated key=value), SLUICE_TEST_KAFKA_JVM_OPTS (more JVM options
# for every node, as broker.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
broker=$here/broker.sh
version=${SLUICE_TEST_KAFKA_VERSION:-3.9.1}
net=${SLUICE_TEST_CLUSTER_NET:-0}
dir=${SLUICE_TEST_CLUSTER_DIR:-/tmp/sluice-test-cluster-$net}
prefix=slc$net
bridge=${prefix}br
host=198.18.$net.1
nodes=(1 2 3)
start_deadline=${SLUICE_TEST_KAFKA_START_TIMEOUT:-120}
proxy_bin=${SLUICE_TOOLS_DIR:-$here/../../../build/tools}/slowproxy

case $net in
'' | *[!0-9]*) net=256 ;;
esac
[ "$net" -le 255 ] || {
    echo "cluster: SLUICE_TEST_CLUSTER_NET must be 0-255" >&2
    exit 2
}

addr() { echo "198.18.$net.$((10 + $1))"; }
ns() { echo "${prefix}n$1"; }
ndir() { echo "$dir/n$1"; }
in_ns() {
    local i=$1
    shift
    ip netns exec "$(ns "$i")" "$@"
}

node_ok() {
    case ${1:-} in
    1 | 2 | 3) return 0 ;;
    *)
        echo "cluster: no node '${1:-}' (1, 2 or 3)" >&2
        exit 2
        ;;
    esac
}

answers() {
    kcat -b "$(addr "$1"):9094" -L -m 3 -J >/dev/null 2>&1
}

running_pid() {
    local f
    f=$(ndir "$1")/node.pid
    [ -f "$f" ] || return 1
    local pid
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

# net_up — the bridge, with the host side's address, and per node a
# namespace joined to it by a veth pair.
net_up() {
    ip link add "$bridge" type bridge
    ip addr add "$host/24" dev "$bridge"
    ip link set "$bridge" up
    local i
    for i in "${nodes[@]}"; do
        ip netns add "$(ns "$i")"
        ip link add "${prefix}v$i" type veth peer name eth0 netns "$(ns "$i")"
        ip link set "${prefix}v$i" master "$bridge" up
        in_ns "$i" ip link set lo up
        in_ns "$i" ip addr add "$(addr "$i")/24" dev eth0
        in_ns "$i" ip link set eth0 up
    done
}

net_down() {
    local i
    for i in "${nodes[@]}"; do
        if ip netns list | grep -qw "$(ns "$i")"; then
            # Whatever still runs in there (a node that did not stop).
            ip netns pids "$(ns "$i")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
            ip netns del "$(ns "$i")" 2>/dev/null || true
        fi
        ip link del "${prefix}v$i" 2>/dev/null || true
    done
    ip link del "$bridge" 2>/dev/null || true
}

write_config() {
    local i=$1 d voters="" j
    d=$(ndir "$i")
    for j in "${nodes[@]}"; do voters="$voters${voters:+,}$j@$(addr "$j"):9093"; done
    local listeners advertised map
    listeners="INTERNAL://$(addr "$i"):9092,CONTROLLER://$(addr "$i"):9093,CLIENT://$(addr "$i"):9094,PROXIED://$(addr "$i"):9095"
    advertised="INTERNAL://$(addr "$i"):9092,CLIENT://$(addr "$i"):9094,PROXIED://$host:$((19090 + i))"
    map="INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT,PROXIED:PLAINTEXT"
    if [ -e "$dir/sasl" ]; then
        listeners="$listeners,SECURE://$(addr "$i"):9096"
        advertised="$advertised,SECURE://$(addr "$i"):9096"
        map="$map,SECURE:SASL_SSL"
    fi
    cat >"$d/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$map
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
log.dirs=$d/data
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=6
# A follower that stops fetching leaves the ISR after 10 s (default 30 s),
# so the faults' ISR changes happen within a test's bounded run.
replica.lag.time.max.ms=10000
EOF
    "$broker" common-props >>"$d/server.properties"
    [ ! -e "$dir/sasl" ] || cat >>"$d/server.properties" <<EOF
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.secure.sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.secure.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$dir/tls/n$i.pem
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
allow.everyone.if.no.acl.found=false
EOF
    # shellcheck disable=SC2086 # word-split on purpose: key=value pairs
    [ -z "${SLUICE_TEST_CLUSTER_PROPS:-}" ] ||
        printf '%s\n' $SLUICE_TEST_CLUSTER_PROPS >>"$d/server.properties"
}

# launch I — node I's JVM in its namespace on its data dir as it is; waits
# until it answers (the others may be down: a node answers metadata once
# it is a broker, which needs a controller quorum of two).
launch() {
    local i=$1 d lib logopt t0
    d=$(ndir "$i")
    lib=$("$broker" libdir)
    logopt=$(cat "$d/logopt")
    t0=$(date +%s%N)
    # ip netns exec execs java: $! is the JVM's pid.
    # shellcheck disable=SC2086 # word-split on purpose: a list of options
    nohup ip netns exec "$(ns "$i")" java -Xms256m -Xmx768m -XX:+UseG1GC \
        -Djava.awt.headless=true ${SLUICE_TEST_KAFKA_JVM_OPTS:-} "$logopt" -cp "$lib/*" kafka.Kafka \
        "$d/server.properties" >>"$d/stdout.log" 2>&1 </dev/null &
    echo $! >"$d/node.pid"
    [ "${2:-wait}" = wait ] || return 0
    wait_answers "$i" "$t0"
}

wait_answers() {
    local i=$1 t0=$2 end=$(($(date +%s) + start_deadline))
    until answers "$i"; do
        if ! running_pid "$i" >/dev/null; then
            echo "cluster: node $i exited during start" >&2
            tail -30 "$(ndir "$i")/stdout.log" "$(ndir "$i")/node.log" >&2 2>/dev/null || true
            return 1
        fi
        if [ "$(date +%s)" -ge "$end" ]; then
            echo "cluster: node $i did not answer within ${start_deadline}s" >&2
            tail -30 "$(ndir "$i")/node.log" >&2 2>/dev/null || true
            return 1
        fi
        sleep 0.3
    done
    echo "cluster: node $i ($(addr "$i")) up in $((($(date +%s%N) - t0) / 1000000)) ms" >&2
}

proxies_up() {
    [ -x "$proxy_bin" ] || {
        echo "cluster: $proxy_bin is missing (make build/tools/slowproxy)" >&2
        return 1
    }
    local i
    for i in "${nodes[@]}"; do
        echo 0 >"$(ndir "$i")/delay_ms"
        nohup "$proxy_bin" "$host:$((19090 + i))" "$(addr "$i"):9095" \
            "$(ndir "$i")/delay_ms" >>"$(ndir "$i")/proxy.log" 2>&1 </dev/null &
        echo $! >"$(ndir "$i")/proxy.pid"
    done
}

# make_tls — a CA and, per node, a key and a certificate for its address
# (PEM: the key, then the certificate, the keystore Kafka reads).
make_tls() {
    local t=$dir/tls i
    mkdir -p "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$t/ca.key" -out "$t/ca.pem" \
        -days 2 -subj /CN=sluice-test-ca 2>/dev/null
    for i in "${nodes[@]}"; do
        openssl req -newkey rsa:2048 -nodes -keyout "$t/n$i.key" -out "$t/n$i.csr" \
            -subj "/CN=node$i" 2>/dev/null
        printf 'subjectAltName=IP:%s\n' "$(addr "$i")" >"$t/n$i.ext"
        openssl x509 -req -in "$t/n$i.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" \
            -CAcreateserial -out "$t/n$i.crt" -days 2 -extfile "$t/n$i.ext" 2>/dev/null
        cat "$t/n$i.key" "$t/n$i.crt" >"$t/n$i.pem"
    done
}

brokers_seen() {
    kcat -b "$(bootstrap)" -L -J 2>/dev/null |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)["brokers"]))' 2>/dev/null
}

start() {
    [ "$(id -u)" = 0 ] || {
        echo "cluster: needs root (ip netns, iptables)" >&2
        return 1
    }
    command -v iptables >/dev/null || {
        echo "cluster: iptables is missing (make deps installs it)" >&2
        return 1
    }
    # Another cluster of the same NET (another test's, DIR elsewhere) still
    # running: clearing it would break that test; refuse instead.
    local i
    for i in "${nodes[@]}"; do
        if [ -n "$(ip netns pids "$(ns "$i")" 2>/dev/null)" ] && ! running_pid "$i" >/dev/null; then
            echo "cluster: namespace $(ns "$i") is in use by another cluster (stop it, or give SLUICE_TEST_CLUSTER_NET another value)" >&2
            return 1
        fi
    done
    stop >/dev/null 2>&1 || true
    "$broker" fetch
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "$version" >"$dir/version"
    local scram=()
    if [ "${SLUICE_TEST_CLUSTER_SASL:-0}" = 1 ]; then
        touch "$dir/sasl"
        make_tls
        scram=(--add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]'
            --add-scram 'SCRAM-SHA-512=[name=sluice,password=sluice-secret]')
    fi
    net_up
    local id t0
    # A Kafka Uuid in base64; not one starting with "-", which the storage
    # tool would take for an option (Kafka's own Uuid.randomUuid() skips
    # those too).
    id=$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break')
    # The three nodes' storage formatted at once (a JVM each).
    local fpids=()
    for i in "${nodes[@]}"; do
        mkdir -p "$(ndir "$i")/data"
        write_config "$i"
        "$broker" logconf "$(ndir "$i")" "$(ndir "$i")/node.log" >"$(ndir "$i")/logopt"
        "$broker" java kafka.tools.StorageTool format -t "$id" \
            -c "$(ndir "$i")/server.properties" --ignore-formatted "${scram[@]}" \
            >"$(ndir "$i")/format.log" 2>&1 &
        fpids+=($!)
    done
    for i in "${nodes[@]}"; do
        wait "${fpids[$((i - 1))]}" || {
            cat "$(ndir "$i")/format.log" >&2
            return 1
        }
    done
    proxies_up
    t0=$(date +%s%N)
    for i in "${nodes[@]}"; do launch "$i" nowait; done
    for i in "${nodes[@]}"; do wait_answers "$i" "$t0" || return 1; done
    local end=$(($(date +%s) + 60))
    until [ "$(brokers_seen)" = 3 ]; do
        [ "$(date +%s)" -lt "$end" ] || {
            echo "cluster: the nodes answer but the cluster has not three brokers after 60 s" >&2
            return 1
        }
        sleep 0.3
    done
    echo "cluster: Kafka $version, 3 nodes up in $((($(date +%s%N) - t0) / 1000000)) ms: $(bootstrap)" >&2
}

stop_node() {
    local i=$1 pid sig=${2:-TERM}
    pid=$(running_pid "$i") || return 0
    kill -CONT "$pid" 2>/dev/null || true
    kill -s "$sig" "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "cluster: node $i did not stop in 30 s; killing" >&2
        kill -9 "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$(ndir "$i")/node.pid"
}

stop() {
    local i pid
    # Nodes first, all at once: a node stopping alone waits for the
    # controller quorum to hear of it.
    for i in "${nodes[@]}"; do
        pid=$(running_pid "$i") && {
            kill -CONT "$pid" 2>/dev/null || true
            kill -9 "$pid" 2>/dev/null || true
        }
    done
    for i in "${nodes[@]}"; do
        stop_node "$i" KILL
        if [ -f "$(ndir "$i")/proxy.pid" ]; then
            kill "$(cat "$(ndir "$i")/proxy.pid")" 2>/dev/null || true
            rm -f "$(ndir "$i")/proxy.pid"
        fi
    done
    net_down
    rm -rf "$dir"
    echo "cluster: stopped" >&2
}

up() {
    local i=$1
    running_pid "$i" >/dev/null && answers "$i" && return 0
    [ -f "$(ndir "$i")/server.properties" ] || {
        echo "cluster: nothing to start in $(ndir "$i") (cluster.sh start first)" >&2
        return 1
    }
    launch "$i"
}

# rules I CHAIN... — (re)writes node I's DROP rules: cut (host side) and
# iso (the other nodes) are kept in files so that heal undoes them.
apply_rules() {
    local i=$1 d
    d=$(ndir "$i")
    in_ns "$i" iptables -F INPUT
    in_ns "$i" iptables -F OUTPUT
    local mode peer j
    mode=$(cat "$d/cut" 2>/dev/null || true)
    case $mode in
    both | in) in_ns "$i" iptables -A INPUT -s "$host" -j DROP ;;
    esac
    case $mode in
    both | out) in_ns "$i" iptables -A OUTPUT -d "$host" -j DROP ;;
    esac
    if [ -e "$d/isolated" ]; then
        for j in "${nodes[@]}"; do
            [ "$j" = "$i" ] && continue
            peer=$(addr "$j")
            in_ns "$i" iptables -A INPUT -s "$peer" -j DROP
            in_ns "$i" iptables -A OUTPUT -d "$peer" -j DROP
        done
    fi
}

cut() {
    local i=$1 mode=${2:-both}
    case $mode in both | in | out) ;; *)
        echo "cluster: cut I [both|in|out]" >&2
        return 2
        ;;
    esac
    echo "$mode" >"$(ndir "$i")/cut"
    apply_rules "$i"
}

isolate() {
    touch "$(ndir "$1")/isolated"
    apply_rules "$1"
}

heal() {
    local i
    for i in "${@:-${nodes[@]}}"; do
        rm -f "$(ndir "$i")/cut" "$(ndir "$i")/isolated"
        apply_rules "$i"
    done
}

slow() {
    local i=$1 ms=$2
    case $ms in '' | *[!0-9]*)
        echo "cluster: slow I MS" >&2
        return 2
        ;;
    esac
    echo "$ms" >"$(ndir "$i")/delay_ms.tmp"
    mv "$(ndir "$i")/delay_ms.tmp" "$(ndir "$i")/delay_ms"
}

bootstrap() {
    local i out=""
    for i in "${nodes[@]}"; do out="$out${out:+,}$(addr "$i"):9094"; done
    echo "$out"
}

bootstrap_secure() {
    local i out=""
    for i in "${nodes[@]}"; do out="$out${out:+,}$(addr "$i"):9096"; done
    echo "$out"
}

bootstrap_proxied() {
    local i out=""
    for i in "${nodes[@]}"; do out="$out${out:+,}$host:$((19090 + i))"; done
    echo "$out"
}

leader() {
    kcat -b "$(bootstrap)" -L -J -t "$1" 2>/dev/null | python3 -c '
import json, sys
p = int(sys.argv[1])
for t in json.load(sys.stdin)["topics"]:
    for q in t["partitions"]:
        if q["partition"] == p:
            print(q["leader"]); sys.exit(0)
sys.exit(1)' "$2"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
start) start ;;
stop) stop ;;
kill)
    node_ok "${1:-}"
    stop_node "$1" KILL
    ;;
up)
    node_ok "${1:-}"
    up "$1"
    ;;
restart)
    node_ok "${1:-}"
    stop_node "$1"
    up "$1"
    ;;
pause | resume)
    node_ok "${1:-}"
    pid=$(running_pid "$1") || {
        echo "cluster: node $1 is not running" >&2
        exit 1
    }
    if [ "$cmd" = pause ]; then kill -STOP "$pid"; else kill -CONT "$pid"; fi
    ;;
cut)
    node_ok "${1:-}"
    cut "$@"
    ;;
isolate)
    node_ok "${1:-}"
    isolate "$1"
    ;;
heal)
    [ $# -eq 0 ] || node_ok "$1"
    heal "$@"
    ;;
slow)
    node_ok "${1:-}"
    slow "$1" "${2:-}"
    ;;
bootstrap) bootstrap ;;
bootstrap-proxied) bootstrap_proxied ;;
bootstrap-secure) bootstrap_secure ;;
ca) echo "$dir/tls/ca.pem" ;;
addr)
    node_ok "${1:-}"
    addr "$1"
    ;;
leader) leader "$1" "$2" ;;
status)
    if [ $# -gt 0 ]; then
        node_ok "$1"
        answers "$1"
    else
        for i in "${nodes[@]}"; do answers "$i" || exit 1; done
    fi
    ;;
logs)
    node_ok "${1:-}"
    tail -n "${2:-200}" "$(ndir "$1")/node.log" 2>/dev/null || true
    ;;
pids)
    for i in "${nodes[@]}"; do
        pid=$(running_pid "$i") && echo "$i $pid"
    done
    true
    ;;
*)
    echo "usage: $0 start|stop|kill I|up I|restart I|pause I|resume I|cut I [both|in|out]|isolate I|heal [I]|slow I MS|bootstrap|bootstrap-proxied|bootstrap-secure|ca|addr I|leader TOPIC P|status [I]|logs I [N]|pids" >&2
    exit 2
    ;;
esac
