# SPDX-License-Identifier: Apache-2.0
# lib-cluster.sh — the three-node cluster of the cluster fault tests
# (07NN-cluster-*.sh); source it after lib.sh, lib-debounce.sh and
# lib-faults.sh.  Not a test itself.
#
# A cluster test starts a cluster of its own (kafka/cluster.sh: three KRaft
# nodes in network namespaces on 198.18.0.0/24, replication factor 3,
# min.insync.replicas 2), points BOOTSTRAP at it, and then uses
# lib-faults.sh's load and verdicts as the single-broker fault tests do.
# Where that cannot be (not root, no network namespaces, no iptables),
# cluster_start skips the test (lib.sh's skip) before it does anything.
#
#   cluster CMD [ARGS]       kafka/cluster.sh CMD on this test's cluster
#   cluster_start            starts it (stopped, and its namespaces removed,
#                            when the test exits, whatever the path)
#   cluster_leader_of TOPIC...
#                            the node that leads the most partitions of the
#                            TOPICs (ties: the lowest id)
#   cluster_coordinator group|txn ID
#                            the node that coordinates group ID or
#                            transactional id ID (the leader of its
#                            __consumer_offsets / __transaction_state
#                            partition, as Kafka places them)
#   cluster_wait_in_sync SECS
#                            waits until every partition of every topic has
#                            all its replicas in sync (after a node's return)
#   cluster_controller       the node leading the controller quorum
#                            (tests/tools/QuorumLeader.java, ~2 s)
#   cluster_acls add|delete|list PRINCIPAL
#                            ACL bindings (stdin: sluice acls --format table)
#                            added for or deleted from PRINCIPAL, or those it
#                            has listed (tests/tools/Acls.java, as a super
#                            user: the plaintext listener)
#   cluster_sasl_conf CONF OUT
#                            OUT: the config CONF as User:sluice over
#                            SASL_SSL (SCRAM-SHA-512 on the SECURE
#                            listeners, the harness's CA); the cluster was
#                            started with SLUICE_TEST_CLUSTER_SASL=1
#   cluster_health SINCE_MS NAME...
#                            per instance: alive, /healthz never failed
#                            since SINCE_MS, /readyz 200 and
#                            sluice_kafka_up 1 now
#   cluster_timing FAULT_MS HEAL_MS [LABEL]
#                            from the outputs fault_drain read: the first
#                            committed output after the fault and after the
#                            heal, the longest gap between outputs, and the
#                            worst lateness of the timers due meanwhile

CLUSTER_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kafka/cluster.sh
CLUSTER_DIR=

cluster() {
    [ -n "$CLUSTER_DIR" ] || fail "cluster: no cluster started (cluster_start)"
    SLUICE_TEST_CLUSTER_DIR=$CLUSTER_DIR \
        SLUICE_TOOLS_DIR=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools} \
        "$CLUSTER_SH" "$@"
}

_cluster_cleanup() {
    [ -n "$CLUSTER_DIR" ] || return 0
    local i
    if [ "$1" -ne 0 ]; then
        for i in 1 2 3; do
            echo "--- cluster node $i log tail ---" >&2
            cluster logs "$i" 25 >&2 || true
        done
    fi
    cluster heal 2>/dev/null || true
    cluster stop 2>/dev/null || true
}

cluster_start() {
    : "${KCAT_READ_TIMEOUT:=15}"
    [ "$(id -u)" = 0 ] || skip "the cluster tests need root (ip netns, iptables)"
    unshare --net true 2>/dev/null || skip "cannot make network namespaces here (unshare --net)"
    ip netns list >/dev/null 2>&1 || skip "no ip netns here (iproute2)"
    command -v iptables >/dev/null || skip "iptables is missing (make deps installs it)"
    CLUSTER_DIR=$WORK/cluster
    CLEANUP_HOOKS+=(_cluster_cleanup)
    trap 'exit 143' TERM
    trap 'exit 130' INT
    local t0
    t0=$(now_ms)
    cluster start 2>"$WORK/cluster-start.log" || {
        cat "$WORK/cluster-start.log" >&2
        fail "the cluster did not start"
    }
    BOOTSTRAP=$(cluster bootstrap)
    SLUICE_TEST_BOOTSTRAP=$BOOTSTRAP
    export SLUICE_TEST_BOOTSTRAP
    rm -f "$WORK/admin.ini" # topic_create's config names the bootstrap
    note "cluster: Kafka ${SLUICE_TEST_KAFKA_VERSION:-3.9.1}, 3 nodes up in $((($(now_ms) - t0) / 1000)) s ($BOOTSTRAP)"
}

cluster_leader_of() {
    kcat -b "$BOOTSTRAP" -L -J 2>/dev/null | python3 -c '
import collections, json, sys
want = set(sys.argv[1:])
n = collections.Counter()
for t in json.load(sys.stdin)["topics"]:
    if t["topic"] in want:
        for p in t["partitions"]:
            n[p["leader"]] += 1
print(sorted(n.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])' "$@"
}

cluster_coordinator() {
    local topic
    case $1 in
    group) topic=__consumer_offsets ;;
    txn) topic=__transaction_state ;;
    *) fail "cluster_coordinator group|txn ID" ;;
    esac
    # Kafka: Utils.abs(id.hashCode()) % partitions (6 in cluster.sh).
    cluster leader "$topic" "$(python3 -c '
import sys
h = 0
for u in sys.argv[1].encode("utf-16-be").hex(" ", 2).split():
    h = (h * 31 + int(u, 16)) & 0xFFFFFFFF
h = h - (1 << 32) if h >= 1 << 31 else h
print((0 if h == -(1 << 31) else abs(h)) % 6)' "$2")"
}

_cluster_in_sync() {
    kcat -b "$BOOTSTRAP" -L -J 2>/dev/null | python3 -c '
import json, sys
md = json.load(sys.stdin)
bad = [(t["topic"], p["partition"]) for t in md["topics"] for p in t["partitions"]
       if len(p.get("isrs", [])) < len(p.get("replicas", [])) or p["leader"] < 0]
sys.exit(1 if bad or len(md["brokers"]) < 3 else 0)'
}

cluster_wait_in_sync() {
    wait_until "$1" _cluster_in_sync
}

cluster_controller() {
    local here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    timeout 60 "$here/kafka/broker.sh" java "$here/../tools/QuorumLeader.java" "$BOOTSTRAP" 2>"$WORK/quorum.err"
}

cluster_acls() {
    local here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    timeout 90 "$here/kafka/broker.sh" java "$here/../tools/Acls.java" "$BOOTSTRAP" "$@" 2>"$WORK/acls.err"
}

cluster_sasl_conf() {
    sed "s|^bootstrap.servers = .*|bootstrap.servers = $(cluster bootstrap-secure)|" "$1" >"$2"
    cat >"$WORK/sasl.props" <<EOF
security.protocol = SASL_SSL
sasl.mechanisms = SCRAM-SHA-512
sasl.username = sluice
sasl.password = sluice-secret
ssl.ca.location = $(cluster ca)
EOF
    sed -i "/^bootstrap.servers = /r $WORK/sasl.props" "$2"
}

cluster_health() {
    local since=$1 n up
    shift
    for n in "$@"; do
        sluice_reap "$n"
        if ! sluice_alive "$n"; then
            problem "sluice[$n] exited: $(fault_exits "$n")"
            continue
        fi
        ! healthz_failed "$n" "$since" || problem "sluice[$n]: /healthz failed after the fault: $(fault_watch_summary "$n")"
        [ "$(readyz "$n")" = 200 ] || problem "sluice[$n]: /readyz answers $(readyz "$n") at the end: $(readyz_body "$n")"
        up=$(sluice_metric "$n" sluice_kafka_up)
        [ "$up" = 1 ] || problem "sluice[$n]: sluice_kafka_up is '${up}' at the end, want 1"
        note "$n: readyz $(fault_watch_summary "$n" | tr -s ' ' | cut -c1-200)"
        note "$n: recoveries=$(sluice_metric "$n" sluice_client_recoveries_total) rebalances=$(sluice_metric "$n" sluice_rebalances_total) commits=$(sluice_metric "$n" 'sluice_transactions_total{result="commit"}') aborts=$(sluice_metric "$n" 'sluice_transactions_total{result="abort"}')"
    done
}

cluster_timing() {
    python3 - "$1" "$2" "$WORK" "${3:-}" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[3])
import dbcheck
fault, heal, work, label = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
ts, late = [], []
for op in "dbt":
    path = f"{work}/{op}.out.json"
    if not os.path.exists(path):
        continue
    for r in dbcheck.load_records(path):
        ts.append(r["ts"])
        due = dbcheck.headers(r).get("sluice-due") if op == "d" else None
        if due is not None and fault <= int(due) <= heal:
            late.append(r["ts"] - int(due))
ts.sort()
after_fault = [t for t in ts if t >= fault]
after_heal = [t for t in ts if t >= heal]
window = [t for t in ts if fault - 5000 <= t <= heal + 60000]
gap = max((b - a for a, b in zip(window, window[1:])), default=0)
f = lambda xs, t0: f"{xs[0] - t0} ms" if xs else "none"
print(f"# timing{' (' + label + ')' if label else ''}: first output {f(after_fault, fault)} after the fault, {f(after_heal, heal)} after the heal; "
      f"longest gap between outputs {gap} ms; worst lateness of timers due during the fault "
      f"{max(late) if late else 'n/a'} ms ({len(late)} timers)")
PY
}
