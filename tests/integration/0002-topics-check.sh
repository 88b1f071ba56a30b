#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0002-topics-check — `sluice topics check` reports every problem in one
# run, naming each: an overflow with the wrong partition count, a changelog
# that is not compacted, a changelog keeping tombstones for a week, missing
# DLQs.  apply --strict then creates what is missing, adds the partitions
# the overflow lacks (sluice's own co-partitioned topic), leaves the
# wrongly configured topics as they are, and says what differs (exit 1).
# apply without --strict (the init container's form) creates what is
# missing, warns once per difference and exits 0.  A broker that does not
# answer is a clear error within the timeout, not a hang; usage errors
# exit 2.
source "$(dirname "$0")/lib.sh"

# topic_create's config ($WORK/admin.ini): only [kafka] matters to `topics
# create`, but the config loader insists on a pipeline, so give it one.
base_conf "$WORK/admin.ini"
printf '\n[pipeline admin]\ntype = delay\ninput = %s.unused\n' "$PFX" >>"$WORK/admin.ini"

conf=$WORK/sluice.ini
base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX-thr]
type = throttle
input = $PFX-thr.in
output = $PFX-thr.out

[pipeline $PFX-rem]
type = delay
input = $PFX-rem.in
default_target = $PFX-rem.out
EOF

# Good changelog settings but cleanup.policy and delete.retention.ms.
changelog=(segment.ms=600000 min.cleanable.dirty.ratio=0.1
    max.compaction.lag.ms=900000 min.compaction.lag.ms=0)

topic_create "$PFX-thr.in" 4
topic_create "$PFX-thr.out" 4
# Not compacted (everything else right).
topic_create "$PFX-thr.changelog" 4 "${changelog[@]}" cleanup.policy=delete \
    delete.retention.ms=3600000
# 2 partitions where the input has 4.
topic_create "$PFX-thr.overflow" 2 cleanup.policy=delete retention.ms=25200000
topic_create "$PFX-thr.rates" 1 cleanup.policy=compact
topic_create "$PFX-rem.in" 3
topic_create "$PFX-rem.out" 3
# Tombstones kept for 7 days.
topic_create "$PFX-rem.changelog" 3 "${changelog[@]}" cleanup.policy=compact \
    delete.retention.ms=604800000
# The two DLQs are missing.

run_check() {
    local rc=0
    "$SLUICE_BIN" topics check -c "$conf" >"$WORK/$1.out" 2>"$WORK/$1.err" || rc=$?
    cat "$WORK/$1.out"
    return $rc
}

# expect_problem FILE TOPIC REGEX — FILE has a problem line for TOPIC
# matching REGEX.
expect_problem() {
    grep -E "^problem +$2 " "$1" | grep -Eq -- "$3" ||
        fail "no problem for $2 matching '$3' in $(basename "$1")"
}

rc=0
run_check check1 || rc=$?
[ "$rc" -eq 1 ] || fail "check exited $rc, want 1"
expect_problem "$WORK/check1.out" "$PFX-thr.overflow" "has 2 partitions, want 4 like its input $PFX-thr.in \\(apply adds them\\)"
expect_problem "$WORK/check1.out" "$PFX-thr.changelog" "cleanup.policy is delete, want compact"
expect_problem "$WORK/check1.out" "$PFX-rem.changelog" "delete.retention.ms is 604800000, want <= 86400000"
expect_problem "$WORK/check1.out" "$PFX-thr.dlq" "missing"
expect_problem "$WORK/check1.out" "$PFX-rem.dlq" "missing"
n=$(grep -c '^problem' "$WORK/check1.out")
[ "$n" -eq 5 ] || fail "check reported $n problems, want exactly 5"
grep -q '^check: 5 problems' "$WORK/check1.out" || fail "check summary does not count 5 problems"
for t in thr.in thr.out thr.rates rem.in rem.out; do
    grep -Eq "^ok +$PFX-$t " "$WORK/check1.out" || fail "check does not say $PFX-$t is ok"
done
echo "check: the 5 problems named in one run, nothing else"

# apply --strict: creates the DLQs, grows the overflow, alters no config,
# exits 1 naming what differs.
rc=0
"$SLUICE_BIN" topics apply -c "$conf" --strict >"$WORK/apply.out" 2>"$WORK/apply.err" || rc=$?
cat "$WORK/apply.out"
[ "$rc" -eq 1 ] || fail "apply --strict exited $rc, want 1 (existing topics differ)"
grep -Eq "^created +$PFX-thr.dlq " "$WORK/apply.out" || fail "apply did not create $PFX-thr.dlq"
grep -Eq "^created +$PFX-rem.dlq " "$WORK/apply.out" || fail "apply did not create $PFX-rem.dlq"
grep -Eq "^grown +$PFX-thr.overflow .*grown from 2 to 4 partitions" "$WORK/apply.out" ||
    fail "apply did not grow $PFX-thr.overflow from 2 to 4 partitions"
expect_problem "$WORK/apply.out" "$PFX-thr.changelog" "cleanup.policy is delete, want compact"
expect_problem "$WORK/apply.out" "$PFX-rem.changelog" "delete.retention.ms is 604800000"
grep -q 'never altered' "$WORK/apply.out" || fail "apply does not say existing topics are left alone"
[ "$(topic_partitions "$PFX-thr.overflow")" -eq 4 ] || fail "apply did not give the overflow 4 partitions"
"$SLUICE_BIN" topics describe -c "$conf" "$PFX-thr.changelog" "$PFX-rem.changelog" >"$WORK/describe.out"
grep -q "^$PFX-thr.changelog .* cleanup.policy=delete" "$WORK/describe.out" || fail "apply altered $PFX-thr.changelog"
grep -q "^$PFX-rem.changelog .* delete.retention.ms=604800000" "$WORK/describe.out" || fail "apply altered $PFX-rem.changelog"
echo "apply: created the 2 missing DLQs, grew the overflow to 4 partitions, left the 2 misconfigured changelogs as they were"

rc=0
run_check check2 || rc=$?
[ "$rc" -eq 1 ] || fail "second check exited $rc, want 1"
n=$(grep -c '^problem' "$WORK/check2.out")
[ "$n" -eq 2 ] || fail "second check reported $n problems, want 2"
! grep -q "missing" "$WORK/check2.out" || fail "second check still reports a missing topic"
grep -Eq "^ok +$PFX-thr.overflow " "$WORK/check2.out" || fail "second check does not say the grown overflow is ok"
echo "check after apply: the 2 misconfigured changelogs remain, nothing missing"

# apply without --strict, with one more pipeline whose topics are all
# missing: creates them, says what differs as one warning line per
# difference (no problem line), alters nothing, exits 0.
conf2=$WORK/sluice2.ini
cp "$conf" "$conf2"
cat >>"$conf2" <<EOF

[pipeline $PFX-new]
type = delay
input = $PFX-new.in
input_partitions = 2
default_target = $PFX-rem.out
EOF
rc=0
"$SLUICE_BIN" topics apply -c "$conf2" >"$WORK/apply-lax.out" 2>"$WORK/apply-lax.err" || rc=$?
cat "$WORK/apply-lax.out"
[ "$rc" -eq 0 ] || { cat "$WORK/apply-lax.err" >&2; fail "apply without --strict exited $rc, want 0 (only configs differ)"; }
for t in "$PFX-new.in" "$PFX-new.changelog" "$PFX-new.dlq"; do
    grep -Eq "^created +$t " "$WORK/apply-lax.out" || fail "apply without --strict did not create $t"
    [ "$(topic_partitions "$t")" -eq 2 ] || fail "$t does not have 2 partitions"
done
expect_warning() {
    grep -E "^warning +$1 " "$WORK/apply-lax.out" | grep -Eq -- "$2" ||
        fail "no warning for $1 matching '$2'"
}
expect_warning "$PFX-thr.changelog" "cleanup.policy is delete, want compact"
expect_warning "$PFX-rem.changelog" "delete.retention.ms is 604800000, want <= 86400000"
n=$(grep -c '^warning' "$WORK/apply-lax.out")
[ "$n" -eq 2 ] || fail "apply without --strict printed $n warnings, want 2"
! grep -q '^problem' "$WORK/apply-lax.out" || fail "apply without --strict reported a problem"
grep -q '^apply: 2 warnings: 2 existing topics differ' "$WORK/apply-lax.out" ||
    fail "apply without --strict does not count its 2 warnings"
"$SLUICE_BIN" topics describe -c "$conf" "$PFX-thr.changelog" "$PFX-rem.changelog" >"$WORK/describe2.out"
cmp -s "$WORK/describe.out" "$WORK/describe2.out" || fail "apply without --strict altered a changelog"
rc=0
"$SLUICE_BIN" topics apply -c "$conf2" --strict >"$WORK/apply-strict2.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "apply --strict after it exited $rc, want 1"
grep -q '^apply: 2 problems' "$WORK/apply-strict2.out" || fail "apply --strict does not count the 2 differences as problems"
echo "apply without --strict: created the 3 topics of $PFX-new, 2 warnings, exit 0; --strict: exit 1"

# A broker that does not answer: an error naming the servers, within the
# timeout.  (The environment override points the same file elsewhere.)
t0=$(date +%s%N)
rc=0
SLUICE_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1 timeout 30 \
    "$SLUICE_BIN" topics check -c "$conf" --timeout 2s >"$WORK/down.out" 2>"$WORK/down.err" || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" -eq 1 ] || { cat "$WORK/down.err" >&2; fail "check against a dead broker exited $rc, want 1"; }
grep -q "did not answer.*127.0.0.1:1" "$WORK/down.err" || {
    cat "$WORK/down.err" >&2
    fail "no clear error for an unreachable broker"
}
[ "$ms" -lt 15000 ] || fail "check against a dead broker took $ms ms with --timeout 2s"
echo "unreachable broker: '$(grep 'did not answer' "$WORK/down.err")' after $ms ms"

# Usage errors exit 2.
rc=0
"$SLUICE_BIN" topics check >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "check without -c exited $rc, want 2"
rc=0
"$SLUICE_BIN" topics apply -c "$conf" --bogus >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "apply --bogus exited $rc, want 2"
rc=0
"$SLUICE_BIN" topics create -c "$conf" "$PFX-x" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "create without --partitions exited $rc, want 2"
# An option's value out of its bounds is named, with the value.
usage_says() { # WANT ARGS... — exit 2, stderr holding WANT
    local want=$1 rc=0
    shift
    "$SLUICE_BIN" topics "$@" >/dev/null 2>"$WORK/usage.err" || rc=$?
    [ "$rc" -eq 2 ] || fail "topics $*: exited $rc, want 2"
    grep -qF -- "$want" "$WORK/usage.err" ||
        fail "topics $*: stderr '$(cat "$WORK/usage.err")', want '$want'"
}
usage_says "--partitions: invalid count '0'" create -c "$conf" --partitions 0 "$PFX-x"
usage_says "--partitions: invalid count '2x'" create -c "$conf" --partitions 2x "$PFX-x"
usage_says "--replication-factor: invalid count '0'" create -c "$conf" --partitions 1 --replication-factor 0 "$PFX-x"
usage_says "--timeout 2h: must be between 1ms and 1h" check -c "$conf" --timeout 2h
usage_says "--timeout zz:" check -c "$conf" --timeout zz
usage_says "--strict is an option of apply" check -c "$conf" --strict
usage_says "a topic config is --set KEY=VALUE" create -c "$conf" --config cleanup.policy=compact --partitions 1 "$PFX-x"
usage_says "--set cleanup.policy=compact: only create sets topic configs" apply -c "$conf" --set cleanup.policy=compact
usage_says "--set cleanup.policy: want KEY=VALUE" create -c "$conf" --set cleanup.policy --partitions 1 "$PFX-x"
"$SLUICE_BIN" topics check --help | grep -q '^usage: sluice topics check' || fail "check --help"
echo "usage errors exit 2"
echo "PASS"
