#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every sluice metric the dashboard and the alert rules name exists (0032).

    metric_names.py --root REPO METRICS_FILE

METRICS_FILE is a /metrics page of a running sluice.  Each PromQL
expression of ops/prometheus/alerts.yaml and ops/grafana/*.json (Grafana
variables replaced by placeholders) is parsed with promql-parser; for every
selector of a sluice_* metric:

* the metric exists: a family with at least one series, or, for a name
  ending in _bucket, _sum or _count, a histogram (or summary) family whose
  series of that name exist;
* each label it matches on exists on the metric's series, and a value it
  matches with = (or a plain a|b|c regex) is one the page shows;
* each label an aggregation groups by exists on some metric under it.

Labels the scrape adds (namespace, pod, job, instance, le for buckets) are
taken as given.  As a cross-check, every identifier sluice_[a-z_]+ in the
raw text must be one of the names the parser found, so a name in a place
the parser walk does not reach is not missed.
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

import promql_parser as pp
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from check_manifests import grafana_subst, promql_exprs  # noqa: E402

TARGET_LABELS = {"namespace", "pod", "job", "instance", "container", "service", "endpoint"}
SUFFIXES = ("_bucket", "_sum", "_count")


def read_metrics(path):
    types = {}
    series = collections.defaultdict(list)  # name -> [labels dict]
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? \S+')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    with open(path) as f:
        for line in f:
            if line.startswith("# TYPE "):
                _, _, name, typ = line.split()[:4]
                types[name] = typ
            elif line.strip() and not line.startswith("#"):
                m = line_re.match(line)
                if m:
                    series[m.group(1)].append(dict(label_re.findall(m.group(3) or "")))
    return types, series


def resolve(name, types, series):
    """Why NAME is not on the page, or None when it is."""
    if name in types:
        if types[name] in ("histogram", "summary"):
            return f"{name} is a {types[name]}: name its _bucket, _sum or _count series"
        return None if series.get(name) else f"{name} has a TYPE line but no series"
    for s in SUFFIXES:
        if name.endswith(s):
            base = name[: -len(s)]
            if types.get(base) in ("histogram", "summary") and series.get(name):
                return None
            if base in types:
                return f"{base} is a {types[base]}, not a histogram"
    return f"{name} is not in /metrics"


def selectors(expr):
    """(metric name, matchers) of every selector, and (by-labels, names under it) per aggregation."""
    sels, aggs = [], []

    def names_under(node):
        out = []
        pp.walk(node, lambda n: out.append(vs_name(n)) if isinstance(n, pp.VectorSelector) else None)
        return [n for n in out if n]

    def visit(n):
        if isinstance(n, pp.VectorSelector):
            sels.append((vs_name(n), [(m.name, m.op, m.value) for m in n.matchers.matchers
                                      if m.name != "__name__"]))
        elif isinstance(n, pp.AggregateExpr) and n.modifier and \
                n.modifier.type == pp.AggModifierType.By:
            aggs.append((list(n.modifier.labels), names_under(n.expr)))

    pp.walk(pp.parse(grafana_subst(expr)), visit)
    return sels, aggs


def vs_name(n):
    if n.name:
        return n.name
    for m in n.matchers.matchers:
        if m.name == "__name__" and m.op == pp.MatchOp.Equal:
            return m.value
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("metrics")
    a = ap.parse_args()
    types, series = read_metrics(a.metrics)
    problems = []
    used = collections.defaultdict(set)  # metric -> places
    for where, expr in promql_exprs(a.root):
        sels, aggs = selectors(expr)
        found = {n for n, _ in sels if n}
        for raw in set(re.findall(r"\bsluice_[a-z_]+", expr)):
            if raw not in found:
                problems.append(f"{where}: {raw} appears in the text but in no selector the parser found")
        for name, matchers in sels:
            if not name or not name.startswith("sluice_"):
                continue
            used[name].add(where)
            why = resolve(name, types, series)
            if why:
                problems.append(f"{where}: {why}")
                continue
            have = series[name]
            for label, op, value in matchers:
                if label in TARGET_LABELS:
                    continue
                values = {s[label] for s in have if label in s}
                if not values:
                    problems.append(f"{where}: {name} has no label {label}")
                    continue
                if value == "x":
                    wanted = []  # a Grafana variable's placeholder
                elif op == pp.MatchOp.Equal:
                    wanted = [value]
                elif op == pp.MatchOp.Re and re.fullmatch(r"[\w-]+(\|[\w-]+)*", value):
                    wanted = value.split("|")
                else:
                    wanted = []
                for v in wanted:
                    if v not in values:
                        problems.append(f"{where}: {name}{{{label}=\"{v}\"}}: no such series "
                                        f"(values: {sorted(values)})")
        for labels, names in aggs:
            names = [n for n in names if n.startswith("sluice_") and n in series]
            if not names:
                continue
            for label in labels:
                if label in TARGET_LABELS or label == "le" and any(n.endswith("_bucket") for n in names):
                    continue
                if not any(label in s for n in names for s in series[n]):
                    problems.append(f"{where}: groups by {label}, which none of {sorted(set(names))} has")
    for p in problems:
        print("FAIL: " + p)
    print(f"# dashboard and alert rules name {len(used)} sluice metrics; "
          f"/metrics has {len(types)} families; {len(problems)} problem(s)")
    if not used:
        print("FAIL: no sluice metric found in the dashboard and rules")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
