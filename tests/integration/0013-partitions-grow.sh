#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0013-partitions-grow — the input of a running delay pipeline grows from 2
# to 3 partitions (tests/tools/addparts: kafka-topics --alter).  Its
# changelog and dlq still have 2, so sluice must not process the new
# partition: /readyz answers 503 naming the topics, their counts and the
# fix, an ERROR line says so, sluice_partition_mismatch counts the missing
# partitions, and timers on partition 2 do not fire (while timers produced
# after them on partitions 0 and 1 do).  After `sluice topics apply` grows
# the changelog and the dlq, without a restart, sluice gets ready again and
# every timer of partition 2 fires exactly once (read_committed), and its
# bad record reaches partition 2 of the dlq.
source "$(dirname "$0")/lib.sh"

tools=${SLUICE_TOOLS_DIR:-$(dirname "$SLUICE_BIN")/build/tools}
addparts=$tools/addparts
[ -x "$addparts" ] || fail "$addparts is missing: make build/tools/addparts (make test and make integration build it)"

in=$PFX.in
out=$PFX.out
dlq=$PFX.dlq
conf=$WORK/sluice.ini
n_new=20

base_conf "$conf"
# The consumer notices the new partition at its next metadata refresh
# (sluice's default: 30 s); sooner here.
echo "topic.metadata.refresh.interval.ms = 2000" >>"$conf"
cat >>"$conf" <<EOF

[pipeline $PFX]
type = delay
input = $in
input_partitions = 2
# Records go to the partition the producer names (-p), whatever their key.
reroute = false
EOF
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
"$SLUICE_BIN" topics create -c "$conf" "$out" --partitions 3 >/dev/null

sluice_start_http main "$conf"
sluice_wait_ready main "${SLUICE_PORTS[main]}" 60
echo "sluice ready on $in (2 partitions)"

# timers PARTITION PREFIX N — N timers due 1 s after they are read.
timers() {
    for i in $(seq 1 "$3"); do echo "$2$i:payload-$2$i"; done |
        produce "$in" -p "$1" -K: -H "sluice-target=$out" -H "sluice-delay=1s"
}
fired() { consume_all "$out" -f '%k\n' | grep -c "^$1" || true; }

timers 0 a 5
timers 1 b 5
wait_until 30 eval '[ "$(fired "[ab]")" -ge 10 ]' || fail "the first 10 timers did not fire"
echo "10 timers on partitions 0 and 1 fired"

"$addparts" "$BOOTSTRAP" "$in" 3 || fail "could not add a partition to $in"
[ "$(topic_partitions "$in")" -eq 3 ] || fail "$in does not have 3 partitions"
echo "$in grown to 3 partitions"

want_reason="input $in has 3 partitions but $PFX.changelog 2, $dlq 2: partitions 2 and up wait for \`sluice topics apply\`"
_waiting() {
    sluice_alive main || fail "sluice exited"
    [ "$(readyz main)" = 503 ] && readyz_body main | grep -Fq -- "$want_reason"
}
wait_until 60 _waiting || fail "/readyz did not say '$want_reason' within 60 s (last: $(readyz main) $(readyz_body main))"
echo "readyz: 503 $(readyz_body main)"

log_has main "error PARTITIONS pipeline $PFX: changelog topic $PFX.changelog has 2 partitions, its input $in has 3; run .sluice topics apply. \(it adds the missing partitions\)" ||
    fail "no ERROR line for the changelog"
log_has main "error PARTITIONS pipeline $PFX: dlq topic $dlq has 2 partitions, its input $in has 3" ||
    fail "no ERROR line for the dlq"
series="sluice_partition_mismatch{pipeline=\"$PFX\",topic=\"$PFX.changelog\"}"
[ "$(sluice_metric main "$series")" = 1 ] || fail "$series is '$(sluice_metric main "$series")', want 1"
series_w="sluice_partitions{pipeline=\"$PFX\",state=\"waiting\"}"
[ "$(sluice_metric main "$series_w")" = 1 ] || fail "$series_w is '$(sluice_metric main "$series_w")', want 1"
echo "ERROR lines and metrics say so"

# Timers on the new partition, and one bad record (no target: to the dlq);
# then timers on the old partitions, produced after them.
timers 2 n "$n_new"
echo "bad:no-target" | produce "$in" -p 2 -K: -H "sluice-delay=1s"
timers 0 c 5
timers 1 d 5
wait_until 30 eval '[ "$(fired "[cd]")" -ge 10 ]' || fail "the timers on partitions 0 and 1 did not fire while 2 waited"
[ "$(fired n)" -eq 0 ] || fail "timers of the unserved partition 2 fired: $(fired n)"
[ "$(count_records "$dlq")" -eq 0 ] || fail "the dlq got a record while partition 2 waited"
[ "$(grep -c 'error PARTITIONS pipeline .*: changelog' "$WORK/sluice-main.log")" -eq 1 ] ||
    fail "the ERROR line for the changelog was logged more than once"
[ "$(readyz main)" = 503 ] || fail "/readyz no longer 503 before apply"
echo "partition 2 waits: its timers did not fire, those of 0 and 1 did"

"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply.out"
cat "$WORK/apply.out"
grep -Eq "^grown +$PFX.changelog .*from 2 to 3 partitions" "$WORK/apply.out" || fail "apply did not grow the changelog"
grep -Eq "^grown +$dlq .*from 2 to 3 partitions" "$WORK/apply.out" || fail "apply did not grow the dlq"

wait_readyz main 200 60
echo "ready again after apply, without a restart"
log_has main "PARTITIONS pipeline $PFX: input $in grew from 2 to 3 partitions" || fail "no log line about serving partition 2"
[ "$(sluice_metric main "$series")" = 0 ] || fail "$series is '$(sluice_metric main "$series")' after apply, want 0"

wait_until 60 eval '[ "$(fired n)" -ge $n_new ]' || fail "only $(fired n) of $n_new timers of partition 2 fired within 60 s"
wait_records "$dlq" 1 30 || fail "the bad record of partition 2 did not reach the dlq"
no_pending() { "$SLUICE_BIN" inspect -c "$conf" "$PFX" | grep -q ': 0 pending timers'; }
wait_until 30 no_pending || fail "timers still pending: $("$SLUICE_BIN" inspect -c "$conf" "$PFX" | head -5)"
sluice_alive main || fail "sluice exited"

consume_json "$out" >"$WORK/out.json"
consume_json "$dlq" >"$WORK/dlq.json"
python3 - "$WORK/out.json" "$WORK/dlq.json" "$n_new" <<'PY' || fail "output check failed"
import json, sys
from collections import Counter
out = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
dlq = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
n = int(sys.argv[3])
ids = Counter(r["key"] for r in out)
want = {f"n{i}" for i in range(1, n + 1)} | {f"{p}{i}" for p in "abcd" for i in range(1, 6)}
errors = []
dups = {k: c for k, c in ids.items() if c > 1}
if dups: errors.append(f"fired more than once: {dups}")
if set(ids) != want: errors.append(f"missing {sorted(want - set(ids))}, unexpected {sorted(set(ids) - want)}")
for r in out:
    if r["key"].startswith("n") and r["payload"] != "payload-" + r["key"]:
        errors.append(f"wrong payload {r}")
def hdrs(r):
    h = r.get("headers") or []
    return {h[i]: h[i + 1] for i in range(0, len(h), 2)}
if len(dlq) != 1: errors.append(f"dlq holds {len(dlq)} records, want 1")
else:
    h = hdrs(dlq[0])
    if dlq[0]["key"] != "bad" or dlq[0]["partition"] != 2 or h.get("sluice-source-partition") != "2":
        errors.append(f"dlq record {dlq[0]}")
print(f"# {len(out)} timers fired ({n} on the new partition), each once; dlq: {len(dlq)} record in partition {dlq[0]['partition'] if dlq else '-'}")
for e in errors: print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
