/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_describe.c — unit tests for the JSON answers of the API's lookups
 * (describe.c): every member of each shape in describe.h, the time and
 * bytes conventions, and the edges (unknown instants, binary ids, rate 0,
 * a group with more items than are listed).
 */
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
#include "describe.h"
#include "util.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00.000Z */

static json_int_t int_of(const json_t *o, const char *name) {
        const json_t *v = json_object_get(o, name);
        if (!json_is_integer(v))
                fail_msg("%s is not an integer", name);
        return json_integer_value(v);
}

static const char *str_of(const json_t *o, const char *name) {
        const json_t *v = json_object_get(o, name);
        if (!json_is_string(v))
                fail_msg("%s is not a string", name);
        return json_string_value(v);
}

static double real_of(const json_t *o, const char *name) {
        const json_t *v = json_object_get(o, name);
        if (!json_is_number(v))
                fail_msg("%s is not a number", name);
        return json_number_value(v);
}

static void is_null(const json_t *o, const char *name) {
        if (!json_is_null(json_object_get(o, name)))
                fail_msg("%s is not null", name);
}

static void test_rfc3339(void **state) {
        char buf[32];
        (void)state;
        assert_int_equal(sl_time_rfc3339(T0 + 1234, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "2026-01-01T00:00:01.234Z");
        assert_int_equal(sl_time_rfc3339(0, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
        assert_int_equal(sl_time_rfc3339(253402300799999LL, buf, sizeof(buf)),
                         0);
        assert_string_equal(buf, "9999-12-31T23:59:59.999Z");
        assert_int_equal(sl_time_rfc3339(253402300800000LL, buf, sizeof(buf)),
                         -1);
        assert_int_equal(sl_time_rfc3339(-1, buf, sizeof(buf)), -1);
        assert_int_equal(sl_time_rfc3339(INT64_MAX, buf, sizeof(buf)), -1);
}

static void test_time_and_bytes(void **state) {
        json_t *o = json_object();
        (void)state;

        sl_describe_time(o, "due", T0);
        assert_int_equal(int_of(o, "due_ms"), T0);
        assert_string_equal(str_of(o, "due"), "2026-01-01T00:00:00.000Z");
        sl_describe_time(o, "far", INT64_MAX); /* ms kept, no text */
        assert_int_equal(int_of(o, "far_ms"), INT64_MAX);
        is_null(o, "far");
        sl_describe_time(o, "none", INT64_MIN);
        is_null(o, "none_ms");
        is_null(o, "none");

        sl_describe_bytes(o, "id", "order-17", 8);
        assert_string_equal(str_of(o, "id"), "order-17");
        assert_null(json_object_get(o, "id_encoding"));
        sl_describe_bytes(o, "bin", "\xff\x00\x01", 3);
        assert_string_equal(str_of(o, "bin"), "/wAB");
        assert_string_equal(str_of(o, "bin_encoding"), "base64");
        /* A NUL is valid UTF-8: a string of 3 characters. */
        sl_describe_bytes(o, "nul", "a\0b", 3);
        assert_int_equal(json_string_length(json_object_get(o, "nul")), 3);
        assert_null(json_object_get(o, "nul_encoding"));
        sl_describe_bytes(o, "empty", NULL, 0);
        assert_string_equal(str_of(o, "empty"), "");
        /* Set again as text: the encoding goes. */
        sl_describe_bytes(o, "bin", "ok", 2);
        assert_null(json_object_get(o, "bin_encoding"));
        json_decref(o);
}

static void test_timer(void **state) {
        sl_describe_timer_t v = {0};
        json_t *o;
        (void)state;

        v.id = "order-17";
        v.idlen = 8;
        v.partition = 3;
        v.due_ms = T0 + 41250;
        v.target_topic = "orders.due";
        v.target_key = "order-17";
        v.target_keylen = 8;
        v.target_partition = -1;
        v.payload_bytes = 120;
        v.header_count = 2;
        v.header_bytes = 31;
        v.seq = 88412;
        o = sl_describe_timer(&v, T0);
        assert_string_equal(str_of(o, "id"), "order-17");
        assert_int_equal(int_of(o, "partition"), 3);
        assert_int_equal(int_of(o, "due_ms"), T0 + 41250);
        assert_string_equal(str_of(o, "due"), "2026-01-01T00:00:41.250Z");
        assert_int_equal(int_of(o, "due_in_ms"), 41250);
        assert_true(json_is_false(json_object_get(o, "due_on_arrival")));
        assert_string_equal(str_of(o, "target_topic"), "orders.due");
        assert_string_equal(str_of(o, "target_key"), "order-17");
        assert_string_equal(str_of(o, "target_key_source"), "id");
        is_null(o, "target_partition");
        assert_int_equal(int_of(o, "payload_bytes"), 120);
        assert_int_equal(int_of(o, "header_count"), 2);
        assert_int_equal(int_of(o, "header_bytes"), 31);
        assert_int_equal(int_of(o, "seq"), 88412);
        assert_int_equal(json_object_size(o), 14);
        json_decref(o);

        /* Overdue, a key of its own, a partition. */
        v.target_key = "\xfe";
        v.target_keylen = 1;
        v.target_key_header = 1;
        v.target_partition = 0;
        v.due_on_arrival = 1;
        o = sl_describe_timer(&v, T0 + 50000);
        assert_int_equal(int_of(o, "due_in_ms"), -8750);
        assert_true(json_is_true(json_object_get(o, "due_on_arrival")));
        assert_string_equal(str_of(o, "target_key"), "/g==");
        assert_string_equal(str_of(o, "target_key_encoding"), "base64");
        assert_string_equal(str_of(o, "target_key_source"), "header");
        assert_int_equal(int_of(o, "target_partition"), 0);
        json_decref(o);

        /* A keyless timer fires with a null key. */
        v.target_key_null = 1;
        v.due_ms = INT64_MIN + 1;
        o = sl_describe_timer(&v, T0);
        is_null(o, "target_key");
        assert_string_equal(str_of(o, "target_key_source"), "null");
        assert_int_equal(int_of(o, "due_in_ms"), INT64_MIN); /* saturated */
        json_decref(o);

        /* A recurring timer: its schedule under "schedule". */
        v.due_ms = T0;
        v.expr = "0 9 * * MON-FRI";
        v.expr_len = strlen(v.expr);
        v.cron = 1;
        v.tz = "Europe/Paris";
        v.tz_len = strlen(v.tz);
        v.catch_up = "all";
        v.fired = 4;
        v.last_fired_ms = T0 - 86400000;
        v.next_ms[0] = T0 + 86400000;
        v.next_ms[1] = T0 + 2 * 86400000;
        v.next_cnt = 2;
        o = sl_describe_timer(&v, T0);
        {
                json_t *sc = json_object_get(o, "schedule"), *n;
                assert_non_null(sc);
                assert_string_equal(str_of(sc, "cron"), "0 9 * * MON-FRI");
                assert_null(json_object_get(sc, "every"));
                assert_string_equal(str_of(sc, "tz"), "Europe/Paris");
                assert_string_equal(str_of(sc, "catch_up"), "all");
                assert_int_equal(int_of(sc, "fired"), 4);
                assert_string_equal(str_of(sc, "last_fired"),
                                    "2025-12-31T00:00:00.000Z");
                n = json_object_get(sc, "next_ms");
                assert_int_equal(json_array_size(n), 2);
                assert_int_equal(json_integer_value(json_array_get(n, 1)),
                                 T0 + 2 * 86400000);
                n = json_object_get(sc, "next");
                assert_string_equal(json_string_value(json_array_get(n, 0)),
                                    "2026-01-02T00:00:00.000Z");
        }
        json_decref(o);
        /* every, in UTC, nothing fired yet. */
        v.expr = "10m";
        v.expr_len = 3;
        v.cron = 0;
        v.tz = NULL;
        v.tz_len = 0;
        v.last_fired_ms = 0;
        v.next_cnt = 0;
        o = sl_describe_timer(&v, T0);
        {
                json_t *sc = json_object_get(o, "schedule");
                assert_string_equal(str_of(sc, "every"), "10m");
                assert_string_equal(str_of(sc, "tz"), "UTC");
                is_null(sc, "last_fired_ms");
                is_null(sc, "last_fired");
                assert_int_equal(json_array_size(json_object_get(sc, "next")),
                                 0);
        }
        json_decref(o);
}

/* The markers a describe() hook answers instead of a key's JSON. */
static void test_markers(void **state) {
        json_t *j = sl_describe_gone(1767225600000LL), *r = sl_describe_retry();
        (void)state;
        assert_int_equal(sl_describe_gone_due(j), 1767225600000LL);
        assert_false(sl_describe_is_retry(j));
        assert_true(sl_describe_is_retry(r));
        assert_int_equal(sl_describe_gone_due(r), -1);
        json_decref(j);
        /* A timer's own JSON is neither. */
        j = json_pack("{s:I, s:s}", "payload_gone_due_ms", (json_int_t)5, "id",
                      "x");
        assert_int_equal(sl_describe_gone_due(j), -1);
        json_decref(j);
        json_decref(r);
}

static void test_throttle_key(void **state) {
        sl_describe_tkey_t v = {0};
        json_t *o;
        (void)state;

        /* A key without state: full bucket, no backlog. */
        v.key = "customer-9";
        v.keylen = 10;
        v.rate.per_sec = 100;
        v.rate.burst = 100;
        v.source = SL_RATE_FALLBACK;
        v.tokens = 100;
        v.oldest_received_ms = INT64_MIN;
        v.head_deadline_ms = INT64_MIN;
        v.next_send_ms = INT64_MIN;
        o = sl_describe_throttle_key(&v, T0);
        assert_string_equal(str_of(o, "key"), "customer-9");
        assert_true(json_is_false(json_object_get(o, "tracked")));
        assert_string_equal(str_of(o, "rate"), "100/s burst=100");
        assert_true(real_of(o, "rate_per_sec") == 100.0);
        assert_true(real_of(o, "burst") == 100.0);
        assert_string_equal(str_of(o, "rate_source"), "config");
        assert_true(json_is_true(json_object_get(o, "is_default")));
        assert_true(real_of(o, "tokens") == 100.0);
        assert_int_equal(int_of(o, "backlog"), 0);
        assert_int_equal(int_of(o, "backlog_bytes"), 0);
        is_null(o, "oldest_age_ms");
        is_null(o, "head_deadline_ms");
        is_null(o, "head_deadline");
        is_null(o, "next_send_ms");
        is_null(o, "next_send");
        assert_true(json_is_false(json_object_get(o, "fetching")));
        assert_int_equal(json_object_size(o), 17);
        json_decref(o);

        /* A backlogged key at its own rate. */
        v.tracked = 1;
        v.rate.per_sec = 10;
        v.rate.burst = 5;
        v.source = SL_RATE_KEY;
        v.tokens = 0.25;
        v.backlog = 12;
        v.backlog_bytes = 4800;
        v.oldest_received_ms = T0 - 8000;
        v.head_deadline_ms = T0 + 60000;
        v.next_send_ms = T0 + 75;
        v.fetching = 1;
        o = sl_describe_throttle_key(&v, T0);
        assert_true(json_is_true(json_object_get(o, "tracked")));
        assert_string_equal(str_of(o, "rate"), "10/s burst=5");
        assert_string_equal(str_of(o, "rate_source"), "key");
        assert_true(json_is_false(json_object_get(o, "is_default")));
        assert_true(real_of(o, "tokens") == 0.25);
        assert_int_equal(int_of(o, "backlog"), 12);
        assert_int_equal(int_of(o, "backlog_bytes"), 4800);
        assert_int_equal(int_of(o, "oldest_age_ms"), 8000);
        assert_int_equal(int_of(o, "head_deadline_ms"), T0 + 60000);
        assert_string_equal(str_of(o, "head_deadline"),
                            "2026-01-01T00:01:00.000Z");
        assert_int_equal(int_of(o, "next_send_ms"), T0 + 75);
        assert_true(json_is_true(json_object_get(o, "fetching")));
        json_decref(o);

        /* The "*" default at 0/s: nothing is sent; a token already due is
         * sent now, not in the past; the oldest's record not in memory. */
        v.source = SL_RATE_DEFAULT;
        v.rate.per_sec = 0;
        v.rate.burst = 1;
        v.next_send_ms = INT64_MAX;
        v.oldest_received_ms = INT64_MIN;
        o = sl_describe_throttle_key(&v, T0);
        assert_string_equal(str_of(o, "rate_source"), "default");
        assert_true(json_is_true(json_object_get(o, "is_default")));
        is_null(o, "next_send_ms");
        is_null(o, "oldest_age_ms");
        json_decref(o);
        v.rate.per_sec = 10;
        v.next_send_ms = T0 - 5;
        o = sl_describe_throttle_key(&v, T0);
        assert_int_equal(int_of(o, "next_send_ms"), T0);
        json_decref(o);
}

static void test_group(void **state) {
        sl_debounce_params_t p = {2000, 30000, 1000, 1 << 20, "pl"};
        sl_debounce_t *d = sl_debounce_new(&p);
        const json_t *lim, *pending, *it;
        json_t *o;
        (void)state;

        assert_null(sl_describe_group(d, "WH-42", 5, 1, T0));
        sl_debounce_upsert(d, "WH-42", 5, "A001", 4, "{\"n\":1}", 7, T0, 10);
        sl_debounce_upsert(d, "WH-42", 5, "A002", 4, "xy", 2, T0 + 500, 11);
        sl_debounce_upsert(d, "WH-42", 5, "A001", 4, "{\"n\":2}", 7, T0 + 800,
                           12);
        o = sl_describe_group(d, "WH-42", 5, 1, T0 + 1000);
        assert_non_null(o);
        assert_string_equal(str_of(o, "key"), "WH-42");
        assert_int_equal(int_of(o, "partition"), 1);
        assert_int_equal(int_of(o, "items"), 2);
        assert_int_equal(int_of(o, "bytes"), 9);
        assert_int_equal(int_of(o, "opened_ms"), T0);
        assert_string_equal(str_of(o, "opened"), "2026-01-01T00:00:00.000Z");
        assert_int_equal(int_of(o, "age_ms"), 1000);
        assert_int_equal(int_of(o, "last_update_ms"), T0 + 800);
        assert_int_equal(int_of(o, "idle_for_ms"), 200);
        assert_int_equal(int_of(o, "next_flush_ms"), T0 + 2800);
        assert_string_equal(str_of(o, "next_flush"),
                            "2026-01-01T00:00:02.800Z");
        assert_int_equal(int_of(o, "next_flush_in_ms"), 1800);
        assert_string_equal(str_of(o, "next_flush_reason"), "idle");
        lim = json_object_get(o, "limits");
        assert_int_equal(int_of(lim, "idle_ms"), 2000);
        assert_int_equal(int_of(lim, "max_age_ms"), 30000);
        assert_int_equal(int_of(lim, "max_items"), 1000);
        assert_int_equal(int_of(lim, "max_bytes"), 1 << 20);
        pending = json_object_get(o, "pending");
        assert_int_equal(json_array_size(pending), 2);
        it = json_array_get(pending, 0); /* arrival order: A001 first */
        assert_string_equal(str_of(it, "id"), "A001");
        assert_int_equal(int_of(it, "payload_bytes"), 7);
        assert_int_equal(int_of(it, "first_seen_ms"), T0);
        assert_int_equal(int_of(it, "last_update_ms"), T0 + 800);
        assert_string_equal(str_of(it, "last_update"),
                            "2026-01-01T00:00:00.800Z");
        assert_string_equal(str_of(json_array_get(pending, 1), "id"), "A002");
        assert_true(json_is_false(json_object_get(o, "pending_truncated")));
        assert_int_equal(json_object_size(o), 17);
        json_decref(o);

        /* Overdue: in 0 ms; the oldest item's age decides (max_age). */
        o = sl_describe_group(d, "WH-42", 5, 1, T0 + 5000);
        assert_int_equal(int_of(o, "next_flush_in_ms"), 0);
        json_decref(o);
        for (int i = 0; i < 150; i++) {
                char id[16];
                snprintf(id, sizeof(id), "b%03d", i);
                sl_debounce_upsert(d, "G", 1, id, strlen(id), "x", 1,
                                   T0 + i * 300, 100 + i);
        }
        o = sl_describe_group(d, "G", 1, 0, T0 + 45000);
        assert_int_equal(int_of(o, "items"), 150);
        assert_string_equal(str_of(o, "next_flush_reason"), "max_age");
        assert_int_equal(int_of(o, "next_flush_ms"), T0 + 30000);
        assert_int_equal(json_array_size(json_object_get(o, "pending")),
                         SL_DESCRIBE_ITEMS_MAX);
        assert_true(json_is_true(json_object_get(o, "pending_truncated")));
        json_decref(o);
        sl_debounce_destroy(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_rfc3339),
            cmocka_unit_test(test_time_and_bytes),
            cmocka_unit_test(test_timer),
            cmocka_unit_test(test_markers),
            cmocka_unit_test(test_throttle_key),
            cmocka_unit_test(test_group),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
