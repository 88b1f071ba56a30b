#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole suite, as CI runs it: unit tests and a short run of every fuzz
# target over its committed corpus (side by side: neither needs a broker;
# their output is printed when both have ended, the unit tests' first),
# then the integration tests against real brokers (started and stopped by
# tests/integration/run.sh).  The last line is the total: "N passed, N
# failed", and ", N skipped" when a test could not run on this machine
# (run.sh says which and why).  Exit status is 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
summary=$(mktemp)
export SLUICE_SUMMARY_FILE=$summary
t0=$(date +%s)

unit_log=$(mktemp)
fuzz_log=$(mktemp)
tests/run-unit.sh "$@" >"$unit_log" 2>&1 &
unit_pid=$!
tests/fuzz/smoke.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!
wait "$unit_pid"
wait "$fuzz_pid"
cat "$unit_log" "$fuzz_log"
rm -f "$unit_log" "$fuzz_log"
echo "unit and fuzz wall time: $(($(date +%s) - t0)) s"
tests/integration/run.sh

passed=0
failed=0
skipped=0
while read -r _ p f s; do
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + ${s:-0}))
done <"$summary"
rm -f "$summary"
# A stage that crashed before writing its line counts as a failure.
echo "test wall time: $(($(date +%s) - t0)) s"
if [ "$skipped" -gt 0 ]; then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
