#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0521-debounce-flush-control — the flush control record (what the API's
# POST .../groups/{key}/flush writes): three items for WH-1, then a record
# with key WH-1, an empty value and the header sluice-control: flush.  One
# batch comes out long before the group's idle deadline (idle = 60 s), with
# exactly those three items in arrival order and reason "requested"; the
# control record is not an item.  WH-2, which got no control record, stays
# open.  A second control record for the now empty WH-1 changes nothing but
# sluice_debounce_flush_requests_total{result="empty"}; one with an unknown
# value goes to the DLQ (bad-header) and flushes nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

dlq=$PFX.dlq

db_setup 2 idle=60s max_age=10m dlq="$dlq"
db_start main "$conf"
port=$DB_PORT_main
m() { metric_value "$port" "sluice_debounce_$1{pipeline=\"$PFX\"${2:-}}"; }
echo "sluice ready on $in -> $out"

for i in 1 2 3; do
    echo "WH-1:{\"order\":\"A$i\"}" | produce "$in" -K: -H "sluice-item=A$i" ||
        fail "kcat failed"
done
echo 'WH-2:{"order":"B1"}' | produce "$in" -K: -H sluice-item=B1 || fail "kcat failed"
_pending() { [ "$(m pending_items)" = 4 ]; }
wait_until 10 _pending || fail "pending_items = $(m pending_items), want 4"

# The control record: same key (so the same partition, after the items).
echo 'WH-1:' | produce "$in" -K: -H sluice-control=flush || fail "kcat failed"
wait_records "$out" 1 15 || fail "no batch within 15 s of the flush control record"
_one_left() { [ "$(m pending_items)" = 1 ]; }
wait_until 10 _one_left || fail "pending_items = $(m pending_items), want 1 (WH-2)"
[ "$(m batches_total ',reason="requested"')" = 1 ] ||
    fail "batches_total{requested} = $(m batches_total ',reason="requested"')"
[ "$(m batches_total ',reason="idle"')" = 0 ] || fail "an idle batch appeared"
[ "$(m flush_requests_total ',result="flushed"')" = 1 ] ||
    fail "flush_requests_total{flushed} = $(m flush_requests_total ',result="flushed"')"
[ "$(m items_added_total)" = 4 ] || fail "items_added_total = $(m items_added_total), want 4"

# Again on the empty group, then an unknown control: nothing flushes.
echo 'WH-1:' | produce "$in" -K: -H sluice-control=flush || fail "kcat failed"
echo 'WH-2:' | produce "$in" -K: -H sluice-control=flush-all || fail "kcat failed"
_empty() { [ "$(m flush_requests_total ',result="empty"')" = 1 ]; }
wait_until 10 _empty ||
    fail "flush_requests_total{empty} = $(m flush_requests_total ',result="empty"')"
wait_records "$dlq" 1 10 || fail "the unknown control record is not in the DLQ"
[ "$(m pending_items)" = 1 ] || fail "pending_items = $(m pending_items) after the unknown control"
[ "$(db_open_groups "$conf" "$PFX")" = 1 ] || fail "inspect: WH-2 is not the one open group"
[ "$(count_records "$out")" = 1 ] || fail "$(count_records "$out") batches, want 1"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$dlq" >"$WORK/dlq.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

w = sys.argv[1]
inp = dbcheck.load_records(f"{w}/in.json")
batches = dbcheck.load_batches(f"{w}/out.json")
dlq = dbcheck.load_records(f"{w}/dlq.json")
errors = []
if len(batches) != 1:
    sys.exit(f"{len(batches)} batches")
b = batches[0]
ids = [it["id"] for it in b["items"]]
if b["key"] != "WH-1" or ids != ["A1", "A2", "A3"]:
    errors.append(f"batch {b['key']} {ids}, want WH-1 [A1, A2, A3]")
if b["reason"] != "requested":
    errors.append(f"reason {b['reason']}, want requested")
if [it["payload"] for it in b["items"]] != [{"order": f"A{i}"} for i in (1, 2, 3)]:
    errors.append(f"payloads {[it['payload'] for it in b['items']]}")
ctl = [r for r in inp if dbcheck.headers(r).get("sluice-control") == "flush"]
if len(ctl) != 2:
    errors.append(f"{len(ctl)} flush control records in the input, want 2")
else:
    # Flushed on the control record, not on a deadline (idle is 60 s).
    after = b["flushed_at"] - ctl[0]["ts"]
    if not 0 <= after <= 10000:
        errors.append(f"flushed {after} ms after the control record was produced")
    if b["_headers"].get("sluice-due") != str(b["flushed_at"]):
        errors.append(f"sluice-due {b['_headers'].get('sluice-due')}, want flushed_at {b['flushed_at']}")
    print(f"# batch flushed {after} ms after the control record "
          f"({b['flushed_at'] - max(it['last_update'] for it in b['items'])} ms after the last item)")
if b["_headers"].get("sluice-batch-id") != b["batch_id"]:
    errors.append("sluice-batch-id header differs from batch_id")
if len(dlq) != 1 or dbcheck.headers(dlq[0]).get("sluice-error") != "bad-header" \
        or dbcheck.headers(dlq[0]).get("sluice-control") != "flush-all":
    errors.append(f"DLQ: {[dbcheck.headers(r) for r in dlq]}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
