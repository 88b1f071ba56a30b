# SPDX-License-Identifier: Apache-2.0
# bench/sections/25-delay-scale.sh — the delay operator at scale (issue 49's
# targets):
#
#   delay_scale   for each count N of BENCH_SCALE_COUNTS, in a fresh
#                 pipeline (topics, consumer group, sluice process): N
#                 timers pending, 16-byte ids, payloads of
#                 BENCH_SCALE_PAYLOAD bytes, each due at a uniform random
#                 time between 1 h and 7 d after it was written (load
#                 --random-at: random due order), then
#                   - RSS per pending timer INCLUDING its key and payload,
#                     beyond the same sluice with 0 pending (same config,
#                     measured first)
#                   - while the N are pending, a steady stream of
#                     BENCH_SCALE_RATE timers/s for BENCH_SCALE_SECS
#                     seconds, each due BENCH_SCALE_DELAY after it was
#                     written: lateness due → produced (the output record's
#                     timestamp) and due → visible (read_committed),
#                     p50/p99, as delay_lateness measures them
#                   - kill -9, restart: restart → ready (/readyz 200, every
#                     partition rebuilt; timed from the log as
#                     delay_rebuild does) and the rebuild's records/s
#                 and, from the second count on, how each figure grew from
#                 the previous N.
#
# No pending timer falls due during the run (the earliest is 1 h away), so
# exactly N stay pending throughout and the stream's reader reads only the
# stream.  The stream's ids are 17 bytes ("k" + 16 digits), so they never
# reschedule one of the N (16 bytes).  Input and output have 4 partitions.
#
# Today's default caps (max_pending_timers 5M, max_pending_bytes 1 GiB)
# pause the input at ~900k timers of 1 KiB; each pipeline here sets both to
# twice what the N and the stream hold, so a cap is never what is measured
# (printed as an (info) row).  A count whose timers would not fit the
# machine's MemAvailable (1.5 × (id + payload + 100 B) a timer, plus 1 GiB)
# is skipped with a row saying so.  sluice runs with instance_id set (static
# membership), as a deployment that restarts in place does: the restarted
# process takes the killed one's partitions at once instead of waiting out
# its session timeout (45 s).
#
# BENCH_SCALE_PAYLOADS=kafka measures the other mode of the operator: the
# pipeline sets payload_topic = $BENCH_ID.NAME.payloads (created by `sluice
# topics apply` with the rest, checked compacted before the load), so the
# pending timers' payloads live in that topic and memory keeps their index
# and payload_cache (default 64 MiB).  Every figure line names the mode
# (memory or kafka); the kafka mode adds (info) rows of
# sluice_timer_payload_reads_total and of the DLQ's records, and judges
# whether a count fits MemAvailable by the index (100 B a timer, with room)
# and the cache, not by the payloads.  The load gets a deadline from the
# count (not bench_load's 200 s): 10M × 1 KiB is 10 GB to write while
# sluice writes as much again to the payload topic.
#
# Environment (all optional):
#   BENCH_SCALE_PAYLOADS  where pending payloads live: memory (the default:
#                         no payload_topic) or kafka (payload_topic set)
#   BENCH_SCALE_COUNTS    pending counts, comma-separated, run in this order
#                         (1000000)
#   BENCH_SCALE_PAYLOAD   payload bytes of every timer (1024)
#   BENCH_SCALE_RATE      timers/s of the lateness stream (2000)
#   BENCH_SCALE_STREAM_PAYLOAD  payload bytes of the stream's timers
#                         (BENCH_SCALE_PAYLOAD): 2k/s of 64 KiB is 131 MB/s
#                         in, as much to the payload topic and out, more
#                         than 2 cores carry; 1024 measures the lateness of
#                         1 KiB timers among N pending 64 KiB ones
#   BENCH_SCALE_SECS      seconds of the lateness stream (20)
#   BENCH_SCALE_DELAY     the stream's sluice-delay (3s)
#   BENCH_SCALE_BUDGET    the section's budget in seconds (default: from the
#                         counts and payload, see _scale_budget)

# _scale_budget — seconds for the counts and payload of the environment:
# 60 s, plus per count 40 s (pipeline, starts, settling), the stream and 40
# s per GiB of timers (id + payload).  About twice what it took on 2 cores
# (2026-12-06): 1M × 1 KiB was 43 s in all, of which 12.5 s load → all
# pending, 23 s the stream, 2.2 s restart → ready; 250k × 1 KiB 33 s.
# With BENCH_SCALE_PAYLOADS=kafka every payload is written twice more
# (payload topic, its transaction): 120 s per GiB.
_scale_budget() {
    local c secs=60 b per=40
    local -a counts
    [ "${BENCH_SCALE_PAYLOADS:-memory}" = kafka ] && per=120
    IFS=, read -r -a counts <<<"${BENCH_SCALE_COUNTS:-1000000}"
    for c in "${counts[@]}"; do
        b=$((c * (16 + ${BENCH_SCALE_PAYLOAD:-1024})))
        secs=$((secs + 40 + ${BENCH_SCALE_SECS:-20} + b * per / 1073741824))
    done
    echo "${BENCH_SCALE_BUDGET:-$secs}"
}

bench_register delay_scale "$(_scale_budget)" "delay at scale: RSS per pending timer incl. key+payload, lateness at 2k/s and restart → ready with N pending (issue 49)"

# _scale_label N — 1000000 → 1M, 250000 → 250k.
_scale_label() {
    awk -v n="$1" 'BEGIN {
        if (n >= 1e6 && n % 1e5 == 0) printf "%gM\n", n / 1e6
        else if (n >= 1e3 && n % 100 == 0) printf "%gk\n", n / 1e3
        else print n }'
}

# _scale_mode — memory or kafka, from BENCH_SCALE_PAYLOADS; fails on
# anything else.
_scale_mode() {
    case ${BENCH_SCALE_PAYLOADS:-memory} in
    memory | kafka) echo "${BENCH_SCALE_PAYLOADS:-memory}" ;;
    *) bench_fail "BENCH_SCALE_PAYLOADS=$BENCH_SCALE_PAYLOADS: expected memory or kafka" ;;
    esac
}

# _scale_fits N KP MODE — true when N timers of KP bytes (id + payload) fit
# in MemAvailable now with room to spare; in kafka mode memory holds the
# index (counted as 100 B a timer) and payload_cache (64 MiB), not KP.
_scale_fits() {
    local avail
    avail=$(awk '/^MemAvailable:/ { print $2 * 1024 }' /proc/meminfo)
    awk -v n="$1" -v kp="$2" -v m="$3" -v a="$avail" 'BEGIN {
        need = (m == "kafka" ? n * 100 * 1.5 + 2^26 : n * (kp + 100) * 1.5)
        exit !(need + 2^30 <= a) }'
}

# _scale_run N P — one count: figures, and "N RSS_PER P50 P99 RESTART_S"
# appended to $BENCH_WORK/dscale.results.
_scale_run() {
    local n=$1 p=$2 name=dscale$1 t=$BENCH_ID.dscale$1 lbl kp capn capb port
    local pid rss0 rss1 hwm1 rssb hwmb t0 secs line wait bytes mem per
    local lline p50 p99 ready_ms recs maxs mode extra="" reads reads0 dlq warns
    local rate=${BENCH_SCALE_RATE:-2000} ssecs=${BENCH_SCALE_SECS:-20}
    mode=$(_scale_mode)
    lbl="$(_scale_label "$n") × $p B, $mode"
    kp=$((DELAY_KEY_LEN + p))
    if ! _scale_fits "$n" "$kp" "$mode"; then
        bench_log "delay_scale: $lbl would not fit in MemAvailable: skipped"
        bench_figure delay_scale "$lbl: skipped, more than MemAvailable" - ""
        return 0
    fi
    capn=$((2 * (n + rate * ssecs)))
    capb=$((2 * (n + rate * ssecs) * (kp + 1)))
    [ "$mode" = kafka ] && extra="payload_topic = $t.payloads"
    port=$(_delay_pipeline "$name" "max_pending_timers = $capn
max_pending_bytes = $capb
$extra")
    sed -i "s/^app_id = .*/&\ninstance_id = $name/" "$BENCH_WORK/$name.ini"
    if [ "$mode" = kafka ]; then
        # `topics apply` made it with the changelog: say what it made.
        line=$("$SLUICE_BIN" topics describe -c "$BENCH_WORK/$name.ini" "$t.payloads") ||
            bench_fail "payload topic $t.payloads: $line"
        bench_log "delay_scale: $line"
        case $line in *cleanup.policy=compact*) ;; *) bench_fail "payload topic not compacted: $line" ;; esac
    fi
    # Deadlines, not sleeps: 4 MB/s of timers (id + payload) is 8 times
    # slower than this machine schedules or rebuilds them.
    wait=$((60 + n * kp / 4000000))

    # --- RSS with 0, then with N pending ---------------------------------
    _delay_start "${name}_a" "$port" "$name"
    pid=$(bench_sluice_pid "${name}_a")
    sleep 1
    rss0=$(bench_rss "$pid")
    bench_log "delay_scale: $lbl: ready with 0 pending: VmRSS ${rss0} kB"
    t0=$(date +%s%N)
    # bench_load's deadline (200 s) is short for 10M × 1 KiB: the same
    # load with one from the count.
    line=$(bench_run "$wait" "load-$t.in" "$BENCH_BIN/load" -b "$BENCH_BOOTSTRAP" \
        -t "$t.in" -n "$n" -s "$p" --timeout "$wait" --partitioner murmur2_random \
        --key-len "$DELAY_KEY_LEN" -H sluice-target="$t.out" \
        --random-at sluice-at=1h..7d) || bench_fail "load into $t.in failed"
    bench_log "delay_scale: $line"
    secs=$(_delay_until_pending "$port" "$n" "$wait" "$t0")
    rss1=$(_delay_rss_settled "$pid")
    hwm1=$(bench_peak_rss "$pid")
    bytes=$(bench_metric "$port" sluice_timers_pending_bytes)
    mem=$(bench_metric "$port" sluice_timers_memory_bytes) || mem=n/a
    per=$(awk -v a="$rss0" -v b="$rss1" -v n="$n" 'BEGIN { printf "%.0f", (b - a) * 1024 / n }')
    bench_log "delay_scale: $lbl: $n pending after ${secs}s: VmRSS ${rss1} kB (peak $hwm1), $per B a timer"

    # --- the stream, while the N are pending -----------------------------
    _delay_stream "$name" "$rate" "$ssecs" "${BENCH_SCALE_DELAY:-3s}" \
        "${BENCH_SCALE_STREAM_PAYLOAD:-$p}" --key-len 17
    line=$(cat "$BENCH_WORK/$name.consume")
    lline=$(cat "$BENCH_WORK/$name.load")
    p50=$(bench_field "$line" produced_p50_ms)
    p99=$(bench_field "$line" produced_p99_ms)
    bench_metric_is "$port" sluice_timers_pending "$n" ||
        bench_fail "after the stream $(bench_metric "$port" sluice_timers_pending) timers pending, expected $n"
    reads0=$(bench_metric "$port" sluice_timer_payload_reads_total) || reads0=n/a

    # --- kill -9, restart, time to ready ----------------------------------
    bench_sluice_stop "${name}_a" KILL
    ready_ms=$(_delay_restart "${name}_b" "$port" "$name" "$wait")
    pid=$(bench_sluice_pid "${name}_b")
    rssb=$(_delay_rss_settled "$pid")
    hwmb=$(bench_peak_rss "$pid")
    read -r recs maxs < <(_delay_rebuilt "${name}_b")
    bench_log "delay_scale: $lbl: restart → ready ${ready_ms} ms; rebuilt $recs records, slowest partition ${maxs}s"
    bench_metric_is "$port" sluice_timers_pending "$n" ||
        bench_fail "after the rebuild $(bench_metric "$port" sluice_timers_pending) of $n timers pending"
    [ "$recs" -ge "$n" ] || bench_fail "rebuild read $recs changelog records, expected ≥ $n"
    reads=$(bench_metric "$port" sluice_timer_payload_reads_total) || reads=n/a
    bench_sluice_stop "${name}_b"
    dlq=$(bench_count "$t.dlq") || dlq=n/a
    [ "$dlq" = 0 ] || bench_log "delay_scale: $lbl: $dlq records in $t.dlq"
    # Both processes' warning and error lines (a payload not found, a fetch
    # that failed): counted, the first few logged.
    warns=$(cat "$BENCH_WORK/sluice-${name}_a.log" "$BENCH_WORK/sluice-${name}_b.log" |
        grep -c -E 'Z (emerg|alert|crit|error|warning) ') || true
    [ "$warns" = 0 ] || grep -h -E 'Z (emerg|alert|crit|error|warning) ' "$BENCH_WORK/sluice-${name}_a.log" \
        "$BENCH_WORK/sluice-${name}_b.log" | head -5 | sed 's/^/    /' >&2

    # --- figures ------------------------------------------------------------
    bench_figure delay_scale "$lbl: RSS per pending timer, incl. key+payload" "$per" B "" "<= 40 B (10M)"
    if [ "$mode" = kafka ]; then
        # The payload is in the payload topic: what is beyond the id.
        bench_figure delay_scale "  of which beyond the id ($DELAY_KEY_LEN B; payload in Kafka)" "$((per - DELAY_KEY_LEN))" B
    else
        bench_figure delay_scale "  of which beyond key+payload ($kp B)" "$((per - kp))" B "" "<= 64 B"
    fi
    bench_figure delay_scale "  VmRSS 0 pending / N pending / peak" "$rss0/$rss1/$hwm1" kB
    bench_figure delay_scale "  (info) pending_bytes / timers_memory per timer" \
        "$(awk -v b="$bytes" -v m="$mem" -v n="$n" 'BEGIN {
            printf "%.0f/%s\n", b / n, (m == "n/a" ? m : sprintf("%.0f", m / n)) }')" B
    bench_figure delay_scale "  (info) load → all pending" "$secs" s \
        "" "$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f timers/s", n / s }')"
    bench_figure delay_scale "  lateness due → produced p50/p99, $rate/s of ${BENCH_SCALE_STREAM_PAYLOAD:-$p} B" "$p50/$p99" ms "" "p99 <= 15 ms"
    bench_figure delay_scale "  due → visible (read_committed) p50/p99" \
        "$(bench_field "$line" lateness_p50_ms)/$(bench_field "$line" lateness_p99_ms)" ms
    bench_figure delay_scale "  (info) stream load rate, produced max" \
        "$(bench_field "$lline" rate)/$(bench_field "$line" produced_max_ms)" "/s,ms"
    bench_figure delay_scale "  restart (kill -9) → ready, every partition rebuilt" \
        "$(awk -v m="$ready_ms" 'BEGIN { printf "%.2f", m / 1000 }')" s "" "<= 10 s (10M)"
    bench_figure delay_scale "  rebuild records/s, slowest partition" \
        "$(awk -v r="$recs" -v s="$maxs" 'BEGIN { printf "%.0f", (s > 0 ? r / s : 0) }')" rec/s
    bench_figure delay_scale "  VmRSS after rebuild / peak during it" "$rssb/$hwmb" kB
    bench_figure delay_scale "  (info) caps: max_pending_timers / _bytes" "$capn/$capb" ""
    bench_figure delay_scale "  (info) payload reads: after the stream / restarted, once ready" "$reads0/$reads" ""
    bench_figure delay_scale "  (info) DLQ records, warning+error log lines" "$dlq/$warns" ""
    echo "$n $per $p50 $p99 $ready_ms" >>"$BENCH_WORK/dscale.results"
}

section_delay_scale() {
    local p=${BENCH_SCALE_PAYLOAD:-1024} n prev mode
    local -a counts a b
    mode=$(_scale_mode)
    IFS=, read -r -a counts <<<"${BENCH_SCALE_COUNTS:-1000000}"
    bench_log "delay_scale: sluice $(_delay_build_id), counts ${counts[*]}, $p B payloads in $mode"
    bench_figure delay_scale "(info) sluice build measured" "$(_delay_build_id)" ""
    bench_figure delay_scale "(info) payloads in (BENCH_SCALE_PAYLOADS)" "$mode" ""
    : >"$BENCH_WORK/dscale.results"
    for n in "${counts[@]}"; do
        prev=$(tail -1 "$BENCH_WORK/dscale.results")
        _scale_run "$n" "$p"
        [ -n "$prev" ] && [ "$(tail -1 "$BENCH_WORK/dscale.results")" != "$prev" ] || continue
        # Growth from the previous count: RSS per timer and restart time
        # as ratios; lateness (whole ms, often 0 at p50) as before → after.
        read -r -a a <<<"$prev"
        read -r -a b <<<"$(tail -1 "$BENCH_WORK/dscale.results")"
        bench_figure delay_scale "growth $(_scale_label "${a[0]}") → $(_scale_label "${b[0]}"), $mode (×$(awk -v x="${a[0]}" -v y="${b[0]}" 'BEGIN { printf "%g", y / x }') timers): RSS/timer, restart → ready" \
            "$(awk -v a="${a[*]}" -v b="${b[*]}" 'BEGIN {
                split(a, x, " "); split(b, y, " ")
                for (i = 2; i <= 5; i += 3)
                    r[i] = (x[i] > 0 ? sprintf("×%.2f", y[i] / x[i]) : "n/a")
                print r[2] "/" r[5] }')" ""
        bench_figure delay_scale "  lateness due → produced p50/p99, before → after" \
            "${a[2]}/${a[3]} → ${b[2]}/${b[3]}" ms
    done
}
