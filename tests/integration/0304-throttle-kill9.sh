#!/usr/bin/env bash
# 0304-throttle-kill9 — the crash test (SPEC §4: a kill -9 at any moment
# loses nothing and duplicates nothing).
#
# 20,000 messages across 100 keys (200 each) on a 4-partition input, every
# key limited to 8/s (burst 8): 8 go out at once per key, the other
# 19,200 wait in the overflow topic and drain over ~24 s.  During the drain
# sluice is SIGKILLed at random moments (gaps of 1-2.5 s), at least 5
# times, and restarted at once with the same instance_id.  At the end the
# read_committed output holds each message exactly once, in per-key input
# order, with its header; the backlog is empty.
# variant: asan
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
keys=100
per_key=200
total=$((keys * per_key))
min_kills=5

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

port=
start() {
    port=$(free_port)
    SLUICE_METRICS_LISTEN=127.0.0.1:$port SLUICE_INSTANCE_ID=$PFX-0 sluice_start main "$conf"
}
start
sluice_wait_ready main "$port" 30
echo "sluice ready on $in -> $out"

python3 -c "
for s in range($per_key):
    for k in range($keys):
        print(f'k{k}:k{k}-{s:03d}')" | produce "$in" -K: -H x-test=yes || fail "kcat failed"
echo "produced $total messages"

# The backlog gauge of the running instance says whether the drain goes on
# (empty while it starts: the rebuild restores the backlog).
backlog() { metric_value "$port" "sluice_throttle_backlog_messages{pipeline=\"$PFX\"}"; }
kills=0
t_end=$(($(date +%s) + 120))
while [ "$kills" -lt "$min_kills" ]; do
    [ "$(date +%s)" -lt "$t_end" ] || fail "could not kill $min_kills times within 120 s"
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * 1.5 }')"
    b=$(backlog || true)
    [ "$b" != 0 ] || break
    sluice_kill main KILL || true
    kills=$((kills + 1))
    echo "kill -9 #$kills with ${b:-?} messages in the backlog; restarting"
    start
done
[ "$kills" -ge "$min_kills" ] || fail "the drain ended after $kills kills (wanted $min_kills)"
sluice_wait_ready main "$port" 60

wait_records "$out" "$total" 120 || fail "only $(count_records "$out") of $total out within 120 s"
drained() { [ "$(metric_value "$port" "sluice_throttle_backlog_messages{pipeline=\"$PFX\"}")" = 0 ]; }
wait_until 30 drained || fail "backlog not empty after every message went out"
sluice_alive main || fail "sluice exited"
note "$kills kills during the drain"

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
extra = set(seen) - want
if dups: errors.append(f"{len(dups)} messages more than once, e.g. {list(dups.items())[:5]}")
if missing: errors.append(f"{len(missing)} messages missing, e.g. {sorted(missing)[:5]}")
if extra: errors.append(f"{len(extra)} unexpected messages, e.g. {sorted(extra)[:5]}")
by_key = defaultdict(list)
for r in sorted(out, key=lambda r: (r["partition"], r["offset"])):
    by_key[r["key"]].append(r["payload"])
    if r["payload"].split("-")[0] != r["key"]:
        errors.append(f"record {r['payload']} under key {r['key']}")
    h = r.get("headers") or []
    if dict(zip(h[::2], h[1::2])).get("x-test") != "yes":
        errors.append(f"record {r['payload']} lost its header: {h}")
        break
disorder = [k for k, v in by_key.items() if v != sorted(v)]
if disorder: errors.append(f"{len(disorder)} keys out of input order, e.g. {disorder[:3]}: {by_key[disorder[0]][:12]}")
print(f"# {len(out)} records out for {len(want)} messages: {len(dups)} duplicated, {len(missing)} missing, {len(disorder)} keys out of order")
for e in errors[:10]:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
