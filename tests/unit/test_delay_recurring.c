/* SPDX-License-Identifier: Apache-2.0 */
/* test_delay_recurring.c — recurring timers' headers, record fields, blob
 * section, first occurrence and catch-up (src/delay_recurring.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "delay_recurring.h"

/* 2026-01-01T00:00:00Z */
#define T0 1767225600000LL

static sl_tzcache_t *zones;

static int setup(void **state) {
        (void)state;
        zones = sl_tzcache_new();
        return 0;
}

static int teardown(void **state) {
        (void)state;
        sl_tzcache_destroy(zones);
        return 0;
}

/* Reads headers given as name=value strings (NULL-terminated list). */
static int parse(sl_recur_t *r, int64_t base, char *detail, size_t size, ...) {
        const char *vals[SL_RECUR_HDR_CNT] = {NULL};
        size_t lens[SL_RECUR_HDR_CNT] = {0};
        const char *kv;
        va_list ap;

        va_start(ap, size);
        while ((kv = va_arg(ap, const char *))) {
                const char *eq = strchr(kv, '=');
                for (int i = 0; i < SL_RECUR_HDR_CNT; i++)
                        if (strlen(sl_recur_header_names[i]) ==
                                (size_t)(eq - kv) &&
                            !memcmp(kv, sl_recur_header_names[i],
                                    (size_t)(eq - kv))) {
                                vals[i] = eq + 1;
                                lens[i] = strlen(eq + 1);
                        }
        }
        va_end(ap);
        return sl_recur_parse(r, vals, lens, base, detail, size);
}

static sl_tz_t *tz_of(const sl_recur_t *r) {
        char err[200];
        sl_tz_t *tz = NULL;
        assert_int_equal(sl_recur_tz(r, zones, &tz, err, sizeof(err)), 0);
        return tz;
}

/* sluice-every without sluice-start counts from the record's timestamp:
 * the first occurrence is one interval after it; with a start, at it. */
static void test_every_anchor(void **state) {
        char d[200];
        sl_recur_t r;
        int64_t at;
        (void)state;

        assert_int_equal(
            parse(&r, T0 + 123, d, sizeof(d), "sluice-every=10s", NULL), 0);
        assert_int_equal(r.catch_up, SL_CATCH_UP_LATEST);
        assert_true(r.sched.start_ms == T0 + 123);
        assert_int_equal(
            sl_recur_first(&r, tz_of(&r), T0 + 123, &at, d, sizeof(d)), 0);
        assert_true(at == T0 + 10123);

        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-every=10s",
                               "sluice-start=1767225660000", NULL),
                         0);
        assert_int_equal(sl_recur_first(&r, tz_of(&r), T0, &at, d, sizeof(d)),
                         0);
        assert_true(at == T0 + 60000);
}

/* Cron in a zone: the first instant after the record's timestamp. */
static void test_cron_first(void **state) {
        char d[200];
        sl_recur_t r;
        int64_t at;
        (void)state;

        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-cron=0 9 * * *",
                               "sluice-tz=Europe/Paris", "sluice-catch-up=none",
                               NULL),
                         0);
        assert_int_equal(r.catch_up, SL_CATCH_UP_NONE);
        assert_int_equal(sl_recur_first(&r, tz_of(&r), T0, &at, d, sizeof(d)),
                         0);
        /* 09:00 CET is 08:00Z. */
        assert_true(at == T0 + 8 * 3600000LL);
}

static void test_refusals(void **state) {
        char d[200];
        sl_recur_t r;
        sl_tz_t *tz;
        (void)state;

        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-count=3", NULL),
                         -1);
        assert_non_null(strstr(d, "sluice-count without"));
        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-every=1s",
                               "sluice-until=2025-01-01T00:00:00Z",
                               "sluice-start=2026-01-01T00:00:00Z", NULL),
                         -1);
        assert_non_null(strstr(d, "sluice-until is before start"));
        assert_int_equal(
            parse(&r, T0, d, sizeof(d), "sluice-every=1s", "sluice-tz=", NULL),
            -1);
        /* An unknown zone is the operator's to find (unknown-zone). */
        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-every=1s",
                               "sluice-tz=Mars/Olympus", NULL),
                         0);
        assert_int_equal(sl_recur_tz(&r, zones, &tz, d, sizeof(d)), -1);
        /* Never fires (never-fires): the until before the timestamp. */
        int64_t at;
        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-every=1s",
                               "sluice-until=1000000000000", NULL),
                         0);
        assert_int_equal(sl_recur_first(&r, tz_of(&r), T0, &at, d, sizeof(d)),
                         SL_SCHEDULE_END);
        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-cron=@daily",
                               "sluice-until=1767225600000", NULL),
                         0);
        assert_int_equal(sl_recur_first(&r, tz_of(&r), T0, &at, d, sizeof(d)),
                         SL_SCHEDULE_END);
}

/* The changelog's fields and the blob section give the schedule back. */
static void test_record_and_blob(void **state) {
        char d[200];
        sl_recur_t r, back, b2;
        sl_buf_t b = {0};
        const uint8_t *p;
        (void)state;

        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-cron=*/5 * * * *",
                               "sluice-tz=America/New_York", "sluice-count=7",
                               "sluice-catch-up=all", NULL),
                         0);
        r.fired = 3;
        r.last_ms = T0 + 900000;
        assert_int_equal(
            sl_recur_from_record(&back, "", 0, r.expr, r.expr_len, r.tz,
                                 r.tz_len, sl_recur_start_field(&r),
                                 sl_recur_until_field(&r), r.sched.count,
                                 r.catch_up, r.fired, r.last_ms, d, sizeof(d)),
            0);
        assert_memory_equal(&back.sched, &r.sched, sizeof(r.sched));
        assert_int_equal(back.catch_up, SL_CATCH_UP_ALL);
        assert_true(back.fired == 3 && back.last_ms == T0 + 900000);

        sl_buf_put(&b, "x", 1);
        sl_recur_blob_put(&b, &back);
        sl_buf_put(&b, "rest", 4);
        p = (const uint8_t *)b.p + 1;
        assert_int_equal(
            sl_recur_blob_get(&p, (const uint8_t *)b.p + b.len, &b2), 0);
        assert_memory_equal(p, "rest", 4);
        assert_memory_equal(&b2.sched, &r.sched, sizeof(r.sched));
        assert_true(b2.fired == 3 && b2.last_ms == back.last_ms);
        assert_int_equal(b2.tz_len, strlen("America/New_York"));
        assert_memory_equal(b2.tz, "America/New_York", b2.tz_len);
        assert_int_equal(b2.expr_len, strlen("*/5 * * * *"));
        /* Cut short: refused, never read past the end. */
        for (size_t n = 1; n < b.len - 4; n++) {
                p = (const uint8_t *)b.p + 1;
                assert_int_equal(
                    sl_recur_blob_get(&p, (const uint8_t *)b.p + n, &b2), -1);
        }
        free(b.p);

        /* A record that is not a schedule. */
        assert_int_equal(sl_recur_from_record(&back, "1s", 2, "@daily", 6, "",
                                              0, 0, 0, 0, 0, 0, 0, d,
                                              sizeof(d)),
                         -1);
        assert_int_equal(sl_recur_from_record(&back, "1s", 2, "", 0, "", 0, 0,
                                              0, 0, 7, 0, 0, d, sizeof(d)),
                         -1);
}

/* Catch-up: an occurrence due after the rebuild fires as it is; one due
 * before follows the policy. */
static void test_catch_up(void **state) {
        char d[200];
        sl_recur_t r;
        int64_t at;
        (void)state;

        /* every 1 s from T0: instants T0 + k s. */
        assert_int_equal(parse(&r, T0, d, sizeof(d), "sluice-every=1s", NULL),
                         0);
        r.fired = 5;
        /* Not missed: fires as due. */
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 5500, &at, d, sizeof(d)),
            SL_RECUR_FIRE);
        assert_true(at == T0 + 6000);
        /* latest: the most recent instant by the rebuild's end. */
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 14500, &at, d, sizeof(d)),
            SL_RECUR_FIRE);
        assert_true(at == T0 + 14000);
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 6000, &at, d, sizeof(d)),
            SL_RECUR_FIRE);
        assert_true(at == T0 + 6000);
        /* all: each, from the first missed. */
        r.catch_up = SL_CATCH_UP_ALL;
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 14500, &at, d, sizeof(d)),
            SL_RECUR_FIRE);
        assert_true(at == T0 + 6000);
        /* none: the first after the rebuild's end. */
        r.catch_up = SL_CATCH_UP_NONE;
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 14500, &at, d, sizeof(d)),
            SL_RECUR_SKIP);
        assert_true(at == T0 + 15000);
        /* latest with an until inside the down time: the last instant. */
        r.catch_up = SL_CATCH_UP_LATEST;
        r.sched.until_ms = T0 + 9000;
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 14500, &at, d, sizeof(d)),
            SL_RECUR_FIRE);
        assert_true(at == T0 + 9000);
        r.catch_up = SL_CATCH_UP_NONE;
        assert_int_equal(
            sl_recur_due(&r, NULL, T0 + 6000, T0 + 14500, &at, d, sizeof(d)),
            SL_SCHEDULE_END);

        /* A cron expression: walked. */
        assert_int_equal(
            parse(&r, T0, d, sizeof(d), "sluice-cron=*/10 * * * *", NULL), 0);
        assert_int_equal(sl_recur_due(&r, tz_of(&r), T0 + 600000,
                                      T0 + 3600000 + 5000, &at, d, sizeof(d)),
                         SL_RECUR_FIRE);
        assert_true(at == T0 + 3600000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_every_anchor),
            cmocka_unit_test(test_cron_first),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_record_and_blob),
            cmocka_unit_test(test_catch_up),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
