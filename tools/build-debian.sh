#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# build-debian.sh — builds sluice and runs its unit tests in a Debian root of
# another release, made with mmdebstrap: proof that the build works there
# (make build-trixie and test 0052: Debian 13).
#
#   tools/build-debian.sh [SUITE]     (default trixie; needs root)
#
# The root: mmdebstrap SUITE, variant apt, from deb.debian.org (the suite and
# its -security; SLUICE_IMAGE_MIRROR replaces the host, as for
# docker/rootfs.sh), with docker/build-packages.txt (what the Dockerfile's
# build stage installs: a subset of the Makefile's DEB_PKGS) and
# libcmocka-dev, without recommends.  While apt's lists are there it also
# notes which of the Makefile's DEB_PKGS the suite lacks by that name.
# Cached under build/debian/rootfs-<key> (the key hashes the suite, the
# sources, the packages and this script), built in a temporary folder and
# renamed; `rm -rf build/debian` to pick up new package versions.
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
mirror=${SLUICE_IMAGE_MIRROR:-http://deb.debian.org}
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
sources=(
    "deb $mirror/debian $suite main"
    "deb $mirror/debian-security $suite-security main"
)
# The hook runs while apt's lists are in the root (mmdebstrap removes them
# at the end): the names of DEB_PKGS that SUITE does not have.  And the
# /etc/hosts an installed system or a container has (the unit tests
# resolve localhost); mmdebstrap makes none.
hook='for p in '"$deb_pkgs"'; do
    chroot "$1" apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || echo "$p"
done >"$1/.deb-pkgs-missing"
printf "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" >"$1/etc/hosts"'
args=(--variant=apt --mode=root --include="${packages// /,}"
    --aptopt='APT::Install-Recommends "false"'
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --customize-hook="$hook")
key=$( {
    printf '%s\n' "$suite" "${sources[@]}" "${args[@]}"
    cat "$0"
} | sha256sum | cut -c1-16)
out=$cache/rootfs-$suite-$key

if [ -x "$out/usr/bin/make" ] && [ -f "$out.packages" ]; then
    say "root: cached $out"
else
    mkdir -p "$cache"
    for old in "$cache"/rootfs-"$suite"-*; do
        [ -e "$old" ] || continue
        case "$old" in "$out" | "$out".*) ;; *) rm -rf "$old" ;; esac
    done
    tmp=$cache/.rootfs-$suite-$key.tmp.$$
    rm -rf "$tmp"
    trap 'rm -rf "$tmp" "$tmp.packages"' EXIT
    say "building $out: mmdebstrap $suite + $packages"
    t0=$(date +%s)
    mmdebstrap "${args[@]}" "$suite" "$tmp" "${sources[@]}" >&2
    chroot "$tmp" dpkg-query -W -f '${Package} ${Version}\n' >"$tmp.packages"
    mv "$tmp" "$out"
    mv "$tmp.packages" "$out.packages"
    trap - EXIT
    say "root: built in $(($(date +%s) - t0)) s: $(du -sm "$out" | cut -f1) MB, $(wc -l <"$out.packages") packages"
fi
vers=""
for p in gcc-[0-9]* librdkafka1 libuv1t64 libuv1 libjemalloc2 libmicrohttpd12t64 libmicrohttpd12 libgnutls30t64 libgnutls30; do
    v=$(awk -v p="$p" '$1 ~ "^" p "$" && !seen[$1]++ {print $1 "=" $2}' "$out.packages")
    [ -z "$v" ] || vers="$vers $v"
done
say "$suite packages:$vers"
missing=$(xargs <"$out/.deb-pkgs-missing" 2>/dev/null || echo "?")
say "DEB_PKGS that $suite lacks by that name: ${missing:-none}"

# The source: tracked files, with the working tree's edits.
tarball=$(mktemp /tmp/sluice-build-debian.XXXXXX.tar)
trap 'rm -f "$tarball"' EXIT
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
