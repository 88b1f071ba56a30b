#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 0051-release-dist — the source tarball builds without git, and the
# release's names agree.  No broker.
#
#   1. `make dist` writes sluice-VERSION.tar.gz (VERSION: SL_VERSION in
#      src/cli.h): HEAD's tracked files under sluice-VERSION/, and COMMIT
#      (HEAD's hash), nothing else;
#   2. extracted in a fresh folder, `make sluice` builds there with no git
#      to be had: a `git` first on PATH that records its call and fails,
#      GIT_DIR and GIT_CEILING_DIRECTORIES pointing nowhere; the build
#      never calls it, and `./sluice version` (and --version) names the
#      version and that commit; without COMMIT the commit is "unknown";
#   3. the checkout's own ./sluice names the version and HEAD (-dirty when
#      tracked files differ);
#   4. CHANGELOG.md's newest section and the image tags in ops/ name the
#      version.
#
# The tarball's build is at -O0: what is tested is that the tarball holds
# everything the build needs, not the optimised build (make sluice).
source "$(dirname "$0")/lib.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
# A make of its own, not a job of make test's.
unset MAKEFLAGS MFLAGS MAKELEVEL

version=$(sed -n 's/^#define SL_VERSION "\(.*\)"$/\1/p' "$repo/src/cli.h")
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "src/cli.h names no SL_VERSION X.Y.Z (read '$version')"
head=$(git -C "$repo" rev-parse --short=12 HEAD)

# 1. The tarball.
t0=$(now_ms)
make -s -C "$repo" dist DIST_DIR="$WORK" >"$WORK/dist.log" 2>&1 ||
    fail "make dist failed: $(tail -5 "$WORK/dist.log")"
tgz=$WORK/sluice-$version.tar.gz
[ -f "$tgz" ] || fail "make dist wrote no sluice-$version.tar.gz: $(cat "$WORK/dist.log")"
tar -tzf "$tgz" | grep -v '/$' | sort >"$WORK/in-tarball"
{
    git -C "$repo" ls-tree -r --name-only HEAD | sed "s|^|sluice-$version/|"
    echo "sluice-$version/COMMIT"
} | sort >"$WORK/want"
if ! cmp -s "$WORK/want" "$WORK/in-tarball"; then
    fail "the tarball is not HEAD's files and COMMIT: $(diff "$WORK/want" "$WORK/in-tarball" | grep '^[<>]' | head -5 | tr '\n' ' ')"
fi
commit=$(tar -xzOf "$tgz" "sluice-$version/COMMIT")
[ "$commit" = "$head" ] || fail "the tarball's COMMIT is '$commit', HEAD is $head"
note "make dist: sluice-$version.tar.gz, $(wc -l <"$WORK/in-tarball") files, $(($(stat -c %s "$tgz") / 1024)) KiB, COMMIT $commit ($(($(now_ms) - t0)) ms)"

# 2. Its build, with no git.
mkdir -p "$WORK/x" "$WORK/nogit"
tar -xzf "$tgz" -C "$WORK/x"
tree=$WORK/x/sluice-$version
cat >"$WORK/nogit/git" <<EOF
#!/bin/sh
echo "git \$*" >>"$WORK/git-calls"
echo "git: not here (0051)" >&2
exit 127
EOF
chmod +x "$WORK/nogit/git"
nogit() {
    (cd "$tree" && env -i PATH="$WORK/nogit:/usr/local/bin:/usr/bin:/bin" HOME="$WORK" \
        GIT_DIR=/nonexistent GIT_CEILING_DIRECTORIES="$WORK" "$@")
}
nogit git --version >/dev/null 2>&1 && fail "git still runs in the build's environment"
rm -f "$WORK/git-calls"
t0=$(now_ms)
nogit make -j2 sluice CFLAGS=-O0 >"$WORK/build.log" 2>&1 ||
    fail "make sluice failed in the extracted tarball: $(tail -5 "$WORK/build.log")"
[ ! -s "$WORK/git-calls" ] || fail "the tarball's build called git: $(head -3 "$WORK/git-calls" | tr '\n' ';')"
note "make sluice in the extracted tarball, no git: $(($(now_ms) - t0)) ms"
for arg in version --version; do
    out=$("$tree/sluice" "$arg") || fail "sluice $arg failed"
    [ "$(sed -n 1p <<<"$out")" = "sluice $version" ] ||
        fail "sluice $arg of the tarball's build does not say 'sluice $version': $out"
    [ "$(sed -n 2p <<<"$out")" = "commit $head" ] ||
        fail "sluice $arg of the tarball's build does not say 'commit $head': $out"
    grep -qE '^librdkafka [0-9]' <<<"$out" || fail "sluice $arg names no librdkafka: $out"
done
note "$(tr '\n' ';' <<<"$out" | sed 's/;$//; s/;/; /g')"
rm "$tree/COMMIT"
nogit make -s build/gen/buildinfo.h >>"$WORK/build.log" 2>&1 || fail "make build/gen/buildinfo.h failed without COMMIT"
grep -q '"unknown"' "$tree/build/gen/buildinfo.h" ||
    fail "without COMMIT or git the build's commit is not 'unknown': $(cat "$tree/build/gen/buildinfo.h")"

# 3. The checkout's own build.
out=$("$SLUICE_BIN" version)
[ "$(sed -n 1p <<<"$out")" = "sluice $version" ] || fail "$SLUICE_BIN version does not say 'sluice $version': $out"
case "$(sed -n 2p <<<"$out")" in
"commit $head" | "commit $head-dirty") ;;
*) fail "$SLUICE_BIN version does not name HEAD $head (built before the last commit? make sluice): $out" ;;
esac

# 4. The names of the release.
top=$(sed -n 's/^## \([^ ]*\).*/\1/p' "$repo/CHANGELOG.md" | head -1)
[ "$top" = "$version" ] || fail "CHANGELOG.md's newest section is '$top', SL_VERSION is $version"
tags=$(grep -rhoE 'newTag: *"?[0-9]+\.[0-9]+\.[0-9]+[^"]*"?' "$repo/ops" | sed -E 's/newTag: *"?([^"]*)"?/\1/' | sort -u)
for t in $tags; do
    [ "$t" = "$version" ] || fail "an image in ops/ is tagged $t, SL_VERSION is $version: $(grep -rl "newTag: *\"\\?$t" "$repo/ops" | xargs)"
done
note "version $version: src/cli.h, CHANGELOG.md, ops/ image tags ($(wc -w <<<"$tags") distinct)"
echo PASS
