#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0131-delay-payloads-fetch — the read-back path of payloads kept in Kafka
# (payload_topic, issue 49): kill -9 while payloads are being prefetched,
# cancels of timers whose payload is not in memory or being read, and
# reschedules that move a timer's payload to a new record, lose nothing
# and duplicate nothing.
#
# Test knobs (as in 0129): SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500 (payloads
# leave memory once indexed unless due within 1.5 s, and are read back
# 1.5 s ahead: the 30 s window below is read back piece by piece while it
# fires) and, from the first restart on, SLUICE_TEST_TIMER_HASH_BITS=4
# (ids hash to 16 values: every cancel and reschedule reads the records of
# its hash back to compare ids, a dozen a lookup, in one pass, so the
# next lookups meet records still in flight).
#
# Times are from t0, 15 s after the test begins to produce: the setup
# (580 timers, a restart, the cancels and reschedules) must end before
# +30 s; it takes ~20 s on an idle machine, and took 32 s with the cores
# shared among three tests.
# Timers (4 input partitions; payloads of 0.1-2.5 KB with ':', '=', quotes,
# tabs and UTF-8; headers x-n = version and x-note = "a=b c:d"):
#   a-G-I  420: 30 groups of 14, group G due at +30 s + G s (the window)
#   b-I     80: due +46..+54 s, cancelled after the restart with colliding
#               hashes (not in memory: each cancel reads its hash back)
#   c-I     80: due +52 s (v1), then after the restart
#               c-0..29   later (+58 s, v2), then at +34 s (while the window
#                         is read back and killed) earlier again (+45 s, v3)
#               c-30..59  earlier (+33 s, v2)
#               c-60..79  twice in a row: +36 s (v2), then +54 s (v3)
#   n-I     40: scheduled once b and c are applied, due 6 s later, and
#               cancelled 1.5 s before they are due: their payloads are
#               being prefetched (1.5 s ahead).  A cancel that comes after
#               its timer fired finds nothing (cancel_unknown): each n-I
#               fires once or never, and the ones that fire are as many as
#               the cancels that found nothing.
# Then kill -9 at three random moments of the window (seed in the output;
# SLUICE_TEST_SEED=N replays), each followed by a restart.
# The verdict (read_committed): every a, c and fired n id exactly once, with
# the payload and headers of its last version byte for byte, sluice-due its
# last due time, none before it; no b; nothing in the DLQ; no payload
# reported missing.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

dl_seed

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
dl_setup 4 payload_topic="$PFX.payloads"
dl_start

# The payload of ID at VERSION: the same function writes the input and
# checks the output.
cat >"$WORK/payloads.py" <<'PY'
import sys
def payload(tid, v):
    n = int(tid.rsplit("-", 1)[1])
    size = {1: 600 + n * 37 % 900, 2: 2500 if tid.startswith("c-") and n < 30 else 300, 3: 100 + n}[v]
    head = f'p-{tid}-v{v}:{{"k": "a=b"}}\t\u00e9 '
    body = "".join(chr(33 + (n * 7 + v + i) % 90) for i in range(size))
    return head + body
if __name__ == "__main__":  # lines ID:PAYLOAD for ids PREFIX-FROM..TO at VERSION
    pfx, lo, hi, v = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    for i in range(lo, hi + 1):
        print(f"{pfx}-{i}:{payload(f'{pfx}-{i}', v)}")
PY
lines() { python3 "$WORK/payloads.py" "$@"; }
# sched PREFIX FROM TO VERSION DUE — timers PREFIX-FROM..TO at VERSION.
sched() {
    lines "$1" "$2" "$3" "$4" |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$5" -H "x-n=$4" -H "x-note=a=b c:d"
}
cancel() { for i in $(seq "$2" "$3"); do echo "$1-$i:"; done | produce "$in" -K: -Z; }

ts=$(now_ms)
t0=$((ts + 15000))
# (ten producers at a time; `wait` alone would wait for sluice too)
pids=()
waitall() { for p in "${pids[@]}"; do wait "$p" || fail "a producer failed"; done; pids=(); }
for g in $(seq 0 29); do
    sched "a-$g" 0 13 1 $((t0 + 30000 + g * 1000)) &
    pids+=($!)
    [ $((g % 10)) != 9 ] || waitall
done
for g in $(seq 0 7); do
    sched b $((g * 10)) $((g * 10 + 9)) 1 $((t0 + 46000 + g * 1000)) &
    pids+=($!)
done
sched c 0 79 1 $((t0 + 52000)) &
pids+=($!)
waitall
note "580 timers produced in $(($(now_ms) - ts)) ms"

# Until its index record is written a payload is in memory (pinned).
dl_wait_indexed 580 $((580 * 600 / 4)) 30
sluice_kill main TERM || true
export SLUICE_TEST_TIMER_HASH_BITS=4
dl_start
[ "$(dl_metric sluice_timers_pending)" = 580 ] || fail "$(dl_metric sluice_timers_pending) pending after the rebuild with colliding hashes, not 580"

cancel b 0 79
sched c 0 29 2 $((t0 + 58000))
sched c 30 59 2 $((t0 + 33000))
sched c 60 79 2 $((t0 + 36000))
sched c 60 79 3 $((t0 + 54000))
applied() { [ "$(dl_metric sluice_timers_cancelled_total)" = 80 ] && [ "$(dl_metric sluice_timers_rescheduled_total)" = 100 ]; }
wait_until 30 applied || fail "cancels and reschedules not applied: $(dl_metric sluice_timers_cancelled_total) of 80 cancels, $(dl_metric sluice_timers_rescheduled_total) of 100 reschedules"
[ "$(dl_metric sluice_timer_id_waits_total)" -gt 0 ] && [ "$(dl_metric sluice_timer_payload_reads_total)" -gt 0 ] ||
    fail "the cancels and reschedules read nothing back (no input waited for an id): the case is not tested"
note "b cancelled and c rescheduled $(($(now_ms) - ts)) ms after the start, $((t0 + 30000 - $(now_ms))) ms before the first due time: $(dl_metric sluice_timer_payload_reads_total) payload records read back, $(dl_metric sluice_timer_id_waits_total) input waits for an id, $(dl_metric sluice_timer_id_peeks_total) records behind a wait peeked"
[ "$(now_ms)" -lt $((t0 + 30000)) ] || fail "setup ran past the first due time (+$(($(now_ms) - t0)) ms): the checks below need it before"

# n: cancelled while their payloads are being prefetched.
tn=$(now_ms)
sched n 0 39 1 $((tn + 6000))
n_in() { [ "$(dl_metric sluice_timers_pending)" = 540 ]; }
wait_until 20 n_in || fail "the 40 n timers were not scheduled: $(dl_metric sluice_timers_pending) pending"
while [ "$(now_ms)" -lt $((tn + 4500)) ]; do sleep 0.05; done
cancel n 0 39
n_done() { [ $(($(dl_metric sluice_timers_cancelled_total) + $(dl_metric sluice_timers_cancel_unknown_total))) -ge 120 ]; }
wait_until 30 n_done || fail "the n cancels were not applied: $(dl_metric sluice_timers_cancelled_total) cancelled, $(dl_metric sluice_timers_cancel_unknown_total) unknown"
n_cancelled=$(($(dl_metric sluice_timers_cancelled_total) - 80))
n_fired=$(dl_metric sluice_timers_cancel_unknown_total)
note "n: $n_cancelled cancelled while their payloads were being read back, $n_fired fired before their cancel came"

# Three kill -9 in the window (+30..+58 s), at random moments, while the
# reschedule of c-0..29 to +45 s comes at +34 s whatever runs then.
kills=$(for k in 1 2 3; do echo $((t0 + 30000 + RANDOM % 28000)); done | sort -n)
(
    trap - EXIT
    while [ "$(now_ms)" -lt $((t0 + 34000)) ]; do sleep 0.1; done
    sched c 0 29 3 $((t0 + 45000))
) &
resched_pid=$!
for at in $kills; do
    while [ "$(now_ms)" -lt "$at" ]; do sleep 0.05; done
    reads=$(dl_metric sluice_timer_payload_reads_total)
    sluice_kill main KILL || true
    killed=$(($(now_ms) - t0))
    dl_start
    note "kill -9 at +$killed ms ($reads payload records read back by the process killed); ready again at +$(($(now_ms) - t0)) ms"
done
wait "$resched_pid" || fail "the reschedule of c-0..29 at +34 s could not be produced"

total=$((420 + 80 + n_fired))
dl_wait_fired main "$total" 60
sleep 1 # a duplicate would come now

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$t0" "$tn" "$n_fired" <<'PY' || fail "output check failed"
import sys
sys.path.insert(0, sys.argv[1])
from payloads import payload
from records import load, fired_errors

out, t0, tn, n_fired = load(sys.argv[1] + "/out.json"), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
want = {}  # id -> (version, due); b-* were cancelled
for g in range(30):
    for i in range(14):
        want[f"a-{g}-{i}"] = (1, t0 + 30000 + g * 1000)
for i in range(80):
    want[f"c-{i}"] = (3, t0 + 45000) if i < 30 else (2, t0 + 33000) if i < 60 else (3, t0 + 54000)
errors = fired_errors(out, want, payload, lambda v: [("x-n", str(v)), ("x-note", "a=b c:d")], {"n-": tn + 6000})
ids = set(r["key"] for r in out)
n_seen = [k for k in ids if k.startswith("n-")]
if len(n_seen) != n_fired:
    errors.append(f"{len(n_seen)} n timers fired, but {n_fired} cancels found no timer")
print(f"# {len(out)} fired, {len(ids)} ids ({len(n_seen)} n); {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
dl_none_missing
note "last process: $(dl_metric sluice_timer_payload_reads_total) payload records read back, $(dl_metric sluice_timer_id_waits_total) input waits for an id"
echo "PASS"
