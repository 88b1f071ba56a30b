#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0033-ops-rolling-restart — what a rolling restart of the StatefulSet costs
# (docs/deployment.md): two static members (instance ids as pod names, as
# ops/base/statefulset.yaml sets them) share a 4-partition delay pipeline
# holding 20,000 pending timers.  Each member in turn is stopped with
# SIGTERM and started again with the same instance id, as a rolling update
# does (the next one only once the previous is ready again).
#
# Checked: each restarted member exits 0 on SIGTERM, gets back the
# partitions it had, rebuilds them from the changelog, and is ready again;
# the other member sees no rebalance at all (the group keeps a static
# member's assignment while it is away for less than session.timeout.ms);
# no timer is lost (the pending count comes back to 20,000).
# Reported: the shutdown time, start to /readyz, the records rebuilt.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
conf=$WORK/sluice.ini
N=20000

base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = delay
input = $in
input_partitions = 4
default_target = $PFX.out
EOF
"$SLUICE_BIN" topics create -c "$conf" "$PFX.out" --partitions 4 >/dev/null
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null

start() { SLUICE_INSTANCE_ID=sluice-$1 sluice_start_http "$1" "$conf"; }
# sluice-0 first, alone (all 4 partitions), then sluice-1, which gets and
# rebuilds 2 of them: what each owns is known from sluice-1's log.
start 0
wait_readyz 0 200 30
start 1
wait_readyz 1 200 30

parts() { sluice_metric "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"running\"}"; }
split() { [ "$(parts 0)" = 2 ] && [ "$(parts 1)" = 2 ]; }
wait_until 40 split || fail "the 4 partitions were not split 2/2 within 40 s (0: $(parts 0), 1: $(parts 1))"

seq 1 "$N" | sed 's/.*/t&:payload-&/' | produce "$in" -K: -H sluice-delay=1h
pending() {
    local a b
    a=$(sluice_metric 0 "sluice_timers_pending{pipeline=\"$PFX\"}")
    b=$(sluice_metric 1 "sluice_timers_pending{pipeline=\"$PFX\"}")
    echo $((${a:-0} + ${b:-0}))
}
all_pending() { [ "$(pending)" = "$N" ]; }
wait_until 30 all_pending || fail "pending timers: $(pending), expected $N"
declare -A mine=()
owned() { grep -oE "REBUILD $PFX \[[0-9]+\]: rebuilt" "$WORK/sluice-$1.log" | grep -oE '[0-9]+\]' | tr -d ']' | sort -n | uniq | tr '\n' ' '; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

mine[1]=$(owned 1)
mine[0]=$(for p in 0 1 2 3; do case " ${mine[1]}" in *" $p "*) ;; *) printf '%s ' "$p" ;; esac; done)
note "$N timers pending, due in 1 h; sluice-0 owns partitions ${mine[0]}, sluice-1 ${mine[1]}"

for n in 1 0; do
    other=$((1 - n))
    before=${mine[$n]}
    reb_other=$(sluice_metric "$other" sluice_rebalances_total)
    lines=$(wc -l <"$WORK/sluice-$n.log")
    t0=$(now_ms)
    rc=0
    sluice_kill "$n" TERM || rc=$?
    t1=$(now_ms)
    [ "$rc" -eq 0 ] || fail "sluice-$n exited with status $rc on SIGTERM"
    start "$n"
    wait_readyz "$n" 200 60
    t2=$(now_ms)
    back() { [ "$(parts "$n")" = 2 ]; }
    wait_until 20 back || fail "sluice-$n runs $(parts "$n") partitions after its restart, expected 2"
    wait_until 20 all_pending || fail "pending timers after restarting sluice-$n: $(pending), expected $N"
    after=$(tail -n +"$((lines + 1))" "$WORK/sluice-$n.log" | grep -oE "REBUILD $PFX \[[0-9]+\]: rebuilt" |
        grep -oE '[0-9]+\]' | tr -d ']' | sort -n | uniq | tr '\n' ' ')
    [ "$after" = "$before" ] || fail "sluice-$n rebuilt partitions '$after' after its restart, had '$before'"
    records=$(tail -n +"$((lines + 1))" "$WORK/sluice-$n.log" | grep -oE "REBUILD $PFX \[[0-9]+\]: rebuilt from [0-9]+" |
        awk '{ s += $NF } END { print s + 0 }')
    reb_after=$(sluice_metric "$other" sluice_rebalances_total)
    # Static membership: the group keeps the restarted member's assignment;
    # the other member is not disturbed at all.
    [ "$reb_after" = "$reb_other" ] ||
        fail "sluice-$other saw $((reb_after - reb_other)) rebalance callbacks while sluice-$n restarted"
    note "sluice-$n: shutdown $((t1 - t0)) ms, start to /readyz $((t2 - t1)) ms (rebuilt partitions $after from $records changelog records); sluice-$other saw $((reb_after - reb_other)) rebalance callbacks meanwhile"
done
echo PASS
