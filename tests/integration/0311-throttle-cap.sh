#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0311-throttle-cap — max_backlog_keys and max_backlog_messages pause the
# input, visibly, and lose nothing (SPEC §4 "Hostile input").
#
# Two pipelines in one process:
#   keys  max_backlog_keys = 20, 2/s per key, 2 partitions: 100 keys of 3
#         messages each.  A key stays in memory while it has a backlog or
#         its bucket is not full again; a message for a key not in memory
#         waits at the cap until idle keys are swept (~1 s after they drained
#         here), then the next keys come in.
#   msgs  max_backlog_messages = 30, one key at 10/s, 1 partition: 100
#         messages.  10 are forwarded, 30 buffered, then the input waits
#         while the backlog drains, and so on.
# While paused, sluice_input_paused{cap} is 1 and /readyz answers 200 with
# the reason.  In the end every message came out exactly once, in input
# order per key.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

kin=$PFX.k.in
kout=$PFX.k.out
min=$PFX.m.in
mout=$PFX.m.out
keys=100
per=3

base_conf "$conf"
tl_pipeline "$conf" "$PFX.k" "$kin" "$kout" 2 default_rate=2/s max_backlog_keys=20
tl_pipeline "$conf" "$PFX.m" "$min" "$mout" 1 default_rate=10/s max_backlog_messages=30
topic_create "$kout" 2
topic_create "$mout" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready"

for k in $(seq 1 $keys); do
    for i in $(seq 1 $per); do echo "k$k:p-k$k-$i"; done
done | produce "$kin" -K:
seq -f 'A:a-%03g' 1 100 | produce "$min" -K:
echo "produced $keys keys x $per messages, and 100 messages for one key"

kseries="{pipeline=\"$PFX.k\",cap=\"max_backlog_keys\"}"
mseries="{pipeline=\"$PFX.m\",cap=\"max_backlog_messages\"}"
kpaused() { [ "$(sluice_metric main "sluice_input_paused$kseries")" = 1 ]; }
mpaused() { [ "$(sluice_metric main "sluice_input_paused$mseries")" = 1 ]; }
wait_until 20 kpaused || fail "the keys pipeline did not pause at max_backlog_keys"
body=$(readyz_body main)
[ "$(readyz main)" = 200 ] || fail "/readyz is not 200 while capped: $body"
case "$body" in
*"pipeline $PFX.k: input paused"*"max_backlog_keys = 20"*) ;;
*) fail "/readyz does not give the keys cap as its reason: $body" ;;
esac
keys_now=$(sluice_metric main "sluice_throttle_keys{pipeline=\"$PFX.k\"}")
echo "keys pipeline paused ($keys_now keys); /readyz: $body"
wait_until 20 mpaused || fail "the messages pipeline did not pause at max_backlog_messages"
backlog=$(sluice_metric main "sluice_throttle_backlog_messages{pipeline=\"$PFX.m\"}")
[ "${backlog:-0}" -le 30 ] || fail "backlog of $backlog messages under a cap of 30"
echo "messages pipeline paused with $backlog buffered"
log_has main "$PFX.k: input paused: [0-9]+ keys in memory" || fail "no log line for the keys pause"
log_has main "$PFX.m: input paused: [0-9]+ backlog messages" || fail "no log line for the messages pause"

wait_records "$mout" 100 60 || fail "only $(count_records "$mout") of 100 messages out"
wait_records "$kout" $((keys * per)) 120 ||
    fail "only $(count_records "$kout") of $((keys * per)) messages out"
kp=$(sluice_metric main "sluice_input_pauses_total$kseries")
mp=$(sluice_metric main "sluice_input_pauses_total$mseries")
note "throttle caps: $kp pauses at max_backlog_keys = 20 (100 keys), $mp at max_backlog_messages = 30"
[ "$kp" -ge 2 ] || fail "$kp keys pauses; 100 keys under a cap of 20 need more"
sluice_alive main || fail "sluice exited"

consume_json "$kout" >"$WORK/k.json"
consume_json "$mout" >"$WORK/m.json"
python3 - "$WORK/k.json" "$WORK/m.json" "$keys" "$per" <<'PY' || fail "output check failed"
import sys
from collections import defaultdict
from records import load
keys, per = int(sys.argv[3]), int(sys.argv[4])
by = defaultdict(list)
for r in load(sys.argv[1]):
    by[r["key"]].append(r["payload"])
assert len(by) == keys, len(by)
for k in range(1, keys + 1):
    assert by[f"k{k}"] == [f"p-k{k}-{i}" for i in range(1, per + 1)], (k, by[f"k{k}"])
m = [r["payload"] for r in load(sys.argv[2])]
assert m == ["a-%03d" % i for i in range(1, 101)], m[:5]
print("every message once, in order per key")
PY
echo "ok"
