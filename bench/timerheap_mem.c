/*
 * timerheap_mem.c — memory per pending timer in the delay operator's timer
 * heap (SPEC §6: at most 64 bytes beyond key and payload).
 *
 *   build/bench/timerheap_mem [COUNT]      (default 1000000)
 *
 * Inserts COUNT timers with 16-byte keys and no data, scattered due times,
 * and prints the growth of the process's resident set (/proc/self/statm)
 * per timer, with and without the key bytes.  Then pops them all and prints
 * the insert and pop rates for reference.  Asserts nothing.  No broker.
 */
#include <stdio.h>
#include <unistd.h>

#include "bench.h"
#include "timerheap.h"
#include "util.h"

#define KEYLEN 16

static const char *prog = "timerheap_mem";

/* Resident set size in bytes. */
static int64_t rss_bytes(void) {
        FILE *f = fopen("/proc/self/statm", "r");
        long long size, resident;

        if (!f)
                bench_die(prog, "/proc/self/statm: cannot open");
        if (fscanf(f, "%lld %lld", &size, &resident) != 2)
                bench_die(prog, "/proc/self/statm: unexpected format");
        fclose(f);
        return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv) {
        int64_t n = 1000000, rss0, rss1, t0, t1, t2;
        sl_timerheap_t *h;
        char key[KEYLEN + 1];

        if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
                fprintf(stderr, "usage: %s [COUNT]\n", prog);
                return BENCH_EXIT_USAGE;
        }
        if (argc == 2)
                n = bench_parse_int(prog, "COUNT", argv[1], 1, 100000000);

        rss0 = rss_bytes();
        t0 = sl_mono_us();
        h = sl_timerheap_new();
        for (int64_t i = 0; i < n; i++) {
                /* 16 bytes exactly: "t-" and 14 digits. */
                snprintf(key, sizeof(key), "t-%014lld", (long long)i);
                /* Due times spread over ~11 days with ties. */
                if (sl_timerheap_upsert(h, key, KEYLEN,
                                        1767225600000LL +
                                            (i * 7919) % 1000000 * 1000,
                                        i, NULL, 0) != 0)
                        bench_die(prog, "upsert %lld failed", (long long)i);
        }
        t1 = sl_mono_us();
        rss1 = rss_bytes();

        double per = (double)(rss1 - rss0) / (double)n;
        printf("timers                 %lld (key %d bytes, data 0 bytes)\n",
               (long long)n, KEYLEN);
        printf("rss delta              %.1f MiB\n",
               (double)(rss1 - rss0) / (1024.0 * 1024.0));
        printf("bytes per timer        %.1f\n", per);
        printf("beyond key and data    %.1f (target <= 64)\n", per - KEYLEN);

        for (int64_t i = 0; i < n; i++)
                sl_timer_free(sl_timerheap_pop(h));
        t2 = sl_mono_us();
        printf("insert                 %.0f timers/s\n",
               bench_rate(n, bench_seconds(t0, t1)));
        printf("pop                    %.0f timers/s\n",
               bench_rate(n, bench_seconds(t1, t2)));
        sl_timerheap_destroy(h);
        return 0;
}
