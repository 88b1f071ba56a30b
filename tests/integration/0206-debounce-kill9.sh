#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0206-debounce-kill9 — the crash test (SPEC §4: a kill -9 at any moment
# loses nothing and duplicates nothing).
#
# 10,000 items across 500 groups on a 4-partition input, produced in 20
# rounds of 500 (one item per group per round, ~0.5 s apart), with idle =
# 1s, max_age = 3s and max_items = 8 (restarts make bursts).  While
# items are read, pending and flushed, sluice is SIGKILLed at random moments
# (gaps of 1–2.5 s), at least 5 times, and restarted at once with the same
# instance_id.  At the end every item is in exactly one batch of the
# read_committed output, in the batch of its own group, and batch ids are
# unique: a batch replayed after a crash was never visible before, because
# the batch and its items' tombstones commit in one transaction.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

groups=500
rounds=20
total=$((groups * rounds))
min_kills=5

db_setup 4 idle=1s max_age=3s max_items=8
start() { db_start main "$conf" SLUICE_INSTANCE_ID="$PFX-0"; }
start
echo "sluice ready on $in -> $out"

# The producer: one kcat per round (no sluice-item: each record is its own
# item, identified by its payload).
(
    for r in $(seq 1 $rounds); do
        seq 0 $((groups - 1)) | sed "s/.*/g&:{\"g\":&,\"r\":$r}/" | produce "$in" -K: || exit 1
        sleep 0.5
    done
) &
producer=$!

db_kill9_loop "$producer" "$min_kills" start
kills=$DB_KILLS
wait "$producer" || fail "kcat failed to produce"
echo "produced $total items; $kills kills"

db_exactly_once "$conf" "$PFX" "$in" "$out" "$total"
sluice_alive main || fail "sluice exited"
echo "PASS"
