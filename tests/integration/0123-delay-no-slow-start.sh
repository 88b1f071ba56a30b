#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0123-delay-no-slow-start — records produced right after an instance is
# ready, and right after a rebalance, are read at once (issue 10).
#
# librdkafka 2.0 keeps one Fetch in flight per broker, held by the broker
# for fetch.wait.max.ms (500 ms by default) while no partition has data, and
# Kafka answers one request per connection at a time: a partition resumed
# at the end of its rebuild waited for that Fetch, and its seek's
# ListOffsets behind it, before its first record was read (the demo's 1 s
# timer fired at +2 s).  And the first record fired to a target the
# producer had no handle for waited for librdkafka's once-a-second scan of
# unknown topics.
#
#   1. sluice a starts alone; 10 ms after /readyz answers 200, one timer
#      with sluice-delay=1ms goes to each of the 4 partitions (to a target
#      new to the producer).
#   2. sluice b joins; once both instances run 2 partitions each and b is
#      ready, one more timer per partition.
#
# A 1 ms delay fires as soon as it is read, so fired - produced is the read
# latency plus a commit.  Every timer must fire within 500 ms of being
# produced (before the fix: 500-1400 ms on most partitions).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

P=4
BOUND_MS=500

# Records go to the partition the producer names (-p), whatever their key.
dl_setup $P reroute=false

# produce_round TAG — one timer per partition, keys TAG-<p>.
produce_round() {
    for p in $(seq 0 $((P - 1))); do
        echo "$1-$p:$1" | produce "$in" -p "$p" -K: -H "sluice-target=$out" -H sluice-delay=1ms
    done
}

sluice_up a "$conf"
sleep 0.01 # the scenario: a record 10 ms after /readyz
produce_round start
echo "produced $P timers right after a's /readyz"
wait_records "$out" $P 30 || fail "only $(count_records "$out") of $P timers fired within 30 s"

sluice_start_http b "$conf"
running() { sluice_metric "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}"; }
split() {
    local a b
    a=$(running a)
    b=$(running b)
    [ "${a:-0}" -ge 1 ] && [ "${b:-0}" -ge 1 ] && [ $((${a:-0} + ${b:-0})) -eq $P ] &&
        [ "$(readyz b)" = 200 ]
}
wait_until 60 split || fail "a and b did not share the $P partitions within 60 s (a: $(running a), b: $(running b))"
sleep 0.01
produce_round rebalance
echo "produced $P timers right after the rebalance (a: $(running a), b: $(running b) partitions)"
wait_records "$out" $((2 * P)) 30 || fail "only $(count_records "$out") of $((2 * P)) timers fired within 30 s"
sluice_alive a || fail "sluice a exited"
sluice_alive b || fail "sluice b exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$BOUND_MS" <<'PY' || fail "timers read late"
import sys
from records import load
inp, out, bound = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
src = {r["key"]: r for r in inp}
errors = []
fired = {}
for r in out:
    if r["key"] in fired:
        errors.append(f"{r['key']} fired twice")
    fired[r["key"]] = r
for tag in ("start", "rebalance"):
    lat = []
    for k in sorted(x for x in src if x.startswith(tag + "-")):
        if k not in fired:
            errors.append(f"{k} never fired")
            continue
        ms = fired[k]["ts"] - src[k]["ts"]
        lat.append((ms, k, src[k]["partition"]))
        if ms >= bound:
            errors.append(f"{k} (partition {src[k]['partition']}) fired {ms} ms after it was produced (bound {bound} ms)")
    print(f"# {tag}: produced -> fired " + ", ".join(f"p{p} {ms} ms" for ms, k, p in sorted(lat, key=lambda x: x[2])))
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
