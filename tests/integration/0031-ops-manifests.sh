#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0031-ops-manifests — the Kubernetes manifests in ops/, checked offline:
# yamllint, every kustomization's references by hand, each build rendered by
# kustomize, core objects against the Kubernetes schemas (strict), the
# KEDA and Prometheus Operator resources against models of their CRDs, the
# links between objects (selectors, names, KEDA's group, topics and bounds
# against sluice.ini), Pod Security "restricted", `sluice config check` of
# the rendered config with the containers' environment, the HTTP API's
# port, advertised name and Secrets, the alert rules (severity, runbook
# section at the Makefile's RUNBOOK_URL, promtool check rules) and
# dashboard queries as PromQL, the dashboard's ConfigMap against the
# dashboard.  tests/ops/check_manifests.py says each check; `make
# ops-check` runs it without a broker.
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/build/ops-venv
kustomize=$root/build/ops-tools/kustomize
promtool=$root/build/ops-tools/promtool
t0=$(date +%s%N)
if [ ! -e "$venv/ok" ] || { [ ! -x "$kustomize" ] && command -v go >/dev/null; } ||
    { [ ! -x "$promtool" ] && command -v apt-get >/dev/null; }; then
    ops_tools_locked >"$WORK/ops-tools.log" 2>&1 ||
        { cat "$WORK/ops-tools.log" >&2; fail "make ops-tools failed"; }
    note "make ops-tools: $((($(date +%s%N) - t0) / 1000000)) ms"
fi
# Every runbook_url is the Makefile's RUNBOOK_URL#<alert> (make ops-rules).
runbook_url=$(cd "$root" && make -s --no-print-directory -f - print-runbook-url <<'MK'
include Makefile
print-runbook-url: ; @echo '$(RUNBOOK_URL)'
MK
)
[ -n "$runbook_url" ] || fail "cannot read RUNBOOK_URL from the Makefile"
args=(--root "$root" --sluice "$SLUICE_BIN" --work "$WORK" --runbook-url "$runbook_url")
if [ -x "$kustomize" ]; then
    args+=(--kustomize "$kustomize")
elif command -v go >/dev/null; then
    fail "kustomize was not built although Go is here"
else
    note "no Go toolchain: the kustomize builds are not rendered (references checked by hand)"
fi
# promtool checks the rule file too: make ops-tools takes it out of
# Debian's prometheus package (cached in build/ops-tools), else one on PATH.
if [ -x "$promtool" ]; then
    args+=(--promtool "$promtool")
elif command -v apt-get >/dev/null; then
    fail "make ops-tools did not fetch promtool although apt-get is here: $(tail -3 "$root/build/ops-tools/promtool.log" 2>/dev/null)"
elif command -v promtool >/dev/null; then
    args+=(--promtool "$(command -v promtool)")
else
    note "no apt-get and no promtool: the alert rules are checked with promql-parser only"
fi
t1=$(date +%s%N)
"$venv/bin/python" "$root/tests/ops/check_manifests.py" "${args[@]}" ||
    fail "the manifests in ops/ have problems (above)"
note "ops/ checks: $((($(date +%s%N) - t1) / 1000000)) ms"
echo PASS
