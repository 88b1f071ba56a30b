#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0204-debounce-upsert — upsert and removal.  Order O-1 sent 3 times for
# WH-5 ends up as one item with the last payload and the first first-seen
# time; O-3 is removed (null value with sluice-item) before the flush and
# is not in the batch; a removal of an unknown item is harmless.  WH-6
# gets one item that is then removed: its group closes without a batch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"


db_setup 2 idle=3s max_age=30s
db_start main "$conf"
port=$DB_PORT_main
echo "sluice ready on $in -> $out"

send() { # KEY ITEM VALUE (empty VALUE: a null value, the removal)
    if [ -n "$3" ]; then
        echo "$1:$3" | produce "$in" -K: -H "sluice-item=$2"
    else
        echo "$1:" | produce "$in" -K: -Z -H "sluice-item=$2"
    fi || fail "kcat failed"
    sleep 0.2 # distinct first-seen and last-update times
}
m() { metric_value "$port" "sluice_debounce_$1{pipeline=\"$PFX\"}"; }
# Warm-up: an item added and removed, so the input is flowing before the
# timed part (the first fetch of a fresh topic can take most of a second).
send WH-0 W-1 '{}'
send WH-0 W-1 ''
_warm() { [ "$(m items_removed_total)" = 1 ]; }
wait_until 30 _warm || fail "warm-up record not processed within 30 s"
send WH-5 O-1 '{"v":1}'
send WH-5 O-2 '{"v":"two"}'
send WH-6 X-1 '{"v":"x"}'
send WH-5 O-1 '{"v":2}'
send WH-5 O-3 '{"v":"three"}'
send WH-5 O-1 '{"v":3}'
send WH-5 O-3 ''
send WH-6 X-1 ''
send WH-5 O-9 ''
echo "sent upserts and removals"

wait_records "$out" 1 30 || fail "no batch within 30 s"
db_wait_drained "$conf" "$PFX" 30 || fail "groups still open"
sluice_alive main || fail "sluice exited"

[ "$(m items_added_total)" = 5 ] || fail "items_added_total = $(m items_added_total), want 5"
[ "$(m items_replaced_total)" = 2 ] || fail "items_replaced_total = $(m items_replaced_total), want 2"
[ "$(m items_removed_total)" = 3 ] || fail "items_removed_total = $(m items_removed_total), want 3"
[ "$(m remove_unknown_total)" = 1 ] || fail "remove_unknown_total = $(m remove_unknown_total), want 1"
[ "$(m open_groups)" = 0 ] || fail "open_groups = $(m open_groups)"
[ "$(m pending_items)" = 0 ] || fail "pending_items = $(m pending_items)"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" <<'PY' || fail "output check failed"
import sys
import dbcheck

w = sys.argv[1]
inp = dbcheck.load_records(f"{w}/in.json")
bs = dbcheck.load_batches(f"{w}/out.json")
errors = []
if len(bs) != 1 or bs[0]["key"] != "WH-5":
    print(f"ERROR: want one batch for WH-5, got {[(b['key'], len(b['items'])) for b in bs]}", file=sys.stderr)
    sys.exit(1)
b = bs[0]
ids = [it["id"] for it in b["items"]]
if ids != ["O-1", "O-2"]:
    errors.append(f"items {ids}, want O-1, O-2 (O-3 removed)")
o1 = [r for r in inp if dbcheck.headers(r)["sluice-item"] == "O-1"]
it = b["items"][0]
if it["payload"] != {"v": 3}:
    errors.append(f"O-1 payload {it['payload']}, want the last one")
if not o1[0]["ts"] <= it["first_seen"] < o1[1]["ts"]:
    errors.append(f"O-1 first_seen {it['first_seen']} is not its first sighting ({o1[0]['ts']})")
if not o1[2]["ts"] <= it["last_update"] <= o1[2]["ts"] + 1000:
    errors.append(f"O-1 last_update {it['last_update']} is not its last sighting ({o1[2]['ts']})")
if b["opened_at"] != it["first_seen"]:
    errors.append(f"opened_at {b['opened_at']} != first first_seen {it['first_seen']}")
print(f"# WH-5: one batch {ids}; O-1 first_seen +{it['first_seen'] - o1[0]['ts']} ms, "
      f"last_update +{it['last_update'] - o1[2]['ts']} ms after its first/last record; WH-6: no batch")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
