#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0052-build-trixie — sluice builds on Debian 13 (trixie) too, and its unit
# tests pass there: tools/build-debian.sh (make build-trixie) makes a trixie
# root with mmdebstrap, cached under build/debian, with the Dockerfile's
# build packages and libcmocka-dev, and there, chrooted in a mount
# namespace of its own, runs make sluice (-Werror, trixie's gcc 14) and
# make unit (librdkafka 2.8, libmicrohttpd 1.0) on the tracked files.  It
# also names the packages of the Makefile's DEB_PKGS that trixie lacks by
# that name, so that make deps would fail there: none may be.  No broker.
# Needs root, namespaces and mmdebstrap (skipped without them, and says
# which); 100-140 s from nothing cached (the root: 40-70 s), about 60 s with
# the root cached.
#
# exclusive: make -j2 for a minute takes both of the machine's cores
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)

[ "$(id -u)" = 0 ] || skip "the trixie build needs root (mmdebstrap, unshare, chroot)"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is missing (make deps installs it)"
unshare --mount --pid --fork --propagation private true 2>"$WORK/unshare.err" ||
    skip "cannot make namespaces here: $(cat "$WORK/unshare.err")"

t0=$(now_ms)
"$repo/tools/build-debian.sh" trixie >"$WORK/build.log" 2>&1 || {
    grep -v '^I: ' "$WORK/build.log" | tail -60
    fail "the build on trixie failed"
}
grep '^build-debian: \|^gcc \|^unit: ' "$WORK/build.log"
missing=$(sed -n 's/^build-debian: DEB_PKGS that trixie lacks by that name: //p' "$WORK/build.log")
[ "$missing" = none ] || fail "make deps would fail on trixie: no package named $missing there"
note "trixie: $(grep -m1 '^gcc ' "$WORK/build.log"), $(grep -m1 '^librdkafka ' "$WORK/build.log"), $(grep '^unit: ' "$WORK/build.log"), $((($(now_ms) - t0) / 1000)) s$(grep -q '^build-debian: root: cached' "$WORK/build.log" && echo ', root cached')"
echo PASS
