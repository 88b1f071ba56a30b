#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0126-delay-cap-lag — sluice_consumer_lag keeps counting while the input
# waits at a cap (docs/operations.md, "Memory caps":
# "sluice_consumer_lag growing").
#
# max_pending_timers = 20 on a 2-partition input; 60 timers due in an hour
# pause it with 20 pending.  A paused partition is not fetched, so the
# consumer's cached high watermark stops where it was: 400 more timers
# produced while paused must still show in the lag, within seconds, and
# the lag must reach what the input holds beyond what sluice read.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

cap=20
first=60
more=400

dl_setup 2 max_pending_timers=$cap
SLUICE_INSTANCE_ID=$PFX-a sluice_up main "$conf"

seq 1 $first | sed 's/.*/a&:p&/' |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
series="{pipeline=\"$PFX\",cap=\"max_pending_timers\"}"
lag() { sluice_metric main "sluice_consumer_lag{pipeline=\"$PFX\"}"; }
paused() { [ "$(sluice_metric main "sluice_input_paused$series")" = 1 ]; }
wait_until 20 paused || fail "the input did not pause at the cap"
# Both partitions wait once the cap is reached: what is left of the first
# load is in the lag.
first_lag() { [ "$(lag)" = $((first - cap)) ]; }
wait_until 10 first_lag || fail "lag $(lag) at the pause, want $((first - cap))"
echo "paused at $cap pending, lag $(lag)"

seq 1 $more | sed 's/.*/b&:p&/' |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
echo "produced $more more while paused"
grown() { [ "$(lag)" = $((first - cap + more)) ]; }
wait_until 20 grown || fail "lag $(lag) while paused, want $((first - cap + more))"
paused || fail "the input resumed"
[ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX\"}")" = $cap ] ||
    fail "pending timers moved while paused"
echo "lag while paused: $(lag)"
note "lag while paused at the cap: $(lag) after $more more records"
