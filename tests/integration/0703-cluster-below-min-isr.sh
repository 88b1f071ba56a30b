#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0703-cluster-below-min-isr — two of the three nodes go down for 30 s
# under load (kill -9): every partition has fewer in-sync replicas than
# min.insync.replicas (2), and the controller quorum has lost its majority.
# Nothing can be committed; sluice must stall visibly — /readyz 503 with
# the reason — never exit, and resume by itself with nothing lost or
# duplicated when the nodes return (SPEC §4).
#
# Checks: both instances answer /readyz 503 with a reason during the
# outage, are alive with /healthz never failing and /readyz 200 afterwards;
# every record out exactly once (read_committed), per-key order, no timer
# before due, no DLQ record.  Prints the time from the return to the first
# committed output.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

down_secs=${SLUICE_TEST_FAULT_SECS:-30}

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
fault_start_ready a b

fault_feed_start
fault_wait_flowing

# Keep the node that leads the most input partitions: sluice still reaches
# a leader, whose writes all fail (NOT_ENOUGH_REPLICAS or time out).
keep=$(cluster_leader_of "$PFX.d.in" "$PFX.b.in" "$PFX.t.in")
down=()
for i in 1 2 3; do [ "$i" = "$keep" ] || down+=("$i"); done
t_fault=$(now_ms)
cluster kill "${down[0]}" &
kpid=$!
cluster kill "${down[1]}"
wait "$kpid" || true
note "killed nodes ${down[*]} (kill -9); node $keep alone"
sleep "$down_secs"
for n in a b; do
    sluice_alive "$n" || problem "sluice[$n] exited during the outage: $(sluice_reap "$n"; fault_exits "$n")"
    readyz_seen "$n" 503 "$t_fault" || problem "sluice[$n]: /readyz never answered 503 during the outage (watch: $(fault_watch_summary "$n"))"
    note "$n during the outage: /readyz '$(readyz_reason "$n" "$t_fault")'"
done
# Both at once: either alone has no controller quorum to join.
cluster up "${down[0]}" 2>>"$WORK/cluster-faults.log" &
upid=$!
cluster up "${down[1]}" 2>>"$WORK/cluster-faults.log" || fail "node ${down[1]} did not come back: $(tail -3 "$WORK/cluster-faults.log")"
wait "$upid" || fail "node ${down[0]} did not come back: $(tail -3 "$WORK/cluster-faults.log")"
t_heal=$(now_ms)
note "nodes ${down[*]} back after $(((t_heal - t_fault) / 1000)) s"

fault_wait_recovered "$t_fault" "$t_heal" 120 a b
note "ready again $((($(now_ms) - t_heal) / 1000)) s after the nodes' return"
sleep 8
fault_feed_stop
fault_drain 180 a b
cluster_timing "$t_fault" "$t_heal" "two nodes down"
cluster_health "$t_fault" a b
problems_verdict
echo "PASS"
