#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0213-debounce-commit-linger — deadlines close together go out in one
# transaction.  Each round writes two groups' items ~20 ms apart; their
# deadlines (idle after the read) are as far apart.  A commit started at the
# first deadline would take that batch alone, and the second would wait for
# it to end before its own commit: two transactions, the coordinator's
# markers twice.  sluice lingers, from the first batch, for deadlines due
# within its window (10 ms; here 60 ms, SLUICE_TEST_COMMIT_LINGER_MS, so
# that a busy machine's timing still falls inside it), so both batches
# commit together: in the output partition the second batch follows the
# first at the next offset, with no transaction marker between them.
#
# commit_interval = 60s: no periodic commit lands between the two
# deadlines; only flushes ask for commits.  A round whose deadlines came
# in the same ms (read together) or more than 50 ms apart is not judged; at
# least 3 of the rounds must be, and every judged round must be one
# transaction.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-debounce.sh"

db_setup 1 idle=300ms max_age=60s
conf_set "$conf" sluice commit_interval=60s
db_start main "$conf" SLUICE_TEST_COMMIT_LINGER_MS=60
echo "sluice ready on $in -> $out"

rounds=16
for ((r = 1; r <= rounds; r++)); do
    # Two producers, the second started 20 ms after the first: the items
    # reach sluice about that far apart (kcat reads all of its input
    # before it sends, so one kcat would send both at once).
    echo "A$r:{\"n\":$r}" | produce "$in" -K: &
    a=$!
    sleep 0.02
    echo "B$r:{\"n\":$r}" | produce "$in" -K: || fail "kcat failed"
    wait "$a" || fail "kcat failed"
    wait_records "$out" $((2 * r)) 20 || fail "round $r: its two batches did not come out within 20 s"
done
sluice_alive main || fail "sluice exited"

consume_json "$out" >"$WORK/out.json"
python3 - "$WORK" "$rounds" <<'PY' || fail "linger check failed"
import sys
import dbcheck

w, rounds = sys.argv[1], int(sys.argv[2])
bs = {b["_key"]: b for b in dbcheck.load_batches(f"{w}/out.json")}
judged = together = 0
errors = []
for r in range(1, rounds + 1):
    a, b = bs.get(f"A{r}"), bs.get(f"B{r}")
    if not a or not b:
        errors.append(f"round {r}: batches missing ({sorted(bs)})")
        continue
    da, db = int(a["_headers"]["sluice-due"]), int(b["_headers"]["sluice-due"])
    gap = abs(db - da)
    same = abs(b["_offset"] - a["_offset"]) == 1
    print(f"# round {r}: deadlines {gap} ms apart, offsets {a['_offset']} and "
          f"{b['_offset']}: {'one transaction' if same else 'two transactions'}")
    if not 1 <= gap <= 50:
        continue
    judged += 1
    if same:
        together += 1
    else:
        errors.append(f"round {r}: deadlines {gap} ms apart went in two transactions "
                      f"(offsets {a['_offset']}, {b['_offset']})")
print(f"# {together} of {judged} judged rounds in one transaction")
if judged < 3:
    errors.append(f"only {judged} rounds had deadlines 1-50 ms apart (3 needed to judge)")
for e in errors:
    print("ERROR:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "PASS"
