# SPDX-License-Identifier: Apache-2.0
# lib.sh — shared functions for sluice benchmarks; `source` it first.
#
# bench/run.sh sources this file and every bench/sections/*.sh.  A section
# file registers itself and defines one function:
#
#   bench_register throttle 120 "throttle pass-through and drain accuracy"
#   section_throttle() {
#       bench_topic "$BENCH_ID.thr.in" 4
#       bench_load "$BENCH_ID.thr.in" 1000000 100 --keys 10000 >/dev/null
#       ...
#       bench_figure throttle "pass-through rate" "$rate" rec/s "$(bench_ratio "$rate")" ">= 0.9"
#   }
#
# Each section runs in its own bash process under `timeout` with the budget
# it registered, so one stuck section cannot hold the run.  Sections talk to
# the run only through files in $BENCH_WORK (figures, the baseline rate).
#
# Environment (all optional):
#   SLUICE_BENCH_KAFKA_PORT  bench broker port (default 39292; the test broker
#                            uses 39092 and is never touched)
#   SLUICE_BIN               the sluice binary (default ./sluice)
#   BENCH_BIN                the bench programs (default build/bench)
#   BENCH_OUT                where the figures are written (default
#                            build/bench/figures.txt and figures.tsv)
#   BENCH_KAFKA_PROPS        librdkafka properties for both sides of every
#                            ratio, space-separated key=value: passed to
#                            eos_copy as -X and written into [kafka] by
#                            bench_conf, so sluice and its baseline always
#                            run with the same client settings
#
# Benchmarks print figures and assert nothing about speed.  They do check
# that the records arrived (a fast wrong answer is not a figure).

set -euo pipefail
# set -e also inside $(...), so a failing helper fails its caller.
shopt -s inherit_errexit

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${SLUICE_BIN:=$BENCH_ROOT/sluice}"
: "${BENCH_BIN:=$BENCH_ROOT/build/bench}"
: "${BENCH_OUT:=$BENCH_ROOT/build/bench}"
: "${SLUICE_BENCH_KAFKA_PORT:=39292}"
: "${BENCH_KAFKA_PROPS:=}"
BENCH_PORT=$SLUICE_BENCH_KAFKA_PORT
BENCH_BOOTSTRAP=127.0.0.1:$BENCH_PORT
BENCH_BROKER_SH=$BENCH_ROOT/tests/integration/kafka/broker.sh
# run.sh exports BENCH_WORK and BENCH_ID so every section shares them; a
# script sourcing lib.sh alone gets its own.
if [ -z "${BENCH_WORK:-}" ]; then
    BENCH_WORK=$(mktemp -d /tmp/sluice-bench.XXXXXX)
fi
: "${BENCH_ID:=b$(date +%s%N | tail -c 7)}"
export SLUICE_BIN BENCH_BIN BENCH_OUT SLUICE_BENCH_KAFKA_PORT BENCH_WORK BENCH_ID \
    BENCH_KAFKA_PROPS

# ---- messages -------------------------------------------------------------

# bench_log MSG... — progress line on stderr, with seconds since the start.
bench_log() {
    local t0=${BENCH_T0:-$(date +%s%N)}
    local ms=$((($(date +%s%N) - t0) / 1000000))
    printf '[%4d.%01ds] %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$*" >&2
}

# bench_fail MSG... — the section failed; exits non-zero.
bench_fail() {
    echo "bench: FAIL: $*" >&2
    exit 1
}

# ---- broker ---------------------------------------------------------------

# The broker does not inherit fd 9, run.sh's lock: a broker kept running
# (--keep-broker) would otherwise hold the lock and make the next run wait.
_bench_broker() {
    SLUICE_TEST_KAFKA_PORT=$BENCH_PORT "$BENCH_BROKER_SH" "$@" 9>&-
}

# bench_broker_start — a fresh single-node broker on $BENCH_PORT.  When one
# already answers there (a broker someone else started, or one an earlier
# run kept with --keep-broker), it is reused and bench_broker_stop leaves it
# running.  A reused broker still holds every earlier run's topics, and its
# figures drift from a fresh one's (they rose run after run in one test), so
# the reuse is said loudly and printed above the figures.
bench_broker_start() {
    if _bench_broker status; then
        bench_log "broker: reusing the one on $BENCH_BOOTSTRAP"
        echo "bench: WARNING: reusing a running broker on $BENCH_BOOTSTRAP:" \
            "it keeps earlier runs' topics, so figures are not those of a" \
            "fresh broker; stop it with" \
            "'SLUICE_TEST_KAFKA_PORT=$BENCH_PORT $BENCH_BROKER_SH stop'" >&2
        echo reused >"$BENCH_WORK/broker.reused"
        return 0
    fi
    _bench_broker start
}

bench_broker_stop() {
    if [ -f "$BENCH_WORK/broker.reused" ]; then
        return 0
    fi
    _bench_broker stop
}

# bench_broker_logs — the broker log tail, for failures.
bench_broker_logs() {
    _bench_broker logs 50 >&2 || true
}

# ---- waiting and running --------------------------------------------------

# bench_wait_until SECONDS CMD... — polls CMD every 100 ms until it succeeds;
# returns 1 at the deadline.
bench_wait_until() {
    local secs=$1
    shift
    local end=$(($(date +%s%N) + secs * 1000000000))
    until "$@"; do
        [ "$(date +%s%N)" -lt "$end" ] || return 1
        sleep 0.1
    done
}

# bench_run SECONDS NAME CMD... — runs CMD with a deadline, stdout to the
# caller, stderr to $BENCH_WORK/NAME.err (shown on failure).  Returns CMD's
# exit code (124 on timeout).  --foreground keeps CMD in the section's
# process group, so the section's own timeout reaches it too.
bench_run() {
    local secs=$1 name=$2
    shift 2
    local rc=0
    timeout --foreground -k 5 "$secs" "$@" 2>"$BENCH_WORK/$name.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "bench: $name exited with $rc$([ "$rc" = 124 ] && echo " (timeout ${secs}s)")" >&2
        tail -20 "$BENCH_WORK/$name.err" >&2 || true
    fi
    return "$rc"
}

# bench_field LINE KEY — the value of KEY=VALUE in a result line.
bench_field() {
    local kv
    for kv in $1; do
        if [ "${kv%%=*}" = "$2" ]; then
            echo "${kv#*=}"
            return 0
        fi
    done
    echo "bench: no $2= in: $1" >&2
    return 1
}

# ---- topics, load, copy, consume -----------------------------------------

# bench_topic NAME PARTITIONS [key=value ...] — creates a topic and waits
# until every partition has a leader.
bench_topic() {
    local name=$1 parts=$2
    shift 2
    local args=() kv
    for kv in "$@"; do args+=(-c "$kv"); done
    bench_run 60 "mktopic-$name" "$BENCH_BIN/mktopic" -b "$BENCH_BOOTSTRAP" \
        -p "$parts" "${args[@]}" "$name" ||
        bench_fail "cannot create topic $name"
}

# bench_load TOPIC COUNT SIZE [load options] — produces COUNT records with
# SIZE-byte values (see build/bench/load --help for keys, headers and
# partitioners); prints the result line "load records=N seconds=S rate=R".
# Records go to the partition their key's murmur2 gives (a keyed producer's,
# the pipelines' input_partitioner), unless the options name a partitioner:
# a record placed otherwise would be measured moving (reroute).
bench_load() {
    local topic=$1 count=$2 size=$3 a part=(--partitioner murmur2_random)
    shift 3
    for a in "$@"; do case $a in -p | --partitioner) part=() ;; esac; done
    bench_run 200 "load-$topic" "$BENCH_BIN/load" -b "$BENCH_BOOTSTRAP" \
        -t "$topic" -n "$count" -s "$size" --timeout 180 "${part[@]}" "$@" ||
        bench_fail "load into $topic failed"
}

# bench_consume TOPIC COUNT [consume options] — waits until COUNT records
# are visible to read_committed (COUNT 0: reads to the end); prints
# "consume records=N seconds=S rate=R wall=W [lateness_...]".
bench_consume() {
    local topic=$1 count=$2
    shift 2
    bench_run 200 "consume-$topic" "$BENCH_BIN/consume" -b "$BENCH_BOOTSTRAP" \
        -t "$topic" -n "$count" --timeout 180 "$@" ||
        bench_fail "reading $topic failed"
}

# bench_count TOPIC — the number of committed records in TOPIC now.
bench_count() {
    local line
    line=$(bench_consume "$1" 0) || return 1
    bench_field "$line" records
}

# bench_copy IN OUT COUNT [eos_copy options] — the exactly-once copy, as
# consumer group OUT.eos_copy, with $BENCH_KAFKA_PROPS; prints its result
# line plus " peak_rss_kb=K".
bench_copy() {
    local in=$1 out=$2 count=$3
    shift 3
    local line kv props=()
    for kv in $BENCH_KAFKA_PROPS; do props+=(-X "$kv"); done
    line=$(bench_run 200 "eos_copy-$out" /usr/bin/time -f 'peak_rss_kb=%M' \
        -o "$BENCH_WORK/eos_copy-$out.rss" "$BENCH_BIN/eos_copy" \
        -b "$BENCH_BOOTSTRAP" -i "$in" -o "$out" -g "$out.eos_copy" \
        -n "$count" --timeout 180 "${props[@]}" "$@") ||
        bench_fail "eos_copy $in → $out failed"
    echo "$line $(tail -1 "$BENCH_WORK/eos_copy-$out.rss")"
}

# bench_baseline NAME COUNT SIZE PARTITIONS [load options] — the plain
# exactly-once copy every figure is divided by.  Creates NAME.in, loads
# COUNT records of SIZE bytes into it, then copies them $BENCH_BASELINE_RUNS
# times (default 3) into fresh topics NAME.out1, NAME.out2, ... with
# eos_copy, checking each time that exactly COUNT records are visible.  The
# figure is the median run (a fresh broker's JIT makes the first run slow;
# the median shrugs that off).  Records the figures under section NAME and,
# for NAME "baseline", saves the rate as the run's baseline, which
# bench_ratio divides by.  A section that wants a baseline shaped like its
# own input (headers, key space) calls it with its own NAME and load
# options and passes the printed rate to bench_ratio explicitly.
# Prints the median copy rate.
bench_baseline() {
    local name=$1 count=$2 size=$3 parts=$4
    shift 4
    local t=$BENCH_ID.$name runs=${BENCH_BASELINE_RUNS:-3}
    local line got r rates=() lines=() med
    bench_topic "$t.in" "$parts"
    bench_log "$name: loading $count × ${size} B into $parts partitions"
    line=$(bench_load "$t.in" "$count" "$size" "$@")
    bench_log "$name: $line"
    bench_figure "$name" "load (idempotent producer)" "$(bench_field "$line" rate)" rec/s
    for ((r = 1; r <= runs; r++)); do
        bench_topic "$t.out$r" "$parts"
        line=$(bench_copy "$t.in" "$t.out$r" "$count")
        bench_log "$name: run $r/$runs: $line"
        got=$(bench_count "$t.out$r")
        [ "$got" = "$count" ] ||
            bench_fail "$name: $t.out$r holds $got committed records, expected $count"
        lines+=("$line")
        rates+=("$(bench_field "$line" rate)")
    done
    # The run with the median rate (the lower middle one for an even count).
    med=$(for i in "${!rates[@]}"; do echo "${rates[$i]} $i"; done |
        sort -n | sed -n "$(((runs + 1) / 2))p" | cut -d' ' -f2)
    line=${lines[$med]}
    bench_figure "$name" "eos_copy rate ($count × ${size} B, $parts partitions)" "$(bench_field "$line" rate)" rec/s 1.00
    bench_figure "$name" "eos_copy rate of each run" "$(
        IFS=/
        echo "${rates[*]}"
    )" rec/s
    bench_figure "$name" "eos_copy seconds" "$(bench_field "$line" seconds)" s
    bench_figure "$name" "eos_copy transactions" "$(bench_field "$line" transactions)" ""
    bench_figure "$name" "eos_copy peak RSS" "$(bench_field "$line" peak_rss_kb)" kB
    bench_figure "$name" "eos_copy CPU µs per record (median run)" "$(bench_field "$line" cpu_us_per_record)" µs
    if [ "$name" = baseline ]; then
        bench_field "$line" rate >"$BENCH_WORK/baseline.rate"
        bench_field "$line" cpu_us_per_record >"$BENCH_WORK/baseline.cpu_us"
        # For reference only, not a denominator: the same copy with the
        # whole input prefetched.  librdkafka 2.0 stops fetching a
        # partition once queued.min.messages are queued and looks again
        # only ~1 s later, however fast the queue drains; this run shows
        # what that stall costs (and what avoiding it costs in memory).
        if [ "${BENCH_BASELINE_PREFETCH_RUN:-1}" = 1 ]; then
            local pre
            bench_topic "$t.outp" "$parts"
            pre=$(bench_copy "$t.in" "$t.outp" "$count" \
                -X consumer.queued.min.messages=10000000 \
                -X consumer.queued.max.messages.kbytes=2097151)
            bench_log "$name: prefetch-all: $pre"
            bench_figure "$name" "(info) eos_copy rate, whole input prefetched" \
                "$(bench_field "$pre" rate)" rec/s "$(bench_ratio "$(bench_field "$pre" rate)")"
            bench_figure "$name" "(info) eos_copy peak RSS, whole input prefetched" \
                "$(bench_field "$pre" peak_rss_kb)" kB
        fi
        # For reference too: the copy given what sluice itself runs with,
        # its allocator (jemalloc, when ./sluice links it) and its
        # queued.min.messages: the ratio's denominator keeps librdkafka's
        # and libc's defaults, this is the closer practical limit.
        local jem
        # (SLUICE_BIN may be a wrapper script, which ldd refuses.)
        jem=$({ ldd "$SLUICE_BIN" 2>/dev/null || true; } | awk '/libjemalloc/ { print $3 }')
        if [ "${BENCH_BASELINE_TUNED_RUN:-1}" = 1 ] && [ -n "$jem" ]; then
            local tuned
            bench_topic "$t.outt" "$parts"
            tuned=$(LD_PRELOAD=$jem bench_copy "$t.in" "$t.outt" "$count" \
                -X consumer.queued.min.messages=250000)
            bench_log "$name: jemalloc + queued.min.messages=250000: $tuned"
            bench_figure "$name" "(info) eos_copy rate, jemalloc + queued.min.messages=250000 (as sluice)" \
                "$(bench_field "$tuned" rate)" rec/s "$(bench_ratio "$(bench_field "$tuned" rate)")"
            bench_figure "$name" "(info) eos_copy CPU µs per record, jemalloc + queued.min.messages=250000" \
                "$(bench_field "$tuned" cpu_us_per_record)" µs
            # baseline.tuned: rate, CPU per record, and its split as
            # MAIN/REST: the main thread consumes and produces, the rest is
            # librdkafka's threads (debounce_ingest prints it beside its
            # loop thread and the rest).
            local tcpu split
            tcpu=$(bench_field "$tuned" cpu_us_per_record)
            split=$(awk -v a="$tcpu" -v b="$(bench_field "$tuned" cpu_us_per_record_main)" \
                'BEGIN { printf "%.2f/%.2f", b, a - b }')
            bench_figure "$name" "(info) of which on its main thread / on librdkafka's threads" "$split" µs
            echo "$(bench_field "$tuned" rate) $tcpu $split" >"$BENCH_WORK/baseline.tuned"
        fi
    fi
    bench_field "$line" rate
}

# bench_ratio RATE [BASE] — RATE / BASE with two decimals; BASE defaults to
# the run's baseline copy rate.
bench_ratio() {
    local base=${2:-}
    if [ -z "$base" ]; then
        [ -f "$BENCH_WORK/baseline.rate" ] || bench_fail "no baseline rate yet"
        base=$(cat "$BENCH_WORK/baseline.rate")
    fi
    awk -v r="$1" -v b="$base" 'BEGIN { if (b > 0) printf "%.2f\n", r / b; else print "n/a" }'
}

# ---- memory ---------------------------------------------------------------

# bench_rss PID — resident set size of PID now, in kB.
bench_rss() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# bench_peak_rss PID — the peak resident set size of PID so far (VmHWM,
# kept by the kernel), in kB.  Read it before the process exits; for a
# command run to completion use `/usr/bin/time -f %M` as bench_copy does.
bench_peak_rss() {
    awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

# ---- CPU -------------------------------------------------------------------

# bench_cpu_ticks PID [TID] — user + system CPU of the whole process PID
# (every thread) so far, or of its thread TID alone (the main thread's TID
# is PID), in clock ticks (/proc/PID/stat fields 14 and 15).
bench_cpu_ticks() {
    local stat=/proc/$1/stat
    [ -z "${2:-}" ] || stat=/proc/$1/task/$2/stat
    # The command name (field 2) may hold spaces: count from after its ")".
    sed 's/.*) //' "$stat" | awk '{ print $12 + $13 }'
}

# bench_broker_cpu_ticks — the broker JVM's CPU so far, as bench_cpu_ticks;
# n/a when its pid is not known (a broker someone else started).
bench_broker_cpu_ticks() {
    local f=${SLUICE_TEST_KAFKA_DIR:-/tmp/sluice-test-kafka-$BENCH_PORT}/broker.pid pid
    pid=$(cat "$f" 2>/dev/null) && [ -r "/proc/$pid/stat" ] || {
        echo n/a
        return 0
    }
    bench_cpu_ticks "$pid"
}

# bench_cpu_us_per TICKS0 TICKS1 RECORDS — CPU µs per record over a span
# measured with bench_cpu_ticks (tick resolution: 10 ms at 100 Hz).
bench_cpu_us_per() {
    awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { if (n > 0 && a != "n/a" && b != "n/a") printf "%.2f\n", (b - a) * 1e6 / hz / n; else print "n/a" }'
}

# bench_cpu_figure SECTION NAME US_PER_RECORD — a "CPU µs per record" row,
# with the baseline eos_copy's CPU per record of this run beside it (as
# "BASE_US µs copy" in the target column) and the ratio sluice / copy.
bench_cpu_figure() {
    local base=n/a ratio=""
    [ -f "$BENCH_WORK/baseline.cpu_us" ] && base=$(cat "$BENCH_WORK/baseline.cpu_us")
    [ "$base" != n/a ] &&
        ratio=$(awk -v a="$3" -v b="$base" 'BEGIN { if (b > 0 && a != "n/a") printf "%.2f\n", a / b; else print "n/a" }')
    local note="eos_copy: $base µs/rec"
    [ -f "$BENCH_WORK/baseline.tuned" ] &&
        note="$note (as sluice: $(cut -d' ' -f2 "$BENCH_WORK/baseline.tuned"))"
    bench_figure "$1" "$2" "$3" µs "$ratio" "$note"
}

# ---- sluice ---------------------------------------------------------------

# bench_conf FILE [METRICS_LISTEN] — writes [sluice] and [kafka] for the
# bench broker, with $BENCH_KAFKA_PROPS; append pipeline sections after it.
# METRICS_LISTEN (e.g. 127.0.0.1:$(bench_free_port)) turns on /metrics and
# /readyz; without it there is no HTTP endpoint.
bench_conf() {
    local kv
    {
        cat <<EOF
[sluice]
app_id = $BENCH_ID
log_level = ${BENCH_LOG_LEVEL:-info}
commit_interval = 100ms
metrics_listen =${2:+ $2}

[kafka]
bootstrap.servers = $BENCH_BOOTSTRAP
EOF
        for kv in $BENCH_KAFKA_PROPS; do echo "${kv%%=*} = ${kv#*=}"; done
        echo
    } >"$1"
}

# bench_sluice_start NAME CONF [run args] — starts `sluice run` in the
# background, logging to $BENCH_WORK/sluice-NAME.log; prints nothing.
# The pid is in $BENCH_WORK/sluice-NAME.pid and the run kills it at exit.
# Like the broker it does not inherit fd 9, run.sh's lock: a sluice left
# behind by an interrupted run held it, and the next run waited on it.
bench_sluice_start() {
    local n=$1 conf=$2
    shift 2
    "$SLUICE_BIN" run -c "$conf" "$@" >>"$BENCH_WORK/sluice-$n.log" 2>&1 9>&- &
    echo $! >"$BENCH_WORK/sluice-$n.pid"
}

# bench_sluice_pid NAME — the pid of a started sluice.
bench_sluice_pid() {
    cat "$BENCH_WORK/sluice-$1.pid"
}

# bench_sluice_stop NAME [SIGNAL] — default TERM; waits up to 30 s, then
# kills it.
bench_sluice_stop() {
    local n=$1 sig=${2:-TERM} pid
    [ -f "$BENCH_WORK/sluice-$n.pid" ] || return 0
    pid=$(cat "$BENCH_WORK/sluice-$n.pid")
    kill -s "$sig" "$pid" 2>/dev/null || true
    if ! bench_wait_until 30 _bench_gone "$pid"; then
        echo "bench: sluice[$n] did not stop in 30 s; killing" >&2
        kill -9 "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    rm -f "$BENCH_WORK/sluice-$n.pid"
}

_bench_gone() {
    ! kill -0 "$1" 2>/dev/null
}

# bench_kill_all_sluice — kills every sluice a section left running.
bench_kill_all_sluice() {
    local f pid
    for f in "$BENCH_WORK"/sluice-*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
}

# ---- sluice's HTTP endpoint ------------------------------------------------

# bench_free_port — a TCP port on 127.0.0.1 nobody listens on now (sluice
# refuses port 0, so a section picks one for its metrics_listen).
bench_free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# bench_ready PORT — true when sluice's /readyz on PORT answers 200 (every
# assigned partition rebuilt).
bench_ready() {
    [ "$(curl -s -o /dev/null --max-time 2 -w '%{http_code}' \
        "http://127.0.0.1:$1/readyz" 2>/dev/null)" = 200 ]
}

# bench_metrics PORT — the /metrics text of the sluice on PORT.
bench_metrics() {
    curl -sf --max-time 5 "http://127.0.0.1:$1/metrics"
}

# bench_metric PORT NAME [LABEL_TEXT] — the sum of the samples of metric
# NAME (exact name, any labels) whose line contains LABEL_TEXT (e.g.
# 'result="commit"'); prints nothing and fails when there is no sample.
bench_metric() {
    local m
    m=$(bench_metrics "$1") || return 1
    awk -v n="$2" -v l="${3:-}" '
        $1 == n || index($1, n "{") == 1 {
            if (l == "" || index($1, l)) { s += $NF; found = 1 }
        }
        END { if (!found) exit 1; printf "%.15g\n", s }' <<<"$m"
}

# bench_metric_is PORT NAME VALUE [LABEL_TEXT] — true when the metric
# equals VALUE now (for bench_wait_until).
bench_metric_is() {
    [ "$(bench_metric "$1" "$2" "${4:-}" 2>/dev/null)" = "$3" ]
}

# bench_histogram_quantile PORT NAME Q [LABEL_TEXT] — quantile Q (0..1) of
# Prometheus histogram NAME (buckets summed over the label sets that hold
# LABEL_TEXT, e.g. phase="end"; all of them without it), interpolated
# linearly inside the bucket as Prometheus's histogram_quantile() does; in
# seconds when the histogram is.  "n/a" when it is empty.
bench_histogram_quantile() {
    local m
    m=$(bench_metrics "$1") || return 1
    awk -v n="$2_bucket" -v q="$3" -v l="${4:-}" '
        index($1, n "{") == 1 && (l == "" || index($1, l)) && match($1, /le="[^"]*"/) {
            le = substr($1, RSTART + 4, RLENGTH - 5)
            if (!(le in c)) les[nb++] = le
            c[le] += $NF
        }
        END {
            total = c["+Inf"]
            if (!total) { print "n/a"; exit }
            # Buckets are printed in increasing order of le.
            rank = q * total; prev_le = 0; prev_c = 0
            for (i = 0; i < nb; i++) {
                le = les[i]
                if (c[le] >= rank) {
                    if (le == "+Inf") { printf "%s\n", prev_le; exit }
                    printf "%.6f\n", prev_le + (le - prev_le) * \
                        (c[le] > prev_c ? (rank - prev_c) / (c[le] - prev_c) : 1)
                    exit
                }
                prev_le = le; prev_c = c[le]
            }
        }' <<<"$m"
}

# bench_histogram_count PORT NAME — how many observations histogram NAME
# holds (over all its label sets), 0 when it has none: a quantile of a few
# is one bucket's interpolation, and the figure should say so.
bench_histogram_count() {
    bench_metric "$1" "$2_count" || echo 0
}

# bench_histogram_p50_p99_ms PORT NAME [LABEL_TEXT] — "P50/P99" of histogram
# NAME (in seconds; LABEL_TEXT as for bench_histogram_quantile) as
# milliseconds with one decimal, "n/a" for an empty one.
bench_histogram_p50_p99_ms() {
    local q
    for q in 0.5 0.99; do bench_histogram_quantile "$1" "$2" "$q" "${3:-}"; done |
        awk '{ v[NR] = ($1 == "n/a" ? $1 : sprintf("%.1f", $1 * 1000)) } END { print v[1] "/" v[2] }'
}

# bench_commit_phases_ms PORT — sluice_txn_commit_phase_seconds's phases as
# "P50/P99" in milliseconds, in order: flush, offsets, deliver, end (each
# "n/a" when empty; offsets is, when every transaction held them already).
bench_commit_phases_ms() {
    local p out=()
    for p in flush offsets deliver end; do
        out+=("$(bench_histogram_p50_p99_ms "$1" sluice_txn_commit_phase_seconds "phase=\"$p\"")")
    done
    echo "${out[*]}"
}

# ---- figures --------------------------------------------------------------

# bench_figure SECTION NAME VALUE UNIT [RATIO] [TARGET] — records a figure
# for the final block.  RATIO is usually $(bench_ratio VALUE); TARGET is
# the SPEC §6 target as text (">= 0.9", "<= 64 B").
bench_figure() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" "${6:-}" \
        >>"$BENCH_WORK/figures.tsv"
}

# bench_figures_print — the figures block, also written to
# $BENCH_OUT/figures.txt (and the raw rows to figures.tsv).
bench_figures_print() {
    local out=$BENCH_OUT/figures.txt
    mkdir -p "$BENCH_OUT"
    touch "$BENCH_WORK/figures.tsv"
    cp "$BENCH_WORK/figures.tsv" "$BENCH_OUT/figures.tsv"
    {
        echo "== sluice bench figures: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, broker $BENCH_BOOTSTRAP =="
        # Which librdkafka both sides loaded (LD_LIBRARY_PATH may name
        # another one: bench/rdkafka-nospin.sh).
        echo "== librdkafka: $(ldd "$SLUICE_BIN" 2>/dev/null | awk '/librdkafka/ { print $3; exit }') =="
        if [ -f "$BENCH_WORK/broker.reused" ]; then
            echo "== WARNING: the broker was reused, not fresh (see bench/README.md) =="
        fi
        awk -F'\t' '
            BEGIN { printf "%-14s %-46s %13s %-6s %6s  %s\n", "section", "figure", "value", "unit", "ratio", "target" }
            { printf "%-14s %-46s %13s %-6s %6s  %s\n", $1, $2, $3, $4, ($5 == "" ? "-" : $5), $6 }
        ' "$BENCH_WORK/figures.tsv"
        echo "ratio = figure / baseline eos_copy rate of this run (see bench/README.md)"
    } | tee "$out"
}
