#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0150-delay-refused — a fired timer larger than its target takes (a
# payload over the target topic's max.message.bytes, 300 bytes here) must
# not stall the pipeline, whichever way sluice finds out:
#
#   phase 1  sluice knows the target's limit (DescribeConfigs): the timer
#            is refused up front when it fires and goes to the DLQ with
#            reason too-large, with no aborted transaction;
#   phase 2  the producers compress ([kafka] compression.type = lz4), so
#            only the broker can tell whether a record fits: an
#            incompressible payload is refused at delivery, which aborts
#            the transaction; after the rebuild the same timer is sent
#            alone, refused again, then refused up front (the runtime's
#            refusal memo) and goes to the DLQ, reason too-large.
# In both, the timers around it fire exactly once, the DLQ record holds the
# payload whole (the DLQ takes it), and a later timer still fires.
# variant: kafka-4
# variant: payloads
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

out=$PFX.small
base_conf "$conf"
dl_pipeline "$conf" "$PFX" "$in" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
topic_create "$out" 1 max.message.bytes=300

# phase TAG BIG_PAYLOAD — three timers (TAG-before, TAG-big, TAG-after) due
# in 1 s, then TAG-later once the DLQ has TAG-big; checks what came out.
phase() {
    local tag=$1 big=$2 got dlq
    printf '%s\n' "$tag-before:small" "$tag-big:$big" "$tag-after:small" |
        produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s
    _fired() { [ "$(consume_all "$out" -f '%k\n' | grep -c "^$tag-")" -ge 2 ]; }
    wait_until 30 _fired || fail "$tag: the small timers did not fire: $(consume_all "$out")"
    _dlq() { consume_all "$PFX.dlq" -f '%k\n' | grep -q "^$tag-big$"; }
    wait_until 30 _dlq || fail "$tag: the refused timer is not in the DLQ"
    sluice_alive main || fail "sluice exited"
    got=$(consume_all "$out" -f '%k\n' | grep "^$tag-" | sort | tr '\n' ' ')
    [ "$got" = "$tag-after $tag-before " ] || fail "$tag: target holds '$got'"
    dlq=$(consume_all "$PFX.dlq" -f '%k %h\n' | grep "^$tag-big ")
    case "$dlq" in
    *sluice-error=too-large*) ;;
    *) fail "$tag: DLQ record: $dlq" ;;
    esac
    [ "$(consume_all "$PFX.dlq" -f '%k %S\n' | grep "^$tag-big ")" = "$tag-big ${#big}" ] ||
        fail "$tag: the DLQ record lost its payload"
    echo "$tag-later:ok" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=200ms
    _later() { consume_all "$out" -f '%k\n' | grep -q "^$tag-later$"; }
    wait_until 30 _later || fail "$tag: a later timer did not fire"
    [ "$(consume_all "$out" -f '%k\n' | sort | uniq -d | wc -l)" = 0 ] ||
        fail "$tag: duplicates on the target"
}

sluice_up main "$conf"
phase p1 "$(printf 'x%.0s' $(seq 2000))"
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
[ "${aborts:-x}" = 0 ] || fail "phase 1: ${aborts:-?} aborted transactions, want none"
note "known limit: DLQ too-large up front, 0 aborts"
sluice_kill main TERM || fail "sluice did not stop cleanly"

conf_set "$conf" kafka compression.type=lz4
sluice_up main "$conf"
# Random bytes in base64: lz4 finds nothing to compress.
phase p2 "$(head -c 1500 /dev/urandom | base64 -w0)"
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
note "compressed, refused by the broker: ${aborts:-?} abort(s), then DLQ too-large"
[ "${aborts:-0}" -ge 1 ] || fail "phase 2: expected the refusal to abort a transaction"
[ "${aborts:-0}" -le 4 ] || fail "phase 2: ${aborts} aborts for one refused record"
