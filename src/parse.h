/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h — the value syntaxes of sluice's config file and headers:
 * durations, sizes, rates and glob lists.  Pure functions: no Kafka, no
 * libuv, no allocation except where noted.
 *
 * Every parser returns 0 on success or -1 on error, with a short reason
 * (no trailing period, e.g. "unknown unit 'x'") written to errstr.  They
 * read untrusted bytes (headers, the rates topic) and are fuzzed
 * (tests/fuzz/): any input gives a result or an error, never a crash, and
 * every result is inside the bounds below, so callers may add a duration to
 * a timestamp, or subtract two timestamps, without overflow.
 *
 * Numbers: at most 19 significant digits (15 in a rate's number before the
 * "/unit"; a burst takes 19) and at most 19
 * digits after the decimal point; more is "too many digits".  No
 * exponents, no signs, no locale.
 */
#ifndef SL_PARSE_H
#define SL_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The largest duration: 2^53 ms (about 285,000 years), exact in a double. */
#define SL_PARSE_DURATION_MAX_MS 9007199254740992LL

/* The range of timestamps.  Epoch milliseconds are 0 to 2^53; RFC 3339
 * has four-digit years, so its earliest is 0000-01-01T00:00:00+23:59 and
 * its latest falls in year 9999 or, with an offset, early 10000.  Which of
 * these a caller accepts (a due time before 1970, after 9999) is its own
 * rule; what the parser guarantees is |result| <= 2^53, so with the
 * duration bound above, due = at + delay, now - due and the like stay far
 * inside an int64_t. */
#define SL_PARSE_TIMESTAMP_MIN_MS (-62167305540000LL)
#define SL_PARSE_TIMESTAMP_MAX_MS 9007199254740992LL

/* Durations: an integer or decimal number followed by a unit: "250ms", "90s",
 * "1.5s", "30m", "24h", "7d"; "0" alone is zero.  Compound forms like
 * "1h30m" are accepted.  Result in milliseconds, 0 to
 * SL_PARSE_DURATION_MAX_MS; negative values, larger values and values finer
 * than a millisecond ("0.5ms") are errors.  Blanks around the value are
 * ignored, in sizes and rates too. */
int sl_parse_duration_ms(const char *s, int64_t *out_ms, char *errstr,
                         size_t errstr_size);

/* Formats a duration in the largest unit that keeps it whole ("90m",
 * "1500ms", "0"); the result parses back to the same value. */
void sl_duration_format(int64_t ms, char *buf, size_t size);

/* Sizes: a number with an optional unit: "512", "64KiB", "64MiB", "1GiB",
 * "10kB", "10MB" (decimal), "1.5MiB"; units are case-insensitive (B, kB,
 * MB, GB, TB, KiB, MiB, GiB, TiB).  Result in bytes, 0 to INT64_MAX; it
 * must be whole. */
int sl_parse_size(const char *s, int64_t *out_bytes, char *errstr,
                  size_t errstr_size);

/* Formats a size in the largest binary unit that keeps it whole ("64MiB",
 * "1000"); the result parses back to the same value. */
void sl_size_format(int64_t bytes, char *buf, size_t size);

/* Rates: "<number>/<unit>" with unit s, m, h, d (or sec, min, hour, day),
 * optionally followed by " burst=<number>": "100/s", "6000/m burst=50",
 * "2.5/s burst=1".  The default burst is the rate over one second, but at
 * least 1.  A rate of 0 (a stopped key) is allowed; burst must be >= 1.
 * Both are finite: per_sec is 0 to SL_RATE_MAX_PER_SEC, burst 1 to
 * SL_RATE_MAX_BURST. */
#define SL_RATE_MAX_PER_SEC 1e9
#define SL_RATE_MAX_BURST   1e9

typedef struct sl_rate_s {
        double per_sec; /* tokens added per second */
        double burst;   /* bucket capacity */
} sl_rate_t;

int sl_parse_rate(const char *s, sl_rate_t *out, char *errstr,
                  size_t errstr_size);

/* Formats a rate back as text ("100/s burst=100", "1/m burst=1"): for a
 * rate made by sl_parse_rate, the shortest text that parses back to exactly
 * the same doubles. */
void sl_rate_format(const sl_rate_t *rate, char *buf, size_t size);

/* Glob lists: comma- or space-separated patterns such as "orders.*,
 * billing.due", matched against whole topic names.  Dots separate the
 * segments of a name, and only '**' crosses them:
 *
 *   *       any run of characters without a '.' (possibly empty)
 *   **      any run of characters, dots included ("**" alone: every name)
 *   ?       one character other than '.'
 *   [a-z]   one character (other than '.') in the set; [!..] or [^..]
 *           negates; a ']' first in the set is literal (as in fnmatch)
 *
 * so "orders.*" matches "orders.eu" but not "orders.eu.x" nor "orders";
 * "orders.**" matches both "orders.eu" and "orders.eu.x".  Anything else
 * matches itself.  Matching takes time proportional to pattern length x
 * name length, whatever the pattern.  An empty list matches nothing. */
typedef struct sl_globs_s {
        char **pat; /* owned */
        int cnt;
} sl_globs_t;

/* On success *out is overwritten (the caller frees it with sl_globs_free);
 * on error *out is left untouched.  A pattern holding a character that
 * cannot appear in a topic name, or an unclosed '[', is an error. */
int sl_globs_parse(const char *s, sl_globs_t *out, char *errstr,
                   size_t errstr_size);
/* Writes the patterns joined by ", " (truncated to size). */
void sl_globs_format(const sl_globs_t *globs, char *buf, size_t size);
/* 1 if any pattern matches name. */
int sl_globs_match(const sl_globs_t *globs, const char *name);
void sl_globs_free(sl_globs_t *globs);

/* Timestamps for sluice-at: epoch milliseconds ("1767225600000") or RFC 3339
 * ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00.250+01:00"; 't', 'z' and a
 * space for 'T' are accepted).  Fraction digits beyond milliseconds are
 * dropped; second 60 (a leap second) is the next second. */
int sl_parse_timestamp_ms(const char *s, int64_t *out_ms, char *errstr,
                          size_t errstr_size);

/* Like the above but on a byte range that is not NUL-terminated (header
 * values).  Lengths over 63 bytes are an error. */
int sl_parse_duration_ms_n(const char *s, size_t len, int64_t *out_ms,
                           char *errstr, size_t errstr_size);
int sl_parse_timestamp_ms_n(const char *s, size_t len, int64_t *out_ms,
                            char *errstr, size_t errstr_size);

#endif
