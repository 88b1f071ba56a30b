#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0108-delay-kill9-commit — kill -9 while a commit is off the loop.
#
# While the transaction worker commits, the loop goes on taking input and
# firing due timers; what they produce waits in the outbox for the next
# transaction (outbox.h).  This test makes every commit long
# (SLUICE_TEST_COMMIT_PAUSE_MS: the worker waits 250 ms before
# commit_transaction) so that the outbox is in use most of the time, and
# SIGKILLs sluice only at moments its /metrics says a commit is in flight
# (sluice_transaction_state 4) — at least 6 times, restarting at once with
# the same instance_id.  6,000 timers on a 4-partition input, due over
# ~15 s, must each appear exactly once in the target read with
# read_committed, never before their due time: work decided during a
# commit that the kill cut off is neither lost (it was never committed, so
# it is redone from the changelog and the input) nor sent twice.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

groups=60
per_group=100
total=$((groups * per_group))
min_kills=6

dl_setup 4
start() { SLUICE_TEST_COMMIT_PAUSE_MS=250 SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30
log_has main 'SLUICE_TEST_COMMIT_PAUSE_MS' || fail "the commit pause is not in effect"

t0=$(now_ms)
first_due=$((t0 + 3000))
last_due=$((first_due + (groups - 1) * 250))

dl_produce_at "$groups" "$per_group" "$first_due" 250 &
producer=$!

committing() {
    sluice_alive main || fail "sluice died by itself"
    [ "$(sluice_metric main sluice_transaction_state)" = 4 ]
}

kills=0
deferred_seen=0
kill_log=""
while [ "$kills" -lt "$min_kills" ] || [ "$(now_ms)" -lt "$((last_due - 1000))" ]; do
    gap_ms=$((300 + RANDOM % 1200))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    wait_until 30 committing || fail "no commit in flight within 30 s (kill $((kills + 1)))"
    d=$(sluice_metric main sluice_txn_deferred_records_total)
    [ "${d:-0}" -gt 0 ] 2>/dev/null && deferred_seen=$((deferred_seen + 1))
    sluice_kill main KILL || true
    kills=$((kills + 1))
    kill_log="$kill_log +$((($(now_ms) - t0) / 100))ds"
    start
done
last_restart=$(now_ms)
wait "$producer" || fail "kcat failed to produce the timers"
note "$kills kills (SIGKILL), each while a commit was in flight, at$kill_log (ds = 0.1 s)"
note "in $deferred_seen of them the killed process had already sent records decided during an earlier commit"
[ "$deferred_seen" -gt 0 ] || fail "no killed process had used the outbox: the test did not exercise it"

dl_wait_fired main "$total" 90
note "final drain: all fired $(($(now_ms) - last_restart)) ms after the last restart"
note "outbox of the last process: $(sluice_metric main sluice_txn_deferred_records_total) records sent after a commit returned"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 "$(dirname "$0")/timers-check.py" "$WORK/in.json" "$WORK/out.json" "$total" ||
    fail "exactly-once check failed"
echo "PASS"
