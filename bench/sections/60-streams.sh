# SPDX-License-Identifier: Apache-2.0
# bench/sections/60-streams.sh — sluice side by side with Kafka Streams
# (SPEC §6's "measured peer"), on the same broker in the same run.  Each
# section runs the same load against sluice, then against the Kafka Streams
# peer (bench/streams/, StreamsPeer.java), one after the other, never both
# at once:
#
#   streams_delay_fire       200k timers due at the same instant: timers
#                            fired/s (due → last visible to read_committed),
#                            target sluice ≥ 3 × Streams; CPU µs per timer
#                            fired
#   streams_delay_lateness   2k timers/s for 20 s with a 2 s delay: lateness
#                            p99 due → produced (the output record's
#                            timestamp) and due → visible (read_committed)
#   streams_delay_memory     500k timers pending (due in 1 h): RSS, and
#                            memory per pending timer beyond key + payload
#   streams_debounce_ingest  1M items of 100 B over 10k groups (a backlog,
#                            max_items = 100): items/s exec → all read,
#                            target sluice ≥ 3 × Streams; CPU µs per item
#
# In this section's rows the ratio column is sluice / Kafka Streams (not
# the baseline copy): above 1 is sluice ahead for a rate, below 1 for a
# lateness, a memory or a CPU figure.
#
# The peer: Kafka Streams 3.9.1, processing.guarantee exactly_once_v2,
# commit.interval.ms 100 (sluice's commit_interval here), RocksDB stores with
# Streams' default 10 MiB record cache, a WALL_CLOCK_TIME punctuator every
# 10 ms per task with poll.ms 10 (Streams' default 100 lets the thread sit
# in poll() up to 100 ms between punctuations), num.stream.threads 1 (Streams' default; sluice's operators
# run on one loop thread too), java $BENCH_STREAMS_JAVA_OPTS (-Xmx1g).  It is
# built with mvn into build/streams/ the first time; when it cannot be built
# (no mvn, no java, no network) each section prints a "skipped: ..." row
# and succeeds.  The sluice side reuses the delay and debounce sections'
# helpers (_delay_pipeline, _delay_start, _db_conf, ...: every section file
# is sourced into the same shell).
#
# Environment (all optional):
#   BENCH_STREAMS_TIMERS       timers due at once in streams_delay_fire (200000)
#   BENCH_STREAMS_FIRE_MARGIN  seconds from the start of the load to the due
#                              time (25): both sides must have every timer
#                              pending by then
#   BENCH_STREAMS_RATE         timers/s in streams_delay_lateness (2000)
#   BENCH_STREAMS_SECS         seconds of load in streams_delay_lateness (20)
#   BENCH_STREAMS_PENDING      timers pending in streams_delay_memory (500000)
#   BENCH_STREAMS_ITEMS        items in streams_debounce_ingest (1000000)
#   BENCH_STREAMS_JAVA_OPTS    JVM options of the peer (-Xmx1g)
#   BENCH_STREAMS_THREADS      the peer's num.stream.threads (1)

bench_register streams_delay_fire 300 "vs Kafka Streams: timers fired/s, 200k due at once"
bench_register streams_delay_lateness 200 "vs Kafka Streams: lateness due → produced / visible p99 at 2k timers/s"
bench_register streams_delay_memory 300 "vs Kafka Streams: RSS with 500k pending timers"
bench_register streams_debounce_ingest 500 "vs Kafka Streams: debounce ingest of 1M items over 10k groups, CPU µs per item"

STREAMS_DIR=$BENCH_ROOT/build/streams
STREAMS_JAR=$STREAMS_DIR/streams-peer.jar

# _streams_build — builds the peer with mvn unless build/streams/ is newer
# than its sources; on failure prints why (one line) and returns 1.
_streams_build() {
    local src=$BENCH_ROOT/bench/streams f stale=0
    command -v java >/dev/null || {
        echo "no java"
        return 1
    }
    if [ -f "$STREAMS_JAR" ] && [ -d "$STREAMS_DIR/lib" ]; then
        for f in "$src/pom.xml" "$src"/src/main/java/sluice/bench/*.java; do
            [ "$f" -nt "$STREAMS_JAR" ] && stale=1
        done
        [ "$stale" = 0 ] && return 0
    fi
    command -v mvn >/dev/null || {
        echo "no mvn to build bench/streams"
        return 1
    }
    bench_log "streams: building the Kafka Streams peer (mvn, bench/streams/pom.xml)"
    if ! bench_run 300 mvn-streams mvn -q -B -f "$src/pom.xml" package >/dev/null 2>&1; then
        echo "mvn could not build bench/streams (offline?), see $BENCH_WORK/mvn-streams.err"
        return 1
    fi
    # mvn leaves an up-to-date jar as it was: mark it built now.
    touch "$STREAMS_JAR"
}

# _streams_ready_or_skip SECTION — true when the peer is built; otherwise
# records a "skipped: WHY" row for SECTION and returns 1 (the section then
# returns 0: a missing peer is not a failed run).
_streams_ready_or_skip() {
    local why
    why=$(_streams_build) && return 0
    bench_log "$1: skipped: $why"
    bench_figure "$1" "skipped: $why" - ""
    return 1
}

# _streams_start NAME MODE INPUT [peer options] — starts the peer on
# INPUT as application.id $BENCH_ID.NAME, state under $BENCH_WORK, stdout
# and stderr to $BENCH_WORK/streams-NAME.log, and waits (90 s) for it to
# say "state RUNNING".  Its pid goes where bench_sluice_pid/_stop and the
# section's exit trap find sluice's ("sluice-NAME.pid"), so it is stopped
# and, if need be, killed the same way.
_streams_start() {
    local name=$1 mode=$2 in=$3 log=$BENCH_WORK/streams-$1.log
    shift 3
    # shellcheck disable=SC2086 # JAVA_OPTS is a list of options
    java ${BENCH_STREAMS_JAVA_OPTS:--Xmx1g} -cp "$STREAMS_JAR:$STREAMS_DIR/lib/*" \
        sluice.bench.StreamsPeer --mode "$mode" -b "$BENCH_BOOTSTRAP" -i "$in" \
        --app-id "$BENCH_ID.$name" --state-dir "$BENCH_WORK/streams-$name.state" \
        --threads "${BENCH_STREAMS_THREADS:-1}" "$@" >"$log" 2>&1 9>&- &
    echo $! >"$BENCH_WORK/sluice-$name.pid"
    _streams_wait "$name" 90 "state RUNNING"
}

# _streams_said NAME LINE — true when the peer printed LINE, or is gone.
_streams_said() {
    grep -qxF "$2" "$BENCH_WORK/streams-$1.log" ||
        _bench_gone "$(bench_sluice_pid "$1")"
}

# _streams_wait NAME SECS LINE — waits for the peer to print LINE; fails
# (with its log) when it does not within SECS or exits first.
_streams_wait() {
    local name=$1 secs=$2 line=$3
    if ! { bench_wait_until "$secs" _streams_said "$name" "$line" &&
        grep -qxF "$line" "$BENCH_WORK/streams-$name.log"; }; then
        tail -20 "$BENCH_WORK/streams-$name.log" >&2
        bench_fail "Kafka Streams peer $name: no '$line' within ${secs}s"
    fi
}

# _streams_topics NAME — $BENCH_ID.NAME.{in,out}, 4 partitions each.
_streams_topics() {
    bench_topic "$BENCH_ID.$1.in" 4
    bench_topic "$BENCH_ID.$1.out" 4
}

# _streams_vs A B — A / B with two decimals (the ratio column).
_streams_vs() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "n/a") printf "%.2f\n", a / b; else print "n/a" }'
}

# _streams_delay_side KIND NAME [N] — starts the delay pipeline NAME on
# sluice (KIND sluice) or on the peer (KIND streams, told to expect N
# timers when N is given); sets SX_PORT to sluice's metrics port (empty for
# the peer).
_streams_delay_side() {
    SX_PORT=
    if [ "$1" = sluice ]; then
        SX_PORT=$(_delay_pipeline "$2")
        _delay_start "$2" "$SX_PORT"
    else
        _streams_topics "$2"
        _streams_start "$2" delay "$BENCH_ID.$2.in" ${3:+--expect "$3"}
    fi
}

# ---- streams_delay_fire -------------------------------------------------------

# _streams_fire KIND — BENCH_STREAMS_TIMERS timers due at one instant, on
# sluice (KIND sluice) or the peer (KIND streams); prints the consume line
# plus " cpu_us_per_timer=" (CPU of the process from the due time until the
# last timer is visible, per timer).
_streams_fire() {
    local kind=$1 n=${BENCH_STREAMS_TIMERS:-200000} margin=${BENCH_STREAMS_FIRE_MARGIN:-25}
    local name port pid t due cpid line left cdue c2
    name=sxfire
    [ "$kind" = sluice ] || name=sxfire_ks
    _streams_delay_side "$kind" "$name" "$n"
    port=$SX_PORT
    t=$BENCH_ID.$name
    pid=$(bench_sluice_pid "$name")
    due=$(($(_delay_now_ms) + margin * 1000))
    bench_log "streams_delay_fire: $kind: $n timers due at $due (in ${margin}s)"
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" \
        -H sluice-target="$t.out" -H sluice-at="$due")
    bench_log "streams_delay_fire: $kind: $line"
    # As delay_fire, the reader prefetches generously, so its own fetch
    # stall (bench/README.md) is not part of the figure; and as delay_lateness it
    # asks often (fetch.wait.max.ms 5): an idle read_committed fetch parked
    # at the broker for librdkafka's default 500 ms is a fixed cost that
    # would hide a difference of a few hundred ms in a 200k fire.
    bench_consume "$t.out" "$n" --lateness-header sluice-due \
        -X queued.min.messages=1000000 -X fetch.wait.max.ms=5 >"$BENCH_WORK/$name.consume" &
    cpid=$!
    left=$(((due - $(_delay_now_ms)) / 1000))
    [ "$left" -ge 1 ] || bench_fail "the load ended after the due time; raise BENCH_STREAMS_FIRE_MARGIN"
    if [ "$kind" = sluice ]; then
        bench_wait_until "$left" bench_metric_is "$port" sluice_timers_pending "$n" ||
            bench_fail "sluice: not all $n timers pending at the due time; raise BENCH_STREAMS_FIRE_MARGIN"
    else
        { bench_wait_until "$left" _streams_said "$name" "in=$n" &&
            grep -qxF "in=$n" "$BENCH_WORK/streams-$name.log"; } ||
            bench_fail "Kafka Streams: not all $n timers read at the due time; raise BENCH_STREAMS_FIRE_MARGIN"
    fi
    bench_log "streams_delay_fire: $kind: all $n pending $(((due - $(_delay_now_ms)) / 1000)) s before the due time"
    bench_wait_until $(((due - $(_delay_now_ms)) / 1000 + 5)) _delay_past "$due" ||
        bench_fail "the clock did not reach the due time"
    cdue=$(bench_cpu_ticks "$pid")
    wait "$cpid" || bench_fail "reading $t.out failed"
    c2=$(bench_cpu_ticks "$pid")
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "streams_delay_fire: $kind: $line"
    [ "$(bench_field "$line" records)" = "$n" ] || bench_fail "$kind: $t.out: $line"
    [ "$(bench_field "$line" no_due)" = 0 ] || bench_fail "$kind: records without sluice-due: $line"
    bench_sluice_stop "$name"
    echo "$line cpu_us_per_timer=$(bench_cpu_us_per "$cdue" "$c2" "$n")"
}

section_streams_delay_fire() {
    local n=${BENCH_STREAMS_TIMERS:-200000} s k rs rk max
    _streams_ready_or_skip streams_delay_fire || return 0
    s=$(_streams_fire sluice)
    k=$(_streams_fire streams)
    max=$(bench_field "$s" lateness_max_ms)
    rs=$(awk -v n="$n" -v m="$max" 'BEGIN { printf "%.0f", (m > 0 ? n * 1000 / m : 0) }')
    max=$(bench_field "$k" lateness_max_ms)
    rk=$(awk -v n="$n" -v m="$max" 'BEGIN { printf "%.0f", (m > 0 ? n * 1000 / m : 0) }')
    bench_figure streams_delay_fire "sluice: timers fired/s, $n due at once" "$rs" rec/s \
        "$(_streams_vs "$rs" "$rk")" ">= 3 (x Streams)"
    bench_figure streams_delay_fire "Kafka Streams: timers fired/s, $n due at once" "$rk" rec/s
    bench_figure streams_delay_fire "  due → last visible, sluice / Streams" \
        "$(bench_field "$s" lateness_max_ms)/$(bench_field "$k" lateness_max_ms)" ms
    bench_figure streams_delay_fire "  due → half visible, sluice / Streams" \
        "$(bench_field "$s" lateness_p50_ms)/$(bench_field "$k" lateness_p50_ms)" ms
    bench_figure streams_delay_fire "sluice: CPU µs per timer fired" \
        "$(bench_field "$s" cpu_us_per_timer)" µs \
        "$(_streams_vs "$(bench_field "$s" cpu_us_per_timer)" "$(bench_field "$k" cpu_us_per_timer)")"
    bench_figure streams_delay_fire "Kafka Streams: CPU µs per timer fired" \
        "$(bench_field "$k" cpu_us_per_timer)" µs
}

# ---- streams_delay_lateness ---------------------------------------------------

# _streams_lateness KIND — BENCH_STREAMS_RATE timers/s for
# BENCH_STREAMS_SECS seconds with a 2 s delay into a fresh pipeline of KIND
# (sluice or streams); prints the consume line (lateness_* = due → visible,
# produced_* = due → the record's timestamp).
_streams_lateness() {
    local kind=$1 rate=${BENCH_STREAMS_RATE:-2000} secs=${BENCH_STREAMS_SECS:-20}
    local n name port t cpid line
    n=$((rate * secs))
    name=sxlate
    [ "$kind" = sluice ] || name=sxlate_ks
    _streams_delay_side "$kind" "$name"
    port=$SX_PORT
    t=$BENCH_ID.$name
    # As delay_lateness: the reader asks often (fetch.wait.max.ms 5).
    bench_consume "$t.out" "$n" --lateness-header sluice-due \
        -X fetch.wait.max.ms=5 >"$BENCH_WORK/$name.consume" &
    cpid=$!
    bench_log "streams_delay_lateness: $kind: $n timers at $rate/s, sluice-delay 2s"
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" \
        --rate "$rate" -H sluice-target="$t.out" -H sluice-delay=2s)
    bench_log "streams_delay_lateness: $kind: $line"
    wait "$cpid" || bench_fail "reading $t.out failed"
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "streams_delay_lateness: $kind: $line"
    [ "$(bench_field "$line" records)" = "$n" ] || bench_fail "$kind: $t.out: $line"
    bench_sluice_stop "$name"
    echo "$line"
}

section_streams_delay_lateness() {
    local rate=${BENCH_STREAMS_RATE:-2000} s k f
    _streams_ready_or_skip streams_delay_lateness || return 0
    s=$(_streams_lateness sluice)
    k=$(_streams_lateness streams)
    for f in produced lateness; do
        local what="due → produced (record timestamp)" target="<= 15 ms"
        [ "$f" = lateness ] && what="due → visible (read_committed)" target="<= 50 ms (10k/s)"
        bench_figure streams_delay_lateness "sluice: p99 at $rate/s, $what" \
            "$(bench_field "$s" "${f}_p99_ms")" ms \
            "$(_streams_vs "$(bench_field "$s" "${f}_p99_ms")" "$(bench_field "$k" "${f}_p99_ms")")" "$target"
        bench_figure streams_delay_lateness "Kafka Streams: p99 at $rate/s, $what" \
            "$(bench_field "$k" "${f}_p99_ms")" ms
        bench_figure streams_delay_lateness "  p50 / max, sluice | Streams" \
            "$(bench_field "$s" "${f}_p50_ms")/$(bench_field "$s" "${f}_max_ms") | $(bench_field "$k" "${f}_p50_ms")/$(bench_field "$k" "${f}_max_ms")" ms
    done
}

# ---- streams_delay_memory -----------------------------------------------------

# _streams_memory KIND — RSS of KIND (sluice or streams) once ready with
# nothing pending, then with BENCH_STREAMS_PENDING timers pending (due in an
# hour), each read once it stopped moving; prints "RSS0 RSS1" in kB, plus
# the peer's state directory in kB for streams.
_streams_memory() {
    local kind=$1 n=${BENCH_STREAMS_PENDING:-500000} name port pid t rss0 rss1 line extra=""
    name=sxmem
    [ "$kind" = sluice ] || name=sxmem_ks
    _streams_delay_side "$kind" "$name" "$n"
    port=$SX_PORT
    t=$BENCH_ID.$name
    pid=$(bench_sluice_pid "$name")
    sleep 1
    rss0=$(_delay_rss_settled "$pid")
    line=$(bench_load "$t.in" "$n" "$DELAY_PAYLOAD" --key-len "$DELAY_KEY_LEN" \
        -H sluice-target="$t.out" -H sluice-delay=1h)
    bench_log "streams_delay_memory: $kind: $line"
    if [ "$kind" = sluice ]; then
        bench_wait_until 120 bench_metric_is "$port" sluice_timers_pending "$n" ||
            bench_fail "sluice: $(bench_metric "$port" sluice_timers_pending) of $n timers pending after 120 s"
        bench_wait_until 10 bench_metric_is "$port" sluice_consumer_lag 0 ||
            bench_fail "sluice: consumer lag $(bench_metric "$port" sluice_consumer_lag) after all input was read"
    else
        _streams_wait "$name" 180 "in=$n"
    fi
    # The last transaction committed, the producer idle.
    sleep 2
    rss1=$(_delay_rss_settled "$pid")
    # The third figure: for sluice what its timers occupy themselves
    # (bytes: slabs, heap and hash arrays; the rest of the growth is the
    # process's), for Streams its state dir on disk (kB).
    if [ "$kind" = sluice ]; then
        extra=$(bench_metric "$port" sluice_timers_memory_bytes) || extra=""
        bench_log "streams_delay_memory: sluice: VmRSS ${rss0} kB with 0, ${rss1} kB with $n pending${extra:+, timer memory $extra B}"
    else
        extra=$(du -sk "$BENCH_WORK/streams-$name.state" | cut -f1)
        bench_log "streams_delay_memory: streams: VmRSS ${rss0} kB with 0, ${rss1} kB with $n pending, state dir $extra kB"
    fi
    bench_sluice_stop "$name"
    echo "$rss0 $rss1 $extra"
}

section_streams_delay_memory() {
    local n=${BENCH_STREAMS_PENDING:-500000} kp=$((DELAY_KEY_LEN + DELAY_PAYLOAD))
    local s k s0 s1 sm k0 k1 kd ps pk
    _streams_ready_or_skip streams_delay_memory || return 0
    s=$(_streams_memory sluice)
    k=$(_streams_memory streams)
    read -r s0 s1 sm <<<"$s"
    read -r k0 k1 kd <<<"$k"
    bench_figure streams_delay_memory "sluice: VmRSS with $n pending timers" "$s1" kB "$(_streams_vs "$s1" "$k1")"
    bench_figure streams_delay_memory "Kafka Streams: VmRSS with $n pending timers" "$k1" kB
    bench_figure streams_delay_memory "  VmRSS with 0 pending, sluice / Streams" "$s0/$k0" kB
    ps=$(awk -v a="$s0" -v b="$s1" -v n="$n" -v kp="$kp" 'BEGIN { printf "%.0f", (b - a) * 1024 / n - kp }')
    pk=$(awk -v a="$k0" -v b="$k1" -v n="$n" -v kp="$kp" 'BEGIN { printf "%.0f", (b - a) * 1024 / n - kp }')
    bench_figure streams_delay_memory "sluice: RSS growth per pending timer beyond key+payload" "$ps" B "" "<= 64 B"
    [ -z "$sm" ] ||
        bench_figure streams_delay_memory "  (info) sluice: of which its timers' own (sluice_timers_memory_bytes)" \
            "$(awk -v m="$sm" -v n="$n" -v kp="$kp" 'BEGIN { printf "%.1f", m / n - kp }')" B
    bench_figure streams_delay_memory "Kafka Streams: RSS growth per pending timer beyond key+payload" "$pk" B
    bench_figure streams_delay_memory "  (info) Kafka Streams state dir (RocksDB) on disk" "$kd" kB
}

# ---- streams_debounce_ingest --------------------------------------------------

# _streams_db_read PORT PIPELINE N — true once sluice on PORT has read N
# input records of PIPELINE.
_streams_db_read() {
    [ "$(_db_metric "$1" "sluice_records_in_total{pipeline=\"$2\"}")" = "$3" ]
}

# _streams_ingest KIND — BENCH_STREAMS_ITEMS items of 100 B over one group
# per 100 items (10,000 for 1M; each item its own sluice-item; a backlog
# loaded before KIND starts),
# max_items = 100, idle 60 s, max_age 120 s; timed from exec until every
# item is read (sluice: sluice_records_in_total; the peer: its "in=N"
# line), then every batch is checked.  Prints "items_per_s=
# cpu_us_per_item= peak_rss_kb= broker_us_per_item=" (the broker's CPU over
# the same span).
_streams_ingest() {
    local kind=$1 n=${BENCH_STREAMS_ITEMS:-1000000} name port pid t line t0 t1 c1 rate hwm b0 b1
    local batches=$((n / 100)) groups=$((n / 100))
    if [ "$kind" = sluice ]; then
        name=sxdb
        port=$(_db_free_port)
        _streams_topics "$name"
        _db_conf "$name" "$port" idle=60s max_age=120s max_items=100
        bench_run 60 "topics-apply-$name" "$SLUICE_BIN" topics apply -c "$BENCH_WORK/$name.ini" >/dev/null ||
            bench_fail "sluice topics apply failed"
    else
        name=sxdb_ks
        _streams_topics "$name"
    fi
    t=$BENCH_ID.$name
    # As debounce_ingest: keys k0..k9999 (for 1M) round-robin over 4
    # partitions, so each group stays in one partition while the group
    # count is a multiple of 4, and gets its 100th item only near the end
    # of the backlog: the batches come last.
    line=$(bench_load "$t.in" "$n" 100 --keys "$groups" --header-seq sluice-item)
    bench_log "streams_debounce_ingest: $kind: $line"
    b0=$(bench_broker_cpu_ticks)
    t0=$(date +%s%N)
    if [ "$kind" = sluice ]; then
        bench_sluice_start "$name" "$BENCH_WORK/$name.ini"
        bench_wait_until 240 _streams_db_read "$port" "$name" "$n" || bench_fail "sluice did not read $n records within 240 s"
    else
        _streams_start "$name" debounce "$t.in" -o "$t.out" --expect "$n" \
            --idle 60000 --max-age 120000 --max-items 100
        _streams_wait "$name" 300 "in=$n"
    fi
    t1=$(date +%s%N)
    pid=$(bench_sluice_pid "$name")
    c1=$(bench_cpu_ticks "$pid")
    b1=$(bench_broker_cpu_ticks)
    line=$(bench_consume "$t.out" "$batches")
    bench_log "streams_debounce_ingest: $kind: $line"
    [ "$(bench_field "$line" records)" = "$batches" ] || bench_fail "$kind: $t.out: $line"
    hwm=$(bench_peak_rss "$pid")
    bench_sluice_stop "$name"
    rate=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / ((b - a) / 1e9) }')
    echo "items_per_s=$rate cpu_us_per_item=$(bench_cpu_us_per 0 "$c1" "$n") peak_rss_kb=$hwm" \
        "broker_us_per_item=$(bench_cpu_us_per "$b0" "$b1" "$n")"
}

section_streams_debounce_ingest() {
    local n=${BENCH_STREAMS_ITEMS:-1000000} s k a b
    _streams_ready_or_skip streams_debounce_ingest || return 0
    s=$(_streams_ingest sluice)
    k=$(_streams_ingest streams)
    a=$(bench_field "$s" items_per_s)
    b=$(bench_field "$k" items_per_s)
    bench_figure streams_debounce_ingest "sluice: items/s ($n × 100 B, $((n / 100)) groups)" "$a" items/s \
        "$(_streams_vs "$a" "$b")" ">= 3 (x Streams)"
    bench_figure streams_debounce_ingest "Kafka Streams: items/s ($n × 100 B, $((n / 100)) groups)" "$b" items/s
    a=$(bench_field "$s" cpu_us_per_item)
    b=$(bench_field "$k" cpu_us_per_item)
    bench_figure streams_debounce_ingest "sluice: CPU µs per item (exec → all read)" "$a" µs \
        "$(_streams_vs "$a" "$b")" "<= 3 µs"
    bench_figure streams_debounce_ingest "Kafka Streams: CPU µs per item (exec → all read)" "$b" µs
    bench_figure streams_debounce_ingest "(info) the broker's CPU µs per item over the ingest, sluice / Streams" \
        "$(bench_field "$s" broker_us_per_item)/$(bench_field "$k" broker_us_per_item)" µs
    bench_figure streams_debounce_ingest "  peak RSS, sluice / Streams" \
        "$(bench_field "$s" peak_rss_kb)/$(bench_field "$k" peak_rss_kb)" kB
}
