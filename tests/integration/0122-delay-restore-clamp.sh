#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0122-delay-restore-clamp — a changelog written before due times were
# range-checked may hold a timer due at -2^63 or at 2^63 - 1.  A rebuild
# clamps them into 1970 .. year 9999 and counts them
# (sluice_timers_restore_clamped_total), so no arithmetic on them can
# overflow: the one due at -2^63 fires at once (sluice-due: 0) and, being
# due before it was scheduled, stays out of lateness and drift; the one due
# at 2^63 - 1 stays pending.
#
# The two Timer records (proto/sluice.proto) are written with kcat straight
# into the changelog before sluice starts, as an older sluice would have.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

dl_setup 1

# Timer{due_ms, target_topic, payload, seq, created_ms} as protobuf, the
# key and the value separated by \x1f, records by \x1e.
python3 - "$out" >"$WORK/clog.bin" <<'PY'
import sys, time
def varint(v):
    v &= (1 << 64) - 1
    b = bytearray()
    while True:
        c = v & 0x7f
        v >>= 7
        if v:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)
def field(n, wt, data):
    return varint(n << 3 | wt) + data
def timer(due, topic, payload, seq, created):
    return (field(1, 0, varint(due)) + field(2, 2, varint(len(topic)) + topic)
            + field(6, 2, varint(len(payload)) + payload)
            + field(9, 0, varint(seq)) + field(10, 0, varint(created)))
topic = sys.argv[1].encode()
now = int(time.time() * 1000)
recs = [(b"old-min", timer(-2**63, topic, b"p-min", 1, now - 60000)),
        (b"old-max", timer(2**63 - 1, topic, b"p-max", 2, now - 60000))]
out = b"".join(k + b"\x1f" + v + b"\x1e" for k, v in recs)
assert out.count(b"\x1e") == 2 and out.count(b"\x1f") == 2
sys.stdout.buffer.write(out)
PY
kcat -P -b "$BOOTSTRAP" -t "$PFX.changelog" -p 0 -K $'\x1f' -D $'\x1e' -l "$WORK/clog.bin" ||
    fail "kcat could not write the changelog"
[ "$(count_records "$PFX.changelog")" = 2 ] || fail "changelog holds $(count_records "$PFX.changelog") records, expected 2"

sluice_up main "$conf"
echo "sluice ready"

wait_records "$out" 1 30 || fail "the timer due at -2^63 did not fire"
m() { sluice_metric main "$1{pipeline=\"$PFX\"}"; }
settled() { [ "$(m sluice_timers_due_on_arrival_total)" = 1 ] && [ "$(m sluice_timers_pending)" = 1 ]; }
wait_until 10 settled ||
    fail "due on arrival '$(m sluice_timers_due_on_arrival_total)', pending '$(m sluice_timers_pending)', expected 1 and 1"
clamped=$(m sluice_timers_restore_clamped_total)
drift=$(m sluice_timer_drift_seconds)
lcount=$(m sluice_timer_lateness_seconds_count)
note "clamped $clamped, pending $(m sluice_timers_pending), lateness count $lcount, drift '${drift}'"
[ "$clamped" = 2 ] || fail "sluice_timers_restore_clamped_total is '$clamped', expected 2"
[ "$lcount" = 0 ] || fail "the clamped timer fed the lateness histogram ($lcount)"
python3 -c "import sys; sys.exit(0 if abs(float('${drift:-0}')) < 60 else 1)" ||
    fail "sluice_timer_drift_seconds is $drift"
log_has main "REBUILD .*timer due at -9223372036854775808 clamped to 0" || fail "the clamp was not logged"
sluice_alive main || fail "sluice exited"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" <<'PY' || fail "output check failed"
import sys
from records import load, hdrs as hd
out = load(sys.argv[1])
errors = []
if [(r["key"], r["payload"], hd(r).get("sluice-due")) for r in out] != [("old-min", "p-min", "0")]:
    errors.append(f"target holds {[(r['key'], r['payload'], hd(r)) for r in out]}, expected old-min/p-min due 0")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
