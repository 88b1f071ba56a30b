#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0702-cluster-coordinator-moves — the group coordinator moves to another
# node (a graceful restart of its node: the node comes back as a follower
# of that __consumer_offsets partition and stays up), then one of two
# instances dies and the other takes over its partitions, rebuilding each
# from the committed offset it asks the group's coordinator for.
#
# librdkafka 2.0.2 caches each group's coordinator for its admin requests
# and never drops the entry on NOT_COORDINATOR while it is in use; asked
# every 200 ms, a moved coordinator was asked for ever: the survivor left
# the dead member's partitions rebuilding ("committed offset pending
# (Broker: Not coordinator)") for as long as the test waited.  sluice now
# lets the entry expire (kquery.c, kquery_coord_moved).
#
# Checks: after b's kill -9, a runs all 12 partitions within 60 s of its
# session timeout; every record out exactly once (read_committed); a alive
# with /healthz never failing and /readyz 200 at the end.  Prints how long
# the takeover took.
# variant: kafka-4
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

coord=$(cluster_coordinator group "$PFX")
t_fault=$(now_ms)
cluster restart "$coord" 2>>"$WORK/cluster-faults.log" ||
    fail "node $coord did not come back: $(cat "$WORK/cluster-faults.log")"
t_heal=$(now_ms)
_moved() {
    local now
    now=$(cluster_coordinator group "$PFX") || return 1
    [ -n "$now" ] && [ "$now" != "$coord" ]
}
wait_until 30 _moved || fail "the group coordinator did not move off node $coord"
note "group coordinator moved from node $coord to node $(cluster_coordinator group "$PFX") (graceful restart of node $coord, $(((t_heal - t_fault) / 1000)) s)"
wait_readyz a 200 60
wait_readyz b 200 60

t_kill=$(now_ms)
sluice_kill b || true
running() {
    local op n=0 v
    for op in d b t; do
        v=$(sluice_metric a "sluice_partitions{pipeline=\"$PFX-$op\",state=\"running\"}")
        n=$((n + ${v:-0}))
    done
    echo "$n"
}
_took_over() { [ "$(running)" = 12 ] && [ "$(readyz a)" = 200 ]; }
if wait_until 66 _took_over; then
    note "a runs all 12 partitions $((($(now_ms) - t_kill) / 1000)) s after b's kill -9 (session timeout 6 s)"
else
    problem "a runs $(running) of 12 partitions 66 s after b's kill -9: $(readyz_body a); $(grep -c 'committed offset pending' "$WORK/sluice-a.log") 'committed offset pending' lines"
fi
grep -m2 -E 'coordinator moved|committed offset pending' "$WORK/sluice-a.log" | cut -c1-200 | sed 's/^/# a: /' || true

sleep 5
fault_feed_stop
fault_drain 180 a
cluster_timing "$t_kill" "$t_kill"
cluster_health "$t_fault" a
problems_verdict
echo "PASS"
