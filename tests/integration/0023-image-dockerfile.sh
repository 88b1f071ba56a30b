#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0023-image-dockerfile — docker/Dockerfile and its build context, read and
# rehearsed without a Docker engine:
#
#   1. the reading lint (image-dockerfile.py lint: hadolint is not in
#      Debian): every apt-get install takes its packages from a
#      docker/*-packages.txt list and names none itself; bases pinned to a
#      dated snapshot tag; exec-form ENTRYPOINT/CMD; and broken copies
#      refused;
#   2. the lists: the runtime stage installs docker/runtime-packages.txt,
#      the file docker/rootfs.sh (0021) builds from; it holds the package of
#      every library sluice links to directly; build-packages.txt is a
#      subset of the Makefile's DEB_PKGS; the base's suite is this
#      machine's Debian release (on another release, or off Debian, the
#      test skips, after the other checks);
#   3. the build context .dockerignore lets through: no Kafka jars, build
#      folders, binaries, .git or test data, and everything the Dockerfile
#      COPYs;
#   4. the build stage rehearsed: its COPYs from that context into a fresh
#      folder, then its commands other than apt-get (make sluice) with this
#      machine's toolchain (the same Debian packages), with the build args
#      `make image` passes (SLUICE_COMMIT: this checkout's commit, as git
#      says it, "-dirty" with uncommitted changes; a tarball's COMMIT) where
#      the stage declares them, as Docker does; the binary runs and
#      `sluice version` names that commit (never "unknown" when built from
#      a git checkout or a tarball).
source "$(dirname "$0")/lib.sh"
command -v dpkg >/dev/null || skip "not a Debian machine (no dpkg): the package checks need one"
repo=$(cd "$(dirname "$0")/../.." && pwd)
df=$repo/docker/Dockerfile
tool=$repo/tests/integration/image-dockerfile.py

# 1. Lint, and lint must refuse broken copies.
python3 "$tool" lint "$df" || fail "docker/Dockerfile does not pass the lint"
refuse() {
    local what=$1 expect=$2 sedexpr=$3 out
    sed -e "$sedexpr" "$df" >"$WORK/Dockerfile.bad"
    cmp -s "$df" "$WORK/Dockerfile.bad" && fail "the edit for '$what' changed nothing"
    if out=$(python3 "$tool" lint "$WORK/Dockerfile.bad"); then
        fail "the lint passed a Dockerfile with $what"
    fi
    grep -q -- "$expect" <<<"$out" || fail "with $what the lint said: $out"
    echo "lint refuses: $what"
}
refuse "a package named in apt-get install" "names packages itself" \
    's|\$(sed -e .s/#\.\*//. /tmp/packages.txt)|curl $(sed -e '"'"'s/#.*//'"'"' /tmp/packages.txt)|'
refuse "a floating base" "not pinned" 's|^ARG DEBIAN_BASE=.*|ARG DEBIAN_BASE=debian:bookworm-slim|'
refuse "a shell-form ENTRYPOINT" "not in exec form" 's|^ENTRYPOINT .*|ENTRYPOINT /usr/local/bin/sluice-entrypoint|'
refuse "an install without --no-install-recommends" "no-install-recommends" 's| --no-install-recommends||'

# 2. The lists.
COPY_SRC=() COPY_DST=()
eval "$(python3 "$tool" layers "$df")"
grep -qx docker/runtime-packages.txt <<<"$(printf '%s\n' "${COPY_SRC[@]}")" ||
    fail "the runtime stage does not install docker/runtime-packages.txt, which the image check builds from"
list() { sed -e 's/#.*//' "$repo/docker/$1" | xargs -n1; }
runtime=$(list runtime-packages.txt)
missing=""
for so in $(readelf -d "$SLUICE_BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    pkg=""
    for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib /lib; do
        pkg=$(dpkg -S "$d/$so" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || fail "no Debian package on this machine ships $so (NEEDED by sluice)"
    [ "$pkg" = libc6 ] && continue # Essential: in every Debian image
    grep -qx "$pkg" <<<"$runtime" || missing="$missing $pkg($so)"
done
[ -z "$missing" ] || fail "sluice links to libraries whose packages are not in docker/runtime-packages.txt:$missing"
echo "runtime-packages.txt holds the package of each library sluice needs: $(xargs <<<"$runtime")"
printf '%s\n' "$(cd "$repo" && make -s --no-print-directory -f - print-deb-pkgs <<'MK'
include Makefile
print-deb-pkgs: ; @echo $(DEB_PKGS)
MK
)" | xargs -n1 | sort -u >"$WORK/deb-pkgs"
[ -s "$WORK/deb-pkgs" ] || fail "cannot read DEB_PKGS from the Makefile"
extra=$(list build-packages.txt | sort -u | comm -23 - "$WORK/deb-pkgs" | xargs)
[ -z "$extra" ] || fail "build-packages.txt has packages the Makefile's DEB_PKGS lacks: $extra"
base=$(sed -n 's/^ARG DEBIAN_BASE=//p' "$df")
suite=${base#*:}
suite=${suite%%-*}
. /etc/os-release
other_release=
if [ "$suite" = "${VERSION_CODENAME:-}" ]; then
    note "base $base, this machine $PRETTY_NAME $(cat /etc/debian_version)"
else
    other_release="the image's base $base is not this machine's Debian ($PRETTY_NAME): its library versions are not the ones tested here"
fi

# 3. The build context.
t0=$(now_ms)
read -r n bytes tn tbytes < <(python3 "$tool" context "$repo" "$WORK/context")
for p in tests/integration/kafka/target/lib-3.9.1/kafka.jar build/sluice build-asan/sluice build/image/x \
    build-fuzz/x .git/HEAD sluice sluice-asan tests/fuzz/corpus/x tests/integration/0001-topics-apply.sh \
    bench/x.c src/app.o ops/x.yaml; do
    python3 "$tool" admits "$repo" "$p" | grep -q '^no ' || fail ".dockerignore lets $p into the build context"
done
for i in "${!COPY_SRC[@]}"; do
    case "${COPY_SRC[$i]}" in @*) continue ;; esac
    [ -e "$WORK/context/${COPY_SRC[$i]}" ] || fail "the runtime stage COPYs ${COPY_SRC[$i]}, which is not in the build context"
done
note "build context: $n files, $((bytes / 1024)) KiB of the tree's $tn files, $((tbytes / 1048576)) MiB ($(($(now_ms) - t0)) ms to walk)"

# 4. The build stage, rehearsed.
COPY_SRC=() COPY_DST=() RUN_CMDS=() STAGE_ARGS=()
eval "$(python3 "$tool" layers "$df" build)"
commit=
if [ -z "$(git -C "$repo" rev-parse --show-prefix 2>/dev/null)" ] &&
    commit=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null); then
    [ -z "$(git -C "$repo" --no-optional-locks status --porcelain -uno)" ] || commit=$commit-dirty
elif [ -f "$repo/COMMIT" ]; then
    commit=$(tr -cd '0-9A-Za-z.-' <"$repo/COMMIT")
fi
build_args=()
for a in "${STAGE_ARGS[@]}"; do
    [ "$a" = SLUICE_COMMIT ] && [ -n "$commit" ] && build_args+=("SLUICE_COMMIT=$commit")
done
stage=$WORK/stage
for i in "${!COPY_SRC[@]}"; do
    src=${COPY_SRC[$i]} dst=$stage${COPY_DST[$i]}
    case "$src" in docker/*-packages.txt) continue ;; esac
    [ -e "$WORK/context/$src" ] || fail "the build stage COPYs $src, which is not in the build context"
    if [ -d "$WORK/context/$src" ]; then
        mkdir -p "$dst" && cp -a "$WORK/context/$src/." "$dst/"
    else
        case "$dst" in */) dst=$dst$(basename "$src") ;; esac
        mkdir -p "$(dirname "$dst")" && cp -a "$WORK/context/$src" "$dst"
    fi
done
t0=$(now_ms)
for c in "${RUN_CMDS[@]}"; do
    case "$c" in *apt-get*) continue ;; esac
    (cd "$stage$WORKDIR" && env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        "${build_args[@]}" sh -c "$c") >"$WORK/build.log" 2>&1 ||
        fail "the build stage's RUN $c failed in a tree made of its COPYs: $(tail -5 "$WORK/build.log")"
done
"$stage$WORKDIR/sluice" version >"$WORK/version" || fail "the build stage's sluice does not run"
note "build stage rehearsed: ${RUN_CMDS[*]: -1} (${build_args[*]:-no build args}) in $(($(now_ms) - t0)) ms from the context alone"
if [ -n "$commit" ]; then
    grep -qx "commit $commit" "$WORK/version" ||
        fail "the image's sluice version says '$(grep '^commit' "$WORK/version")', not commit $commit (docker/Dockerfile must take SLUICE_COMMIT as a build arg)"
    echo "the image's sluice version: $(grep '^commit' "$WORK/version")"
else
    note "neither a git checkout nor a tarball with COMMIT: the image's commit is not checked ($(grep '^commit' "$WORK/version"))"
fi
[ -z "$other_release" ] || skip "$other_release (the other checks passed)"
echo PASS
