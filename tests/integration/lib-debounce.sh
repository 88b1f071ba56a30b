# SPDX-License-Identifier: Apache-2.0
# lib-debounce.sh — helpers for the debounce integration tests (02NN-*.sh);
# source it after lib.sh.  Not a test itself (run.sh runs NNNN-*.sh only).
#
# The names a debounce test works with, set here (a test may set its own):
#   in    $PFX.in          input of the pipeline $PFX
#   out   $PFX.out         its output
#   conf  $WORK/sluice.ini
#
#   db_pipeline CONF NAME INPUT OUTPUT [key=value ...]
#                          appends a [pipeline NAME] of type debounce
#   db_setup PARTITIONS [key=value ...]
#                          writes $conf (base_conf and the pipeline $PFX
#                          from $in to $out, with these keys), creates $out
#                          and the pipeline's topics (topics apply), with
#                          PARTITIONS each
#   db_start NAME CONF [env ...]
#                          starts sluice with a free metrics port (in
#                          $DB_PORT_<NAME>) and waits until it is ready
#   db_open_groups CONF PIPELINE
#                          open groups according to `sluice inspect`
#   db_wait_drained CONF PIPELINE SECS
#                          waits until `sluice inspect` shows 0 open groups
#
# dbcheck.py (beside this file, on lib.sh's PYTHONPATH) is a Python module
# that loads the batches of an output topic read with consume_json:
# load_batches(path) returns one dict per batch (the decoded JSON or
# protobuf value plus "_headers", "_ts", "_partition", "_offset").

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini

# db_kill9_loop PID MIN START... — the crash tests' loop: while process
# PID (the producer) runs, and until MIN kills were made, waits 1–2.5 s,
# SIGKILLs sluice "main" and restarts it at once with START...; the number
# of kills is left in DB_KILLS.
db_kill9_loop() {
    local producer=$1 min=$2
    shift 2
    DB_KILLS=0
    while kill -0 "$producer" 2>/dev/null || [ "$DB_KILLS" -lt "$min" ]; do
        sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 1 + rand() * 1.5 }')"
        sluice_kill main KILL || true
        DB_KILLS=$((DB_KILLS + 1))
        echo "kill -9 #$DB_KILLS at $(date +%T.%N | cut -c1-12); restarting"
        "$@"
    done
}

db_pipeline() {
    local conf=$1 name=$2 in=$3 out=$4
    shift 4
    {
        echo
        echo "[pipeline $name]"
        echo "type = debounce"
        echo "input = $in"
        echo "output = $out"
        for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
    } >>"$conf"
}

db_setup() {
    local parts=$1
    shift
    base_conf "$conf"
    db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions="$parts" "$@"
    topic_create "$out" "$parts"
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
}

db_start() {
    local n=$1 conf=$2 port
    shift 2
    port=$(free_port)
    eval "DB_PORT_$n=$port"
    env SLUICE_METRICS_LISTEN="127.0.0.1:$port" "$@" \
        "$SLUICE_BIN" run -c "$conf" >>"$WORK/sluice-$n.log" 2>&1 &
    SLUICE_PIDS[$n]=$!
    sluice_wait_ready "$n" "$port" 60
}

# db_consume_raw TOPIC FILE — every committed record as "<key length>
# <value length>\n<key><value>" (binary-safe; see dbcheck.py).
db_consume_raw() {
    kcat -C -b "$BOOTSTRAP" -t "$1" -e -q -X isolation.level=read_committed \
        -f '%K %S\n%k%s' >"$2"
}

db_open_groups() {
    "$SLUICE_BIN" inspect -c "$1" "$2" --limit 0 2>/dev/null |
        sed -n 's/.*(debounce): \([0-9]*\) open groups.*/\1/p'
}

db_wait_drained() {
    local conf=$1 pl=$2 secs=$3
    _drained() { [ "$(db_open_groups "$conf" "$pl")" = 0 ]; }
    wait_until "$secs" _drained
}


# db_exactly_once CONF PIPELINE IN OUT TOTAL — the crash and rebalance
# tests' verdict: waits until TOTAL items are in batches on OUT and no group
# is open, then checks that every input item is in exactly one batch of its
# own group (gN), that batch ids are unique and match their sluice-batch-id
# header, and that no batch exceeds max_items (8).  Prints the summary line;
# fails the test otherwise.
db_exactly_once() {
    local conf=$1 pl=$2 in=$3 out=$4 total=$5
    _db_items_out() {
        consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))'
    }
    _db_all() { [ "$(_db_items_out)" -ge "$total" ]; }
    wait_until 120 _db_all ||
        fail "only $(_db_items_out) of $total items in batches within 120 s"
    db_wait_drained "$conf" "$pl" 60 ||
        fail "groups still open after every item flushed"

    consume_json "$in" >"$WORK/in.json"
    consume_json "$out" >"$WORK/out.json"
    python3 - "$WORK" "$total" <<'PY' || fail "output check failed"
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
}
