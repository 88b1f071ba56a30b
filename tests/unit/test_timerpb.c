/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_timerpb.c — the Timer record read in place (logpb.h), against
 * what protobuf-c packs: every field, headers past the inline ones, and
 * the cases where protobuf-c's reading is not the obvious one (a string
 * up to its NUL, a repeated scalar's last value, a bool of another wire
 * type, unknown fields, a group).  tests/fuzz/fuzz_timerpb.c holds the
 * reader to protobuf-c on any bytes.  Also the gone list, the delay
 * changelog's third kind of value (logpb.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "logpb.h"
#include "sluice.pb-c.h"

static size_t pack(const Sluice__V1__Timer *tm, uint8_t **out) {
        size_t n = sluice__v1__timer__get_packed_size(tm);
        *out = malloc(n + 1);
        return sluice__v1__timer__pack(tm, *out);
}

static void test_fields(void **state) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header hs[11], *hp[11];
        char names[11][8], vals[11][8];
        uint8_t *buf, payload[100];
        sl_logpb_timer_t r;
        size_t n;
        (void)state;

        memset(payload, '.', sizeof(payload));
        for (int i = 0; i < 11; i++) {
                sluice__v1__header__init(&hs[i]);
                snprintf(names[i], sizeof(names[i]), "h%d", i);
                snprintf(vals[i], sizeof(vals[i]), "v%d", i);
                hs[i].name = names[i];
                hs[i].value.data = (uint8_t *)vals[i];
                hs[i].value.len = strlen(vals[i]);
                hs[i].null_value = i % 4 == 3;
                hp[i] = &hs[i];
        }
        tm.due_ms = 1700000001234;
        tm.target_topic = "out.a";
        tm.target_key.data = (uint8_t *)"key-1";
        tm.target_key.len = 5;
        tm.has_target_key = 1;
        tm.target_partition = -7;
        tm.payload.data = payload;
        tm.payload.len = sizeof(payload);
        tm.n_headers = 11;
        tm.headers = hp;
        tm.seq = 987654321;
        tm.created_ms = 1700000000000;
        tm.null_target_key = 1;
        n = pack(&tm, &buf);

        assert_int_equal(sl_logpb_timer_read(&r, buf, n), 0);
        assert_true(r.due_ms == tm.due_ms);
        assert_int_equal(r.target_topic_len, 5);
        assert_memory_equal(r.target_topic, "out.a", 5);
        assert_int_equal(r.target_key_len, 5);
        assert_memory_equal(r.target_key, "key-1", 5);
        assert_true(r.has_target_key);
        assert_int_equal(r.target_partition, -7);
        assert_int_equal(r.payload_len, 100);
        assert_memory_equal(r.payload, payload, 100);
        assert_false(r.null_payload);
        assert_true(r.seq == 987654321);
        assert_true(r.created_ms == 1700000000000);
        assert_true(r.null_target_key);
        assert_int_equal(r.n_headers, 11);
        for (int i = 0; i < 11; i++) {
                assert_int_equal(r.headers[i].name_len, strlen(names[i]));
                assert_memory_equal(r.headers[i].name, names[i],
                                    strlen(names[i]));
                assert_int_equal(r.headers[i].value_len, strlen(vals[i]));
                assert_memory_equal(r.headers[i].value, vals[i],
                                    strlen(vals[i]));
                assert_int_equal(r.headers[i].null_value, i % 4 == 3);
        }
        sl_logpb_timer_free(&r);
        free(buf);

        /* No fields: the defaults, as protobuf-c's. */
        assert_int_equal(sl_logpb_timer_read(&r, "", 0), 0);
        assert_int_equal(r.target_topic_len, 0);
        assert_int_equal(r.n_headers, 0);
        assert_int_equal(r.target_partition, 0);
        sl_logpb_timer_free(&r);
}

/* Bytes where protobuf-c reads something other than the obvious. */
static void test_protobuf_c_reading(void **state) {
        /* due 1 then 2 (the last wins); topic "out\0x" (up to the NUL);
         * has_target_key as 4 fixed bytes 00 00 01 00 (a bool of any wire
         * type: true); unknown fields 30 (64-bit), 31 (32-bit), 32
         * (varint), 33 (bytes); null_payload as a varint 0x80 0x00
         * (false). */
        static const uint8_t rec[] = {
            0x08, 0x01, 0x08, 0x02, 0x12, 0x05, 'o',  'u',  't',  0x00, 'x',
            0x25, 0x00, 0x00, 0x01, 0x00, 0xf1, 0x01, 1,    2,    3,    4,
            5,    6,    7,    8,    0xfd, 0x01, 1,    2,    3,    4,    0x80,
            0x02, 0x63, 0x8a, 0x02, 0x02, 'h',  'i',  0x38, 0x80, 0x00};
        static const uint8_t group[] = {0x08, 0x01, 0x83, 0x01, 0x84, 0x01};
        static const uint8_t cut[] = {0x12, 0x05, 'o', 'u'};
        static const uint8_t wrong[] = {0x0a, 0x01, 0x00}; /* due as bytes */
        sl_logpb_timer_t r;
        Sluice__V1__Timer *pc;
        (void)state;

        pc = sluice__v1__timer__unpack(NULL, sizeof(rec), rec);
        assert_non_null(pc);
        assert_int_equal(sl_logpb_timer_read(&r, rec, sizeof(rec)), 0);
        assert_true(r.due_ms == 2 && pc->due_ms == 2);
        assert_int_equal(r.target_topic_len, 3);
        assert_string_equal(pc->target_topic, "out");
        assert_true(r.has_target_key && pc->has_target_key);
        assert_true(!r.null_payload && !pc->null_payload);
        sluice__v1__timer__free_unpacked(pc, NULL);
        sl_logpb_timer_free(&r);

        assert_null(sluice__v1__timer__unpack(NULL, sizeof(group), group));
        assert_int_equal(sl_logpb_timer_read(&r, group, sizeof(group)), -1);
        sl_logpb_timer_free(&r);
        assert_null(sluice__v1__timer__unpack(NULL, sizeof(cut), cut));
        assert_int_equal(sl_logpb_timer_read(&r, cut, sizeof(cut)), -1);
        sl_logpb_timer_free(&r);
        assert_null(sluice__v1__timer__unpack(NULL, sizeof(wrong), wrong));
        assert_int_equal(sl_logpb_timer_read(&r, wrong, sizeof(wrong)), -1);
        sl_logpb_timer_free(&r);
}

/* The gone list: a round trip, its bytes, and what it refuses. */
static void test_gone_list(void **state) {
        sl_logpb_gone_t g[3] = {{0, 5}, {300, 1796618181620}, {301, 0}}, *r;
        const uint8_t dup[] = {0xfe, 1, 2, 7, 1, 0, 1};  /* distance 0 */
        const uint8_t more[] = {0xfe, 1, 3, 7, 1, 1, 1}; /* count 3, 2 given */
        const uint8_t tail[] = {0xfe, 1, 1, 7, 1, 9};    /* a byte after */
        const uint8_t v2[] = {0xfe, 2, 0};
        const uint8_t big[] = {0xfe, 1, 0x81, 0x80, 0x04}; /* 65537 */
        uint8_t *buf;
        size_t len, n;
        Sluice__V1__Timer *tm;
        (void)state;

        buf = sl_logpb_gone_put(g, 3, &len);
        assert_true(sl_logpb_is_gone(buf, len));
        assert_false(sl_logpb_is_index(buf, len));
        /* 0xfe 1, count 3, 0 5, 300 (2 bytes) and a 6-byte due, 1 0 */
        assert_int_equal(len, 2 + 1 + 2 + 2 + 6 + 2);
        assert_int_equal(sl_logpb_gone_read(buf, len, &r, &n), 0);
        assert_int_equal(n, 3);
        assert_memory_equal(r, g, sizeof(g));
        free(r);
        /* No Timer: protobuf-c refuses a tag of wire type 6. */
        tm = sluice__v1__timer__unpack(NULL, len, buf);
        assert_null(tm);
        for (size_t cut = 0; cut < len; cut++)
                assert_int_equal(sl_logpb_gone_read(buf, cut, &r, &n), -1);
        free(buf);

        buf = sl_logpb_gone_put(NULL, 0, &len);
        assert_int_equal(len, 3);
        assert_int_equal(sl_logpb_gone_read(buf, len, &r, &n), 0);
        assert_int_equal(n, 0);
        assert_null(r);
        free(buf);

        assert_int_equal(sl_logpb_gone_read(dup, sizeof(dup), &r, &n), -1);
        assert_int_equal(sl_logpb_gone_read(more, sizeof(more), &r, &n), -1);
        assert_int_equal(sl_logpb_gone_read(tail, sizeof(tail), &r, &n), -1);
        assert_int_equal(sl_logpb_gone_read(v2, sizeof(v2), &r, &n), -1);
        assert_int_equal(sl_logpb_gone_read(big, sizeof(big), &r, &n), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_fields),
            cmocka_unit_test(test_protobuf_c_reading),
            cmocka_unit_test(test_gone_list),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
