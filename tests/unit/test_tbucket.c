/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tbucket.c — token bucket arithmetic over simulated time: drain
 * accuracy in 10 s windows (20/s within 1%, and awkward rates), burst,
 * rate changes keeping the level, rate 0, a clock that steps back, the
 * promise that a take at the next-token time always succeeds, and the
 * catch-up limiters' use: ready on a whole token, charges into debt.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tbucket.h"

static const int64_t T0 = 1767225600000; /* 2026-01-01, epoch ms */

static sl_rate_t rate(double per_sec, double burst) {
        sl_rate_t r = {per_sec, burst};
        return r;
}

/* Empties the bucket at `at` (takes every token there is). */
static void drain(sl_tbucket_t *b, const sl_rate_t *r, int64_t at) {
        while (sl_tbucket_take(b, r, at))
                ;
}

/*
 * A scheduler that sleeps until the next-token time and takes one token
 * there, for `windows` windows of win_ms after an initial drain; asserts
 * each window's count is within tol (relative) of per_sec * win_ms / 1000.
 */
static void check_windows(double per_sec, double burst, int64_t win_ms,
                          int windows, double tol) {
        sl_rate_t r = rate(per_sec, burst);
        sl_tbucket_t b;
        int64_t now = T0, end = T0 + win_ms * windows;
        double want = per_sec * (double)win_ms / 1000.0;
        int64_t *count = calloc((size_t)windows, sizeof(*count));

        assert_non_null(count);
        sl_tbucket_init(&b, &r, now);
        drain(&b, &r, now);
        for (;;) {
                int64_t next = sl_tbucket_next_ms(&b, &r, now);
                assert_true(next >= now);
                if (next >= end)
                        break;
                now = next;
                /* The promise: a take at the next-token time succeeds. */
                assert_int_equal(sl_tbucket_take(&b, &r, now), 1);
                count[(now - T0) / win_ms]++;
        }
        /* Over the whole run the fraction is never lost: at most one token
         * off the exact figure. */
        int64_t total = 0;
        for (int w = 0; w < windows; w++)
                total += count[w];
        if (fabs((double)total - want * windows) > 1.0 + 1e-9)
                fail_msg("rate %g/s burst %g: %lld tokens in %d windows, "
                         "want %.2f",
                         per_sec, burst, (long long)total, windows,
                         want * windows);
        for (int w = 0; w < windows; w++) {
                double err = fabs((double)count[w] - want) / want;
                if (err > tol)
                        fail_msg("rate %g/s burst %g: window %d has %lld "
                                 "tokens, want %.2f (error %.3f%%)",
                                 per_sec, burst, w, (long long)count[w], want,
                                 err * 100);
        }
        free(count);
}

static void test_accuracy_20_per_sec(void **state) {
        (void)state;
        /* The target: 20/s measured over 10 s windows within 1%, over an
         * hour of simulated time. */
        check_windows(20, 20, 10000, 360, 0.01);
        /* Burst 1: every token is taken the moment it exists. */
        check_windows(20, 1, 10000, 360, 0.01);
}

static void test_accuracy_awkward_rates(void **state) {
        (void)state;
        /* Rates whose token interval is not a whole millisecond: the kept
         * fraction must pay back the rounding of each wake-up.  Windows hold
         * at least 200 tokens, so 1% is more than the one token a window
         * boundary can shift. */
        check_windows(3, 3, 100000, 36, 0.01);
        check_windows(7.3, 7.3, 30000, 120, 0.01);
        check_windows(2.5, 1, 100000, 36, 0.01);
        check_windows(6000.0 / 60, 50, 10000, 100, 0.01);
        check_windows(333, 333, 10000, 60, 0.01);
        check_windows(999.9, 1000, 10000, 60, 0.01);
        /* 1000/h over 10 h windows. */
        check_windows(1000.0 / 3600, 1, 36000000, 10, 0.01);
}

/* A poller that tries every millisecond (not using the next-token time)
 * sees the same rate. */
static void test_accuracy_polling(void **state) {
        (void)state;
        sl_rate_t r = rate(20, 20);
        sl_tbucket_t b;
        int64_t n = 0;

        sl_tbucket_init(&b, &r, T0);
        drain(&b, &r, T0);
        for (int64_t t = T0 + 1; t <= T0 + 600000; t++)
                n += sl_tbucket_take(&b, &r, t);
        assert_int_equal(n, 12000); /* 20/s for 600 s, exactly */
}

static void test_burst(void **state) {
        (void)state;
        sl_rate_t r = rate(10, 5);
        sl_tbucket_t b;
        int n = 0;

        /* A new bucket is full: burst tokens at once, then none. */
        sl_tbucket_init(&b, &r, T0);
        assert_true(fabs(sl_tbucket_level(&b, &r, T0) - 5) < 1e-9);
        while (sl_tbucket_take(&b, &r, T0))
                n++;
        assert_int_equal(n, 5);
        assert_int_equal(sl_tbucket_next_ms(&b, &r, T0), T0 + 100);
        assert_int_equal(sl_tbucket_full_ms(&b, &r, T0), T0 + 500);

        /* Idle for an hour: the level is capped at the burst. */
        n = 0;
        while (sl_tbucket_take(&b, &r, T0 + 3600000))
                n++;
        assert_int_equal(n, 5);

        /* Default burst of parse.h (rate over 1 s, at least 1). */
        sl_rate_t p;
        char err[128];
        assert_int_equal(sl_parse_rate("100/s", &p, err, sizeof(err)), 0);
        sl_tbucket_init(&b, &p, T0);
        n = 0;
        while (sl_tbucket_take(&b, &p, T0))
                n++;
        assert_int_equal(n, 100);
        assert_int_equal(sl_parse_rate("2/m", &p, err, sizeof(err)), 0);
        sl_tbucket_init(&b, &p, T0);
        assert_int_equal(sl_tbucket_take(&b, &p, T0), 1);
        assert_int_equal(sl_tbucket_take(&b, &p, T0), 0);
        assert_int_equal(sl_tbucket_next_ms(&b, &p, T0), T0 + 30000);
}

static void test_rate_change(void **state) {
        (void)state;
        sl_rate_t slow = rate(10, 10), fast = rate(1000, 100),
                  tiny = rate(1, 2);
        sl_tbucket_t b;

        sl_tbucket_init(&b, &slow, T0);
        drain(&b, &slow, T0);
        /* 300 ms at 10/s = 3 tokens, then the switch: they are kept. */
        sl_tbucket_set_rate(&b, &slow, &fast, T0 + 300);
        assert_true(fabs(sl_tbucket_level(&b, &fast, T0 + 300) - 3) < 1e-9);
        /* And the new rate applies from the switch on. */
        assert_true(fabs(sl_tbucket_level(&b, &fast, T0 + 310) - 13) < 1e-9);
        /* Capped at the new burst. */
        sl_tbucket_set_rate(&b, &fast, &tiny, T0 + 1000);
        assert_true(fabs(sl_tbucket_level(&b, &tiny, T0 + 1000) - 2) < 1e-9);
        assert_int_equal(sl_tbucket_take(&b, &tiny, T0 + 1000), 1);
        assert_int_equal(sl_tbucket_take(&b, &tiny, T0 + 1000), 1);
        assert_int_equal(sl_tbucket_take(&b, &tiny, T0 + 1000), 0);
        assert_int_equal(sl_tbucket_next_ms(&b, &tiny, T0 + 1000), T0 + 2000);

        /* A drain whose rate doubles mid-run: 10 s at 20/s then 10 s at
         * 40/s gives 200 + 400 tokens. */
        sl_rate_t r20 = rate(20, 20), r40 = rate(40, 40);
        const sl_rate_t *cur = &r20;
        int64_t now = T0, n1 = 0, n2 = 0;
        sl_tbucket_init(&b, &r20, now);
        drain(&b, &r20, now);
        for (;;) {
                int64_t next = sl_tbucket_next_ms(&b, cur, now);
                if (cur == &r20 && next > T0 + 10000) {
                        sl_tbucket_set_rate(&b, &r20, &r40, T0 + 10000);
                        cur = &r40;
                        now = T0 + 10000;
                        continue;
                }
                if (next > T0 + 20000)
                        break;
                now = next;
                assert_int_equal(sl_tbucket_take(&b, cur, now), 1);
                if (now <= T0 + 10000)
                        n1++;
                else
                        n2++;
        }
        assert_int_equal(n1, 200);
        assert_int_equal(n2, 400);
}

static void test_rate_zero(void **state) {
        (void)state;
        sl_rate_t stop = rate(0, 1), go = rate(5, 5);
        sl_tbucket_t b;

        /* 0/s stops the key: not even the first message of a new (full)
         * bucket gets a token, now or a day later. */
        sl_tbucket_init(&b, &stop, T0);
        assert_true(fabs(sl_tbucket_level(&b, &stop, T0) - 1) < 1e-9);
        assert_int_equal(sl_tbucket_take(&b, &stop, T0), 0);
        assert_int_equal(sl_tbucket_take(&b, &stop, T0 + 86400000), 0);
        assert_int_equal(sl_tbucket_next_ms(&b, &stop, T0 + 5),
                         SL_TBUCKET_NEVER);
        /* The level is frozen, so a full stopped bucket is full. */
        assert_int_equal(sl_tbucket_full_ms(&b, &stop, T0 + 5), T0 + 5);
        /* Raised again: the frozen token is there at once. */
        sl_tbucket_set_rate(&b, &stop, &go, T0 + 100000);
        assert_int_equal(sl_tbucket_next_ms(&b, &go, T0 + 100000), T0 + 100000);
        assert_int_equal(sl_tbucket_take(&b, &go, T0 + 100000), 1);

        /* Stopped once empty: nothing is earned while stopped, and tokens
         * flow from the switch back on. */
        sl_tbucket_set_rate(&b, &go, &stop, T0 + 100000);
        assert_int_equal(sl_tbucket_full_ms(&b, &stop, T0 + 100005),
                         SL_TBUCKET_NEVER);
        sl_tbucket_set_rate(&b, &stop, &go, T0 + 200000);
        assert_true(fabs(sl_tbucket_level(&b, &go, T0 + 200000)) < 1e-9);
        assert_int_equal(sl_tbucket_next_ms(&b, &go, T0 + 200000), T0 + 200200);
        assert_int_equal(sl_tbucket_take(&b, &go, T0 + 200199), 0);
        assert_int_equal(sl_tbucket_take(&b, &go, T0 + 200200), 1);

        /* Negative and NaN rates behave as 0 (no token, ever); a burst
         * below 1 as 1. */
        sl_rate_t bad = rate(-5, 0.5), nan_rate = rate(NAN, NAN);
        sl_tbucket_init(&b, &bad, T0);
        assert_true(fabs(sl_tbucket_level(&b, &bad, T0) - 1) < 1e-9);
        assert_int_equal(sl_tbucket_take(&b, &bad, T0), 0);
        assert_int_equal(sl_tbucket_next_ms(&b, &bad, T0), SL_TBUCKET_NEVER);
        sl_tbucket_init(&b, &nan_rate, T0);
        assert_int_equal(sl_tbucket_take(&b, &nan_rate, T0), 0);
        assert_int_equal(sl_tbucket_take(&b, &nan_rate, T0 + 1000), 0);
}

static void test_clock_steps_back(void **state) {
        (void)state;
        sl_rate_t r = rate(10, 10);
        sl_tbucket_t b;

        sl_tbucket_init(&b, &r, T0);
        drain(&b, &r, T0);
        /* The clock goes back a minute: no tokens appear or vanish. */
        assert_int_equal(sl_tbucket_take(&b, &r, T0 - 60000), 0);
        assert_true(sl_tbucket_level(&b, &r, T0 - 60000) < 1e-9);
        /* Refilling resumes from the new time, not after the old one. */
        assert_int_equal(sl_tbucket_next_ms(&b, &r, T0 - 60000), T0 - 59900);
        assert_int_equal(sl_tbucket_take(&b, &r, T0 - 59900), 1);
}

static void test_restore(void **state) {
        (void)state;
        sl_rate_t r = rate(10, 4);
        sl_tbucket_t b;

        sl_tbucket_restore(&b, &r, 2.5, T0);
        assert_true(fabs(sl_tbucket_level(&b, &r, T0 + 100) - 3.5) < 1e-9);
        sl_tbucket_restore(&b, &r, 99, T0);
        assert_true(fabs(sl_tbucket_level(&b, &r, T0) - 4) < 1e-9);
        sl_tbucket_restore(&b, &r, -3, T0);
        assert_true(sl_tbucket_level(&b, &r, T0) == 0);
        sl_tbucket_restore(&b, &r, NAN, T0);
        assert_true(sl_tbucket_level(&b, &r, T0) == 0);
}

/* Random rates, bursts and levels: the next-token time is the first
 * millisecond at which a take succeeds, and full_ms the first at which the
 * level reaches the burst. */
static void test_next_ms_is_exact(void **state) {
        (void)state;
        srand(7);
        for (int i = 0; i < 20000; i++) {
                double per_sec = (rand() % 100000) / 100.0 + 0.01;
                double burst = 1 + (rand() % 50);
                sl_rate_t r = rate(per_sec, burst);
                sl_tbucket_t b;
                int64_t now = T0 + rand() % 1000;

                sl_tbucket_restore(&b, &r, (rand() % 1000) / 1000.0,
                                   T0 - rand() % 50);
                int64_t next = sl_tbucket_next_ms(&b, &r, now);
                assert_true(next >= now && next != SL_TBUCKET_NEVER);
                sl_tbucket_t c = b;
                assert_int_equal(sl_tbucket_take(&c, &r, next), 1);
                if (next > now) {
                        c = b;
                        assert_int_equal(sl_tbucket_take(&c, &r, next - 1), 0);
                }
                int64_t full = sl_tbucket_full_ms(&b, &r, now);
                assert_true(full >= next);
                assert_true(sl_tbucket_level(&b, &r, full) >= burst - 1e-6);
                if (full > now)
                        assert_true(sl_tbucket_level(&b, &r, full - 1) <
                                    burst - 1e-9);
        }
}

/* ready() says what take() would do, and changes nothing: a whole token,
 * not any fraction of one; never at rate 0. */
static void test_ready_is_a_whole_token(void **state) {
        sl_rate_t r = rate(10, 5), stopped = rate(0, 5);
        sl_tbucket_t b;
        (void)state;
        sl_tbucket_restore(&b, &r, 0.5, T0);
        assert_int_equal(sl_tbucket_ready(&b, &r, T0), 0);
        assert_int_equal(sl_tbucket_take(&b, &r, T0), 0);
        /* 0.5 + 49 ms at 10/s = 0.99: still not a token. */
        assert_int_equal(sl_tbucket_ready(&b, &r, T0 + 49), 0);
        assert_int_equal(sl_tbucket_ready(&b, &r, T0 + 50), 1);
        assert_int_equal(sl_tbucket_next_ms(&b, &r, T0), T0 + 50);
        assert_true(sl_tbucket_level(&b, &r, T0) == 0.5); /* unchanged */
        sl_tbucket_init(&b, &stopped, T0);
        assert_int_equal(sl_tbucket_ready(&b, &stopped, T0 + 1000), 0);
}

/* charge() goes into debt: nothing is ready until the refill has paid it
 * back to a whole token, at the time next_ms() says. */
static void test_charge_debt(void **state) {
        sl_rate_t r = rate(100, 10);
        sl_tbucket_t b;
        int64_t next;
        (void)state;
        sl_tbucket_init(&b, &r, T0);
        assert_int_equal(sl_tbucket_ready(&b, &r, T0), 1);
        sl_tbucket_charge(&b, &r, T0, 35); /* 10 - 35 = -25 */
        assert_true(fabs(sl_tbucket_level(&b, &r, T0) + 25) < 1e-9);
        assert_int_equal(sl_tbucket_ready(&b, &r, T0), 0);
        next = sl_tbucket_next_ms(&b, &r, T0);
        assert_int_equal(next, T0 + 260); /* 26 tokens at 100/s */
        assert_int_equal(sl_tbucket_ready(&b, &r, next - 1), 0);
        assert_int_equal(sl_tbucket_ready(&b, &r, next), 1);
        /* A charge of 0 only refills; the level never passes the burst. */
        sl_tbucket_charge(&b, &r, T0 + 10000, 0);
        assert_true(fabs(sl_tbucket_level(&b, &r, T0 + 10000) - 10) < 1e-9);
}

/* The catch-up pace: a tenth of a second's units at once, at least one. */
static void test_pace_rate(void **state) {
        sl_rate_t r;
        (void)state;
        r = sl_tbucket_pace_rate(50000);
        assert_true(r.per_sec == 50000 && r.burst == 5000);
        r = sl_tbucket_pace_rate(5);
        assert_true(r.per_sec == 5 && r.burst == 1);
        r = sl_tbucket_pace_rate(-1);
        assert_true(r.per_sec == 0 && r.burst == 1);
        r = sl_tbucket_pace_rate(NAN);
        assert_true(r.per_sec == 0 && r.burst == 1);
}

/* A pacer that charges batches of 1 to 50 items whenever a token is
 * ready, and otherwise sleeps until next_ms(): over 60 s at 200/s the
 * items stay within the rate, plus the burst and one batch of debt. */
static void test_charge_pacer(void **state) {
        sl_rate_t r = rate(200, 20);
        sl_tbucket_t b;
        int64_t now = T0, end = T0 + 60000;
        double items = 0;
        int batches = 0;
        (void)state;
        srand(11);
        sl_tbucket_init(&b, &r, now);
        while (now < end) {
                if (sl_tbucket_ready(&b, &r, now)) {
                        int n = 1 + rand() % 50;
                        sl_tbucket_charge(&b, &r, now, n);
                        items += n;
                        batches++;
                        continue;
                }
                now = sl_tbucket_next_ms(&b, &r, now);
        }
        assert_true(batches > 100);
        assert_true(items <= 200 * 60 + 20 + 50);
        assert_true(items >= 200 * 60 - 50);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_accuracy_20_per_sec),
            cmocka_unit_test(test_accuracy_awkward_rates),
            cmocka_unit_test(test_accuracy_polling),
            cmocka_unit_test(test_burst),
            cmocka_unit_test(test_rate_change),
            cmocka_unit_test(test_rate_zero),
            cmocka_unit_test(test_clock_steps_back),
            cmocka_unit_test(test_restore),
            cmocka_unit_test(test_next_ms_is_exact),
            cmocka_unit_test(test_ready_is_a_whole_token),
            cmocka_unit_test(test_charge_debt),
            cmocka_unit_test(test_pace_rate),
            cmocka_unit_test(test_charge_pacer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
