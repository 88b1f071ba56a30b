#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0139-delay-payloads-cancel-run — runs of cancels and reschedules of
# timers whose records are not in memory (payload_topic, issue 49): the
# input that waits for one id's records also asks for the ids of the
# records behind it (delay_peek), and a kill -9 while such runs are applied
# loses nothing and duplicates nothing.
#
# Test knobs (as in 0131): SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500 (payloads
# leave memory once indexed) and, from the first restart on,
# SLUICE_TEST_TIMER_HASH_BITS=5 (32 hash values: every cancel and
# reschedule compares its id with those of ~15 records of its partition,
# read back, and the peeked ones crowd the same read).
#
# Timers (4 input partitions, payloads of 0.3-1.3 KB), k-0..1999 at
# version 1, due +40..+49 s; after the restart, in this order:
#   k-0..599      cancelled
#   k-600..999    rescheduled (v2, due +36 s)
#   k-1000..1199  cancelled, then scheduled again (v3, due +38 s)
#   k-1200..1999  left alone (v1)
# kill -9 at a random moment while these are applied, and again at a
# random moment of the firing (+36..+49 s), each followed by a restart
# (seed in the output; SLUICE_TEST_SEED=N replays).
# The verdict (read_committed): k-0..599 never; every other id exactly
# once, with the payload and headers of its last version byte for byte,
# sluice-due its last due time, none before it; nothing in the DLQ; no
# payload reported missing.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

dl_seed

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
dl_setup 4 payload_topic="$PFX.payloads"
dl_start

cat >"$WORK/payloads.py" <<'PY'
import sys
def payload(tid, v):
    n = int(tid.rsplit("-", 1)[1])
    size = 300 + (n * 37 + v * 101) % 1000
    return f"p-{tid}-v{v}:" + "".join(chr(33 + (n * 7 + v + i) % 90) for i in range(size))
if __name__ == "__main__":  # lines ID:PAYLOAD for ids k-FROM..TO at VERSION
    lo, hi, v = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for i in range(lo, hi + 1):
        print(f"k-{i}:{payload(f'k-{i}', v)}")
PY
# sched FROM TO VERSION DUE — timers k-FROM..TO at VERSION, due at DUE.
sched() {
    python3 "$WORK/payloads.py" "$1" "$2" "$3" |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$4" -H "x-v=$3"
}
cancel() { for i in $(seq "$1" "$2"); do echo "k-$i:"; done | produce "$in" -K: -Z; }

t0=$(now_ms)
# (`wait` alone would wait for sluice too)
pids=()
for d in $(seq 0 9); do
    sched $((d * 200)) $((d * 200 + 199)) 1 $((t0 + 40000 + d * 1000)) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a producer failed"; done
# Until its index record is written a payload is in memory (pinned).
dl_wait_indexed 2000 $((2000 * 300 / 4)) 30
sluice_kill main TERM || true
export SLUICE_TEST_TIMER_HASH_BITS=5
dl_start
[ "$(dl_metric sluice_timers_pending)" = 2000 ] || fail "$(dl_metric sluice_timers_pending) pending after the rebuild with colliding hashes, not 2000"
note "2000 timers pending, payloads out of memory, by +$(($(now_ms) - t0)) ms"

# The runs, and a kill -9 while they are applied.
kill_at=$(($(now_ms) + 100 + RANDOM % 700))
(
    trap - EXIT
    cancel 0 599
    sched 600 999 2 $((t0 + 36000))
    cancel 1000 1199
    sched 1000 1199 3 $((t0 + 38000))
) &
runs_pid=$!
while [ "$(now_ms)" -lt "$kill_at" ]; do sleep 0.05; done
applied=$(($(dl_metric sluice_timers_cancelled_total) + $(dl_metric sluice_timers_rescheduled_total)))
sluice_kill main KILL || true
killed=$(($(now_ms) - t0))
wait "$runs_pid" || fail "the cancels and reschedules could not be produced"
dl_start
note "kill -9 at +$killed ms, $applied cancels and reschedules applied by then; ready again at +$(($(now_ms) - t0)) ms"
# 800 + 400 v2 + 200 v3 pending once all is applied.
settled() { [ "$(dl_metric sluice_timers_pending)" = 1400 ]; }
wait_until 30 settled || fail "$(dl_metric sluice_timers_pending) pending after the runs, not 1400"
note "runs applied by +$(($(now_ms) - t0)) ms: $(dl_metric sluice_timer_payload_reads_total) records read back, $(dl_metric sluice_timer_id_waits_total) input waits for an id, $(dl_metric sluice_timer_id_peeks_total) records behind a wait peeked (this process)"
[ "$(now_ms)" -lt $((t0 + 36000)) ] || fail "setup ran past the first due time (+$(($(now_ms) - t0)) ms)"

at=$((t0 + 36000 + RANDOM % 13000))
while [ "$(now_ms)" -lt "$at" ]; do sleep 0.05; done
sluice_kill main KILL || true
killed=$(($(now_ms) - t0))
dl_start
note "kill -9 at +$killed ms while firing; ready again at +$(($(now_ms) - t0)) ms"

dl_wait_fired main 1400 60
sleep 1 # a duplicate would come now

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$t0" <<'PY' || fail "output check failed"
import sys
sys.path.insert(0, sys.argv[1])
from payloads import payload
from records import load, fired_errors

out, t0 = load(sys.argv[1] + "/out.json"), int(sys.argv[2])
want = {}  # id -> (version, due); k-0..599 were cancelled
for i in range(600, 2000):
    want[f"k-{i}"] = (2, t0 + 36000) if i < 1000 else (3, t0 + 38000) if i < 1200 else (1, t0 + 40000 + (i // 200) * 1000)
errors = fired_errors(out, want, payload, lambda v: [("x-v", str(v))])
print(f"# {len(out)} fired, {len(set(r['key'] for r in out))} ids; {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
dl_none_missing
echo "PASS"
