#!/usr/bin/env bash
# 0150-delay-refused — a fired timer the broker refuses at delivery (here: a
# payload over the target topic's max.message.bytes) must not stall the
# pipeline.  The refusal aborts the transaction; after the rebuild the same
# timer is refused up front and goes to the DLQ with reason target-refused,
# while the timers around it fire exactly once.
source "$(dirname "$0")/lib.sh"

in=$PFX.in
out=$PFX.small
conf=$WORK/sluice.ini
base_conf "$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = delay
input = $in
input_partitions = 1
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 1 \
    --config max.message.bytes=300 >/dev/null

port=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$port sluice_start main "$conf"
sluice_wait_ready main "$port" 30

python3 -c "
print('before:small')
print('big:' + 'x' * 2000)
print('after:small')" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s

wait_records "$out" 2 30 || fail "the small timers did not fire: $(consume_all "$out")"
wait_records "$PFX.dlq" 1 30 || fail "the refused timer is not in the DLQ"
sluice_alive main || fail "sluice exited"

got=$(consume_all "$out" -f '%k\n' | sort | tr '\n' ' ')
[ "$got" = "after before " ] || fail "target holds '$got', want 'after before '"
dlq=$(consume_all "$PFX.dlq" -f '%k %h\n')
case "$dlq" in
"big "*sluice-error=target-refused*) ;;
*) fail "DLQ record: $dlq" ;;
esac
[ "$(consume_all "$PFX.dlq" -f '%S\n')" = 2000 ] || fail "DLQ record lost its payload"

# A later timer still fires: the pipeline is not stuck.
echo "later:ok" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=200ms
wait_records "$out" 3 30 || fail "a later timer did not fire"
[ "$(consume_all "$out" -f '%k\n' | sort | uniq -d | wc -l)" = 0 ] ||
    fail "duplicates on the target"
aborts=$(metric_value "$port" 'sluice_transactions_total{result="abort"}')
note "refused record: ${aborts:-?} abort(s), then DLQ target-refused; 3 timers fired once"
[ "${aborts:-0}" -ge 1 ] || fail "expected the refusal to abort one transaction"
