# SPDX-License-Identifier: Apache-2.0
# lib-delay-kafka.sh — the broker and pipeline setup that
# bench/delay_fire_kafka.sh and bench/delay_cancel_kafka.sh share; `source`
# it first.  (Not bench/lib.sh: that one serves bench/run.sh's sections,
# with set -euo pipefail and a broker of its own on another port.)
#
# It changes to the repo root, sets N (timers, default 1M), SIZE (value
# bytes, default 1024), SL (sluice: ./sluice, SLUICE_BIN to change) and B
# (the broker), and exports SLUICE_TEST_KAFKA_PORT=39392 for
# tests/integration/kafka/broker.sh.  The script sets P (its pipeline, and
# the prefix of its topics), MPORT (the metrics port) and W (its work
# folder) before calling:
#
#   dk_broker             builds sluice and the bench programs it runs
#                         (mktopic, load, consume, eos_copy), starts the
#                         broker on 127.0.0.1:39392; on exit, sluice (if
#                         started) is killed and the broker stopped
#   dk_conf FILE APP_ID   writes FILE: [sluice] app_id and metrics_listen,
#                         [kafka] the broker, [pipeline $P] of type delay
#                         with 4 input partitions and the `key = value`
#                         lines of stdin; creates its topics (topics
#                         apply) and the target $P.out (4 partitions)
#   dk_start FILE LOG     runs sluice with FILE (output to LOG); waits up
#                         to 60 s for /readyz 200
#   m SERIES              the value of SERIES{pipeline="$P"} in /metrics
#   dk_wait_pending SECS  waits up to SECS for N timers pending; exits 1
#                         when they are not
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${N:-1000000}
SIZE=${SIZE:-1024}
SL=${SLUICE_BIN:-./sluice}
export SLUICE_TEST_KAFKA_PORT=39392
B=127.0.0.1:39392
SP=

dk_broker() {
    mkdir -p "$W"
    make -s sluice tools build/bench/mktopic build/bench/load build/bench/consume \
        build/bench/eos_copy >/dev/null || exit 1
    tests/integration/kafka/broker.sh start || exit 1
    trap '[ -n "$SP" ] && kill "$SP" 2>/dev/null; tests/integration/kafka/broker.sh stop' EXIT
}

dk_conf() {
    {
        printf '[sluice]\napp_id = %s\nmetrics_listen = 127.0.0.1:%s\n\n' "$2" "$MPORT"
        printf '[kafka]\nbootstrap.servers = %s\n\n' "$B"
        printf '[pipeline %s]\ntype = delay\ninput_partitions = 4\n' "$P"
        cat
    } >"$1"
    "$SL" topics apply -c "$1" >/dev/null || exit 1
    build/bench/mktopic -b $B -p 4 "$P.out" || exit 1
}

dk_start() {
    "$SL" run -c "$1" >"$2" 2>&1 &
    SP=$!
    for _ in $(seq 1 60); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:$MPORT/readyz)" = 200 ] && return
        sleep 1
    done
}

m() { curl -s 127.0.0.1:$MPORT/metrics | awk -v s="$1{pipeline=\"$P\"}" '$1 == s { print $2 }'; }

dk_wait_pending() {
    local p
    for _ in $(seq 1 "$1"); do
        p=$(m sluice_timers_pending)
        [ "${p%.*}" = "$N" ] && return
        sleep 1
    done
    echo "only $p of $N pending"
    exit 1
}
