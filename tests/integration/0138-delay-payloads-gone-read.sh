#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0138-delay-payloads-gone-read — payloads kept in Kafka (payload_topic)
# whose records are deleted while sluice runs, after they left memory and
# before they are read back: the read, not a rebuild, finds them gone.
# Each such timer goes to the DLQ once, at its due time, as
# payload-missing; a kill -9 and the rebuild after it do not send any of
# them again (SPEC §4: nothing duplicated), and the changelog keeps no
# index record of them.  (0132 covers records deleted before a rebuild.)
#
# 2 input partitions: h-0..19 produced first, k-0..19 after them, all due
# +14 s, 2 KB payloads; SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500 (payloads
# leave memory once indexed, are read back 1.5 s before due).  Once every
# payload left memory, the payload topic's records below the first k record
# of each partition are deleted (every h record, no k one).  The verdict
# (read_committed): k-0..19 fire once each, none early; the DLQ holds one
# payload-missing record per h timer, none before its due time, nothing
# else; after kill -9 and a restart: the same, nothing pending.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=1500
dl_setup 2 payload_topic="$PFX.payloads"
start() { SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"; }
tools=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}
[ -x "$tools/delrecords" ] || fail "$tools/delrecords is missing: make build/tools/delrecords"
start
wait_readyz main 200 30
# The broker refuses DeleteRecords on a topic that is only compacted: the
# policy allows deletes from before the timers (a JVM tool, slow on a busy
# machine, kept out of the 14 s before they are due) until they are done.
dl_payload_policy '[compact,delete]'

pad=$(head -c 2000 /dev/zero | tr '\0' x)
t0=$(now_ms)
due=$((t0 + 14000))
for i in $(seq 0 19); do echo "h-$i:p-h-$i-$pad"; done |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$due"
for i in $(seq 0 19); do echo "k-$i:p-k-$i-$pad"; done |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$due"
indexed() {
    [ "$(dl_metric sluice_timers_pending)" = 40 ] || return 1
    local mem
    mem=$(dl_metric sluice_timers_memory_bytes)
    [ "${mem%.*}" -lt $((40 * 2000 / 4)) ]
}
wait_until 10 indexed || fail "payloads still in memory: $(dl_metric sluice_timers_pending) pending in $(dl_metric sluice_timers_memory_bytes) bytes"

wait_records "$PFX.payloads" 40 10 || fail "the payload topic holds $(count_records "$PFX.payloads") committed records, not 40"
consume_all "$PFX.payloads" -f '%p %o %k\n' >"$WORK/payloads.txt"
for p in 0 1; do
    first_k=$(awk -v p=$p '$1 == p && $3 ~ /^k-/ { print $2; exit }' "$WORK/payloads.txt")
    [ -n "$first_k" ] || fail "partition $p of the payload topic holds no k record"
    "$tools/delrecords" -b "$BOOTSTRAP" -t "$PFX.payloads" -p $p -o "$first_k" >"$WORK/delrecords.log" 2>&1 ||
        fail "DeleteRecords below $first_k on partition $p failed: $(cat "$WORK/delrecords.log")"
done
[ "$(now_ms)" -lt $((due - 1500)) ] || fail "the deletes ended after the read-back began (+$(($(now_ms) - t0)) ms)"
note "the 20 h payload records deleted at +$(($(now_ms) - t0)) ms, due at +14000 ms"
[ "$(grep -c ' h-' "$WORK/payloads.txt")" = 20 ] || fail "not 20 h records in the payload topic"
dl_payload_policy compact

all_out() { [ "$(count_records "$out")" -ge 20 ] && [ "$(count_records "$PFX.dlq")" -ge 20 ]; }
wait_until 40 all_out || fail "not all out: $(count_records "$out") fired of 20, $(count_records "$PFX.dlq") in the DLQ of 20"
sleep 1 # a duplicate would come now

check() { # WHEN — what the output and the DLQ hold
    consume_json "$out" >"$WORK/out.json"
    consume_json "$PFX.dlq" >"$WORK/dlq.json"
    python3 - "$WORK" "$due" "$PFX.payloads" "$1" <<'PY'
import sys
from collections import Counter
from records import load, hdrs, payload_missing

work, due, ptopic, when = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
out, dlq = load(work + "/out.json"), load(work + "/dlq.json")
errors = []
seen = Counter(r["key"] for r in out)
errors += [f"{k} fired {c} times" for k, c in seen.items() if c != 1]
errors += [f"{k} fired though its payload was deleted" for k in seen if k.startswith("h-")]
errors += [f"k-{i} never fired" for i in range(20) if not seen[f"k-{i}"]]
errors += [f"{r['key']} fired early" for r in out if r["ts"] < due]
where, dl, e = payload_missing(dlq, ptopic, work + "/payloads.txt", "h-", due)
errors += e
print(f"# {when}: {len(out)} fired, {len(dlq)} DLQ records ({len(dl)} deleted h timers); {len(errors)} errors")
for e in errors[:20]:
    print("  " + e)
sys.exit(1 if errors else 0)
PY
}
check "first run" || fail "output check failed"
[ "$(dl_metric sluice_timers_pending)" = 0 ] || fail "$(dl_metric sluice_timers_pending) timers still pending after all fired or went to the DLQ"

# kill -9 and a rebuild: the index records of the h timers must not bring
# them back.
sluice_kill main KILL || true
start
wait_readyz main 200 30
gone() { [ "$(dl_metric sluice_timers_pending)" = 0 ] && dl_no_pending; }
wait_until 10 gone || problem "after kill -9 and a rebuild: $(dl_metric sluice_timers_pending) pending; inspect: $("$SLUICE_BIN" inspect -c "$conf" "$PFX" | head -3 | tr -s ' ' | tr '\n' ' ')"
sleep 2 # a duplicate would come now
check "after kill -9 and a rebuild" || problem "output check after kill -9 and a rebuild failed"
problems_verdict
echo "PASS"
