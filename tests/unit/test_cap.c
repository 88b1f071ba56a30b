/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cap.c — the cap's hysteresis: room up to the limit, FULL from the
 * first refusal until the low-water mark, one transition reported each
 * way, unlimited caps, tiny caps, and a byte cap meeting a record larger
 * than the band between the mark and the limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cap.h"

static void test_room_until_limit(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 100);
        assert_int_equal(c.low, 95);
        for (int i = 0; i < 100; i++) {
                assert_true(sl_cap_room(&c, 1));
                assert_int_equal(sl_cap_add(&c, 1), 0);
        }
        assert_false(sl_cap_room(&c, 1));
        assert_true(sl_cap_room(&c, 0)); /* nothing added: always fits */
        assert_int_equal(c.full, 0);     /* no record refused yet */
}

static void test_hysteresis(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 100);
        sl_cap_add(&c, 100);
        assert_int_equal(sl_cap_refuse(&c), 1); /* said once */
        assert_int_equal(sl_cap_refuse(&c), 0);
        assert_int_equal(c.pauses, 1);
        /* Below the limit but above the mark: still FULL, no room. */
        assert_int_equal(sl_cap_add(&c, -3), 0);
        assert_int_equal(c.used, 97);
        assert_false(sl_cap_room(&c, 1));
        assert_int_equal(sl_cap_add(&c, -1), 0);
        assert_int_equal(sl_cap_add(&c, -1), 1); /* 95: open again */
        assert_int_equal(sl_cap_add(&c, -1), 0); /* reported once */
        assert_true(sl_cap_room(&c, 1));
        assert_true(sl_cap_room(&c, 7));        /* at or below the mark (94) */
        assert_int_equal(sl_cap_add(&c, 2), 0); /* 96: above it */
        assert_true(sl_cap_room(&c, 4));
        assert_false(sl_cap_room(&c, 5));
        /* Growing back adds no transition until the next refusal. */
        assert_int_equal(sl_cap_add(&c, 4), 0);
        assert_int_equal(sl_cap_refuse(&c), 1);
        assert_int_equal(c.pauses, 2);
}

static void test_unlimited(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 0);
        sl_cap_add(&c, INT64_MAX / 2);
        assert_true(sl_cap_room(&c, INT64_MAX / 4));
        assert_int_equal(sl_cap_refuse(&c), 0);
        assert_int_equal(c.full, 0);
        sl_cap_init(&c, -5);
        assert_int_equal(c.limit, 0);
        assert_true(sl_cap_room(&c, 1));
}

static void test_tiny(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 1);
        assert_int_equal(c.low, 0);
        assert_true(sl_cap_room(&c, 1));
        sl_cap_add(&c, 1);
        assert_false(sl_cap_room(&c, 1));
        assert_int_equal(sl_cap_refuse(&c), 1);
        assert_int_equal(sl_cap_add(&c, -1), 1);
        sl_cap_init(&c, 2);
        assert_int_equal(c.low, 1); /* at least one below the limit */
        sl_cap_init(&c, 50);
        assert_int_equal(c.low, 47);
        sl_cap_init(&c, INT64_MAX);
        assert_true(c.low > 0 && c.low < c.limit);
}

static void test_used_never_negative(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 10);
        sl_cap_add(&c, -4);
        assert_int_equal(c.used, 0);
}

/* A byte cap at or below its mark takes a record larger than the band
 * (else the input would wait for a resume nothing brings); above it, not. */
static void test_large_record(void **state) {
        sl_cap_t c;
        (void)state;
        sl_cap_init(&c, 1000); /* mark 950 */
        sl_cap_add(&c, 900);
        assert_true(sl_cap_room(&c, 500)); /* passes the limit, once */
        sl_cap_add(&c, 500);
        assert_false(sl_cap_room(&c, 1));
        assert_int_equal(sl_cap_refuse(&c), 1);
        assert_int_equal(sl_cap_add(&c, -400), 0); /* 1000: still full */
        assert_int_equal(sl_cap_add(&c, -50), 1);  /* 950: open */
        sl_cap_add(&c, 10);                        /* 960 */
        assert_false(sl_cap_room(&c, 100));
        assert_true(sl_cap_room(&c, 40));
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_room_until_limit),
            cmocka_unit_test(test_hysteresis),
            cmocka_unit_test(test_unlimited),
            cmocka_unit_test(test_tiny),
            cmocka_unit_test(test_used_never_negative),
            cmocka_unit_test(test_large_record),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
