#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0403-fault-broker-pause — the broker JVM is frozen (SIGSTOP) for 15 s
# under load, longer than the transaction timeout (10 s) and the consumer
# session (6 s), then thawed (SIGCONT).  Unlike a restart, connections stay
# open and nothing answers: requests time out instead of failing.  SPEC §4
# "Kafka's faults": exactly-once holds and sluice recovers by itself.
#
# Two instances with static membership ($PFX-a, $PFX-b) run a delay, a
# debounce and a throttle pipeline on a private broker; input is produced
# before, during (kcat times out) and after the pause.  The test never
# restarts sluice.  Checks: every record the inputs hold comes out exactly
# once (timers once and not early, debounce items in exactly one batch of
# their group, throttle messages once in per-key input order); nothing goes
# to a DLQ; both instances answer /readyz 503 (with a reason) and
# sluice_kafka_up 0 during the pause, /readyz 200 again afterwards,
# /healthz never fails; both are alive at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"

# SLUICE_TEST_FAULT_SECS=180 makes it a pause of minutes (by hand).
pause_secs=${SLUICE_TEST_FAULT_SECS:-15}

private_broker_start 61504
conf=$WORK/sluice.ini
fault_conf "$conf" dbt

fault_start_ready a b

fault_feed_start
fault_wait_flowing

t_fault=$(now_ms)
private_broker pause || fail "could not pause the broker"
sleep "$pause_secs"
private_broker resume || fail "could not resume the broker"
t_back=$(now_ms)
note "broker paused for $(((t_back - t_fault) / 1000)) s"

fault_wait_recovered "$t_fault" "$t_back" 90 a b
note "ready again $((($(now_ms) - t_back) / 1000)) s after the broker's resume"

sleep 8
fault_feed_stop
fault_drain 120 a b
fault_health "$t_fault" a b
problems_verdict
echo "PASS"
