/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_heap.c — unit tests for the intrusive binary heap (heap.h): order
 * and ties, positions, push_last, replace, heapify, growth and shrinking,
 * one element in two heaps at once, and long random runs checked against
 * a naive reference after every operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heap.h"

/* An element of two heaps: by (due, seq) through pos, and by weight,
 * largest first, through wpos. */
typedef struct el_s {
        int64_t due, seq;
        int64_t weight;
        uint32_t pos, wpos;
        int id;
} el_t;

#define EL_POS(e)  ((e)->pos)
#define EL_WPOS(e) ((e)->wpos)
#define EL_LESS(a, b)                                                          \
        ((a)->due < (b)->due || ((a)->due == (b)->due && (a)->seq < (b)->seq))
#define EL_HEAVIER(a, b) ((a)->weight > (b)->weight)

SL_HEAP_DEFINE(el_heap, el_t, EL_POS, EL_LESS)
SL_HEAP_DEFINE(wt_heap, el_t, EL_WPOS, EL_HEAVIER)

static void el_init(el_t *e, int id, int64_t due, int64_t seq) {
        memset(e, 0, sizeof(*e));
        e->id = id;
        e->due = due;
        e->seq = seq;
        e->pos = SL_HEAP_NONE;
        e->wpos = SL_HEAP_NONE;
}

static void test_order_and_ties(void **state) {
        el_heap_t h;
        el_t e[6];
        /* Equal due times come out in seq order. */
        static const int64_t due[] = {30, 10, 20, 10, 30, 10};
        static const int expect[] = {1, 3, 5, 2, 0, 4};
        (void)state;
        el_heap_init(&h);
        assert_null(el_heap_top(&h));
        assert_null(el_heap_pop(&h));
        for (int i = 0; i < 6; i++) {
                el_init(&e[i], i, due[i], i);
                assert_false(sl_heap_in(e[i].pos));
                el_heap_push(&h, &e[i]);
                assert_true(sl_heap_in(e[i].pos));
                assert_int_equal(el_heap_verify(&h), 0);
        }
        assert_int_equal(el_heap_count(&h), 6);
        for (int i = 0; i < 6; i++) {
                el_t *t = el_heap_pop(&h);
                assert_non_null(t);
                assert_int_equal(t->id, expect[i]);
                assert_int_equal(t->pos, SL_HEAP_NONE);
                assert_int_equal(el_heap_verify(&h), 0);
        }
        assert_int_equal(el_heap_count(&h), 0);
        el_heap_fini(&h);
}

static void test_update_remove_replace(void **state) {
        el_heap_t h;
        el_t e[100], r;
        (void)state;
        el_heap_init(&h);
        for (int i = 0; i < 100; i++) {
                el_init(&e[i], i, 1000 + i, i);
                el_heap_push(&h, &e[i]);
        }
        /* Earlier: to the top. */
        e[57].due = 1;
        el_heap_update(&h, &e[57]);
        assert_ptr_equal(el_heap_top(&h), &e[57]);
        /* Later: away from it. */
        e[57].due = 5000;
        el_heap_update(&h, &e[57]);
        assert_ptr_equal(el_heap_top(&h), &e[0]);
        assert_int_equal(el_heap_verify(&h), 0);
        /* Removal from the middle and of the top. */
        el_heap_remove(&h, &e[40]);
        assert_int_equal(e[40].pos, SL_HEAP_NONE);
        el_heap_remove(&h, &e[0]);
        assert_ptr_equal(el_heap_top(&h), &e[1]);
        assert_int_equal(el_heap_count(&h), 98);
        assert_int_equal(el_heap_verify(&h), 0);
        /* A new version of e[1] takes its place, and its order. */
        el_init(&r, 1001, 4000, 1);
        el_heap_replace(&h, &e[1], &r);
        assert_int_equal(e[1].pos, SL_HEAP_NONE);
        assert_true(sl_heap_in(r.pos));
        assert_ptr_equal(el_heap_top(&h), &e[2]);
        assert_int_equal(el_heap_verify(&h), 0);
        /* Positions are what _at says. */
        for (size_t i = 0; i < el_heap_count(&h); i++)
                assert_int_equal(el_heap_at(&h, i)->pos, i);
        el_heap_fini(&h);
}

static void test_put_discard(void **state) {
        el_heap_t h;
        el_t a, b;
        (void)state;
        el_heap_init(&h);
        el_init(&a, 0, 10, 0);
        el_init(&b, 1, 20, 1);
        el_heap_discard(&h, &a); /* not in: nothing */
        el_heap_put(&h, &a);     /* not in: pushed */
        el_heap_put(&h, &b);
        assert_int_equal(el_heap_count(&h), 2);
        b.due = 5;
        el_heap_put(&h, &b); /* in: re-sorted, not pushed twice */
        assert_int_equal(el_heap_count(&h), 2);
        assert_ptr_equal(el_heap_top(&h), &b);
        el_heap_discard(&h, &b);
        el_heap_discard(&h, &b);
        assert_int_equal(el_heap_count(&h), 1);
        assert_ptr_equal(el_heap_top(&h), &a);
        assert_int_equal(el_heap_verify(&h), 0);
        el_heap_fini(&h);
}

static void test_push_last(void **state) {
        el_heap_t h;
        el_t e[200], early;
        (void)state;
        el_heap_init(&h);
        /* In firing order, every element may go to the end. */
        for (int i = 0; i < 200; i++) {
                el_init(&e[i], i, i / 3, i);
                el_heap_push_last(&h, &e[i]);
                assert_int_equal(e[i].pos, i);
        }
        assert_int_equal(el_heap_verify(&h), 0);
        /* One that comes out earlier does not belong there: verify says
         * so. */
        el_init(&early, 999, -1, 0);
        el_heap_push_last(&h, &early);
        assert_int_equal(el_heap_verify(&h), -1);
        el_heap_update(&h, &early);
        assert_int_equal(el_heap_verify(&h), 0);
        assert_ptr_equal(el_heap_pop(&h), &early);
        for (int i = 0; i < 200; i++)
                assert_ptr_equal(el_heap_pop(&h), &e[i]);
        el_heap_fini(&h);
}

static void test_grow_shrink_clear(void **state) {
        enum { N = 10000 };
        el_heap_t h;
        el_t *e = calloc(N, sizeof(*e));
        (void)state;
        el_heap_init(&h);
        for (int i = 0; i < N; i++) {
                el_init(&e[i], i, (i * 7919) % N, i);
                el_heap_push(&h, &e[i]);
        }
        assert_true(h.cap >= N);
        assert_int_equal(el_heap_verify(&h), 0);
        for (int i = 0; i < N - 10; i++)
                el_heap_pop(&h);
        /* Gave the memory back: at most four times what it holds. */
        assert_true(h.cap <= 4 * SL_HEAP_MIN_CAP);
        assert_int_equal(el_heap_verify(&h), 0);
        el_heap_clear(&h);
        assert_int_equal(el_heap_count(&h), 0);
        assert_null(el_heap_top(&h));
        assert_true(h.cap >= SL_HEAP_MIN_CAP);
        el_heap_fini(&h);
        assert_null(h.a);
        free(e);
}

static void test_heapify(void **state) {
        enum { N = 1000 };
        el_heap_t h;
        el_t *e = calloc(N, sizeof(*e));
        int64_t last = INT64_MIN, lastseq = 0;
        (void)state;
        el_heap_init(&h);
        for (int i = 0; i < N; i++) {
                el_init(&e[i], i, i, i);
                el_heap_push(&h, &e[i]);
        }
        /* Many keys change in place, then one pass restores order. */
        for (int i = 0; i < N; i += 3)
                e[i].due = (int64_t)((i * 104729) % 5000) - 2500;
        el_heap_heapify(&h);
        assert_int_equal(el_heap_verify(&h), 0);
        while (el_heap_count(&h)) {
                el_t *t = el_heap_pop(&h);
                assert_true(t->due > last ||
                            (t->due == last && t->seq > lastseq));
                last = t->due;
                lastseq = t->seq;
        }
        el_heap_fini(&h);
        free(e);
}

/* The reference: the first in-heap element by LESS, by a scan. */
static el_t *ref_min(el_t *e, const int *in, int n, int heavy) {
        el_t *m = NULL;
        for (int i = 0; i < n; i++) {
                if (!in[i])
                        continue;
                if (!m || (heavy ? EL_HEAVIER(&e[i], m) : EL_LESS(&e[i], m)))
                        m = &e[i];
        }
        return m;
}

/* The last in-heap element by EL_LESS, by a scan. */
static el_t *ref_max(el_t *e, const int *in, int n) {
        el_t *m = NULL;
        for (int i = 0; i < n; i++)
                if (in[i] && (!m || EL_LESS(m, &e[i])))
                        m = &e[i];
        return m;
}

/* Random pushes, push_lasts, updates, removals, pops and replacements on
 * two heaps sharing elements, each heap checked against the reference
 * after every operation. */
static void test_random_against_reference(void **state) {
        enum { N = 400, OPS = 60000 };
        el_t *e = calloc(N, sizeof(*e)), *spare = calloc(N, sizeof(*spare));
        int in[N] = {0}, win[N] = {0};
        int64_t seq = 0;
        el_heap_t h;
        wt_heap_t w;
        unsigned s = 12345;
        (void)state;
        el_heap_init(&h);
        wt_heap_init(&w);
        for (int i = 0; i < N; i++)
                el_init(&e[i], i, 0, 0);
        for (int op = 0; op < OPS; op++) {
                int i = (int)((s = s * 1103515245u + 12345u) >> 8) % N;
                int what = (int)((s = s * 1103515245u + 12345u) >> 8) % 9;
                int64_t due =
                    (int64_t)((s = s * 1103515245u + 12345u) >> 8) % 500;
                switch (what) {
                case 0:
                case 1: /* push, or update when in */
                        e[i].due = due;
                        e[i].seq = ++seq;
                        if (in[i]) {
                                el_heap_update(&h, &e[i]);
                        } else {
                                el_heap_push(&h, &e[i]);
                                in[i] = 1;
                        }
                        break;
                case 2: { /* push_last, at or past every element in */
                        el_t *m = ref_max(e, in, N);
                        if (in[i])
                                break;
                        e[i].due = m && m->due > due ? m->due : due;
                        e[i].seq = ++seq;
                        el_heap_push_last(&h, &e[i]);
                        in[i] = 1;
                        break;
                }
                case 3: /* remove */
                        if (!in[i])
                                break;
                        el_heap_remove(&h, &e[i]);
                        in[i] = 0;
                        break;
                case 4: { /* pop */
                        el_t *want = ref_min(e, in, N, 0), *got;
                        got = el_heap_pop(&h);
                        assert_ptr_equal(got, want);
                        if (got)
                                in[got->id] = 0;
                        break;
                }
                case 5: { /* replace by a new version (a copy) */
                        if (!in[i])
                                break;
                        spare[i] = e[i];
                        spare[i].due = due;
                        spare[i].seq = ++seq;
                        spare[i].pos = SL_HEAP_NONE;
                        el_heap_replace(&h, &e[i], &spare[i]);
                        assert_int_equal(e[i].pos, SL_HEAP_NONE);
                        /* Swap back so that e[] stays the element set. */
                        el_heap_replace(&h, &spare[i], &e[i]);
                        e[i].due = spare[i].due;
                        e[i].seq = spare[i].seq;
                        el_heap_update(&h, &e[i]);
                        break;
                }
                case 6: /* the weight heap: push or update */
                        e[i].weight = due;
                        if (win[i]) {
                                wt_heap_update(&w, &e[i]);
                        } else {
                                wt_heap_push(&w, &e[i]);
                                win[i] = 1;
                        }
                        break;
                case 7: /* the weight heap: remove */
                        if (!win[i])
                                break;
                        wt_heap_remove(&w, &e[i]);
                        win[i] = 0;
                        break;
                default: { /* the weight heap: pop */
                        el_t *want = ref_min(e, win, N, 1), *got;
                        got = wt_heap_top(&w);
                        if (want)
                                assert_int_equal(got->weight, want->weight);
                        else
                                assert_null(got);
                        if (got) {
                                wt_heap_pop(&w);
                                win[got->id] = 0;
                        }
                        break;
                }
                }
                for (int k = 0; k < N; k++) {
                        assert_int_equal(sl_heap_in(e[k].pos), in[k]);
                        assert_int_equal(sl_heap_in(e[k].wpos), win[k]);
                }
                assert_int_equal(el_heap_verify(&h), 0);
                assert_int_equal(wt_heap_verify(&w), 0);
                assert_ptr_equal(el_heap_top(&h), ref_min(e, in, N, 0));
                if (!(op % 5000)) {
                        /* Now and then every due time moves at once. */
                        for (int k = 0; k < N; k++)
                                e[k].due = (e[k].due * 31 + k) % 500;
                        el_heap_heapify(&h);
                        assert_int_equal(el_heap_verify(&h), 0);
                }
        }
        el_heap_fini(&h);
        wt_heap_fini(&w);
        free(e);
        free(spare);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_order_and_ties),
            cmocka_unit_test(test_update_remove_replace),
            cmocka_unit_test(test_put_discard),
            cmocka_unit_test(test_push_last),
            cmocka_unit_test(test_grow_shrink_clear),
            cmocka_unit_test(test_heapify),
            cmocka_unit_test(test_random_against_reference),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
