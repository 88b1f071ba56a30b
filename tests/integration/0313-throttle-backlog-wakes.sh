#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0313-throttle-backlog-wakes — a backlog is read without waiting for
# librdkafka's fetcher to wake by itself.
#
# librdkafka 2.0.2 stops fetching once queued.min.messages records wait in
# the consumer queue and looks again only when its broker thread wakes, up
# to a second later; a drained queue does not wake it.  sluice seeks its
# input partitions to the records they read next when it has emptied a
# queue that full, which does.  Here queued.min.messages is 1000, fetches
# bring one batch of 100 records per partition, and the input holds a
# backlog of 100,000 records (4 partitions), so reading it stops ~100 times:
# each stop cost up to a second before.
#
# The backlog must be forwarded within 8 s of /readyz (without the
# wake-ups: 23 s in one run here; with them 1.1-1.5 s), and exactly once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

N=100000
BOUND_S=8

tl_setup 4 default_rate=1000000/s
# Batches of 100 records, and one batch per partition and fetch: the
# fetcher stops every few fetches.
conf_set "$conf" kafka queued.min.messages=1000 max.partition.fetch.bytes=4096
seq 1 "$N" | sed 's/.*/k&:v&/' | produce "$in" -K: -X batch.num.messages=100 || fail "kcat failed"
echo "produced a backlog of $N records"

sluice_up main "$conf" 60
t0=$(date +%s%3N)
fwd() { tl_metric forwarded_total; }
_all() { [ "$(fwd)" = "$N" ]; }
wait_until 60 _all || fail "forwarded $(fwd) of $N within 60 s"
ms=$(($(date +%s%3N) - t0))
note "the backlog of $N forwarded ${ms} ms after /readyz (bound ${BOUND_S} s)"
[ "$ms" -lt $((BOUND_S * 1000)) ] || fail "the backlog took ${ms} ms (bound ${BOUND_S} s): the fetcher waited"
sluice_alive main || fail "sluice exited"

wait_records "$out" "$N" 30 || fail "only $(count_records "$out") of $N records visible"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/out.json" "$N" <<'PY' || fail "output is not the input exactly once"
import sys
from records import load
recs = load(sys.argv[1])
n = int(sys.argv[2])
keys = [r["key"] for r in recs]
dup = len(keys) - len(set(keys))
missing = n - len(set(keys))
print(f"# output: {len(keys)} records, {len(set(keys))} distinct, {dup} duplicated, {missing} missing")
sys.exit(1 if dup or missing else 0)
PY
echo "PASS"
