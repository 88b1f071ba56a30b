#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0301-throttle-burst — the live path and the backlog side by side, on one
# input partition (so both keys share one backlog).
#
# Key A is limited to 20/s (burst 20) and receives 200 messages at once: 20
# are forwarded at once, the other 180 wait in the overflow topic and come
# out at 20/s, i.e. over about 9 s more, in input order.  Key B is limited
# to 1000/s and sends 500 messages in 10 rounds of 50 while A's backlog
# drains: every one of them is forwarded directly, with no added delay
# (A's backlog never slows B).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

tl_setup 1 default_rate=5/s
tl_rates A:20/s B:1000/s
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

seq -f 'A:a-%03g' 0 199 | produce "$in" -K: || fail "kcat failed"
for r in $(seq 0 9); do
    seq -f "B:b-$r-%02g" 0 49 | produce "$in" -K: || fail "kcat failed"
    sleep 0.1
done
echo "produced 200 records for A and 500 for B"

wait_records "$out" 700 60 || fail "only $(count_records "$out") of 700 records out within 60 s"
sluice_alive main || fail "sluice exited"
# A commit's checkpoints are written once every overflow append's report
# has come (FLUSHING waits for those, and only those).
! log_has main "without a delivery report" ||
    fail "a commit's checkpoint was written before its overflow appends' reports"
fw=$(tl_metric forwarded_total)
dr=$(tl_metric drained_total)
note "forwarded directly: $fw, drained from the backlog: $dr"
[ "$fw" = 520 ] || fail "expected 520 forwarded directly (20 A + 500 B), got $fw"
[ "$dr" = 180 ] || fail "expected 180 drained, got $dr"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" <<'PY' || fail "output check failed"
import sys
from records import load
inp, out = load(sys.argv[1]), load(sys.argv[2])
errors = []
src = {r["payload"]: r for r in inp}
a = [r for r in out if r["key"] == "A"]
b = [r for r in out if r["key"] == "B"]
if [r["payload"] for r in a] != [f"a-{i:03d}" for i in range(200)]:
    errors.append("A's output is not the 200 inputs in input order")
    print(sys.stderr, [r["payload"] for r in a][:40])
    sys.exit(1)
if [r["payload"] for r in b] != [r["payload"] for r in inp if r["key"] == "B"]:
    errors.append(f"B: {len(b)} records out, expected the 500 inputs once each, in input order")

# A: the first 20 (the burst) at once, then 20/s.
ts = [r["ts"] for r in a]
burst_span = ts[19] - src["a-000"]["ts"]
drain = ts[20:]
span = (drain[-1] - drain[0]) / 1000.0
rate = (len(drain) - 1) / span
print(f"# A: burst of 20 out within {burst_span} ms of the first input; "
      f"180 drained over {span:.2f} s = {rate:.2f}/s (configured 20/s)")
if abs(rate - 20) > 1.0:
    errors.append(f"A's drain rate {rate:.2f}/s is not within 5% of 20/s")
# In 3-second windows after the burst: 60 records each, within 5%.
t0 = ts[19]
wins = []
for w in range(3):
    lo, hi = t0 + w * 3000, t0 + (w + 1) * 3000
    wins.append(sum(1 for t in drain if lo < t <= hi))
print(f"# A: records per 3 s window after the burst: {wins} (expected 60 each)")
if any(abs(n - 60) > 3 for n in wins):
    errors.append(f"A's 3 s windows {wins} are not within 5% of 60")

# B: forwarded with no added delay (output ts - input ts).
lat = sorted(r["ts"] - src[r["payload"]]["ts"] for r in b)
p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99)]
print(f"# B: input -> output latency ms p50={p50} p99={p99} max={lat[-1]}")
if p99 > 500:
    errors.append(f"B was delayed: p99 {p99} ms")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
