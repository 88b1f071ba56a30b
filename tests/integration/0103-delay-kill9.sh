#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0103-delay-kill9 — the crash test (SPEC §4: "a kill -9 at any moment loses
# nothing and duplicates nothing").
#
# 10,000 timers on a 4-partition input, due over ~20 s (100 groups of 100
# with one sluice-at each, 200 ms apart).  While they are read, pending and
# firing, sluice is SIGKILLed at random moments (gaps of 1–4 s), at least 5
# times, and restarted at once with the same instance_id (the new
# transactional producer fences the dead one's open transaction).  At the
# end every timer id must appear exactly once in the target read with
# read_committed, at its due time or after.
# variant: asan
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

groups=100
per_group=100
total=$((groups * per_group))
min_kills=5

dl_setup 4
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30
echo "sluice ready on $in -> $out"

t0=$(now_ms)
first_due=$((t0 + 4000))
last_due=$((first_due + (groups - 1) * 200))

# Producing 100 kcat invocations, 10 at a time, in the background: the kills
# start while the input is still being read.
dl_produce_at "$groups" "$per_group" "$first_due" 200 &
producer=$!

kills=0
kill_log=""
while [ "$kills" -lt "$min_kills" ] || [ "$(now_ms)" -lt "$((last_due - 2000))" ]; do
    gap_ms=$((1000 + RANDOM % 3001))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    sluice_alive main || fail "sluice died by itself before kill $((kills + 1))"
    sluice_kill main KILL || true
    kills=$((kills + 1))
    kill_log="$kill_log +$((($(now_ms) - t0) / 100))ds"
    start
done
last_restart=$(now_ms)
wait "$producer" || fail "kcat failed to produce the timers"
note "$kills kills (SIGKILL) at$kill_log after the first record (ds = 0.1 s)"

dl_wait_fired main "$total" 90
done_at=$(now_ms)
note "final drain: all fired $((done_at - last_restart)) ms after the last restart, $((done_at - last_due)) ms after the last due time"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 "$(dirname "$0")/timers-check.py" "$WORK/in.json" "$WORK/out.json" "$total" ||
    fail "exactly-once check failed"
grep -E 'REBUILD .*rebuilt from' "$WORK/sluice-main.log" | tail -4 | sed 's/^/  /'
echo "PASS"
