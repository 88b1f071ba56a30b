# SPDX-License-Identifier: Apache-2.0
# lib-delay.sh — the setup the delay integration tests (01NN-*.sh) share;
# source it after lib.sh.  Not a test itself (run.sh runs NNNN-*.sh only).
#
# The names a delay test works with, set here (a test may set its own):
#   in    $PFX.in          input of the pipeline (headers)
#   ein   $PFX.env.in      input of the json-envelope pipeline (dl_setup_pair)
#   out   $PFX.out         the target
#   conf  $WORK/sluice.ini
#
#   dl_pipeline CONF NAME INPUT PARTITIONS [key=value ...]
#                          appends a [pipeline NAME] of type delay (with
#                          SLUICE_TEST_DELAY_PAYLOADS=kafka, its payloads in
#                          the topic NAME.payloads)
#   dl_setup PARTITIONS [key=value ...]
#                          writes $conf (base_conf and the pipeline $PFX on
#                          $in, with these keys), creates its topics (topics
#                          apply) and the target $out, with PARTITIONS each
#   dl_setup_pair PARTITIONS [key=value ...]
#                          the same with two pipelines in one process:
#                          $PFX.d on $in and $PFX.e on $ein (json-envelope),
#                          the keys in both
#   dl_produce_at GROUPS PER_GROUP FIRST_DUE STEP_MS
#                          GROUPS x PER_GROUP timers gG-I (payload
#                          payload-gG-I) to $out, group G due at FIRST_DUE +
#                          G x STEP_MS (sluice-at), 10 kcat at a time
#   dl_no_pending [PIPELINE]
#                          0 when `sluice inspect` shows no timer pending in
#                          PIPELINE ($PFX)
#   dl_wait_fired NAME TOTAL SECS
#                          waits until $out holds each of TOTAL timer ids
#                          and none is pending (no further fire can come);
#                          fails when instance NAME exits meanwhile
#   dl_metric SERIES [NAME]
#                          the value of SERIES{pipeline="$PFX"} in the
#                          /metrics of instance NAME (default main), 0 when
#                          the series is absent
#   dl_start               starts instance main with $conf as static member
#                          $PFX-0 (a restart takes its partitions back at
#                          once) and waits up to 30 s until it is ready
#   dl_wait_indexed PENDING MAX_BYTES SECS
#                          waits until PENDING timers are pending in less
#                          than MAX_BYTES of sluice_timers_memory_bytes (with
#                          payload_topic: their payloads have left memory
#                          once their index records are written); fails the
#                          test when that takes past SECS
#   dl_seed                seeds $RANDOM (SLUICE_TEST_SEED=N, or a new seed it
#                          notes): a test's random kill moments replay
#   dl_ids PREFIX N        prints the ids PREFIX1..PREFIXN, one a line
#   dl_every CATCH_UP ID...
#                          one schedule `every 1s` per ID (payload
#                          payload-ID) to $out on $in, catch-up CATCH_UP
#   dl_recurring_caught_up SINCE PREFIX...
#                          0 when each recurring id of every PREFIX in $out
#                          has fired an instant due after SINCE (ms)
#   dl_none_missing        fails the test when $PFX.dlq holds a record or a
#                          sluice log says a payload record is missing
#                          (payload_topic)
#   dl_no_payload_missing  the second half of dl_none_missing alone
#
# Instances are started with sluice_up (lib.sh): their metrics with
# sluice_metric NAME SERIES.

in=$PFX.in
ein=$PFX.env.in
out=$PFX.out
conf=$WORK/sluice.ini

dl_pipeline() {
    local conf=$1 name=$2 input=$3 parts=$4 kx=()
    shift 4
    # SLUICE_TEST_DELAY_PAYLOADS=kafka: payloads in NAME.payloads.
    [ "${SLUICE_TEST_DELAY_PAYLOADS:-}" = kafka ] && kx=(payload_topic="$name.payloads")
    pipeline_section "$conf" "$name" delay input="$input" input_partitions="$parts" "${kx[@]}" "$@"
}

dl_setup() {
    local parts=$1
    shift
    base_conf "$conf"
    dl_pipeline "$conf" "$PFX" "$in" "$parts" "$@"
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
    topic_create "$out" "$parts"
}

dl_setup_pair() {
    local parts=$1
    shift
    base_conf "$conf"
    dl_pipeline "$conf" "$PFX.d" "$in" "$parts" "$@"
    dl_pipeline "$conf" "$PFX.e" "$ein" "$parts" input_format=json-envelope "$@"
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
    topic_create "$out" "$parts"
}

dl_produce_at() {
    local groups=$1 per_group=$2 first_due=$3 step=$4 b g p pids
    for b in $(seq 0 10 $((groups - 1))); do
        pids=()
        for g in $(seq "$b" $((b + 9 < groups - 1 ? b + 9 : groups - 1))); do
            seq 0 $((per_group - 1)) | sed "s/.*/g$g-&:payload-g$g-&/" |
                produce "$in" -K: -H "sluice-target=$out" -H "sluice-at=$((first_due + g * step))" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || return 1; done
    done
}

# dl_payload_policy POLICY — cleanup.policy of $PFX.payloads, with
# kafka-configs (the broker refuses DeleteRecords on a topic that is only
# compacted: a test that deletes payload records sets compact,delete for
# as long as it takes, as an operator does).
dl_payload_policy() {
    timeout 60 "$(dirname "${BASH_SOURCE[0]}")/kafka/broker.sh" java kafka.admin.ConfigCommand \
        --bootstrap-server "$BOOTSTRAP" --alter --entity-type topics \
        --entity-name "$PFX.payloads" --add-config "cleanup.policy=$1" \
        >"$WORK/configs.log" 2>&1 || fail "setting cleanup.policy=$1 failed: $(tail -3 "$WORK/configs.log")"
}

dl_no_pending() {
    "$SLUICE_BIN" inspect -c "$conf" "${1:-$PFX}" | grep -q ': 0 pending timers'
}

# _dl_fired_ids — the distinct timer ids in $out.
_dl_fired_ids() { consume_all "$out" -f '%k\n' | sort -u | wc -l; }

dl_wait_fired() {
    local n=$1 total=$2 secs=$3
    _dl_all_fired() {
        sluice_alive "$n" || fail "sluice[$n] exited before every timer fired"
        [ "$(_dl_fired_ids)" -ge "$total" ] || return 1
        dl_no_pending
    }
    wait_until "$secs" _dl_all_fired ||
        fail "not all timers fired within $secs s: $(_dl_fired_ids) distinct of $total"
}

dl_metric() {
    local v
    v=$(sluice_metric "${2:-main}" "$1{pipeline=\"$PFX\"}")
    echo "${v:-0}"
}

dl_start() {
    SLUICE_INSTANCE_ID=$PFX-0 sluice_start_http main "$conf"
    wait_readyz main 200 30
}

dl_seed() {
    seed=${SLUICE_TEST_SEED:-$((RANDOM * 32768 + RANDOM))}
    RANDOM=$seed
    note "seed $seed (SLUICE_TEST_SEED=$seed replays the kill moments)"
}

dl_ids() {
    local i
    for i in $(seq 1 "$2"); do echo "$1$i"; done
}

dl_every() {
    local cu=$1 id
    shift
    for id in "$@"; do echo "$id:payload-$id"; done |
        produce "$in" -K: -H "sluice-target=$out" -H "sluice-every=1s" -H "sluice-catch-up=$cu"
}

# dl_recurring_caught_up SINCE PREFIX... — 0 when every recurring id in
# $out of each PREFIX (and at least one) fired an instant due after SINCE
# (ms): the catch-up after a stop is over (0140, 0141).
dl_recurring_caught_up() {
    consume_json "$out" | python3 -c '
import json, sys
since, prefixes = int(sys.argv[1]), sys.argv[2:]
last = {}
for line in sys.stdin:
    r = json.loads(line); h = r["headers"]; h = dict(zip(h[0::2], h[1::2]))
    last[r["key"]] = max(last.get(r["key"], 0), int(h["sluice-due"]))
for p in prefixes:
    ids = [k for k in last if k.startswith(p)]
    if not ids or any(last[k] <= since for k in ids):
        sys.exit(1)' "$@"
}

dl_wait_indexed() {
    local pending=$1 max=$2 secs=$3
    _dl_indexed() {
        [ "$(dl_metric sluice_timers_pending)" = "$pending" ] || return 1
        local mem
        mem=$(dl_metric sluice_timers_memory_bytes)
        [ "${mem%.*}" -lt "$max" ]
    }
    wait_until "$secs" _dl_indexed ||
        fail "not $pending pending with their payloads out of memory (< $max bytes) within $secs s: $(dl_metric sluice_timers_pending) pending in $(dl_metric sluice_timers_memory_bytes) bytes"
}

dl_none_missing() {
    local dlq
    dlq=$(count_records "$PFX.dlq")
    [ "$dlq" = 0 ] || fail "$dlq records in the DLQ: $(consume_all "$PFX.dlq" -f '%h\n' | head -3)"
    dl_no_payload_missing
}

dl_no_payload_missing() {
    local missing
    missing=$(cat "$WORK"/sluice-*.log | grep -c 'payload-missing\|is gone from' || true)
    [ "$missing" = 0 ] || fail "$missing payloads reported missing: $(grep -h -m2 'is gone from' "$WORK"/sluice-*.log)"
}
