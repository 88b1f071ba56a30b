#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0208-debounce-dlq — bad input goes to the DLQ with its reason, the source
# topic/partition/offset and the original key, value and headers; sluice
# keeps running and good input around it is batched as usual.
#
#   no key                                     missing-key
#   key not UTF-8                              bad-key
#   sluice-item twice / empty / null / binary  bad-header
#   null value without sluice-item             missing-item
#   value over max_record_bytes (1 kB)         oversize
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

dlq=$PFX.dlq

db_setup 1 idle=1s max_age=10s max_record_bytes=1kB dlq="$dlq"
db_start main "$conf"
port=$DB_PORT_main
echo "sluice ready on $in -> $out, DLQ $dlq"

p() { produce "$in" -K: "$@" || fail "kcat failed"; }
echo 'WH-1:{"ok":1}' | p -H sluice-item=G-1
echo 'no key at all' | p
printf '\xff\xfe:{"bad":"key"}\n' | p
echo 'WH-1:{"twice":1}' | p -H sluice-item=a -H sluice-item=b
echo 'WH-1:{"empty":1}' | p -H 'sluice-item='
echo 'WH-1:{"null":1}' | p -H 'sluice-item'
printf 'WH-1:{"binary":1}\n' | p -H "$(printf 'sluice-item=\xc3\x28')"
echo 'WH-1:' | p -Z
printf 'WH-1:%s\n' "$(head -c 2000 /dev/zero | tr '\0' x)" | p -H sluice-item=big -H x-trace=t1
echo 'WH-1:{"ok":2}' | p -H sluice-item=G-2
echo "produced 2 good and 8 bad records"

wait_records "$dlq" 8 30 || fail "only $(count_records "$dlq") DLQ records within 30 s"
wait_records "$out" 1 30 || fail "the good items were not batched"
db_wait_drained "$conf" "$PFX" 30 || fail "group still open"
sluice_alive main || fail "sluice exited"
[ "$(metric_value "$port" "sluice_records_dlq_total{pipeline=\"$PFX\",reason=\"bad-header\"}")" = 4 ] ||
    fail "sluice_records_dlq_total{bad-header} is not 4"

consume_json "$in" >"$WORK/in.json"
consume_json "$dlq" >"$WORK/dlq.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$in" <<'PY' || fail "DLQ check failed"
import sys
import dbcheck

w, topic = sys.argv[1], sys.argv[2]
inp = dbcheck.load_records(f"{w}/in.json")
dlq = dbcheck.load_records(f"{w}/dlq.json")
bs = dbcheck.load_batches(f"{w}/out.json")
errors = []
want = ["missing-key", "bad-key", "bad-header", "bad-header", "bad-header",
        "bad-header", "missing-item", "oversize"]
got = [dbcheck.headers(r).get("sluice-error") for r in dlq]
if got != want:
    errors.append(f"reasons {got}, want {want}")
by_off = {r["offset"]: r for r in inp}
for r in dlq:
    h = dbcheck.headers(r)
    src = by_off.get(int(h.get("sluice-source-offset", -1)))
    if h.get("sluice-source-topic") != topic or h.get("sluice-source-partition") != "0" or src is None:
        errors.append(f"bad source headers {h}")
        continue
    if (r["key"], r["payload"]) != (src["key"], src["payload"]):
        errors.append(f"DLQ record at {r['offset']} lost its key/value")
    sh = dbcheck.headers(src)
    if any(h.get(k) != v for k, v in sh.items() if k != "sluice-item"):
        errors.append(f"DLQ record at {r['offset']} lost headers {sh}")
    if not h.get("sluice-error-detail"):
        errors.append(f"DLQ record at {r['offset']} has no sluice-error-detail")
items = [it["id"] for b in bs for it in b["items"]]
if items != ["G-1", "G-2"]:
    errors.append(f"good items batched as {items}, want G-1, G-2")
print(f"# DLQ reasons: {got}; good items {items}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
