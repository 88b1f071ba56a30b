/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash.c — the cost of the keyed hash (hash.h) and of the tables that use
 * it, no broker.
 *
 *   build/bench/hash [COUNT]      (default 1000000)
 *
 * Prints ns per sl_hash() call for keys of 8, 16, 36 and 64 bytes (a timer
 * id, a uuid as text, ...), then ns per sl_timerheap_find() and per
 * sl_timerheap_upsert() of COUNT distinct 16-byte keys: the timer heap is
 * the table behind pending timers and debounce items, and its index by key
 * is the hash map (hmap.h) behind debounce groups, rates and throttle keys
 * too.
 * Asserts nothing.
 */
#include <stdio.h>

#include "bench.h"
#include "hash.h"
#include "timerheap.h"
#include "util.h"

static const char *prog = "hash";

static volatile uint64_t sink;

static void bench_hash(size_t len, int64_t n) {
        char key[64];
        uint64_t acc = 0;
        int64_t t0, t1;
        memset(key, 'k', sizeof(key));
        t0 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                memcpy(key, &i, sizeof(i)); /* a new key each time */
                acc += sl_hash(key, len);
        }
        t1 = sl_mono_us();
        sink = acc;
        printf("sl_hash %2zu-byte key: %.1f ns/hash\n", len,
               (double)(t1 - t0) * 1000.0 / (double)n);
}

int main(int argc, char **argv) {
        int64_t n = 1000000, t0, t1, t2;
        sl_timerheap_t *h = sl_timerheap_new();
        char key[17];
        size_t found = 0;

        if (argc > 1 && (n = strtoll(argv[1], NULL, 10)) <= 0)
                bench_die(prog, "COUNT: a positive integer");
        bench_hash(8, n * 10);
        bench_hash(16, n * 10);
        bench_hash(36, n * 10);
        bench_hash(64, n * 10);

        t0 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%016" PRIx64,
                         (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15));
                if (sl_timerheap_upsert(h, key, 16, i, i, NULL, 0) < 0)
                        bench_die(prog, "upsert failed");
        }
        t1 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "%016" PRIx64,
                         (uint64_t)i * UINT64_C(0x9e3779b97f4a7c15));
                found += sl_timerheap_find(h, key, 16) != NULL;
        }
        t2 = sl_mono_us();
        if (found != (size_t)n)
                bench_die(prog, "found %zu of %" PRId64, found, n);
        printf("timerheap upsert (16-byte keys, %" PRId64
               " timers): %.1f ns/op (incl. ~40 ns snprintf)\n",
               n, (double)(t1 - t0) * 1000.0 / (double)n);
        printf("timerheap find   (16-byte keys, %" PRId64
               " timers): %.1f ns/op (incl. ~40 ns snprintf)\n",
               n, (double)(t2 - t1) * 1000.0 / (double)n);
        sl_timerheap_destroy(h);
        return 0;
}
