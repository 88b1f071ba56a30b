#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0303-throttle-ttl — messages not sent by their deadline go to the DLQ with
# reason `expired` (and their original key, value and headers); none is
# ever sent after its deadline.
#
# Key S is slow (1/s, burst 1).  Ten messages with `sluice-ttl: 1s`, then
# ten with `sluice-deadline` 1.5 s ahead: the first goes out, a couple more
# drain in time, the rest expire in the backlog.  Key F (100/s) sends ten
# messages with `sluice-ttl: 1s` at the same time: all are forwarded.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

tl_setup 1 default_rate=100/s
tl_rates 'S:1/s burst=1'
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

seq -f 'S:ttl-%02g' 0 9 | produce "$in" -K: -H sluice-ttl=1s -H x-kind=ttl || fail "kcat failed"
dl=$(($(date +%s%3N) + 1500))
seq -f 'S:dl-%02g' 0 9 | produce "$in" -K: -H "sluice-deadline=$dl" -H x-kind=dl || fail "kcat failed"
seq -f 'F:f-%02g' 0 9 | produce "$in" -K: -H sluice-ttl=1s || fail "kcat failed"

settled() { [ $(($(count_records "$out") + $(count_records "$PFX.dlq"))) -ge 30 ]; }
wait_until 30 settled || fail "only $(count_records "$out") out and $(count_records "$PFX.dlq") in the DLQ of 30"
exp=$(tl_metric expired_total)
note "expired: $exp"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$WORK/dlq.json" "$dl" "$exp" <<'PY' || fail "check failed"
import sys
from records import load, hdrs as hd
inp, out, dlq = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
dl, exp = int(sys.argv[4]), int(sys.argv[5])
src = {r["payload"]: r for r in inp}
errors = []
sent = [r["payload"] for r in out]
dead = [r["payload"] for r in dlq]
if sorted(sent + dead) != sorted(src):
    errors.append(f"out + DLQ is not the 30 inputs once each: {sorted(sent + dead)}")
if [p for p in sent if p.startswith("f-")] != [f"f-{i:02d}" for i in range(10)]:
    errors.append("F's ten messages were not all forwarded in order")
for r in out:
    if r["payload"].startswith("dl-") and r["ts"] >= dl:
        errors.append(f"{r['payload']} sent {r['ts'] - dl} ms after its deadline")
    if r["payload"].startswith("ttl-") and r["ts"] - src[r["payload"]]["ts"] >= 1000 + 250:
        errors.append(f"{r['payload']} sent {r['ts'] - src[r['payload']]['ts']} ms after it was produced (ttl 1s)")
for r in dlq:
    h = hd(r)
    if h.get("sluice-error") != "expired":
        errors.append(f"DLQ record {r['payload']} with reason {h.get('sluice-error')}")
    if r["key"] != "S" or h.get("x-kind") != r["payload"].split("-")[0]:
        errors.append(f"DLQ record {r['payload']} lost its key or headers: {r['key']} {h}")
    if r["payload"].startswith("dl-") and r["ts"] < dl:
        errors.append(f"{r['payload']} expired {dl - r['ts']} ms before its deadline")
if len(dead) != exp:
    errors.append(f"{len(dead)} in the DLQ but sluice_throttle_expired_total = {exp}")
s_sent = [p for p in sent if not p.startswith("f-")]
print(f"# S: sent {s_sent}; {len(dead)} expired to the DLQ")
if len(dead) < 14:
    errors.append(f"only {len(dead)} expired: the slow key should have let most expire")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
