#!/usr/bin/env bash
# 0207-debounce-rebalance — scaling out and in while groups are open.
#
# 10,000 items across 500 groups on a 4-partition input, produced in 20
# rounds of 500 (~0.5 s apart), idle = 1s, max_age = 3s, max_items = 8.
# Instance A runs alone; a second instance B joins mid-run (partitions move
# to it and are rebuilt from the changelog with their open groups); later
# A leaves with SIGTERM and B takes everything.  At the end every item is
# in exactly one batch of the read_committed output, in its own group's
# batch, and batch ids are unique.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
groups=500
rounds=20
total=$((groups * rounds))

base_conf "$conf"
db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions=4 idle=1s \
    max_age=3s max_items=8
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
db_start a "$conf" SLUICE_INSTANCE_ID="$PFX-a"
echo "sluice A ready on $in -> $out"

(
    for r in $(seq 1 $rounds); do
        seq 0 $((groups - 1)) | sed "s/.*/g&:{\"g\":&,\"r\":$r}/" | produce "$in" -K: || exit 1
        sleep 0.5
    done
) &
producer=$!

_open() { [ "$(db_open_groups "$conf" "$PFX")" -ge 100 ]; }
wait_until 30 _open || fail "A holds no open groups"
db_start b "$conf" SLUICE_INSTANCE_ID="$PFX-b"
echo "sluice B joined at $(date +%T)"
_shared() { log_has b 'REBUILD .*rebuilt from [1-9][0-9]* changelog records'; }
wait_until 60 _shared || fail "B rebuilt no partition with open groups"
_b_flushed() {
    local n
    n=$(metric_value "$DB_PORT_b" "sluice_records_out_total{pipeline=\"$PFX\"}")
    [ "${n:-0}" -gt 0 ]
}
wait_until 30 _b_flushed || fail "B flushed no batch"
sluice_kill a TERM || fail "A did not exit 0 on SIGTERM"
echo "sluice A left at $(date +%T)"
wait "$producer" || fail "kcat failed to produce"
echo "produced $total items"

items_out() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))'
}
_all() { [ "$(items_out)" -ge "$total" ]; }
wait_until 120 _all || fail "only $(items_out) of $total items in batches within 120 s"
db_wait_drained "$conf" "$PFX" 60 || fail "groups still open after every item flushed"
sluice_alive b || fail "sluice B exited"

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
