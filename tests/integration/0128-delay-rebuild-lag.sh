#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0128-delay-rebuild-lag — a rebuild slowed by a broker fetch quota:
# sluice_consumer_lag counts the partition while it rebuilds (docs/operations.md,
# metrics), and Kafka is not reported unreachable meanwhile.
#
# A rebuilding partition's input is paused until its changelog is read, so
# the consumer's cached watermark says nothing of what producers add
# meanwhile.  Here the rebuild is made slow the way a busy cluster makes
# it slow: a broker fetch quota on the rebuild reader's client.id
# ("sluice-rebuild").  The first instance takes N timers due in an hour
# (about 5 MB of changelog) and stops (SIGTERM: input offsets committed);
# M more timers are produced while nobody owns the partition; the second
# instance rebuilds at the quota's pace.  Before it is ready, its lag must
# be M; once ready, 0, with N + M timers pending.  A broker mutes the
# connection of a client it throttles, so lookups sent on the rebuild
# reader's connection (the lag's input end, the probe of Kafka) time out:
# sluice_kafka_up must stay 1 and no "Kafka unreachable" be logged.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

private_broker_start 61512
n=12000
m=300
size=400
quota=400000 # bytes/s for client.id sluice-rebuild: ~13 s for the changelog

dl_setup 1

pending() { sluice_metric "$1" "sluice_timers_pending{pipeline=\"$PFX\"}"; }
lag() { sluice_metric "$1" "sluice_consumer_lag{pipeline=\"$PFX\"}"; }
pad=$(head -c $size /dev/zero | tr '\0' x)

SLUICE_INSTANCE_ID=$PFX-a sluice_up a "$conf"
seq 1 $n | sed "s/.*/t&:$pad/" |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
all_in() { [ "$(pending a)" = $n ]; }
wait_until 60 all_in || fail "instance a holds $(pending a) of $n timers"
sluice_kill a TERM || fail "instance a did not stop cleanly on SIGTERM"
echo "instance a took $n timers and stopped"

# The quota: kafka-configs, as an operator would set it.  The class
# kafka-configs.sh runs is kafka.admin.ConfigCommand in Kafka 3.9 and 4.1
# alike (4.1.1 moved no ConfigCommand to org.apache.kafka.tools).
timeout 60 "$(dirname "$0")/kafka/broker.sh" java kafka.admin.ConfigCommand \
    --bootstrap-server "$BOOTSTRAP" --alter --entity-type clients \
    --entity-name sluice-rebuild --add-config "consumer_byte_rate=$quota" \
    >"$WORK/quota.log" 2>&1 || fail "setting the quota failed: $(tail -3 "$WORK/quota.log")"
echo "fetch quota $quota B/s on client.id sluice-rebuild"

seq 1 $m | sed "s/.*/u&:late/" |
    produce "$in" -K: -H "sluice-target=$out" -H "sluice-delay=1h"
echo "produced $m more while nobody owns the partition"

SLUICE_INSTANCE_ID=$PFX-a sluice_start_http b "$conf"
seen="" kafka_down=""
lag_while_rebuilding() {
    sluice_alive b || fail "instance b exited while rebuilding"
    local r l
    r=$(readyz b) l=$(lag b)
    [ "$(sluice_metric b sluice_kafka_up)" != 0 ] || kafka_down=1
    [ "$r" = 503 ] && [ "$l" = $m ] && seen=$l
}
wait_until 60 lag_while_rebuilding ||
    fail "lag $(lag b) with /readyz $(readyz b), want $m while rebuilding"
[ "$(readyz b)" = 503 ] || fail "instance b was ready already: the quota did not slow its rebuild"
echo "while rebuilding: /readyz 503, lag $seen"
note "lag while rebuilding under a fetch quota: $seen"

ready_at_last() {
    sluice_alive b || fail "instance b exited while rebuilding"
    [ "$(sluice_metric b sluice_kafka_up)" != 0 ] || kafka_down=1
    [ "$(readyz b)" = 200 ]
}
wait_until 120 ready_at_last || fail "instance b not ready within 120 s: $(readyz_body b)"
[ -z "$kafka_down" ] || fail "sluice_kafka_up was 0 during the throttled rebuild"
! log_has b "Kafka unreachable" || fail "Kafka reported unreachable during the throttled rebuild: $(grep -m1 'Kafka unreachable' "$WORK/sluice-b.log")"
log_has b "rebuilt from $n changelog records" || fail "no rebuild of $n records logged"
echo "rebuild: $(grep -o 'rebuilt from.*' "$WORK/sluice-b.log" | head -1); Kafka never reported down"
caught_up() { [ "$(lag b)" = 0 ] && [ "$(pending b)" = $((n + m)) ]; }
wait_until 30 caught_up || fail "after the rebuild: lag $(lag b), $(pending b) pending, want 0 and $((n + m))"
echo "ready: lag 0, $((n + m)) timers pending"
