#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0130-delay-payloads-upgrade — payload_topic set on a pipeline whose
# changelog holds timers written without it (issue 49, "upgrade in place"):
# no manual step; the timers of before fire once from memory, new ones go
# to the payload topic, and the two kinds mix through kill -9.
#
#   1. payloads in memory: 200 timers old-0..old-199 due at +20 s; SIGTERM
#   2. payload_topic set, `sluice topics apply` (creates it), restart:
#      old-0..old-19 cancelled, old-20..old-39 rescheduled to +22 s with
#      payload v2 (they move to the payload topic), 100 new timers new-0..
#      new-99 due at +21 s; kill -9 and restart before anything is due
#      (max_pending_timers, unset, reads 5M in memory, 20M with the topic)
#   3. the verdict (read_committed): old-20..old-199 and new-* each exactly
#      once with the payload of their last version, none before its due
#      time, old-0..old-19 never; the changelog of before needed no step.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

SLUICE_TEST_DELAY_PAYLOADS= # this test sets payload_topic itself
dl_setup 4
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30
caplimit() { sluice_metric main 'sluice_cap_limit{pipeline="'"$PFX"'",cap="max_pending_timers"}'; }
[ "$(caplimit)" = 5000000 ] || fail "max_pending_timers defaults to $(caplimit) in memory, not 5M"

t0=$(now_ms)
for i in $(seq 0 199); do echo "old-$i:p-old-$i-v1"; done |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 20000))"
pending() { [ "$(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}')" = "$1" ]; }
wait_until 15 pending 200 || fail "200 timers not pending in memory mode"
sluice_kill main TERM || true

conf_set "$conf" "pipeline $PFX" payload_topic="$PFX.payloads"
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null || fail "topics apply did not create the payload topic"
start
wait_readyz main 200 30
[ "$(caplimit)" = 20000000 ] || fail "max_pending_timers defaults to $(caplimit) with payload_topic, not 20M"
pending 200 || fail "after the switch, $(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}') pending, not 200"
note "payload_topic set: the 200 timers of before rebuilt from the changelog as they were"

for i in $(seq 0 19); do echo "old-$i:"; done | produce "$in" -K: -Z
for i in $(seq 20 39); do echo "old-$i:p-old-$i-v2"; done |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 22000))"
for i in $(seq 0 99); do echo "new-$i:p-new-$i-v1"; done |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 21000))"
wait_until 15 pending 280 || fail "not 280 pending after the cancels, reschedules and new timers"
sluice_kill main KILL || true
start
wait_readyz main 200 30
pending 280 || fail "after kill -9, $(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}') pending, not 280"
[ "$(now_ms)" -lt $((t0 + 20000)) ] || fail "the restarts took past the first due time"

all_out() { [ "$(consume_all "$out" | wc -l)" -ge 280 ] && dl_no_pending; }
wait_until 40 all_out || fail "not all fired: $(consume_all "$out" | wc -l) of 280"
sleep 1

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$t0" <<'PY' || fail "output check failed"
import sys
from collections import Counter
from records import load, hdrs

out, t0 = load(sys.argv[1]), int(sys.argv[2])
want = {}
for i in range(20, 200):
    want[f"old-{i}"] = (f"p-old-{i}-v2", t0 + 22000) if i < 40 else (f"p-old-{i}-v1", t0 + 20000)
for i in range(100):
    want[f"new-{i}"] = (f"p-new-{i}-v1", t0 + 21000)
seen = Counter(r["key"] for r in out)
errors = [f"{k} fired {c} times" for k, c in seen.items() if c != 1]
errors += [f"{k} fired though cancelled" for k in seen if k not in want]
errors += [f"{k} never fired" for k in want if not seen[k]]
for r in out:
    if r["key"] in want:
        payload, due = want[r["key"]]
        if r["payload"] != payload or int(hdrs(r).get("sluice-due", -1)) != due:
            errors.append(f"{r['key']}: {r['payload']} due {hdrs(r).get('sluice-due')}")
        if r["ts"] < due:
            errors.append(f"{r['key']} fired early")
print(f"# {len(out)} fired: {sum(1 for k in seen if k.startswith('old'))} of before, {sum(1 for k in seen if k.startswith('new'))} new; {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
echo "PASS"
