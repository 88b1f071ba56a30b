#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0032-ops-metrics — every sluice metric named by the Grafana dashboard
# (ops/grafana/*.json) and the alert rules (ops/prometheus/alerts.yaml)
# exists in /metrics of a running sluice, so a renamed metric or label value
# cannot silently empty a panel or disarm an alert.
#
# One sluice runs a delay, a throttle and a debounce pipeline, and the HTTP
# API (its metrics are on the dashboard); a few records
# go through each (timers fired, one to the DLQ; a key over its rate, so a
# backlog drains; a debounce group flushed), so the histograms have samples
# and the labelled series exist.  Then tests/ops/metric_names.py parses
# every PromQL expression and checks each selector's metric, labels and
# label values against the page (see that file).  Last, every family on the
# page must be named in the metrics table of docs/operations.md, so none goes
# undocumented.
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
venv=$root/build/ops-venv
if [ ! -e "$venv/ok" ]; then
    make -s -C "$root" build/ops-venv/ok >"$WORK/ops-venv.log" 2>&1 ||
        { cat "$WORK/ops-venv.log" >&2; fail "make build/ops-venv/ok failed"; }
fi

conf=$WORK/sluice.ini
base_conf "$conf"
echo "tok-$RANDOM" >"$WORK/tokens"
conf_set "$conf" sluice api_listen="127.0.0.1:$(free_port)" api_tokens_file="$WORK/tokens"
cat >>"$conf" <<EOF

[pipeline $PFX-d]
type = delay
input = $PFX-d.in
input_partitions = 2
default_target = $PFX-d.out

[pipeline $PFX-t]
type = throttle
input = $PFX-t.in
input_partitions = 2
output = $PFX-t.out
default_rate = 10/s

[pipeline $PFX-b]
type = debounce
input = $PFX-b.in
input_partitions = 2
output = $PFX-b.out
idle = 200ms
EOF
for t in d t b; do topic_create "$PFX-$t.out" 2; done
"$SLUICE_BIN" topics apply -c "$conf" >"$WORK/apply.log" || {
    cat "$WORK/apply.log" >&2
    fail "sluice topics apply failed"
}

port=$(free_port)
SLUICE_METRICS_LISTEN=127.0.0.1:$port sluice_start main "$conf"
sluice_wait_ready main "$port" 30

seq 1 20 | sed 's/.*/timer-&:t&/' | produce "$PFX-d.in" -K: -H sluice-delay=500ms
echo 'bad-1:b' | produce "$PFX-d.in" -K: -H sluice-delay=later
seq 1 30 | sed 's/.*/A:a&/' | produce "$PFX-t.in" -K:
seq 1 10 | sed 's/.*/g1:i&/' | produce "$PFX-b.in" -K: -H sluice-item=x
echo "produced: 20 timers + 1 bad delay, 30 records for one throttle key (rate 10/s), 10 debounce items"

m() { metric_value "$port" "$1"; }
fed() {
    [ "$(m "sluice_timer_lateness_seconds_count{pipeline=\"$PFX-d\"}")" = 20 ] &&
        [ "$(m "sluice_records_dlq_total{pipeline=\"$PFX-d\",reason=\"bad-delay\"}")" = 1 ] &&
        [ "$(m "sluice_throttle_drained_total{pipeline=\"$PFX-t\"}")" = 20 ] &&
        [ "$(m "sluice_debounce_flush_lateness_seconds_count{pipeline=\"$PFX-b\"}")" = 1 ]
}
wait_until 30 fed || fail "the records did not go through within 30 s:" \
    "fired $(m "sluice_timer_lateness_seconds_count{pipeline=\"$PFX-d\"}")," \
    "drained $(m "sluice_throttle_drained_total{pipeline=\"$PFX-t\"}")," \
    "flushed $(m "sluice_debounce_flush_lateness_seconds_count{pipeline=\"$PFX-b\"}")"
note "20 timers fired, 1 in the DLQ, 20 throttled records drained, 1 debounce batch"

curl -s --max-time 5 "http://127.0.0.1:$port/metrics" >"$WORK/metrics.txt" || fail "GET /metrics failed"
"$venv/bin/python" "$root/tests/ops/metric_names.py" --root "$root" "$WORK/metrics.txt" ||
    fail "the dashboard or the alert rules name metrics that /metrics lacks (above)"
# The table abbreviates: `sluice_timers_scheduled_total`,
# `_rescheduled_total` is sluice_timers_ + "rescheduled_total".
python3 - "$root/docs/operations.md" "$WORK/metrics.txt" <<'PY' || fail "families on /metrics that the metrics table of docs/operations.md lacks (above)"
import re, sys
doc, page = (open(f).read() for f in sys.argv[1:3])
section = doc.split("\n## Metrics and health", 1)[1].split("\n## ", 1)[0]
named = set()
for row in section.splitlines():
    if not row.startswith("| `"):
        continue
    prefix = ""
    for tok in re.findall(r"`([a-z_]+)`", row.split("|")[1]):
        if tok.startswith("_") and prefix:
            tok = prefix + tok
        else:
            prefix = "_".join(tok.split("_")[:2])
        named.add(tok)
families = re.findall(r"^# TYPE (\S+) ", page, re.M)
missing = [f for f in families if f not in named]
for f in missing:
    print("not in the metrics table of docs/operations.md:", f)
print(f"# {len(families)} families on /metrics, {len(families) - len(missing)} of them in docs/operations.md")
sys.exit(1 if missing or not families else 0)
PY
rss=$(m process_resident_memory_bytes)
note "RSS of this sluice (three small pipelines): $((${rss%.*} / 1048576)) MiB"
sluice_kill main TERM || fail "sluice exited with status $? on SIGTERM"
echo PASS
