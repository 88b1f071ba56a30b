#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0314-throttle-long-linger — a commit never waits for linger.ms.
#
# Nothing sluice produces is visible before its commit, and each commit
# sends what is left at once: throttle's wait for its deliveries before
# its checkpoints (FLUSHING) flushes the producer on the txn worker, and a
# suspect record sent alone flushes while it waits for its report.  With
# linger.ms at 8 s here (transaction_timeout is 10 s), 100 records under
# their rate are visible within 4 s, and a record the output refuses (over
# its max.message.bytes: with the producers compressing, lz4, only the
# broker can tell, so the record is sent, refused, then sent alone) reaches
# the DLQ with reason too-large within 10 s, the record behind it sent
# exactly once, in order.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

base_conf "$conf"
conf_set "$conf" kafka linger.ms=8000 compression.type=lz4
tl_pipeline "$conf" "$PFX" "$in" "$out" 1 "default_rate=1000/s burst=1000"
topic_create "$out" 1 max.message.bytes=300
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready on $in -> $out (linger.ms = 8000)"

t0=$(now_ms)
seq -f 'A:a-%02g' 0 99 | produce "$in" -K: || fail "kcat failed"
wait_records "$out" 100 4 ||
    fail "only $(count_records "$out") of 100 visible within 4 s: the commit waited for linger.ms"
note "100 records visible $(($(now_ms) - t0)) ms after they were produced"

t0=$(now_ms)
python3 -c "
import base64, os
print('B:big-' + base64.b64encode(os.urandom(1500)).decode())
print('B:b-after')" | produce "$in" -K: || fail "kcat failed"
wait_records "$PFX.dlq" 1 10 ||
    fail "the refused record is not in the DLQ within 10 s"
wait_records "$out" 101 10 || fail "the record behind the refused one is not out"
note "refused record in the DLQ and the next one out $(($(now_ms) - t0)) ms after they were produced"
sluice_alive main || fail "sluice exited"

consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK/out.json" "$WORK/dlq.json" <<'PY' || fail "check failed"
import sys
from records import load, hdrs
out, dlq = load(sys.argv[1]), load(sys.argv[2])
want = [f"a-{i:02d}" for i in range(100)] + ["b-after"]
got = [r["payload"] for r in out]
if got != want:
    sys.exit(f"output is not the 101 records once each, in order: {got[:5]}... ({len(got)})")
if len(dlq) != 1 or not dlq[0]["payload"].startswith("big-"):
    sys.exit(f"DLQ: expected the one refused record, got {len(dlq)}")
h = hdrs(dlq[0])
if h.get("sluice-error") != "too-large":
    sys.exit(f"DLQ reason: {h.get('sluice-error')}")
print("# output: 101 records once each, in order; DLQ: 1 record, too-large")
PY
echo "PASS"
