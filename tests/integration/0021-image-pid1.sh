#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0021-image-pid1 — the container image, run here without a Docker engine.
#
# The runtime root filesystem is built from docker/runtime-packages.txt
# (docker/rootfs.sh: mmdebstrap, the Dockerfile's suite, cached under
# build/image), the Dockerfile's COPY layers are added, and its ENTRYPOINT
# runs as PID 1 of a PID namespace of its own, as the image's numeric USER,
# on a read-only root, with compose.yaml's environment (lib-image.sh).  Then,
# as a user of `docker compose up --scale sluice=2` would see it:
#
#   1. every shared library of sluice resolves in the image (ldd there);
#   2. the topics service (its command) creates the pipeline's topics and
#      exits 0; `topics create` makes a target, as docs/deployment.md does;
#   3. two replicas with compose's sluice environment (instance id from the
#      hostname) join one group with distinct instance ids, neither fences
#      the other, the input's partitions are split between them;
#   4. a timer produced with kcat from the host fires into its target;
#      another, an hour out, shows in `inspect` run in the image, and a
#      null value (kcat -Z) cancels it, as docs/deployment.md walks through;
#   5. PID 1 rules are in force: SIGUSR1 (default action, no handler) from
#      outside is dropped, not fatal;
#   6. SIGTERM from outside to each PID 1 ends it, exit 0, within
#      shutdown_grace;
#   7. the shutdown bound works as PID 1: with every commit held 10 s
#      (SLUICE_TEST_COMMIT_PAUSE_MS) and shutdown_grace = 2s, SIGTERM during
#      a commit ends sluice with exit 1 about 2 s later, by the watchdog
#      thread (no signal involved).
#
# Against a broker that outlived an earlier run, the members' readiness
# waits up to the session timeout (45 s) for that run's static members:
# their hostnames, hence instance ids, are new each time (as after
# `docker compose down` and `up`).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-image.sh"

image_prepare
echo "image root: $IMAGE_ROOT; ENTRYPOINT ${ENTRYPOINT[*]}; CMD ${CMD[*]}; USER $IMAGE_USER"

# 1. Libraries.  The packages of the list, with the versions the image got,
# beside the host's (sluice was built against the host's -dev packages).
chroot "$IMAGE_ROOT" ldd /usr/local/bin/sluice >"$WORK/ldd.txt" 2>&1 ||
    fail "ldd in the image failed: $(cat "$WORK/ldd.txt")"
if grep -q 'not found' "$WORK/ldd.txt"; then
    fail "libraries missing from the image (add their packages to docker/runtime-packages.txt): $(grep 'not found' "$WORK/ldd.txt" | xargs)"
fi
vers=""
for p in $(sed -e 's/#.*//' "$image_repo/docker/runtime-packages.txt"); do
    v=$(awk -v p="$p" '$1 == p {print $2}' "$IMAGE_ROOT.packages")
    [ -n "$v" ] || fail "$p of runtime-packages.txt is not installed in the image"
    h=$(dpkg-query -W -f '${Version}' "$p" 2>/dev/null || echo none)
    vers="$vers $p=$v"
    [ "$v" = "$h" ] || vers="$vers(host:$h)"
done
note "image packages:$vers"
echo "ldd: $(grep -c '=>' "$WORK/ldd.txt") libraries resolve in the image"

# compose.yaml's environment, pointed at the test broker.
compose_env_here() {
    compose_env "$1" | sed "s|^SLUICE_KAFKA_BOOTSTRAP_SERVERS=.*|SLUICE_KAFKA_BOOTSTRAP_SERVERS=$BOOTSTRAP|"
}
mapfile -t topics_env < <(compose_env_here topics)
mapfile -t topics_cmd < <(compose_command topics)
mapfile -t member_env < <(compose_env_here sluice)
[ ${#topics_cmd[@]} -gt 0 ] || fail "compose.yaml's topics service has no command"
printf '%s\n' "${member_env[@]}" | grep -q '^SLUICE_KAFKA_BOOTSTRAP_SERVERS=' ||
    fail "compose.yaml's sluice service does not set SLUICE_KAFKA_BOOTSTRAP_SERVERS"

# A container's hostname: 12 hex digits of its id.
container_host() { head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# 2. The one-shot topics service, then a target as docs/deployment.md makes it.
image_start topics "$(container_host)" "${topics_env[@]}" -- "${topics_cmd[@]}"
image_wait topics 60
[ "$IMAGE_RC" = 0 ] || fail "the topics service (${topics_cmd[*]}) ended with $IMAGE_RC: $(tail -5 "$WORK/sluice-topics.log")"
in_parts=$(topic_partitions reminders.in)
[ "$in_parts" = 6 ] || fail "reminders.in has $in_parts partitions after topics apply, expected 6"
[ "$(topic_partitions reminders.changelog)" = 6 ] || fail "reminders.changelog was not created with 6 partitions"
target=notifications.$PFX
image_start mktarget "$(container_host)" "${topics_env[@]}" -- \
    topics create -c /etc/sluice/sluice.ini "$target" --partitions 3
image_wait mktarget 60
[ "$IMAGE_RC" = 0 ] || fail "topics create $target in the image ended with $IMAGE_RC: $(tail -5 "$WORK/sluice-mktarget.log")"
echo "topics: $(topic_list reminders. | xargs), $target"

# 3. Two replicas, as --scale sluice=2 makes them.
ports=()
hosts=()
for i in 1 2; do
    ports[i]=$(free_port)
    hosts[i]=$(container_host)
    image_start "member$i" "${hosts[i]}" "${member_env[@]}" "SLUICE_METRICS_LISTEN=127.0.0.1:${ports[i]}"
    image_pid1 "member$i"
done
echo "members: PID 1 (host pids ${IMAGE_PIDS[member1]}, ${IMAGE_PIDS[member2]}), uid ${IMAGE_USER%%:*}, SIGTERM caught, root read-only"
for i in 1 2; do
    wait_until 30 log_has "member$i" "joining group sluice as ${hosts[i]}\$" ||
        fail "member$i did not take its hostname ${hosts[i]} as instance id: $(grep -m1 'joining group' "$WORK/sluice-member$i.log")"
done
parts() { metric_value "${ports[$1]}" "sluice_partitions{pipeline=\"reminders\",state=\"running\"}"; }
split() {
    sluice_alive member1 || fail "member1 exited: $(tail -3 "$WORK/sluice-member1.log")"
    sluice_alive member2 || fail "member2 exited: $(tail -3 "$WORK/sluice-member2.log")"
    local a b
    a=$(parts 1)
    b=$(parts 2)
    [ "${a:-0}" -gt 0 ] && [ "${b:-0}" -gt 0 ] && [ $((a + b)) = 6 ] &&
        [ "$(http_status "http://127.0.0.1:${ports[1]}/readyz")" = 200 ] &&
        [ "$(http_status "http://127.0.0.1:${ports[2]}/readyz")" = 200 ]
}
t0=$(now_ms)
wait_until 90 split || fail "the two replicas did not share the 6 partitions, both ready, within 90 s (running: $(parts 1) + $(parts 2))"
note "two replicas (instance ids ${hosts[1]}, ${hosts[2]}) ready, partitions $(parts 1) + $(parts 2), $(($(now_ms) - t0)) ms after start"

# 4. A timer, produced from the host with kcat.
id=$PFX-reminder
due=$(($(now_ms) + 2000))
echo "$id:hello from the image" |
    produce reminders.in -K: -H "sluice-target=$target" -H "sluice-at=$due"
fired() { [ "$(count_records "$target")" -ge 1 ]; }
wait_until 30 fired || fail "the timer did not fire into $target within 30 s"
got=$(consume_all "$target" -f '%k|%s|%T\n')
[ "$(echo "$got" | wc -l)" = 1 ] || fail "expected one record in $target, got: $got"
IFS='|' read -r k v ts <<<"$got"
[ "$k" = "$id" ] && [ "$v" = "hello from the image" ] || fail "wrong record in $target: $got"
[ "$ts" -ge "$due" ] || fail "the timer fired at $ts, before its due time $due"
note "timer fired into $target $((ts - due)) ms after its due time"

# 4b. docs/deployment.md's inspect and cancel, inspect run in the image as compose's
# `run --rm topics inspect ...` does: a timer an hour out is pending, then a
# null value (kcat -Z) cancels it.
later=$PFX-later
pending() {
    image_start inspect "$(container_host)" "${topics_env[@]}" -- \
        inspect -c /etc/sluice/sluice.ini reminders --key "$later"
    image_wait inspect 30
    case "$IMAGE_RC" in 0) return 0 ;; 1) return 1 ;; esac
    fail "inspect in the image ended with $IMAGE_RC: $(tail -3 "$WORK/sluice-inspect.log")"
}
echo "$later:see you in an hour" |
    produce reminders.in -K: -H "sluice-target=$target" -H "sluice-delay=1h"
wait_until 30 pending || fail "inspect in the image never showed the pending timer $later"
echo "$later:" | produce reminders.in -K: -Z
not_pending() { ! pending; }
wait_until 30 not_pending || fail "the timer $later is still pending after its cancel"
echo "inspect in the image: $later pending, then gone after a null-value cancel"

# 5. PID 1's rules: SIGUSR1 has no handler in sluice, so outside a PID
# namespace it would kill it; as PID 1 the kernel drops it.
sigcgt=$(awk '/^SigCgt:/ {print $2}' "/proc/${IMAGE_PIDS[member1]}/status")
if (((0x$sigcgt >> 9) & 1)); then
    echo "sluice catches SIGUSR1 (SigCgt $sigcgt): PID 1 drop not shown"
else
    image_signal member1 USR1
    [ "$(http_status "http://127.0.0.1:${ports[1]}/healthz")" = 200 ] && sluice_alive member1 ||
        fail "SIGUSR1 from outside ended sluice: it is not under PID 1's rules, and this check proves nothing"
    echo "SIGUSR1 (no handler) from outside was dropped: PID 1 rules are in force"
fi

# 6. SIGTERM, as `docker compose stop` sends it.
grace_ms=30000
for i in 1 2; do
    t0=$(now_ms)
    image_signal "member$i" TERM
    image_wait "member$i" $((grace_ms / 1000 + 5))
    took=$(($(now_ms) - t0))
    [ "$IMAGE_RC" = 0 ] || fail "member$i: SIGTERM to PID 1 ended it with $IMAGE_RC after $took ms, not 0"
    [ "$took" -le "$grace_ms" ] || fail "member$i: SIGTERM took $took ms, over shutdown_grace"
    log_has "member$i" 'SIGTERM: committing and leaving' || fail "member$i: no shutdown line in its log"
    note "member$i: SIGTERM to PID 1 -> exit 0 in $took ms (grace ${grace_ms} ms)"
done

# 7. The shutdown bound as PID 1: a pipeline of its own (its own group, so
# the members' static ids above do not matter), commits held 10 s.
wd=$PFX-wd
cat >"$IMAGE_ROOT/etc/sluice/check-watchdog.ini" <<EOF2
[sluice]
app_id = $wd
log_level = info
shutdown_grace = 2s

[kafka]
bootstrap.servers = $BOOTSTRAP

[pipeline $wd]
type = delay
input = $wd.in
input_partitions = 1
allowed_targets = $wd.*
EOF2
CLEANUP_HOOKS+=(_wd_conf_rm)
_wd_conf_rm() { rm -f "$IMAGE_ROOT/etc/sluice/check-watchdog.ini"; }
image_start wdapply "$(container_host)" -- topics apply -c /etc/sluice/check-watchdog.ini
image_wait wdapply 60
[ "$IMAGE_RC" = 0 ] || fail "topics apply for the watchdog pipeline ended with $IMAGE_RC"
wport=$(free_port)
image_start wd "$(container_host)" SLUICE_TEST_COMMIT_PAUSE_MS=10000 \
    "SLUICE_METRICS_LISTEN=127.0.0.1:$wport" -- run -c /etc/sluice/check-watchdog.ini
image_pid1 wd
sluice_wait_ready wd "$wport" 60
echo "$wd-t:x" | produce "$wd.in" -K: -H "sluice-target=$wd.out" -H "sluice-delay=1h"
committing() { [ "$(metric_value "$wport" sluice_transaction_state)" = 4 ]; }
wait_until 30 committing || fail "no commit in flight within 30 s (state $(metric_value "$wport" sluice_transaction_state))"
t0=$(now_ms)
image_signal wd TERM
image_wait wd 15
took=$(($(now_ms) - t0))
[ "$IMAGE_RC" = 1 ] || fail "with a commit held 10 s, SIGTERM ended sluice with $IMAGE_RC after $took ms; expected 1 from the shutdown bound after 2 s"
log_has wd 'shutdown grace period ran out' || fail "exit 1 without the watchdog's line: $(tail -3 "$WORK/sluice-wd.log")"
[ "$took" -ge 1900 ] && [ "$took" -le 4000 ] || fail "the shutdown bound of 2 s ended sluice after $took ms"
note "shutdown bound as PID 1: a commit held 10 s, SIGTERM -> exit 1 by the watchdog after $took ms (shutdown_grace 2 s)"
echo PASS
