#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0606-records-partitioner — producers may use any partitioner: a keyed
# record that arrives on a partition its key does not belong to (by the
# pipeline's input_partitioner, murmur2 here, Java's) is moved to the right
# one in the same transaction, and handled there.
#
#   delay     40 timers produced with kcat's default partitioner
#             (consistent_random: CRC-32), due in 8 s, then, once each is
#             pending on its key's partition, a cancel for each with
#             -X partitioner=murmur2_random: no cancelled timer fires
#             (before, 34 of 40 cancels landed on another partition and
#             those 34 timers fired); 10 more with kcat's default, not
#             cancelled, fire once each
#   debounce  items of 20 groups, half of each group's items with each
#             partitioner: each group flushes as one batch with all its
#             items (before, most groups flushed in two, one per partition)
#   throttle  30 messages of one key at 1000/s, all with kcat's default:
#             they come out once each, in order
# Checks also sluice_records_rerouted_total, that the copies in the input
# carry sluice-rerouted-from (where they arrived) and that outputs carry the
# records' own headers only.
# The cancels wait until every timer is pending: records of one key from
# producers that partition differently reach the key's partition in the
# order they arrive there, the moved ones a commit later (docs/architecture.md,
# Partitioners), so a cancel sent at once may overtake its timer's move.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

base_conf "$conf"
pipeline_section "$conf" "$PFX-d" delay input="$PFX.d.in" input_partitions=4 \
    allowed_targets="$PFX.d.out"
pipeline_section "$conf" "$PFX-b" debounce input="$PFX.b.in" input_partitions=4 \
    output="$PFX.b.out" idle=3s max_age=20s
pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=4 \
    output="$PFX.t.out" default_rate=1000/s
for op in d b t; do topic_create "$PFX.$op.out" 4; done
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready (input_partitioner = murmur2)"
java=(-X partitioner=murmur2_random)
kdef=(-X partitioner=consistent_random) # kcat's own default (lib.sh's is murmur2)

# delay
seq 0 39 | sed 's/.*/c&:cancel-me/' | produce "$PFX.d.in" -K: -H "sluice-target=$PFX.d.out" -H sluice-delay=8s "${kdef[@]}"
seq 0 9 | sed 's/.*/k&:keep-me/' | produce "$PFX.d.in" -K: -H "sluice-target=$PFX.d.out" -H sluice-delay=8s "${kdef[@]}"
_all_pending() { [ "$(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX-d\"}")" = 50 ]; }
wait_until 60 _all_pending || fail "timers pending: $(sluice_metric main "sluice_timers_pending{pipeline=\"$PFX-d\"}") of 50"
seq 0 39 | sed 's/.*/c&:/' | produce "$PFX.d.in" -K: -Z "${java[@]}"
# debounce: for group g<i>, items a (kcat's default) and b (murmur2).
for i in $(seq 0 19); do
    echo "g$i:{\"g\":$i,\"i\":\"a\"}" | produce "$PFX.b.in" -K: -H sluice-item=a "${kdef[@]}"
    echo "g$i:{\"g\":$i,\"i\":\"b\"}" | produce "$PFX.b.in" -K: -H sluice-item=b "${java[@]}"
done
# throttle: one key, 30 messages, kcat's default partitioner.
seq 0 29 | sed 's/.*/T:m&/' | produce "$PFX.t.in" -K: -H x-tag=keep "${kdef[@]}"

_out() {
    [ "$(count_records "$PFX.d.out")" -ge 10 ] && [ "$(count_records "$PFX.t.out")" -ge 30 ] &&
        [ "$(consume_all "$PFX.b.out" -f '%s\n' | grep -c .)" -ge 20 ]
}
wait_until 60 _out || fail "not everything came out: $(count_records "$PFX.d.out") timers, $(count_records "$PFX.t.out") throttle, $(count_records "$PFX.b.out") batches"
# Nothing pending any more: a cancelled timer that still fired has fired.
wait_until 30 dl_no_pending "$PFX-d" || fail "timers still pending: $("$SLUICE_BIN" inspect -c "$conf" "$PFX-d" | head -3)"
sluice_alive main || fail "sluice exited"

# (Read now, with no transaction of sluice's open: a read_committed reader
# stops at the first record of an open one, copies and originals alike.)
misplaced=$(consume_all "$PFX.d.in" -f '%k %p %h\n' | grep -v 'sluice-rerouted-from=' | python3 -c '
import sys
def murmur2(d):
    m, h = 0x5bd1e995, (0x9747b28c ^ len(d)) & 0xffffffff
    for i in range(len(d) // 4):
        k = int.from_bytes(d[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xffffffff; k ^= k >> 24; k = (k * m) & 0xffffffff
        h = (h * m) & 0xffffffff; h ^= k
    r = len(d) % 4; t = d[len(d) - r:]
    if r >= 3: h ^= t[2] << 16
    if r >= 2: h ^= t[1] << 8
    if r >= 1: h ^= t[0]; h = (h * m) & 0xffffffff
    h ^= h >> 13; h = (h * m) & 0xffffffff; h ^= h >> 15
    return h
n = 0
for l in sys.stdin:
    k, p = l.split()[:2]
    if (murmur2(k.encode()) & 0x7fffffff) % 4 != int(p):
        n += 1
print(n)')
note "delay: $misplaced of the 90 records produced (50 timers, 40 cancels) arrived off their key's partition"

for t in "$PFX.d.out" "$PFX.b.out" "$PFX.t.out" "$PFX.t.in"; do consume_json "$t" >"$WORK/$t.json"; done
rr() { sluice_metric main "sluice_records_rerouted_total{pipeline=\"$PFX-$1\"}"; }
python3 - "$WORK" "$PFX" <<'PY' || fail "check failed"
import json, sys
w, pfx = sys.argv[1], sys.argv[2]
load = lambda t: [json.loads(l) for l in open(f"{w}/{t}.json") if l.strip()]
hd = lambda r: dict(zip((r.get("headers") or [])[::2], (r.get("headers") or [])[1::2]))
errors = []
d = load(f"{pfx}.d.out")
keys = sorted(r["key"] for r in d)
if keys != sorted(f"k{i}" for i in range(10)):
    errors.append(f"delay fired {keys}: want k0..k9 once each, no c*")
b = load(f"{pfx}.b.out")
groups = {}
for r in b:
    v = json.loads(r["payload"])
    groups.setdefault(v["key"], []).append(sorted(it["id"] for it in v["items"]))
bad = {g: v for g, v in groups.items() if v != [["a", "b"]]}
if len(groups) != 20 or bad:
    errors.append(f"debounce: {len(groups)} groups; split or wrong: {dict(list(bad.items())[:5])}")
t = load(f"{pfx}.t.out")
if [r["payload"] for r in t] != [f"m{i}" for i in range(30)]:
    errors.append(f"throttle: {[r['payload'] for r in t]}")
# Handled as if produced there: the original headers, and no trace of
# the move (the copy in the input carries it).
if any("sluice-rerouted-from" in hd(r) or hd(r).get("x-tag") != "keep" for r in t):
    errors.append(f"throttle: headers of the output {[r.get('headers') for r in t][:2]}")
copies = [r for r in load(f"{pfx}.t.in") if "sluice-rerouted-from" in hd(r)]
print(f"# throttle: {len(copies)} copies in the input (e.g. sluice-rerouted-from: "
      f"{hd(copies[0])['sluice-rerouted-from'] if copies else '-'}); outputs carry no trace")
for e in errors:
    print("ERROR:", e)
sys.exit(1 if errors else 0)
PY
note "sluice_records_rerouted_total: delay $(rr d), debounce $(rr b), throttle $(rr t)"
[ "$(rr d)" = "$misplaced" ] || fail "delay rerouted $(rr d) records, $misplaced arrived off their key's partition"
