# SPDX-License-Identifier: Apache-2.0
# lib-faults.sh — the load and the verdict of the broker-fault tests
# (04NN-fault-*.sh); source it after lib.sh and lib-debounce.sh.  Not a test
# itself (run.sh runs NNNN-*.sh only).
#
# A fault test runs sluice instances against a private broker
# (private_broker_start), feeds three pipelines from a background loop,
# breaks the broker while they work, and then judges what came out against
# what went in.  The input topics, read back at the end, are the truth:
# kcat fails while the broker is away, and whatever it managed to write is
# what sluice must deliver, exactly once.
#
#   fault_conf CONF OPS      writes a config whose Kafka timeouts a fault can
#                            cross (session.timeout.ms 6000, heartbeat 1000,
#                            transaction_timeout 10s) with the pipelines OPS,
#                            a string of d (delay), b (debounce), t (throttle);
#                            creates their topics
#   fault_start NAME         starts an instance (instance_id $PFX-NAME, HTTP
#                            port in SLUICE_PORTS[NAME]) and watches /readyz
#   fault_start_ready NAME... fault_start each, then waits for /readyz 200
#   fault_feed_start         the background producer: a round every ~0.5 s
#   fault_feed_stop          ends it; prints how many rounds wrote what
#   fault_wait_flowing       waits until every pipeline has output
#   fault_wait_recovered SINCE_MS BACK_MS SECS NAME...
#                            waits until each instance answers /readyz 200
#                            again after having answered 503 since SINCE_MS
#   fault_drain SECS NAME... waits until every input record came out (and
#                            nothing is pending), then checks exactly-once
#   fault_health SINCE_MS NAME...
#                            the /readyz, /healthz and metrics checks
#
# Names: pipelines $PFX-d, $PFX-b, $PFX-t with inputs $PFX.d.in, ... and
# outputs $PFX.d.out, $PFX.b.out, $PFX.t.out (4 partitions each).

FAULT_OPS=
FAULT_CONF=
FAULT_FEED_PID=

fault_conf() {
    local conf=$1 ops=$2
    FAULT_OPS=$ops
    FAULT_CONF=$conf
    cat >"$conf" <<EOF
[sluice]
app_id = $PFX
log_level = info
commit_interval = 100ms
metrics_listen =
transaction_timeout = 10s
shutdown_grace = 10s

[kafka]
bootstrap.servers = $BOOTSTRAP
session.timeout.ms = 6000
heartbeat.interval.ms = 1000
EOF
    case $ops in *d*)
        # A test's payloads variant (run.sh): the delay's payloads in Kafka,
        # out of memory once indexed and read back 0.5 s before they are due
        # (the feed's timers are due 2 s out), so that the fault meets
        # read-backs in flight.
        local kx=()
        if [ "${SLUICE_TEST_DELAY_PAYLOADS:-}" = kafka ]; then
            kx=(payload_topic="$PFX-d.payloads")
            export SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS=${SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS:-500}
        fi
        pipeline_section "$conf" "$PFX-d" delay input="$PFX.d.in" input_partitions=4 \
            allowed_targets="$PFX.d.*" "${kx[@]}"
        ;;
    esac
    case $ops in *b*)
        db_pipeline "$conf" "$PFX-b" "$PFX.b.in" "$PFX.b.out" input_partitions=4 \
            idle=1s max_age=3s max_items=8
        ;;
    esac
    case $ops in *t*)
        pipeline_section "$conf" "$PFX-t" throttle input="$PFX.t.in" input_partitions=4 \
            output="$PFX.t.out" default_rate="20/s burst=20"
        ;;
    esac
    local o
    for o in d b t; do
        case $ops in *$o*)
            "$SLUICE_BIN" topics create -c "$conf" "$PFX.$o.out" --partitions 4 >/dev/null ||
                fail "could not create $PFX.$o.out"
            ;;
        esac
    done
    "$SLUICE_BIN" topics apply -c "$conf" >"$WORK/topics-apply.log" 2>&1 ||
        fail "topics apply failed: $(tail -5 "$WORK/topics-apply.log")"
}

fault_start() {
    local n=$1
    SLUICE_INSTANCE_ID=$PFX-$n sluice_start_http "$n" "$FAULT_CONF"
    readyz_watch "$n"
}

# fault_start_ready NAME... — fault_start each, then waits until each
# answers /readyz 200 (60 s each).
fault_start_ready() {
    local n
    for n in "$@"; do fault_start "$n"; done
    for n in "$@"; do wait_readyz "$n" 200 60; done
    echo "$* ready on $BOOTSTRAP"
}

_fault_feed_cleanup() {
    [ -n "$FAULT_FEED_PID" ] || return 0
    kill "$FAULT_FEED_PID" 2>/dev/null || true
}

# _fault_kcat TOPIC [kcat args] — one producer run that gives up after 3 s
# without the broker (idempotent: a retry never duplicates a record).  It
# keeps kcat's own partitioner (consistent_random, CRC-32), not the
# pipelines' murmur2: most keyed records arrive off their key's partition
# and are moved there (reroute) through every fault; the verdicts read the
# inputs less those copies (dbcheck.load_input).
_fault_kcat() {
    local topic=$1
    shift
    kcat -P -b "$BOOTSTRAP" -t "$topic" -X message.timeout.ms=3000 \
        -X enable.idempotence=true -X partitioner=consistent_random "$@" 2>/dev/null
}

# fault_feed_start — per round r, in parallel: 20 delay timers d<r>-<i>
# due 2 s after they are produced, one debounce item {"g":g,"r":r} for each
# of 40 groups g<g>, three throttle messages k<k>-<r>-<j> for each of 10
# keys k<k>.  Rounds go on, failing while the broker is away, until
# fault_feed_stop; $WORK/feed.log says which parts of which round kcat
# reported written (informational: the input topics are the truth).
fault_feed_start() {
    rm -f "$WORK/feed.stop"
    CLEANUP_HOOKS+=(_fault_feed_cleanup)
    (
        trap - EXIT
        set +e
        r=0
        while [ ! -e "$WORK/feed.stop" ]; do
            r=$((r + 1))
            pids=()
            parts=()
            case $FAULT_OPS in *d*)
                at=$(($(date +%s%N) / 1000000 + 2000))
                seq 0 19 | sed "s/.*/d$r-&:p-d$r-&/" |
                    _fault_kcat "$PFX.d.in" -K: -H "sluice-target=$PFX.d.out" -H "sluice-at=$at" &
                pids+=($!)
                parts+=(d)
                ;;
            esac
            case $FAULT_OPS in *b*)
                seq 0 39 | sed "s/.*/g&:{\"g\":&,\"r\":$r}/" | _fault_kcat "$PFX.b.in" -K: &
                pids+=($!)
                parts+=(b)
                ;;
            esac
            case $FAULT_OPS in *t*)
                for j in 0 1 2; do
                    seq 0 9 | sed "s/.*/k&:k&-$(printf %05d $r)-$j/"
                done | _fault_kcat "$PFX.t.in" -K: -H x-test=yes &
                pids+=($!)
                parts+=(t)
                ;;
            esac
            line="$(($(date +%s%N) / 1000000)) round $r"
            for i in "${!pids[@]}"; do
                if wait "${pids[$i]}"; then line="$line ${parts[$i]}:ok"; else line="$line ${parts[$i]}:failed"; fi
            done
            echo "$line" >>"$WORK/feed.log"
            sleep 0.5
        done
    ) &
    FAULT_FEED_PID=$!
}

fault_feed_stop() {
    touch "$WORK/feed.stop"
    local rc=0
    _feed_ended() { ! kill -0 "$FAULT_FEED_PID" 2>/dev/null; }
    wait_until 20 _feed_ended || rc=1
    kill "$FAULT_FEED_PID" 2>/dev/null || true
    wait "$FAULT_FEED_PID" 2>/dev/null || true
    FAULT_FEED_PID=
    [ "$rc" -eq 0 ] || problem "the feed loop did not end within 20 s"
    local rounds ok failed
    rounds=$(wc -l <"$WORK/feed.log")
    ok=$(grep -c -v failed "$WORK/feed.log" || true)
    failed=$((rounds - ok))
    note "feed: $rounds rounds, $ok fully written, $failed with a kcat failure (broker away)"
}

# fault_wait_flowing — after fault_feed_start: waits until each pipeline of
# FAULT_OPS has produced output (20 timers, 10 batches, 60 throttle
# messages), so that the fault meets load in flight; fails after 40 s.
fault_wait_flowing() {
    _fault_flowing() {
        case $FAULT_OPS in *d*) [ "$(count_records "$PFX.d.out")" -ge 20 ] || return 1 ;; esac
        case $FAULT_OPS in *b*) [ "$(count_records "$PFX.b.out")" -ge 10 ] || return 1 ;; esac
        case $FAULT_OPS in *t*) [ "$(count_records "$PFX.t.out")" -ge 60 ] || return 1 ;; esac
    }
    wait_until 40 _fault_flowing || fail "the pipelines did not produce output within 40 s of the feed's start"
}

# fault_any_alive NAME... — 0 when at least one instance still runs.
fault_any_alive() {
    local n
    for n in "$@"; do sluice_alive "$n" && return 0; done
    return 1
}

# fault_wait_recovered SINCE_MS BACK_MS SECS NAME... — waits until each
# living instance answers /readyz 200 after having answered 503 since
# SINCE_MS (the fault); an instance that answers 200 without a 503 seen is
# taken as it is once 20 s have passed since BACK_MS (the broker's return):
# fault_health then reports it.  Fails at once when every instance has
# exited (no test ever restarts sluice after a fault).
fault_wait_recovered() {
    local since=$1 back=$2 secs=$3
    shift 3
    local names=("$@") n
    _recovered() {
        if ! fault_any_alive "${names[@]}"; then
            sluice_reap "${names[@]}"
            fail "every instance exited after the fault: $(fault_exits "${names[@]}")"
        fi
        for n in "${names[@]}"; do
            sluice_alive "$n" || continue
            [ "$(readyz "$n")" = 200 ] || return 1
            readyz_seen "$n" 503 "$since" || [ "$(now_ms)" -ge $((back + 20000)) ] || return 1
        done
    }
    wait_until "$secs" _recovered && return 0
    for n in "${names[@]}"; do
        sluice_alive "$n" || continue
        [ "$(readyz "$n")" = 200 ] ||
            problem "sluice[$n]: /readyz not 200 within ${secs}s of the broker's return: $(readyz "$n") $(readyz_body "$n")"
    done
}

# fault_exits NAME... — "NAME: how it ended" for each instance that exited
# (call sluice_reap NAME... first, in the test's shell, for exit statuses).
fault_exits() {
    local n out=""
    for n in "$@"; do
        sluice_alive "$n" && continue
        out="$out $n: $(sluice_exit_status "$n");"
    done
    echo "${out# }"
}

# fault_watch_summary NAME — the /readyz history in one line.
fault_watch_summary() {
    awk 'NR == 1 { t0 = $1 }
        $2 " " $3 " " $4 != last {
            printf "%s+%.1fs readyz=%s healthz=%s up=%s", sep, ($1 - t0) / 1000, $2, $3, $4
            sep = ", "; last = $2 " " $3 " " $4
        }' "$WORK/readyz-$1.log" 2>/dev/null | tail -c 600
}

cat >"$WORK/faultcheck.py" <<'PY'
"""Exactly-once verdicts of the fault tests: input topic vs output topic."""
import json
import sys
from collections import Counter, defaultdict

sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])
import dbcheck  # noqa: E402


def load(path):
    return dbcheck.load_records(path)


def hdrs(r):
    return dbcheck.headers(r)


def delay(inp, out):
    errors = []
    at = {r["key"]: int(hdrs(r)["sluice-at"]) for r in inp}
    if len(at) != len(inp):
        errors.append(f"input: {len(inp)} records but {len(at)} ids")
    ids = Counter(r["key"] for r in out)
    dups = sorted((k, n) for k, n in ids.items() if n > 1)
    lost = sorted(set(at) - set(ids))
    extra = sorted(set(ids) - set(at))
    early = [(r["key"], r["ts"] - at[r["key"]]) for r in out
             if r["key"] in at and r["ts"] < at[r["key"]]]
    wrong = [r["key"] for r in out if r["key"] in at and (
        hdrs(r).get("sluice-due") != str(at[r["key"]]) or r["payload"] != "p-" + r["key"])]
    if dups: errors.append(f"{len(dups)} timers fired more than once, e.g. {dups[:5]}")
    if lost: errors.append(f"{len(lost)} timers lost, e.g. {lost[:5]}")
    if extra: errors.append(f"{len(extra)} unknown timers out, e.g. {extra[:5]}")
    if early: errors.append(f"{len(early)} fired before due, e.g. {early[:5]}")
    if wrong: errors.append(f"{len(wrong)} with a wrong due or payload, e.g. {wrong[:5]}")
    late = sorted(r["ts"] - at[r["key"]] for r in out if r["key"] in at) or [0]
    summary = (f"delay: {len(inp)} timers in, {len(out)} out, {len(dups)} duplicated, "
               f"{len(lost)} lost; lateness ms p50={late[len(late) // 2]} max={late[-1]}")
    return summary, errors


def debounce(inp, batches, max_items):
    errors = []
    want = Counter(r["payload"] for r in inp)
    if max(want.values(), default=1) > 1:
        errors.append("input holds an item twice")
    seen = Counter()
    wrong_group = []
    for b in batches:
        for it in b["items"]:
            p = json.dumps(it["payload"], separators=(",", ":"))
            seen[p] += 1
            if f"g{it['payload']['g']}" != b["key"]:
                wrong_group.append((b["key"], p))
    dups = {k: n for k, n in seen.items() if n > 1}
    lost = sorted(set(want) - set(seen))
    extra = sorted(set(seen) - set(want))
    if dups: errors.append(f"{len(dups)} items in more than one batch, e.g. {list(dups.items())[:3]}")
    if lost: errors.append(f"{len(lost)} items in no batch, e.g. {lost[:3]}")
    if extra: errors.append(f"{len(extra)} unknown items, e.g. {extra[:3]}")
    if wrong_group: errors.append(f"{len(wrong_group)} items in another group's batch, e.g. {wrong_group[:3]}")
    ids = Counter(b["batch_id"] for b in batches)
    rep = [k for k, n in ids.items() if n > 1]
    if rep: errors.append(f"{len(rep)} batch ids repeat, e.g. {rep[:3]}")
    if any(b["_headers"].get("sluice-batch-id") != b["batch_id"] for b in batches):
        errors.append("a sluice-batch-id header differs from its batch_id")
    big = [len(b["items"]) for b in batches if len(b["items"]) > max_items]
    if big: errors.append(f"batches over max_items: {big[:5]}")
    summary = (f"debounce: {len(want)} items in, {len(batches)} batches holding "
               f"{sum(seen.values())} items, {len(dups)} duplicated, {len(lost)} lost")
    return summary, errors


def throttle(inp, out):
    errors = []
    want = Counter(r["payload"] for r in inp)
    if max(want.values(), default=1) > 1:
        errors.append("input holds a message twice")
    seen = Counter(r["payload"] for r in out)
    dups = {p: n for p, n in seen.items() if n > 1}
    lost = sorted(set(want) - set(seen))
    extra = sorted(set(seen) - set(want))
    if dups: errors.append(f"{len(dups)} messages out more than once, e.g. {list(dups.items())[:5]}")
    if lost: errors.append(f"{len(lost)} messages lost, e.g. {lost[:5]}")
    if extra: errors.append(f"{len(extra)} unknown messages out, e.g. {extra[:5]}")
    # Per-key order: the output order of a key's messages is their input
    # order (one key lives in one input partition and one output partition).
    def per_key(recs):
        d = defaultdict(list)
        for r in sorted(recs, key=lambda r: (r["partition"], r["offset"])):
            d[r["key"]].append(r["payload"])
        return d
    wi, wo = per_key(inp), per_key(out)
    disorder = [k for k in wo if [p for p in wi.get(k, []) if p in set(wo[k])] != wo[k]]
    if disorder: errors.append(f"{len(disorder)} keys out of input order, e.g. {disorder[0]}: {wo[disorder[0]][:8]}")
    nohdr = [r["payload"] for r in out if hdrs(r).get("x-test") != "yes"]
    if nohdr: errors.append(f"{len(nohdr)} messages lost their header, e.g. {nohdr[:3]}")
    summary = (f"throttle: {len(inp)} messages in, {len(out)} out, {len(dups)} duplicated, "
               f"{len(lost)} lost, {len(disorder)} keys out of order")
    return summary, errors


if __name__ == "__main__":
    op, w = sys.argv[1], sys.argv[2]
    inp = dbcheck.load_input(f"{w}/{op}.in.json")
    if op == "d":
        s, e = delay(inp, load(f"{w}/d.out.json"))
    elif op == "b":
        s, e = debounce(inp, dbcheck.load_batches(f"{w}/b.out.json"), 8)
    else:
        s, e = throttle(inp, load(f"{w}/t.out.json"))
    print("# " + s)
    for x in e:
        print(f"{s.split(':')[0]}: {x}", file=sys.stderr)
    sys.exit(1 if e else 0)
PY

# _fault_done OP — every input record of OP came out and nothing is
# pending (delay: no pending timer; debounce: no open group; throttle: the
# output count reached the input count).
_fault_done() {
    local op=$1 n_in
    n_in=$(count_input_records "$PFX.$op.in")
    case $op in
    d)
        [ "$(consume_all "$PFX.d.out" -f '%k\n' | sort -u | wc -l)" -ge "$n_in" ] || return 1
        "$SLUICE_BIN" inspect -c "$FAULT_CONF" "$PFX-d" --limit 0 2>/dev/null | grep -q ': 0 pending timers'
        ;;
    b)
        local items
        items=$(consume_all "$PFX.b.out" -f '%s\n' | python3 -c '
import json, sys
print(sum(len(json.loads(l)["items"]) for l in sys.stdin if l.strip()))')
        [ "$items" -ge "$n_in" ] || return 1
        [ "$(db_open_groups "$FAULT_CONF" "$PFX-b")" = 0 ]
        ;;
    t)
        [ "$(count_records "$PFX.t.out")" -ge "$n_in" ]
        ;;
    esac
}

# _fault_out_count — records in every output topic together (progress).
_fault_out_count() {
    local op n=0
    for op in d b t; do
        case $FAULT_OPS in *$op*) n=$((n + $(count_records "$PFX.$op.out"))) ;; esac
    done
    echo "$n"
}

# _fault_pending_why OP... — why each operator still pending when a drain
# gave up is not done: its input and output counts on stderr, and for
# delay and debounce `sluice inspect`'s answer (stderr too) in
# WORK/inspect-OP.txt, its first lines on stderr.
_fault_pending_why() {
    local op
    for op in "$@"; do
        echo "$op: $(count_input_records "$PFX.$op.in") input records, $(count_records "$PFX.$op.out") output records" >&2
        case $op in d | b) ;; *) continue ;; esac
        timeout 150 "$SLUICE_BIN" inspect -c "$FAULT_CONF" "$PFX-$op" --limit 5 >"$WORK/inspect-$op.txt" 2>&1
        echo "inspect $PFX-$op (exit $?):" >&2
        head -12 "$WORK/inspect-$op.txt" | sed 's/^/    /' >&2
    done
}

# fault_drain SECS NAME... — waits (while an instance lives, for at most
# SECS, and no longer than 40 s without any new output record) until every
# operator is done, then judges each output against its input.  A timeout
# or a wrong output is a problem; the output check runs either way.
fault_drain() {
    local secs=$1
    shift
    local names=("$@") op pending t0 end state=timeout out last_out=-1 last_move
    t0=$(now_ms)
    end=$((t0 + secs * 1000))
    last_move=$t0
    while [ "$(now_ms)" -lt "$end" ]; do
        fault_any_alive "${names[@]}" || {
            state=dead
            break
        }
        pending=
        for op in d b t; do
            case $FAULT_OPS in *$op*) _fault_done "$op" || pending="$pending $op" ;; esac
        done
        [ -n "$pending" ] || {
            state=complete
            break
        }
        out=$(_fault_out_count)
        if [ "$out" != "$last_out" ]; then
            last_out=$out
            last_move=$(now_ms)
        elif [ "$(now_ms)" -ge $((last_move + 40000)) ]; then
            state=stalled
            break
        fi
        sleep 0.5
    done
    sluice_reap "${names[@]}"
    [ "$state" = complete ] || _fault_pending_why $pending
    case $state in
    dead) problem "every instance exited before the output was complete: $(fault_exits "${names[@]}")" ;;
    stalled) problem "output stalled: no new output record for 40 s (pending:$pending)" ;;
    timeout) problem "output incomplete after ${secs}s (pending:$pending)" ;;
    complete) note "every input record out $(($(now_ms) - t0)) ms after the feed stopped" ;;
    esac
    for op in d b t; do
        case $FAULT_OPS in *$op*) ;; *) continue ;; esac
        consume_json "$PFX.$op.in" >"$WORK/$op.in.json"
        consume_json "$PFX.$op.out" >"$WORK/$op.out.json"
        python3 "$WORK/faultcheck.py" "$op" "$WORK" 2>"$WORK/check-$op.err" ||
            problem "$(tr '\n' ';' <"$WORK/check-$op.err")"
        # Nothing of the load is bad input: a DLQ record is a record that
        # a fault diverted.
        local dlq
        dlq=$(consume_all "$PFX-$op.dlq" -f '%h\n' | grep -oE 'sluice-error=[^,]*' | sort | uniq -c | tr -s ' \n' ' ') || true
        [ -z "$dlq" ] || problem "$PFX-$op.dlq holds records:$dlq"
    done
}

# fault_health SINCE_MS NAME... — per instance: alive, /healthz never
# failed, /readyz 503 with a reason at some point since SINCE_MS and 200
# now, sluice_kafka_up 1 now; prints the recovery and transaction counters.
fault_health() {
    local since=$1 n reason up rec commits aborts
    shift
    for n in "$@"; do
        sluice_reap "$n"
        if ! sluice_alive "$n"; then
            problem "sluice[$n] exited: $(fault_exits "$n")"
            continue
        fi
        ! healthz_failed "$n" "$since" || problem "sluice[$n]: /healthz failed after the fault: $(fault_watch_summary "$n")"
        [ "$(readyz "$n")" = 200 ] || problem "sluice[$n]: /readyz answers $(readyz "$n") at the end: $(readyz_body "$n")"
        if readyz_seen "$n" 503 "$since"; then
            reason=$(readyz_reason "$n" "$since")
            [ -n "$reason" ] || problem "sluice[$n]: /readyz answered 503 without a reason in the body"
            note "$n: /readyz 503 during the fault: '$reason'"
        else
            problem "sluice[$n]: /readyz never answered 503 since the fault (watch: $(fault_watch_summary "$n"))"
        fi
        kafka_up_seen "$n" 0 "$since" ||
            problem "sluice[$n]: sluice_kafka_up never read 0 since the fault (watch: $(fault_watch_summary "$n"))"
        up=$(sluice_metric "$n" sluice_kafka_up)
        [ "$up" = 1 ] || problem "sluice[$n]: sluice_kafka_up is '${up}' at the end, want 1"
        rec=$(sluice_metric "$n" sluice_client_recoveries_total)
        commits=$(sluice_metric "$n" 'sluice_transactions_total{result="commit"}')
        aborts=$(sluice_metric "$n" 'sluice_transactions_total{result="abort"}')
        note "$n: sluice_client_recoveries_total=${rec:-absent} transactions commit=${commits:-?} abort=${aborts:-?}"
    done
}
