#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0125-delay-resume-wakes — an input partition paused while sluice looks a
# target topic up is fetched again as soon as the lookup answers.
#
# A record whose target the instance has not met yet pauses its partition
# until the topic's metadata comes back (a few ms).  librdkafka 2.0.2 does
# not wake its broker thread on a resume: when every partition that broker
# fetched for us was paused, the thread slept out its 1 s block first, and
# the records behind the pause were read a second late (in 0106, 1 s
# timers due on arrival).  With one input partition every pause is "all
# partitions": without the fix, 7 of these 8 rounds took a second.
#
# 8 rounds: each a timer with sluice-delay=1ms to a target new to this
# instance; each must fire within 500 ms of being produced.
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

ROUNDS=8
BOUND_MS=500

base_conf "$conf"
# The Fetch in flight comes back before the lookup answers (fetch.wait.max.ms
# 1 ms): the broker thread then finds the partition paused and goes idle.
conf_set "$conf" kafka fetch.wait.max.ms=1
dl_pipeline "$conf" "$PFX" "$in" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
for r in $(seq 1 $ROUNDS); do topic_create "$PFX.out$r" 1; done
sluice_up main "$conf"
for r in $(seq 1 $ROUNDS); do
    echo "t$r:v$r" | produce "$in" -K: -H "sluice-target=$PFX.out$r" -H sluice-delay=1ms
    wait_records "$PFX.out$r" 1 30 || fail "round $r: the timer did not fire within 30 s"
done
sluice_alive main || fail "sluice exited"

consume_json "$in" >"$WORK/in.json"
for r in $(seq 1 $ROUNDS); do consume_json "$PFX.out$r"; done >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$BOUND_MS" <<'PY' || fail "input read late after a lookup"
import sys
from records import load
src = {r["key"]: r["ts"] for r in load(sys.argv[1])}
bound = int(sys.argv[3])
lat = {r["key"]: r["ts"] - src[r["key"]] for r in load(sys.argv[2])}
print("# produced -> fired: " + ", ".join(f"{k} {ms} ms" for k, ms in sorted(lat.items())))
late = [k for k, ms in lat.items() if ms >= bound]
for k in sorted(late):
    print(f"ERROR: {k} fired {lat[k]} ms after it was produced (bound {bound} ms)", file=sys.stderr)
sys.exit(1 if late or len(lat) != len(src) else 0)
PY
echo "PASS"
