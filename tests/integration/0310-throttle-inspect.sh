#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0310-throttle-inspect — `sluice inspect -c FILE PIPELINE [--key K]` on a
# throttle pipeline (while it runs): reads the rates topic, the changelog
# and the overflow partitions from their checkpoints, and shows per key the
# rate, the tokens, the backlog length and the oldest message's age;
# without --key, the largest backlogs first.
#
# Key S is stopped (0/s burst=1): s-0..s-9 all wait (0/s holds every
# message, the first one too; its full bucket stays frozen).  Key T
# at 1/m (burst 1): t-0 forwarded, t-1..t-2 wait.  Key U at the default
# rate: forwarded, no backlog.  Over 2 partitions.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

tl_setup 2 default_rate=100/s
tl_rates 'S:0/s burst=1' 'T:1/m burst=1'
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

{
    seq -f 'S:s-%g' 0 9
    seq -f 'T:t-%g' 0 2
    seq -f 'U:u-%g' 0 2
} | produce "$in" -K: || fail "kcat failed"
m() { tl_metric "$1" || true; }
wait_until 20 eval '[ "$(m appended_total)" = 12 ] && [ "$(count_records "$out")" = 4 ]' ||
    fail "appended $(m appended_total) of 12, out $(count_records "$out") of 4"
sleep 1 # let oldest ages be >= 1 s

"$SLUICE_BIN" inspect -c "$conf" "$PFX" >"$WORK/all.txt" || fail "inspect failed: $(cat "$WORK/all.txt")"
cat "$WORK/all.txt"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --key S >"$WORK/s.txt" || fail "inspect --key S failed"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --key U >"$WORK/u.txt" || fail "inspect --key U failed"
"$SLUICE_BIN" inspect -c "$conf" "$PFX" --limit 1 >"$WORK/one.txt" || fail "inspect --limit 1 failed"
cat "$WORK/s.txt" "$WORK/u.txt"

python3 - "$WORK" <<'PY' || fail "inspect output check failed"
import sys
w = sys.argv[1]
def rows(name):
    lines = open(f"{w}/{name}").read().splitlines()
    hdr = [i for i, l in enumerate(lines) if l.startswith("PART")]
    out = []
    for l in lines[hdr[0] + 1:] if hdr else []:
        if l.startswith("..."):
            continue
        f = l.split()
        # PART BACKLOG BYTES OLDEST RATE... TOKENS KEY
        out.append({"part": f[0], "len": int(f[1]), "bytes": int(f[2]), "oldest": f[3],
                    "rate": " ".join(f[4:-2]), "tokens": f[-2], "key": f[-1]})
    return lines, out
errors = []
lines, all_rows = rows("all.txt")
if "12 buffered messages" not in lines[0]:
    errors.append(f"summary: {lines[0]}")
if [r["key"] for r in all_rows] != ["S", "T"] or [r["len"] for r in all_rows] != [10, 2]:
    errors.append(f"rows: {all_rows}, want S 10 then T 2")
for r in all_rows:
    age = float(r["oldest"].rstrip("s"))
    if not 0.5 <= age <= 60:
        errors.append(f"{r['key']}: oldest age {r['oldest']}")
_, s = rows("s.txt")
if len(s) != 1 or s[0]["key"] != "S" or s[0]["len"] != 10 or not s[0]["rate"].startswith("0/s"):
    errors.append(f"--key S: {s}")
elif float(s[0]["tokens"]) != 1:
    errors.append(f"--key S: tokens {s[0]['tokens']}, want 1 (a new key's full bucket, frozen at 0/s)")
_, u = rows("u.txt")
if len(u) != 1 or u[0]["key"] != "U" or u[0]["len"] != 0 or not u[0]["rate"].startswith("100/s"):
    errors.append(f"--key U: {u}")
ol, one = rows("one.txt")
if [r["key"] for r in one] != ["S"] or not ol[-1].startswith("... 1 more"):
    errors.append(f"--limit 1: {ol}")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
