#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0704-cluster-cut-off — the host side (sluice and the test's own clients)
# loses the node that leads the most input partitions for 30 s, longer
# than the consumer session (6 s) and the transaction timeout (10 s),
# under load: first both directions, then, after recovery, one direction
# only (packets from the host to the node dropped; the node's own packets
# still arrive).  The node stays in the cluster — its peers reach it — so
# its partitions do not move: whatever it leads, or coordinates, is out of
# reach until the heal (iptables DROP inside the node's namespace).
#
# Checks: both instances alive with /healthz never failing and /readyz 200
# at the end; every record out exactly once (read_committed), per-key
# order, no timer before due, no DLQ record; never "Kafka unreachable".
# Prints, per cut, the time from the cut and from the heal to the first
# committed output.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

cut_secs=${SLUICE_TEST_FAULT_SECS:-30}

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
fault_start_ready a b

fault_feed_start
fault_wait_flowing
t_first=$(now_ms)

cuts=()
for mode in both in; do
    victim=$(cluster_leader_of "$PFX.d.in" "$PFX.b.in" "$PFX.t.in")
    t_fault=$(now_ms)
    cluster cut "$victim" "$mode"
    sleep "$cut_secs"
    cluster heal "$victim"
    t_heal=$(now_ms)
    note "cut ($mode) node $victim off from the host side for $(((t_heal - t_fault) / 1000)) s"
    cuts+=("$mode:$victim:$t_fault:$t_heal")
    fault_wait_recovered "$t_fault" "$t_heal" 120 a b
    note "ready again $((($(now_ms) - t_heal) / 1000)) s after the heal"
    cluster_wait_in_sync 60 || problem "not every partition in sync 60 s after the heal"
done

sleep 5
fault_feed_stop
fault_drain 180 a b
for c in "${cuts[@]}"; do
    IFS=: read -r mode victim t_fault t_heal <<<"$c"
    cluster_timing "$t_fault" "$t_heal" "cut $mode, node $victim"
done
cluster_health "$t_first" a b
# Two nodes of three answer throughout: Kafka is not "unreachable" (the
# probe asks again before it says so, src/app.c).
for n in a b; do
    ! log_has "$n" "Kafka unreachable" ||
        problem "sluice[$n] said Kafka unreachable while two nodes answered: $(grep -m1 'Kafka unreachable' "$WORK/sluice-$n.log" | cut -c1-200)"
done
problems_verdict
echo "PASS"
