#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""recurring-check.py WORK PFX [options] — the exactly-once verdict of the
recurring-timer tests (0140, 0141, 0142), read from `consume_json` dumps in WORK
(out.json: the target; dlq.json: PFX.dlq; in.json: the input) and the
sluice logs WORK/sluice-*.log (the end of each partition's last rebuild).

The schedules are `every 1s` ids named by prefix: r- (catch-up latest),
c- (cancelled at --cancel), p- (replaced at --cancel by `every 2s` with the
payload v2), q- (replaced at --cancel by a one-shot timer with the payload
once, due 2 s later), o- (one-shot timers replaced by schedules before
any fired), kl-, ka-, kn- (catch-up latest, all, none), api- (made
through the API).  The verdict:
  - each (id, sluice-due) once, never produced before its instant (record
    timestamp >= sluice-due), sluice-timer-id = the key;
  - per id and per schedule, occurrences 1, 2, ... in due order, dues on
    the schedule's grid;
  - nothing lost: ka- skips no instant; any other id skips only instants
    due during a disturbance (--events: a kill to the restart's readiness,
    a member's join or leave to the end of the hand-over; the stop for
    catch-up, --down to --ready; with --own-events also each aborted
    transaction or rebalance in the sluice logs, to the rebuild after it),
    from 2 s before it (a transaction the kill aborted) to 1 s after it;
  - down from --down to --up (the catch-up stop): kl- fires the most recent
    instant due by the rebuild's end, kn- the first after it, ka- all;
  - c- fires nothing due 2 s after its cancel; p- runs on its new grid;
    q- fires nothing of its schedule due 2 s after --cancel, and its
    one-shot timer once; o- nothing but its schedule;
  - every id of --expect fired, and every one not cancelled or replaced by
    a one-shot timer (c-, q-) fired after the catch-up restart (--up):
    none stopped for good; the DLQ holds --dlq's keys and reasons.
Prints the figures; exits 1 on any fault."""
import argparse
import glob
import re
import sys
from collections import defaultdict
from datetime import datetime, timezone

from records import load, hdrs

ap = argparse.ArgumentParser()
ap.add_argument("work")
ap.add_argument("pfx")
ap.add_argument("--expect", required=True, help="PREFIX=N,... ids that must fire")
ap.add_argument("--cancel", type=int, default=0, help="when c- were cancelled and p- replaced (ms)")
ap.add_argument("--down", type=int, default=0, help="the catch-up stop's start (ms; 0: none)")
ap.add_argument("--up", type=int, default=0, help="its restart (ms)")
ap.add_argument("--ready", type=int, default=0, help="the restart ready (ms)")
ap.add_argument("--events", default="", help="FROM-TO,... (ms) other disturbances (kills, joins, leaves)")
ap.add_argument("--dlq", default="", help="KEY=REASON,... the DLQ's records")
ap.add_argument("--own-events", action="store_true",
                help="sluice's own aborts and rebalances (its logs) are disturbances too")
a = ap.parse_args()

bad = []


def log_ms(stamp):
    at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(at.timestamp() * 1000)


# The end of each input partition's last rebuild (the log's time, within a
# few ms of the operator's): occurrences due by then were missed.  And with
# --own-events, sluice's own disturbances: from a failed transaction or a
# rebalance to the end of the rebuilds that follow it (rebuilds within 2 s
# of each other).
rebuilt = {}
own = []
for path in glob.glob(f"{a.work}/sluice-*.log"):
    span, waiting = None, False  # [from, to]; a trouble not yet rebuilt after
    for line in open(path, errors="replace"):
        m = re.match(r"(\S+Z) info REBUILD (\S+) \[(\d+)\]: rebuilt from", line)
        if m and m[2] == a.pfx:
            ms = log_ms(m[1])
            rebuilt[int(m[3])] = max(rebuilt.get(int(m[3]), 0), ms)
            if span and (waiting or ms - span[1] <= 2000):
                span[1], waiting = ms, False
            continue
        m = re.match(r"(\S+Z) \w+ (TXNERR|TXN|REBALANCE) .*(Current transaction failed|"
                     r"transaction will be aborted|aborting transaction|revoking)", line)
        if m:
            ms = log_ms(m[1])
            if span and not waiting and ms - span[1] > 2000:
                own.append(tuple(span))
                span = None
            span = span or [ms, ms]
            waiting = True
    if span:
        own.append(tuple(span))
part_of = {r["key"]: r["partition"] for r in load(f"{a.work}/in.json")}
given = sorted([tuple(map(int, x.split("-"))) for x in a.events.split(",") if x] +
               ([(a.down, a.ready)] if a.down else []))
events = sorted(given + (own if a.own_events else []))
# A schedule that fires nothing after this stopped for good.  (Not after
# sluice's own events: the stop at the end revokes every partition.)
last_up = a.up if a.down else max([e for _, e in given], default=0)

by_id = defaultdict(list)
once = defaultdict(list)
seen = set()
for r in load(f"{a.work}/out.json"):
    h = hdrs(r)
    if "sluice-occurrence" not in h:  # a one-shot timer
        once[r["key"]].append(r["payload"])
        continue
    key, due, occ = r["key"], int(h["sluice-due"]), int(h["sluice-occurrence"])
    if h.get("sluice-timer-id") != key:
        bad.append(f"{key}: sluice-timer-id {h.get('sluice-timer-id')}")
    if (key, due) in seen:
        bad.append(f"{key}: instant {due} produced twice")
    seen.add((key, due))
    if r["ts"] < due:
        bad.append(f"{key}: instant {due} produced {due - r['ts']} ms early")
    by_id[key].append((due, occ, r["payload"]))

expect = []
for item in a.expect.split(","):
    p, n = item.split("=")
    expect += [f"{p}{i}" for i in range(1, int(n) + 1)]
for k in expect:
    if not by_id.get(k):
        bad.append(f"{k}: never fired")
    elif not k.startswith(("c-", "q-")) and max(d for d, _, _ in by_id[k]) <= last_up:
        bad.append(f"{k}: stopped: nothing fired after {last_up}")
skipped = 0
for key, recs in by_id.items():
    recs.sort()
    runs = [[x for x in recs if x[2] != "v2"], [x for x in recs if x[2] == "v2"]]
    for run in runs:
        if not run:
            continue
        step = 2000 if run[0][2] == "v2" else 1000
        if [o for _, o, _ in run] != list(range(1, len(run) + 1)):
            bad.append(f"{key}: occurrences {[o for _, o, _ in run][:12]} not 1, 2, ...")
        for (x, _, _), (y, _, _) in zip(run, run[1:]):
            if (y - x) % step:
                bad.append(f"{key}: instants {x} and {y} off the {step} ms grid")
        gaps = [(x, y) for (x, _, _), (y, _, _) in zip(run, run[1:]) if y - x != step]
        skipped += sum((y - x) // step - 1 for x, y in gaps)
        if key.startswith("ka-") and gaps:
            bad.append(f"{key}: catch-up all skipped instants: {gaps[:3]}")
        quiet = [d for x, y in gaps for d in range(x + step, y, step)
                 if not any(s - 2000 <= d <= e + 1000 for s, e in events)]
        if quiet:
            bad.append(f"{key}: skipped {len(quiet)} instants due while nothing disturbed it: {quiet[:3]}")
        # Down from --down to --up: latest fires the most recent instant of
        # the down time, none the first after it, all every one.
        if not a.down:
            continue
        down = [d for d, _, _ in run if a.down + 1500 < d <= a.up - 1000]
        if key.startswith(("kl-", "kn-")) and down:
            bad.append(f"{key}: catch-up {key[:2]} fired missed instants {down[:3]}")
        after = [d for d, _, _ in run if d > a.down + 1500]
        if key.startswith(("kl-", "kn-")) and not after:
            bad.append(f"{key}: nothing fired after the restart")
        elif key.startswith(("kl-", "kn-")):
            # latest: the most recent instant by the rebuild's end u;
            # none: the first after it (100 ms for the log's clock).
            u = rebuilt.get(part_of.get(key), 0)
            lo, hi = (u - 1100, u + 100) if key.startswith("kl-") else (u - 100, u + 1100)
            if not lo < after[0] <= hi:
                bad.append(f"{key}: first instant after the restart {after[0]}, rebuild ended {u}")
    if key.startswith("c-"):
        late = [d for d, _, _ in recs if d > a.cancel + 2000]
        if late:
            bad.append(f"{key}: fired {late[:3]} after its cancel at {a.cancel}")
    if key.startswith("q-"):
        late = [d for d, _, _ in recs if d > a.cancel + 2000]
        if late or once.get(key) != ["once"]:
            bad.append(f"{key}: not replaced by its one-shot timer ({late[:3]}, {once.get(key)})")
    if key.startswith("p-"):
        old = [d for d, _, p in recs if p != "v2" and d > a.cancel + 2000]
        if old or not runs[1]:
            bad.append(f"{key}: not replaced (old instants {old[:3]}, {len(runs[1])} new)")

for key, v in once.items():
    if not key.startswith("q-"):
        bad.append(f"{key}: a one-shot timer fired ({v})")
reasons = {r["key"]: hdrs(r).get("sluice-error") for r in load(f"{a.work}/dlq.json")}
want = dict(x.split("=") for x in a.dlq.split(",") if x)
if reasons != want:
    bad.append(f"DLQ reasons {reasons}, expected {want}")
for b in bad[:20]:
    print("BAD", b)
n = sum(len(v) for v in by_id.values())
print(f"{n} occurrences of {len(by_id)} schedules, {skipped} instants skipped across "
      f"{len(events)} disturbances" + (f" ({len(own)} of them sluice's own, from its logs)" if a.own_events else "") +
      f", {len(bad)} faults")
sys.exit(1 if bad else 0)
