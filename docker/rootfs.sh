#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rootfs.sh — builds the runtime root filesystem of docker/Dockerfile without
# a Docker engine, from Debian's packages only, and prints its path.
#
#   docker/rootfs.sh [CACHE_DIR]      (default build/image; needs root)
#
# What the Dockerfile's runtime stage starts from and installs, made with
# mmdebstrap:
#   - the suite of the Dockerfile's DEBIAN_BASE default (bookworm), with the
#     apt sources of Debian's official image (the suite, -updates and
#     -security on deb.debian.org; SLUICE_IMAGE_MIRROR replaces the host);
#   - variant "apt" (Essential: yes packages and apt: what debootstrap's
#     minbase, the official image's base, holds);
#   - the slim image's dpkg path excludes (no docs, man pages, locales);
#   - docker/runtime-packages.txt installed without recommends.
# The COPY, USER, ENTRYPOINT and CMD layers are the test's to add
# (tests/integration/0021-image-pid1.sh): this is the part that is slow.
#
# tools/build-debian.sh (make build-trixie) makes other roots the same way:
# SLUICE_ROOTFS_SUITE replaces the suite, SLUICE_ROOTFS_PACKAGES the list's
# packages, and SLUICE_ROOTFS_HOOK is given to mmdebstrap --customize-hook.
#
# Cached under CACHE_DIR/rootfs-<key>, where the key hashes all of the above
# (and this script), so an edit to the package list or the base builds a new
# one and a rerun costs nothing.  The cache does not follow Debian's point
# releases by itself: `rm -rf build/image` to pick up new package versions.
# Built in a temporary folder and renamed, so an interrupted build leaves no
# half tree behind.  Progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-$root/build/image}
list=$root/docker/runtime-packages.txt
dockerfile=$root/docker/Dockerfile
mirror=${SLUICE_IMAGE_MIRROR:-http://deb.debian.org}

[ "$(id -u)" = 0 ] || { echo "rootfs.sh: needs root (mmdebstrap's root mode)" >&2; exit 1; }
command -v mmdebstrap >/dev/null ||
    { echo "rootfs.sh: mmdebstrap is not installed (apt-get install mmdebstrap; make deps does)" >&2; exit 1; }

# The suite from the pinned base: debian:bookworm-20250520-slim -> bookworm.
base=$(sed -n 's/^ARG DEBIAN_BASE=//p' "$dockerfile" | head -1)
suite=${base#*:}
suite=${suite%%-*}
case "$base" in
debian:[a-z]*-[0-9]*-slim) ;;
*) echo "rootfs.sh: cannot read a pinned debian:<suite>-<date>-slim DEBIAN_BASE from $dockerfile (got '$base')" >&2; exit 1 ;;
esac
suite=${SLUICE_ROOTFS_SUITE:-$suite}

packages=${SLUICE_ROOTFS_PACKAGES:-$(sed -e 's/#.*//' "$list" | xargs)}
[ -n "$packages" ] || { echo "rootfs.sh: $list lists no package" >&2; exit 1; }

sources=(
    "deb $mirror/debian $suite main"
    "deb $mirror/debian $suite-updates main"
    "deb $mirror/debian-security $suite-security main"
)
# The official slim image's /etc/dpkg/dpkg.cfg.d/docker, in short.
dpkgopts=(
    'path-exclude=/usr/share/doc/*'
    'path-include=/usr/share/doc/*/copyright'
    'path-exclude=/usr/share/man/*'
    'path-exclude=/usr/share/info/*'
    'path-exclude=/usr/share/locale/*'
    'path-exclude=/usr/share/lintian/*'
)
args=(--variant=apt --mode=root --include="${packages// /,}"
    --aptopt='APT::Install-Recommends "false"')
for o in "${dpkgopts[@]}"; do args+=(--dpkgopt="$o"); done
[ -z "${SLUICE_ROOTFS_HOOK:-}" ] || args+=(--customize-hook="$SLUICE_ROOTFS_HOOK")

key=$( {
    printf '%s\n' "$suite" "${sources[@]}" "${args[@]}"
    cat "$0"
} | sha256sum | cut -c1-16)
out=$cache/rootfs-$key

if [ -x "$out/usr/bin/apt-get" ] && [ -f "$out.packages" ]; then
    echo "rootfs.sh: cached $out ($suite: $packages)" >&2
    echo "$out"
    exit 0
fi

mkdir -p "$cache"
# Older keys: a changed list or base makes them dead weight.
for old in "$cache"/rootfs-*; do
    [ -e "$old" ] || continue
    case "$old" in "$out" | "$out".*) ;; *) rm -rf "$old" ;; esac
done
tmp=$cache/.rootfs-$key.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp" "$tmp.packages"' EXIT
echo "rootfs.sh: building $out: mmdebstrap $suite + $packages" >&2
t0=$(date +%s)
mmdebstrap "${args[@]}" "$suite" "$tmp" "${sources[@]}" >&2
# What went in, with versions: for the test's report and for comparing
# with `dpkg-query -W` in a built image.
chroot "$tmp" dpkg-query -W -f '${Package} ${Version}\n' >"$tmp.packages"
mv "$tmp" "$out"
mv "$tmp.packages" "$out.packages"
trap - EXIT
echo "rootfs.sh: built in $(($(date +%s) - t0)) s: $(du -sm "$out" | cut -f1) MB, $(wc -l <"$out.packages") packages" >&2
echo "$out"
