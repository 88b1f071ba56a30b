#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0207-debounce-rebalance — scaling out and in while groups are open.
#
# 10,000 items across 500 groups on a 4-partition input, produced in 20
# rounds of 500 (~0.5 s apart), idle = 1s, max_age = 3s, max_items = 8.
# Instance A runs alone; a second instance B joins mid-run (partitions move
# to it and are rebuilt from the changelog with their open groups); later
# A leaves with SIGTERM and B takes everything.  At the end every item is
# in exactly one batch of the read_committed output, in its own group's
# batch, and batch ids are unique.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

groups=500
rounds=20
total=$((groups * rounds))

db_setup 4 idle=1s max_age=3s max_items=8
db_start a "$conf" SLUICE_INSTANCE_ID="$PFX-a"
echo "sluice A ready on $in -> $out"

(
    for r in $(seq 1 $rounds); do
        seq 0 $((groups - 1)) | sed "s/.*/g&:{\"g\":&,\"r\":$r}/" | produce "$in" -K: || exit 1
        sleep 0.5
    done
) &
producer=$!

_open() { [ "$(db_open_groups "$conf" "$PFX")" -ge 100 ]; }
wait_until 30 _open || fail "A holds no open groups"
db_start b "$conf" SLUICE_INSTANCE_ID="$PFX-b"
echo "sluice B joined at $(date +%T)"
_shared() { log_has b 'REBUILD .*rebuilt from [1-9][0-9]* changelog records'; }
wait_until 60 _shared || fail "B rebuilt no partition with open groups"
_b_flushed() {
    local n
    n=$(metric_value "$DB_PORT_b" "sluice_records_out_total{pipeline=\"$PFX\"}")
    [ "${n:-0}" -gt 0 ]
}
wait_until 30 _b_flushed || fail "B flushed no batch"
sluice_kill a TERM || fail "A did not exit 0 on SIGTERM"
echo "sluice A left at $(date +%T)"
wait "$producer" || fail "kcat failed to produce"
echo "produced $total items"

db_exactly_once "$conf" "$PFX" "$in" "$out" "$total"
sluice_alive b || fail "sluice B exited"
echo "PASS"
