#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0711-cluster-acl-each — the ACLs of `sluice acls`, each one taken away in
# turn, on the SASL_SSL cluster of 0710 (User:sluice, StandardAuthorizer,
# allow.everyone.if.no.acl.found=false).  Without any one binding, sluice
# says which: a log line "not authorized: OP on TYPE NAME (...)" naming
# the operation and the resource (for a topic hidden from the principal,
# DESCRIBE, which its Read or Write grants; for a transactional id, whose
# refusal Kafka does not detail, "an operation"), and
#   - exits with status 1 at once, for every binding but two kinds;
#   - goes on, for DescribeConfigs (the broker's limit is assumed; `sluice
#     topics check` names it too) and for a delay target's Write (its
#     timers go to the DLQ, reason target-refused).
# Never a silent stall, never a retry loop without that line.  A binding
# only a DLQ replay needs (Read on a DLQ, Read on a replay's group
# <app_id>-dlq-replay.<pipeline>; sluice run without the API uses
# neither) is taken away from `sluice dlq replay` instead, which must say
# the same line and exit with status 1.
#
# One binding of each kind (resource type, pattern, the topic's role,
# operation) by default; SLUICE_TEST_ACLS_ALL=1 takes every binding.  A
# delay, a debounce and a throttle pipeline (2 partitions each; the
# throttle at 1/s, so its backlog goes through the overflow topic) get a
# few records before each run: keyed ones off their key's partition
# (reroute), a timer due at once, a record without a due time (the DLQ).
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-cluster.sh"

per_run=${SLUICE_TEST_ACL_RUN_SECS:-60}

export SLUICE_TEST_CLUSTER_SASL=1
cluster_start

plain=$WORK/admin-view.ini
cat >"$plain" <<EOF
[sluice]
app_id = $PFX
log_level = info
commit_interval = 100ms
metrics_listen =
transaction_timeout = 10s
shutdown_grace = 5s

[kafka]
bootstrap.servers = $BOOTSTRAP
session.timeout.ms = 6000
heartbeat.interval.ms = 1000

[pipeline $PFX-d]
type = delay
input = $PFX.d.in
input_partitions = 2
allowed_targets = $PFX.to.*

[pipeline $PFX-b]
type = debounce
input = $PFX.b.in
output = $PFX.b.out
input_partitions = 2
idle = 1s

[pipeline $PFX-t]
type = throttle
input = $PFX.t.in
output = $PFX.t.out
input_partitions = 2
default_rate = 1/s burst=1
EOF
# The timers' target is under a prefix of its own: a prefixed Write on
# $PFX.d. would grant the delay input too.
for o in to.d b.out t.out; do
    "$SLUICE_BIN" topics create -c "$plain" "$PFX.$o" --partitions 2 >/dev/null ||
        fail "could not create $PFX.$o"
done
"$SLUICE_BIN" topics apply -c "$plain" >"$WORK/topics-apply.log" 2>&1 ||
    fail "topics apply failed: $(tail -5 "$WORK/topics-apply.log")"

conf=$WORK/sluice.ini
cluster_sasl_conf "$plain" "$conf"

"$SLUICE_BIN" acls -c "$conf" --format table >"$WORK/acls.tsv" || fail "sluice acls failed"

# One JVM changes the bindings, a line at a time (Acls.java serve).
here=$(cd "$(dirname "$0")" && pwd)
coproc ACLS { exec "$here/kafka/broker.sh" java "$here/../tools/Acls.java" "$BOOTSTRAP" serve User:sluice 2>>"$WORK/acls.err"; }
_acls_cleanup() { [ -z "${ACLS_PID:-}" ] || kill "$ACLS_PID" 2>/dev/null || true; }
CLEANUP_HOOKS+=(_acls_cleanup)
acl() {
    local verb=$1 line=$2 answer
    printf '%s\t%s\n' "$verb" "$line" >&"${ACLS[1]}"
    IFS= read -r -t 90 answer <&"${ACLS[0]}" || fail "Acls.java did not answer: $(tail -3 "$WORK/acls.err")"
    [ "$answer" = ok ] || fail "acl $verb $line: $answer"
}
while IFS= read -r line; do acl add "$line"; done <"$WORK/acls.tsv"
note "granted User:sluice the $(wc -l <"$WORK/acls.tsv") bindings of sluice acls"
_checked() { "$SLUICE_BIN" topics check -c "$conf" >"$WORK/check.log" 2>&1; }
wait_until 30 _checked || fail "topics check as User:sluice 30 s after the grant: $(tail -4 "$WORK/check.log" | tr '\n' ';')"

# kind LINE — what makes a binding of its own kind: the resource type, the
# pattern, the topic's role (the last dot-separated word of its name; a
# prefixed topic is a target) and the operation.
kind() {
    local type pattern name op role
    IFS=$'\t' read -r type pattern name op <<<"$1"
    role=-
    if [ "$type" = TOPIC ]; then
        if [ "$pattern" = PREFIXED ]; then role=target; else role=${name##*.}; fi
    elif [[ $type == GROUP && $name == "$PFX-dlq-replay."* ]]; then
        role=replay
    fi
    echo "$type/$pattern/$role/$op"
}

# feed N — records for run N on every input, through the admin's
# plaintext listener, each keyed one to both partitions (so one copy is
# off its key's partition: reroute): on the delay input a timer due at
# once and a record without a due time (the DLQ); on the debounce input
# items of three groups; on the throttle input five of one key (the
# backlog, so the overflow topic, takes four).
feed() {
    local n=$1 i p at
    at=$(($(now_ms) + 500))
    for p in 0 1; do
        for i in 1 2 3; do echo "k$n-$i:v$n-$i"; done |
            kcat -P -b "$BOOTSTRAP" -t "$PFX.b.in" -p "$p" -K: 2>/dev/null
        for i in 1 2 3 4 5; do echo "k$n:v$n-$i"; done |
            kcat -P -b "$BOOTSTRAP" -t "$PFX.t.in" -p "$p" -K: 2>/dev/null
        echo "tm$n-$p:x" | kcat -P -b "$BOOTSTRAP" -t "$PFX.d.in" -p "$p" -K: \
            -H "sluice-target=$PFX.to.d" -H "sluice-at=$at" 2>/dev/null
        echo "bad$n-$p:x" | kcat -P -b "$BOOTSTRAP" -t "$PFX.d.in" -p "$p" -K: 2>/dev/null
    done
}

# try N LINE — one run without binding LINE; 0 when sluice said what it
# should, else the reason in $WHY.
try() {
    local n=$1 line=$2 type pattern name op ops nre fatal re log t0 said
    local -a where
    IFS=$'\t' read -r type pattern name op <<<"$line"
    nre=$(printf '%s' "$name" | sed 's/[.[\*^$]/\\&/g')
    if [ "$pattern" = PREFIXED ]; then nre="$nre[^ ]*"; fi
    ops=$op
    [ "$type" != TOPIC ] || ops="$op|DESCRIBE"
    [ "$type" != TRANSACTIONAL_ID ] || ops="$op|an operation"
    re="not authorized: ($ops) on $type $nre( |$)"
    fatal=1
    if [ "$op" = DESCRIBE_CONFIGS ] || [ "$type/$pattern/$op" = TOPIC/PREFIXED/WRITE ]; then fatal=0; fi
    log=$WORK/sluice-$n.log
    # A fatal refusal is said by the instance that ends; the others by it
    # or by topics check.
    where=("$log")
    [ "$fatal" = 1 ] || where+=("$WORK/check-$n.log")
    : >"$WORK/check-$n.log"
    [ "$op" != DESCRIBE_CONFIGS ] || "$SLUICE_BIN" topics check -c "$conf" >"$WORK/check-$n.log" 2>&1 || true
    feed "$n"
    t0=$(now_ms)
    SLUICE_INSTANCE_ID=$PFX-a sluice_start "$n" "$conf"
    _said() {
        sluice_reap "$n"
        grep -Eqs "$re" "${where[@]}" && { [ "$fatal" = 0 ] || ! sluice_alive "$n"; } && return 0
        ! sluice_alive "$n"
    }
    wait_until "$per_run" _said || true
    said=$((($(now_ms) - t0) / 1000))
    sluice_reap "$n"
    WHY=
    if ! grep -Eqs "$re" "${where[@]}"; then
        WHY="no line matching '$re' in ${said} s ($(sluice_alive "$n" && echo running || sluice_exit_status "$n"))"
    elif [ "$fatal" = 1 ] && sluice_alive "$n"; then
        WHY="still running ${said} s after saying it"
    elif [ "$fatal" = 1 ] && [ "${SLUICE_EXIT[$n]:-}" != "status 1" ]; then
        WHY="ended with ${SLUICE_EXIT[$n]:-?}, want status 1"
    elif [ "$fatal" = 0 ] && ! sluice_alive "$n"; then
        WHY="exited ($(sluice_exit_status "$n")); DescribeConfigs and a target's Write are not fatal"
    fi
    sluice_kill "$n" || true
    SAID=$(grep -Eohs "$re.{0,60}" "${where[@]}" | head -1) || true
    SAID_SECS=$said
    [ -z "$WHY" ]
}

# replay_only LINE — 0 for a binding only a DLQ replay needs.
replay_only() {
    local type pattern name op
    IFS=$'\t' read -r type pattern name op <<<"$1"
    { [ "$type/$op" = TOPIC/READ ] && [ "${name##*.}" = dlq ]; } ||
        { [ "$type/$op" = GROUP/READ ] && [[ $name == "$PFX-dlq-replay."* ]]; }
}

# try_replay N LINE — `sluice dlq replay` without binding LINE, over a
# DLQ record written for it (a reason the run passes over, so that it
# reads the DLQ and commits past it): 0 when it said which binding and
# exited with status 1, else the reason in $WHY.
try_replay() {
    local n=$1 line=$2 type pattern name op pipe nre re rc=0 t0
    IFS=$'\t' read -r type pattern name op <<<"$line"
    if [ "$type" = GROUP ]; then pipe=${name#"$PFX-dlq-replay."}; else pipe=${name%.dlq}; fi
    nre=$(printf '%s' "$name" | sed 's/[.[\*^$]/\\&/g')
    re="not authorized: ($op|DESCRIBE) on $type $nre( |$)"
    echo "acl$n:x" | kcat -P -b "$BOOTSTRAP" -t "$pipe.dlq" -p 0 -K: -H sluice-error=acl-test \
        -H sluice-source-offset=0 2>/dev/null || fail "could not write to $pipe.dlq"
    t0=$(now_ms)
    timeout 150 "$SLUICE_BIN" dlq replay -c "$conf" "$pipe" --reason none-such >"$WORK/replay-$n.log" 2>&1 || rc=$?
    SAID_SECS=$((($(now_ms) - t0) / 1000))
    SAID=$(grep -Eoh "$re.{0,60}" "$WORK/replay-$n.log" | head -1) || true
    WHY=
    if [ -z "$SAID" ]; then
        WHY="dlq replay: no line matching '$re' in ${SAID_SECS} s (exit $rc): $(tail -2 "$WORK/replay-$n.log" | tr '\n' ';')"
    elif [ "$rc" != 1 ]; then
        WHY="dlq replay ended with status $rc, want 1"
    fi
    [ -z "$WHY" ]
}

# A first run with every binding: no refusal, and the group's offsets
# committed, so that each later run reads what was fed just before it
# (a group without offsets would start at the inputs' ends).
SLUICE_INSTANCE_ID=$PFX-a sluice_start 0 "$conf"
_rebuilt() { [ "$(grep -c 'REBUILD .*: rebuilt from' "$WORK/sluice-0.log")" -ge 6 ]; }
wait_until 60 _rebuilt || fail "the first run did not rebuild its 6 partitions: $(sluice_exit_status 0)"
feed 0
_fired() { [ -n "$(kcat -C -b "$BOOTSTRAP" -t "$PFX.to.d" -e -q -X isolation.level=read_committed 2>/dev/null | head -1)" ]; }
wait_until 60 _fired || fail "the first run fired no timer"
! log_has 0 "not authorized" || fail "a refusal with every binding granted: $(grep -m1 'not authorized' "$WORK/sluice-0.log")"
sluice_kill 0 || true

declare -A seen=()
n=0
tested=0
while IFS= read -r line; do
    k=$(kind "$line")
    if [ -z "${SLUICE_TEST_ACLS_ALL:-}" ] && [ -n "${seen[$k]:-}" ]; then continue; fi
    seen[$k]=1
    n=$((n + 1))
    acl delete "$line"
    sleep 2 # every node's authorizer learns it from the metadata log
    ok=0
    t=try
    ! replay_only "$line" || t=try_replay
    if "$t" "$n" "$line"; then
        ok=1
    else
        # A node that had not yet learned of the binding given back
        # after the run before may have refused that one instead.
        first=$WHY
        n=$((n + 1))
        sleep 3
        if "$t" "$n" "$line"; then ok=1; note "$(tr '\t' ' ' <<<"$line"): second run ($first)"; fi
    fi
    if [ "$ok" = 1 ]; then
        note "without $(tr '\t' ' ' <<<"$line"): after ${SAID_SECS} s: $SAID"
    else
        problem "without $(tr '\t' ' ' <<<"$line"): $WHY"
    fi
    tested=$((tested + 1))
    # Granted again; the next binding's wait covers this one's too.
    acl add "$line"
done <"$WORK/acls.tsv"
note "$tested of $(wc -l <"$WORK/acls.tsv") bindings taken away, one at a time"
problems_verdict
echo "PASS"
