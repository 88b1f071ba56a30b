/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c — the log's two formats: a json line is one JSON object with
 * the text line's fields (time, level, facility, message) whatever the
 * message holds: quotes, backslashes, control bytes and NUL escaped, bytes
 * that are not UTF-8 replaced by U+FFFD, never a broken line; and sl_log()
 * writes one such line per event to stderr (read back from a file), text
 * by default.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"
#include "util.h"

#define TS "2026-01-31T12:00:00.123Z"
/* A string literal and its length (NULs inside counted). */
#define S(lit) lit, sizeof(lit) - 1

/* line parsed: an object of exactly time, level, facility and message,
 * all strings; returns it (the caller decrefs). */
static json_t *parse_line(const char *line) {
        json_error_t e;
        json_t *o =
            json_loads(line, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
        if (!o)
                fail_msg("not JSON (%s): %s", e.text, line);
        assert_true(json_is_object(o));
        assert_int_equal(json_object_size(o), 4);
        assert_true(json_is_string(json_object_get(o, "time")));
        assert_true(json_is_string(json_object_get(o, "level")));
        assert_true(json_is_string(json_object_get(o, "facility")));
        assert_true(json_is_string(json_object_get(o, "message")));
        /* One line: no raw control byte anywhere in it. */
        for (const char *p = line; *p; p++)
                assert_true((unsigned char)*p >= 0x20);
        return o;
}

static void test_plain(void **state) {
        char *line =
            sl_log_json_line(TS, LOG_WARNING, "TXN", "commit failed", 13);
        (void)state;
        assert_string_equal(line, "{\"time\":\"" TS "\",\"level\":\"warning\","
                                  "\"facility\":\"TXN\","
                                  "\"message\":\"commit failed\"}");
        free(line);
}

/* Valid UTF-8 comes back byte for byte, whatever it holds. */
static void test_escapes(void **state) {
        static const struct {
                const char *msg;
                size_t len;
                const char *escaped; /* a piece of the line */
        } cases[] = {
            {S("say \"hi\""), "say \\\"hi\\\""},
            {S("C:\\dir\\"), "C:\\\\dir\\\\"},
            {S("two\nlines\r\n"), "two\\nlines\\r\\n"},
            {S("tab\there"), "tab\\there"},
            {S("bell\a esc\x1b[31m"), "bell\\u0007 esc\\u001B[31m"},
            {S("nul\0byte"), "nul\\u0000byte"},
            {S("del\x7f"), "del"},
            {S("\xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80"),
             "\xc3\xbc \xe2\x82\xac \xf0\x9f\x98\x80"},
            {S("</script>"), "</script>"},
            {S(""), "\"message\":\"\""},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                char *line = sl_log_json_line(TS, LOG_INFO, "T", cases[i].msg,
                                              cases[i].len);
                json_t *o = parse_line(line),
                       *m = json_object_get(o, "message");
                if (!strstr(line, cases[i].escaped))
                        fail_msg("case %zu: %s lacks %s", i, line,
                                 cases[i].escaped);
                assert_int_equal(json_string_length(m), cases[i].len);
                assert_memory_equal(json_string_value(m), cases[i].msg,
                                    cases[i].len);
                json_decref(o);
                free(line);
        }
}

/* Bytes that are not UTF-8 become U+FFFD, one per byte, and what is
 * valid around them stays. */
static void test_invalid_utf8(void **state) {
#define FFFD "\xef\xbf\xbd"
        static const struct {
                const char *msg;
                size_t len;
                const char *want;
        } cases[] = {
            {S("a\xff"
               "b"),
             "a" FFFD "b"},
            {S("\x80"), FFFD},                   /* stray continuation */
            {S("\xc0\xaf"), FFFD FFFD},          /* overlong '/' */
            {S("\xed\xa0\x80"), FFFD FFFD FFFD}, /* a surrogate */
            {S("\xf4\x90\x80\x80"), FFFD FFFD FFFD FFFD}, /* > U+10FFFF */
            {S("end \xe2\x82"), "end " FFFD FFFD},        /* cut short */
            {S("\xe2\x82\xac\xe2"), "\xe2\x82\xac" FFFD},
            {S("ok \xc3\xbc"), "ok \xc3\xbc"},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                char *line = sl_log_json_line(TS, LOG_ERR, "K", cases[i].msg,
                                              cases[i].len);
                json_t *o = parse_line(line);
                const char *m =
                    json_string_value(json_object_get(o, "message"));
                if (strcmp(m, cases[i].want))
                        fail_msg("case %zu: %s", i, line);
                json_decref(o);
                free(line);
        }
        /* The facility too (librdkafka names its own). */
        char *line = sl_log_json_line(TS, LOG_ERR, "F\xff\n", "m", 1);
        json_t *o = parse_line(line);
        assert_string_equal(json_string_value(json_object_get(o, "facility")),
                            "F" FFFD "\n");
        json_decref(o);
        free(line);
#undef FFFD
}

/* Any bytes at all: always one JSON object on one line. */
static void test_random_bytes(void **state) {
        unsigned char msg[64];
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        (void)state;
        for (int i = 0; i < 20000; i++) {
                size_t len = (size_t)(x % sizeof(msg));
                for (size_t k = 0; k < len; k++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        /* Mostly the bytes that matter: controls, quotes,
                         * backslashes, lead and continuation bytes. */
                        static const unsigned char pick[] = {
                            0,    '\n', '"',  '\\', 0x1f, 0x7f, 0x80,
                            0xbf, 0xc2, 0xe0, 0xed, 0xf0, 0xf4, 0xff};
                        msg[k] = x & 1 ? pick[(x >> 1) % sizeof(pick)]
                                       : (unsigned char)(x >> 8);
                }
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char *line = sl_log_json_line(TS, LOG_DEBUG, "R",
                                              (const char *)msg, len);
                json_decref(parse_line(line));
                free(line);
        }
}

/* Reads what sl_log() wrote to stderr while fn ran. */
static char *capture_stderr(void (*fn)(void)) {
        char path[] = "/tmp/sluice-test-log-XXXXXX";
        int fd = mkstemp(path), saved;
        FILE *f;
        char *buf = sl_calloc(1, 1 << 16);
        size_t n;

        assert_true(fd >= 0);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        dup2(fd, STDERR_FILENO);
        fn();
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        close(fd);
        assert_non_null(f = fopen(path, "r"));
        n = fread(buf, 1, (1 << 16) - 1, f);
        buf[n] = '\0';
        fclose(f);
        unlink(path);
        return buf;
}

static void log_some(void) {
        char big[3000];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        sl_log(LOG_WARNING, "TXN", "topic %s [%d]: %s", "t\"1", 3,
               "line\nbreak");
        sl_log(LOG_DEBUG, "TXN", "below the level: not written");
        sl_log(LOG_INFO, "BIG", "%s", big);
}

static void test_sl_log_json(void **state) {
        char *out, *line, *next;
        int lines = 0;
        (void)state;

        sl_log_set_format(SL_LOG_JSON);
        out = capture_stderr(log_some);
        sl_log_set_format(SL_LOG_TEXT);
        for (line = out; *line; line = next + 1, lines++) {
                json_t *o;
                const char *t;
                assert_non_null(next = strchr(line, '\n'));
                *next = '\0';
                o = parse_line(line);
                t = json_string_value(json_object_get(o, "time"));
                /* The text line's time: 2026-01-31T12:00:00.123Z */
                assert_int_equal(strlen(t), 24);
                assert_int_equal(t[10], 'T');
                assert_int_equal(t[23], 'Z');
                if (lines == 0) {
                        assert_string_equal(
                            json_string_value(json_object_get(o, "level")),
                            "warning");
                        assert_string_equal(
                            json_string_value(json_object_get(o, "facility")),
                            "TXN");
                        assert_string_equal(
                            json_string_value(json_object_get(o, "message")),
                            "topic t\"1 [3]: line\nbreak");
                } else {
                        /* Longer than the stack buffer: whole. */
                        assert_int_equal(
                            json_string_length(json_object_get(o, "message")),
                            2999);
                }
                json_decref(o);
        }
        assert_int_equal(lines, 2);
        free(out);
}

static void log_one(void) {
        sl_log(LOG_NOTICE, "INIT", "hello %d", 7);
}

/* The default stays the text line. */
static void test_sl_log_text(void **state) {
        char *out = capture_stderr(log_one);
        (void)state;
        assert_int_equal(strlen(out), 24 + strlen(" notice INIT hello 7\n"));
        assert_string_equal(out + 24, " notice INIT hello 7\n");
        free(out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_plain),
            cmocka_unit_test(test_escapes),
            cmocka_unit_test(test_invalid_utf8),
            cmocka_unit_test(test_random_bytes),
            cmocka_unit_test(test_sl_log_json),
            cmocka_unit_test(test_sl_log_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
