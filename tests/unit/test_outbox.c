/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_outbox.c — records decided during a commit: order kept across
 * chunks, null and empty keys and values told apart, headers handed over,
 * records larger than a chunk, the bounds, clear and reuse, trim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "outbox.h"

static sl_outbox_rec_t rec(const char *topic, int32_t part, const char *key,
                           const char *value) {
        sl_outbox_rec_t r = {
            .topic = topic,
            .partition = part,
            .key = key,
            .keylen = key ? strlen(key) : 0,
            .value = value,
            .valuelen = value ? strlen(value) : 0,
        };
        return r;
}

static void test_order_across_chunks(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        char key[32], value[200];
        const int n = 10000; /* ~2.6 MB: many chunks */
        sl_outbox_rec_t r;
        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "key-%d", i);
                memset(value, 'a' + i % 26, sizeof(value) - 1);
                value[sizeof(value) - 1] = '\0';
                r = rec(i % 2 ? "out" : "app.changelog", i % 7, key, value);
                r.flags = (uintptr_t)i << 2;
                r.decided_ms = 1000 + i;
                r.pl_index = i % 3;
                r.task_partition = i % 5;
                r.epoch = (uint32_t)i * 3;
                sl_outbox_push(ob, &r);
        }
        assert_int_equal(sl_outbox_count(ob), n);
        assert_true(sl_outbox_bytes(ob) > (size_t)n * 200);
        for (int i = 0; i < n; i++) {
                assert_int_equal(sl_outbox_pop(ob, &r), 1);
                snprintf(key, sizeof(key), "key-%d", i);
                assert_string_equal(r.topic, i % 2 ? "out" : "app.changelog");
                assert_int_equal(r.partition, i % 7);
                assert_int_equal(r.keylen, strlen(key));
                assert_memory_equal(r.key, key, r.keylen);
                assert_int_equal(r.valuelen, 199);
                assert_int_equal(((const char *)r.value)[0], 'a' + i % 26);
                assert_int_equal(((const char *)r.value)[198], 'a' + i % 26);
                assert_int_equal(r.flags, (uintptr_t)i << 2);
                assert_int_equal(r.decided_ms, 1000 + i);
                assert_int_equal(r.pl_index, i % 3);
                assert_int_equal(r.task_partition, i % 5);
                assert_int_equal(r.epoch, (uint32_t)i * 3);
                assert_null(r.hdrs);
        }
        assert_int_equal(sl_outbox_pop(ob, &r), 0);
        assert_int_equal(sl_outbox_count(ob), 0);
        assert_int_equal(sl_outbox_bytes(ob), 0);
        sl_outbox_destroy(ob);
}

/* A tombstone (null value) is not an empty value, nor is a null key an
 * empty one: Kafka tells them apart and so must the replay. */
static void test_null_and_empty(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        sl_outbox_rec_t r = rec("t", 0, NULL, NULL);
        sl_outbox_push(ob, &r);
        r = rec("t", 1, "", "");
        sl_outbox_push(ob, &r);
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_null(r.key);
        assert_null(r.value);
        assert_int_equal(r.keylen, 0);
        assert_int_equal(r.valuelen, 0);
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_non_null(r.key);
        assert_non_null(r.value);
        assert_int_equal(r.keylen, 0);
        assert_int_equal(r.valuelen, 0);
        sl_outbox_destroy(ob);
}

/* Headers pass to the outbox, back to whoever pops; what is left is freed
 * by clear and destroy (ASan checks both). */
static void test_headers(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        sl_outbox_rec_t r;
        const void *v;
        size_t len;
        for (int i = 0; i < 3; i++) {
                r = rec("t", 0, "k", "v");
                r.hdrs = rd_kafka_headers_new(2);
                rd_kafka_header_add(r.hdrs, "sluice-batch-id", -1, "b1", -1);
                sl_outbox_push(ob, &r);
        }
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_non_null(r.hdrs);
        assert_int_equal(
            rd_kafka_header_get_last(r.hdrs, "sluice-batch-id", &v, &len),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(len, 2);
        rd_kafka_headers_destroy(r.hdrs);
        sl_outbox_clear(ob); /* two left */
        assert_int_equal(sl_outbox_count(ob), 0);
        r = rec("t", 0, "k", "v");
        r.hdrs = rd_kafka_headers_new(1);
        sl_outbox_push(ob, &r);
        sl_outbox_destroy(ob); /* one left */
}

static void test_large_record(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        size_t big = 3 * SL_OUTBOX_CHUNK + 17;
        char *value = malloc(big + 1);
        sl_outbox_rec_t r;
        memset(value, 'x', big);
        value[big] = '\0';
        r = rec("t", 0, "small", "1");
        sl_outbox_push(ob, &r);
        r = rec("t", 0, "big", value);
        sl_outbox_push(ob, &r);
        r = rec("t", 0, "after", "2");
        sl_outbox_push(ob, &r);
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_memory_equal(r.key, "small", 5);
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_int_equal(r.valuelen, big);
        assert_memory_equal(r.value, value, big);
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_memory_equal(r.key, "after", 5);
        assert_int_equal(sl_outbox_pop(ob, &r), 0);
        free(value);
        sl_outbox_destroy(ob);
}

static void test_bounds(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(1000, 3);
        sl_outbox_rec_t r = rec("t", 0, "k", "v");
        assert_true(sl_outbox_room(ob));
        for (int i = 0; i < 3; i++)
                sl_outbox_push(ob, &r);
        assert_false(sl_outbox_room(ob)); /* by count */
        assert_int_equal(sl_outbox_pop(ob, &r), 1);
        assert_true(sl_outbox_room(ob));
        sl_outbox_clear(ob);
        r = rec("t", 0, "k", NULL);
        r.value = "";
        r.valuelen = 0;
        {
                char v[2000];
                memset(v, 'v', sizeof(v));
                r.value = v;
                r.valuelen = sizeof(v);
                sl_outbox_push(ob, &r); /* one record past the bytes */
        }
        assert_false(sl_outbox_room(ob)); /* by bytes */
        sl_outbox_clear(ob);
        assert_true(sl_outbox_room(ob));
        sl_outbox_destroy(ob);
        sl_outbox_destroy(NULL);
}

/* Interleaved pushes and pops (the replay pushes what the records it sends
 * lead to): order holds and memory is reused. */
static void test_interleaved(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        sl_outbox_rec_t r;
        char key[32];
        int next_in = 0, next_out = 0;
        for (int round = 0; round < 2000; round++) {
                for (int i = 0; i < 7; i++) {
                        snprintf(key, sizeof(key), "%d", next_in++);
                        r = rec("t", 0, key, "payload-payload-payload");
                        sl_outbox_push(ob, &r);
                }
                for (int i = 0; i < 6; i++) {
                        assert_int_equal(sl_outbox_pop(ob, &r), 1);
                        snprintf(key, sizeof(key), "%d", next_out++);
                        assert_int_equal(r.keylen, strlen(key));
                        assert_memory_equal(r.key, key, r.keylen);
                }
        }
        while (sl_outbox_pop(ob, &r)) {
                snprintf(key, sizeof(key), "%d", next_out++);
                assert_memory_equal(r.key, key, r.keylen);
        }
        assert_int_equal(next_in, next_out);
        sl_outbox_destroy(ob);
}

/* A burst leaves emptied chunks kept for reuse; trim frees them (at most
 * 16 of them, 4 MiB), leaves waiting records alone, and the outbox works
 * on after it. */
static void test_trim(void **state) {
        (void)state;
        sl_outbox_t *ob = sl_outbox_new(SIZE_MAX, INT64_MAX);
        sl_outbox_rec_t r;
        char value[1000];
        size_t freed;
        memset(value, 'v', sizeof(value) - 1);
        value[sizeof(value) - 1] = '\0';
        assert_int_equal(sl_outbox_trim(ob), 0);
        for (int i = 0; i < 10000; i++) { /* ~10 MB: ~40 chunks */
                r = rec("t", 0, "k", value);
                sl_outbox_push(ob, &r);
        }
        for (int i = 0; i < 9000; i++)
                assert_int_equal(sl_outbox_pop(ob, &r), 1);
        freed = sl_outbox_trim(ob);
        assert_true(freed >= 16 * (size_t)SL_OUTBOX_CHUNK);
        assert_true(freed < 17 * (size_t)SL_OUTBOX_CHUNK);
        assert_int_equal(sl_outbox_trim(ob), 0);
        assert_int_equal(sl_outbox_count(ob), 1000);
        for (int i = 0; i < 5; i++) {
                r = rec("t", 0, "k", "after");
                sl_outbox_push(ob, &r);
        }
        for (int i = 0; i < 1000; i++) {
                assert_int_equal(sl_outbox_pop(ob, &r), 1);
                assert_int_equal(r.valuelen, sizeof(value) - 1);
        }
        for (int i = 0; i < 5; i++) {
                assert_int_equal(sl_outbox_pop(ob, &r), 1);
                assert_memory_equal(r.value, "after", 5);
        }
        assert_int_equal(sl_outbox_pop(ob, &r), 0);
        sl_outbox_destroy(ob);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_order_across_chunks),
            cmocka_unit_test(test_null_and_empty),
            cmocka_unit_test(test_headers),
            cmocka_unit_test(test_large_record),
            cmocka_unit_test(test_bounds),
            cmocka_unit_test(test_interleaved),
            cmocka_unit_test(test_trim),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
