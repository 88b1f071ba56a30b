#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0124-delay-from-timestamp — a sluice-delay counts from the record's
# timestamp, not from when sluice reads it (issue 10).
#
# 20 timers with sluice-delay=5s (headers) and 10 JSON envelopes with
# "countdown": 5 are produced while no sluice runs; sluice starts 4 s later.
# Each must be due exactly 5 s after its record's timestamp (sluice-due =
# timestamp + 5000) and fire within 1.5 s of the later of its due time and
# the moment sluice was ready (on a loaded machine sluice may start after
# the timers are due); counted from the read time they would fire 5 s
# after sluice was ready.  No record fell back to the
# read time (sluice_timers_read_time_base_total stays 0).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

N=20 E=10
DOWN_S=4
SLACK_MS=1500

dl_setup_pair 2

seq -f 'h-%02g:payload' 1 "$N" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=5s
for i in $(seq -f '%02g' 1 "$E"); do
    echo "e-$i:{\"topic\":\"$out\",\"message\":\"e-$i\",\"countdown\":5}"
done | produce "$ein" -K:
echo "produced $N + $E timers due 5 s after they were produced; sluice starts in $DOWN_S s"
sleep "$DOWN_S" # the scenario: sluice is down while the timers wait

sluice_up main "$conf"
t_ready=$(now_ms)
wait_records "$out" $((N + E)) 30 || fail "only $(count_records "$out") of $((N + E)) timers fired within 30 s"
sluice_alive main || fail "sluice exited"
for pl in "$PFX.d" "$PFX.e"; do
    for why in missing future past; do
        v=$(sluice_metric main "sluice_timers_read_time_base_total{pipeline=\"$pl\",reason=\"$why\"}")
        [ "$v" = 0 ] || fail "$pl: sluice_timers_read_time_base_total{reason=\"$why\"} is '$v', expected 0"
    done
done

consume_json "$in" >"$WORK/in.json"
consume_json "$ein" >"$WORK/ein.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/ein.json" "$WORK/out.json" "$SLACK_MS" "$t_ready" <<'PY' || fail "delays not counted from the record timestamps"
import sys
from records import load, hdrs as hd
inp, einp, out, slack = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3]), int(sys.argv[4])
ready = int(sys.argv[5])
src = {r["key"]: r for r in inp + einp}
errors, after = [], []
fired = {}
for r in out:
    k = r["key"]
    if k in fired:
        errors.append(f"{k} fired twice")
    fired[k] = r
for k, s in sorted(src.items()):
    r = fired.get(k)
    if not r:
        errors.append(f"{k} never fired")
        continue
    due = int(hd(r)["sluice-due"])
    if due != s["ts"] + 5000:
        errors.append(f"{k}: due {due - s['ts']} ms after its timestamp, expected 5000")
    ms = r["ts"] - s["ts"]
    after.append(ms)
    if r["ts"] < due:
        errors.append(f"{k}: fired {due - r['ts']} ms early")
    if r["ts"] > max(due, ready) + slack:
        errors.append(f"{k}: fired {r['ts'] - max(due, ready)} ms after it was due and sluice ready, "
                      f"{ms} ms after it was produced")
if after:
    print(f"# produced -> fired: min {min(after)} ms, max {max(after)} ms ({len(after)} timers, 5 s delay, sluice down the first 4 s)")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
