# SPDX-License-Identifier: Apache-2.0
# lib-throttle.sh — the setup the throttle integration tests (03NN-*.sh)
# share; source it after lib.sh.  Not a test itself (run.sh runs NNNN-*.sh
# only).
#
# The names a throttle test works with, set here (a test may set its own):
#   in    $PFX.in          input of the pipeline $PFX
#   out   $PFX.out         its output
#   conf  $WORK/sluice.ini
# and the pipeline's own topics: $PFX.rates, $PFX.overflow, $PFX.dlq.
#
#   tl_pipeline CONF NAME INPUT OUTPUT PARTITIONS [key=value ...]
#                          appends a [pipeline NAME] of type throttle
#   tl_setup PARTITIONS [key=value ...]
#                          writes $conf (base_conf and the pipeline $PFX
#                          from $in to $out, with these keys), creates $out
#                          and the pipeline's topics (topics apply), with
#                          PARTITIONS each
#   tl_rates KEY:RATE ...  records on $PFX.rates, one per argument
#   tl_metric METRIC [NAME]
#                          sluice_throttle_METRIC of the pipeline $PFX on
#                          instance NAME (main)
#   tl_produce_keys KEYS PER_KEY [kcat args]
#                          KEYS x PER_KEY messages kK-SSS under key kK
#                          (K < KEYS, SSS < PER_KEY), round by round
#   tl_exactly_once JSON KEYS PER_KEY [HEADER=VALUE]
#                          the verdict on tl_produce_keys's messages in an
#                          output read with consume_json: each exactly once,
#                          under its own key, in per-key input order (and
#                          with that header); prints the summary line
#
# Instances are started with sluice_up (lib.sh).

in=$PFX.in
out=$PFX.out
conf=$WORK/sluice.ini

tl_pipeline() {
    local conf=$1 name=$2 input=$3 output=$4 parts=$5
    shift 5
    pipeline_section "$conf" "$name" throttle input="$input" input_partitions="$parts" \
        output="$output" "$@"
}

tl_setup() {
    local parts=$1
    shift
    base_conf "$conf"
    tl_pipeline "$conf" "$PFX" "$in" "$out" "$parts" "$@"
    topic_create "$out" "$parts"
    "$SLUICE_BIN" topics apply -c "$conf" >/dev/null
}

tl_rates() {
    printf '%s\n' "$@" | produce "$PFX.rates" -K:
}

tl_metric() {
    sluice_metric "${2:-main}" "sluice_throttle_$1{pipeline=\"$PFX\"}"
}

tl_produce_keys() {
    local keys=$1 per_key=$2
    shift 2
    python3 -c "
for s in range($per_key):
    for k in range($keys):
        print(f'k{k}:k{k}-{s:03d}')" | produce "$in" -K: "$@"
}

tl_exactly_once() {
    python3 - "$@" <<'PY'
import sys
from collections import Counter, defaultdict
from records import load, hdrs

out = load(sys.argv[1])
keys, per_key = int(sys.argv[2]), int(sys.argv[3])
header = sys.argv[4].split("=", 1) if len(sys.argv) > 4 else None
errors = []
want = {f"k{k}-{s:03d}" for k in range(keys) for s in range(per_key)}
seen = Counter(r["payload"] for r in out)
dups = {p: n for p, n in seen.items() if n > 1}
missing = want - set(seen)
extra = set(seen) - want
if dups: errors.append(f"{len(dups)} messages more than once, e.g. {list(dups.items())[:5]}")
if missing: errors.append(f"{len(missing)} messages missing, e.g. {sorted(missing)[:5]}")
if extra: errors.append(f"{len(extra)} unexpected messages, e.g. {sorted(extra)[:5]}")
by_key = defaultdict(list)
for r in sorted(out, key=lambda r: (r["partition"], r["offset"])):
    by_key[r["key"]].append(r["payload"])
    if r["payload"].split("-")[0] != r["key"]:
        errors.append(f"record {r['payload']} under key {r['key']}")
    if header and hdrs(r).get(header[0]) != header[1]:
        errors.append(f"record {r['payload']} lost its header: {r.get('headers')}")
        break
disorder = [k for k, v in by_key.items() if v != sorted(v)]
if disorder: errors.append(f"{len(disorder)} keys out of input order, e.g. {disorder[:3]}: {by_key[disorder[0]][:12]}")
print(f"# {len(out)} records out for {len(want)} messages: {len(dups)} duplicated, {len(missing)} missing, {len(disorder)} keys out of order")
for e in errors[:10]:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
}
