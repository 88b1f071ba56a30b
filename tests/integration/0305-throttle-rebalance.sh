#!/usr/bin/env bash
# 0305-throttle-rebalance — a second instance joins in the middle of a
# drain (SPEC §4: scaling out is scaling the consumer group).
#
# 20,000 messages across 100 keys on a 4-partition input, every key at 8/s
# (burst 8): ~24 s of drain.  A few seconds in, a second sluice (another
# instance_id) joins the group: some partitions move to it, and the new
# owner rebuilds their backlog from the changelog checkpoint and the
# overflow topic.  At the end the read_committed output holds each message
# exactly once, in per-key input order, and both instances drained some.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
keys=100
per_key=200
total=$((keys * per_key))

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = throttle
input = $in
input_partitions = 4
output = $out
default_rate = 8/s burst=8
EOF
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null

p1=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$p1 SLUICE_INSTANCE_ID=$PFX-1 sluice_start one "$conf"
sluice_wait_ready one "$p1" 30
echo "sluice #1 ready on $in -> $out"

python3 -c "
for s in range($per_key):
    for k in range($keys):
        print(f'k{k}:k{k}-{s:03d}')" | produce "$in" -K: || fail "kcat failed"
echo "produced $total messages"

series() { echo "sluice_throttle_$1{pipeline=\"$PFX\"}"; }
has_backlog() { [ "$(metric_value "$p1" "$(series backlog_messages)" || true)" -gt 5000 ] 2>/dev/null; }
wait_until 20 has_backlog || fail "no backlog built up on #1"
sleep 3
b=$(metric_value "$p1" "$(series backlog_messages)")
p2=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$p2 SLUICE_INSTANCE_ID=$PFX-2 sluice_start two "$conf"
echo "sluice #2 joins with $b messages in #1's backlog"
moved() { log_has two 'REBUILD .*rebuilt from'; }
wait_until 60 moved || fail "no partition moved to #2"
note "#2 rebuilt: $(grep -Eo 'rebuilt from [0-9]+ changelog records and [0-9]+ source records' "$WORK/sluice-two.log" | head -2 | tr '\n' ';')"

wait_records "$out" "$total" 120 || fail "only $(count_records "$out") of $total out within 120 s"
drained() {
    [ "$(metric_value "$p1" "$(series backlog_messages)")" = 0 ] &&
        [ "$(metric_value "$p2" "$(series backlog_messages)")" = 0 ]
}
wait_until 30 drained || fail "backlogs not empty after every message went out"
sluice_alive one || fail "sluice #1 exited"
sluice_alive two || fail "sluice #2 exited"
d1=$(metric_value "$p1" "$(series drained_total)")
d2=$(metric_value "$p2" "$(series drained_total)")
note "drained by #1: $d1, by #2: $d2"
[ "${d2:-0}" -gt 0 ] || fail "#2 drained nothing"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$keys" "$per_key" <<'PY' || fail "output check failed"
import json, sys
from collections import Counter, defaultdict
out = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys, per_key = int(sys.argv[2]), int(sys.argv[3])
errors = []
want = {f"k{k}-{s:03d}" for k in range(keys) for s in range(per_key)}
seen = Counter(r["payload"] for r in out)
dups = {p: n for p, n in seen.items() if n > 1}
missing = want - set(seen)
if dups: errors.append(f"{len(dups)} messages more than once, e.g. {list(dups.items())[:5]}")
if missing: errors.append(f"{len(missing)} messages missing, e.g. {sorted(missing)[:5]}")
if set(seen) - want: errors.append("unexpected messages")
by_key = defaultdict(list)
for r in sorted(out, key=lambda r: (r["partition"], r["offset"])):
    by_key[r["key"]].append(r["payload"])
disorder = [k for k, v in by_key.items() if v != sorted(v)]
if disorder: errors.append(f"{len(disorder)} keys out of input order, e.g. {disorder[:3]}")
print(f"# {len(out)} records out for {len(want)} messages: {len(dups)} duplicated, {len(missing)} missing, {len(disorder)} keys out of order")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
