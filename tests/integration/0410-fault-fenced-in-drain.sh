#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0410-fault-fenced-in-drain — a fatal error that arrives while an operator
# is inside a produce.  With [kafka] queue.buffering.max.messages = 200, a
# delay pipeline firing 40,000 timers spends its time waiting for room in
# the producer's queue, serving delivery reports meanwhile; both of its
# transactional producers are fenced then (tests/tools/txnfence calls
# init_transactions with their ids, as a restarted instance would), so the
# PRODUCER_FENCED error is served inside that wait.  Recovery used to run
# right there: every task and both clients were destroyed under the
# operator, which went on firing with freed state and no producer.
#
# Checks: sluice stays up, re-creates its clients
# (sluice_client_recoveries_total >= 1) and answers /readyz 200; every
# timer fired exactly once (read_committed), none before its due time; the
# ASan variant reports nothing.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

n=40000
dl_setup 2 allowed_targets="$out"
conf_set "$conf" kafka queue.buffering.max.messages=200 session.timeout.ms=6000 heartbeat.interval.ms=1000
tools=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}
[ -x "$tools/txnfence" ] || fail "$tools/txnfence is missing: make build/tools/txnfence"

SLUICE_INSTANCE_ID=$PFX-a sluice_up a "$conf" 60
echo "sluice ready"
due=$(($(date +%s%3N) + 8000))
seq 0 $((n - 1)) | sed "s/.*/t&:p&/" |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$due" || fail "kcat failed"
echo "$n timers due at $due"

# The fence, once firing has begun.
_started() {
    local v
    v=$(sluice_metric a "sluice_records_out_total{pipeline=\"$PFX\"}")
    [ "${v:-0}" != 0 ]
}
wait_until 40 _started || fail "firing did not start"
fired_at_fence=$(sluice_metric a "sluice_records_out_total{pipeline=\"$PFX\"}")
"$tools/txnfence" -b "$BOOTSTRAP" -x "$PFX-$PFX-a" >/dev/null || fail "fencing producer 1 failed"
"$tools/txnfence" -b "$BOOTSTRAP" -x "$PFX-$PFX-a#2" >/dev/null || fail "fencing producer 2 failed"
note "fenced both producers with ${fired_at_fence:-?} of $n timers produced"

_recovered() {
    local r
    sluice_alive a || fail "sluice exited: $(tail -3 "$WORK/sluice-a.log")"
    r=$(sluice_metric a sluice_client_recoveries_total)
    [ "${r%.*}" -ge 1 ] 2>/dev/null
}
wait_until 60 _recovered || fail "no client recovery within 60 s: $(grep -E 'TXN|fatal' "$WORK/sluice-a.log" | tail -3)"
wait_records "$out" $n 120 || fail "$(count_records "$out") of $n timers fired within 120 s"
wait_readyz a 200 60
sluice_alive a || fail "sluice exited"
consume_all "$out" -f '%k %T\n' >"$WORK/out.txt"
python3 - "$WORK/out.txt" "$n" "$due" <<'PY' || fail "exactly-once check failed"
import sys
from collections import Counter
n, due = int(sys.argv[2]), int(sys.argv[3])
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
c = Counter(k for k, _ in rows)
lost = [f"t{i}" for i in range(n) if c[f"t{i}"] == 0]
dups = [k for k, v in c.items() if v > 1]
early = [k for k, ts in rows if int(ts) < due]
print(f"# {len(rows)} records, {len(c)} timers, {len(lost)} lost, {len(dups)} duplicated, {len(early)} early")
sys.exit(1 if lost or dups or early or len(c) != n else 0)
PY
note "recoveries: $(sluice_metric a sluice_client_recoveries_total); aborts: $(sluice_metric a 'sluice_transactions_total{result="abort"}')"
