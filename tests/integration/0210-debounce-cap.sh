#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0210-debounce-cap — max_open_groups pauses the input, visibly, and loses
# nothing (SPEC §4 "Hostile input").
#
# max_open_groups = 20, idle = 2s, on a 2-partition input; 60 groups of 3
# items each are produced at once (the items of a group next to each other).
# The input pauses with 20 groups open (an item for an open group still
# fits, one for a new group waits); the groups flush when idle, the input
# resumes, and so on until every group flushed.  While paused,
# sluice_input_paused is 1 and /readyz answers 200 with the reason; in the
# end a read_committed reader sees 60 batches holding the 180 items exactly
# once, each group in one batch with its items in order.  A second pipeline
# puts 40 items of 100 B under max_pending_bytes = 2000: it pauses too, and
# every item comes out.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
bin=$PFX.b.in
bout=$PFX.b.out
conf=$WORK/sluice.ini
groups=60
per=3
cap=20

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = debounce
input = $in
output = $out
input_partitions = 2
idle = 2s
max_age = 30s
max_open_groups = $cap

[pipeline $PFX.b]
type = debounce
input = $bin
output = $bout
input_partitions = 1
idle = 2s
max_age = 30s
max_pending_bytes = 2000
EOF
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 2 >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$bout" --partitions 1 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null

sluice_start_http main "$conf"
wait_readyz main 200 30
echo "sluice ready, max_open_groups = $cap"

for g in $(seq 1 $groups); do
    for i in $(seq 1 $per); do echo "g$g:p-g$g-$i"; done
done | produce "$in" -K:
# 40 groups of one 100-byte item under max_pending_bytes = 2000.
pad=$(printf '%090d' 0)
for g in $(seq 1 40); do echo "b$g:$(printf 'b%03d-' "$g")$pad"; done | produce "$bin" -K:
echo "produced $groups groups of $per items (and 40 x 100 B under a byte cap)"

series="{pipeline=\"$PFX\",cap=\"max_open_groups\"}"
paused() { [ "$(sluice_metric main "sluice_input_paused$series")" = 1 ]; }
wait_until 20 paused || fail "the input did not pause at the cap"
open=$(sluice_metric main "sluice_debounce_open_groups{pipeline=\"$PFX\"}")
[ "$open" -le $cap ] || fail "$open groups open, cap $cap"
body=$(readyz_body main)
[ "$(readyz main)" = 200 ] || fail "/readyz is not 200 while capped: $body"
case "$body" in
*"input paused"*"max_open_groups = $cap"*) ;;
*) fail "/readyz does not give the cap as its reason: $body" ;;
esac
echo "paused with $open open groups; /readyz: $body"
log_has main "input paused: [0-9]+ open groups" || fail "no log line for the pause"

wait_records "$out" $groups 60 ||
    fail "only $(count_records "$out") of $groups batches within 60 s"
drained() { [ "$(sluice_metric main "sluice_debounce_open_groups{pipeline=\"$PFX\"}")" = 0 ]; }
wait_until 20 drained || fail "groups still open"
[ "$(sluice_metric main "sluice_input_paused$series")" = 0 ] || fail "still paused at the end"
pauses=$(sluice_metric main "sluice_input_pauses_total$series")
[ "$pauses" -ge 2 ] || fail "$pauses pauses; 60 groups under a cap of 20 need at least 2"
[ "$(grep -c "$PFX: input paused" "$WORK/sluice-main.log")" = "$pauses" ] ||
    fail "the pause was not logged once per pause ($pauses pauses)"
[ "$(grep -c "$PFX: input resumed" "$WORK/sluice-main.log")" = "$pauses" ] ||
    fail "the resume was not logged once per pause ($pauses pauses)"

# The byte cap: 4000 B of items under 2000 B, all out in the end.
wait_records "$bout" 40 60 || fail "only $(count_records "$bout") of 40 byte-capped batches"
bseries="{pipeline=\"$PFX.b\",cap=\"max_pending_bytes\"}"
bpauses=$(sluice_metric main "sluice_input_pauses_total$bseries")
[ "$bpauses" -ge 1 ] || fail "the byte cap never paused the input"
log_has main "$PFX.b: input paused: [0-9]+ bytes pending" || fail "no log line for the byte cap"
consume_json "$bout" >"$WORK/bout.json"
python3 - "$WORK/bout.json" <<'PY' || fail "byte-capped output check failed"
import json, sys
keys = sorted(json.loads(json.loads(l)["payload"])["key"] for l in open(sys.argv[1]))
assert keys == sorted(f"b{g}" for g in range(1, 41)), keys
PY
note "debounce byte cap: $bpauses pauses for 4000 B under max_pending_bytes = 2000"
note "debounce cap: $pauses pauses for $groups groups under max_open_groups = $cap"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$groups" "$per" <<'PY' || fail "output check failed"
import json, sys
groups, per = int(sys.argv[2]), int(sys.argv[3])
batches = [json.loads(json.loads(l)["payload"]) for l in open(sys.argv[1])]
seen = {}
for b in batches:
    assert b["key"] not in seen, f"group {b['key']} in two batches"
    seen[b["key"]] = [it["payload"] for it in b["items"]]
assert len(seen) == groups, len(seen)
for g in range(1, groups + 1):
    assert seen[f"g{g}"] == [f"p-g{g}-{i}" for i in range(1, per + 1)], seen[f"g{g}"]
print(f"{len(batches)} batches, {sum(map(len, seen.values()))} items, each once")
PY
sluice_alive main || fail "sluice exited"
echo "ok"
