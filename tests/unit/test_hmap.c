/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hmap.c — unit tests for the intrusive hash map (hmap.h): lookup,
 * insertion where a miss left off, replacement, removal, growth and
 * shrinking by each map's rules, a fixed map with long chains, iteration
 * that frees as it goes, and a long random run against a naive reference
 * with the invariants checked after every operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hash.h"
#include "hmap.h"

typedef struct ent_s {
        int value;
        sl_hmap_link_t link;
        uint32_t keylen;
        char key[];
} ent_t;

#define ENT_HASH(e)        sl_hash((e)->key, (e)->keylen)
#define ENT_EQ(e, h, k, n) sl_hmap_key_eq((e)->key, (e)->keylen, k, n)

SL_HMAP_DEFINE(emap, ent_t, link, ENT_HASH, ENT_EQ)

static ent_t *ent_new(const char *key, size_t keylen, int value) {
        ent_t *e = malloc(sizeof(*e) + keylen);
        e->value = value;
        e->keylen = (uint32_t)keylen;
        if (keylen)
                memcpy(e->key, key, keylen);
        return e;
}

static ent_t *find(const sl_hmap_t *m, const char *key) {
        return emap_find(m, sl_hash(key, strlen(key)), key, strlen(key));
}

/* Adds key where its lookup left off. */
static ent_t *add(sl_hmap_t *m, const char *key, int value) {
        size_t n = strlen(key);
        sl_hmap_link_t **l = emap_link(m, sl_hash(key, n), key, n);
        ent_t *e;
        assert_null(*l);
        e = ent_new(key, n, value);
        emap_insert_at(m, l, e);
        assert_int_equal(emap_verify(m), 0);
        return e;
}

static void free_all(sl_hmap_t *m) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;
        size_t n = 0;
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(m, &it));) {
                free(emap_entry(l)); /* the iterator has read ahead */
                n++;
        }
        assert_int_equal(n, sl_hmap_count(m));
        sl_hmap_fini(m);
}

static void test_basic(void **state) {
        sl_hmap_t m;
        ent_t *e, *r;
        sl_hmap_link_t **l;
        (void)state;
        sl_hmap_init(&m, 16, 1, 0);
        assert_int_equal(m.nbuckets, 16);
        assert_null(find(&m, "a"));
        add(&m, "a", 1);
        add(&m, "bb", 2);
        add(&m, "", 3); /* the empty key is a key */
        assert_int_equal(find(&m, "a")->value, 1);
        assert_int_equal(find(&m, "bb")->value, 2);
        assert_int_equal(find(&m, "")->value, 3);
        assert_null(find(&m, "b"));
        assert_int_equal(sl_hmap_count(&m), 3);
        /* A new version of "bb" takes the old one's place. */
        l = emap_link(&m, sl_hash("bb", 2), "bb", 2);
        e = emap_entry(*l);
        r = ent_new("bb", 2, 20);
        emap_replace(l, r);
        free(e);
        assert_int_equal(find(&m, "bb")->value, 20);
        assert_int_equal(sl_hmap_count(&m), 3);
        assert_int_equal(emap_verify(&m), 0);
        /* Removal by link and by entry. */
        l = emap_link(&m, sl_hash("a", 1), "a", 1);
        e = emap_entry(*l);
        emap_unlink(&m, l);
        free(e);
        assert_null(find(&m, "a"));
        e = find(&m, "");
        emap_remove(&m, e);
        free(e);
        assert_null(find(&m, ""));
        assert_int_equal(sl_hmap_count(&m), 1);
        assert_int_equal(emap_verify(&m), 0);
        free_all(&m);
}

static void test_sizing(void **state) {
        enum { N = 5000 };
        sl_hmap_t m;
        char key[32];
        (void)state;
        /* Load 2, fourfold below 64 buckets: 16 -> 64 at 33 entries. */
        sl_hmap_init(&m, 16, 2, 64);
        for (int i = 0; i < 33; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                add(&m, key, i);
                assert_int_equal(m.nbuckets, i < 32 ? 16 : 64);
        }
        for (int i = 33; i < N; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                add(&m, key, i);
                assert_true(sl_hmap_count(&m) <= 2 * m.nbuckets);
        }
        assert_int_equal(sl_hmap_memory(&m), m.nbuckets * sizeof(void *));
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                assert_int_equal(find(&m, key)->value, i);
        }
        /* Emptying halves the array back down to its minimum. */
        for (int i = 0; i < N; i++) {
                ent_t *e;
                snprintf(key, sizeof(key), "k%d", i);
                e = find(&m, key);
                emap_remove(&m, e);
                free(e);
                if (m.nbuckets > 16)
                        assert_true(sl_hmap_count(&m) >= m.nbuckets / 4 - 1);
        }
        assert_int_equal(emap_verify(&m), 0);
        assert_int_equal(m.nbuckets, 16);
        free_all(&m);

        /* Load 1, doubling only: 16 -> 32 at 17 entries. */
        sl_hmap_init(&m, 10, 1, 0);
        assert_int_equal(m.nbuckets, 16);
        for (int i = 0; i < 17; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                add(&m, key, i);
        }
        assert_int_equal(m.nbuckets, 32);
        free_all(&m);
}

static void test_fixed_long_chains(void **state) {
        enum { N = 300 };
        sl_hmap_t m;
        char key[32];
        (void)state;
        /* max_load 0: never resized, so 4 buckets hold chains of ~75. */
        sl_hmap_init(&m, 4, 0, 0);
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "x%d", i);
                add(&m, key, i);
        }
        assert_int_equal(m.nbuckets, 4);
        for (int i = 0; i < N; i += 2) {
                ent_t *e;
                snprintf(key, sizeof(key), "x%d", i);
                e = find(&m, key);
                emap_remove(&m, e);
                free(e);
        }
        assert_int_equal(m.nbuckets, 4);
        assert_int_equal(emap_verify(&m), 0);
        for (int i = 0; i < N; i++) {
                snprintf(key, sizeof(key), "x%d", i);
                if (i % 2)
                        assert_int_equal(find(&m, key)->value, i);
                else
                        assert_null(find(&m, key));
        }
        /* Clear forgets everything and keeps the array. */
        {
                ent_t **v = calloc(N, sizeof(*v));
                size_t n = 0;
                sl_hmap_iter_t it = SL_HMAP_ITER_INIT;
                for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&m, &it));)
                        v[n++] = emap_entry(l);
                assert_int_equal(n, N / 2);
                sl_hmap_clear(&m);
                assert_int_equal(sl_hmap_count(&m), 0);
                assert_null(find(&m, "x1"));
                assert_int_equal(emap_verify(&m), 0);
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
                free(v);
        }
        free_all(&m);
}

static void test_key_eq(void **state) {
        (void)state;
        assert_true(sl_hmap_key_eq("ab", 2, "ab", 2));
        assert_false(sl_hmap_key_eq("ab", 2, "ac", 2));
        assert_false(sl_hmap_key_eq("ab", 2, "abc", 3));
        assert_true(sl_hmap_key_eq(NULL, 0, "", 0));
        assert_true(sl_hmap_key_eq("", 0, NULL, 0));
}

static void test_verify_catches(void **state) {
        sl_hmap_t m;
        ent_t *e;
        sl_hmap_link_t **b;
        (void)state;
        sl_hmap_init(&m, 16, 1, 0);
        e = add(&m, "key", 1);
        /* An entry in a bucket not its own. */
        b = sl_hmap_bucket(&m, sl_hash("key", 3));
        *b = NULL;
        m.buckets[((b - m.buckets) + 1) & 15] = &e->link;
        assert_int_equal(emap_verify(&m), -1);
        m.buckets[((b - m.buckets) + 1) & 15] = NULL;
        *b = &e->link;
        assert_int_equal(emap_verify(&m), 0);
        /* A wrong count. */
        m.count = 2;
        assert_int_equal(emap_verify(&m), -1);
        m.count = 1;
        free_all(&m);
}

/* Random inserts, upserts (replace), removals and lookups against a
 * reference array, with short keys so that many collide on their first
 * bytes, and the map checked after every operation. */
static void test_random_against_reference(void **state) {
        enum { KEYS = 700, OPS = 40000 };
        sl_hmap_t m;
        ent_t *ref[KEYS] = {0};
        size_t count = 0;
        unsigned s = 777;
        char key[16];
        (void)state;
        sl_hmap_init(&m, 16, 2, 64);
        for (int op = 0; op < OPS; op++) {
                int k = (int)((s = s * 1103515245u + 12345u) >> 8) % KEYS;
                int what = (int)((s = s * 1103515245u + 12345u) >> 8) % 4;
                size_t n;
                uint64_t h;
                sl_hmap_link_t **l;
                snprintf(key, sizeof(key), "%x", k * 37);
                n = strlen(key);
                h = sl_hash(key, n);
                l = emap_link(&m, h, key, n);
                assert_ptr_equal(*l ? emap_entry(*l) : NULL, ref[k]);
                switch (what) {
                case 0:
                case 1: /* insert, or replace when there */
                        if (*l) {
                                ent_t *e = ent_new(key, n, op);
                                emap_replace(l, e);
                                free(ref[k]);
                                ref[k] = e;
                        } else {
                                ref[k] = ent_new(key, n, op);
                                if (what)
                                        emap_insert_at(&m, l, ref[k]);
                                else
                                        emap_insert(&m, h, ref[k]);
                                count++;
                        }
                        break;
                case 2: /* remove */
                        if (!*l)
                                break;
                        if (op % 2)
                                emap_unlink(&m, l);
                        else
                                emap_remove(&m, ref[k]);
                        free(ref[k]);
                        ref[k] = NULL;
                        count--;
                        break;
                default: /* look up */
                        if (ref[k])
                                assert_int_equal(
                                    emap_find(&m, h, key, n)->value,
                                    ref[k]->value);
                        break;
                }
                assert_int_equal(sl_hmap_count(&m), count);
                if (op % 97 == 0 || count < 40)
                        assert_int_equal(emap_verify(&m), 0);
        }
        assert_int_equal(emap_verify(&m), 0);
        free_all(&m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_basic),
            cmocka_unit_test(test_sizing),
            cmocka_unit_test(test_fixed_long_chains),
            cmocka_unit_test(test_key_eq),
            cmocka_unit_test(test_verify_catches),
            cmocka_unit_test(test_random_against_reference),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
