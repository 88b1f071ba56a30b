#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0503-api-flush — POST /v1/pipelines/{p}/groups/{key}/flush writes the
# debounce flush control record (key = the group, header sluice-control:
# flush, an empty value) to the partition sluice computes for the group,
# the same one kcat -X partitioner=murmur2_random sent the group's items
# to.  Three items for WH-1 and one for WH-2 from kcat, idle = 60 s: the
# lookup shows WH-1's three items waiting for idle; an API flush of WH-1
# gives one batch with those items, reason "requested", seconds later (not
# a minute); WH-1's lookup is then 404 and WH-2 is still open.  A group key
# the operator refuses (not UTF-8) is a 400 with its DLQ reason, and no
# record.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
api_port=$(free_port)

base_conf "$conf"
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens"
db_pipeline "$conf" "$PFX" "$in" "$out" input_partitions=4 idle=60s max_age=10m
topic_create "$out" 2
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
db_start main "$conf"
port=$DB_PORT_main
API=http://127.0.0.1:$api_port/v1/pipelines/$PFX
m() { metric_value "$port" "sluice_debounce_$1{pipeline=\"$PFX\"${2:-}}"; }
echo "sluice ready on $in -> $out, API on $api_port"

api() {
    local m=$1 p=$2
    local code
    rm -f "$WORK/body"
    code=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 10 -X "$m" \
        -H "Authorization: Bearer $token" "$API$p") || true
    echo "$code $(cat "$WORK/body" 2>/dev/null)"
}

t0=$(now_ms)
for i in 1 2 3; do
    echo "WH-1:{\"order\":\"A$i\"}" |
        produce "$in" -K: -X partitioner=murmur2_random -H "sluice-item=A$i" || fail "kcat failed"
done
echo 'WH-2:{"order":"B1"}' |
    produce "$in" -K: -X partitioner=murmur2_random -H sluice-item=B1 || fail "kcat failed"
_pending() { [ "$(m pending_items)" = 4 ]; }
wait_until 10 _pending || fail "pending_items = $(m pending_items), want 4"

# The lookup: three items, flushing on idle about a minute after the last.
r=$(api GET /groups/WH-1)
[ "${r%% *}" = 200 ] || fail "GET groups/WH-1 → $r"
echo "${r#* }" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["key"] == "WH-1" and j["items"] == 3, j
assert [p["id"] for p in j["pending"]] == ["A1", "A2", "A3"], j["pending"]
assert j["next_flush_reason"] == "idle" and 50000 < j["next_flush_in_ms"] <= 60000, j
assert j["limits"]["idle_ms"] == 60000, j["limits"]
print("WH-1 open: %d items, next flush in %d ms (%s)" % (j["items"], j["next_flush_in_ms"], j["next_flush_reason"]))
' || fail "the lookup of WH-1 is wrong: $r"

# Refused by the operator's own checks: nothing written.
r=$(api POST /groups/%FF%FE/flush)
[ "${r%% *}" = 400 ] && grep -q '"code":"bad-key"' <<<"$r" || fail "non-UTF-8 group → $r (want 400 bad-key)"
r=$(api GET /groups/WH-1/flush)
[ "${r%% *}" = 405 ] || fail "GET .../flush → $r (want 405)"

# The flush.
t_flush=$(now_ms)
r=$(api POST /groups/WH-1/flush)
[ "${r%% *}" = 202 ] || fail "POST groups/WH-1/flush → $r (want 202)"
echo "${r#* }" >"$WORK/flush.json"
wait_records "$out" 1 15 || fail "no batch within 15 s of the API flush"
t_batch=$(now_ms)
_gone() { r=$(api GET /groups/WH-1); [ "${r%% *}" = 404 ]; }
wait_until 10 _gone || fail "WH-1 still open after the flush: $r"
r=$(api GET /groups/WH-2)
[ "${r%% *}" = 200 ] || fail "GET groups/WH-2 → $r (WH-2 got no flush: still open)"
[ "$(m batches_total ',reason="requested"')" = 1 ] ||
    fail "batches_total{requested} = $(m batches_total ',reason="requested"')"
[ "$(m batches_total ',reason="idle"')" = 0 ] || fail "an idle batch appeared"
[ "$(count_records "$out")" = 1 ] || fail "$(count_records "$out") batches, want 1"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$t0" <<'PY' || fail "output check failed"
import json, sys
import dbcheck
w, t0 = sys.argv[1], int(sys.argv[2])
inp = dbcheck.load_records(f"{w}/in.json")
flush = json.load(open(f"{w}/flush.json"))
batches = dbcheck.load_batches(f"{w}/out.json")
assert len(batches) == 1, f"{len(batches)} batches"
b = batches[0]
assert b["key"] == "WH-1" and [it["id"] for it in b["items"]] == ["A1", "A2", "A3"], b
assert b["reason"] == "requested", b["reason"]
items = [r for r in inp if r["key"] == "WH-1" and "sluice-item" in dbcheck.headers(r)]
ctl = [r for r in inp if dbcheck.headers(r).get("sluice-control") == "flush"]
assert len(ctl) == 1, ctl
c = ctl[0]
assert c["key"] == "WH-1" and c["payload"] == "", c
assert c["partition"] == flush["partition"] and c["offset"] == flush["offset"], (c, flush)
parts = {r["partition"] for r in items}
assert parts == {c["partition"]}, f"items on {parts}, the control record on {c['partition']}"
assert all(r["offset"] < c["offset"] for r in items), "the control record is not after the items"
after = b["flushed_at"] - c["ts"]
assert 0 <= after <= 10000, f"flushed {after} ms after the control record"
assert b["flushed_at"] - t0 < 60000, "flushed no earlier than idle would have"
print(f"# API flush: batch of 3 (reason requested) {after} ms after the control record, "
      f"partition {c['partition']} = the items' partition (murmur2)")
PY
sluice_alive main || fail "sluice exited"
echo "PASS"
