#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0201-debounce-burst — a burst of 100 orders for warehouse WH-42 (each its
# own sluice-item), idle = 2s, max_age = 10s: exactly one batch of 100
# items, flushed about 2 s after the last order, reason idle, items in
# arrival order with their JSON payloads embedded, sluice-batch-id equal to
# the batch_id.  Five orders for WH-7 in the same burst make their own
# batch.  A second pipeline, fed the same orders on its own input, writes
# protobuf batches (sluice.v1.Batch) with the same items.
#
# The burst is judged by the orders' own timestamps, not by how fast the
# 105 producers ran: a batch may end between two orders only where the
# input left room for it (two orders produced at least idle - 1 s apart, or
# a batch flushed for max_age).  A burst with no such hole, as on any
# machine that is merely busy, must come out as one batch per group.  The
# flush is judged by its deadline (sluice-due: exactly idle after the last
# update) and its lateness against that deadline.
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
consume_json "$inpb" >"$WORK/inpb.json"
consume_json "$out" >"$WORK/out.json"
db_consume_raw "$outpb" "$WORK/outpb.raw"
python3 - "$WORK" <<'PY' || fail "output check failed"
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

IDLE, MAX_AGE = 2000, 10000
# A batch's deadline (its sluice-due header) must be exact: idle after its
# last update, or max_age after it opened.  It must not flush before it, and
# must flush within LATE of it: a safety bound, since a flush that falls due
# while sluice commits a transaction waits for the commit, which on a busy
# machine takes a few hundred ms.
LATE = 1000
# The input leaves room for an idle flush between arrival positions i and
# i + 1 when every later order was produced at least HOLE after every
# earlier one (concurrent producers stamp and append out of step, so one
# order's gap to the next is not enough; the 1 s margin covers the time from
# a producer's stamp to sluice reading the record).
HOLE = IDLE - 1000


def holes(recs):
    """For each boundary i (between recs[i] and recs[i + 1]): the time
    between the last production of recs[:i + 1] and the first of the rest."""
    ts = [r["ts"] for r in recs]
    pre = [max(ts[:i + 1]) for i in range(len(ts) - 1)]
    suf = [min(ts[i + 1:]) for i in range(len(ts) - 1)]
    return [b - a for a, b in zip(pre, suf)]


def check_batches(label, recs, bs):
    """recs: the group's input records in arrival (offset) order; bs: its
    batches in output order.  Checks that the batches are the input cut at
    allowed places, each flushed for a reason its own times bear out."""
    ids = [dbcheck.headers(r)["sluice-item"] for r in recs]
    got = [it["id"] for b in bs for it in b["items"]]
    if got != ids:
        errors.append(f"{label}: items {got[:5]}... are not the {len(ids)} orders once each "
                      f"in arrival order ({ids[:5]}...)")
        return
    gaps = holes(recs)
    pos = 0
    for n, b in enumerate(bs):
        k = len(b["items"])
        if n:  # a boundary between recs[pos - 1] and recs[pos]
            if gaps[pos - 1] < HOLE and bs[n - 1]["reason"] != "max_age":
                errors.append(f"{label}: batch {n} starts at order {ids[pos]}, with "
                              f"{gaps[pos - 1]} ms between the orders before and after it "
                              f"were produced: no room for an idle flush (idle {IDLE} ms)")
        pos += k
        last_update = max(it["last_update"] for it in b["items"])
        if b["reason"] == "idle":
            due = last_update + IDLE
        elif b["reason"] == "max_age":
            due = b["opened_at"] + MAX_AGE
        else:
            errors.append(f"{label}: reason {b['reason']}")
            continue
        # The protobuf batches are read without their headers.
        if "_headers" in b and b["_headers"].get("sluice-due") != str(due):
            errors.append(f"{label}: sluice-due {b['_headers'].get('sluice-due')}, want {due} "
                          f"({b['reason']} after {'the last update' if b['reason'] == 'idle' else 'it opened'})")
        if not 0 <= b["flushed_at"] - due <= LATE:
            errors.append(f"{label}: {b['reason']} batch flushed {b['flushed_at'] - due} ms after "
                          f"its deadline, want 0..{LATE}")
        if b["opened_at"] != min(it["first_seen"] for it in b["items"]):
            errors.append(f"{label}: opened_at {b['opened_at']}")
    span = max(r["ts"] for r in recs) - min(r["ts"] for r in recs)
    print(f"# {label}: {len(recs)} orders produced over {span} ms (largest hole "
          f"{max(gaps, default=0)} ms): {len(bs)} batch(es) of {[len(b['items']) for b in bs]}, "
          f"the last flushed {bs[-1]['flushed_at'] - max(it['last_update'] for it in bs[-1]['items'])} ms "
          f"after its last update")


src = {}
for r in inp:
    h = dbcheck.headers(r)
    src[h["sluice-item"]] = r
# Each group is one key, so one input partition: arrival order is offset order.
orders = {k: sorted((r for r in inp if r["key"] == k), key=lambda r: r["offset"])
          for k in ("WH-42", "WH-7")}
if sorted(by_key) != ["WH-42", "WH-7"]:
    errors.append(f"batches for groups {sorted(by_key)}, want WH-42 and WH-7")

for key, n, pfx in (("WH-42", 100, "A"), ("WH-7", 5, "B")):
    if key not in by_key:
        continue
    bs = sorted(by_key[key], key=lambda b: b["_offset"])
    if len(orders[key]) != n or {i for i in src if i.startswith(pfx)} != {
            dbcheck.headers(r)["sluice-item"] for r in orders[key]}:
        errors.append(f"{key}: the input holds {len(orders[key])} orders, want {n}")
    check_batches(key, orders[key], bs)
    for b in bs:
        for it in b["items"]:
            want = src.get(it["id"])
            if want is None:
                continue
            if it["payload"] != dbcheck.json.loads(want["payload"]):
                errors.append(f"{key}: {it['id']} payload {it['payload']!r}")
            if it["first_seen"] != it["last_update"] or it["first_seen"] < want["ts"]:
                errors.append(f"{key}: {it['id']} times {it['first_seen']} {it['last_update']} vs produced {want['ts']}")
        if b["_headers"].get("sluice-batch-id") != b["batch_id"] or len(b["batch_id"]) != 32:
            errors.append(f"{key}: header {b['_headers']} vs batch_id {b['batch_id']}")
    # The last batch's record, against the last order it holds.  The
    # record's timestamp also holds the commit; on a fresh broker the first
    # offset commit creates __consumer_offsets (a second or two).
    last_in = max(src[it["id"]]["ts"] for it in bs[-1]["items"] if it["id"] in src)
    visible_after = bs[-1]["_ts"] - last_in
    if not IDLE <= visible_after <= 8000:
        errors.append(f"{key}: batch record {visible_after} ms after its last order, want {IDLE}..8000")
    print(f"# {key}: batch record {visible_after} ms after the last order")

# Protobuf: the same groups and items, cut by the same rule on its own input.
inpb = dbcheck.load_records(f"{w}/inpb.json")
pk = {}
for b in pbs:
    pk.setdefault(b["_key"], []).append(b)
if sorted(pk) != ["WH-42", "WH-7"]:
    errors.append(f"protobuf: {len(pbs)} batches for {sorted(pk)}")
for key, bs in pk.items():
    recs = sorted((r for r in inpb if r["key"] == key), key=lambda r: r["offset"])
    check_batches(f"protobuf {key}", recs, bs)
    j = by_key.get(key)
    if j is None:
        continue
    # Its own input: the same items and payloads, arrival order may differ.
    items = lambda bb: {it["id"]: it["payload"] for b in bb for it in b["items"]}
    if items(bs) != items(j):
        errors.append(f"protobuf {key}: items differ from the JSON batches")
    for b in bs:
        if b["key"] != key or len(b["batch_id"]) != 32:
            errors.append(f"protobuf {key}: {b['key']} {b['batch_id']}")
    if {b["batch_id"] for b in bs} & {b["batch_id"] for b in j}:
        errors.append("protobuf and JSON pipelines share a batch_id (the pipeline is part of it)")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
