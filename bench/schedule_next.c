/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule_next.c — the cost of sl_schedule_next() (schedule.h), no broker.
 *
 *   build/bench/schedule_next [COUNT]      (default 200000)
 *
 * Prints µs per next() for a few schedules, each asked COUNT times in a
 * row from the instant the previous call gave (what a recurring timer does
 * after each occurrence), in UTC, Europe/Paris and America/New_York, and
 * once with ICU converting every time (sl_tz_set_fast() off); then the
 * cost of opening a zone (the first of the process, then a cache miss: a
 * new cache each time) against finding it in a warm cache.  Asserts
 * nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "schedule.h"
#include "util.h"

static const char *prog = "schedule_next";

static volatile int64_t sink;

static void bench_next(sl_tzcache_t *c, const char *label, const char *kind,
                       const char *expr, const char *zone, int64_t n,
                       int fast) {
        sl_schedule_t s;
        sl_tz_t *tz = NULL;
        char err[256];
        const int64_t from = 1767225600000; /* 2026-01-01 */
        int64_t at = from, t0, t1;
        int r;

        if (!strcmp(kind, "every"))
                r = sl_schedule_parse_every(&s, expr, strlen(expr), err,
                                            sizeof(err));
        else
                r = sl_schedule_parse_cron(&s, expr, strlen(expr), err,
                                           sizeof(err));
        if (r || sl_tzcache_get(c, zone, strlen(zone), &tz, err, sizeof(err)))
                bench_die(prog, err);
        sl_tz_set_fast(tz, fast);
        t0 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                r = sl_schedule_next(&s, tz, at, 0, &at, err, sizeof(err));
                if (r == SL_SCHEDULE_END)
                        at = from; /* the year 9999: again */
                else if (r)
                        bench_die(prog, err);
        }
        t1 = sl_mono_us();
        sink = at;
        sl_tz_set_fast(tz, 1);
        printf("next() %-22s %-16s %-5s %.2f us/call%s\n", label, zone, kind,
               (double)(t1 - t0) / (double)n, fast ? "" : " (ICU alone)");
}

int main(int argc, char **argv) {
        int64_t n = 200000, t0, t1;
        sl_tzcache_t *c = sl_tzcache_new();
        sl_tz_t *tz;
        char err[256];
        int opens = 200;

        if (argc > 1 && (n = strtoll(argv[1], NULL, 10)) <= 0)
                bench_die(prog, "COUNT: a positive integer");
        t0 = sl_mono_us();
        if (sl_tzcache_get(c, "Europe/Paris", 12, &tz, err, sizeof(err)))
                bench_die(prog, err);
        t1 = sl_mono_us();
        printf("zone data: ICU %s; first zone opened in %lld us\n",
               sl_tz_data_version(), (long long)(t1 - t0));
        bench_next(c, "every 1s", "every", "1s", "UTC", n, 1);
        bench_next(c, "* * * * * * (1 s)", "cron", "* * * * * *", "UTC", n, 1);
        bench_next(c, "* * * * * * (1 s)", "cron", "* * * * * *",
                   "Europe/Paris", n, 1);
        bench_next(c, "* * * * * * (1 s)", "cron", "* * * * * *",
                   "Europe/Paris", n / 10, 0);
        bench_next(c, "*/5 * * * * (5 min)", "cron", "*/5 * * * *",
                   "Europe/Paris", n, 1);
        bench_next(c, "0 9 * * MON-FRI", "cron", "0 9 * * MON-FRI",
                   "Europe/Paris", n / 10, 1);
        bench_next(c, "30 2 * * *", "cron", "30 2 * * *", "America/New_York",
                   n / 10, 1);
        bench_next(c, "0 0 29 2 * (leap day)", "cron", "0 0 29 2 *",
                   "Europe/Paris", n / 100 + 1, 1);

        t0 = sl_mono_us();
        for (int i = 0; i < opens; i++) {
                sl_tzcache_t *fresh = sl_tzcache_new();
                if (sl_tzcache_get(fresh, "Europe/Paris", 12, &tz, err,
                                   sizeof(err)))
                        bench_die(prog, err);
                sl_tzcache_destroy(fresh);
        }
        t1 = sl_mono_us();
        printf("zone open (cache miss)                            %.2f "
               "us/open\n",
               (double)(t1 - t0) / opens);
        t0 = sl_mono_us();
        for (int64_t i = 0; i < n; i++) {
                if (sl_tzcache_get(c, "Europe/Paris", 12, &tz, err,
                                   sizeof(err)))
                        bench_die(prog, err);
        }
        t1 = sl_mono_us();
        printf("zone lookup (warm cache, 2 zones)                 %.3f "
               "us/lookup\n",
               (double)(t1 - t0) / (double)n);
        sl_tzcache_destroy(c);
        return 0;
}
