#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0104-delay-rebalance — two sluice processes share one pipeline (one group,
# static members a and b, session.timeout.ms = 6000).  4,000 timers on a
# 4-partition input fall due over ~12 s; mid-run b is stopped with SIGTERM.
# Its partitions move to a (once b's session expires: a static member does
# not leave the group on close), a rebuilds them from the changelog, and
# every timer fires exactly once, none before its due time.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

groups=40
per_group=100
total=$((groups * per_group))

dl_setup 4
conf_set "$conf" kafka session.timeout.ms=6000
SLUICE_INSTANCE_ID=$PFX-a sluice_up a "$conf"
SLUICE_INSTANCE_ID=$PFX-b sluice_start_http b "$conf"

running() { sluice_metric "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}"; }
split() {
    local a b
    a=$(running a)
    b=$(running b)
    [ "${a:-0}" -ge 1 ] && [ "${b:-0}" -ge 1 ] && [ $((${a:-0} + ${b:-0})) -eq 4 ]
}
wait_until 40 split || fail "the 4 partitions were not shared by a and b within 40 s (a: $(running a), b: $(running b))"
b_parts=$(grep -oE "REBUILD $PFX \[[0-9]+\]: rebuilt" "$WORK/sluice-b.log" |
    grep -oE '\[[0-9]+\]' | tr -d '[]' | sort -n | tr '\n' ' ')
note "running: a $(running a) partitions, b $(running b) partitions (b: $b_parts)"
[ -n "$b_parts" ] || fail "b's log names no partition it rebuilt"

t0=$(now_ms)
first_due=$((t0 + 3000))
last_due=$((first_due + (groups - 1) * 300))
dl_produce_at "$groups" "$per_group" "$first_due" 300 || fail "kcat failed to produce"
echo "produced $total timers due from +3 s to +$(((last_due - t0) / 1000)) s"

# Stop b once firing is well under way (a quarter fired), with most timers
# still pending.  Counted by the instances' metrics: a read_committed kcat
# -e of the target can wait for its end of partition until the writers
# pause, here until every timer has fired, which would stop b too late.
out_total() {
    local a b
    a=$(sluice_metric a "sluice_records_out_total{pipeline=\"$PFX\"}")
    b=$(sluice_metric b "sluice_records_out_total{pipeline=\"$PFX\"}")
    echo $((${a:-0} + ${b:-0}))
}
_quarter() { [ "$(out_total)" -ge $((total / 4)) ]; }
wait_until 30 _quarter || fail "firing did not start within 30 s"
a_lines=$(wc -l <"$WORK/sluice-a.log")
stop_at=$(now_ms)
rc=0
sluice_kill b TERM || rc=$?
note "b stopped (SIGTERM, exit $rc) after $(((stop_at - t0) / 1000)) s; shutdown took $(($(now_ms) - stop_at)) ms"
[ "$rc" -eq 0 ] || fail "b exited with status $rc on SIGTERM"

# a_rebuilt P — a's log, since b stopped, says it rebuilt partition P.
a_rebuilt() {
    tail -n +"$((a_lines + 1))" "$WORK/sluice-a.log" |
        grep -qE "REBUILD $PFX \[$1\]: rebuilt from [0-9]+ changelog records"
}
all_moved() {
    for p in $b_parts; do a_rebuilt "$p" || return 1; done
    [ "$(running a)" = 4 ]
}
wait_until 40 all_moved || fail "b's partitions ($b_parts) were not rebuilt by a within 40 s of b's stop"
moved_at=$(now_ms)
note "a owns all 4 partitions $((moved_at - stop_at)) ms after b's stop"
tail -n +"$((a_lines + 1))" "$WORK/sluice-a.log" | grep -E "REBALANCE|rebuilt from" | sed 's/^/  a: /'

dl_wait_fired a "$total" 60
note "all fired $(($(now_ms) - last_due)) ms after the last due time"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$total" "$b_parts" "$stop_at" <<'PY' || fail "exactly-once check failed"
import sys
from collections import Counter
from records import load, hdrs

inp, out, total = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
b_parts = {int(p) for p in sys.argv[4].split()}
stop_at = int(sys.argv[5])
src = {r["key"]: r for r in inp}
at = {k: int(hdrs(r)["sluice-at"]) for k, r in src.items()}
if len(inp) != total or len(at) != total:
    sys.exit(f"input holds {len(inp)} records ({len(at)} ids), expected {total}")
ids = Counter(r["key"] for r in out)
dups = sorted((k, n) for k, n in ids.items() if n > 1)
missing = sorted(set(at) - set(ids))
errors = []
if dups: errors.append(f"{len(dups)} ids duplicated, e.g. {dups[:10]}")
if missing: errors.append(f"{len(missing)} ids lost, e.g. {missing[:10]}")
early = [(r["key"], r["ts"] - at[r["key"]]) for r in out if r["key"] in at and r["ts"] < at[r["key"]]]
if early: errors.append(f"{len(early)} fired before due, e.g. {early[:5]}")
wrong = [r["key"] for r in out if r["key"] in at and (int(hdrs(r).get("sluice-due", -1)) != at[r["key"]] or r["payload"] != "payload-" + r["key"])]
if wrong: errors.append(f"{len(wrong)} with wrong due or payload, e.g. {wrong[:5]}")
# Timers of b's partitions due after b stopped: they waited for the move.
moved = [r["ts"] - at[r["key"]] for r in out if r["key"] in at
         and src[r["key"]]["partition"] in b_parts and at[r["key"]] >= stop_at]
moved.sort()
late = sorted(r["ts"] - at[r["key"]] for r in out if r["key"] in at)
before_stop = sum(1 for r in out if r["ts"] < stop_at)
print(f"# {before_stop} of {total} fired before b's stop")
print(f"# target holds {len(out)} records: {len(ids)} distinct of {total}, {len(dups)} duplicated, {len(missing)} lost, {len(early)} early")
print(f"# lateness ms, all timers: p50={late[len(late) // 2]} p99={late[int(len(late) * 0.99)]} max={late[-1]}")
if moved:
    print(f"# b's timers due after its stop: {len(moved)}, lateness ms p50={moved[len(moved) // 2]} max={moved[-1]}")
else:
    # Nothing of b's was left to move: the test would prove nothing about
    # a rebalance with pending timers.
    errors.append("b's partitions held no timer due after its stop")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
