#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0405-fault-refused — records the broker refuses for good (over the
# output topic's max.message.bytes), among normal ones, in a debounce and a
# delay pipeline of one process (SPEC §4 "Kafka's faults": a record the
# broker refuses).  A refusal aborts the transaction it was in; after the
# rebuild the same record must be recognised and sent to the DLQ, once, and
# everything around it must come out exactly once — without looping
# abort → rebuild → refusal (a debounce batch is rebuilt with a new
# flushed_at, so its bytes differ on every replay).
#
# Output topics accept 4000 bytes, and the producers compress ([kafka]
# compression.type = lz4), so only the broker can tell whether a record
# fits (test 0602 has the limits sluice counts itself and refuses up front).
# Debounce: 8 groups of 3 small items (batches of ~350 bytes) and group
# "big" with one item of 5000 random base64 bytes (incompressible); delay:
# 8 small timers and timer "big" with such a payload, all due at the
# flushes' time.  When the DLQs have their record, a second wave of small
# items and timers must come out too.  Checks: exactly one record in each
# DLQ (debounce: the big item, reason too-large, from its batch; delay:
# the big timer, too-large), every small item in exactly one batch of its
# group, every small timer fired once, sluice_transactions_total
# {result="abort"} at most 10 (5 per refused record), the process alive.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-delay.sh"

max_aborts=10 # 5 per refused record
private_broker_start 61508
bin=$PFX.b.in
bout=$PFX.b.out
din=$PFX.d.in
dout=$PFX.d.out
base_conf "$conf"
conf_set "$conf" kafka compression.type=lz4
dl_pipeline "$conf" "$PFX-d" "$din" 2
db_pipeline "$conf" "$PFX-b" "$bin" "$bout" input_partitions=2 idle=1s \
    max_age=5s max_items=8
topic_create "$bout" 2 max.message.bytes=4000
topic_create "$dout" 2 max.message.bytes=4000
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null

SLUICE_INSTANCE_ID=$PFX-a sluice_up a "$conf" 60
echo "sluice ready"

# wave W — 8 groups g0..g7 of 3 items each, and 8 timers t<W>-0..7 due in
# 1 s; wave 1 also brings group "big" (one 5000-byte item) and timer "big".
wave() {
    local w=$1
    python3 - "$w" <<'PY' | produce "$bin" -K'|'
import base64, json, os, sys
w = int(sys.argv[1])
for i in range(3):
    for g in range(8):
        print(f"g{g}|" + json.dumps({"g": g, "w": w, "i": i}, separators=(",", ":")))
if w == 1:
    print("big|" + json.dumps({"big": base64.b64encode(os.urandom(3750)).decode()}))
PY
    python3 - "$w" <<'PY' | produce "$din" -K'|' -H "sluice-target=$dout" -H sluice-delay=1s
import base64, os, sys
w = int(sys.argv[1])
for i in range(8):
    print(f"t{w}-{i}|p-t{w}-{i}")
if w == 1:
    print("big|" + base64.b64encode(os.urandom(3750)).decode())
PY
}
wave 1

dlq_has() { [ "$(count_records "$PFX-b.dlq")" -ge 1 ] && [ "$(count_records "$PFX-d.dlq")" -ge 1 ]; }
if ! wait_until 40 dlq_has; then
    problem "within 40 s: $(count_records "$PFX-b.dlq") record(s) in the debounce DLQ, $(count_records "$PFX-d.dlq") in the delay DLQ (want 1 each)"
fi
sluice_alive a || fail "sluice exited: $(sluice_exit_status a)"
wave 2

items_out() {
    consume_all "$bout" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))'
}
all_out() {
    sluice_alive a || return 1
    [ "$(items_out)" -ge 48 ] && [ "$(count_records "$dout")" -ge 16 ] &&
        [ "$(db_open_groups "$conf" "$PFX-b")" = 0 ]
}
wait_until 40 all_out ||
    problem "within 40 s of wave 2: $(items_out) of 48 small items in batches, $(count_records "$dout") of 16 small timers fired"

aborts=$(sluice_metric a 'sluice_transactions_total{result="abort"}')
note "aborted transactions: ${aborts:-?}; log: $(grep -c 'aborting transaction' "$WORK/sluice-a.log" || true) 'aborting transaction' lines"
if [ -z "$aborts" ] || [ "${aborts%.*}" -gt "$max_aborts" ]; then
    problem "sluice_transactions_total{result=\"abort\"} = ${aborts:-absent}, want at most $max_aborts"
fi

consume_json "$bin" >"$WORK/bin.json"
consume_json "$bout" >"$WORK/bout.json"
consume_json "$PFX-b.dlq" >"$WORK/bdlq.json"
consume_json "$dout" >"$WORK/dout.json"
consume_json "$PFX-d.dlq" >"$WORK/ddlq.json"
python3 - "$WORK" 2>"$WORK/check.err" <<'PY' || problem "$(tr '\n' ';' <"$WORK/check.err")"
import json, sys
from collections import Counter
import dbcheck

w = sys.argv[1]
errors = []
inp = dbcheck.load_records(f"{w}/bin.json")
small = Counter(r["payload"] for r in inp if r["key"] != "big")
batches = dbcheck.load_batches(f"{w}/bout.json")
seen = Counter()
for b in batches:
    for it in b["items"]:
        p = json.dumps(it["payload"], separators=(",", ":"))
        seen[p] += 1
        if "big" in it["payload"]:
            errors.append("debounce: the big item is in an output batch")
        elif f"g{it['payload']['g']}" != b["key"]:
            errors.append(f"debounce: item {p} in group {b['key']}'s batch")
dups = [p for p, n in seen.items() if n > 1]
lost = sorted(set(small) - set(seen))
if dups: errors.append(f"debounce: {len(dups)} items in more than one batch, e.g. {dups[:3]}")
if lost: errors.append(f"debounce: {len(lost)} small items in no batch, e.g. {lost[:3]}")
ids = Counter(b["batch_id"] for b in batches)
if any(n > 1 for n in ids.values()): errors.append("debounce: a batch id repeats")

dlq = dbcheck.load_records(f"{w}/bdlq.json")
if len(dlq) != 1:
    errors.append(f"debounce DLQ holds {len(dlq)} records, want 1")
for r in dlq:
    h = dbcheck.headers(r)
    if h.get("sluice-error") != "too-large":
        errors.append(f"debounce DLQ reason {h.get('sluice-error')}, want too-large")
    if r["key"] != "big":
        errors.append(f"debounce DLQ record keyed {r['key']}, want big")
    big = [x for x in inp if x["key"] == "big"]
    if not big or r["payload"] != big[0]["payload"]:
        errors.append("debounce DLQ value is not the big item")
    if not h.get("sluice-batch-id") or h.get("sluice-source-offset") != str(big[0]["offset"] if big else -1):
        errors.append(f"debounce DLQ headers {h}: want the batch id and the item's source offset")

timers = Counter(r["key"] for r in dbcheck.load_records(f"{w}/dout.json"))
want = {f"t{w}-{i}" for w in (1, 2) for i in range(8)}
if set(timers) != want or any(n != 1 for n in timers.values()):
    errors.append(f"delay target holds {dict(timers)}, want t1-0..7 and t2-0..7 once each")
ddlq = dbcheck.load_records(f"{w}/ddlq.json")
if [(r["key"], dbcheck.headers(r).get("sluice-error"), len(r["payload"] or "")) for r in ddlq] != [("big", "too-large", 5000)]:
    errors.append(f"delay DLQ holds {[(r['key'], dbcheck.headers(r).get('sluice-error')) for r in ddlq]}, want the big timer once with too-large and its payload")
print(f"# debounce: {len(batches)} batches with {sum(seen.values())} items for {len(small)} small items; DLQ {[dbcheck.headers(r).get('sluice-error') for r in dlq]}")
print(f"# delay: {sum(timers.values())} fired for 16 small timers; DLQ {[dbcheck.headers(r).get('sluice-error') for r in ddlq]}")
for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
sluice_alive a || problem "sluice exited: $(sluice_exit_status a)"
problems_verdict
echo "PASS"
