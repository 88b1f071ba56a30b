#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0411-fault-changelog-undecided — a rebuild must read a changelog to its
# end, not to its last stable offset.
#
# A transaction left undecided on a changelog partition holds the last
# stable offset before its first record: a read_committed reader (sluice's
# rebuild reader) stops there and reports the partition's end, although
# committed records follow it.  Seen on a three-node cluster with two
# nodes down (0703): committed transactions whose markers had not reached
# the changelog yet; the rebuild read to the stable offset, the timers it
# missed were lost and the tombstones it missed fired timers a second
# time.  Here the undecided transaction is a zombie's (tests/tools/
# txnzombie --no-offsets: one changelog record, no offsets, left open):
#
#   1. instance A owns the delay pipeline's only partition;
#   2. the zombie writes timer zz to the changelog and keeps its
#      transaction open (it times out after 12 s: the broker aborts it);
#   3. ten timers due in 25 s go through A: their changelog records
#      follow the zombie's, committed with their input offsets;
#   4. A is killed (-9); B (the same instance_id) rebuilds the partition.
#
# B's rebuild waits until the zombie's transaction is aborted, then reads
# the ten timers.  Checks: the ten fire once each, none before due; zz
# (aborted) never fires; B logged the wait.  Before the fix B resumed the
# input after the ten with an empty state: none fired.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

zombie_bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/txnzombie
[ -x "$zombie_bin" ] || fail "$zombie_bin is missing: make build/tools/txnzombie (make test and make integration build it)"

dl_setup 1
conf_set "$conf" kafka session.timeout.ms=6000 heartbeat.interval.ms=1000
SLUICE_INSTANCE_ID=$PFX-x sluice_up a "$conf" 60

mkfifo "$WORK/zombie.in"
exec 7<>"$WORK/zombie.in"
"$zombie_bin" -b "$BOOTSTRAP" -t "$PFX-zombie" -g "$PFX" --input "$in" \
    --partition 0 --offset 0 --changelog "$PFX.changelog" --no-offsets \
    --delay-timer "zz,$(($(now_ms) + 5000)),$out,p-zz" --txn-timeout-ms 12000 \
    <"$WORK/zombie.in" >"$WORK/zombie.out" 2>"$WORK/zombie.err" &
zombie=$!
t_zombie=$(now_ms)
_zombie_cleanup() { kill "$zombie" 2>/dev/null || true; }
CLEANUP_HOOKS+=(_zombie_cleanup)
zombie_said() { grep -qx "$1" "$WORK/zombie.out"; }
wait_until 60 zombie_said offsets-sent || fail "txnzombie did not start its transaction: $(cat "$WORK/zombie.err")"
echo go >&7
wait_until 30 zombie_said produced || fail "txnzombie did not write its changelog record: $(cat "$WORK/zombie.err")"
note "zombie: timer zz in the changelog, its transaction open (12 s timeout)"

pending() { sluice_metric a "sluice_timers_pending{pipeline=\"$PFX\"}"; }
commits() { sluice_metric a 'sluice_transactions_total{result="commit"}'; }
c0=$(commits)
due=$(($(now_ms) + 25000))
for i in $(seq -w 1 10); do echo "t$i:p-t$i"; done | produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$due"
# Idle but for them: the transaction that holds them is the next commit.
_committed() { [ "$(pending)" = 10 ] && [ "$(commits)" -gt "${c0:-0}" ]; }
wait_until 20 _committed || fail "A holds $(pending) timers and committed $(($(commits) - ${c0:-0})) times, want 10 and a commit"
sleep 1
sluice_kill a || true
note "A killed with 10 timers pending, $((($(now_ms) - t_zombie) / 1000)) s into the zombie's transaction"

SLUICE_INSTANCE_ID=$PFX-x sluice_start_http b "$conf"
wait_readyz b 200 90
note "B ready $((($(now_ms) - t_zombie) / 1000)) s after the zombie's transaction began"

wait_records "$out" 10 60 || fail "only $(count_records "$out") of the 10 timers fired within 60 s of B's start"
# Nothing pending any more: no further fire can come.
wait_until 30 dl_no_pending || fail "timers still pending after the 10 fired: $("$SLUICE_BIN" inspect -c "$conf" "$PFX" | head -3)"
consume_all "$out" -f '%k %T\n' >"$WORK/out.txt"
n=$(wc -l <"$WORK/out.txt")
[ "$n" = 10 ] || fail "$n records out, want 10: $(tr '\n' ' ' <"$WORK/out.txt")"
[ "$(cut -d' ' -f1 "$WORK/out.txt" | sort -u | wc -l)" = 10 ] || fail "a timer fired twice: $(tr '\n' ' ' <"$WORK/out.txt")"
! grep -q '^zz ' "$WORK/out.txt" || fail "the zombie's aborted timer zz fired"
awk -v d="$due" '$2 < d { bad = 1 } END { exit bad }' "$WORK/out.txt" || fail "a timer fired before due"
note "the 10 timers fired once each, none early; zz (aborted) never"
log_has b 'a transaction not yet decided holds offsets' ||
    fail "B did not log its wait for the zombie's transaction ('not yet decided')"
grep -m1 'not yet decided' "$WORK/sluice-b.log" | cut -c1-200 | sed 's/^/# b: /'
echo PASS
