/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerheap_mem.c — memory per pending timer in the delay operator's timer
 * heap (the target: at most 64 bytes beyond key and payload).
 *
 *   build/bench/timerheap_mem [--malloc] [COUNT [DATALEN]]
 *
 * Inserts COUNT timers (default 1000000) with 16-byte keys and DATALEN
 * bytes of data (default 104: the blob op_delay keeps for a 100-byte
 * payload), scattered due times, in a slab heap as op_delay uses (or with
 * --malloc, the one-malloc-per-timer kind), and prints the growth of the
 * process's resident set (/proc/self/statm) per timer, with and without the
 * key and data bytes.  Then cancels every other timer, schedules as many
 * again (free-list reuse: RSS should not grow), fires them all, and prints
 * the rates for reference.  Asserts nothing.  No broker.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "slab.h"
#include "timerheap.h"
#include "util.h"

#define KEYLEN 16

static const char *prog = "timerheap_mem";

static void key_of(char *key, int64_t i) {
        /* 16 bytes exactly: "t-" and 14 digits. */
        char tmp[32];
        snprintf(tmp, sizeof(tmp), "t-%014lld",
                 (long long)(i % 100000000000000LL));
        memcpy(key, tmp, KEYLEN);
}

static void upsert(sl_timerheap_t *h, int64_t i, const char *data,
                   size_t datalen) {
        char key[KEYLEN];
        key_of(key, i);
        /* Due times spread over ~11 days with ties. */
        if (sl_timerheap_upsert(h, key, KEYLEN,
                                1767225600000LL + (i * 7919) % 1000000 * 1000,
                                i, data, datalen) < 0)
                bench_die(prog, "upsert %lld failed", (long long)i);
}

int main(int argc, char **argv) {
        int64_t n = 1000000, datalen = 104, rss0, rss1, rss2, t0, t1, t2, t3;
        int use_malloc = 0, a = 1;
        sl_timerheap_t *h;
        char data[65536];

        if (a < argc && !strcmp(argv[a], "--malloc")) {
                use_malloc = 1;
                a++;
        }
        if (argc - a > 2 || (a < argc && argv[a][0] == '-')) {
                fprintf(stderr, "usage: %s [--malloc] [COUNT [DATALEN]]\n",
                        prog);
                return BENCH_EXIT_USAGE;
        }
        if (a < argc)
                n = bench_parse_int(prog, "COUNT", argv[a++], 1, 100000000);
        if (a < argc)
                datalen = bench_parse_int(prog, "DATALEN", argv[a++], 0,
                                          (int64_t)sizeof(data));
        memset(data, 'x', sizeof(data));

        rss0 = bench_rss_bytes(prog);
        t0 = sl_mono_us();
        h = use_malloc ? sl_timerheap_new() : sl_timerheap_new_slab();
        for (int64_t i = 0; i < n; i++)
                upsert(h, i, data, (size_t)datalen);
        t1 = sl_mono_us();
        rss1 = bench_rss_bytes(prog);

        double per = (double)(rss1 - rss0) / (double)n;
        printf("heap                   %s\n",
               use_malloc ? "malloc per timer" : "slab");
        printf("timers                 %lld (key %d bytes, data %lld bytes)\n",
               (long long)n, KEYLEN, (long long)datalen);
        printf("rss delta              %.1f MiB\n",
               (double)(rss1 - rss0) / (1024.0 * 1024.0));
        printf("bytes per timer        %.1f\n", per);
        printf("beyond key and data    %.1f (target <= 64)\n",
               per - KEYLEN - (double)datalen);

        /* Churn: cancel every other timer, schedule as many new ids. */
        for (int64_t i = 0; i < n; i += 2) {
                char key[KEYLEN];
                key_of(key, i);
                sl_timerheap_remove(h, key, KEYLEN);
        }
        for (int64_t i = 0; i < n; i += 2)
                upsert(h, n + i, data, (size_t)datalen);
        rss2 = bench_rss_bytes(prog);
        printf("after cancel n/2 + n/2 new: beyond key and data %.1f "
               "(compactions %zu)\n",
               (double)(rss2 - rss0) / (double)n - KEYLEN - (double)datalen,
               sl_timerheap_compactions(h));

        t2 = sl_mono_us();
        while (sl_timerheap_drop_min(h))
                ;
        t3 = sl_mono_us();
        printf("insert                 %.0f timers/s\n",
               bench_rate(n, bench_seconds(t0, t1)));
        printf("fire (drop_min)        %.0f timers/s\n",
               bench_rate(n, bench_seconds(t2, t3)));
        sl_timerheap_destroy(h);
        return 0;
}
