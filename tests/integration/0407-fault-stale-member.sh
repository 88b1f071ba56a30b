#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0407-fault-stale-member — an instance's consumer vanishes between the two
# phases of a cooperative rebalance and the instance comes back, with the
# same instance_id, before its session times out (a CI failure: A's
# clients were being re-created after a fatal producer error; kill -9 at
# that moment does the same).
#
# A owned all 8 input partitions; B joined.  Phase 1 of the
# cooperative-sticky rebalance told A to keep 4 and give up 4, and gave B
# none (B gets them in phase 2, once A has revoked them and rejoined).  A's
# consumer was gone before it revoked anything.  A new consumer with A's
# group.instance.id joins a Stable group: the broker takes it for a static
# member's restart and hands it the stored phase-1 assignment without a
# rebalance.  A serves 4 partitions, B none, and the other 4 belong to
# nobody for as long as nothing else changes in the group, while both
# /readyz answer 200.
#
# A's first consumer is tests/tools/groupzombie with A's instance id: it
# incremental_assigns what it is given and, on its first revocation,
# _exit()s without unassigning, closing or leaving.  Then sluice B starts
# (the zombie's revocation is the precondition: checked, and the setup is
# tried again in a fresh group when it does not come); the moment the
# zombie is gone sluice A starts with its instance id.  Checks: within
# 60 s of A's start A and B own all 8 partitions between them (sluice
# looks at its group every 5 s and repairs a gap that lasted 15 s, see
# src/groupcheck.h), and 400
# timers (50 per input partition, due 1 s after they are produced) all
# fire exactly once (read_committed) within 60 s.  When the partitions
# stay unowned, the test names them (the broker's view, groupzombie
# --describe), and the timers that never fired by input partition.  Prints
# how long after A's start all partitions were owned and how long the
# timers took.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

zombie_bin=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}/groupzombie
[ -x "$zombie_bin" ] || fail "$zombie_bin is missing: make build/tools/groupzombie (make test and make integration build it)"
# A read_committed kcat -e waits for its end while a transaction is open.
: "${KCAT_READ_TIMEOUT:=15}"

parts=8
per_part=50
total=$((parts * per_part))

# write_conf APP_ID — the pipeline's config, in the group APP_ID; the
# topics are named after the pipeline, the same for every APP_ID.
write_conf() {
    base_conf "$conf"
    conf_set "$conf" sluice app_id="$1"
    conf_set "$conf" kafka session.timeout.ms=6000 heartbeat.interval.ms=1000
    dl_pipeline "$conf" "$PFX" "$in" "$parts"
}
write_conf "$PFX"
topic_create "$out" "$parts"
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null

zombie=
_zombie_cleanup() { [ -z "$zombie" ] || kill -9 "$zombie" 2>/dev/null || true; }
CLEANUP_HOOKS+=(_zombie_cleanup)
# zombie_said REGEX — the zombie printed a line matching REGEX.
zombie_said() { grep -qE "$1" "$WORK/zombie.out" 2>/dev/null; }
zombie_gone() { ! kill -0 "$zombie" 2>/dev/null; }

# setup APP_ID — the zombie takes every partition in group APP_ID as
# APP_ID-a, B joins as APP_ID-b, the zombie vanishes on its phase-1
# revocation, A starts at once as APP_ID-a.  Returns 1 (B and the
# zombie stopped) when the zombie got no revocation of the first phase.
setup() {
    local app=$1 rc=0
    write_conf "$app"
    group=$app
    : >"$WORK/zombie.out"
    "$zombie_bin" -b "$BOOTSTRAP" -g "$group" -i "$app-a" -t "$in" \
        --session-timeout-ms 6000 --heartbeat-interval-ms 1000 --max-seconds 120 \
        >"$WORK/zombie.out" 2>"$WORK/zombie.err" &
    zombie=$!
    _all_mine() {
        zombie_gone && fail "groupzombie exited before it owned $parts partitions: $(cat "$WORK/zombie.out" "$WORK/zombie.err")"
        zombie_said "^assigned $parts\$"
    }
    wait_until 60 _all_mine || fail "groupzombie did not own $parts partitions within 60 s: $(tail -3 "$WORK/zombie.out")"
    echo "zombie ($app-a) owns all $parts partitions of $in"

    t_b=$(now_ms)
    SLUICE_INSTANCE_ID=$app-b sluice_start_http B "$conf"
    # No revocation within 60 s: the precondition below fails.
    wait_until 60 zombie_gone || kill -9 "$zombie" 2>/dev/null || true
    t_gone=$(now_ms)
    # A's clients come back with A's instance id the moment the old
    # consumer vanished.
    if zombie_said '^revoke '; then
        SLUICE_INSTANCE_ID=$app-a sluice_start_http A "$conf"
        t_a=$(now_ms)
    fi
    wait "$zombie" 2>/dev/null || rc=$?
    zombie=
    if ! zombie_said '^revoke '; then
        note "precondition: the zombie got no phase-1 revocation (exit $rc: $(cat "$WORK/zombie.out" "$WORK/zombie.err" | tail -2 | tr '\n' ' '))"
        sluice_kill B || true
        return 1
    fi
    note "phase 1: zombie told to give up $(grep -m1 '^revoke ' "$WORK/zombie.out" | cut -d' ' -f2) of $parts partitions $((t_gone - t_b)) ms after B's start; A started $((t_a - t_gone)) ms after the zombie vanished"
}

ok=
for try in 1 2 3; do
    if setup "$PFX$([ "$try" -eq 1 ] || echo "-r$try")"; then
        ok=1
        break
    fi
done
[ -n "$ok" ] || fail "precondition: in 3 tries the zombie never got a phase-1 revocation"

# owned NAME — the partitions the instance holds, in any state.
owned() {
    local s n=0 v
    for s in waiting rebuilding running; do
        v=$(sluice_metric "$1" "sluice_partitions{pipeline=\"$PFX\",state=\"$s\"}")
        n=$((n + ${v:-0}))
    done
    echo "$n"
}
alive() {
    sluice_alive A || fail "A exited: $(sluice_exit_status A)"
    sluice_alive B || fail "B exited: $(sluice_exit_status B)"
}

owned_at=
_all_owned() {
    alive
    [ $(($(owned A) + $(owned B))) -eq "$parts" ] || return 1
    owned_at=$(now_ms)
}
wait_until 60 _all_owned || true
if [ -n "$owned_at" ]; then
    note "all $parts partitions owned (A $(owned A), B $(owned B)) $((owned_at - t_a)) ms after A's start; group rejoins: A $(sluice_metric A sluice_group_rejoins_total), B $(sluice_metric B sluice_group_rejoins_total)"
else
    problem "A and B own $(($(owned A) + $(owned B))) of $parts partitions 60 s after A's start (A $(owned A), B $(owned B); /readyz A $(readyz A), B $(readyz B))"
    # The broker's view: who owns what; the partitions nobody owns.
    if "$zombie_bin" -b "$BOOTSTRAP" -g "$group" --describe --max-seconds 15 >"$WORK/group.txt" 2>&1; then
        sed 's/^/  broker: /' "$WORK/group.txt"
        unowned=$(comm -23 <(seq 0 $((parts - 1)) | sort) \
            <(awk '$1 == "member" { for (i = 4; i <= NF; i++) { sub(/^[^:]*:/, "", $i); print $i } }' "$WORK/group.txt" |
                tr ',' '\n' | grep -E '^[0-9]+$' | sort -u) | sort -n | tr '\n' ' ')
        problem "input partitions owned by no member of group $group (broker's view): ${unowned:-none}"
    else
        note "groupzombie --describe failed: $(cat "$WORK/group.txt")"
    fi
fi

wait_readyz A 200 60
wait_readyz B 200 60
echo "A and B answer /readyz 200"

t_prod=$(now_ms)
for p in $(seq 0 $((parts - 1))); do
    seq 0 $((per_part - 1)) | sed "s/.*/p$p-&:payload-p$p-&/" |
        produce "$in" -p "$p" -K: -H "sluice-target=$out" -H sluice-delay=1s ||
        fail "kcat failed to produce to $in [$p]"
done
echo "produced $total timers ($per_part on each of the $parts partitions), due in 1 s"

fired_at=
_all_fired() {
    alive
    [ "$(consume_all "$out" -f '%k\n' | sort -u | wc -l)" -ge "$total" ] || return 1
    [ -n "$fired_at" ] || fired_at=$(now_ms)
    # Nothing left pending: no duplicate can still come.
    timeout 20 "$SLUICE_BIN" inspect -c "$conf" "$PFX" --limit 0 2>/dev/null | grep -q ': 0 pending timers'
}
wait_until 60 _all_fired || true
for n in A B; do
    grep -E 'REBALANCE' "$WORK/sluice-$n.log" | cut -c1-160 | sed "s/^/  $n: /"
done

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$parts" "$per_part" <<'PY' >"$WORK/fired.txt" 2>&1 || problem "$(sed -n 's/^ERROR: //p' "$WORK/fired.txt" | tr '\n' ' ')"
import json, sys
from collections import Counter
out = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
parts, per = int(sys.argv[2]), int(sys.argv[3])
want = {f"p{p}-{i}" for p in range(parts) for i in range(per)}
ids = Counter(r["key"] for r in out)
dups = sorted(k for k, n in ids.items() if n > 1)
missing = want - set(ids)
bad = [r["key"] for r in out if r["key"] in want and r["payload"] != "payload-" + r["key"]]
print(f"# target holds {len(out)} records: {len(set(ids) & want)} distinct of {len(want)}, "
      f"{len(dups)} duplicated, {len(missing)} never fired")
errors = []
if dups: errors.append(f"{len(dups)} timers fired more than once, e.g. {dups[:5]}")
if missing:
    by_part = sorted({int(k[1:].split("-")[0]) for k in missing})
    errors.append(f"{len(missing)} timers never fired, from input partitions {by_part}")
if bad: errors.append(f"{len(bad)} timers with a wrong payload, e.g. {bad[:5]}")
for e in errors:
    print("ERROR:", e)
sys.exit(1 if errors else 0)
PY
grep '^# ' "$WORK/fired.txt" || true
if [ -n "$fired_at" ]; then
    note "all $total timers fired $((fired_at - t_prod)) ms after they were produced"
fi
problems_verdict
echo "PASS"
