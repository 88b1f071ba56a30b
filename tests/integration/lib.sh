# SPDX-License-Identifier: Apache-2.0
# lib.sh — helpers for integration tests; `source` it first.
#
# A test is a bash script tests/integration/NNNN-name.sh run by run.sh with a
# broker already up.  It prints what it checks, lines starting with "# " are
# echoed in the summary (figures such as lateness), and it exits non-zero on
# failure (77, by skip, when this machine lacks what it needs).  Every wait
# has a deadline; nothing sleeps a fixed time where a condition can be
# waited on.  run.sh runs three tests at once, each against a
# broker of its own: a test names its topics and group with $PFX, takes its
# HTTP ports from free_port (sluice_up), and gives a private broker a port
# no other test file uses (private_broker_start).  A test whose own brokers
# no other such test may share (the cluster tests) says why in a line
# "# one-at-a-time: WHY"; one that cannot share the machine at all says why
# in a line "# exclusive: WHY" and runs alone.
#
# Run one test by hand:
#   tests/integration/kafka/broker.sh start
#   SLUICE_BIN=$PWD/sluice bash tests/integration/0001-topics.sh

set -euo pipefail

: "${SLUICE_BIN:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/sluice}"
: "${SLUICE_TEST_BOOTSTRAP:=127.0.0.1:39092}"
BOOTSTRAP=$SLUICE_TEST_BOOTSTRAP
# The tests' Python helpers (records.py, dbcheck.py, timers-check.py) are
# importable from the checks a test runs with python3.
PYTHONPATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
TEST_NAME=$(basename "$0" .sh)
# A unique prefix so tests never share topics, even when rerun on one broker.
PFX="t${TEST_NAME%%-*}-$(date +%s%N | tail -c 7)-$$"
WORK=$(mktemp -d "/tmp/sluice-it-$TEST_NAME.XXXXXX")
declare -A SLUICE_PIDS=()

fail() {
    echo "FAIL: $*" >&2
    for n in "${!SLUICE_PIDS[@]}"; do
        echo "--- sluice[$n] log tail ---" >&2
        tail -40 "$WORK/sluice-$n.log" >&2 2>/dev/null || true
    done
    exit 1
}

note() { echo "# $*"; }

# skip REASON — the test cannot run here: this machine lacks what it needs
# (root, a tool, the Debian release it checks against).  Exits 77, as
# automake's tests do; run.sh counts it as skipped, not passed, and only
# with the "SKIP: " line (any other exit 77 is a failure).  Call it from
# the test's own shell (not in a $(...) or a pipeline), before the test
# has found anything wrong: a skip never stands for a failure.
SKIPPED=
skip() {
    echo "SKIP: $*"
    SKIPPED=1
    exit 77
}

# Functions run at exit after the sluice processes are killed, with the
# test's exit status as argument (private brokers, background loops).
CLEANUP_HOOKS=()

_cleanup() {
    local rc=$?
    for n in "${!SLUICE_PIDS[@]}"; do
        kill -9 "${SLUICE_PIDS[$n]}" 2>/dev/null || true
    done
    for h in "${CLEANUP_HOOKS[@]}"; do "$h" "$rc" || true; done
    wait 2>/dev/null || true
    if [ -n "${SLUICE_SANITIZED:-}" ] && ! _sanitizer_clean; then
        rc=1
    fi
    # A member that left and rejoined its group to give unowned partitions
    # an owner (src/groupcheck.h) is worth seeing in any test's summary.
    grep -h "GROUP .*leaves and rejoins" "$WORK"/sluice-*.log 2>/dev/null |
        cut -c1-300 | sed 's/^/# group repair: /' || true
    # SLUICE_TEST_KEEP_WORK=1 keeps it after a pass too (logs of a run by hand).
    if { [ "$rc" -eq 0 ] || [ "$rc$SKIPPED" = 771 ]; } && [ -z "${SLUICE_TEST_KEEP_WORK:-}" ]; then rm -rf "$WORK"; else echo "work dir kept: $WORK" >&2; fi
    exit "$rc"
}
trap _cleanup EXIT

# Under SLUICE_SANITIZED=1 (run.sh's asan variant, SLUICE_BIN=sluice-asan)
# every sluice this test started must end without a sanitizer report.  A
# report is fatal (halt_on_error, -fno-sanitize-recover), so the test
# usually fails on its own; this names the cause.  Leaks are not checked:
# a SIGKILLed process never gets to report them.
if [ -n "${SLUICE_SANITIZED:-}" ]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=66:detect_leaks=0:halt_on_error=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
_sanitizer_clean() {
    local f bad=0
    for f in "$WORK"/sluice-*.log; do
        [ -e "$f" ] || continue
        if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f"; then
            echo "FAIL: sanitizer report in $(basename "$f"):" >&2
            grep -E -A30 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$f" | head -60 >&2
            bad=1
        fi
    done
    [ "$bad" -eq 0 ]
}

# wait_until SECONDS CMD...  — polls CMD every 100 ms until it succeeds.
wait_until() {
    local secs=$1
    shift
    local end=$(($(date +%s%N) + secs * 1000000000))
    until "$@"; do
        [ "$(date +%s%N)" -lt "$end" ] || return 1
        sleep 0.1
    done
}

# base_conf FILE — writes [sluice] and [kafka] for the test broker; append
# pipeline sections after it.
base_conf() {
    cat >"$1" <<EOF
[sluice]
app_id = $PFX
log_level = info
commit_interval = 100ms
metrics_listen =

[kafka]
bootstrap.servers = $BOOTSTRAP
EOF
}

# conf_set CONF SECTION key=value ... — sets keys in the [SECTION] of CONF
# (sluice, kafka, or "pipeline NAME"): a key the section holds is replaced,
# a new one goes at the end of the section.
conf_set() {
    python3 - "$@" <<'PY'
import sys
path, sec, kvs = sys.argv[1], "[" + sys.argv[2] + "]", sys.argv[3:]
lines = open(path).read().split("\n")
start = lines.index(sec) + 1
end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
while end > start and not lines[end - 1].strip():
    end -= 1
for kv in kvs:
    key, val = kv.split("=", 1)
    at = [i for i in range(start, end) if lines[i].split("=", 1)[0].strip() == key]
    if at:
        lines[at[0]] = f"{key} = {val}"
    else:
        lines.insert(end, f"{key} = {val}")
        end += 1
open(path, "w").write("\n".join(lines))
PY
}

# pipeline_section CONF NAME TYPE [key=value ...] — appends a [pipeline NAME]
# of TYPE with these keys to CONF (lib-debounce.sh's db_pipeline is the
# debounce form).
pipeline_section() {
    local conf=$1 name=$2 type=$3 kv
    shift 3
    {
        echo
        echo "[pipeline $name]"
        echo "type = $type"
        for kv in "$@"; do echo "${kv%%=*} = ${kv#*=}"; done
    } >>"$conf"
}

# topic_create NAME PARTITIONS [key=value ...] — creates a topic.
topic_create() {
    local name=$1 parts=$2
    shift 2
    local args=()
    for kv in "$@"; do args+=(--set "$kv"); done
    [ -f "$WORK/admin.ini" ] || base_conf "$WORK/admin.ini"
    "$SLUICE_BIN" topics create -c "$WORK/admin.ini" "$name" --partitions "$parts" "${args[@]}" >/dev/null
}

# produce TOPIC [kcat args...] — records on stdin, one per line, keyed
# records to the partition the pipelines' default input_partitioner
# (murmur2) gives their key, as docs/api.md asks of producers; a test of
# sluice moving records produced otherwise (reroute) passes
# -X partitioner=consistent_random, kcat's own default (a later -X wins).
produce() {
    local topic=$1
    shift
    kcat -P -b "$BOOTSTRAP" -t "$topic" -X partitioner=murmur2_random "$@"
}

# _kcat_read CMD... — runs a kcat read; when KCAT_READ_TIMEOUT (seconds)
# is set, gives up after that long with a warning.  A read_committed kcat -e
# may never see its end while a producer keeps a transaction open (an
# abort loop): fault tests set it so that every wait keeps its deadline.
_kcat_read() {
    if [ -z "${KCAT_READ_TIMEOUT:-}" ]; then
        "$@"
        return
    fi
    local rc=0
    timeout "$KCAT_READ_TIMEOUT" "$@" || rc=$?
    if [ "$rc" -eq 124 ]; then
        # What was read is the answer; the checks that follow judge it.
        echo "WARNING: kcat read gave up after ${KCAT_READ_TIMEOUT}s (a transaction held open?): $*" | cut -c1-240 >&2
        rc=0
    fi
    return "$rc"
}

# consume_all TOPIC [kcat args...] — every committed record, then exit.
# Default format: key<TAB>value; pass -f to change it.
consume_all() {
    local topic=$1
    shift
    local fmt=(-f '%k\t%s\n')
    for a in "$@"; do [ "$a" = "-f" ] && fmt=(); done
    _kcat_read kcat -C -b "$BOOTSTRAP" -t "$topic" -e -q -X isolation.level=read_committed \
        "${fmt[@]}" "$@"
}

# count_records TOPIC — number of committed records in TOPIC.
count_records() {
    consume_all "$1" -f 'x\n' | wc -l
}

# count_input_records TOPIC — the committed records of an input topic that
# producers wrote: less the copies sluice moved to their key's partition
# (reroute: they carry sluice-rerouted-from).
count_input_records() {
    consume_all "$1" -f '%h\n' | grep -vc 'sluice-rerouted-from=' || true
}

# list_txns PREFIX — "<id> <state> <producer id>" for each transactional id
# the broker knows that starts with PREFIX (tests/tools/ListTxns.java, a Java
# single-file program on the test broker's jars, `broker.sh java`; ~2 s a
# call).
list_txns() {
    local here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    timeout 60 "$here/kafka/broker.sh" java "$here/../tools/ListTxns.java" \
        "$BOOTSTRAP" "$1" 2>"$WORK/listtxns.err"
}

# recgen TOPIC [ARGS...] — produces records of exact sizes and shapes
# (tests/tools/recgen.c: --key-bytes N, --value-bytes N, --headers N, -H,
# -p, -X, --count N; its producer takes records up to the broker's limit).
recgen() {
    local bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/recgen topic=$1
    shift
    [ -x "$bin" ] || fail "$bin is missing: make build/tools/recgen (make test and make integration build it)"
    "$bin" -b "$BOOTSTRAP" -t "$topic" "$@"
}

# topic_meta TOPIC — prints "partitions" for TOPIC (0 when it is missing).
topic_partitions() {
    kcat -b "$BOOTSTRAP" -L -t "$1" -J 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); t=[t for t in d["topics"] if not t.get("err")]; print(len(t[0]["partitions"]) if t else 0)'
}

# sluice_start NAME CONF [extra run args] — starts `sluice run` in the
# background, logging to $WORK/sluice-NAME.log.
sluice_start() {
    local n=$1 conf=$2
    shift 2
    "$SLUICE_BIN" run -c "$conf" "$@" >>"$WORK/sluice-$n.log" 2>&1 &
    SLUICE_PIDS[$n]=$!
}

# sluice_kill NAME [SIGNAL] — default SIGKILL; waits for the process to end.
sluice_kill() {
    local n=$1 sig=${2:-KILL}
    local pid=${SLUICE_PIDS[$n]:-}
    [ -n "$pid" ] || return 0
    kill -s "$sig" "$pid" 2>/dev/null || true
    local rc=0
    wait "$pid" 2>/dev/null || rc=$?
    unset "SLUICE_PIDS[$n]"
    return $rc
}

# sluice_alive NAME — 0 when the process still runs.
sluice_alive() {
    local pid=${SLUICE_PIDS[$1]:-}
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# log_has NAME REGEX — 0 when the sluice log matches.
log_has() {
    grep -Eq "$2" "$WORK/sluice-$1.log" 2>/dev/null
}

# topic_list PREFIX — "NAME PARTITIONS" for every topic whose name starts
# with PREFIX, sorted by name (from `kcat -L -J`; topics in error skipped).
topic_list() {
    kcat -b "$BOOTSTRAP" -L -J 2>/dev/null |
        python3 -c 'import json,sys
p = sys.argv[1]
for t in sorted(json.load(sys.stdin)["topics"], key=lambda t: t["topic"]):
    if t["topic"].startswith(p) and not t.get("err"):
        print(t["topic"], len(t["partitions"]))' "$1"
}

# ops_tools_locked — make ops-tools, one caller at a time (0031 and 0034
# may run side by side on a fresh tree: two makes writing one promtool
# fail with "Text file busy").
ops_tools_locked() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    mkdir -p "$root/build"
    flock -o "$root/build/.ops-tools.lock" make -s -C "$root" ops-tools
}

# free_port — a TCP port free on 127.0.0.1 right now (for metrics_listen,
# e.g. SLUICE_METRICS_LISTEN=127.0.0.1:$(free_port) sluice_start ...).
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# http_status URL — the HTTP status code of a GET, "000" when nothing answers.
http_status() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null) || true
    echo "${code:-000}"
}

# metric_value PORT SERIES — the value of one series (exactly as exposed,
# read to the end: an early exit would make curl fail with a write error),
# e.g. 'sluice_records_in_total{pipeline="d"}') from /metrics on
# 127.0.0.1:PORT; prints nothing when the series is absent.
metric_value() {
    curl -s --max-time 2 "http://127.0.0.1:$1/metrics" 2>/dev/null |
        awk -v s="$2" '$1 == s && !found { v = $2; found = 1 } END { if (found) print v }'
}

# sluice_wait_ready NAME PORT SECS — waits until sluice NAME answers 200 on
# /readyz (every assigned partition rebuilt); fails the test if it exits.
sluice_wait_ready() {
    local n=$1 port=$2 secs=$3
    _ready() {
        sluice_alive "$n" || fail "sluice[$n] exited before it was ready"
        [ "$(http_status "http://127.0.0.1:$port/readyz")" = 200 ]
    }
    wait_until "$secs" _ready || fail "sluice[$n] not ready within ${secs}s"
}

# consume_json TOPIC [kcat args...] — every committed record, one kcat -J
# object per line: topic, partition, offset, ts, headers ([name, value,
# ...]), key, payload.
consume_json() {
    local topic=$1
    shift
    _kcat_read kcat -C -b "$BOOTSTRAP" -t "$topic" -e -q -X isolation.level=read_committed \
        -J "$@"
}

# wait_records TOPIC N SECS — waits until TOPIC holds at least N committed
# records.
wait_records() {
    local topic=$1 n=$2 secs=$3
    _enough() { [ "$(count_records "$topic")" -ge "$n" ]; }
    wait_until "$secs" _enough
}

# ------------------------------------------------------------------------
# Fault tests (04NN-fault-*.sh): a broker of the test's own, instances
# started with their HTTP port known, /readyz watched.

BROKER_SH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kafka/broker.sh
PRIVATE_BROKER_PORT=
PRIVATE_BROKER_DIR=
declare -A SLUICE_PORTS=()
declare -A READYZ_WATCH_PIDS=()

# private_broker CMD [ARGS] — broker.sh CMD on this test's private broker
# (start, stop, restart [DOWN_SECONDS], pause, resume, status, logs N).
private_broker() {
    [ -n "$PRIVATE_BROKER_PORT" ] || fail "private_broker: no private broker started"
    SLUICE_TEST_KAFKA_PORT=$PRIVATE_BROKER_PORT SLUICE_TEST_KAFKA_DIR=$PRIVATE_BROKER_DIR \
        "$BROKER_SH" "$@"
}

_private_broker_cleanup() {
    [ -n "$PRIVATE_BROKER_PORT" ] || return 0
    if [ "$1" -ne 0 ]; then
        echo "--- private broker (127.0.0.1:$PRIVATE_BROKER_PORT) log tail ---" >&2
        private_broker logs 30 >&2 || true
    fi
    private_broker stop 2>/dev/null || true
}

# private_broker_start PORT — starts a broker of the test's own on
# 127.0.0.1:PORT (controller on PORT+1; data in $WORK/kafka-PORT) and points
# BOOTSTRAP and SLUICE_TEST_BOOTSTRAP at it, so restarting or pausing it
# never disturbs other tests.  Stopped when the test exits (also on SIGTERM
# or SIGINT, which are turned into an exit).  Give each test file its own
# PORT, an even number from 61500 up: outside the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768-60999 by default), where any
# client's outgoing connection may hold the port (or leave it in TIME-WAIT)
# just when a restarted broker must bind it again.  Also bounds every kcat
# read to KCAT_READ_TIMEOUT (default 15 s): a faulty runtime may hold a
# transaction open for ever.
private_broker_start() {
    local port=$1 lo hi try
    : "${KCAT_READ_TIMEOUT:=15}"
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=0 hi=0
    if [ "$port" -ge "$lo" ] && [ "$((port + 1))" -le "$hi" ]; then
        note "WARNING: port $port is in the ephemeral range $lo-$hi: a broker restart may find it taken"
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        fail "port $port is taken: another private broker left running?"
    fi
    PRIVATE_BROKER_PORT=$port
    PRIVATE_BROKER_DIR=$WORK/kafka-$port
    CLEANUP_HOOKS+=(_private_broker_cleanup)
    trap 'exit 143' TERM
    trap 'exit 130' INT
    for try in 1 2 3; do
        private_broker start 2>"$WORK/broker-start.log" && break
        if [ "$try" -eq 3 ] || ! grep -q 'Address already in use' "$PRIVATE_BROKER_DIR/broker.log" 2>/dev/null; then
            cat "$WORK/broker-start.log" >&2
            grep -m3 -E 'ERROR|Exception' "$PRIVATE_BROKER_DIR/broker.log" >&2 2>/dev/null || true
            fail "the private broker did not start on port $port"
        fi
        sleep 2
    done
    BOOTSTRAP=127.0.0.1:$port
    SLUICE_TEST_BOOTSTRAP=$BOOTSTRAP
    export SLUICE_TEST_BOOTSTRAP
    rm -f "$WORK/admin.ini" # topic_create's config names the bootstrap
}

# sluice_start_http NAME CONF [extra run args] — sluice_start with
# SLUICE_METRICS_LISTEN on a free port, kept in SLUICE_PORTS[NAME] (the
# same port again when NAME is restarted).  Other SLUICE_* overrides come
# from the caller's environment.
sluice_start_http() {
    local n=$1
    [ -n "${SLUICE_PORTS[$n]:-}" ] || SLUICE_PORTS[$n]=$(free_port)
    SLUICE_METRICS_LISTEN=127.0.0.1:${SLUICE_PORTS[$n]} sluice_start "$@"
}

# api_put_timers URL TOKEN TARGET N CODES [CURL_ARG...] — PUTs timers
# id0..id<N-1> (value v<i>, due in 1 h, to TARGET) at URL/id<i> with the
# bearer TOKEN and the curl arguments; fails the test unless each answer's
# status is one of CODES ("201", or "200 201" where a timer may be there
# already).  apiforward.py asks for them.
api_put_timers() {
    local url=$1 token=$2 target=$3 n=$4 codes=$5 i code
    shift 5
    for i in $(seq 0 $((n - 1))); do
        code=$(curl -s -o "$WORK/put" -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" "$@" \
            --data-binary "{\"target\":\"$target\",\"delay\":\"1h\",\"value\":\"v$i\"}" "$url/id$i")
        [[ " $codes " == *" $code "* ]] || fail "PUT $url/id$i → $code $(cat "$WORK/put")"
    done
}

# sluice_up NAME CONF [SECS] — sluice_start_http, then waits (SECS, default
# 30) until /readyz answers 200: every assigned partition rebuilt.
sluice_up() {
    sluice_start_http "$1" "$2"
    wait_readyz "$1" 200 "${3:-30}"
}

# readyz NAME / healthz NAME — HTTP status code of the instance's /readyz
# or /healthz ("000" when nothing answers); readyz_body NAME — the body.
readyz() { http_status "http://127.0.0.1:${SLUICE_PORTS[$1]}/readyz"; }
healthz() { http_status "http://127.0.0.1:${SLUICE_PORTS[$1]}/healthz"; }
readyz_body() {
    curl -s --max-time 2 "http://127.0.0.1:${SLUICE_PORTS[$1]}/readyz" 2>/dev/null | head -c 300 || true
}

# sluice_metric NAME SERIES — metric_value on the instance's port.
sluice_metric() { metric_value "${SLUICE_PORTS[$1]}" "$2"; }

# wait_readyz NAME CODE SECS — waits until /readyz of NAME answers CODE;
# fails the test when the process exits meanwhile.
wait_readyz() {
    local n=$1 code=$2 secs=$3
    _readyz_is() {
        sluice_alive "$n" || fail "sluice[$n] exited while waiting for /readyz $code"
        [ "$(readyz "$n")" = "$code" ]
    }
    wait_until "$secs" _readyz_is ||
        fail "sluice[$n]: /readyz did not answer $code within ${secs}s (last: $(readyz "$n") $(readyz_body "$n"))"
}

_readyz_watch_cleanup() {
    for n in "${!READYZ_WATCH_PIDS[@]}"; do
        kill "${READYZ_WATCH_PIDS[$n]}" 2>/dev/null || true
    done
}

# readyz_watch NAME — polls /readyz, /healthz and sluice_kafka_up of NAME
# every 200 ms in the background until the test ends, and appends each
# change to $WORK/readyz-NAME.log as "EPOCH_MS READYZ HEALTHZ KAFKA_UP
# BODY" (codes "000" and KAFKA_UP "-" when nothing answers): a fault may be
# shorter than any foreground wait.  See readyz_seen.
readyz_watch() {
    local n=$1 port=${SLUICE_PORTS[$1]}
    [ ${#READYZ_WATCH_PIDS[@]} -gt 0 ] || CLEANUP_HOOKS+=(_readyz_watch_cleanup)
    (
        trap - EXIT
        set +e
        last=
        while :; do
            r=$(curl -s --max-time 1 -w ' %{http_code}' "http://127.0.0.1:$port/readyz" 2>/dev/null)
            code=${r##* }
            body=$(printf '%s' "${r% *}" | tr '\n' ' ')
            h=$(http_status "http://127.0.0.1:$port/healthz")
            up=$(metric_value "$port" sluice_kafka_up)
            cur="${code:-000} $h ${up:--} $body"
            if [ "$cur" != "$last" ]; then
                echo "$(($(date +%s%N) / 1000000)) $cur" >>"$WORK/readyz-$n.log"
                last=$cur
            fi
            sleep 0.2
        done
    ) &
    READYZ_WATCH_PIDS[$n]=$!
}

# readyz_seen NAME CODE [SINCE_MS] — 0 when the watch of NAME saw /readyz
# answer CODE (at or after SINCE_MS).
readyz_seen() {
    awk -v c="$2" -v t="${3:-0}" '$2 == c && $1 >= t { f = 1 } END { exit !f }' \
        "$WORK/readyz-$1.log" 2>/dev/null
}

# kafka_up_seen NAME VALUE [SINCE_MS] — 0 when the watch of NAME saw
# sluice_kafka_up at VALUE (at or after SINCE_MS).
kafka_up_seen() {
    awk -v v="$2" -v t="${3:-0}" '$4 == v && $1 >= t { f = 1 } END { exit !f }' \
        "$WORK/readyz-$1.log" 2>/dev/null
}

# healthz_failed NAME [SINCE_MS] — 0 when the watch saw /healthz answer
# anything but 200 while /readyz answered (the process lived).
healthz_failed() {
    awk -v t="${2:-0}" '$1 >= t && $2 != "000" && $3 != 200 { f = 1 } END { exit !f }' \
        "$WORK/readyz-$1.log" 2>/dev/null
}

# readyz_reason NAME [SINCE_MS] — the body of the first 503 the watch saw.
readyz_reason() {
    awk -v t="${2:-0}" '$1 >= t && $2 == 503 { $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print; exit }' \
        "$WORK/readyz-$1.log" 2>/dev/null
}

declare -A SLUICE_EXIT=()

# sluice_reap NAME... — for each instance that has exited, collects its
# exit status into SLUICE_EXIT[NAME] ("status N", or "signal SIG") and
# forgets its pid.  Call it in the test's own shell (not in $(...)): only
# the parent can wait for a child.
sluice_reap() {
    local n pid rc
    for n in "$@"; do
        pid=${SLUICE_PIDS[$n]:-}
        [ -n "$pid" ] || continue
        kill -0 "$pid" 2>/dev/null && continue
        rc=0
        wait "$pid" 2>/dev/null || rc=$?
        if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
            SLUICE_EXIT[$n]="signal $(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
        else
            SLUICE_EXIT[$n]="status $rc"
        fi
        unset "SLUICE_PIDS[$n]"
    done
}

# sluice_exit_status NAME — how an exited instance ended: its exit status
# (after sluice_reap) or the status its log says, and its last crit/error
# log lines.
sluice_exit_status() {
    local log=$WORK/sluice-$1.log st
    st=${SLUICE_EXIT[$1]:-}
    if [ -z "$st" ]; then
        st=$(grep -oE 'exiting with status [0-9]+' "$log" 2>/dev/null | tail -1 | grep -oE '[0-9]+$') || true
        if [ -n "$st" ]; then st="log says status $st"; else st="no exit line in the log"; fi
    fi
    echo "$st: $(grep -E 'Z (crit|error|emerg|alert) ' "$log" 2>/dev/null | tail -2 | cut -c1-240 | tr '\n' ' ')"
}

# problem MSG — records a failed check and goes on, so that one run shows
# every check a fault breaks; the test ends with problems_verdict.
PROBLEMS=()
problem() {
    echo "PROBLEM: $*" >&2
    PROBLEMS+=("$*")
}

# problems_verdict — fails the test with every recorded problem.
problems_verdict() {
    [ ${#PROBLEMS[@]} -eq 0 ] && return 0
    local msg="${#PROBLEMS[@]} check(s) failed:" p
    for p in "${PROBLEMS[@]}"; do msg="$msg
  - $p"; done
    fail "$msg"
}

# now_ms — epoch milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
