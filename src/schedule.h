/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule.h — recurring schedules: what a sluice-every or sluice-cron
 * header says, read into a small value, and the next instant it fires in
 * an IANA time zone.
 *
 * A schedule is either a fixed interval ("every 10m") or a cron expression
 * ("0 9 * * MON-FRI"), plus optional bounds: a start, an until and a count.
 * It is a plain value (no pointers, 72 bytes): copy it, keep it in a
 * timer, parse it again from the header text after a restart.
 *
 * Fixed intervals are absolute time: the instants are anchor + k * every
 * (k = 0, 1, ...), the anchor being the start when there is one, else the
 * Unix epoch, so "every 1h" fires on the hour UTC and the same schedule
 * produced again gives the same instants.  The zone plays no part ("every
 * 1d" is 24 hours, across DST changes too).
 *
 * Cron expressions are wall-clock time in a zone (schedule.c says which
 * syntax and which reading of the day fields).  A local time that does not
 * exist (the hour skipped when DST starts) fires at the first instant after
 * the gap; a local time that happens twice (the hour repeated when DST
 * ends) fires once, at its first instant.  So in Europe/Paris, "30 2 * * *"
 * fires at 03:00 CEST on the day DST starts, and "0 * * * *" skips the
 * second 02:00 on the day it ends (use sluice-every for a strict interval).
 *
 * Zones come from ICU's calendar (libicu, pkg-config icu-i18n) through a
 * cache of opened calendars, sl_tzcache_t: opening a zone is far dearer
 * than a next() (schedule.c has the figures), and a process needs few.
 *
 * The zone data is ICU's own copy, not the system's /usr/share/zoneinfo:
 * Debian 12's libicu72 carries 2022e (sl_tz_data_version()), so a zone
 * whose rules changed since is wrong there: America/Mexico_City still
 * keeps DST in 2026 (noon is 17:00Z, not 18:00Z).  ICU reads newer data
 * from the zoneinfo64.res and companions in $ICU_TIMEZONE_FILES_DIR when
 * that is set (ICU's documented way to update zones without a rebuild).
 *
 * Pure: no Kafka, no libuv.  Errors are -1 with a short reason (no
 * trailing period) in errstr, fit for a DLQ record.  Nothing here is
 * thread-safe: one cache per thread, and a schedule is only read.
 */
#ifndef SL_SCHEDULE_H
#define SL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* The shortest fixed interval: one second, a cron expression's grain. */
#define SL_SCHEDULE_EVERY_MIN_MS 1000
/* The longest expression read (header bytes). */
#define SL_SCHEDULE_EXPR_MAX 256
/* The largest sluice-count. */
#define SL_SCHEDULE_COUNT_MAX 1000000000000000LL
/* How far sl_schedule_next() looks: a cron expression with no instant in
 * this many years of local time is reported as one that never fires.
 * The longest gap a valid expression can have is 8 years ("0 0 29 2 *"
 * from 2096 to 2104: 2100 is not a leap year). */
#define SL_SCHEDULE_SEARCH_YEARS 10
/* No start / no until. */
#define SL_SCHEDULE_NO_START INT64_MIN
#define SL_SCHEDULE_NO_UNTIL INT64_MAX

typedef enum {
        SL_SCHEDULE_EVERY = 1, /* a fixed interval: every_ms */
        SL_SCHEDULE_CRON = 2,  /* a cron expression: cron */
} sl_schedule_kind_t;

/* A cron expression as sets of values, one bit per value. */
typedef struct sl_cron_s {
        uint64_t sec;   /* bit n: second n, 0-59 ({0} without a seconds
                         * field) */
        uint64_t min;   /* bit n: minute n, 0-59 */
        uint32_t hour;  /* bit n: hour n, 0-23 */
        uint32_t mday;  /* bit n: day of month n, 1-31 */
        uint16_t month; /* bit n: month n, 1-12 */
        uint8_t wday;   /* bit n: weekday n, 0 (Sunday) - 6 */
        uint8_t flags;  /* SL_CRON_* */
} sl_cron_t;

/* The day-of-month / day-of-week field was "*" or "?" (unrestricted). */
#define SL_CRON_MDAY_ANY 0x1
#define SL_CRON_WDAY_ANY 0x2

typedef struct sl_schedule_s {
        sl_schedule_kind_t kind;
        int64_t every_ms; /* SL_SCHEDULE_EVERY: the interval */
        sl_cron_t cron;   /* SL_SCHEDULE_CRON: the expression */
        int64_t start_ms; /* first instant allowed, or SL_SCHEDULE_NO_START */
        int64_t until_ms; /* last instant allowed, or SL_SCHEDULE_NO_UNTIL */
        int64_t count;    /* occurrences in all, 0 for no limit */
} sl_schedule_t;

/* Reads a sluice-every value (bytes, not NUL-terminated): a duration as
 * sl_parse_duration_ms() reads it, at least SL_SCHEDULE_EVERY_MIN_MS.
 * On success *out is overwritten, without bounds. */
int sl_schedule_parse_every(sl_schedule_t *out, const char *s, size_t len,
                            char *errstr, size_t errstr_size);

/* Reads a sluice-cron value (bytes, not NUL-terminated; at most
 * SL_SCHEDULE_EXPR_MAX): five fields, or six with a leading seconds field,
 * or a macro; schedule.c has the grammar.  An expression whose day fields
 * can never meet its months ("0 0 30 2 *") is an error here.  On success
 * *out is overwritten, without bounds. */
int sl_schedule_parse_cron(sl_schedule_t *out, const char *s, size_t len,
                           char *errstr, size_t errstr_size);

/* Sets the bounds from the sluice-start, sluice-until and sluice-count
 * values; a NULL value is an absent header.  Start and until are epoch
 * milliseconds or RFC 3339 (sl_parse_timestamp_ms), both inclusive; count
 * is 1 to SL_SCHEDULE_COUNT_MAX.  An until before the start is an error.
 * On error *s is left as it was. */
int sl_schedule_parse_bounds(sl_schedule_t *s, const char *start,
                             size_t start_len, const char *until,
                             size_t until_len, const char *count,
                             size_t count_len, char *errstr,
                             size_t errstr_size);

/* An opened IANA zone, owned by the cache that gave it. */
typedef struct sl_tz_s sl_tz_t;
typedef struct sl_tzcache_s sl_tzcache_t;

sl_tzcache_t *sl_tzcache_new(void);
/* Closes every zone of the cache; NULL is a no-op. */
void sl_tzcache_destroy(sl_tzcache_t *c);

/* The zone named name (a sluice-tz value: bytes, not NUL-terminated),
 * opened on first use and kept until the cache is destroyed.  Names are
 * ICU's system zone ids: the IANA names and their aliases ("UTC",
 * "Europe/Paris", "US/Eastern"), spelt as the zone database spells them
 * ("europe/paris" is not one); anything else, custom offsets such as
 * "GMT+3" included, is "unknown time zone".  Only known zones are kept,
 * so the cache holds at most the few hundred ICU knows, whatever the
 * input. */
int sl_tzcache_get(sl_tzcache_t *c, const char *name, size_t len, sl_tz_t **out,
                   char *errstr, size_t errstr_size);

/* The zone's name as it was asked for. */
const char *sl_tz_name(const sl_tz_t *tz);

/* On (the default), local times between two transitions of the zone are
 * converted by its offset there, ICU being asked only near a transition
 * and for a new window; off, ICU converts every one.  Both give the same
 * instants (the unit tests compare them); off is for those tests. */
void sl_tz_set_fast(sl_tz_t *tz, int on);

/* The version of the zone data ICU uses ("2022e"), for logs. */
const char *sl_tz_data_version(void);

/* sl_schedule_next(): no occurrence is left (the count is reached, or the
 * next one would be after the until, or after the year 9999). */
#define SL_SCHEDULE_END 1

/* The first instant of s after after_ms (epoch ms, at or after 1900) in
 * zone tz, given that fired occurrences have been produced already.
 * Returns 0 with *out_ms > after_ms, within the bounds (a whole second
 * for a cron expression),
 * SL_SCHEDULE_END when none is left, or -1 with a reason: a cron
 * expression with no instant in SL_SCHEDULE_SEARCH_YEARS years, an
 * after_ms out of range, a failure inside ICU.  tz may be NULL for a
 * fixed interval only.  Changes only the calendar tz holds (so tz is not
 * const). */
int sl_schedule_next(const sl_schedule_t *s, sl_tz_t *tz, int64_t after_ms,
                     int64_t fired, int64_t *out_ms, char *errstr,
                     size_t errstr_size);

#endif
