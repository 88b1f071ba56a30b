#!/usr/bin/env bash
# 0104-delay-rebalance — two sluice processes share one pipeline (one group,
# static members a and b, session.timeout.ms = 6000).  4,000 timers on a
# 4-partition input fall due over ~12 s; mid-run b is stopped with SIGTERM.
# Its partitions move to a (once b's session expires: a static member does
# not leave the group on close), a rebuilds them from the changelog, and
# every timer fires exactly once, none before its due time.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
groups=40
per_group=100
total=$((groups * per_group))

base_conf "$conf"
cat >>"$conf" <<EOF
session.timeout.ms = 6000

[pipeline $PFX]
type = delay
input = $in
input_partitions = 4
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null

pa=$(free_port)
SLUICE_INSTANCE_ID=$PFX-a SLUICE_METRICS_LISTEN=127.0.0.1:$pa sluice_start a "$conf"
sluice_wait_ready a "$pa" 30
pb=$(free_port)
SLUICE_INSTANCE_ID=$PFX-b SLUICE_METRICS_LISTEN=127.0.0.1:$pb sluice_start b "$conf"

running() { metric_value "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}"; }
split() {
    local a b
    a=$(running "$pa")
    b=$(running "$pb")
    [ "${a:-0}" -ge 1 ] && [ "${b:-0}" -ge 1 ] && [ $((${a:-0} + ${b:-0})) -eq 4 ]
}
wait_until 40 split || fail "the 4 partitions were not shared by a and b within 40 s (a: $(running "$pa"), b: $(running "$pb"))"
b_parts=$(grep -oE "REBUILD $PFX \[[0-9]+\]: rebuilt" "$WORK/sluice-b.log" |
    grep -oE '\[[0-9]+\]' | tr -d '[]' | sort -n | tr '\n' ' ')
note "running: a $(running "$pa") partitions, b $(running "$pb") partitions (b: $b_parts)"
[ -n "$b_parts" ] || fail "b's log names no partition it rebuilt"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
first_due=$((t0 + 3000))
last_due=$((first_due + (groups - 1) * 300))
pids=()
for g in $(seq 0 $((groups - 1))); do
    at=$((first_due + g * 300))
    seq 0 $((per_group - 1)) | sed "s/.*/g$g-&:payload-g$g-&/" |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$at" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "kcat failed to produce"; done
echo "produced $total timers due from +3 s to +$(((last_due - t0) / 1000)) s"

# Stop b once firing is well under way (a quarter fired), with most timers
# still pending.  Counted by the instances' metrics: a read_committed kcat
# -e of the target can wait for its end of partition until the writers
# pause, here until every timer has fired, which would stop b too late.
out_total() {
    local a b
    a=$(metric_value "$pa" "sluice_records_out_total{pipeline=\"$PFX\"}")
    b=$(metric_value "$pb" "sluice_records_out_total{pipeline=\"$PFX\"}")
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
    [ "$(running "$pa")" = 4 ]
}
wait_until 40 all_moved || fail "b's partitions ($b_parts) were not rebuilt by a within 40 s of b's stop"
moved_at=$(now_ms)
note "a owns all 4 partitions $((moved_at - stop_at)) ms after b's stop"
tail -n +"$((a_lines + 1))" "$WORK/sluice-a.log" | grep -E "REBALANCE|rebuilt from" | sed 's/^/  a: /'

all_fired() {
    sluice_alive a || fail "a exited"
    [ "$(consume_all "$out" -f '%k\n' | sort -u | wc -l)" -ge "$total" ] || return 1
    "$SLUICE_BIN" inspect -c "$conf" "$PFX" | grep -q ': 0 pending timers'
}
wait_until 60 all_fired ||
    fail "not all timers fired: $(consume_all "$out" -f '%k\n' | sort -u | wc -l) distinct of $total"
note "all fired $(($(now_ms) - last_due)) ms after the last due time"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$total" "$b_parts" "$stop_at" <<'PY' || fail "exactly-once check failed"
import json, sys
from collections import Counter

def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def hdrs(r):
    h = r.get("headers") or []
    return {h[i]: h[i + 1] for i in range(0, len(h), 2)}

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
