#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0707-cluster-rolling-restart — a rolling restart of the three nodes under
# load, one at a time, as an operator upgrades a cluster: each node is
# stopped gracefully (SIGTERM: it hands over its leaderships and
# coordinators first), started again on its data, and the next waits
# until every partition has its three replicas in sync.
#
# Checks: both instances alive with /healthz never failing and /readyz 200
# at the end; every record out exactly once (read_committed), per-key
# order, no timer before due, no DLQ record; output goes on during the
# restarts.  Prints, per node, the time from its stop and from its return
# to the first committed output, and the longest gap between outputs.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
fault_start_ready a b

fault_feed_start
fault_wait_flowing
t_first=$(now_ms)

steps=()
for i in 1 2 3; do
    t_fault=$(now_ms)
    cluster restart "$i" 2>>"$WORK/cluster-faults.log" ||
        fail "node $i did not come back: $(tail -3 "$WORK/cluster-faults.log")"
    t_heal=$(now_ms)
    note "node $i restarted in $(((t_heal - t_fault) / 1000)) s"
    steps+=("$i:$t_fault:$t_heal")
    cluster_wait_in_sync 90 || problem "not every partition in sync 90 s after node $i came back"
done

sleep 8
fault_feed_stop
fault_drain 180 a b
for s in "${steps[@]}"; do
    IFS=: read -r i t_fault t_heal <<<"$s"
    cluster_timing "$t_fault" "$t_heal" "restart of node $i"
done
cluster_health "$t_first" a b
problems_verdict
echo "PASS"
