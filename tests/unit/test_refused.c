/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_refused.c — the refusal memo: identities stable across replays when
 * an origin is given (a value with a changed wall-clock field is still the
 * same record), suspect -> guilty -> cleared, expiry, and a full table that
 * reuses its oldest slot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "refused.h"

static void test_identity(void **state) {
        (void)state;
        uint64_t o = sl_refused_origin("batch-1", 7, 0);
        /* Same origin, different values (flushed_at changed): same id. */
        uint64_t a = sl_refused_id("out", "k", 1, o, "{\"at\":1}", 8);
        uint64_t b = sl_refused_id("out", "k", 1, o, "{\"at\":2}", 8);
        assert_int_equal(a, b);
        assert_true(a != 0 && a < (1ULL << 62));
        /* Another topic, key or origin: another id. */
        assert_true(a != sl_refused_id("dlq", "k", 1, o, NULL, 0));
        assert_true(a != sl_refused_id("out", "j", 1, o, NULL, 0));
        assert_true(a != sl_refused_id("out", "k", 1,
                                       sl_refused_origin("batch-2", 7, 0), NULL,
                                       0));
        /* No origin: the value decides. */
        assert_true(sl_refused_id("out", "k", 1, 0, "x", 1) !=
                    sl_refused_id("out", "k", 1, 0, "y", 1));
        /* The number mixed into an origin matters. */
        assert_true(sl_refused_origin("t", 1, 5) !=
                    sl_refused_origin("t", 1, 6));
}

static void test_lifecycle(void **state) {
        (void)state;
        static sl_refused_t r;
        int err = 0;
        uint64_t id = sl_refused_id("out", "k", 1, 42, NULL, 0);
        memset(&r, 0, sizeof(r));
        assert_int_equal(sl_refused_get(&r, id, 1000, &err), SL_REFUSED_NONE);
        assert_int_equal(sl_refused_note(&r, id, 10, 0, 1000),
                         SL_REFUSED_SUSPECT);
        assert_int_equal(sl_refused_get(&r, id, 1001, &err),
                         SL_REFUSED_SUSPECT);
        assert_int_equal(err, 10);
        assert_int_equal(sl_refused_note(&r, id, 10, 1, 1002),
                         SL_REFUSED_GUILTY);
        assert_int_equal(sl_refused_get(&r, id, 1003, &err), SL_REFUSED_GUILTY);
        /* Expiry. */
        assert_int_equal(sl_refused_get(&r, id, 1002 + SL_REFUSED_TTL_MS, &err),
                         SL_REFUSED_NONE);
        /* Cleared when it went through alone. */
        sl_refused_note(&r, id, 10, 0, 5000);
        sl_refused_clear(&r, id);
        assert_int_equal(sl_refused_get(&r, id, 5001, &err), SL_REFUSED_NONE);
}

static void test_full_table(void **state) {
        (void)state;
        static sl_refused_t r;
        memset(&r, 0, sizeof(r));
        for (uint64_t i = 1; i <= SL_REFUSED_MAX + 10; i++)
                sl_refused_note(&r, i, 1, 0, 100);
        /* The oldest ten were replaced; the newest are known. */
        assert_int_equal(sl_refused_get(&r, 5, 101, NULL), SL_REFUSED_NONE);
        assert_int_equal(sl_refused_get(&r, SL_REFUSED_MAX + 10, 101, NULL),
                         SL_REFUSED_SUSPECT);
        assert_int_equal(sl_refused_get(&r, 11, 101, NULL), SL_REFUSED_SUSPECT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_identity),
            cmocka_unit_test(test_lifecycle),
            cmocka_unit_test(test_full_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
