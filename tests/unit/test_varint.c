/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_varint.c — the shared varint codec: protobuf's encoding of known
 * values (checked against protobuf-c's packing of the same field), the
 * lengths, and what the reader refuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sluice.pb-c.h"
#include "util.h"
#include "varint.h"

static const uint64_t values[] = {
    0,          1,
    127,        128,
    300,        16383,
    16384,      UINT32_MAX,
    1ULL << 35, 1ULL << 49,
    1ULL << 56, 1ULL << 63,
    UINT64_MAX, (uint64_t)-1LL,
};

/* Each value as protobuf-c packs an int64 field of it, after the tag. */
static void test_matches_protobuf(void **state) {
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(values); i++) {
                Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
                uint8_t pb[64], ours[SL_VARINT_MAX];
                size_t n, len;

                tm.due_ms = (int64_t)values[i];
                n = sluice__v1__timer__pack(&tm, pb);
                len = sl_varint_put(ours, values[i]);
                assert_int_equal(len, sl_varint_len(values[i]));
                if (values[i] == 0) { /* proto3 leaves a zero out */
                        assert_int_equal(n, 0);
                        assert_int_equal(len, 1);
                        assert_int_equal(ours[0], 0);
                        continue;
                }
                assert_int_equal(n, 1 + len);
                assert_memory_equal(pb + 1, ours, len);
        }
        {
                uint8_t b[SL_VARINT_MAX];
                assert_int_equal(sl_varint_put(b, 300), 2);
                assert_int_equal(b[0], 0xac);
                assert_int_equal(b[1], 0x02);
                assert_int_equal(sl_varint_len(UINT64_MAX), SL_VARINT_MAX);
        }
}

/* What is written reads back, at the end of a buffer and before more. */
static void test_round_trip(void **state) {
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(values); i++) {
                uint8_t b[SL_VARINT_MAX + 1];
                const uint8_t *p = b;
                uint64_t v = 42;
                size_t n = sl_varint_put(b, values[i]);
                b[n] = 0x55;
                assert_int_equal(sl_varint_get(&p, b + n, &v), 0);
                assert_true(v == values[i]);
                assert_ptr_equal(p, b + n);
                p = b;
                assert_int_equal(sl_varint_get(&p, b + n + 1, &v), 0);
                assert_ptr_equal(p, b + n);
        }
}

/* Cut short, empty, or longer than ten bytes: -1, nothing moved. */
static void test_refused(void **state) {
        static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                         0x80, 0x80, 0x80, 0x80, 0x01};
        uint8_t b[SL_VARINT_MAX];
        const uint8_t *p;
        uint64_t v = 7;
        size_t n = sl_varint_put(b, 1ULL << 40);
        (void)state;

        for (size_t cut = 0; cut < n; cut++) {
                p = b;
                assert_int_equal(sl_varint_get(&p, b + cut, &v), -1);
                assert_ptr_equal(p, b);
                assert_int_equal(v, 7);
        }
        p = eleven;
        assert_int_equal(sl_varint_get(&p, eleven + sizeof(eleven), &v), -1);
        assert_ptr_equal(p, eleven);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_matches_protobuf),
            cmocka_unit_test(test_round_trip),
            cmocka_unit_test(test_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
