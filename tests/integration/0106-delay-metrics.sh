#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0106-delay-metrics — the HTTP endpoints of a running delay pipeline:
# /healthz and /readyz answer 200 once it runs, /metrics is Prometheus text,
# and after known input its counters and gauges agree with what the test
# produced:
#   N good timers (fire in 1 s), K far timers (1 h), C of the K cancelled,
#   M1 records with a bad sluice-delay, M2 without a target.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

pl=$PFX
N=40 K=12 C=5 M1=3 M2=2

dl_setup 4
sluice_up main "$conf"
base=http://127.0.0.1:${SLUICE_PORTS[main]}
for path in /healthz /readyz /metrics; do
    code=$(http_status "$base$path")
    [ "$code" = 200 ] || fail "GET $path answered $code, expected 200"
done
note "/healthz, /readyz, /metrics: 200"

seq 1 "$N" | sed 's/.*/good-&:g&/' |
    produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s
seq 1 "$K" | sed 's/.*/far-&:f&/' |
    produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1h
seq 1 "$C" | sed 's/.*/far-&:/' | produce "$in" -K: -Z
seq 1 "$M1" | sed 's/.*/bad-&:b&/' |
    produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=later
seq 1 "$M2" | sed 's/.*/notarget-&:n&/' | produce "$in" -K: -H sluice-delay=1s
echo "produced N=$N good, K=$K far, C=$C cancels, M1=$M1 bad-delay, M2=$M2 missing-target"

wait_records "$out" "$N" 30 || fail "only $(count_records "$out") of $N good timers fired"
# How long after its produce each good timer fired: a timer read more than
# its delay after its record's timestamp is due on arrival and counted in
# sluice_timers_due_on_arrival_total instead of the lateness histogram.
consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
python3 - "$WORK/in.json" "$WORK/out.json" <<'PY'
import sys
from records import load
src = {r["key"]: r["ts"] for r in load(sys.argv[1])}
ms = sorted(r["ts"] - src[r["key"]] for r in load(sys.argv[2]) if r["key"] in src)
print(f"# good timers: produced -> fired ms min={ms[0]} p50={ms[len(ms) // 2]} max={ms[-1]} (delay 1000)")
PY

m() { sluice_metric main "$1"; }
series() {
    cat <<EOF
sluice_records_in_total{pipeline="$pl"} $((N + K + C + M1 + M2))
sluice_records_out_total{pipeline="$pl"} $N
sluice_records_dlq_total{pipeline="$pl",reason="bad-delay"} $M1
sluice_records_dlq_total{pipeline="$pl",reason="missing-target"} $M2
sluice_timers_pending{pipeline="$pl"} $((K - C))
sluice_timers_scheduled_total{pipeline="$pl"} $((N + K))
sluice_timers_cancelled_total{pipeline="$pl"} $C
sluice_timer_lateness_seconds_count{pipeline="$pl"} $N
EOF
}
agree() {
    local s want got
    while read -r s want; do
        got=$(m "$s")
        [ "$got" = "$want" ] || return 1
    done < <(series)
}
if ! wait_until 20 agree; then
    while read -r s want; do echo "  $s = '$(m "$s")', expected $want" >&2; done < <(series)
    echo "  sluice_timers_due_on_arrival_total = '$(m "sluice_timers_due_on_arrival_total{pipeline=\"$pl\"}")'" >&2
    fail "metrics disagree with the input"
fi
while read -r s want; do note "$s $want"; done < <(series)

# Exactly N reached the target (no far or bad record did), and the DLQ
# holds exactly M1 + M2.
[ "$(count_records "$out")" -eq "$N" ] || fail "target holds $(count_records "$out") records, expected $N"
[ "$(count_records "$pl.dlq")" -eq $((M1 + M2)) ] ||
    fail "DLQ holds $(count_records "$pl.dlq") records, expected $((M1 + M2))"

# The whole page is well-formed Prometheus text: comments, or
# name{labels} value.
curl -s "$base/metrics" >"$WORK/metrics.txt"
python3 - "$WORK/metrics.txt" <<'PY' || fail "/metrics is not valid Prometheus text"
import re, sys
line_re = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+]?([0-9.eE+-]+|NaN|\+Inf|-Inf)( [0-9]+)?$')
bad = [l for l in open(sys.argv[1]).read().splitlines()
       if l and not l.startswith("#") and not line_re.match(l)]
for l in bad[:10]:
    print("bad line:", l, file=sys.stderr)
n = sum(1 for l in open(sys.argv[1]) if l.strip() and not l.startswith("#"))
print(f"# /metrics: {n} series, {len(bad)} malformed lines")
sys.exit(1 if bad else 0)
PY
# Every commit's time is split into its phases: flush, deliver and end
# are observed once per commit, offsets at most once, and together they
# add up to sluice_txn_commit_seconds.
python3 - "$WORK/metrics.txt" <<'PY' || fail "sluice_txn_commit_phase_seconds disagrees with sluice_txn_commit_seconds"
import re, sys
v = {}
for l in open(sys.argv[1]):
    m = re.match(r'^(sluice_txn_commit(?:_phase)?_seconds_(?:sum|count))(?:\{phase="(\w+)"\})? (\S+)$', l)
    if m:
        v[(m.group(1), m.group(2))] = float(m.group(3))
n = v.get(("sluice_txn_commit_seconds_count", None), 0)
total = v.get(("sluice_txn_commit_seconds_sum", None), 0)
cnt = {p: v.get(("sluice_txn_commit_phase_seconds_count", p)) for p in ("flush", "offsets", "deliver", "end")}
parts = sum(v.get(("sluice_txn_commit_phase_seconds_sum", p), 0) for p in cnt)
print(f"# commits {n:.0f} ({total * 1000:.1f} ms), phases {cnt} ({parts * 1000:.1f} ms)")
ok = n > 0 and all(cnt[p] == n for p in ("flush", "deliver", "end")) and cnt["offsets"] is not None and cnt["offsets"] <= n
# Offsets a transaction held already are not observed: a few µs each.
ok = ok and parts <= total + 1e-6 and total - parts <= 0.001 * n
sys.exit(0 if ok else 1)
PY
for path in /healthz /readyz; do
    code=$(http_status "$base$path")
    [ "$code" = 200 ] || fail "GET $path answered $code after the run, expected 200"
done

# A restarted process rebuilds its state: the pending gauge comes back from
# the changelog, and the counters start from zero.
sluice_kill main TERM || fail "sluice exited with status $? on SIGTERM"
sluice_up main "$conf"
pending=$(m "sluice_timers_pending{pipeline=\"$pl\"}")
in_after=$(m "sluice_records_in_total{pipeline=\"$pl\"}")
note "after a restart: sluice_timers_pending $pending, sluice_records_in_total $in_after"
[ "$pending" = $((K - C)) ] || fail "after a restart sluice_timers_pending is '$pending', expected $((K - C))"
[ "$in_after" = 0 ] || fail "after a restart sluice_records_in_total is '$in_after', expected 0 (input already committed)"
echo "PASS"
