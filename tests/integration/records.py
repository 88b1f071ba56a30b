# SPDX-License-Identifier: Apache-2.0
"""records.py — the records a test read back with consume_json (lib.sh):
one `kcat -J` object per line (topic, partition, offset, ts, headers as a
flat [name, value, ...] list, key, payload).  The checks the tests run with
python3 import it (lib.sh puts this folder on PYTHONPATH).

    load(path)      the records of a file, in file order
    hdrs(r)         a record's headers as a dict (a repeated name: its last
                    value)
    hdr_pairs(r)    a record's headers as a list of (name, value), in order
"""
import json


def load(path):
    # kcat -J writes binary keys and values raw: keep their bytes.
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return [json.loads(l) for l in f if l.strip()]


def hdr_pairs(r):
    h = r.get("headers") or []
    return [(h[i], h[i + 1]) for i in range(0, len(h), 2)]


def hdrs(r):
    return dict(hdr_pairs(r))
