# SPDX-License-Identifier: Apache-2.0
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
# Needs root (CAP_SYS_ADMIN) and mmdebstrap: without them image_prepare skips
# the test (lib.sh's skip), saying which is missing.

declare -A IMAGE_UPIDS=() IMAGE_PIDS=()
IMAGE_ROOT=
image_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image_repo=$(cd "$image_here/../.." && pwd)

_image_cleanup() {
    local n
    # PID 1 of each namespace first: its end ends everything in it.  Not
    # unshare alone: --kill-child does not reach a PID 1 that changed its
    # user (chroot --userspec clears the parent-death signal).
    for n in "${!IMAGE_PIDS[@]}"; do kill -9 "${IMAGE_PIDS[$n]}" 2>/dev/null || true; done
    for n in "${!IMAGE_UPIDS[@]}"; do kill -9 "${IMAGE_UPIDS[$n]}" 2>/dev/null || true; done
}
CLEANUP_HOOKS+=(_image_cleanup)

# image_prepare — sets IMAGE_ROOT, ENTRYPOINT, CMD, IMAGE_USER, IMAGE_ENV.
image_prepare() {
    [ "$(id -u)" = 0 ] || skip "the image check needs root (unshare, mount, chroot)"
    unshare --pid --mount --uts --fork --propagation private true 2>"$WORK/unshare.err" ||
        skip "the image check cannot make namespaces here: $(cat "$WORK/unshare.err")"
    command -v mmdebstrap >/dev/null || skip "mmdebstrap is missing (make deps installs it)"
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
    # No command substitution in the background command below: bash would
    # run it in a child of the forked shell, and _forked could take that
    # child for the namespace's PID 1.
    local chroot_bin
    chroot_bin=$(command -v chroot)
    unshare --pid --mount --uts --fork --propagation private --kill-child -- \
        /bin/sh -c 'r=$1 h=$2; shift 2
            hostname "$h" &&
            mount --bind "$r" "$r" && mount -o remount,bind,ro "$r" &&
            mount -t proc proc "$r/proc" &&
            mount -t tmpfs -o size=16m,mode=1777 tmpfs "$r/tmp" &&
            exec "$@"' sh "$IMAGE_ROOT" "$host" \
        env -i "${env[@]}" "$chroot_bin" --userspec="$IMAGE_USER" "$IMAGE_ROOT" \
        "${ENTRYPOINT[@]}" "${args[@]}" >>"$WORK/sluice-$n.log" 2>&1 &
    local upid=$! pid=
    IMAGE_UPIDS[$n]=$upid
    SLUICE_PIDS[$n]=$upid
    # PID 1 of the namespace, as seen from here (the shell above, then by
    # exec the entrypoint, then sluice): what signals go to, and what the
    # cleanup kills.
    _forked() {
        pid=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null | awk '{print $1}')
        [ -n "$pid" ] || _image_ended "$upid"
    }
    wait_until 10 _forked || fail "$n: unshare did not fork within 10 s"
    [ -n "$pid" ] && IMAGE_PIDS[$n]=$pid
    return 0
}

# _image_ended PID — 0 when PID is gone or a zombie (ours to reap).
_image_ended() {
    local st
    st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null)
    [ -z "$st" ] || [ "$st" = Z ]
}

# image_pid1 NAME — waits until the process that is PID 1 of NAME's
# namespace (IMAGE_PIDS[NAME], its pid as seen from here) is sluice: the
# entrypoint has exec'd it; and checks it: PID 1 inside, the image's user,
# SIGTERM caught.
image_pid1() {
    local n=$1 pid=${IMAGE_PIDS[$1]:-}
    [ -n "$pid" ] || fail "$n: ended before it could be looked at: $(tail -3 "$WORK/sluice-$n.log")"
    _is_sluice() { [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$IMAGE_ROOT/usr/local/bin/sluice" ]; }
    wait_until 10 _is_sluice || fail "$n: PID 1 of its namespace never became sluice (it is $(readlink "/proc/$pid/exe"); log: $(tail -3 "$WORK/sluice-$n.log"))"
    local nspid uid sigcgt
    nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$pid/status")
    uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
    [ "$nspid" = 1 ] || fail "$n: sluice is pid $nspid in its namespace, not 1"
    [ "$uid" = "${IMAGE_USER%%:*}" ] || fail "$n: sluice runs as uid $uid, not the image's USER $IMAGE_USER"
    # SIGTERM is signal 15: bit 14 of the caught mask.  sluice installs its
    # handler once the config is loaded and the loop is set up (until then
    # a PID 1 drops SIGTERM), so wait for it.
    _term_caught() {
        sigcgt=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
        [ -n "$sigcgt" ] && (((0x$sigcgt >> 14) & 1))
    }
    wait_until 30 _term_caught ||
        fail "$n: sluice does not catch SIGTERM (SigCgt ${sigcgt:-gone}) 30 s after start: as PID 1 it would ignore it"
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
    if ! wait_until "$secs" _image_ended "$upid"; then
        IMAGE_RC=timeout
        return
    fi
    IMAGE_RC=0
    wait "$upid" 2>/dev/null || IMAGE_RC=$?
    unset "IMAGE_UPIDS[$n]" "IMAGE_PIDS[$n]" "SLUICE_PIDS[$n]"
}

# yaml_python — a python3 that has PyYAML (Debian's python3-yaml, which
# make deps installs, or the python3 first on PATH); fails the test if none.
yaml_python() {
    local p
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import yaml' 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    fail "no python3 with PyYAML here (apt-get install python3-yaml)"
}

# compose_env SERVICE — the environment of a service of docker/compose.yaml
# as VAR=VALUE lines.
compose_env() {
    "$(yaml_python)" - "$image_repo/docker/compose.yaml" "$1" <<'PY'
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
    "$(yaml_python)" - "$image_repo/docker/compose.yaml" "$1" <<'PY'
import sys, yaml
for w in yaml.safe_load(open(sys.argv[1]))["services"][sys.argv[2]].get("command") or []:
    print(w)
PY
}
