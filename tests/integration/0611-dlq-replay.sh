#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0611-dlq-replay — `sluice dlq replay` sends DLQ'd records back to the
# pipeline's input once their cause is fixed: each one once (read_committed),
# with its original key, value and headers and none of sluice's DLQ headers,
# and the pipeline then handles it; a run killed with SIGKILL half-way and
# run again still gives every record exactly once; a second run replays
# nothing; --dry-run commits nothing; --reason leaves the other records out
# (and passes over them for good).
#
# A delay pipeline whose allowed_targets does not match the target: N timers
# go to the DLQ (target-not-allowed), with one bad-delay record among them.
# Then allowed_targets is fixed and the pipeline restarted.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-delay.sh"

n=2000
dl_setup 2 "allowed_targets=$PFX.nothing.*"
sluice_up main "$conf"
echo "sluice ready"

seq 1 "$n" | sed 's/.*/k&:v&/' |
    produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=1s -H "x-extra=keep me"
echo "kbad:vbad" | produce "$in" -K: -H "sluice-target=$out" -H sluice-delay=soon -H "x-extra=bad"
dlq_full() { [ "$(count_records "$PFX.dlq")" -ge $((n + 1)) ]; }
wait_until 60 dlq_full || fail "only $(count_records "$PFX.dlq") of $((n + 1)) records in the DLQ within 60 s"
[ "$(count_records "$out")" -eq 0 ] || fail "records reached the target before the fix"
echo "$((n + 1)) records in the DLQ"
# Records the replay must not send back: a cut copy, a fired timer's copy
# (no source record), a record sluice did not write (no sluice-error).
echo "kcut:v" | produce "$PFX.dlq" -p 0 -K: -H "sluice-target=$out" -H sluice-delay=1s \
    -H sluice-error=target-not-allowed -H sluice-source-offset=1 -H "sluice-cut=key=4:4,value=5000:1,headers=3:3"
echo "ktimer:v" | produce "$PFX.dlq" -p 0 -K: -H x-extra=t -H sluice-error=target-not-allowed \
    -H sluice-timer-id=ktimer -H sluice-due=1
echo "kforeign:v" | produce "$PFX.dlq" -p 0 -K: -H "sluice-target=$out" -H sluice-delay=1s

# The fix: the target is allowed now.
sluice_kill main TERM
conf_set "$conf" "pipeline $PFX" "allowed_targets=$PFX.*"
sluice_up main "$conf"

replay() { "$SLUICE_BIN" dlq replay -c "$conf" "$PFX" --reason target-not-allowed "$@"; }

# A dry run says what it would do and commits nothing.
replay --dry-run >"$WORK/dry.out"
tail -3 "$WORK/dry.out"
grep -qF "would replay $n to $PFX.in, skipped 4 (1 other reason, 1 cut copy (sluice-cut), 1 no source record (fired timer or lost payload), 1 not a DLQ record (no sluice-error)); dry run" "$WORK/dry.out" ||
    fail "dry run: $(tail -1 "$WORK/dry.out")"
[ "$(grep -c '^would replay \[' "$WORK/dry.out")" -eq "$n" ] || fail "dry run: not $n lines"
[ "$(count_input_records "$in")" -eq $((n + 1)) ] || fail "the dry run produced records"

# A run killed with SIGKILL once its first transaction committed (each
# transaction waits SLUICE_TEST_REPLAY_SLEEP_MS before its commit).
SLUICE_TEST_REPLAY_SLEEP_MS=1500 "$SLUICE_BIN" dlq replay -c "$conf" "$PFX" --reason target-not-allowed \
    >"$WORK/run1.out" 2>&1 &
rpid=$!
some_replayed() { [ "$(count_input_records "$in")" -gt $((n + 1)) ]; }
wait_until 60 some_replayed || fail "the first replay committed nothing within 60 s"
kill -KILL "$rpid"
wait "$rpid" 2>/dev/null || true
half=$(($(count_input_records "$in") - n - 1))
note "killed the first replay after $half of $n records were committed"
[ "$half" -lt "$n" ] || fail "the replay ended before it was killed"

# The run again: it goes on from the committed offsets.
replay >"$WORK/run2.out" || fail "second replay failed: $(cat "$WORK/run2.out")"
tail -1 "$WORK/run2.out"
grep -q "^replayed $((n - half)) to $PFX.in, skipped " "$WORK/run2.out" ||
    fail "second replay: $(tail -1 "$WORK/run2.out"), want $((n - half)) replayed"
# And once more: nothing left, the bad-delay record passed over for good.
replay >"$WORK/run3.out" || fail "third replay failed"
grep -q "^replayed 0 to $PFX.in, skipped 0$" "$WORK/run3.out" || fail "third replay: $(tail -1 "$WORK/run3.out")"
note "second run: $(tail -1 "$WORK/run2.out"); third run: $(tail -1 "$WORK/run3.out")"

dl_wait_fired main "$n" 60 || fail "only $(count_records "$out") timers fired within 60 s"
consume_json "$in" >"$WORK/in.json"
consume_json "$out" >"$WORK/out.json"
consume_json "$PFX.dlq" >"$WORK/dlq.json"
python3 - "$WORK/in.json" "$WORK/out.json" "$WORK/dlq.json" "$n" "$out" <<'PY' || fail "replay check failed"
import sys
from records import load, replay_errors
n = int(sys.argv[4])
errors = replay_errors(load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3]), n, sys.argv[5])
print("\n".join(errors[:10]) or f"{n} records replayed once each and fired once each")
sys.exit(1 if errors else 0)
PY
sluice_alive main || fail "sluice exited"
echo "ok"
