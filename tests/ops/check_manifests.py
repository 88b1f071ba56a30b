#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Offline checks of the Kubernetes manifests in ops/ (0031-ops-manifests).

Run with the venv of tests/ops/requirements.txt (`make ops-tools`):

    check_manifests.py --root REPO [--kustomize BIN] [--sluice BIN] [--work DIR]

What it checks, and with what:

* every YAML file under ops/ passes yamllint (tests/ops/yamllint.yaml);
* every kustomization's references exist (resources, components, patches,
  configMapGenerator files), checked by hand, and every manifest under ops/
  is used by some kustomization (no forgotten file);
* each build (the base, example/, and the base with topics-job/) is rendered
  by kustomize (the real tool, `go install`ed by `make ops-tools`);
* every core object of every build is validated against the Kubernetes
  OpenAPI schemas shipped by kubernetes-validate, strict (unknown fields are
  errors), for the oldest and newest Kubernetes it knows;
* the custom resources (ScaledObject, TriggerAuthentication, PodMonitor,
  PrometheusRule) are validated against models generated from their CRD
  schemas (cloudcoil-models-keda, cloudcoil-models-prometheus-operator:
  required fields, types, enums), and a field the model does not know is an
  error, as in strict validation; KEDA trigger metadata is a free-form map
  in the CRD, so its keys are checked against the Kafka scaler's documented
  parameters here;
* what ties the objects together: selectors and labels, the Service of the
  StatefulSet, volumes and the ConfigMaps rendered, the PodMonitor's port,
  KEDA's target, consumer group (app_id), topics (the pipelines' inputs),
  bootstrap servers and replica bounds (<= the input partitions), one
  pinned image, the grace period against shutdown_grace;
* Pod Security "restricted" for every pod template;
* `sluice config check` accepts the rendered sluice.ini with the
  containers' SLUICE_* environment (Secret values replaced by a marker,
  $(VAR) references expanded as the kubelet does, each naming a variable
  listed before it), and neither it nor `sluice config dump` prints the
  password;
* the HTTP API, where a build serves it: api_listen's port is the
  container port "api"; the advertised address is the pod's stable DNS
  name <pod>.<serviceName>.<namespace>.svc with that port (the pod name
  and namespace from the downward API); the headless Service and a
  Service for clients carry the port; the tokens, the peer secret (without
  which no lookup is forwarded) and, with TLS, certificate and key are
  files of mounted Secrets, with the keys each Secret's
  secret.example.yaml shows;
* the PrometheusRule holds exactly ops/prometheus/alerts.yaml, every alert
  expression and every dashboard query parses as PromQL (promql-parser);
  every alert has a severity, critical or warning, a summary, and a
  runbook_url to docs/runbooks.md#<its name, lower-cased>, a section that
  exists, all with one prefix (with --runbook-url, the Makefile's
  RUNBOOK_URL: each is exactly RUNBOOK_URL#<name>); no rule or query filters on `job`; with --promtool, `promtool
  check rules` accepts the rule file;
* the dashboard is also in the ConfigMap of ops/grafana/ (for Grafana's
  sidecar, label grafana_dashboard: "1"), whose JSON is the dashboard
  file's, byte for byte.
"""
import argparse
import configparser
import copy
import glob
import json
import os
import re
import subprocess
import sys

import yaml

failures = []
ROOT = "."


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok   " + msg)


def note(msg):
    print("# " + msg)


# ----------------------------------------------------------------------
# YAML lint

def lint(root):
    from yamllint import config as ylconfig
    from yamllint import linter

    conf = ylconfig.YamlLintConfig(file=os.path.join(root, "tests/ops/yamllint.yaml"))
    files = sorted(glob.glob(os.path.join(root, "ops/**/*.yaml"), recursive=True))
    bad = 0
    for f in files:
        with open(f) as fh:
            for p in linter.run(fh, conf, f):
                fail(f"yamllint {os.path.relpath(f, root)}:{p.line}:{p.column}: {p.desc} ({p.rule})")
                bad += 1
    if not bad:
        ok(f"yamllint: {len(files)} files")
    return files


# ----------------------------------------------------------------------
# Kustomizations by hand: references exist, nothing is left out

def kustomization_refs(kdir):
    with open(os.path.join(kdir, "kustomization.yaml")) as f:
        k = yaml.safe_load(f)
    refs = []
    for key in ("resources", "components"):
        refs += [(key, r) for r in k.get(key) or []]
    for p in k.get("patches") or []:
        if "path" in p:
            refs.append(("patches", p["path"]))
    for g in (k.get("configMapGenerator") or []) + (k.get("secretGenerator") or []):
        for f in g.get("files") or []:
            refs.append(("configMapGenerator", f.split("=", 1)[-1]))
        for f in g.get("envs") or []:
            refs.append(("configMapGenerator", f))
    return k, refs


def check_references(root):
    kdirs = sorted(os.path.dirname(p) for p in
                   glob.glob(os.path.join(root, "ops/**/kustomization.yaml"), recursive=True))
    used = set()
    for kdir in kdirs:
        k, refs = kustomization_refs(kdir)
        rel = os.path.relpath(kdir, root)
        for key, ref in refs:
            path = os.path.normpath(os.path.join(kdir, ref))
            if not os.path.exists(path):
                fail(f"{rel}/kustomization.yaml: {key} names {ref}, which does not exist")
                continue
            if key == "components" or (key == "resources" and os.path.isdir(path)):
                if not os.path.exists(os.path.join(path, "kustomization.yaml")):
                    fail(f"{rel}/kustomization.yaml: {key} names {ref}, a directory without kustomization.yaml")
                elif key == "components":
                    with open(os.path.join(path, "kustomization.yaml")) as f:
                        if yaml.safe_load(f).get("kind") != "Component":
                            fail(f"{rel}/kustomization.yaml: {ref} is listed as a component but is no kind: Component")
            used.add(path)
    # Every manifest is used somewhere, except the documented exceptions.
    exempt = re.compile(r"(kustomization\.yaml|\.example\.yaml|^ops/prometheus/.*)$")
    for f in glob.glob(os.path.join(root, "ops/**/*.yaml"), recursive=True):
        rel = os.path.relpath(f, root)
        if not exempt.search(rel) and os.path.normpath(f) not in used:
            fail(f"{rel} is in no kustomization (a forgotten or misspelled reference?)")
    ok(f"kustomization references: {len(kdirs)} kustomizations, {len(used)} references")
    return kdirs


# ----------------------------------------------------------------------
# Rendering

BUILDS = {
    # name: (resources, components) relative to ops/, or a directory
    "base": "ops",
    "example": "ops/example",
    "topics-job": (["base"], ["kafka-sasl-tls", "topics-job"]),
    "api": (["base"], ["api"]),
}


def render(root, kustomize, work):
    out = {}
    for name, spec in BUILDS.items():
        if isinstance(spec, str):
            kdir = os.path.join(root, spec)
        else:
            kdir = os.path.join(work, "build-" + name)
            os.makedirs(kdir, exist_ok=True)
            rel = os.path.relpath(os.path.join(root, "ops"), kdir)
            with open(os.path.join(kdir, "kustomization.yaml"), "w") as f:
                yaml.safe_dump({
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": [f"{rel}/{r}" for r in spec[0]],
                    "components": [f"{rel}/{c}" for c in spec[1]],
                }, f)
        r = subprocess.run([kustomize, "build", kdir], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"kustomize build {name}: {r.stderr.strip()}")
            continue
        docs = [d for d in yaml.safe_load_all(r.stdout) if d]
        out[name] = docs
        ok(f"kustomize build {name}: " + ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs))
    return out


# ----------------------------------------------------------------------
# Schemas

CORE_GROUPS = ("v1", "apps/v1", "batch/v1", "policy/v1")


def validate_core(name, docs):
    import kubernetes_validate as kv
    from kubernetes_validate import utils as kvu

    versions = sorted(set(kvu.all_versions()), key=lambda v: tuple(int(x) for x in v.split(".")))
    want = [versions[0], versions[-1]]
    n = 0
    for d in docs:
        if d["apiVersion"] not in CORE_GROUPS:
            continue
        for v in want:
            try:
                kv.validate(d, v, strict=True)
            except Exception as e:  # ValidationError, SchemaNotFoundError
                first = str(e).splitlines()[0]
                fail(f"{name}: {d['kind']}/{d['metadata']['name']} against Kubernetes {v}: {first}")
        n += 1
    ok(f"{name}: {n} core objects valid (strict) against Kubernetes {want[0]} and {want[1]}")


def _unknown_fields(given, dumped, path=""):
    """Keys in the manifest that the model dropped: fields its schema lacks."""
    out = []
    if isinstance(given, dict) and isinstance(dumped, dict):
        for k, v in given.items():
            if k not in dumped:
                out.append(f"{path}.{k}".lstrip("."))
            else:
                out += _unknown_fields(v, dumped[k], f"{path}.{k}")
    elif isinstance(given, list) and isinstance(dumped, list):
        for i, (a, b) in enumerate(zip(given, dumped)):
            out += _unknown_fields(a, b, f"{path}[{i}]")
    return out


# The Kafka scaler's trigger parameters (keda.sh/docs/2.16/scalers/apache-kafka).
KEDA_KAFKA_METADATA = {
    "bootstrapServers", "consumerGroup", "topic", "lagThreshold", "activationLagThreshold",
    "offsetResetPolicy", "allowIdleConsumers", "scaleToZeroOnInvalidOffset",
    "excludePersistentLag", "limitToPartitionsWithLag", "version", "partitionLimitation",
    "sasl", "tls", "unsafeSsl", "saslTokenProvider", "awsRegion", "awsEndpoint",
    "ensureEvenDistributionOfPartitions",
}
KEDA_KAFKA_AUTH = {"sasl", "username", "password", "tls", "ca", "cert", "key", "keyPassword",
                   "unsafeSsl", "oauthTokenEndpointUri", "scopes", "oauthExtensions"}


def validate_crds(name, docs):
    from cloudcoil.models.keda import v1alpha1 as keda
    from cloudcoil.models.prometheus_operator import v1 as pmon

    models = {
        ("keda.sh/v1alpha1", "ScaledObject"): keda.ScaledObject,
        ("keda.sh/v1alpha1", "TriggerAuthentication"): keda.TriggerAuthentication,
        ("monitoring.coreos.com/v1", "PodMonitor"): pmon.PodMonitor,
        ("monitoring.coreos.com/v1", "PrometheusRule"): pmon.PrometheusRule,
    }
    n = 0
    for d in docs:
        if d["apiVersion"] in CORE_GROUPS:
            continue
        what = f"{name}: {d['kind']}/{d['metadata']['name']}"
        model = models.get((d["apiVersion"], d["kind"]))
        if not model:
            fail(f"{what}: no schema for {d['apiVersion']} {d['kind']}")
            continue
        try:
            m = model.model_validate(copy.deepcopy(d))
        except Exception as e:
            fail(f"{what}: {e}")
            continue
        dumped = m.model_dump(by_alias=True, exclude_unset=True, mode="json")
        for f in _unknown_fields(d, dumped):
            fail(f"{what}: unknown field {f}")
        if d["kind"] == "ScaledObject":
            for i, t in enumerate(d["spec"]["triggers"]):
                for k in set(t.get("metadata", {})) - KEDA_KAFKA_METADATA:
                    fail(f"{what}: triggers[{i}].metadata.{k} is not a Kafka scaler parameter")
        if d["kind"] == "TriggerAuthentication":
            for r in d["spec"].get("secretTargetRef", []):
                if r["parameter"] not in KEDA_KAFKA_AUTH:
                    fail(f"{what}: secretTargetRef parameter {r['parameter']} is not a Kafka scaler one")
        n += 1
    if n:
        ok(f"{name}: {n} custom resources valid against their CRD models")


# ----------------------------------------------------------------------
# What ties the objects together

def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def pod_templates(docs):
    for d in docs:
        if d["kind"] in ("StatefulSet", "Deployment", "Job", "DaemonSet"):
            yield d, d["spec"]["template"]


def containers(spec):
    return [("init", c) for c in spec.get("initContainers", [])] + \
           [("", c) for c in spec.get("containers", [])]


def sluice_ini(docs):
    cms = [c for c in by_kind(docs, "ConfigMap") if "sluice.ini" in c.get("data", {})]
    if len(cms) != 1:
        fail(f"expected one ConfigMap with sluice.ini, found {len(cms)}")
        return None, None
    cp = configparser.ConfigParser(interpolation=None, strict=False, inline_comment_prefixes=None)
    cp.optionxform = str
    cp.read_string(cms[0]["data"]["sluice.ini"])
    return cms[0], cp


def check_links(name, docs, sluice_bin):
    what = name
    sts = by_kind(docs, "StatefulSet")
    if len(sts) != 1:
        fail(f"{what}: expected one StatefulSet, found {len(sts)}")
        return
    st = sts[0]
    pod_labels = st["spec"]["template"]["metadata"]["labels"]
    if not matches(st["spec"]["selector"]["matchLabels"], pod_labels):
        fail(f"{what}: StatefulSet selector does not match its pod labels")
    svc = [s for s in by_kind(docs, "Service") if s["metadata"]["name"] == st["spec"]["serviceName"]]
    if not svc:
        fail(f"{what}: StatefulSet serviceName {st['spec']['serviceName']} names no Service")
    for s in svc:
        if not matches(s["spec"]["selector"], pod_labels):
            fail(f"{what}: Service {s['metadata']['name']} selects no sluice pod")
        if s["spec"].get("clusterIP") != "None" or not s["spec"].get("publishNotReadyAddresses"):
            fail(f"{what}: Service {s['metadata']['name']} must be headless with publishNotReadyAddresses")
    for p in by_kind(docs, "PodDisruptionBudget"):
        if not matches(p["spec"]["selector"]["matchLabels"], pod_labels):
            fail(f"{what}: PodDisruptionBudget {p['metadata']['name']} selects no sluice pod")
    spec = st["spec"]["template"]["spec"]
    ports = {p["name"] for _, c in containers(spec) for p in c.get("ports", [])}
    for pm in by_kind(docs, "PodMonitor"):
        if not matches(pm["spec"]["selector"]["matchLabels"], pod_labels):
            fail(f"{what}: PodMonitor selects no sluice pod")
        for ep in pm["spec"]["podMetricsEndpoints"]:
            if ep.get("port") not in ports:
                fail(f"{what}: PodMonitor port {ep.get('port')} is no container port ({sorted(ports)})")
    ann = st["spec"]["template"]["metadata"].get("annotations", {})
    metrics_port = [p["containerPort"] for _, c in containers(spec) for p in c.get("ports", [])
                    if p["name"] == "metrics"]
    if ann.get("prometheus.io/port") != str(metrics_port[0] if metrics_port else None):
        fail(f"{what}: prometheus.io/port {ann.get('prometheus.io/port')} is not the metrics port")

    # Volumes name what the build renders (ConfigMaps) or the documented
    # Secrets (secret.example.yaml), with the keys those have.
    cm_names = {c["metadata"]["name"] for c in by_kind(docs, "ConfigMap")}
    secrets = example_secrets()
    secret_names = set(secrets)
    images = set()
    for obj, tpl in pod_templates(docs):
        ps = tpl["spec"]
        vols = {v["name"]: v for v in ps.get("volumes", [])}
        for v in vols.values():
            if "configMap" in v and v["configMap"]["name"] not in cm_names:
                fail(f"{what}: {obj['kind']} volume {v['name']} names ConfigMap {v['configMap']['name']}, "
                     f"not in the build ({sorted(cm_names)})")
            if "secret" in v and v["secret"]["secretName"] not in secret_names:
                fail(f"{what}: {obj['kind']} volume {v['name']} names an unknown Secret")
            elif "secret" in v:
                for it in v["secret"].get("items", []):
                    if it["key"] not in secrets[v["secret"]["secretName"]]:
                        fail(f"{what}: {obj['kind']} volume {v['name']}: Secret "
                             f"{v['secret']['secretName']} has no key {it['key']} (secret.example.yaml)")
        for kind, c in containers(ps):
            cname = f"{obj['kind']} {kind}container {c['name']}"
            if not c.get("image"):
                fail(f"{what}: {cname} has no image")
                continue
            images.add(c["image"])
            for m in c.get("volumeMounts", []):
                if m["name"] not in vols:
                    fail(f"{what}: {cname} mounts {m['name']}, which is no volume")
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref and ref["name"] not in secret_names:
                    fail(f"{what}: {cname} env {e['name']} reads an unknown Secret {ref['name']}")
                elif ref and ref["key"] not in secrets[ref["name"]]:
                    fail(f"{what}: {cname} env {e['name']}: Secret {ref['name']} has no key {ref['key']}")
            args = c.get("args", [])
            if "-c" in args:
                conf = args[args.index("-c") + 1]
                mounted = [m for m in c.get("volumeMounts", [])
                           if conf.startswith(m["mountPath"].rstrip("/") + "/")
                           and "configMap" in vols.get(m["name"], {})]
                if not mounted:
                    fail(f"{what}: {cname} reads {conf}, which no ConfigMap volume mounts")
    for img in images:
        if ":" not in img.split("/")[-1] and "@" not in img or img.endswith(":latest"):
            fail(f"{what}: image {img} is not pinned (a tag other than latest, or a digest)")
    if len(images) > 1:
        fail(f"{what}: containers run different images: {sorted(images)}")

    cm, ini = sluice_ini(docs)
    if ini is None:
        return
    app_id = ini.get("sluice", "app_id", fallback="sluice")
    bootstrap = ini.get("kafka", "bootstrap.servers", fallback=None)
    grace = ini.get("sluice", "shutdown_grace", fallback="30s")
    m = re.fullmatch(r"(\d+)s", grace)
    tgp = spec.get("terminationGracePeriodSeconds", 30)
    if not m or int(m.group(1)) >= tgp:
        fail(f"{what}: shutdown_grace {grace} must be below terminationGracePeriodSeconds {tgp}")
    pipelines = {s.split(None, 1)[1]: ini[s] for s in ini.sections() if s.startswith("pipeline ")}
    inputs = {p["input"]: int(p.get("input_partitions", "0")) for p in pipelines.values()}
    for pl, p in pipelines.items():
        if int(p.get("input_partitions", "0")) <= 0:
            fail(f"{what}: pipeline {pl} sets no input_partitions: the init container could not create its input")
    env_bootstrap = [e.get("value") for _, c in containers(spec) for e in c.get("env", [])
                     if e["name"] == "SLUICE_KAFKA_BOOTSTRAP_SERVERS" and c["name"] == "sluice"]
    if env_bootstrap:
        bootstrap = env_bootstrap[0]
    for so in by_kind(docs, "ScaledObject"):
        ref = so["spec"]["scaleTargetRef"]
        if (ref.get("kind"), ref["name"]) != ("StatefulSet", st["metadata"]["name"]):
            fail(f"{what}: ScaledObject targets {ref.get('kind')}/{ref['name']}, not the StatefulSet")
        if "replicas" in st["spec"]:
            fail(f"{what}: StatefulSet sets replicas although KEDA owns the count")
        lo, hi = so["spec"].get("minReplicaCount", 0), so["spec"].get("maxReplicaCount", 100)
        if lo < 1:
            fail(f"{what}: ScaledObject minReplicaCount {lo}: at 0 no timer fires and no backlog drains")
        if inputs and hi > max(inputs.values()):
            fail(f"{what}: ScaledObject maxReplicaCount {hi} exceeds the input partitions "
                 f"({max(inputs.values())}): the extra members would idle")
        topics = set()
        for t in so["spec"]["triggers"]:
            md = t["metadata"]
            topics.add(md.get("topic"))
            if t["type"] != "kafka":
                continue
            if md.get("consumerGroup") != app_id:
                fail(f"{what}: ScaledObject consumerGroup {md.get('consumerGroup')} is not app_id {app_id}")
            if md.get("bootstrapServers") != bootstrap:
                fail(f"{what}: ScaledObject bootstrapServers {md.get('bootstrapServers')} "
                     f"is not sluice's {bootstrap}")
            if md.get("offsetResetPolicy") != "earliest":
                fail(f"{what}: ScaledObject offsetResetPolicy must be earliest (sluice reads from the start)")
            if "authenticationRef" in t:
                names = {a["metadata"]["name"] for a in by_kind(docs, "TriggerAuthentication")}
                if t["authenticationRef"]["name"] not in names:
                    fail(f"{what}: ScaledObject authenticationRef names no TriggerAuthentication")
        if topics != set(inputs):
            fail(f"{what}: ScaledObject triggers watch {sorted(t or '' for t in topics)}, "
                 f"the pipelines read {sorted(inputs)}")
    check_api(what, docs, st, ini)
    if sluice_bin:
        config_check(what, cm, spec, sluice_bin)


MARKER = "S3cret-marker-0031"
# The downward API's fields, as for the first pod of the StatefulSet in
# namespace NAMESPACE.
POD_FIELDS = {"metadata.name": "sluice-0", "metadata.namespace": "sluice-ns"}
VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def example_secrets():
    """{Secret name: its keys} from every ops/**/secret.example.yaml; the
    admin principal of topics-job/ has the keys of sluice-kafka."""
    out = {}
    for f in glob.glob(os.path.join(ROOT, "ops/**/secret.example.yaml"), recursive=True):
        with open(f) as fh:
            d = yaml.safe_load(fh)
        out[d["metadata"]["name"]] = set(d.get("stringData") or {}) | set(d.get("data") or {})
    out["sluice-kafka-admin"] = out.get("sluice-kafka", set())
    return out


def container_env(c, report=None):
    """The container's environment as the kubelet gives it: downward API
    fields from POD_FIELDS, a Secret's value as MARKER when its name says
    it is one (a user name may be printed), $(VAR) expanded from the
    variables listed before it and left as it is otherwise (the kubelet's
    rule; reported when report names the container)."""
    env = {}
    for e in c.get("env", []):
        vf = e.get("valueFrom", {})
        if "value" in e:
            def sub(m, name=e["name"]):
                if m.group(0) == "$$":
                    return "$"
                if m.group(1) in env:
                    return env[m.group(1)]
                if report:
                    fail(f"{report} env {name} names $({m.group(1)}), which no variable before "
                         "it sets: the kubelet leaves it as it is")
                return m.group(0)
            env[e["name"]] = VAR_REF.sub(sub, e["value"])
        elif "secretKeyRef" in vf:
            secret = re.search(r"PASSWORD|SECRET|TOKENS|_KEY$", e["name"])
            env[e["name"]] = MARKER if secret else "from-a-secret"
        elif "fieldRef" in vf:
            env[e["name"]] = POD_FIELDS.get(vf["fieldRef"]["fieldPath"], "x")
    return env


def check_api(what, docs, st, ini):
    """The HTTP API of the sluice container, when it has one: port,
    advertised address, Services, and its secrets from mounted Secrets."""
    spec = st["spec"]["template"]["spec"]
    c = next((c for c in spec["containers"] if c["name"] == "sluice"), None)
    if c is None:
        fail(f"{what}: no container named sluice")
        return
    cname = f"{what}: container sluice"
    env = container_env(c, report=cname)

    def key(k):
        return env.get("SLUICE_" + k.upper(), ini.get("sluice", k, fallback=""))

    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    listen = key("api_listen")
    if not listen:
        if "api" in ports:
            fail(f"{cname} has a port api but sets no api_listen")
        return
    m = re.fullmatch(r"\[?([^\]]*)\]?:(\d+)", listen)
    if not m:
        fail(f"{cname}: api_listen {listen} is not HOST:PORT")
        return
    port = int(m.group(2))
    if ports.get("api") != port:
        fail(f"{cname}: api_listen {listen}, but its container port api is {ports.get('api')}")
    if m.group(1) not in ("0.0.0.0", "::"):
        fail(f"{cname}: api_listen {listen}: listen on every address of the pod (0.0.0.0)")
    svc_name = st["spec"]["serviceName"]
    want = f"{POD_FIELDS['metadata.name']}.{svc_name}.{POD_FIELDS['metadata.namespace']}.svc:{port}"
    adv = key("api_advertise")
    if adv != want:
        fail(f"{cname}: the API is advertised as {adv or '(the host name, sluice-0)'}, want the pod's "
             f"stable DNS name {want}: the other members forward lookups there")

    pod_labels = st["spec"]["template"]["metadata"]["labels"]

    def api_port(svc):
        return [p for p in svc["spec"].get("ports", []) if p.get("targetPort") in ("api", port)]

    svcs = by_kind(docs, "Service")
    for svc in svcs:
        if svc["metadata"]["name"] == svc_name and not api_port(svc):
            fail(f"{what}: headless Service {svc_name} has no port for the API")
    clients = [svc for svc in svcs if svc["spec"].get("clusterIP") != "None"
               and matches(svc["spec"].get("selector"), pod_labels) and api_port(svc)]
    if not clients:
        fail(f"{what}: no Service (with a cluster IP) offers the API to clients")

    vols = {v["name"]: v for v in spec.get("volumes", [])}

    def from_secret(k):
        """Whether the file key k names is an item of a mounted Secret."""
        path = key(k)
        for mnt in c.get("volumeMounts", []):
            vol = vols.get(mnt["name"], {})
            prefix = mnt["mountPath"].rstrip("/") + "/"
            if "secret" not in vol or not path.startswith(prefix):
                continue
            rel = path[len(prefix):]
            items = vol["secret"].get("items")
            if items and rel not in [i["path"] for i in items]:
                fail(f"{cname}: {k} {path}: Secret volume {mnt['name']} has no item {rel}")
            return True
        fail(f"{cname}: {k} {path or '(unset)'} is no file of a mounted Secret")
        return False

    def secret_env(name):
        e = next((e for e in c.get("env", []) if e["name"] == name), None)
        return bool(e and "secretKeyRef" in e.get("valueFrom", {}))

    if key("api_tokens_file"):
        from_secret("api_tokens_file")
    elif not secret_env("SLUICE_API_TOKENS"):
        fail(f"{cname}: no API tokens (api_tokens_file from a Secret, or SLUICE_API_TOKENS)")
    if ini.get("sluice", "api_peer_secret", fallback=""):
        fail(f"{what}: api_peer_secret is in sluice.ini, a ConfigMap: take it from a Secret")
    if key("api_peer_secret_file"):
        from_secret("api_peer_secret_file")
    elif not secret_env("SLUICE_API_PEER_SECRET"):
        fail(f"{cname}: no api_peer_secret: a lookup another member owns would be answered 421")
    tls = bool(key("api_tls_cert"))
    if tls:
        from_secret("api_tls_cert")
        from_secret("api_tls_key")
    ok(f"{what}: API on port {port} advertised as {want}, Services "
       f"{svc_name} and {', '.join(s['metadata']['name'] for s in clients)}, secrets from Secrets"
       + (", HTTPS" if tls else ""))


def config_check(what, cm, spec, sluice_bin):
    """sluice config check with every container's SLUICE_* environment."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sluice.ini")
        with open(path, "w") as f:
            f.write(cm["data"]["sluice.ini"])
        for kind, c in containers(spec):
            env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
            env.update(container_env(c))
            r = subprocess.run([sluice_bin, "config", "check", "-c", path], env=env,
                               capture_output=True, text=True)
            out = r.stdout + r.stderr
            if r.returncode != 0:
                fail(f"{what}: sluice config check with {kind}container {c['name']}'s environment: {out.strip()}")
            if MARKER in out:
                fail(f"{what}: sluice config check printed a Secret's value")
            dump = subprocess.run([sluice_bin, "config", "dump", "-c", path], env=env,
                                  capture_output=True, text=True)
            if MARKER in dump.stdout + dump.stderr:
                fail(f"{what}: sluice config dump printed a Secret's value")
        ok(f"{what}: sluice config check accepts sluice.ini with each container's environment")


# ----------------------------------------------------------------------
# Pod Security Standards, "restricted" profile (kubernetes.io/docs/concepts/
# security/pod-security-standards/), for every pod template.

PSS_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
               "projected", "secret"}


def check_pss(name, docs):
    n = 0
    for obj, tpl in pod_templates(docs):
        ps = tpl["spec"]
        psc = ps.get("securityContext", {})
        w = f"{name}: {obj['kind']}/{obj['metadata']['name']}"
        for k in ("hostNetwork", "hostPID", "hostIPC"):
            if ps.get(k):
                fail(f"{w}: {k}")
        for v in ps.get("volumes", []):
            kinds = set(v) - {"name"}
            if not kinds <= PSS_VOLUMES:
                fail(f"{w}: volume {v['name']} of a kind restricted forbids: {kinds}")
        for kind, c in containers(ps):
            csc = c.get("securityContext", {})
            cn = f"{w} {kind}container {c['name']}"

            def eff(key):
                return csc.get(key, psc.get(key))

            if csc.get("privileged"):
                fail(f"{cn}: privileged")
            if csc.get("allowPrivilegeEscalation") is not False:
                fail(f"{cn}: allowPrivilegeEscalation must be false")
            if eff("runAsNonRoot") is not True:
                fail(f"{cn}: runAsNonRoot must be true")
            if eff("runAsUser") == 0:
                fail(f"{cn}: runAsUser 0")
            sp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
            if sp not in ("RuntimeDefault", "Localhost"):
                fail(f"{cn}: seccompProfile must be RuntimeDefault or Localhost, is {sp}")
            caps = csc.get("capabilities", {})
            if "ALL" not in caps.get("drop", []):
                fail(f"{cn}: capabilities must drop ALL")
            if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
                fail(f"{cn}: adds capabilities {caps['add']}")
            if csc.get("readOnlyRootFilesystem") is not True:
                fail(f"{cn}: readOnlyRootFilesystem must be true (sluice writes nothing to disk)")
            if any(p.get("hostPort") for p in c.get("ports", [])):
                fail(f"{cn}: hostPort")
            n += 1
    ok(f"{name}: {n} containers meet Pod Security restricted")


# ----------------------------------------------------------------------
# Alert rules and dashboard

GRAFANA_VARS = [(re.compile(r"\$__rate_interval|\$__interval|\$__range"), "5m"),
                (re.compile(r"\$\{?[A-Za-z_]+\}?"), "x")]


def promql_exprs(root):
    """(where, expr) for every alert rule and dashboard query."""
    out = []
    with open(os.path.join(root, "ops/prometheus/alerts.yaml")) as f:
        rules = yaml.safe_load(f)
    for g in rules["groups"]:
        for r in g["rules"]:
            out.append((f"alert {r.get('alert') or r.get('record')}", r["expr"]))
    for path in sorted(glob.glob(os.path.join(root, "ops/grafana/*.json"))):
        with open(path) as f:
            dash = json.load(f)

        def walk(panels):
            for p in panels:
                for t in p.get("targets", []):
                    if t.get("expr"):
                        out.append((f"{os.path.basename(path)} panel '{p.get('title')}' {t.get('refId')}",
                                    t["expr"]))
                walk(p.get("panels", []))
        walk(dash.get("panels", []))
        for v in dash.get("templating", {}).get("list", []):
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", q or "")
            if m:
                out.append((f"{os.path.basename(path)} variable {v['name']}", m.group(1)))
    return out


def grafana_subst(expr):
    for rx, val in GRAFANA_VARS:
        expr = rx.sub(val, expr)
    return expr


def md_anchors(path):
    """The anchors GitHub gives the headings of a Markdown file."""
    out = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"#+\s+(.*?)\s*$", line)
            if m:
                out.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return out


RUNBOOK = "docs/runbooks.md"


def check_rules(root, promtool=None, runbook_url=None):
    import promql_parser

    with open(os.path.join(root, "ops/prometheus/alerts.yaml")) as f:
        rules = yaml.safe_load(f)
    with open(os.path.join(root, "ops/prometheus-operator/prometheusrule.yaml")) as f:
        pr = yaml.safe_load(f)
    if pr["spec"]["groups"] != rules["groups"]:
        fail("ops/prometheus-operator/prometheusrule.yaml differs from ops/prometheus/alerts.yaml "
             "(run `make ops-rules`)")
    names, bases = set(), set()
    anchors = md_anchors(os.path.join(root, RUNBOOK)) if os.path.exists(os.path.join(root, RUNBOOK)) else set()
    for g in rules["groups"]:
        for r in g["rules"]:
            a = r.get("alert")
            if a in names:
                fail(f"alert {a} defined twice")
            names.add(a)
            if r.get("labels", {}).get("severity") not in ("critical", "warning"):
                fail(f"alert {a}: severity {r.get('labels', {}).get('severity')}, want critical or warning")
            if not r.get("annotations", {}).get("summary"):
                fail(f"alert {a}: no summary annotation")
            url = r.get("annotations", {}).get("runbook_url", "")
            want = f"{RUNBOOK}#{a.lower()}"
            bases.add(url.partition("#")[0])
            if not url.endswith("/" + want):
                fail(f"alert {a}: runbook_url {url or '(none)'} does not end in /{want}")
            elif runbook_url and url != f"{runbook_url}#{a.lower()}":
                fail(f"alert {a}: runbook_url {url} is not RUNBOOK_URL#{a.lower()} "
                     f"(RUNBOOK_URL {runbook_url}: run `make ops-rules`)")
            elif a.lower() not in anchors:
                fail(f"alert {a}: {RUNBOOK} has no section #{a.lower()}")
    n = 0
    for where, expr in promql_exprs(root):
        if re.search(r"\bjob\s*(=|!=|=~|!~)", expr):
            fail(f"{where}: filters on job, whose value depends on how the pods are scraped: {expr}")
        try:
            promql_parser.parse(grafana_subst(expr))
            n += 1
        except Exception as e:
            fail(f"{where}: PromQL does not parse: {e}: {expr}")
    if len(bases) > 1:
        fail(f"the alerts' runbook_url have {len(bases)} prefixes, not one: {sorted(bases)} (run `make ops-rules`)")
    ok(f"alert rules: {len(names)} alerts with severity and runbook "
       f"({runbook_url or 'one prefix'}), PrometheusRule in step; {n} PromQL expressions parse")
    if promtool:
        r = subprocess.run([promtool, "check", "rules", os.path.join(root, "ops/prometheus/alerts.yaml")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"promtool check rules: {(r.stdout + r.stderr).strip()}")
        else:
            ok("promtool check rules: " + r.stdout.strip().splitlines()[-1].strip())
    else:
        note("promtool not given: the rule file is checked by the parser above only")


def check_dashboard_configmap(root):
    """ops/grafana/dashboard-configmap.yaml: the sidecar's label, and the
    dashboard file's JSON, byte for byte."""
    path = os.path.join(root, "ops/grafana/dashboard-configmap.yaml")
    with open(path) as f:
        cm = yaml.safe_load(f)
    labels = cm.get("metadata", {}).get("labels", {})
    if cm.get("kind") != "ConfigMap" or labels.get("grafana_dashboard") != "1":
        fail("ops/grafana/dashboard-configmap.yaml: want a ConfigMap labelled grafana_dashboard: \"1\"")
    n = 0
    for dash in sorted(glob.glob(os.path.join(root, "ops/grafana/*.json"))):
        name = os.path.basename(dash)
        with open(dash) as f:
            want = f.read()
        if cm.get("data", {}).get(name) != want:
            fail(f"ops/grafana/dashboard-configmap.yaml: {name} differs from ops/grafana/{name} "
                 "(run `make ops-rules`)")
        n += 1
    extra = set(cm.get("data", {})) - {os.path.basename(d) for d in glob.glob(os.path.join(root, "ops/grafana/*.json"))}
    if extra:
        fail(f"ops/grafana/dashboard-configmap.yaml holds {sorted(extra)}, which ops/grafana/ does not")
    ok(f"dashboard ConfigMap: {n} dashboard(s) as in ops/grafana/, label grafana_dashboard")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--kustomize")
    ap.add_argument("--sluice")
    ap.add_argument("--work", default="/tmp")
    ap.add_argument("--promtool")
    ap.add_argument("--runbook-url", help="the Makefile's RUNBOOK_URL: every runbook_url is it + #alert")
    a = ap.parse_args()
    global ROOT
    root = ROOT = os.path.abspath(a.root)

    lint(root)
    check_references(root)
    check_rules(root, a.promtool, a.runbook_url)
    check_dashboard_configmap(root)
    if a.kustomize:
        builds = render(root, a.kustomize, a.work)
        for name, docs in builds.items():
            validate_core(name, docs)
            validate_crds(name, docs)
            check_links(name, docs, a.sluice)
            check_pss(name, docs)
    else:
        note("kustomize not available: builds not rendered (references checked by hand only)")
    print(f"{len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
