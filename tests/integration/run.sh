#!/usr/bin/env bash
# Runs the integration tests (tests/integration/NNNN-*.sh) against a real
# single-node Kafka broker that it starts and stops.  Each test runs in its
# own process with a deadline; a failing test's output and the tail of the
# broker log are printed.  Usage: run.sh [PATTERN] (substring of test names).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pattern=${1:-}
broker=$here/kafka/broker.sh
per_test_timeout=${SLUICE_TEST_TIMEOUT:-600}
passed=0
failed=0
failed_names=()

record() {
    [ -n "${SLUICE_SUMMARY_FILE:-}" ] && echo "integration $passed $failed" >>"$SLUICE_SUMMARY_FILE"
}

t0=$(date +%s%N)
if ! "$broker" start; then
    echo "integration: the test broker did not start"
    failed=1
    record
    echo "integration: 0 passed, 1 failed"
    exit 1
fi
echo "integration: broker start took $((($(date +%s%N) - t0) / 1000000)) ms"
trap '"$broker" stop' EXIT

export SLUICE_BIN=$root/sluice
export SLUICE_TEST_BOOTSTRAP
SLUICE_TEST_BOOTSTRAP=$("$broker" bootstrap)

# run_one SCRIPT LABEL — runs one test with a deadline and reports it
# (against the broker "$broker" logs shows: the one SLUICE_TEST_KAFKA_*
# name).
run_one() {
    local t=$1 label=$2 log s rc secs
    log=$(mktemp)
    s=$(date +%s)
    timeout -k 10 "$per_test_timeout" bash "$t" >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - s))
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   $label (${secs}s)"
        grep '^# ' "$log" || true
    else
        failed=$((failed + 1))
        failed_names+=("$label")
        echo "FAIL $label (${secs}s, exit $rc)"
        sed 's/^/    /' "$log" | tail -120
        echo "    --- broker log tail ---"
        "$broker" logs 40 | sed 's/^/    /'
    fi
    rm -f "$log"
}

# A test marked "# variant: asan" runs a second time against the ASan +
# UBSan build, and fails if a sanitizer reported anything (lib.sh checks
# the logs of every sluice it started).
asan_bin=$root/sluice-asan
for t in "$here"/[0-9][0-9][0-9][0-9]-*.sh; do
    [ -e "$t" ] || continue
    name=$(basename "$t" .sh)
    case "$name" in *"$pattern"*) ;; *) continue ;; esac
    run_one "$t" "$name"
    grep -q '^# variant: asan' "$t" || continue
    if [ ! -x "$asan_bin" ]; then
        failed=$((failed + 1))
        failed_names+=("$name[asan]")
        echo "FAIL $name[asan]: $asan_bin is missing (make asan)"
        continue
    fi
    SLUICE_BIN=$asan_bin SLUICE_SANITIZED=1 run_one "$t" "$name[asan]"
done

# Tests marked "# variant: kafka-4" run once more at the end, against a
# broker of the other line, Kafka 4 (SLUICE_TEST_KAFKA4_VERSION, 4.1.1 by
# default; not when the suite already runs on it), started for them on
# port SLUICE_TEST_KAFKA4_PORT (39192) and stopped after.
k4_version=${SLUICE_TEST_KAFKA4_VERSION:-4.1.1}
k4_tests=()
for t in "$here"/[0-9][0-9][0-9][0-9]-*.sh; do
    name=$(basename "$t" .sh)
    case "$name" in *"$pattern"*) ;; *) continue ;; esac
    grep -q '^# variant: kafka-4' "$t" && k4_tests+=("$t")
done
if [ ${#k4_tests[@]} -gt 0 ] && [ "${SLUICE_TEST_KAFKA_VERSION:-3.9.1}" != "$k4_version" ]; then
    k4_port=${SLUICE_TEST_KAFKA4_PORT:-39192}
    k4() { SLUICE_TEST_KAFKA_VERSION=$k4_version SLUICE_TEST_KAFKA_PORT=$k4_port "$broker" "$@"; }
    if k4 start; then
        trap 'k4 stop; "$broker" stop' EXIT
        main_bootstrap=$SLUICE_TEST_BOOTSTRAP
        export SLUICE_TEST_KAFKA_VERSION=$k4_version SLUICE_TEST_KAFKA_PORT=$k4_port
        SLUICE_TEST_BOOTSTRAP=127.0.0.1:$k4_port
        for t in "${k4_tests[@]}"; do
            run_one "$t" "$(basename "$t" .sh)[kafka-$k4_version]"
        done
        unset SLUICE_TEST_KAFKA_VERSION SLUICE_TEST_KAFKA_PORT
        SLUICE_TEST_BOOTSTRAP=$main_bootstrap
        k4 stop
        trap '"$broker" stop' EXIT
    else
        failed=$((failed + 1))
        failed_names+=("kafka-$k4_version broker")
        echo "FAIL the Kafka $k4_version broker did not start"
    fi
fi

record
[ "$failed" -gt 0 ] && echo "integration: failed: ${failed_names[*]}"
echo "integration: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
