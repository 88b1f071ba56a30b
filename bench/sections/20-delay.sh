# SPDX-License-Identifier: Apache-2.0
# bench/sections/20-delay.sh — the delay operator against SPEC §6:
#
#   delay_rebuild   1M timers pending far in the future: memory per pending
#                   timer (RSS) after ingest, then SIGTERM and restart:
#                   changelog rebuild time and records/s, and memory per
#                   pending timer (RSS) again once rebuilt
#   delay_fire      1M timers due at the same instant: timers fired per
#                   second, due time → last one visible to read_committed;
#                   CPU µs per timer (utime + stime of sluice) scheduled
#                   (load → all pending) and fired (due → all visible)
#   delay_lateness  after 5 s of the same load unmeasured (a warm-up for
#                   the broker), a steady 2k, then 10k timers/s with a 2 s
#                   delay: lateness due → produced (the output record's
#                   timestamp) and due → visible to read_committed
#                   (p50/p99/max), sluice's own due → fired histogram, its
#                   commit times and how long the coordinator took to
#                   finish each commit
#   delay_recurring 10k, then 100k recurring timers `every 1s` (the same
#                   ids and payloads), after a 5 s warm-up: lateness due →
#                   produced and due → visible of every occurrence for 20 s,
#                   and CPU µs per occurrence over 10 s of it (beside the
#                   one-shot timers of delay_lateness and delay_fire)
#
# Every timer: a 16-byte id ("k" + 15 digits), a 100-byte payload, 4
# partitions, round-robin (the baseline's shape).  Each section runs its own
# pipeline, topics, consumer group and sluice process, with metrics on a
# free port; catchup_rate = 0 everywhere, so the catch-up limiter (which only
# throttles timers that fell due before a rebuild ended) is never what is
# measured.
#
# Environment (all optional):
#   BENCH_DELAY_TIMERS          timers in delay_rebuild and delay_fire (1000000)
#   BENCH_DELAY_FIRE_MARGIN     seconds between the start of the load and the
#                               common due time in delay_fire (default: twice
#                               what delay_rebuild took to schedule as many
#                               timers, plus 5 s, at least 15; 40 without it)
#   BENCH_DELAY_LATENESS_LOW_RATE  the first rate of delay_lateness (2000)
#   BENCH_DELAY_LATENESS_RATE   the second rate of delay_lateness (10000)
#   BENCH_DELAY_LATENESS_SECS   seconds of load in delay_lateness (20)
#   BENCH_DELAY_RECURRING       the schedules of delay_recurring's second
#                               run (100000; the first runs a tenth of it)
#   BENCH_DELAY_RECURRING_SECS  seconds of occurrences read (20)
#   BENCH_LATENESS_DUMP=PREFIX  delay_lateness's reader writes every record
#                               it read to PREFIX.dlate2k and PREFIX.dlate
#                               (consume --dump: partition, offset, due,
#                               timestamp, visible), to see which records
#                               were late and with which others

bench_register delay_rebuild 150 "delay: memory per pending timer (1M), changelog rebuild of 1M timers"
bench_register delay_fire 150 "delay: timers fired/s, 1M due at once"
bench_register delay_lateness 150 "delay: lateness due → produced and due → visible (read_committed) at a steady 2k and 10k timers/s; commit times"
bench_register delay_recurring 150 "delay: recurring timers every 1 s (10k, 100k): lateness due → produced and → visible, CPU per occurrence"

DELAY_KEY_LEN=16
DELAY_PAYLOAD=100

# _delay_pipeline NAME [LINES] — topics $BENCH_ID.NAME.{in,out} (4
# partitions), a config $BENCH_WORK/NAME.ini (its own app_id, metrics on a
# free port, catchup_rate = 0, and LINES: more `key = value` lines for the
# pipeline), its changelog and DLQ created by `sluice topics apply`.
# Prints the metrics port.
_delay_pipeline() {
    local name=$1 t=$BENCH_ID.$1 conf=$BENCH_WORK/$1.ini port
    port=$(bench_free_port)
    bench_topic "$t.in" 4
    bench_topic "$t.out" 4
    bench_conf "$conf" "127.0.0.1:$port"
    # One consumer group and transactional.id prefix per section.
    sed -i "s/^app_id = .*/app_id = $t/" "$conf"
    cat >>"$conf" <<EOF
[pipeline $name]
type = delay
input = $t.in
changelog = $t.changelog
dlq = $t.dlq
allowed_targets = $t.out
catchup_rate = 0
${2:-}
EOF
    bench_run 60 "topics-apply-$name" "$SLUICE_BIN" topics apply -c "$conf" >/dev/null ||
        bench_fail "sluice topics apply -c $conf failed"
    echo "$port"
}

# _delay_start NAME PORT [CONF_NAME [SECS]] — starts sluice NAME on the
# config $BENCH_WORK/CONF_NAME.ini (default NAME.ini) and waits (SECS,
# default 60) until /readyz on PORT answers 200.
_delay_start() {
    local secs=${4:-60}
    bench_sluice_start "$1" "$BENCH_WORK/${3:-$1}.ini"
    bench_wait_until "$secs" bench_ready "$2" || {
        tail -20 "$BENCH_WORK/sluice-$1.log" >&2
        bench_fail "sluice[$1] not ready within $secs s"
    }
}

# _delay_restart NAME PORT CONF_NAME [SECS] — _delay_start on a changelog
# that holds pending timers; prints the milliseconds from the start to the
# moment every partition was rebuilt.  /readyz turns 200 when the last
# partition logs "rebuilt from": that line is timed (polling /readyz finely
# would steal CPU from the rebuild).
_delay_restart() {
    local t0 last
    t0=$(_delay_now_ms)
    _delay_start "$@"
    last=$(grep 'REBUILD .*rebuilt from' "$BENCH_WORK/sluice-$1.log" | tail -1 | cut -d' ' -f1)
    [ -n "$last" ] || bench_fail "sluice[$1] is ready but logged no rebuild"
    echo $(($(date -u -d "$last" +%s%3N) - t0))
}

# _delay_rebuilt NAME — "RECORDS SECONDS" of sluice NAME's rebuild: the
# changelog records its partitions read and the slowest partition's
# seconds, from the REBUILD lines of its log ("<pipeline> [p]: rebuilt
# from N changelog records[ and M source records] in X s; ...": M, the
# records a delay with payload_topic read past its index, not counted).
_delay_rebuilt() {
    sed -n 's/.*REBUILD .* \[[0-9]*\]: rebuilt from \([0-9]*\) changelog records\( and [0-9]* source records\)\{0,1\} in \([0-9.]*\) s.*/\1 \3/p' \
        "$BENCH_WORK/sluice-$1.log" |
        awk '{ r += $1; if ($2 > m) m = $2 } END { print r + 0, m + 0 }'
}

# _delay_malloc PORT — "ALLOCATED RESIDENT" from sluice_malloc_bytes (bytes;
# "n/a" for a figure the allocator does not give).
_delay_malloc() {
    local a r
    a=$(bench_metric "$1" sluice_malloc_bytes 'kind="allocated"') || a=n/a
    r=$(bench_metric "$1" sluice_malloc_bytes 'kind="resident"') || r=n/a
    echo "$a $r"
}

# _delay_cpu_s STATFILE — user + system CPU seconds from a /proc stat file.
_delay_cpu_s() {
    # The command name (field 2) may hold spaces: count from after its ")".
    sed 's/.*) //' "$1" | awk -v hz="$(getconf CLK_TCK)" \
        '{ printf "%.2f", ($12 + $13) / hz }'
}

# _delay_rss_settled PID — VmRSS of PID in kB once it has stopped moving:
# two reads 0.3 s apart within 1 MB of each other (or the last read after
# 30 s).  sluice hands the rebuild's buffers back to the system
# (malloc_trim) just as /readyz turns 200, so a read at that instant may
# come before it.
_delay_rss_settled() {
    local pid=$1 a b end=$(($(date +%s) + 30))
    a=$(bench_rss "$pid")
    while :; do
        sleep 0.3
        b=$(bench_rss "$pid")
        if [ $((a > b ? a - b : b - a)) -le 1024 ] || [ "$(date +%s)" -ge "$end" ]; then
            echo "$b"
            return 0
        fi
        a=$b
    done
}

# _delay_until_pending PORT N SECS T0 — waits (SECS) until the sluice on
# PORT has read N input records, prints the seconds from T0 (date +%s%N)
# to then, and waits until N timers are pending, the consumer lag is 0
# and a quiet second or two has passed (the last transaction committed,
# the producer idle).  For an input that holds exactly N records: once N
# are in, the consumer's prefetch queue is empty too.
_delay_until_pending() {
    local port=$1 n=$2 secs=$3 t0=$4
    bench_wait_until "$secs" bench_metric_is "$port" sluice_records_in_total "$n" ||
        bench_fail "sluice read $(bench_metric "$port" sluice_records_in_total) of $n input records in $secs s"
    awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
    bench_wait_until 30 bench_metric_is "$port" sluice_timers_pending "$n" ||
        bench_fail "$(bench_metric "$port" sluice_timers_pending) of $n timers pending"
    # Lag from the watermarks (refreshed every second).
    bench_wait_until 10 bench_metric_is "$port" sluice_consumer_lag 0 ||
        bench_fail "consumer lag $(bench_metric "$port" sluice_consumer_lag) after all input was read"
    sleep 2
}

_delay_now_ms() {
    date +%s%3N
}

# _delay_past MS — true once the clock has reached epoch MS.
_delay_past() {
    [ "$(_delay_now_ms)" -ge "$1" ]
}

# The sluice build measured: commit, and "+dirty" when src/ differs from it.
_delay_build_id() {
    local id
    id=$(git -C "$BENCH_ROOT" rev-parse --short HEAD 2>/dev/null) || {
        echo unknown
        return 0
    }
    git -C "$BENCH_ROOT" diff --quiet HEAD -- src 2>/dev/null || id="$id+dirty"
    echo "$id"
}

section_delay_rebuild() {
    local name=drebuild t=$BENCH_ID.drebuild n=${BENCH_DELAY_TIMERS:-1000000}
    local port pid rss0 rss1 heap0 heap1 t0 line secs per kp bytes
    local ready_ms recs maxs rate rssb hwmb log cpu_loop cpu_all mem
    kp=$((DELAY_KEY_LEN + DELAY_PAYLOAD))

    port=$(_delay_pipeline "$name")
    bench_log "delay_rebuild: sluice $(_delay_build_id), $SLUICE_BIN"
    bench_figure delay_rebuild "(info) sluice build measured" "$(_delay_build_id)" ""

    # --- memory: RSS with 0 pending, then with n pending -------------------
    _delay_start "${name}_a" "$port" "$name"
    pid=$(bench_sluice_pid "${name}_a")
    sleep 1
    rss0=$(bench_rss "$pid")
    heap0=$(_delay_malloc "$port")
    bench_log "delay_rebuild: ready with 0 pending: VmRSS ${rss0} kB"

    t0=$(date +%s%N)
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" \
        -H sluice-target="$t.out" -H sluice-delay=1h)
    bench_log "delay_rebuild: $line"
    secs=$(_delay_until_pending "$port" "$n" 120 "$t0")
    echo "$secs" >"$BENCH_WORK/delay.schedule_seconds"
    rss1=$(_delay_rss_settled "$pid")
    bytes=$(bench_metric "$port" sluice_timers_pending_bytes)
    mem=$(bench_metric "$port" sluice_timers_memory_bytes) || mem=""
    bench_log "delay_rebuild: $n pending (lag 0) after ${secs}s: VmRSS ${rss1} kB, pending_bytes $bytes"
    heap1=$(_delay_malloc "$port")

    rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    bench_figure delay_rebuild "(info) timers scheduled/s (load → all pending)" "$rate" rec/s "$(bench_ratio "$rate")"
    per=$(awk -v a="$rss0" -v b="$rss1" -v n="$n" -v kp="$kp" \
        'BEGIN { printf "%.0f", (b - a) * 1024 / n - kp }')
    bench_figure delay_rebuild "memory per pending timer beyond key+payload, after ingest" "$per" B "" "<= 64 B"
    bench_figure delay_rebuild "  VmRSS with 0 / $n pending" "$rss0/$rss1" kB
    bench_figure delay_rebuild "  key+payload (16 B id + 100 B value)" "$kp" B
    bench_figure delay_rebuild "  sluice_timers_pending_bytes per timer" \
        "$(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }')" B
    # What the timers themselves occupy (slab chunks touched, heap and hash
    # arrays): the floor under the RSS figure.
    [ -z "$mem" ] ||
        bench_figure delay_rebuild "  (info) sluice_timers_memory_bytes/timer beyond k+p" \
            "$(awk -v m="$mem" -v n="$n" -v kp="$kp" 'BEGIN { printf "%.1f", m / n - kp }')" B
    # The timers live in mmap'd slabs, outside malloc: this is what the
    # rest of the process (librdkafka, buffers, the heap and hash arrays)
    # took from malloc, handed out and held in RAM (sluice_malloc_bytes).
    bench_figure delay_rebuild "  (info) malloc allocated / resident growth per timer" \
        "$(awk -v a="$heap0" -v b="$heap1" -v n="$n" 'BEGIN {
            split(a, x, " "); split(b, y, " ")
            for (i = 1; i <= 2; i++)
                f[i] = (x[i] == "n/a" || y[i] == "n/a") ? "n/a" : sprintf("%.1f", (y[i] - x[i]) / n)
            print f[1] "/" f[2] }')" B

    # --- rebuild: SIGTERM, start again, time to /readyz ---------------------
    bench_sluice_stop "${name}_a"
    ready_ms=$(_delay_restart "${name}_b" "$port" "$name")
    pid=$(bench_sluice_pid "${name}_b")
    log=$BENCH_WORK/sluice-${name}_b.log
    # CPU the loop thread (the main thread: it applies every record) and the
    # whole process spent from exec to now: near the rebuild's wall time
    # means the loop thread is the limit.
    cpu_loop=$(_delay_cpu_s "/proc/$pid/task/$pid/stat")
    cpu_all=$(_delay_cpu_s "/proc/$pid/stat")
    rssb=$(_delay_rss_settled "$pid")
    hwmb=$(bench_peak_rss "$pid")
    bench_metric_is "$port" sluice_timers_pending "$n" ||
        bench_fail "after the rebuild $(bench_metric "$port" sluice_timers_pending) of $n timers pending"
    read -r recs maxs < <(_delay_rebuilt "${name}_b")
    bench_log "delay_rebuild: rebuilt $recs records, slowest partition ${maxs}s, /readyz after ${ready_ms} ms"
    grep 'REBUILD .*rebuilt from' "$log" | sed 's/^/    /' >&2
    [ "$recs" -ge "$n" ] || bench_fail "rebuild read $recs changelog records, expected ≥ $n"
    rate=$(awk -v r="$recs" -v s="$maxs" 'BEGIN { printf "%.0f", (s > 0 ? r / s : 0) }')
    bench_figure delay_rebuild "rebuild records/s ($recs, 4 partitions)" "$rate" rec/s "" ">= 500000"
    bench_figure delay_rebuild "rebuild seconds (slowest partition, log)" "$maxs" s "" "<= 2 (1M)"
    bench_figure delay_rebuild "restart → /readyz 200" \
        "$(awk -v m="$ready_ms" 'BEGIN { printf "%.3f", m / 1000 }')" s
    bench_figure delay_rebuild "(info) CPU from exec: loop thread / process" "$cpu_loop/$cpu_all" s
    # The same RSS figure for the restarted process, once rebuilt and its
    # RSS settled, against the first process's RSS with 0 pending.
    per=$(awk -v a="$rss0" -v b="$rssb" -v n="$n" -v kp="$kp" \
        'BEGIN { printf "%.0f", (b - a) * 1024 / n - kp }')
    bench_figure delay_rebuild "memory per pending timer beyond key+payload, after rebuild" "$per" B "" "<= 64 B"
    bench_figure delay_rebuild "  VmRSS after rebuild / peak during it" "$rssb/$hwmb" kB
    bench_sluice_stop "${name}_b"
}

section_delay_fire() {
    local name=dfire t=$BENCH_ID.dfire n=${BENCH_DELAY_TIMERS:-1000000}
    local port margin due cpid line left max p50 rate pend
    port=$(_delay_pipeline "$name")
    if [ -n "${BENCH_DELAY_FIRE_MARGIN:-}" ]; then
        margin=$BENCH_DELAY_FIRE_MARGIN
    elif [ -f "$BENCH_WORK/delay.schedule_seconds" ]; then
        margin=$(awk -v s="$(cat "$BENCH_WORK/delay.schedule_seconds")" \
            'BEGIN { m = int(2 * s + 5.5); print (m < 15 ? 15 : m) }')
    else
        margin=40
    fi
    _delay_start "$name" "$port"
    local pid c0 c1 cdue c2
    pid=$(bench_sluice_pid "$name")
    c0=$(bench_cpu_ticks "$pid")

    due=$(($(_delay_now_ms) + margin * 1000))
    bench_log "delay_fire: $n timers due at $due (in ${margin}s)"
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" \
        -H sluice-target="$t.out" -H sluice-at="$due")
    bench_log "delay_fire: $line"
    # The reader waits from now; it prefetches generously so that its own
    # fetch stall (bench/README.md) is not part of the figure.
    bench_consume "$t.out" "$n" --lateness-header sluice-due \
        -X queued.min.messages=1000000 >"$BENCH_WORK/$name.consume" &
    cpid=$!
    left=$(((due - $(_delay_now_ms)) / 1000))
    [ "$left" -ge 1 ] || bench_fail "the load ended after the due time; raise BENCH_DELAY_FIRE_MARGIN"
    bench_wait_until "$left" bench_metric_is "$port" sluice_timers_pending "$n" || {
        pend=$(bench_metric "$port" sluice_timers_pending || echo "?")
        bench_fail "$pend of $n timers pending at the due time; raise BENCH_DELAY_FIRE_MARGIN"
    }
    c1=$(bench_cpu_ticks "$pid")
    bench_log "delay_fire: all $n pending $(((due - $(_delay_now_ms)) / 1000)) s before the due time"
    # The fire's CPU is counted from the due time: not the idle wait.
    bench_wait_until $(((due - $(_delay_now_ms)) / 1000 + 5)) _delay_past "$due" ||
        bench_fail "the clock did not reach the due time"
    cdue=$(bench_cpu_ticks "$pid")
    wait "$cpid" || bench_fail "reading $t.out failed"
    c2=$(bench_cpu_ticks "$pid")
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "delay_fire: $line"
    [ "$(bench_field "$line" records)" = "$n" ] || bench_fail "$t.out: $line"
    [ "$(bench_field "$line" no_due)" = 0 ] || bench_fail "records without sluice-due: $line"
    max=$(bench_field "$line" lateness_max_ms)
    p50=$(bench_field "$line" lateness_p50_ms)
    rate=$(awk -v n="$n" -v m="$max" 'BEGIN { printf "%.0f", (m > 0 ? n * 1000 / m : 0) }')
    bench_figure delay_fire "timers fired/s, $n due at once" "$rate" rec/s "$(bench_ratio "$rate")" ">= 0.6"
    bench_figure delay_fire "  due → last visible (read_committed)" \
        "$(awk -v m="$max" 'BEGIN { printf "%.3f", m / 1000 }')" s
    bench_figure delay_fire "  due → half visible" \
        "$(awk -v m="$p50" 'BEGIN { printf "%.3f", m / 1000 }')" s
    bench_cpu_figure delay_fire "  CPU µs per timer fired (due → all visible)" \
        "$(bench_cpu_us_per "$cdue" "$c2" "$n")"
    bench_cpu_figure delay_fire "  CPU µs per timer scheduled (load → pending)" \
        "$(bench_cpu_us_per "$c0" "$c1" "$n")"
    bench_figure delay_fire "  catchup_rate (0: the limiter is off)" 0 /s
    bench_figure delay_fire "  transactions committed" \
        "$(bench_metric "$port" sluice_transactions_total 'result="commit"')" ""
    bench_sluice_stop "$name"
}

# _delay_stream NAME RATE SECS DELAY SIZE [load options] — RATE timers/s
# for SECS seconds into $BENCH_ID.NAME.in, SIZE-byte payloads, each due
# DELAY (sluice-delay) after it was written, read from $BENCH_ID.NAME.out
# as they become visible; fails unless all RATE × SECS arrived.  The load's
# line is left in $BENCH_WORK/NAME.load, the reader's (with due → produced
# and due → visible percentiles) in $BENCH_WORK/NAME.consume.
_delay_stream() {
    local name=$1 rate=$2 secs=$3 delay=$4 size=$5 t=$BENCH_ID.$1 n cpid line
    shift 5
    n=$((rate * secs))
    # The reader asks often (fetch.wait.max.ms 5, not librdkafka's 500):
    # the figure is when a record became visible, not how long an idle
    # reader's fetch waited at the broker.
    bench_consume "$t.out" "$n" --lateness-header sluice-due \
        -X fetch.wait.max.ms=5 ${BENCH_LATENESS_DUMP:+--dump "$BENCH_LATENESS_DUMP.$name"} \
        >"$BENCH_WORK/$name.consume" &
    cpid=$!
    bench_log "$name: $n timers at $rate/s, sluice-delay $delay"
    bench_load "$t.in" "$n" "$size" --key-len "$DELAY_KEY_LEN" --rate "$rate" \
        -H sluice-target="$t.out" -H sluice-delay="$delay" "$@" >"$BENCH_WORK/$name.load"
    bench_log "$name: $(cat "$BENCH_WORK/$name.load")"
    wait "$cpid" || bench_fail "reading $t.out failed"
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "$name: $line"
    [ "$(bench_field "$line" records)" = "$n" ] || bench_fail "$t.out: $line"
}

# _delay_lateness_run NAME RATE SECS — RATE timers/s for SECS seconds with a
# 2 s delay into a fresh pipeline; figures: due → visible (read_committed)
# and due → produced (the output record's timestamp: when sluice made it,
# before its transaction committed), sluice's own lateness histogram and
# its commit times.
_delay_lateness_run() {
    local name=$1 rate=$2 secs=$3 warmup=${4:-} port line lline q
    port=$(_delay_pipeline "$name")
    _delay_start "$name" "$port"
    _delay_stream "$name" "$rate" "$secs" 2s "$DELAY_PAYLOAD"
    line=$(cat "$BENCH_WORK/$name.consume")
    lline=$(cat "$BENCH_WORK/$name.load")
    if [ -n "$warmup" ]; then
        bench_sluice_stop "$name"
        return 0
    fi
    bench_figure delay_lateness "at $rate timers/s: lateness p99, due → produced (record timestamp)" \
        "$(bench_field "$line" produced_p99_ms)" ms "" "<= 15 ms"
    bench_figure delay_lateness "  p50 / max" \
        "$(bench_field "$line" produced_p50_ms)/$(bench_field "$line" produced_max_ms)" ms
    bench_figure delay_lateness "at $rate timers/s: lateness p99, due → visible (read_committed)" \
        "$(bench_field "$line" lateness_p99_ms)" ms "" "<= 50 ms"
    bench_figure delay_lateness "  p50 / max" \
        "$(bench_field "$line" lateness_p50_ms)/$(bench_field "$line" lateness_max_ms)" ms
    for q in 0.5 0.99; do
        bench_figure delay_lateness "  sluice timer lateness histogram p$(awk -v q="$q" 'BEGIN { print q * 100 }') (due → fired)" \
            "$(bench_histogram_quantile "$port" sluice_timer_lateness_seconds "$q" |
                awk '{ if ($1 == "n/a") print $1; else printf "%.1f", $1 * 1000 }')" ms
    done
    bench_figure delay_lateness "  commit time p50 / p99 (sluice_txn_commit_seconds)" \
        "$(bench_histogram_p50_p99_ms "$port" sluice_txn_commit_seconds)" ms
    bench_figure delay_lateness "  commit phases p50/p99: flush, offsets, deliver, end" \
        "$(bench_commit_phases_ms "$port")" ms
    bench_figure delay_lateness "  coordinator finishing a commit p50 / p99 (sluice_txn_markers_seconds, $(bench_histogram_count "$port" sluice_txn_markers_seconds) observed)" \
        "$(bench_histogram_p50_p99_ms "$port" sluice_txn_markers_seconds)" ms
    bench_figure delay_lateness "  records decided during a commit (sent after it)" \
        "$(bench_metric "$port" sluice_txn_deferred_records_total)" ""
    bench_figure delay_lateness "  load rate / transactions committed" \
        "$(bench_field "$lline" rate)/$(bench_metric "$port" sluice_transactions_total 'result="commit"')" ""
    bench_sluice_stop "$name"
}

section_delay_lateness() {
    local secs=${BENCH_DELAY_LATENESS_SECS:-20}
    # Warm-up, not measured: the same load for 5 s.  A broker that has
    # just started commits and writes markers 2-5 times slower for its
    # first second or so of this traffic (its JIT at work: with a reader
    # dump, the late records of a run were all in that second); the figure
    # is about sluice on a broker that has been up, as in production.
    _delay_lateness_run dlatewarm "${BENCH_DELAY_LATENESS_LOW_RATE:-2000}" 5 warmup
    _delay_lateness_run dlate2k "${BENCH_DELAY_LATENESS_LOW_RATE:-2000}" "$secs"
    _delay_lateness_run dlate "${BENCH_DELAY_LATENESS_RATE:-10000}" "$secs"
}

# _delay_recurring_run NAME SCHEDULES SECS — SCHEDULES recurring timers
# `every 1s` into a fresh pipeline, loaded over one second (SCHEDULES/s):
# each counts from its record's timestamp, so their instants are spread
# evenly over the second, SCHEDULES occurrences/s; the first 5 s of
# occurrences unmeasured, then SECS seconds of them read: due → produced and
# due → visible, and CPU µs per occurrence over 10 s (sluice's utime +
# stime against sluice_records_out_total).
_delay_recurring_run() {
    local name=$1 n=$2 secs=$3 t=$BENCH_ID.$1 port pid line cpid o0 o1 c0 c1
    port=$(_delay_pipeline "$name")
    _delay_start "$name" "$port"
    pid=$(bench_sluice_pid "$name")
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" --rate "$n" \
        -H sluice-target="$t.out" -H sluice-every=1s)
    bench_log "$name: $line"
    bench_wait_until 60 bench_metric_is "$port" sluice_timers_pending "$n" ||
        bench_fail "$name: not all $n schedules pending within 60 s"
    sleep 5
    # From the end of the topic now: SECS seconds of occurrences.
    bench_consume "$t.out" $((n * secs)) --lateness-header sluice-due --from-end \
        -X fetch.wait.max.ms=5 >"$BENCH_WORK/$name.consume" &
    cpid=$!
    sleep 2
    o0=$(bench_metric "$port" sluice_records_out_total)
    c0=$(bench_cpu_ticks "$pid")
    sleep 10
    o1=$(bench_metric "$port" sluice_records_out_total)
    c1=$(bench_cpu_ticks "$pid")
    wait "$cpid" || bench_fail "reading $t.out failed"
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "$name: $line"
    [ "$(bench_field "$line" no_due)" = 0 ] || bench_fail "records without sluice-due: $line"
    bench_figure delay_recurring "$n schedules every 1 s: lateness p99, due → produced (record timestamp)" \
        "$(bench_field "$line" produced_p99_ms)" ms "" "<= 15 ms"
    bench_figure delay_recurring "  p50 / max" \
        "$(bench_field "$line" produced_p50_ms)/$(bench_field "$line" produced_max_ms)" ms
    bench_figure delay_recurring "  due → visible (read_committed) p99" \
        "$(bench_field "$line" lateness_p99_ms)" ms
    bench_figure delay_recurring "  occurrences/s (10 s of sluice_records_out_total)" \
        "$(awk -v a="$o0" -v b="$o1" 'BEGIN { printf "%.0f", (b - a) / 10 }')" rec/s
    bench_cpu_figure delay_recurring "  CPU µs per occurrence" \
        "$(bench_cpu_us_per "$c0" "$c1" $((${o1%.*} - ${o0%.*})))"
    bench_sluice_stop "$name"
}

section_delay_recurring() {
    local n=${BENCH_DELAY_RECURRING:-100000} secs=${BENCH_DELAY_RECURRING_SECS:-20}
    _delay_recurring_run drec10k $((n / 10)) "$secs"
    _delay_recurring_run drec "$n" "$secs"
}
