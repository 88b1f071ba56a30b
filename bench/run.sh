#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh — sluice's benchmarks (`make bench`).
#
#   bench/run.sh                  every section
#   bench/run.sh --only throttle  the baseline, then throttle (a comma list
#                                 works too; --only baseline runs it alone)
#   bench/run.sh --list           the sections and their budgets
#
# Starts a dedicated broker on 127.0.0.1:39292 (SLUICE_BENCH_KAFKA_PORT; the
# test broker on 39092 is left alone), runs the baseline — the plain
# exactly-once copy every other figure is divided by — then each section
# registered by bench/sections/*.sh, prints the figures block and stops the
# broker.  Each section runs in its own process under `timeout` with the
# budget it registered; a section that fails or overruns is reported and the
# run goes on.  The exit code is 1 when any section failed.
#
# Options:
#   --only NAMES        run only these sections (plus the baseline)
#   --count N           baseline records (default 1000000)
#   --size B            baseline value size (default 100)
#   --partitions P      baseline partitions (default 4)
#   --runs N            baseline copies; the median is the figure (default 3)
#   --keep-broker       leave the bench broker running at the end
#                       (BENCH_KEEP_WORK=1: keep the work dir, with sluice's
#                       logs, after a run that passed too)
#   --list              list the sections and exit
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "$0")" && pwd)

# One benchmark run per broker port at a time: a second run would reuse the
# first one's broker and stop it when done.
if [ -z "${BENCH_LOCKED:-}" ]; then
    lock=/tmp/sluice-bench-${SLUICE_BENCH_KAFKA_PORT:-39292}.lock
    exec 9>"$lock"
    if ! flock -w 1800 9; then
        echo "bench: another benchmark run holds $lock" >&2
        exit 1
    fi
    export BENCH_LOCKED=1
fi
: "${BENCH_T0:=$(date +%s%N)}"
export BENCH_T0

# shellcheck source=bench/lib.sh
source "$here/lib.sh"

declare -a SECTIONS=()
declare -A SECTION_BUDGET=() SECTION_DESC=()

# bench_register NAME BUDGET_SECONDS DESCRIPTION — called by section files.
bench_register() {
    SECTIONS+=("$1")
    SECTION_BUDGET[$1]=$2
    SECTION_DESC[$1]=$3
}

: "${BENCH_BASELINE_COUNT:=1000000}"
: "${BENCH_BASELINE_SIZE:=100}"
: "${BENCH_BASELINE_PARTITIONS:=4}"
: "${BENCH_BASELINE_RUNS:=3}"

bench_register baseline 200 "plain exactly-once librdkafka copy (eos_copy): the ratio's denominator"
section_baseline() {
    bench_baseline baseline "$BENCH_BASELINE_COUNT" "$BENCH_BASELINE_SIZE" \
        "$BENCH_BASELINE_PARTITIONS" >/dev/null
}

for f in "$here"/sections/*.sh; do
    [ -f "$f" ] || continue
    # shellcheck disable=SC1090
    source "$f"
done

# Inner mode: run one section in this process (the outer run calls it
# under `timeout`).
if [ "${1:-}" = "--section" ]; then
    name=$2
    trap bench_kill_all_sluice EXIT
    trap 'exit 143' TERM
    "section_$name"
    exit 0
fi

usage() {
    sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

only="" keep_broker=0
while [ $# -gt 0 ]; do
    case "$1" in
    --only)
        only=$2
        shift 2
        ;;
    --count)
        BENCH_BASELINE_COUNT=$2
        shift 2
        ;;
    --size)
        BENCH_BASELINE_SIZE=$2
        shift 2
        ;;
    --partitions)
        BENCH_BASELINE_PARTITIONS=$2
        shift 2
        ;;
    --runs)
        BENCH_BASELINE_RUNS=$2
        shift 2
        ;;
    --keep-broker)
        keep_broker=1
        shift
        ;;
    --list)
        for s in "${SECTIONS[@]}"; do
            printf '%-12s %4ss  %s\n' "$s" "${SECTION_BUDGET[$s]}" "${SECTION_DESC[$s]}"
        done
        exit 0
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        echo "run.sh: unknown option $1" >&2
        usage >&2
        exit 2
        ;;
    esac
done
export BENCH_BASELINE_COUNT BENCH_BASELINE_SIZE BENCH_BASELINE_PARTITIONS BENCH_BASELINE_RUNS

selected=(baseline)
if [ -n "$only" ]; then
    IFS=, read -r -a wanted <<<"$only"
    for w in "${wanted[@]}"; do
        [ -n "${SECTION_BUDGET[$w]:-}" ] || {
            echo "run.sh: no section '$w' (see --list)" >&2
            exit 2
        }
        [ "$w" = baseline ] || selected+=("$w")
    done
else
    for s in "${SECTIONS[@]}"; do
        [ "$s" = baseline ] || selected+=("$s")
    done
fi

for bin in eos_copy load mktopic consume; do
    [ -x "$BENCH_BIN/$bin" ] || {
        echo "run.sh: $BENCH_BIN/$bin is missing; run 'make bench'" >&2
        exit 2
    }
done

cleanup() {
    local rc=$?
    bench_kill_all_sluice
    if [ "$keep_broker" = 0 ]; then
        bench_broker_stop || true
    fi
    if [ "$rc" -eq 0 ] && [ -z "${BENCH_KEEP_WORK:-}" ]; then
        rm -rf "$BENCH_WORK"
    else
        echo "work dir kept: $BENCH_WORK" >&2
    fi
}
trap cleanup EXIT

bench_log "bench: run $BENCH_ID, sections: ${selected[*]}"
bench_broker_start

failed=()
for s in "${selected[@]}"; do
    budget=${SECTION_BUDGET[$s]}
    bench_log "== $s (budget ${budget}s): ${SECTION_DESC[$s]}"
    t=$(date +%s%N)
    rc=0
    timeout -k 10 "$budget" "$0" --section "$s" || rc=$?
    secs=$((($(date +%s%N) - t) / 1000000000))
    if [ "$rc" -ne 0 ]; then
        [ "$rc" = 124 ] && echo "bench: $s overran its budget of ${budget}s" >&2
        failed+=("$s")
        bench_figure "$s" "FAILED (exit $rc)" "-" ""
        if [ "$s" = baseline ]; then
            bench_broker_logs
            echo "bench: no baseline, no ratios: stopping" >&2
            break
        fi
    fi
    bench_log "== $s done in ${secs}s"
done

bench_figure run "wall time" "$((($(date +%s%N) - BENCH_T0) / 1000000000))" s
bench_figures_print
if [ ${#failed[@]} -gt 0 ]; then
    echo "bench: failed sections: ${failed[*]}" >&2
    exit 1
fi
