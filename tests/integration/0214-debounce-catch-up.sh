#!/usr/bin/env bash
# 0214-debounce-catch-up — a backlog is read in few transactions, exactly
# once.  300,000 items (no sluice-item: each record its own item) over
# 3,000 groups on 2 partitions are in the input before sluice starts; max_items
# = 100 and idle = 1h, so each group flushes once, when its 100th item is
# read, and every item goes through the changelog in chunk records, one per
# group a transaction touched.
#
# The same backlog is read twice, by two apps one after the other, both
# with commit_interval = 20ms (so that even a fast machine, which reads
# the backlog in half a second, commits many times): "wide" with
# backlog_commit_interval = 1s (the default), "narrow" with it equal to
# commit_interval, which turns catching up off.  Each must put
# every item in exactly one batch of its own group, 100 to a batch.  "wide"
# must say in its log that the input was behind and then caught up, end
# with sluice_catching_up 0, and write fewer than half the changelog
# records "narrow" wrote for the same items: its transactions, each up to
# ten times longer, touched each group fewer times.  Records written are
# counted by the changelog's end offsets (compaction removes records, not
# offsets; each transaction's marker takes one too).  How many commits
# either needs depends on the machine's pace; the ratio between the two
# hardly does.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

groups=3000
per=100
total=$((groups * per))

# The backlog: item i of group g is {"g":g,"i":i}; groups interleaved, so
# each group gets its 100th item only near the end, as any backlog of live
# traffic would.
for ((i = 0; i < per; i++)); do
    for ((g = 0; g < groups; g++)); do
        echo "g$g:{\"g\":$g,\"i\":$i}"
    done
done >"$WORK/backlog.txt"

# end_offsets TOPIC PARTITIONS — the sum of the partitions' end offsets.
end_offsets() {
    local sum=0 p o
    for ((p = 0; p < $2; p++)); do
        o=$(kcat -Q -b "$BOOTSTRAP" -t "$1:$p:-1" | awk '{ print $NF }')
        sum=$((sum + o))
    done
    echo "$sum"
}

run_app() {
    local name=$1 bci=$2 conf=$WORK/$1.ini in=$PFX.$1.in out=$PFX.$1.out port
    base_conf "$conf"
    sed -i "s/^app_id = .*/app_id = $PFX-$name/" "$conf"
    sed -i "s/^commit_interval = .*/commit_interval = 20ms/" "$conf"
    sed -i "/^\[sluice\]/a backlog_commit_interval = $bci" "$conf"
    db_pipeline "$conf" "$PFX-$name" "$in" "$out" input_partitions=2 \
        idle=1h max_age=2h max_items=$per changelog="$PFX.$name.changelog"
    "$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 2 >/dev/null
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
    produce "$in" -K: <"$WORK/backlog.txt" || fail "$name: kcat failed"
    db_start "$name" "$conf"
    wait_records "$out" "$groups" 180 ||
        fail "$name: $(count_records "$out") of $groups batches within 180 s"
    sluice_alive "$name" || fail "$name: sluice exited"
    consume_json "$in" >"$WORK/$name.in.json"
    consume_json "$out" >"$WORK/$name.out.json"
    PYTHONPATH=$WORK python3 - "$WORK" "$name" "$total" "$per" <<'PY' || fail "$name: output check failed"
import sys
from collections import Counter
import dbcheck

w, name, total, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
inp = dbcheck.load_records(f"{w}/{name}.in.json")
bs = dbcheck.load_batches(f"{w}/{name}.out.json")
errors = []
want = Counter(r["payload"] for r in inp)
if len(want) != total or max(want.values()) != 1:
    errors.append(f"input holds {len(want)} distinct items, expected {total}")
seen = Counter()
for b in bs:
    if len(b["items"]) != per:
        errors.append(f"batch of {b['key']} holds {len(b['items'])} items, not {per}")
    for it in b["items"]:
        p = dbcheck.json.dumps(it["payload"], separators=(",", ":"))
        seen[p] += 1
        if f"g{it['payload']['g']}" != b["key"]:
            errors.append(f"item {p} in the batch of {b['key']}")
dups = sum(1 for n in seen.values() if n > 1)
missing = len(set(want) - set(seen))
if dups: errors.append(f"{dups} items in more than one batch")
if missing: errors.append(f"{missing} items in no batch")
print(f"# {name}: {len(bs)} batches, {sum(seen.values())} items "
      f"({dups} duplicated, {missing} missing)")
for e in errors[:10]:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
    # Every record the app wrote to its changelog, tombstones included.
    eval "CL_$name=$(end_offsets "$PFX.$name.changelog" 2)"
    port=DB_PORT_$name
    eval "TX_$name=$(metric_value "${!port}" 'sluice_transactions_total{result="commit"}')"
    eval "CU_$name=$(metric_value "${!port}" sluice_catching_up)"
    sluice_kill "$name" TERM
}

run_app wide 1s
run_app narrow 20ms
note "wide: $TX_wide commits, $CL_wide changelog records; narrow: $TX_narrow commits, $CL_narrow changelog records"

log_has wide "input behind" ||
    fail "wide: no 'input behind' line in its log"
log_has wide "input caught up" ||
    fail "wide: no 'input caught up' line in its log"
[ "$CU_wide" = 0 ] || fail "wide: sluice_catching_up is $CU_wide after the backlog"
! log_has narrow "input behind" ||
    fail "narrow: said its input was behind although backlog_commit_interval = commit_interval"
[ "$CL_wide" -gt 0 ] && [ "$CL_narrow" -gt 0 ] || fail "no changelog records read"
[ $((CL_wide * 2)) -lt "$CL_narrow" ] ||
    fail "wide wrote $CL_wide changelog records, not fewer than half of narrow's $CL_narrow"
echo "PASS"
