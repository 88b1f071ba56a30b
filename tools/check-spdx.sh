#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# check-spdx.sh — every source file of the tree says its licence in its
# first line (its second after a #! line): "SPDX-License-Identifier:
# Apache-2.0" in the file's comment syntax (LICENSE holds the text).
#
# Source files: C (.c .h .inc .def), .proto, .java, shell (.sh and .ci/run),
# Python, make (Makefile, .mk).  The fuzz corpora are data, not source.
# The files are git's tracked ones in a checkout, else every such file
# outside the build folders (a `make dist` tarball).  `make check-spdx` (and
# so `make test`) runs it.  Prints each file without the line; exits 1 when
# there is one.
set -u
cd "$(dirname "$0")/.."
want='SPDX-License-Identifier: Apache-2.0'

if prefix=$(git rev-parse --show-prefix 2>/dev/null) && [ -z "$prefix" ]; then
    list() { git ls-files; }
else
    list() {
        find . -path ./.git -prune -o -path './build*' -prune -o -type f -print | sed 's|^\./||'
    }
fi

# has_line FILE — FILE's first line, or its second after a #! line, names
# the licence.
has_line() {
    local l1='' l2='' line
    { IFS= read -r l1 && IFS= read -r l2; } <"$1" || true
    case "$l1" in '#!'*) line=$l2 ;; *) line=$l1 ;; esac
    case "$line" in *"$want"*) return 0 ;; *) return 1 ;; esac
}

# The rule catches what it should, in files made for it.
self=$(mktemp -d)
trap 'rm -rf "$self"' EXIT
printf '/* %s */\n/*\n * a.c\n */\n' "$want" >"$self/good.c"
printf '#!/bin/sh\n# %s\n# a.sh\n' "$want" >"$self/good.sh"
printf '/*\n * a.c\n */\n/* %s */\n' "$want" >"$self/late.c"
printf '#!/bin/sh\n# a.sh\n# %s\n' "$want" >"$self/late.sh"
printf '# %s' "$want" | sed 's/Apache-2.0/MIT/' >"$self/other.py"
: >"$self/empty.h"
for f in good.c good.sh; do
    has_line "$self/$f" || { echo "check-spdx: self-test: $f refused"; exit 1; }
done
for f in late.c late.sh other.py empty.h; do
    ! has_line "$self/$f" || { echo "check-spdx: self-test: $f passed"; exit 1; }
done

n=0
missing=0
while IFS= read -r f; do
    case "$f" in
    tests/fuzz/corpus/*) continue ;;
    *.c | *.h | *.inc | *.def | *.proto | *.java | *.sh | *.py | *.mk | Makefile | */Makefile | .ci/run) ;;
    *) continue ;;
    esac
    n=$((n + 1))
    if ! has_line "$f"; then
        echo "check-spdx: $f: no \"$want\" line at its top"
        missing=$((missing + 1))
    fi
done < <(list)

if [ "$missing" -gt 0 ]; then
    echo "check-spdx: $missing of $n source files lack the SPDX line (first line, or second after #!)"
    exit 1
fi
echo "check-spdx: ok ($n source files; the self-test's files judged right)"
