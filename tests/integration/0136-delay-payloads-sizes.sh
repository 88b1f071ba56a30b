#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0136-delay-payloads-sizes — timers whose payloads are as large as the
# broker takes, kept in the payload topic (payload_topic) and read back by
# offset with the reader's fetch size (max.partition.fetch.bytes 1 MiB),
# after a kill -9 and a rebuild that reads only the index.
#
# The input takes 2 MiB (max.message.bytes on it only); the payload topic
# and the changelog keep the broker's default (1,048,588);
# max_record_bytes = 4 MiB so that the topics' limits decide, as in 0602.
# SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1000: a payload leaves memory once its
# index record is written and is read back 1 s before it is due.
#
# Timers v10, v999999, v1000001 and v1048000 (value bytes) due at +14 s;
# v1500000 cannot be kept in the payload topic: the DLQ at input
# (too-large).  Once every payload has left memory: kill -9, restart.
# The verdict (read_committed): each of the four fires once, key, value
# and the trace header byte for byte, not before its due time; the three
# large payloads were read back; the DLQ holds v1500000 alone; no payload
# reported missing.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1000
topic_create "$in" 1 max.message.bytes=2097152
dl_setup 1 payload_topic="$PFX.payloads" max_record_bytes=4MiB
dl_start

t0=$(now_ms)
due=$((t0 + 14000))
sizes="10 999999 1000001 1048000 1500000"
for n in $sizes; do
    recgen "$in" --key "v$n" --value-bytes "$n" -H "sluice-target=$out" \
        -H "sluice-at=$due" -H "trace=v$n" >/dev/null || fail "producing a value of $n bytes"
done
echo "produced values of $sizes bytes, due at +14 s"

# Four pending, their payloads out of memory (the index and the ids only).
dl_wait_indexed 4 100000 10
[ "$(count_records "$PFX.dlq")" = 1 ] || fail "the DLQ holds $(count_records "$PFX.dlq") records, not v1500000 alone"
note "4 pending in $(dl_metric sluice_timers_memory_bytes) bytes at +$(($(now_ms) - t0)) ms; kill -9"
sluice_kill main KILL || true
dl_start
[ "$(now_ms)" -lt $((due - 2000)) ] || fail "the restart took past the read-back window"

dl_wait_fired main 4 30
reads=$(dl_metric sluice_timer_payload_reads_total)
[ "${reads%.*}" -ge 3 ] || fail "$reads payload records read back, not the three large ones"
note "$reads payload records read back"
dl_no_payload_missing # (the DLQ holds v1500000: checked below)

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK" "$due" <<'PY' || fail "output check failed"
import json, sys
from records import hdrs

w, due = sys.argv[1], int(sys.argv[2])
def load(name):
    return [json.loads(l) for l in open(f"{w}/{name}.json") if l.strip()]
inp = {r["key"]: r for r in load("in")}
out, dlq = load("out"), load("dlq")
errors = []
keys = sorted(r["key"] for r in out)
if keys != sorted(["v10", "v999999", "v1000001", "v1048000"]):
    errors.append(f"fired {keys}")
for r in out:
    s, h = inp[r["key"]], hdrs(r)
    if r["payload"] != s["payload"]:
        errors.append(f"{r['key']}: value of {len(r['payload'] or '')} bytes differs from the input's {len(s['payload'])}")
    if h.get("trace") != r["key"]:
        errors.append(f"{r['key']}: trace header {h.get('trace')!r}")
    if int(h.get("sluice-due", "0")) != due:
        errors.append(f"{r['key']}: sluice-due {h.get('sluice-due')}, not {due}")
    if r["ts"] < due:
        errors.append(f"{r['key']}: produced at {r['ts']}, before its due time {due}")
if len(dlq) != 1 or hdrs(dlq[0]).get("sluice-error") != "too-large":
    errors.append(f"DLQ: {[(hdrs(r).get('sluice-error'), r['key']) for r in dlq]}")
print(f"{len(out)} fired whole, once each; DLQ {len(dlq)}")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
echo "PASS"
