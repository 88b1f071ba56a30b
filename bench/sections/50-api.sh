# bench/sections/50-api.sh — the HTTP API (issue 12):
#
#   api_put   PUT /v1/pipelines/P/timers/ID at a fixed concurrency through
#             bench/api_load: timers scheduled per second and the latency
#             of each PUT (answered once the record is durable in the input
#             topic: idempotent producer, acks=all), p50/p99/max, at
#             concurrency 1 and BENCH_API_CONC
#
# Every timer: a distinct id, a 100-byte payload, due in an hour (so the
# delay operator only ingests), 4 input partitions.
#
# Environment (all optional):
#   BENCH_API_PUTS   PUTs per run (20000)
#   BENCH_API_CONC   the second run's concurrency (16)

bench_register api_put 120 "api: PUT timers/s and PUT latency p50/p99 at concurrency 1 and 16"

section_api_put() {
    local t=$BENCH_ID.api conf=$BENCH_WORK/api.ini port aport line
    local puts=${BENCH_API_PUTS:-20000} conc=${BENCH_API_CONC:-16}
    port=$(bench_free_port)
    aport=$(bench_free_port)
    bench_topic "$t.in" 4
    bench_topic "$t.out" 4
    echo "bench-token" >"$BENCH_WORK/api.tokens"
    bench_conf "$conf" "127.0.0.1:$port"
    sed -i "s/^app_id = .*/app_id = $t/" "$conf"
    sed -i "s|^\[kafka\]|api_listen = 127.0.0.1:$aport\napi_tokens_file = $BENCH_WORK/api.tokens\n\n[kafka]|" "$conf"
    cat >>"$conf" <<EOF
[pipeline api]
type = delay
input = $t.in
changelog = $t.changelog
dlq = $t.dlq
allowed_targets = $t.out
EOF
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null || bench_fail "topics apply failed"
    bench_sluice_start api "$conf"
    bench_wait_until 60 bench_ready "$port" || bench_fail "sluice not ready"
    for c in 1 "$conc"; do
        line=$("$BENCH_BIN"/api_load -a "127.0.0.1:$aport" -p api -T "$t.out" \
            -n "$puts" -c "$c" --token bench-token --delay 1h --size 100) ||
            bench_fail "api_load failed: $line"
        bench_log "$line"
        bench_figure api_put "PUT timers/s, concurrency $c" "$(bench_field "$line" rate)" req/s "" ""
        bench_figure api_put "PUT latency p50, concurrency $c" "$(bench_field "$line" p50_ms)" ms "" ""
        bench_figure api_put "PUT latency p99, concurrency $c" "$(bench_field "$line" p99_ms)" ms "" ""
    done
    bench_sluice_stop api
}
