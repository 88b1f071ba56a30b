#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0408-fault-instance-paused — a sluice instance, not the broker, is frozen
# (SIGSTOP, as a stop-the-world pause of its host or VM) under load for
# longer than the consumer session (6 s) and the transaction timeout
# (10 s), then thawed (SIGCONT).  SPEC §4 "Kafka's faults": a session or
# transaction that times out.
#
# While A is frozen the group expires its session and gives its partitions
# to B, whose rebuilds wait for A's open transaction until the broker
# aborts it.  When A thaws it still believes it owns its partitions, with
# timers and windows in memory that B now serves: whatever it writes must
# not become visible (every transaction carries the group's generation, and
# A's producer epoch was bumped by the abort).  Nobody else holds A's
# instance_id, so A must not exit: it finds its session and transaction
# gone, rejoins and takes its share again.
#
# Two instances ($PFX-a, $PFX-b, static membership) run a delay, a debounce
# and a throttle pipeline (4 partitions each) on a private broker, with
# input produced before, during and after the pause.  Checks:
#   - B runs all 12 partitions while A is frozen (it took A's share);
#   - A is alive at the end, runs partitions again, and both answer
#     /readyz 200; neither /healthz fails (A's is checked from 3 s after
#     the thaw: during the freeze nothing of A answers);
#   - every record the inputs hold comes out exactly once (read_committed):
#     timers once and not early, debounce items in exactly one batch of
#     their group, throttle messages once and in per-key input order;
#     nothing goes to a DLQ.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"

# Frozen for at least this long (SLUICE_TEST_FAULT_SECS=120 by hand for a
# pause of minutes), and until B runs every partition.
pause_secs=${SLUICE_TEST_FAULT_SECS:-15}

private_broker_start 61514
conf=$WORK/sluice.ini
fault_conf "$conf" dbt

fault_start_ready a b

# running NAME — the input partitions NAME runs, over the three pipelines.
running() {
    local n=$1 op v sum=0
    for op in d b t; do
        v=$(sluice_metric "$n" "sluice_partitions{pipeline=\"$PFX-$op\",state=\"running\"}")
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}
both_serve() { [ "$(running a)" -gt 0 ] && [ "$(running b)" -gt 0 ]; }
wait_until 60 both_serve || fail "a and b do not both run partitions: a $(running a), b $(running b)"

fault_feed_start
fault_wait_flowing

a_pid=${SLUICE_PIDS[a]}
note "a runs $(running a) partitions, b $(running b), before the pause"
t_fault=$(now_ms)
kill -STOP "$a_pid" || fail "could not stop sluice[a]"
# B must take every partition while A is frozen; A stays frozen at least
# pause_secs, and at most 90 s.
b_took_all() { [ "$(running b)" -eq 12 ]; }
wait_until 90 b_took_all || problem "b runs $(running b) of 12 partitions 90 s after a was frozen"
t_took=$(now_ms)
left=$((t_fault + pause_secs * 1000 - $(now_ms)))
[ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
kill -CONT "$a_pid" || fail "could not thaw sluice[a]"
t_back=$(now_ms)
note "a frozen for $(((t_back - t_fault) / 1000)) s; b ran all 12 partitions $(((t_took - t_fault) / 1000)) s after the freeze"

# A rejoins and gets its share back (a rebalance, with static membership:
# A's member id expired with its session).
back_in() {
    sluice_alive a || fail "sluice[a] exited after its thaw: $(sluice_reap a; fault_exits a)"
    [ "$(running a)" -gt 0 ] && [ "$(readyz a)" = 200 ] && [ "$(readyz b)" = 200 ]
}
wait_until 90 back_in ||
    problem "90 s after the thaw: a runs $(running a) partitions, /readyz a $(readyz a) b $(readyz b) ($(readyz_body a))"
note "a runs $(running a) partitions again, b $(running b), $((($(now_ms) - t_back) / 1000)) s after the thaw"

sleep 8
fault_feed_stop
fault_drain 120 a b
for n in a b; do
    sluice_reap "$n"
    sluice_alive "$n" || {
        problem "sluice[$n] exited: $(fault_exits "$n")"
        continue
    }
    [ "$(readyz "$n")" = 200 ] || problem "sluice[$n]: /readyz answers $(readyz "$n") at the end: $(readyz_body "$n")"
done
! healthz_failed b || problem "sluice[b]: /healthz failed: $(fault_watch_summary b)"
! healthz_failed a $((t_back + 3000)) || problem "sluice[a]: /healthz failed after the thaw: $(fault_watch_summary a)"
grep -q 'another live instance' "$WORK/sluice-a.log" &&
    problem "sluice[a] took its own expired session for another instance"
for n in a b; do
    note "$n: sluice_client_recoveries_total=$(sluice_metric "$n" sluice_client_recoveries_total)" \
        "transactions commit=$(sluice_metric "$n" 'sluice_transactions_total{result="commit"}')" \
        "abort=$(sluice_metric "$n" 'sluice_transactions_total{result="abort"}')"
done
grep -E 'KAFKA|TXN|RECOVER|REBALANCE' "$WORK/sluice-a.log" | tail -n 10 | cut -c1-240 | sed "s/^/  a: /"
problems_verdict
echo "PASS"
