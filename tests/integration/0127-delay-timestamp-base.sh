#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0127-delay-timestamp-base — a sluice-delay whose record's timestamp is not
# usable counts from when sluice reads the record, and says so in
# sluice_timers_read_time_base_total (docs/delay.md, "Clocks").
#
# Records with sluice-delay=3s written with explicit timestamps
# (tests/tools/ProduceAt.java: kcat cannot set one): one an hour ahead of
# the clock (beyond timestamp_skew = 1m), one from 2005 (before 2010:
# seconds sent as milliseconds), one a second old (usable).  The first two
# must be due 3 s after sluice read them, not an hour late or at once; the
# third 3 s after its timestamp.  The counter has one "future" and one
# "past", no "missing".
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"
here=$(cd "$(dirname "$0")" && pwd)

dl_setup 1
sluice_up main "$conf"

produce_at() { # KEY TIMESTAMP_MS
    timeout 60 "$here/kafka/broker.sh" java "$here/../tools/ProduceAt.java" \
        "$BOOTSTRAP" "$in" 0 "$2" "$1" "payload-$1" \
        "sluice-target=$out" "sluice-delay=3s" >>"$WORK/produce.out" \
        2>>"$WORK/produce.err" || fail "ProduceAt $1 failed: $(tail -3 "$WORK/produce.err")"
}
now=$(now_ms)
produce_at future $((now + 3600000))
produce_at past 1112345678000
produce_at usable $(($(now_ms) - 1000))
echo "produced 3 timers with sluice-delay=3s: timestamps +1 h, 2005, -1 s"

wait_records "$out" 3 30 || fail "only $(count_records "$out") of 3 timers fired within 30 s"
for why in future past; do
    v=$(sluice_metric main "sluice_timers_read_time_base_total{pipeline=\"$PFX\",reason=\"$why\"}")
    [ "$v" = 1 ] || fail "sluice_timers_read_time_base_total{reason=\"$why\"} is '$v', expected 1"
done
v=$(sluice_metric main "sluice_timers_read_time_base_total{pipeline=\"$PFX\",reason=\"missing\"}")
[ "$v" = 0 ] || fail "sluice_timers_read_time_base_total{reason=\"missing\"} is '$v', expected 0"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$now" <<'PY' || fail "due times not as expected"
import sys
from records import load, hdrs as hd
inp, out, t0 = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
src = {r["key"]: r for r in inp}
due = {r["key"]: int(hd(r)["sluice-due"]) for r in out}
errors = []
if sorted(due) != ["future", "past", "usable"]:
    errors.append(f"fired: {sorted(due)}")
if due.get("usable") != src["usable"]["ts"] + 3000:
    errors.append(f"usable: due {due.get('usable', 0) - src['usable']['ts']} ms after its timestamp, expected 3000")
# Read time + 3 s: after the first record was produced, and well before
# its +1 h timestamp (generous bounds: the read time is sluice's).
for k in ("future", "past"):
    d = due.get(k, 0) - t0
    if not 3000 <= d <= 60000:
        errors.append(f"{k}: due {d} ms after the test produced it, expected read time + 3 s")
for e in errors:
    print(e)
print(f"due after produce: future {due.get('future', 0) - t0} ms, past {due.get('past', 0) - t0} ms; usable {due.get('usable', 0) - src['usable']['ts']} ms after its timestamp")
sys.exit(1 if errors else 0)
PY
note "timestamps +1 h and 2005 counted from the read time; -1 s from the timestamp"
