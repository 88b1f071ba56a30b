#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0508-api-openapi — api/openapi.yaml is valid OpenAPI (openapi-spec-validator)
# and says what the server does: an operationId on every operation, every
# error answer the one Error schema ({code, message}, what src/api.c sends),
# 405 with its Allow header, no words of the making (issue numbers, dates,
# commit hashes).  tests/api/check_openapi.py says each check; `make
# api-check` runs it without a broker.  (That the paths and methods are the
# server's routes is test_api's check.)
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/build/api-venv
t0=$(date +%s%N)
if [ ! -e "$venv/ok" ]; then
    make -s -C "$root" api-tools >"$WORK/api-tools.log" 2>&1 ||
        { cat "$WORK/api-tools.log" >&2; fail "make api-tools failed"; }
    note "make api-tools: $((($(date +%s%N) - t0) / 1000000)) ms"
fi
"$venv/bin/python" "$root/tests/api/check_openapi.py" "$root/api/openapi.yaml" ||
    fail "api/openapi.yaml has problems (above)"
echo PASS
