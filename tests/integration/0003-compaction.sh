#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0003-compaction — the harness shows log compaction at work, which every
# changelog relies on: after a key is written many times, a full read
# returns one record per key holding its latest value; a tombstone first
# replaces its key's records, then disappears itself once delete.retention.ms
# has passed.  The test broker's cleaner runs every 500 ms; the topic rolls a
# segment every 100 ms (the active segment is never cleaned, so a small
# "tick" record is produced on every poll to roll it).
source "$(dirname "$0")/lib.sh"

# topic_create's config ($WORK/admin.ini): only [kafka] matters to `topics
# create`, but the config loader insists on a pipeline, so give it one.
base_conf "$WORK/admin.ini"
printf '\n[pipeline admin]\ntype = delay\ninput = %s.unused\n' "$PFX" >>"$WORK/admin.ini"

topic=$PFX.compacted
TAB=$'\t'
tombstone_ms=3000
topic_create "$topic" 1 cleanup.policy=compact segment.ms=100 \
    min.cleanable.dirty.ratio=0.01 min.compaction.lag.ms=0 \
    delete.retention.ms=$tombstone_ms
echo "created $topic"

# 10 keys x 30 versions, interleaved; then key "gone" twice and a tombstone.
for v in $(seq 1 30); do
    for k in $(seq 0 9); do echo "k$k:v$v"; done
done | produce "$topic" -K:
printf 'gone:g1\ngone:g2\n' | produce "$topic" -K:
printf 'gone:\n' | produce "$topic" -K: -Z
# What went in, by the partition's end offset: compaction never lowers it,
# and the cleaner may already be at work (a segment rolls every 100 ms), so
# a full read here would race it.
total=$(kcat -b "$BOOTSTRAP" -Q -t "$topic:0:-1" | sed -n 's/.* offset \([0-9]*\)$/\1/p')
echo "produced $total records"
[ "$total" = 303 ] || fail "expected the end offset 303 after producing 303 records, got '$total'"

# snapshot — a full read as "key<TAB>length<TAB>value" (length -1 = NULL),
# without the tick records that roll the segment.
snapshot() {
    consume_all "$topic" -f '%k\t%S\t%s\n' | grep -v '^tick' || true
}

tick() { echo "tick:$(date +%s%N)" | produce "$topic" -K:; }

# compacted — every k key once with v30, "gone" once as a tombstone.
compacted() {
    tick
    local snap
    snap=$(snapshot)
    [ "$(printf '%s\n' "$snap" | grep -c '^k')" -eq 10 ] || return 1
    for k in $(seq 0 9); do
        printf '%s\n' "$snap" | grep -qx "k$k${TAB}3${TAB}v30" || return 1
    done
    [ "$(printf '%s\n' "$snap" | grep '^gone' | tr '\n' '|')" = "gone${TAB}-1${TAB}|" ]
}

# purged — the tombstone is gone too; the k keys are unchanged.
purged() {
    tick
    local snap
    snap=$(snapshot)
    [ "$(printf '%s\n' "$snap" | grep -c '^k')" -eq 10 ] || return 1
    for k in $(seq 0 9); do
        printf '%s\n' "$snap" | grep -qx "k$k${TAB}3${TAB}v30" || return 1
    done
    ! printf '%s\n' "$snap" | grep -q '^gone'
}

t0=$(date +%s%N)
wait_until 60 compacted || {
    snapshot | sort | uniq -c | head -20 >&2
    fail "no compaction within 60 s: a full read still has old versions"
}
t1=$(date +%s%N)
echo "compacted: one record per key with its latest value; the tombstone stands"
note "compaction visible after $(((t1 - t0) / 1000000)) ms"

wait_until 60 purged || {
    snapshot | grep '^gone' >&2 || true
    fail "the tombstone was not purged within 60 s (delete.retention.ms=$tombstone_ms)"
}
t2=$(date +%s%N)
ms=$(((t2 - t1) / 1000000))
echo "purged: the tombstone is gone after delete.retention.ms"
note "tombstone purged $ms ms after compaction (delete.retention.ms=$tombstone_ms)"
echo "PASS"
