#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# merge.sh FUZZER TREE_CORPUS WORK_CORPUS SCRATCH — minimizes TREE_CORPUS
# with the inputs a `make fuzz` run found in WORK_CORPUS: the hand-written
# seeds (seed-*) and crash regressions (crash-*) always stay, under their
# names; of every other input only the fewest that add coverage beyond them
# are kept (libFuzzer's -merge=1), named by their SHA-1.  Coverage here
# means edges, not hit counts (-use_counters=0): that keeps the committed
# corpus small (tens of files, not hundreds) and still reaching every edge
# the run reached; build-fuzz/corpus/ keeps everything for longer runs.
set -eu
fuzzer=$1 tree=$2 work=$3 scratch=$4

rm -rf "$scratch"
mkdir -p "$scratch/keep" "$scratch/rest"
for f in "$tree"/* "$work"/*; do
        [ -f "$f" ] || continue
        case ${f##*/} in
        seed-* | crash-*) cp -p "$f" "$scratch/keep/" ;;
        *) cp -p "$f" "$scratch/rest/" ;;
        esac
done
# Output corpus first: what is in keep/ stays; from rest/ only new coverage.
"$fuzzer" -merge=1 -use_counters=0 -max_len=65536 -timeout=10 \
        "$scratch/keep" "$scratch/rest"
find "$tree" -maxdepth 1 -type f ! -name 'seed-*' ! -name 'crash-*' -delete
for f in "$scratch/keep"/*; do
        [ -e "$tree/${f##*/}" ] || cp -p "$f" "$tree/"
done
rm -rf "$scratch"
