#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0404-fault-zombie — a previous owner's transaction is still open while
# sluice rebuilds the partition (SPEC §4 "Kafka's faults": "a rebuild reads
# the committed input offset before it captures the changelog's end").
#
# The zombie (tests/tools/txnzombie, its own transactional id) read input
# partition 1 of a delay pipeline up to the timer z1 and, in one open
# transaction, has already sent the input offset past z1 for the group.
# sluice starts and is assigned partition 1 while that transaction is open.
# Only then does the zombie write z1's changelog record (a sluice.v1.Timer,
# due at once) and commit.  The committed state of partition 1 now says:
# input consumed past z1, and z1 pending in the changelog.  A rebuild that
# captured the changelog's end before the zombie's record would start with
# no timer and resume the input after z1: the timer would never fire.
#
# Checks: z1 fires exactly once (read_committed), and no timer stays
# pending; partition 0 keeps firing while partition 1 waits for the zombie;
# a timer produced afterwards on partition 1 fires once; /readyz is 200 at
# the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

zombie_bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/txnzombie
[ -x "$zombie_bin" ] || fail "$zombie_bin is missing: make build/tools/txnzombie (make test and make integration build it)"

private_broker_start 61506
dl_setup 2
conf_set "$conf" kafka session.timeout.ms=6000 heartbeat.interval.ms=1000

# The input the zombie consumed: timer z1 on partition 1, due in 3 s.
due=$(($(now_ms) + 3000))
echo "z1:p-z1" | produce "$in" -p 1 -K: -H "sluice-target=$out" -H "sluice-at=$due"
z1_offset=$(consume_all "$in" -p 1 -f '%k %o\n' | awk '$1 == "z1" { print $2 }')
[ -n "$z1_offset" ] || fail "z1 is not on input partition 1"

# The zombie: offsets first, then (on our word) the changelog record, then
# (on our word) the commit.  Its stdin is a FIFO held open by fd 7.
mkfifo "$WORK/zombie.in"
exec 7<>"$WORK/zombie.in"
"$zombie_bin" -b "$BOOTSTRAP" -t "$PFX-zombie" -g "$PFX" --input "$in" \
    --partition 1 --offset $((z1_offset + 1)) --changelog "$PFX.changelog" \
    --delay-timer "z1,$due,$out,p-z1" --txn-timeout-ms 120000 \
    <"$WORK/zombie.in" >"$WORK/zombie.out" 2>"$WORK/zombie.err" &
zombie=$!
_zombie_cleanup() { kill "$zombie" 2>/dev/null || true; }
CLEANUP_HOOKS+=(_zombie_cleanup)
zombie_said() {
    kill -0 "$zombie" 2>/dev/null || grep -qx "$1" "$WORK/zombie.out" ||
        fail "txnzombie exited before '$1': $(cat "$WORK/zombie.err")"
    grep -qx "$1" "$WORK/zombie.out"
}
wait_until 60 zombie_said offsets-sent || fail "txnzombie did not send its offsets within 60 s: $(cat "$WORK/zombie.err")"
echo "zombie: transaction open with input offset $((z1_offset + 1)) of $in [1]"

SLUICE_INSTANCE_ID=$PFX-a sluice_start_http a "$conf"
readyz_watch a

# Wait until sluice is rebuilding partition 1: the runtime says it waits
# for the committed offset; a runtime that does not say so gets the
# "rebuilding" line and 5 s.
pending_re="REBUILD $PFX \\[1\\].*committed offset pending"
rebuilding_re="REBUILD $PFX \\[1\\]: rebuilding"
seen_at=
waiting() {
    sluice_alive a || fail "sluice exited during the rebuild: $(sluice_exit_status a)"
    log_has a "$pending_re" && return 0
    if [ -z "$seen_at" ] && log_has a "$rebuilding_re"; then seen_at=$(now_ms); fi
    [ -n "$seen_at" ] && [ "$(now_ms)" -ge $((seen_at + 5000)) ]
}
wait_until 40 waiting || fail "sluice did not start rebuilding partition 1 within 40 s"
if log_has a "$pending_re"; then
    note "sluice waits: $(grep -E "$pending_re" "$WORK/sluice-a.log" | head -1 | cut -d' ' -f2-)"
else
    problem "no REBUILD line saying 'committed offset pending' for [1] (went on 5 s after 'rebuilding')"
fi

# Partition 0 runs meanwhile.
echo "p0:p-p0" | produce "$in" -p 0 -K: -H "sluice-target=$out" -H "sluice-delay=500ms"
p0_fired() { consume_all "$out" -f '%k\n' | grep -qx p0; }
wait_until 20 p0_fired || problem "a timer on partition 0 did not fire while partition 1 waited for the zombie"

echo produce >&7
wait_until 30 zombie_said produced || fail "txnzombie did not produce within 30 s: $(cat "$WORK/zombie.err")"
t_commit=$(now_ms)
echo commit >&7
wait_until 30 zombie_said committed || fail "txnzombie did not commit within 30 s: $(cat "$WORK/zombie.err")"
rc=0
wait "$zombie" || rc=$?
[ "$rc" -eq 0 ] || fail "txnzombie exited with $rc: $(cat "$WORK/zombie.err")"
echo "zombie: committed z1's changelog record and the offsets"

# A timer produced now on partition 1 fires: the partition runs.
echo "after:p-after" | produce "$in" -p 1 -K: -H "sluice-target=$out" -H "sluice-delay=500ms"
fired() {
    local keys
    keys=$(consume_all "$out" -f '%k\n')
    grep -qx z1 <<<"$keys" && grep -qx after <<<"$keys"
}
if ! wait_until 30 fired; then
    problem "after the zombie's commit: fired [$(consume_all "$out" -f '%k\n' | sort | tr '\n' ' ')], want z1 and after within 30 s"
fi
z1_ts=$(consume_all "$out" -f '%k %T\n' | awk '$1 == "z1" { print $2; exit }')
[ -z "$z1_ts" ] || note "z1 fired $((z1_ts - t_commit)) ms after the zombie was told to commit"

sluice_alive a || fail "sluice exited: $(sluice_exit_status a)"
counts=$(consume_all "$out" -f '%k\n' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')
[ "$counts" = "after=1 p0=1 z1=1 " ] || problem "target holds [$counts], want after=1 p0=1 z1=1 (each once)"
payload=$(consume_all "$out" -f '%k %s\n' | awk '$1 == "z1" { print $2 }' | head -1)
[ -z "$payload" ] || [ "$payload" = p-z1 ] || problem "z1 fired with payload '$payload', want p-z1"
pending=$("$SLUICE_BIN" inspect -c "$conf" "$PFX" --limit 0 2>/dev/null | head -1)
case $pending in
*": 0 pending timers"*) ;;
*) problem "timers still pending: $pending" ;;
esac
wait_readyz a 200 20
note "readyz: $(awk '{ print $2 }' "$WORK/readyz-a.log" | uniq | tr '\n' ' ')"
problems_verdict
echo "PASS"
