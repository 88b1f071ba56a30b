#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0322-throttle-hostile-headers — input bytes that reach a log line or an
# error header are escaped: printable ASCII as it is, every other byte as
# \xNN.  A producer cannot forge a log line with a newline or drive an
# operator's terminal with an ESC sequence.
#
#   pipeline .d (with a DLQ): sluice-ttl holding ESC [2J, a newline and a
#     forged line goes to the DLQ as bad-ttl; its sluice-error-detail is
#     printable and shows \x1b[2J\x0a.
#   pipeline .n (dlq = none): the same in sluice-deadline is logged (no
#     DLQ: dropped) on one line, escaped.
#   rates of .d: a key holding ESC and a value holding a newline are logged
#     escaped (the record is malformed: rejected and counted).
# The log must hold no ESC byte and no line that starts with the forged text.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-throttle.sh"

nin=$PFX.n.in
evil=$'\x1b[2J\nFORGED 2026-01-01T00:00:00Z crit INIT owned'

base_conf "$conf"
tl_pipeline "$conf" "$PFX.d" "$in" "$out" 1
tl_pipeline "$conf" "$PFX.n" "$nin" "$out" 1 dlq=none
topic_create "$out" 1
"$SLUICE_BIN" topics apply -c "$conf" >/dev/null
sluice_up main "$conf"
echo "sluice ready"

echo 'A:ttl' | produce "$in" -K: -H "sluice-ttl=$evil"
echo 'A:deadline' | produce "$nin" -K: -H "sluice-deadline=$evil"
printf 'K\x1b[31m:9/s\nFORGED rate|' | produce "$PFX.d.rates" -K: -D '|'

m() { sluice_metric main "$1"; }
dropped() { [ "$(m "sluice_records_dlq_total{pipeline=\"$PFX.n\",reason=\"bad-deadline\"}")" = 1 ]; }
wait_until 20 dropped || fail "the bad sluice-deadline of .n was not counted"
rejected() { [ "$(m "sluice_throttle_rates_rejected_total{pipeline=\"$PFX.d\"}")" = 1 ]; }
wait_until 20 rejected || fail "the malformed rates record was not counted"
wait_records "$PFX.d.dlq" 1 20 || fail "the bad sluice-ttl did not reach the DLQ"
sluice_alive main || fail "sluice exited"

log=$WORK/sluice-main.log
if grep -q $'\x1b' "$log"; then fail "an ESC byte reached the log"; fi
if grep -q '^FORGED' "$log"; then fail "a forged line reached the log: $(grep '^FORGED' "$log")"; fi
grep -F 'bad-deadline: sluice-deadline '"'"'\x1b[2J\x0aFORGED 2026-01-01T00:00:00Z crit INIT owned'"'" "$log" >/dev/null ||
    fail "the dropped record's log line does not show the escaped header: $(grep 'no DLQ' "$log")"
grep -F "key 'K\\x1b[31m'" "$log" | grep -F 'ignored' >/dev/null ||
    fail "the rejected rates record's log line does not show the escaped key: $(grep RATES "$log")"
note "log: $(grep -F 'no DLQ' "$log" | cut -c1-160)"

consume_json "$PFX.d.dlq" >"$WORK/dlq.json"
python3 - "$WORK/dlq.json" <<'PY' || fail "DLQ check failed"
import sys
from records import load, hdrs as hd
dlq = load(sys.argv[1])
errors = []
if len(dlq) != 1:
    errors.append(f"DLQ holds {len(dlq)} records, expected 1")
else:
    h = hd(dlq[0])
    d = h.get("sluice-error-detail") or ""
    print(f"# sluice-error: {h.get('sluice-error')}, detail: {d}")
    if h.get("sluice-error") != "bad-ttl":
        errors.append(f"sluice-error {h.get('sluice-error')!r}, expected bad-ttl")
    if any(not 0x20 <= ord(c) < 0x7f for c in d):
        errors.append(f"detail is not printable ASCII: {d!r}")
    if "\\x1b[2J\\x0aFORGED" not in d:
        errors.append(f"detail does not show the escaped bytes: {d!r}")
    # The original header itself is passed on untouched (it is the record).
    if h.get("sluice-ttl") is None or "\x1b" not in h["sluice-ttl"]:
        errors.append("the original sluice-ttl header was not kept as it came")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
