#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0504-api-rates — PUT and DELETE /v1/pipelines/{p}/rates/{key}.
#
# A throttle pipeline (default_rate 100/s), its rates topic created with
# 3 partitions.
# PUT rates/cust-7 {"rate":"10/s","burst":5} answers 200 once the record
# "10/s burst=5" (key cust-7) is in the rates topic, on the partition the
# pipeline's partitioner gives the key; GET keys/cust-7 then shows that
# rate (source "key", 10 per second, burst 5, untracked with a full
# bucket).  DELETE answers 204 once the tombstone (null value, same key,
# same partition: compaction removes the rate) is in; GET then shows the
# default again (source "config", 100/s).  A key's rate also governs
# traffic: 60 messages of cust-7 at 10/s burst 5 pass 5 at once and leave
# a backlog the lookup reports.  Bad bodies are 400 bad-body / bad-rate.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

rates=$PFX.rates
token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
api_port=$(free_port)

base_conf "$conf"
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens"
tl_pipeline "$conf" "$PFX" "$in" "$out" 2 default_rate=100/s
topic_create "$out" 2
# Three partitions (topics apply makes one), so that the partition the
# API picks for the key is seen to be the partitioner's.
topic_create "$rates" 3 cleanup.policy=compact
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
rparts=$(topic_partitions "$rates")
[ "$rparts" = 3 ] || fail "$rates has $rparts partitions"
sluice_up main "$conf"
API=http://127.0.0.1:$api_port/v1/pipelines/$PFX
echo "sluice ready, API on $api_port"

api() {
    local m=$1 p=$2 body=${3:-}
    local args=(-s -o "$WORK/body" -w '%{http_code}' --max-time 10 -X "$m"
        -H "Authorization: Bearer $token")
    [ -n "$body" ] && args+=(--data-binary "$body")
    local code
    rm -f "$WORK/body"
    code=$(curl "${args[@]}" "$API$p") || true
    echo "$code $(cat "$WORK/body" 2>/dev/null)"
}
# key_is FIELDS_JSON — GET keys/cust-7 answers 200 with these fields.
key_is() {
    r=$(api GET /keys/cust-7)
    [ "${r%% *}" = 200 ] || return 1
    echo "${r#* }" | python3 -c '
import json, sys
j, want = json.load(sys.stdin), json.loads(sys.argv[1])
sys.exit(any(j.get(k) != v for k, v in want.items()))' "$1"
}

key_is '{"key":"cust-7","rate_source":"config","rate_per_sec":100.0,"tracked":false,"backlog":0}' ||
    fail "before any rate: $r"
for bad in '{"burst":5}' '{"rate":10}' '{"rate":"10/s","colour":1}' 'nope'; do
    r=$(api PUT /rates/cust-7 "$bad")
    [ "${r%% *}" = 400 ] && grep -q '"code":"bad-body"' <<<"$r" || fail "PUT $bad → $r (want 400 bad-body)"
done
r=$(api PUT /rates/cust-7 '{"rate":"ten per second"}')
[ "${r%% *}" = 400 ] && grep -q '"code":"bad-rate"' <<<"$r" || fail "bad rate → $r (want 400 bad-rate)"
[ "$(count_records "$rates")" = 0 ] || fail "a refused PUT reached $rates"

# --- PUT -------------------------------------------------------------------
r=$(api PUT /rates/cust-7 '{"rate":"10/s","burst":5}')
[ "${r%% *}" = 200 ] || fail "PUT rates/cust-7 → $r"
echo "${r#* }" >"$WORK/put.json"
# Durable on return: the record is readable at once, without waiting.
consume_json "$rates" >"$WORK/rates1.json"
python3 - "$WORK/rates1.json" "$WORK/put.json" "$rparts" <<'PY' || fail "the rates topic does not hold the rate"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
put = json.load(open(sys.argv[2]))
assert len(recs) == 1, recs
r = recs[0]
assert r["key"] == "cust-7" and r["payload"] == "10/s burst=5", r
assert put["rate"] == "10/s burst=5" and put["per_sec"] == 10 and put["burst"] == 5, put
# murmur2 (the default input_partitioner), as Kafka's Java client.
def murmur2(d):
    m, h = 0x5bd1e995, (0x9747b28c ^ len(d)) & 0xffffffff
    n4 = len(d) // 4
    for i in range(n4):
        k = int.from_bytes(d[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xffffffff; k ^= k >> 24; k = (k * m) & 0xffffffff
        h = (h * m) & 0xffffffff; h ^= k
    t = d[4 * n4:]
    if len(t) >= 3: h ^= t[2] << 16
    if len(t) >= 2: h ^= t[1] << 8
    if len(t) >= 1: h ^= t[0]; h = (h * m) & 0xffffffff
    h ^= h >> 13; h = (h * m) & 0xffffffff; h ^= h >> 15
    return h
p = (murmur2(b"cust-7") & 0x7fffffff) % int(sys.argv[3])
assert r["partition"] == p, (r["partition"], p)
print(f"rates topic: cust-7 = {r['payload']!r} on partition {p} (murmur2)")
PY
wait_until 10 key_is '{"rate_source":"key","rate":"10/s burst=5","rate_per_sec":10.0,"burst":5.0,"is_default":false,"tokens":5.0}' ||
    fail "GET keys/cust-7 does not show the rate: $r"
echo "after PUT: ${r#* }"

# The rate governs traffic: 60 at once pass 5 (the burst), 55 wait and
# drain at 10/s (5.5 s).
seq -f 'cust-7:m%02g' 1 60 | produce "$in" -K: -X partitioner=murmur2_random || fail "kcat failed"
_backlog() {
    key_is '{"tracked":true,"rate_source":"key"}' &&
        echo "${r#* }" | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(not (j["backlog"] > 0 and j["next_send_ms"] is not None))'
}
wait_until 5 _backlog || fail "the lookup shows no backlog at 10/s: $r"
echo "traffic at 10/s burst 5: ${r#* }"
wait_records "$out" 60 30 || fail "the backlog did not drain at 10/s"

# --- DELETE ------------------------------------------------------------------
r=$(api DELETE /rates/cust-7)
[ "${r%% *}" = 204 ] || fail "DELETE rates/cust-7 → $r"
consume_json "$rates" >"$WORK/rates2.json"
python3 - "$WORK/rates2.json" <<'PY' || fail "the rates topic does not hold the tombstone"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(recs) == 2, recs
a, b = recs[0], recs[1] if recs[1]["offset"] > recs[0]["offset"] else recs[0]
assert b["key"] == "cust-7" and b["payload"] is None, b
assert a["partition"] == b["partition"], "the tombstone is on another partition than the rate"
print(f"rates topic: cust-7 tombstone on partition {b['partition']}")
PY
wait_until 10 key_is '{"rate_source":"config","rate_per_sec":100.0,"is_default":true}' ||
    fail "GET keys/cust-7 after DELETE is not the default: $r"
echo "after DELETE: ${r#* }"
[ "$(tl_metric rates_applied_total)" = 2 ] || fail "rates_applied_total = $(tl_metric rates_applied_total), want 2"
sluice_alive main || fail "sluice exited"
echo "PASS"
