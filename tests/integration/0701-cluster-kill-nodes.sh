#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0701-cluster-kill-nodes — on a three-node cluster (replication factor 3,
# min.insync.replicas 2), kill -9, one after the other and under load, the
# node that leads the most input partitions, the one that leads the most
# changelog partitions, the transaction coordinator of an instance, the
# group coordinator, and the controller quorum's leader; each stays down
# 10 s and is started again on its data, and the next fault waits until
# every partition has three in-sync replicas again (SPEC §4: nothing lost,
# nothing duplicated, recovery by itself).
#
# Two instances run a delay, a debounce and a throttle pipeline (4
# partitions each); lib-faults.sh's feed writes to all three inputs
# throughout.  A dead node's partitions move to the other two, so sluice
# sees NOT_LEADER_OR_FOLLOWER, coordinator moves and connection errors but
# never a cluster that is away: it must not stop.  Checks: every record out
# exactly once (read_committed), per-key order, no timer before due, no
# DLQ record; both instances alive with /healthz never failing and /readyz
# 200 at the end.  Prints, per fault, the time from the kill and from the
# restart to the first committed output, and the worst lateness meanwhile.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

down_secs=${SLUICE_TEST_FAULT_SECS:-10}

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
fault_start_ready a b

fault_feed_start
fault_wait_flowing
t_first=$(now_ms)

faults=()
for role in input changelog txn group controller; do
    case $role in
    input) victim=$(cluster_leader_of "$PFX.d.in" "$PFX.b.in" "$PFX.t.in") ;;
    changelog) victim=$(cluster_leader_of "$PFX-d.changelog" "$PFX-b.changelog" "$PFX-t.changelog") ;;
    txn) victim=$(cluster_coordinator txn "$PFX-$PFX-a") ;;
    group) victim=$(cluster_coordinator group "$PFX") ;;
    controller) victim=$(cluster_controller) ;;
    esac
    case $victim in 1 | 2 | 3) ;; *) fail "no node found for the $role role: '$victim'" ;; esac
    t_fault=$(now_ms)
    cluster kill "$victim"
    sleep "$down_secs"
    cluster up "$victim" 2>>"$WORK/cluster-faults.log" ||
        fail "node $victim did not come back: $(tail -3 "$WORK/cluster-faults.log")"
    t_heal=$(now_ms)
    note "$role: killed node $victim, back after $(((t_heal - t_fault) / 1000)) s"
    faults+=("$role:$victim:$t_fault:$t_heal")
    cluster_wait_in_sync 90 || problem "$role: not every partition in sync 90 s after node $victim came back"
done

sleep 5
fault_feed_stop
fault_drain 180 a b
for f in "${faults[@]}"; do
    IFS=: read -r role victim t_fault t_heal <<<"$f"
    cluster_timing "$t_fault" "$t_heal" "$role leader, node $victim"
done
cluster_health "$t_first" a b
problems_verdict
echo "PASS"
