#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0507-api-peer-auth — the client's token never leaves the instance.  A
# consumer that is no sluice (kcat) joins the group with a client.id that
# advertises a Python listener as its API, and takes some partitions; the
# listener records what it is sent and answers every lookup as if it owned
# the key, unsigned or with a made-up signature.  Lookups of its keys,
# asked of a real instance with the client's bearer token:
#   - reach the listener with the instance's credential (X-Sluice-Peer-Auth)
#     and no Authorization header, the token nowhere in the bytes;
#   - are answered 502 owner-unauthenticated, never with the listener's
#     body, and the instance says so in its log and its metrics;
#   - a request the listener got, replayed to the real instance, is
#     refused (it was made for the listener's address).
# The instance has api_peer_secret from SLUICE_API_PEER_SECRET.  Requests
# forged without the secret are refused by the real instance (401,
# sluice_api_peer_refused_total{reason="signature"}); a correctly signed one
# is answered, signed, once (its replay is refused, and so is one more than
# 30 s old, and a signed write).  Without api_peer_secret, the instance
# says so when it starts, answers those lookups 421 forwarding-disabled and
# sends the listener nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

here=$(cd "$(dirname "$0")" && pwd)
token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
secret=peer-secret-$RANDOM-$RANDOM-$RANDOM
apa=$(free_port)
ma=$(free_port)
lp=$(free_port)

# The instance's config; the secret comes from the environment
# (SLUICE_API_PEER_SECRET), where it is given.
conf() {
    base_conf "$WORK/a.ini"
    conf_set "$WORK/a.ini" sluice api_listen="127.0.0.1:$apa" api_tokens_file="$WORK/tokens" api_timeout=3s
    dl_pipeline "$WORK/a.ini" "$PFX" "$in" 8
}
conf
"$SLUICE_BIN" topics apply -c "$WORK/a.ini" >/dev/null

# --- the listener posing as a member --------------------------------
python3 - "$lp" "$WORK/listener.log" <<'PY' >"$WORK/listener.out" 2>&1 &
import json, os, socket, sys
port, log = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                break
            buf += d
    except OSError:
        pass
    if not buf:  # a probe that it listens
        c.close()
        continue
    with open(log, "ab") as f:
        f.write(json.dumps(buf.decode("latin-1")).encode() + b"\n")
    body = json.dumps({"id": "posed", "forged": True}).encode()
    sig = ""
    if b"forged-" in buf.split(b"\r\n", 1)[0]:
        sig = "X-Sluice-Peer-Auth: v1 mac=" + os.urandom(32).hex() + "\r\n"
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
              b"X-Sluice-Answered-By: 127.0.0.1:%d\r\n%sContent-Length: %d\r\n"
              b"Connection: close\r\n\r\n" % (port, sig.encode(), len(body)) + body)
    c.close()
PY
listener=$!
poser=
_cleanup_0507() {
    kill "$listener" 2>/dev/null || true
    [ -z "$poser" ] || kill "$poser" 2>/dev/null || true
}
CLEANUP_HOOKS+=(_cleanup_0507)
_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$lp") 2>/dev/null; }
wait_until 10 _listening || fail "the listener did not start"

SLUICE_PORTS[a]=$ma
SLUICE_API_PEER_SECRET=$secret sluice_up a "$WORK/a.ini"

# kcat joins the group (same assignor), advertising the listener.
start_poser() {
    kcat -b "$BOOTSTRAP" -G "$PFX" -q -X "client.id=posing@127.0.0.1:$lp" \
        -X partition.assignment.strategy=cooperative-sticky \
        -X enable.auto.commit=false "$in" >/dev/null 2>"$WORK/poser.err" &
    poser=$!
}
start_poser
_gave_some() {
    local r
    r=$(metric_value "$ma" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}")
    [ -n "$r" ] && [ "$r" -lt 8 ] && [ "$r" -gt 0 ]
}
wait_until 60 _gave_some || fail "the posing member took no partition ($(tail -2 "$WORK/poser.err"))"
echo "a kcat member advertising 127.0.0.1:$lp owns some partitions"

# ask PREFIX — GETs PREFIX0..PREFIX79 from the instance with the token
# until a 502 has come back for some and none answered anything else but
# 404 (the instance's own keys) or 503 (the owner map catching up); prints
# "KEY STATUS CODE BODY" per key, last round.
ask() {
    python3 - "$apa" "$token" "$PFX" "$1" <<'PY'
import http.client, json, sys, time
port, token, pfx, prefix = sys.argv[1:5]
deadline = time.time() + 30
while True:
    res = {}
    for i in range(80):
        k = f"{prefix}{i}"
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        c.request("GET", f"/v1/pipelines/{pfx}/timers/{k}",
                  headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        b = r.read().decode()
        res[k] = (r.status, json.loads(b).get("code"), b)
    codes = {v[0] for v in res.values()}
    if 502 in codes and codes <= {404, 502} or time.time() > deadline:
        break
    time.sleep(0.5)
for k, (s, code, b) in res.items():
    print(k, s, code, b.replace("\n", " "))
PY
}
ask u- >"$WORK/ask-unsigned"
ask forged- >"$WORK/ask-forged"
# What the listener was sent.
python3 - "$WORK/listener.log" "$token" "$secret" <<'PY' || fail "the listener saw what it must not"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
token, secret = sys.argv[2], sys.argv[3]
assert reqs, "the listener received nothing"
for r in reqs:
    head = r.split("\r\n\r\n")[0].lower()
    assert token not in r, "the token reached the listener"
    assert secret not in r, "the secret reached the listener"
    assert "\r\nauthorization:" not in head, r
    assert "\r\nx-sluice-peer-auth: v1 ts=" in head, r
print(f"the listener received {len(reqs)} requests: each with a peer credential, "
      "none with an Authorization header or the token")
PY
for f in unsigned forged; do
    n502=$(awk '$2 == 502 && $3 == "owner-unauthenticated"' "$WORK/ask-$f" | wc -l)
    other=$(awk '$2 != 502 && $2 != 404' "$WORK/ask-$f" | wc -l)
    note "$f answers of the posing member: $n502 of 80 lookups answered 502 owner-unauthenticated, $other neither 502 nor 404"
    [ "$n502" -gt 0 ] && [ "$other" = 0 ] ||
        fail "lookups of the posing member's keys ($f) were not all refused: $(awk '$2 != 404' "$WORK/ask-$f" | head -3)"
done
grep -q '"forged"' "$WORK/ask-unsigned" "$WORK/ask-forged" && fail "the posing member's body reached the client"
echo "the posing member's answers, unsigned or falsely signed, were refused (502)"

log_has a "is not signed with api_peer_secret" || fail "the instance's log does not say why it refused"
log_has a "forwarded to it with a credential made with api_peer_secret" ||
    fail "no start-up line about forwarding with api_peer_secret"
unsigned=$(metric_value "$ma" sluice_api_forward_unsigned_total)
[ "${unsigned:-0}" -gt 0 ] || fail "sluice_api_forward_unsigned_total did not count: ${unsigned:-none}"

# --- requests forged at the real instance ------------------------------
python3 - "$apa" "$PFX" "$secret" "$WORK/listener.log" "$here" <<'PY' || fail "a forged peer request was not refused"
import http.client, json, sys, time
port, pfx, secret, log = sys.argv[1:5]
sys.path.insert(0, sys.argv[5])
import peerauth
me = f"127.0.0.1:{port}"

def send(path, cred, method="GET", body=None, frm="127.0.0.1:1"):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
    c.request(method, path, body=body, headers={"X-Sluice-Peer-Auth": cred,
                                                "X-Sluice-Forwarded": frm})
    r = c.getresponse()
    b = r.read()
    return r, b

def code(b):
    return json.loads(b).get("code")

# Find a key the instance owns: its signed answer is 404, not 503 not-owner.
key = None
for i in range(200):
    path = f"/v1/pipelines/{pfx}/timers/own{i}"
    cred, nonce = peerauth.request_header(secret, "GET", path, me, "127.0.0.1:1")
    r, b = send(path, cred)
    if r.status == 404:
        key, good = path, (cred, nonce, r, b)
        break
assert key, "no key of the instance's own found"
cred, nonce, r, b = good
assert peerauth.answer_ok(secret, r.getheader("X-Sluice-Peer-Auth"), nonce, r.status,
                          r.getheader("X-Sluice-Answered-By"), r.getheader("Retry-After"), b), \
    "the instance's answer to a signed request is not signed"
# The same credential again: a replay.
r, b = send(key, cred)
assert r.status == 401 and code(b) == "peer-auth-failed" and "used before" in b.decode(), (r.status, b)
# Forged: another secret, no credential at all (the header's grammar), a
# credential for another address, one for another path, a stale one.
for name, c in [
        ("another secret", peerauth.request_header("not-the-secret-at-all", "GET", key, me, "127.0.0.1:1")[0]),
        ("garbage", "v1 ts=1 nonce=zz mac=00"),
        ("another address", peerauth.request_header(secret, "GET", key, "127.0.0.1:1", "127.0.0.1:1")[0]),
        ("another path", peerauth.request_header(secret, "GET", key + "x", me, "127.0.0.1:1")[0]),
        ("another sender", peerauth.request_header(secret, "GET", key, me, "127.0.0.1:2")[0])]:
    r, b = send(key, c)
    assert r.status == 401 and code(b) == "peer-auth-failed", (name, r.status, b)
    assert not r.getheader("X-Sluice-Peer-Auth"), name
stale, _ = peerauth.request_header(secret, "GET", key, me, "127.0.0.1:1",
                                   ts_ms=int(time.time() * 1000) - 60000)
r, b = send(key, stale)
assert r.status == 401 and "clock" in b.decode(), (r.status, b)
# Signed, but a write: peer requests are lookups only (signed 403).
put = f"/v1/pipelines/{pfx}/timers/w1"
body = b'{"target":"x","delay":"1h"}'
c, nonce = peerauth.request_header(secret, "PUT", put, me, "127.0.0.1:1", body=body)
r, b = send(put, c, "PUT", body)
assert r.status == 403 and code(b) == "peer-route", (r.status, b)
assert peerauth.answer_ok(secret, r.getheader("X-Sluice-Peer-Auth"), nonce, r.status,
                          r.getheader("X-Sluice-Answered-By"), r.getheader("Retry-After"), b)
# What the listener was sent, sent to the real instance: refused.
raw = json.loads(open(log).readline()).encode("latin-1")
import socket
s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
s.sendall(raw)
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
assert got.startswith(b"HTTP/1.1 401") and b"peer-auth-failed" in got, got[:300]
print("forged, replayed, stale and misdirected credentials refused (401); a signed "
      "lookup answered once, signed; a signed write refused (403)")
PY
refused=$(metric_value "$ma" 'sluice_api_peer_refused_total{reason="signature"}')
replayed=$(metric_value "$ma" 'sluice_api_peer_refused_total{reason="replay"}')
note "refused peer requests: signature ${refused:-0}, replay ${replayed:-0}, stale $(metric_value "$ma" 'sluice_api_peer_refused_total{reason="stale"}')"
[ "${refused:-0}" -ge 6 ] && [ "${replayed:-0}" -ge 1 ] ||
    fail "sluice_api_peer_refused_total did not count the forged requests"

# --- no secret: no forwarding ------------------------------------------
sluice_kill a TERM
lines=$(wc -l <"$WORK/listener.log")
SLUICE_METRICS_LISTEN=127.0.0.1:$ma sluice_start a0 "$WORK/a.ini"
sluice_wait_ready a0 "$ma" 30
log_has a0 "no api_peer_secret: lookups of keys another instance owns are answered 421" ||
    fail "no start-up line about forwarding being off"
wait_until 60 _gave_some || fail "the posing member owns nothing any more"
python3 - "$apa" "$token" "$PFX" "$here" "$secret" <<'PY' || fail "without a secret, lookups were not refused with 421"
import http.client, json, sys, time
port, token, pfx = sys.argv[1:4]
sys.path.insert(0, sys.argv[4])
import peerauth
deadline, seen = time.time() + 30, {}
while time.time() < deadline:
    seen = {}
    for i in range(80):
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
        c.request("GET", f"/v1/pipelines/{pfx}/timers/n{i}",
                  headers={"Authorization": "Bearer " + token})
        r = c.getresponse()
        b = r.read()
        k = (r.status, json.loads(b).get("code"))
        seen[k] = seen.get(k, 0) + 1
    if (421, "forwarding-disabled") in seen and set(seen) <= {(421, "forwarding-disabled"), (404, "not-found")}:
        break
    time.sleep(0.5)
print("answers without a secret:", seen)
assert (421, "forwarding-disabled") in seen and set(seen) <= {(421, "forwarding-disabled"), (404, "not-found")}, seen
# And it takes no forwarded request.
path = f"/v1/pipelines/{pfx}/timers/n0"
cred, _ = peerauth.request_header(sys.argv[5], "GET", path, f"127.0.0.1:{port}", "x")
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
c.request("GET", path, headers={"X-Sluice-Peer-Auth": cred})
r = c.getresponse()
b = r.read()
assert r.status == 401 and b"no api_peer_secret" in b, (r.status, b)
PY
[ "$(wc -l <"$WORK/listener.log")" = "$lines" ] || fail "without a secret, the listener was sent a request"
grep -q "$token" "$WORK"/sluice-*.log && fail "the token appears in a log"
grep -q "$secret" "$WORK"/sluice-*.log && fail "the peer secret appears in a log"
sluice_kill a0 TERM
echo "PASS"
