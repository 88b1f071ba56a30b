#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0321-throttle-zero-rate — `0/s` on the rates topic stops a key: not even
# its first message passes (a new key's full bucket grants nothing at 0/s);
# every message waits in the backlog.  When the rate is raised, the held
# messages drain in input order at the new rate.
#
# Key Z is set to 0/s and receives 20 messages; key B (the default, 100/s)
# receives 5 at the same time as a witness that the pipeline runs.  Once
# all 20 of Z are in the backlog (sluice_throttle_backlog_messages) and B's
# 5 are out, the test watches the output for 3 s more: no Z may appear.
# (A "nothing happens" check needs a window; it starts only after every
# message was seen held.)  Then `Z:10/s burst=1` is produced and the 20
# must come out in order, none before the rate record, paced at ~10/s.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

N=20

tl_setup 1 default_rate=100/s
tl_rates Z:0/s
sluice_up main "$conf"
m() { sluice_metric main "$1"; }
applied() { [ "$(m "sluice_throttle_rates_applied_total{pipeline=\"$PFX\"}")" = 1 ]; }
wait_until 20 applied || fail "the 0/s rate record was not applied"
echo "sluice ready on $in -> $out, Z at 0/s"

seq -f "Z:z-%02g" 0 $((N - 1)) | produce "$in" -K: || fail "kcat failed"
seq -f "B:b-%02g" 0 4 | produce "$in" -K: || fail "kcat failed"

held() { [ "$(m "sluice_throttle_backlog_messages{pipeline=\"$PFX\"}")" = "$N" ]; }
wait_until 30 held ||
    fail "backlog holds '$(m "sluice_throttle_backlog_messages{pipeline=\"$PFX\"}")' messages, expected $N"
wait_records "$out" 5 30 || fail "only $(count_records "$out") of B's 5 out within 30 s"
fwd=$(m "sluice_throttle_forwarded_total{pipeline=\"$PFX\"}")
[ "$fwd" = 5 ] || fail "sluice_throttle_forwarded_total is $fwd, expected 5 (B only)"
z_out() { consume_all "$out" | grep -c '^Z' || true; }
end=$(($(date +%s) + 3))
while [ "$(date +%s)" -lt "$end" ]; do
    [ "$(z_out)" = 0 ] || fail "a message of the stopped key Z was sent: $(consume_all "$out" | grep '^Z' | head -3)"
    sleep 0.5
done
note "0/s: all $N of Z held, $(count_records "$out") out (B's 5)"

tl_rates 'Z:10/s burst=1'
wait_records "$out" $((N + 5)) 30 || fail "only $(count_records "$out") of $((N + 5)) out within 30 s of raising Z"
sluice_alive main || fail "sluice exited"
[ "$(count_records "$PFX.dlq")" = 0 ] || fail "the DLQ holds $(count_records "$PFX.dlq") records"

consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.rates" >"$WORK/rates.json"
python3 - "$WORK/out.json" "$WORK/rates.json" "$N" <<'PY' || fail "output check failed"
import sys
from records import load
out, rates, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
errors = []
z = [r for r in out if r["key"] == "Z"]
b = [r for r in out if r["key"] == "B"]
if [r["payload"] for r in z] != [f"z-{i:02d}" for i in range(n)]:
    errors.append(f"Z came out as {[r['payload'] for r in z]}, expected z-00 .. z-{n - 1:02d} in order")
if [r["payload"] for r in b] != [f"b-{i:02d}" for i in range(5)]:
    errors.append(f"B came out as {[r['payload'] for r in b]}")
raise_ts = [r["ts"] for r in rates if r["key"] == "Z" and r["payload"] == "10/s burst=1"]
if len(raise_ts) != 1:
    errors.append(f"rates topic: {rates}")
else:
    early = [r["payload"] for r in z if r["ts"] < raise_ts[0]]
    if early:
        errors.append(f"sent before the rate was raised: {early}")
if len(z) == n:
    span = z[-1]["ts"] - z[0]["ts"]
    # 10/s, burst 1: n - 1 gaps of 100 ms, give or take the 1 ms rounding.
    if span < (n - 1) * 100 - 50:
        errors.append(f"Z drained in {span} ms: faster than 10/s")
    print(f"# Z drained {n} in {span} ms after the raise (10/s: {(n - 1) * 100} ms), in order")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
