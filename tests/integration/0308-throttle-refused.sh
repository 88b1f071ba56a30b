#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0308-throttle-refused — a backlog message the output refuses for good (a
# payload over the output topic's max.message.bytes) goes to the DLQ with
# reason too-large, its original key, value and headers and its source
# coordinates, like a live one; the messages around it are sent exactly
# once, in order.
#
# The producers compress ([kafka] compression.type = lz4), so sluice cannot
# count what the broker will measure and lets the message into the backlog
# (test 0602 has the limits sluice counts itself).  Key B is slow (5/s,
# burst 1): b-0 is forwarded, b-1..b-3 wait in the backlog, then a message
# of 2000 random base64 bytes (incompressible; refused by the 300-byte
# output), then b-5 (behind it, it must still go out).  The refusal aborts
# a transaction; after the rebuild the record is refused up front (the
# runtime's refusal memo) and the operator sends it to the DLQ.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

base_conf "$conf"
conf_set "$conf" kafka compression.type=lz4
tl_pipeline "$conf" "$PFX" "$in" "$out" 1 "default_rate=5/s burst=1"
topic_create "$out" 1 max.message.bytes=300
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

python3 -c "
import base64, os
for i in range(4):
    print(f'B:b-{i}')
print('B:big-' + base64.b64encode(os.urandom(1500)).decode())
print('B:b-5')" | produce "$in" -K: -H x-tag=keep || fail "kcat failed"

wait_records "$out" 5 30 || fail "only $(count_records "$out") of 5 sent"
wait_records "$PFX.dlq" 1 60 || fail "the refused backlog record is not in the DLQ"
sluice_alive main || fail "sluice exited"
# A later key still drains: the pipeline is not stuck.
printf 'C:c-0\nC:c-1\nC:c-2\n' | produce "$in" -K: || fail "kcat failed"
wait_records "$out" 8 30 || fail "key C did not drain: $(count_records "$out") out"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
refused=$(sluice_metric main "sluice_records_dlq_total{pipeline=\"$PFX\",reason=\"too-large\"}" || true)
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}' || true)
note "too-large in the DLQ: ${refused:-?}; aborts: ${aborts:-?}"
python3 - "$WORK/in.json" "$WORK/out.json" "$WORK/dlq.json" "${refused:-0}" <<'PY' || fail "check failed"
import sys
from records import load, hdrs as hd
inp, out, dlq = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
refused = int(sys.argv[4])
errors = []
sent = [r["payload"] for r in out]
want = ["b-0", "b-1", "b-2", "b-3", "b-5", "c-0", "c-1", "c-2"]
if sorted(sent) != sorted(want) or [p for p in sent if p[0] == "b"] != want[:5]:
    errors.append(f"output {sent}, want {want} once each, B in order")
big = [r for r in inp if r["payload"].startswith("big-")][0]
if len(dlq) != 1:
    errors.append(f"{len(dlq)} DLQ records, want 1")
else:
    r, h = dlq[0], hd(dlq[0])
    if h.get("sluice-error") != "too-large":
        errors.append(f"DLQ reason {h.get('sluice-error')}")
    if r["key"] != "B" or r["payload"] != big["payload"] or h.get("x-tag") != "keep":
        errors.append(f"DLQ record lost its key, value or headers: {r['key']} {len(r['payload'] or '')} {h}")
    if h.get("sluice-source-offset") != str(big["offset"]) or h.get("sluice-source-partition") != "0":
        errors.append(f"DLQ source coordinates {h.get('sluice-source-partition')}/{h.get('sluice-source-offset')}, want 0/{big['offset']}")
    if not (h.get("sluice-source-topic") or "").endswith(".in"):
        errors.append(f"DLQ source topic {h.get('sluice-source-topic')}")
# Counters are not transactional: a DLQ record of an aborted transaction
# is counted again when redone.
if refused < 1:
    errors.append(f"sluice_records_dlq_total{{reason=too-large}} = {refused}")
print(f"# out {sent}; DLQ {[hd(r).get('sluice-error') for r in dlq]}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
