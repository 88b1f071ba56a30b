# lib-image.sh — runs the container image without a Docker engine; `source`
# it after lib.sh.
#
# image_prepare builds (or reuses) the runtime root filesystem of
# docker/Dockerfile with docker/rootfs.sh (mmdebstrap, from
# docker/runtime-packages.txt) and adds the runtime stage's COPY layers as
# the Dockerfile states them (image-dockerfile.py reads it: COPY --from=build
# takes $SLUICE_BIN).  image_start then runs the image's ENTRYPOINT and CMD
# (or given arguments) the way a container runtime does:
#
#   unshare --pid --mount --uts --fork   a PID namespace of its own: the
#                                        entrypoint, then sluice by exec, is
#                                        PID 1 there, with PID 1's signal
#                                        rules (a signal from outside whose
#                                        action is the default is dropped)
#   hostname                             the container's (its id in Docker)
#   mount: root bind read-only, /proc of the new namespace, tmpfs /tmp
#                                        (readOnlyRootFilesystem, as the
#                                        Kubernetes manifests ask)
#   env -i                               only the image's ENV and what the
#                                        caller passes (compose's environment)
#   chroot --userspec=USER               the image's numeric USER
#
# The network namespace is the host's, so 127.0.0.1 reaches the test broker.
# The private mount namespace takes its mounts with it when PID 1 ends.
# Needs root (CAP_SYS_ADMIN): without it image_prepare fails, loudly.

declare -A IMAGE_UPIDS=() IMAGE_PIDS=()
IMAGE_ROOT=
image_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image_repo=$(cd "$image_here/../.." && pwd)

_image_cleanup() {
    local n
    for n in "${!IMAGE_PIDS[@]}"; do kill -9 "${IMAGE_PIDS[$n]}" 2>/dev/null || true; done
    for n in "${!IMAGE_UPIDS[@]}"; do kill -9 "${IMAGE_UPIDS[$n]}" 2>/dev/null || true; done
}
CLEANUP_HOOKS+=(_image_cleanup)

# image_prepare — sets IMAGE_ROOT, ENTRYPOINT, CMD, IMAGE_USER, IMAGE_ENV.
image_prepare() {
    [ "$(id -u)" = 0 ] || fail "the image check needs root (unshare, mount, chroot); it cannot run here"
    unshare --pid --mount --uts --fork --propagation private true 2>"$WORK/unshare.err" ||
        fail "the image check cannot make namespaces here: $(cat "$WORK/unshare.err")"
    local t0 i src dst
    t0=$(now_ms)
    IMAGE_ROOT=$("$image_repo/docker/rootfs.sh" 2>"$WORK/rootfs.log") || {
        cat "$WORK/rootfs.log" >&2
        fail "docker/rootfs.sh could not build the image's root filesystem"
    }
    if grep -q '^rootfs.sh: cached' "$WORK/rootfs.log"; then
        note "root filesystem: cached $(basename "$IMAGE_ROOT") ($(($(now_ms) - t0)) ms)"
    else
        note "root filesystem: built $(basename "$IMAGE_ROOT") in $(($(now_ms) - t0)) ms ($(tail -1 "$WORK/rootfs.log" | sed 's/^rootfs.sh: //'))"
    fi
    local -a COPY_SRC=() COPY_DST=()
    eval "$(python3 "$image_here/image-dockerfile.py" layers "$image_repo/docker/Dockerfile")" ||
        fail "cannot read the runtime stage of docker/Dockerfile"
    for i in "${!COPY_SRC[@]}"; do
        src=${COPY_SRC[$i]}
        dst=${COPY_DST[$i]}
        case "$src" in
        docker/*-packages.txt) continue ;; # consumed by the RUN that installs
        @build:*/sluice) src=$SLUICE_BIN ;;
        @*) fail "COPY --from of $src: the image check knows only the build stage's sluice" ;;
        *) src=$image_repo/$src ;;
        esac
        [ -f "$src" ] || fail "COPY source $src is missing"
        install -D -m "$([ -x "$src" ] && echo 0755 || echo 0644)" "$src" "$IMAGE_ROOT$dst"
    done
    [ ${#ENTRYPOINT[@]} -gt 0 ] || fail "docker/Dockerfile has no ENTRYPOINT"
}

# image_start NAME HOSTNAME [VAR=VALUE ...] [-- ARGS...] — runs the image in
# the background (ARGS replace CMD, as `docker run IMAGE ARGS` and compose's
# command do); output to $WORK/sluice-NAME.log.  lib.sh's sluice_alive and
# log_has work on NAME.
image_start() {
    local n=$1 host=$2
    shift 2
    local -a env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        "HOSTNAME=$host" "${IMAGE_ENV[@]}")
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        env+=("$1")
        shift
    done
    [ "${1:-}" = -- ] && shift
    local -a args=("$@")
    [ $# -gt 0 ] || args=("${CMD[@]}")
    unshare --pid --mount --uts --fork --propagation private --kill-child -- \
        /bin/sh -c 'r=$1 h=$2; shift 2
            hostname "$h" &&
            mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" &&
            mount -t proc proc "$r/proc" &&
            mount -t tmpfs -o size=16m,mode=1777 tmpfs "$r/tmp" &&
            exec "$@"' sh "$IMAGE_ROOT" "$host" \
        env -i "${env[@]}" "$(command -v chroot)" --userspec="$IMAGE_USER" "$IMAGE_ROOT" \
        "${ENTRYPOINT[@]}" "${args[@]}" >>"$WORK/sluice-$n.log" 2>&1 &
    IMAGE_UPIDS[$n]=$!
    SLUICE_PIDS[$n]=$!
}

# image_pid1 NAME — waits until the process that is PID 1 of NAME's
# namespace is sluice (the entrypoint has exec'd it), sets IMAGE_PIDS[NAME]
# to its pid as seen from here and checks it: PID 1 inside, the image's
# user, SIGTERM caught.
image_pid1() {
    local n=$1 upid=${IMAGE_UPIDS[$1]} pid=
    _is_sluice() {
        pid=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null | awk '{print $1}')
        [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$IMAGE_ROOT/usr/local/bin/sluice" ]
    }
    wait_until 10 _is_sluice || fail "$n: PID 1 of its namespace never became sluice (log: $(tail -3 "$WORK/sluice-$n.log"))"
    IMAGE_PIDS[$n]=$pid
    local nspid uid sigcgt
    nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$pid/status")
    uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
    sigcgt=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status")
    [ "$nspid" = 1 ] || fail "$n: sluice is pid $nspid in its namespace, not 1"
    [ "$uid" = "${IMAGE_USER%%:*}" ] || fail "$n: sluice runs as uid $uid, not the image's USER $IMAGE_USER"
    # SIGTERM is signal 15: bit 14 of the caught mask.
    (((0x$sigcgt >> 14) & 1)) || fail "$n: sluice does not catch SIGTERM (SigCgt $sigcgt): as PID 1 it would ignore it"
}

# image_signal NAME SIGNAL — sends SIGNAL from outside to NAME's PID 1, as
# `docker stop` / `docker kill -s` do.
image_signal() {
    kill -s "$2" "${IMAGE_PIDS[$1]}"
}

# image_wait NAME SECS — waits for NAME to end, at most SECS; sets IMAGE_RC
# to its exit status (unshare passes PID 1's on), or "timeout".  Not in a
# $(...): the waiting shell must be the one that started it.
image_wait() {
    local n=$1 secs=$2 upid=${IMAGE_UPIDS[$1]}
    # Ended: gone, or a zombie that only our wait can reap.
    _gone() {
        local st
        st=$(awk '/^State:/ {print $2}' "/proc/$upid/status" 2>/dev/null)
        [ -z "$st" ] || [ "$st" = Z ]
    }
    if ! wait_until "$secs" _gone; then
        IMAGE_RC=timeout
        return
    fi
    IMAGE_RC=0
    wait "$upid" 2>/dev/null || IMAGE_RC=$?
    unset "IMAGE_UPIDS[$n]" "IMAGE_PIDS[$n]" "SLUICE_PIDS[$n]"
}

# compose_env SERVICE — the environment of a service of docker/compose.yaml
# as VAR=VALUE lines.
compose_env() {
    python3 - "$image_repo/docker/compose.yaml" "$1" <<'PY'
import sys, yaml
svc = yaml.safe_load(open(sys.argv[1]))["services"][sys.argv[2]]
env = svc.get("environment") or {}
items = env.items() if isinstance(env, dict) else (e.split("=", 1) for e in env)
for k, v in items:
    print(f"{k}={v}")
PY
}

# compose_command SERVICE — its command, one word a line.
compose_command() {
    python3 - "$image_repo/docker/compose.yaml" "$1" <<'PY'
import sys, yaml
for w in yaml.safe_load(open(sys.argv[1]))["services"][sys.argv[2]].get("command") or []:
    print(w)
PY
}
