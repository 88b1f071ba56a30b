#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0107-delay-cap — max_pending_timers pauses the input, visibly, and loses
# nothing (SPEC §4 "Hostile input").
#
# max_pending_timers = 50 on a 2-partition input.  30 timers due in 8 s go
# in first (and are taken), then 170 due in an hour:
#   1. the input pauses with 50 pending (30 soon + 20 far): sluice_input_paused
#      is 1, /readyz answers 200 with the reason, lag remains on the input;
#   2. the 30 soon timers fire, the count falls under the low-water mark, the
#      input resumes and pauses again at 50 (the far ones fire in an hour);
#   3. kill -9 while paused, restart with the cap raised to 1000: the rest is
#      consumed.  A read_committed reader then accounts for all 200 exactly
#      once: 30 fired, 170 pending in the changelog, none in both.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

soon=30
far=170
total=$((soon + far))
cap=50

dl_setup 2 max_pending_timers=$cap
SLUICE_INSTANCE_ID=$PFX-a sluice_up main "$conf"
echo "sluice ready, max_pending_timers = $cap"

seq 1 $soon | sed 's/.*/soon&:p-soon&/' |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=8s"
# All soon timers are in before the far ones come: which partition fills
# the room first is up to the fetches.
soon_in() { [ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")" = $soon ]; }
wait_until 20 soon_in || fail "the $soon soon timers were not taken"
seq 1 $far | sed 's/.*/far&:p-far&/' |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
echo "produced $soon timers due in 8 s, then $far due in 1 h"

series="{pipeline=\"$PFX\",cap=\"max_pending_timers\"}"
paused() { [ "$(sluice_metric main "sluice_input_paused$series")" = 1 ]; }
wait_until 20 paused || fail "the input did not pause at the cap"
pending=$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")
[ "$pending" = "$cap" ] || fail "pending timers $pending at the pause, want $cap"
body=$(readyz_body main)
[ "$(readyz main)" = 200 ] || fail "/readyz is not 200 while capped: $body"
case "$body" in
*"input paused"*"max_pending_timers = $cap"*) ;;
*) fail "/readyz does not give the cap as its reason: $body" ;;
esac
echo "paused at $pending pending timers; /readyz: $body"
note "readyz while capped: $body"
log_has main "input paused: $cap pending timers" || fail "no log line for the pause"
lag_left() { [ "$(sluice_metric main "sluice_consumer_lag{pipeline=\"$PFX\"}")" -gt 0 ]; }
wait_until 5 lag_left || fail "no lag left on the input while paused"

# The soon timers fire; the input resumes, takes 30 more far ones, pauses.
wait_records "$out" $soon 30 || fail "only $(count_records "$out") of $soon due timers fired"
# (Each partition's soon timers fire in their own wake-up: one resume and
# pause per wave.)
repaused() {
    [ "$(sluice_metric main "sluice_input_pauses_total$series")" -ge 2 ] && paused &&
        [ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")" = $cap ]
}
wait_until 20 repaused ||
    fail "input did not resume and pause again (pauses $(sluice_metric main "sluice_input_pauses_total$series"), pending $(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}"))"
log_has main "input resumed" || fail "no log line for the resume"
echo "resumed once the due timers fired, paused again at $cap"
pauses=$(sluice_metric main "sluice_input_pauses_total$series")
[ "$(grep -c 'input paused' "$WORK/sluice-main.log")" = "$pauses" ] ||
    fail "the pause was not logged once per pause ($pauses pauses)"
note "delay cap: $pauses pauses before the restart"

# kill -9 while paused; the next instance has room for everything.
sluice_kill main KILL || true
conf_set "$conf" "pipeline $PFX" max_pending_timers=1000
SLUICE_INSTANCE_ID=$PFX-a sluice_up main "$conf" 60
all_in() { [ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")" = $far ]; }
wait_until 30 all_in ||
    fail "pending $(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}") after the restart, want $far"
[ "$(sluice_metric main "sluice_input_paused$series")" = 0 ] || fail "still paused under a cap of 1000"
echo "restarted with max_pending_timers = 1000: $far pending"

# Committed: wait for the input offsets to reach the end (lag 0).
no_lag() { [ "$(sluice_metric main "sluice_consumer_lag{pipeline=\"$PFX\"}")" = 0 ]; }
wait_until 20 no_lag || fail "input not fully consumed"
consume_json "$out" >"$WORK/out.json"
# Changelog values are binary: key and value length (-1: tombstone).
consume_all "$PFX.changelog" -f '%k\t%S\n' >"$WORK/cl.tsv"
python3 - "$WORK/out.json" "$WORK/cl.tsv" "$soon" "$far" <<'PY' || fail "accounting failed"
import sys
from records import load
out = load(sys.argv[1])
last = {}
for l in open(sys.argv[2]):
    k, n = l.rstrip("\n").split("\t")
    last[k] = int(n)
pending = {k for k, n in last.items() if n >= 0}
fired = [r["key"] for r in out]
soon, far = int(sys.argv[3]), int(sys.argv[4])
assert len(fired) == len(set(fired)), "a timer fired twice"
assert set(fired) == {f"soon{i}" for i in range(1, soon + 1)}, sorted(fired)
assert pending == {f"far{i}" for i in range(1, far + 1)}, (len(pending), sorted(pending)[:5])
assert not set(fired) & pending
for r in out:
    assert r["payload"] == "p-" + r["key"], r
print(f"accounted: {len(fired)} fired + {len(pending)} pending = {len(fired) + len(pending)}")
PY
sluice_alive main || fail "sluice exited"
echo "ok"
