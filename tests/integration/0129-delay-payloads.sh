#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0129-delay-payloads — payloads kept in Kafka (payload_topic, issue 49):
# timers whose payloads are not in memory fire once, on time, with their
# payload and headers byte for byte; cancels and reschedules of such
# timers are exact by id even when every id's hash collides with others';
# kill -9 while payloads are being read back loses and duplicates nothing.
#
# Two test-only knobs make the cases happen with few timers:
#   SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500  a payload leaves memory once its
#       index record is written unless its timer is due within 1.5 s, and
#       is read back 1.5 s ahead
#   SLUICE_TEST_TIMER_HASH_BITS=3          (from the first restart on) ids
#       hash to 8 values: each cancel or reschedule meets a dozen others of
#       its hash in the index, whose ids are only known by reading their
#       records back; the rebuild meets them too
#
# 400 timers t-0..t-399 (2 KB payloads p-ID-v1, a header x-n=1), due at
# +30 s, on input partitions 0..3 by key; once none is in memory, a
# restart with colliding hashes (SIGTERM); then:
#   t-0..t-59    cancelled                             => never fire
#   t-60..t-119  rescheduled 2 s later, payload v2     => fire once, with v2
#   t-120..t-139 rescheduled earlier (due in 3 s), v3  => fire once, with v3
# kill -9 at about the first due time (payloads being read back), restart.
# The verdict (read_committed): the ids and payloads above, each exactly
# once, none before its due time; and while the timers were pending the
# process held well under the bytes of their payloads.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
dl_setup 4 payload_topic="$PFX.payloads"
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30

n=400
pad=$(head -c 2000 /dev/zero | tr '\0' x) # 2 KB payloads: memory tells
t0=$(now_ms)
# schedule FIRST LAST VERSION DUE_MS_FN — one record per id.
for i in $(seq 0 $((n - 1))); do
    echo "t-$i:p-t-$i-v1-$pad"
done | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 30000))" -H "x-n=1"
echo "produced $n timers due at +30 s"

# Until every index record is written, payloads are in memory (pinned).
indexed() {
    [ "$(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}')" = "$n" ] || return 1
    local mem
    mem=$(sluice_metric main 'sluice_timers_memory_bytes{pipeline="'"$PFX"'"}')
    [ "${mem%.*}" -lt $((n * 2000 / 4)) ]
}
wait_until 15 indexed || fail "payloads still in memory: $(sluice_metric main 'sluice_timers_memory_bytes{pipeline="'"$PFX"'"}') bytes for $n timers of 2 KB"
mem=$(sluice_metric main 'sluice_timers_memory_bytes{pipeline="'"$PFX"'"}')
note "$n timers of 2 KB pending in ${mem%.*} bytes of memory"
sluice_kill main TERM || true
export SLUICE_TEST_TIMER_HASH_BITS=3
start
wait_readyz main 200 30
[ "$(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}')" = "$n" ] ||
    fail "$(sluice_metric main 'sluice_timers_pending{pipeline="'"$PFX"'"}') timers pending after a rebuild with colliding hashes, not $n"

for i in $(seq 0 59); do echo "t-$i:"; done | produce "$in" -K: -Z
for i in $(seq 60 119); do
    echo "t-$i:p-t-$i-v2-$pad"
done | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 32000))" -H "x-n=2"
t3=$(($(now_ms) + 3000))
for i in $(seq 120 139); do
    echo "t-$i:p-t-$i-v3-$pad"
done | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$t3" -H "x-n=3"
echo "cancels and reschedules produced at +$(($(now_ms) - t0)) ms"

cancelled() { [ "$(sluice_metric main 'sluice_timers_cancelled_total{pipeline="'"$PFX"'"}')" = 60 ]; }
wait_until 25 cancelled || fail "cancels not applied: $(sluice_metric main 'sluice_timers_cancelled_total{pipeline="'"$PFX"'"}') of 60"
note "cancels and reschedules applied: $(sluice_metric main 'sluice_timer_payload_reads_total{pipeline="'"$PFX"'"}') payload records read back, $(sluice_metric main 'sluice_timer_id_waits_total{pipeline="'"$PFX"'"}') input waits for an id"

# kill -9 just after the first ones fell due, while payloads are read back.
while [ "$(now_ms)" -lt $((t0 + 30100)) ]; do sleep 0.1; done
sluice_kill main KILL || true
note "kill -9 at +$(($(now_ms) - t0)) ms"
start
wait_readyz main 200 30

all_out() { [ "$(consume_all "$out" | wc -l)" -ge $((n - 60)) ] && dl_no_pending; }
wait_until 40 all_out || fail "not all fired: $(consume_all "$out" | wc -l) of $((n - 60))"
sleep 1 # a duplicate would come now

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$n" "$t0" "$pad" "$t3" <<'PY' || fail "output check failed"
import sys
from collections import Counter
from records import load, hdrs

out, n, t0, pad, t3 = load(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
errors = []
want = {}
for i in range(n):
    if i < 60:
        continue
    v, due = (2, t0 + 32000) if i < 120 else (3, t3) if i < 140 else (1, t0 + 30000)
    want[f"t-{i}"] = (f"p-t-{i}-v{v}-{pad}", due, str(v))
seen = Counter(r["key"] for r in out)
for k, c in seen.items():
    if c != 1 and k in want:
        errors.append(f"{k} fired {c} times")
    if k not in want:
        errors.append(f"{k} fired though cancelled (or unknown)")
for k in want:
    if not seen[k]:
        errors.append(f"{k} never fired")
early = 0
for r in out:
    k, h = r["key"], hdrs(r)
    if k not in want:
        continue
    payload, due, v = want[k]
    if r["payload"] != payload:
        errors.append(f"{k}: payload {r['payload'][:20]}... is not version {v}")
    if h.get("x-n") != v or h.get("sluice-timer-id") != k or int(h.get("sluice-due", -1)) != due:
        errors.append(f"{k}: headers {h}")
    if r["ts"] < due:
        early += 1
if early:
    errors.append(f"{early} fired before their due time")
print(f"# {len(out)} fired, {len(set(seen))} ids; {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
note "after the restart: $(sluice_metric main 'sluice_timer_payload_reads_total{pipeline="'"$PFX"'"}') payload records read back, $(sluice_metric main 'sluice_timer_id_waits_total{pipeline="'"$PFX"'"}') input waits for an id"
fetched=$(grep -c 'payload-missing' "$WORK/sluice-main.log" || true)
[ "$fetched" = 0 ] || fail "$fetched payloads reported missing"
echo "PASS"
