#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes ops/prometheus-operator/prometheusrule.yaml from ops/prometheus/alerts.yaml.

`make ops-rules` runs it; tests/ops/check_manifests.py fails when the two
differ.  Usage: gen-prometheusrule.py ALERTS OUT [RUNBOOK_URL]

With RUNBOOK_URL (the Makefile's setting: where docs/runbooks.md is
served), every `runbook_url:` line of ALERTS is first rewritten to
RUNBOOK_URL#<its anchor>, in place, comments and layout kept.
"""
import re
import sys

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s):
    style = "|" if "\n" in s else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)


_Dumper.add_representer(str, _str)

HEADER = """\
# Generated from ../prometheus/alerts.yaml by `make ops-rules`: edit that
# file, not this one (tests/integration/0031-ops-manifests.sh fails when the
# two differ).  Label it as your Prometheus's ruleSelector expects.
"""


def set_runbook_url(src, url):
    with open(src) as f:
        text = f.read()
    line = re.compile(r"^([ \t]*runbook_url:[ \t]*)\S*?#(\S+)[ \t]*$", re.M)
    if not line.search(text):
        sys.exit(f"{src}: no runbook_url lines")
    new = line.sub(lambda m: f"{m.group(1)}{url}#{m.group(2)}", text)
    if new != text:
        with open(src, "w") as f:
            f.write(new)


def main(src, out, url=None):
    if url:
        set_runbook_url(src, url)
    with open(src) as f:
        rules = yaml.safe_load(f)
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "sluice", "labels": {"app.kubernetes.io/name": "sluice"}},
        "spec": {"groups": rules["groups"]},
    }
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100)
    with open(out, "w") as f:
        f.write(HEADER + text)


if __name__ == "__main__":
    main(*sys.argv[1:4])
