#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0203-debounce-size — size limits.  max_items = 50 and 120 items for one
# group arriving at once: batches of 50, 50 and 20 with reasons max_items,
# max_items, idle, in arrival order.  max_bytes = 1000 and 120 items of
# exactly 100 bytes (another pipeline): 12 batches of 10 items, reason
# max_bytes, none over 1000 payload bytes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

conf=$WORK/sluice.ini
n=120

base_conf "$conf"
db_pipeline "$conf" "$PFX-items" "$PFX.items.in" "$PFX.items.out" \
    input_partitions=2 idle=2s max_age=30s max_items=50
db_pipeline "$conf" "$PFX-bytes" "$PFX.bytes.in" "$PFX.bytes.out" \
    input_partitions=2 idle=5s max_age=30s max_bytes=1000
for t in items bytes; do
    "$SLUICE_BIN" topics create -c "$conf" "$PFX.$t.out" --partitions 2 >/dev/null
done
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
db_start main "$conf"
echo "sluice ready"

# 120 records in one kcat each (no sluice-item: each record its own item);
# the bytes pipeline gets payloads of exactly 100 bytes.
for i in $(seq -w 1 $n); do echo "WH-9:{\"n\":$((10#$i))}"; done |
    produce "$PFX.items.in" -K: || fail "kcat failed"
python3 -c '
import sys
for i in range(1, int(sys.argv[1]) + 1):
    head = "{\"n\":%d,\"pad\":\"" % i
    print("WH-9:" + head + "x" * (100 - len(head) - 2) + "\"}")' "$n" |
    produce "$PFX.bytes.in" -K: || fail "kcat failed"
echo "produced $n items to each pipeline"

wait_records "$PFX.items.out" 3 30 || fail "items: $(count_records "$PFX.items.out") batches within 30 s"
wait_records "$PFX.bytes.out" 12 30 || fail "bytes: $(count_records "$PFX.bytes.out") batches within 30 s"
db_wait_drained "$conf" "$PFX-items" 30 || fail "items: group still open"
db_wait_drained "$conf" "$PFX-bytes" 30 || fail "bytes: group still open"

for t in items bytes; do
    consume_json "$PFX.$t.in" >"$WORK/$t.in.json"
    consume_json "$PFX.$t.out" >"$WORK/$t.out.json"
done
python3 - "$WORK" "$n" <<'PY' || fail "output check failed"
import sys
import dbcheck

w, n = sys.argv[1], int(sys.argv[2])
errors = []
for t in ("items", "bytes"):
    inp = dbcheck.load_records(f"{w}/{t}.in.json")
    bs = sorted(dbcheck.load_batches(f"{w}/{t}.out.json"), key=lambda b: b["_offset"])
    got = [it["payload"]["n"] for b in bs for it in b["items"]]
    if got != [dbcheck.json.loads(r["payload"])["n"] for r in inp] or len(got) != n:
        errors.append(f"{t}: items {got[:5]}... not the {n} inputs in order")
    sizes = [len(b["items"]) for b in bs]
    reasons = [b["reason"] for b in bs]
    if t == "items":
        if sizes != [50, 50, 20] or reasons != ["max_items", "max_items", "idle"]:
            errors.append(f"items: batches {sizes} {reasons}, want [50, 50, 20] max_items, max_items, idle")
    else:
        lens = {len(r["payload"]) for r in inp}
        if lens != {100}:
            errors.append(f"bytes: input payload sizes {lens}")
        if sizes != [10] * 12 or set(reasons) != {"max_bytes"}:
            errors.append(f"bytes: batches {sizes} {reasons}, want 12 x 10 max_bytes")
    if len({b["batch_id"] for b in bs}) != len(bs):
        errors.append(f"{t}: batch ids repeat")
    print(f"# {t}: batches {sizes}, reasons {sorted(set(reasons))}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
