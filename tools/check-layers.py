#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-layers.py — the layer order of src/, from its #include lines.

`make check-layers` (and so `make test`) runs it.  A module is a .c/.h pair
named alike (task.c and task.h are module "task"); module A uses module B
when A.c or A.h includes "B.h".  Every module sits in one layer, lowest
first:

  base       pure modules: no Kafka client, no loop (parsers, codecs,
             containers, the configuration, the topic plan, ...)
  io         Kafka and libuv without tasks: client glue, lookups off the
             loop, the transaction machine, HTTP servers, the API
  runtime    the process below app.c: the handle (runtime.h), the tasks,
             and the rooms, in the order listed (each may use the ones
             before it, never one after)
  operators  the operators; from the runtime they see task.h alone
  commands   what main.c dispatches to: `run` (app.c), `inspect`, ...

The rules: a module uses only modules of its own layer or below (within
the runtime, only rooms listed before it); an operator uses no runtime
module but task; no module uses itself through others (no cycle); and
every module of src/ is in the table below, so a new one is placed on
purpose.  An operator's own files are placed by their names (opdef_NAME,
op_NAME, inspect_NAME: docs/contributing.md), so adding one adds no line
here.  Exits 1 and names each breach.
"""
import os
import re
import sys

LAYERS = [
    ("base", """
        util log cli hash heap hmap varint parse config cap outbox refused
        recsize slab idtab dlqrec
        timerheap timerindex tbucket backlog rates debounce logpb jsontext describe
        topicname opdef opdef_* delay_input delay_recurring partitioner topicplan groupcheck
        topiccache apireq peerauth acls metrics connguard memlimit schedule
    """),
    ("io", """
        kafka kwatch kquery txn watchdog http topics dlqreplay apireplay api
    """),
    ("runtime", """
        runtime task ops authz reader parts pipeline targets health input
        member commit clients
    """),
    ("operators", """
        op_*
    """),
    ("commands", """
        app main inspect inspect_* acls_cmd dlq_cmd
    """),
]
# The one runtime module an operator may use: its contract.
OPERATOR_CONTRACT = "task"
ORDERED_LAYER = "runtime"


def check(src):
    """The breaches of the rules in src (a list of sentences)."""
    layer_of, rank_of, patterns = {}, {}, []
    for li, (name, mods) in enumerate(LAYERS):
        for ri, m in enumerate(mods.split()):
            if m.endswith("*"):
                patterns.append((m[:-1], li, ri))
                continue
            if m in layer_of:
                sys.exit(f"check-layers: {m} is listed twice")
            layer_of[m] = li
            rank_of[m] = ri
    uses, problems = {}, []
    inc = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)\.h"', re.M)
    for f in sorted(os.listdir(src)):
        stem, ext = os.path.splitext(f)
        if ext not in (".c", ".h"):
            continue
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            for dep in inc.findall(fh.read()):
                if dep.endswith(".pb-c"):
                    continue
                if dep != stem:
                    uses.setdefault(stem, {}).setdefault(dep, f)
        uses.setdefault(stem, {})
    for m in uses:
        for prefix, li, ri in patterns:
            if m not in layer_of and m.startswith(prefix):
                layer_of[m], rank_of[m] = li, ri
    for m in sorted(uses):
        if m not in layer_of:
            problems.append(f"{m}: not in the layer table of {sys.argv[0]}")
    for m, deps in sorted(uses.items()):
        if m not in layer_of:
            continue
        lm = layer_of[m]
        for d, where in sorted(deps.items()):
            if d not in layer_of:
                if os.path.exists(os.path.join(src, d + ".h")):
                    problems.append(f"{where}: includes {d}.h, not in the "
                                    "layer table")
                continue
            ld = layer_of[d]
            lname = LAYERS[lm][0]
            if ld > lm:
                problems.append(f"{where}: {lname} module {m} includes "
                                f"{d}.h of the {LAYERS[ld][0]} layer above it")
            elif (lname == "operators" and LAYERS[ld][0] == ORDERED_LAYER
                  and d != OPERATOR_CONTRACT):
                problems.append(f"{where}: operator {m} includes {d}.h; "
                                f"operators see the runtime through "
                                f"{OPERATOR_CONTRACT}.h alone")
            elif (ld == lm and lname == ORDERED_LAYER
                  and rank_of[d] > rank_of[m]):
                problems.append(f"{where}: {m} includes {d}.h, a room "
                                f"listed after it in the runtime's order")
    # Cycles, over modules that exist.
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(uses.get(m, {})):
            if d not in uses:
                continue
            if state.get(d) == 1:
                cyc = path[path.index(d):] + [d]
                problems.append("include cycle: " + " -> ".join(cyc))
            elif not state.get(d):
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(uses):
        if not state.get(m):
            visit(m, [m])
    return problems, len(uses)


def self_test():
    """Each rule catches its breach, in a tree made for it."""
    import tempfile
    cases = {
        "upward": {"config.c": '#include "task.h"\n', "task.h": ""},
        "room order": {"runtime.c": '#include "commit.h"\n',
                       "commit.h": ""},
        "operator": {"op_delay.c": '#include "runtime.h"\n',
                     "runtime.h": ""},
        "cycle": {"util.h": '#include "hash.h"\n',
                  "hash.h": '#include "util.h"\n'},
        "unlisted": {"newroom.c": '#include "util.h"\n', "util.h": ""},
    }
    for name, files in cases.items():
        with tempfile.TemporaryDirectory() as d:
            for f, text in files.items():
                with open(os.path.join(d, f), "w") as fh:
                    fh.write(text)
            if not check(d)[0]:
                print(f"check-layers: the self-test's {name} case passed")
                return 1
    return 0


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    if self_test():
        return 1
    problems, modules = check(src)
    for p in problems:
        print("check-layers: " + p)
    if problems:
        return 1
    print(f"check-layers: ok ({modules} modules in {len(LAYERS)} layers, "
          "no cycle; each rule caught its breach in the self-test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
