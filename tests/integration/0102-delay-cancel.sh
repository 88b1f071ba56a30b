#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0102-delay-cancel — cancel and reschedule by id (SPEC §3 delay).
#
# Headers pipeline, every record on input partition 0 (kcat -p 0) so that
# one timeline orders them all:
#   c1  due in 3 s, then cancelled (null value)       => never fires
#   r1  due in 10 s, then rescheduled to 2 s          => fires once, at ~2 s
#   r2  due in 2 s, then rescheduled to 6 s           => fires once, at ~6 s
#   nobody  a cancel for an id never scheduled         => harmless
#   s1  sentinel due in 12 s (after c1's and r1's first due time plus a
#       margin): once it fired, an absence above is proven, not awaited.
# json-envelope pipeline (the `001` shape), same process:
#   e1  {"topic","message":"body1","countdown":1}     => fires, value body1
#   e2  countdown 3, then cancelled                   => never fires
#   e3  message a JSON object                         => fires, value is it
#   e4  sentinel, countdown 6
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

dl_setup_pair 4
sluice_up main "$conf"
echo "sluice ready: $in and $ein -> $out"

# timer ID DELAY VERSION — schedules (or reschedules) ID on input partition 0.
timer() {
    echo "$1:$1-v$3" | produce "$in" -p 0 -K: -H "sluice-target=$out" \
        -H "sluice-delay=$2" -H "x-version=$3"
}
cancel() { echo "$1:" | produce "$in" -p 0 -K: -Z; }
envelope() { echo "$1|$2" | produce "$ein" -p 0 -K'|'; }

timer c1 3s 1
timer r1 10s 1
timer r2 2s 1
envelope e1 '{"topic":"'"$out"'","message":"body1","countdown":1}'
envelope e2 '{"topic":"'"$out"'","message":"body2","countdown":3}'
envelope e3 '{"topic":"'"$out"'","message":{"a":1,"b":[true,null]},"countdown":1}'
cancel c1
timer r1 2s 2
timer r2 6s 2
cancel nobody
echo "e2|" | produce "$ein" -p 0 -K'|' -Z
timer s1 12s 1
envelope e4 '{"topic":"'"$out"'","message":"sentinel","countdown":6}'
echo "produced: schedules, cancels and reschedules"

fired() { consume_all "$out" | cut -f1 | grep -qx "$1"; }
wait_until 40 fired e4 || fail "envelope sentinel e4 did not fire within 40 s"
wait_until 40 fired s1 || fail "sentinel s1 did not fire within 40 s"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$ein" >>"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" <<'PY' || fail "output check failed"
import json, sys
from collections import defaultdict
from records import load, hdrs

inp, out = load(sys.argv[1]), load(sys.argv[2])
errors = []
# Input records per id, in produce order (one partition, offset order).
src = defaultdict(list)
for r in sorted(inp, key=lambda r: (r["topic"], r["offset"])):
    src[r["key"]].append(r)
fired = defaultdict(list)
for r in out:
    fired[r["key"]].append(r)

print("# fired: " + ", ".join(f"{k} x{len(v)}" for k, v in sorted(fired.items())))
want = {"r1", "r2", "s1", "e1", "e3", "e4"}
for k in sorted(want):
    if len(fired[k]) != 1:
        errors.append(f"{k} fired {len(fired[k])} times, expected once")
for k in ("c1", "e2", "nobody"):
    if fired[k]:
        errors.append(f"{k} fired {len(fired[k])} times after its cancel")
unexpected = set(fired) - want - {"c1", "e2", "nobody"}
if unexpected:
    errors.append(f"unexpected ids fired: {sorted(unexpected)}")

def check_at(k, version, delay_ms, payload):
    """k fired once, from the given input version, delay_ms after it."""
    if len(fired[k]) != 1:
        return
    r = fired[k][0]
    h = hdrs(r)
    s = [x for x in src[k] if x["payload"] is not None][version - 1]
    due = int(h["sluice-due"])
    if r["payload"] != payload:
        errors.append(f"{k}: payload {r['payload']!r}, expected {payload!r}")
    if r["ts"] < due:
        errors.append(f"{k}: fired {due - r['ts']} ms before due")
    # Due counts from when sluice read that version: after kcat stamped it,
    # within 2 s of it.
    off = due - s["ts"] - delay_ms
    if not 0 <= off <= 2000:
        errors.append(f"{k}: due is {off} ms off version {version}'s produce time + {delay_ms} ms")
    print(f"# {k}: due {due - s['ts']} ms after version {version} was produced, fired {r['ts'] - due} ms late")
    return h

h = check_at("r1", 2, 2000, "r1-v2")
if h and h.get("x-version") != "2":
    errors.append(f"r1 carries x-version {h.get('x-version')}, expected 2")
h = check_at("r2", 2, 6000, "r2-v2")
if h and h.get("x-version") != "2":
    errors.append(f"r2 carries x-version {h.get('x-version')}, expected 2")
check_at("s1", 1, 12000, "s1-v1")
check_at("e1", 1, 1000, "body1")
check_at("e4", 1, 6000, "sentinel")
if len(fired["e3"]) == 1:
    v = fired["e3"][0]["payload"]
    try:
        ok = json.loads(v) == {"a": 1, "b": [True, None]}
    except ValueError:
        ok = False
    if not ok:
        errors.append(f"e3: value {v!r} is not the envelope's JSON message")

for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

# The unknown cancel was seen and counted, not just ignored silently.
unknown=$(sluice_metric main "sluice_timers_cancel_unknown_total{pipeline=\"$PFX.d\"}")
cancelled=$(sluice_metric main "sluice_timers_cancelled_total{pipeline=\"$PFX.d\"}")
ecancelled=$(sluice_metric main "sluice_timers_cancelled_total{pipeline=\"$PFX.e\"}")
note "metrics: cancelled=$cancelled (headers) $ecancelled (envelope), cancel_unknown=$unknown"
[ "$unknown" = 1 ] || fail "sluice_timers_cancel_unknown_total is '$unknown', expected 1"
[ "$cancelled" = 1 ] || fail "sluice_timers_cancelled_total (headers) is '$cancelled', expected 1"
[ "$ecancelled" = 1 ] || fail "sluice_timers_cancelled_total (envelope) is '$ecancelled', expected 1"
echo "PASS"
