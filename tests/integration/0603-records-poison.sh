#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0603-records-poison — no single record, of any size or shape, makes
# sluice abort more than a few transactions or stops other keys, partitions
# or pipelines: each shape found so far, then a normal record behind it on
# the same input, which must come out within seconds.
#
# Phase 1, one process, three pipelines (inputs take 2 MiB, every other
# topic the broker's default):
#   throttle  a key of 1,000,000 bytes with an empty value (its k/<key>
#             state record was refused at every commit: 8 aborts in 20 s
#             and every pipeline stopped); a key of 1,048,500 bytes (the
#             output takes it, its state record would not: DLQ too-large);
#             a value of 1,020,000 bytes over the key's rate (through the
#             backlog)
#   delay     a timer of 1,020,000 bytes to an existing target; a timer id
#             of 1,000,000 bytes (its output holds the id twice: DLQ
#             too-large when it fires)
#   debounce  40,000 sluice-item headers (DLQ bad-header; the header scan
#             was quadratic); a group key of 1,000,000 bytes (its batch
#             holds the key twice: DLQ too-large)
# Checks: every normal record out within 20 s of the last poison record,
# the poison ones where they belong, at most 4 aborted transactions, the
# loop never stalled for 0.5 s.
#
# Phase 2, compressed producers ([kafka] compression.type = lz4: only the
# broker can tell what fits) and a throttle changelog that takes 2,000
# bytes: a key of 3,000 random base64 bytes is forwarded, but its k/<key>
# record is refused by the broker at the commit, again and again.  The
# refusal memo learns the record by its key (sent alone, refused again),
# and the key's next input goes to the DLQ (changelog-refused) instead:
# at most 4 aborts, and a record of another key behind it comes out.
# variant: kafka-4
source "$(dirname "$0")/lib.sh"

max_aborts=4
conf=$WORK/sluice.ini
base_conf "$conf"
pipeline_section "$conf" "$PFX-d" delay input="$PFX.d.in" input_partitions=1 \
    allowed_targets="$PFX.d.*" max_record_bytes=4MiB
pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=1 \
    output="$PFX.t.out" default_rate="1/s burst=1" max_record_bytes=4MiB
pipeline_section "$conf" "$PFX-b" debounce input="$PFX.b.in" input_partitions=1 \
    output="$PFX.b.out" idle=1s max_age=5s max_record_bytes=4MiB
for op in d t b; do
    topic_create "$PFX.$op.in" 1 max.message.bytes=2097152
    topic_create "$PFX.$op.out" 1
done
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "phase 1: sluice ready"

target=(-H "sluice-target=$PFX.d.out" -H sluice-delay=1s)
recgen "$PFX.t.in" --key-bytes 1000000 --key T1 --value '' >/dev/null || fail "producing T1"
recgen "$PFX.t.in" --key t-after-1 --value ok >/dev/null
recgen "$PFX.t.in" --key-bytes 1048500 --key T2 --value '' >/dev/null || fail "producing T2"
recgen "$PFX.t.in" --key t-after-2 --value ok >/dev/null
recgen "$PFX.t.in" --key T3 --value small >/dev/null
recgen "$PFX.t.in" --key T3 --value-bytes 1020000 >/dev/null || fail "producing T3"
recgen "$PFX.t.in" --key t-after-3 --value ok >/dev/null
recgen "$PFX.d.in" --key D1 --value-bytes 1020000 "${target[@]}" >/dev/null || fail "producing D1"
recgen "$PFX.d.in" --key d-after-1 --value ok "${target[@]}" >/dev/null
recgen "$PFX.d.in" --key-bytes 1000000 --key D2 --value x "${target[@]}" >/dev/null || fail "producing D2"
recgen "$PFX.d.in" --key d-after-2 --value ok "${target[@]}" >/dev/null
recgen "$PFX.b.in" --key B1 --value '{"b":1}' --headers 40000 --header-name sluice-item >/dev/null ||
    fail "producing B1"
recgen "$PFX.b.in" --key b-after-1 --value '{"ok":1}' -H sluice-item=a >/dev/null
recgen "$PFX.b.in" --key-bytes 1000000 --key B2 --value '{"b":2}' -H sluice-item=i >/dev/null ||
    fail "producing B2"
recgen "$PFX.b.in" --key b-after-2 --value '{"ok":2}' -H sluice-item=a >/dev/null
t_last=$(date +%s)
echo "phase 1: produced the poison records and a normal one behind each"

name() { sed -E 's/x{16,}//'; }
_normal_out() {
    local t d b
    t=$(consume_all "$PFX.t.out" -f '%k\n' | grep -c '^t-after-')
    d=$(consume_all "$PFX.d.out" -f '%k\n' | grep -c '^d-after-')
    b=$(consume_all "$PFX.b.out" -f '%k\n' | grep -c '^b-after-')
    [ "$t" -eq 3 ] && [ "$d" -eq 2 ] && [ "$b" -eq 2 ]
}
wait_until 20 _normal_out || fail "the normal records were not all out within 20 s"
note "phase 1: every normal record out $(($(date +%s) - t_last)) s after the last poison record"
_poison_done() {
    [ "$(count_records "$PFX-t.dlq")" -ge 1 ] && [ "$(count_records "$PFX-d.dlq")" -ge 1 ] &&
        [ "$(count_records "$PFX-b.dlq")" -ge 2 ] &&
        [ "$(consume_all "$PFX.t.out" -f '%k\n' | name | grep -c '^T')" -ge 3 ] &&
        [ "$(consume_all "$PFX.d.out" -f '%k\n' | grep -c '^D1$')" -ge 1 ]
}
wait_until 30 _poison_done || fail "the poison records did not all come out"
sluice_alive main || fail "sluice exited"
got_t=$(consume_all "$PFX.t.out" -f '%k %S\n' | name | sort | tr '\n' ' ')
[ "$got_t" = "T1 0 T3 1020000 T3 5 t-after-1 2 t-after-2 2 t-after-3 2 " ] || fail "throttle out: $got_t"
dlq_t=$(consume_all "$PFX-t.dlq" -f '%k %h\n' | name | grep -o '^[^ ]* .*sluice-error=[a-z-]*' | sed 's/ .*sluice-error=/ /')
[ "$dlq_t" = "T2 too-large" ] || fail "throttle DLQ: $dlq_t"
dlq_d=$(consume_all "$PFX-d.dlq" -f '%k %h\n' | name | grep -o '^[^ ]* .*sluice-error=[a-z-]*' | sed 's/ .*sluice-error=/ /')
[ "$dlq_d" = "D2 too-large" ] || fail "delay DLQ: $dlq_d"
dlq_b=$(consume_all "$PFX-b.dlq" -f '%k %h\n' | name | grep -o '^[^ ]* .*sluice-error=[a-z-]*' | sed 's/ .*sluice-error=/ /' | sort | tr '\n' ' ')
[ "$dlq_b" = "B1 bad-header B2 too-large " ] || fail "debounce DLQ: $dlq_b"
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
stall=$(sluice_metric main sluice_loop_stall_max_seconds)
note "phase 1: ${aborts:-?} aborts, loop stall at most ${stall:-?} s"
[ "${aborts:-9}" -le "$max_aborts" ] || fail "phase 1: ${aborts:-?} aborted transactions"
awk -v s="${stall:-9}" 'BEGIN { exit !(s < 0.5) }' || fail "phase 1: the loop stalled for ${stall:-?} s"
sluice_kill main TERM || fail "sluice did not stop cleanly"

# Phase 2.
conf2=$WORK/sluice2.ini
base_conf "$conf2"
conf_set "$conf2" sluice app_id="$PFX-2"
conf_set "$conf2" kafka compression.type=lz4
pipeline_section "$conf2" "$PFX-z" throttle input="$PFX.z.in" input_partitions=1 \
    output="$PFX.z.out" default_rate=100/s
topic_create "$PFX.z.out" 1
topic_create "$PFX-z.changelog" 1 cleanup.policy=compact max.message.bytes=2000
"$SLUICE_BIN" topics apply -c "$conf2" >/dev/null || true # the changelog differs on purpose
SLUICE_PORTS[main2]=${SLUICE_PORTS[main]} # the same port again
sluice_up main2 "$conf2"
echo "phase 2: compressed producers, a changelog of 2000 bytes"
key=$(head -c 2250 /dev/urandom | base64 -w0)
printf '%s\n' "$key:poison" "z-after:ok" | produce "$PFX.z.in" -K:
_z_done() {
    [ "$(count_records "$PFX-z.dlq")" -ge 1 ] &&
        consume_all "$PFX.z.out" -f '%k\n' | grep -q '^z-after$'
}
wait_until 40 _z_done || fail "phase 2: the poison key is not in the DLQ, or z-after is not out"
sluice_alive main2 || fail "sluice exited"
[ "$(consume_all "$PFX-z.dlq" -f '%h\n' | grep -o 'sluice-error=[a-z-]*')" = "sluice-error=changelog-refused" ] ||
    fail "phase 2: DLQ: $(consume_all "$PFX-z.dlq" -f '%h\n' | cut -c1-300)"
[ "$(consume_all "$PFX.z.out" -f '%k\n' | grep -vc '^z-after$')" = 0 ] ||
    fail "phase 2: the poison record reached the output"
aborts=$(sluice_metric main2 'sluice_transactions_total{result="abort"}')
note "phase 2: the refused state record cost ${aborts:-?} aborts, then the DLQ"
[ "${aborts:-9}" -le "$max_aborts" ] || fail "phase 2: ${aborts:-?} aborted transactions"
echo "no poison record stopped anything"
