#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0612-dlq-replay-api — the DLQ replay through the HTTP API (POST and GET
# /v1/pipelines/{p}/dlq/replay): a dry run reports what would go back (the
# count, the skips by why, each record's key, size and replayed headers)
# and commits nothing; a replay sends each DLQ'd record back to the input
# once (read_committed) with its original key, value and headers and none
# of sluice's DLQ headers, and the pipeline then fires it; while it runs a
# second POST is refused 409 and sluice keeps answering (/readyz, the
# API); a replay after it sends nothing.  Errors use the API's error shape.
#
# As 0611: a delay pipeline whose allowed_targets does not match the
# target sends N timers to the DLQ (target-not-allowed), one bad-delay
# record among them, then allowed_targets is fixed and sluice restarted.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

n=300
token=tok-$RANDOM-$RANDOM
echo "$token" >"$WORK/tokens"
api_port=$(free_port)
dl_setup 2 "allowed_targets=$PFX.nothing.*"
conf_set "$conf" sluice api_listen="127.0.0.1:$api_port" api_tokens_file="$WORK/tokens"
sluice_up main "$conf"
API=http://127.0.0.1:$api_port/v1
echo "sluice ready, API on $api_port"

# api METHOD PATH [BODY] — prints "STATUS BODY".
api() {
    local m=$1 p=$2 body=${3:-} code
    local args=(-s -o "$WORK/body" -w '%{http_code}' --max-time 10 -X "$m"
        -H "Authorization: Bearer $token" -H 'Content-Type: application/json')
    [ -z "$body" ] || args+=(--data-binary "$body")
    rm -f "$WORK/body"
    code=$(curl "${args[@]}" "$API$p") || true
    echo "$code $(cat "$WORK/body" 2>/dev/null)"
}
# expect STATUS CODE METHOD PATH [BODY] — the answer has this status and,
# unless CODE is empty, this error code in the Error shape {code, message}.
expect() {
    local want=$1 code=$2 got
    shift 2
    got=$(api "$@")
    [ "${got%% *}" = "$want" ] || fail "$1 $2 → $got (want $want)"
    if [ -n "$code" ]; then
        echo "${got#* }" | python3 -c 'import json,sys; e=json.load(sys.stdin); sys.exit(set(e) != {"code", "message"} or e["code"] != sys.argv[1])' "$code" ||
            fail "$1 $2 ${3:-} → $got (want the error $code)"
    fi
}
R=/pipelines/$PFX/dlq/replay

seq 1 "$n" | sed 's/.*/k&:v&/' |
    produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s -H "x-extra=keep me"
echo "kbad:vbad" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=soon -H "x-extra=bad"
dlq_full() { [ "$(count_records "$PFX.dlq")" -ge $((n + 1)) ]; }
wait_until 60 dlq_full || fail "only $(count_records "$PFX.dlq") of $((n + 1)) records in the DLQ within 60 s"
[ "$(count_records "$out")" -eq 0 ] || fail "records reached the target before the fix"
# Not to be sent back: a cut copy, a fired timer's copy, a foreign record.
echo "kcut:v" | produce "$PFX.dlq" -p 0 -K: -H "sluice-target=$out" -H sluice-delay=1s \
    -H sluice-error=target-not-allowed -H sluice-source-offset=1 -H "sluice-cut=key=4:4,value=5000:1,headers=3:3"
echo "ktimer:v" | produce "$PFX.dlq" -p 0 -K: -H x-extra=t -H sluice-error=target-not-allowed \
    -H sluice-timer-id=ktimer -H sluice-due=1
echo "kforeign:v" | produce "$PFX.dlq" -p 0 -K: -H "sluice-target=$out" -H sluice-delay=1s
echo "$((n + 1)) records in the DLQ, and 3 that are not to be replayed"

# The fix; each replay transaction waits 3 s before its commit, so that
# the replay below is seen running.
sluice_kill main TERM
conf_set "$conf" "pipeline $PFX" "allowed_targets=$PFX.*"
SLUICE_TEST_REPLAY_SLEEP_MS=3000 sluice_up main "$conf"

# Errors, in the API's shape.
expect 404 no-replay GET "$R"
expect 404 not-found POST "/pipelines/nope/dlq/replay" '{}'
expect 405 method-not-allowed DELETE "$R"
expect 400 bad-body POST "$R" '{"reasons": 3}'
expect 400 bad-body POST "$R" '{"since": "yesterday"}'
expect 400 bad-body POST "$R" '{"limit": -1}'
expect 400 bad-body POST "$R" '{"dry": true}'
expect 400 bad-body POST "$R" '[1]'
expect 404 no-replay GET "$R"

# state_of — GET's answer, in $WORK/state.json; 0 once it is not running.
ended() {
    local got
    got=$(api GET "$R")
    [ "${got%% *}" = 200 ] || fail "GET $R → $got"
    echo "${got#* }" >"$WORK/state.json"
    ! grep -q '"state":"running"' "$WORK/state.json"
}

# A dry run: what would go back, nothing committed.
got=$(api POST "$R" '{"reasons": ["target-not-allowed"], "dry_run": true}')
[ "${got%% *}" = 202 ] || fail "dry run: POST → $got"
wait_until 60 ended || fail "the dry run did not end within 60 s: $(cat "$WORK/state.json")"
cp "$WORK/state.json" "$WORK/dry.json"
python3 - "$WORK/dry.json" "$n" "$PFX" "$out" <<'PY' || fail "dry run: $(head -c 600 "$WORK/dry.json")"
import json, sys
s, n, pfx, out = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], sys.argv[4]
err = []
want = {"state": "done", "dry_run": True, "replayed": n, "skipped": 4, "dlq": pfx + ".dlq",
        "input": pfx + ".in", "group": pfx + "-dlq-replay." + pfx, "error": None,
        "skipped_by": {"reason": 1, "time": 0, "cut": 1, "no-source": 1, "not-dlq": 1}}
for k, v in want.items():
    if s.get(k) != v:
        err.append(f"{k}: {s.get(k)!r}, want {v!r}")
if s["options"]["reasons"] != ["target-not-allowed"]:
    err.append(f"options: {s['options']}")
parts = s.get("partitions") or []
# next: past the last record read; end may be past a transaction marker.
if (len(parts) != 2 or sum(p["replayed"] for p in parts) != n
        or sum(p["skipped"] for p in parts) != 4 or any(not 0 < p["next"] <= p["end"] for p in parts)):
    err.append(f"partitions: {parts}")
recs = s["records"]
if len(recs) != 100 or s["records_not_listed"] != n + 3 - 100:
    err.append(f"{len(recs)} records listed, {s['records_not_listed']} not")
for r in recs:
    if r["skipped"] is None:
        if not (r["key"].startswith("k") and r["key"][1:].isdigit()) or r["value_bytes"] != len(r["key"]):
            err.append(f"record {r}")
        hs = [(h["name"], h["value"]) for h in r["headers"]]
        if hs != [("sluice-target", out), ("sluice-delay", "1s"), ("x-extra", "keep me")]:
            err.append(f"headers of {r['key']}: {hs}")
    elif (r["key"], r["skipped"]) not in (("kcut", "cut"), ("ktimer", "no-source"), ("kforeign", "not-dlq")):
        err.append(f"skipped {r}")
print("\n".join(err[:10]) or f"dry run: would replay {n}, skipped 4, {len(recs)} records listed")
sys.exit(1 if err else 0)
PY
[ "$(count_input_records "$in")" -eq $((n + 1)) ] || fail "the dry run produced records"

# The replay: 202 with its state; while it runs (its commit waits 3 s) a
# second one is refused, and sluice answers.
got=$(api POST "$R" '{"reasons": "target-not-allowed"}')
[ "${got%% *}" = 202 ] || fail "replay: POST → $got"
grep -q '"state":"running"' <<<"$got" || fail "replay: POST → $got, want it running"
t0=$(now_ms)
expect 409 replay-running POST "$R" '{}'
[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${SLUICE_PORTS[main]}/readyz")" = 200 ] ||
    fail "/readyz not 200 within 2 s while the replay runs"
expect 200 "" GET /
grep -q '"state":"running"' <<<"$(api GET "$R")" || fail "the replay ended before the checks made while it runs"
note "409, /readyz and GET /v1 answered while the replay ran, within $(($(now_ms) - t0)) ms"
wait_until 90 ended || fail "the replay did not end within 90 s: $(cat "$WORK/state.json")"
python3 - "$WORK/state.json" "$n" <<'PY' || fail "replay: $(head -c 600 "$WORK/state.json")"
import json, sys
s, n = json.load(open(sys.argv[1])), int(sys.argv[2])
ok = s["state"] == "done" and not s["dry_run"] and s["replayed"] == n and s["skipped"] == 4 and s["error"] is None
print(f"replay: {s['state']}, replayed {s['replayed']}, skipped {s['skipped_by']}")
sys.exit(0 if ok else 1)
PY

# Once more: nothing left (the bad-delay record passed over for good).
got=$(api POST "$R" '{"reasons": ["target-not-allowed"]}')
[ "${got%% *}" = 202 ] || fail "third: POST → $got"
wait_until 60 ended || fail "the third replay did not end within 60 s"
grep -q '"state":"done"' "$WORK/state.json" && grep -q '"replayed":0,' "$WORK/state.json" &&
    grep -q '"skipped":0,' "$WORK/state.json" || fail "third replay: $(head -c 400 "$WORK/state.json")"

dl_wait_fired main "$n" 60
consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$WORK/dlq.json" "$n" "$out" <<'PY' || fail "replay check failed"
import sys
from records import load, replay_errors
n = int(sys.argv[4])
errors = replay_errors(load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3]), n, sys.argv[5])
print("\n".join(errors[:10]) or f"{n} records replayed once each, with their key, value and headers, and fired once each")
sys.exit(1 if errors else 0)
PY
log_has main 'replay of .* done: replayed' || fail "no log line of the replay's end"
sluice_alive main || fail "sluice exited"
echo "ok"
