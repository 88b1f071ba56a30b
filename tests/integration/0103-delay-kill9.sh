#!/usr/bin/env bash
# 0103-delay-kill9 — the crash test (SPEC §4: "a kill -9 at any moment loses
# nothing and duplicates nothing").
#
# 10,000 timers on a 4-partition input, due over ~20 s (100 groups of 100
# with one sluice-at each, 200 ms apart).  While they are read, pending and
# firing, sluice is SIGKILLed at random moments (gaps of 1–4 s), at least 5
# times, and restarted at once with the same instance_id (the new
# transactional producer fences the dead one's open transaction).  At the
# end every timer id must appear exactly once in the target read with
# read_committed, at its due time or after.
# variant: asan
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini
groups=100
per_group=100
total=$((groups * per_group))
min_kills=5

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = delay
input = $in
input_partitions = 4
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 4 >/dev/null

port=$(free_port)
start() {
    SLUICE_INSTANCE_ID=$PFX-0 SLUICE_METRICS_LISTEN=127.0.0.1:$port \
        sluice_start main "$conf"
}
start
sluice_wait_ready main "$port" 30
echo "sluice ready on $in -> $out"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
first_due=$((t0 + 4000))
last_due=$((first_due + (groups - 1) * 200))

# Producing 100 kcat invocations, 10 at a time, in the background: the kills
# start while the input is still being read.
(
    for b in $(seq 0 10 $((groups - 1))); do
        pids=()
        for g in $(seq "$b" $((b + 9))); do
            at=$((first_due + g * 200))
            seq 0 $((per_group - 1)) | sed "s/.*/g$g-&:payload-g$g-&/" |
                produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$at" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || exit 1; done
    done
) &
producer=$!

kills=0
kill_log=""
while [ "$kills" -lt "$min_kills" ] || [ "$(now_ms)" -lt "$((last_due - 2000))" ]; do
    gap_ms=$((1000 + RANDOM % 3001))
    sleep "$((gap_ms / 1000)).$(printf '%03d' $((gap_ms % 1000)))"
    sluice_alive main || fail "sluice died by itself before kill $((kills + 1))"
    sluice_kill main KILL || true
    kills=$((kills + 1))
    kill_log="$kill_log +$((($(now_ms) - t0) / 100))ds"
    start
done
last_restart=$(now_ms)
wait "$producer" || fail "kcat failed to produce the timers"
note "$kills kills (SIGKILL) at$kill_log after the first record (ds = 0.1 s)"

# all_fired — every id visible once or more, and nothing pending in the
# changelog (so no further fire can come).
all_fired() {
    sluice_alive main || fail "sluice exited during the drain"
    local n
    n=$(consume_all "$out" -f '%k\n' | sort -u | wc -l)
    [ "$n" -ge "$total" ] || return 1
    "$SLUICE_BIN" inspect -c "$conf" "$PFX" | grep -q ': 0 pending timers'
}
wait_until 90 all_fired ||
    fail "not all timers fired within 90 s of the last restart: $(consume_all "$out" -f '%k\n' | sort -u | wc -l) distinct of $total"
done_at=$(now_ms)
note "final drain: all fired $((done_at - last_restart)) ms after the last restart, $((done_at - last_due)) ms after the last due time"

consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 "$(dirname "$0")/timers-check.py" "$WORK/in.json" "$WORK/out.json" "$total" ||
    fail "exactly-once check failed"
grep -E 'REBUILD .*rebuilt from' "$WORK/sluice-main.log" | tail -4 | sed 's/^/  /'
echo "PASS"
