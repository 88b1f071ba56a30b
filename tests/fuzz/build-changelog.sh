#!/bin/sh
# build-changelog.sh — a temporary build of the changelog fuzz harnesses
# (tests/fuzz/fuzz_changelog_*.c) and their seed generator, until
# tests/fuzz/fuzz.mk builds them.  It does what fuzz.mk is to do: clang,
# libFuzzer + ASan + UBSan, an archive of src/*.c minus main.c plus the
# generated protobuf-c code, each harness linked before the archive.
#
#   tests/fuzz/build-changelog.sh            build into build/fuzz-changelog/
#   tests/fuzz/build-changelog.sh seeds      also regenerate the seed corpora
#
# Run from the repository root.
set -eu

B=${BUILD:-build/fuzz-changelog}
CC=${CC:-clang}
PKGS="rdkafka libuv libprotobuf-c inih libmicrohttpd jansson"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
  -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer $SAN \
  -Isrc -I$B/gen $(pkg-config --cflags $PKGS)"
LIBS="$(pkg-config --libs $PKGS) -lm -lpthread"

mkdir -p "$B/gen" "$B/obj"
for p in proto/*.proto; do
        g="$B/gen/$(basename "$p" .proto).pb-c.c"
        [ -f "$g" ] && [ "$g" -nt "$p" ] && continue
        protoc-c --proto_path=proto --c_out="$B/gen" "$p"
done

# The library: instrumented for coverage (fuzzer-no-link), no main().
objs=""
for c in src/*.c "$B"/gen/*.pb-c.c; do
        [ "$c" = src/main.c ] && continue
        o="$B/obj/$(basename "$c" .c).o"
        if [ ! -f "$o" ] || [ "$c" -nt "$o" ] ||
           [ -n "$(find src "$B/gen" -name '*.h' -newer "$o" | head -1)" ]; then
                echo "CC $c"
                $CC $CFLAGS -fsanitize=fuzzer-no-link -c -o "$o" "$c"
        fi
        objs="$objs $o"
done
rm -f "$B/libsluice.a"
ar rcs "$B/libsluice.a" $objs

# Each harness first, then the archive: the stub runtime's definitions of
# sl_task_* and sl_app_* win, and task.o/app.o are never pulled in.
for h in tests/fuzz/fuzz_changelog_*.c; do
        n=$(basename "$h" .c)
        echo "LD $B/$n"
        $CC $CFLAGS -fsanitize=fuzzer -o "$B/$n" "$h" "$B/libsluice.a" $LIBS
done

# The seed generator: plain protobuf-c, no fuzzer.
echo "LD $B/gen_changelog_seeds"
$CC $CFLAGS -o "$B/gen_changelog_seeds" tests/fuzz/gen_changelog_seeds.c \
        "$B/obj/sluice.pb-c.o" $LIBS

if [ "${1:-}" = seeds ]; then
        for op in delay debounce throttle; do
                mkdir -p "tests/fuzz/corpus/changelog_$op"
        done
        "$B/gen_changelog_seeds" tests/fuzz/corpus
fi
