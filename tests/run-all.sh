#!/usr/bin/env bash
# The whole suite, as CI runs it: unit tests, a short run of every fuzz
# target over its committed corpus, then the integration tests against a
# real broker (started and stopped here).  The last line is the
# total: "N passed, N failed".  Exit status is 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
summary=$(mktemp)
export SLUICE_SUMMARY_FILE=$summary
t0=$(date +%s)

tests/run-unit.sh "$@"
tests/fuzz/smoke.sh
tests/integration/run.sh

passed=0
failed=0
while read -r _ p f; do
    passed=$((passed + p))
    failed=$((failed + f))
done <"$summary"
rm -f "$summary"
# A stage that crashed before writing its line counts as a failure.
echo "test wall time: $(($(date +%s) - t0)) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
