/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_parse.c — the value parsers of parse.c: durations, sizes, rates,
 * glob lists and timestamps, good inputs and bad ones with their exact
 * error text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "parse.h"

static char err[256];

/* Durations. */

static int64_t dur_ok(const char *s) {
        int64_t v = -42;
        err[0] = '\0';
        if (sl_parse_duration_ms(s, &v, err, sizeof(err)) != 0)
                fail_msg("duration '%s' refused: %s", s, err);
        return v;
}

static const char *dur_bad(const char *s) {
        int64_t v = -42;
        err[0] = '\0';
        assert_int_equal(sl_parse_duration_ms(s, &v, err, sizeof(err)), -1);
        assert_int_equal(v, -42); /* untouched on error */
        return err;
}

static void test_duration_good(void **state) {
        (void)state;
        assert_int_equal(dur_ok("250ms"), 250);
        assert_int_equal(dur_ok("90s"), 90000);
        assert_int_equal(dur_ok("1.5s"), 1500);
        assert_int_equal(dur_ok("30m"), 1800000);
        assert_int_equal(dur_ok("24h"), 86400000);
        assert_int_equal(dur_ok("7d"), 7LL * 86400000);
        assert_int_equal(dur_ok("366d"), 366LL * 86400000);
        assert_int_equal(dur_ok("0"), 0);
        assert_int_equal(dur_ok("000"), 0);
        assert_int_equal(dur_ok("0s"), 0);
        assert_int_equal(dur_ok("1h30m"), 5400000);
        assert_int_equal(dur_ok("1d2h3m4s5ms"),
                         86400000 + 7200000 + 180000 + 4000 + 5);
        assert_int_equal(dur_ok("0.001s"), 1);
        assert_int_equal(dur_ok("2.5h"), 9000000);
        assert_int_equal(dur_ok("  90s \t"), 90000);
        /* Large but representable: 100 million days. */
        assert_int_equal(dur_ok("100000000d"), 100000000LL * 86400000);
        /* The maximum, 2^53 ms, and the most digits a number may have. */
        assert_int_equal(dur_ok("9007199254740992ms"),
                         SL_PARSE_DURATION_MAX_MS);
        assert_int_equal(dur_ok("000000000000000000000000000001s"), 1000);
        assert_int_equal(dur_ok("1.000000000000000000s"), 1000);
}

static void test_duration_bad(void **state) {
        (void)state;
        assert_string_equal(dur_bad(""), "empty value");
        assert_string_equal(dur_bad("   "), "empty value");
        assert_string_equal(dur_bad(NULL), "empty value");
        assert_string_equal(dur_bad("5"),
                            "missing unit after '5' (use ms, s, m, h or d)");
        assert_string_equal(dur_bad("1h30"),
                            "missing unit after '30' (use ms, s, m, h or d)");
        assert_string_equal(dur_bad("5x"),
                            "unknown unit 'x' (use ms, s, m, h or d)");
        assert_string_equal(dur_bad("5 s"),
                            "missing unit after '5' (use ms, s, m, h or d)");
        assert_string_equal(dur_bad("5sec"),
                            "unknown unit 'sec' (use ms, s, m, h or d)");
        assert_string_equal(dur_bad("-5s"),
                            "negative durations are not allowed");
        assert_string_equal(dur_bad("abc"), "expected a number at 'abc'");
        assert_string_equal(dur_bad("5s!"), "expected a number at '!'");
        assert_string_equal(dur_bad(".5s"), "expected a number at '.5s'");
        assert_string_equal(dur_bad("5.s"), "malformed number");
        assert_string_equal(dur_bad("0.5ms"), "finer than a millisecond");
        assert_string_equal(dur_bad("1.0001s"), "finer than a millisecond");
#define TOO_LARGE "too large (max 9007199254740992ms, 2^53 ms)"
        assert_string_equal(dur_bad("999999999999999999d"), TOO_LARGE);
        assert_string_equal(dur_bad("106751991167d1d"), TOO_LARGE);
        assert_string_equal(dur_bad("9007199254740993ms"), TOO_LARGE);
        assert_string_equal(dur_bad("104249991374d"), TOO_LARGE);
        assert_string_equal(dur_bad("9007199254740992ms1ms"), TOO_LARGE);
        assert_string_equal(dur_bad("12345678901234567890s"),
                            "too many digits");
        /* Fraction digits are bounded too: 10^scale never wraps (it used
         * to, dividing by zero or reading 0.00194156990786306048s as 25
         * ms). */
        assert_string_equal(dur_bad("0.0000000000000000000000000000000000000"
                                    "0000000000000000000000000001s"),
                            "too many digits");
        assert_string_equal(dur_bad("0.00194156990786306048s"),
                            "too many digits");
        assert_string_equal(dur_bad("1.0000000000000000000s"),
                            "too many digits");
        /* Smaller than a millisecond, with the most digits allowed. */
        assert_string_equal(dur_bad("0.0000000000000000001s"),
                            "finer than a millisecond");
#undef TOO_LARGE
}

static void test_duration_n(void **state) {
        int64_t v = 0;
        const char hdr[] = "250msGARBAGE";
        char big[80];
        (void)state;

        assert_int_equal(sl_parse_duration_ms_n(hdr, 5, &v, err, sizeof(err)),
                         0);
        assert_int_equal(v, 250);
        assert_int_equal(sl_parse_duration_ms_n("90s", 3, &v, err, sizeof(err)),
                         0);
        assert_int_equal(v, 90000);
        assert_int_equal(sl_parse_duration_ms_n("", 0, &v, err, sizeof(err)),
                         -1);
        assert_string_equal(err, "empty value");
        memset(big, '1', sizeof(big));
        assert_int_equal(
            sl_parse_duration_ms_n(big, sizeof(big), &v, err, sizeof(err)), -1);
        assert_string_equal(err, "too long (max 63 bytes)");
        assert_int_equal(
            sl_parse_duration_ms_n("5\0s", 3, &v, err, sizeof(err)), -1);
        assert_string_equal(err, "contains a NUL byte");
}

static void test_duration_format(void **state) {
        static const int64_t vals[] = {
            0,     1,       999,      1000,     1500,
            60000, 5400000, 86400000, 90061001, 3600000LL * 25};
        char buf[64];
        (void)state;

        sl_duration_format(5400000, buf, sizeof(buf));
        assert_string_equal(buf, "90m");
        sl_duration_format(1500, buf, sizeof(buf));
        assert_string_equal(buf, "1500ms");
        sl_duration_format(86400000LL * 366, buf, sizeof(buf));
        assert_string_equal(buf, "366d");
        sl_duration_format(0, buf, sizeof(buf));
        assert_string_equal(buf, "0");
        for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
                sl_duration_format(vals[i], buf, sizeof(buf));
                assert_int_equal(dur_ok(buf), vals[i]);
        }
}

/* Sizes. */

static int64_t size_ok(const char *s) {
        int64_t v = -42;
        if (sl_parse_size(s, &v, err, sizeof(err)) != 0)
                fail_msg("size '%s' refused: %s", s, err);
        return v;
}

static const char *size_bad(const char *s) {
        int64_t v = -42;
        err[0] = '\0';
        assert_int_equal(sl_parse_size(s, &v, err, sizeof(err)), -1);
        assert_int_equal(v, -42);
        return err;
}

static void test_size_good(void **state) {
        char buf[64];
        (void)state;

        assert_int_equal(size_ok("512"), 512);
        assert_int_equal(size_ok("0"), 0);
        assert_int_equal(size_ok("64KiB"), 64 * 1024);
        assert_int_equal(size_ok("64MiB"), 64LL << 20);
        assert_int_equal(size_ok("1GiB"), 1LL << 30);
        assert_int_equal(size_ok("2TiB"), 2LL << 40);
        assert_int_equal(size_ok("10kB"), 10000);
        assert_int_equal(size_ok("10KB"), 10000);
        assert_int_equal(size_ok("10MB"), 10000000);
        assert_int_equal(size_ok("3GB"), 3000000000LL);
        assert_int_equal(size_ok("1.5MiB"), 1572864);
        assert_int_equal(size_ok("100B"), 100);
        assert_int_equal(size_ok("64 MiB"), 64LL << 20);
        assert_int_equal(size_ok("64mib"), 64LL << 20);

        sl_size_format(64LL << 20, buf, sizeof(buf));
        assert_string_equal(buf, "64MiB");
        sl_size_format(1536, buf, sizeof(buf));
        assert_string_equal(buf, "1536");
        sl_size_format(1000, buf, sizeof(buf));
        assert_string_equal(buf, "1000");
        sl_size_format(0, buf, sizeof(buf));
        assert_string_equal(buf, "0");
        sl_size_format(3LL << 40, buf, sizeof(buf));
        assert_string_equal(buf, "3TiB");

        /* Up to INT64_MAX, and 19 significant digits: what
         * sl_size_format writes always parses back. */
        assert_int_equal(size_ok("9223372036854775807"), INT64_MAX);
        assert_int_equal(size_ok("4444444444494MB"), 4444444444494000000LL);
        sl_size_format(4444444444494000000LL, buf, sizeof(buf));
        assert_string_equal(buf, "4444444444494000000");
        assert_int_equal(size_ok(buf), 4444444444494000000LL);
}

static void test_size_bad(void **state) {
        (void)state;
        assert_string_equal(size_bad(""), "empty value");
        assert_string_equal(size_bad("MiB"), "expected a number at 'MiB'");
        assert_string_equal(size_bad("-1"), "negative sizes are not allowed");
        assert_string_equal(size_bad("10XB"),
                            "unknown unit 'XB' (use B, kB, MB, GB, TB, KiB, "
                            "MiB, GiB or TiB)");
        assert_string_equal(size_bad("10 MiB x"), "unexpected ' x'");
        assert_string_equal(size_bad("1.1B"), "not a whole number of bytes");
        assert_string_equal(size_bad("99999999999TiB"), "too large");
        assert_string_equal(size_bad("9223372036854775808"), "too large");
        assert_string_equal(size_bad("1."), "malformed number");
        assert_string_equal(size_bad("99999999999999999999"),
                            "too many digits");
        assert_string_equal(size_bad("0.00000000000000000001MiB"),
                            "too many digits");
}

/* Rates. */

static sl_rate_t rate_ok(const char *s) {
        sl_rate_t r = {-1, -1};
        if (sl_parse_rate(s, &r, err, sizeof(err)) != 0)
                fail_msg("rate '%s' refused: %s", s, err);
        return r;
}

static const char *rate_bad(const char *s) {
        sl_rate_t r = {-1, -1};
        err[0] = '\0';
        assert_int_equal(sl_parse_rate(s, &r, err, sizeof(err)), -1);
        assert_true(r.per_sec == -1 && r.burst == -1);
        return err;
}

static void test_rate_good(void **state) {
        sl_rate_t r;
        (void)state;

        r = rate_ok("100/s");
        assert_float_equal(r.per_sec, 100, 1e-9);
        assert_float_equal(r.burst, 100, 1e-9);
        r = rate_ok("6000/m burst=50");
        assert_float_equal(r.per_sec, 100, 1e-9);
        assert_float_equal(r.burst, 50, 1e-9);
        r = rate_ok("2.5/s burst=1");
        assert_float_equal(r.per_sec, 2.5, 1e-9);
        assert_float_equal(r.burst, 1, 1e-9);
        r = rate_ok("1/m");
        assert_float_equal(r.per_sec, 1.0 / 60, 1e-12);
        assert_float_equal(r.burst, 1, 1e-9); /* at least 1 */
        r = rate_ok("3600/hour");
        assert_float_equal(r.per_sec, 1, 1e-9);
        r = rate_ok("86400/d");
        assert_float_equal(r.per_sec, 1, 1e-9);
        r = rate_ok("10/sec");
        assert_float_equal(r.per_sec, 10, 1e-9);
        r = rate_ok("120/min  burst=2.5");
        assert_float_equal(r.per_sec, 2, 1e-9);
        assert_float_equal(r.burst, 2.5, 1e-9);
        r = rate_ok("0/s");
        assert_float_equal(r.per_sec, 0, 0);
        assert_float_equal(r.burst, 1, 1e-9);
        r = rate_ok("1000000000/s burst=1000000000");
        assert_true(r.per_sec == 1e9 && r.burst == 1e9);
        r = rate_ok("86400000000000/d");
        assert_true(r.per_sec == 1e9 && r.burst == 1e9);
        r = rate_ok("0.0000000000000000001/s");
        assert_true(r.per_sec == 1e-19 && r.burst == 1);
}

static void test_rate_bad(void **state) {
        (void)state;
        assert_string_equal(rate_bad(""), "empty value");
        assert_string_equal(rate_bad("100"),
                            "expected <number>/<unit>, e.g. '100/s'");
        assert_string_equal(rate_bad("fast"),
                            "expected <number>/<unit>, e.g. '100/s'");
        assert_string_equal(rate_bad("100/"),
                            "missing unit after '/' (use s, m, h or d)");
        assert_string_equal(rate_bad("100/w"),
                            "unknown unit 'w' (use s, m, h or d)");
        assert_string_equal(rate_bad("-1/s"), "negative rates are not allowed");
        assert_string_equal(rate_bad("100/s burst=0"),
                            "burst must be at least 1");
        assert_string_equal(rate_bad("100/s burst=-3"),
                            "burst must be at least 1");
        assert_string_equal(rate_bad("100/s burst="), "invalid burst ''");
        assert_string_equal(rate_bad("100/s burst=5x"), "invalid burst '5x'");
        assert_string_equal(rate_bad("100/s max=5"),
                            "unexpected ' max=5' (expected burst=<number>)");
        assert_string_equal(rate_bad("100/s,"),
                            "unexpected ',' (expected burst=<number>)");
        /* Finite and bounded, whatever the digits (this one used to give
         * per_sec = inf). */
        assert_string_equal(rate_bad("0.000000000000000000000000000000000000"
                                     "00000000000000000000000000001/s"),
                            "too many digits");
        assert_string_equal(rate_bad("1000000001/s"),
                            "too fast (max 1000000000/s)");
        assert_string_equal(rate_bad("1234567890123456/s"), "too many digits");
        assert_string_equal(rate_bad("1/s burst=1000000001"),
                            "burst too large (max 1000000000)");
        assert_string_equal(rate_bad("1/s burst=12345678901234567890"),
                            "too many digits");
}

static void test_rate_format(void **state) {
        static const char *cases[][2] = {
            {"100/s", "100/s burst=100"},
            {"6000/m burst=50", "100/s burst=50"},
            {"2.5/s burst=1", "2.5/s burst=1"},
            {"1/m", "1/m burst=1"},
            {"1/h", "1/h burst=1"},
            {"7/d burst=3", "7/d burst=3"},
            {"0/s", "0/s burst=1"},
            /* The default burst need not have a short text (found by
             * fuzz_rate): it is written with all the digits it needs. */
            {"1024120/m", "1024120/m burst=17068.666666666668"},
            {"1.5/d", "1.5/d burst=1"},
            {"3/h burst=2.25", "3/h burst=2.25"},
            {"150/m", "2.5/s burst=2.5"},
            {"1/day", "1/d burst=1"},
            {"86400000000000/d", "1000000000/s burst=1000000000"},
            {"12345678901234.5/d burst=999999999.5",
             "12345678901234.5/d burst=999999999.5"},
            {"0.000000000000001/s", "0.0000000000036/h burst=1"},
            {"7/m burst=1.00000000000001", "7/m burst=1.00000000000001"},
        };
        char buf[64];
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sl_rate_t r = rate_ok(cases[i][0]), r2;
                sl_rate_format(&r, buf, sizeof(buf));
                assert_string_equal(buf, cases[i][1]);
                r2 = rate_ok(buf);
                /* Exactly the same doubles: a dump loads back unchanged. */
                assert_true(r2.per_sec == r.per_sec);
                assert_true(r2.burst == r.burst);
        }
}

/* Every rate the parser makes formats to a text that parses back to the
 * same doubles: a property over many odd values and every unit. */
static void test_rate_format_roundtrip(void **state) {
        static const char *units[] = {"s", "m", "h", "d", "sec", "min"};
        uint64_t x = 88172645463325252ULL;
        char in[96], buf[96];
        (void)state;

        for (int i = 0; i < 20000; i++) {
                sl_rate_t r, r2;
                uint64_t mant, div = 1;
                int scale, digits;

                x ^= x << 13; /* xorshift64 */
                x ^= x >> 7;
                x ^= x << 17;
                digits = 1 + (int)(x % 15);
                mant = (x >> 8) % 1000000000000000ULL;
                for (int k = 0; k < 15 - digits; k++)
                        mant /= 10;
                scale = (int)((x >> 4) % 16);
                for (int k = 0; k < scale; k++)
                        div *= 10;
                snprintf(in, sizeof(in), "%llu.%0*llu/%s burst=%llu.%llu",
                         (unsigned long long)(mant / div), scale ? scale : 1,
                         (unsigned long long)(scale ? mant % div : 0),
                         units[(x >> 40) % 6],
                         (unsigned long long)(1 + (x >> 20) % 100000),
                         (unsigned long long)((x >> 50) % 1000));
                if (sl_parse_rate(in, &r, err, sizeof(err)) != 0)
                        continue; /* too fast or too many digits */
                sl_rate_format(&r, buf, sizeof(buf));
                if (sl_parse_rate(buf, &r2, err, sizeof(err)) != 0)
                        fail_msg("'%s' formats as '%s', refused: %s", in, buf,
                                 err);
                if (r2.per_sec != r.per_sec || r2.burst != r.burst)
                        fail_msg("'%s' formats as '%s', which reads back "
                                 "differently",
                                 in, buf);
        }
}

/* Glob lists. */

static void test_globs(void **state) {
        sl_globs_t g = {NULL, 0};
        char buf[128];
        (void)state;

        assert_int_equal(
            sl_globs_parse("orders.*, billing.due", &g, err, sizeof(err)), 0);
        assert_int_equal(g.cnt, 2);
        assert_string_equal(g.pat[0], "orders.*");
        assert_string_equal(g.pat[1], "billing.due");
        assert_true(sl_globs_match(&g, "orders.eu"));
        assert_true(sl_globs_match(&g, "billing.due"));
        assert_false(sl_globs_match(&g, "billing.due2"));
        assert_false(sl_globs_match(&g, "orders"));
        sl_globs_format(&g, buf, sizeof(buf));
        assert_string_equal(buf, "orders.*, billing.due");
        sl_globs_free(&g);
        assert_int_equal(g.cnt, 0);
        assert_null(g.pat);

        assert_int_equal(sl_globs_parse("a b\tc,,d", &g, err, sizeof(err)), 0);
        assert_int_equal(g.cnt, 4);
        assert_true(sl_globs_match(&g, "d"));
        sl_globs_free(&g);

        assert_int_equal(sl_globs_parse("t[0-9]?", &g, err, sizeof(err)), 0);
        assert_true(sl_globs_match(&g, "t5x"));
        assert_false(sl_globs_match(&g, "tax"));
        sl_globs_free(&g);

        /* An empty list matches nothing. */
        assert_int_equal(sl_globs_parse(" , ", &g, err, sizeof(err)), 0);
        assert_int_equal(g.cnt, 0);
        assert_false(sl_globs_match(&g, "x"));
        sl_globs_free(&g);
        assert_false(sl_globs_match(NULL, "x"));
        sl_globs_free(NULL);

        /* Errors leave *out untouched. */
        g.cnt = 7;
        assert_int_equal(sl_globs_parse("ok.*, a/b", &g, err, sizeof(err)), -1);
        assert_string_equal(
            err, "invalid pattern 'a/b': '/' cannot appear in a topic name");
        assert_int_equal(g.cnt, 7);
        assert_int_equal(sl_globs_parse("topic[0-9", &g, err, sizeof(err)), -1);
        assert_string_equal(err, "invalid pattern 'topic[0-9': unclosed '['");
        assert_int_equal(sl_globs_parse("x[a/]", &g, err, sizeof(err)), -1);
        assert_string_equal(
            err, "invalid pattern 'x[a/]': '/' cannot appear in a topic name");
}

static int match1(const char *pat, const char *name) {
        sl_globs_t g = {NULL, 0};
        int r;

        if (sl_globs_parse(pat, &g, err, sizeof(err)) != 0)
                fail_msg("pattern '%s' refused: %s", pat, err);
        assert_int_equal(g.cnt, 1);
        r = sl_globs_match(&g, name);
        sl_globs_free(&g);
        return r;
}

/* '*' stays within a dot-separated segment, '**' crosses dots. */
static void test_globs_segments(void **state) {
        char longname[400], longpat[400];
        (void)state;

        assert_true(match1("orders.*", "orders.eu"));
        assert_true(match1("orders.*", "orders."));
        assert_false(match1("orders.*", "orders.eu.x"));
        assert_false(match1("orders.*", "orders"));
        assert_true(match1("orders.**", "orders.eu"));
        assert_true(match1("orders.**", "orders.eu.x"));
        assert_false(match1("orders.**", "ordersx"));
        assert_true(match1("**", "a"));
        assert_true(match1("**", "a.b.c"));
        assert_true(match1("**", ""));
        assert_true(match1("*", "orders"));
        assert_false(match1("*", "orders.eu"));
        assert_true(match1("*.eu", "orders.eu"));
        assert_false(match1("*.eu", "a.orders.eu"));
        assert_true(match1("**.eu", "a.orders.eu"));
        assert_true(match1("**eu", "a.orders.eu"));
        assert_true(match1("a.*.c", "a.b.c"));
        assert_true(match1("a.*.c", "a..c"));
        assert_false(match1("a.*.c", "a.b.x.c"));
        assert_true(match1("a.**.c", "a.b.x.c"));
        assert_true(match1("a***", "a.b")); /* three stars are two */
        assert_true(match1("o*s*", "orders"));
        assert_false(match1("o*s*", "orders.eu"));

        /* '?' and brackets match one character, but never a dot. */
        assert_true(match1("t?", "t5"));
        assert_false(match1("t?", "t."));
        assert_false(match1("t?", "t"));
        assert_false(match1("t?", "t55"));
        assert_true(match1("t[0-9]", "t7"));
        assert_false(match1("t[0-9]", "tx"));
        assert_true(match1("t[!0-9]", "tx"));
        assert_true(match1("t[^0-9]", "tx"));
        assert_false(match1("t[!0-9]", "t7"));
        assert_false(match1("t[!0-9]", "t."));
        assert_false(match1("t[.]", "t."));
        assert_true(match1("t[]]", "t]"));
        assert_true(match1("t[!]]", "tx"));
        assert_false(match1("t[!]]", "t]"));
        assert_true(match1("t[a-]", "t-"));
        assert_true(match1("t[-a]", "t-"));
        assert_true(match1("t[_x-z]", "ty"));
        assert_false(match1("t[_x-z]", "tw"));

        /* Literal characters and the whole name. */
        assert_true(match1("billing.due", "billing.due"));
        assert_false(match1("billing.due", "billing.due2"));
        assert_false(match1("billing.due", "xbilling.due"));

        /* No exponential backtracking: this answers at once. */
        memset(longname, 'a', 300);
        longname[300] = '\0';
        strcpy(longpat, "");
        for (int i = 0; i < 40; i++)
                strcat(longpat, "*a");
        strcat(longpat, "*b");
        assert_false(match1(longpat, longname));
        longname[299] = 'b';
        assert_true(match1(longpat, longname));
}

/* Timestamps. */

static int64_t ts_ok(const char *s) {
        int64_t v = -42;
        if (sl_parse_timestamp_ms(s, &v, err, sizeof(err)) != 0)
                fail_msg("timestamp '%s' refused: %s", s, err);
        return v;
}

static const char *ts_bad(const char *s) {
        int64_t v = -42;
        err[0] = '\0';
        assert_int_equal(sl_parse_timestamp_ms(s, &v, err, sizeof(err)), -1);
        assert_int_equal(v, -42);
        return err;
}

static void test_timestamp_good(void **state) {
        int64_t v;
        (void)state;

        assert_int_equal(ts_ok("1767225600000"), 1767225600000LL);
        assert_int_equal(ts_ok("0"), 0);
        assert_int_equal(ts_ok("2026-01-01T00:00:00Z"), 1767225600000LL);
        assert_int_equal(ts_ok("2026-01-01T01:00:00.250+01:00"),
                         1767225600250LL);
        assert_int_equal(ts_ok("2025-12-31T19:00:00-05:00"), 1767225600000LL);
        assert_int_equal(ts_ok("2026-01-01t00:00:00z"), 1767225600000LL);
        assert_int_equal(ts_ok("2026-01-01 00:00:00Z"), 1767225600000LL);
        assert_int_equal(ts_ok("1970-01-01T00:00:00Z"), 0);
        assert_int_equal(ts_ok("1970-01-01T00:00:00.5Z"), 500);
        assert_int_equal(ts_ok("1970-01-01T00:00:00.123456789Z"), 123);
        assert_int_equal(ts_ok("1969-12-31T23:59:59Z"), -1000);
        assert_int_equal(ts_ok("2024-02-29T12:00:00Z"), 1709208000000LL);
        assert_int_equal(ts_ok("2000-03-01T00:00:00+05:30"), 951849000000LL);
        assert_int_equal(ts_ok("2016-12-31T23:59:60Z"), 1483228800000LL);
        /* The range: epoch ms up to 2^53, RFC 3339 from year 0000 (with
         * its offset) to 9999. */
        assert_int_equal(ts_ok("9007199254740992"), SL_PARSE_TIMESTAMP_MAX_MS);
        assert_int_equal(ts_ok("253402300800000"), 253402300800000LL);
        assert_int_equal(ts_ok("9999-12-31T23:59:59.999Z"), 253402300799999LL);
        assert_int_equal(ts_ok("9999-12-31T23:59:60-23:59"),
                         253402300800000LL + 86340000);
        assert_int_equal(ts_ok("0000-01-01T00:00:00+23:59"),
                         SL_PARSE_TIMESTAMP_MIN_MS);
        assert_int_equal(ts_ok("0000000000000000000000000000001"), 1);

        assert_int_equal(sl_parse_timestamp_ms_n("2026-01-01T00:00:00Zjunk", 20,
                                                 &v, err, sizeof(err)),
                         0);
        assert_int_equal(v, 1767225600000LL);
}

static void test_timestamp_bad(void **state) {
        int64_t v;
        char big[100];
        (void)state;

        assert_string_equal(ts_bad(""), "empty value");
        assert_string_equal(ts_bad("-5"),
                            "negative timestamps are not allowed");
#define TS_TOO_LARGE "too large (max 9007199254740992, 2^53)"
        assert_string_equal(ts_bad("99999999999999999999"), TS_TOO_LARGE);
        assert_string_equal(ts_bad("9007199254740993"), TS_TOO_LARGE);
        assert_string_equal(ts_bad("9223372036854775808"), TS_TOO_LARGE);
#undef TS_TOO_LARGE
        assert_string_equal(ts_bad("tomorrow"),
                            "expected epoch milliseconds or RFC 3339 such "
                            "as 2026-01-01T00:00:00Z");
        assert_string_equal(ts_bad("2026-01-01"),
                            "expected epoch milliseconds or RFC 3339 such "
                            "as 2026-01-01T00:00:00Z");
        assert_string_equal(ts_bad("2026-13-01T00:00:00Z"), "invalid date");
        assert_string_equal(ts_bad("2025-02-29T00:00:00Z"), "invalid date");
        assert_string_equal(ts_bad("2026-01-00T00:00:00Z"), "invalid date");
        assert_string_equal(ts_bad("2026-01-01T24:00:00Z"),
                            "invalid time of day");
        assert_string_equal(ts_bad("2026-01-01T00:60:00Z"),
                            "invalid time of day");
        assert_string_equal(ts_bad("2026-01-01T00:00:00"),
                            "missing time zone (Z or +HH:MM)");
        assert_string_equal(ts_bad("2026-01-01T00:00:00.Z"),
                            "missing digits after '.'");
        assert_string_equal(ts_bad("2026-01-01T00:00:00+1"),
                            "invalid time zone offset (Z or +HH:MM)");
        assert_string_equal(ts_bad("2026-01-01T00:00:00+24:00"),
                            "invalid time zone offset (Z or +HH:MM)");
        assert_string_equal(ts_bad("2026-01-01T00:00:00CET"),
                            "missing time zone (Z or +HH:MM)");
        assert_string_equal(ts_bad("2026-01-01T00:00:00Z!"), "unexpected '!'");

        memset(big, '1', sizeof(big));
        assert_int_equal(
            sl_parse_timestamp_ms_n(big, sizeof(big), &v, err, sizeof(err)),
            -1);
        assert_string_equal(err, "too long (max 63 bytes)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_duration_good),
            cmocka_unit_test(test_duration_bad),
            cmocka_unit_test(test_duration_n),
            cmocka_unit_test(test_duration_format),
            cmocka_unit_test(test_size_good),
            cmocka_unit_test(test_size_bad),
            cmocka_unit_test(test_rate_good),
            cmocka_unit_test(test_rate_bad),
            cmocka_unit_test(test_rate_format),
            cmocka_unit_test(test_rate_format_roundtrip),
            cmocka_unit_test(test_globs),
            cmocka_unit_test(test_globs_segments),
            cmocka_unit_test(test_timestamp_good),
            cmocka_unit_test(test_timestamp_bad),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
