#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0101-delay-fire — 1,000 timers with delays spread over 1–5 s on a
# 4-partition input fire exactly once each, never before their due time, in
# due order within each target partition, with their payload and
# pass-through headers; prints the lateness (record timestamp − sluice-due).
#
# kcat applies -H to every record of one invocation, so the timers go in as
# 40 groups of 25 (one sluice-delay per group, 1.0 s … 4.9 s), produced
# concurrently so that groups interleave in the input.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

groups=40
per_group=25
total=$((groups * per_group))

# Keys are placed as sluice places a timer's output (librdkafka's default
# partitioner, CRC-32), so each target partition is fed by one input
# partition (checked below).
dl_setup 4 input_partitioner=crc32
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

t0=$(date +%s%N)
pids=()
for g in $(seq 0 $((groups - 1))); do
    ms=$((1000 + g * 100))
    for i in $(seq 0 $((per_group - 1))); do echo "t$g-$i:p-t$g-$i"; done |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=${ms}ms" \
            -H "x-delay-ms=$ms" -X partitioner=consistent_random &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "kcat failed to produce"; done
echo "produced $total timers in $((($(date +%s%N) - t0) / 1000000)) ms"

wait_records "$out" "$total" 60 ||
    fail "only $(count_records "$out") of $total timers fired within 60 s"
# Every timer fired: the changelog holds nothing pending any more, so the
# count read below is final (a duplicate could not appear later).
wait_until 30 dl_no_pending ||
    fail "timers still pending after all fired: $("$SLUICE_BIN" inspect -c "$conf" "$PFX" | head -5)"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$total" <<'PY' || fail "output check failed"
import sys
from collections import Counter, defaultdict
from records import load, hdrs

inp, out, total = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
errors = []
src = {r["key"]: r for r in inp}
assert len(src) == total, f"input has {len(src)} distinct ids, expected {total}"

ids = Counter(r["key"] for r in out)
dups = {k: n for k, n in ids.items() if n > 1}
missing = sorted(set(src) - set(ids))
extra = sorted(set(ids) - set(src))
if dups: errors.append(f"{len(dups)} ids fired more than once, e.g. {list(dups.items())[:5]}")
if missing: errors.append(f"{len(missing)} ids never fired, e.g. {missing[:5]}")
if extra: errors.append(f"{len(extra)} unexpected ids, e.g. {extra[:5]}")

late, early, wrong = [], [], []
by_part = defaultdict(list)
mapping = defaultdict(set)
for r in out:
    h, k = hdrs(r), r["key"]
    if k not in src:
        continue
    s = src[k]
    delay = int(hdrs(s)["x-delay-ms"])
    due = int(h["sluice-due"])
    if h.get("sluice-timer-id") != k: wrong.append((k, "sluice-timer-id", h.get("sluice-timer-id")))
    if r["payload"] != "p-" + k: wrong.append((k, "payload", r["payload"]))
    if h.get("x-delay-ms") != str(delay): wrong.append((k, "x-delay-ms", h.get("x-delay-ms")))
    if "sluice-target" in h or "sluice-delay" in h: wrong.append((k, "control header passed through", h))
    # sluice counts the delay from when it reads the record: after the
    # producer stamped it, and (generously) within 5 s of it.
    if not (s["ts"] + delay <= due <= s["ts"] + delay + 5000):
        wrong.append((k, "due - (produced + delay) ms", due - s["ts"] - delay))
    if r["ts"] < due: early.append((k, r["ts"] - due))
    late.append(r["ts"] - due)
    by_part[r["partition"]].append((r["offset"], due, k))
    mapping[s["partition"]].add(r["partition"])

if wrong: errors.append(f"{len(wrong)} records with wrong content, e.g. {wrong[:5]}")
if early: errors.append(f"{len(early)} fired before due (ms), e.g. {early[:5]}")

disorder = []
for p, recs in by_part.items():
    recs.sort()
    for a, b in zip(recs, recs[1:]):
        if b[1] < a[1]:
            disorder.append((p, a[2], a[1], b[2], b[1]))
if disorder: errors.append(f"{len(disorder)} out of due order, e.g. (partition, id, due, next id, due) {disorder[:5]}")
# Same partitioner (kcat's default, the pipeline's input_partitioner and
# sluice's target writes) and the same partition count: each target
# partition is fed by exactly one input partition, so
# due order per target partition is what sluice promises.
if any(len(v) != 1 for v in mapping.values()):
    errors.append(f"input->target partition mapping not 1:1: {dict(mapping)}")

late.sort()
pct = lambda q: late[min(len(late) - 1, int(q * len(late)))] if late else -1
print(f"# fired {len(out)} of {total} timers: {len(dups)} duplicated, {len(missing)} missing, {len(early)} early, {len(disorder)} out of order")
print(f"# per target partition: {dict(sorted((p, len(v)) for p, v in by_part.items()))}")
print(f"# lateness (record ts - sluice-due) ms: p50={pct(0.50)} p99={pct(0.99)} max={late[-1] if late else -1}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
