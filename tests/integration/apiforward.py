# SPDX-License-Identifier: Apache-2.0
"""apiforward.py — the lookups the API forwarding tests (0034, 0505) ask of
two members, and what every answer must say; importable from their checks
(lib.sh puts this folder on PYTHONPATH).

The timers are the ones api_put_timers (lib.sh) makes: id0..id<n-1>, value
v<i>.  get(member, path) asks one member and returns (status, the
X-Sluice-Answered-By header, body).
"""
import json
import time


def ask_both(get, a, b, pfx, n=20, timeout=60, refused=None):
    """Asks member a and member b for each timer until a answers 200 and b
    answers 200 or, where refused(status, body) says so, a final refusal;
    fails (AssertionError) when that takes past timeout seconds.  Every
    200 names its timer (id, payload_bytes); where both answered 200 the
    answers are the same but for due_in_ms, by the same owner.  Returns
    (owners: {answered_by: [i, ...]}, refusals: [(i, by_a, by_b, body_b)])."""
    owners, refusals = {}, []
    deadline = time.time() + timeout
    for i in range(n):
        path = f"/v1/pipelines/{pfx}/timers/id{i}"
        while True:
            sa, ba, bodya = get(a, path)
            sb, bb, bodyb = get(b, path)
            if sa == 200 and (sb == 200 or (refused and refused(sb, bodyb))):
                break
            # Owner unknown or rebuilding just after a (re)join: ask again.
            assert time.time() < deadline, (path, sa, bodya, sb, bodyb)
            time.sleep(0.2)
        ja = json.loads(bodya)
        assert ja["id"] == f"id{i}" and ja["payload_bytes"] == len(f"v{i}"), ja
        owners.setdefault(ba, []).append(i)
        if sb == 200:
            jb = json.loads(bodyb)
            ja.pop("due_in_ms"), jb.pop("due_in_ms")
            assert ja == jb and ba == bb, (bodya, bodyb, ba, bb)
        else:
            refusals.append((i, ba, bb, bodyb))
    return owners, refusals
