#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0001-topics-apply — `sluice topics apply` creates exactly the topics the
# config needs: every internal topic with its input's partition count (the
# rates table with 1), a missing input only when input_partitions is set,
# each with the planned configs.  --dry-run creates nothing; a second apply
# changes nothing and says so; `topics check` then reports "ok".
source "$(dirname "$0")/lib.sh"

# topic_create's config ($WORK/admin.ini): only [kafka] matters to `topics
# create`, but the config loader insists on a pipeline, so give it one.
base_conf "$WORK/admin.ini"
printf '\n[pipeline admin]\ntype = delay\ninput = %s.unused\n' "$PFX" >>"$WORK/admin.ini"

conf=$WORK/sluice.ini
base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX-rem]
type = delay
input = $PFX-rem.in
default_target = $PFX-rem.out

[pipeline $PFX-thr]
type = throttle
input = $PFX-thr.in
input_partitions = 4
output = $PFX-thr.out
ttl = 2h

[pipeline $PFX-deb]
type = debounce
input = $PFX-deb.in
output = $PFX-deb.out
dlq = none
EOF

# The user's topics: inputs (but thr's, which apply creates) and outputs.
topic_create "$PFX-rem.in" 3
topic_create "$PFX-rem.out" 1
topic_create "$PFX-thr.out" 2
topic_create "$PFX-deb.in" 2
topic_create "$PFX-deb.out" 1
before=$(topic_list "$PFX")

expected="$PFX-deb.changelog 2
$PFX-deb.in 2
$PFX-deb.out 1
$PFX-rem.changelog 3
$PFX-rem.dlq 3
$PFX-rem.in 3
$PFX-rem.out 1
$PFX-thr.changelog 4
$PFX-thr.dlq 4
$PFX-thr.in 4
$PFX-thr.out 2
$PFX-thr.overflow 4
$PFX-thr.rates 1"
created="$PFX-deb.changelog $PFX-rem.changelog $PFX-rem.dlq $PFX-thr.changelog
$PFX-thr.dlq $PFX-thr.in $PFX-thr.overflow $PFX-thr.rates"

# --dry-run: names what it would create, creates nothing.
rc=0
"$SLUICE_BIN" topics apply -c "$conf" --dry-run >"$WORK/dry.out" 2>"$WORK/dry.err" || rc=$?
cat "$WORK/dry.out"
[ "$rc" -eq 0 ] || fail "apply --dry-run exited $rc"
for t in $created; do
    grep -Eq "^missing +$t .*would be created" "$WORK/dry.out" ||
        fail "dry run does not name $t"
done
[ "$(topic_list "$PFX")" = "$before" ] || fail "apply --dry-run created topics"
echo "dry run: $(echo $created | wc -w) topics named, none created"

# apply: creates exactly the expected topics.
rc=0
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply1.out" 2>"$WORK/apply1.err" || rc=$?
cat "$WORK/apply1.out"
[ "$rc" -eq 0 ] || { cat "$WORK/apply1.err" >&2; fail "apply exited $rc"; }
for t in $created; do
    grep -Eq "^created +$t " "$WORK/apply1.out" || fail "apply did not report $t as created"
done
[ "$(grep -c '^created ' "$WORK/apply1.out")" -eq 8 ] || fail "apply should create exactly 8 topics"
[ "$(grep -c '^exists ' "$WORK/apply1.out")" -eq 5 ] || fail "apply should find exactly 5 topics"
! grep -q '^problem' "$WORK/apply1.out" || fail "apply reported problems"
after=$(topic_list "$PFX")
if [ "$after" != "$expected" ]; then
    diff <(echo "$expected") <(echo "$after") >&2 || true
    fail "topics and partition counts (kcat -L) differ from the expected (< expected, > found)"
fi
echo "kcat -L: exactly the 13 expected topics with the expected partition counts"

# Configs as the broker reports them.
"$SLUICE_BIN" topics describe -c "$conf" >"$WORK/describe.out" || {
    cat "$WORK/describe.out" >&2
    fail "describe exited non-zero"
}
has_configs() {
    local topic=$1 line kv
    shift
    line=$(grep "^$topic " "$WORK/describe.out") || fail "describe does not list $topic"
    for kv in "$@"; do
        case " $line " in
        *" $kv "*) ;;
        *) fail "$topic: want $kv; describe says: $line" ;;
        esac
    done
}
changelog_configs=(cleanup.policy=compact segment.ms=600000 min.cleanable.dirty.ratio=0.1
    max.compaction.lag.ms=900000 min.compaction.lag.ms=0 delete.retention.ms=3600000)
has_configs "$PFX-rem.changelog" partitions=3 "${changelog_configs[@]}"
has_configs "$PFX-thr.changelog" partitions=4 "${changelog_configs[@]}"
has_configs "$PFX-deb.changelog" partitions=2 "${changelog_configs[@]}"
# overflow: ttl 2h + 1h margin
has_configs "$PFX-thr.overflow" partitions=4 cleanup.policy=delete retention.ms=10800000 retention.bytes=-1
has_configs "$PFX-thr.rates" partitions=1 cleanup.policy=compact
has_configs "$PFX-thr.dlq" partitions=4 cleanup.policy=delete retention.ms=604800000
has_configs "$PFX-rem.dlq" partitions=3 cleanup.policy=delete retention.ms=604800000
echo "describe: changelog, overflow, rates and dlq configs as planned"

rc=0
"$SLUICE_BIN" topics check -c "$conf" >"$WORK/check.out" 2>&1 || rc=$?
cat "$WORK/check.out"
[ "$rc" -eq 0 ] || fail "check after apply exited $rc"
grep -q '^check: ok' "$WORK/check.out" || fail "check does not say ok"

# A second apply changes nothing and says so.
rc=0
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply2.out" 2>"$WORK/apply2.err" || rc=$?
cat "$WORK/apply2.out"
[ "$rc" -eq 0 ] || fail "second apply exited $rc"
[ "$(grep -c '^exists ' "$WORK/apply2.out")" -eq 13 ] || fail "second apply: not all 13 topics exist"
! grep -Eq '^(created|problem)' "$WORK/apply2.out" || fail "second apply created or found problems"
grep -q 'nothing to change' "$WORK/apply2.out" || fail "second apply does not say it changed nothing"
[ "$(topic_list "$PFX")" = "$expected" ] || fail "second apply changed the topics"
"$SLUICE_BIN" topics describe -c "$conf" >"$WORK/describe2.out"
cmp -s "$WORK/describe.out" "$WORK/describe2.out" || fail "second apply changed configs"
echo "second apply: nothing changed"
echo "PASS"
