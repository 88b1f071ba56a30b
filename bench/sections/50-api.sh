# SPDX-License-Identifier: Apache-2.0
# bench/sections/50-api.sh — the HTTP API (issue 12):
#
#   api_put   PUT /v1/pipelines/P/timers/ID at a fixed concurrency through
#             bench/api_load: timers scheduled per second and the latency
#             of each PUT (answered once the record is durable in the input
#             topic: idempotent producer, acks=all; a new timer is also
#             looked up on its owner first, for 201 vs 200), p50/p99/max,
#             at concurrency 1 and BENCH_API_CONC
#   api_beside  the delay operator's own figure, timer lateness due →
#             produced (p50/p99) at a steady BENCH_API_LAT_RATE timers/s
#             (bench/load, 2 s delay), measured twice in one sluice and one
#             run: with the API idle, then with api_load PUTting at
#             BENCH_API_CONC beside it (its rate and latency reported too)
#
# Every API timer: a distinct id, a 100-byte payload, due in an hour (so the
# delay operator only ingests them), 4 input partitions.  In api_beside the
# API's pipeline and the measured one run in the same process, so they
# share its event loop: what the API costs the operator is what shows.
#
# Environment (all optional):
#   BENCH_API_PUTS       PUTs per api_put run (20000)
#   BENCH_API_CONC       api_put's second concurrency, api_beside's (16)
#   BENCH_API_LAT_RATE   api_beside's timer rate (2000/s)
#   BENCH_API_LAT_SECS   seconds of each api_beside phase (15)

bench_register api_put 120 "api: PUT timers/s and PUT latency p50/p99 at concurrency 1 and 16"
bench_register api_beside 150 "api: delay lateness p50/p99 at 2k timers/s, API idle vs API under PUT load, same run"

# _api_conf NAME — topics and a config for one sluice with the API on and
# two delay pipelines: "api" (input $BENCH_ID.NAME.in, PUT through the API)
# and "lat" ($BENCH_ID.NAME.lat.in, fed by bench/load); targets
# $BENCH_ID.NAME.out*.  Sets API_PORT and API_METRICS.
_api_conf() {
    local t=$BENCH_ID.$1 conf=$BENCH_WORK/$1.ini
    API_METRICS=$(bench_free_port)
    API_PORT=$(bench_free_port)
    bench_topic "$t.in" 4
    bench_topic "$t.lat.in" 4
    bench_topic "$t.out" 4
    bench_topic "$t.out.idle" 4
    bench_topic "$t.out.busy" 4
    echo "bench-token" >"$BENCH_WORK/api.tokens"
    bench_conf "$conf" "127.0.0.1:$API_METRICS"
    sed -i "s/^app_id = .*/app_id = $t/" "$conf"
    sed -i "s|^\[kafka\]|api_listen = 127.0.0.1:$API_PORT\napi_tokens_file = $BENCH_WORK/api.tokens\n\n[kafka]|" "$conf"
    cat >>"$conf" <<EOF
[pipeline api]
type = delay
input = $t.in
changelog = $t.changelog
dlq = $t.dlq
allowed_targets = $t.out**
catchup_rate = 0

[pipeline lat]
type = delay
input = $t.lat.in
changelog = $t.lat.changelog
dlq = $t.lat.dlq
allowed_targets = $t.out**
catchup_rate = 0
EOF
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null || bench_fail "topics apply failed"
    bench_sluice_start "$1" "$conf"
    bench_wait_until 60 bench_ready "$API_METRICS" || bench_fail "sluice not ready"
}

section_api_put() {
    local t=$BENCH_ID.api line c
    local puts=${BENCH_API_PUTS:-20000} conc=${BENCH_API_CONC:-16}
    _api_conf api
    for c in 1 "$conc"; do
        line=$("$BENCH_BIN"/api_load -a "127.0.0.1:$API_PORT" -p api -T "$t.out" \
            -n "$puts" -c "$c" --token bench-token --delay 1h --size 100 --prefix "c$c-") ||
            bench_fail "api_load failed: $line"
        bench_log "$line"
        bench_figure api_put "PUT timers/s, concurrency $c" "$(bench_field "$line" rate)" req/s "" ""
        bench_figure api_put "PUT latency p50, concurrency $c" "$(bench_field "$line" p50_ms)" ms "" ""
        bench_figure api_put "PUT latency p99, concurrency $c" "$(bench_field "$line" p99_ms)" ms "" ""
    done
    bench_sluice_stop api
}

# _api_lateness PHASE RATE SECS — bench/load at RATE timers/s for SECS
# seconds into the lat pipeline (sluice-delay 2s, target .out.PHASE), read
# back with the lateness of each record against its sluice-due; prints
# consume's result line.
_api_lateness() {
    local phase=$1 rate=$2 secs=$3 t=$BENCH_ID.apib n cpid line
    n=$((rate * secs))
    bench_consume "$t.out.$phase" "$n" --lateness-header sluice-due \
        -X fetch.wait.max.ms=5 >"$BENCH_WORK/apib-$phase.consume" &
    cpid=$!
    bench_load "$t.lat.in" "$n" 100 --key-len 16 --rate "$rate" \
        -H sluice-target="$t.out.$phase" -H sluice-delay=2s >/dev/null
    wait "$cpid" || bench_fail "reading $t.out.$phase failed"
    line=$(cat "$BENCH_WORK/apib-$phase.consume")
    [ "$(bench_field "$line" records)" = "$n" ] || bench_fail "$t.out.$phase: $line"
    echo "$line"
}

section_api_beside() {
    local t=$BENCH_ID.apib rate=${BENCH_API_LAT_RATE:-2000} secs=${BENCH_API_LAT_SECS:-15}
    local conc=${BENCH_API_CONC:-16} idle busy apid aline
    _api_conf apib

    idle=$(_api_lateness idle "$rate" "$secs")
    bench_log "api_beside (API idle): $idle"

    # The same load again, the API PUTting timers beside it all along.
    "$BENCH_BIN"/api_load -a "127.0.0.1:$API_PORT" -p api -T "$t.out" \
        -n $((secs * 50000 + 100000)) -c "$conc" --token bench-token --delay 1h \
        --size 100 --seconds $((secs + 4)) >"$BENCH_WORK/apib.api_load" 2>&1 &
    apid=$!
    sleep 1 # the API's load runs before the measured timers start
    busy=$(_api_lateness busy "$rate" "$secs")
    wait "$apid" || bench_fail "api_load failed: $(cat "$BENCH_WORK/apib.api_load")"
    aline=$(tail -1 "$BENCH_WORK/apib.api_load")
    bench_log "api_beside (API busy): $busy"
    bench_log "api_beside: $aline"

    bench_figure api_beside "lateness p99 at $rate timers/s, API idle" \
        "$(bench_field "$idle" produced_p99_ms)" ms "" "<= 15 ms"
    bench_figure api_beside "lateness p99, API at $(bench_field "$aline" rate) PUT/s" \
        "$(bench_field "$busy" produced_p99_ms)" ms "" "<= 15 ms"
    bench_figure api_beside "  p50 idle / busy" \
        "$(bench_field "$idle" produced_p50_ms)/$(bench_field "$busy" produced_p50_ms)" ms
    bench_figure api_beside "  max idle / busy" \
        "$(bench_field "$idle" produced_max_ms)/$(bench_field "$busy" produced_max_ms)" ms
    bench_figure api_beside "  due → visible p99 idle / busy" \
        "$(bench_field "$idle" lateness_p99_ms)/$(bench_field "$busy" lateness_p99_ms)" ms
    bench_figure api_beside "  PUT latency p50 / p99 meanwhile (conc $conc)" \
        "$(bench_field "$aline" p50_ms)/$(bench_field "$aline" p99_ms)" ms
    bench_sluice_stop apib
}
