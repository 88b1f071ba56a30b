#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes ops/grafana/dashboard-configmap.yaml from ops/grafana/sluice.json.

The ConfigMap carries the dashboard file byte for byte, for Grafana's
dashboard sidecar (label grafana_dashboard: "1").  `make ops-rules` runs
it; tests/ops/check_manifests.py fails when the two differ.  Usage:
gen-dashboard-configmap.py DASHBOARD OUT
"""
import os
import sys

HEADER = """\
# Generated from sluice.json by `make ops-rules`: edit that file, not this
# one (tests/integration/0031-ops-manifests.sh fails when the two differ).
# The dashboard for Grafana's dashboard sidecar, which loads every
# ConfigMap labelled grafana_dashboard: "1" in the namespaces it searches
# (the Grafana Helm chart: sidecar.dashboards.searchNamespace; set it to
# ALL, or to this one).  The JSON's lines are as long as they are.
# yamllint disable rule:line-length
"""


def main(src, out):
    with open(src) as f:
        text = f.read()
    if not text.endswith("\n") or text.endswith("\n\n"):
        sys.exit(f"{src}: must end in exactly one newline (a YAML block keeps one)")
    body = "".join("    " + line if line.strip() else line for line in text.splitlines(True))
    with open(out, "w") as f:
        f.write(HEADER)
        f.write("apiVersion: v1\n"
                "kind: ConfigMap\n"
                "metadata:\n"
                "  name: sluice-dashboard\n"
                "  labels:\n"
                "    app.kubernetes.io/name: sluice\n"
                "    grafana_dashboard: \"1\"\n"
                "data:\n"
                f"  {os.path.basename(src)}: |\n")
        f.write(body)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
