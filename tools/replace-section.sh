#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# replace-section.sh — keeps a generated section of a text file up to date.
#
#   tools/replace-section.sh [--check] FILE NAME GENERATED
#
# Replaces the lines between "<!-- BEGIN NAME -->" and "<!-- END NAME -->"
# in FILE (the marker lines stay) with the content of GENERATED.  A marker
# may be indented (a section inside a Markdown list item): each non-empty
# line of GENERATED then gets the BEGIN marker's indentation.  With
# --check, changes nothing: exits 1 and says so when the section differs
# from GENERATED, 0 when it is current.  Exit 2 on usage errors or when the
# markers are missing, repeated or out of order.  Used by `make docs` and
# `make docs-check` for the configuration reference (docs/configuration.md)
# and the ACL example (docs/security.md).
set -euo pipefail

prog=${0##*/}
usage() {
    echo "usage: $prog [--check] FILE NAME GENERATED" >&2
    exit 2
}

check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
[ $# -eq 3 ] || usage
file=$1 name=$2 generated=$3

[ -f "$file" ] || { echo "$prog: $file: no such file" >&2; exit 2; }
[ -f "$generated" ] || { echo "$prog: $generated: no such file" >&2; exit 2; }
case $name in
    *[!A-Za-z0-9_.-]* | '') echo "$prog: bad section name '$name'" >&2; exit 2 ;;
esac

begin="<!-- BEGIN $name -->"
end="<!-- END $name -->"

# Marker lines (whole lines, maybe indented), each exactly once, BEGIN
# before END.  The name holds no regex character but '.'.
name_re=${name//./\\.}
begin_lines=$(grep -nE -- "^[[:blank:]]*<!-- BEGIN $name_re -->\$" "$file" | cut -d: -f1 || true)
end_lines=$(grep -nE -- "^[[:blank:]]*<!-- END $name_re -->\$" "$file" | cut -d: -f1 || true)
if [ -z "$begin_lines" ] || [ -z "$end_lines" ]; then
    echo "$prog: $file: markers '$begin' and '$end' not found" >&2
    exit 2
fi
if [ "$(printf '%s\n' "$begin_lines" | wc -l)" -ne 1 ] ||
    [ "$(printf '%s\n' "$end_lines" | wc -l)" -ne 1 ]; then
    echo "$prog: $file: section $name is marked more than once" >&2
    exit 2
fi
if [ "$begin_lines" -ge "$end_lines" ]; then
    echo "$prog: $file: '$end' comes before '$begin'" >&2
    exit 2
fi

tmp=$(mktemp "${file}.XXXXXX")
trap 'rm -f "$tmp"' EXIT

indent=$(sed -n "${begin_lines}s/[^[:blank:]].*//p" "$file")

{
    head -n "$begin_lines" "$file"
    if [ -n "$indent" ]; then
        # Every line ends in a newline here, the last one too.
        awk -v indent="$indent" '{ print (length($0) ? indent $0 : $0) }' "$generated"
    else
        cat "$generated"
        # A generated file without a final newline must not glue onto END.
        if [ -s "$generated" ] && [ -n "$(tail -c 1 "$generated")" ]; then
            echo
        fi
    fi
    tail -n "+$end_lines" "$file"
} >"$tmp"

if cmp -s "$tmp" "$file"; then
    [ "$check" -eq 1 ] && echo "$prog: $file: section $name is up to date"
    exit 0
fi
if [ "$check" -eq 1 ]; then
    echo "$prog: $file: section $name differs from $generated; run 'make docs'" >&2
    exit 1
fi
chmod --reference="$file" "$tmp" 2>/dev/null || true
mv -f "$tmp" "$file"
trap - EXIT
echo "$prog: $file: section $name updated"
