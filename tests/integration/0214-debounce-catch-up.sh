#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0214-debounce-catch-up — a backlog is read in few transactions, exactly
# once.  1,000,000 items (no sluice-item: each record its own item) over
# 10,000 groups on 2 partitions are in the input before sluice starts:
# more than a second of reading on a fast machine, which is what makes the
# input count as behind.  max_items = 100 and idle = 1h, so each group
# flushes once, when its 100th item is read, and every item goes through
# the changelog in chunk records, one per group a transaction touched (then
# one tombstone per chunk at the flush).
#
# The same backlog is read twice, by two apps one after the other, both
# with commit_interval = 20ms (so that the backlog takes many commits):
# "wide" with backlog_commit_interval = 1s (the default), "narrow" with it
# equal to commit_interval, which turns catching up off.  Each must put
# every item in exactly one batch of its own group, 100 to a batch (the
# items are known: {"g":G,"i":I} for every G and I).  "wide" must say in
# its log that the input was behind and then caught up, end with
# sluice_catching_up 0, and write fewer than half the changelog records
# "narrow" wrote for the same items: its transactions, each up to fifty
# times longer, touched each group fewer times.  Records written are
# counted by the changelog's end offsets (compaction removes records, not
# offsets; each transaction's marker takes one too).  How many commits
# either needs depends on the machine's pace; the ratio between the two
# hardly does.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

groups=10000
per=100

# The backlog: item i of group g is {"g":g,"i":i}; groups interleaved, so
# each group gets its 100th item only near the end, as any backlog of live
# traffic would.
awk -v groups="$groups" -v per="$per" 'BEGIN {
    for (i = 0; i < per; i++)
        for (g = 0; g < groups; g++)
            printf "g%d:{\"g\":%d,\"i\":%d}\n", g, g, i
}' >"$WORK/backlog.txt"

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
    consume_all "$out" -f '%k\t%s\n' >"$WORK/$name.out"
    python3 - "$WORK/$name.out" "$groups" "$per" <<'PY' || fail "$name: output check failed"
import json
import sys
from collections import Counter

path, groups, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen = Counter()
errors = []
batches = 0
for line in open(path, encoding="utf-8"):
    key, _, value = line.rstrip("\n").partition("\t")
    b = json.loads(value)
    batches += 1
    if len(b["items"]) != per:
        errors.append(f"batch of {key} holds {len(b['items'])} items, not {per}")
    for it in b["items"]:
        g, i = it["payload"]["g"], it["payload"]["i"]
        seen[(g, i)] += 1
        if f"g{g}" != key:
            errors.append(f"item g{g}/{i} in the batch of {key}")
want = {(g, i) for g in range(groups) for i in range(per)}
dups = sum(1 for n in seen.values() if n > 1)
missing = len(want - set(seen))
extra = len(set(seen) - want)
if dups: errors.append(f"{dups} items in more than one batch")
if missing: errors.append(f"{missing} items in no batch")
if extra: errors.append(f"{extra} items that were never produced")
print(f"# {batches} batches, {sum(seen.values())} items ({dups} duplicated, "
      f"{missing} missing)")
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
