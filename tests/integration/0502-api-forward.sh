#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0502-api-forward — any instance answers any key: with two instances
# sharing the partitions of an 8-partition input, a lookup asked of either
# one is answered by the partition's owner (X-Sluice-Answered-By names the
# same member both ways, and each member owns some ids), a request that was
# already forwarded (one with another instance's credential, made here as
# an instance makes it: tests/integration/peerauth.py) is never forwarded
# again (503 not-owner, signed), and while a partition is being rebuilt
# the answer is 503 "rebuilding" with Retry-After.  The instances share
# api_peer_secret; the client's token is never forwarded (0507).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

token=tok-$RANDOM
echo "$token" >"$WORK/tokens"
secret=peer-secret-$RANDOM-$RANDOM-$RANDOM
topic_create "$out" 2

# conf_for NAME API_PORT — a config for one instance.
conf_for() {
    base_conf "$WORK/$1.ini"
    conf_set "$WORK/$1.ini" sluice api_listen="127.0.0.1:$2" api_tokens_file="$WORK/tokens" \
        api_timeout=3s api_peer_secret="$secret"
    dl_pipeline "$WORK/$1.ini" "$PFX" "$in" 8
}
apa=$(free_port)
apb=$(free_port)
conf_for a "$apa"
conf_for b "$apb"
"$SLUICE_BIN" topics apply -c "$WORK/a.ini" >/dev/null
sluice_up a "$WORK/a.ini"
sluice_up b "$WORK/b.ini"
ma=${SLUICE_PORTS[a]}
mb=${SLUICE_PORTS[b]}
both_own() {
    local ra rb
    ra=$(metric_value "$ma" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}")
    rb=$(metric_value "$mb" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}")
    [ "${ra:-0}" -gt 0 ] && [ "${rb:-0}" -gt 0 ] && [ $((ra + rb)) -eq 8 ]
}
wait_until 60 both_own || fail "the two instances do not share the 8 partitions"
echo "a (API $apa) and b (API $apb) share the partitions"

# 40 timers through a, due in an hour; what each PUT answered is kept.
# Every tenth id (5, 15, ...) is "id N/ü", percent-encoded in the path: a
# forwarded lookup must encode it again for the owner, whole however long
# (id 39: "long/" and 300 ü, 1,807 characters encoded).
long=$(printf '%%C3%%BC%.0s' $(seq 300))
: >"$WORK/puts"
for i in $(seq 0 39); do
    key=id$i
    [ $((i % 10)) -ne 5 ] || key="id%20$i%2F%C3%BC"
    [ "$i" -ne 39 ] || key="long%2F$long"
    code=$(curl -s -o "$WORK/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" \
        --data-binary "{\"target\":\"$out\",\"delay\":\"1h\",\"value\":\"v$i\"}" \
        "http://127.0.0.1:$apa/v1/pipelines/$PFX/timers/$key")
    case "$code" in 201) ;; *) fail "PUT $key → $code $(cat "$WORK/put") (want 201: a new timer)" ;; esac
    cat "$WORK/put" >>"$WORK/puts"
    echo >>"$WORK/puts"
done

# Every lookup, asked of a and of b, is answered by the same member.
python3 - "$apa" "$apb" "$token" "$PFX" "$WORK/puts" "$out" "$secret" "$(cd "$(dirname "$0")" && pwd)" <<'PY' || fail "forwarding check failed"
import http.client, json, sys, time, urllib.parse
apa, apb, token, pfx = sys.argv[1:5]
secret = sys.argv[7]
sys.path.insert(0, sys.argv[8])
import peerauth
def name(i):
    if i == 39:
        return "long/" + "\u00fc" * 300
    return f"id {i}/\u00fc" if i % 10 == 5 else f"id{i}"
def timer_path(i):
    return f"/v1/pipelines/{pfx}/timers/" + urllib.parse.quote(name(i), safe="")
puts = {j["id"]: j for j in map(json.loads, filter(str.strip, open(sys.argv[5])))}
out = sys.argv[6]
def get(port, path, extra=None):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
    h = {"Authorization": "Bearer " + token}
    h.update(extra or {})
    c.request("GET", path, headers=h)
    r = c.getresponse()
    body = r.read()
    return r.status, r.getheader("X-Sluice-Answered-By"), r.getheader("Retry-After"), body
owners = {}
deadline = time.time() + 30
for i in range(40):
    path = timer_path(i)
    while True:
        sa, ba, _, bodya = get(apa, path)
        sb, bb, _, bodyb = get(apb, path)
        # 404 until the owner has read the PUT's record from the input.
        if sa not in (503, 404) and sb not in (503, 404):
            break
        assert time.time() < deadline, (path[:100], sa, bodya[:300], sb, bodyb[:300])
        time.sleep(0.2)
    assert sa == sb == 200, (path[:100], sa, bodya[:300], sb, bodyb[:300])
    assert ba == bb and ba, (path, ba, bb)
    ja, jb = json.loads(bodya), json.loads(bodyb)
    # The same owner's JSON both ways; only the "now"-relative figure moves.
    ja.pop("due_in_ms"), jb.pop("due_in_ms")
    assert ja == jb, (bodya, bodyb)
    put = puts[name(i)]
    want = {"id": name(i), "partition": put["partition"], "due_ms": put["due"],
            "seq": put["offset"], "target_topic": out, "payload_bytes": len(f"v{i}")}
    bad = {k: (ja.get(k), v) for k, v in want.items() if ja.get(k) != v}
    assert not bad, (path, bad)
    owners.setdefault(ba, []).append(i)
assert sorted(owners) == sorted([f"127.0.0.1:{apa}", f"127.0.0.1:{apb}"]), owners
# A cancel through either instance: the lookup, asked of the non-owner,
# is the owner's 404 once the owner has read the cancel.
def delete(port, path):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
    c.request("DELETE", path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    r.read()
    return r.status
for owner, ids in owners.items():
    other = apb if owner.endswith(":" + apa) else apa
    path = timer_path(ids[-1])
    assert delete(other, path) == 204, path
    deadline = time.time() + 15
    while True:
        s, by, _, body = get(other, path)
        if s == 404:
            break
        assert s == 200 and time.time() < deadline, (path, s, body)
        time.sleep(0.1)
    assert by == owner and json.loads(body)["code"] == "not-found", (by, owner, body)
# A request already forwarded (another instance's credential, no token)
# is answered 503 by a non-owner, signed, not passed on.
for owner, ids in owners.items():
    other = apb if owner.endswith(":" + apa) else apa
    path = timer_path(ids[0])
    cred, nonce = peerauth.request_header(secret, "GET", path,
                                          f"127.0.0.1:{other}", "test")
    c = http.client.HTTPConnection("127.0.0.1", int(other), timeout=10)
    c.request("GET", path, headers={"X-Sluice-Peer-Auth": cred,
                                    "X-Sluice-Forwarded": "test"})
    r = c.getresponse()
    body = r.read()
    s, by, ra = r.status, r.getheader("X-Sluice-Answered-By"), r.getheader("Retry-After")
    assert s == 503 and ra and json.loads(body)["code"] == "not-owner", (s, ra, body)
    assert peerauth.answer_ok(secret, r.getheader("X-Sluice-Peer-Auth"), nonce,
                              s, by, ra, body), r.getheaders()
print("lookups answered by the owner from both instances, with the owner's JSON "
      "(due, partition, seq as the PUT said):", {k: len(v) for k, v in owners.items()})
PY

# --- 503 while rebuilding ------------------------------------------------
# 500k pending timers in the changelog, then a alone restarts and rebuilds
# them all; lookups meanwhile are 503 "rebuilding" with Retry-After.  A
# rebuild that fast lasts a few hundred ms, so the lookups start before a
# does (refused connections are retried every 2 ms): they see its API from
# the moment it listens.
root=$(cd "$(dirname "$SLUICE_BIN")" && pwd)
[ -x "$root/build/bench/load" ] || make -s -C "$root" build/bench/load >/dev/null ||
    fail "cannot build bench/load"
"$root"/build/bench/load -b "$BOOTSTRAP" -t "$in" -n 500000 -s 20 -p murmur2_random \
    -H "sluice-target=$out" -H "sluice-delay=1h" >/dev/null || fail "load failed"
caught_up() {
    local la lb
    la=$(metric_value "$ma" "sluice_consumer_lag{pipeline=\"$PFX\"}")
    lb=$(metric_value "$mb" "sluice_consumer_lag{pipeline=\"$PFX\"}")
    [ "${la:-1}" = 0 ] && [ "${lb:-1}" = 0 ]
}
wait_until 120 caught_up || fail "the 500k timers were not ingested"
sluice_kill b TERM
sluice_kill a TERM
python3 - "$apa" "$token" "$PFX" >"$WORK/lookups.out" 2>&1 <<'PY' &
import http.client, json, sys, time
apa, token, pfx = sys.argv[1:4]
seen, deadline = {}, time.time() + 60
while time.time() < deadline:
    try:
        c = http.client.HTTPConnection("127.0.0.1", int(apa), timeout=5)
        c.request("GET", f"/v1/pipelines/{pfx}/timers/id0",
                  headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        body = r.read()
    except OSError:
        time.sleep(0.002)
        continue
    code = json.loads(body).get("code") if r.status != 200 else "ok"
    if r.status == 503:
        assert r.getheader("Retry-After"), "503 without Retry-After"
    seen[(r.status, code)] = seen.get((r.status, code), 0) + 1
    if (503, "rebuilding") in seen and r.status == 200:
        assert json.loads(body)["id"] == "id0", body
        break
    time.sleep(0.002)
print("answers while a restarted:", seen)
assert (503, "rebuilding") in seen, seen
assert (200, "ok") in seen, "never answered after the rebuild"
PY
lookups=$!
SLUICE_METRICS_LISTEN=127.0.0.1:$ma sluice_start a2 "$WORK/a.ini"
lookups_ok=0
wait "$lookups" && lookups_ok=1
sed 's/^/# /' "$WORK/lookups.out"
[ "$lookups_ok" = 1 ] || fail "no 503 rebuilding seen"
sluice_kill a2 TERM
grep -q "$secret" "$WORK"/sluice-*.log && fail "the peer secret appears in a log"
echo "PASS"
