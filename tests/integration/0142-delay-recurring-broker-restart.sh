#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0142-delay-recurring-broker-restart — recurring timers while the broker
# goes away for ~15 s (longer than the consumer session, 6 s, and the
# transaction timeout, 10 s) and comes back with its data: exactly once per
# (id, instant) through the aborted transactions and the rebalance that
# follow (docs/delay.md "Recurring timers"; SPEC §4 "Kafka's faults").
#
# One instance (static member) on a private broker, 4 partitions: 150 r-*
# schedules `every 1s` (catch-up latest) and 50 ka-* (catch-up all), all
# made before the fault; sluice is never restarted.  The verdict
# (recurring-check.py, read_committed, after a clean stop): each (id,
# sluice-due) once, none before its instant; per id the occurrences 1, 2,
# ... on the 1 s grid; r-* skip only instants due from the fault to the
# recovery, or during an abort or rebalance of sluice's own after it (its
# log: a broker back from an outage can still cost a transaction, e.g.
# librdkafka's "skipped sequence numbers" on the first one after), ka-*
# none; every schedule fires after the recovery.  As in
# 0401: /readyz answers 503 with a reason during the fault and 200 after,
# /healthz never fails, sluice_kafka_up reads 0 then 1.  Variant payloads:
# the same with payload_topic (the schedules stay resident).
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"
source "$(dirname "$0")/lib-faults.sh"

# (the payloads variant may run beside the plain one: a port of its own)
if [ "${SLUICE_TEST_DELAY_PAYLOADS:-}" = kafka ]; then
    private_broker_start 61522
else
    private_broker_start 61520
fi
conf=$WORK/sluice.ini
fault_conf "$conf" d
fault_start_ready a
in=$PFX.d.in
out=$PFX.d.out

dl_every latest $(dl_ids r- 150)
dl_every all $(dl_ids ka- 50)
_firing() { [ "$(count_records "$out")" -ge 1000 ]; }
wait_until 30 _firing || fail "the schedules did not fire 1,000 occurrences within 30 s: $(count_records "$out")"

t_fault=$(now_ms)
private_broker stop 2>>"$WORK/broker-restart.log"
t_stopped=$(now_ms)
left=$((t_fault + 15000 - t_stopped))
[ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
private_broker restart 0 2>>"$WORK/broker-restart.log" ||
    fail "the private broker did not come back: $(cat "$WORK/broker-restart.log")"
t_back=$(now_ms)
note "broker unreachable for $(((t_back - t_fault) / 1000)) s"
fault_wait_recovered "$t_fault" "$t_back" 90 a
t_ready=$(now_ms)
note "ready again $(((t_ready - t_back) / 1000)) s after the broker's return"

# Occurrences go on for a while after the recovery.
sleep 8
fault_health "$t_fault" a
sluice_kill a TERM || problem "sluice did not stop cleanly on SIGTERM"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX-d.dlq" >"$WORK/dlq.json" 2>/dev/null || : >"$WORK/dlq.json"
consume_json "$in" >"$WORK/in.json"
"$(dirname "$0")/recurring-check.py" "$WORK" "$PFX-d" --events "$t_fault-$t_ready" \
    --own-events --expect r-=150,ka-=50 >"$WORK/verdict.txt" ||
    problem "recurring check failed: $(cat "$WORK/verdict.txt")"
note "$(tail -1 "$WORK/verdict.txt")"
grep -E 'KAFKA|TXN|RECOVER|REBALANCE' "$WORK/sluice-a.log" | tail -n 6 | sed "s/^/  a: /"
problems_verdict
echo "PASS"
