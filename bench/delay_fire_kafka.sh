#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/delay_fire_kafka.sh — N timers due at the same instant with their
# payloads in Kafka (payload_topic, payload_cache at its default 64 MiB):
# timers fired per second from the due time until none is pending, and a
# plain EOS copy (bench/eos_copy) of the same input records in the same run,
# on the same broker, as the baseline (issue 49: ≥ 100k/s and ≥ 0.5× it).
#
#   bench/delay_fire_kafka.sh            # 1M × 1 KiB, due 100 s after start
#   N=300000 SIZE=4096 AHEAD=80000 bench/delay_fire_kafka.sh
#
# Its own broker on 127.0.0.1:39392 (tests/integration/kafka/broker.sh),
# stopped on exit; sluice from ./sluice (SLUICE_BIN to change); work files in
# $WORK (default /tmp/sluice-bench-fire); the setup in lib-delay-kafka.sh.
# The fired rate is read from sluice_timers_pending every 0.2 s, so it is
# at most 0.2 s pessimistic.  Prints a few lines; the last two are the
# figures.
source "$(dirname "$0")/lib-delay-kafka.sh"
AHEAD=${AHEAD:-100000}
W=${WORK:-/tmp/sluice-bench-fire}
MPORT=39401
P=fire
dk_broker
dk_conf "$W/fire.ini" $P <<INI
input = $P.in
payload_topic = $P.payloads
max_pending_timers = $((2 * N))
max_pending_bytes = 4GiB
INI
build/bench/mktopic -b $B -p 4 $P.copy || exit 1
dk_start "$W/fire.ini" "$W/sluice.log"
T=$(($(date +%s%3N) + AHEAD))
build/bench/load -b $B -t $P.in -n "$N" -s "$SIZE" --key-len 16 \
    --partitioner murmur2_random -H sluice-at=$T -H sluice-target=$P.out || exit 1
dk_wait_pending 300
left=$((T - $(date +%s%3N)))
[ "$left" -gt 0 ] || { echo "all pending only ${left} ms after the due time: raise AHEAD"; exit 1; }
echo "$N pending ${left} ms before due: timers_memory $(m sluice_timers_memory_bytes) B, VmRSS $(awk '/VmRSS/ { print $2 }' /proc/$SP/status) kB"
while [ "$(date +%s%3N)" -lt "$T" ]; do sleep 0.05; done
echo "at due: $(m sluice_timer_payload_reads_total) payloads read back"
t0=$(date +%s%3N)
while :; do
    p=$(m sluice_timers_pending)
    [ "${p%.*}" = 0 ] && break
    [ $(($(date +%s%3N) - t0)) -gt 300000 ] && { echo "timeout: $p pending"; exit 1; }
    sleep 0.2
done
t1=$(date +%s%3N)
out=$(build/bench/consume -b $B -t $P.out -n "$N" --timeout 60 2>/dev/null)
echo "output (read_committed): $out"
case "$out" in *"records=$N "*) ;; *) echo "expected $N records out"; exit 1 ;; esac
echo "payloads read back in all: $(m sluice_timer_payload_reads_total)"
copy=$(build/bench/eos_copy -b $B -i $P.in -o $P.copy -g $P-copy -n "$N" --timeout 300 2>/dev/null)
echo "fired: $N timers in $((t1 - t0)) ms after their due time: $((N * 1000 / (t1 - t0 + 1)))/s"
echo "baseline: $copy"
