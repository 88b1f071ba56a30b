#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0602-records-sizes — records of every size the broker accepts, on the
# defaults: each comes out whole where it can be written whole, and in the
# DLQ (reason too-large, as a copy cut to fit, sluice-cut saying what was
# kept) where it cannot; none is lost, none aborts a transaction.
#
# Inputs accept 2 MiB (max.message.bytes on the input topics only); every
# other topic keeps the broker's default (1,048,588), and no [kafka]
# message.max.bytes is set (librdkafka's own default, 1,000,000, refused
# every record above it before sluice learned the topics' limits).
# max_record_bytes = 4 MiB so the topics' limits are what decides.
#
# For delay, throttle and debounce alike, values and then keys of 999,999,
# 1,000,001, 1,048,000 and 1,500,000 bytes:
#   delay     values up to 1,048,000 fire whole; 1,500,000 (its changelog
#             record) goes to the DLQ at input.  A timer id is the output's
#             key and its sluice-timer-id header: ids of a megabyte fire
#             to the DLQ (the output would hold it twice); 1,500,000 at
#             input.
#   throttle  everything up to 1,048,000 is forwarded whole; 1,500,000 to
#             the DLQ at input (the output could not take it).
#   debounce  values up to 1,048,000 come out in their batch; 1,500,000
#             (its item record) to the DLQ at input.  A group key is the
#             batch's key and its JSON "key": keys of a megabyte flush to
#             the DLQ; 1,500,000 at input.
# Checks, against what was produced: each record is in its output whole
# (key and value byte for byte) xor in the DLQ once, with the reason, its
# source offset (a fired timer: its id), a copy no larger than the DLQ
# takes and either whole or, cut, with the sluice-cut header and the kept
# bytes a prefix of the original; zero aborted transactions; nothing
# "dropped" in the log.
# variant: kafka-4
source "$(dirname "$0")/lib.sh"

conf=$WORK/sluice.ini
api_port=$(free_port)
token=tok-$RANDOM
echo "$token" >"$WORK/tokens"
base_conf "$conf"
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens"
pipeline_section "$conf" "$PFX-d" delay input="$PFX.d.in" input_partitions=1 \
    allowed_targets="$PFX.d.*" max_record_bytes=4MiB
pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=1 \
    output="$PFX.t.out" default_rate=1000/s max_record_bytes=4MiB
pipeline_section "$conf" "$PFX-b" debounce input="$PFX.b.in" input_partitions=1 \
    output="$PFX.b.out" idle=1s max_age=5s max_record_bytes=4MiB
for op in d t b; do
    topic_create "$PFX.$op.in" 1 max.message.bytes=2097152
    topic_create "$PFX.$op.out" 1
done
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready: inputs take 2 MiB, every other topic the broker's default"
note "$(grep -m1 -o 'LIMITS .*' "$WORK/sluice-main.log" || echo 'no LIMITS line')"

sizes="999999 1000001 1048000 1500000"
for n in $sizes; do
    recgen "$PFX.d.in" --key "d-v$n" --value-bytes "$n" -H "sluice-target=$PFX.d.out" \
        -H sluice-delay=1s -H trace=v$n >/dev/null || fail "producing delay value $n"
    recgen "$PFX.d.in" --key "d-k$n" --key-bytes "$n" --value "k$n" -H "sluice-target=$PFX.d.out" \
        -H sluice-delay=1s >/dev/null || fail "producing delay key $n"
    recgen "$PFX.t.in" --key "t-v$n" --value-bytes "$n" -H trace=v$n >/dev/null || fail "producing throttle value $n"
    recgen "$PFX.t.in" --key "t-k$n" --key-bytes "$n" --value "k$n" >/dev/null || fail "producing throttle key $n"
    recgen "$PFX.b.in" --key "b-v$n" --value-bytes "$n" -H sluice-item=i >/dev/null || fail "producing debounce value $n"
    recgen "$PFX.b.in" --key "b-k$n" --key-bytes "$n" --value "k$n" -H sluice-item=i >/dev/null ||
        fail "producing debounce key $n"
done
# And one through the API: a timer of 1,000,001 bytes (the API's producer
# refused every record above 1,000,000 too).
python3 -c 'import json, sys; print(json.dumps({"target": sys.argv[1], "delay": "1s", "value": "v" + "y" * 1000000}))' \
    "$PFX.d.out" >"$WORK/put.json"
code=$(curl -s -o "$WORK/put.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" \
    --data-binary @"$WORK/put.json" "http://127.0.0.1:$api_port/v1/pipelines/$PFX-d/timers/d-api")
[ "$code" = 201 ] || fail "PUT of a 1,000,001-byte timer: $code $(head -c 300 "$WORK/put.out")"
echo "produced 8 records to each input, and a timer of 1,000,001 bytes through the API"

# Every record is accounted for: in its output or in the DLQ.
_all_out() {
    local d t b
    d=$(($(count_records "$PFX.d.out") + $(count_records "$PFX-d.dlq") - 1))
    t=$(($(count_records "$PFX.t.out") + $(count_records "$PFX-t.dlq")))
    b=$(consume_all "$PFX.b.out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))')
    b=$((b + $(count_records "$PFX-b.dlq")))
    [ "$d" -ge 8 ] && [ "$t" -ge 8 ] && [ "$b" -ge 8 ]
}
wait_until 60 _all_out || fail "not every record came out within 60 s"
sluice_alive main || fail "sluice exited"

for t in "$PFX.d.in" "$PFX.d.out" "$PFX-d.dlq" "$PFX.t.in" "$PFX.t.out" "$PFX-t.dlq" \
    "$PFX.b.in" "$PFX.b.out" "$PFX-b.dlq"; do
    consume_json "$t" >"$WORK/$t.json"
done
aborts=$(sluice_metric main 'sluice_transactions_total{result="abort"}')
python3 - "$WORK" "$PFX" "${aborts:-missing}" <<'PY' || fail "size check failed"
import json, sys

w, pfx, aborts = sys.argv[1], sys.argv[2], sys.argv[3]
LIMIT = 1048588
def load(t):
    return [json.loads(l) for l in open(f"{w}/{t}.json") if l.strip()]
def hd(r):
    h = r.get("headers") or []
    return dict(zip(h[::2], h[1::2]))
def wire(r):
    # A batch of this record alone (recsize.h): the DLQ copy must fit.
    def zz(n):
        n = (n << 1) ^ (n >> 63)
        c = 1
        while n >= 0x80:
            n >>= 7
            c += 1
        return c
    def field(b):
        return 1 if b is None else zz(len(b)) + len(b)
    h = r.get("headers") or []
    body = 3 + field(r["key"] and r["key"].encode()) + field(r["payload"] and r["payload"].encode())
    body += zz(len(h) // 2) + sum(field(h[i].encode()) + field(h[i + 1] and h[i + 1].encode()) for i in range(0, len(h), 2))
    return 61 + zz(body) + body

errors = []
dlq_cnt = [0, 0]  # DLQ copies whole, cut
whole = 0
# What must come out whole, and what must go to the DLQ, by key prefix.
want_dlq = {
    "d": {"d-v1500000", "d-k999999", "d-k1000001", "d-k1048000", "d-k1500000"},
    "t": {"t-v1500000", "t-k1500000"},
    "b": {"b-v1500000", "b-k999999", "b-k1000001", "b-k1048000", "b-k1500000"},
}
for op in "dtb":
    inp = load(f"{pfx}.{op}.in")
    dlq = load(f"{pfx}-{op}.dlq")
    out = load(f"{pfx}.{op}.out")
    if op == "d":
        # The API's timer: fired whole, then set aside.
        api = [r for r in load(f"{pfx}.d.out") if r["key"] == "d-api"]
        if len(api) != 1 or api[0]["payload"] != "v" + "y" * 1000000:
            errors.append(f"the API's timer fired {len(api)} times, or not whole")
        inp = [r for r in inp if r["key"] != "d-api"]
    if len(inp) != 8:
        errors.append(f"{op}: input holds {len(inp)} records")
    # The name of an input record: its key up to the first filler byte.
    name = lambda k: k.rstrip("x") if k else k
    by_off = {r["offset"]: r for r in inp}
    got_out = {}
    if op == "b":
        for r in out:
            b = json.loads(r["payload"])
            for it in b["items"]:
                got_out.setdefault(name(b["key"]), []).append((b["key"], it["payload"]))
    else:
        for r in out:
            if r["key"] != "d-api":
                got_out.setdefault(name(r["key"]), []).append((r["key"], r["payload"]))
    got_dlq = {}
    for r in dlq:
        h = hd(r)
        src = by_off.get(int(h.get("sluice-source-offset", "-1")))
        if op == "d" and src is None:
            # Fired timers name no source offset: their id is the key.
            src = next((s for s in inp if r["key"] and s["key"].startswith(r["key"])), None)
        if src is None:
            errors.append(f"{op}: a DLQ record names no input record: {str(h)[:200]}")
            continue
        got_dlq.setdefault(name(src["key"]), []).append((r, src))
    for s in inp:
        n = name(s["key"])
        o, d = got_out.get(n, []), got_dlq.get(n, [])
        if n in want_dlq[op]:
            if o or len(d) != 1:
                errors.append(f"{op}: {n}: {len(o)} outputs, {len(d)} DLQ records (want the DLQ once)")
                continue
            r, _ = d[0]
            h = hd(r)
            if h.get("sluice-error") != "too-large":
                errors.append(f"{op}: {n}: DLQ reason {h.get('sluice-error')}")
            size = wire(r)
            if size > LIMIT:
                errors.append(f"{op}: {n}: the DLQ copy takes {size} bytes")
            cut = h.get("sluice-cut")
            if cut is None:
                # Not cut: the DLQ holds the record whole.
                if r["key"] != s["key"] or (op != "d" and r["payload"] != s["payload"]):
                    errors.append(f"{op}: {n}: a copy without sluice-cut differs from the record")
            else:
                kept = dict(p.split("=") for p in cut.split(","))
                k_orig, k_kept = map(int, kept["key"].split(":"))
                v_orig, v_kept = map(int, kept["value"].split(":"))
                if k_orig != len(s["key"]) or k_kept != len(r["key"] or ""):
                    errors.append(f"{op}: {n}: sluice-cut {cut} against a key of {len(s['key'])}, kept {len(r['key'] or '')}")
                if v_orig != len(s["payload"] or "") and op != "d":
                    errors.append(f"{op}: {n}: sluice-cut {cut} against a value of {len(s['payload'] or '')}")
                if not s["key"].startswith(r["key"] or "") or not (s["payload"] or "").startswith(r["payload"] or ""):
                    errors.append(f"{op}: {n}: the kept bytes are not a prefix of the original")
            dlq_cnt[cut is not None] += 1
        else:
            if d or len(o) != 1:
                errors.append(f"{op}: {n}: {len(o)} outputs, {len(d)} DLQ records (want it whole once)")
                continue
            k, v = o[0]
            whole += 1
            if k != s["key"] or v != s["payload"]:
                errors.append(f"{op}: {n}: output differs (key {len(k or '')} of {len(s['key'])}, "
                              f"value {len(v or '')} of {len(s['payload'] or '')} bytes)")
if aborts != "0":
    errors.append(f"aborted transactions: {aborts}")
print(f"# {whole} records out whole, {sum(dlq_cnt)} in the DLQ as too-large "
      f"({dlq_cnt[1]} cut to fit), {aborts} aborts")
for e in errors:
    print("ERROR:", e)
sys.exit(1 if errors else 0)
PY
if grep -q 'dropped' "$WORK/sluice-main.log"; then
    fail "a record was dropped: $(grep dropped "$WORK/sluice-main.log" | head -3)"
fi
echo "every record whole in its output or cut to fit in the DLQ; no abort"
