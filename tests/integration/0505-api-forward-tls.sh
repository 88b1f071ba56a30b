#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0505-api-forward-tls — forwarding with TLS on.  Two instances serve the
# API over HTTPS with one shared certificate (subjectAltName IP:127.0.0.1,
# as a Secret mounted in every pod): a lookup asked of either one is
# answered by the partition's owner over HTTPS, the owner's certificate
# verified against api_tls_cert's own certificates (chain and address).
# Then b restarts with api_tls_ca naming an unrelated CA: b no longer
# trusts a, so b's forwarded lookups answer 503 "owner-tls-failed" (nothing
# is sent to an unverified peer; the client's bearer token is never
# forwarded at all, the instances sign with api_peer_secret) and say why
# in the log, while a, which still trusts b, keeps forwarding.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

token=tok-$RANDOM
echo "$token" >"$WORK/tokens"
echo "peer-secret-$RANDOM-$RANDOM-$RANDOM" >"$WORK/peer-secret"
topic_create "$out" 2
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=sluice-api -days 1 \
    -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" >/dev/null 2>&1 || fail "openssl failed"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=other-ca -days 1 \
    -keyout "$WORK/other-key.pem" -out "$WORK/other-ca.pem" >/dev/null 2>&1 || fail "openssl failed"

# conf_for NAME API_PORT [KEY=VALUE] — a config for one instance.
conf_for() {
    base_conf "$WORK/$1.ini"
    conf_set "$WORK/$1.ini" sluice api_listen="127.0.0.1:$2" api_tokens_file="$WORK/tokens" \
        api_timeout=3s api_tls_cert="$WORK/cert.pem" api_tls_key="$WORK/key.pem" \
        api_peer_secret_file="$WORK/peer-secret" ${3:+"$3"}
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
echo "a (HTTPS $apa) and b (HTTPS $apb) share the partitions"

api_put_timers "https://127.0.0.1:$apa/v1/pipelines/$PFX/timers" "$token" "$out" 20 201 \
    --cacert "$WORK/cert.pem"

# check MODE — every lookup asked of a and of b; MODE "ok": all answered
# 200 by the owner, the same JSON both ways; MODE "b-distrusts-a": what b
# must forward to a is 503 owner-tls-failed, all else as "ok".
check() {
    python3 - "$apa" "$apb" "$token" "$PFX" "$WORK/cert.pem" "$1" <<'PY'
import http.client, json, ssl, sys
from apiforward import ask_both
apa, apb, token, pfx, cert, mode = sys.argv[1:7]
ctx = ssl.create_default_context(cafile=cert)
def get(port, path):
    c = http.client.HTTPSConnection("127.0.0.1", int(port), timeout=10, context=ctx)
    c.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    return r.status, r.getheader("X-Sluice-Answered-By"), r.read()
owners, refusals = ask_both(get, apa, apb, pfx, timeout=30,
                            refused=lambda s, body: json.loads(body).get("code") == "owner-tls-failed")
for i, ba, bb, bodyb in refusals:
    # b refused to forward: only for a's partitions, only in that mode.
    assert mode == "b-distrusts-a" and ba.endswith(":" + apa), (mode, ba, bodyb)
    assert bb.endswith(":" + apb), bb
    msg = json.loads(bodyb)["message"]
    assert "not trusted" in msg, msg
refused = len(refusals)
assert sorted(owners) == sorted([f"127.0.0.1:{apa}", f"127.0.0.1:{apb}"]), owners
if mode == "b-distrusts-a":
    assert refused == len(owners[f"127.0.0.1:{apa}"]) > 0, (refused, owners)
print(mode + ": answered by", {k: len(v) for k, v in owners.items()},
      f"over HTTPS; b refused {refused} forwards" if refused else "over HTTPS, forwarded both ways")
PY
}
check ok || fail "forwarding over HTTPS failed"

# b trusts another CA only.
sluice_kill b TERM
conf_for b "$apb" api_tls_ca="$WORK/other-ca.pem"
SLUICE_METRICS_LISTEN=127.0.0.1:$mb sluice_start b2 "$WORK/b.ini"
mb2=$mb
sluice_wait_ready b2 "$mb2" 30
wait_until 60 both_own || fail "the two instances do not share the 8 partitions again"
check b-distrusts-a || fail "an untrusted owner was not refused"
log_has b2 "is not trusted" || fail "b2's log does not say why it refused"
grep -q "$token" "$WORK"/sluice-*.log && fail "the token appears in a log"
grep -qF "$(cat "$WORK/peer-secret")" "$WORK"/sluice-*.log && fail "the peer secret appears in a log"
sluice_kill b2 TERM
sluice_kill a TERM
echo "PASS"
