#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0140-delay-recurring — recurring timers (sluice-every) end to end, exactly
# once per (id, instant) through kill -9 (docs/delay.md "Recurring timers").
#
# 85 schedules `every 1s` on a 4-partition input: 50 r-* (catch-up latest,
# the default), 5 c-* (cancelled while running), 5 p-* (replaced while
# running by `every 2s` with another payload), 5 q-* (replaced then by a
# one-shot timer), 5 o-* (one-shot timers replaced at once by schedules),
# and 5 each of kl-*, ka-*, kn-* (sluice-catch-up latest, all, none).
# Sluice is SIGKILLed twice at random moments (the seed is printed; SEED=N
# replays it) and restarted at once; then the cancels and replacements;
# then a kill -9 followed by ~8 s down, for catch-up.  Four bad schedules
# go to the DLQ with their reasons.  The API makes a schedule under
# /timers and one under /schedules (then cancelled by DELETE), refuses the
# four and a schedule without every or cron with 400, shows r-1 under
# /schedules and a one-shot timer not.  Variant payloads: the same with
# payload_topic (schedules stay resident, one-shot timers go to Kafka).
#
# The verdict (recurring-check.py), read with read_committed: each (id,
# sluice-due) once, no instant skipped but across a kill; none
# produced before its instant (record timestamp >= sluice-due); per id the
# occurrences are 1, 2, ... in due order, dues on the id's grid (1 s, 2 s
# after a replacement); nothing of a c-* due after its cancel; catch-up all
# skips no instant, latest and none skip those of the down time (latest
# fires the most recent of them, none waits for the next).
# variant: asan
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

# Reads while occurrences keep coming: a read_committed kcat -e may not
# see every partition at its end at once; each poll gives up after 5 s and
# is judged on what it read (the final read comes after a clean stop).
export KCAT_READ_TIMEOUT=5

SEED=${SEED:-$RANDOM}
RANDOM=$SEED
note "seed $SEED (SEED=$SEED replays the kill moments)"

base_conf "$conf"
dl_pipeline "$conf" "$PFX" "$in" 4
token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
api_port=$(free_port)
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens"
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
topic_create "$out" 4
dl_start
echo "sluice ready on $in -> $out"

t0=$(now_ms)
dl_every latest $(dl_ids r- 50) $(dl_ids c- 5)
dl_every latest $(dl_ids p- 5) $(dl_ids q- 5)
# o-*: one-shot timers (due in an hour) that schedules replace at once.
dl_ids o- 5 | sed 's/$/:x/' | produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
dl_every latest $(dl_ids o- 5)
dl_every latest $(dl_ids kl- 5)
dl_every all $(dl_ids ka- 5)
dl_every none $(dl_ids kn- 5)
# The DLQ's: a bad expression, an unknown zone, one that never fires, and a
# schedule given with a one-shot due time.
echo 'bad-1:x' | produce "$in" -K: -H "sluice-target=$out" -H 'sluice-cron=61 * * * *'
echo 'bad-2:x' | produce "$in" -K: -H "sluice-target=$out" -H 'sluice-every=1s' -H 'sluice-tz=Mars/Olympus'
echo 'bad-3:x' | produce "$in" -K: -H "sluice-target=$out" -H 'sluice-every=1s' -H 'sluice-until=1000000000000'
echo 'bad-4:x' | produce "$in" -K: -H "sluice-target=$out" -H 'sluice-every=1s' -H 'sluice-delay=5s'
# Through the API: a schedule under /timers and one under /schedules
# (c-api, cancelled with c-*), checked with the others; the same four
# refusals, as 400 with the DLQ's reasons, and a schedule without one.
api() { # METHOD PATH [BODY] — prints "STATUS BODY" (PATH after the pipeline)
    local code
    code=$(curl -s -o "$WORK/api.json" -w '%{http_code}' --max-time 10 -X "$1" \
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
        ${3:+--data-binary "$3"} "http://127.0.0.1:$api_port/v1/pipelines/$PFX/$2") || true
    echo "$code $(cat "$WORK/api.json" 2>/dev/null)"
}
api_put() { api PUT "timers/$1" "$2"; }
t_put=$(now_ms)
a=$(api_put api-1 "{\"target\":\"$out\",\"every\":\"1s\",\"value\":\"payload-api-1\"}")
due=$(sed -n 's/.*"due":\([0-9]*\).*/\1/p' <<<"$a")
case $a in 201\ *) ;; *) problem "PUT of an every-1s schedule: $a" ;; esac
[ -n "$due" ] && [ "$due" -gt "$t_put" ] && [ "$due" -le $(($(now_ms) + 1000)) ] ||
    problem "PUT of an every-1s schedule answered due $due (asked at $t_put): $a"
for want in "bad-schedule {\"target\":\"$out\",\"cron\":\"61 * * * *\"}" \
    "unknown-zone {\"target\":\"$out\",\"every\":\"1s\",\"tz\":\"Mars/Olympus\"}" \
    "never-fires {\"target\":\"$out\",\"every\":\"1s\",\"until\":1000000000000}" \
    "conflicting-due {\"target\":\"$out\",\"every\":\"1s\",\"delay\":\"5s\"}"; do
    a=$(api_put api-bad "${want#* }")
    case $a in "400 "*"\"${want%% *}\""*) ;; *) problem "PUT ${want#* }: $a, want 400 ${want%% *}" ;; esac
done
a=$(api PUT schedules/c-api "{\"target\":\"$out\",\"every\":\"1s\",\"value\":\"payload-c-api\"}")
case $a in 201\ *) ;; *) problem "PUT schedules/c-api: $a" ;; esac
a=$(api PUT schedules/api-bad "{\"target\":\"$out\",\"delay\":\"1h\"}")
case $a in "400 "*'"not-a-schedule"'*) ;; *) problem "PUT schedules/ of a one-shot timer: $a, want 400 not-a-schedule" ;; esac
# A one-shot timer (due after the test), that /schedules does not show.
echo 'once-1:x' | produce "$in" -K: -H "sluice-target=$out" -H 'sluice-delay=1h'
# One that does not fire during the test: `sluice inspect` shows its next
# instants (and r-1's) at the end.
# Its hour is 12 h away from Paris's now: never within the test.
cron_h=$((($(TZ=Europe/Paris date +%-H) + 12) % 24))
export CRON_H=$cron_h
echo 'cron-1:x' | produce "$in" -K: -H "sluice-target=$out" -H "sluice-cron=0 $cron_h * * MON-FRI" -H 'sluice-tz=Europe/Paris'

# Two kills at random moments of the next ~12 s, a restart at once.
kill_log="" kill_ms=""
for k in 1 2; do
    gap_ms=$((2000 + RANDOM % 4001))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    sluice_alive main || fail "sluice died by itself before kill $k"
    k_ms=$(now_ms)
    sluice_kill main KILL || true
    kill_log="$kill_log +$(((k_ms - t0) / 100))ds"
    dl_start
    kill_ms="$kill_ms,$k_ms-$(now_ms)"
done
note "kills (SIGKILL) at$kill_log after the first schedule (ds = 0.1 s)"

# Cancel c-*, replace p-* (every 2 s, payload v2), while they run.
t_cancel=$(now_ms)
dl_ids c- 5 | sed 's/$/:/' | produce "$in" -K: -Z
a=$(api DELETE schedules/c-api)
case $a in 204\ *) ;; *) problem "DELETE schedules/c-api: $a" ;; esac
dl_ids p- 5 | sed 's/$/:v2/' | produce "$in" -K: -H "sluice-target=$out" -H "sluice-every=2s"
dl_ids q- 5 | sed 's/$/:once/' | produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=2s"
_replaced() { [ "$(consume_all "$out" -f '%s\n' | grep -c '^v2$')" -ge 10 ]; }
wait_until 20 _replaced || fail "the replaced schedules did not fire twice each within 20 s"

# Catch-up: down for ~8 s (the test's action, not a verdict).
sluice_kill main KILL || true
t_down=$(now_ms)
sleep 8
t_up=$(now_ms)
dl_start
t_ready=$(now_ms)
wait_until 30 dl_recurring_caught_up "$((t_up + 2000))" kl- ka- kn- || fail "catch-up schedules did not fire after the restart within 30 s"
note "down $((t_up - t_down)) ms for catch-up"
# The API's GET of a recurring timer (as a schedule, and as a timer): its
# schedule and next instants; a one-shot timer is not a schedule.
for get in schedules/r-1 timers/cron-1; do
    a=$(api GET "$get")
    case $a in 200\ *) ;; *) problem "GET $get: $a" ;; esac
    cp "$WORK/api.json" "$WORK/api-${get#*/}.json"
done
a=$(api GET schedules/once-1)
case $a in "404 "*'"not-a-schedule"'*) ;; *) problem "GET schedules/once-1 (one-shot): $a, want 404 not-a-schedule" ;; esac
a=$(api GET timers/once-1)
case $a in 200\ *) ;; *) problem "GET timers/once-1: $a" ;; esac
a=$(api GET schedules/none-such)
case $a in "404 "*'"not-found"'*) ;; *) problem "GET schedules/none-such: $a, want 404 not-found" ;; esac
python3 - "$WORK" <<'PY' || problem "the API's schedule of recurring timers: $(cat "$WORK/api-cron-1.json")"
import json, os, sys
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
work, bad = sys.argv[1], []
r, c = (json.load(open(f"{work}/api-{i}.json")) for i in ("r-1", "cron-1"))
s = r.get("schedule", {})
if s.get("every") != "1s" or s.get("tz") != "UTC" or s.get("catch_up") != "latest" or s.get("fired", 0) < 10 \
        or s.get("next_ms") != [r["due_ms"] + 1000 * k for k in range(1, 6)] or len(s.get("next", [])) != 5:
    bad.append(f"r-1: {r}")
s = c.get("schedule", {})
seq = [c["due_ms"]] + s.get("next_ms", [])
local = [datetime.fromtimestamp(t / 1000, timezone.utc).astimezone(ZoneInfo("Europe/Paris")) for t in seq]
h = int(os.environ["CRON_H"])
if s.get("cron") != f"0 {h} * * MON-FRI" or s.get("tz") != "Europe/Paris" or s.get("fired") != 0 \
        or s.get("last_fired_ms", 0) is not None or len(seq) != 6 \
        or any((l.hour, l.minute, l.second, l.weekday() < 5) != (h, 0, 0, True) for l in local) \
        or any(b <= a for a, b in zip(seq, seq[1:])):
    bad.append(f"cron-1: {c}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
# A clean stop (its transactions end), so the final read sees the end.
sluice_kill main TERM || fail "sluice did not stop cleanly"
unset KCAT_READ_TIMEOUT

# sluice inspect: the pending occurrence, then the next three, as the
# schedule gives them (Europe/Paris by Python's zoneinfo).
for id in r-1 cron-1; do
    "$SLUICE_BIN" inspect -c "$conf" "$PFX" --key "$id" >"$WORK/inspect-$id.txt" 2>&1 ||
        problem "sluice inspect --key $id failed: $(head -3 "$WORK/inspect-$id.txt")"
done
python3 - "$WORK" <<'PY' || problem "sluice inspect of recurring timers: $(tail -4 "$WORK/inspect-cron-1.txt" | tr '\n' ' ')"
import os, re, sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo
work = sys.argv[1]
def t(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
bad = []
h = int(os.environ["CRON_H"])
for id, kind in (("r-1", "every 1s"), ("cron-1", f"cron 0 {h} * * MON-FRI in Europe/Paris")):
    text = open(f"{work}/inspect-{id}.txt").read()
    row = re.search(r"^(\S+Z)\s+\S+\s+\d+\s+\S+\s+" + re.escape(id) + r"\s", text, re.M)
    sched = re.search(r"^    " + re.escape(kind) + r": (\d+) fired; then (\S+Z), (\S+Z), (\S+Z)$", text, re.M)
    if not row or not sched:
        bad.append(f"{id}: no row or no schedule line ({kind}) in: {text[-300:]!r}")
        continue
    due, nxt = t(row[1]), [t(x) for x in sched.groups()[1:]]
    if id == "r-1":
        if nxt != [due + timedelta(seconds=k) for k in (1, 2, 3)] or int(sched[1]) < 10:
            bad.append(f"r-1: due {due}, next {nxt}, fired {sched[1]}")
    else:
        seq = [due] + nxt
        local = [x.astimezone(ZoneInfo("Europe/Paris")) for x in seq]
        if sched[1] != "0" or any((l.hour, l.minute, l.second) != (h, 0, 0) or l.weekday() > 4 for l in local) \
                or any(b <= a for a, b in zip(seq, seq[1:])) or (seq[-1] - seq[0]).days > 5:
            bad.append(f"cron-1: instants {[str(l) for l in local]}, fired {sched[1]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
note "inspect: $(grep -h '^    ' "$WORK/inspect-r-1.txt" "$WORK/inspect-cron-1.txt" | tr -s ' ' | tr '\n' ';')"

consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
consume_json "$in" >"$WORK/in.json"
"$(dirname "$0")/recurring-check.py" "$WORK" "$PFX" --cancel "$t_cancel" --down "$t_down" --up "$t_up" --ready "$t_ready" \
    --events "$kill_ms" --expect r-=50,c-=5,p-=5,q-=5,o-=5,kl-=5,ka-=5,kn-=5,api-=1 \
    --dlq bad-1=bad-schedule,bad-2=unknown-zone,bad-3=never-fires,bad-4=conflicting-due >"$WORK/verdict.txt" ||
    fail "recurring check failed: $(cat "$WORK/verdict.txt")"
note "$(tail -1 "$WORK/verdict.txt")"
problems_verdict
echo "PASS"
