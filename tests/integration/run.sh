#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the integration tests (tests/integration/NNNN-*.sh) against real
# single-node Kafka brokers that it starts and stops.  Usage: run.sh
# [PATTERN...] (the tests whose name holds one of the substrings; all by
# default).
#
# Tests run three at a time (SLUICE_TEST_JOBS, default 3), each in a slot of
# its own with a broker of its own: slot 0 on SLUICE_TEST_KAFKA_PORT
# (39092), slot N on that port + 2N, data in /tmp/sluice-test-kafka-PORT.
# Each test runs in its own process with a deadline (SLUICE_TEST_TIMEOUT,
# 600 s).  Only this script prints: a test's result line ("ok   NAME (Ns)"
# with its "# " lines, or "FAIL NAME (Ns, exit N)" with the tail of its
# output and of its slot's broker log) comes whole when the test ends.
#
# A test marked "# one-at-a-time: WHY" brings brokers of its own that no
# other such test may share (the cluster tests: three JVMs in network
# namespaces of fixed names).  These run one after another in a lane of
# their own, beside the slots' tests: while one runs, it takes the place of
# a slot, so never more than SLUICE_TEST_JOBS tests run at once.
#
# A test marked "# exclusive: WHY" cannot share the machine (a verdict
# that is a time bound, a build that takes both cores): it runs alone,
# after the others, on slot 0's broker, with the other slots' brokers
# stopped.
#
# The order within a phase: the longest test first, by the durations of
# the last run (build/test-times; on a fresh clone, those of the run kept
# in tests/integration/durations), so that the slots end together.
#
# A delay test marked "# variant: payloads" runs a second time with its
# pipelines' payloads in Kafka (SLUICE_TEST_DELAY_PAYLOADS=kafka: lib-delay.sh
# sets payload_topic).
#
# A test marked "# variant: asan" runs a second time against the ASan +
# UBSan build, and fails if a sanitizer reported anything (lib.sh checks
# the logs of every sluice it started).  Tests marked "# variant: kafka-4"
# run once more at the end, against brokers of the other line, Kafka 4
# (SLUICE_TEST_KAFKA4_VERSION, 4.1.1 by default; not when the suite already
# runs on it), on SLUICE_TEST_KAFKA4_PORT (39192) + 2N.
#
# A test that cannot run on this machine calls lib.sh's skip REASON: exit
# 77 with a line "SKIP: REASON", shown as "skip NAME (Ns): REASON" and
# counted as skipped (an exit 77 without that line is a failure).
#
# Where it may (root, with cgroups), run.sh counts the CPU each test and
# each slot's broker used: every job runs in a cgroup of its own (with all
# it starts: sluice, tools, a cluster's JVMs), the result line gives its
# CPU seconds ("ok   NAME (12s, cpu 9.1s)"), build/test-cpu keeps them by
# label, and the summary gives the totals (bench/NOTES.md 'Where the
# suite's CPU goes').
#
# The last line is the total, "integration: N passed, N failed, N
# skipped"; the same figures go to SLUICE_SUMMARY_FILE when it is set
# (run-all.sh).  Exit status 0 only when nothing failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
patterns=("$@")
broker=$here/kafka/broker.sh
per_test_timeout=${SLUICE_TEST_TIMEOUT:-600}
jobs=${SLUICE_TEST_JOBS:-3}
version=${SLUICE_TEST_KAFKA_VERSION:-3.9.1}
port0=${SLUICE_TEST_KAFKA_PORT:-39092}
k4_version=${SLUICE_TEST_KAFKA4_VERSION:-4.1.1}
k4_port0=${SLUICE_TEST_KAFKA4_PORT:-39192}
asan_bin=$root/sluice-asan
# The test brokers' JVMs (the slots', a test's own, a cluster's nodes): the
# quick compiler alone and the serial collector, unless
# SLUICE_TEST_KAFKA_JVM_OPTS says otherwise (set but empty: the JVM's
# defaults, C2 and G1, as bench/ runs them).  Most of a test broker's CPU
# went to starting and compiling, not to serving: in a whole run, C2's
# compiler threads took a third of the brokers' CPU, and the cluster tests,
# which start and kill JVMs over and over, two thirds of the suite's
# (bench/NOTES.md 'Where the suite's CPU goes').
export SLUICE_TEST_KAFKA_JVM_OPTS=${SLUICE_TEST_KAFKA_JVM_OPTS-"-XX:TieredStopAtLevel=1 -XX:-UseG1GC -XX:+UseSerialGC"}
times_file=${SLUICE_TEST_TIMES:-$root/build/test-times}
passed=0
failed=0
skipped=0
failed_names=()
tmp=$(mktemp -d /tmp/sluice-run.XXXXXX)

record() {
    [ -n "${SLUICE_SUMMARY_FILE:-}" ] && echo "integration $passed $failed $skipped" >>"$SLUICE_SUMMARY_FILE"
}

fail_job() { # LABEL MESSAGE — a failure that is not a test's
    failed=$((failed + 1))
    failed_names+=("$1")
    echo "FAIL $2"
}

# --- CPU accounting ------------------------------------------------------------
# cg_dir NAME prints the cgroup for NAME (nothing when none can be made);
# cg_join DIR moves the calling shell into it; cg_ms DIR prints the CPU it
# used in ms; cg_drop DIR removes it when nothing runs in it any more.  A
# cgroup v1 cpuacct hierarchy or cgroup v2 (whose cpu.stat is always
# there), whichever the machine mounts.
cg_base=
cpu_file=${times_file%/*}/test-cpu
for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
    [ -f "$d/cgroup.procs" ] && [ -w "$d" ] || continue
    [ -f "$d/cpuacct.usage" ] || [ -f "$d/cpu.stat" ] || continue
    mkdir "$d/sluice-run.$$" 2>/dev/null && cg_base=$d/sluice-run.$$ && break
done
cg_dir() {
    [ -n "$cg_base" ] || return 0
    mkdir -p "$cg_base/$1" 2>/dev/null && echo "$cg_base/$1"
}
cg_join() { [ -z "$1" ] || echo "$BASHPID" >"$1/cgroup.procs" 2>/dev/null || true; }
cg_ms() {
    if [ -f "$1/cpuacct.usage" ]; then
        echo $(($(cat "$1/cpuacct.usage") / 1000000))
    else
        awk '$1 == "usage_usec" { print int($2 / 1000) }' "$1/cpu.stat"
    fi
}
cg_drop() { [ -z "$1" ] || rmdir "$1" 2>/dev/null || true; }
secs_of_ms() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
cpu_tests=0
cpu_brokers=0

# --- Brokers ---------------------------------------------------------------
# The phase's Kafka release and the port of slot 0; a slot's broker is
# broker.sh with its own port and data dir.
ph_version=$version
ph_port0=$port0
started=() # "VERSION PORT DIR" of every broker running, stopped at exit

slot_port() { echo $((ph_port0 + 2 * $1)); }

# slot_dir SLOT — its broker's runtime dir (SLUICE_TEST_KAFKA_DIR is slot
# 0's of the first phase when set).
slot_dir() {
    local port
    port=$(slot_port "$1")
    if [ "$1" = 0 ] && [ "$ph_port0" = "$port0" ]; then
        echo "${SLUICE_TEST_KAFKA_DIR:-/tmp/sluice-test-kafka-$port}"
    else
        echo "/tmp/sluice-test-kafka-$port"
    fi
}

slot_broker() { # SLOT CMD [ARGS]
    local s=$1
    shift
    SLUICE_TEST_KAFKA_VERSION=$ph_version SLUICE_TEST_KAFKA_PORT=$(slot_port "$s") \
        SLUICE_TEST_KAFKA_DIR=$(slot_dir "$s") "$broker" "$@"
}

# start_slots N — starts the brokers of slots 0..N-1 at once; SLOTS_UP is
# how many are up (counted from slot 0: slot 0 must be, or none counts).
SLOTS_UP=0
start_slots() {
    local n=$1 s pids=() t0
    t0=$(date +%s%N)
    SLOTS_UP=0
    for s in $(seq 0 $((n - 1))); do
        (
            cg_join "$(cg_dir "broker-$ph_version-$s")"
            slot_broker "$s" start
        ) >"$tmp/broker-$s.start" 2>&1 &
        pids+=($!)
    done
    for s in $(seq 0 $((n - 1))); do
        if wait "${pids[$s]}"; then
            started+=("$ph_version $(slot_port "$s") $(slot_dir "$s")")
            [ "$SLOTS_UP" = "$s" ] && SLOTS_UP=$((s + 1))
        else
            echo "integration: the broker of slot $s (Kafka $ph_version, port $(slot_port "$s")) did not start:"
            sed 's/^/    /' "$tmp/broker-$s.start" | tail -20
        fi
    done
    echo "integration: $SLOTS_UP broker(s) of Kafka $ph_version up in $((($(date +%s%N) - t0) / 1000000)) ms"
}

stop_slot() {
    local s=$1 i cg=$cg_base/broker-$ph_version-$1
    slot_broker "$s" stop >/dev/null 2>&1
    if [ -n "$cg_base" ] && [ -d "$cg" ]; then
        cpu_brokers=$((cpu_brokers + $(cg_ms "$cg")))
        cg_drop "$cg"
    fi
    for i in "${!started[@]}"; do
        [ "${started[$i]}" = "$ph_version $(slot_port "$s") $(slot_dir "$s")" ] && unset "started[$i]"
    done
}

# The slots' ports lie in the kernel's ephemeral range (32768-60999), so
# a client's outgoing connection may hold one when its broker binds it
# (seen once with three slots: "Address already in use" on 39192).  When
# it may (root), run.sh reserves them for its run (ip_local_reserved_ports,
# put back at exit); otherwise it goes on without.
reserved_file=/proc/sys/net/ipv4/ip_local_reserved_ports
reserved_old=
reserved_set=0
reserve_ports() {
    local r="$port0-$((port0 + 2 * jobs + 1)),$k4_port0-$((k4_port0 + 2 * jobs + 1))"
    [ -w "$reserved_file" ] || return 0
    reserved_old=$(cat "$reserved_file")
    echo "${reserved_old:+$reserved_old,}$r" 2>/dev/null >"$reserved_file" && reserved_set=1
}

_stop_all() {
    local b v p d
    for b in "${started[@]}"; do
        read -r v p d <<<"$b"
        SLUICE_TEST_KAFKA_VERSION=$v SLUICE_TEST_KAFKA_PORT=$p SLUICE_TEST_KAFKA_DIR=$d \
            "$broker" stop >/dev/null 2>&1
    done
    [ "$reserved_set" = 1 ] && echo "$reserved_old" 2>/dev/null >"$reserved_file"
    if [ -n "$cg_base" ]; then
        for b in "$cg_base"/*/; do cg_drop "${b%/}"; done
        cg_drop "$cg_base"
    fi
    rm -rf "$tmp"
}

# --- Jobs --------------------------------------------------------------------
# A job: a test script, its label, how it runs (plain, asan; the phase
# gives the release), and whether it is exclusive.
J_SCRIPT=() J_LABEL=() J_KIND=()
declare -A SLOT_PID=() SLOT_JOB=() SLOT_T0=()

# Durations of the last run, by label (longest first): those kept in
# the tree, then this clone's own.
declare -A LAST=()
for f in "$here/durations" "$times_file"; do
    [ -r "$f" ] || continue
    while read -r l s; do [ "${l#\#}" = "$l" ] && LAST[$l]=$s; done <"$f"
done

# launch SLOT JOB — runs the job in the background on the slot's broker.
launch() {
    local s=$1 j=$2 t=${J_SCRIPT[$2]}
    local -a env=(SLUICE_TEST_BOOTSTRAP=127.0.0.1:$(slot_port "$s")
        SLUICE_TEST_KAFKA_VERSION=$ph_version SLUICE_TEST_KAFKA_PORT=$(slot_port "$s")
        SLUICE_BIN=$root/sluice)
    [ "${J_KIND[$j]}" = asan ] && env+=(SLUICE_BIN=$asan_bin SLUICE_SANITIZED=1)
    [ "${J_KIND[$j]}" = payloads ] && env+=(SLUICE_TEST_DELAY_PAYLOADS=kafka)
    (
        trap - EXIT TERM INT
        cg_join "$(cg_dir "job-$j")"
        exec env "${env[@]}" timeout -k 10 "$per_test_timeout" bash "$t" >"$tmp/job-$j.log" 2>&1
    ) &
    SLOT_PID[$s]=$!
    SLOT_JOB[$s]=$j
    SLOT_T0[$s]=$(date +%s)
}

# finish SLOT RC — prints the result of the slot's job and frees the slot.
finish() {
    local s=$1 rc=$2 j=${SLOT_JOB[$1]} secs label cpu= cg=$cg_base/job-${SLOT_JOB[$1]} ms
    secs=$(($(date +%s) - ${SLOT_T0[$1]}))
    label=${J_LABEL[$j]}
    echo "$label $secs" >>"$tmp/times"
    if [ -n "$cg_base" ] && [ -d "$cg" ]; then
        ms=$(cg_ms "$cg")
        cg_drop "$cg"
        cpu_tests=$((cpu_tests + ms))
        cpu=", cpu $(secs_of_ms "$ms")s"
        echo "$label $(secs_of_ms "$ms")" >>"$tmp/cpu"
    fi
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $label (${secs}s$cpu)"
        grep '^# ' "$tmp/job-$j.log" || true
    elif [ "$rc" -eq 77 ] && grep -q '^SKIP: ' "$tmp/job-$j.log"; then
        skipped=$((skipped + 1))
        echo "skip $label (${secs}s$cpu): $(sed -n 's/^SKIP: //p' "$tmp/job-$j.log" | tail -1)"
    else
        failed=$((failed + 1))
        failed_names+=("$label")
        echo "FAIL $label (${secs}s$cpu, exit $rc)"
        # The test's own verdict, repeated in the summary at the end: the
        # tail below can be too long for whoever reads only the end.
        why_lines "$tmp/job-$j.log" | sed "s/^/integration: why $label: /" >>"$tmp/why"
        sed 's/^/    /' "$tmp/job-$j.log" | tail -120
        if [ "$s" -lt "$SLOTS_UP" ]; then
            echo "    --- broker log tail (slot $s, 127.0.0.1:$(slot_port "$s")) ---"
            slot_broker "$s" logs 40 | sed 's/^/    /'
        fi
    fi
    rm -f "$tmp/job-$j.log"
    unset "SLOT_PID[$s]" "SLOT_JOB[$s]"
}

# why_lines LOG — a failed test's verdict: its FAIL: message with the
# checks listed under it, else its PROBLEM: lines, else its last line;
# at most 8 lines of 300 characters.
why_lines() {
    local w
    w=$(sed -n '/^FAIL: /,/^[^ ]/{/^FAIL: \|^  - /p}' "$1")
    [ -n "$w" ] || w=$(grep '^PROBLEM: ' "$1")
    [ -n "$w" ] || w=$(grep -v '^[[:space:]]*$' "$1" | tail -1)
    printf '%s\n' "$w" | head -8 | cut -c1-300
}

# run_jobs NSLOTS — runs the jobs of QUEUE on the slots' brokers and
# those of LANE one at a time beside them, in the given orders, never more
# than NSLOTS at once (a LANE job runs as slot NSLOTS, whose broker is not
# started: it brings its own); returns when all have ended.  The lane goes
# first when it is free: its jobs are the longest.
QUEUE=() LANE=()
run_jobs() {
    local n=$1 s pid rc
    while [ $((${#QUEUE[@]} + ${#LANE[@]} + ${#SLOT_PID[@]})) -gt 0 ]; do
        if [ ${#LANE[@]} -gt 0 ] && [ -z "${SLOT_PID[$n]:-}" ] && [ ${#SLOT_PID[@]} -lt "$n" ]; then
            launch "$n" "${LANE[0]}"
            LANE=("${LANE[@]:1}")
        fi
        for s in $(seq 0 $((n - 1))); do
            [ ${#QUEUE[@]} -gt 0 ] && [ ${#SLOT_PID[@]} -lt "$n" ] || break
            [ -z "${SLOT_PID[$s]:-}" ] || continue
            launch "$s" "${QUEUE[0]}"
            QUEUE=("${QUEUE[@]:1}")
        done
        pid=
        rc=0
        wait -n -p pid "${SLOT_PID[@]}" || rc=$?
        for s in "${!SLOT_PID[@]}"; do
            [ "${SLOT_PID[$s]}" = "$pid" ] && finish "$s" "$rc"
        done
    done
}

# by_length JOB... — the jobs, the longest of the last run first (one not
# run before first of all: its length is unknown); ties in name order.
by_length() {
    local j
    for j in "$@"; do echo "${LAST[${J_LABEL[$j]}]:-100000} $j"; done |
        sort -k1,1nr -k2,2n | cut -d' ' -f2
}

# run_phase VERSION PORT0 JOB... — the jobs against brokers of VERSION.
run_phase() {
    ph_version=$1
    ph_port0=$2
    shift 2
    local j par=() lane=() excl=() n up
    for j in "$@"; do
        if grep -q '^# exclusive' "${J_SCRIPT[$j]}"; then
            excl+=("$j")
        elif grep -q '^# one-at-a-time' "${J_SCRIPT[$j]}"; then
            lane+=("$j")
        else
            par+=("$j")
        fi
    done
    n=$jobs
    [ "$n" -le $((${#par[@]} + ${#lane[@]})) ] || n=$((${#par[@]} + ${#lane[@]}))
    [ "$n" -ge 1 ] || n=1
    start_slots "$n"
    up=$SLOTS_UP
    if [ "$up" -lt 1 ]; then
        fail_job "kafka-$ph_version broker" "the Kafka $ph_version test broker did not start"
        return 1
    fi
    [ "$up" -eq "$n" ] || echo "integration: running on $up slot(s) instead of $n"
    # shellcheck disable=SC2046 # word-split on purpose: job numbers
    [ ${#par[@]} -eq 0 ] || QUEUE=($(by_length "${par[@]}"))
    # shellcheck disable=SC2046
    [ ${#lane[@]} -eq 0 ] || LANE=($(by_length "${lane[@]}"))
    run_jobs "$up"
    local s
    for s in $(seq 1 $((up - 1))); do stop_slot "$s"; done
    for j in "${excl[@]}"; do
        QUEUE=("$j")
        run_jobs 1
    done
    stop_slot 0
}

on_signal() {
    local s
    # timeout passes the signal on to the test, whose cleanup runs.
    for s in "${!SLOT_PID[@]}"; do kill -TERM "${SLOT_PID[$s]}" 2>/dev/null; done
    wait
    exit "$1"
}
trap _stop_all EXIT
trap 'on_signal 143' TERM
trap 'on_signal 130' INT
reserve_ports

# --- The suite ---------------------------------------------------------------
t_run=$(date +%s%N)
# selected NAME — the name holds one of the patterns (or none was given).
selected() {
    local p
    [ ${#patterns[@]} -gt 0 ] || return 0
    for p in "${patterns[@]}"; do
        case "$1" in *"$p"*) return 0 ;; esac
    done
    return 1
}

tests=()
for t in "$here"/[0-9][0-9][0-9][0-9]-*.sh; do
    [ -e "$t" ] || continue
    selected "$(basename "$t" .sh)" && tests+=("$t")
done

add_job() { # SCRIPT LABEL KIND
    J_SCRIPT+=("$1")
    J_LABEL+=("$2")
    J_KIND+=("$3")
}

main=()
for t in "${tests[@]}"; do
    name=$(basename "$t" .sh)
    add_job "$t" "$name" plain
    main+=($((${#J_SCRIPT[@]} - 1)))
    if grep -q '^# variant: payloads' "$t"; then
        add_job "$t" "$name[payloads]" payloads
        main+=($((${#J_SCRIPT[@]} - 1)))
    fi
    grep -q '^# variant: asan' "$t" || continue
    if [ ! -x "$asan_bin" ]; then
        fail_job "$name[asan]" "$name[asan]: $asan_bin is missing (make asan)"
        continue
    fi
    add_job "$t" "$name[asan]" asan
    main+=($((${#J_SCRIPT[@]} - 1)))
done

k4=()
if [ "$version" != "$k4_version" ]; then
    for t in "${tests[@]}"; do
        grep -q '^# variant: kafka-4' "$t" || continue
        add_job "$t" "$(basename "$t" .sh)[kafka-$k4_version]" plain
        k4+=($((${#J_SCRIPT[@]} - 1)))
    done
fi

if [ ${#main[@]} -gt 0 ] && ! run_phase "$version" "$port0" "${main[@]}"; then
    # As before: without a test broker nothing runs.
    record
    echo "integration: $passed passed, $failed failed, $skipped skipped"
    exit 1
fi
[ ${#k4[@]} -eq 0 ] || run_phase "$k4_version" "$k4_port0" "${k4[@]}"

# The durations, for the next run's order (a test not run this time keeps
# its last figure).
if [ -s "$tmp/times" ] && mkdir -p "$(dirname "$times_file")" 2>/dev/null; then
    for l in "${!LAST[@]}"; do echo "$l ${LAST[$l]}"; done >"$tmp/times.old"
    awk 'NR == FNR { t[$1] = $2; next } !($1 in t) { t[$1] = $2 } END { for (l in t) print l, t[l] }' \
        "$tmp/times" "$tmp/times.old" | sort >"$times_file.tmp" && mv "$times_file.tmp" "$times_file"
fi

if [ -s "$tmp/cpu" ]; then
    sort "$tmp/cpu" >"$cpu_file" 2>/dev/null || true
    echo "integration: cpu $(secs_of_ms "$cpu_tests") s in the tests, $(secs_of_ms "$cpu_brokers") s in the slots' brokers"
fi
record
echo "integration: wall time $((($(date +%s%N) - t_run) / 1000000000)) s"
[ "$failed" -gt 0 ] && echo "integration: failed: ${failed_names[*]}"
[ ! -s "$tmp/why" ] || cat "$tmp/why"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
