#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0409-fault-txn-id-expired — the broker forgets sluice's transactional ids
# while the instance is quiet (SPEC §4 "Kafka's faults").  A broker removes
# a transactional id that has not been used for transactional.id.expiration
# .ms (7 days by default; a delay pipeline whose timers are weekly is quiet
# that long).  The next transaction of each producer then fails ("Producer
# attempted to use a producer id which is not currently assigned to its
# transactional id"); sluice aborts, rebuilds and goes on, exactly once.
#
# A private broker expires transactional and producer ids after 4 s.  A
# delay pipeline (2 partitions, two transactional producers by default)
# fires 20 timers; then nothing happens until the broker's list of
# transactions no longer holds sluice's ids; then 20 more timers, due 1 s
# after they are produced.  Checks: every timer fires exactly once
# (read_committed), the second round within 20 s; the expiry was met (at
# least one abort); the process is alive with /readyz 200; nothing went to
# the DLQ.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

export SLUICE_TEST_KAFKA_PROPS="transactional.id.expiration.ms=4000
producer.id.expiration.ms=4000 producer.id.expiration.check.interval.ms=1000
transaction.remove.expired.transaction.cleanup.interval.ms=1000"
private_broker_start 61516

dl_setup 2
SLUICE_INSTANCE_ID=$PFX-a sluice_up main "$conf" 60

# round N — 20 timers rN-1 … rN-20, due 1 s after they are produced.
round() {
    seq 1 20 | sed "s/.*/r$1-&:p/" | produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1s"
}
round 1
wait_records "$out" 20 30 || fail "round 1: $(count_records "$out") of 20 timers fired"
aborts0=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
echo "round 1 fired; aborts so far: ${aborts0:-0}"

# The broker forgets the ids 4 s after their last use: wait until its list
# of transactions holds none of them (they may be gone at the first look;
# the aborts after round 2 show that the fault was met).
forgotten() { [ -z "$(list_txns "$PFX")" ] && ! grep -q Exception "$WORK/listtxns.err"; }
wait_until 60 forgotten || fail "the broker still lists sluice's transactional ids 60 s later: $(list_txns "$PFX" | tr '\n' ';')"
echo "the broker has forgotten sluice's transactional ids"

t2=$(now_ms)
round 2
wait_records "$out" 40 20 || fail "round 2: $(($(count_records "$out") - 20)) of 20 timers fired within 20 s"
echo "round 2 fired $((($(now_ms) - t2) / 1000)) s after it was produced"

consume_all "$out" -f '%k\n' | sort | uniq -c | awk '$1 != 1 { print "duplicated: " $2 }' >"$WORK/dups"
[ ! -s "$WORK/dups" ] || fail "$(head -5 "$WORK/dups" | tr '\n' ' ')"
[ "$(consume_all "$out" -f '%k\n' | sort -u | wc -l)" = 40 ] || fail "not 40 distinct timers out"
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
[ "${aborts:-0}" -gt "${aborts0:-0}" ] ||
    fail "no abort after the ids expired (aborts ${aborts:-0}): the test did not meet the fault"
sluice_alive main || fail "sluice exited"
[ "$(readyz main)" = 200 ] || fail "/readyz $(readyz main): $(readyz_body main)"
[ "$(count_records "$PFX.dlq")" = 0 ] || fail "the DLQ holds records"
note "aborts: ${aborts0:-0} before the expiry, $aborts after; recoveries: $(sluice_metric main sluice_client_recoveries_total)"
grep -m2 'not currently assigned' "$WORK/sluice-main.log" | cut -c1-200 | sed 's/^/# /'
echo "PASS"
