# SPDX-License-Identifier: Apache-2.0
"""records.py — the records a test read back with consume_json (lib.sh):
one `kcat -J` object per line (topic, partition, offset, ts, headers as a
flat [name, value, ...] list, key, payload).  The checks the tests run with
python3 import it (lib.sh puts this folder on PYTHONPATH).

    load(path)      the records of a file, in file order
    hdrs(r)         a record's headers as a dict (a repeated name: its last
                    value)
    hdr_pairs(r)    a record's headers as a list of (name, value), in order
    replay_errors(inp, out, dlq, n, target)
                    what is wrong after the DLQ replays of 0611 and 0612
    payload_missing(dlq, ptopic, payloads, prefix, due)
                    the payload-missing DLQ records of 0132 and 0138
    fired_errors(out, want, payload, own, maybe)
                    what is wrong with the timers fired by 0131 and 0139
"""
import json
import re
from collections import Counter


def load(path):
    # kcat -J writes binary keys and values raw: keep their bytes.
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return [json.loads(l) for l in f if l.strip()]


def hdr_pairs(r):
    h = r.get("headers") or []
    return [(h[i], h[i + 1]) for i in range(0, len(h), 2)]


def hdrs(r):
    return dict(hdr_pairs(r))


def replay_errors(inp, out, dlq, n, target):
    """The DLQ replay tests' verdict (0611, 0612), a list of sentences,
    empty when all is right.  Their delay pipeline DLQ'd n timers k1..kn
    (value v<i>, headers sluice-target: target, sluice-delay: 1s, x-extra:
    keep me) and kbad (a bad delay), and the test wrote kcut, ktimer and
    kforeign to the DLQ; the replay of target-not-allowed sent back k1..kn
    only.  So: in the input (read_committed, reroutes aside) each ki twice,
    both with the original value, headers and partition, kbad once, the
    others never; each ki fired once to the target, with its value and
    x-extra; the DLQ holds n + 4 records (none DLQ'd again)."""
    want_h = [("sluice-target", target), ("sluice-delay", "1s"), ("x-extra", "keep me")]
    inp = [r for r in inp if "sluice-rerouted-from" not in hdrs(r)]
    keys = Counter(r["key"] for r in inp)
    errors = []
    for i in range(1, n + 1):
        if keys[f"k{i}"] != 2:
            errors.append(f"k{i}: {keys[f'k{i}']} times in the input, want 2 (the original, one replay)")
    if keys["kbad"] != 1:
        errors.append(f"kbad: {keys['kbad']} times in the input (not to be replayed)")
    for k in ("kcut", "ktimer", "kforeign"):
        if keys[k]:
            errors.append(f"{k}: replayed, must not be")
    first = {}
    for r in inp:
        if r["key"] not in first:
            first[r["key"]] = r
            continue
        o = first[r["key"]]
        if r["payload"] != o["payload"] or hdr_pairs(r) != want_h or hdr_pairs(o) != want_h:
            errors.append(f"{r['key']}: replayed as {r['payload']!r} {hdr_pairs(r)}, "
                          f"was {o['payload']!r} {hdr_pairs(o)}")
        if r["partition"] != o["partition"]:
            errors.append(f"{r['key']}: replayed to partition {r['partition']}, was {o['partition']}")
    fired = Counter(r["key"] for r in out)
    if set(fired) != {f"k{i}" for i in range(1, n + 1)} or max(fired.values(), default=0) != 1:
        errors.append(f"target: {len(fired)} keys, {sum(fired.values())} records, want {n} once each")
    for r in out:
        if r["payload"] != "v" + r["key"][1:] or ("x-extra", "keep me") not in hdr_pairs(r):
            errors.append(f"target: {r['key']} {r['payload']!r} {hdr_pairs(r)}")
            break
    if len(dlq) != n + 4:
        errors.append(f"DLQ holds {len(dlq)} records, want {n + 4} (a replayed record DLQ'd again?)")
    return errors


def payload_missing(dlq, ptopic, payloads, prefix, due):
    """The DLQ of a delay pipeline whose payload records of the timers
    named prefix* were deleted (0132, 0138; payloads: a file of "partition
    offset id" lines, the payload topic before the deletes): each record
    must be payload-missing with a detail naming a deleted record, its
    sluice-due and its timestamp at due or later.  Returns (where:
    (partition, offset) -> id of the deleted ones, a Counter of the places
    named, a list of sentences: empty when all is right), with a sentence
    for each place named more or less than once."""
    where = {}
    with open(payloads) as f:
        for line in f:
            p, o, k = line.split()
            if k.startswith(prefix):
                where[(int(p), int(o))] = k
    errors, dl = [], Counter()
    for r in dlq:
        h = hdrs(r)
        d = h.get("sluice-error-detail", "")
        m = re.search(re.escape(ptopic) + r" \[(\d+)\] offset (\d+)", d)
        if h.get("sluice-error") != "payload-missing" or not m:
            errors.append(f"DLQ record {h.get('sluice-error')}: {d[:120]}")
            continue
        loc = (int(m.group(1)), int(m.group(2)))
        if loc not in where:
            errors.append(f"DLQ record for {loc}, not a deleted record: {d[:120]}")
            continue
        dl[loc] += 1
        if int(h.get("sluice-due", -1)) != due or r["ts"] < due:
            errors.append(f"{where[loc]}: DLQ record at {r['ts']}, sluice-due {h.get('sluice-due')} (due {due})")
    errors += [f"{where[l]} ({l}) in the DLQ {c} times" for l, c in dl.items() if c != 1]
    errors += [f"{k} ({l}) not in the DLQ" for l, k in where.items() if not dl[l]]
    return where, dl, errors


def fired_errors(out, want, payload, own, maybe=()):
    """What is wrong with the fired timers `out` (a list of sentences,
    empty when all is right): want maps each id that must fire to its
    (version, due); payload(id, version) is its payload, own(version) its
    headers other than sluice-*, in order.  Each wanted id fires exactly
    once, with its last version byte for byte, sluice-timer-id its id and
    sluice-due its due time, never before it.  An id that starts with a
    prefix in maybe may fire (once, at version 1, due maybe[prefix]) or
    not; any other id must not."""
    seen = Counter(r["key"] for r in out)
    errors = [f"{k} fired {c} times" for k, c in seen.items() if c != 1]
    errors += [f"{k} fired, not wanted" for k in seen if k not in want and not k.startswith(tuple(maybe))]
    errors += [f"{k} never fired" for k in want if not seen[k]]
    early = 0
    for r in out:
        k = r["key"]
        pfx = [p for p in maybe if k.startswith(p)]
        if k in want:
            v, due = want[k]
        elif pfx:
            v, due = 1, maybe[pfx[0]]
        else:
            continue
        if r["payload"] != payload(k, v):
            errors.append(f"{k}: payload {r['payload'][:24]!r}... ({len(r['payload'])} chars) is not version {v}")
        pairs = hdr_pairs(r)
        if [(n, x) for n, x in pairs if not n.startswith("sluice-")] != own(v):
            errors.append(f"{k}: headers {pairs}")
        h = dict(pairs)
        if h.get("sluice-timer-id") != k or int(h.get("sluice-due", -1)) != due:
            errors.append(f"{k}: sluice-timer-id {h.get('sluice-timer-id')}, sluice-due {h.get('sluice-due')} (want {due})")
        if r["ts"] < due:
            early += 1
    if early:
        errors.append(f"{early} fired before their due time")
    return errors
