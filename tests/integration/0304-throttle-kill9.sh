#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0304-throttle-kill9 — the crash test (SPEC §4: a kill -9 at any moment
# loses nothing and duplicates nothing).
#
# 20,000 messages across 100 keys (200 each) on a 4-partition input, every
# key limited to 8/s (burst 8): 8 go out at once per key, the other
# 19,200 wait in the overflow topic and drain over ~24 s.  During the drain
# sluice is SIGKILLed at random moments (gaps of 1-2.5 s), at least 5
# times, and restarted at once with the same instance_id.  At the end the
# read_committed output holds each message exactly once, in per-key input
# order, with its header; the backlog is empty.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

keys=100
per_key=200
total=$((keys * per_key))
min_kills=5

tl_setup 4 "default_rate=8/s burst=8"
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30
echo "sluice ready on $in -> $out"

tl_produce_keys $keys $per_key -H x-test=yes || fail "kcat failed"
echo "produced $total messages"

# The backlog gauge of the running instance says whether the drain goes on
# (empty while it starts: the rebuild restores the backlog).
backlog() { tl_metric backlog_messages; }
kills=0
t_end=$(($(date +%s) + 120))
while [ "$kills" -lt "$min_kills" ]; do
    [ "$(date +%s)" -lt "$t_end" ] || fail "could not kill $min_kills times within 120 s"
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * 1.5 }')"
    b=$(backlog || true)
    [ "$b" != 0 ] || break
    sluice_kill main KILL || true
    kills=$((kills + 1))
    echo "kill -9 #$kills with ${b:-?} messages in the backlog; restarting"
    start
done
[ "$kills" -ge "$min_kills" ] || fail "the drain ended after $kills kills (wanted $min_kills)"
wait_readyz main 200 60

wait_records "$out" "$total" 120 || fail "only $(count_records "$out") of $total out within 120 s"
drained() { [ "$(tl_metric backlog_messages)" = 0 ]; }
wait_until 30 drained || fail "backlog not empty after every message went out"
sluice_alive main || fail "sluice exited"
note "$kills kills during the drain"

consume_json "$out" >"$WORK/out.json"
tl_exactly_once "$WORK/out.json" "$keys" "$per_key" x-test=yes || fail "output check failed"
echo "PASS"
