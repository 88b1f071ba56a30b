#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0105-delay-dlq — each class of bad delay input lands in the pipeline's DLQ
# with its sluice-error reason, a detail, the source coordinates
# (sluice-source-topic/partition/offset) and the original key, value and
# headers; nothing bad reaches the target; and the process keeps serving:
# good timers produced after the bad ones fire.
#
# Headers pipeline (allowed_targets = PFX.*, max_delay = 1h) and a
# json-envelope pipeline, in one process.  Every input record carries a
# unique x-case header naming the reason it must get.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

other=other-$PFX.out

dl_setup_pair 4 "allowed_targets=$PFX.*"
conf_set "$conf" "pipeline $PFX.d" max_delay=1h
# Exists, but allowed_targets does not match it.
topic_create "$other" 1
sluice_up main "$conf"
echo "sluice ready"

# bad CASE KEY [kcat -H args...] — one record "KEY:v-CASE" on $in.
bad() {
    local case=$1 key=$2
    shift 2
    echo "$key:v-$case" | produce "$in" -K: -H "x-case=$case" -H "x-extra=keep me" "$@"
}
bad missing-target m1 -H sluice-delay=1s
bad bad-delay m2 -H "sluice-target=$out" -H sluice-delay=soon
bad target-not-allowed m3 -H "sluice-target=$other" -H sluice-delay=1s
bad target-internal m4 -H "sluice-target=$PFX.d.changelog" -H sluice-delay=1s
bad target-internal-other m5 -H "sluice-target=$PFX.e.changelog" -H sluice-delay=1s
bad target-internal-dlq m6 -H "sluice-target=$PFX.d.dlq" -H sluice-delay=1s
bad unknown-target m7 -H "sluice-target=$PFX.missing" -H sluice-delay=1s
bad delay-too-long m8 -H "sluice-target=$out" -H sluice-delay=2h
bad bad-at m9 -H "sluice-target=$out" -H sluice-at=yesterday
bad conflicting-due m10 -H "sluice-target=$out" -H sluice-delay=1s -H sluice-at=1
# A keyless record is scheduled under a generated id (0121), but a keyless
# cancel (null key, null value) names no timer.
echo ":" | produce "$in" -K: -Z -H x-case=missing-key -H "x-extra=keep me"
echo 'b1|{"topic": "'"$out"'", "message": "x", "countdown": ' |
    produce "$ein" -K'|' -H x-case=bad-envelope -H "x-extra=keep me"
echo 'b2|[1, 2, 3]' | produce "$ein" -K'|' -H x-case=bad-envelope-array
# Due before 1970: refused before now - due could overflow.
echo 'b3|{"topic": "'"$out"'", "message": "x", "at": -9223372036854775808}' |
    produce "$ein" -K'|' -H x-case=bad-at-before-1970
# Good timers after the bad ones, one per input partition of each pipeline.
for p in 0 1 2 3; do
    echo "good-$p:ok" | produce "$in" -p "$p" -K: -H "sluice-target=$out" -H sluice-delay=1s
    echo "egood-$p|{\"topic\":\"$out\",\"message\":\"ok\",\"countdown\":1}" |
        produce "$ein" -p "$p" -K'|'
done
nbad=14
echo "produced $nbad bad records and 8 good timers"

wait_records "$out" 8 30 || fail "only $(count_records "$out") of 8 good timers fired within 30 s"
dlq_count() { echo $(($(count_records "$PFX.d.dlq") + $(count_records "$PFX.e.dlq"))); }
dlq_done() { [ "$(dlq_count)" -ge "$nbad" ]; }
wait_until 30 dlq_done || fail "only $(dlq_count) of $nbad bad records in the DLQs within 30 s"
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
consume_json "$ein" >>"$WORK/in.json"
consume_json "$PFX.d.dlq" >"$WORK/dlq.json"
consume_json "$PFX.e.dlq" >>"$WORK/dlq.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/dlq.json" "$WORK/out.json" "$PFX" <<'PY' || fail "DLQ check failed"
import sys
from records import load, hdr_pairs as pairs

inp, dlq, out = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
pfx = sys.argv[4]
expect = {  # x-case -> (sluice-error, dlq topic)
    "missing-target": "missing-target",
    "bad-delay": "bad-delay",
    "target-not-allowed": "target-not-allowed",
    "target-internal": "target-internal",
    "target-internal-other": "target-internal",
    "target-internal-dlq": "target-internal",
    "unknown-target": "unknown-target",
    "delay-too-long": "delay-too-long",
    "bad-at": "bad-at",
    "conflicting-due": "conflicting-due",
    "missing-key": "missing-key",
    "bad-envelope": "bad-envelope",
    "bad-envelope-array": "bad-envelope",
    "bad-at-before-1970": "bad-at",
}
added = {"sluice-error", "sluice-error-detail", "sluice-source-topic",
         "sluice-source-partition", "sluice-source-offset"}
src = {dict(pairs(r)).get("x-case"): r for r in inp if dict(pairs(r)).get("x-case")}
assert set(src) == set(expect), f"input cases {sorted(src)}"
errors = []
seen = {}
for r in dlq:
    h = dict(pairs(r))
    case = h.get("x-case")
    if case not in expect:
        errors.append(f"unexpected DLQ record: key {r['key']!r} headers {pairs(r)}")
        continue
    if case in seen:
        errors.append(f"{case}: in the DLQ twice")
    seen[case] = r
    s = src[case]
    want_topic = f"{pfx}.e.dlq" if s["topic"].endswith(".env.in") else f"{pfx}.d.dlq"
    got = {
        "topic": r["topic"], "sluice-error": h.get("sluice-error"),
        "source-topic": h.get("sluice-source-topic"),
        "source-partition": h.get("sluice-source-partition"),
        "source-offset": h.get("sluice-source-offset"),
        "key": r["key"], "value": r["payload"],
        "headers": [p for p in pairs(r) if p[0] not in added],
    }
    want = {
        "topic": want_topic, "sluice-error": expect[case],
        "source-topic": s["topic"], "source-partition": str(s["partition"]),
        "source-offset": str(s["offset"]),
        "key": s["key"], "value": s["payload"], "headers": pairs(s),
    }
    for f in want:
        if got[f] != want[f]:
            errors.append(f"{case}: {f} is {got[f]!r}, expected {want[f]!r}")
    if not h.get("sluice-error-detail"):
        errors.append(f"{case}: no sluice-error-detail")
    print(f"# {case}: {h.get('sluice-error')} ({h.get('sluice-error-detail')})")
for case in sorted(set(expect) - set(seen)):
    errors.append(f"{case}: not in the DLQ")

good = sorted(r["key"] for r in out)
want_good = sorted([f"good-{p}" for p in range(4)] + [f"egood-{p}" for p in range(4)])
if good != want_good:
    errors.append(f"target holds {good}, expected exactly {want_good}")
print(f"# DLQ: {len(dlq)} records for {len(expect)} bad inputs; target: {len(good)} good timers")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
