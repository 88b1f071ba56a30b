#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0705-cluster-isolated-leader — a partitioned leader: the node that leads
# the most input partitions loses its two peers for 30 s (both
# directions, iptables DROP inside its namespace) while sluice and the
# test's clients still reach it.  The controller quorum fences it; its
# partitions move to the other two nodes; until the clients learn that,
# the isolated node still answers as a leader whose writes cannot reach
# min.insync.replicas (2).  Then it is healed and rejoins as a follower.
#
# Checks: both instances alive with /healthz never failing and /readyz 200
# at the end; every record out exactly once (read_committed), per-key
# order, no timer before due, no DLQ record.  Prints the time from the
# isolation and from the heal to the first committed output.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

iso_secs=${SLUICE_TEST_FAULT_SECS:-30}

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
fault_start_ready a b

fault_feed_start
fault_wait_flowing

victim=$(cluster_leader_of "$PFX.d.in" "$PFX.b.in" "$PFX.t.in")
t_fault=$(now_ms)
cluster isolate "$victim"
sleep "$iso_secs"
cluster heal "$victim"
t_heal=$(now_ms)
note "node $victim isolated from its peers for $(((t_heal - t_fault) / 1000)) s"
cluster_wait_in_sync 90 || problem "not every partition in sync 90 s after the heal"

sleep 8
fault_feed_stop
fault_drain 180 a b
cluster_timing "$t_fault" "$t_heal" "isolated leader, node $victim"
cluster_health "$t_fault" a b
problems_verdict
echo "PASS"
