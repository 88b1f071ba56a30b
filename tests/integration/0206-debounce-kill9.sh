#!/usr/bin/env bash
# 0206-debounce-kill9 — the crash test (SPEC §4: a kill -9 at any moment
# loses nothing and duplicates nothing).
#
# 10,000 items across 500 groups on a 4-partition input, produced in 20
# rounds of 500 (one item per group per round, ~0.5 s apart), with idle =
# 1s, max_age = 3s and max_items = 8 (restarts make bursts).  While
# items are read, pending and flushed, sluice is SIGKILLed at random moments
# (gaps of 1–2.5 s), at least 5 times, and restarted at once with the same
# instance_id.  At the end every item is in exactly one batch of the
# read_committed output, in the batch of its own group, and batch ids are
# unique: a batch replayed after a crash was never visible before, because
# the batch and its items' tombstones commit in one transaction.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
groups=500
rounds=20
total=$((groups * rounds))
min_kills=5

base_conf "$conf"
db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions=4 idle=1s \
    max_age=3s max_items=8
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
start() { db_start main "$conf" SLUICE_INSTANCE_ID="$PFX-0"; }
start
echo "sluice ready on $in -> $out"

# The producer: one kcat per round (no sluice-item: each record is its own
# item, identified by its payload).
(
    for r in $(seq 1 $rounds); do
        seq 0 $((groups - 1)) | sed "s/.*/g&:{\"g\":&,\"r\":$r}/" | produce "$in" -K: || exit 1
        sleep 0.5
    done
) &
producer=$!

kills=0
alive_producer() { kill -0 "$producer" 2>/dev/null; }
while alive_producer || [ "$kills" -lt "$min_kills" ]; do
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * 1.5 }')"
    sluice_kill main KILL || true
    kills=$((kills + 1))
    echo "kill -9 #$kills at $(date +%T.%N | cut -c1-12); restarting"
    start
done
wait "$producer" || fail "kcat failed to produce"
echo "produced $total items; $kills kills"

items_out() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))'
}
_all() { [ "$(items_out)" -ge "$total" ]; }
wait_until 120 _all || fail "only $(items_out) of $total items in batches within 120 s"
db_wait_drained "$conf" "$PFX" 60 || fail "groups still open after every item flushed"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
PYTHONPATH=$WORK python3 - "$WORK" "$total" <<'PY' || fail "output check failed"
import sys
from collections import Counter
import dbcheck

w, total = sys.argv[1], int(sys.argv[2])
inp = dbcheck.load_records(f"{w}/in.json")
bs = dbcheck.load_batches(f"{w}/out.json")
errors = []
want = Counter(r["payload"] for r in inp)
if len(want) != total or max(want.values()) != 1:
    errors.append(f"input holds {len(want)} distinct items, expected {total}")
seen = Counter()
wrong_group = []
for b in bs:
    for it in b["items"]:
        p = dbcheck.json.dumps(it["payload"], separators=(",", ":"))
        seen[p] += 1
        if f"g{it['payload']['g']}" != b["key"]:
            wrong_group.append((b["key"], p))
dups = {k: n for k, n in seen.items() if n > 1}
missing = set(want) - set(seen)
extra = set(seen) - set(want)
if dups: errors.append(f"{len(dups)} items in more than one batch, e.g. {list(dups.items())[:3]}")
if missing: errors.append(f"{len(missing)} items in no batch, e.g. {sorted(missing)[:3]}")
if extra: errors.append(f"{len(extra)} unexpected items, e.g. {sorted(extra)[:3]}")
if wrong_group: errors.append(f"{len(wrong_group)} items in another group's batch, e.g. {wrong_group[:3]}")
ids = Counter(b["batch_id"] for b in bs)
if max(ids.values()) > 1:
    errors.append(f"batch ids repeat: {[k for k, n in ids.items() if n > 1][:3]}")
if any(b["_headers"].get("sluice-batch-id") != b["batch_id"] for b in bs):
    errors.append("sluice-batch-id header differs from batch_id")
big = [len(b["items"]) for b in bs if len(b["items"]) > 8]
if big: errors.append(f"batches over max_items: {big[:5]}")
reasons = Counter(b["reason"] for b in bs)
print(f"# {len(bs)} batches, {sum(seen.values())} items ({len(dups)} duplicated, {len(missing)} missing); reasons {dict(reasons)}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
