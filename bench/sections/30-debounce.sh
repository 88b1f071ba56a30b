# SPDX-License-Identifier: Apache-2.0
# bench/sections/30-debounce.sh — the debounce operator against SPEC §6:
#
#   debounce_ingest    1M items of 100 bytes (a backlog on 4 partitions,
#                      10,000 groups of 100 items, each its own sluice-item)
#                      read and recorded in the changelog: items per second,
#                      as a ratio to the baseline eos_copy, and CPU µs per
#                      item (utime + stime of sluice, exec → all read); then
#                      (info) until the 10,000 batches (max_items = 100)
#                      are visible
#   debounce_lateness  after 3 rounds of the same load unmeasured (a warm-up
#                      for the broker, as delay_lateness's), 10 rounds,
#                      1.5 s apart, of 5,000 items over 1,000 groups,
#                      idle = 500ms: flush lateness, deadline (the
#                      sluice-due header) → batch visible to read_committed,
#                      p50/p99/max over 10,000 batches; (info) sluice's
#                      deadline → produced, commit and markers times
#   debounce_steady    the same flush lateness under a steady load, as
#                      delay_lateness measures timers: 10,000 items/s for
#                      20 s (after 5 s unmeasured on a pipeline of their
#                      own), five items in a row per group, each group its
#                      own key (idle = 500ms): 2,000 batches/s of 5 items,
#                      p50/p99/max deadline → visible over 40,000 batches
#   debounce_rebuild   a changelog of 1M records of which 90% are
#                      tombstones (bench/dbchangelog.c), rebuilt as written
#                      (no compaction: all in the active segment) and after
#                      the broker's cleaner compacted a copy (1 MiB segments,
#                      delete.retention.ms = 0; tombstones in the active
#                      segments stay): rebuild seconds and records
#   debounce_rebuild_pending  1M pending items (100 B over 10,000 groups,
#                      idle = 1d) read by sluice, which writes them as
#                      chunk records (one per group a transaction touched);
#                      then kill -9 and a restart: changelog records read,
#                      slowest partition, start → ready, every item back
#
# Each section has its own topics, consumer group and sluice process, with
# metrics on a free port.
#
# Environment (all optional):
#   BENCH_DEBOUNCE_ITEMS      items in debounce_ingest (1000000; fewer
#                             items, items/100 groups: a multiple of 400)
#   BENCH_DEBOUNCE_CHANGELOG  changelog records in debounce_rebuild (1000000)
#   BENCH_LATENESS_DUMP=PREFIX  debounce_lateness's reader writes every batch
#                             it read to PREFIX.dblat (consume --dump)
#   BENCH_DBLAT_WARMUP        warm-up rounds of debounce_lateness (3; 0: none)
#   BENCH_DBSTEADY_RATE       items/s of debounce_steady (10000; a multiple
#                             of 5: 5 items per batch)
#   BENCH_DBSTEADY_SECS       its measured seconds (20)

bench_register debounce_ingest 200 "debounce: items ingested/s (1M items, 10k groups)"
bench_register debounce_lateness 120 "debounce: flush lateness deadline → visible (10k batches)"
bench_register debounce_steady 120 "debounce: flush lateness deadline → visible, 2k batches/s steady"
bench_register debounce_rebuild 400 "debounce: rebuild of 1M changelog records (90% tombstones), before/after compaction"
bench_register debounce_rebuild_pending 200 "debounce: kill -9 and rebuild of 1M pending items, as sluice wrote them"

_db_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# _db_conf NAME PORT [key=value ...] — $BENCH_WORK/NAME.ini: its own app_id,
# metrics on PORT, a debounce pipeline NAME on $BENCH_ID.NAME.{in,out} with
# the changelog $BENCH_ID.NAME.changelog unless a changelog= is given (a
# reused broker keeps earlier runs' topics: a changelog named after the
# pipeline alone would be rebuilt from their state).
_db_conf() {
    local name=$1 port=$2 conf=$BENCH_WORK/$1.ini kv changelog
    shift 2
    changelog=$BENCH_ID.$name.changelog
    for kv in "$@"; do [ "${kv%%=*}" != changelog ] || changelog=${kv#*=}; done
    bench_conf "$conf"
    sed -i "s/^app_id = .*/app_id = $BENCH_ID.$name/; s/^metrics_listen =.*/metrics_listen = 127.0.0.1:$port/" "$conf"
    {
        echo "[pipeline $name]"
        echo "type = debounce"
        echo "input = $BENCH_ID.$name.in"
        echo "output = $BENCH_ID.$name.out"
        echo "changelog = $changelog"
        echo "dlq = none"
        echo "catchup_rate = 0"
        for kv in "$@"; do
            [ "${kv%%=*}" = changelog ] || echo "${kv%%=*} = ${kv#*=}"
        done
    } >>"$conf"
}

_db_ready() {
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/readyz")" = 200 ]
}

_db_metric() {
    curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s && !found { v = $2; found = 1 } END { if (found) print v }'
}

# _db_hist_q PORT HISTOGRAM PIPELINE Q — the Q-quantile of a histogram from
# /metrics, interpolated within its bucket as PromQL's histogram_quantile()
# does, in ms.
_db_hist_q() {
    curl -s --max-time 5 "http://127.0.0.1:$1/metrics" |
        awk -v p="$2_bucket{pipeline=\"$3\",le=\"" -v q="$4" '
        index($1, p) == 1 {
            le = substr($1, length(p) + 1); sub(/".*/, "", le)
            n++; bound[n] = (le == "+Inf") ? -1 : le + 0; cnt[n] = $2 + 0
        }
        END {
            if (!n || !cnt[n]) { print "n/a"; exit }
            rank = q * cnt[n]; lo = 0; prev = 0
            for (i = 1; i <= n; i++) {
                if (cnt[i] >= rank) {
                    if (bound[i] < 0) { printf "%.1f\n", lo * 1000; exit }
                    f = (cnt[i] > prev) ? (rank - prev) / (cnt[i] - prev) : 0
                    printf "%.1f\n", (lo + (bound[i] - lo) * f) * 1000; exit
                }
                lo = bound[i]; prev = cnt[i]
            }
        }'
}

# _db_start NAME PORT — starts sluice on $BENCH_WORK/NAME.ini and waits for
# /readyz; prints the seconds it took.
_db_start() {
    local t0
    t0=$(date +%s%N)
    bench_sluice_start "$1" "$BENCH_WORK/$1.ini"
    bench_wait_until 120 _db_ready "$2" || {
        tail -20 "$BENCH_WORK/sluice-$1.log" >&2
        bench_fail "sluice $1 not ready within 120 s"
    }
    awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }'
}

section_debounce_ingest() {
    local n=${BENCH_DEBOUNCE_ITEMS:-1000000} name=dbin port line t0 t1 t2 secs rate
    local batches=$((n / 100)) groups=10000
    # 100 items per group and batch (max_items): fewer items, fewer groups.
    [ "$n" -ge 1000000 ] || groups=$((n / 100))
    if [ "$groups" -lt 4 ] || [ $((groups % 4)) -ne 0 ] || [ $((n % (groups * 100))) -ne 0 ]; then
        bench_fail "BENCH_DEBOUNCE_ITEMS=$n: give a multiple of 400 below 1M, of 1M above"
    fi
    port=$(_db_free_port)
    bench_topic "$BENCH_ID.$name.in" 4
    bench_topic "$BENCH_ID.$name.out" 4
    _db_conf "$name" "$port" idle=60s max_age=120s max_items=100
    "$SLUICE_BIN" topics apply -c "$BENCH_WORK/$name.ini" >/dev/null ||
        bench_fail "topics apply failed"
    # Keys k0..k<groups-1> round-robin over 4 partitions: each group stays
    # in one partition (groups is a multiple of 4) and gets a multiple of 100
    # items (100 in the 1M default over 10,000 groups).
    line=$(bench_load "$BENCH_ID.$name.in" "$n" 100 --keys "$groups" --header-seq sluice-item)
    bench_log "debounce_ingest: $line"
    local b0 b1
    b0=$(bench_broker_cpu_ticks)
    t0=$(date +%s%N)
    bench_sluice_start "$name" "$BENCH_WORK/$name.ini"
    # Ingest: every input record read, its item recorded in the changelog.
    # Each group gets its 100th item only near the end of the backlog (keys
    # cycle), so the batches come last: flushing is timed on its own.
    _in_done() {
        [ "$(_db_metric "$port" "sluice_records_in_total{pipeline=\"$name\"}")" = "$n" ]
    }
    bench_wait_until 180 _in_done || bench_fail "sluice did not read $n records within 180 s"
    t1=$(date +%s%N)
    local c1 l1 pid
    pid=$(bench_sluice_pid "$name")
    # The loop thread first: its share never exceeds the whole.
    l1=$(bench_cpu_ticks "$pid" "$pid")
    c1=$(bench_cpu_ticks "$pid")
    b1=$(bench_broker_cpu_ticks)
    line=$(bench_consume "$BENCH_ID.$name.out" "$batches")
    t2=$(date +%s%N)
    bench_log "debounce_ingest: $line"
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    [ "$(_db_metric "$port" "sluice_debounce_batches_total{pipeline=\"$name\",reason=\"max_items\"}")" = "$batches" ] ||
        bench_fail "expected $batches max_items batches"
    local what="1M × 100 B backlog, 10k groups"
    [ "$n" = 1000000 ] || what="$n × 100 B backlog, $groups groups"
    bench_figure debounce "ingest: items/s ($what)" \
        "$rate" items/s "$(bench_ratio "$rate")" ">= 0.5"
    # From exec (the rate's clock starts there too): start-up and the
    # rebuild of an empty changelog are in it, the flushes are not.
    bench_cpu_figure debounce "ingest: CPU µs per item (exec → all read)" \
        "$(bench_cpu_us_per 0 "$c1" "$n")"
    # Where it went: the loop thread (input, state, the produce calls) and
    # the other threads (librdkafka's broker threads above all, the
    # transaction worker), beside the copy's main thread and the rest.
    local note=""
    [ -f "$BENCH_WORK/baseline.tuned" ] &&
        note="eos_copy as sluice: $(cut -d' ' -f3 "$BENCH_WORK/baseline.tuned")"
    bench_figure debounce "(info) of which on the loop thread / on the other threads" \
        "$(bench_cpu_us_per 0 "$l1" "$n")/$(bench_cpu_us_per "$l1" "$c1" "$n")" µs "" "$note"
    # The broker shares the machine's two cores: what it spent answering
    # over the same span (its log cleaner and other topics included).
    bench_figure debounce "(info) the broker's CPU µs per item over the ingest" \
        "$(bench_cpu_us_per "$b0" "$b1" "$n")" µs
    secs=$(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    rate=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
    bench_figure debounce "(info) end to end: items/s until the last of $batches batches is visible" \
        "$rate" items/s "$(bench_ratio "$rate")"
    bench_figure debounce "ingest: peak RSS" "$(bench_peak_rss "$(bench_sluice_pid "$name")")" kB
    bench_sluice_stop "$name"
}

# _db_lateness_start NAME PORT — a fresh pipeline NAME for the lateness
# sections (idle = 500ms), metrics on PORT, started and ready.
_db_lateness_start() {
    bench_topic "$BENCH_ID.$1.in" 4
    bench_topic "$BENCH_ID.$1.out" 4
    _db_conf "$1" "$2" idle=500ms max_age=30s max_items=1000
    "$SLUICE_BIN" topics apply -c "$BENCH_WORK/$1.ini" >/dev/null ||
        bench_fail "topics apply failed"
    _db_start "$1" "$2" >/dev/null
}

# _db_lateness_reader NAME COUNT — in the background (the caller waits for
# $!), reads COUNT batches of NAME's output into $BENCH_WORK/NAME.consume.
# Started before the load: arrival times are when each batch became
# visible.  It asks often (fetch.wait.max.ms 5, as delay_lateness's does):
# the figure is when a batch became visible, not how long an idle reader's
# fetch waited at the broker.
_db_lateness_reader() {
    bench_consume "$BENCH_ID.$1.out" "$2" \
        --lateness-header sluice-due -X fetch.wait.max.ms="${BENCH_DBLAT_FETCH_WAIT:-5}" \
        ${BENCH_LATENESS_DUMP:+--dump "$BENCH_LATENESS_DUMP.$1"} \
        >"$BENCH_WORK/$1.consume"
}

# _db_lateness_run NAME ROUNDS [warmup] — ROUNDS rounds, 1.5 s apart, of
# 5,000 items over 1,000 groups into a fresh pipeline (idle = 500ms); the
# figures, unless it is a warm-up.
_db_lateness_run() {
    local name=$1 rounds=$2 warmup=${3:-} port line per=5000 groups=1000 cpid
    port=$(_db_free_port)
    _db_lateness_start "$name" "$port"
    _db_lateness_reader "$name" $((rounds * groups)) &
    cpid=$!
    for ((r = 0; r < rounds; r++)); do
        bench_load "$BENCH_ID.$name.in" "$per" 100 --keys "$groups" \
            --header-seq sluice-item >/dev/null
        sleep 1.5 # pacing of the load, not a wait: each round flushes alone
    done
    wait "$cpid" || bench_fail "reading the batches failed"
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "debounce_lateness${warmup:+ (warm-up)}: $line"
    if [ -n "$warmup" ]; then
        bench_sluice_stop "$name"
        return 0
    fi
    bench_figure debounce "flush lateness p50 (deadline → visible, 10k batches)" \
        "$(bench_field "$line" lateness_p50_ms)" ms
    bench_figure debounce "flush lateness p99" "$(bench_field "$line" lateness_p99_ms)" ms "" "<= 50"
    bench_figure debounce "flush lateness max" "$(bench_field "$line" lateness_max_ms)" ms
    bench_figure debounce "(info) deadline → produced p50 (sluice histogram)" \
        "$(_db_hist_q "$port" sluice_debounce_flush_lateness_seconds "$name" 0.5)" ms
    bench_figure debounce "(info) deadline → produced p99 (sluice histogram)" \
        "$(_db_hist_q "$port" sluice_debounce_flush_lateness_seconds "$name" 0.99)" ms
    _db_commit_figures "$port" ""
    bench_sluice_stop "$name"
}

# _db_commit_figures PORT INDENT — what a batch waits for once produced:
# the commit it goes in (after the one in flight), then the coordinator
# writing that commit's markers (n/a when no transaction was opened while
# the coordinator was still at it).  Each says how many it was taken over:
# the markers are measured only for a commit whose next transaction had
# records waiting, which in debounce_lateness is one or two of its commits,
# and a quantile of so few is a bucket's interpolation, not a distribution.
_db_commit_figures() {
    bench_figure debounce "$2(info) commit time p50 / p99 (sluice_txn_commit_seconds, $(bench_histogram_count "$1" sluice_txn_commit_seconds) commits)" \
        "$(bench_histogram_p50_p99_ms "$1" sluice_txn_commit_seconds)" ms
    bench_figure debounce "$2(info) commit phases p50/p99: flush, offsets, deliver, end" \
        "$(bench_commit_phases_ms "$1")" ms
    bench_figure debounce "$2(info) coordinator finishing a commit p50 / p99 (sluice_txn_markers_seconds, $(bench_histogram_count "$1" sluice_txn_markers_seconds) observed)" \
        "$(bench_histogram_p50_p99_ms "$1" sluice_txn_markers_seconds)" ms
}

section_debounce_lateness() {
    local warm=${BENCH_DBLAT_WARMUP:-3}
    # Warm-up, not measured (as delay_lateness's): a broker that has just
    # started commits and writes markers slower for its first second or so
    # of this traffic; in traces the first round's commit took 51 ms where
    # later rounds' took 20-30.
    if [ "$warm" -gt 0 ]; then
        _db_lateness_run dblatwarm "$warm" warmup
    fi
    _db_lateness_run dblat 10
}

# _db_steady_run NAME RATE SECS [warmup] — RATE items/s for SECS seconds
# into a fresh pipeline (idle = 500ms), five items in a row per group key
# (load --key-run 5; each key used once): RATE/5 batches/s, each flushed
# 500 ms after its fifth item; the figures, unless it is a warm-up.
_db_steady_run() {
    local name=$1 rate=$2 secs=$3 warmup=${4:-} port line lline n batches cpid
    n=$((rate * secs))
    batches=$((n / 5))
    port=$(_db_free_port)
    _db_lateness_start "$name" "$port"
    _db_lateness_reader "$name" "$batches" &
    cpid=$!
    lline=$(bench_load "$BENCH_ID.$name.in" "$n" 100 --key-run 5 \
        --rate "$rate" --header-seq sluice-item)
    wait "$cpid" || bench_fail "reading the batches failed"
    line=$(cat "$BENCH_WORK/$name.consume")
    bench_log "debounce_steady${warmup:+ (warm-up)}: $lline; $line"
    [ "$(bench_field "$line" records)" = "$batches" ] || bench_fail "$name: $line"
    if [ -n "$warmup" ]; then
        bench_sluice_stop "$name"
        return 0
    fi
    bench_figure debounce "steady $((rate / 5)) batches/s: flush lateness p99 (deadline → visible)" \
        "$(bench_field "$line" lateness_p99_ms)" ms "" "<= 50"
    bench_figure debounce "  p50 / max" \
        "$(bench_field "$line" lateness_p50_ms)/$(bench_field "$line" lateness_max_ms)" ms
    bench_figure debounce "  (info) deadline → produced p50 / p99 (sluice histogram)" \
        "$(_db_hist_q "$port" sluice_debounce_flush_lateness_seconds "$name" 0.5)/$(_db_hist_q "$port" sluice_debounce_flush_lateness_seconds "$name" 0.99)" ms
    _db_commit_figures "$port" "  "
    bench_figure debounce "  (info) load rate / transactions committed" \
        "$(bench_field "$lline" rate)/$(bench_metric "$port" sluice_transactions_total 'result="commit"')" ""
    bench_sluice_stop "$name"
}

section_debounce_steady() {
    local rate=${BENCH_DBSTEADY_RATE:-10000}
    [ $((rate % 5)) -eq 0 ] || bench_fail "BENCH_DBSTEADY_RATE=$rate: give a multiple of 5"
    # Warm-up, not measured, as delay_lateness's: 5 s of the same load.
    _db_steady_run dbsteadywarm "$rate" 5 warmup
    _db_steady_run dbsteady "$rate" "${BENCH_DBSTEADY_SECS:-20}"
}

# _db_rebuild NAME CHANGELOG — a pipeline on CHANGELOG that never flushes
# (the live items stay pending); prints "SECONDS RECORDS SLOWEST": seconds
# from start to ready, changelog records read, and the slowest partition's
# rebuild seconds (from the log).
_db_rebuild() {
    local name=$1 cl=$2 port
    port=$(_db_free_port)
    bench_topic "$BENCH_ID.$name.in" 4
    bench_topic "$BENCH_ID.$name.out" 4
    _db_conf "$name" "$port" changelog="$cl" idle=1d max_age=1d max_items=1000000 max_bytes=1GiB
    _db_rebuild_start "$name" "$port" "debounce_rebuild: $cl" "$LIVE"
}

# _db_rebuild_start NAME PORT LABEL LIVE — starts pipeline NAME (its
# config written) and waits until it is ready, which it must be with LIVE
# items pending; prints "SECONDS RECORDS SLOWEST" as _db_rebuild, from
# what this start logged.
_db_rebuild_start() {
    local name=$1 port=$2 label=$3 live=$4 log=$BENCH_WORK/sluice-$1.log
    local secs recs part pending skip=0
    [ -f "$log" ] && skip=$(wc -l <"$log")
    secs=$(_db_start "$name" "$port")
    recs=$(_db_metric "$port" "sluice_rebuild_records_total{pipeline=\"$name\"}")
    bench_log "$label: ready in $secs s after $recs records; $(tail -n +$((skip + 1)) "$log" | grep -c 'rebuilt from') partitions"
    pending=$(_db_metric "$port" "sluice_debounce_pending_items{pipeline=\"$name\"}")
    [ "$pending" = "$live" ] || bench_fail "$label: $pending items pending after the rebuild, want $live"
    part=$(tail -n +$((skip + 1)) "$log" |
        sed -n 's/.*rebuilt from [0-9]* changelog records in \([0-9.]*\) s.*/\1/p' | sort -n | tail -1)
    bench_sluice_stop "$name"
    echo "$secs ${recs:-0} ${part:-0}"
}

section_debounce_rebuild() {
    local n=${BENCH_DEBOUNCE_CHANGELOG:-1000000} a=$BENCH_ID.dbcl.raw b=$BENCH_ID.dbcl.compacted
    local line left res secs recs part
    # A: everything in one active segment, which the cleaner never touches.
    bench_topic "$a" 4 cleanup.policy=compact segment.bytes=1073741824 segment.ms=604800000
    # B: small segments, cleaned at once, tombstones dropped when cleaned.
    bench_topic "$b" 4 cleanup.policy=compact segment.bytes=1048576 \
        min.cleanable.dirty.ratio=0.01 delete.retention.ms=0 min.compaction.lag.ms=0
    for t in "$a" "$b"; do
        line=$(bench_run 200 "dbchangelog-$t" "$BENCH_BIN/dbchangelog" -b "$BENCH_BOOTSTRAP" \
            -t "$t" -n "$n" --tombstones 90 --groups 10000) || bench_fail "dbchangelog failed"
        bench_log "debounce_rebuild: $t: $line"
    done
    LIVE=$(bench_field "$line" live)
    res=$(_db_rebuild dbrba "$a")
    read -r secs recs part <<<"$res"
    bench_figure debounce "rebuild: 1M records, 90% tombstones, uncompacted: start → ready" "$secs" s "" "<= 2"
    bench_figure debounce "rebuild: uncompacted, slowest partition" "$part" s
    bench_figure debounce "rebuild: records/s, uncompacted (start → ready)" \
        "$(awk -v r="$recs" -v s="$secs" 'BEGIN { printf "%.0f", r / s }')" rec/s "" ">= 500000"
    # The cleaner's first pass over B stamps the tombstones with their
    # delete horizon; they go in a later pass, which needs new dirty
    # records: when the count has not dropped for 20 s, 2% more tombstones
    # (fresh keys) make the log dirty again (at most 3 times).  Whatever is
    # left after 150 s is what the figure is about.
    local k=0 t_end=$(($(date +%s) + 150)) stuck_since low
    left=$(bench_count "$b")
    low=$left
    stuck_since=$(date +%s)
    while [ "$left" -gt $((LIVE + n / 5)) ] && [ "$(date +%s)" -lt "$t_end" ]; do
        if [ $(($(date +%s) - stuck_since)) -ge 20 ]; then
            [ "$k" -lt 3 ] || break
            k=$((k + 1))
            bench_run 100 "dbchangelog-nudge" "$BENCH_BIN/dbchangelog" -b "$BENCH_BOOTSTRAP" \
                -t "$b" -n $((n / 50)) --tombstones 100 --first $((2 * n + k * n)) >/dev/null ||
                bench_fail "dbchangelog failed"
            low=$((low + n / 50))
            stuck_since=$(date +%s)
        fi
        sleep 2 # the cleaner runs on its own schedule
        left=$(bench_count "$b")
        if [ "$left" -lt "$low" ]; then
            low=$left
            stuck_since=$(date +%s)
        fi
        bench_log "debounce_rebuild: $b: $left records ($k nudges)"
    done
    bench_log "debounce_rebuild: $b compacted to $left records"
    res=$(_db_rebuild dbrbb "$b")
    read -r secs recs part <<<"$res"
    bench_figure debounce "rebuild: after compaction: start → ready" "$secs" s
    bench_figure debounce "rebuild: after compaction, slowest partition" "$part" s
    bench_figure debounce "rebuild: records left after compaction" "$recs" records
}

# The changelog as sluice itself writes it (chunk records, see
# docs/debounce.md), where debounce_rebuild's is written by dbchangelog in the
# one-record-per-item form that older changelogs hold.
section_debounce_rebuild_pending() {
    local n=${BENCH_DEBOUNCE_ITEMS:-1000000} name=dbrbp port line c0 res secs recs part
    port=$(_db_free_port)
    bench_topic "$BENCH_ID.$name.in" 4
    bench_topic "$BENCH_ID.$name.out" 4
    _db_conf "$name" "$port" idle=1d max_age=1d max_items=1000000 max_bytes=1GiB
    # Static membership, as a pod name gives it: the restarted process takes
    # the killed one's place at once, where a new dynamic member would wait
    # for the dead one's session to time out (45 s) before the group gives
    # it the partitions.
    sed -i "s/^app_id = .*/&\ninstance_id = $BENCH_ID.$name-0/" "$BENCH_WORK/$name.ini"
    "$SLUICE_BIN" topics apply -c "$BENCH_WORK/$name.ini" >/dev/null ||
        bench_fail "topics apply failed"
    line=$(bench_load "$BENCH_ID.$name.in" "$n" 100 --keys 10000 --header-seq sluice-item)
    bench_log "debounce_rebuild_pending: $line"
    _db_start "$name" "$port" >/dev/null
    _in_done() {
        [ "$(_db_metric "$port" "sluice_records_in_total{pipeline=\"$name\"}")" = "$n" ]
    }
    bench_wait_until 180 _in_done || bench_fail "sluice did not read $n records within 180 s"
    # The last records' transaction (with their chunks) is committed
    # within commit_interval; a second without any commit says it was.
    c0=-1
    _settled() {
        local c
        c=$(_db_metric "$port" "sluice_transactions_total{result=\"commit\"}")
        [ "$c" = "$c0" ] && return 0
        c0=$c
        sleep 1
        return 1
    }
    bench_wait_until 30 _settled || bench_fail "sluice kept committing after the input was read"
    [ "$(_db_metric "$port" "sluice_debounce_pending_items{pipeline=\"$name\"}")" = "$n" ] ||
        bench_fail "not all $n items pending before the kill"
    bench_sluice_stop "$name" KILL
    res=$(_db_rebuild_start "$name" "$port" "debounce_rebuild_pending" "$n")
    read -r secs recs part <<<"$res"
    bench_figure debounce "rebuild: 1M pending items as sluice wrote them: kill -9 → ready" "$secs" s "" "<= 2"
    bench_figure debounce "rebuild: pending items, slowest partition" "$part" s
    bench_figure debounce "rebuild: pending items, changelog records read" "$recs" records
}
