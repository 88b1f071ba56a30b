#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0309-throttle-lost — a backlog whose overflow records were deleted by
# retention (a misconfigured overflow topic: retention far below the TTL,
# or a long outage) must not stall its key or loop on re-reads: the heads
# whose record is gone are dropped and counted in
# sluice_throttle_lost_total, never sent; what follows them drains.
#
# The overflow topic is created by hand with retention.ms=1000 and
# segment.ms=500 (the test broker checks retention every second) and the
# payload cache is 0, so every head is re-read.  Key L at 6/m (burst 1):
# l-00 is forwarded, l-01..l-19 wait; retention deletes them, and when L's
# next head falls due (10 s after l-00) the re-read finds them gone: 19
# lost, logged once; then a new message of L goes out at once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

base_conf "$conf"
tl_pipeline "$conf" "$PFX" "$in" "$out" 1 default_rate=100/s payload_cache=0
topic_create "$out" 1
topic_create "$PFX.overflow" 1 retention.ms=1000 segment.ms=500
# apply creates the rest and reports the overflow's retention as drift (a
# warning, exit 0: it never blocks a rollout); apply --strict as a problem
# (exit 1): the misconfiguration this test is about.
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply.txt" ||
    fail "topics apply failed on drift alone: $(cat "$WORK/apply.txt")"
grep -q "warning .*overflow.*retention.ms" "$WORK/apply.txt" ||
    fail "topics apply did not flag the overflow retention: $(cat "$WORK/apply.txt")"
if "$SLUICE_BIN" topics apply --strict -c "$conf" >"$WORK/apply-strict.txt"; then
    fail "topics apply --strict passed the overflow retention"
fi
grep -q "problem .*overflow.*retention.ms" "$WORK/apply-strict.txt" ||
    fail "topics apply --strict did not flag the overflow retention: $(cat "$WORK/apply-strict.txt")"
tl_rates 'L:6/m burst=1'
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

seq -f 'L:l-%02g' 0 19 | produce "$in" -K: || fail "kcat failed"
m() { tl_metric "$1" || true; }
wait_until 10 eval '[ "$(m appended_total)" = 19 ]' || fail "appended $(m appended_total) of 19"

# Retention deletes the overflow records within ~2 s (the active segment
# too, once expired); L's next head falls due 10 s after l-00.
wait_until 40 eval '[ "$(m lost_total)" -ge 18 ]' ||
    fail "the lost heads were not dropped: lost $(m lost_total), backlog $(m backlog_messages), out $(count_records "$out")"
wait_until 10 eval '[ "$(m backlog_messages)" = 0 ]' || fail "backlog $(m backlog_messages) left"
# The key is not stalled: a new message goes out.
echo 'L:late' | produce "$in" -K: || fail "kcat failed"
wait_until 15 eval '[ "$(count_records "$out")" -ge 2 ]' ||
    fail "L is stalled: $(count_records "$out") out, backlog $(m backlog_messages)"
sleep 1 # nothing more may come out
sluice_alive main || fail "sluice exited"
lost=$(m lost_total)
reads=$(m overflow_read_records_total)
note "lost $lost, overflow records re-read $reads, heads re-read $(m rereads_total)"
got=$(consume_all "$out" -f '%s\n' | tr '\n' ' ')
note "output: $got"
# l-00 was forwarded; l-01 can only have gone out if its head was re-read
# before retention deleted it (not in this timing: it is due 10 s after
# l-00).  Every other l-NN is lost, never sent.
case "$got" in
"l-00 late ") [ "$lost" = 19 ] || fail "lost_total $lost, want 19" ;;
"l-00 l-01 late ") [ "$lost" = 18 ] || fail "lost_total $lost, want 18" ;;
*) fail "output '$got'" ;;
esac
grep -q "backlog messages lost" "$WORK/sluice-main.log" || fail "the loss was not logged"
[ "$(grep -c "backlog messages lost" "$WORK/sluice-main.log")" -le 2 ] || fail "the loss was logged per record"
# No loop: a handful of re-reads, not a spin.
[ "${reads:-0}" -lt 100 ] || fail "$reads overflow records re-read: a re-read loop"
echo "PASS"
