/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c — the value syntaxes of the config file and of the sluice-*
 * headers: durations, sizes, rates, glob lists and timestamps (see parse.h).
 *
 * Numbers are read by one small decimal reader that keeps the value exact
 * (an integer mantissa and a count of decimal places), so "1.5s" is exactly
 * 1500 ms and never 1499 through floating point.  It is also independent of
 * the C locale: a decimal comma never sneaks in.  Durations and sizes must
 * come out as whole milliseconds and whole bytes; anything finer is an
 * error rather than a silent rounding.
 */
#include "parse.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DURATION_UNITS "use ms, s, m, h or d"
#define SIZE_UNITS     "use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB"
#define RATE_UNITS     "use s, m, h or d"

#define DURATION_TOO_LARGE "too large (max 9007199254740992ms, 2^53 ms)"

/* Skips leading blanks; returns the length without trailing blanks. */
static const char *trim(const char *s, size_t *lenp) {
        size_t len;

        while (isspace((unsigned char)*s))
                s++;
        len = strlen(s);
        while (len > 0 && isspace((unsigned char)s[len - 1]))
                len--;
        *lenp = len;
        return s;
}

/* An exact decimal: mant / 10^scale. */
typedef struct {
        uint64_t mant;
        int scale;
} dec_t;

/* Bounds of the decimal reader.  19 significant digits always fit a
 * uint64_t (10^19 - 1 < 2^64), and 10^19 is the largest power of ten that
 * does, so neither the mantissa nor the divisor 10^scale can wrap.  Leading
 * zeros of the integer part are not counted ("007s" is fine); every digit
 * after the point is ("0.000...1" with twenty zeros is refused rather than
 * read wrongly).  A rate's number takes fewer significant digits
 * (DEC_RATE_DIGITS): a double holds 15 decimal digits exactly, so the text
 * of a rate in its own unit reads back to the very same per_sec however it
 * was divided; this is what makes sl_rate_format's output parse back.  A
 * burst is not divided and may be any double (the default burst is the
 * rate over one second, "1024120/m" gives 17068.666666666668): it takes
 * all 19 digits, and 17 always suffice to write a double exactly. */
#define DEC_MAX_DIGITS  19
#define DEC_MAX_SCALE   19
#define DEC_RATE_DIGITS 15

/* Reads "digits[.digits]" from s (at most end), allowing at most max_sig
 * significant digits.  Returns the number of characters read, 0 when s does
 * not start with a digit, -1 when a '.' is not followed by a digit, -2 when
 * there are too many digits. */
static int dec_read(const char *s, const char *end, dec_t *d, int max_sig) {
        const char *p = s;
        int digits = 0;

        d->mant = 0;
        d->scale = 0;
        if (p >= end || !isdigit((unsigned char)*p))
                return 0;
        while (p < end && isdigit((unsigned char)*p)) {
                if (d->mant != 0 || *p != '0')
                        digits++;
                if (digits > max_sig)
                        return -2;
                d->mant = d->mant * 10 + (uint64_t)(*p - '0');
                p++;
        }
        if (p < end && *p == '.') {
                p++;
                if (p >= end || !isdigit((unsigned char)*p))
                        return -1;
                while (p < end && isdigit((unsigned char)*p)) {
                        if (d->mant != 0 || *p != '0')
                                digits++;
                        if (digits > max_sig || d->scale >= DEC_MAX_SCALE)
                                return -2;
                        d->mant = d->mant * 10 + (uint64_t)(*p - '0');
                        d->scale++;
                        p++;
                }
        }
        return (int)(p - s);
}

static int dec_fail(int n, char *errstr, size_t errstr_size) {
        return sl_errf(errstr, errstr_size, "%s",
                       n == -2 ? "too many digits" : "malformed number");
}

/* 10^n for 0 <= n <= DEC_MAX_SCALE (dec_read never makes a larger scale). */
static uint64_t pow10u(int n) {
        uint64_t r = 1;

        sl_assert(n >= 0 && n <= DEC_MAX_SCALE);
        while (n-- > 0)
                r *= 10;
        return r;
}

/* d * mult as an exact integer.  Returns 0, -1 when the product is not
 * whole, -2 when it is above max.  mant < 10^19 and mult < 2^41, so the
 * product fits 128 bits with room to spare. */
static int dec_mul(const dec_t *d, uint64_t mult, int64_t max, int64_t *out) {
        unsigned __int128 v = (unsigned __int128)d->mant * mult;
        uint64_t div = pow10u(d->scale);

        if (v % div != 0)
                return -1;
        v /= div;
        if (v > (unsigned __int128)max)
                return -2;
        *out = (int64_t)v;
        return 0;
}

/* The nearest double (mant and 10^scale are exact in a long double, so only
 * the final rounding is inexact). */
static double dec_double(const dec_t *d) {
        return (double)((long double)d->mant / (long double)pow10u(d->scale));
}

/* Length of the run of letters at s. */
static size_t alpha_run(const char *s, const char *end) {
        const char *p = s;
        while (p < end && isalpha((unsigned char)*p))
                p++;
        return (size_t)(p - s);
}

static int word_eq(const char *s, size_t len, const char *word) {
        return strlen(word) == len && !strncmp(s, word, len);
}

static int word_ieq(const char *s, size_t len, const char *word) {
        return strlen(word) == len && !strncasecmp(s, word, len);
}

/* Durations. */

static int duration_unit(const char *u, size_t len, uint64_t *ms) {
        static const struct {
                const char *name;
                uint64_t ms;
        } units[] = {
            {"ms", 1},         {"s", 1000},        {"m", 60000},
            {"h", 3600000ULL}, {"d", 86400000ULL},
        };
        for (size_t i = 0; i < SL_ARRAY_SIZE(units); i++) {
                if (word_eq(u, len, units[i].name)) {
                        *ms = units[i].ms;
                        return 0;
                }
        }
        return -1;
}

static int duration_parse(const char *s, size_t len, int64_t *out_ms,
                          char *errstr, size_t errstr_size) {
        const char *p = s, *end = s + len;
        int64_t total = 0;

        if (len == 0)
                return sl_errf(errstr, errstr_size, "empty value");
        if (*p == '-')
                return sl_errf(errstr, errstr_size,
                               "negative durations are not allowed");

        while (p < end) {
                dec_t d;
                uint64_t mult;
                int64_t part;
                const char *num = p;
                int n = dec_read(p, end, &d, DEC_MAX_DIGITS);
                size_t ulen;

                if (n < 0)
                        return dec_fail(n, errstr, errstr_size);
                if (n == 0)
                        return sl_errf(errstr, errstr_size,
                                       "expected a number at '%.*s'",
                                       (int)(end - p), p);
                p += n;
                ulen = alpha_run(p, end);
                if (ulen == 0) {
                        /* "0" alone is zero; any other bare number is
                         * ambiguous (seconds? milliseconds?). */
                        if (num == s && p == end && d.mant == 0) {
                                *out_ms = 0;
                                return 0;
                        }
                        return sl_errf(
                            errstr, errstr_size,
                            "missing unit after '%.*s' (" DURATION_UNITS ")", n,
                            num);
                }
                if (duration_unit(p, ulen, &mult) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "unknown unit '%.*s' (" DURATION_UNITS
                                       ")",
                                       (int)ulen, p);
                p += ulen;
                switch (dec_mul(&d, mult, SL_PARSE_DURATION_MAX_MS, &part)) {
                case -1:
                        return sl_errf(errstr, errstr_size,
                                       "finer than a millisecond");
                case -2:
                        return sl_errf(errstr, errstr_size, DURATION_TOO_LARGE);
                }
                /* Both are at most the maximum: the sum cannot wrap. */
                total += part;
                if (total > SL_PARSE_DURATION_MAX_MS)
                        return sl_errf(errstr, errstr_size, DURATION_TOO_LARGE);
        }
        *out_ms = total;
        return 0;
}

int sl_parse_duration_ms(const char *s, int64_t *out_ms, char *errstr,
                         size_t errstr_size) {
        size_t len;

        if (!s)
                return sl_errf(errstr, errstr_size, "empty value");
        s = trim(s, &len);
        return duration_parse(s, len, out_ms, errstr, errstr_size);
}

/* Copies a header value into a NUL-terminated buffer of 64 bytes. */
static int copy_n(const char *s, size_t len, char *buf, char *errstr,
                  size_t errstr_size) {
        if (len > 63)
                return sl_errf(errstr, errstr_size, "too long (max 63 bytes)");
        if (len && memchr(s, '\0', len))
                return sl_errf(errstr, errstr_size, "contains a NUL byte");
        if (len)
                memcpy(buf, s, len);
        buf[len] = '\0';
        return 0;
}

int sl_parse_duration_ms_n(const char *s, size_t len, int64_t *out_ms,
                           char *errstr, size_t errstr_size) {
        char buf[64];

        if (!s && len)
                return sl_errf(errstr, errstr_size, "empty value");
        if (copy_n(s, len, buf, errstr, errstr_size) == -1)
                return -1;
        return sl_parse_duration_ms(buf, out_ms, errstr, errstr_size);
}

void sl_duration_format(int64_t ms, char *buf, size_t size) {
        static const struct {
                const char *name;
                int64_t ms;
        } units[] = {
            {"d", 86400000LL}, {"h", 3600000LL}, {"m", 60000}, {"s", 1000}};

        if (ms == 0) {
                snprintf(buf, size, "0");
                return;
        }
        for (size_t i = 0; i < SL_ARRAY_SIZE(units); i++) {
                if (ms % units[i].ms == 0) {
                        snprintf(buf, size, "%lld%s",
                                 (long long)(ms / units[i].ms), units[i].name);
                        return;
                }
        }
        snprintf(buf, size, "%lldms", (long long)ms);
}

/* Sizes. */

int sl_parse_size(const char *s, int64_t *out_bytes, char *errstr,
                  size_t errstr_size) {
        static const struct {
                const char *name;
                uint64_t mult;
        } units[] = {
            {"b", 1},
            {"kb", 1000ULL},
            {"mb", 1000000ULL},
            {"gb", 1000000000ULL},
            {"tb", 1000000000000ULL},
            {"kib", 1ULL << 10},
            {"mib", 1ULL << 20},
            {"gib", 1ULL << 30},
            {"tib", 1ULL << 40},
        };
        const char *p, *end;
        size_t len, ulen;
        uint64_t mult = 1;
        dec_t d;
        int n;

        if (!s)
                return sl_errf(errstr, errstr_size, "empty value");
        s = trim(s, &len);
        p = s;
        end = s + len;
        if (len == 0)
                return sl_errf(errstr, errstr_size, "empty value");
        if (*p == '-')
                return sl_errf(errstr, errstr_size,
                               "negative sizes are not allowed");
        n = dec_read(p, end, &d, DEC_MAX_DIGITS);
        if (n < 0)
                return dec_fail(n, errstr, errstr_size);
        if (n == 0)
                return sl_errf(errstr, errstr_size,
                               "expected a number at '%.*s'", (int)len, s);
        p += n;
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        ulen = alpha_run(p, end);
        if (ulen) {
                size_t i;
                for (i = 0; i < SL_ARRAY_SIZE(units); i++)
                        if (word_ieq(p, ulen, units[i].name))
                                break;
                if (i == SL_ARRAY_SIZE(units))
                        return sl_errf(errstr, errstr_size,
                                       "unknown unit '%.*s' (" SIZE_UNITS ")",
                                       (int)ulen, p);
                mult = units[i].mult;
                p += ulen;
        }
        if (p < end)
                return sl_errf(errstr, errstr_size, "unexpected '%.*s'",
                               (int)(end - p), p);
        switch (dec_mul(&d, mult, INT64_MAX, out_bytes)) {
        case -1:
                return sl_errf(errstr, errstr_size,
                               "not a whole number of bytes");
        case -2:
                return sl_errf(errstr, errstr_size, "too large");
        }
        return 0;
}

void sl_size_format(int64_t bytes, char *buf, size_t size) {
        static const struct {
                const char *name;
                int64_t mult;
        } units[] = {{"TiB", 1LL << 40},
                     {"GiB", 1LL << 30},
                     {"MiB", 1LL << 20},
                     {"KiB", 1LL << 10}};

        if (bytes != 0) {
                for (size_t i = 0; i < SL_ARRAY_SIZE(units); i++) {
                        if (bytes % units[i].mult == 0) {
                                snprintf(buf, size, "%lld%s",
                                         (long long)(bytes / units[i].mult),
                                         units[i].name);
                                return;
                        }
                }
        }
        snprintf(buf, size, "%lld", (long long)bytes);
}

/* Rates. */

static const struct {
        const char *name;
        double secs;
} rate_units[] = {
    {"s", 1},       {"sec", 1},   {"m", 60},      {"min", 60},   {"h", 3600},
    {"hour", 3600}, {"d", 86400}, {"day", 86400}, {"second", 1}, {"minute", 60},
};

int sl_parse_rate(const char *s, sl_rate_t *out, char *errstr,
                  size_t errstr_size) {
        const char *p, *end, *num;
        size_t len, ulen, i;
        double per_sec, burst;
        dec_t d;
        int n;

        if (!s)
                return sl_errf(errstr, errstr_size, "empty value");
        s = trim(s, &len);
        p = s;
        end = s + len;
        if (len == 0)
                return sl_errf(errstr, errstr_size, "empty value");
        if (*p == '-')
                return sl_errf(errstr, errstr_size,
                               "negative rates are not allowed");
        n = dec_read(p, end, &d, DEC_RATE_DIGITS);
        if (n < 0)
                return dec_fail(n, errstr, errstr_size);
        if (n == 0 || n == (int)len || p[n] != '/')
                return sl_errf(errstr, errstr_size,
                               "expected <number>/<unit>, e.g. '100/s'");
        per_sec = dec_double(&d);
        p += n + 1;
        ulen = alpha_run(p, end);
        for (i = 0; i < SL_ARRAY_SIZE(rate_units); i++)
                if (word_eq(p, ulen, rate_units[i].name))
                        break;
        if (ulen == 0)
                return sl_errf(errstr, errstr_size,
                               "missing unit after '/' (" RATE_UNITS ")");
        if (i == SL_ARRAY_SIZE(rate_units))
                return sl_errf(errstr, errstr_size,
                               "unknown unit '%.*s' (" RATE_UNITS ")",
                               (int)ulen, p);
        per_sec /= rate_units[i].secs;
        /* At most 15 digits keep the number below 10^15: always finite. */
        if (!isfinite(per_sec) || per_sec > SL_RATE_MAX_PER_SEC)
                return sl_errf(errstr, errstr_size,
                               "too fast (max 1000000000/s)");
        p += ulen;
        burst = per_sec < 1 ? 1 : per_sec;

        if (p < end) {
                const char *q = p;
                while (q < end && isspace((unsigned char)*q))
                        q++;
                if (q == p || (size_t)(end - q) < 6 || strncmp(q, "burst=", 6))
                        return sl_errf(errstr, errstr_size,
                                       "unexpected '%.*s' (expected "
                                       "burst=<number>)",
                                       (int)(end - p), p);
                q += 6;
                num = q;
                if (q < end && *q == '-')
                        return sl_errf(errstr, errstr_size,
                                       "burst must be at least 1");
                n = dec_read(q, end, &d, DEC_MAX_DIGITS);
                if (n == -2)
                        return dec_fail(n, errstr, errstr_size);
                if (n <= 0 || q + n != end)
                        return sl_errf(errstr, errstr_size,
                                       "invalid burst '%.*s'", (int)(end - num),
                                       num);
                burst = dec_double(&d);
                if (burst < 1)
                        return sl_errf(errstr, errstr_size,
                                       "burst must be at least 1");
                if (!isfinite(burst) || burst > SL_RATE_MAX_BURST)
                        return sl_errf(errstr, errstr_size,
                                       "burst too large (max 1000000000)");
        }
        out->per_sec = per_sec;
        out->burst = burst;
        return 0;
}

/* Writes v with the fewest decimals (at most DEC_MAX_SCALE) whose reading
 * by dec_read (at most max_sig digits), divided by secs, gives back exactly
 * want.  Returns the length written, or 0 when there is no such text. */
static int rate_num_format(double v, double secs, double want, int max_sig,
                           char *buf, size_t size) {
        for (int k = 0; k <= DEC_MAX_SCALE; k++) {
                dec_t d;
                int n = snprintf(buf, size, "%.*f", k, v);

                if (n <= 0 || (size_t)n >= size)
                        return 0;
                if (dec_read(buf, buf + n, &d, max_sig) == n &&
                    dec_double(&d) / secs == want)
                        return n;
        }
        return 0;
}

void sl_rate_format(const sl_rate_t *rate, char *buf, size_t size) {
        static const struct {
                const char *name;
                double secs;
        } units[] = {{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
        char best[64] = "", num[48], burst[48];
        size_t i;

        /* The shortest text that parses back to the very same rate, in any
         * unit: "2.5/s", and "1/m" rather than "0.0166666666666667/s" (which
         * would not be the same double).  Every rate sl_parse_rate makes has
         * one: its own text, at most 15 significant digits, reads back
         * exactly.  Anything else (not produced by the parser) gets a close
         * approximation. */
        for (i = 0; isfinite(rate->per_sec) && rate->per_sec >= 0 &&
                    i < SL_ARRAY_SIZE(units);
             i++) {
                double v = rate->per_sec * units[i].secs;
                int n = rate_num_format(v, units[i].secs, rate->per_sec,
                                        DEC_RATE_DIGITS, num, sizeof(num));
                if (n > 0 && (!best[0] || strlen(num) + 2 < strlen(best)))
                        snprintf(best, sizeof(best), "%s/%s", num,
                                 units[i].name);
        }
        if (!best[0])
                snprintf(best, sizeof(best), "%.6f/s",
                         isfinite(rate->per_sec) && rate->per_sec > 0
                             ? SL_MIN(rate->per_sec, SL_RATE_MAX_PER_SEC)
                             : 0);
        if (!isfinite(rate->burst) || rate->burst < 1 ||
            !rate_num_format(rate->burst, 1, rate->burst, DEC_MAX_DIGITS, burst,
                             sizeof(burst)))
                snprintf(burst, sizeof(burst), "%.0f",
                         isfinite(rate->burst) && rate->burst > 1
                             ? SL_MIN(ceil(rate->burst), SL_RATE_MAX_BURST)
                             : 1);
        snprintf(buf, size, "%s burst=%s", best, burst);
}

/* Glob lists. */

static int glob_char_ok(char c) {
        return isalnum((unsigned char)c) || strchr("._-*?[]!^", c);
}

static int glob_check(const char *pat, char *errstr, size_t errstr_size) {
        for (const char *p = pat; *p; p++) {
                if (!glob_char_ok(*p))
                        return sl_errf(
                            errstr, errstr_size,
                            "invalid pattern '%s': '%c' cannot appear "
                            "in a topic name",
                            pat, *p);
                if (*p == '[') {
                        /* fnmatch: "[]" and "[!]" take ']' literally. */
                        const char *q = p + 1;
                        if (*q == '!' || *q == '^')
                                q++;
                        if (*q == ']')
                                q++;
                        q = strchr(q, ']');
                        if (!q)
                                return sl_errf(errstr, errstr_size,
                                               "invalid pattern '%s': unclosed "
                                               "'['",
                                               pat);
                        for (const char *r = p + 1; r < q; r++)
                                if (!glob_char_ok(*r))
                                        return sl_errf(
                                            errstr, errstr_size,
                                            "invalid pattern '%s': "
                                            "'%c' cannot appear in a "
                                            "topic name",
                                            pat, *r);
                        p = q;
                }
        }
        return 0;
}

int sl_globs_parse(const char *s, sl_globs_t *out, char *errstr,
                   size_t errstr_size) {
        sl_globs_t g = {NULL, 0};
        const char *p = s ? s : "";

        while (*p) {
                size_t n;
                char *pat;

                p += strspn(p, ", \t\r\n");
                n = strcspn(p, ", \t\r\n");
                if (n == 0)
                        break;
                pat = sl_strndup(p, n);
                p += n;
                if (glob_check(pat, errstr, errstr_size) == -1) {
                        free(pat);
                        sl_globs_free(&g);
                        return -1;
                }
                g.pat = sl_realloc(g.pat, sizeof(*g.pat) * (size_t)(g.cnt + 1));
                g.pat[g.cnt++] = pat;
        }
        *out = g;
        return 0;
}

/* The matcher.  A pattern is a sequence of tokens, each matching a set of
 * strings: a literal character, '?' or a bracket (one character other than
 * '.'), '*' (a run of characters without '.', possibly empty) and '**' (any
 * run).  Rather than backtrack, which takes exponential time on patterns
 * such as "*a*a*a*a*b", the matcher walks the tokens once and keeps the set
 * of name positions the pattern so far can end at (reach[]): O(pattern x
 * name) time, O(name) space, whatever the input. */

/* Whether c is in the bracket expression starting at pat (at '['); *endp
 * is set past its ']'.  Returns -1 if the bracket is not closed (then it is
 * a literal '['; sl_globs_parse never lets one through). */
static int bracket_match(const char *pat, char c, const char **endp) {
        const char *p = pat + 1;
        int neg = 0, hit = 0;

        if (*p == '!' || *p == '^') {
                neg = 1;
                p++;
        }
        /* A ']' first is literal, as in fnmatch. */
        for (const char *first = p; *p && (*p != ']' || p == first); p++) {
                if (p[1] == '-' && p[2] && p[2] != ']') {
                        if ((unsigned char)c >= (unsigned char)p[0] &&
                            (unsigned char)c <= (unsigned char)p[2])
                                hit = 1;
                        p += 2;
                } else if (*p == c) {
                        hit = 1;
                }
        }
        if (*p != ']')
                return -1;
        *endp = p + 1;
        return hit != neg;
}

static int glob_match(const char *pat, const char *name) {
        size_t n = strlen(name);
        unsigned char stack[256], *reach, *heap = NULL;
        const char *p = pat;
        int any = 1, r;

        reach = n < sizeof(stack) ? stack : (heap = sl_malloc(n + 1));
        memset(reach, 0, n + 1);
        reach[0] = 1;
        while (*p && any) {
                any = 0;
                if (*p == '*') {
                        int cross = p[1] == '*';
                        while (*p == '*')
                                p++;
                        /* reach[j] |= reach[j-1] while the run may grow
                         * over name[j-1]. */
                        for (size_t j = 1; j <= n; j++)
                                if (!reach[j] && reach[j - 1] &&
                                    (cross || name[j - 1] != '.'))
                                        reach[j] = 1;
                        for (size_t j = 0; j <= n && !any; j++)
                                any = reach[j];
                        continue;
                }
                /* One character: shift the set right by one where it
                 * matches, from the end so each position moves once.  An
                 * unclosed '[' (never let through by sl_globs_parse) is a
                 * literal. */
                {
                        const char *next = p + 1, *e;
                        int bracket =
                            *p == '[' && bracket_match(p, 'a', &e) >= 0;

                        if (bracket)
                                next = e;
                        for (size_t j = n; j > 0; j--) {
                                char c = name[j - 1];
                                int m;
                                reach[j] = 0;
                                if (!reach[j - 1])
                                        continue;
                                if (*p == '?')
                                        m = c != '.';
                                else if (bracket)
                                        m = c != '.' && bracket_match(p, c, &e);
                                else
                                        m = c == *p;
                                reach[j] = (unsigned char)m;
                                any |= m;
                        }
                        reach[0] = 0;
                        p = next;
                }
        }
        r = !*p && reach[n];
        free(heap);
        return r;
}

int sl_globs_match(const sl_globs_t *globs, const char *name) {
        if (!globs || !name)
                return 0;
        for (int i = 0; i < globs->cnt; i++)
                if (glob_match(globs->pat[i], name))
                        return 1;
        return 0;
}

void sl_globs_free(sl_globs_t *globs) {
        if (!globs)
                return;
        for (int i = 0; i < globs->cnt; i++)
                free(globs->pat[i]);
        free(globs->pat);
        globs->pat = NULL;
        globs->cnt = 0;
}

void sl_globs_format(const sl_globs_t *globs, char *buf, size_t size) {
        size_t off = 0;

        if (size == 0)
                return;
        buf[0] = '\0';
        for (int i = 0; globs && i < globs->cnt && off < size; i++) {
                int n = snprintf(buf + off, size - off, "%s%s", i ? ", " : "",
                                 globs->pat[i]);
                if (n < 0)
                        break;
                off += (size_t)n;
        }
}

/* Timestamps. */

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
        int64_t era, yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
        static const int days[] = {31, 28, 31, 30, 31, 30,
                                   31, 31, 30, 31, 30, 31};
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        return m == 2 && leap ? 29 : days[m - 1];
}

/* Reads exactly n digits. */
static int digits(const char **pp, const char *end, int n, int *out) {
        const char *p = *pp;
        int v = 0;

        if (end - p < n)
                return -1;
        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)p[i]))
                        return -1;
                v = v * 10 + (p[i] - '0');
        }
        *pp = p + n;
        *out = v;
        return 0;
}

static int expect(const char **pp, const char *end, char c) {
        if (*pp >= end || **pp != c)
                return -1;
        (*pp)++;
        return 0;
}

#define RFC3339_HINT                                                           \
        "expected epoch milliseconds or RFC 3339 such as "                     \
        "2026-01-01T00:00:00Z"

static int rfc3339_parse(const char *s, size_t len, int64_t *out_ms,
                         char *errstr, size_t errstr_size) {
        const char *p = s, *end = s + len;
        int y, mo, d, h, mi, sec, frac_ms = 0, off_min = 0;
        int64_t secs;

        if (digits(&p, end, 4, &y) || expect(&p, end, '-') ||
            digits(&p, end, 2, &mo) || expect(&p, end, '-') ||
            digits(&p, end, 2, &d))
                return sl_errf(errstr, errstr_size, RFC3339_HINT);
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
                return sl_errf(errstr, errstr_size, "invalid date");
        if (p >= end || (*p != 'T' && *p != 't' && *p != ' '))
                return sl_errf(errstr, errstr_size, RFC3339_HINT);
        p++;
        if (digits(&p, end, 2, &h) || expect(&p, end, ':') ||
            digits(&p, end, 2, &mi) || expect(&p, end, ':') ||
            digits(&p, end, 2, &sec))
                return sl_errf(errstr, errstr_size, RFC3339_HINT);
        /* Second 60 is a leap second (RFC 3339 5.7). */
        if (h > 23 || mi > 59 || sec > 60)
                return sl_errf(errstr, errstr_size, "invalid time of day");
        if (p < end && *p == '.') {
                int n = 0;
                p++;
                if (p >= end || !isdigit((unsigned char)*p))
                        return sl_errf(errstr, errstr_size,
                                       "missing digits after '.'");
                /* Finer digits than milliseconds are dropped: timers have
                 * millisecond resolution. */
                for (; p < end && isdigit((unsigned char)*p); p++, n++)
                        if (n < 3)
                                frac_ms = frac_ms * 10 + (*p - '0');
                for (; n < 3; n++)
                        frac_ms *= 10;
        }
        if (p >= end)
                return sl_errf(errstr, errstr_size,
                               "missing time zone (Z or +HH:MM)");
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int sign = *p == '-' ? -1 : 1, oh, om;
                p++;
                if (digits(&p, end, 2, &oh) || expect(&p, end, ':') ||
                    digits(&p, end, 2, &om) || oh > 23 || om > 59)
                        return sl_errf(errstr, errstr_size,
                                       "invalid time zone offset (Z or "
                                       "+HH:MM)");
                off_min = sign * (oh * 60 + om);
        } else {
                return sl_errf(errstr, errstr_size,
                               "missing time zone (Z or +HH:MM)");
        }
        if (p != end)
                return sl_errf(errstr, errstr_size, "unexpected '%.*s'",
                               (int)(end - p), p);

        /* Four-digit years keep every term small: no overflow, and the
         * result within SL_PARSE_TIMESTAMP_MIN_MS..MAX_MS. */
        secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
               (int64_t)off_min * 60;
        *out_ms = secs * 1000 + frac_ms;
        return 0;
}

int sl_parse_timestamp_ms(const char *s, int64_t *out_ms, char *errstr,
                          size_t errstr_size) {
        size_t len, i;
        int64_t v = 0;

        if (!s)
                return sl_errf(errstr, errstr_size, "empty value");
        s = trim(s, &len);
        if (len == 0)
                return sl_errf(errstr, errstr_size, "empty value");
        if (*s == '-')
                return sl_errf(errstr, errstr_size,
                               "negative timestamps are not allowed");
        for (i = 0; i < len && isdigit((unsigned char)s[i]); i++)
                ;
        if (i == len) {
                /* v stays below 10 * max + 9: no overflow. */
                for (i = 0; i < len; i++) {
                        v = v * 10 + (s[i] - '0');
                        if (v > SL_PARSE_TIMESTAMP_MAX_MS)
                                return sl_errf(errstr, errstr_size,
                                               "too large (max "
                                               "9007199254740992, 2^53)");
                }
                *out_ms = v;
                return 0;
        }
        return rfc3339_parse(s, len, out_ms, errstr, errstr_size);
}

int sl_parse_timestamp_ms_n(const char *s, size_t len, int64_t *out_ms,
                            char *errstr, size_t errstr_size) {
        char buf[64];

        if (!s && len)
                return sl_errf(errstr, errstr_size, "empty value");
        if (copy_n(s, len, buf, errstr, errstr_size) == -1)
                return -1;
        return sl_parse_timestamp_ms(buf, out_ms, errstr, errstr_size);
}
