#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0133-delay-payloads-compacted — payloads kept in Kafka (payload_topic,
# issue 49) while the payload topic and the changelog compact under the
# reads: reschedules leave superseded payload and index records, the
# broker's cleaner removes them (segment.ms=100, min.cleanable.dirty.ratio
# 0.01, the test broker's cleaner acts within a second) while lookups read
# records back and kill -9 rebuilds; nothing is lost, nothing duplicated,
# nothing reported missing.
#
# Knobs as in 0129: SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500;
# SLUICE_TEST_TIMER_HASH_BITS=3 from the first restart on (every
# reschedule reads its hash's records back: 10 a lookup, in one pass).
#
# 2 input partitions, 80 timers r-0..79, due +45 s (v1); after the restart
# with colliding hashes three rounds reschedule all of them (v2, v3, v4:
# new payloads of other sizes, due +45 s + v x 100 ms), a kill -9 at a
# random moment of each round (seed in the output); a round is applied
# when the payload topic holds its 80 records (read_committed).  Once the
# cleaner removed superseded payload records, the last round: r-0..19
# cancelled, r-20..79 rescheduled (v5).  The verdict (read_committed):
# r-20..79 fire once each with v5's payload, headers and due time, none
# early; r-0..19 never; no DLQ record, no payload reported missing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

dl_seed

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
# The two compacted topics exist before `topics apply` (it checks their
# policy only), with a cleaner that acts within seconds.
fast=(cleanup.policy=compact segment.ms=100 min.cleanable.dirty.ratio=0.01 min.compaction.lag.ms=0
    max.compaction.lag.ms=1000 delete.retention.ms=60000)
topic_create "$PFX.payloads" 2 "${fast[@]}"
topic_create "$PFX.changelog" 2 "${fast[@]}"
base_conf "$conf"
dl_pipeline "$conf" "$PFX" "$in" 2 payload_topic="$PFX.payloads"
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply.log" 2>&1 || fail "topics apply: $(cat "$WORK/apply.log")"
topic_create "$out" 2
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
start
wait_readyz main 200 30

# The payload of r-I at version V (sizes 100 B .. 3 KB).
payload() { printf 'p-r-%s-v%s-%*s' "$1" "$2" $(((($1 * 13 + $2 * 701) % 3000) + 100)) '' | tr ' ' "$(printf "\\x$(printf %x $((97 + $2)))")"; }
sched() { # VERSION FROM TO
    local i
    for i in $(seq "$2" "$3"); do echo "r-$i:$(payload "$i" "$1")"; done |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((t0 + 45000 + $1 * 100))" -H "x-n=$1"
}
# versions V — how many records of version V the payload topic holds.
versions() {
    consume_json "$PFX.payloads" >"$WORK/payloads.json"
    python3 - "$WORK/payloads.json" "$1" <<'PY'
import sys
from records import load
v = f"-v{sys.argv[2]}-"
print(sum(1 for r in load(sys.argv[1]) if r["payload"] and v in r["payload"]))
PY
}
has_version() { [ "$(versions "$1")" -ge "$2" ]; }

t0=$(now_ms)
sched 1 0 79
wait_until 20 has_version 1 80 || fail "the payload topic holds $(versions 1) v1 records, not 80"
sluice_kill main TERM || true
export SLUICE_TEST_TIMER_HASH_BITS=3
start
wait_readyz main 200 30

for v in 2 3 4; do
    sched "$v" 0 79
    sleep "0.$((RANDOM % 10))" # a random moment of the round
    sluice_kill main KILL || true
    note "round v$v: kill -9 at +$(($(now_ms) - t0)) ms"
    start
    wait_readyz main 200 30
    wait_until 30 has_version "$v" 80 || fail "round v$v not applied within 30 s: $(versions "$v") of 80 records"
done
# The cleaner removed superseded payload records while the rounds read.
compacted() { [ "$(versions 1)" -lt 80 ] || [ "$(versions 2)" -lt 80 ]; }
wait_until 30 compacted || fail "no superseded payload record compacted away within 30 s"
note "payload topic after three rounds: $(versions 1) v1, $(versions 2) v2, $(versions 3) v3 records left of 80 each; changelog $(count_records "$PFX.changelog") records of $((80 * 4)) index records written"

for i in $(seq 0 19); do echo "r-$i:"; done | produce "$in" -K: -Z
sched 5 20 79
wait_until 30 has_version 5 60 || fail "the last round was not applied: $(versions 5) of 60 v5 records"
[ "$(now_ms)" -lt $((t0 + 45000)) ] || fail "the rounds ran past the due time (+$(($(now_ms) - t0)) ms): the checks below need them before"

dl_wait_fired main 60 40
sleep 1 # a duplicate would come now

consume_json "$out" >"$WORK/out.json"
for i in $(seq 20 79); do echo "r-$i $(payload "$i" 5)"; done >"$WORK/want.txt"
python3 - "$WORK" "$((t0 + 45500))" <<'PY' || fail "output check failed"
import sys
from collections import Counter
from records import load, hdrs

work, due = sys.argv[1], int(sys.argv[2])
out = load(work + "/out.json")
want = dict(l.rstrip("\n").split(" ", 1) for l in open(work + "/want.txt"))
seen = Counter(r["key"] for r in out)
errors = [f"{k} fired {c} times" for k, c in seen.items() if c != 1]
errors += [f"{k} fired though cancelled" for k in seen if k not in want]
errors += [f"{k} never fired" for k in want if not seen[k]]
for r in out:
    k, h = r["key"], hdrs(r)
    if k not in want:
        continue
    if r["payload"] != want[k] or h.get("x-n") != "5" or int(h.get("sluice-due", -1)) != due:
        errors.append(f"{k}: {r['payload'][:16]}... x-n {h.get('x-n')} due {h.get('sluice-due')}")
    if r["ts"] < due:
        errors.append(f"{k} fired early")
print(f"# {len(out)} fired, {len(seen)} ids; {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
dl_none_missing
echo "PASS"
