# SPDX-License-Identifier: Apache-2.0
# bench/sections/40-throttle.sh — the throttle operator against SPEC §6:
#
#   throttle_pass     every key under its rate: records forwarded per second
#                     (input loaded first, sluice started; timed from
#                     ready, as eos_copy is from its first record, until
#                     every record is visible), as a ratio to the baseline
#                     copy; start → visible as info; CPU µs per record
#                     (utime + stime of sluice over ready → visible); as
#                     info, how long commits held the input (FLUSHING)
#                     and each commit phase's p50/p99
#   throttle_drain    10,000 keys at 2/s (burst 1) with 60 messages each
#                     loaded at once: the drain rate in two 10 s windows
#                     (output record timestamps from the first drained
#                     record; the metric sampled every 10 s as info)
#                     against the configured 20,000/s; index bytes per buffered message
#                     (sluice_throttle_index_bytes / backlog messages)
#   throttle_rebuild  1M messages buffered behind 1,000 stopped keys (rate
#                     0): SIGTERM, restart, time until ready and overflow
#                     records re-read per second
#
# 100-byte payloads, 4 partitions, round-robin; each section has its own
# pipeline, topics, consumer group and sluice process.
#
# Environment (all optional):
#   BENCH_THROTTLE_PASS       records in throttle_pass (1000000)
#   BENCH_THROTTLE_KEYS       keys in throttle_drain (10000)
#   BENCH_THROTTLE_REBUILD    buffered messages in throttle_rebuild (1000000)

bench_register throttle_pass 150 "throttle: pass-through, every key under its rate"
bench_register throttle_drain 150 "throttle: drain accuracy, 10k keys, 10 s windows; index bytes per message"
bench_register throttle_rebuild 200 "throttle: rebuild of a 1M-message backlog"

# _thr_pipeline NAME [key=value ...] — topics $BENCH_ID.NAME.{in,out} (4
# partitions), config $BENCH_WORK/NAME.ini (own app_id, metrics on a free
# port) with the given pipeline keys; prints the metrics port.
_thr_pipeline() {
    local name=$1 t=$BENCH_ID.$1 conf=$BENCH_WORK/$1.ini port kv
    shift
    port=$(bench_free_port)
    bench_topic "$t.in" 4
    bench_topic "$t.out" 4
    bench_conf "$conf" "127.0.0.1:$port"
    sed -i "s/^app_id = .*/app_id = $t/" "$conf"
    {
        echo "[pipeline $name]"
        echo "type = throttle"
        echo "input = $t.in"
        echo "output = $t.out"
        echo "changelog = $t.changelog"
        echo "overflow = $t.overflow"
        echo "rates = $t.rates"
        echo "dlq = $t.dlq"
        for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
    } >>"$conf"
    bench_run 60 "topics-apply-$name" "$SLUICE_BIN" topics apply -c "$conf" >/dev/null ||
        bench_fail "sluice topics apply -c $conf failed"
    echo "$port"
}

_thr_start() {
    bench_sluice_start "$1" "$BENCH_WORK/${3:-$1}.ini"
    bench_wait_until 120 bench_ready "$2" || {
        tail -20 "$BENCH_WORK/sluice-$1.log" >&2
        bench_fail "sluice[$1] not ready within 120 s"
    }
}

_thr_m() { bench_metric "$1" "sluice_throttle_$2" 2>/dev/null || echo 0; }

section_throttle_pass() {
    local name=tpass t=$BENCH_ID.tpass n=${BENCH_THROTTLE_PASS:-1000000}
    local port line t0 tr t1 secs rsecs rate srate
    port=$(_thr_pipeline "$name" "default_rate=10000000/s")
    line=$(bench_load "$t.in" "$n" 100 --keys 1000)
    bench_log "throttle_pass: $line"
    t0=$(date +%s%N)
    _thr_start "$name" "$port"
    # Ready = assigned, rebuilt, rates table read: the input resumes now.
    # eos_copy's clock starts at its first record consumed (its group join
    # excluded), so the comparable sluice clock starts here.
    tr=$(date +%s%N)
    local pid c0 c1
    pid=$(bench_sluice_pid "$name")
    c0=$(bench_cpu_ticks "$pid")
    # A read_committed reader follows the output from now on: the clock
    # stops when the last record is visible (reading 1M records only after
    # the last was forwarded would add ~2 s that eos_copy never pays).
    bench_consume "$t.out" "$n" >"$BENCH_WORK/$name.consume" &
    local cpid=$!
    bench_wait_until 180 bench_metric_is "$port" sluice_throttle_forwarded_total "$n" ||
        bench_fail "forwarded $(_thr_m "$port" forwarded_total) of $n in 180 s"
    local tf
    tf=$(date +%s%N)
    wait "$cpid" || bench_fail "reading $t.out failed"
    t1=$(date +%s%N)
    bench_log "throttle_pass: all forwarded (the metric, polled every 0.1 s) $(awk -v a="$tr" -v b="$tf" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') s after ready"
    c1=$(bench_cpu_ticks "$pid")
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "throttle_pass: $line"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rsecs=$(awk -v a="$tr" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rate=$(awk -v n="$n" -v s="$rsecs" 'BEGIN { printf "%.0f", n / s }')
    srate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    bench_log "throttle_pass: $n forwarded and visible in ${rsecs}s after ready, ${secs}s after start"
    bench_figure throttle_pass "pass-through, keys under rate (ready → all visible)" "$rate" rec/s "$(bench_ratio "$rate")" ">= 0.9"
    bench_cpu_figure throttle_pass "  CPU µs per record (ready → all visible)" "$(bench_cpu_us_per "$c0" "$c1" "$n")"
    bench_figure throttle_pass "  (info) start → all visible (group join, rebuild)" "$srate" rec/s "$(bench_ratio "$srate")"
    bench_figure throttle_pass "  (info) appended to the backlog" "$(_thr_m "$port" appended_total)" ""
    bench_figure throttle_pass "  (info) peak RSS" "$(bench_peak_rss "$(bench_sluice_pid "$name")")" kB
    # The input is held while a commit waits for the reports its
    # checkpoints need (FLUSHING, the "flush" phase); the rest of a commit
    # runs on the worker while input goes on.
    local held
    held=$(bench_metric "$port" sluice_txn_commit_phase_seconds_sum 'phase="flush"' || echo 0)
    bench_figure throttle_pass "  (info) input held for commits (FLUSHING), in all" \
        "$(awk -v s="$held" 'BEGIN { printf "%.3f", s }')" s
    bench_figure throttle_pass "  (info) commit phases p50/p99: flush, offsets, deliver, end" \
        "$(bench_commit_phases_ms "$port")" ms
    bench_sluice_stop "$name"
}

section_throttle_drain() {
    local name=tdrain t=$BENCH_ID.tdrain keys=${BENCH_THROTTLE_KEYS:-10000}
    local per=60 n port line want d0 d1 d2 w1 w2 e1 e2 idx msgs
    n=$((keys * per))
    want=$((keys * 2 * 10))
    port=$(_thr_pipeline "$name" "default_rate=2/s burst=1")
    _thr_start "$name" "$port"
    line=$(bench_load "$t.in" "$n" 100 --keys "$keys")
    bench_log "throttle_drain: $line"
    # Let the load settle into the backlog, then two 10 s windows.
    sleep 3
    msgs=$(_thr_m "$port" backlog_messages)
    idx=$(_thr_m "$port" index_bytes)
    local tstart
    tstart=$(date +%s%3N)
    d0=$(_thr_m "$port" drained_total)
    sleep 10
    d1=$(_thr_m "$port" drained_total)
    sleep 10
    d2=$(_thr_m "$port" drained_total)
    w1=$((d1 - d0))
    w2=$((d2 - d1))
    e1=$(awk -v a="$w1" -v w="$want" 'BEGIN { printf "%+.2f", (a - w) * 100 / w }')
    e2=$(awk -v a="$w2" -v w="$want" 'BEGIN { printf "%+.2f", (a - w) * 100 / w }')
    bench_log "throttle_drain: drained $w1 then $w2 in 10 s windows sampled from the metric (configured $want); backlog $msgs, index $idx B"
    # The keys drain in step (all got their token at once): 10,000 records
    # every 500 ms, so a window at an arbitrary phase catches a burst more
    # or less (up to +-5%).  The figure counts the output records by their
    # timestamps in two 10 s windows from the start of the first burst
    # after the input was consumed (the first sample above; during the load
    # the drain competes with 600k appends on 2 cores).
    local ts=$BENCH_WORK/$name.ts tw
    timeout 60 kcat -C -b "$BENCH_BOOTSTRAP" -t "$t.out" -e -q \
        -X isolation.level=read_committed -f '%T\n' >"$ts" 2>/dev/null ||
        bench_fail "reading $t.out with kcat failed"
    tw=$(sort -n "$ts" | awk -v from="$tstart" '
        !t0 && $1 >= from && prev && $1 - prev > 100 { t0 = $1 }
        t0 { if ($1 < t0 + 10000) a++; else if ($1 < t0 + 20000) b++ }
        { prev = $1 }
        END { print a + 0, b + 0 }')
    read -r w1 w2 <<<"$tw"
    e1=$(awk -v a="$w1" -v w="$want" 'BEGIN { printf "%+.2f", (a - w) * 100 / w }')
    e2=$(awk -v a="$w2" -v w="$want" 'BEGIN { printf "%+.2f", (a - w) * 100 / w }')
    bench_log "throttle_drain: by record timestamps from the first burst after $tstart: $w1 then $w2 (configured $want)"
    bench_figure throttle_drain "drain, $keys keys at 2/s: 10 s window 1 vs configured" "$e1" % "" "within 1%"
    bench_figure throttle_drain "drain, $keys keys at 2/s: 10 s window 2 vs configured" "$e2" % "" "within 1%"
    bench_figure throttle_drain "  (info) windows sampled from the metric" \
        "$(awk -v a="$((d1 - d0))" -v b="$((d2 - d1))" -v w="$want" 'BEGIN { printf "%+.2f/%+.2f", (a - w) * 100 / w, (b - w) * 100 / w }')" %
    bench_figure throttle_drain "backlog index per buffered message" \
        "$(awk -v i="$idx" -v m="$msgs" 'BEGIN { if (m > 0) printf "%.1f", i / m; else print "n/a" }')" B "" "<= 32 B"
    bench_figure throttle_drain "  (info) buffered messages when measured" "$msgs" ""
    bench_sluice_stop "$name"
}

section_throttle_rebuild() {
    local name=trebuild t=$BENCH_ID.trebuild n=${BENCH_THROTTLE_REBUILD:-1000000}
    local port line want t0 ready_ms log last recs maxs rss
    port=$(_thr_pipeline "$name" "default_rate=0/s burst=1")
    _thr_start "${name}_a" "$port" "$name"
    line=$(bench_load "$t.in" "$n" 100 --keys 1000)
    bench_log "throttle_rebuild: $line"
    want=$n # 0/s holds every message, the first of each key too
    bench_wait_until 180 bench_metric_is "$port" sluice_throttle_backlog_messages "$want" ||
        bench_fail "backlog $(_thr_m "$port" backlog_messages) of $want in 180 s"
    sleep 2
    bench_sluice_stop "${name}_a"
    t0=$(date +%s%3N)
    bench_sluice_start "${name}_b" "$BENCH_WORK/$name.ini"
    log=$BENCH_WORK/sluice-${name}_b.log
    bench_wait_until 120 bench_ready "$port" || {
        tail -20 "$log" >&2
        bench_fail "restarted sluice not ready within 120 s"
    }
    last=$(grep 'REBUILD .*rebuilt from' "$log" | tail -1 | cut -d' ' -f1)
    ready_ms=$(($(date -u -d "$last" +%s%3N) - t0))
    bench_metric_is "$port" sluice_throttle_backlog_messages "$want" ||
        bench_fail "after the rebuild $(_thr_m "$port" backlog_messages) of $want buffered"
    rss=$(bench_rss "$(bench_sluice_pid "${name}_b")")
    # "<pipeline> [p]: rebuilt from N changelog records and M source records in X s"
    read -r recs maxs < <(sed -n 's/.*rebuilt from \([0-9]*\) changelog records and \([0-9]*\) source records in \([0-9.]*\) s.*/\1 \2 \3/p' "$log" |
        awk '{ r += $1 + $2; if ($3 > m) m = $3 } END { print r + 0, m + 0 }')
    bench_log "throttle_rebuild: $recs records, slowest partition ${maxs}s, ready after ${ready_ms} ms"
    bench_figure throttle_rebuild "rebuild of $want buffered messages: start → ready" "$ready_ms" ms "" "1M in <= 2 s"
    bench_figure throttle_rebuild "rebuild records/s (changelog + overflow, slowest partition)" \
        "$(awk -v r="$recs" -v s="$maxs" 'BEGIN { if (s > 0) printf "%.0f", r / s; else print "n/a" }')" rec/s "" ">= 500k"
    bench_figure throttle_rebuild "  (info) VmRSS after the rebuild" "$rss" kB
    bench_sluice_stop "${name}_b"
}
