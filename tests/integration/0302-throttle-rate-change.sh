#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0302-throttle-rate-change — a rate produced with kcat on the rates topic
# in the middle of a drain takes effect within a second, without restart.
#
# Key A at 10/s (burst 1) receives 300 messages at once; ~3 s into the
# drain `A:50/s burst=1` is produced to the rates topic.  Before the change
# A drains at 10/s; from one second after it, at 50/s; the output stays in
# input order.
#
# The change is timed by the rate record's own timestamp.  A rate is a
# ceiling: with burst 1 a token that falls due while sluice is not running
# (a busy machine) is not made up later, and a late release never shortens
# the next gap.  So the pace is judged by the on-time spacing of the output
# (the 10th percentile of the gaps, within 10% of 100 ms, then of 20 ms)
# and by the ceiling (never more than rate x window + burst), not by a
# count that only a machine with nothing else to do reaches.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

tl_setup 1
tl_rates 'A:10/s burst=1'
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

seq -f 'A:a-%03g' 0 299 | produce "$in" -K: || fail "kcat failed"
drained() { [ "$(tl_metric drained_total || true)" -ge 30 ] 2>/dev/null; }
wait_until 20 drained || fail "the drain did not start"
tl_rates 'A:50/s burst=1'
echo "rate changed to 50/s"

wait_records "$out" 300 60 || fail "only $(count_records "$out") of 300 out within 60 s"
applied=$(tl_metric rates_applied_total)
[ "$applied" = 2 ] || fail "expected 2 rate records applied, got $applied"

consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.rates" >"$WORK/rates.json"
python3 - "$WORK/out.json" "$WORK/rates.json" <<'PY' || fail "output check failed"
import sys
from records import load
out, rates = load(sys.argv[1]), load(sys.argv[2])
errors = []
if [r["payload"] for r in out] != [f"a-{i:03d}" for i in range(300)]:
    errors.append("output is not the 300 inputs in input order")
change = [r for r in rates if r["key"] == "A" and r["payload"] == "50/s burst=1"]
if len(change) != 1:
    print(f"ERROR: rates topic holds {rates}", file=sys.stderr)
    sys.exit(1)
tc = change[0]["ts"]
ts = [r["ts"] for r in out]


def pace(lo, hi):
    """(records, 10th-percentile gap ms) of the output in (tc + lo, tc + hi]."""
    w = [t for t in ts if tc + lo < t <= tc + hi]
    gaps = sorted(b - a for a, b in zip(w, w[1:]))
    return len(w), gaps[len(gaps) // 10] if gaps else None


n_before, gap_before = pace(-2000, 0)
n_after, gap_after = pace(1000, 3000)
# When the new rate took hold: the first gap of under 40 ms after tc.
first_fast = next((b for a, b in zip(ts, ts[1:]) if b > tc and b - a < 40), None)
took = first_fast - tc if first_fast else None
print(f"# before the change: {n_before / 2:.1f}/s, gaps p10 {gap_before} ms (10/s); from 1 s after: "
      f"{n_after / 2:.1f}/s, gaps p10 {gap_after} ms (50/s); first 50/s gap {took} ms after the rate record")
if gap_before is None or not 90 <= gap_before <= 110:
    errors.append(f"gaps before the change: p10 {gap_before} ms, expected 100 ms (10/s)")
if n_before > 2 * 10 + 1:
    errors.append(f"{n_before} records in the 2 s before the change: over 10/s burst 1")
if gap_after is None or not 18 <= gap_after <= 22:
    errors.append(f"gaps from 1 s after the change: p10 {gap_after} ms, expected 20 ms (50/s)")
if n_after > 2 * 50 + 1:
    errors.append(f"{n_after} records in 2 s from 1 s after the change: over 50/s burst 1")
if took is None or took > 1000:
    errors.append(f"the new rate took {took} ms to apply")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
