#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0034-ops-api-forward — the HTTP API as ops/ deploys it forwards across
# members.  The builds base + api/ and base + api/ + api-tls/ are rendered
# by kustomize; two members run with the StatefulSet's own settings for
# pods sluice-0 and sluice-1 of a namespace: the rendered sluice.ini and
# the sluice container's environment as the kubelet gives it (downward
# API, $(VAR) expanded), the Secrets' files where the pod mounts them.
# What differs from a pod is only what must: the broker, the topic and
# group names (this test's), replication_factor 1, and the address each
# member listens on (127.0.0.2 and 127.0.0.3, the manifests' ports: a
# pod's 0.0.0.0 is its own address).  Each runs in a mount namespace of
# its own whose /etc/hosts gives the pods' stable DNS names
# (sluice-N.sluice.NAMESPACE.svc) those addresses, as cluster DNS would.
#
# Checked, over HTTP and then over HTTPS (one certificate naming
# *.sluice.NAMESPACE.svc, as api-tls/secret.example.yaml makes it): each
# member advertises its pod's DNS name; 20 timers PUT through sluice-0 are
# each answered 200 by both members, by the same owner
# (X-Sluice-Answered-By), and both members own some of them, so lookups
# were forwarded both ways to the advertised names.
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
kustomize=$root/build/ops-tools/kustomize
[ -x "$kustomize" ] || ops_tools_locked >"$WORK/ops-tools.log" 2>&1 ||
    { cat "$WORK/ops-tools.log" >&2; fail "make ops-tools failed"; }
[ -x "$kustomize" ] || fail "no kustomize in build/ops-tools (make ops-tools builds it with Go)"
command -v unshare >/dev/null || fail "unshare (util-linux) is needed for the pods' DNS names"

ns=ns$$
token=tok-$RANDOM-$RANDOM
declare -A ip=([0]=127.0.0.2 [1]=127.0.0.3)
{
    cat /etc/hosts
    for n in 0 1; do echo "${ip[$n]} sluice-$n.sluice.$ns.svc"; done
} >"$WORK/hosts"

# The Secrets, as files (what the kubelet mounts).
mkdir -p "$WORK/secrets/sluice-api" "$WORK/secrets/sluice-api-tls"
printf '# the test client\n%s\n' "$token" >"$WORK/secrets/sluice-api/tokens"
echo "peer-$RANDOM-$RANDOM-$RANDOM-$RANDOM" >"$WORK/secrets/sluice-api/peer-secret"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=sluice-api \
    -addext "subjectAltName=DNS:*.sluice.$ns.svc,DNS:sluice-api.$ns.svc" \
    -keyout "$WORK/secrets/sluice-api-tls/tls.key" \
    -out "$WORK/secrets/sluice-api-tls/tls.crt" >/dev/null 2>&1 || fail "openssl failed"

# render NAME COMPONENT... — kustomize build of the base with the
# components, then, from it: $WORK/NAME.ini (the ConfigMap's sluice.ini,
# with this test's broker, names and replication factor) and
# $WORK/NAME-env-N for pod sluice-N (export lines: the sluice container's
# environment, Secret mount paths mapped to $WORK/secrets/SECRET/); prints
# the API and metrics ports of the container.
render() {
    local name=$1 c ops
    shift
    mkdir -p "$WORK/k-$name"
    ops=$(realpath --relative-to="$WORK/k-$name" "$root/ops") # kustomize wants relative paths
    {
        echo "apiVersion: kustomize.config.k8s.io/v1beta1"
        echo "kind: Kustomization"
        echo "resources: [$ops/base]"
        echo "components:"
        for c in "$@"; do echo "  - $ops/$c"; done
    } >"$WORK/k-$name/kustomization.yaml"
    "$kustomize" build "$WORK/k-$name" >"$WORK/$name.yaml" ||
        fail "kustomize build $name failed"
    python3 - "$WORK/$name.yaml" "$WORK" "$name" "$ns" "$PFX" "$BOOTSTRAP" <<'PY'
import configparser, io, re, shlex, sys
import yaml
path, work, name, ns, pfx, bootstrap = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
cm = next(d for d in docs if d["kind"] == "ConfigMap" and "sluice.ini" in d.get("data", {}))
st = next(d for d in docs if d["kind"] == "StatefulSet")
spec = st["spec"]["template"]["spec"]
c = next(c for c in spec["containers"] if c["name"] == "sluice")
assert st["spec"]["serviceName"] == "sluice", st["spec"]["serviceName"]

ini = configparser.ConfigParser(interpolation=None)
ini.optionxform = str
ini.read_string(cm["data"]["sluice.ini"])
# This test's broker and names; everything else as rendered.
ini["sluice"]["app_id"] = pfx
ini["kafka"]["bootstrap.servers"] = bootstrap
(sect,) = [s for s in ini.sections() if s.startswith("pipeline ")]
p = dict(ini[sect])
ini.remove_section(sect)
ini[f"pipeline {pfx}"] = p
ini[f"pipeline {pfx}"]["input"] = f"{pfx}.in"
ini[f"pipeline {pfx}"]["replication_factor"] = "1"
ini[f"pipeline {pfx}"]["allowed_targets"] = f"{pfx}.*"
with open(f"{work}/{name}.ini", "w") as f:
    ini.write(f)

vols = {v["name"]: v for v in spec.get("volumes", [])}
mounts = {m["mountPath"].rstrip("/") + "/": vols[m["name"]]["secret"]["secretName"]
          for m in c.get("volumeMounts", []) if "secret" in vols[m["name"]]}
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
for n in (0, 1):
    fields = {"metadata.name": f"sluice-{n}", "metadata.namespace": ns}
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            v = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                       lambda m: env.get(m.group(1), m.group(0)), e["value"])
        else:
            v = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
        for mp, secret in mounts.items():
            if v.startswith(mp):
                v = f"{work}/secrets/{secret}/{v[len(mp):]}"
        env[e["name"]] = v
    with open(f"{work}/{name}-env-{n}", "w") as f:
        for k, v in env.items():
            f.write(f"export {k}={shlex.quote(v)}\n")
print(ports["api"], ports["metrics"])
PY
}

# start NAME N — member sluice-N with NAME's config and environment, in a
# mount namespace whose /etc/hosts names the pods; listening where its pod
# would (its own address, the container's ports); logging to
# $WORK/sluice-NAME-N.log.
start() {
    local name=$1 n=$2
    (
        # shellcheck disable=SC1090
        . "$WORK/$name-env-$n"
        export SLUICE_API_LISTEN=${SLUICE_API_LISTEN/0.0.0.0/${ip[$n]}}
        export SLUICE_METRICS_LISTEN=${ip[$n]}:$metrics_port
        exec unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$WORK/hosts" \
            "$SLUICE_BIN" run -c "$WORK/$name.ini"
    ) >>"$WORK/sluice-$name-$n.log" 2>&1 &
    SLUICE_PIDS[$name-$n]=$!
}

# running N — partitions member N runs (its /metrics); ready N — 0 when
# its /readyz answers 200.
running() {
    curl -s --max-time 2 "http://${ip[$1]}:$metrics_port/metrics" 2>/dev/null |
        awk -v s="sluice_partitions{pipeline=\"$PFX\",state=\"running\"}" '$1 == s { print $2 }'
}
ready() { [ "$(http_status "http://${ip[$1]}:$metrics_port/readyz")" = 200 ]; }
both_own() {
    local a b
    a=$(running 0)
    b=$(running 1)
    [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] && [ $((a + b)) -eq "$parts" ]
}

# check SCHEME — every timer asked of both members: 200 from both, the
# same owner and answer; both owners among the answers.
check() {
    python3 - "$1" "${ip[0]}" "${ip[1]}" "$api_port" "$ns" "$token" "$PFX" \
        "$WORK/secrets/sluice-api-tls/tls.crt" <<'PY'
import http.client, socket, ssl, sys
from apiforward import ask_both
scheme, ip0, ip1, port, ns, token, pfx, cert = sys.argv[1:]
port = int(port)
names = {ip0: f"sluice-0.sluice.{ns}.svc", ip1: f"sluice-1.sluice.{ns}.svc"}
ctx = ssl.create_default_context(cafile=cert)

class Conn(http.client.HTTPSConnection):
    """HTTPS to a pod's DNS name (SNI, certificate check) at its address."""
    def __init__(self, ip):
        super().__init__(names[ip], port, context=ctx, timeout=10)
        self.ip = ip
    def connect(self):
        self.sock = self._context.wrap_socket(
            socket.create_connection((self.ip, port), self.timeout), server_hostname=self.host)

def get(ip, path):
    c = Conn(ip) if scheme == "https" else http.client.HTTPConnection(ip, port, timeout=10)
    c.request("GET", path, headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    return r.status, r.getheader("X-Sluice-Answered-By"), r.read()

owners, _ = ask_both(get, ip0, ip1, pfx, timeout=60)
want = sorted(f"{n}:{port}" for n in names.values())
assert sorted(owners) == want, (owners, want)
print(f"# {scheme}: 20 timers answered alike by both members; owners",
      ", ".join(f"{k}: {len(v)}" for k, v in sorted(owners.items())))
PY
}

# phase NAME SCHEME COMPONENT... — both members with NAME's build; 20
# timers through sluice-0; check; both stopped.
phase() {
    local name=$1 scheme=$2 n i code
    shift 2
    render "$name" "$@" >"$WORK/ports-$name"
    read -r api_port metrics_port <"$WORK/ports-$name"
    [ -n "$metrics_port" ] || fail "no api and metrics ports in the $name build"
    parts=$(python3 -c 'import configparser,sys
c = configparser.ConfigParser(interpolation=None); c.read(sys.argv[1])
print(c["pipeline " + sys.argv[2]]["input_partitions"])' "$WORK/$name.ini" "$PFX")
    "$SLUICE_BIN" topics apply -c "$WORK/$name.ini" >"$WORK/apply-$name.out" 2>&1 ||
        { cat "$WORK/apply-$name.out" >&2; fail "topics apply failed"; }
    for n in 0 1; do start "$name" "$n"; done
    for n in 0 1; do
        _ready_n() { sluice_alive "$name-$n" || fail "sluice-$n ($name) exited"; ready "$n"; }
        wait_until 60 _ready_n || fail "sluice-$n ($name) not ready within 60 s"
    done
    wait_until 60 both_own || fail "the members do not share the $parts partitions ($(running 0) + $(running 1))"
    for n in 0 1; do
        log_has "$name-$n" "advertised as sluice-$n\.sluice\.$ns\.svc:$api_port" ||
            fail "sluice-$n ($name) does not advertise its pod's DNS name"
    done
    # Through sluice-0's name (curl resolves it to its address here); the
    # second phase finds the first one's timers (200).
    local curl_args=(--connect-to "sluice-0.sluice.$ns.svc:$api_port:${ip[0]}:$api_port")
    [ "$scheme" = http ] || curl_args+=(--cacert "$WORK/secrets/sluice-api-tls/tls.crt")
    api_put_timers "$scheme://sluice-0.sluice.$ns.svc:$api_port/v1/pipelines/$PFX/timers" \
        "$token" "$PFX.out" 20 "200 201" "${curl_args[@]}"
    check "$scheme" || fail "forwarding over $scheme with the settings of ops/ ($*) failed"
    for n in 0 1; do sluice_kill "$name-$n" TERM || fail "sluice-$n ($name) exited $? on SIGTERM"; done
}

topic_create "$PFX.out" 2
phase api http api
phase api-tls https api api-tls
grep -qF "$token" "$WORK"/sluice-*.log && fail "the token appears in a log"
grep -qF "$(cat "$WORK/secrets/sluice-api/peer-secret")" "$WORK"/sluice-*.log &&
    fail "the peer secret appears in a log"
echo "PASS"
