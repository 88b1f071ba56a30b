#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0109-delay-producer-turns — the transactional producers take turns
# (transaction_producers, src/txn.h).  Twice, with 2 producers (the
# default) and with 1, an instance fires 2,000 timers due over ~2 s, so
# that commits follow each other while timers keep firing; a read_committed
# reader then sees each timer exactly once, none before its due time.  With
# 2 the broker knows both transactional ids, <app_id>-<instance_id> and the
# same with "#2", each with a committed transaction, and no commit waited
# for the markers of the one before (sluice_txn_markers_seconds is never
# observed); with 1 it knows only the first.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

groups=20
per_group=100
total=$((groups * per_group))

# run_mode PRODUCERS — one instance, its own app_id and topics.
run_mode() {
    local n=$1 app=$PFX-p$1 conf=$WORK/sluice-p$1.ini t0 pids=() p
    local in=$app.in out=$app.out
    base_conf "$conf"
    conf_set "$conf" sluice app_id="$app" instance_id=i0 transaction_producers="$n"
    dl_pipeline "$conf" "$app" "$in" 4
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
    topic_create "$out" 4
    sluice_up "p$n" "$conf"
    echo "sluice (transaction_producers = $n) ready on $in -> $out"

    t0=$(date +%s%N)
    for g in $(seq 0 $((groups - 1))); do
        ms=$((1500 + g * 100))
        for i in $(seq 0 $((per_group - 1))); do echo "t$g-$i:p-t$g-$i"; done |
            produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=${ms}ms" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail "kcat failed to produce"; done
    echo "produced $total timers in $((($(date +%s%N) - t0) / 1000000)) ms"

    wait_records "$out" "$total" 60 ||
        fail "only $(count_records "$out") of $total timers fired within 60 s"
    wait_until 30 dl_no_pending "$app" || fail "timers still pending after all fired"
    sluice_alive "p$n" || fail "sluice (transaction_producers = $n) exited"

    consume_json "$in" >"$WORK/in-$n.json"
    consume_json "$out" >"$WORK/out-$n.json"
    python3 - "$WORK/in-$n.json" "$WORK/out-$n.json" "$total" <<'PY' || fail "output check failed (transaction_producers = $n)"
import sys
from collections import Counter
from records import load, hdrs
inp, out, total = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
src = {r["key"] for r in inp}
ids = Counter(r["key"] for r in out)
dups = [k for k, c in ids.items() if c > 1]
missing = src - set(ids)
early = [r["key"] for r in out if r["ts"] < int(hdrs(r)["sluice-due"])]
print(f"# {len(out)} of {total} timers fired: {len(dups)} duplicated, {len(missing)} missing, {len(early)} early")
sys.exit(1 if dups or missing or early or len(src) != total else 0)
PY

    commits=$(sluice_metric "p$n" 'sluice_transactions_total{result="commit"}')
    markers=$(sluice_metric "p$n" 'sluice_txn_markers_seconds_count')
    note "transaction_producers = $n: ${commits:-0} commits, ${markers:-0} waited for the markers before"
    list_txns "$app-" >"$WORK/txns-$n.txt" ||
        fail "listing the broker's transactions failed: $(tail -3 "$WORK/listtxns.err")"
    sed 's/^/# broker: /' "$WORK/txns-$n.txt"
    sluice_kill "p$n" TERM || fail "sluice (transaction_producers = $n) did not stop cleanly"

    if [ "$n" = 2 ]; then
        grep -q "^$app-i0 CompleteCommit " "$WORK/txns-$n.txt" ||
            fail "no committed transaction of $app-i0"
        grep -q "^$app-i0#2 CompleteCommit " "$WORK/txns-$n.txt" ||
            fail "no committed transaction of $app-i0#2: the producers did not take turns"
        [ "${markers:-0}" = 0 ] || fail "$markers commits waited for the markers of the one before"
    else
        grep -q "^$app-i0 CompleteCommit " "$WORK/txns-$n.txt" ||
            fail "no committed transaction of $app-i0"
        ! grep -q "#2" "$WORK/txns-$n.txt" || fail "a second producer with transaction_producers = 1"
    fi
}

run_mode 2
run_mode 1
echo "PASS"
