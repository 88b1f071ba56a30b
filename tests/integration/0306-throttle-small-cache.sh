#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0306-throttle-small-cache — memory stays bounded however large the
# backlog (SPEC §4): with payload_cache = 1MiB, a backlog of 200,000
# messages (1,000 keys x 200, 100-byte payloads: ~20 MB of payloads plus
# overflow framing) drains correctly; payloads that do not fit are re-read
# from the overflow topic when their turn comes.  Prints the peak RSS and
# the cache figures.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

keys=1000
per_key=200
total=$((keys * per_key))

tl_setup 4 "default_rate=20/s burst=1" payload_cache=1MiB
sluice_up main "$conf"
echo "sluice ready on $in -> $out"
pid=${SLUICE_PIDS[main]}

python3 -c "
pad = 'p' * 88
for s in range($per_key):
    for k in range($keys):
        print(f'k{k:03d}:k{k:03d}-{s:03d}-{pad}')" | produce "$in" -K: || fail "kcat failed"
echo "produced $total messages"

m() { tl_metric "$1"; }
peak=0
peak_backlog=0
done_all() {
    local rss b f d
    rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "$rss" -gt "$peak" ] && peak=$rss
    b=$(m backlog_messages || true)
    [ "${b:-0}" -gt "$peak_backlog" ] && peak_backlog=$b
    f=$(m forwarded_total || true)
    d=$(m drained_total || true)
    [ $((${f:-0} + ${d:-0})) -ge "$total" ] && [ "${b:-1}" = 0 ]
}
wait_until 120 done_all || fail "not drained within 120 s: forwarded $(m forwarded_total), drained $(m drained_total), backlog $(m backlog_messages)"
sluice_alive main || fail "sluice exited"
# A commit's checkpoints are written once every overflow append's report
# has come (FLUSHING waits for those, and only those).
! log_has main "without a delivery report" ||
    fail "a commit's checkpoint was written before its overflow appends' reports"
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
note "peak backlog $peak_backlog messages; RSS peak sampled $((peak / 1024)) MB, VmHWM $((hwm / 1024)) MB"
note "cache hits $(m cache_hits_total), heads re-read $(m rereads_total), overflow records re-read $(m overflow_read_records_total)"
[ "$peak_backlog" -ge 150000 ] || fail "the backlog never got large ($peak_backlog)"
[ "$(m rereads_total)" -gt 0 ] || fail "nothing was re-read: the cache was not exercised"
# Bounded: the index (~30 B x 200k = 6 MB), the 1 MiB cache and
# librdkafka's buffers -- far below what holding every payload would cost
# on top (the input alone is ~25 MB of records).
[ "$hwm" -lt $((300 * 1024)) ] || fail "RSS peak $((hwm / 1024)) MB"

consume_all "$out" -f '%k %s\n' >"$WORK/out.txt"
python3 - "$WORK/out.txt" "$keys" "$per_key" <<'PY' || fail "output check failed"
import sys
from collections import Counter, defaultdict
keys, per_key = int(sys.argv[2]), int(sys.argv[3])
by_key = defaultdict(list)
n = 0
for line in open(sys.argv[1]):
    k, v = line.split()
    by_key[k].append(v[:8])
    n += 1
errors = []
allv = Counter(v for vs in by_key.values() for v in vs)
dups = sum(1 for c in allv.values() if c > 1)
want = {f"k{k:03d}-{s:03d}" for k in range(keys) for s in range(per_key)}
missing = len(want - set(allv))
disorder = [k for k, v in by_key.items() if v != sorted(v)]
print(f"# {n} records out: {dups} duplicated, {missing} missing, {len(disorder)} keys out of order")
if dups or missing or disorder or n != len(want):
    errors.append("output is not every message once in per-key order")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
