#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0211-debounce-kill9-changes — the crash test of the changelog's harder
# paths: items that change (upsert) and leave (removal, a batch cut by
# max_bytes that leaves other items behind) after the transaction that
# brought them, which turns a group's chunk records into item records
# (src/debounce.c, THE CHANGELOG).  A kill -9 at any moment loses nothing
# and duplicates nothing.
#
# 200 groups on a 4-partition input, rounds ~0.4 s apart.  In round r every
# group gets item o<r> (version 1), then item o<r-2> again (version 2, an
# upsert, or a new sighting if version 1 was flushed), then, for every
# fourth item, a removal of o<r-3> (a null value).  max_bytes = 100 (about
# four payloads) cuts batches out of groups that keep the rest; idle = 1s,
# max_age = 3s.  sluice is SIGKILLed at random moments (gaps of 1-2.5 s),
# at least 5 times, and restarted at once with the same instance_id.
#
# The verdict, on the read_committed output: every version of every item
# is in at most one batch, of its own group; the last version of every
# item that is never removed (version 2) is in exactly one; batch ids are
# unique; no group is left open.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

groups=200
rounds=16
min_kills=5

db_setup 4 idle=1s max_age=3s max_items=50 max_bytes=100
start() { db_start main "$conf" SLUICE_INSTANCE_ID="$PFX-0"; }
start
echo "sluice ready on $in -> $out"

# version V of item I for every group, one kcat (the header names the item)
items() {
    seq 0 $((groups - 1)) | sed "s/.*/g&:{\"g\":&,\"i\":$1,\"v\":$2}/" |
        produce "$in" -K: -H "sluice-item=o$1"
}
removals() {
    seq 0 $((groups - 1)) | sed "s/.*/g&:/" | produce "$in" -K: -Z -H "sluice-item=o$1"
}
(
    for r in $(seq 1 $((rounds + 3))); do
        if [ "$r" -le "$rounds" ]; then items "$r" 1 || exit 1; fi
        i=$((r - 2))
        if [ "$i" -ge 1 ] && [ "$i" -le "$rounds" ]; then items "$i" 2 || exit 1; fi
        i=$((r - 3))
        if [ "$i" -ge 1 ] && [ "$i" -le "$rounds" ] && [ $((i % 4)) = 0 ]; then
            removals "$i" || exit 1
        fi
        sleep 0.4
    done
) &
producer=$!

db_kill9_loop "$producer" "$min_kills" start
kills=$DB_KILLS
wait "$producer" || fail "kcat failed to produce"
echo "produced $rounds items per group, their upserts and removals; $kills kills"

# Every never-removed item's version 2 out, then nothing left open.
want=$((groups * (rounds - rounds / 4)))
_v2_out() {
    consume_all "$out" -f '%s\n' | python3 -c '
import json, sys
print(sum(1 for l in sys.stdin if l.strip() for it in json.loads(l)["items"]
          if it["payload"]["v"] == 2 and it["payload"]["i"] % 4))'
}
_all() { [ "$(_v2_out)" -ge "$want" ]; }
wait_until 120 _all || fail "only $(_v2_out) of $want last versions in batches within 120 s"
db_wait_drained "$conf" "$PFX" 60 || fail "groups still open after every item flushed"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$groups" "$rounds" <<'PY' || fail "output check failed"
import sys
from collections import Counter
import dbcheck

w, groups, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bs = dbcheck.load_batches(f"{w}/out.json")
errors = []
seen = Counter()
for b in bs:
    for it in b["items"]:
        p = it["payload"]
        seen[(p["g"], p["i"], p["v"])] += 1
        if f"g{p['g']}" != b["key"] or it["id"] != f"o{p['i']}":
            errors.append(f"item {it['id']} {p} in batch of {b['key']}")
dups = {k: n for k, n in seen.items() if n > 1}
if dups:
    errors.append(f"{len(dups)} versions in more than one batch, e.g. {list(dups.items())[:3]}")
missing = [(g, i) for g in range(groups) for i in range(1, rounds + 1)
           if i % 4 and seen[(g, i, 2)] != 1]
if missing:
    errors.append(f"{len(missing)} last versions in no batch, e.g. {missing[:3]}")
ids = Counter(b["batch_id"] for b in bs)
if max(ids.values()) > 1:
    errors.append(f"batch ids repeat: {[k for k, n in ids.items() if n > 1][:3]}")
v1 = sum(n for k, n in seen.items() if k[2] == 1)
reasons = Counter(b["reason"] for b in bs)
print(f"# {len(bs)} batches, {sum(seen.values())} items ({v1} first versions flushed "
      f"before their upsert); reasons {dict(reasons)}")
for e in errors[:10]:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
sluice_alive main || fail "sluice exited"
echo "PASS"
