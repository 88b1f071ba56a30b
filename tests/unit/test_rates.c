/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rates.c — the throttle's rates table: per-key records, the "*"
 * default, the pipeline fallback, tombstones, malformed records refused with
 * a reason (and the table unchanged), and when the generation moves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rates.h"

static char err[256];

static int apply(sl_rates_t *rt, const char *key, const char *value) {
        err[0] = '\0';
        return sl_rates_apply(rt, key, key ? strlen(key) : 0, value,
                              value ? strlen(value) : 0, err, sizeof(err));
}

/* Looks key up and checks the rate and where it came from. */
static void expect(const sl_rates_t *rt, const char *key, double per_sec,
                   double burst, sl_rate_source_t src) {
        sl_rate_t r = {-1, -1};
        sl_rate_source_t got = sl_rates_lookup(rt, key, strlen(key), &r);
        if (got != src || r.per_sec != per_sec || r.burst != burst)
                fail_msg("'%s': got %g/s burst %g from %d, want %g/s burst "
                         "%g from %d",
                         key, r.per_sec, r.burst, got, per_sec, burst, src);
}

static void test_default_and_fallback(void **state) {
        (void)state;
        sl_rate_t fb = {100, 100};
        sl_rates_t *rt = sl_rates_new(&fb);
        uint64_t g0 = sl_rates_generation(rt);

        expect(rt, "acme", 100, 100, SL_RATE_FALLBACK);
        expect(rt, "*", 100, 100, SL_RATE_FALLBACK);

        /* "*" replaces the fallback for every key without its own rate. */
        assert_int_equal(apply(rt, "*", "10/s"), 0);
        assert_true(sl_rates_generation(rt) > g0);
        expect(rt, "acme", 10, 10, SL_RATE_DEFAULT);
        expect(rt, "*", 10, 10, SL_RATE_DEFAULT);
        assert_int_equal(sl_rates_count(rt), 0);

        /* A key's own rate wins over "*". */
        assert_int_equal(apply(rt, "acme", "6000/m burst=50"), 0);
        expect(rt, "acme", 100, 50, SL_RATE_KEY);
        expect(rt, "other", 10, 10, SL_RATE_DEFAULT);
        assert_int_equal(sl_rates_count(rt), 1);

        /* Tombstone of the key: back to "*"; of "*": back to the fallback. */
        assert_int_equal(apply(rt, "acme", NULL), 0);
        expect(rt, "acme", 10, 10, SL_RATE_DEFAULT);
        assert_int_equal(apply(rt, "*", NULL), 0);
        expect(rt, "acme", 100, 100, SL_RATE_FALLBACK);
        assert_int_equal(sl_rates_count(rt), 0);

        /* A new fallback (config reload) is seen by lookups. */
        sl_rate_t fb2 = {5, 1};
        uint64_t g = sl_rates_generation(rt);
        sl_rates_set_fallback(rt, &fb2);
        assert_true(sl_rates_generation(rt) > g);
        expect(rt, "acme", 5, 1, SL_RATE_FALLBACK);
        sl_rates_destroy(rt);
        sl_rates_destroy(NULL);
}

static void test_values(void **state) {
        (void)state;
        sl_rate_t fb = {1, 1};
        sl_rates_t *rt = sl_rates_new(&fb);

        assert_int_equal(apply(rt, "a", "2.5/s burst=1"), 0);
        expect(rt, "a", 2.5, 1, SL_RATE_KEY);
        assert_int_equal(apply(rt, "b", "0/s"), 0); /* a stopped key */
        expect(rt, "b", 0, 1, SL_RATE_KEY);
        assert_int_equal(apply(rt, "c", " 3600/h\n"), 0); /* kcat's newline */
        expect(rt, "c", 1, 1, SL_RATE_KEY);
        /* Keys are bytes: binary and empty keys are keys like any other. */
        assert_int_equal(
            sl_rates_apply(rt, "x\0y", 3, "7/s", 3, err, sizeof(err)), 0);
        sl_rate_t r;
        assert_int_equal(sl_rates_lookup(rt, "x\0y", 3, &r), SL_RATE_KEY);
        assert_true(r.per_sec == 7);
        assert_int_equal(sl_rates_lookup(rt, "x", 1, &r), SL_RATE_FALLBACK);
        assert_int_equal(sl_rates_apply(rt, "", 0, "9/s", 3, err, sizeof(err)),
                         0);
        assert_int_equal(sl_rates_lookup(rt, "", 0, &r), SL_RATE_KEY);
        assert_true(r.per_sec == 9);
        /* The value need not be NUL-terminated. */
        assert_int_equal(
            sl_rates_apply(rt, "d", 1, "40/sXXXX", 4, err, sizeof(err)), 0);
        expect(rt, "d", 40, 40, SL_RATE_KEY);
        assert_int_equal(sl_rates_count(rt), 6);
        sl_rates_destroy(rt);
}

static void test_malformed(void **state) {
        (void)state;
        sl_rate_t fb = {1, 1};
        sl_rates_t *rt = sl_rates_new(&fb);
        char big[SL_RATES_MAX_VALUE + 2];

        assert_int_equal(apply(rt, "a", "50/s"), 0);
        uint64_t g = sl_rates_generation(rt);

        /* Each is refused with a reason; the key keeps its rate. */
        static const char *const bad[] = {
            "fast", "50", "50/fortnight", "-5/s", "5/s burst=0", "5/s burst",
            "",     " ",  "5/s extra",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(apply(rt, "a", bad[i]), -1);
                if (!err[0])
                        fail_msg("'%s' refused without a reason", bad[i]);
                expect(rt, "a", 50, 50, SL_RATE_KEY);
        }
        assert_int_equal(
            sl_rates_apply(rt, "a", 1, "5/\0s", 4, err, sizeof(err)), -1);
        assert_string_equal(err, "value holds a NUL byte");
        memset(big, '1', sizeof(big));
        assert_int_equal(
            sl_rates_apply(rt, "a", 1, big, sizeof(big), err, sizeof(err)), -1);
        assert_non_null(strstr(err, "at most"));
        assert_int_equal(apply(rt, NULL, "5/s"), -1);
        assert_string_equal(err, "record has no key");
        assert_int_equal(apply(rt, "a", "5/fortnight"), -1);
        assert_non_null(strstr(err, "unknown unit"));

        expect(rt, "a", 50, 50, SL_RATE_KEY);
        assert_int_equal(sl_rates_generation(rt), g);
        sl_rates_destroy(rt);
}

static void test_generation(void **state) {
        (void)state;
        sl_rate_t fb = {1, 1};
        sl_rates_t *rt = sl_rates_new(&fb);
        uint64_t g = sl_rates_generation(rt);

        assert_int_equal(apply(rt, "a", "50/s"), 0);
        assert_true(sl_rates_generation(rt) > g);
        g = sl_rates_generation(rt);
        /* The same value again (a compacted topic re-read): no change. */
        assert_int_equal(apply(rt, "a", "50/s"), 0);
        assert_int_equal(apply(rt, "a", "3000/m"), 0); /* same rate */
        assert_int_equal(sl_rates_generation(rt), g);
        /* A tombstone for a key without an entry: no change. */
        assert_int_equal(apply(rt, "zz", NULL), 0);
        assert_int_equal(apply(rt, "*", NULL), 0);
        assert_int_equal(sl_rates_generation(rt), g);
        /* A different burst is a change. */
        assert_int_equal(apply(rt, "a", "50/s burst=5"), 0);
        assert_true(sl_rates_generation(rt) > g);
        g = sl_rates_generation(rt);
        /* A fallback hidden behind "*" changes no lookup. */
        assert_int_equal(apply(rt, "*", "7/s"), 0);
        g = sl_rates_generation(rt);
        sl_rate_t fb2 = {2, 2};
        sl_rates_set_fallback(rt, &fb2);
        assert_int_equal(sl_rates_generation(rt), g);
        sl_rates_destroy(rt);
}

/* The table's bound: new keys past it are refused (-2) and keep the
 * default; keys already there may still change or go, and a tombstone
 * makes room again. */
static void test_bound(void **state) {
        sl_rate_t fb = {10.0, 10.0}, r;
        sl_rates_t *rt = sl_rates_new(&fb);
        char key[16], err[256];
        size_t n = 0;
        (void)state;
        sl_rates_set_max_bytes(rt, 10 * (8 + 96));
        for (int i = 0; i < 20; i++) {
                snprintf(key, sizeof(key), "key%05d", i); /* 8 bytes */
                int res =
                    sl_rates_apply(rt, key, 8, "5/s", 3, err, sizeof(err));
                if (res == 0)
                        n++;
                else
                        assert_int_equal(res, -2);
        }
        assert_int_equal(n, 10);
        assert_int_equal(sl_rates_count(rt), 10);
        assert_true(sl_rates_bytes(rt) <= 10 * (8 + 96));
        assert_non_null(strstr(err, "full"));
        assert_int_equal(sl_rates_lookup(rt, "key00015", 8, &r),
                         SL_RATE_FALLBACK);
        /* An existing key changes; the default "*" is no entry. */
        assert_int_equal(
            sl_rates_apply(rt, "key00001", 8, "7/s", 3, err, sizeof(err)), 0);
        assert_int_equal(sl_rates_apply(rt, "*", 1, "9/s", 3, err, sizeof(err)),
                         0);
        /* A tombstone makes room for one more. */
        assert_int_equal(
            sl_rates_apply(rt, "key00000", 8, NULL, 0, err, sizeof(err)), 0);
        assert_int_equal(
            sl_rates_apply(rt, "key00015", 8, "1/s", 3, err, sizeof(err)), 0);
        assert_int_equal(sl_rates_lookup(rt, "key00015", 8, &r), SL_RATE_KEY);
        assert_int_equal(
            sl_rates_apply(rt, "key00016", 8, "1/s", 3, err, sizeof(err)), -2);
        sl_rates_destroy(rt);
}

/* Many keys: each finds its own rate while the table grows, after half of
 * them are tombstoned (and it shrinks), and the empty key is a key. */
static void test_many_keys(void **state) {
        enum { N = 5000 };
        sl_rate_t fb = {10.0, 10.0};
        sl_rates_t *rt = sl_rates_new(&fb);
        char key[32], value[32];
        (void)state;
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "customer-%d", i);
                snprintf(value, sizeof(value), "%d/s burst=%d", i + 1, i + 2);
                assert_int_equal(apply(rt, key, value), 0);
        }
        assert_int_equal(apply(rt, "", "3/s"), 0);
        assert_int_equal(sl_rates_count(rt), N + 1);
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "customer-%d", i);
                expect(rt, key, i + 1, i + 2, SL_RATE_KEY);
        }
        for (int i = 0; i < N; i += 2) {
                snprintf(key, sizeof(key), "customer-%d", i);
                assert_int_equal(apply(rt, key, NULL), 0);
        }
        assert_int_equal(sl_rates_count(rt), N / 2 + 1);
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "customer-%d", i);
                if (i % 2)
                        expect(rt, key, i + 1, i + 2, SL_RATE_KEY);
                else
                        expect(rt, key, 10.0, 10.0, SL_RATE_FALLBACK);
        }
        expect(rt, "", 3.0, 3.0, SL_RATE_KEY);
        sl_rates_destroy(rt);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_default_and_fallback),
            cmocka_unit_test(test_values),
            cmocka_unit_test(test_malformed),
            cmocka_unit_test(test_generation),
            cmocka_unit_test(test_bound),
            cmocka_unit_test(test_many_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
