#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0706-cluster-slow-link — a slow link, the scenario of Jepsen's 2024
# analysis of Kafka's transaction protocol: for 60 s every packet between
# sluice and the node that leads the most input partitions is held 200 ms
# each way (a delaying proxy, tests/tools/slowproxy.c, that the node
# advertises to sluice: cluster.sh bootstrap-proxied), while sluice's
# client-side request timeout (socket.timeout.ms 300; fetch.wait.max.ms
# 100 so that fetches to the other nodes fit in it) is shorter than a round
# trip (400 ms): every request to that node times out, librdkafka drops
# the connection and retries on a new one, and the proxy still delivers the
# old requests — late, after their retries.  (request.timeout.ms is the
# broker's ack timeout, not the client's: with it at 350 and 500 in first
# runs no request timed out.)  The test's own readers and writers bypass the proxy.
#
# Checks: both instances alive with /healthz never failing and /readyz 200
# at the end; every record out exactly once (read_committed), per-key
# order, no timer before due, no DLQ record.  Prints the time from the
# slowdown and from its end to the first committed output.
# one-at-a-time: a cluster of three broker JVMs in network namespaces of fixed names
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"
source "$(dirname "$0")/lib-faults.sh"
source "$(dirname "$0")/lib-cluster.sh"

slow_secs=${SLUICE_TEST_FAULT_SECS:-60}
delay_ms=${SLUICE_TEST_SLOW_MS:-200}

cluster_start
conf=$WORK/sluice.ini
fault_conf "$conf" dbt
# sluice through the proxies, with timeouts a slow round trip crosses.
sed -i "s|^bootstrap.servers = .*|bootstrap.servers = $(cluster bootstrap-proxied)|" "$conf"
cat >>"$conf.kafka" <<EOF
socket.timeout.ms = 300
fetch.wait.max.ms = 100
EOF
sed -i "/^heartbeat.interval.ms = /r $conf.kafka" "$conf"
grep -q '^socket.timeout.ms = 300' "$conf" || fail "could not shorten the timeouts in $conf"
fault_start_ready a b

fault_feed_start
fault_wait_flowing

victim=$(cluster_leader_of "$PFX.d.in" "$PFX.b.in" "$PFX.t.in")
t_fault=$(now_ms)
cluster slow "$victim" "$delay_ms"
sleep "$slow_secs"
cluster slow "$victim" 0
t_heal=$(now_ms)
note "node $victim's link to sluice held ${delay_ms} ms each way for $(((t_heal - t_fault) / 1000)) s (socket.timeout.ms 300)"
timeouts=$(cat "$WORK/sluice-a.log" "$WORK/sluice-b.log" | grep -ci 'timed out' || true)
note "log lines with 'timed out' meanwhile: $timeouts"

sleep 8
fault_feed_stop
fault_drain 180 a b
cluster_timing "$t_fault" "$t_heal" "slow link to node $victim"
cluster_health "$t_fault" a b
problems_verdict
echo "PASS"
