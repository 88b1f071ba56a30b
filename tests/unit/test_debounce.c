/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_debounce.c — unit tests for the debounce windows (debounce.c): each
 * flush rule, upsert and removal, batches cut at max_items and max_bytes,
 * batch id determinism, rebuild giving the same deadlines, the JSON and
 * protobuf encodings, and memory per pending item.
 */
#include <inttypes.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "debounce.h"
#include "sluice.pb-c.h"
#include "util.h"

#define T0 1700000000000LL

static sl_debounce_t *mk(int64_t idle, int64_t max_age, int64_t max_items,
                         int64_t max_bytes) {
        sl_debounce_params_t p = {idle, max_age, max_items, max_bytes, "pl"};
        return sl_debounce_new(&p);
}

static int up(sl_debounce_t *d, const char *g, const char *id,
              const char *payload, int64_t now, int64_t seq) {
        return sl_debounce_upsert(d, g, strlen(g), id, strlen(id), payload,
                                  strlen(payload), now, seq);
}

static sl_debounce_batch_t *take(sl_debounce_t *d, const char *g, int64_t now) {
        sl_debounce_batch_t *b = NULL;
        int r = sl_debounce_take(d, g, g ? strlen(g) : 0, now, &b);
        assert_true(r == 0 || r == 1);
        assert_true((r == 1) == (b != NULL));
        return b;
}

static void expect_ids(const sl_debounce_batch_t *b, const char *const *ids,
                       size_t n) {
        assert_int_equal(b->cnt, n);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(b->items[i].idlen, strlen(ids[i]));
                assert_memory_equal(b->items[i].id, ids[i], strlen(ids[i]));
        }
}

static void test_idle(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 10000, 1000, 1 << 20);
        static const char *const want[] = {"a", "b", "c"};

        up(d, "WH-42", "a", "1", T0, 10);
        up(d, "WH-42", "b", "2", T0 + 500, 11);
        up(d, "WH-42", "c", "3", T0 + 900, 12);
        assert_int_equal(sl_debounce_groups(d), 1);
        assert_int_equal(sl_debounce_items(d), 3);
        /* Payloads, ids and the group's key: what the input holds here. */
        assert_int_equal(sl_debounce_bytes(d), 3 + 3 + 5);
        /* Idle counts from the last update. */
        assert_int_equal(sl_debounce_next_due(d), T0 + 2900);
        assert_null(take(d, NULL, T0 + 2899));
        sl_debounce_batch_t *b = take(d, NULL, T0 + 2950);
        assert_non_null(b);
        expect_ids(b, want, 3);
        assert_int_equal(b->reason, SL_DEBOUNCE_IDLE);
        assert_string_equal(sl_debounce_reason_str(b->reason), "idle");
        assert_int_equal(b->due_ms, T0 + 2900);
        assert_int_equal(b->opened_ms, T0);
        assert_int_equal(b->flushed_ms, T0 + 2950);
        assert_int_equal(b->keylen, 5);
        assert_memory_equal(b->key, "WH-42", 5);
        assert_int_equal(strlen(b->id), SL_DEBOUNCE_ID_LEN);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_groups(d), 0);
        assert_int_equal(sl_debounce_items(d), 0);
        assert_int_equal(sl_debounce_bytes(d), 0);
        assert_int_equal(sl_debounce_next_due(d), INT64_MAX);
        assert_null(take(d, NULL, T0 + 100000));
        sl_debounce_destroy(d);
}

/* A trickle keeps the group busy: max_age flushes it. */
static void test_max_age(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 5000, 1000, 1 << 20);
        char id[16];
        int64_t now = T0;
        int batches = 0;

        for (int i = 0; i <= 30; i++, now += 500) {
                sl_debounce_batch_t *b;
                while ((b = take(d, NULL, now))) {
                        assert_int_equal(b->reason, SL_DEBOUNCE_MAX_AGE);
                        assert_int_equal(b->due_ms, b->opened_ms + 5000);
                        assert_int_equal(b->cnt, 10);
                        batches++;
                        sl_debounce_batch_free(b);
                }
                if (i == 30)
                        break;
                snprintf(id, sizeof(id), "o%d", i);
                up(d, "g", id, "x", now, i);
        }
        /* 15 s of items every 500 ms: flushed at 5, 10 and 15 s. */
        assert_int_equal(batches, 3);
        assert_int_equal(sl_debounce_items(d), 0);
        sl_debounce_destroy(d);
}

/* 120 items with max_items = 50: 50 and 50 at once, 20 on idle. */
static void test_max_items(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 30000, 50, 1 << 20);
        char id[16];
        int64_t seqs[3][2] = {{0}};
        size_t sizes[3] = {0};
        int n = 0;

        for (int i = 0; i < 120; i++) {
                sl_debounce_batch_t *b;
                snprintf(id, sizeof(id), "o%03d", i);
                up(d, "g", id, "x", T0 + i, 1000 + i);
                while ((b = take(d, "g", T0 + i))) {
                        assert_true(n < 2);
                        assert_int_equal(b->reason, SL_DEBOUNCE_MAX_ITEMS);
                        assert_int_equal(b->due_ms, T0 + i);
                        sizes[n] = b->cnt;
                        seqs[n][0] = b->items[0].seq;
                        seqs[n][1] = b->items[b->cnt - 1].seq;
                        n++;
                        sl_debounce_batch_free(b);
                }
        }
        assert_int_equal(n, 2);
        assert_int_equal(sl_debounce_items(d), 20);
        assert_null(take(d, NULL, T0 + 119 + 1999));
        sl_debounce_batch_t *b = take(d, NULL, T0 + 119 + 2000);
        assert_non_null(b);
        assert_int_equal(b->reason, SL_DEBOUNCE_IDLE);
        sizes[2] = b->cnt;
        seqs[2][0] = b->items[0].seq;
        seqs[2][1] = b->items[b->cnt - 1].seq;
        sl_debounce_batch_free(b);
        assert_int_equal(sizes[0], 50);
        assert_int_equal(sizes[1], 50);
        assert_int_equal(sizes[2], 20);
        assert_int_equal(seqs[0][0], 1000);
        assert_int_equal(seqs[0][1], 1049);
        assert_int_equal(seqs[1][0], 1050);
        assert_int_equal(seqs[1][1], 1099);
        assert_int_equal(seqs[2][0], 1100);
        assert_int_equal(seqs[2][1], 1119);
        assert_int_equal(sl_debounce_groups(d), 0);
        sl_debounce_destroy(d);
}

/* A group that is already over max_items (restored under a smaller limit)
 * flushes in batches of max_items until it is under. */
static void test_full_group_batches(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 30000, 50, 1 << 20);
        char id[16];
        size_t sizes[4] = {0};
        int n = 0;
        sl_debounce_batch_t *b;

        for (int i = 0; i < 120; i++) {
                snprintf(id, sizeof(id), "o%03d", i);
                assert_int_equal(sl_debounce_restore(d, "g", 1, id, strlen(id),
                                                     "x", 1, T0, T0 + i, i),
                                 0);
        }
        assert_int_equal(sl_debounce_next_due(d), T0 + 119);
        while ((b = take(d, NULL, T0 + 200))) {
                assert_true(n < 3);
                sizes[n] = b->cnt;
                assert_int_equal(b->reason, n < 2 ? SL_DEBOUNCE_MAX_ITEMS
                                                  : SL_DEBOUNCE_IDLE);
                n++;
                sl_debounce_batch_free(b);
                if (n == 2) {
                        /* The 20 left wait for their own deadline. */
                        assert_int_equal(sl_debounce_next_due(d),
                                         T0 + 119 + 2000);
                        assert_null(take(d, NULL, T0 + 200));
                        b = take(d, NULL, T0 + 119 + 2000);
                        assert_non_null(b);
                        sizes[n++] = b->cnt;
                        sl_debounce_batch_free(b);
                }
        }
        assert_int_equal(n, 3);
        assert_int_equal(sizes[0], 50);
        assert_int_equal(sizes[1], 50);
        assert_int_equal(sizes[2], 20);
        sl_debounce_destroy(d);
}

/* max_bytes: the group flushes when its payloads reach it; a batch never
 * holds more than max_bytes, except a single larger item. */
static void test_max_bytes(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 30000, 1000, 100);
        char payload[41];
        sl_debounce_batch_t *b;

        memset(payload, 'p', 40);
        payload[40] = '\0';
        up(d, "g", "a", payload, T0, 1);
        up(d, "g", "b", payload, T0 + 1, 2);
        assert_null(take(d, "g", T0 + 1));
        up(d, "g", "c", payload, T0 + 2, 3); /* 120 >= 100 */
        b = take(d, "g", T0 + 2);
        assert_non_null(b);
        assert_int_equal(b->reason, SL_DEBOUNCE_MAX_BYTES);
        assert_string_equal(sl_debounce_reason_str(b->reason), "max_bytes");
        assert_int_equal(b->cnt, 2); /* 80; a third would make 120 */
        assert_int_equal(b->bytes, 80);
        sl_debounce_batch_free(b);
        assert_null(take(d, "g", T0 + 2));
        assert_int_equal(sl_debounce_bytes(d), 40 + 1 + 1);

        /* An item larger than max_bytes goes alone. */
        char big[201];
        memset(big, 'B', 200);
        big[200] = '\0';
        up(d, "h", "big", big, T0 + 3, 4);
        b = take(d, "h", T0 + 3);
        assert_non_null(b);
        assert_int_equal(b->cnt, 1);
        assert_int_equal(b->reason, SL_DEBOUNCE_MAX_BYTES);
        sl_debounce_batch_free(b);

        /* Exactly max_bytes: one batch with all of it. */
        memset(payload, 'q', 40);
        payload[20] = '\0';
        up(d, "g", "d", payload, T0 + 4, 5); /* 40 + 20 */
        payload[20] = 'q';
        payload[40] = '\0';
        up(d, "g", "e", payload, T0 + 5, 6); /* + 40 = 100 */
        b = take(d, "g", T0 + 5);
        assert_non_null(b);
        assert_int_equal(b->cnt, 3);
        assert_int_equal(b->bytes, 100);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_groups(d), 0);
        sl_debounce_destroy(d);
}

static void test_upsert(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 10000, 1000, 1 << 20);
        sl_debounce_item_t it;
        sl_debounce_group_t g;

        assert_int_equal(up(d, "g", "A001", "{\"v\":1}", T0, 5), 0);
        assert_int_equal(up(d, "g", "B", "b", T0 + 10, 6), 0);
        assert_int_equal(up(d, "g", "A001", "{\"v\":2}", T0 + 100, 7), 1);
        assert_int_equal(
            up(d, "g", "A001", "{\"v\":3, \"x\": [1]}", T0 + 1000, 9), 1);
        assert_int_equal(sl_debounce_items(d), 2);
        assert_int_equal(sl_debounce_bytes(d), 17 + 1 + 4 + 1 + 1);
        assert_int_equal(sl_debounce_find(d, "g", 1, "A001", 4, &it), 1);
        assert_int_equal(it.first_seen_ms, T0);
        assert_int_equal(it.last_update_ms, T0 + 1000);
        assert_int_equal(it.seq, 5);
        assert_int_equal(it.payload_len, 17);
        assert_memory_equal(it.payload, "{\"v\":3, \"x\": [1]}", 17);
        assert_int_equal(sl_debounce_find(d, "g", 1, "nope", 4, NULL), 0);
        assert_int_equal(sl_debounce_find(d, "h", 1, "A001", 4, NULL), 0);
        assert_int_equal(sl_debounce_group(d, "g", 1, &g), 1);
        assert_int_equal(g.items, 2);
        assert_int_equal(g.opened_ms, T0);
        assert_int_equal(g.last_update_ms, T0 + 1000);
        assert_int_equal(g.due_ms, T0 + 3000);

        sl_debounce_batch_t *b = take(d, NULL, T0 + 3000);
        assert_non_null(b);
        assert_int_equal(b->cnt, 2);
        /* Arrival order is first-sighting order: A001 came first. */
        assert_memory_equal(b->items[0].id, "A001", 4);
        assert_int_equal(b->items[0].first_seen_ms, T0);
        assert_int_equal(b->items[0].last_update_ms, T0 + 1000);
        assert_memory_equal(b->items[0].payload, "{\"v\":3, \"x\": [1]}", 17);
        assert_memory_equal(b->items[1].id, "B", 1);
        sl_debounce_batch_free(b);
        sl_debounce_destroy(d);
}

/* The state remembers its last find for the upsert that follows: any
 * change in between (a removal, a batch, the group closing and opening
 * again, another item) must be seen by that upsert. */
static void test_find_then_change(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 10000, 1000, 1 << 20);
        sl_debounce_item_t it;
        sl_debounce_batch_t *b;

        /* Found, then removed: the upsert adds it again. */
        assert_int_equal(up(d, "g", "A", "a", T0, 1), 0);
        assert_int_equal(up(d, "g", "Z", "z", T0, 2), 0);
        assert_int_equal(sl_debounce_find(d, "g", 1, "A", 1, &it), 1);
        assert_int_equal(sl_debounce_remove(d, "g", 1, "A", 1), 1);
        assert_int_equal(up(d, "g", "A", "a2", T0 + 5, 3), 0);
        assert_int_equal(sl_debounce_find(d, "g", 1, "A", 1, &it), 1);
        assert_int_equal(it.first_seen_ms, T0 + 5);
        assert_int_equal(it.seq, 3);
        /* Not found, then added by another upsert: the second replaces. */
        assert_int_equal(sl_debounce_find(d, "g", 1, "B", 1, NULL), 0);
        assert_int_equal(up(d, "g", "B", "b", T0 + 6, 4), 0);
        assert_int_equal(up(d, "g", "B", "bb", T0 + 7, 5), 1);
        assert_int_equal(sl_debounce_items(d), 3);
        /* Found, then another item of the same group asked for. */
        assert_int_equal(sl_debounce_find(d, "g", 1, "B", 1, NULL), 1);
        assert_int_equal(up(d, "g", "C", "c", T0 + 8, 6), 0);
        assert_int_equal(sl_debounce_items(d), 4);
        /* Found, then the group flushed and closed: a new group. */
        assert_int_equal(sl_debounce_find(d, "g", 1, "A", 1, NULL), 1);
        while (sl_debounce_take_requested(d, "g", 1, T0 + 9, &b))
                sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_groups(d), 0);
        assert_int_equal(up(d, "g", "A", "a3", T0 + 10, 7), 0);
        assert_int_equal(sl_debounce_find(d, "g", 1, "A", 1, &it), 1);
        assert_int_equal(it.first_seen_ms, T0 + 10);
        assert_int_equal(it.seq, 7);
        /* Found in one group, upserted in another. */
        assert_int_equal(up(d, "h", "A", "x", T0 + 11, 8), 0);
        assert_int_equal(sl_debounce_items(d), 2);
        assert_int_equal(sl_debounce_find(d, "h", 1, "A", 1, &it), 1);
        assert_int_equal(it.seq, 8);
        sl_debounce_destroy(d);
}

/* A group holding more ids than its filter tells apart still finds each
 * of them (the filter only ever says "maybe" more often). */
static void test_many_ids_one_group(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 10000, 100000, 1 << 30);
        char id[16];

        for (int round = 0; round < 2; round++)
                for (int i = 0; i < 3000; i++) {
                        snprintf(id, sizeof(id), "id-%d", i);
                        assert_int_equal(up(d, "g", id, "p", T0 + round, i),
                                         round);
                }
        assert_int_equal(sl_debounce_items(d), 3000);
        for (int i = 0; i < 3000; i += 2) {
                snprintf(id, sizeof(id), "id-%d", i);
                assert_int_equal(sl_debounce_remove(d, "g", 1, id, strlen(id)),
                                 1);
        }
        for (int i = 0; i < 3000; i++) {
                snprintf(id, sizeof(id), "id-%d", i);
                assert_int_equal(
                    sl_debounce_find(d, "g", 1, id, strlen(id), NULL), i % 2);
        }
        sl_debounce_destroy(d);
}

static void test_remove(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 10000, 1000, 1 << 20);
        static const char *const want[] = {"a", "c"};

        up(d, "g", "a", "1", T0, 1);
        up(d, "g", "b", "22", T0 + 100, 2);
        up(d, "g", "c", "3", T0 + 50, 3);
        assert_int_equal(sl_debounce_next_due(d), T0 + 2100);
        assert_int_equal(sl_debounce_remove(d, "g", 1, "b", 1), 1);
        assert_int_equal(sl_debounce_remove(d, "g", 1, "b", 1), 0);
        assert_int_equal(sl_debounce_remove(d, "x", 1, "a", 1), 0);
        assert_int_equal(sl_debounce_items(d), 2);
        assert_int_equal(sl_debounce_bytes(d), 2 + 2 + 1);
        /* The deadline follows the remaining items. */
        assert_int_equal(sl_debounce_next_due(d), T0 + 2050);
        sl_debounce_batch_t *b = take(d, NULL, T0 + 2050);
        expect_ids(b, want, 2);
        sl_debounce_batch_free(b);

        /* Removing every item closes the group without a batch. */
        up(d, "h", "x", "1", T0, 1);
        up(d, "h", "y", "1", T0, 2);
        assert_int_equal(sl_debounce_remove(d, "h", 1, "x", 1), 1);
        assert_int_equal(sl_debounce_remove(d, "h", 1, "y", 1), 1);
        assert_int_equal(sl_debounce_groups(d), 0);
        assert_null(take(d, NULL, T0 + 1000000));
        sl_debounce_destroy(d);
}

/* Groups flush in deadline order; each batch holds only its group. */
static void test_groups_order(void **state) {
        (void)state;
        sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
        sl_debounce_batch_t *b;

        up(d, "late", "1", "x", T0 + 500, 1);
        up(d, "early", "2", "x", T0, 2);
        up(d, "mid", "3", "x", T0 + 200, 3);
        up(d, "early", "4", "x", T0 + 100, 4);
        assert_int_equal(sl_debounce_groups(d), 3);
        assert_int_equal(sl_debounce_oldest(d), T0);
        b = take(d, NULL, T0 + 5000);
        assert_memory_equal(b->key, "early", 5);
        assert_int_equal(b->cnt, 2);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_oldest(d), T0 + 200);
        b = take(d, NULL, T0 + 5000);
        assert_memory_equal(b->key, "mid", 3);
        sl_debounce_batch_free(b);
        b = take(d, NULL, T0 + 5000);
        assert_memory_equal(b->key, "late", 4);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_oldest(d), INT64_MAX);
        sl_debounce_destroy(d);
}

/* Same group and items (ids and seqs) => same id; anything else differs. */
static void test_batch_id(void **state) {
        (void)state;
        char ids[6][SL_DEBOUNCE_ID_LEN + 1];
        sl_debounce_batch_t *b;

        for (int run = 0; run < 2; run++) {
                sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
                /* Different times and payloads: the id ignores them. */
                up(d, "g", "a", run ? "p" : "q", T0 + run * 777, 10);
                up(d, "g", "b", "x", T0 + run * 777, 11);
                b = take(d, NULL, T0 + 100000);
                memcpy(ids[run], b->id, sizeof(ids[run]));
                sl_debounce_batch_free(b);
                sl_debounce_destroy(d);
        }
        assert_string_equal(ids[0], ids[1]);

        sl_debounce_item_t items[2] = {
            {"a", 1, "p", 1, 0, 0, 10},
            {"b", 1, "x", 1, 0, 0, 11},
        };
        sl_debounce_batch_id("pl", "g", 1, items, 2, ids[2]);
        assert_string_equal(ids[0], ids[2]);
        items[1].seq = 12; /* another sighting of b */
        sl_debounce_batch_id("pl", "g", 1, items, 2, ids[3]);
        sl_debounce_batch_id("pl", "h", 1, items, 2, ids[4]);
        sl_debounce_batch_id("other", "g", 1, items, 2, ids[5]);
        for (int i = 2; i < 6; i++)
                for (int j = i + 1; j < 6; j++)
                        assert_string_not_equal(ids[i], ids[j]);
        for (int i = 0; i < SL_DEBOUNCE_ID_LEN; i++)
                assert_non_null(strchr("0123456789abcdef", ids[0][i]));
        /* Fixed layout: the id of this input never changes (downstream
         * dedupes on it across versions). */
        sl_debounce_batch_id("", "", 0, NULL, 0, ids[4]);
        sl_debounce_batch_id("", "", 0, NULL, 0, ids[5]);
        assert_string_equal(ids[4], ids[5]);
}

/* A batch the output refuses as too large splits in two halves, each with
 * the id of its own items. */
static void test_split(void **state) {
        (void)state;
        sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
        sl_debounce_batch_t *b, *c, *one, *none;
        char id[SL_DEBOUNCE_ID_LEN + 1];
        static const char *const first[] = {"a", "b"};
        static const char *const second[] = {"c", "d", "e"};

        up(d, "g", "a", "1", T0 + 5, 1);
        up(d, "g", "b", "22", T0 + 1, 2);
        up(d, "g", "c", "333", T0 + 2, 3);
        up(d, "g", "d", "4444", T0 + 3, 4);
        up(d, "g", "e", "55555", T0 + 4, 5);
        b = take(d, NULL, T0 + 9000);
        assert_int_equal(sl_debounce_batch_split(d, b, &c), 0);
        expect_ids(b, first, 2);
        expect_ids(c, second, 3);
        assert_int_equal(b->bytes, 3);
        assert_int_equal(c->bytes, 12);
        assert_int_equal(b->opened_ms, T0 + 1);
        assert_int_equal(c->opened_ms, T0 + 2);
        assert_int_equal(c->reason, b->reason);
        assert_int_equal(c->flushed_ms, T0 + 9000);
        assert_memory_equal(c->key, "g", 2);
        sl_debounce_batch_id("pl", "g", 1, b->items, b->cnt, id);
        assert_string_equal(b->id, id);
        sl_debounce_batch_id("pl", "g", 1, c->items, c->cnt, id);
        assert_string_equal(c->id, id);
        assert_string_not_equal(b->id, c->id);
        /* Down to one item: no further split. */
        assert_int_equal(sl_debounce_batch_split(d, b, &one), 0);
        assert_int_equal(b->cnt, 1);
        assert_int_equal(one->cnt, 1);
        assert_int_equal(sl_debounce_batch_split(d, b, &none), -1);
        assert_null(none);
        assert_int_equal(b->cnt, 1);
        sl_debounce_batch_free(one);
        sl_debounce_batch_free(b);
        sl_debounce_batch_free(c);
        sl_debounce_destroy(d);
}

/* Rebuild from the item records gives the same deadlines and batch. */
static void test_restore_same_state(void **state) {
        (void)state;
        sl_debounce_t *a = mk(2000, 5000, 1000, 1 << 20);
        sl_debounce_t *b = mk(2000, 5000, 1000, 1 << 20);
        sl_debounce_item_t it;
        sl_debounce_batch_t *ba, *bb;
        const char *ids[] = {"x", "y", "z"};

        up(a, "g", "x", "1", T0, 1);
        up(a, "g", "y", "2", T0 + 1000, 2);
        up(a, "g", "z", "3", T0 + 1500, 3);
        up(a, "g", "y", "22", T0 + 1800, 4);
        sl_debounce_remove(a, "g", 1, "z", 1);
        for (int i = 0; i < 3; i++) {
                if (!sl_debounce_find(a, "g", 1, ids[i], 1, &it))
                        continue;
                sl_debounce_restore(b, "g", 1, it.id, it.idlen, it.payload,
                                    it.payload_len, it.first_seen_ms,
                                    it.last_update_ms, it.seq);
        }
        assert_int_equal(sl_debounce_next_due(a), sl_debounce_next_due(b));
        assert_int_equal(sl_debounce_next_due(a), T0 + 3800);
        ba = take(a, NULL, T0 + 9999);
        bb = take(b, NULL, T0 + 9999);
        assert_string_equal(ba->id, bb->id);
        assert_int_equal(ba->cnt, 2);
        assert_int_equal(bb->cnt, 2);
        assert_int_equal(ba->opened_ms, bb->opened_ms);
        sl_debounce_batch_free(ba);
        sl_debounce_batch_free(bb);

        /* A later record for the same item replaces it, times included. */
        sl_debounce_restore(b, "g", 1, "q", 1, "1", 1, T0, T0, 1);
        sl_debounce_restore(b, "g", 1, "q", 1, "2", 1, T0 + 10, T0 + 20, 7);
        assert_int_equal(sl_debounce_find(b, "g", 1, "q", 1, &it), 1);
        assert_int_equal(it.first_seen_ms, T0 + 10);
        assert_int_equal(it.seq, 7);
        assert_int_equal(sl_debounce_next_due(b), T0 + 2020);
        sl_debounce_destroy(a);
        sl_debounce_destroy(b);
}

static void item_cb(const sl_debounce_item_t *it, void *opaque) {
        int64_t *last = opaque;
        assert_true(it->seq > *last);
        *last = it->seq;
}

static void group_cb(const sl_debounce_group_t *g, void *opaque) {
        size_t *n = opaque;
        assert_true(g->items > 0);
        *n += g->items;
}

static void test_foreach(void **state) {
        (void)state;
        sl_debounce_t *d = mk(2000, 5000, 1000, 1 << 20);
        char id[16];
        int64_t last = -1;
        size_t n = 0;

        for (int i = 0; i < 100; i++) {
                snprintf(id, sizeof(id), "%d", (i * 37) % 100);
                up(d, i % 2 ? "odd" : "even", id, "x", T0 + i, 1000 - i * 3);
        }
        sl_debounce_foreach_group(d, group_cb, &n);
        assert_int_equal(n, 100);
        last = INT64_MIN;
        assert_int_equal(sl_debounce_foreach_item(d, "odd", 3, item_cb, &last),
                         50);
        assert_int_equal(sl_debounce_foreach_item(d, "none", 4, item_cb, &last),
                         0);
        sl_debounce_destroy(d);
}

static json_t *json_of(const sl_debounce_batch_t *b) {
        size_t len;
        char *s = sl_debounce_batch_json(b, &len);
        json_error_t err;
        json_t *j = json_loadb(s, len, JSON_DECODE_INT_AS_REAL, &err);
        if (!j)
                fail_msg("invalid JSON (%s): %.*s", err.text, (int)len, s);
        free(s);
        return j;
}

static void test_json(void **state) {
        (void)state;
        sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
        sl_debounce_batch_t *b;
        json_t *j, *items, *it;

        up(d, "WH-\"42\"", "obj", " {\"sku\":\"X\",\"qty\":2}\n", T0, 1);
        up(d, "WH-\"42\"", "num", "12345678901234567890123", T0 + 1, 2);
        up(d, "WH-\"42\"", "text", "not json: \"quoted\"\n\ttab", T0 + 2, 3);
        sl_debounce_upsert(d, "WH-\"42\"", 7, "bin", 3, "\xff\x00\x01", 3,
                           T0 + 3, 4);
        up(d, "WH-\"42\"", "ünï", "", T0 + 4, 5);
        b = take(d, NULL, T0 + 5000);
        j = json_of(b);
        assert_string_equal(json_string_value(json_object_get(j, "batch_id")),
                            b->id);
        assert_string_equal(json_string_value(json_object_get(j, "key")),
                            "WH-\"42\"");
        assert_string_equal(json_string_value(json_object_get(j, "reason")),
                            "idle");
        assert_int_equal(
            (int64_t)json_number_value(json_object_get(j, "opened_at")), T0);
        assert_int_equal(
            (int64_t)json_number_value(json_object_get(j, "flushed_at")),
            T0 + 5000);
        items = json_object_get(j, "items");
        assert_int_equal(json_array_size(items), 5);

        it = json_array_get(items, 0);
        assert_string_equal(json_string_value(json_object_get(it, "id")),
                            "obj");
        assert_true(json_is_object(json_object_get(it, "payload")));
        assert_int_equal((int64_t)json_number_value(json_object_get(
                             json_object_get(it, "payload"), "qty")),
                         2);
        assert_int_equal(
            (int64_t)json_number_value(json_object_get(it, "first_seen")), T0);
        assert_int_equal(
            (int64_t)json_number_value(json_object_get(it, "last_update")), T0);
        assert_null(json_object_get(it, "payload_encoding"));

        it = json_array_get(items, 1);
        assert_true(json_is_number(json_object_get(it, "payload")));

        it = json_array_get(items, 2);
        assert_string_equal(json_string_value(json_object_get(it, "payload")),
                            "not json: \"quoted\"\n\ttab");

        it = json_array_get(items, 3);
        assert_string_equal(json_string_value(json_object_get(it, "payload")),
                            "/wAB");
        assert_string_equal(
            json_string_value(json_object_get(it, "payload_encoding")),
            "base64");

        it = json_array_get(items, 4);
        assert_string_equal(json_string_value(json_object_get(it, "id")),
                            "ünï");
        assert_string_equal(json_string_value(json_object_get(it, "payload")),
                            "");
        json_decref(j);
        sl_debounce_batch_free(b);
        sl_debounce_destroy(d);
}

/* Which payloads are embedded as JSON: every kind of JSON text (the
 * first-byte check before jansson must let each through), and text that
 * only starts like one stays a string. */
static void test_json_payload_kinds(void **state) {
        (void)state;
        static const struct {
                const char *payload;
                int type; /* JSON_* of the embedded payload */
        } cases[] = {
            {"\"a \\\"string\\\"\"", JSON_STRING},
            {"[1,2]", JSON_ARRAY},
            {"-1.5", JSON_REAL},
            {"true", JSON_TRUE},
            {"false", JSON_FALSE},
            {"null", JSON_NULL},
            {"7", JSON_REAL},
            {"nope", JSON_STRING},
            {"tru", JSON_STRING},
            {"{\"a\":", JSON_STRING},
            {"x{}", JSON_STRING},
            {"  [ ] ", JSON_ARRAY},
        };
        sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
        sl_debounce_batch_t *b;
        json_t *j, *items;
        char id[8];
        size_t n = sizeof(cases) / sizeof(cases[0]);

        for (size_t i = 0; i < n; i++) {
                snprintf(id, sizeof(id), "i%02zu", i);
                up(d, "G", id, cases[i].payload, T0 + (int64_t)i, (int64_t)i);
        }
        b = take(d, NULL, T0 + 5000);
        j = json_of(b);
        items = json_object_get(j, "items");
        assert_int_equal(json_array_size(items), n);
        for (size_t i = 0; i < n; i++) {
                json_t *p =
                    json_object_get(json_array_get(items, i), "payload");
                assert_non_null(p);
                if ((int)json_typeof(p) != cases[i].type)
                        fail_msg("payload %s: JSON type %d, want %d",
                                 cases[i].payload, json_typeof(p),
                                 cases[i].type);
                if (cases[i].type == JSON_STRING && cases[i].payload[0] != '"')
                        assert_string_equal(json_string_value(p),
                                            cases[i].payload);
        }
        json_decref(j);
        sl_debounce_batch_free(b);
        sl_debounce_destroy(d);
}

/* The JSON string and UTF-8 checks go eight bytes at a time: each byte
 * that needs care, at every position of a word and past the last whole
 * word, comes out as it must (verbatim, escaped, or base64 when the
 * payload is not UTF-8). */
/* The hand-packed changelog value is byte for byte what protobuf-c packs,
 * for zero, small, varint-boundary and negative times and payload lengths
 * around the length's varint boundaries. */
static void test_item_pack(void **state) {
        static const int64_t times[] = {0,         1,        127,           128,
                                        16383,     16384,    1700000000123, -1,
                                        INT64_MIN, INT64_MAX};
        static const size_t lens[] = {0, 1, 100, 127, 128, 16383, 16384};
        size_t nt = sizeof(times) / sizeof(times[0]);
        uint8_t *payload = malloc(16384), *mine, *theirs;
        (void)state;
        for (size_t i = 0; i < 16384; i++)
                payload[i] = (uint8_t)(i * 7);
        mine = malloc(16384 + SL_DEBOUNCE_ITEM_PACK_EXTRA);
        theirs = malloc(16384 + SL_DEBOUNCE_ITEM_PACK_EXTRA);
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
                for (size_t k = 0; k < nt * nt; k++) {
                        Sluice__V1__DebounceItem rec =
                            SLUICE__V1__DEBOUNCE_ITEM__INIT;
                        size_t n, want;
                        Sluice__V1__DebounceItem *back;
                        rec.payload.data = payload;
                        rec.payload.len = lens[l];
                        rec.first_seen_ms = times[k % nt];
                        rec.last_update_ms = times[k / nt];
                        rec.seq = times[(k + 3) % nt];
                        rec.group_opened_ms = times[(k / nt + 5) % nt];
                        want = sluice__v1__debounce_item__get_packed_size(&rec);
                        assert_true(want <=
                                    lens[l] + SL_DEBOUNCE_ITEM_PACK_EXTRA);
                        sluice__v1__debounce_item__pack(&rec, theirs);
                        n = sl_debounce_item_pack(payload, lens[l],
                                                  rec.first_seen_ms,
                                                  rec.last_update_ms, rec.seq,
                                                  rec.group_opened_ms, mine);
                        assert_int_equal(n, want);
                        assert_memory_equal(mine, theirs, n);
                        back = sluice__v1__debounce_item__unpack(NULL, n, mine);
                        assert_non_null(back);
                        assert_int_equal(back->payload.len, lens[l]);
                        assert_true(back->seq == rec.seq);
                        assert_true(back->group_opened_ms ==
                                    rec.group_opened_ms);
                        sluice__v1__debounce_item__free_unpacked(back, NULL);
                }
        }
        free(payload);
        free(mine);
        free(theirs);
}

/* The batch's times are written two digits at a time: every digit count,
 * both signs, and the digit pairs at each end come out as the number. */
static void test_json_times(void **state) {
        static const int64_t times[] = {
            0,   1,   9,    10,   11,     99,           100,
            101, 999, 1000, 1009, 12345,  9876543210,   T0,
            -1,  -9,  -10,  -100, -12345, INT64_MAX / 4};
        (void)state;
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
                sl_debounce_t *d = mk(1000, 10000, 10, 1 << 20);
                sl_debounce_batch_t *b;
                json_error_t err;
                json_t *j, *it;
                size_t len;
                char *js;

                assert_int_equal(up(d, "G", "i", "x", times[i], 1), 0);
                b = take(d, NULL, times[i] + 5000);
                assert_non_null(b);
                js = sl_debounce_batch_json(b, &len);
                j = json_loadb(js, len, 0, &err);
                if (!j)
                        fail_msg("%" PRId64 ": invalid JSON (%s)", times[i],
                                 err.text);
                it = json_array_get(json_object_get(j, "items"), 0);
                assert_true(json_integer_value(
                                json_object_get(j, "opened_at")) == times[i]);
                assert_true(json_integer_value(json_object_get(
                                j, "flushed_at")) == times[i] + 5000);
                assert_true(json_integer_value(
                                json_object_get(it, "first_seen")) == times[i]);
                assert_true(json_integer_value(json_object_get(
                                it, "last_update")) == times[i]);
                json_decref(j);
                free(js);
                sl_debounce_batch_free(b);
                sl_debounce_destroy(d);
        }
}

static void test_json_string_words(void **state) {
        (void)state;
        static const struct {
                const char *s;
                size_t len;
                int utf8;
        } special[] = {
            {"\"", 1, 1},   {"\\", 1, 1},       {"\n", 1, 1},
            {"\x01", 1, 1}, {"\x1f", 1, 1},     {"\0", 1, 1},
            {"\x7f", 1, 1}, {"\xc3\xa9", 2, 1}, {"\xe2\x82\xac", 3, 1},
            {"\xff", 1, 0}, {"\xc3", 1, 0}, /* truncated */
        };
        char buf[32];

        for (size_t len = 1; len <= 24; len++) {
                for (size_t k = 0; k < sizeof(special) / sizeof(special[0]);
                     k++) {
                        size_t sl = special[k].len;
                        for (size_t pos = 0; pos + sl <= len; pos++) {
                                sl_debounce_t *d = mk(1000, 10000, 10, 1 << 20);
                                sl_debounce_batch_t *b;
                                json_error_t err;
                                json_t *j, *it, *pl;
                                size_t jlen;
                                char *js;

                                memset(buf, 'a', len);
                                memcpy(buf + pos, special[k].s, sl);
                                assert_int_equal(sl_debounce_upsert(d, "G", 1,
                                                                    "i", 1, buf,
                                                                    len, T0, 1),
                                                 0);
                                b = take(d, NULL, T0 + 5000);
                                js = sl_debounce_batch_json(b, &jlen);
                                j = json_loadb(js, jlen,
                                               JSON_ALLOW_NUL |
                                                   JSON_DECODE_INT_AS_REAL,
                                               &err);
                                if (!j)
                                        fail_msg("len %zu pos %zu case %zu: "
                                                 "invalid JSON (%s)",
                                                 len, pos, k, err.text);
                                it = json_array_get(json_object_get(j, "items"),
                                                    0);
                                pl = json_object_get(it, "payload");
                                assert_true(json_is_string(pl));
                                if (special[k].utf8) {
                                        assert_null(json_object_get(
                                            it, "payload_encoding"));
                                        assert_int_equal(json_string_length(pl),
                                                         len);
                                        assert_memory_equal(
                                            json_string_value(pl), buf, len);
                                } else {
                                        assert_non_null(json_object_get(
                                            it, "payload_encoding"));
                                }
                                assert_int_equal(sl_debounce_text_ok(buf, len),
                                                 special[k].utf8 &&
                                                     !memchr(buf, 0, len));
                                json_decref(j);
                                free(js);
                                sl_debounce_batch_free(b);
                                sl_debounce_destroy(d);
                        }
                }
        }
}

static void test_protobuf(void **state) {
        (void)state;
        sl_debounce_t *d = mk(1000, 10000, 1000, 1 << 20);
        sl_debounce_batch_t *b;
        Sluice__V1__Batch *m;
        uint8_t *buf;
        size_t len;

        up(d, "WH-42", "A1", "one", T0, 1);
        up(d, "WH-42", "A2", "two", T0 + 7, 2);
        b = take(d, NULL, T0 + 5000);
        buf = sl_debounce_batch_protobuf(b, &len);
        m = sluice__v1__batch__unpack(NULL, len, buf);
        assert_non_null(m);
        assert_string_equal(m->batch_id, b->id);
        assert_int_equal(m->key.len, 5);
        assert_memory_equal(m->key.data, "WH-42", 5);
        assert_string_equal(m->reason, "idle");
        assert_int_equal(m->opened_at_ms, T0);
        assert_int_equal(m->flushed_at_ms, T0 + 5000);
        assert_int_equal(m->n_items, 2);
        assert_string_equal(m->items[1]->id, "A2");
        assert_int_equal(m->items[1]->payload.len, 3);
        assert_memory_equal(m->items[1]->payload.data, "two", 3);
        assert_int_equal(m->items[1]->first_seen_ms, T0 + 7);
        assert_int_equal(m->items[1]->last_update_ms, T0 + 7);
        sluice__v1__batch__free_unpacked(m, NULL);
        free(buf);
        sl_debounce_batch_free(b);
        sl_debounce_destroy(d);
}

/* Every reason an input record is refused for, and the two verbs. */
static void test_check(void **state) {
        static const struct {
                const char *key;
                int nids;
                const char *id;
                size_t idlen;
                int null_value;
                size_t len;
                sl_debounce_verb_t verb;
                const char *reason;
        } cases[] = {
            {NULL, 0, NULL, 0, 0, 1, SL_DEBOUNCE_REFUSE, "missing-key"},
            {"", 0, NULL, 0, 0, 1, SL_DEBOUNCE_REFUSE, "missing-key"},
            {"\xff", 0, NULL, 0, 0, 1, SL_DEBOUNCE_REFUSE, "bad-key"},
            {"g", 2, "o", 1, 0, 1, SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, NULL, 0, 0, 1, SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "", 0, 0, 1, SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "o\x00", 2, 0, 1, SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "o", SL_DEBOUNCE_MAX_ID + 1, 0, 1, SL_DEBOUNCE_REFUSE,
             "bad-header"},
            {"g", 0, NULL, 0, 1, 0, SL_DEBOUNCE_REFUSE, "missing-item"},
            {"g", 0, NULL, 0, 0, 101, SL_DEBOUNCE_REFUSE, "oversize"},
            /* The key counts too: 1 + 100 over 100. */
            {"g", 0, NULL, 0, 0, 100, SL_DEBOUNCE_REFUSE, "oversize"},
            {"g", 1, "o", 1, 1, 0, SL_DEBOUNCE_REMOVE, NULL},
            {"g", 1, "o", 1, 0, 99, SL_DEBOUNCE_UPSERT, NULL},
            {"g", 0, NULL, 0, 0, 0, SL_DEBOUNCE_UPSERT, NULL},
        };
        static char long_id[SL_DEBOUNCE_MAX_ID + 1];
        (void)state;
        memset(long_id, 'x', sizeof(long_id));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *reason = NULL, *id = cases[i].id;
                char detail[128] = "";
                sl_debounce_verb_t v;
                if (cases[i].idlen > SL_DEBOUNCE_MAX_ID)
                        id = long_id;
                v = sl_debounce_check(
                    cases[i].key, cases[i].key ? strlen(cases[i].key) : 0,
                    cases[i].nids, id, cases[i].idlen, cases[i].null_value,
                    cases[i].len, 100, &reason, detail, sizeof(detail));
                if (v != cases[i].verb)
                        fail_msg("case %zu: verb %d, want %d", i, (int)v,
                                 (int)cases[i].verb);
                if (cases[i].reason) {
                        assert_string_equal(reason, cases[i].reason);
                        assert_true(detail[0] != '\0');
                }
        }
}

/* A requested flush takes the whole group before any deadline, cut into
 * batches of max_items, reason "requested", due at now; the batch ids are
 * those of the same items flushed by a deadline.  An unopened group gives
 * nothing. */
static void test_take_requested(void **state) {
        static const char *const first[] = {"a", "b"}, *const rest[] = {"c"};
        sl_debounce_t *d = mk(2000, 10000, 2, 1 << 20);
        sl_debounce_t *ref = mk(2000, 10000, 2, 1 << 20);
        sl_debounce_batch_t *b, *r;
        (void)state;

        assert_string_equal(sl_debounce_reason_str(SL_DEBOUNCE_REQUESTED),
                            "requested");
        up(d, "G", "a", "1", T0, 10);
        assert_null(take(d, "G", T0 + 100)); /* not due */
        assert_int_equal(sl_debounce_take_requested(d, "G", 1, T0 + 100, &b),
                         1);
        expect_ids(b, first, 1);
        assert_int_equal(b->reason, SL_DEBOUNCE_REQUESTED);
        assert_int_equal(b->due_ms, T0 + 100);
        assert_int_equal(b->flushed_ms, T0 + 100);
        assert_int_equal(b->opened_ms, T0);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_groups(d), 0);
        assert_int_equal(sl_debounce_take_requested(d, "G", 1, T0 + 100, &b),
                         0);
        assert_null(b);

        /* Three items, max_items 2: [a b], [c]. */
        for (int i = 0; i < 3; i++) {
                char id[2] = {(char)('a' + i), 0};
                up(d, "G", id, "x", T0 + i, 20 + i);
                up(ref, "G", id, "x", T0 + i, 20 + i);
        }
        /* (max_items 2: the first two made the group full at once.) */
        assert_int_equal(sl_debounce_take_requested(d, "G", 1, T0 + 5, &b), 1);
        expect_ids(b, first, 2);
        r = take(ref, "G", T0 + 5);
        assert_non_null(r);
        assert_string_equal(b->id, r->id);
        sl_debounce_batch_free(b);
        sl_debounce_batch_free(r);
        assert_int_equal(sl_debounce_take_requested(d, "G", 1, T0 + 5, &b), 1);
        expect_ids(b, rest, 1);
        assert_int_equal(b->reason, SL_DEBOUNCE_REQUESTED);
        sl_debounce_batch_free(b);
        assert_int_equal(sl_debounce_items(d), 0);
        assert_int_equal(sl_debounce_bytes(d), 0);
        assert_int_equal(sl_debounce_groups(d), 0);
        assert_int_equal(sl_debounce_next_due(d), INT64_MAX);
        sl_debounce_destroy(d);
        sl_debounce_destroy(ref);
}

/* The JSON of a requested batch says so. */
static void test_json_requested(void **state) {
        sl_debounce_t *d = mk(2000, 10000, 10, 1 << 20);
        sl_debounce_batch_t *b;
        json_t *j;
        size_t len;
        char *s;
        (void)state;

        up(d, "G", "a", "{}", T0, 1);
        assert_int_equal(sl_debounce_take_requested(d, "G", 1, T0 + 7, &b), 1);
        s = sl_debounce_batch_json(b, &len);
        j = json_loadb(s, len, 0, NULL);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "reason")),
                            "requested");
        assert_int_equal(json_integer_value(json_object_get(j, "flushed_at")),
                         T0 + 7);
        json_decref(j);
        free(s);
        sl_debounce_batch_free(b);
        sl_debounce_destroy(d);
}

/* Control records: only "flush", once, with a good group key. */
static void test_check_control(void **state) {
        static const struct {
                const char *key;
                int nctl;
                const char *ctl;
                sl_debounce_verb_t verb;
                const char *reason;
        } cases[] = {
            {"g", 1, "flush", SL_DEBOUNCE_FLUSH, NULL},
            {NULL, 1, "flush", SL_DEBOUNCE_REFUSE, "missing-key"},
            {"a\xff", 1, "flush", SL_DEBOUNCE_REFUSE, "bad-key"},
            {"g", 2, "flush", SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, NULL, SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "", SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "Flush", SL_DEBOUNCE_REFUSE, "bad-header"},
            {"g", 1, "flushx", SL_DEBOUNCE_REFUSE, "bad-header"},
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *reason = NULL;
                char detail[128] = "";
                sl_debounce_verb_t v = sl_debounce_check_control(
                    cases[i].key, cases[i].key ? strlen(cases[i].key) : 0,
                    cases[i].nctl, cases[i].ctl,
                    cases[i].ctl ? strlen(cases[i].ctl) : 0, &reason, detail,
                    sizeof(detail));
                if (v != cases[i].verb)
                        fail_msg("case %zu: verb %d, want %d", i, (int)v,
                                 (int)cases[i].verb);
                if (cases[i].reason) {
                        assert_string_equal(reason, cases[i].reason);
                        assert_true(detail[0] != '\0');
                }
        }
}

static void test_text_ok(void **state) {
        (void)state;
        assert_true(sl_debounce_text_ok("WH-42", 5));
        assert_true(sl_debounce_text_ok("", 0));
        assert_true(
            sl_debounce_text_ok("\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80", 9));
        assert_false(sl_debounce_text_ok("a\0b", 3));
        assert_false(sl_debounce_text_ok("\xff", 1));
        assert_false(sl_debounce_text_ok("\xc3", 1));         /* truncated */
        assert_false(sl_debounce_text_ok("\xc0\xaf", 2));     /* overlong */
        assert_false(sl_debounce_text_ok("\xed\xa0\x80", 3)); /* surrogate */
        assert_false(sl_debounce_text_ok("\xf4\x90\x80\x80", 4));
}

/*
 * Memory per pending item beyond its id and payload, measured with
 * mallinfo2() at 200k items (16-byte ids, 8-byte payloads) in 1,000 groups,
 * sealed every 1,000 items.
 */
static void test_memory_per_item(void **state) {
        (void)state;
        const size_t n = 200000, groups = 1000, idlen = 16, plen = 8;
        struct mallinfo2 before, after;
        sl_debounce_t *d;
        char id[32], g[32];

        before = mallinfo2();
        d = mk(1000, 10000, 1000000, 1LL << 40);
        for (size_t i = 0; i < n; i++) {
                snprintf(id, sizeof(id), "item-%011zu", i);
                snprintf(g, sizeof(g), "group-%zu", i % groups);
                assert_int_equal(
                    sl_debounce_upsert(d, g, strlen(g), id, idlen, "payload!",
                                       plen, T0 + (int64_t)i, (int64_t)i),
                    0);
                /* A commit every 1,000 records seals them into chunks
                 * (the group's list of chunk numbers is part of the
                 * cost). */
                if (i % 1000 == 999)
                        assert_true(sl_debounce_seal(d) >= 0);
        }
        after = mallinfo2();
        size_t used =
            (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
        if (used == 0) {
                print_message("memory: allocator reports no usage, skipped\n");
                sl_debounce_destroy(d);
                skip();
        }
        double per = (double)used / (double)n;
        double beyond = per - (double)(idlen + plen);
        print_message("memory: %.1f bytes per item at %zu items in %zu groups "
                      "(%.1f beyond the %zu-byte id and %zu-byte payload)\n",
                      per, n, groups, beyond, idlen, plen);
        assert_true(beyond <= 112.0);
        sl_debounce_destroy(d);
}

/* ------------------------------------------------------------------ */
/* The changelog the state writes (debounce.h, THE CHANGELOG): at every  */
/* seal, the records written so far rebuild the very state that wrote   */
/* them, read as they are, compacted, or compacted up to any point.     */

typedef struct logrec_s {
        char *key, *val; /* val NULL: tombstone */
        size_t keylen, len;
} logrec_t;

typedef struct clog_s {
        logrec_t *v;
        size_t n, cap;
        size_t refuse_at;   /* refuse the must-not write with this number */
        size_t refuse_over; /* refuse must-not values longer than this */
        size_t writes, dropped;
} clog_t;

static int clog_write(void *opaque, const void *key, size_t keylen,
                      const void *value, size_t len, int64_t seq, int must) {
        clog_t *c = opaque;
        logrec_t *r;
        (void)seq;
        c->writes++;
        if (!must && c->refuse_at && c->writes == c->refuse_at)
                return -10; /* as Kafka's MSG_SIZE_TOO_LARGE */
        if (!must && c->refuse_over && value && len > c->refuse_over)
                return -10;
        if (c->n == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 256;
                c->v = realloc(c->v, c->cap * sizeof(*c->v));
        }
        r = &c->v[c->n++];
        r->keylen = keylen;
        r->key = malloc(keylen + 1);
        memcpy(r->key, key, keylen);
        r->len = len;
        r->val = NULL;
        if (value) {
                r->val = malloc(len + 1);
                if (len)
                        memcpy(r->val, value, len);
        }
        return 0;
}

static void clog_dropped(void *opaque, const void *key, size_t keylen,
                         const sl_debounce_item_t *it, int err) {
        clog_t *c = opaque;
        (void)key;
        (void)keylen;
        (void)it;
        assert_int_equal(err, -10);
        c->dropped++;
}

static void clog_free(clog_t *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->v[i].key);
                free(c->v[i].val);
        }
        free(c->v);
}

typedef struct dump_s {
        char **lines;
        size_t n, cap;
        const sl_debounce_t *d;
        const sl_debounce_group_t *g;
} dump_t;

static void dump_item(const sl_debounce_item_t *it, void *opaque) {
        dump_t *x = opaque;
        char *line;
        size_t n = x->g->keylen + it->idlen + it->payload_len + 100;
        line = malloc(n);
        snprintf(line, n, "%.*s|%.*s|%.*s|%lld|%lld|%lld", (int)x->g->keylen,
                 x->g->key, (int)it->idlen, it->id, (int)it->payload_len,
                 (const char *)it->payload, (long long)it->first_seen_ms,
                 (long long)it->last_update_ms, (long long)it->seq);
        if (x->n == x->cap) {
                x->cap = x->cap ? x->cap * 2 : 64;
                x->lines = realloc(x->lines, x->cap * sizeof(*x->lines));
        }
        x->lines[x->n++] = line;
}

static void dump_group(const sl_debounce_group_t *g, void *opaque) {
        dump_t *x = opaque;
        x->g = g;
        sl_debounce_foreach_item(x->d, g->key, g->keylen, dump_item, x);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every pending item of d, one line each, sorted, joined. */
static char *dump(const sl_debounce_t *d) {
        dump_t x = {NULL, 0, 0, d, NULL};
        size_t total = 1, off = 0;
        char *out;
        sl_debounce_foreach_group(d, dump_group, &x);
        if (x.n)
                qsort(x.lines, x.n, sizeof(*x.lines), cmp_str);
        for (size_t i = 0; i < x.n; i++)
                total += strlen(x.lines[i]) + 1;
        out = malloc(total);
        out[0] = '\0';
        for (size_t i = 0; i < x.n; i++) {
                size_t l = strlen(x.lines[i]);
                memcpy(out + off, x.lines[i], l);
                out[off + l] = '\n';
                off += l + 1;
                free(x.lines[i]);
        }
        out[off] = '\0';
        free(x.lines);
        return out;
}

/* A rebuild only reads: a write from it fails the test. */
static int no_write(void *opaque, const void *key, size_t keylen,
                    const void *value, size_t len, int64_t seq, int must) {
        (void)opaque;
        (void)key;
        (void)keylen;
        (void)value;
        (void)len;
        (void)seq;
        (void)must;
        fail_msg("the changelog was written during a rebuild");
        return -1;
}

/* A rebuild of the first n records, the Kafka cleaner having compacted
 * those before cut (a record goes when a later one before cut has its
 * key; tombstones there go too when drop_tombs). */
static sl_debounce_t *rebuild(const clog_t *c, size_t n, size_t cut,
                              int drop_tombs, const sl_debounce_params_t *p) {
        sl_debounce_t *d = sl_debounce_new(p);
        sl_debounce_set_writer(d,
                               &(sl_debounce_writer_t){no_write, NULL, NULL});
        for (size_t i = 0; i < n; i++) {
                const logrec_t *r = &c->v[i];
                const char *why = NULL;
                int gone = 0;
                if (i < cut) {
                        for (size_t j = i + 1; j < cut && !gone; j++)
                                gone = c->v[j].keylen == r->keylen &&
                                       !memcmp(c->v[j].key, r->key, r->keylen);
                        if (!r->val && drop_tombs)
                                gone = 1;
                }
                if (gone)
                        continue;
                assert_int_equal(
                    sl_debounce_restore_record(d, r->key, r->keylen, r->val,
                                               r->len, T0 + 1000000000LL, &why),
                    0);
        }
        return d;
}

static void check_rebuilds(const sl_debounce_t *live, const clog_t *c,
                           const sl_debounce_params_t *p, unsigned *rnd) {
        char *want = dump(live);
        size_t cuts[4] = {0, c->n, c->n, 0};
        cuts[3] = c->n ? (size_t)(rand_r(rnd) % (c->n + 1)) : 0;
        for (int k = 0; k < 4; k++) {
                sl_debounce_t *b =
                    rebuild(c, c->n, cuts[k], k == 2 || k == 3, p);
                char *got = dump(b);
                if (strcmp(want, got))
                        fail_msg("rebuild %d (cut %zu of %zu) differs:\n"
                                 "live:\n%s\nrebuilt:\n%s",
                                 k, cuts[k], c->n, want, got);
                assert_int_equal(sl_debounce_items(b), sl_debounce_items(live));
                assert_int_equal(sl_debounce_bytes(b), sl_debounce_bytes(live));
                assert_int_equal(sl_debounce_groups(b),
                                 sl_debounce_groups(live));
                free(got);
                sl_debounce_destroy(b);
        }
        free(want);
}

static void model_run(unsigned seed, int ops, size_t *records, size_t *items) {
        /* Odd seeds: chunks of at most 300 bytes (two or three items), so
         * a seal often writes several chunks for one group. */
        sl_debounce_params_t p = {1000, 5000, 5, 160, "pl", seed % 2 ? 300 : 0};
        sl_debounce_t *d = sl_debounce_new(&p);
        clog_t c = {0};
        unsigned rnd = seed;
        int64_t now = T0;
        char big[SL_DEBOUNCE_CHUNK_MAX + 100];
        size_t sealed_n = 0;
        char *sealed = dump(d);

        memset(big, 'B', sizeof(big));
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, clog_dropped, &c});
        /* Every third seed: Kafka refuses records over 250 bytes (the
         * seal's chunks go as item records; an item too large for those
         * is dropped for the DLQ). */
        if (seed % 3 == 0)
                c.refuse_over = 250;
        for (int op = 0; op < ops; op++) {
                char g[8], id[8], payload[64];
                int what = rand_r(&rnd) % 100;
                sl_debounce_batch_t *b;
                snprintf(g, sizeof(g), "g%d", rand_r(&rnd) % 6);
                snprintf(id, sizeof(id), "i%d", rand_r(&rnd) % 12);
                now += rand_r(&rnd) % 200;
                if (what < 55) {
                        size_t pl = (size_t)(rand_r(&rnd) % 60);
                        const char *v = payload;
                        for (size_t i = 0; i < pl; i++)
                                payload[i] = (char)('a' + rand_r(&rnd) % 26);
                        if (rand_r(&rnd) % 200 == 0) {
                                v = big; /* an item record of its own */
                                pl = sizeof(big);
                        } else if (rand_r(&rnd) % 40 == 0) {
                                /* Larger than the others, often an upsert
                                 * of an item not yet sealed. */
                                v = big;
                                pl = 100 + (size_t)(rand_r(&rnd) % 3000);
                        }
                        /* A due group flushes first, as the operator does. */
                        while (sl_debounce_take(d, g, strlen(g), now, &b))
                                sl_debounce_batch_free(b);
                        if (sl_debounce_upsert(d, g, strlen(g), id, strlen(id),
                                               v, pl, now, op) < 0)
                                assert_true(c.refuse_over &&
                                            sl_debounce_write_error(d) == -10);
                        (*items)++;
                        while (sl_debounce_take(d, g, strlen(g), now, &b))
                                sl_debounce_batch_free(b);
                } else if (what < 65) {
                        sl_debounce_remove(d, g, strlen(g), id, strlen(id));
                } else if (what < 75) {
                        while (sl_debounce_take(d, NULL, 0, now, &b))
                                sl_debounce_batch_free(b);
                } else if (what < 80) {
                        while (sl_debounce_take_requested(d, g, strlen(g), now,
                                                          &b))
                                sl_debounce_batch_free(b);
                } else if (what < 92) {
                        /* The commit: the seal, then the log up to here is
                         * what a rebuild reads. */
                        assert_true(sl_debounce_seal(d) >= 0);
                        check_rebuilds(d, &c, &p, &rnd);
                        free(sealed);
                        sealed = dump(d);
                        sealed_n = c.n;
                } else {
                        /* A crash before the commit: what was written
                         * since the last seal is never read. */
                        sl_debounce_t *b2 = rebuild(&c, sealed_n, 0, 0, &p);
                        char *got = dump(b2);
                        assert_string_equal(sealed, got);
                        free(got);
                        sl_debounce_destroy(b2);
                }
        }
        assert_true(sl_debounce_seal(d) >= 0);
        check_rebuilds(d, &c, &p, &rnd);
        *records += c.n;
        free(sealed);
        sl_debounce_destroy(d);
        clog_free(&c);
}

static void test_changelog_model(void **state) {
        size_t records = 0, items = 0;
        (void)state;
        for (unsigned seed = 1; seed <= 40; seed++)
                model_run(seed, 1500, &records, &items);
        print_message("changelog model: %zu upserts, %zu records\n", items,
                      records);
}

/* Items of one transaction in one group: one chunk record; an item that
 * leaves in the transaction that brought it: no record at all. */
static void test_changelog_chunks(void **state) {
        sl_debounce_params_t p = {1000, 5000, 100, 1 << 20, "pl"};
        sl_debounce_t *d = sl_debounce_new(&p);
        clog_t c = {0};
        sl_debounce_batch_t *b;
        (void)state;
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, clog_dropped, &c});
        for (int i = 0; i < 10; i++) {
                char id[8];
                snprintf(id, sizeof(id), "a%d", i);
                up(d, "G", id, "x", T0, i);
                up(d, "H", id, "y", T0, 100 + i);
        }
        up(d, "G", "gone", "z", T0, 50);
        assert_int_equal(sl_debounce_remove(d, "G", 1, "gone", 4), 1);
        assert_int_equal(c.n, 0); /* nothing before the seal */
        assert_int_equal(sl_debounce_seal(d), 2);
        assert_int_equal(c.n, 2);
        assert_int_equal(c.v[0].keylen, 1 + 1 + 5);
        assert_memory_equal(c.v[0].key + 1, "\0\0\0\0\0\1", 6);
        /* The next transaction: a new item of G is a second chunk. */
        up(d, "G", "b", "x", T0 + 1, 200);
        assert_int_equal(sl_debounce_seal(d), 1);
        assert_int_equal(c.n, 3);
        assert_memory_equal(c.v[2].key + 1, "\0\0\0\0\0\2", 6);
        /* An upsert of a saved item converts G: its 11 items as item
         * records, its 2 chunks tombstoned, the upsert's own record. */
        up(d, "G", "a3", "new", T0 + 2, 300);
        assert_int_equal(c.n, 3 + 11 + 2 + 1);
        assert_null(c.v[3 + 11].val);
        assert_null(c.v[3 + 12].val);
        assert_non_null(c.v[3 + 13].val);
        /* H flushes whole: its one chunk's tombstone. */
        assert_int_equal(sl_debounce_take_requested(d, "H", 1, T0 + 3, &b), 1);
        assert_int_equal(b->cnt, 10);
        sl_debounce_batch_free(b);
        assert_int_equal(c.n, 18);
        assert_null(c.v[17].val);
        assert_int_equal(sl_debounce_seal(d), 0);
        sl_debounce_destroy(d);
        clog_free(&c);
}

/* An item that grows in the transaction that brought it (upserted before
 * the seal with a larger payload): the seal packs it at its new size, in
 * a buffer made for that size (it once wrote past one made for the size
 * its journal entry had), and the log rebuilds the state. */
static void test_changelog_unsaved_grows(void **state) {
        sl_debounce_params_t p = {1000, 5000, 100, 1 << 30, "pl"};
        sl_debounce_t *d = sl_debounce_new(&p);
        clog_t c = {0};
        unsigned rnd = 3;
        static char big[40000];
        (void)state;
        memset(big, 'b', sizeof(big));
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, clog_dropped, &c});
        up(d, "G", "a", "1", T0, 1);
        up(d, "G", "z", "2", T0, 2);
        assert_int_equal(
            sl_debounce_upsert(d, "G", 1, "a", 1, big, sizeof(big), T0 + 1, 3),
            1);
        assert_int_equal(sl_debounce_seal(d), 1);
        assert_int_equal(c.n, 1);
        assert_true(c.v[0].len > sizeof(big));
        check_rebuilds(d, &c, &p, &rnd);
        /* Grown past what one chunk takes: the chunk is cut before it. */
        up(d, "H", "a", "1", T0, 4);
        up(d, "H", "b", "2", T0, 5);
        assert_int_equal(
            sl_debounce_upsert(d, "H", 1, "a", 1, big, 40000, T0 + 1, 6), 1);
        assert_int_equal(
            sl_debounce_upsert(d, "H", 1, "b", 1, big, 40000, T0 + 1, 7), 1);
        assert_int_equal(sl_debounce_seal(d), 2);
        for (size_t i = 1; i < c.n; i++)
                assert_true(c.v[i].keylen + c.v[i].len <=
                            SL_DEBOUNCE_CHUNK_MAX);
        check_rebuilds(d, &c, &p, &rnd);
        sl_debounce_destroy(d);
        clog_free(&c);
}

/* A chunk Kafka refuses goes as item records; an item whose record is
 * refused too leaves the state through dropped(), and the log still
 * rebuilds the state. */
static void test_changelog_seal_refused(void **state) {
        sl_debounce_params_t p = {1000, 5000, 100, 1 << 20, "pl"};
        sl_debounce_t *d = sl_debounce_new(&p);
        char big[300];
        clog_t c = {0};
        unsigned rnd = 1;
        (void)state;
        memset(big, 'x', sizeof(big));
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, clog_dropped, &c});
        c.refuse_over = 200;
        for (int i = 0; i < 5; i++) {
                char id[8];
                snprintf(id, sizeof(id), "a%d", i);
                up(d, "G", id, "0123456789012345678901234567890123456789", T0,
                   i);
        }
        assert_int_equal(
            sl_debounce_upsert(d, "G", 1, "big", 3, big, sizeof(big), T0, 9),
            0);
        assert_int_equal(sl_debounce_seal(d), 5);
        assert_int_equal(c.dropped, 1);
        assert_int_equal(c.n, 5);
        assert_int_equal(sl_debounce_items(d), 5);
        for (size_t i = 0; i < c.n; i++)
                assert_int_not_equal(c.v[i].key[2], '\0'); /* item records */
        check_rebuilds(d, &c, &p, &rnd);
        /* They are item records now: a flush tombstones each. */
        {
                sl_debounce_batch_t *b;
                assert_int_equal(
                    sl_debounce_take_requested(d, "G", 1, T0 + 1, &b), 1);
                sl_debounce_batch_free(b);
        }
        assert_int_equal(c.n, 10);
        check_rebuilds(d, &c, &p, &rnd);
        sl_debounce_destroy(d);
        clog_free(&c);
}

/* An upsert whose own record Kafka refuses changes nothing. */
static void test_changelog_refused(void **state) {
        sl_debounce_params_t p = {1000, 5000, 100, 1 << 20, "pl"};
        sl_debounce_t *d = sl_debounce_new(&p);
        static char big[SL_DEBOUNCE_CHUNK_MAX + 10];
        clog_t c = {0};
        (void)state;
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, clog_dropped, &c});
        c.refuse_at = 1;
        assert_int_equal(
            sl_debounce_upsert(d, "G", 1, "x", 1, big, sizeof(big), T0, 1), -1);
        assert_int_equal(sl_debounce_write_error(d), -10);
        assert_int_equal(sl_debounce_items(d), 0);
        assert_int_equal(up(d, "G", "y", "1", T0, 2), 0);
        assert_int_equal(sl_debounce_write_error(d), 0);
        sl_debounce_destroy(d);
        clog_free(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_idle),
            cmocka_unit_test(test_max_age),
            cmocka_unit_test(test_max_items),
            cmocka_unit_test(test_full_group_batches),
            cmocka_unit_test(test_max_bytes),
            cmocka_unit_test(test_upsert),
            cmocka_unit_test(test_find_then_change),
            cmocka_unit_test(test_many_ids_one_group),
            cmocka_unit_test(test_remove),
            cmocka_unit_test(test_groups_order),
            cmocka_unit_test(test_batch_id),
            cmocka_unit_test(test_split),
            cmocka_unit_test(test_restore_same_state),
            cmocka_unit_test(test_foreach),
            cmocka_unit_test(test_json),
            cmocka_unit_test(test_json_payload_kinds),
            cmocka_unit_test(test_item_pack),
            cmocka_unit_test(test_json_times),
            cmocka_unit_test(test_json_string_words),
            cmocka_unit_test(test_protobuf),
            cmocka_unit_test(test_text_ok),
            cmocka_unit_test(test_check),
            cmocka_unit_test(test_take_requested),
            cmocka_unit_test(test_json_requested),
            cmocka_unit_test(test_check_control),
            cmocka_unit_test(test_memory_per_item),
            cmocka_unit_test(test_changelog_model),
            cmocka_unit_test(test_changelog_chunks),
            cmocka_unit_test(test_changelog_refused),
            cmocka_unit_test(test_changelog_seal_refused),
            cmocka_unit_test(test_changelog_unsaved_grows),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
