#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0604-records-gone — a record an input partition waits on (here at a cap:
# max_pending_timers = 1) disappears from the input while it waits; when the
# cap opens the partition goes on with the records after it, and says so.
# (It waited for that record to come back, dropped every later record, and
# stalled with no log line.)
#
#   deleted    pipeline .x: timer a (due in 6 s) fills the cap, timer b
#              (due 1 s) waits; the records below b's successor are
#              deleted (DeleteRecords, as retention or an operator does);
#              timer c follows.  When a fires, the input resumes at c
#              (b's offset is below the log start now): a and c fire, b
#              never does (it is gone), and the log names b's offset.
#   compacted  pipeline .y on a compacted input (upserts: the same id
#              again replaces a timer): a fills the cap, b waits, then
#              b is produced again (due 1 s) and the old b compacted away
#              while it waits.  When a fires, the input goes on at the new
#              b: a and b fire, b once.
# Then a later timer on each fires too.
source "$(dirname "$0")/lib.sh"

conf=$WORK/sluice.ini
base_conf "$conf"
for p in x y; do
    pipeline_section "$conf" "$PFX-$p" delay input="$PFX.$p.in" input_partitions=1 \
        allowed_targets="$PFX.out" max_pending_timers=1
done
topic_create "$PFX.out" 1
topic_create "$PFX.x.in" 1
topic_create "$PFX.y.in" 1 cleanup.policy=compact segment.ms=100 min.cleanable.dirty.ratio=0.01
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready"
tools=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}
[ -x "$tools/delrecords" ] || fail "$tools/delrecords is missing: make build/tools/delrecords"

timer() { # INPUT ID DELAY VALUE
    echo "$2:$4" | produce "$1" -K: -H "sluice-target=$PFX.out" -H "sluice-delay=$3"
}
fired() { consume_all "$PFX.out" -f '%k %s\n'; }
paused() { [ "$(sluice_metric main "sluice_input_paused{pipeline=\"$PFX-$1\",cap=\"max_pending_timers\"}")" = 1 ]; }

# deleted
timer "$PFX.x.in" xa 6s a
timer "$PFX.x.in" xb 1s b
_px() { paused x; }
wait_until 20 _px || fail ".x: the input did not pause at the cap"
b_off=$(consume_all "$PFX.x.in" -f '%k %o\n' | awk '$1 == "xb" { print $2 }')
"$tools/delrecords" -b "$BOOTSTRAP" -t "$PFX.x.in" -p 0 -o $((b_off + 1)) || fail "DeleteRecords failed"
timer "$PFX.x.in" xc 1s c
echo ".x: b (offset $b_off) deleted while it waited at the cap"

# compacted
timer "$PFX.y.in" ya 6s a
timer "$PFX.y.in" yb 1s b-old
_py() { paused y; }
wait_until 20 _py || fail ".y: the input did not pause at the cap"
old_off=$(consume_all "$PFX.y.in" -f '%k %o\n' | awk '$1 == "yb" { print $2 }')
sleep 0.3 # segment.ms: each of these records starts a segment of its own
timer "$PFX.y.in" yb 1s b-new
sleep 0.3
echo "z:" | produce "$PFX.y.in" -K: -Z # a cancel of no timer: rolls the segment
_compacted() { ! consume_all "$PFX.y.in" -f '%o\n' | grep -qx "$old_off"; }
wait_until 30 _compacted || fail ".y: the old b (offset $old_off) was not compacted away within 30 s"
echo ".y: the old b (offset $old_off) compacted away while it waited at the cap"

_all() { [ "$(fired | grep -c .)" -ge 4 ]; }
wait_until 30 _all || fail "the timers did not fire: $(fired | tr '\n' ' ')"
log_has main "$PFX-x \\[0\\]: the record at offset $b_off that waited is gone" ||
    fail ".x: no log line names the record that is gone: $(grep INPUT "$WORK/sluice-main.log")"
timer "$PFX.x.in" xd 200ms d
timer "$PFX.y.in" yd 200ms d
_later() { [ "$(fired | grep -c .)" -ge 6 ]; }
wait_until 30 _later || fail "the later timers did not fire: $(fired | tr '\n' ' ')"
sluice_alive main || fail "sluice exited"
got=$(fired | sort | tr '\n' ' ')
[ "$got" = "xa a xc c xd d ya a yb b-new yd d " ] || fail "fired: $got"
note "$(grep -o 'INPUT .*' "$WORK/sluice-main.log" | head -2 | tr '\n' ';')"
