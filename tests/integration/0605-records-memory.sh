#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0605-records-memory — memory is bounded by bytes wherever input bytes
# become memory, however the input is shaped: 10,000 debounce groups and
# 2,000 throttle keys of 100 KB each (1.2 GB of keys), with caps of 64 MiB
# each.  The debounce cap (max_pending_bytes) counted payloads only, and
# no throttle cap counted key bytes: both pipelines took every key into
# memory.
#
#   debounce  max_pending_bytes = 64 MiB (payloads, item ids and group
#             keys), idle 10 min: no group flushes during the test
#   throttle  max_key_bytes = 64 MiB, 1/h burst 1: each key's second record
#             waits in the backlog, so the key stays in memory
# Checks: each input pauses at its cap (sluice_input_paused, the CAP log
# line), what the caps count stays under their limits plus one record, and
# the process's RSS grows by at most the caps plus a stated margin (256
# MiB).  (Test 0210 checks that what waits at a cap comes out when it
# opens.)
source "$(dirname "$0")/lib.sh"

groups=10000
keys=2000
key_bytes=100000
cap=$((64 << 20))
margin=$((256 << 20)) # librdkafka's fetch queue (64 MiB), its producer
                      # buffers, the held ring, the allocator's slack
conf=$WORK/sluice.ini
base_conf "$conf"
pipeline_section "$conf" "$PFX-b" debounce input="$PFX.b.in" input_partitions=1 \
    output="$PFX.b.out" idle=10m max_age=20m max_pending_bytes=64MiB
pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=1 \
    output="$PFX.t.out" default_rate="1/h burst=1" max_key_bytes=64MiB
topic_create "$PFX.b.out" 1
topic_create "$PFX.t.out" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
pid=${SLUICE_PIDS[main]}
rss() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$pid/status"; }
rss0=$(rss)
echo "sluice ready, RSS $((rss0 >> 20)) MiB"

recgen "$PFX.b.in" --key-bytes $key_bytes --key g --seq --count $groups --value '{"i":1}' \
    -H sluice-item=i >/dev/null || fail "producing the debounce records"
for r in 1 2; do
    recgen "$PFX.t.in" --key-bytes $key_bytes --key k --seq --count $keys --value "r$r" \
        >/dev/null || fail "producing the throttle records"
done
echo "produced $groups debounce records and 2 x $keys throttle records with keys of $key_bytes bytes"

m() { sluice_metric main "$1"; }
_paused() {
    [ "$(m "sluice_input_paused{pipeline=\"$PFX-b\",cap=\"max_pending_bytes\"}")" = 1 ] &&
        [ "$(m "sluice_input_paused{pipeline=\"$PFX-t\",cap=\"max_key_bytes\"}")" = 1 ]
}
wait_until 120 _paused || fail "the inputs did not pause at their caps (RSS $(($(rss) >> 20)) MiB, $(m "sluice_records_in_total{pipeline=\"$PFX-b\"}") debounce records in): $(grep CAP "$WORK/sluice-main.log" | tail -2)"
sleep 2 # what was fetched for the paused partitions settles
rss1=$(rss)
used_b=$(m "sluice_cap_used{pipeline=\"$PFX-b\",cap=\"max_pending_bytes\"}")
used_t=$(m "sluice_cap_used{pipeline=\"$PFX-t\",cap=\"max_key_bytes\"}")
in_b=$(m "sluice_records_in_total{pipeline=\"$PFX-b\"}")
in_t=$(m "sluice_records_in_total{pipeline=\"$PFX-t\"}")
note "paused: debounce ${in_b:-?} records in, ${used_b:-?} bytes held; throttle ${in_t:-?} in, ${used_t:-?} bytes of keys; RSS $((rss0 >> 20)) -> $((rss1 >> 20)) MiB (bound: +$(((2 * cap + margin) >> 20)) MiB)"
log_has main "CAP $PFX-b: input paused" || fail "no CAP line for the debounce input"
log_has main "CAP $PFX-t: input paused" || fail "no CAP line for the throttle input"
awk -v u="${used_b:-9e18}" -v c=$cap -v r=$key_bytes 'BEGIN { exit !(u <= c + r + 1024) }' ||
    fail "debounce holds ${used_b:-?} bytes, over its cap"
awk -v u="${used_t:-9e18}" -v c=$cap -v r=$key_bytes 'BEGIN { exit !(u <= c + r + 1024) }' ||
    fail "throttle holds ${used_t:-?} bytes of keys, over its cap"
[ $((rss1 - rss0)) -le $((2 * cap + margin)) ] ||
    fail "RSS grew by $(((rss1 - rss0) >> 20)) MiB, more than the caps and the margin"
[ "${in_b%.*}" -lt $groups ] || fail "every debounce record was taken: the cap did not hold"

sluice_alive main || fail "sluice exited"
