#!/usr/bin/env bash
# 0302-throttle-rate-change — a rate produced with kcat on the rates topic
# in the middle of a drain takes effect within a second, without restart.
#
# Key A at 10/s (burst 1) receives 300 messages at once; ~3 s into the
# drain `A:50/s burst=1` is produced to the rates topic.  Before the change
# A drains at 10/s; from one second after it, at 50/s; the output stays in
# input order.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = throttle
input = $in
input_partitions = 1
output = $out
EOF
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 1 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
echo 'A:10/s burst=1' | produce "$PFX.rates" -K:

port=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$port sluice_start main "$conf"
sluice_wait_ready main "$port" 30
echo "sluice ready on $in -> $out"

seq -f 'A:a-%03g' 0 299 | produce "$in" -K: || fail "kcat failed"
drained() { [ "$(metric_value "$port" "sluice_throttle_drained_total{pipeline=\"$PFX\"}" || true)" -ge 30 ] 2>/dev/null; }
wait_until 20 drained || fail "the drain did not start"
echo 'A:50/s burst=1' | produce "$PFX.rates" -K:
t_change=$(date +%s%3N)
echo "rate changed to 50/s at $t_change"

wait_records "$out" 300 60 || fail "only $(count_records "$out") of 300 out within 60 s"
applied=$(metric_value "$port" "sluice_throttle_rates_applied_total{pipeline=\"$PFX\"}")
[ "$applied" = 2 ] || fail "expected 2 rate records applied, got $applied"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$t_change" <<'PY' || fail "output check failed"
import json, sys
out = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
tc = int(sys.argv[2])
errors = []
if [r["payload"] for r in out] != [f"a-{i:03d}" for i in range(300)]:
    errors.append("output is not the 300 inputs in input order")
ts = [r["ts"] for r in out]
before = [t for t in ts if tc - 2000 < t <= tc]
after = [t for t in ts if tc + 1000 < t <= tc + 3000]
r_before = len(before) / 2.0
r_after = len(after) / 2.0
# When the new rate took hold: the first gap of under 40 ms after tc.
first_fast = next((b for a, b in zip(ts, ts[1:]) if b > tc and b - a < 40), None)
took = first_fast - tc if first_fast else None
print(f"# before the change: {r_before:.1f}/s (10/s); from 1 s after: {r_after:.1f}/s (50/s); first 50/s gap {took} ms after the change")
if abs(r_before - 10) > 1.5:
    errors.append(f"rate before the change {r_before}/s, expected 10/s")
if abs(r_after - 50) > 5:
    errors.append(f"rate from 1 s after the change {r_after}/s, expected 50/s")
if took is None or took > 1000:
    errors.append(f"the new rate took {took} ms to apply")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
