/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_recsize.c — the size of a record in a batch of its own, worked out
 * by hand from Kafka's format for small records and at the varint steps
 * of the lengths (the broker's own verdict at the boundary is test
 * 0602-records-sizes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "recsize.h"

/* Null key and value, no header: attributes, two deltas, two nulls and a
 * header count of one byte each: a body of 6, a record of 7. */
static void test_empty(void **state) {
        (void)state;
        assert_int_equal(sl_recsize_batch(-1, -1, 0, 0), 61 + 7);
        /* An empty key is a length 0, as long as a null's -1. */
        assert_int_equal(sl_recsize_batch(0, 0, 0, 0), 61 + 7);
        assert_int_equal(sl_recsize_batch(1, 1, 0, 0), 61 + 9);
}

/* Lengths are zig-zag varints: 63 fits one byte (126), 64 needs two.  A
 * key of 63 bytes makes a body of 69 (3 + 64 + 1 + 1), whose length takes
 * two bytes; a key of 64 takes a two-byte length of its own. */
static void test_varint_steps(void **state) {
        (void)state;
        assert_int_equal(sl_recsize_batch(63, -1, 0, 0), 61 + 2 + 69);
        assert_int_equal(sl_recsize_batch(64, -1, 0, 0), 61 + 2 + 71);
        /* A body of 63 bytes takes a one-byte length, 64 a two-byte. */
        assert_int_equal(sl_recsize_batch(-1, 57, 0, 0), 61 + 1 + 63);
        assert_int_equal(sl_recsize_batch(-1, 58, 0, 0), 61 + 2 + 64);
}

static void test_headers(void **state) {
        (void)state;
        /* "a" = "b": two one-byte lengths and two bytes. */
        assert_int_equal(sl_recsize_header(1, 1), 4);
        /* A null value: its length -1 alone. */
        assert_int_equal(sl_recsize_header(1, -1), 3);
        assert_int_equal(sl_recsize_batch(-1, -1, 1, 4), 61 + 7 + 4);
        /* 64 headers: the count takes two bytes, the body of 263 too. */
        assert_int_equal(sl_recsize_batch(-1, -1, 64, 256),
                         61 + 2 + (3 + 1 + 1 + 2 + 256));
}

/* The sizes of the issue: a value of 1,048,000 bytes with a one-byte key
 * has a body of 1,048,009 bytes (a three-byte length: 2,096,018 < 2^21),
 * and the broker's default limit of 1,048,588 takes it. */
static void test_large(void **state) {
        (void)state;
        assert_int_equal(sl_recsize_batch(1, 1048000, 0, 0), 61 + 3 + 1048009);
        assert_true(sl_recsize_batch(1, 1048000, 0, 0) <=
                    SL_RECSIZE_KAFKA_DEFAULT_MAX);
        /* The largest value a one-byte key fits with under the default. */
        assert_int_equal(sl_recsize_batch(1, 1048515, 0, 0),
                         SL_RECSIZE_KAFKA_DEFAULT_MAX);
        assert_true(sl_recsize_batch(1, 1048516, 0, 0) >
                    SL_RECSIZE_KAFKA_DEFAULT_MAX);
}

/* Parts of a record: nsrc original headers of hdr bytes each (as
 * sl_recsize_header counts), one own header of own bytes. */
static sl_recsize_parts_t parts(size_t nsrc, size_t hdr, size_t own,
                                size_t *prefix) {
        sl_recsize_parts_t z = {0};
        z.own_cnt = 1;
        z.own_bytes = own;
        z.own_trimmed =
            own > SL_RECSIZE_CUT_KEY + 16 ? SL_RECSIZE_CUT_KEY + 16 : own;
        z.src_cnt = nsrc;
        z.src_prefix = prefix;
        prefix[0] = 0;
        for (size_t i = 0; i < nsrc; i++)
                prefix[i + 1] = prefix[i] + hdr;
        return z;
}

static void test_cut_fits_whole(void **state) {
        size_t prefix[4];
        sl_recsize_parts_t z = parts(3, 10, 50, prefix);
        sl_recsize_cut_t c;
        (void)state;
        assert_int_equal(sl_recsize_cut(&z, 5, 1000, 2000, &c), 0);
        assert_int_equal(c.cut, 0);
        assert_int_equal(c.value, 1000);
        assert_int_equal(c.key, 5);
        assert_int_equal(c.hdrs, 3);
}

/* The value is cut to the longest prefix that fits: one byte more would
 * not. */
static void test_cut_value(void **state) {
        size_t prefix[4];
        sl_recsize_parts_t z = parts(3, 10, 50, prefix);
        sl_recsize_cut_t c;
        (void)state;
        assert_int_equal(sl_recsize_cut(&z, 5, 1048000, 100000, &c), 0);
        assert_int_equal(c.cut, 1);
        assert_int_equal(c.key, 5);
        assert_int_equal(c.hdrs, 3);
        assert_true(c.value > 99000 && c.value < 100000);
        assert_true(sl_recsize_copy(&z, &c) <= 100000);
        c.value++;
        assert_true(sl_recsize_copy(&z, &c) > 100000);
}

/* Headers too many for the limit: the value goes, then headers from the
 * end; a null value stays null. */
static void test_cut_headers(void **state) {
        size_t prefix[50001];
        sl_recsize_parts_t z = parts(50000, 12, 50, prefix);
        sl_recsize_cut_t c;
        (void)state;
        assert_int_equal(sl_recsize_cut(&z, 5, -1, 100000, &c), 0);
        assert_int_equal(c.value, -1);
        assert_true(c.hdrs > 8000 && c.hdrs < 8400);
        assert_true(sl_recsize_copy(&z, &c) <= 100000);
        c.hdrs++;
        assert_true(sl_recsize_copy(&z, &c) > 100000);
        assert_int_equal(sl_recsize_cut(&z, 5, 20, 100000, &c), 0);
        assert_int_equal(c.value, 0);
}

/* A key larger than the limit is cut to 1 KiB, and headers fill what is
 * left. */
static void test_cut_key(void **state) {
        size_t prefix[11];
        sl_recsize_parts_t z = parts(10, 100, 50, prefix);
        sl_recsize_cut_t c;
        (void)state;
        assert_int_equal(sl_recsize_cut(&z, 1048000, 10, 1048588, &c), 0);
        assert_int_equal(c.key, 1048000);
        assert_int_equal(c.value, 0);
        assert_int_equal(sl_recsize_cut(&z, 1048550, 10, 1048588, &c), 0);
        assert_int_equal(c.key, SL_RECSIZE_CUT_KEY);
        assert_int_equal(c.hdrs, 10);
        assert_int_equal(c.trim, 0);
}

/* sluice's own headers are cut last (a timer id as long as the key). */
static void test_cut_own(void **state) {
        size_t prefix[3];
        sl_recsize_parts_t z = parts(2, 10, 1048100, prefix);
        sl_recsize_cut_t c;
        (void)state;
        assert_int_equal(sl_recsize_cut(&z, 1048000, 10, 1048588, &c), 0);
        assert_int_equal(c.trim, 1);
        assert_int_equal(c.key, SL_RECSIZE_CUT_KEY);
        assert_int_equal(c.hdrs, 2);
        assert_true(sl_recsize_copy(&z, &c) <= 1048588);
        /* Nothing fits a limit below sluice's own headers. */
        assert_int_equal(sl_recsize_cut(&z, 10, 10, 500, &c), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_empty),
            cmocka_unit_test(test_varint_steps),
            cmocka_unit_test(test_headers),
            cmocka_unit_test(test_large),
            cmocka_unit_test(test_cut_fits_whole),
            cmocka_unit_test(test_cut_value),
            cmocka_unit_test(test_cut_headers),
            cmocka_unit_test(test_cut_key),
            cmocka_unit_test(test_cut_own),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
