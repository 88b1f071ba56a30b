#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0205-debounce-silent — one item, then nothing: the group still flushes
# once it has been idle for `idle` (a wall-clock deadline, not the next
# record).  While it waits, `sluice inspect` lists the open group with its
# item and the metrics show it; afterwards both show nothing pending.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"


db_setup 2 idle=8s max_age=60s
db_start main "$conf"
port=$DB_PORT_main
m() { metric_value "$port" "sluice_debounce_$1{pipeline=\"$PFX\"${2:-}}"; }
echo "sluice ready on $in -> $out"

echo 'WH-9:{"order":"Q-1"}' | produce "$in" -K: -H sluice-item=Q-1 || fail "kcat failed"
_pending() { [ "$(m pending_items)" = 1 ] && [ "$(db_open_groups "$conf" "$PFX")" = 1 ]; }
# inspect reads committed changelog records: wait for the commit too.
wait_until 3 _pending || fail "the item is not pending"
# Metrics first: the group flushes 8 s after the item, whatever the load.
[ "$(m open_groups)" = 1 ] || fail "open_groups = $(m open_groups)"
# The oldest-pending gauge is refreshed every second.
_oldest() { awk -v v="$(m oldest_pending_seconds)" 'BEGIN { exit !(v > 0 && v < 10) }'; }
wait_until 3 _oldest || fail "oldest_pending_seconds = $(m oldest_pending_seconds)"

# Pending: inspect and metrics show it.
"$SLUICE_BIN" inspect -c "$conf" "$PFX" >"$WORK/inspect.txt" || fail "inspect failed"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --key WH-9 >"$WORK/inspect-key.txt" ||
    fail "inspect --key failed"
cat "$WORK/inspect.txt" "$WORK/inspect-key.txt"
grep -q '(debounce): 1 open groups, 1 pending items' "$WORK/inspect.txt" ||
    fail "inspect does not list the open group"
grep -Eq ' 1 +[0-9]+ .* idle +WH-9$' "$WORK/inspect.txt" ||
    fail "inspect has no row for WH-9 with 1 item"
grep -Eq ' Q-1$' "$WORK/inspect-key.txt" || fail "inspect --key does not list item Q-1"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --key WH-nope >/dev/null &&
    fail "inspect --key of an unknown group exits 0"
wait_records "$out" 1 20 || fail "the silent group did not flush within 20 s"
db_wait_drained "$conf" "$PFX" 10 || fail "group still open after its batch"
_gone() { [ "$(m pending_items)" = 0 ] && [ "$(m oldest_pending_seconds)" = 0 ]; }
wait_until 5 _gone || fail "metrics still show pending items"
[ "$(m batches_total ',reason="idle"')" = 1 ] || fail "batches_total{idle} = $(m batches_total ',reason="idle"')"
[ "$(m flush_lateness_seconds_count)" = 1 ] || fail "no flush lateness observed"
[ "$(metric_value "$port" "sluice_records_out_total{pipeline=\"$PFX\"}")" = 1 ] ||
    fail "records_out_total is not 1"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

w = sys.argv[1]
inp = dbcheck.load_records(f"{w}/in.json")
bs = dbcheck.load_batches(f"{w}/out.json")
errors = []
if len(bs) != 1 or [it["id"] for it in bs[0]["items"]] != ["Q-1"] or bs[0]["reason"] != "idle":
    print(f"ERROR: batches {bs}", file=sys.stderr)
    sys.exit(1)
b = bs[0]
after = b["flushed_at"] - b["items"][0]["last_update"]
visible = b["_ts"] - inp[0]["ts"]
# The deadline exactly idle after the update; the flush not before it and
# within 1 s of it (a safety bound: a flush that falls due during a
# transaction commit waits for it, a few hundred ms on a busy machine).
due = b["items"][0]["last_update"] + 8000
if b["_headers"].get("sluice-due") != str(due):
    errors.append(f"sluice-due {b['_headers'].get('sluice-due')}, want {due} (idle = 8 s after the update)")
if not 0 <= b["flushed_at"] - due <= 1000:
    errors.append(f"flushed {b['flushed_at'] - due} ms after its deadline, want 0..1000")
print(f"# silent group flushed {after} ms after its only item (record {visible} ms after it was produced)")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
