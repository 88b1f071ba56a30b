#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0135-delay-payloads-inspect — `sluice inspect` of a delay pipeline whose
# payloads are in Kafka (payload_topic, issue 49) shows every pending
# timer with its target and payload, as it does timers whose record is in
# the changelog; a timer whose record the payload topic does not hold
# shows as missing.
#
#   1. payloads in memory: old-0..old-2 (payload p-old-N) due in an hour;
#      SIGTERM
#   2. payload_topic set, topics apply, restart: new-0..new-9 (p-new-N),
#      new-1 rescheduled (p-new-1-v2), new-2 cancelled, old-0 rescheduled
#      (p-old-0-v2: its record moves to the payload topic); SIGTERM
#   3. two index records written by hand into the changelog: ghost-far
#      names an offset past the payload topic's end, ghost-other one that
#      holds another id's record
#   4. inspect: 14 pending; each timer's row has its target and its last
#      payload (old-1, old-2 from the changelog, the others read back from
#      the payload topic), in due order; new-2 absent; the ghosts missing;
#      --key new-1 shows its payload; --limit 3 shows three rows.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

SLUICE_TEST_DELAY_PAYLOADS= # this test sets payload_topic itself
dl_setup 1
changelog=$PFX.changelog
payloads=$PFX.payloads
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
pending() { [ "$(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}')" = "$1" ]; }
start
wait_readyz main 200 30

t0=$(now_ms)
due0=$((t0 + 3600000))
for i in 0 1 2; do
    echo "old-$i:p-old-$i" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((due0 + i * 1000))"
done
wait_until 15 pending 3 || fail "3 timers not pending in memory mode"
sluice_kill main TERM || true

conf_set "$conf" "pipeline $PFX" payload_topic="$payloads"
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null || fail "topics apply did not create the payload topic"
start
wait_readyz main 200 30
for i in $(seq 0 9); do
    echo "new-$i:p-new-$i" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((due0 + 10000 + i * 1000))"
done
wait_until 15 pending 13 || fail "13 timers not pending after the new ones"
echo "new-1:p-new-1-v2" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((due0 + 11500))"
echo "new-2:" | produce "$in" -K: -Z
echo "old-0:p-old-0-v2" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((due0 + 500))"
cancelled() { [ "$(sluice_metric main 'sluice_timers_cancelled_total{pipeline="'"$PFX"'"}')" = 1 ]; }
rescheduled() { [ "$(sluice_metric main 'sluice_timers_rescheduled_total{pipeline="'"$PFX"'"}')" = 2 ]; }
wait_until 15 cancelled || fail "the cancel of new-2 not applied"
wait_until 15 rescheduled || fail "the reschedules of new-1 and old-0 not applied"
# Until its index record is committed a timer shows by its changelog
# record of before (or not at all): stop, then everything is committed.
sluice_kill main TERM || true

# Index records (logpb.h: 0xff, version 1, varint due, varint offset) with
# no record behind them.
index_rec() { # FILE DUE OFFSET
    python3 - "$@" <<'PY'
import sys
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7f | 0x80)
        v >>= 7
    out.append(v)
    return out
open(sys.argv[1], "wb").write(b"\xff\x01" + varint(int(sys.argv[2])) + varint(int(sys.argv[3])))
PY
}
index_rec "$WORK/ghost-far" $((due0 + 30000)) 1000000
index_rec "$WORK/ghost-other" $((due0 + 31000)) 0
kcat -P -b "$BOOTSTRAP" -t "$changelog" -p 0 -k ghost-far "$WORK/ghost-far"
kcat -P -b "$BOOTSTRAP" -t "$changelog" -p 0 -k ghost-other "$WORK/ghost-other"

"$SLUICE_BIN" inspect -c "$conf" "$PFX" >"$WORK/inspect.txt" || fail "inspect failed: $(cat "$WORK/inspect.txt")"
cat "$WORK/inspect.txt"
python3 - "$WORK/inspect.txt" "$out" "$payloads" <<'PY' || fail "inspect output check failed"
import sys
lines = open(sys.argv[1]).read().splitlines()
out, payloads = sys.argv[2], sys.argv[3]
errors = []
if "14 pending timers" not in lines[0]:
    errors.append(f"first line: {lines[0]!r}, want 14 pending timers")
if lines[1].split() != ["DUE", "IN", "PART", "TARGET", "ID", "PAYLOAD"]:
    errors.append(f"header: {lines[1]!r}")
# DUE IN PART TARGET ID PAYLOAD (the last may hold spaces).
rows = [l.split(None, 5) for l in lines[2:] if l and not l.startswith(("...", "2 of"))]
want = {"old-0": "p-old-0-v2", "old-1": "p-old-1", "old-2": "p-old-2"}
for i in range(10):
    want[f"new-{i}"] = f"p-new-{i}"
want["new-1"] = "p-new-1-v2"
del want["new-2"]
seen = {}
for r in rows:
    if len(r) != 6:
        errors.append(f"row {r}: not 6 columns")
        continue
    seen[r[4]] = r
for k, payload in want.items():
    r = seen.get(k)
    if not r:
        errors.append(f"{k} not shown")
    elif r[3] != out or r[5] != payload:
        errors.append(f"{k}: target {r[3]} payload {r[5]}, want {out} {payload}")
for k in ("ghost-far", "ghost-other"):
    r = seen.get(k)
    if not r:
        errors.append(f"{k} not shown")
    elif r[3] != "(missing)":
        errors.append(f"{k}: target {r[3]}, want (missing)")
if "new-2" in seen:
    errors.append("new-2 shown though cancelled")
if len(rows) != 14:
    errors.append(f"{len(rows)} rows, want 14")
dues = [r[0] for r in rows]
if dues != sorted(dues):
    errors.append(f"rows not in due order: {[r[4] for r in rows]}")
if f"2 of the timers shown have no record in {payloads}" not in lines:
    errors.append("no line saying the 2 missing records")
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
PY

"$SLUICE_BIN" inspect -c "$conf" "$PFX" --key new-1 >"$WORK/key.txt" || fail "inspect --key new-1 failed"
awk '$5 == "new-1" && $6 == "p-new-1-v2" { ok = 1 } END { exit !ok }' "$WORK/key.txt" ||
    fail "inspect --key new-1: $(cat "$WORK/key.txt")"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --limit 3 >"$WORK/limit.txt" || fail "inspect --limit 3 failed"
[ "$(grep -c ' p-old-\| p-new-' "$WORK/limit.txt")" = 3 ] && grep -q '^\.\.\. 11 more$' "$WORK/limit.txt" ||
    fail "inspect --limit 3: $(cat "$WORK/limit.txt")"
echo "inspect shows the 12 timers with their payloads (10 read back from $payloads) and the 2 without a record as missing"
