#!/usr/bin/env bash
# 0201-debounce-burst — 100 orders for warehouse WH-42 within 1 s (each its
# own sluice-item), idle = 2s, max_age = 10s: exactly one batch of 100
# items, flushed about 2 s after the last order, reason idle, items in
# arrival order with their JSON payloads embedded, sluice-batch-id equal to
# the batch_id.  Five orders for WH-7 in the same burst make their own
# batch.  A second pipeline, fed the same orders on its own input, writes
# protobuf batches (sluice.v1.Batch) with the same items.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

in=$PFX.in
inpb=$PFX.inpb
out=$PFX.out
outpb=$PFX.outpb
conf=$WORK/sluice.ini

base_conf "$conf"
db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions=2 idle=2s max_age=10s
db_pipeline "$conf" "$PFX-pb" "$inpb" "$outpb" input_partitions=2 idle=2s \
    max_age=10s output_format=protobuf
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 2 >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$outpb" --partitions 2 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
db_start main "$conf"
echo "sluice ready on $in -> $out (json), $outpb (protobuf)"

# One kcat per order (sluice-item is per record), all at once.
burst() {
    local topic=$1 pids=() p
    for i in $(seq -w 1 100); do
        echo "WH-42:{\"order\":\"A$i\",\"sku\":\"S-$((10#$i % 7))\",\"qty\":$((10#$i % 5 + 1))}" |
            produce "$topic" -K: -H "sluice-item=A$i" &
        pids+=($!)
    done
    for i in 1 2 3 4 5; do
        echo "WH-7:{\"order\":\"B$i\"}" | produce "$topic" -K: -H "sluice-item=B$i" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail "kcat failed to produce"; done
}
burst "$in"
burst "$inpb"
echo "produced 105 orders to each input"

wait_records "$out" 2 30 || fail "no batches within 30 s: $(count_records "$out")"
wait_records "$outpb" 2 30 || fail "no protobuf batches within 30 s"
# Nothing pending any more, so no further batch can appear.
db_wait_drained "$conf" "$PFX" 30 || fail "groups still open after the batches"
db_wait_drained "$conf" "$PFX-pb" 30 || fail "protobuf groups still open"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
db_consume_raw "$outpb" "$WORK/outpb.raw"
PYTHONPATH=$WORK python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

w = sys.argv[1]
inp = dbcheck.load_records(f"{w}/in.json")
batches = dbcheck.load_batches(f"{w}/out.json")
pbs = dbcheck.load_protobuf_batches(f"{w}/outpb.raw")
errors = []

by_key = {}
for b in batches:
    by_key.setdefault(b["key"], []).append(b)
if sorted(by_key) != ["WH-42", "WH-7"] or any(len(v) != 1 for v in by_key.values()):
    errors.append(f"want one batch per group, got { {k: len(v) for k, v in by_key.items()} }")

src = {}
for r in inp:
    h = dbcheck.headers(r)
    src[h["sluice-item"]] = r
last_ts = {k: max(r["ts"] for r in inp if r["key"] == k) for k in ("WH-42", "WH-7")}
first_ts = {k: min(r["ts"] for r in inp if r["key"] == k) for k in ("WH-42", "WH-7")}
spread = last_ts["WH-42"] - first_ts["WH-42"]
if spread >= 1000:
    errors.append(f"the 100 orders took {spread} ms to produce, not within 1 s")

for key, n, pfx in (("WH-42", 100, "A"), ("WH-7", 5, "B")):
    if key not in by_key:
        continue
    b = by_key[key][0]
    ids = [it["id"] for it in b["items"]]
    if len(ids) != n or set(ids) != {i for i in src if i.startswith(pfx)}:
        errors.append(f"{key}: {len(ids)} items, ids {ids[:5]}...")
    # Arrival order: the input offsets of the items' records.
    offs = [src[i]["offset"] for i in ids if i in src]
    if offs != sorted(offs):
        errors.append(f"{key}: items not in arrival order")
    for it in b["items"]:
        want = src.get(it["id"])
        if want is None:
            continue
        if it["payload"] != dbcheck.json.loads(want["payload"]):
            errors.append(f"{key}: {it['id']} payload {it['payload']!r}")
        if it["first_seen"] != it["last_update"] or it["first_seen"] < want["ts"]:
            errors.append(f"{key}: {it['id']} times {it['first_seen']} {it['last_update']} vs produced {want['ts']}")
    if b["reason"] != "idle":
        errors.append(f"{key}: reason {b['reason']}")
    if b["_headers"].get("sluice-batch-id") != b["batch_id"] or len(b["batch_id"]) != 32:
        errors.append(f"{key}: header {b['_headers']} vs batch_id {b['batch_id']}")
    if b["opened_at"] != min(it["first_seen"] for it in b["items"]):
        errors.append(f"{key}: opened_at {b['opened_at']}")
    last_update = max(it["last_update"] for it in b["items"])
    idle_after = b["flushed_at"] - last_update
    visible_after = b["_ts"] - last_ts[key]
    if not 2000 <= idle_after <= 2300:
        errors.append(f"{key}: flushed {idle_after} ms after its last update, want 2000..2300")
    # The record's timestamp also holds the commit; on a fresh broker the
    # first offset commit creates __consumer_offsets (a second or two).
    if not 2000 <= visible_after <= 8000:
        errors.append(f"{key}: batch record {visible_after} ms after the last order, want 2000..8000")
    print(f"# {key}: {len(ids)} items in one batch, flushed {idle_after} ms after the last update, "
          f"record {visible_after} ms after the last order")

# Protobuf: the same groups and items.
pk = {b["_key"]: b for b in pbs}
if len(pbs) != 2 or sorted(pk) != ["WH-42", "WH-7"]:
    errors.append(f"protobuf: {len(pbs)} batches for {sorted(pk)}")
for key, b in pk.items():
    j = by_key.get(key, [None])[0]
    if j is None:
        continue
    # Its own input: the same items and payloads, arrival order may differ.
    if {it["id"]: it["payload"] for it in b["items"]} != {it["id"]: it["payload"] for it in j["items"]}:
        errors.append(f"protobuf {key}: items differ from the JSON batch")
    if b["reason"] != "idle" or b["key"] != key or len(b["batch_id"]) != 32:
        errors.append(f"protobuf {key}: {b['reason']} {b['key']} {b['batch_id']}")
    if b["batch_id"] == j["batch_id"]:
        errors.append("protobuf and JSON pipelines share a batch_id (the pipeline is part of it)")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
