#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0401-fault-broker-restart — the broker goes away for ~20 s under load,
# longer than the consumer session (6 s) and than the transaction timeout
# (10 s), and comes back with its data (SPEC §4 "Kafka's faults": sluice
# keeps exactly-once and recovers by itself).
#
# Two instances with static membership (instance_ids $PFX-a, $PFX-b) run
# a delay, a debounce and a throttle pipeline (4 partitions each) on a
# private broker.  A background loop produces to all three inputs before,
# during (kcat fails while the broker is down) and after the outage.  The
# test never restarts sluice.  Checks:
#   - both instances answer /readyz 503 (with a reason) and sluice_kafka_up
#     0 during the outage, and /readyz 200 again afterwards; /healthz never
#     fails; both are alive at the end with sluice_kafka_up 1;
#   - every record the inputs hold comes out exactly once (read_committed):
#     every timer once and not before due, every debounce item in exactly
#     one batch of its group, every throttle message once and in per-key
#     input order.
# Its payloads variant keeps the delay's payloads in Kafka and reads them
# back while the broker goes and comes (lib-faults.sh, fault_conf).
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"

# From the stop's start to the restart's start (the start adds ~5 s).
# SLUICE_TEST_FAULT_SECS=180 makes it an outage of minutes (by hand).
down_secs=${SLUICE_TEST_FAULT_SECS:-15}

# (the payloads variant may run beside the plain one: a port of its own)
if [ "${SLUICE_TEST_DELAY_PAYLOADS:-}" = kafka ]; then
    private_broker_start 61518
else
    private_broker_start 61500
fi
conf=$WORK/sluice.ini
fault_conf "$conf" dbt

fault_start_ready a b

fault_feed_start
fault_wait_flowing

t_fault=$(now_ms)
private_broker stop 2>>"$WORK/broker-restart.log"
t_stopped=$(now_ms)
left=$((t_fault + down_secs * 1000 - t_stopped))
[ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
private_broker restart 0 2>>"$WORK/broker-restart.log" ||
    fail "the private broker did not come back: $(cat "$WORK/broker-restart.log")"
t_back=$(now_ms)
note "broker unreachable for $(((t_back - t_fault) / 1000)) s (stop took $(((t_stopped - t_fault) / 1000)) s)"

fault_wait_recovered "$t_fault" "$t_back" 90 a b
t_ready=$(now_ms)
note "ready again $(((t_ready - t_back) / 1000)) s after the broker's return"

# Load goes on for a while after recovery, then stops.
sleep 8
fault_feed_stop
fault_drain 120 a b
fault_health "$t_fault" a b
for n in a b; do
    grep -E 'KAFKA|TXN|RECOVER|REBALANCE' "$WORK/sluice-$n.log" | tail -n 6 | sed "s/^/  $n: /"
done
problems_verdict
echo "PASS"
