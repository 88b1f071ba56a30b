#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0215-debounce-upsert-grows — an item that grows in the transaction that
# brought it.  Each kcat call sends one item three times in a row (read
# in one fetch, so upserted before the commit seals it), its payload
# growing from 3 bytes to 3,000 and then 30,000: the seal packs each item
# at its last size (it once wrote past a buffer sized for the first; the
# ASan variant would stop there).  Two groups of two items each: one
# batch per group, each item with its last payload, and sluice still up.
# variant: asan
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"


db_setup 2 idle=1s max_age=30s
db_start main "$conf"
port=$DB_PORT_main
echo "sluice ready on $in -> $out"

m() { metric_value "$port" "sluice_debounce_$1{pipeline=\"$PFX\"}"; }
s3000=$(head -c 3000 /dev/zero | tr '\0' 'm')
s30000=$(head -c 30000 /dev/zero | tr '\0' 'L')
for g in WH-1 WH-2; do
    for it in A B; do
        printf '%s:"%s"\n%s:"%s"\n%s:"%s"\n' "$g" s "$g" "$s3000" "$g" "$s30000" |
            produce "$in" -K: -H "sluice-item=$it" || fail "kcat failed"
    done
done
echo "sent 4 items, each growing twice"

wait_records "$out" 2 30 || fail "fewer than 2 batches within 30 s"
db_wait_drained "$conf" "$PFX" 30 || fail "groups still open"
sluice_alive main || fail "sluice exited"
[ "$(m items_added_total)" = 4 ] || fail "items_added_total = $(m items_added_total), want 4"
[ "$(m items_replaced_total)" = 8 ] || fail "items_replaced_total = $(m items_replaced_total), want 8"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

bs = dbcheck.load_batches(f"{sys.argv[1]}/out.json")
got = sorted((b["key"], [(it["id"], it["payload"]) for it in b["items"]]) for b in bs)
want = [(g, [("A", "L" * 30000), ("B", "L" * 30000)]) for g in ("WH-1", "WH-2")]
if got != want:
    print(f"ERROR: batches {[(k, [(i, len(p)) for i, p in its]) for k, its in got]}, "
          "want one per group with A and B at 30,000 bytes", file=sys.stderr)
    sys.exit(1)
print("# WH-1, WH-2: one batch each, A and B with their last payload (30,000 bytes)")
PY
echo "PASS"
