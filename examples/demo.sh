#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make demo`: a local Kafka broker, the example topics, sluice, sample input
# with kcat, and what came out.  Stops what it started.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
broker=tests/integration/kafka/broker.sh
conf=examples/demo.ini
b=127.0.0.1:39092
log=$(mktemp /tmp/sluice-demo.XXXXXX.log)
started_broker=0
pid=

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    [ "$started_broker" = 1 ] && "$broker" stop || true
}
trap cleanup EXIT

say "Kafka: a single-node broker on $b"
if ! "$broker" status; then
    "$broker" start
    started_broker=1
fi

say "Topics: sluice topics apply -c $conf"
./sluice topics apply -c "$conf" || true
./sluice topics create -c "$conf" demo.reminders.out --partitions 2
./sluice topics create -c "$conf" demo.transfers.out --partitions 2
./sluice topics create -c "$conf" demo.notify.out --partitions 2
./sluice topics check -c "$conf"

say "sluice run -c $conf   (log: $log)"
./sluice run -c "$conf" >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    curl -sf http://127.0.0.1:9464/readyz >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.2
done
curl -s http://127.0.0.1:9464/readyz

say "Scheduling timers with kcat"
start_ms=$(date +%s%3N)
echo "  order-1 in 1s, order-2 in 2s, order-3 in 3s, order-4 at now+4s (sluice-at)"
echo 'order-1:{"remind":"order-1"}' | kcat -P -b $b -t demo.reminders.in -K: \
    -H sluice-target=demo.reminders.out -H sluice-delay=1s
echo 'order-2:{"remind":"order-2"}' | kcat -P -b $b -t demo.reminders.in -K: \
    -H sluice-target=demo.reminders.out -H sluice-delay=2s -H trace-id=abc123
echo 'order-3:{"remind":"order-3"}' | kcat -P -b $b -t demo.reminders.in -K: \
    -H sluice-target=demo.reminders.out -H sluice-delay=3s
echo "order-4:{\"remind\":\"order-4\"}" | kcat -P -b $b -t demo.reminders.in -K: \
    -H sluice-target=demo.reminders.out -H "sluice-at=$((start_ms + 4000))"
echo "  order-5 in 2s, then cancelled (a null value with the same key)"
echo 'order-5:{"remind":"order-5"}' | kcat -P -b $b -t demo.reminders.in -K: \
    -H sluice-target=demo.reminders.out -H sluice-delay=2s
echo 'order-5:' | kcat -P -b $b -t demo.reminders.in -K: -Z
echo "  order-6 has no target: it goes to the DLQ with a reason"
echo 'order-6:oops' | kcat -P -b $b -t demo.reminders.in -K: -H sluice-delay=1s
sleep 0.5

say "Pending: sluice inspect -c $conf reminders"
./sluice inspect -c "$conf" reminders

say "Waiting for the timers to fire"
for _ in $(seq 1 100); do
    n=$(kcat -C -b $b -t demo.reminders.out -o "s@$start_ms" -e -q -X isolation.level=read_committed -f 'x\n' | wc -l)
    [ "$n" -ge 4 ] && break
    sleep 0.1
done

say "What came out on demo.reminders.out (read_committed), ms after scheduling"
kcat -C -b $b -t demo.reminders.out -o "s@$start_ms" -e -q -X isolation.level=read_committed \
    -f '%T %k %s %h\n' | sort -n | while read -r ts rest; do
    printf '  +%5d ms  %s\n' $((ts - start_ms)) "$rest"
done

say "The DLQ: reminders.dlq"
kcat -C -b $b -t reminders.dlq -o "s@$start_ms" -e -q -f '  %k %s  %h\n'

say "Some metrics (curl http://127.0.0.1:9464/metrics)"
curl -s http://127.0.0.1:9464/metrics | grep -E '^sluice_(records|timers|timer_lateness_seconds_(sum|count))' | sed 's/^/  /'

say "Warehouse: 30 orders for WH-42 and 3 for WH-7 with kcat (key = warehouse, sluice-item = order)"
batch_ms=$(date +%s%3N)
kcats=()
for i in $(seq -w 1 30); do
    echo "WH-42:{\"order\":\"A0$i\",\"sku\":\"S-$((10#$i % 4))\",\"qty\":1}" |
        kcat -P -b $b -t demo.orders.in -K: -H "sluice-item=A0$i" &
    kcats+=($!)
done
for i in 1 2 3; do
    echo "WH-7:{\"order\":\"B00$i\",\"sku\":\"S-9\",\"qty\":2}" |
        kcat -P -b $b -t demo.orders.in -K: -H "sluice-item=B00$i" &
    kcats+=($!)
done
wait "${kcats[@]}"
echo "  A001 again (an upsert: qty 5, same place in the batch), B003 removed (null value)"
echo 'WH-42:{"order":"A001","sku":"S-1","qty":5}' | kcat -P -b $b -t demo.orders.in -K: -H sluice-item=A001
echo 'WH-7:' | kcat -P -b $b -t demo.orders.in -K: -Z -H sluice-item=B003
sleep 0.3

say "Open groups: sluice inspect -c $conf transfers"
./sluice inspect -c "$conf" transfers

say "Waiting for the warehouses to go quiet (idle = 2s)"
for _ in $(seq 1 100); do
    n=$(kcat -C -b $b -t demo.transfers.out -o "s@$batch_ms" -e -q -X isolation.level=read_committed -f 'x\n' | wc -l)
    [ "$n" -ge 2 ] && break
    sleep 0.1
done

say "What came out on demo.transfers.out (read_committed): one batch per warehouse"
kcat -C -b $b -t demo.transfers.out -o "s@$batch_ms" -e -q -X isolation.level=read_committed \
    -f '%s\n' | python3 -c '
import json, sys
for line in sys.stdin:
    b = json.loads(line)
    items = b["items"]
    after = b["flushed_at"] - max(i["last_update"] for i in items)
    print("  %s: batch %s..., %d items, reason %s, flushed %d ms after the last update"
          % (b["key"], b["batch_id"][:12], len(items), b["reason"], after))
    for it in items[:3]:
        print("    %s: %s" % (it["id"], json.dumps(it["payload"])))
    if len(items) > 3:
        print("    ... %d more" % (len(items) - 3))'
curl -s http://127.0.0.1:9464/metrics | grep -E '^sluice_debounce_(batches_total|items_(added|replaced|removed)_total)' | sed 's/^/  /'

say "Throttle: customer C-1 limited to 2/s (kcat on notify.rates), 10 notifications at once, C-2 at the default 100/s"
echo 'C-1:2/s burst=2' | kcat -P -b $b -t notify.rates -K:
sleep 0.5
notify_ms=$(date +%s%3N)
seq -f 'C-1:{"notify":"C-1","n":%g}' 1 10 | kcat -P -b $b -t demo.notify.in -K:
seq -f 'C-2:{"notify":"C-2","n":%g}' 1 5 | kcat -P -b $b -t demo.notify.in -K:
for _ in $(seq 1 150); do
    n=$(kcat -C -b $b -t demo.notify.out -o "s@$notify_ms" -e -q -X isolation.level=read_committed -f 'x\n' | wc -l)
    [ "$n" -ge 15 ] && break
    sleep 0.1
done

say "What came out on demo.notify.out (read_committed), ms after sending: C-1 at 2/s after a burst of 2, C-2 at once"
kcat -C -b $b -t demo.notify.out -o "s@$notify_ms" -e -q -X isolation.level=read_committed \
    -f '%T %k %s\n' | sort -n | while read -r ts rest; do
    printf '  +%5d ms  %s\n' $((ts - notify_ms)) "$rest"
done
curl -s http://127.0.0.1:9464/metrics | grep -E '^sluice_throttle_(forwarded|drained|appended|expired)_total|^sluice_throttle_backlog_messages' | grep notify | sed 's/^/  /'
