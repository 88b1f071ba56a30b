#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/delay_cancel_kafka.sh — what a cancel and a reschedule cost when
# the timer's record is not in memory: N timers pending (due 1 h .. 7 d
# out, random order), then C of them cancelled and C others rescheduled
# (same ids, a new due time), with the payloads in Kafka (MODE=kafka,
# payload_topic: each cancel or reschedule reads its timer's record back
# to compare ids before the input goes on) or in memory (MODE=memory: a
# lookup in the heap's id index), on the same broker, in one run each.
#
#   bench/delay_cancel_kafka.sh                    # 1M × 1 KiB, C = 20000
#   N=100000 C=5000 MODE=memory bench/delay_cancel_kafka.sh
#
# Its own broker on 127.0.0.1:39392 (tests/integration/kafka/broker.sh),
# stopped on exit; sluice from ./sluice (SLUICE_BIN to change); work files
# in $WORK (default /tmp/sluice-bench-cancel); the setup in
# lib-delay-kafka.sh.  Rates come from the counters
# sluice_timers_cancelled_total and _rescheduled_total, read every 0.1 s
# from the first tombstone produced: the producer's time is included.
# Prints a few lines; the last two are the figures.
source "$(dirname "$0")/lib-delay-kafka.sh"
C=${C:-20000}
MODE=${MODE:-kafka}
W=${WORK:-/tmp/sluice-bench-cancel}
MPORT=39402
P=cancel
dk_broker
kx=
[ "$MODE" = kafka ] && kx="payload_topic = $P.$MODE.payloads"
dk_conf "$W/cancel.ini" $P.$MODE <<INI
input = $P.$MODE.in
changelog = $P.$MODE.changelog
dlq = $P.$MODE.dlq
max_pending_timers = $((2 * N))
max_pending_bytes = 8GiB
$kx
INI
dk_start "$W/cancel.ini" "$W/sluice-$MODE.log"
build/bench/load -b $B -t $P.$MODE.in -n "$N" -s "$SIZE" --key-len 16 \
    --partitioner murmur2_random --random-at sluice-at=1h..7d -H sluice-target=$P.out || exit 1
dk_wait_pending 600
echo "$MODE: $N pending: timers_memory $(m sluice_timers_memory_bytes) B, payload reads $(m sluice_timer_payload_reads_total)"
# _until COUNTER TOTAL — ms until the counter reaches TOTAL (from now).
_until() {
    local t0 v
    t0=$(date +%s%3N)
    while :; do
        v=$(m "$1")
        [ "${v%.*}" -ge "$2" ] 2>/dev/null && break
        [ $(($(date +%s%3N) - t0)) -gt 600000 ] && { echo "timeout: $1 $v of $2" >&2; return 1; }
        sleep 0.1
    done
    echo $(($(date +%s%3N) - t0))
}
# Cancels: the ids k0..k(C-1) of the load (same key length, same
# partitioner), as tombstones.
build/bench/load -b $B -t $P.$MODE.in -n "$C" --null-value --key-len 16 \
    --partitioner murmur2_random >/dev/null &
LP=$!
ms_c=$(_until sluice_timers_cancelled_total "$C") || exit 1
wait "$LP"
reads_c=$(m sluice_timer_payload_reads_total)
# Reschedules: C other ids (k(C)..k(2C-1)) with a new due time.
build/bench/load -b $B -t $P.$MODE.in -n "$((2 * C))" -s "$SIZE" --key-len 16 \
    --partitioner murmur2_random --random-at sluice-at=1h..7d -H sluice-target=$P.out \
    >/dev/null 2>&1 &
LP=$!
# (the first C of those are new timers again, for the cancelled ids; the
# rest reschedule)
ms_r=$(_until sluice_timers_rescheduled_total "$C") || exit 1
wait "$LP"
echo "$MODE: payload reads after the cancels $reads_c, after the reschedules $(m sluice_timer_payload_reads_total); id waits $(m sluice_timer_id_waits_total)"
p=$(m sluice_timers_pending)
[ "${p%.*}" = "$N" ] || echo "warning: $p pending at the end, expected $N"
echo "cancel $MODE: $C in $ms_c ms: $((C * 1000 / (ms_c + 1)))/s"
echo "reschedule $MODE: $C in $ms_r ms (with $C new timers before them): $((C * 1000 / (ms_r + 1)))/s"
