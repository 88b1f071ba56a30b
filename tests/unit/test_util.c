/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_util.c — sl_escape(): what reaches a log line or an error header
 * from input is printable ASCII only, bounded, and cut visibly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util.h"

static char buf[256];

/* Escapes len bytes of s into a buffer of size bytes. */
static const char *esc(const char *s, size_t len, size_t size) {
        assert_true(size <= sizeof(buf));
        memset(buf, 'Z', sizeof(buf));
        return sl_escape(s, len, buf, size);
}

/* Every character of s is printable ASCII. */
static void assert_printable(const char *s) {
        for (; *s; s++)
                if (*s < 0x20 || *s > 0x7e)
                        fail_msg("byte 0x%02x in escaped output",
                                 (unsigned char)*s);
}

static void test_printable_kept(void **state) {
        (void)state;
        const char *s = "acme-42 'quoted' \\ back {\"json\": 1} ~";
        assert_string_equal(esc(s, strlen(s), sizeof(buf)), s);
        assert_string_equal(esc("", 0, 8), "");
        assert_string_equal(esc(NULL, 0, 8), "");
}

static void test_newlines_and_controls(void **state) {
        (void)state;
        /* A forged second log line stays on the first. */
        const char *s = "10/s\n2026-01-01 ERR forged\r\t";
        assert_string_equal(esc(s, strlen(s), sizeof(buf)),
                            "10/s\\x0a2026-01-01 ERR forged\\x0d\\x09");
        assert_string_equal(esc("\x7f", 1, 8), "\\x7f");
}

static void test_esc_sequence(void **state) {
        (void)state;
        /* Clear screen, then red text: no ESC reaches the terminal. */
        const char *s = "\x1b[2J\x1b[31mok";
        assert_string_equal(esc(s, strlen(s), sizeof(buf)),
                            "\\x1b[2J\\x1b[31mok");
}

static void test_nul(void **state) {
        (void)state;
        /* A NUL does not cut the line short. */
        assert_string_equal(esc("a\0b", 3, sizeof(buf)), "a\\x00b");
}

static void test_utf8(void **state) {
        (void)state;
        /* "é" and "€" byte by byte: the output stays ASCII. */
        const char *s = "caf\xc3\xa9 \xe2\x82\xac";
        assert_string_equal(esc(s, strlen(s), sizeof(buf)),
                            "caf\\xc3\\xa9 \\xe2\\x82\\xac");
}

static void test_long_input_cut(void **state) {
        (void)state;
        char big[10000];
        const char *out;

        memset(big, 'x', sizeof(big));
        out = esc(big, sizeof(big), 20);
        assert_int_equal(strlen(out), 19);
        assert_memory_equal(out, "xxxxxxxxxxxxxxxx...", 19);
        /* Nothing written past the buffer. */
        assert_int_equal(buf[20], 'Z');

        /* Exactly fitting: no marker. */
        assert_string_equal(esc(big, 19, 20), "xxxxxxxxxxxxxxxxxxx");
        /* One more byte: cut, with the marker. */
        assert_string_equal(esc(big, 20, 20), "xxxxxxxxxxxxxxxx...");
}

static void test_cut_never_splits_an_escape(void **state) {
        (void)state;
        char bin[64];
        const char *out;

        memset(bin, '\n', sizeof(bin));
        /* 16 bytes: three \x0a (12) fit before the marker, a fourth not. */
        out = esc(bin, sizeof(bin), 16);
        assert_string_equal(out, "\\x0a\\x0a\\x0a...");
        out = esc("a\x01\x02", 3, 8);
        assert_string_equal(out, "a...");
        assert_string_equal(esc("abc\x01", 4, 8), "abc\\x01");
        assert_printable(out);
}

static void test_idempotent(void **state) {
        (void)state;
        char once[256], twice[256];
        const char *s = "k\x1b\n\\x41\xff end";
        sl_escape(s, strlen(s), once, sizeof(once));
        sl_escape(once, strlen(once), twice, sizeof(twice));
        assert_string_equal(once, twice);
        assert_printable(once);
}

static void test_every_byte(void **state) {
        (void)state;
        char all[256];
        char out[SL_ESCAPE_SIZE(256)];
        for (int i = 0; i < 256; i++)
                all[i] = (char)i;
        sl_escape(all, sizeof(all), out, sizeof(out));
        assert_printable(out);
        /* 95 printable bytes, 161 escaped: nothing cut. */
        assert_int_equal(strlen(out), 95 + 161 * 4);
}

/* The scratch buffer is reused while it is small enough, holds what is
 * asked, and a large one is given back after use. */
static void test_scratch(void **state) {
        sl_scratch_t sc = {0};
        char *p, *q;
        (void)state;
        p = sl_scratch_get(&sc, 0);
        assert_non_null(p);
        assert_true(sc.size >= 1);
        p = sl_scratch_get(&sc, 100);
        memset(p, 'a', 100);
        sl_scratch_done(&sc);
        q = sl_scratch_get(&sc, 50);
        assert_ptr_equal(p, q); /* reused, no new allocation */
        assert_int_equal(q[49], 'a');
        q = sl_scratch_get(&sc, 1000);
        assert_true(sc.size >= 1000);
        memset(q, 'b', 1000);
        sl_scratch_done(&sc);
        assert_non_null(sc.buf); /* small: kept */
        q = sl_scratch_get(&sc, SL_SCRATCH_KEEP + 1);
        memset(q, 'c', SL_SCRATCH_KEEP + 1);
        sl_scratch_done(&sc);
        assert_null(sc.buf); /* large: given back */
        assert_int_equal(sc.size, 0);
        q = sl_scratch_get(&sc, 10);
        assert_non_null(q);
        sl_scratch_free(&sc);
        assert_null(sc.buf);
        sl_scratch_free(&sc); /* twice is harmless */
}

/* What the allocator says it holds moves with what is allocated (the unit
 * tests run on glibc's malloc, or ASan's; ./sluice links jemalloc). */
static void test_mem_stats(void **state) {
        const size_t n = (size_t)8 << 20;
        int64_t a0, r0, a1, r1;
        char *p;
        (void)state;
        sl_mem_stats(&a0, &r0);
        p = malloc(n);
        assert_non_null(p);
        memset(p, 1, n);
        sl_mem_stats(&a1, &r1);
        if (a0 >= 0) {
                assert_true(a1 >= 0);
                assert_true(a1 - a0 >= (int64_t)n);
        }
        assert_true((r0 < 0) == (r1 < 0));
        if (r1 >= 0)
                assert_true(r1 >= a1);
        free(p);
}

/* Base64: RFC 4648's vectors, a round trip of every length to 300 bytes
 * (URL alphabet and missing padding decode too), and what is refused. */
static void test_base64(void **state) {
        static const char *vec[][2] = {{"", ""},
                                       {"f", "Zg=="},
                                       {"fo", "Zm8="},
                                       {"foo", "Zm9v"},
                                       {"foob", "Zm9vYg=="},
                                       {"fooba", "Zm9vYmE="},
                                       {"foobar", "Zm9vYmFy"}};
        unsigned char in[300];
        char enc[SL_BASE64_LEN(300) + 1];
        size_t len;
        void *dec;
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(vec); i++) {
                assert_int_equal(
                    sl_base64_encode(enc, vec[i][0], strlen(vec[i][0])),
                    strlen(vec[i][1]));
                assert_string_equal(enc, vec[i][1]);
        }
        for (size_t i = 0; i < sizeof(in); i++)
                in[i] = (unsigned char)(i * 7 + 3);
        for (size_t n = 0; n <= sizeof(in); n++) {
                size_t m = sl_base64_encode(enc, in, n);
                assert_int_equal(m, SL_BASE64_LEN(n));
                dec = sl_base64_decode(enc, m, &len);
                assert_non_null(dec);
                assert_int_equal(len, n);
                assert_memory_equal(dec, in, n);
                free(dec);
        }
        dec = sl_base64_decode("-_8", 3, &len); /* URL alphabet, no pad */
        assert_non_null(dec);
        assert_int_equal(len, 2);
        assert_memory_equal(dec, "\xfb\xff", 2);
        free(dec);
        assert_null(sl_base64_decode("Zm9v!", 5, &len));
        assert_null(sl_base64_decode("Z", 1, &len)); /* a lone character */
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_mem_stats),
            cmocka_unit_test(test_base64),
            cmocka_unit_test(test_printable_kept),
            cmocka_unit_test(test_newlines_and_controls),
            cmocka_unit_test(test_esc_sequence),
            cmocka_unit_test(test_nul),
            cmocka_unit_test(test_utf8),
            cmocka_unit_test(test_long_input_cut),
            cmocka_unit_test(test_cut_never_splits_an_escape),
            cmocka_unit_test(test_idempotent),
            cmocka_unit_test(test_every_byte),
            cmocka_unit_test(test_scratch),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
