#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0305-throttle-rebalance — a second instance joins in the middle of a
# drain (SPEC §4: scaling out is scaling the consumer group).
#
# 20,000 messages across 100 keys on a 4-partition input, every key at 8/s
# (burst 8): ~24 s of drain.  A second in, a second sluice (another
# instance_id) joins the group: some partitions move to it, and the new
# owner rebuilds their backlog from the changelog checkpoint and the
# overflow topic.  At the end the read_committed output holds each message
# exactly once, in per-key input order, and both instances drained some.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

keys=100
per_key=200
total=$((keys * per_key))

tl_setup 4 "default_rate=8/s burst=8"
SLUICE_INSTANCE_ID=$PFX-1 sluice_up one "$conf"
echo "sluice #1 ready on $in -> $out"

tl_produce_keys $keys $per_key || fail "kcat failed"
echo "produced $total messages"

has_backlog() { [ "$(tl_metric backlog_messages one || true)" -gt 5000 ] 2>/dev/null; }
wait_until 20 has_backlog || fail "no backlog built up on #1"
# The drain under way: a second of it (100 keys at 8/s) behind #1.
draining() { [ "$(tl_metric drained_total one || true)" -ge 800 ] 2>/dev/null; }
wait_until 20 draining || fail "#1 did not drain its backlog: $(tl_metric drained_total one) drained"
b=$(tl_metric backlog_messages one)
SLUICE_INSTANCE_ID=$PFX-2 sluice_start_http two "$conf"
echo "sluice #2 joins with $b messages in #1's backlog"
moved() { log_has two 'REBUILD .*rebuilt from'; }
wait_until 60 moved || fail "no partition moved to #2"
note "#2 rebuilt: $(grep -Eo 'rebuilt from [0-9]+ changelog records and [0-9]+ source records' "$WORK/sluice-two.log" | head -2 | tr '\n' ';')"

wait_records "$out" "$total" 120 || fail "only $(count_records "$out") of $total out within 120 s"
drained() {
    [ "$(tl_metric backlog_messages one)" = 0 ] && [ "$(tl_metric backlog_messages two)" = 0 ]
}
wait_until 30 drained || fail "backlogs not empty after every message went out"
sluice_alive one || fail "sluice #1 exited"
sluice_alive two || fail "sluice #2 exited"
d1=$(tl_metric drained_total one)
d2=$(tl_metric drained_total two)
note "drained by #1: $d1, by #2: $d2"
[ "${d2:-0}" -gt 0 ] || fail "#2 drained nothing"

consume_json "$out" >"$WORK/out.json"
tl_exactly_once "$WORK/out.json" "$keys" "$per_key" || fail "output check failed"
echo "PASS"
