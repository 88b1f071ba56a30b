#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0307-throttle-bad-input — bad input never crashes sluice: bad control
# headers go to the DLQ with a reason (and the original key, value and
# headers); a malformed record on the rates topic is logged, counted and
# ignored, and the next good one applies; a tombstone returns a key to the
# default rate.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

tl_setup 1 default_rate=1000/s
sluice_up main "$conf"
echo "sluice ready on $in -> $out"

echo 'A:bad-ttl' | produce "$in" -K: -H sluice-ttl=abc -H x-n=1
echo 'A:bad-ttl-zero' | produce "$in" -K: -H sluice-ttl=0s
echo 'A:bad-deadline' | produce "$in" -K: -H sluice-deadline=soon
echo 'A:conflicting' | produce "$in" -K: -H sluice-ttl=1m -H sluice-deadline=9999999999999
echo 'no-key' | produce "$in"
echo 'A:past-deadline' | produce "$in" -K: -H sluice-deadline=1000
echo 'A:good-1' | produce "$in" -K: -H sluice-ttl=1m

# Rates: garbage, then a good one, then a tombstone.
printf 'X:fast\nY:-5/s\nX:2/s burst=1\n' | produce "$PFX.rates" -K:
rejected() { [ "$(tl_metric rates_rejected_total)" = 2 ]; }
wait_until 20 rejected || fail "malformed rate records not counted: $(tl_metric rates_rejected_total)"
log_has main "RATES .*key 'X'.*ignored" || fail "malformed rate record not logged"
# X is now at 2/s burst 1: of 5 messages, 1 goes at once, 4 to the backlog.
m() { tl_metric "$1"; }
seq -f 'X:x-%g' 1 5 | produce "$in" -K:
appended4() { [ "$(m appended_total)" = 4 ]; }
wait_until 20 appended4 || fail "X's rate (2/s burst 1) not applied: $(m appended_total) appended"
echo 'X:' | produce "$PFX.rates" -K: -Z
wait_records "$out" 6 20 || fail "X's backlog did not drain after the tombstone"
seq -f 'X:y-%g' 1 20 | produce "$in" -K:
wait_records "$out" 26 20 || fail "only $(count_records "$out") of 26 out"
note "forwarded $(m forwarded_total), drained $(m drained_total), appended $(m appended_total)"
[ "$(m forwarded_total)" = 22 ] || fail "X not back at the default rate (1000/s) after the tombstone"
sluice_alive main || fail "sluice exited"

wait_records "$PFX.dlq" 6 20 || fail "only $(count_records "$PFX.dlq") of 6 bad records in the DLQ"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK/dlq.json" <<'PY' || fail "DLQ check failed"
import sys
from records import load, hdrs as hd
recs = load(sys.argv[1])
got = {r["payload"]: hd(r).get("sluice-error") for r in recs}
want = {"bad-ttl": "bad-ttl", "bad-ttl-zero": "bad-ttl", "bad-deadline": "bad-deadline",
        "conflicting": "conflicting-deadline", "no-key": "missing-key",
        "past-deadline": "expired"}
errors = [f"{p}: reason {got.get(p)}, expected {w}" for p, w in want.items() if got.get(p) != w]
if len(recs) != len(want):
    errors.append(f"{len(recs)} DLQ records, expected {len(want)}")
h = hd(next(r for r in recs if r["payload"] == "bad-ttl"))
if h.get("x-n") != "1" or h.get("sluice-ttl") != "abc" or not h.get("sluice-error-detail"):
    errors.append(f"bad-ttl lost its headers or detail: {h}")
print("# DLQ reasons:", sorted(set(got.values())))
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
