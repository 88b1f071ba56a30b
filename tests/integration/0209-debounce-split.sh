#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0209-debounce-split — batches larger than the producer accepts.  With
# [kafka] message.max.bytes = 10000, 30 items of 1,000 bytes for one group
# make a ~31 kB batch: sluice splits it in halves until each fits (4
# batches of 7 or 8 items, each with its own batch id), and every item is
# in exactly one of them.  An item whose changelog record alone is too large
# is refused at input as too-large, and its DLQ copy is cut to what the
# producer takes (sluice-cut says so): nothing is dropped.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

dlq=$PFX.dlq

db_setup 1 idle=1s max_age=30s dlq="$dlq"
conf_set "$conf" kafka message.max.bytes=10000
db_start main "$conf"
echo "sluice ready on $in -> $out (message.max.bytes = 10000)"

python3 -c '
for i in range(30):
    print("WH-3:" + ("{\"i\":%d,\"pad\":\"" % i).ljust(998, "x") + "\"}")
print("WH-3:" + "y" * 12000)' | produce "$in" -K: -X message.max.bytes=100000 ||
    fail "kcat failed"
echo "produced 30 items of 1000 bytes and one of 12000"

_too_large() {
    [ "$(metric_value "$DB_PORT_main" "sluice_records_dlq_total{pipeline=\"$PFX\",reason=\"too-large\"}")" = 1 ]
}
wait_until 30 _too_large || fail "the 12000-byte item was not refused as too-large"
wait_records "$dlq" 1 30 || fail "the 12000-byte item is not in the DLQ"
cut=$(consume_all "$dlq" -f '%h\n' | tr ',' '\n' | grep -o 'sluice-cut=.*' || true)
[ -n "$cut" ] || fail "the DLQ copy has no sluice-cut header: $(consume_all "$dlq" -f '%h\n')"
note "DLQ copy: $cut"
_all() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))' | grep -qx 30
}
wait_until 30 _all || fail "not all 30 items flushed"
db_wait_drained "$conf" "$PFX" 30 || fail "group still open"
log_has main 'too large for .*: split into' || fail "no split logged"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

w = sys.argv[1]
bs = sorted(dbcheck.load_batches(f"{w}/out.json"), key=lambda b: b["_offset"])
errors = []
got = [it["payload"]["i"] for b in bs for it in b["items"]]
if got != list(range(30)):
    errors.append(f"items {got}")
sizes = [len(b["items"]) for b in bs]
if len(bs) < 2 or max(sizes) > 8:
    errors.append(f"batch sizes {sizes}: want halves of at most 8")
if len({b["batch_id"] for b in bs}) != len(bs):
    errors.append("batch ids repeat")
print(f"# split into {len(bs)} batches of {sizes} items; the 12000-byte item refused as too-large")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
