/* SPDX-License-Identifier: Apache-2.0 */
/*
 * partitioner.c — what the reroute check costs: the partition of every
 * keyed input record by the pipeline's input_partitioner (partitioner.h),
 * compared with the partition it arrived on.  No broker.
 *
 *   build/bench/partitioner [COUNT]      (default 10000000)
 *
 * Prints ns per check for keys of 8, 16, 36 and 64 bytes (a short id, a
 * timer id, a uuid as text, a long key), for murmur2 (the default, Java's)
 * and crc32 (librdkafka's default), over 12 partitions.  The target is
 * 100 ns per keyed record.  Asserts nothing.
 */
#include <stdio.h>

#include "bench.h"
#include "partitioner.h"
#include "util.h"

static const char *prog = "partitioner";

static volatile int64_t sink;

static void bench_check(sl_partitioner_t how, const char *name, size_t len,
                        int64_t n) {
        char key[64];
        int64_t moved = 0, t0, t1;
        memset(key, 'k', sizeof(key));
        t0 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                memcpy(key, &i, sizeof(i)); /* a new key each time */
                /* The check of task.c: where the key belongs, against
                 * where the record came in. */
                moved += sl_partitioner_partition(how, key, len, 12) !=
                         (int32_t)(i % 12);
        }
        t1 = sl_mono_us();
        sink = moved;
        printf("%-7s %2zu-byte key: %5.1f ns per keyed record\n", name, len,
               (double)(t1 - t0) * 1000.0 / (double)n);
}

int main(int argc, char **argv) {
        int64_t n = 10000000;
        static const size_t lens[] = {8, 16, 36, 64};

        if (argc > 1 && (n = strtoll(argv[1], NULL, 10)) <= 0)
                bench_die(prog, "COUNT: a positive integer");
        for (size_t i = 0; i < SL_ARRAY_SIZE(lens); i++)
                bench_check(SL_PARTITIONER_MURMUR2, "murmur2", lens[i], n);
        for (size_t i = 0; i < SL_ARRAY_SIZE(lens); i++)
                bench_check(SL_PARTITIONER_CRC32, "crc32", lens[i], n);
        return 0;
}
