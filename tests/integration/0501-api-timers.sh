#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0501-api-timers — the HTTP API schedules, cancels and reschedules timers
# beside a producer that uses Java's partitioner (kcat -X
# partitioner=murmur2_random), and always lands on the partition that
# producer uses: a cancel through the API of a timer kcat scheduled cancels
# it, a cancel by kcat of one the API scheduled cancels it, and a
# reschedule through the API replaces kcat's timer.  Also: bearer tokens
# (none, wrong), every validation reason as a 400 with the DLQ's reason
# code, the body limit, a 405 and its Allow header, the route table, and
# TLS on.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"

base_conf "$conf"
api_port=$(free_port)
dl_pipeline "$conf" "$PFX" "$in" 8 "allowed_targets=$PFX.*" max_record_bytes=1KiB
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens" api_max_body=4KiB
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
topic_create "$out" 3

sluice_up main "$conf"
port=${SLUICE_PORTS[main]}
API=http://127.0.0.1:$api_port/v1
echo "sluice ready, API on $api_port"

# api METHOD PATH [BODY] — prints "STATUS BODY".
api() {
    local m=$1 p=$2 body=${3:-}
    local args=(-s -o "$WORK/body" -w '%{http_code}' --max-time 10 -X "$m"
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json')
    [ -n "$body" ] && args+=(--data-binary "$body")
    local code
    rm -f "$WORK/body"
    code=$(curl "${args[@]}" "$API$p") || true
    echo "$code $(cat "$WORK/body" 2>/dev/null)"
}
# expect STATUS CODE METHOD PATH [BODY] — the answer has this status and,
# unless CODE is empty, this error code.
expect() {
    local want=$1 code=$2
    shift 2
    local got
    got=$(api "$@")
    [ "${got%% *}" = "$want" ] || fail "$1 $2 → $got (want $want)"
    if [ -n "$code" ]; then
        echo "${got#* }" | python3 -c 'import json,sys; c=json.load(sys.stdin)["code"]; sys.exit(c != sys.argv[1])' "$code" 2>/dev/null ||
            fail "$1 $2 ${3:-} → $got (want code $code)"
    fi
}

# --- auth ---------------------------------------------------------------
h=$(curl -s -D - -o /dev/null "$API")
grep -q '^HTTP/1.1 401' <<<"$h" || fail "no token: $h"
grep -qi '^WWW-Authenticate: Bearer' <<<"$h" || fail "no WWW-Authenticate: $h"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer nope' "$API")" = 401 ] ||
    fail "a wrong token was accepted"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${token}x" "$API")" = 401 ] ||
    fail "a longer token was accepted"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Basic $token" "$API")" = 401 ] ||
    fail "a Basic credential was accepted"
expect 200 "" GET ""
grep -q "$token" "$WORK/sluice-main.log" && fail "the token appears in the log"
echo "auth: 401 without a token and with wrong ones, 200 with the token"

# --- validation: the DLQ's reasons ---------------------------------------
T=/pipelines/$PFX/timers
expect 400 missing-target PUT "$T/v1" '{"delay":"1s"}'
expect 400 missing-due PUT "$T/v1" "{\"target\":\"$out\"}"
expect 400 conflicting-due PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"at\":1}"
expect 400 bad-delay PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1x\"}"
expect 400 bad-at PUT "$T/v1" "{\"target\":\"$out\",\"at\":\"yesterday\"}"
expect 400 delay-too-long PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"400d\"}"
expect 400 target-not-allowed PUT "$T/v1" '{"target":"elsewhere","delay":"1s"}'
expect 400 target-internal PUT "$T/v1" "{\"target\":\"$PFX.changelog\",\"delay\":\"1s\"}"
expect 400 target-internal PUT "$T/v1" '{"target":"__consumer_offsets","delay":"1s"}'
expect 400 bad-target-partition PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"partition\":-1}"
expect 400 bad-target-partition PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"partition\":3}"
big=$(head -c 1100 /dev/zero | tr '\0' x)
expect 400 oversize PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"value\":\"$big\"}"
expect 400 bad-header PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"headers\":{\"sluice-delay\":\"2s\"}}"
expect 400 bad-header PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"headers\":{\"h\":1}}"
expect 400 unknown-target PUT "$T/v1" "{\"target\":\"$PFX.nothere\",\"delay\":\"1s\"}"
expect 400 bad-body PUT "$T/v1" 'not json'
expect 400 bad-body PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"colour\":1}"
expect 400 bad-body PUT "$T/v1" "{\"target\":\"$out\",\"delay\":\"1s\",\"value_base64\":\"!!\"}"
huge=$(head -c 5000 /dev/zero | tr '\0' x)
expect 413 oversize PUT "$T/v1" "{\"value\":\"$huge\"}"
expect 404 not-found GET "/pipelines/nope/timers/x"
expect 404 not-found GET "/pipelines/$PFX/keys/x"
expect 405 method-not-allowed POST "$T/x"
h=$(curl -s -D - -o /dev/null --max-time 10 -X POST -H "Authorization: Bearer $token" "$API$T/x")
grep -qi '^Allow: PUT, GET, DELETE' <<<"$h" || fail "a 405 without Allow: PUT, GET, DELETE: $h"
# A pipeline name that does not decode names no pipeline (an answer, not
# a lookup in pipeline -1), as does a key that does not.
expect 404 not-found GET "/pipelines/%zz/timers/x"
expect 404 not-found PUT "/pipelines/%4/timers/x" "{\"target\":\"$out\",\"delay\":\"1s\"}"
expect 404 not-found GET "$T/%g0"
curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$port/healthz" || fail "sluice died on a bad path"
[ "$(count_records "$in")" = 0 ] || fail "a refused request reached the input"
echo "validation: every reason answered 400 with its DLQ code; nothing written"

# --- the three kinds of interplay ----------------------------------------
# a: scheduled by the API (15 s), half cancelled by kcat (murmur2).
# b: scheduled by kcat (15 s), half cancelled by the API.
# c: scheduled by kcat (12 s), all rescheduled by the API (15 s, x-v=2)
#    well before they are due: 40 PUTs one after another took up to 3 s
#    on a busy CI machine, so 3 s timers were too close, and over 7 s
#    (with payloads in Kafka, on a machine overloaded 8-fold), so 8 s too.
n=40
parts_api=$WORK/parts-api
: >"$parts_api"
t0=$(now_ms)
for i in $(seq 0 $((n - 1))); do echo "c$i:pc$i"; done |
    produce "$in" -K: -X partitioner=murmur2_random -H "sluice-target=$out" -H "sluice-delay=12s" -H x-v=1
t_c=$(now_ms)
for i in $(seq 0 $((n - 1))); do
    r=$(api PUT "$T/c$i" "{\"target\":\"$out\",\"delay\":\"15s\",\"value\":\"pc$i-v2\",\"headers\":{\"x-v\":\"2\"}}")
    case "${r%% *}" in 200 | 201) ;; *) fail "PUT c$i → $r" ;; esac
done
[ $(($(now_ms) - t0)) -lt 11000 ] || fail "the last reschedule came $(($(now_ms) - t0)) ms after the 12 s timers were produced: they may have fired"
echo "rescheduled $n timers in $(($(now_ms) - t_c)) ms"
for i in $(seq 0 $((n - 1))); do
    r=$(api PUT "$T/a$i" "{\"target\":\"$out\",\"delay\":\"15s\",\"value\":\"pa$i\",\"headers\":{\"x-v\":\"1\"}}")
    case "${r%% *}" in 200 | 201) ;; *) fail "PUT a$i → $r" ;; esac
    echo "a$i ${r#* }" >>"$parts_api"
done
for i in $(seq 0 2 $((n - 1))); do echo "a$i:"; done |
    produce "$in" -K: -Z -X partitioner=murmur2_random
for i in $(seq 0 $((n - 1))); do echo "b$i:pb$i"; done |
    produce "$in" -K: -X partitioner=murmur2_random -H "sluice-target=$out" -H "sluice-delay=15s" -H x-v=1
for i in $(seq 0 2 $((n - 1))); do expect 204 "" DELETE "$T/b$i"; done
echo "scheduled 3 x $n timers, cancelled and rescheduled through both paths in $(($(now_ms) - t0)) ms"

want=$((n / 2 + n / 2 + n))
wait_records "$out" "$want" 60 || fail "only $(count_records "$out") of $want timers fired"
# Nothing pending any more: a cancelled timer that still fired has fired.
wait_until 30 dl_no_pending || fail "timers still pending after $want fired: $("$SLUICE_BIN" inspect -c "$conf" "$PFX" | head -3)"
consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$parts_api" "$n" "$t_c" <<'PY' || fail "output check failed"
import json, sys
from collections import Counter, defaultdict
ins = [json.loads(l) for l in open(sys.argv[1])]
outs = [json.loads(l) for l in open(sys.argv[2])]
n, t_c = int(sys.argv[4]), int(sys.argv[5])
# Every id went to one input partition only, whoever wrote it.
where = defaultdict(set)
for r in ins:
    where[r["key"]].add(r["partition"])
split = {k: v for k, v in where.items() if len(v) > 1}
assert not split, f"ids on several partitions: {split}"
for line in open(sys.argv[3]):
    k, body = line.split(" ", 1)
    p = json.loads(body)["partition"]
    assert where[k] == {p}, (k, p, where[k])
want = {f"a{i}" for i in range(1, n, 2)} | {f"b{i}" for i in range(1, n, 2)} | {f"c{i}" for i in range(n)}
got = Counter(r["key"] for r in outs)
dups = {k: c for k, c in got.items() if c > 1}
assert not dups, f"fired twice: {dups}"
assert set(got) == want, f"missing {sorted(want - set(got))[:5]} extra {sorted(set(got) - want)[:5]}"
for r in outs:
    h = dict(zip(r["headers"][0::2], r["headers"][1::2]))
    if r["key"].startswith("c"):
        assert h.get("x-v") == "2" and r["payload"].endswith("-v2"), r
        assert r["ts"] >= t_c + 15000 - 1000, ("rescheduled fired early", r["key"], r["ts"] - t_c)
    elif r["key"].startswith("a"):
        assert h.get("x-v") == "1" and r["payload"] == "pa" + r["key"][1:], r
print(f"fired {len(outs)}: a/b halves cancelled across paths, c rescheduled; "
      f"{len(where)} ids each on one partition")
PY

# --- lookups: the owner's describe() ---------------------------------------
# A timer scheduled through the API is looked up with what was asked (due,
# target, key, partition, sizes); the PUT that scheduled it said 201 (no
# timer before), a second PUT once the owner holds it says 200; after a
# cancel the lookup is 404.  An id never scheduled is 404 "not-found".
due=$(($(now_ms) + 3600000))
r=$(api PUT "$T/look1" "{\"target\":\"$out\",\"at\":$due,\"key\":\"tk1\",\"partition\":2,\"value\":\"12345\",\"headers\":{\"x-a\":\"bc\"}}")
[ "${r%% *}" = 201 ] || fail "first PUT of look1 → $r (want 201: no timer before)"
echo "${r#* }" >"$WORK/put1.json"
# get_until PATH STATUS — polls until GET PATH answers STATUS (r: the answer).
get_until() {
    local path=$1 want=$2
    _got() { r=$(api GET "$path"); [ "${r%% *}" = "$want" ]; }
    wait_until 15 _got || fail "GET $path → $r (want $want)"
}
get_until "$T/look1" 200
echo "${r#* }" >"$WORK/look1.json"
python3 - "$WORK/look1.json" "$WORK/put1.json" "$due" "$out" <<'PY' || fail "look1's lookup is wrong"
import json, sys
j = json.load(open(sys.argv[1]))
put = json.load(open(sys.argv[2]))
due, out = int(sys.argv[3]), sys.argv[4]
want = {"id": "look1", "partition": put["partition"], "due_ms": due,
        "target_topic": out, "target_key": "tk1", "target_key_source": "header",
        "target_partition": 2, "payload_bytes": 5, "header_count": 1,
        "header_bytes": 5, "seq": put["offset"], "due_on_arrival": False}
bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}
assert not bad, f"lookup differs (got, want): {bad}; {j}"
assert put["due"] == due and put["existed"] is False, put
assert 3500000 < j["due_in_ms"] <= 3600000, j["due_in_ms"]
assert j["due"].endswith("Z") and j["due"].startswith("20"), j["due"]
print(f"look1: due {j['due']} ({j['due_in_ms']} ms), target {j['target_topic']}[{j['target_partition']}] key {j['target_key']}")
PY
r=$(api PUT "$T/look1" "{\"target\":\"$out\",\"delay\":\"2h\",\"value\":\"x\"}")
[ "${r%% *}" = 200 ] || fail "second PUT of look1 → $r (want 200: replaced)"
echo "${r#* }" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["existed"] is True, j' ||
    fail "second PUT of look1: existed is not true: $r"
# The lookup follows the reschedule: due in 2 h, the id as key, 1 byte.
_resched() {
    r=$(api GET "$T/look1")
    [ "${r%% *}" = 200 ] && echo "${r#* }" | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(not (j["due_in_ms"] > 7000000 and j["payload_bytes"] == 1 and j["target_key_source"] == "id" and j["target_partition"] is None and j["header_count"] == 0))'
}
wait_until 15 _resched || fail "the lookup does not show the reschedule: $r"
expect 204 "" DELETE "$T/look1"
get_until "$T/look1" 404
echo "${r#* }" | grep -q '"code":"not-found"' || fail "404 without code not-found: $r"
expect 404 not-found GET "$T/never-scheduled"
echo "lookups: 201 then 200 (replaced), the timer's due/target/key/sizes as scheduled, rescheduled, 404 after cancel"

# --- the topic cache --------------------------------------------------------
# 400 PUTs over one connection, each naming a target that does not exist
# (400 unknown-target, after a metadata lookup): the API's topic cache
# holds at most 256 names, evicting made-up ones, and still serves the
# input.
python3 - "$api_port" "$token" "$PFX" <<'PY' || fail "the made-up targets were not refused"
import http.client, json, sys
port, token, pfx = sys.argv[1:4]
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
for i in range(400):
    c.request("PUT", f"/v1/pipelines/{pfx}/timers/m{i}",
              body=json.dumps({"target": f"{pfx}.made-up-{i}", "delay": "1h"}),
              headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    b = r.read()
    assert r.status == 400 and json.loads(b)["code"] == "unknown-target", (i, r.status, b)
PY
entries=$(metric_value "$port" sluice_api_topic_cache_entries)
evicted=$(metric_value "$port" sluice_api_topic_cache_evictions_total)
note "API topic cache after 400 made-up targets: $entries entries, $evicted evicted"
# 402 names (the input, $out and the 400): 146 evicted at least.
[ "${entries:-999}" -le 256 ] && [ "${evicted:-0}" -ge 146 ] ||
    fail "the API's topic cache grew past its bound: $entries entries, $evicted evicted"
r=$(api PUT "$T/after-made-up" "{\"target\":\"$out\",\"delay\":\"1h\"}")
case "${r%% *}" in 200 | 201) ;; *) fail "a PUT after the made-up targets → $r" ;; esac
echo "topic cache: 400 made-up targets refused, the cache held to $entries entries"

# --- TLS --------------------------------------------------------------------
sluice_kill main TERM
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 \
    -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 || fail "openssl failed"
conf_set "$conf" sluice api_tls_cert="$WORK/cert.pem" api_tls_key="$WORK/key.pem"
SLUICE_PORTS[tls]=$port # the same port again
sluice_up tls "$conf"
code=$(curl -s -o "$WORK/body" -w '%{http_code}' --cacert "$WORK/cert.pem" \
    -H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/v1") || true
[ "$code" = 200 ] || fail "HTTPS GET /v1 → $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$WORK/cert.pem" \
    -X PUT --data-binary "{\"target\":\"$out\",\"delay\":\"1s\"}" \
    -H "Authorization: Bearer $token" "https://127.0.0.1:$api_port/v1$T/tls1") || true
case "$code" in 200 | 201) ;; *) fail "HTTPS PUT → $code" ;; esac
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
    -H "Authorization: Bearer $token" "http://127.0.0.1:$api_port/v1") || true
[ "$code" != 200 ] || fail "plain HTTP answered with TLS on"
wait_records "$out" $((want + 1)) 30 || fail "the timer scheduled over HTTPS did not fire"
echo "TLS: HTTPS answers with the self-signed cert, plain HTTP does not"
sluice_kill tls TERM
echo "PASS"
