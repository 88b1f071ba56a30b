#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# smoke.sh — the fuzz stage of `make test` (tests/run-all.sh): every target
# replays its committed corpus, crash regressions included, and fuzzes a
# few seconds (`make fuzz-smoke`).  Prints "fuzz: N passed, N failed", one
# per target, and with SLUICE_SUMMARY_FILE set appends "fuzz P F" to it.
set -u
cd "$(dirname "$0")/../.."
status=build-fuzz/status
make --no-print-directory -j2 fuzz-smoke
total=0
failed=0
for c in tests/fuzz/fuzz_*.c; do
    t=$(basename "$c" .c)
    t=${t#fuzz_}
    total=$((total + 1))
    # A target whose build failed never ran: no log line, count it failed.
    if [ -e "$status/$t.fuzz-smoke.fail" ] || [ ! -x "build-fuzz/fuzz_$t" ]; then
        failed=$((failed + 1))
    fi
done
passed=$((total - failed))
[ -n "${SLUICE_SUMMARY_FILE:-}" ] && echo "fuzz $passed $failed" >>"$SLUICE_SUMMARY_FILE"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
