/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_timerindex.c — unit tests for the compact timer index: firing order
 * with ties in due time, the 48-bit fields at their bounds, update,
 * the multimap by hash (entries of one hash, and hashes of one bucket),
 * stable handles and the reuse of freed slots, chunks given back, the
 * arrays shrinking, the limit, a long random run checked against a naive
 * reference with verify() after every step, earliest() against a sorted
 * reference (ties, until cutting, max around the stack's 256 and the
 * count, after removals and updates), and memory() per entry at 1M.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "timerindex.h"

#define NONE       SL_TIMERINDEX_NONE
#define CHUNK_N    8192 /* entries per chunk (timerindex.c) */
#define FIELD_MAX  SL_TIMERINDEX_FIELD_MAX
#define DUE_MAX_MS 253402300799999LL /* delay_input.h's clamp */

static uint32_t add(sl_timerindex_t *ix, uint64_t hash, int64_t due,
                    int64_t loc, uint16_t flags) {
        uint32_t h = sl_timerindex_add(ix, hash, due, loc, flags);
        assert_int_not_equal(h, NONE);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        return h;
}

/* Takes the first entry out, checking its due time and loc. */
static void expect_fire(sl_timerindex_t *ix, int64_t due, int64_t loc) {
        uint32_t h = sl_timerindex_min(ix);
        assert_int_not_equal(h, NONE);
        assert_int_equal(sl_timerindex_due(ix, h), due);
        assert_int_equal(sl_timerindex_loc(ix, h), loc);
        sl_timerindex_remove(ix, h);
        assert_int_equal(sl_timerindex_verify(ix), 0);
}

static void test_order_and_ties(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        (void)state;

        assert_int_equal(sl_timerindex_min(ix), NONE);
        add(ix, 1, 300, 7, 0);
        add(ix, 2, 100, 9, 0);
        add(ix, 3, 200, 1, 0);
        /* Ties in due time fire by loc, across the 32-bit split of loc. */
        add(ix, 4, 200, (int64_t)1 << 40, 0);
        add(ix, 5, 200, ((int64_t)1 << 32) - 1, 0);
        add(ix, 6, 200, (int64_t)1 << 32, 0);
        add(ix, 7, 200, 0, 0);
        /* The bounds of the fields. */
        add(ix, 8, FIELD_MAX, FIELD_MAX, 0);
        add(ix, 9, DUE_MAX_MS, 3, 0);
        add(ix, 10, 0, FIELD_MAX, 0);
        add(ix, 11, 0, 0, 0);
        assert_int_equal(sl_timerindex_count(ix), 11);

        expect_fire(ix, 0, 0);
        expect_fire(ix, 0, FIELD_MAX);
        expect_fire(ix, 100, 9);
        expect_fire(ix, 200, 0);
        expect_fire(ix, 200, 1);
        expect_fire(ix, 200, ((int64_t)1 << 32) - 1);
        expect_fire(ix, 200, (int64_t)1 << 32);
        expect_fire(ix, 200, (int64_t)1 << 40);
        expect_fire(ix, 300, 7);
        expect_fire(ix, DUE_MAX_MS, 3);
        expect_fire(ix, FIELD_MAX, FIELD_MAX);
        assert_int_equal(sl_timerindex_min(ix), NONE);
        assert_int_equal(sl_timerindex_count(ix), 0);
        sl_timerindex_destroy(ix);
        sl_timerindex_destroy(NULL);
}

static void test_fields_and_update(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        uint32_t h[100];
        (void)state;

        for (int i = 0; i < 100; i++)
                h[i] = add(ix, 0x1234567800000000ULL + (uint64_t)i, 1000 + i, i,
                           (uint16_t)(i * 7));
        for (int i = 0; i < 100; i++) {
                assert_int_equal(sl_timerindex_hash(ix, h[i]),
                                 0x1234567800000000ULL + (uint64_t)i);
                assert_int_equal(sl_timerindex_due(ix, h[i]), 1000 + i);
                assert_int_equal(sl_timerindex_loc(ix, h[i]), i);
                assert_int_equal(sl_timerindex_flags(ix, h[i]), i * 7);
        }
        sl_timerindex_set_flags(ix, h[5], 0xffff);
        assert_int_equal(sl_timerindex_flags(ix, h[5]), 0xffff);
        assert_int_equal(sl_timerindex_due(ix, h[5]), 1005);

        /* Earlier: to the top; the handle and the other fields stay. */
        sl_timerindex_update(ix, h[57], 1, 500);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        assert_int_equal(sl_timerindex_min(ix), h[57]);
        assert_int_equal(sl_timerindex_loc(ix, h[57]), 500);
        assert_int_equal(sl_timerindex_flags(ix, h[57]), 57 * 7);
        /* Only loc changes (the offset became known): ties move. */
        sl_timerindex_update(ix, h[3], 1, 499);
        assert_int_equal(sl_timerindex_min(ix), h[3]);
        sl_timerindex_update(ix, h[3], 1, 501);
        assert_int_equal(sl_timerindex_min(ix), h[57]);
        /* Later: away from it. */
        sl_timerindex_update(ix, h[57], 5000, 0);
        sl_timerindex_update(ix, h[3], 1003, 3);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        assert_int_equal(sl_timerindex_min(ix), h[0]);
        for (int i = 0; i < 100; i++) {
                if (i == 57)
                        continue;
                expect_fire(ix, 1000 + i, i);
        }
        expect_fire(ix, 5000, 0);
        sl_timerindex_destroy(ix);
}

/* Collects the handles find() and next_same_hash() give for hash. */
static size_t same_hash(const sl_timerindex_t *ix, uint64_t hash, uint32_t *out,
                        size_t max) {
        size_t n = 0;
        for (uint32_t h = sl_timerindex_find(ix, hash); h != NONE;
             h = sl_timerindex_next_same_hash(ix, h)) {
                assert_true(n < max);
                assert_int_equal(sl_timerindex_hash(ix, h), hash);
                out[n++] = h;
        }
        return n;
}

static int has(const uint32_t *a, size_t n, uint32_t h) {
        for (size_t i = 0; i < n; i++)
                if (a[i] == h)
                        return 1;
        return 0;
}

static void test_multimap_by_hash(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        uint32_t same[5], other[50], got[64];
        (void)state;

        /* Five entries of one hash, among others whose hashes differ from
         * it only in the low bits: the bucket comes from the high ones, so
         * all of them share one chain. */
        for (int i = 0; i < 50; i++) {
                other[i] = add(ix, 0xabcdef0100000000ULL + (uint64_t)i + 1,
                               100 + i, i, 0);
                if (i % 10 == 0)
                        same[i / 10] =
                            add(ix, 0xabcdef0100000000ULL, 50 + i, i, 0);
        }
        assert_int_equal(same_hash(ix, 0xabcdef0100000000ULL, got, 64), 5);
        for (int i = 0; i < 5; i++)
                assert_true(has(got, 5, same[i]));
        for (int i = 0; i < 50; i++) {
                uint64_t hash = 0xabcdef0100000000ULL + (uint64_t)i + 1;
                assert_int_equal(same_hash(ix, hash, got, 64), 1);
                assert_int_equal(got[0], other[i]);
        }
        assert_int_equal(sl_timerindex_find(ix, 0xabcdef0200000000ULL), NONE);
        assert_int_equal(sl_timerindex_find(ix, 0), NONE);

        /* Removing one of them while walking: the next is taken first. */
        for (uint32_t h = sl_timerindex_find(ix, 0xabcdef0100000000ULL), n;
             h != NONE; h = n) {
                n = sl_timerindex_next_same_hash(ix, h);
                if (h == same[2])
                        sl_timerindex_remove(ix, h);
        }
        assert_int_equal(sl_timerindex_verify(ix), 0);
        assert_int_equal(same_hash(ix, 0xabcdef0100000000ULL, got, 64), 4);
        assert_false(has(got, 4, same[2]));
        sl_timerindex_remove(ix, same[0]);
        sl_timerindex_remove(ix, same[4]);
        assert_int_equal(same_hash(ix, 0xabcdef0100000000ULL, got, 64), 2);
        assert_true(has(got, 2, same[1]) && has(got, 2, same[3]));

        sl_timerindex_prefetch(ix, 0xabcdef0100000000ULL);
        sl_timerindex_prefetch_chain(ix, 0xabcdef0100000000ULL);
        sl_timerindex_prefetch_chain(ix, 7);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        sl_timerindex_destroy(ix);
}

static void test_handles_stable_and_reused(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        enum { N = 3000 };
        static uint32_t h[N], again[N / 2];
        (void)state;

        for (int i = 0; i < N; i++)
                h[i] = add(ix, (uint64_t)i * 0x9e3779b97f4a7c15ULL,
                           (int64_t)(i * 7919) % 10007, i, (uint16_t)i);
        /* Handles of one chunk, handed out in order. */
        for (int i = 0; i < N; i++)
                assert_int_equal(h[i], i);
        for (int i = 0; i < N; i += 2)
                sl_timerindex_remove(ix, h[i]);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        /* Those left keep their handles and fields through the removals
         * and the moves in the heap. */
        for (int i = 1; i < N; i += 2) {
                assert_int_equal(sl_timerindex_hash(ix, h[i]),
                                 (uint64_t)i * 0x9e3779b97f4a7c15ULL);
                assert_int_equal(sl_timerindex_loc(ix, h[i]), i);
                assert_int_equal(sl_timerindex_flags(ix, h[i]), (uint16_t)i);
                assert_int_equal(
                    sl_timerindex_find(ix, (uint64_t)i * 0x9e3779b97f4a7c15ULL),
                    h[i]);
        }
        /* New entries take the freed slots, not new ones. */
        for (int i = 0; i < N / 2; i++) {
                again[i] = add(ix, 7, 5, i, 0);
                assert_true(again[i] < N && again[i] % 2 == 0);
        }
        for (int i = 0; i < N / 2; i++)
                for (int j = 0; j < i; j++)
                        assert_int_not_equal(again[i], again[j]);
        assert_int_equal(sl_timerindex_count(ix), N);
        sl_timerindex_destroy(ix);
}

static void test_chunks_lowest_first_and_given_back(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        const int n = 5 * CHUNK_N;
        size_t full, after;
        uint32_t h;
        (void)state;

        for (int i = 0; i < n; i++)
                assert_int_equal(
                    sl_timerindex_add(ix, (uint64_t)i * 0x9e3779b97f4a7c15ULL,
                                      i, i, 0),
                    i);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        full = sl_timerindex_memory(ix);
        assert_true(full >= (size_t)n * 32);
        /* Empty chunks 1, 2 and 3: one is kept as the spare, two are
         * unmapped, and their 512 KiB leave memory(). */
        for (int i = CHUNK_N; i < 4 * CHUNK_N; i++)
                sl_timerindex_remove(ix, (uint32_t)i);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        after = sl_timerindex_memory(ix);
        assert_true(after + 2 * CHUNK_N * 32 <= full);
        /* Then holes in chunk 0: a new entry goes there, the lowest. */
        sl_timerindex_remove(ix, 100);
        sl_timerindex_remove(ix, 4000);
        h = add(ix, 1, 1, 1, 0);
        assert_true(h == 100 || h == 4000);
        h = add(ix, 2, 2, 2, 0);
        assert_true(h == 100 || h == 4000);
        /* Chunk 0 full: the next goes into chunk 1 (mapped again or the
         * spare), not past chunk 4. */
        h = add(ix, 3, 3, 3, 0);
        assert_int_equal(h >> 13, 1);
        /* The last chunk emptied: the spare now (chunk 1 is not empty). */
        for (int i = 4 * CHUNK_N; i < 5 * CHUNK_N; i++)
                sl_timerindex_remove(ix, (uint32_t)i);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        assert_int_equal(sl_timerindex_count(ix), CHUNK_N + 1);
        sl_timerindex_destroy(ix);
}

static void test_shrinks_after_mass_firing(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        const int n = 200000;
        size_t full, drained;
        int64_t last_due = -1, last_loc = -1;
        (void)state;

        srand(7);
        for (int i = 0; i < n; i++)
                assert_int_not_equal(
                    sl_timerindex_add(ix,
                                      (uint64_t)rand() << 33 ^ (uint64_t)rand(),
                                      rand() % 100000, i, 0),
                    NONE);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        full = sl_timerindex_memory(ix);
        assert_true(full <= (size_t)n * 40);
        /* Fire all: in order, and the memory goes back with them. */
        for (int i = 0; i < n; i++) {
                uint32_t h = sl_timerindex_min(ix);
                int64_t due = sl_timerindex_due(ix, h);
                int64_t loc = sl_timerindex_loc(ix, h);
                assert_true(due > last_due ||
                            (due == last_due && loc > last_loc));
                last_due = due;
                last_loc = loc;
                sl_timerindex_remove(ix, h);
                if (i % 50000 == 0)
                        assert_int_equal(sl_timerindex_verify(ix), 0);
        }
        assert_int_equal(sl_timerindex_verify(ix), 0);
        drained = sl_timerindex_memory(ix);
        /* The spare chunk (256 KiB) and the least arrays. */
        assert_true(drained <= 256 * 1024 + 16 * 1024);
        /* And it fills again. */
        for (int i = 0; i < 1000; i++)
                add(ix, (uint64_t)i, i, i, 0);
        sl_timerindex_destroy(ix);
}

static void test_limit(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(3);
        uint32_t a;
        (void)state;

        a = add(ix, 1, 1, 1, 0);
        add(ix, 2, 2, 2, 0);
        add(ix, 3, 3, 3, 0);
        assert_int_equal(sl_timerindex_add(ix, 4, 4, 4, 0), NONE);
        assert_int_equal(sl_timerindex_count(ix), 3);
        assert_int_equal(sl_timerindex_find(ix, 4), NONE);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        sl_timerindex_remove(ix, a);
        add(ix, 4, 4, 4, 0);
        sl_timerindex_destroy(ix);
        /* 0 and too much: the most (2^32 - 2, not reachable in a test). */
        ix = sl_timerindex_new((size_t)1 << 40);
        add(ix, 1, 1, 1, 0);
        sl_timerindex_destroy(ix);
}

static void count_cb(uint32_t h, void *opaque) {
        uint64_t *sum = opaque;
        sum[0]++;
        sum[1] += h;
}

static void test_foreach(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        uint64_t sum[2] = {0, 0};
        (void)state;

        sl_timerindex_foreach(ix, count_cb, sum);
        assert_int_equal(sum[0], 0);
        for (int i = 0; i < 10; i++)
                add(ix, (uint64_t)i, 10 - i, 0, 0);
        sl_timerindex_remove(ix, 4);
        sl_timerindex_foreach(ix, count_cb, sum);
        assert_int_equal(sum[0], 9);
        assert_int_equal(sum[1], 45 - 4);
        sl_timerindex_destroy(ix);
}

/*
 * A long random run against a naive reference: adds (hashes from a small
 * set, so many collide, and due times from a small range, so many tie),
 * removals, updates of due time or loc only, flag changes; after each
 * step verify(), the earliest entry against the reference's, and now and
 * then the entries of a hash.
 */
typedef struct ref_s {
        uint32_t h;
        uint64_t hash;
        int64_t due, loc;
        uint16_t flags;
} ref_t;

static uint64_t rng = 88172645463325252ULL;

static uint64_t next_rand(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

/*
 * earliest() against a reference: every entry (foreach), those due by
 * until sorted by (due, loc), the first max of them.  The keys must come
 * out in that order (entries equal in both may come in any order, so the
 * handles are checked through their keys, and as distinct), nothing is
 * written past max, and the index is unchanged: its heap array (the order
 * foreach walks) and verify().  Returns how many came out.
 */
typedef struct ekey_s {
        int64_t due, loc;
        uint32_t h;
} ekey_t;

typedef struct collect_s {
        const sl_timerindex_t *ix;
        ekey_t *k;
        size_t n;
} collect_t;

static void collect_cb(uint32_t h, void *opaque) {
        collect_t *c = opaque;
        c->k[c->n++] = (ekey_t){.due = sl_timerindex_due(c->ix, h),
                                .loc = sl_timerindex_loc(c->ix, h),
                                .h = h};
}

static int ekey_cmp(const void *a, const void *b) {
        const ekey_t *x = a, *y = b;
        if (x->due != y->due)
                return x->due < y->due ? -1 : 1;
        if (x->loc != y->loc)
                return x->loc < y->loc ? -1 : 1;
        return 0;
}

static int u32_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return x < y ? -1 : x > y;
}

static size_t check_earliest(const sl_timerindex_t *ix, int64_t until,
                             size_t max) {
        size_t n = sl_timerindex_count(ix), nref = 0, want, got;
        ekey_t *all = malloc((n + 1) * sizeof(*all));
        ekey_t *after = malloc((n + 1) * sizeof(*after));
        uint32_t *out = malloc((max + 1) * sizeof(*out));
        collect_t c = {.ix = ix, .k = all};

        assert_non_null(all);
        assert_non_null(after);
        assert_non_null(out);
        sl_timerindex_foreach(ix, collect_cb, &c);
        assert_int_equal(c.n, n);
        out[max] = 0xdeadbeef;
        got = sl_timerindex_earliest(ix, until, max, max ? out : NULL);
        assert_int_equal(out[max], 0xdeadbeef);

        c = (collect_t){.ix = ix, .k = after};
        sl_timerindex_foreach(ix, collect_cb, &c);
        assert_int_equal(c.n, n);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(after[i].h, all[i].h);
        assert_int_equal(sl_timerindex_verify(ix), 0);

        for (size_t i = 0; i < n; i++)
                if (all[i].due <= until)
                        all[nref++] = all[i];
        qsort(all, nref, sizeof(*all), ekey_cmp);
        want = max < nref ? max : nref;
        assert_int_equal(got, want);
        for (size_t i = 0; i < got; i++) {
                assert_int_equal(sl_timerindex_due(ix, out[i]), all[i].due);
                assert_int_equal(sl_timerindex_loc(ix, out[i]), all[i].loc);
        }
        qsort(out, got, sizeof(*out), u32_cmp);
        for (size_t i = 1; i < got; i++)
                assert_true(out[i - 1] < out[i]);
        free(all);
        free(after);
        free(out);
        return got;
}

static void check_min(const sl_timerindex_t *ix, const ref_t *ref, size_t n) {
        uint32_t h = sl_timerindex_min(ix);
        size_t best = 0;

        if (!n) {
                assert_int_equal(h, NONE);
                return;
        }
        for (size_t i = 1; i < n; i++)
                if (ref[i].due < ref[best].due ||
                    (ref[i].due == ref[best].due && ref[i].loc < ref[best].loc))
                        best = i;
        assert_int_not_equal(h, NONE);
        assert_int_equal(sl_timerindex_due(ix, h), ref[best].due);
        assert_int_equal(sl_timerindex_loc(ix, h), ref[best].loc);
}

static void check_hash(const sl_timerindex_t *ix, const ref_t *ref, size_t n,
                       uint64_t hash) {
        static uint32_t got[4096];
        size_t k = same_hash(ix, hash, got, 4096), want = 0;

        for (size_t i = 0; i < n; i++) {
                if (ref[i].hash != hash)
                        continue;
                want++;
                assert_true(has(got, k, ref[i].h));
        }
        assert_int_equal(k, want);
}

static void test_random_against_reference(void **state) {
        enum { MAXN = 2000, STEPS = 40000 };
        static ref_t ref[MAXN];
        sl_timerindex_t *ix = sl_timerindex_new(MAXN);
        size_t n = 0;
        (void)state;

        for (int step = 0; step < STEPS; step++) {
                uint64_t r = next_rand();
                /* Grow to the limit, then drain to empty, twice. */
                int grow = (step / (STEPS / 4)) % 2 == 0;
                int op = (int)(r % 100);

                if (n && op < (grow ? 20 : 60)) {
                        size_t i = (size_t)(next_rand() % n);
                        sl_timerindex_remove(ix, ref[i].h);
                        ref[i] = ref[--n];
                } else if (n && op < (grow ? 35 : 75)) {
                        size_t i = (size_t)(next_rand() % n);
                        if (op % 2)
                                ref[i].due = (int64_t)(next_rand() % 500);
                        ref[i].loc = (int64_t)(next_rand() % 1000) << 30;
                        sl_timerindex_update(ix, ref[i].h, ref[i].due,
                                             ref[i].loc);
                } else if (n && op < (grow ? 40 : 80)) {
                        size_t i = (size_t)(next_rand() % n);
                        ref[i].flags = (uint16_t)next_rand();
                        sl_timerindex_set_flags(ix, ref[i].h, ref[i].flags);
                } else {
                        ref_t e = {
                            .hash = (next_rand() % 300) * 0x100000001ULL,
                            .due = (int64_t)(next_rand() % 500),
                            .loc = (int64_t)(next_rand() % 1000) << 30,
                            .flags = (uint16_t)step,
                        };
                        e.h = sl_timerindex_add(ix, e.hash, e.due, e.loc,
                                                e.flags);
                        if (n == MAXN) {
                                assert_int_equal(e.h, NONE);
                        } else {
                                assert_int_not_equal(e.h, NONE);
                                for (size_t i = 0; i < n; i++)
                                        assert_int_not_equal(ref[i].h, e.h);
                                ref[n++] = e;
                        }
                }
                assert_int_equal(sl_timerindex_count(ix), n);
                assert_int_equal(sl_timerindex_verify(ix), 0);
                check_min(ix, ref, n);
                if (step % 16 == 0) {
                        check_hash(ix, ref, n, (r % 300) * 0x100000001ULL);
                        /* Due times are below 500; max crosses 256 (the
                         * stack's) and the count. */
                        check_earliest(ix, (int64_t)(next_rand() % 521) - 1,
                                       (size_t)(next_rand() % 2100));
                        if (n) {
                                size_t i = (size_t)(r % n);
                                assert_int_equal(
                                    sl_timerindex_flags(ix, ref[i].h),
                                    ref[i].flags);
                                assert_int_equal(
                                    sl_timerindex_hash(ix, ref[i].h),
                                    ref[i].hash);
                        }
                }
        }
        sl_timerindex_destroy(ix);
}

static void test_earliest(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        const int64_t untils[] = {
            -1,  0,   99,         100,           199,       200,
            201, 300, DUE_MAX_MS, FIELD_MAX - 1, FIELD_MAX, INT64_MAX};
        const size_t maxes[] = {0, 1, 2, 3, 5, 10, 11, 12, 300};
        uint32_t out[16], h[11];
        (void)state;

        /* Empty. */
        assert_int_equal(sl_timerindex_earliest(ix, INT64_MAX, 0, NULL), 0);
        assert_int_equal(sl_timerindex_earliest(ix, INT64_MAX, 16, out), 0);
        assert_int_equal(check_earliest(ix, INT64_MAX, 300), 0);

        h[0] = add(ix, 1, 300, 7, 0);
        h[1] = add(ix, 2, 100, 9, 0);
        h[2] = add(ix, 3, 200, 1, 0);
        h[3] = add(ix, 4, 200, (int64_t)1 << 40, 0);
        h[4] = add(ix, 5, 200, ((int64_t)1 << 32) - 1, 0);
        h[5] = add(ix, 6, 200, (int64_t)1 << 32, 0);
        h[6] = add(ix, 7, 200, 0, 0);
        h[7] = add(ix, 8, FIELD_MAX, FIELD_MAX, 0);
        h[8] = add(ix, 9, DUE_MAX_MS, 3, 0);
        h[9] = add(ix, 10, 0, FIELD_MAX, 0);
        h[10] = add(ix, 11, 0, 0, 0);

        /* What should come out, written down. */
        assert_int_equal(sl_timerindex_earliest(ix, 200, 16, out), 8);
        assert_int_equal(out[0], h[10]);
        assert_int_equal(out[1], h[9]);
        assert_int_equal(out[2], h[1]);
        assert_int_equal(out[3], h[6]);
        assert_int_equal(out[4], h[2]);
        assert_int_equal(out[5], h[4]);
        assert_int_equal(out[6], h[5]);
        assert_int_equal(out[7], h[3]);
        assert_int_equal(sl_timerindex_earliest(ix, 199, 16, out), 3);
        assert_int_equal(sl_timerindex_earliest(ix, 200, 4, out), 4);
        assert_int_equal(out[3], h[6]);
        assert_int_equal(sl_timerindex_earliest(ix, -1, 16, out), 0);
        assert_int_equal(sl_timerindex_earliest(ix, INT64_MIN, 16, out), 0);
        assert_int_equal(sl_timerindex_earliest(ix, 0, 1, out), 1);
        assert_int_equal(out[0], h[10]);
        assert_int_equal(sl_timerindex_earliest(ix, INT64_MAX, 16, out), 11);
        assert_int_equal(out[9], h[8]);
        assert_int_equal(out[10], h[7]);
        assert_int_equal(sl_timerindex_earliest(ix, FIELD_MAX - 1, 16, out),
                         10);
        assert_int_equal(sl_timerindex_min(ix), h[10]);
        assert_int_equal(sl_timerindex_count(ix), 11);

        for (size_t u = 0; u < sizeof(untils) / sizeof(*untils); u++)
                for (size_t m = 0; m < sizeof(maxes) / sizeof(*maxes); m++)
                        check_earliest(ix, untils[u], maxes[m]);

        /* After removals and updates. */
        sl_timerindex_remove(ix, h[10]);
        sl_timerindex_remove(ix, h[6]);
        sl_timerindex_update(ix, h[0], 150, 0); /* later to earlier */
        sl_timerindex_update(ix, h[9], 250, 2); /* earlier to later */
        sl_timerindex_update(ix, h[3], 200, 0); /* loc only */
        sl_timerindex_update(ix, h[7], 100, 9); /* a tie in both */
        assert_int_equal(sl_timerindex_earliest(ix, 200, 16, out), 7);
        assert_int_equal(sl_timerindex_due(ix, out[0]), 100);
        assert_int_equal(sl_timerindex_due(ix, out[1]), 100);
        assert_true((out[0] == h[1] && out[1] == h[7]) ||
                    (out[0] == h[7] && out[1] == h[1]));
        assert_int_equal(out[2], h[0]);
        assert_int_equal(out[3], h[3]);
        assert_int_equal(out[4], h[2]);
        assert_int_equal(out[5], h[4]);
        assert_int_equal(out[6], h[5]);
        for (size_t u = 0; u < sizeof(untils) / sizeof(*untils); u++)
                for (size_t m = 0; m < sizeof(maxes) / sizeof(*maxes); m++)
                        check_earliest(ix, untils[u], maxes[m]);

        /* Empty again. */
        for (int i = 0; i < 10; i++)
                if (i != 6)
                        sl_timerindex_remove(ix, h[i]);
        assert_int_equal(sl_timerindex_earliest(ix, INT64_MAX, 16, out), 0);
        sl_timerindex_destroy(ix);
}

/* Many entries with many ties: max on both sides of the stack's 256 and
 * of the count, until cutting through runs of equal due times, and all
 * entries equal. */
static void test_earliest_many(void **state) {
        enum { N = 20000 };
        static uint32_t h[N];
        const int64_t untils[] = {-1, 0, 10, 25, 48, 49, INT64_MAX};
        const size_t maxes[] = {1, 2, 255, 256, 257, 1000, N - 1, N, N + 1000};
        sl_timerindex_t *ix = sl_timerindex_new(0);
        size_t got;
        (void)state;

        for (int i = 0; i < N; i++)
                h[i] = sl_timerindex_add(ix, next_rand(),
                                         (int64_t)(next_rand() % 50),
                                         (int64_t)(next_rand() % 4), 0);
        assert_int_equal(sl_timerindex_verify(ix), 0);
        for (size_t u = 0; u < sizeof(untils) / sizeof(*untils); u++)
                for (size_t m = 0; m < sizeof(maxes) / sizeof(*maxes); m++)
                        check_earliest(ix, untils[u], maxes[m]);
        assert_int_equal(check_earliest(ix, INT64_MAX, N + 1000), N);

        /* Half removed, a quarter moved. */
        for (int i = 0; i < N; i += 2)
                sl_timerindex_remove(ix, h[i]);
        for (int i = 1; i < N; i += 4)
                sl_timerindex_update(ix, h[i], (int64_t)(next_rand() % 60),
                                     (int64_t)(next_rand() % 4));
        assert_int_equal(sl_timerindex_verify(ix), 0);
        for (size_t u = 0; u < sizeof(untils) / sizeof(*untils); u++)
                for (size_t m = 0; m < sizeof(maxes) / sizeof(*maxes); m++)
                        check_earliest(ix, untils[u], maxes[m]);
        assert_int_equal(check_earliest(ix, INT64_MAX, N), N / 2);
        sl_timerindex_destroy(ix);

        /* Every entry equal: any max of them, each once. */
        ix = sl_timerindex_new(0);
        for (int i = 0; i < 3000; i++)
                sl_timerindex_add(ix, (uint64_t)i, 77, 5, 0);
        assert_int_equal(check_earliest(ix, 76, 3000), 0);
        got = check_earliest(ix, 77, 1000);
        assert_int_equal(got, 1000);
        assert_int_equal(check_earliest(ix, 77, 5000), 3000);
        sl_timerindex_destroy(ix);
}

/* memory() per entry at 1M, with random hashes and due times: the budget
 * of timerindex.c's DESIGN (RSS is bench/timerindex_mem.c's to measure). */
static void test_memory_per_entry(void **state) {
        sl_timerindex_t *ix = sl_timerindex_new(0);
        const size_t n = 1000000;
        (void)state;

        for (size_t i = 0; i < n; i++) {
                uint64_t r = next_rand();
                assert_int_not_equal(
                    sl_timerindex_add(ix, r, (int64_t)(r >> 40), (int64_t)i, 0),
                    NONE);
        }
        assert_int_equal(sl_timerindex_verify(ix), 0);
        print_message("memory() per entry at 1M: %.2f bytes\n",
                      (double)sl_timerindex_memory(ix) / (double)n);
        assert_true(sl_timerindex_memory(ix) <= n * 40);
        sl_timerindex_destroy(ix);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_order_and_ties),
            cmocka_unit_test(test_fields_and_update),
            cmocka_unit_test(test_multimap_by_hash),
            cmocka_unit_test(test_handles_stable_and_reused),
            cmocka_unit_test(test_chunks_lowest_first_and_given_back),
            cmocka_unit_test(test_shrinks_after_mass_firing),
            cmocka_unit_test(test_limit),
            cmocka_unit_test(test_foreach),
            cmocka_unit_test(test_random_against_reference),
            cmocka_unit_test(test_earliest),
            cmocka_unit_test(test_earliest_many),
            cmocka_unit_test(test_memory_per_entry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
