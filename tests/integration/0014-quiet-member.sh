#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0014-quiet-member — an instance whose input stays quiet, or waits paused
# at a cap, for longer than max.poll.interval.ms keeps its group membership
# and its partitions.
#
# librdkafka leaves the group when the application has not polled the
# consumer for max.poll.interval.ms (5 min by default); sluice must poll
# while the loop turns, not only when records arrive.  Before it did, an
# idle instance logged "Application maximum poll interval ... exceeded:
# leaving group" and lost and rebuilt every partition each interval.
#
# max.poll.interval.ms = 8000 (session 6 s), a delay pipeline on 2
# partitions with max_pending_timers = 1.  Timer a is due in 20 s; timer b,
# produced once a is pending, is due in 1 s but waits at the cap (its
# partition paused) until a fires.  Nothing else arrives: ~20 s without a
# record, more than twice the interval.  Checks: a and b each fire once,
# a first; no "maximum poll interval" and no lost partitions in the log;
# sluice_rebalances_total is the same at the end as when ready.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
base_conf "$conf"
cat >>"$conf" <<EOF
session.timeout.ms = 6000
max.poll.interval.ms = 8000

[pipeline $PFX]
type = delay
input = $in
input_partitions = 2
max_pending_timers = 1
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 2 >/dev/null

SLUICE_INSTANCE_ID=$PFX-a sluice_start_http main "$conf"
wait_readyz main 200 30
rebalances=$(sluice_metric main sluice_rebalances_total)
echo "ready; sluice_rebalances_total=$rebalances"

echo "a:pa" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=20s"
pending() { [ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")" = 1 ]; }
wait_until 10 pending || fail "timer a was not taken"
echo "b:pb" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1s"
paused() { [ "$(sluice_metric main "sluice_input_paused{pipeline=\"$PFX\",cap=\"max_pending_timers\"}")" = 1 ]; }
wait_until 10 paused || fail "timer b did not wait at the cap"
echo "a pending (due in 20 s), b waiting at the cap"

wait_records "$out" 2 45 || fail "$(count_records "$out") of 2 timers fired within 45 s"
order=$(consume_all "$out" -f '%T %k\n' | sort -n -k1,1 | awk '{ printf "%s ", $2 }')
[ "$order" = "a b " ] || fail "fired: '$order', want 'a b '"
! log_has main 'maximum poll interval' ||
    fail "the consumer left its group: $(grep -m1 'maximum poll interval' "$WORK/sluice-main.log" | cut -c1-200)"
! log_has main '\(lost\)' || fail "partitions were lost: $(grep -m1 '(lost)' "$WORK/sluice-main.log")"
now=$(sluice_metric main sluice_rebalances_total)
[ "$now" = "$rebalances" ] || fail "sluice_rebalances_total $rebalances when ready, $now at the end"
[ "$(readyz main)" = 200 ] || fail "/readyz $(readyz main) at the end: $(readyz_body main)"
echo "a and b fired once each, in order; no rebalance in ~20 quiet seconds"
echo "PASS"
