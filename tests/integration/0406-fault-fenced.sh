#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0406-fault-fenced — a second live instance with the same instance_id
# (SPEC §4 "Kafka's faults": sluice "exits non-zero only when another live
# instance owns its instance_id").  Both run the ASan + UBSan build
# (./sluice-asan, `make asan`), so the exit path is checked for memory
# errors too.
#
# Instance A runs a delay pipeline (4 partitions) and fires timers.  B
# starts with A's instance_id (same transactional id, same static group
# member): B's producer fences A's, B's consumer fences A's.  Checks: A
# exits with status 1 within 30 s, logging a line that names instance_id
# and "another" (instance); no "ERROR: AddressSanitizer" and no UBSan
# "runtime error:" in its log (leaks are not checked); B
# stays up, answers /readyz 200 and fires every timer produced before,
# during and after the takeover exactly once (read_committed).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

asan_bin=${SLUICE_ASAN_BIN:-$(dirname "$SLUICE_BIN")/sluice-asan}
if [ -x "$asan_bin" ]; then
    bin=$asan_bin
else
    # The fencing contract is still checked; the memory checks are not.
    note "NOTE: $asan_bin is missing (make asan): running $SLUICE_BIN, without the ASan/UBSan checks"
    bin=$SLUICE_BIN
fi
# An ASan error exits 66, not 1 (which the fenced exit must be).  Leak
# checking is off: LeakSanitizer shares that exit code (LSAN_OPTIONS would
# override it for ASan errors too), and what a fatal exit leaves allocated
# is not this test's subject.
export ASAN_OPTIONS=exitcode=66:detect_leaks=0
export UBSAN_OPTIONS=print_stacktrace=1

private_broker_start 61510
dl_setup 4
conf_set "$conf" kafka session.timeout.ms=6000 heartbeat.interval.ms=1000

start() { SLUICE_BIN=$bin SLUICE_INSTANCE_ID=$PFX-x sluice_start_http "$1" "$conf"; }
# wave W N — N timers f<W>-<i> due in 1 s.
wave() {
    seq 0 $(($2 - 1)) | sed "s/.*/f$1-&:p-f$1-&/" |
        produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s
}
start A
wait_readyz A 200 90
wave 1 100
wait_records "$out" 100 30 || fail "A fired $(count_records "$out") of 100 timers within 30 s"
echo "A runs: wave 1 fired"

t_b=$(now_ms)
start B
wave 2 100
a_gone() { ! sluice_alive A; }
if wait_until 30 a_gone; then
    sluice_reap A
    note "A exited $(($(now_ms) - t_b)) ms after B started: ${SLUICE_EXIT[A]}"
    [ "${SLUICE_EXIT[A]}" = "status 1" ] || problem "A ended with ${SLUICE_EXIT[A]}, want status 1"
else
    problem "A still runs 30 s after B started with its instance_id"
fi
if line=$(grep -E 'instance_id' "$WORK/sluice-A.log" | grep -E 'another' | head -1); then
    note "A: ${line:0:200}"
else
    problem "A's log has no line naming instance_id and another instance; its last errors: $(grep -E 'Z (crit|error|emerg|alert) ' "$WORK/sluice-A.log" | tail -2 | cut -c1-200 | tr '\n' ' ')"
fi

b_up() {
    sluice_alive B || return 0
    [ "$(readyz B)" = 200 ]
}
wait_until 90 b_up || true
sluice_reap B
if ! sluice_alive B; then
    problem "B exited: $(sluice_exit_status B)"
elif [ "$(readyz B)" != 200 ]; then
    problem "B's /readyz is $(readyz B) 90 s after it started: $(readyz_body B)"
fi

wave 3 100
fired() {
    sluice_alive B || sluice_alive A || return 0
    [ "$(consume_all "$out" -f '%k\n' | sort -u | wc -l)" -ge 300 ] &&
        "$SLUICE_BIN" inspect -c "$conf" "$PFX" --limit 0 2>/dev/null | grep -q ': 0 pending timers'
}
wait_until 60 fired || true
n_fired=$(consume_all "$out" -f '%k\n' | sort -u | wc -l)
[ "$n_fired" -ge 300 ] || problem "$n_fired distinct of 300 timers fired (B alive: $(sluice_alive B && echo yes || echo no))"
dups=$(consume_all "$out" -f '%k\n' | sort | uniq -d | wc -l)
[ "$dups" -eq 0 ] || problem "$dups timers fired more than once: $(consume_all "$out" -f '%k\n' | sort | uniq -d | head -5 | tr '\n' ' ')"
lost=$(comm -23 <(consume_all "$in" -f '%k\n' | sort -u) <(consume_all "$out" -f '%k\n' | sort -u) | wc -l)
[ "$lost" -eq 0 ] || problem "$lost timers never fired"
sluice_reap B
sluice_alive B || problem "B is not running at the end: $(sluice_exit_status B)"
note "target: $(count_records "$out") records for 300 timers, $dups duplicated, $lost lost"

for n in A B; do
    log=$WORK/sluice-$n.log
    if grep -qE 'ERROR: AddressSanitizer|runtime error:' "$log"; then
        problem "$n: sanitizer report: $(grep -E 'ERROR: AddressSanitizer|runtime error:|^SUMMARY: ' "$log" | head -3 | sed 's/^==[0-9]*==//' | cut -c1-160 | tr '\n' ' ')"
    fi
done
problems_verdict
echo "PASS"
