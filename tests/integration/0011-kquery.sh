#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0011-kquery — the Kafka lookups that never block the loop (src/kquery.c)
# against the real broker: each partition's watermarks match the records
# kcat produced; the topic's partition count, and 0 for a missing topic; a
# group's committed offset (-1001 before any commit, the committed value
# after; held back while a transaction carries offsets for it); the
# members of a live group with their group.instance.id; a probe round
# trip.  The checks are the it_* cases of the unit test binary
# (tests/unit/test_kquery.c), which skips them unless given a topic.
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/tests/test_kquery
make -C "$root" --no-print-directory build/tests/test_kquery >/dev/null ||
    fail "could not build $bin"

# topic_create's config ($WORK/admin.ini): only [kafka] matters to `topics
# create`, but the config loader insists on a pipeline, so give it one.
base_conf "$WORK/admin.ini"
printf '\n[pipeline admin]\ntype = delay\ninput = %s.unused\n' "$PFX" >>"$WORK/admin.ini"

topic=$PFX.kquery
counts=(5 3 0)
topic_create "$topic" "${#counts[@]}"
for p in "${!counts[@]}"; do
    [ "${counts[$p]}" -gt 0 ] || continue
    seq 1 "${counts[$p]}" | produce "$topic" -p "$p"
done
total=$(count_records "$topic")
[ "$total" -eq 8 ] || fail "kcat reads $total records from $topic, produced 8"
echo "created $topic with ${counts[*]} records in its partitions"

rc=0
SLUICE_TEST_KQUERY_TOPIC=$topic \
    SLUICE_TEST_KQUERY_COUNTS=$(IFS=,; echo "${counts[*]}") \
    "$bin" >"$WORK/kquery.log" 2>&1 || rc=$?
cat "$WORK/kquery.log"
[ "$rc" -eq 0 ] || fail "test_kquery exited $rc"
! grep -q 'SKIPPED' "$WORK/kquery.log" || fail "broker checks were skipped"
grep -q '^\[  PASSED  \]' "$WORK/kquery.log" || fail "no PASSED line"

# Figures for the summary.
sed -n 's/^ *\(pending txn, committed after.*\)/\1/p; s/^ *\(probe: .*\)/\1/p' \
    "$WORK/kquery.log" | while read -r line; do note "$line"; done
