#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0402-fault-broker-bounce — a short broker restart under load: stopped and
# started again at once, with its data (a few seconds away, less than the
# 6 s consumer session).  SPEC §4 "Kafka's faults": exactly-once holds and
# sluice recovers by itself.
#
# Two instances with static membership ($PFX-a, $PFX-b) run a delay
# pipeline (4 partitions) on a private broker; timers are produced before,
# during and after the bounce, due 2 s after they are produced.  The test
# never restarts sluice.  Checks: every timer the input holds fires exactly
# once (read_committed), never before due; nothing goes to the DLQ; both
# instances answer /readyz 503 (with a reason) and sluice_kafka_up 0 while
# the broker is away, /readyz 200 again afterwards, /healthz never fails;
# both are alive at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"

private_broker_start 61502
conf=$WORK/sluice.ini
fault_conf "$conf" d

fault_start_ready a b

fault_feed_start
flowing() { [ "$(count_records "$PFX.d.out")" -ge 60 ]; }
wait_until 40 flowing || fail "no timer fired within 40 s of the feed's start"

t_fault=$(now_ms)
private_broker restart 0 2>>"$WORK/broker-restart.log" ||
    fail "the private broker did not come back: $(cat "$WORK/broker-restart.log")"
t_back=$(now_ms)
note "broker unreachable for $(((t_back - t_fault) / 1000)) s (stop, start)"

fault_wait_recovered "$t_fault" "$t_back" 60 a b
note "ready again $((($(now_ms) - t_back) / 1000)) s after the broker's return"

sleep 5
fault_feed_stop
fault_drain 90 a b
fault_health "$t_fault" a b
problems_verdict
echo "PASS"
