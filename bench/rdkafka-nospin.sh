#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# rdkafka-nospin.sh — builds two copies of Debian's librdkafka 2.0.2 for one
# experiment: does the producer's busy poll cost what bench/README.md says?
#
#   bench/rdkafka-nospin.sh        builds build/rdkafka-nospin/{plain,nospin}
#   LD_LIBRARY_PATH=$PWD/build/rdkafka-nospin/nospin \
#       bench/run.sh --only debounce_ingest --runs 1
#   LD_LIBRARY_PATH=$PWD/build/rdkafka-nospin/plain \
#       bench/run.sh --only debounce_ingest --runs 1
#
# The idempotent producer lets a partition have 5 messages in flight
# (librdkafka counts messages there, not requests), so in practice one
# ProduceRequest at a time.  A partition that has a batch ready while its
# request is out still brings its broker thread's next wake-up forward to
# "now", and the thread polls its sockets with a zero timeout until the
# response arrives: hundreds of thousands of poll() calls per million
# debounce items.  "nospin" changes one condition: a partition held back by
# that limit leaves the wake-up alone (the response, arriving on the socket
# the thread polls, wakes it).  "plain" is the same source without the
# change, built the same way: compare the two, not either with Debian's
# binary package.  Both sides of the bench's ratios (sluice and eos_copy)
# load the library LD_LIBRARY_PATH names; the figures block says which.
#
# Not used by the build, the tests or the product.  Needs the network
# (deb.debian.org) and a C toolchain; about a minute on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/build/rdkafka-nospin
url=http://deb.debian.org/debian/pool/main/libr/librdkafka/librdkafka_2.0.2.orig.tar.gz
sha256=f321bcb1e015a34114c83cf1aa7b99ee260236aab096b85c003170c90a47ca9d

mkdir -p "$out"
tarball=$out/librdkafka_2.0.2.orig.tar.gz
if ! echo "$sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
    curl -fsSL -o "$tarball" "$url"
    echo "$sha256  $tarball" | sha256sum -c --status || {
        echo "rdkafka-nospin: $tarball does not match its Debian checksum" >&2
        exit 1
    }
fi

src=$out/src
rm -rf "$src"
mkdir -p "$src"
tar -xzf "$tarball" -C "$src" --strip-components=1
cd "$src"
# Without the optional dependencies the bench does not use (TLS, SASL,
# compression libraries, HTTP): the same flags for both copies.
./configure --disable-ssl --disable-gssapi --disable-sasl --disable-curl \
    --disable-zstd --disable-lz4-ext >"$out/configure.log" 2>&1

build() { # build DIR
    make -C src -j"$(nproc)" librdkafka.so.1 >"$out/build-$1.log" 2>&1
    mkdir -p "$out/$1"
    cp src/librdkafka.so.1 "$out/$1/"
}

build plain

# The change: in rd_kafka_toppar_producer_serve(), the wake-up argument of
# rd_kafka_msgq_allow_wakeup_at() is NULL also while the partition has the
# idempotent producer's maximum of messages in flight.
f=src/rdkafka_broker.c
old='rkb->rkb_state == RD_KAFKA_BROKER_STATE_UP ? next_wakeup'
new='rkb->rkb_state == RD_KAFKA_BROKER_STATE_UP \&\& !(rd_kafka_is_idempotent(rkb->rkb_rk) \&\& rd_atomic32_get(\&rktp->rktp_msgs_inflight) >= RD_KAFKA_IDEMP_MAX_INFLIGHT) ? next_wakeup'
[ "$(grep -cF "$old" "$f")" = 1 ] || {
    echo "rdkafka-nospin: the line to change is not in $f once" >&2
    exit 1
}
sed -i "s/$old/$new/" "$f"
grep -qF "${new//\\/}" "$f"

build nospin
echo "built: $out/plain/librdkafka.so.1 and $out/nospin/librdkafka.so.1"
