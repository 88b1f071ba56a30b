#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""timers-check.py IN.json OUT.json TOTAL — the exactly-once verdict of the
delay kill tests (0103, 0108): every timer of the input (keyed by id, with a
sluice-at header) is in the target exactly once, with its due time, id and
payload, never before it was due, in due order per target partition.  Reads
`consume_json` dumps (lib.sh); prints the figures; exits 1 on any error."""
import sys
from collections import Counter, defaultdict
from records import load, hdrs

inp, out, total = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
at = {r["key"]: int(hdrs(r)["sluice-at"]) for r in inp}
if len(inp) != total or len(at) != total:
    sys.exit(f"input holds {len(inp)} records ({len(at)} ids), expected {total}")

ids = Counter(r["key"] for r in out)
dups = sorted((k, n) for k, n in ids.items() if n > 1)
missing = sorted(set(at) - set(ids))
extra = sorted(set(ids) - set(at))
errors = []
if dups: errors.append(f"{len(dups)} ids duplicated, e.g. {dups[:10]}")
if missing: errors.append(f"{len(missing)} ids lost, e.g. {missing[:10]}")
if extra: errors.append(f"{len(extra)} unknown ids, e.g. {extra[:10]}")

early, wrong, late = [], [], []
by_part = defaultdict(list)
for r in out:
    k, h = r["key"], hdrs(r)
    if k not in at:
        continue
    due = int(h.get("sluice-due", -1))
    if due != at[k] or h.get("sluice-timer-id") != k or r["payload"] != "payload-" + k:
        wrong.append((k, due, at[k], r["payload"]))
    if r["ts"] < due:
        early.append((k, r["ts"] - due))
    late.append(r["ts"] - due)
    by_part[r["partition"]].append((r["offset"], due))
if wrong: errors.append(f"{len(wrong)} records with wrong due/id/payload, e.g. {wrong[:5]}")
if early: errors.append(f"{len(early)} fired before due (ms), e.g. {early[:5]}")
disorder = 0
for recs in by_part.values():
    recs.sort()
    disorder += sum(1 for a, b in zip(recs, recs[1:]) if b[1] < a[1])
late.sort()
print(f"# target holds {len(out)} records: {len(ids)} distinct ids of {total}, {len(dups)} duplicated, {len(missing)} lost, {len(early)} early")
print(f"# lateness ms (kills included): p50={late[len(late) // 2]} p99={late[int(len(late) * 0.99)]} max={late[-1]}; due-order inversions per target partition: {disorder}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
