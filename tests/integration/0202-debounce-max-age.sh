#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0202-debounce-max-age — a steady trickle that never goes idle: one item
# every 500 ms for 12.5 s into one group, idle = 2s, max_age = 5s.  The
# group flushes about every 5 s with reason max_age (each batch 5 s after
# its oldest item), and the tail flushes on idle once the trickle stops.
# Every item is in exactly one batch, in arrival order.  Each batch's
# deadline (sluice-due) must be exact, max_age after it opened or idle
# after its last update; it may not flush before it and must flush within
# 1 s of it (a safety bound: a flush that falls due during a transaction
# commit waits for it, a few hundred ms on a busy machine).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

n=25

db_setup 1 idle=2s max_age=5s
db_start main "$conf"
echo "sluice ready on $in -> $out"

# One item every 500 ms on a fixed schedule (no sluice-item: each record is
# its own item); the pacing is the input under test, not a wait.
t0=$(date +%s%N)
for i in $(seq 1 $n); do
    echo "WH-1:{\"n\":$i}" | produce "$in" -K: || fail "kcat failed"
    next=$((t0 + i * 500000000))
    now=$(date +%s%N)
    [ "$now" -ge "$next" ] || sleep "$(printf '0.%09d' $((next - now)))"
done
echo "trickled $n items over $((n / 2)) s"

_all_out() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))' |
        grep -qx "$n"
}
wait_until 30 _all_out || fail "not all $n items flushed within 30 s"
db_wait_drained "$conf" "$PFX" 30 || fail "group still open"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$n" <<'PY' || fail "output check failed"
import sys
import dbcheck

w, n = sys.argv[1], int(sys.argv[2])
inp = dbcheck.load_records(f"{w}/in.json")
batches = sorted(dbcheck.load_batches(f"{w}/out.json"), key=lambda b: b["_offset"])
errors = []
items = [it for b in batches for it in b["items"]]
want = [dbcheck.json.loads(r["payload"])["n"] for r in inp]
got = [it["payload"]["n"] for it in items]
if got != want:
    errors.append(f"items {got} != input {want}")
ids = [it["id"] for it in items]
if ids != [f"0-{r['offset']}" for r in inp]:
    errors.append(f"ids {ids[:3]}... are not <partition>-<offset>")
reasons = [b["reason"] for b in batches]
age = [b for b in batches if b["reason"] == "max_age"]
if len(age) < 2 or reasons[-1] != "idle" or any(r != "max_age" for r in reasons[:-1]):
    errors.append(f"reasons {reasons}: want max_age, max_age, ..., idle")
IDLE, MAX_AGE, LATE = 2000, 5000, 1000
for n, b in enumerate(batches):
    if b["reason"] == "max_age":
        due, what = b["opened_at"] + MAX_AGE, "max_age after its oldest item"
    else:
        due, what = max(it["last_update"] for it in b["items"]) + IDLE, "idle after its last update"
    if b["_headers"].get("sluice-due") != str(due):
        errors.append(f"batch {n} ({b['reason']}): sluice-due {b['_headers'].get('sluice-due')}, want {due} ({what})")
    if not 0 <= b["flushed_at"] - due <= LATE:
        errors.append(f"batch {n} ({b['reason']}) flushed {b['flushed_at'] - due} ms after its deadline, want 0..{LATE}")
    if b["opened_at"] != min(it["first_seen"] for it in b["items"]):
        errors.append(f"batch {n}: opened_at {b['opened_at']} is not its oldest item's first_seen")
# An item seen before a flush belongs in that batch: the next batch opens
# with the first item after it.
for n, (a, b) in enumerate(zip(batches, batches[1:]), 1):
    if b["opened_at"] < a["flushed_at"]:
        errors.append(f"batch {n} opened at {b['opened_at']}, before batch {n - 1} flushed at {a['flushed_at']}")
gaps = [b["flushed_at"] - a["flushed_at"] for a, b in zip(age, age[1:])]
late = [b["flushed_at"] - int(b["_headers"].get("sluice-due", 0)) for b in batches]
print(f"# {len(batches)} batches: sizes {[len(b['items']) for b in batches]}, reasons {reasons}, "
      f"max_age batches {gaps} ms apart, flushed {late} ms after their deadlines")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
