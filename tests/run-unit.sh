#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the cmocka unit test binaries given as arguments and sums their
# results.  Prints "unit: N passed, N failed"; exit 1 on any failure.
# With SLUICE_SUMMARY_FILE set, appends "unit P F" to it for run-all.sh.
set -u
passed=0
failed=0
for bin in "$@"; do
    out=$("$bin" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -1)
    p=${p:-0}
    f=${f:-0}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "unit: $bin exited $rc" >&2
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done
[ -n "${SLUICE_SUMMARY_FILE:-}" ] && echo "unit $passed $failed" >>"$SLUICE_SUMMARY_FILE"
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
