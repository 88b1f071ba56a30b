#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0601-records-many-headers — records with 50,000 headers on every
# operator's input, read in one pass each: the event loop never stalls for
# 0.5 s (sluice_loop_stall_max_seconds), and every header comes out where
# the record does, in order.  (Each by-name header lookup librdkafka offers
# walks the list from its start: counting sluice-item headers that way was
# quadratic, 4.4 s for a record of 40,000; one pass takes milliseconds.
# The bound leaves room for a loop thread that a machine with both cores
# busy does not schedule for a while: 0.07 s seen under stress-ng.)
#
#   delay     a timer with 50,000 headers, due in 1 s: fires with all of
#             them (and sluice-timer-id, sluice-due)
#   throttle  two records of one key with 50,000 headers each at 1/s
#             (burst 1): the first is forwarded, the second waits in the
#             backlog (its headers in the overflow record) and drains a
#             second later; both with all their headers
#   debounce  an item with 50,000 other headers: in its batch; a record
#             with 50,000 sluice-item headers: to the DLQ (bad-header)
#             with all of them
# Then a normal record on each input comes out too.
# variant: kafka-4
source "$(dirname "$0")/lib.sh"

n=50000
max_stall=0.5
conf=$WORK/sluice.ini
base_conf "$conf"
pipeline_section "$conf" "$PFX-d" delay input="$PFX.d.in" input_partitions=1 \
    allowed_targets="$PFX.d.*"
pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=1 \
    output="$PFX.t.out" default_rate="1/s burst=1"
pipeline_section "$conf" "$PFX-b" debounce input="$PFX.b.in" input_partitions=1 \
    output="$PFX.b.out" idle=1s max_age=5s
for op in d t b; do topic_create "$PFX.$op.out" 1; done
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready"

recgen "$PFX.d.in" --key timer --value payload -H "sluice-target=$PFX.d.out" -H sluice-delay=1s \
    --headers $n >/dev/null || fail "producing the timer"
recgen "$PFX.t.in" --key K --value first --headers $n >/dev/null || fail "producing throttle 1"
recgen "$PFX.t.in" --key K --value second --headers $n >/dev/null || fail "producing throttle 2"
recgen "$PFX.b.in" --key G --value '{"item":1}' -H sluice-item=i1 --headers $n >/dev/null ||
    fail "producing the debounce item"
recgen "$PFX.b.in" --key G --value '{"item":2}' --headers $n --header-name sluice-item >/dev/null ||
    fail "producing the debounce record of $n sluice-item headers"
echo "produced 5 records of $n headers"
# A normal record behind each.
recgen "$PFX.d.in" --key after --value ok -H "sluice-target=$PFX.d.out" -H sluice-delay=1s >/dev/null
recgen "$PFX.t.in" --key L --value after >/dev/null
recgen "$PFX.b.in" --key H --value '{"after":1}' -H sluice-item=a >/dev/null

wait_records "$PFX.d.out" 2 30 || fail "the timers did not fire"
wait_records "$PFX.t.out" 3 30 || fail "the throttle records did not come out: $(count_records "$PFX.t.out")"
wait_records "$PFX.b.out" 2 30 || fail "the debounce batches did not come out"
wait_records "$PFX-b.dlq" 1 30 || fail "the record of $n sluice-item headers is not in the DLQ"
sluice_alive main || fail "sluice exited"

stall=$(sluice_metric main sluice_loop_stall_max_seconds)
note "sluice_loop_stall_max_seconds ${stall:-?} after records of $n headers"
awk -v s="${stall:-9}" -v m="$max_stall" 'BEGIN { exit !(s < m) }' ||
    fail "the loop stalled for ${stall:-?} s (want under $max_stall s)"

for t in "$PFX.d.out" "$PFX.t.out" "$PFX.b.out" "$PFX-b.dlq"; do consume_json "$t" >"$WORK/$t.json"; done
python3 - "$WORK" "$PFX" "$n" <<'PY' || fail "header check failed"
import json, sys
w, pfx, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
load = lambda t: [json.loads(l) for l in open(f"{w}/{t}.json") if l.strip()]
names = lambda r: (r.get("headers") or [])[::2]
vals = lambda r: (r.get("headers") or [])[1::2]
want = [f"h{i}" for i in range(n)]
errors = []
d = {r["key"]: r for r in load(f"{pfx}.d.out")}
if set(d) != {"timer", "after"}:
    errors.append(f"delay fired {sorted(d)}")
elif names(d["timer"])[:n] != want or vals(d["timer"])[:n] != [str(i) for i in range(n)] or \
        names(d["timer"])[n:] != ["sluice-timer-id", "sluice-due"]:
    errors.append(f"delay: the timer came out with {len(names(d['timer']))} headers, not the {n} in order")
t = load(f"{pfx}.t.out")
if [r["payload"] for r in t if r["key"] == "K"] != ["first", "second"] or len(t) != 3:
    errors.append(f"throttle out: {[(r['key'], r['payload']) for r in t]}")
for r in t:
    if r["key"] == "K" and names(r) != want:
        errors.append(f"throttle: {r['payload']} came out with {len(names(r))} headers, not the {n} in order")
items = sorted(it["id"] for r in load(f"{pfx}.b.out") for it in json.loads(r["payload"])["items"])
if items != ["a", "i1"]:
    errors.append(f"debounce batches hold {items}")
dlq = load(f"{pfx}-b.dlq")
if len(dlq) != 1:
    errors.append(f"debounce DLQ holds {len(dlq)} records")
else:
    h = dict(zip(names(dlq[0]), vals(dlq[0])))
    if h.get("sluice-error") != "bad-header" or names(dlq[0]).count("sluice-item") != n:
        errors.append(f"debounce DLQ: {h.get('sluice-error')}, {names(dlq[0]).count('sluice-item')} sluice-item headers")
for e in errors:
    print("ERROR:", e)
sys.exit(1 if errors else 0)
PY
echo "every header out in order; the loop never stalled for $max_stall s"
