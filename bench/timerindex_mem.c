/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerindex_mem.c — memory per pending timer in the compact timer index
 * (timerindex.h; issue 49's budget: at most 40 bytes of RSS per timer, the
 * goal 32, for the index with every array and its slack), and its rates.
 *
 *   build/bench/timerindex_mem [COUNT]
 *
 * Adds COUNT entries (default 1000000) for 16-byte ids ("t-" and 14
 * digits, their sl_hash() computed beforehand, outside the figures), due
 * times uniform over 7 days, loc the entry's number (an offset), and prints
 * the growth of the process's resident set (/proc/self/statm) and
 * sl_timerindex_memory() per entry.  Then cancels every other id by hash
 * (find, then remove; the hash of the id 8 ahead prefetched), adds as many
 * new ids (slots reused: RSS should not grow), looks ahead with
 * earliest() (the same call repeated, then in rounds of one call and 256
 * fires, so that each call walks a frontier it has not seen, and bounded
 * by a due time), fires every entry left (min, remove), and prints the
 * rates, the time per earliest() and the memory left.  Asserts nothing.
 * No broker.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "hash.h"
#include "timerindex.h"
#include "util.h"

#define IDLEN    16
#define WEEK_MS  (7LL * 24 * 3600 * 1000)
#define BASE_MS  1767225600000LL /* 2026-01-01T00:00:00Z */
#define PREFETCH 8

static const char *prog = "timerindex_mem";

static uint64_t id_hash(int64_t i) {
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "t-%014lld",
                 (long long)(i % 100000000000000LL));
        return sl_hash(tmp, IDLEN);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static int64_t random_due(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return BASE_MS + (int64_t)(rng % (uint64_t)WEEK_MS);
}

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* earliest() of up to max, repeated reps times on the same index (what it
 * walks stays in the cache after the first): ns per call. */
static double earliest_warm(const sl_timerindex_t *ix, int64_t until,
                            size_t max, int reps, uint32_t *out, size_t *got) {
        int64_t t = now_ns();
        for (int r = 0; r < reps; r++)
                *got = sl_timerindex_earliest(ix, until, max, out);
        return (double)(now_ns() - t) / reps;
}

static void add(sl_timerindex_t *ix, uint64_t hash, int64_t loc) {
        if (sl_timerindex_add(ix, hash, random_due(), loc, 0) ==
            SL_TIMERINDEX_NONE)
                bench_die(prog, "add %lld failed", (long long)loc);
}

int main(int argc, char **argv) {
        int64_t n = 1000000, rss0, rss1, rss2, rss3, t0, t1, t2, t3, t4, t5;
        uint64_t *hashes;
        sl_timerindex_t *ix;
        int64_t removed = 0, fired = 0;

        if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
                fprintf(stderr, "usage: %s [COUNT]\n", prog);
                return BENCH_EXIT_USAGE;
        }
        if (argc == 2)
                n = bench_parse_int(prog, "COUNT", argv[1], 2, 1000000000);

        /* The hashes of 1.5 n ids, touched before the baseline. */
        hashes = sl_malloc((size_t)(n + n / 2) * sizeof(*hashes));
        for (int64_t i = 0; i < n + n / 2; i++)
                hashes[i] = id_hash(i);

        rss0 = bench_rss_bytes(prog);
        t0 = sl_mono_us();
        ix = sl_timerindex_new(0);
        for (int64_t i = 0; i < n; i++)
                add(ix, hashes[i], i);
        t1 = sl_mono_us();
        rss1 = bench_rss_bytes(prog);

        printf("entries                %lld (ids of %d bytes, due times "
               "uniform over 7 days)\n",
               (long long)n, IDLEN);
        printf("rss delta              %.1f MiB\n",
               (double)(rss1 - rss0) / (1024.0 * 1024.0));
        printf("rss per entry          %.2f bytes (budget 40, goal 32)\n",
               (double)(rss1 - rss0) / (double)n);
        printf("memory() per entry     %.2f bytes\n",
               (double)sl_timerindex_memory(ix) / (double)n);

        /* Cancel every other id by its hash. */
        t2 = sl_mono_us();
        for (int64_t i = 0; i < n; i += 2) {
                uint32_t h;
                if (i + 2 * PREFETCH < n)
                        sl_timerindex_prefetch(ix, hashes[i + 2 * PREFETCH]);
                h = sl_timerindex_find(ix, hashes[i]);
                if (h == SL_TIMERINDEX_NONE)
                        bench_die(prog, "id %lld not found", (long long)i);
                sl_timerindex_remove(ix, h);
                removed++;
        }
        t3 = sl_mono_us();
        for (int64_t i = 0; i < n / 2; i++)
                add(ix, hashes[n + i], n + i);
        rss2 = bench_rss_bytes(prog);
        printf("after cancelling n/2 and adding n/2: rss per entry %.2f, "
               "memory() per entry %.2f\n",
               (double)(rss2 - rss0) / (double)sl_timerindex_count(ix),
               (double)sl_timerindex_memory(ix) /
                   (double)sl_timerindex_count(ix));

        /* Look ahead: the same call repeated (warm), then rounds of one
         * call of 1024 and 256 fires (each call's frontier partly new), and
         * bounded by the first due time plus a minute. */
        {
                static const size_t maxes[] = {64, 256, 1024, 4096};
                uint32_t *out = sl_malloc(4096 * sizeof(*out));
                int64_t ns = 0, first;
                size_t got = 0;
                int rounds = 1000;

                for (size_t m = 0; m < sizeof(maxes) / sizeof(*maxes); m++) {
                        double t = earliest_warm(ix, INT64_MAX, maxes[m], 200,
                                                 out, &got);
                        printf("earliest(%4zu), warm   %.1f us a call, "
                               "%.0f ns an entry\n",
                               maxes[m], t / 1000.0, t / (double)got);
                }
                for (int r = 0; r < rounds; r++) {
                        int64_t t = now_ns();
                        got = sl_timerindex_earliest(ix, INT64_MAX, 1024, out);
                        ns += now_ns() - t;
                        if (got != 1024)
                                bench_die(prog, "earliest gave %zu", got);
                        for (int i = 0; i < 256; i++)
                                sl_timerindex_remove(ix, sl_timerindex_min(ix));
                }
                printf("earliest(1024), firing %.1f us a call (%d calls, "
                       "256 fires between: %d entries)\n",
                       (double)ns / rounds / 1000.0, rounds, rounds * 256);
                first = sl_timerindex_due(ix, sl_timerindex_min(ix));
                {
                        double t = earliest_warm(ix, first + 60000, 4096, 200,
                                                 out, &got);
                        printf("earliest(4096) due within a minute: %zu "
                               "entries, %.1f us a call (warm)\n",
                               got, t / 1000.0);
                }
                free(out);
        }

        /* Fire everything in order. */
        t4 = sl_mono_us();
        for (uint32_t h; (h = sl_timerindex_min(ix)) != SL_TIMERINDEX_NONE;
             fired++)
                sl_timerindex_remove(ix, h);
        t5 = sl_mono_us();
        rss3 = bench_rss_bytes(prog);

        printf("add                    %.0f entries/s\n",
               bench_rate(n, bench_seconds(t0, t1)));
        printf("remove by hash         %.0f entries/s (find + remove)\n",
               bench_rate(removed, bench_seconds(t2, t3)));
        printf("fire (min + remove)    %.0f entries/s (%lld entries)\n",
               bench_rate(fired, bench_seconds(t4, t5)), (long long)fired);
        printf("after firing all       rss delta %.1f MiB, memory() %zu "
               "bytes\n",
               (double)(rss3 - rss0) / (1024.0 * 1024.0),
               sl_timerindex_memory(ix));
        sl_timerindex_destroy(ix);
        free(hashes);
        return 0;
}
