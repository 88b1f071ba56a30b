/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_schedule.c — sl_schedule_parse_cron() and sl_schedule_parse_every()
 * on any bytes (a sluice-cron or sluice-every header), and
 * sl_schedule_next() on what they accept.
 *
 * The whole input is the header value.  Beyond "no crash, no UB", it
 * checks the contract: a parsed expression's sets hold only values of
 * their fields, none is empty; three next() calls in UTC give rising
 * instants on whole seconds, each matching the expression by an
 * independent matcher on gmtime_r(); in Europe/Paris, from just before
 * both 2026 DST changes, rising instants each matching the expression at
 * the offset then in force (+01:00 or +02:00), or being the end of the
 * spring gap.  An interval is at least SL_SCHEDULE_EVERY_MIN_MS and its
 * next instant is on its grid.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schedule.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sl_tzcache_t *cache;

/* The expression's verdict on a broken-down UTC time. */
static int matches(const sl_cron_t *c, int64_t ms) {
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        int in_mday, in_wday, day;

        gmtime_r(&t, &tm);
        in_mday = !!(c->mday & (1U << tm.tm_mday));
        in_wday = !!(c->wday & (1U << tm.tm_wday));
        if ((c->flags & SL_CRON_MDAY_ANY) || (c->flags & SL_CRON_WDAY_ANY))
                day = in_mday && in_wday;
        else
                day = in_mday || in_wday;
        return ((c->sec >> tm.tm_sec) & 1) && ((c->min >> tm.tm_min) & 1) &&
               ((c->hour >> tm.tm_hour) & 1) &&
               ((c->month >> (tm.tm_mon + 1)) & 1) && day;
}

static void check_sets(const sl_cron_t *c) {
        CHECK(c->sec && !(c->sec >> 60));
        CHECK(c->min && !(c->min >> 60));
        CHECK(c->hour && !(c->hour >> 24));
        CHECK(c->mday && !(c->mday & 1));
        CHECK(c->month && !(c->month & 1) && !(c->month >> 13));
        CHECK(c->wday && !(c->wday >> 7));
}

static void walk(const sl_schedule_t *s, sl_tz_t *tz, int64_t after, int n,
                 int paris) {
        /* 2026 in Paris: CEST from 2026-03-29T01:00Z to 2026-10-25T01:00Z. */
        const int64_t spring = 1774746000000, autumn = 1792890000000;
        char err[256];

        for (int i = 0; i < n; i++) {
                int64_t at = 0;
                int r =
                    sl_schedule_next(s, tz, after, i, &at, err, sizeof(err));
                CHECK(r == 0 || r == SL_SCHEDULE_END || r == -1);
                if (r == -1)
                        CHECK(strlen(err) > 0);
                if (r != 0)
                        return;
                CHECK(at > after);
                CHECK(at % 1000 == 0);
                if (!paris) {
                        CHECK(matches(&s->cron, at));
                } else if (at < 1798761600000) { /* 2027: not checked on */
                        int64_t off =
                            (at >= spring && at < autumn) ? 7200000 : 3600000;
                        CHECK(matches(&s->cron, at + off) || at == spring);
                }
                after = at;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        sl_schedule_t s;
        char err[256];
        sl_tz_t *utc, *paris;

        if (!cache)
                cache = sl_tzcache_new(); /* for the process's life */
        CHECK(sl_tzcache_get(cache, "UTC", 3, &utc, err, sizeof(err)) == 0);
        CHECK(sl_tzcache_get(cache, "Europe/Paris", 12, &paris, err,
                             sizeof(err)) == 0);

        memset(err, 0, sizeof(err));
        if (sl_schedule_parse_cron(&s, (const char *)data, size, err,
                                   sizeof(err)) == 0) {
                CHECK(s.kind == SL_SCHEDULE_CRON);
                check_sets(&s.cron);
                walk(&s, utc, 1767225600000, 3, 0);   /* 2026-01-01 */
                walk(&s, paris, 1774740000000, 3, 1); /* 03-28T23:20Z */
                walk(&s, paris, 1792886400000, 3, 1); /* 10-25T00:00Z */
        } else {
                CHECK(strlen(err) > 0);
        }

        memset(err, 0, sizeof(err));
        if (sl_schedule_parse_every(&s, (const char *)data, size, err,
                                    sizeof(err)) == 0) {
                int64_t at = 0, after = 1767225600123;
                CHECK(s.kind == SL_SCHEDULE_EVERY);
                CHECK(s.every_ms >= SL_SCHEDULE_EVERY_MIN_MS);
                int r =
                    sl_schedule_next(&s, NULL, after, 0, &at, err, sizeof(err));
                CHECK(r == 0 || r == SL_SCHEDULE_END);
                if (r == 0) {
                        CHECK(at > after && at - after <= s.every_ms);
                        CHECK(at % s.every_ms == 0);
                }
        } else {
                CHECK(strlen(err) > 0);
        }
        return 0;
}
