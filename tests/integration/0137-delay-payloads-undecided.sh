#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0137-delay-payloads-undecided — payloads kept in Kafka (payload_topic,
# issue 49) behind a transaction not yet decided on the payload topic: the
# timers wait for it, none is reported missing.
#
# A read_committed read stops at the last stable offset, before the first
# record of a transaction still open: another producer's (here a zombie's,
# tests/tools/txnzombie --no-offsets: one record on the payload partition,
# left open), or one of sluice's own that committed but whose markers are
# not written yet (seen under stress-ng in 0131: two timers went to the
# DLQ as payload-missing).  Records committed after it are in the log all
# the same.  Before the fix the read's end there marked them missing at
# run time, and a rebuild that began while it was open dropped their
# index records.
#
#   1. 5 timers s-N due at +12 s, committed; then zombie Z1 opens a
#      transaction on the payload partition;
#   2. 20 timers t-NN due at +12 s (their payloads after Z1's record, then
#      out of memory: look-ahead 1.5 s), then 3 rounds of one w-N timer due
#      at +13 s, each committed (sluice then knows t's payloads are
#      committed);
#   3. at +10.5 s the payloads of s and t are wanted: the read begins at
#      s's, stops at Z1's record, and sluice logs the wait; no t timer
#      fires by +14 s (their payloads cannot be read yet); Z1 is aborted;
#   4. zombie Z2 opens a transaction the same way; 20 timers v-NN due
#      20 s later are indexed and committed; kill -9, restart: the rebuild
#      waits for Z2 (not ready while it is open), which is then aborted.
# The verdict (read_committed): every s, t, w and v id fires once with its
# payload, none before its due time; the DLQ is empty; no log says a
# payload record is missing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

zombie_bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/txnzombie
[ -x "$zombie_bin" ] || fail "$zombie_bin is missing: make build/tools/txnzombie (make test and make integration build it)"

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
dl_setup 1 payload_topic="$PFX.payloads"
# (sluice must not hold the zombies' stdin open: fds 8 and 9 closed)
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf" 8>&- 9>&-; }
start
wait_readyz main 200 30

zombies=()
_zombie_cleanup() { for z in "${zombies[@]}"; do kill "$z" 2>/dev/null || true; done; }
CLEANUP_HOOKS+=(_zombie_cleanup)
# zombie_open N — txnzombie N writes one record to the payload partition
# and keeps its transaction open until its stdin (fd 7+N) closes: then it
# aborts.
zombie_open() {
    local n=$1 fd=$((7 + $1))
    echo "zombie payload $n" >"$WORK/zombie$n.val"
    mkfifo "$WORK/zombie$n.in"
    eval "exec $fd<>\"\$WORK/zombie$n.in\""
    (
        eval "exec $fd>&-" # its stdin's only writer is this shell's fd
        exec "$zombie_bin" -b "$BOOTSTRAP" -t "$PFX-zombie$n" -g "$PFX" --input "$in" \
            --partition 0 --offset 0 --changelog "$PFX.payloads" --no-offsets \
            --key "zombie$n" --value-file "$WORK/zombie$n.val" --txn-timeout-ms 120000
    ) <"$WORK/zombie$n.in" >"$WORK/zombie$n.out" 2>"$WORK/zombie$n.err" &
    zombies+=($!)
    echo go >&"$fd"
    _produced() { grep -qx produced "$WORK/zombie$n.out"; }
    wait_until 60 _produced || fail "txnzombie $n did not write its record: $(cat "$WORK/zombie$n.err")"
}
# zombie_abort N — closes its stdin; it aborts and exits non-zero.
zombie_abort() {
    eval "exec $((7 + $1))>&-"
    _gone() { ! kill -0 "${zombies[$(($1 - 1))]}" 2>/dev/null; }
    wait_until 30 _gone "$1" || fail "txnzombie $1 did not abort"
}

commits() { sluice_metric main 'sluice_transactions_total{result="commit"}'; }
# sched PREFIX FROM TO DUE — timers PREFIX-FROM..TO, payload p-ID.PAD
# (PAD: 1,000 x, so that a payload in memory shows in the gauge).
pad=$(printf 'x%.0s' $(seq 1000))
sched() {
    for i in $(seq -w "$2" "$3"); do echo "$1-$i:p-$1-$i.$pad"; done |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$4"
}
# committed_after C — waits for a commit after count C.
committed_after() {
    _more() { [ "$(commits)" -gt "${1:-0}" ]; }
    wait_until 20 _more "$1" || fail "no commit after $1"
}
# nudge — a cancel of an id never scheduled: a transaction, which writes
# the index records owed for the payloads delivered before it.
nudge() { echo "nudge-$RANDOM:" | produce "$in" -K: -Z; }
# indexed N — N timers pending, their payloads out of memory (under one
# payload's bytes in memory; nudged every second meanwhile).
polls=0
indexed() {
    polls=$((polls + 1))
    [ $((polls % 10)) != 1 ] || nudge
    [ "$(dl_metric sluice_timers_pending)" = "$1" ] || return 1
    local b
    b=$(dl_metric sluice_timers_pending_bytes)
    [ "${b%.*}" -lt 1000 ]
}

# --- 1-3: the read at run time ---------------------------------------------
t0=$(now_ms)
t_due=$((t0 + 12000))
c=$(commits)
sched s 1 5 "$t_due"
wait_until 20 indexed 5 || fail "s not indexed: $(dl_metric sluice_timers_pending) pending with $(dl_metric sluice_timers_pending_bytes) payload bytes in memory"
committed_after "$c"
zombie_open 1
sched t 1 20 "$t_due"
wait_until 20 indexed 25 || fail "t not indexed: $(dl_metric sluice_timers_pending) pending with $(dl_metric sluice_timers_pending_bytes) payload bytes in memory"
w_due=$((t0 + 13000))
for r in 1 2 3; do
    c=$(commits)
    sched w "$r" "$r" "$w_due"
    committed_after "$c"
done
[ "$(now_ms)" -lt $((t0 + 10000)) ] || fail "setup ran past +10 s (+$(($(now_ms) - t0)) ms): the payloads were wanted before it ended"
note "5 s timers before Z1's open transaction, 20 t and 3 w after it, by +$(($(now_ms) - t0)) ms"
_waits() { log_has main 'on wait for a transaction not yet decided'; }
wait_until 20 _waits || fail "sluice did not log a wait for Z1's transaction"
grep -m1 'on wait for a transaction not yet decided' "$WORK/sluice-main.log" | cut -c1-220 | sed 's/^/# /'
while [ "$(now_ms)" -lt $((t0 + 14000)) ]; do sleep 0.1; done
[ "$(consume_all "$out" -f '%k\n' | grep -c '^t-')" = 0 ] || fail "a t timer fired while its payload was unreadable"
zombie_abort 1
note "Z1 aborted at +$(($(now_ms) - t0)) ms"
dl_wait_fired main 28 30

# --- 4: the rebuild ---------------------------------------------------------
zombie_open 2
v_due=$(($(now_ms) + 20000))
sched v 1 20 "$v_due"
wait_until 20 indexed 20 || fail "v not indexed: $(dl_metric sluice_timers_pending) pending with $(dl_metric sluice_timers_pending_bytes) payload bytes in memory"
c=$(commits)
nudge
committed_after "$c"
sluice_kill main KILL || true
note "killed with 20 v timers pending behind Z2's open transaction"
start
_rebuilding() { [ "$(grep -c 'rebuilding from' "$WORK/sluice-main.log")" -ge 2 ]; }
wait_until 30 _rebuilding || fail "no rebuild began"
sleep 2
[ "$(readyz main)" != 200 ] || fail "ready while Z2's transaction holds the payload topic's read"
zombie_abort 2
wait_readyz main 200 60
[ "$(dl_metric sluice_timers_pending)" = 20 ] || fail "$(dl_metric sluice_timers_pending) pending after the rebuild, want 20"
dl_wait_fired main 48 60

# --- verdict ----------------------------------------------------------------
consume_all "$out" -f '%k %T %s\n' >"$WORK/out.txt"
n=$(wc -l <"$WORK/out.txt")
[ "$n" = 48 ] || fail "$n records out, want 48"
[ "$(cut -d' ' -f1 "$WORK/out.txt" | sort -u | wc -l)" = 48 ] || fail "a timer fired twice"
awk -v pad="$pad" '$3 != "p-" $1 "." pad { print "bad payload: " substr($0, 1, 80); bad = 1 } END { exit bad }' "$WORK/out.txt" || fail "a payload differs"
awk -v t="$t_due" -v w="$w_due" -v v="$v_due" '
    { d = substr($1, 1, 1) ~ /[st]/ ? t : substr($1, 1, 1) == "w" ? w : v
      if ($2 < d) { print "early: " $0; bad = 1 } }
    END { exit bad }' "$WORK/out.txt" || fail "a timer fired before due"
dl_none_missing
note "48 timers fired once each with their payloads, none early; DLQ empty"
echo PASS
