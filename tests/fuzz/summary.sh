#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# summary.sh NAME LOG CORPUS RC — prints one line for a fuzz run from
# libFuzzer's final stats, and on failure the end of the log.  Exits RC
# (non-zero when the run found a crash, a leak or a timeout).
name=$1 log=$2 corpus=$3 rc=$4

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
cov=$(sed -n 's/.*\(cov: [0-9]*\).*/\1/p' "$log" | tail -n 1)
files=$(find "$corpus" -maxdepth 1 -type f | wc -l)
if [ "$rc" = 0 ]; then
        printf 'fuzz %-20s ok    %10s execs (%s/s), %s, corpus %s files\n' \
                "$name" "${runs:-?}" "${secs:-?}" "${cov:-cov: ?}" "$files"
        exit 0
fi
printf 'fuzz %-20s FAIL  %10s execs; log %s:\n' "$name" "${runs:-?}" "$log"
grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' \
        "$log" | head -n 20
exit "$rc"
