#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0121-delay-keyless — records without a key (the Redis delay box of seed
# 001 generates ids itself, so its producers send none) are scheduled under
# the id "<partition>-<offset>" and fire once each with their payload; and a
# timer whose due time had passed before it was scheduled fires at once
# without feeding lateness or drift.
#
#   headers pipeline:   20 keyless records (kcat -P without -K), 5 more with
#                       sluice-target-key, and a keyless cancel (null value:
#                       names no timer, so it goes to the DLQ as missing-key)
#   envelope pipeline:  20 keyless 001 envelopes {"topic","message",
#                       "countdown":1}; once they fired, one with "at": 0
#
# The fired records of keyless input have a null key (as the input had)
# unless sluice-target-key gave one; sluice-timer-id is the generated id.
# After the "at": 0 timer, sluice_timers_due_on_arrival_total is 1,
# the lateness histogram still counts only the 20 countdown timers, and
# sluice_timer_drift_seconds stays small (it was ~56 years before).
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

N=20 T=5 E=20

dl_setup_pair 2
sluice_up main "$conf"
echo "sluice ready"

seq -f 'kd-%02g' 1 "$N" | produce "$in" -H "sluice-target=$out" -H sluice-delay=1s
seq -f 'kt-%02g' 1 "$T" |
    produce "$in" -H "sluice-target=$out" -H sluice-delay=1s -H sluice-target-key=tk
echo ":" | produce "$in" -K: -Z -H x-case=keyless-cancel # null key, null value
for i in $(seq -f '%02g' 1 "$E"); do
    echo "{\"topic\":\"$out\",\"message\":\"ke-$i\",\"countdown\":1}"
done | produce "$ein"
echo "produced $N + $T keyless header records, a keyless cancel, $E keyless envelopes"

wait_records "$out" $((N + T + E)) 30 ||
    fail "only $(count_records "$out") of $((N + T + E)) keyless timers fired within 30 s"

m() { sluice_metric main "$1"; }
# Drift as it stands after the countdown timers, then the past timer.
echo "{\"topic\":\"$out\",\"message\":\"ke-past\",\"at\":0}" | produce "$ein"
wait_records "$out" $((N + T + E + 1)) 30 || fail "the \"at\": 0 timer did not fire within 30 s"
arrival() { [ "$(m "sluice_timers_due_on_arrival_total{pipeline=\"$PFX.e\"}")" = 1 ]; }
wait_until 10 arrival ||
    fail "sluice_timers_due_on_arrival_total is '$(m "sluice_timers_due_on_arrival_total{pipeline=\"$PFX.e\"}")', expected 1"
drift=$(m "sluice_timer_drift_seconds{pipeline=\"$PFX.e\"}")
lcount=$(m "sluice_timer_lateness_seconds_count{pipeline=\"$PFX.e\"}")
note "envelope pipeline: due on arrival 1, lateness count $lcount, drift ${drift}s"
[ "$lcount" = "$E" ] || fail "lateness histogram counts $lcount timers, expected $E (the past one excluded)"
python3 -c "import sys; sys.exit(0 if abs(float('$drift')) < 60 else 1)" ||
    fail "sluice_timer_drift_seconds is $drift after a timer due at 0"

dlq_one() { [ "$(count_records "$PFX.d.dlq")" -ge 1 ]; }
wait_until 20 dlq_one || fail "the keyless cancel did not reach the DLQ"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$ein" >"$WORK/ein.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.d.dlq" >"$WORK/dlq.json"
python3 - "$WORK/in.json" "$WORK/ein.json" "$WORK/out.json" "$WORK/dlq.json" <<'PY' || fail "output check failed"
import json, sys
from collections import Counter
from records import load, hdrs as hd

inp, einp, out, dlq = (load(p) for p in sys.argv[1:5])
errors = []

# Source record of each payload, and the id sluice must have given it.
src = {}
for r in inp:
    if r["payload"] is not None:
        src[r["payload"]] = r
for r in einp:
    src[json.loads(r["payload"])["message"]] = r
for r in inp + einp:
    if r["key"] is not None:
        errors.append(f"input record with a key: {r}")

n = Counter(r["payload"] for r in out)
dups = [p for p, c in n.items() if c > 1]
missing = sorted(set(src) - set(n))
extra = sorted(set(n) - set(src))
if dups: errors.append(f"fired twice: {dups[:5]}")
if missing: errors.append(f"never fired: {missing[:5]}")
if extra: errors.append(f"unexpected output: {extra[:5]}")

for r in out:
    s = src.get(r["payload"])
    if not s:
        continue
    h = hd(r)
    want_id = f"{s['partition']}-{s['offset']}"
    if h.get("sluice-timer-id") != want_id:
        errors.append(f"{r['payload']}: sluice-timer-id {h.get('sluice-timer-id')!r}, expected {want_id!r}")
    want_key = "tk" if r["payload"].startswith("kt-") else None
    if r["key"] != want_key:
        errors.append(f"{r['payload']}: key {r['key']!r}, expected {want_key!r}")
    due = int(h["sluice-due"])
    if r["payload"] == "ke-past":
        if due != 0:
            errors.append(f"ke-past: sluice-due {due}, expected 0")
    elif not s["ts"] + 1000 <= due <= s["ts"] + 6000:
        errors.append(f"{r['payload']}: due {due - s['ts']} ms after it was produced, expected ~1000")
    if r["ts"] < due:
        errors.append(f"{r['payload']}: fired {due - r['ts']} ms early")

if len(dlq) != 1:
    errors.append(f"the DLQ holds {len(dlq)} records, expected the keyless cancel only")
else:
    h = hd(dlq[0])
    if h.get("sluice-error") != "missing-key" or h.get("x-case") != "keyless-cancel":
        errors.append(f"DLQ record: {dlq[0]}")
    print(f"# keyless cancel: {h.get('sluice-error')} ({h.get('sluice-error-detail')})")
print(f"# fired {len(out)} keyless timers, ids <partition>-<offset>; {len(dups)} twice, {len(missing)} missing")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
