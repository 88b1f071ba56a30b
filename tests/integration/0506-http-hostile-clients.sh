#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0506-http-hostile-clients — slow and idle clients cannot starve the
# probes.  With the default limits, 500 connections that trickle one byte
# of a request head every 2-5 s (half of them send their first byte at
# once) and 100 that send nothing are held open on each of the metrics
# address and the API, each reopened at once whenever the server closes
# it, all from 127.0.0.1 like the probes.  For 30 s
# meanwhile, /healthz, /readyz and /metrics and an authenticated API
# lookup, each on a new connection, one after another, must answer 200
# within 1 s every time; the worst latencies are printed.  Then one
# connection per port that sends a byte every 500 ms, never quiet for
# libmicrohttpd's inactivity timeout, is closed at the request deadline
# (metrics_request_timeout 5 s, api_request_timeout 10 s).  The guards'
# counters say what they closed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
hostile="python3 $(cd "$(dirname "$0")" && pwd)/hostile-clients.py"
: "${SLUICE_TEST_FLOOD_SECS:=30}"

base_conf "$conf"
mport=$(free_port)
aport=$(free_port)
conf_set "$conf" sluice metrics_listen="127.0.0.1:$mport" api_listen="127.0.0.1:$aport" \
    api_tokens_file="$WORK/tokens"
dl_pipeline "$conf" "$PFX" "$in" 2
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
topic_create "$out" 1
sluice_start main "$conf"
sluice_wait_ready main "$mport" 30
code=$(curl -s -o "$WORK/put" -w '%{http_code}' --max-time 10 -X PUT -H "Authorization: Bearer $token" \
    --data-binary "{\"target\":\"$out\",\"delay\":\"1h\",\"value\":\"v\"}" \
    "http://127.0.0.1:$aport/v1/pipelines/$PFX/timers/id0")
case "$code" in 200 | 201) ;; *) fail "PUT id0 → $code $(cat "$WORK/put")" ;; esac
lookup=/v1/pipelines/$PFX/timers/id0
# The lookup answers 200 once the owner has read the PUT.
_found() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H "Authorization: Bearer $token" "http://127.0.0.1:$aport$lookup")" = 200 ]; }
wait_until 15 _found || fail "the timer id0 is not found"
echo "sluice ready: metrics on $mport, API on $aport"

flood_pid=
_flood_cleanup() { [ -z "$flood_pid" ] || kill "$flood_pid" 2>/dev/null || true; }
CLEANUP_HOOKS+=(_flood_cleanup)

# --- the flood -------------------------------------------------------
$hostile flood $((SLUICE_TEST_FLOOD_SECS + 10)) "$WORK/flood.json" 500 100 "$mport" "$aport" \
    2>"$WORK/flood.err" &
flood_pid=$!
_up() { [ -e "$WORK/flood.json.up" ] || ! kill -0 "$flood_pid" 2>/dev/null; }
wait_until 20 _up || problem "the 1,200 hostile connections were not all open within 20 s"
kill -0 "$flood_pid" 2>/dev/null || fail "the flood client died: $(tail -3 "$WORK/flood.err")"
echo "1,200 hostile connections open; probing for ${SLUICE_TEST_FLOOD_SECS}s"
probe_ok=1
$hostile probe "$SLUICE_TEST_FLOOD_SECS" "$WORK/probe.json" "$mport" "$aport" "$token" "$lookup" ||
    probe_ok=0
sluice_alive main || fail "sluice died under the flood"
python3 - "$WORK/probe.json" <<'PY' | while read -r l; do note "$l"; done
import json, sys
d = json.load(open(sys.argv[1]))
for name, r in d["targets"].items():
    print(f"{name}: {r['n']} requests under the flood, worst {r['worst_s'] * 1000:.0f} ms, "
          f"median {(r['median_s'] or 0) * 1000:.1f} ms, {len(r['failures'])} failed"
          + (f" (first: {r['failures'][0]})" if r["failures"] else ""))
g = d["max_gauges"]
print(f"connections sluice held at most: metrics {g['sluice_http_connections']:.0f}, "
      f"API {g['sluice_api_connections']:.0f}")
PY
[ "$probe_ok" = 1 ] || problem "a probe failed or took over 1 s under the flood (see above)"
kill "$flood_pid" 2>/dev/null || true
wait "$flood_pid" 2>/dev/null || true
flood_pid=
closed() { metric_value "$mport" "sluice_${1}_connections_closed_total{reason=\"$2\"}"; }
for s in http api; do
    note "$s connections closed by sluice: client_limit $(closed "$s" client_limit), limit $(closed "$s" limit)," \
        "deadline $(closed "$s" deadline), refused $(closed "$s" refused)"
    [ "$(closed "$s" client_limit)" -gt 0 ] 2>/dev/null ||
        problem "sluice_${s}_connections_closed_total{reason=\"client_limit\"} did not count the flood"
done

# --- the deadline ----------------------------------------------------
# A request that never goes quiet is closed at its deadline all the same.
$hostile deadline 20 "$WORK/deadline.json" "$mport" "$aport"
held=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d[sys.argv[2]], d[sys.argv[3]])' \
    "$WORK/deadline.json" "$mport" "$aport")
note "a request trickled every 500 ms was held: metrics ${held% *} s (deadline 5 s), API ${held#* } s (deadline 10 s)"
python3 - "$held" <<'PY' || problem "the trickled requests were not closed at their deadlines (held: $held s)"
import sys
m, a = sys.argv[1].split()
ok = lambda v, lo: v != "None" and lo <= float(v) < lo + 1.5
sys.exit(0 if ok(m, 5) and ok(a, 10) else 1)
PY
[ "$(closed http deadline)" -gt 0 ] 2>/dev/null && [ "$(closed api deadline)" -gt 0 ] 2>/dev/null ||
    problem "the deadline counters did not count the trickled requests"
problems_verdict
sluice_kill main TERM
echo "PASS"
