# SPDX-License-Identifier: Apache-2.0
"""dbcheck.py — loads debounce batches from `kcat -J` lines (JSON or
protobuf values), for the debounce tests' checks (lib-debounce.sh).
load_batches(path) returns one dict per batch: the decoded JSON or
protobuf value plus "_headers", "_ts", "_partition", "_offset", "_key"."""
import base64
import json

import records


def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def _fields(b):
    """(field number, wire type, value) of a protobuf message."""
    i, out = 0, []
    while i < len(b):
        k, i = _varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"unexpected wire type {w}")
        out.append((f, w, v))
    return out


def _payload(raw):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def decode_protobuf(b):
    """sluice.v1.Batch as the same dict shape as the JSON encoding."""
    d = {"items": []}
    names = {1: "batch_id", 2: "key", 3: "reason", 4: "opened_at", 5: "flushed_at"}
    for f, w, v in _fields(b):
        if f == 6:
            it = {"first_seen": 0, "last_update": 0}
            for g, _, u in _fields(v):
                if g == 1:
                    it["id"] = u.decode()
                elif g == 2:
                    it["payload"] = _payload(u)
                elif g == 3:
                    it["first_seen"] = u
                elif g == 4:
                    it["last_update"] = u
            d["items"].append(it)
        elif f in names:
            d[names[f]] = v.decode() if w == 2 else v
    return d


# A record's headers as a dict, and the records of a consume_json dump.
headers = records.hdrs
load_records = records.load


def load_input(path):
    # What producers wrote: the input less the copies sluice moved to
    # their key's partition (reroute), which carry sluice-rerouted-from.
    return [r for r in load_records(path)
            if "sluice-rerouted-from" not in headers(r)]


def load_batches(path):
    out = []
    for r in load_records(path):
        b = json.loads(r["payload"])
        b["_headers"] = headers(r)
        b["_ts"] = r["ts"]
        b["_partition"] = r["partition"]
        b["_offset"] = r["offset"]
        b["_key"] = r["key"]
        out.append(b)
    return out


def load_protobuf_batches(path):
    """Batches from a file written by db_consume_raw: per record a line
    "<key length> <value length>", then the key and value bytes."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        kl, vl = (int(x) for x in data[i:nl].split())
        i = nl + 1
        key, val = data[i:i + kl], data[i + kl:i + kl + vl]
        i += kl + vl
        b = decode_protobuf(val)
        b["_key"] = key.decode()
        out.append(b)
    return out
