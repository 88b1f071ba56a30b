#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build-debian.sh — builds sluice and runs its unit tests in a Debian root of
# another release, made with mmdebstrap: proof that the build works there
# (make build-trixie and test 0052: Debian 13).
#
#   tools/build-debian.sh [SUITE]     (default trixie; needs root)
#
# The root: docker/rootfs.sh's (mmdebstrap, variant apt, deb.debian.org or
# SLUICE_IMAGE_MIRROR, cached under a key of everything that makes it) of
# SUITE, with docker/build-packages.txt (what the Dockerfile's build stage
# installs: a subset of the Makefile's DEB_PKGS) and libcmocka-dev, without
# recommends, in build/debian/SUITE; `rm -rf build/debian` to pick up new
# package versions.  While apt's lists are there it also notes which of the
# Makefile's DEB_PKGS the suite lacks by that name.
#
# The source: the tracked files as they are in the working tree (git stash
# create, then git archive: uncommitted edits count, untracked files do
# not).  It is unpacked on a tmpfs mounted on the root's /tmp in a mount
# namespace of its own (unshare), so the cached root is never written, and
# there, chrooted: gcc --version, make -j2 sluice, make unit.  The last
# line is "build-debian: SUITE: ok|FAILED (...)".  Exit status 0 on ok.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
suite=${1:-trixie}
cache=$root/build/debian
t_start=$(date +%s)

say() { echo "build-debian: $*"; }
[ "$(id -u)" = 0 ] || { say "needs root (mmdebstrap's root mode, unshare, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null ||
    { say "mmdebstrap is not installed (apt-get install mmdebstrap; make deps does)" >&2; exit 1; }

# A make of its own, not a job of a calling make's.
unset MAKEFLAGS MFLAGS MAKELEVEL
packages="$(sed -e 's/#.*//' "$root/docker/build-packages.txt" | xargs) libcmocka-dev"
deb_pkgs=$(make -s --no-print-directory -C "$root" -f - print-deb-pkgs <<'MK'
include Makefile
print-deb-pkgs: ; @echo $(DEB_PKGS)
MK
)
[ -n "$deb_pkgs" ] || { say "cannot read DEB_PKGS from the Makefile" >&2; exit 1; }
# The hook runs while apt's lists are in the root (mmdebstrap removes them
# at the end): the names of DEB_PKGS that SUITE does not have.  And the
# /etc/hosts an installed system or a container has (the unit tests
# resolve localhost); mmdebstrap makes none.
hook='for p in '"$deb_pkgs"'; do
    chroot "$1" apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || echo "$p"
done >"$1/.deb-pkgs-missing"
printf "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" >"$1/etc/hosts"'
tarball=$(mktemp /tmp/sluice-build-debian.XXXXXX.tar)
log=$tarball.log
trap 'rm -f "$tarball" "$log"' EXIT
out=$(SLUICE_ROOTFS_SUITE=$suite SLUICE_ROOTFS_PACKAGES=$packages SLUICE_ROOTFS_HOOK=$hook \
    "$root/docker/rootfs.sh" "$cache/$suite" 2>"$log") || {
    cat "$log" >&2
    say "docker/rootfs.sh could not make the $suite root"
    exit 1
}
if grep -q '^rootfs.sh: cached' "$log"; then
    say "root: cached $out"
else
    say "root: $(tail -1 "$log" | sed 's/^rootfs.sh: //'): $out"
fi
vers=""
for p in 'gcc-[0-9]*' librdkafka1 libuv1t64 libuv1 libjemalloc2 libmicrohttpd12t64 libmicrohttpd12 libgnutls30t64 libgnutls30; do
    v=$(awk -v p="$p" '$1 ~ "^" p "$" && !seen[$1]++ {print $1 "=" $2}' "$out.packages")
    [ -z "$v" ] || vers="$vers $v"
done
say "$suite packages:$vers"
missing=$(xargs <"$out/.deb-pkgs-missing" 2>/dev/null || echo "?")
say "DEB_PKGS that $suite lacks by that name: ${missing:-none}"

# The source: tracked files, with the working tree's edits.
rev=$(git -C "$root" stash create 2>/dev/null || true)
git -C "$root" archive --format=tar -o "$tarball" "${rev:-HEAD}"
say "source: $(git -C "$root" rev-parse --short HEAD)${rev:+ + working-tree edits}, $(($(stat -c %s "$tarball") / 1024)) KiB"

t0=$(date +%s)
rc=0
unshare --mount --pid --fork --propagation private -- /bin/sh -c '
    r=$1 tarball=$2
    mount -t proc proc "$r/proc" &&
    mount --rbind /dev "$r/dev" &&
    mount -t tmpfs -o size=1g,mode=1777 tmpfs "$r/tmp" &&
    mkdir "$r/tmp/src" && tar -x -C "$r/tmp/src" -f "$tarball" &&
    exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 /bin/sh -c "
        cd /tmp/src && gcc --version | head -1 &&
        pkg-config --modversion rdkafka | sed \"s/^/librdkafka /\" &&
        make -j2 sluice >/tmp/make.log 2>&1 || { tail -40 /tmp/make.log; echo make sluice failed; exit 1; }
        ./sluice version || exit 1
        make unit >/tmp/unit.log 2>&1; u=\$?
        [ \$u = 0 ] || grep -v \"^\\[ \\+\\(RUN\\|OK\\) \\+\\]\" /tmp/unit.log | tail -60
        grep \"^unit: \" /tmp/unit.log; exit \$u"
' sh "$out" "$tarball" || rc=$?
secs=$(($(date +%s) - t0))
if [ "$rc" = 0 ]; then
    say "$suite: ok (make sluice and make unit in ${secs} s; $(($(date +%s) - t_start)) s in all)"
else
    say "$suite: FAILED (exit $rc after ${secs} s)"
fi
exit "$rc"
