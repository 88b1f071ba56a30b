#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0609-records-memory-limit — [sluice] memory_limit is one budget the byte
# caps of all pipelines share (docs/operations.md, Memory caps): a delay
# pipeline (max_pending_bytes 1 GiB, the default) and a debounce pipeline
# (max_pending_bytes = 3 GiB), 4 GiB in all.
#
#   1. memory_limit = 64MiB: each cap is scaled to cap * 64 MiB / 4 GiB
#      (16 MiB and 48 MiB), as sluice_cap_limit, sluice_memory_limit_bytes
#      and one log line per cap with the arithmetic say; and the scaled cap
#      is the one that holds: 24 timers of 900,000 bytes (21.6 MB) pause the
#      delay input at 16 MiB.
#   2. memory_limit = 0: no budget, the caps stay as configured.
#   3. memory_limit = auto (the default) with a cgroup v2 memory.max of
#      2 GiB (a file SLUICE_TEST_CGROUP_MEMORY names): 75 % of it, 1.5 GiB,
#      shared the same way (384 MiB and 1152 MiB); with "max" in it: none.
# Beside: the debounce changelog is made beforehand keeping tombstones for
# 7 days (the plan wants <= 1 day): `topics apply` warns of it and goes on,
# and each start counts it in sluice_topic_drift (1) with a TOPICS line.
source "$(dirname "$0")/lib.sh"

d=$PFX-d
b=$PFX-b
conf=$WORK/sluice.ini
base_conf "$conf"
conf_set "$conf" sluice memory_limit=64MiB
pipeline_section "$conf" "$d" delay input="$PFX.d.in" input_partitions=1
pipeline_section "$conf" "$b" debounce input="$PFX.b.in" input_partitions=1 \
    output="$PFX.b.out" idle=10m max_age=20m max_pending_bytes=3GiB
topic_create "$PFX.d.out" 1
topic_create "$PFX.b.out" 1
topic_create "$b.changelog" 1 cleanup.policy=compact segment.ms=600000 \
    min.cleanable.dirty.ratio=0.1 max.compaction.lag.ms=900000 \
    min.compaction.lag.ms=0 delete.retention.ms=604800000
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply.out" || fail "topics apply failed: $(cat "$WORK/apply.out")"
grep -Eq "^warning +$b.changelog .*delete.retention.ms is 604800000" "$WORK/apply.out" ||
    fail "topics apply did not warn of the changelog's drift: $(cat "$WORK/apply.out")"

limit() { sluice_metric "$1" "sluice_cap_limit{pipeline=\"$2\",cap=\"max_pending_bytes\"}"; }
budget() { sluice_metric "$1" sluice_memory_limit_bytes; }
# expect NAME BUDGET DELAY DEBOUNCE — the gauges of instance NAME.
expect() {
    [ "$(budget "$1")" = "$2" ] || fail "$1: sluice_memory_limit_bytes $(budget "$1"), want $2"
    [ "$(limit "$1" "$d")" = "$3" ] || fail "$1: delay's max_pending_bytes limit $(limit "$1" "$d"), want $3"
    [ "$(limit "$1" "$b")" = "$4" ] || fail "$1: debounce's max_pending_bytes limit $(limit "$1" "$b"), want $4"
    [ "$(sluice_metric "$1" sluice_topic_drift)" = 1 ] ||
        fail "$1: sluice_topic_drift $(sluice_metric "$1" sluice_topic_drift), want 1"
    log_has "$1" "TOPICS $b.changelog: delete.retention.ms is 604800000" ||
        fail "$1: no TOPICS line for the changelog's drift"
    echo "$1: budget $2, caps $3 (delay) and $4 (debounce); 1 topic config drifted"
}

# 1. 64 MiB shared: 1 GiB -> 16 MiB, 3 GiB -> 48 MiB.
sluice_up a "$conf"
expect a $((64 << 20)) $((16 << 20)) $((48 << 20))
log_has a "MEMORY memory_limit 64MiB: 2 byte caps, 4GiB in all: each is scaled to share it" ||
    fail "no log line for the budget: $(grep MEMORY "$WORK/sluice-a.log")"
log_has a "MEMORY $d: max_pending_bytes scaled from 1GiB to 16MiB: 1073741824 \* 67108864 / 4294967296 = 16777216 \(memory_limit 64MiB, byte caps 4GiB in all\)" ||
    fail "no log line for the delay cap: $(grep MEMORY "$WORK/sluice-a.log")"
log_has a "MEMORY $b: max_pending_bytes scaled from 3GiB to 48MiB: 3221225472 \* 67108864 / 4294967296 = 50331648" ||
    fail "no log line for the debounce cap: $(grep MEMORY "$WORK/sluice-a.log")"
[ "$(grep -c 'MEMORY.*scaled from' "$WORK/sluice-a.log")" = 2 ] || fail "not one line per cap"
note "$(grep 'MEMORY' "$WORK/sluice-a.log" | sed 's/^[^ ]* //')"

recgen "$PFX.d.in" --key t --seq --count 24 --value-bytes 900000 \
    -H "sluice-target=$PFX.d.out" -H sluice-delay=1h >/dev/null || fail "producing the timers"
series="{pipeline=\"$d\",cap=\"max_pending_bytes\"}"
paused() { [ "$(sluice_metric a "sluice_input_paused$series")" = 1 ]; }
wait_until 30 paused || fail "the delay input did not pause at the scaled cap (used $(sluice_metric a "sluice_cap_used$series"))"
used=$(sluice_metric a "sluice_cap_used$series")
[ "$used" -le $(((16 << 20) + 1000000)) ] || fail "the delay pipeline holds $used bytes, over its scaled cap and one record"
pending=$(sluice_metric a "sluice_timers_pending{pipeline=\"$d\"}")
[ "$pending" -lt 24 ] || fail "all 24 timers were taken under a 16 MiB cap"
log_has a "input paused: .* max_pending_bytes = 16777216" || fail "no CAP line naming the scaled cap"
echo "paused at $used bytes ($pending of 24 timers of 900000 bytes) under the scaled 16 MiB cap"
sluice_kill a TERM || fail "sluice[a] did not stop cleanly"

# 2. memory_limit = 0: as configured.
conf_set "$conf" sluice memory_limit=0
sluice_up b "$conf" 60
expect b 0 $((1 << 30)) $((3 << 30))
log_has b "memory_limit: none \(memory_limit = 0\)" || fail "no log line for memory_limit = 0"
log_has b "scaled from" && fail "a cap was scaled under memory_limit = 0"
sluice_kill b TERM || fail "sluice[b] did not stop cleanly"

# 3. auto: 75 % of a 2 GiB cgroup limit (1.5 GiB) shared; "max": none.
conf_set "$conf" sluice memory_limit=auto
echo 2147483648 >"$WORK/memory.max"
SLUICE_TEST_CGROUP_MEMORY=$WORK/memory.max sluice_up c "$conf" 60
expect c $((3 << 29)) $((384 << 20)) $((1152 << 20))
log_has c "memory_limit 1536MiB \(75 % of the cgroup's limit 2GiB in $WORK/memory.max\)" ||
    fail "no log line for the cgroup's budget: $(grep MEMORY "$WORK/sluice-c.log")"
sluice_kill c TERM || fail "sluice[c] did not stop cleanly"
echo max >"$WORK/memory.max"
SLUICE_TEST_CGROUP_MEMORY=$WORK/memory.max sluice_up e "$conf" 60
expect e 0 $((1 << 30)) $((3 << 30))
log_has e "memory_limit: none \(the cgroup sets no limit\)" || fail "no log line for a cgroup without a limit"
sluice_alive e || fail "sluice exited"
echo "ok"
