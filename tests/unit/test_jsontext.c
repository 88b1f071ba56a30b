/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jsontext.c — sl_json_text_scan() on the cases that decide it
 * (grammar, strings, escapes, surrogates, numbers, nesting), each also
 * checked against jansson with the flags debounce.c uses, and the byte
 * run helpers at word boundaries.  tests/fuzz/fuzz_jsontext.c does the
 * same comparison on any bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "jsontext.h"

static const struct {
        const char *text;
        size_t len; /* 0: strlen(text) */
        sl_json_verdict_t want;
} cases[] = {
    /* values, whitespace around */
    {"{}", 0, SL_JSON_YES},
    {" [ ] ", 0, SL_JSON_YES},
    {"\t\r\n{\"a\" : [1, 2.5, -0, \"x\", true, false, null, {}]}\n", 0,
     SL_JSON_YES},
    {"\"\"", 0, SL_JSON_YES},
    {"7", 0, SL_JSON_YES},
    {"-0.25", 0, SL_JSON_YES},
    {"true", 0, SL_JSON_YES},
    {"null", 0, SL_JSON_YES},
    {"{\"a\":{\"b\":[[],[{}]]},\"c\":1}", 0, SL_JSON_YES},
    /* grammar */
    {"", 0, SL_JSON_NO},
    {"   ", 0, SL_JSON_NO},
    {"[1,]", 0, SL_JSON_NO},
    {"[,1]", 0, SL_JSON_NO},
    {"{\"a\"}", 0, SL_JSON_NO},
    {"{\"a\":}", 0, SL_JSON_NO},
    {"{\"a\":1,}", 0, SL_JSON_NO},
    {"{1:2}", 0, SL_JSON_NO},
    {"[1 2]", 0, SL_JSON_NO},
    {"[1}", 0, SL_JSON_NO},
    {"{\"a\":1]", 0, SL_JSON_NO},
    {"[[1]", 0, SL_JSON_NO},
    {"[1]]", 0, SL_JSON_NO},
    {"{} {}", 0, SL_JSON_NO},
    {"tru", 0, SL_JSON_NO},
    {"truex", 0, SL_JSON_NO},
    {"nul", 0, SL_JSON_NO},
    {"True", 0, SL_JSON_NO},
    {"x{}", 0, SL_JSON_NO},
    {"\xef\xbb\xbf{}", 0, SL_JSON_NO}, /* a BOM */
    /* numbers */
    {"01", 0, SL_JSON_NO},
    {"-", 0, SL_JSON_NO},
    {"+1", 0, SL_JSON_NO},
    {".5", 0, SL_JSON_NO},
    {"1.", 0, SL_JSON_NO},
    {"1.e5", 0, SL_JSON_NO},
    {"1e", 0, SL_JSON_NO},
    {"1e+", 0, SL_JSON_NO},
    {"0x10", 0, SL_JSON_NO},
    {"1e5", 0, SL_JSON_ASK},   /* an exponent: jansson decides */
    {"1e400", 0, SL_JSON_ASK}, /* which it refuses (overflow) */
    {"[1e5 x]", 0, SL_JSON_NO},
    {"12345678901234567890123456789", 0, SL_JSON_YES},
    /* strings */
    {"\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", 0, SL_JSON_YES},
    {"\"\\u00e9\\u20AC\"", 0, SL_JSON_YES},
    {"\"\\ud83d\\ude00\"", 0, SL_JSON_YES},
    {"\"\\ud83d\"", 0, SL_JSON_NO}, /* a lone high surrogate */
    {"\"\\ud83dx\"", 0, SL_JSON_NO},
    {"\"\\ud83d\\u0041\"", 0, SL_JSON_NO}, /* not a low one after it */
    {"\"\\ude00\"", 0, SL_JSON_NO},        /* a lone low surrogate */
    {"\"\\u12\"", 0, SL_JSON_NO},
    {"\"\\u12g4\"", 0, SL_JSON_NO},
    {"\"\\x\"", 0, SL_JSON_NO},
    {"\"\\'\"", 0, SL_JSON_NO},
    {"\"abc", 0, SL_JSON_NO},
    {"\"a\tb\"", 0, SL_JSON_NO}, /* a raw control character */
    {"\"a\x7f b\"", 0, SL_JSON_YES},
    {"\"caf\xc3\xa9 \xf0\x9f\x98\x80\"", 0, SL_JSON_YES},
    {"\"\xc3\"", 0, SL_JSON_NO},         /* truncated */
    {"\"\xc0\xaf\"", 0, SL_JSON_NO},     /* overlong */
    {"\"\xed\xa0\x80\"", 0, SL_JSON_NO}, /* a surrogate in UTF-8 */
    {"\"\xff\"", 0, SL_JSON_NO},
    {"\"\\u0000\"", 0, SL_JSON_YES},     /* JSON_ALLOW_NUL */
    {"{\"a\\u0000\":1}", 0, SL_JSON_NO}, /* but never in a key */
    {"{\"\\u0000\":1}", 0, SL_JSON_NO},
    {"\"a\0b\"", 5, SL_JSON_NO},
    {"[1]\0", 4, SL_JSON_NO},
    {"0\0", 2, SL_JSON_NO}, /* jansson: yes (see jsontext.h) */
};

static void test_cases(void **state) {
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *t = cases[i].text;
                size_t len = cases[i].len ? cases[i].len : strlen(t);
                sl_json_verdict_t v = sl_json_text_scan(t, len);
                json_error_t err;
                json_t *j;

                if (v != cases[i].want)
                        fail_msg("case %zu (%.*s): %d, want %d", i, (int)len, t,
                                 (int)v, (int)cases[i].want);
                j = json_loadb(t, len,
                               JSON_DECODE_ANY | JSON_ALLOW_NUL |
                                   JSON_DECODE_INT_AS_REAL,
                               &err);
                if (v != SL_JSON_ASK && !memchr(t, 0, len) &&
                    (v == SL_JSON_YES) != (j != NULL))
                        fail_msg("case %zu (%.*s): jansson %s", i, (int)len, t,
                                 j ? "accepts" : "refuses");
                json_decref(j);
        }
}

/* Nesting: up to SL_JSON_SCAN_DEPTH containers are scanned; deeper ones
 * are jansson's to judge. */
static void test_depth(void **state) {
        (void)state;
        char buf[2 * (SL_JSON_SCAN_DEPTH + 1) + 2];
        for (int d = SL_JSON_SCAN_DEPTH; d <= SL_JSON_SCAN_DEPTH + 1; d++) {
                size_t n = 2 * (size_t)d + 1;
                memset(buf, '[', (size_t)d);
                buf[d] = '1';
                memset(buf + d + 1, ']', (size_t)d);
                assert_int_equal(sl_json_text_scan(buf, n),
                                 d > SL_JSON_SCAN_DEPTH ? SL_JSON_ASK
                                                        : SL_JSON_YES);
                /* one close short: no, or ask */
                assert_int_not_equal(sl_json_text_scan(buf, n - 1),
                                     SL_JSON_YES);
        }
}

/* The byte runs stop exactly at the first byte that ends them, wherever
 * it falls in or after a word. */
static void test_runs(void **state) {
        (void)state;
        static const unsigned char stops[] = {'"', '\\', 0x1f, 0x80, 0xff, 0};
        unsigned char buf[40];
        for (size_t len = 0; len <= sizeof(buf); len++) {
                memset(buf, 'a', sizeof(buf));
                assert_int_equal(sl_json_plain_len(buf, len), len);
                assert_int_equal(sl_ascii_len(buf, len, 0), len);
                for (size_t pos = 0; pos < len; pos++) {
                        for (size_t k = 0; k < sizeof(stops); k++) {
                                unsigned char c = stops[k];
                                memset(buf, 'a', sizeof(buf));
                                buf[pos] = c;
                                assert_int_equal(sl_json_plain_len(buf, len),
                                                 pos);
                                assert_int_equal(sl_ascii_len(buf, len, 0),
                                                 c < 0x80 && c ? len : pos);
                                assert_int_equal(sl_ascii_len(buf, len, 1),
                                                 c < 0x80 ? len : pos);
                        }
                }
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_cases),
            cmocka_unit_test(test_depth),
            cmocka_unit_test(test_runs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
