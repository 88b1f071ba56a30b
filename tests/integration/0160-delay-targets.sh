#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0160-delay-targets — what a producer to a delay input may not make sluice
# write to, however broad allowed_targets is: Kafka's internal topics
# (__consumer_offsets, __transaction_state) and every pipeline's internal
# topics (its own changelog and DLQ, another pipeline's changelog and DLQ,
# and the overflow, rates and DLQ of a throttle pipeline).  Each such timer
# lands in the DLQ with sluice-error target-internal, while timers to an
# allowed target fire.
#
# Then a flood of 1100 distinct target names that do not exist (more than
# the 1024 entries the target cache holds), through a json-envelope
# pipeline so that each record names its own target: each lands in the DLQ
# as unknown-target, the cache stays within its bound and evicts, and a
# timer to the real target produced after the flood still fires.  (Each
# new name pauses its input partition until Kafka answers the lookup, so
# the flood is spread over 8 partitions: 8 lookups in flight, the bound.)
#
# Last, sluice refuses to start with an output or a default_target that is
# one of Kafka's internal topics.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

base_conf "$conf"
dl_pipeline "$conf" "$PFX.d" "$in" 2 "allowed_targets=*, $PFX.**"
dl_pipeline "$conf" "$PFX.e" "$ein" 8 input_format=json-envelope "allowed_targets=*, $PFX.**"
pipeline_section "$conf" "$PFX.t" throttle input="$PFX.t.in" input_partitions=1 \
    output="$PFX.t.out" default_rate=5/s
topic_create "$out" 2
topic_create "$PFX.t.out" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready"

# --- Internal targets ------------------------------------------------------
internal=(__consumer_offsets __transaction_state
    "$PFX.d.changelog" "$PFX.d.dlq"
    "$PFX.e.changelog" "$PFX.e.dlq"
    "$PFX.t.changelog" "$PFX.t.overflow" "$PFX.t.rates" "$PFX.t.dlq")
i=0
for target in "${internal[@]}"; do
    echo "bad-$i:v" | produce "$in" -K: -H "sluice-target=$target" -H sluice-delay=100ms ||
        fail "kcat failed"
    i=$((i + 1))
done
for p in 0 1; do
    echo "good-$p:ok" | produce "$in" -p "$p" -K: -H "sluice-target=$out" -H sluice-delay=100ms ||
        fail "kcat failed"
done
nbad=${#internal[@]}
echo "produced $nbad timers to internal topics and 2 good timers"

wait_records "$out" 2 30 || fail "only $(count_records "$out") of 2 good timers fired within 30 s"
wait_records "$PFX.d.dlq" "$nbad" 30 ||
    fail "only $(count_records "$PFX.d.dlq") of $nbad refused timers in the DLQ within 30 s"

consume_json "$PFX.d.dlq" >"$WORK/dlq.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/dlq.json" "$WORK/out.json" "${internal[@]}" <<'PY' || fail "internal-target check failed"
import sys
from records import load, hdrs

dlq, out, internal = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3:]
errors = []
want = {f"bad-{i}": t for i, t in enumerate(internal)}
seen = {}
for r in dlq:
    h = hdrs(r)
    if r["key"] not in want:
        errors.append(f"unexpected DLQ record {r['key']!r}: {h}")
        continue
    if r["key"] in seen:
        errors.append(f"{r['key']}: in the DLQ twice")
    seen[r["key"]] = h
    t = want[r["key"]]
    if h.get("sluice-error") != "target-internal":
        errors.append(f"{t}: sluice-error {h.get('sluice-error')!r}, expected 'target-internal'")
    if t not in (h.get("sluice-error-detail") or ""):
        errors.append(f"{t}: detail {h.get('sluice-error-detail')!r} does not name it")
    if h.get("sluice-target") != t:
        errors.append(f"{t}: original sluice-target header {h.get('sluice-target')!r}")
    print(f"# {t}: {h.get('sluice-error')} ({h.get('sluice-error-detail')})")
for k in sorted(set(want) - set(seen)):
    errors.append(f"{want[k]}: not in the DLQ")
good = sorted(r["key"] for r in out)
if good != ["good-0", "good-1"]:
    errors.append(f"target holds {good}, expected good-0 and good-1")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY

# Nothing reached sluice's own topics but the refusals in the DLQ (a timer
# in a changelog would be a record with the timer's key).
for t in "$PFX.t.overflow" "$PFX.t.rates" "$PFX.t.dlq" "$PFX.e.dlq"; do
    n=$(count_records "$t")
    [ "$n" -eq 0 ] || fail "$t holds $n records"
done
for t in "$PFX.d.changelog" "$PFX.e.changelog" "$PFX.t.changelog"; do
    n=$(consume_all "$t" -f '%k\n' | grep -c '^bad-' || true)
    [ "$n" -eq 0 ] || fail "$t holds $n records keyed bad-*"
done

# --- A flood of target names that do not exist ----------------------------
nflood=1100
for i in $(seq 1 "$nflood"); do
    printf 'f-%d|{"topic":"%s.nope-%d","message":"m","countdown":1}\n' "$i" "$PFX" "$i"
done | produce "$ein" -K'|' || fail "kcat failed"
echo "produced $nflood timers to targets that do not exist"
wait_records "$PFX.e.dlq" "$nflood" 240 ||
    fail "only $(count_records "$PFX.e.dlq") of $nflood in the DLQ within 240 s"
echo 'after-flood|{"topic":"'"$out"'","message":"ok","countdown":0}' | produce "$ein" -K'|' ||
    fail "kcat failed"
wait_records "$out" 3 30 || fail "the timer produced after the flood did not fire within 30 s"
sluice_alive main || fail "sluice exited"

reasons=$(consume_all "$PFX.e.dlq" -f '%h\n' | grep -o 'sluice-error=[a-z-]*' | sort | uniq -c)
echo "# flood DLQ reasons: $(echo $reasons)"
n=$(echo "$reasons" | awk '$2 == "sluice-error=unknown-target" { print $1 }')
[ "${n:-0}" -eq "$nflood" ] || fail "$nflood unknown-target expected in $PFX.e.dlq, got: $reasons"
entries=$(sluice_metric main sluice_topic_cache_entries)
evictions=$(sluice_metric main sluice_topic_cache_evictions_total)
echo "# topic cache: $entries entries, $evictions evictions"
[ -n "$entries" ] && [ "${entries%.*}" -le 1024 ] || fail "topic cache holds $entries entries (bound 1024)"
[ -n "$evictions" ] && [ "${evictions%.*}" -gt 0 ] || fail "no topic cache evictions after $nflood names"
sluice_kill main TERM || true

# --- Kafka's internal topics as configured outputs -------------------------
for bad in "output = __consumer_offsets" "default_target = __transaction_state"; do
    bconf=$WORK/bad.ini
    base_conf "$bconf"
    if [ "${bad%% *}" = output ]; then
        printf '\n[pipeline %s.b]\ntype = debounce\ninput = %s.b.in\n%s\n' "$PFX" "$PFX" "$bad" >>"$bconf"
    else
        printf '\n[pipeline %s.b]\ntype = delay\ninput = %s.b.in\n%s\n' "$PFX" "$PFX" "$bad" >>"$bconf"
    fi
    rc=0
    timeout 20 "$SLUICE_BIN" run -c "$bconf" >"$WORK/bad.log" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "sluice run with '$bad' exited $rc"
    grep -q "internal topic of Kafka" "$WORK/bad.log" ||
        fail "sluice run with '$bad' did not say why: $(cat "$WORK/bad.log")"
    echo "# refused at start: $bad ($(head -1 "$WORK/bad.log"))"
done
echo "PASS"
