#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0212-debounce-changelog-refused — a small changelog topic (SPEC §4
# "Kafka's faults": a record the broker refuses): the changelog accepts
# record batches of 3000 bytes (max.message.bytes), and the producer is
# told so ([kafka] batch.size = 3000).  The chunk records a transaction
# writes per group (src/debounce.c, THE CHANGELOG) then stay at 1500
# bytes, and an item too large for that is an item record.  The producers
# compress ([kafka] compression.type = lz4), so only the broker can tell
# whether a record fits (test 0602 has the limits sluice counts itself):
# an incompressible item record of 3500 bytes is refused at delivery, and
# after the abort and rebuild that record must be recognised and its item
# sent to the DLQ (reason too-large), once — without looping abort →
# rebuild → refusal.
#
# Groups g0 and g1 get 5 items of ~700 bytes each in one burst (3.5 KB a
# group: chunks of two items), group "big" one item of 3500 random base64
# bytes.  Once the DLQ has its record, a second burst of small items must
# come out too.  Checks: every small item in exactly one batch of its
# group, the big item only in the DLQ (once), sluice_transactions_total
# {result="abort"} at most 12, the process alive.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

max_aborts=12
conf=$WORK/sluice.ini
in=$PFX.in
out=$PFX.out
base_conf "$conf"
sed -i 's/^\[kafka\]$/[kafka]\nbatch.size = 3000\ncompression.type = lz4/' "$conf"
grep -q '^batch.size = 3000' "$conf" || fail "no [kafka] section in $conf"
db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions=1 idle=1s \
    max_age=5s max_items=50
"$SLUICE_BIN" topics create -c "$conf" "$PFX.changelog" --partitions 1 \
    --set cleanup.policy=compact --set max.message.bytes=3000 >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 1 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null || true
db_start main "$conf" SLUICE_INSTANCE_ID="$PFX-0"
echo "sluice ready; $PFX.changelog accepts 3000 bytes"

burst() {
    python3 - "$1" <<'PY' | produce "$in" -K'|'
import base64, json, os, sys
w = int(sys.argv[1])
for i in range(5):
    for g in range(2):
        print(f"g{g}|" + json.dumps({"g": g, "w": w, "i": i, "pad": "p" * 650}))
if w == 1:
    print("big|" + json.dumps({"big": base64.b64encode(os.urandom(2625)).decode()}))
PY
}
burst 1
dlq_has() { [ "$(count_records "$PFX.dlq")" -ge 1 ]; }
wait_until 60 dlq_has || fail "no DLQ record within 60 s"
sluice_alive main || fail "sluice exited"
burst 2

items_out() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))'
}
all_out() { [ "$(items_out)" -ge 20 ] && [ "$(db_open_groups "$conf" "$PFX")" = 0 ]; }
wait_until 60 all_out || fail "within 60 s of the second burst: $(items_out) of 20 small items in batches"

port=$DB_PORT_main
aborts=$(metric_value "$port" 'sluice_transactions_total{result="abort"}')
echo "# aborted transactions: ${aborts:-?}"
if [ -z "$aborts" ] || [ "${aborts%.*}" -gt "$max_aborts" ]; then
    fail "sluice_transactions_total{result=\"abort\"} = ${aborts:-absent}, want at most $max_aborts"
fi

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import json, sys
from collections import Counter
import dbcheck

w = sys.argv[1]
errors = []
small = Counter(r["payload"] for r in dbcheck.load_records(f"{w}/in.json") if r["key"] != "big")
seen = Counter()
for b in dbcheck.load_batches(f"{w}/out.json"):
    for it in b["items"]:
        p = json.dumps(it["payload"])
        seen[p] += 1
        if "big" in it["payload"]:
            errors.append("the big item is in an output batch")
        elif f"g{it['payload']['g']}" != b["key"]:
            errors.append(f"item of g{it['payload']['g']} in {b['key']}'s batch")
dups = [p for p, n in seen.items() if n > 1]
lost = set(small) - set(seen)
if dups: errors.append(f"{len(dups)} items in more than one batch")
if lost: errors.append(f"{len(lost)} small items in no batch")
dlq = dbcheck.load_records(f"{w}/dlq.json")
if len(dlq) != 1:
    errors.append(f"the DLQ holds {len(dlq)} records, want 1")
for r in dlq:
    h = dbcheck.headers(r)
    if r["key"] != "big" or "big" not in json.loads(r["payload"]):
        errors.append(f"DLQ record keyed {r['key']} is not the big item")
    if h.get("sluice-error") != "too-large":
        errors.append(f"DLQ reason {h.get('sluice-error')}, want too-large")
    if h.get("sluice-source-offset") is None:
        errors.append(f"DLQ headers lack sluice-source-offset: {h}")
print(f"# {sum(seen.values())} small items in batches, {len(dlq)} DLQ record(s): "
      f"{[dbcheck.headers(r).get('sluice-error-detail') for r in dlq]}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
sluice_alive main || fail "sluice exited"
echo "PASS"
