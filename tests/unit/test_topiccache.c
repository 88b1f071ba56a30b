/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_topiccache.c — the bounded topic metadata cache: answers and their
 * expiry (the default times and one's own), the bound on lookups in flight,
 * eviction (names that do not exist go first, topics in use stay, lookups in
 * flight are never evicted), and a flood of distinct names held to the
 * capacity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "topiccache.h"

static void test_answers(void **state) {
        sl_topiccache_t *tc = sl_topiccache_new(16, 2, state);
        sl_topiccache_entry_t *e, *l;
        int64_t t = 1000;
        (void)state;

        assert_ptr_equal(sl_topiccache_opaque(tc), state);
        /* New: looked up once, LOOKING until the answer. */
        assert_int_equal(sl_topiccache_get(tc, "out", t, &e),
                         SL_TOPICCACHE_LOOKING);
        assert_non_null(e);
        assert_string_equal(sl_topiccache_name(e), "out");
        assert_ptr_equal(sl_topiccache_of(e), tc);
        assert_int_equal(sl_topiccache_get(tc, "out", t, &l),
                         SL_TOPICCACHE_LOOKING);
        assert_null(l);
        sl_topiccache_answer(tc, e, 1, 3, t);
        assert_int_equal(sl_topiccache_get(tc, "out", t + 1, &l), 3);
        assert_null(l);
        /* Expired: still 3 while it is looked up again. */
        t += SL_TOPICCACHE_TTL_POS_MS;
        assert_int_equal(sl_topiccache_get(tc, "out", t, &l), 3);
        assert_ptr_equal(l, e);
        sl_topiccache_answer(tc, e, 1, 0, t); /* deleted meanwhile */
        assert_int_equal(sl_topiccache_get(tc, "out", t, &l), 0);
        assert_null(l);
        assert_int_equal(
            sl_topiccache_get(tc, "out", t + SL_TOPICCACHE_TTL_NEG_MS - 1, &l),
            0);
        assert_null(l);
        assert_int_equal(
            sl_topiccache_get(tc, "out", t + SL_TOPICCACHE_TTL_NEG_MS, &l), 0);
        assert_ptr_equal(l, e);
        /* Kafka did not answer: what was known stays, retried soon. */
        sl_topiccache_answer(tc, e, 0, 0, t);
        assert_int_equal(sl_topiccache_get(tc, "out", t + 1, &l), 0);
        assert_null(l);
        assert_int_equal(sl_topiccache_get(tc, "new", t, &e),
                         SL_TOPICCACHE_LOOKING);
        sl_topiccache_answer(tc, e, 0, 0, t);
        assert_int_equal(sl_topiccache_get(tc, "new", t + 1, &l),
                         SL_TOPICCACHE_UNKNOWN);
        assert_null(l);
        assert_int_equal(
            sl_topiccache_get(tc, "new", t + SL_TOPICCACHE_RETRY_MS, &l),
            SL_TOPICCACHE_UNKNOWN);
        assert_ptr_equal(l, e);
        sl_topiccache_answer(tc, e, 1, 1, t);
        /* Not authorized: kept, and expires, like a topic that is not. */
        assert_int_equal(sl_topiccache_get(tc, "secret", t, &e),
                         SL_TOPICCACHE_LOOKING);
        sl_topiccache_answer(tc, e, 1, SL_TOPICCACHE_FORBIDDEN, t);
        assert_int_equal(sl_topiccache_get(tc, "secret", t + 1, &l),
                         SL_TOPICCACHE_FORBIDDEN);
        assert_null(l);
        assert_int_equal(
            sl_topiccache_get(tc, "secret", t + SL_TOPICCACHE_TTL_NEG_MS, &l),
            SL_TOPICCACHE_FORBIDDEN);
        assert_ptr_equal(l, e);
        sl_topiccache_answer(tc, e, 1, 6, t);
        /* Found, then refused by the broker (Describe, no Write): forbidden
         * from now on, until it expires like a missing topic. */
        assert_int_equal(sl_topiccache_forbid(tc, "secret", t + 2), 0);
        assert_int_equal(sl_topiccache_get(tc, "secret", t + 3, &l),
                         SL_TOPICCACHE_FORBIDDEN);
        assert_null(l);
        assert_int_equal(sl_topiccache_get(tc, "secret",
                                           t + 2 + SL_TOPICCACHE_TTL_NEG_MS,
                                           &l),
                         SL_TOPICCACHE_FORBIDDEN);
        assert_ptr_equal(l, e);
        /* Not while looked up, nor a topic it never saw. */
        assert_int_equal(sl_topiccache_forbid(tc, "secret", t + 3), -1);
        sl_topiccache_answer(tc, e, 1, 6, t);
        assert_int_equal(sl_topiccache_forbid(tc, "unseen", t), -1);
        assert_int_equal(sl_topiccache_verify(tc), 0);
        sl_topiccache_destroy(tc);
        sl_topiccache_destroy(NULL);
}

/* Expiry times of one's own (the API's cache keeps every answer 10 s). */
static void test_ttl(void **state) {
        sl_topiccache_t *tc = sl_topiccache_new(16, 2, NULL);
        sl_topiccache_entry_t *e, *l;
        (void)state;

        sl_topiccache_set_ttl(tc, 10000, 2000);
        sl_topiccache_get(tc, "out", 0, &e);
        sl_topiccache_answer(tc, e, 1, 4, 0);
        assert_int_equal(sl_topiccache_get(tc, "out", 9999, &l), 4);
        assert_null(l);
        assert_int_equal(sl_topiccache_get(tc, "out", 10000, &l), 4);
        assert_ptr_equal(l, e);
        sl_topiccache_answer(tc, e, 1, 0, 10000);
        assert_int_equal(sl_topiccache_get(tc, "out", 11999, &l), 0);
        assert_null(l);
        assert_int_equal(sl_topiccache_get(tc, "out", 12000, &l), 0);
        assert_ptr_equal(l, e);
        sl_topiccache_answer(tc, e, 1, 4, 12000);
        sl_topiccache_destroy(tc);
}

static void count_cb(sl_topiccache_entry_t *e, void *opaque) {
        (void)e;
        (*(int *)opaque)++;
}

/* No more than max_lookups in flight; a new name meanwhile gets no entry. */
static void test_lookups_bounded(void **state) {
        sl_topiccache_t *tc = sl_topiccache_new(16, 3, NULL);
        sl_topiccache_entry_t *e[3], *l;
        sl_topiccache_stats_t st;
        char name[16];
        int n = 0;
        (void)state;

        for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof(name), "t%d", i);
                assert_int_equal(sl_topiccache_get(tc, name, 0, &e[i]),
                                 SL_TOPICCACHE_LOOKING);
                assert_non_null(e[i]);
        }
        for (int i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "x%d", i);
                assert_int_equal(sl_topiccache_get(tc, name, 0, &l),
                                 SL_TOPICCACHE_LOOKING);
                assert_null(l);
        }
        sl_topiccache_stats(tc, &st);
        assert_int_equal(st.entries, 3);
        assert_int_equal(st.lookups, 3);
        assert_int_equal(st.deferred, 100);
        sl_topiccache_foreach_looking(tc, count_cb, &n);
        assert_int_equal(n, 3);
        /* One answers: the next name gets its lookup. */
        sl_topiccache_answer(tc, e[1], 1, 0, 0);
        assert_int_equal(sl_topiccache_get(tc, "x0", 0, &l),
                         SL_TOPICCACHE_LOOKING);
        assert_non_null(l);
        assert_int_equal(sl_topiccache_verify(tc), 0);
        sl_topiccache_destroy(tc);
}

/* A flood of distinct names that do not exist: memory stays at the
 * capacity, a topic in use is never evicted, neither is a lookup in
 * flight. */
static void test_flood(void **state) {
        enum { CAP = 64, LOOKUPS = 4, FLOOD = 100000 };
        sl_topiccache_t *tc = sl_topiccache_new(CAP, LOOKUPS, NULL);
        sl_topiccache_entry_t *l, *slow;
        sl_topiccache_stats_t st;
        char name[32];
        int64_t t = 0;
        (void)state;

        assert_int_equal(sl_topiccache_get(tc, "orders", t, &l),
                         SL_TOPICCACHE_LOOKING);
        sl_topiccache_answer(tc, l, 1, 12, t);
        /* A lookup that takes the whole flood to answer. */
        assert_int_equal(sl_topiccache_get(tc, "slow", t, &slow),
                         SL_TOPICCACHE_LOOKING);
        assert_non_null(slow);
        for (int i = 0; i < FLOOD; i++) {
                t = i / 100; /* 100 names per millisecond */
                snprintf(name, sizeof(name), "nope-%d", i);
                sl_topiccache_get(tc, name, t, &l);
                assert_non_null(l);
                sl_topiccache_answer(tc, l, 1, 0, t);
                /* The answer stays long enough for its asker to read it. */
                assert_int_equal(sl_topiccache_get(tc, name, t, &l), 0);
                if (i % 10 == 0) {
                        assert_int_equal(sl_topiccache_get(tc, "orders", t, &l),
                                         12);
                        if (l) /* expired: refreshed */
                                sl_topiccache_answer(tc, l, 1, 12, t);
                }
                if (i % 9973 == 0)
                        assert_int_equal(sl_topiccache_verify(tc), 0);
        }
        sl_topiccache_stats(tc, &st);
        assert_int_equal(st.entries, CAP);
        assert_true(st.evictions >= FLOOD - CAP);
        assert_int_equal(st.lookups, 1);
        assert_int_equal(sl_topiccache_get(tc, "slow", t, &l),
                         SL_TOPICCACHE_LOOKING);
        sl_topiccache_answer(tc, slow, 1, 2, t);
        assert_int_equal(sl_topiccache_get(tc, "slow", t, &l), 2);
        assert_int_equal(sl_topiccache_verify(tc), 0);
        sl_topiccache_destroy(tc);
}

/* Names that do not exist go before topics in use, even recent ones. */
static void test_missing_first(void **state) {
        enum { CAP = 8 };
        sl_topiccache_t *tc = sl_topiccache_new(CAP, 2, NULL);
        sl_topiccache_entry_t *l;
        char name[16];
        (void)state;

        for (int i = 0; i < CAP; i++) {
                snprintf(name, sizeof(name), "%s%d", i % 2 ? "no" : "yes", i);
                sl_topiccache_get(tc, name, 0, &l);
                sl_topiccache_answer(tc, l, 1, i % 2 ? 0 : 1, 0);
        }
        /* Four new names take the four slots of missing topics. */
        for (int i = 0; i < CAP / 2; i++) {
                snprintf(name, sizeof(name), "new%d", i);
                sl_topiccache_get(tc, name, 1, &l);
                sl_topiccache_answer(tc, l, 1, 1, 1);
        }
        for (int i = 0; i < CAP; i += 2) {
                snprintf(name, sizeof(name), "yes%d", i);
                assert_int_equal(sl_topiccache_get(tc, name, 2, &l), 1);
                assert_null(l);
        }
        assert_int_equal(sl_topiccache_verify(tc), 0);
        sl_topiccache_destroy(tc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_answers),
            cmocka_unit_test(test_ttl),
            cmocka_unit_test(test_lookups_bounded),
            cmocka_unit_test(test_flood),
            cmocka_unit_test(test_missing_first),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
