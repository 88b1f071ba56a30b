#!/usr/bin/env bash
# 0103-delay-kill9 — the crash test (SPEC §4: "a kill -9 at any moment loses
# nothing and duplicates nothing").
#
# 10,000 timers on a 4-partition input, due over ~20 s (100 groups of 100
# with one sluice-at each, 200 ms apart).  While they are read, pending and
# firing, sluice is SIGKILLed at random moments (gaps of 1–4 s), at least 5
# times, and restarted at once with the same instance_id (the new
# transactional producer fences the dead one's open transaction).  At the
# end every timer id must appear exactly once in the target read with
# read_committed, at its due time or after.
# variant: asan
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
groups=100
per_group=100
total=$((groups * per_group))
min_kills=5

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = delay
input = $in
input_partitions = 4
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null

port=$(free_port)
start() {
    SLUICE_INSTANCE_ID=$PFX-0 SLUICE_METRICS_LISTEN=127.0.0.1:$port \
        sluice_start main "$conf"
}
start
sluice_wait_ready main "$port" 30
echo "sluice ready on $in -> $out"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
first_due=$((t0 + 4000))
last_due=$((first_due + (groups - 1) * 200))

# Producing 100 kcat invocations, 10 at a time, in the background: the kills
# start while the input is still being read.
(
    for b in $(seq 0 10 $((groups - 1))); do
        pids=()
        for g in $(seq "$b" $((b + 9))); do
            at=$((first_due + g * 200))
            seq 0 $((per_group - 1)) | sed "s/.*/g$g-&:payload-g$g-&/" |
                produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$at" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || exit 1; done
    done
) &
producer=$!

kills=0
kill_log=""
while [ "$kills" -lt "$min_kills" ] || [ "$(now_ms)" -lt "$((last_due - 2000))" ]; do
    gap_ms=$((1000 + RANDOM % 3001))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    sluice_alive main || fail "sluice died by itself before kill $((kills + 1))"
    sluice_kill main KILL || true
    kills=$((kills + 1))
    kill_log="$kill_log +$((($(now_ms) - t0) / 100))ds"
    start
done
last_restart=$(now_ms)
wait "$producer" || fail "kcat failed to produce the timers"
note "$kills kills (SIGKILL) at$kill_log after the first record (ds = 0.1 s)"

# all_fired — every id visible once or more, and nothing pending in the
# changelog (so no further fire can come).
all_fired() {
    sluice_alive main || fail "sluice exited during the drain"
    local n
    n=$(consume_all "$out" -f '%k\n' | sort -u | wc -l)
    [ "$n" -ge "$total" ] || return 1
    "$SLUICE_BIN" inspect -c "$conf" "$PFX" | grep -q ': 0 pending timers'
}
wait_until 90 all_fired ||
    fail "not all timers fired within 90 s of the last restart: $(consume_all "$out" -f '%k\n' | sort -u | wc -l) distinct of $total"
done_at=$(now_ms)
note "final drain: all fired $((done_at - last_restart)) ms after the last restart, $((done_at - last_due)) ms after the last due time"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$total" <<'PY' || fail "exactly-once check failed"
import json, sys
from collections import Counter, defaultdict

def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def hdrs(r):
    h = r.get("headers") or []
    return {h[i]: h[i + 1] for i in range(0, len(h), 2)}

inp, out, total = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
at = {r["key"]: int(hdrs(r)["sluice-at"]) for r in inp}
if len(inp) != total or len(at) != total:
    sys.exit(f"input holds {len(inp)} records ({len(at)} ids), expected {total}")

ids = Counter(r["key"] for r in out)
dups = sorted((k, n) for k, n in ids.items() if n > 1)
missing = sorted(set(at) - set(ids))
extra = sorted(set(ids) - set(at))
errors = []
if dups: errors.append(f"{len(dups)} ids duplicated, e.g. {dups[:10]}")
if missing: errors.append(f"{len(missing)} ids lost, e.g. {missing[:10]}")
if extra: errors.append(f"{len(extra)} unknown ids, e.g. {extra[:10]}")

early, wrong, late = [], [], []
by_part = defaultdict(list)
for r in out:
    k, h = r["key"], hdrs(r)
    if k not in at:
        continue
    due = int(h.get("sluice-due", -1))
    if due != at[k] or h.get("sluice-timer-id") != k or r["payload"] != "payload-" + k:
        wrong.append((k, due, at[k], r["payload"]))
    if r["ts"] < due:
        early.append((k, r["ts"] - due))
    late.append(r["ts"] - due)
    by_part[r["partition"]].append((r["offset"], due))
if wrong: errors.append(f"{len(wrong)} records with wrong due/id/payload, e.g. {wrong[:5]}")
if early: errors.append(f"{len(early)} fired before due (ms), e.g. {early[:5]}")
disorder = 0
for recs in by_part.values():
    recs.sort()
    disorder += sum(1 for a, b in zip(recs, recs[1:]) if b[1] < a[1])
late.sort()
print(f"# target holds {len(out)} records: {len(ids)} distinct ids of {total}, {len(dups)} duplicated, {len(missing)} lost, {len(early)} early")
print(f"# lateness ms (kills included): p50={late[len(late) // 2]} p99={late[int(len(late) * 0.99)]} max={late[-1]}; due-order inversions per target partition: {disorder}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
grep -E 'REBUILD .*rebuilt from' "$WORK/sluice-main.log" | tail -4 | sed 's/^/  /'
echo "PASS"
