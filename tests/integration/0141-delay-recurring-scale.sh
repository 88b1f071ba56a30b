#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0141-delay-recurring-scale — 1,000 schedules `every 1s` for a minute on
# an 8-partition input, with five kill -9 of the owner and a rebalance both
# ways, then a 20 s stop for catch-up (docs/delay.md "Recurring timers").
#
# 640 r-* (catch-up latest), 60 c-* (cancelled after the third kill), 60
# p-* (replaced then by `every 2s` with the payload v2), 80 each of kl-*,
# ka-*, kn-* (catch-up latest, all, none).  Instance a (static member,
# session.timeout.ms 6000) is SIGKILLed five times at random moments (the
# seed is printed; SEED=N replays them) and restarted at once; instance b
# joins after the second kill and leaves (SIGTERM) after the fourth.  At
# +60 s a is killed, stays down 20 s, and comes back alone.
#
# The verdict (recurring-check.py), read with read_committed after a clean
# stop: each (id, sluice-due) once and none before its instant; per id the
# occurrences 1, 2, ... on the id's grid; no instant skipped but across a
# kill, b's join or leave, or the stop; catch-up all skips none, latest
# fires the most recent missed instant, none the next one.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

export KCAT_READ_TIMEOUT=5
SEED=${SEED:-$RANDOM}
RANDOM=$SEED
note "seed $SEED (SEED=$SEED replays the kill moments)"

dl_setup 8
conf_set "$conf" kafka session.timeout.ms=6000
dl_start
echo "sluice ready on $in -> $out"

t0=$(now_ms)
dl_every latest $(dl_ids r- 640)
dl_every latest $(dl_ids c- 60)
dl_every latest $(dl_ids p- 60)
dl_every latest $(dl_ids kl- 80)
dl_every all $(dl_ids ka- 80)
dl_every none $(dl_ids kn- 80)
echo "1,000 schedules written in $(($(now_ms) - t0)) ms"

running() { sluice_metric "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}"; }
split() {
    local a b
    a=$(running main)
    b=$(running b)
    [ "${a:-0}" -ge 1 ] && [ "${b:-0}" -ge 1 ] && [ $((${a:-0} + ${b:-0})) -eq 8 ]
}
alone() { [ "$(running main)" = 8 ]; }

events="" log="" since=0
begin() { # begin WHAT — a disturbance starts (for the verdict and the log)
    since=$(now_ms)
    log="$log $1@+$(((since - t0) / 100))ds"
}
settled() { # the disturbance is over: every partition is running again
    events="$events,$since-$(now_ms)"
    log="$log-$((($(now_ms) - t0) / 100))"
}
t_cancel=0
for k in 1 2 3 4 5; do
    gap_ms=$((4000 + RANDOM % 5001))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    sluice_alive main || fail "sluice died by itself before kill $k"
    begin kill
    sluice_kill main KILL || true
    dl_start
    settled
    case $k in
        2)
            begin join
            SLUICE_INSTANCE_ID=$PFX-1 sluice_start_http b "$conf"
            wait_until 40 split || fail "a and b did not share the 8 partitions within 40 s (a: $(running main), b: $(running b))"
            settled
            ;;
        3)
            t_cancel=$(now_ms)
            seq 1 60 | sed 's/.*/c-&:/' | produce "$in" -K: -Z
            seq 1 60 | sed 's/.*/p-&:v2/' | produce "$in" -K: -H "sluice-target=$out" -H "sluice-every=2s"
            ;;
        4)
            begin leave
            sluice_kill b TERM || fail "b did not stop cleanly on SIGTERM"
            wait_until 40 alone || fail "a did not take b's partitions within 40 s (a: $(running main))"
            settled
            ;;
    esac
done
note "disturbances (ds = 0.1 s after the first schedule):$log"
now=$(now_ms)
[ "$now" -lt $((t0 + 60000)) ] && sleep "$(((t0 + 60000 - now) / 1000))"

# Catch-up: a down for 20 s (the test's action, not a verdict).
sluice_kill main KILL || true
t_down=$(now_ms)
sleep 20
t_up=$(now_ms)
dl_start
t_ready=$(now_ms)
wait_until 60 dl_recurring_caught_up "$((t_up + 2000))" kl- ka- kn- ||
    fail "catch-up schedules did not fire after the restart within 60 s"
note "down $((t_up - t_down)) ms for catch-up"
sluice_kill main TERM || fail "sluice did not stop cleanly"
unset KCAT_READ_TIMEOUT

consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
consume_json "$in" >"$WORK/in.json"
"$(dirname "$0")/recurring-check.py" "$WORK" "$PFX" --cancel "$t_cancel" --down "$t_down" --up "$t_up" --ready "$t_ready" \
    --events "${events#,}" --expect r-=640,c-=60,p-=60,kl-=80,ka-=80,kn-=80 >"$WORK/verdict.txt" ||
    fail "recurring check failed: $(cat "$WORK/verdict.txt")"
note "$(tail -1 "$WORK/verdict.txt")"
echo "PASS"
