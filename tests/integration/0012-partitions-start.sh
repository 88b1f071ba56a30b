#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0012-partitions-start — `sluice run` refuses to start when a pipeline's
# changelog, overflow or dlq has another partition count than its input, or
# a dlq is missing: it exits non-zero and logs, for each topic, one line
# naming the topic, both counts and the fix.  `sluice topics check` reports
# the same topics; `sluice topics apply` adds the partitions sluice's own
# topics lack (never removing any), after which `sluice run` starts.
#
#   pipeline  input  the topic that differs
#   c (delay)     3  changelog 2
#   o (throttle)  3  overflow 2
#   d (delay)     3  dlq 1
#   m (delay)     2  dlq missing
#   x (delay)     2  changelog 4 (more: only growing the input fixes it)
source "$(dirname "$0")/lib.sh"

base_conf "$WORK/admin.ini"
printf '\n[pipeline admin]\ntype = delay\ninput = %s.unused\n' "$PFX" >>"$WORK/admin.ini"

c=$PFX-c o=$PFX-o d=$PFX-d m=$PFX-m x=$PFX-x
# Changelog settings `topics check` accepts: only the counts differ.
compact=(cleanup.policy=compact segment.ms=600000 min.cleanable.dirty.ratio=0.1
    max.compaction.lag.ms=900000 min.compaction.lag.ms=0 delete.retention.ms=3600000)

topic_create "$c.in" 3
topic_create "$c.changelog" 2 "${compact[@]}"
topic_create "$o.in" 3
topic_create "$o.out" 3
topic_create "$o.changelog" 3 "${compact[@]}"
topic_create "$o.rates" 1 "${compact[@]}"
topic_create "$o.overflow" 2 cleanup.policy=delete retention.ms=-1
topic_create "$d.in" 3
topic_create "$d.changelog" 3 "${compact[@]}"
topic_create "$d.dlq" 1
topic_create "$m.in" 2
topic_create "$m.changelog" 2 "${compact[@]}"
topic_create "$x.in" 2
topic_create "$x.changelog" 4 "${compact[@]}"

# pipelines FILE NAME... — a config with those pipelines (a dlq only for d
# and m).
pipelines() {
    local f=$1
    shift
    base_conf "$f"
    for p in "$@"; do
        case $p in
        "$o") printf '\n[pipeline %s]\ntype = throttle\ninput = %s.in\noutput = %s.out\ndlq = none\n' "$p" "$p" "$p" ;;
        "$d" | "$m") printf '\n[pipeline %s]\ntype = delay\ninput = %s.in\ndlq = %s.dlq\n' "$p" "$p" "$p" ;;
        *) printf '\n[pipeline %s]\ntype = delay\ninput = %s.in\ndlq = none\n' "$p" "$p" ;;
        esac >>"$f"
    done
}

# refused NAME CONF — `sluice run` must exit non-zero by itself (within 60 s).
refused() {
    local rc=0
    timeout 60 "$SLUICE_BIN" run -c "$2" >"$WORK/$1.log" 2>&1 || rc=$?
    [ "$rc" -ne 124 ] || fail "$1: sluice run still running after 60 s"
    [ "$rc" -ne 0 ] || fail "$1: sluice run exited 0"
    echo "$1: sluice run exited $rc"
}

# said NAME TEXT — the run's log has an error line containing TEXT.
said() {
    grep -F -- "$2" "$WORK/$1.log" | grep -q ' error ' || {
        sed 's/^/    /' "$WORK/$1.log" | tail -20 >&2
        fail "$1: no error line saying: $2"
    }
}

want_c="pipeline $c: changelog topic $c.changelog has 2 partitions, its input $c.in has 3; run \`sluice topics apply\` (it adds the missing partitions) or kafka-topics --alter --topic $c.changelog --partitions 3"
want_o="pipeline $o: overflow topic $o.overflow has 2 partitions, its input $o.in has 3; run \`sluice topics apply\`"
want_d="pipeline $d: dlq topic $d.dlq has 1 partitions, its input $d.in has 3; run \`sluice topics apply\`"
want_m="pipeline $m: dlq topic $m.dlq is missing; run \`sluice topics apply\` to create it with 2 partitions like its input $m.in"
want_x="pipeline $x: changelog topic $x.changelog has 4 partitions, its input $x.in has 2; partitions cannot be removed: grow the input with kafka-topics --alter --topic $x.in --partitions 4"

# One mismatch alone is enough: a dlq (never checked before).
pipelines "$WORK/d.ini" "$d"
refused run-d "$WORK/d.ini"
said run-d "$want_d"

# Every problem of every pipeline in one run.
pipelines "$WORK/all.ini" "$c" "$o" "$d" "$m" "$x"
refused run-all "$WORK/all.ini"
for w in "$want_c" "$want_o" "$want_d" "$want_m" "$want_x"; do said run-all "$w"; done
grep -q "5 topic problems" "$WORK/run-all.log" || fail "run-all: no summary of 5 topic problems"
! grep -q "Kafka clients ready" "$WORK/run-all.log" || fail "run-all: went on to create its clients"
echo "run: refused with the 5 problems named, each with both counts and the fix"

# topics check names the same topics.
rc=0
"$SLUICE_BIN" topics check -c "$WORK/all.ini" >"$WORK/check.out" 2>&1 || rc=$?
cat "$WORK/check.out"
[ "$rc" -eq 1 ] || fail "topics check exited $rc, want 1"
expect_problem() {
    grep -E "^problem +$1 " "$WORK/check.out" | grep -Fq -- "$2" ||
        fail "topics check: no problem for $1 saying '$2'"
}
expect_problem "$c.changelog" "has 2 partitions, want 3 like its input $c.in (apply adds them)"
expect_problem "$o.overflow" "has 2 partitions, want 3 like its input $o.in (apply adds them)"
expect_problem "$d.dlq" "has 1 partitions, want 3 like its input $d.in (apply adds them)"
expect_problem "$m.dlq" "missing (apply creates it with 2 partitions like its input)"
expect_problem "$x.changelog" "has 4 partitions, want 2 like its input $x.in (partitions cannot be removed: grow the input to 4)"
echo "check: the same 5 topics"

# apply grows what it can, creates the missing dlq, and leaves x (exit 1).
rc=0
"$SLUICE_BIN" topics apply -c "$WORK/all.ini" >"$WORK/apply.out" 2>&1 || rc=$?
cat "$WORK/apply.out"
[ "$rc" -eq 1 ] || fail "topics apply exited $rc, want 1 ($x.changelog cannot be fixed)"
for t in "$c.changelog 2 3" "$o.overflow 2 3" "$d.dlq 1 3"; do
    set -- $t
    grep -Eq "^grown +$1 .*grown from $2 to $3 partitions" "$WORK/apply.out" || fail "apply did not grow $1 from $2 to $3"
    [ "$(topic_partitions "$1")" -eq "$3" ] || fail "$1 does not have $3 partitions after apply"
done
grep -Eq "^created +$m.dlq " "$WORK/apply.out" || fail "apply did not create $m.dlq"
[ "$(topic_partitions "$x.changelog")" -eq 4 ] || fail "apply changed $x.changelog"
echo "apply: grew the 3 short topics, created the missing dlq, left $x.changelog"

# Without x, sluice starts and gets ready.
pipelines "$WORK/ok.ini" "$c" "$o" "$d" "$m"
port=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$port sluice_start ok "$WORK/ok.ini"
sluice_wait_ready ok "$port" 60
! grep -q ' error .*TOPICS' "$WORK/sluice-ok.log" || fail "a topic problem logged after apply"
echo "run after apply: ready"
echo "PASS"
