/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_idtab.c — unit tests for the table of ids by handle: empty and
 * absent handles, replace, ids of every length around the arena's 255
 * and a 1 MB one, a long random run against a naive reference (with
 * enough deletes to pack the arena several times), and memory() per
 * 16-byte id at 1M.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "idtab.h"

static void expect(const sl_idtab_t *t, uint32_t h, const void *s, size_t len) {
        size_t got = 0;
        const void *p = sl_idtab_get(t, h, &got);
        if (!s) {
                assert_null(p);
                return;
        }
        assert_non_null(p);
        assert_int_equal(got, len);
        assert_memory_equal(p, s, len);
}

static void test_basics(void **state) {
        sl_idtab_t t = {0};
        (void)state;
        expect(&t, 0, NULL, 0);
        expect(&t, 123456, NULL, 0);
        sl_idtab_del(&t, 7); /* nothing there: a no-op */
        sl_idtab_put(&t, 7, "order-42", 8);
        sl_idtab_put(&t, 0, "", 0);
        expect(&t, 7, "order-42", 8);
        expect(&t, 0, "", 0);
        expect(&t, 6, NULL, 0);
        sl_idtab_put(&t, 7, "order-43b", 9); /* replaced */
        expect(&t, 7, "order-43b", 9);
        sl_idtab_del(&t, 7);
        expect(&t, 7, NULL, 0);
        expect(&t, 0, "", 0);
        assert_true(sl_idtab_span(&t) > 7);
        sl_idtab_fini(&t);
        expect(&t, 0, NULL, 0);
        assert_int_equal(sl_idtab_span(&t), 0);
}

/* Every length from 0 to 300 (the arena's bound is 255), binary bytes,
 * and a 1 MB id (longer than an arena chunk). */
static void test_lengths(void **state) {
        sl_idtab_t t = {0};
        size_t big = 1 << 20;
        char *s = malloc(big);
        (void)state;
        for (size_t i = 0; i < big; i++)
                s[i] = (char)(i * 7 + 1);
        for (uint32_t n = 0; n <= 300; n++)
                sl_idtab_put(&t, n, s + n, n);
        sl_idtab_put(&t, 1000, s, big);
        for (uint32_t n = 0; n <= 300; n++)
                expect(&t, n, s + n, n);
        expect(&t, 1000, s, big);
        for (uint32_t n = 0; n <= 300; n += 2)
                sl_idtab_del(&t, n);
        for (uint32_t n = 0; n <= 300; n++)
                expect(&t, n, n % 2 ? s + n : NULL, n);
        sl_idtab_put(&t, 1000, "short", 5); /* long → short */
        expect(&t, 1000, "short", 5);
        sl_idtab_put(&t, 1, s, 4000); /* short → long */
        expect(&t, 1, s, 4000);
        sl_idtab_fini(&t);
        free(s);
}

/* Random puts, replaces and deletes over 300k handles against a copy in
 * plain arrays; ~40 MB of ids go through, so the arena packs several
 * times, and everything is compared after each phase. */
static void test_random(void **state) {
        enum { N = 300000, STEPS = 1500000 };
        sl_idtab_t t = {0};
        char **ref = calloc(N, sizeof(*ref));
        uint8_t *len = calloc(N, 1);
        uint64_t x = 88172645463325252ull;
        (void)state;
        for (int step = 0; step < STEPS; step++) {
                uint32_t h;
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                h = (uint32_t)(x % N);
                if ((x >> 32) % 3 == 0) {
                        free(ref[h]);
                        ref[h] = NULL;
                        sl_idtab_del(&t, h);
                        continue;
                }
                uint8_t n = (uint8_t)((x >> 40) % 40);
                free(ref[h]);
                ref[h] = malloc(n + 1);
                for (int i = 0; i < n; i++)
                        ref[h][i] = (char)(x >> (i % 56));
                len[h] = n;
                sl_idtab_put(&t, h, ref[h], n);
                if (step % 300000 == 0)
                        for (uint32_t i = 0; i < N; i++)
                                expect(&t, i, ref[i], len[i]);
        }
        for (uint32_t i = 0; i < N; i++)
                expect(&t, i, ref[i], len[i]);
        /* What stays is about the ids, not what went through. */
        size_t bytes = 0;
        for (uint32_t i = 0; i < N; i++)
                bytes += ref[i] ? ((1u + len[i] + 3) & ~3u) : 0;
        assert_true(sl_idtab_memory(&t) <
                    2 * bytes + N * sizeof(uint32_t) * 2 + (1 << 21));
        for (uint32_t i = 0; i < N; i++) {
                free(ref[i]);
                sl_idtab_del(&t, i);
                expect(&t, i, NULL, 0);
        }
        sl_idtab_fini(&t);
        free(ref);
        free(len);
}

/* 1M 16-byte ids: about 24 bytes each, the figure op_delay.c's essay
 * gives for a rebuild. */
static void test_memory_per_id(void **state) {
        enum { N = 1000000 };
        sl_idtab_t t = {0};
        char id[17];
        double per;
        (void)state;
        for (uint32_t h = 0; h < N; h++) {
                snprintf(id, sizeof(id), "%016u", h);
                sl_idtab_put(&t, h, id, 16);
        }
        per = (double)sl_idtab_memory(&t) / N;
        printf("idtab: %.1f B per 16-byte id at 1M\n", per);
        assert_true(per < 26.0);
        snprintf(id, sizeof(id), "%016u", 777777u);
        expect(&t, 777777, id, 16);
        sl_idtab_fini(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_basics),
            cmocka_unit_test(test_lengths),
            cmocka_unit_test(test_random),
            cmocka_unit_test(test_memory_per_id),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
