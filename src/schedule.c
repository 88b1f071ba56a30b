/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule.c — recurring schedules (see schedule.h): the cron grammar, the
 * search for the next instant, and the cache of ICU calendars.
 *
 * THE GRAMMAR
 *
 * A cron expression is five fields separated by blanks, or six when a
 * seconds field comes first:
 *
 *   [second] minute hour day-of-month month day-of-week
 *    0-59    0-59   0-23   1-31      1-12   0-7 (0 and 7: Sunday)
 *
 * Months may be named JAN-DEC and weekdays SUN-SAT (three letters, any
 * case).  Each field is a list of items separated by commas; an item is
 * "*", a value, a range "a-b" (a <= b: no wrapping), and any of these may
 * take a step: "*" + "/5" is every fifth value from the field's first,
 * "10-50/10" is 10, 20, ... 50, and "a/n" is "a-max/n".  "?" is "*" (the
 * day fields of other crons use it).  Without a seconds field the second
 * is 0.  The macros: @yearly and @annually (0 0 1 1 *), @monthly
 * (0 0 1 * *), @weekly (0 0 * * 0), @daily and @midnight (0 0 * * *),
 * @hourly (0 * * * *); @reboot and the extensions of other crons (L, W,
 * #, H) are errors.
 *
 * THE DAY FIELDS
 *
 * We follow crontab(5) of Vixie cron and its heirs (cronie, Debian's
 * cron): "If both fields are restricted (i.e., aren't *), the command will
 * be run when either field matches the current time.  For example,
 * ``30 4 1,15 * 5'' would cause a command to be run at 4:30 am on the 1st
 * and 15th of each month, plus every Friday."  When either is "*" (or
 * "?"), a day must match both, which is the other alone.  A field is
 * unrestricted only when it is exactly "*" or "?": "*" + "/2" is
 * restricted, as in robfig/cron and croniter (Vixie's code treats any
 * field starting with "*" as unrestricted, a quirk we do not copy).
 *
 * THE SEARCH
 *
 * sl_schedule_next() walks local civil time (year, month, day, hour,
 * minute, second) from the local time of after_ms, jumping whole months,
 * days, hours and minutes that cannot match: plain calendar arithmetic on
 * the proleptic Gregorian calendar, no zone in it.  Each local time that
 * matches is turned into an instant by ICU, with two options set on the
 * calendar: a skipped wall time gives the next valid instant
 * (UCAL_WALLTIME_NEXT_VALID: the end of the DST gap), a repeated one its
 * first instant (UCAL_WALLTIME_FIRST).  That map is monotonic in local
 * time, so the first matching local time whose instant is after after_ms
 * is the answer; local times whose instant is not (the repeated hour, when
 * after_ms is in its second pass) are stepped over.  Two local times in
 * the same gap give the same instant, which is one occurrence: every
 * schedule fires once at the end of a gap however many of its times fell
 * in it.
 *
 * The walk is bounded: SL_SCHEDULE_SEARCH_YEARS of local time, then "no
 * occurrence".  Expressions whose days can never fall in their months are
 * refused when parsed; the bound is what catches the rest.
 *
 * COST
 *
 * The walk asks ICU for local time and instants only near a DST change:
 * between two changes of the zone the offset is one number, kept with
 * the zone (its "window", tz_instant() says why that is exact), and
 * converting is arithmetic.  bench/schedule_next.c, on the development
 * machine (ICU 72, two shared cores, so +-50%): a next() of "* * * * * *"
 * (every second), of every five minutes or of "0 9 * * MON-FRI" in
 * Europe/Paris costs 0.07-0.4 us, against 1.6-2.2 us when ICU converts
 * every time (sl_tz_set_fast() off); a fixed interval 0.01 us; a schedule
 * whose instants are years apart ("0 0 29 2 *") about 2.3 us, as each
 * call lands in a new window.  Opening a zone costs about 3 us once ICU
 * has its zone data loaded (the first open of a process, about 0.4 ms)
 * against 0.01 us to find it in the cache.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unicode/ucal.h>
#include <unicode/utypes.h>

#include "parse.h"
#include "schedule.h"
#include "util.h"

/* Epoch ms of 1900-01-01T00:00:00Z and 10000-01-01T00:00:00Z. */
#define SEARCH_MIN_MS (-2208988800000LL)
#define SEARCH_END_MS 253402300800000LL
/* Local times stepped over in one next(): the repeated hour of an
 * every-second schedule is 3600; more means the zone data is odd. */
#define MAX_STEPS 100000

/*
 * Fields.
 */

typedef struct field_s {
        const char *name;
        int min, max;             /* the values written (day-of-week: 0-7) */
        const char *const *names; /* 3-letter names of min, min+1, ... */
} field_t;

static const char *const month_names[] = {"jan", "feb", "mar", "apr",
                                          "may", "jun", "jul", "aug",
                                          "sep", "oct", "nov", "dec"};
static const char *const wday_names[] = {"sun", "mon", "tue", "wed",
                                         "thu", "fri", "sat"};

enum { F_SEC, F_MIN, F_HOUR, F_MDAY, F_MONTH, F_WDAY };

static const field_t fields[] = {
    [F_SEC] = {"second", 0, 59, NULL},
    [F_MIN] = {"minute", 0, 59, NULL},
    [F_HOUR] = {"hour", 0, 23, NULL},
    [F_MDAY] = {"day-of-month", 1, 31, NULL},
    [F_MONTH] = {"month", 1, 12, month_names},
    [F_WDAY] = {"day-of-week", 0, 7, wday_names},
};

/* One value: digits or a name.  Returns the bytes read, or -1. */
static int value_read(const field_t *f, const char *p, const char *end,
                      int *out, char *errstr, size_t errstr_size) {
        const char *q = p;

        if (q < end && isdigit((unsigned char)*q)) {
                int v = 0;
                while (q < end && isdigit((unsigned char)*q)) {
                        if (q - p >= 2)
                                return sl_errf(errstr, errstr_size,
                                               "%s field: '%.*s' is out of "
                                               "range %d-%d",
                                               f->name, (int)(end - p), p,
                                               f->min, f->max);
                        v = v * 10 + (*q - '0');
                        q++;
                }
                if (v < f->min || v > f->max)
                        return sl_errf(errstr, errstr_size,
                                       "%s field: %d is out of range %d-%d",
                                       f->name, v, f->min, f->max);
                *out = v;
                return (int)(q - p);
        }
        while (q < end && isalpha((unsigned char)*q))
                q++;
        if (q == p) {
                if (p == end)
                        return sl_errf(errstr, errstr_size,
                                       "%s field: a value is missing", f->name);
                return sl_errf(errstr, errstr_size,
                               "%s field: unexpected character '%c'", f->name,
                               isprint((unsigned char)*p) ? *p : '?');
        }
        if (f->names && q - p == 3) {
                int n = f->max - f->min + 1 - (f == &fields[F_WDAY]);
                for (int i = 0; i < n; i++) {
                        if (!strncasecmp(p, f->names[i], 3)) {
                                *out = f->min + i;
                                return 3;
                        }
                }
        }
        return sl_errf(errstr, errstr_size, "%s field: unknown name '%.*s'",
                       f->name, (int)(q - p), p);
}

/* One field (the bytes of p to end, no blanks) into a bit set over
 * f->min .. f->max; *any is set when the field is "*" or "?" alone. */
static int field_parse(const field_t *f, const char *p, const char *end,
                       uint64_t *bits, int *any, char *errstr,
                       size_t errstr_size) {
        uint64_t set = 0;

        *any = (end - p == 1 && (*p == '*' || *p == '?'));
        for (;;) {
                int lo, hi, step = 1, n;
                const char *item = p;

                if (p < end && (*p == '*' || *p == '?')) {
                        lo = f->min;
                        hi = f->max;
                        p++;
                } else {
                        if ((n = value_read(f, p, end, &lo, errstr,
                                            errstr_size)) < 0)
                                return -1;
                        p += n;
                        hi = lo;
                        if (p < end && *p == '-') {
                                p++;
                                if ((n = value_read(f, p, end, &hi, errstr,
                                                    errstr_size)) < 0)
                                        return -1;
                                p += n;
                                if (hi < lo)
                                        return sl_errf(errstr, errstr_size,
                                                       "%s field: range "
                                                       "'%.*s' runs backwards",
                                                       f->name, (int)(p - item),
                                                       item);
                        } else if (p < end && *p == '/') {
                                hi = f->max; /* "a/n" is "a-max/n" */
                        }
                }
                if (p < end && *p == '/') {
                        const char *d = ++p;
                        step = 0;
                        while (p < end && isdigit((unsigned char)*p) &&
                               p - d < 3)
                                step = step * 10 + (*p++ - '0');
                        if (p == d || (p < end && isdigit((unsigned char)*p)))
                                return sl_errf(errstr, errstr_size,
                                               "%s field: bad step in '%.*s'",
                                               f->name, (int)(p - item), item);
                        if (step < 1 || step > f->max - f->min + 1)
                                return sl_errf(errstr, errstr_size,
                                               "%s field: step %d is not in "
                                               "1-%d",
                                               f->name, step,
                                               f->max - f->min + 1);
                }
                for (int v = lo; v <= hi; v += step)
                        set |= 1ULL << v;
                if (p == end)
                        break;
                if (*p != ',')
                        return sl_errf(errstr, errstr_size,
                                       "%s field: unexpected character '%c'",
                                       f->name,
                                       isprint((unsigned char)*p) ? *p : '?');
                p++;
        }
        if (f == &fields[F_WDAY] && (set & (1ULL << 7)))
                set = (set & ~(1ULL << 7)) | 1ULL; /* 7 is Sunday */
        *bits = set;
        return 0;
}

/*
 * Civil time: the proleptic Gregorian calendar, no zone.
 */

typedef struct civil_s {
        int y, mo, d, h, mi, s;
} civil_t;

static int is_leap(int y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int mo) {
        static const int dim[] = {31, 28, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
        return mo == 2 && is_leap(y) ? 29 : dim[mo - 1];
}

/* Days since 1970-01-01 of a civil date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int mo, int d) {
        int64_t yy = y - (mo <= 2);
        int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
        int64_t yoe = yy - era * 400;
        int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

static int weekday(int y, int mo, int d) {
        int64_t w = (days_from_civil(y, mo, d) + 4) % 7; /* 1970: Thu */
        return (int)(w < 0 ? w + 7 : w);
}

static int day_ok(const sl_cron_t *c, int y, int mo, int d) {
        int in_mday = !!(c->mday & (1U << d));
        int in_wday = !!(c->wday & (1U << weekday(y, mo, d)));

        if ((c->flags & SL_CRON_MDAY_ANY) || (c->flags & SL_CRON_WDAY_ANY))
                return in_mday && in_wday;
        return in_mday || in_wday;
}

/* The lowest set bit of bits at or above from, or -1. */
static int next_bit(uint64_t bits, int from) {
        if (from > 63)
                return -1;
        bits &= ~0ULL << from;
        return bits ? __builtin_ctzll(bits) : -1;
}

static void civil_next_month(civil_t *t) {
        if (++t->mo > 12) {
                t->mo = 1;
                t->y++;
        }
        t->d = 1;
        t->h = t->mi = t->s = 0;
}

static void civil_next_day(civil_t *t) {
        t->d++; /* past the month's end: the walk moves to the next */
        t->h = t->mi = t->s = 0;
}

static void civil_next_hour(civil_t *t) {
        t->mi = t->s = 0;
        if (++t->h > 23)
                civil_next_day(t);
}

static void civil_next_minute(civil_t *t) {
        t->s = 0;
        if (++t->mi > 59)
                civil_next_hour(t);
}

static void civil_next_second(civil_t *t) {
        if (++t->s > 59)
                civil_next_minute(t);
}

/* Moves *t to the first local time at or after it that c matches, before
 * the year ylimit.  Returns 0, or -1 when there is none. */
static int civil_match(const sl_cron_t *c, civil_t *t, int ylimit) {
        for (;;) {
                int v;

                if (t->y >= ylimit)
                        return -1;
                if ((v = next_bit(c->month, t->mo)) < 0) {
                        t->y++;
                        t->mo = 1;
                        t->d = 1;
                        t->h = t->mi = t->s = 0;
                        continue;
                }
                if (v != t->mo) {
                        t->mo = v;
                        t->d = 1;
                        t->h = t->mi = t->s = 0;
                }
                int dim = days_in_month(t->y, t->mo);
                while (t->d <= dim && !day_ok(c, t->y, t->mo, t->d))
                        civil_next_day(t);
                if (t->d > dim) {
                        civil_next_month(t);
                        continue;
                }
                if ((v = next_bit(c->hour, t->h)) < 0) {
                        civil_next_day(t);
                        continue;
                }
                if (v != t->h) {
                        t->h = v;
                        t->mi = t->s = 0;
                }
                if ((v = next_bit(c->min, t->mi)) < 0) {
                        civil_next_hour(t);
                        continue;
                }
                if (v != t->mi) {
                        t->mi = v;
                        t->s = 0;
                }
                if ((v = next_bit(c->sec, t->s)) < 0) {
                        civil_next_minute(t);
                        continue;
                }
                t->s = v;
                return 0;
        }
}

/*
 * Parsing.
 */

static void schedule_clear(sl_schedule_t *s, sl_schedule_kind_t kind) {
        memset(s, 0, sizeof(*s));
        s->kind = kind;
        s->start_ms = SL_SCHEDULE_NO_START;
        s->until_ms = SL_SCHEDULE_NO_UNTIL;
}

int sl_schedule_parse_every(sl_schedule_t *out, const char *s, size_t len,
                            char *errstr, size_t errstr_size) {
        int64_t ms;
        char why[128];

        if (sl_parse_duration_ms_n(s, len, &ms, why, sizeof(why)) == -1)
                return sl_errf(errstr, errstr_size, "bad interval: %s", why);
        if (ms < SL_SCHEDULE_EVERY_MIN_MS)
                return sl_errf(errstr, errstr_size,
                               "interval below the minimum of %d ms",
                               SL_SCHEDULE_EVERY_MIN_MS);
        schedule_clear(out, SL_SCHEDULE_EVERY);
        out->every_ms = ms;
        return 0;
}

static const struct {
        const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static int is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* 1 when some day of c's day-of-month set falls in one of its months. */
static int mday_meets_months(const sl_cron_t *c) {
        for (int mo = 1; mo <= 12; mo++) {
                if (!(c->month & (1U << mo)))
                        continue;
                /* February: the 29th, in leap years. */
                int dim = mo == 2 ? 29 : days_in_month(2001, mo);
                if (c->mday & (((1ULL << (dim + 1)) - 1) & ~1ULL))
                        return 1;
        }
        return 0;
}

int sl_schedule_parse_cron(sl_schedule_t *out, const char *s, size_t len,
                           char *errstr, size_t errstr_size) {
        const char *p, *end, *fb[6], *fe[6];
        int nf = 0, first;
        sl_cron_t c;

        if (!s)
                len = 0;
        if (len > SL_SCHEDULE_EXPR_MAX)
                return sl_errf(errstr, errstr_size, "too long (max %d bytes)",
                               SL_SCHEDULE_EXPR_MAX);
        if (len && memchr(s, '\0', len))
                return sl_errf(errstr, errstr_size, "contains a NUL byte");
        p = s;
        end = s + len;
        while (p < end && is_blank(*p))
                p++;
        while (end > p && is_blank(end[-1]))
                end--;
        if (p == end)
                return sl_errf(errstr, errstr_size, "empty expression");

        if (*p == '@') {
                for (size_t i = 0; i < SL_ARRAY_SIZE(macros); i++) {
                        if (strlen(macros[i].name) == (size_t)(end - p) &&
                            !strncasecmp(p, macros[i].name, end - p))
                                return sl_schedule_parse_cron(
                                    out, macros[i].expr, strlen(macros[i].expr),
                                    errstr, errstr_size);
                }
                return sl_errf(errstr, errstr_size, "unknown macro '%.*s'",
                               (int)(end - p > 32 ? 32 : end - p), p);
        }

        while (p < end) {
                if (nf == 6)
                        return sl_errf(errstr, errstr_size,
                                       "more than 6 fields");
                fb[nf] = p;
                while (p < end && !is_blank(*p))
                        p++;
                fe[nf++] = p;
                while (p < end && is_blank(*p))
                        p++;
        }
        if (nf < 5)
                return sl_errf(errstr, errstr_size,
                               "%d field%s, expected 5 (or 6 with seconds)", nf,
                               nf == 1 ? "" : "s");

        memset(&c, 0, sizeof(c));
        c.sec = 1; /* second 0 when there is no seconds field */
        first = nf == 6 ? F_SEC : F_MIN;
        for (int i = 0; i < nf; i++) {
                int fi = first + i, any;
                uint64_t bits = 0;

                if (field_parse(&fields[fi], fb[i], fe[i], &bits, &any, errstr,
                                errstr_size) == -1)
                        return -1;
                switch (fi) {
                case F_SEC:
                        c.sec = bits;
                        break;
                case F_MIN:
                        c.min = bits;
                        break;
                case F_HOUR:
                        c.hour = (uint32_t)bits;
                        break;
                case F_MDAY:
                        c.mday = (uint32_t)bits;
                        if (any)
                                c.flags |= SL_CRON_MDAY_ANY;
                        break;
                case F_MONTH:
                        c.month = (uint16_t)bits;
                        break;
                case F_WDAY:
                        c.wday = (uint8_t)bits;
                        if (any)
                                c.flags |= SL_CRON_WDAY_ANY;
                        break;
                }
        }
        /* With the weekdays unrestricted only the days of the month
         * choose, and those may all miss the months: "0 0 30 2 *".  (With
         * both restricted a weekday comes every week.) */
        if ((c.flags & SL_CRON_WDAY_ANY) && !mday_meets_months(&c))
                return sl_errf(errstr, errstr_size,
                               "never fires: no day of the day-of-month field "
                               "occurs in the months of the month field");

        schedule_clear(out, SL_SCHEDULE_CRON);
        out->cron = c;
        return 0;
}

static int count_parse(const char *s, size_t len, int64_t *out, char *errstr,
                       size_t errstr_size) {
        const char *p = s, *end = s + len;
        int64_t v = 0;

        while (p < end && is_blank(*p))
                p++;
        while (end > p && is_blank(end[-1]))
                end--;
        if (p == end)
                return sl_errf(errstr, errstr_size, "count: empty value");
        for (; p < end; p++) {
                if (!isdigit((unsigned char)*p))
                        return sl_errf(errstr, errstr_size,
                                       "count: not a whole number");
                v = v * 10 + (*p - '0');
                if (v > SL_SCHEDULE_COUNT_MAX)
                        return sl_errf(errstr, errstr_size,
                                       "count: larger than %lld",
                                       (long long)SL_SCHEDULE_COUNT_MAX);
        }
        if (v < 1)
                return sl_errf(errstr, errstr_size,
                               "count: must be at least 1");
        *out = v;
        return 0;
}

int sl_schedule_parse_bounds(sl_schedule_t *s, const char *start,
                             size_t start_len, const char *until,
                             size_t until_len, const char *count,
                             size_t count_len, char *errstr,
                             size_t errstr_size) {
        int64_t a = SL_SCHEDULE_NO_START, b = SL_SCHEDULE_NO_UNTIL, n = 0;
        char why[128];

        if (start && sl_parse_timestamp_ms_n(start, start_len, &a, why,
                                             sizeof(why)) == -1)
                return sl_errf(errstr, errstr_size, "start: %s", why);
        if (until && sl_parse_timestamp_ms_n(until, until_len, &b, why,
                                             sizeof(why)) == -1)
                return sl_errf(errstr, errstr_size, "until: %s", why);
        if (count && count_parse(count, count_len, &n, errstr, errstr_size))
                return -1;
        if (start && until && b < a)
                return sl_errf(errstr, errstr_size, "until is before start");
        s->start_ms = a;
        s->until_ms = b;
        s->count = n;
        return 0;
}

/*
 * Zones.
 */

/* A zone: its calendar, and the offset window of the last instant asked
 * about: the instants from one transition of the zone to the next, [w0,
 * w1), all at offset off.  Inside it local time is the instant plus off,
 * both ways, and ICU need not be asked (see tz_instant() for the one
 * care this takes).  No window when w0 >= w1. */
struct sl_tz_s {
        char *name;
        UCalendar *cal;
        int fast; /* use the window (sl_tz_set_fast) */
        int64_t w0, w1, off;
};

struct sl_tzcache_s {
        sl_tz_t **zones;
        int cnt, size;
};

sl_tzcache_t *sl_tzcache_new(void) {
        return sl_calloc(1, sizeof(sl_tzcache_t));
}

void sl_tzcache_destroy(sl_tzcache_t *c) {
        if (!c)
                return;
        for (int i = 0; i < c->cnt; i++) {
                ucal_close(c->zones[i]->cal);
                free(c->zones[i]->name);
                free(c->zones[i]);
        }
        free(c->zones);
        free(c);
}

const char *sl_tz_name(const sl_tz_t *tz) {
        return tz->name;
}

void sl_tz_set_fast(sl_tz_t *tz, int on) {
        tz->fast = !!on;
        tz->w0 = tz->w1 = 0;
}

const char *sl_tz_data_version(void) {
        UErrorCode st = U_ZERO_ERROR;
        const char *v = ucal_getTZDataVersion(&st);

        return U_SUCCESS(st) && v ? v : "unknown";
}

/* Characters of zone ids (and of their aliases): "America/Port-au-Prince",
 * "Etc/GMT+5". */
static int tz_char(char ch) {
        return isalnum((unsigned char)ch) || ch == '/' || ch == '_' ||
               ch == '-' || ch == '+';
}

#define TZ_NAME_MAX 64

int sl_tzcache_get(sl_tzcache_t *c, const char *name, size_t len, sl_tz_t **out,
                   char *errstr, size_t errstr_size) {
        UChar id[TZ_NAME_MAX], canon[TZ_NAME_MAX + 16];
        UErrorCode st = U_ZERO_ERROR;
        UBool is_system = 0;
        int32_t clen;
        UCalendar *cal;
        sl_tz_t *tz;

        if (!name || len == 0)
                return sl_errf(errstr, errstr_size, "empty time zone");
        for (int i = 0; i < c->cnt; i++) {
                if (strlen(c->zones[i]->name) == len &&
                    !memcmp(c->zones[i]->name, name, len)) {
                        *out = c->zones[i];
                        return 0;
                }
        }
        if (len > TZ_NAME_MAX)
                return sl_errf(errstr, errstr_size, "unknown time zone");
        for (size_t i = 0; i < len; i++) {
                if (!tz_char(name[i]))
                        return sl_errf(errstr, errstr_size,
                                       "unknown time zone");
                id[i] = (UChar)name[i];
        }
        clen = ucal_getCanonicalTimeZoneID(id, (int32_t)len, canon,
                                           (int32_t)SL_ARRAY_SIZE(canon),
                                           &is_system, &st);
        if (U_FAILURE(st) || !is_system || clen <= 0)
                return sl_errf(errstr, errstr_size, "unknown time zone '%.*s'",
                               (int)len, name);
        /* Opened by its canonical id: ICU matches ids without regard to
         * case ("europe/paris") when it canonicalizes, but would open an
         * unknown spelling as GMT without a word. */
        cal = ucal_open(canon, clen, "", UCAL_GREGORIAN, &st);
        if (U_FAILURE(st))
                return sl_errf(errstr, errstr_size,
                               "time zone '%.*s': ICU cannot open it: %s",
                               (int)len, name, u_errorName(st));
        /* Proleptic Gregorian, as the walk's calendar arithmetic is (ICU
         * switches to Julian before 1582 otherwise). */
        ucal_setGregorianChange(cal, -8.64e15, &st);
        if (U_FAILURE(st)) {
                ucal_close(cal);
                return sl_errf(errstr, errstr_size,
                               "time zone '%.*s': ICU cannot set it up: %s",
                               (int)len, name, u_errorName(st));
        }
        ucal_setAttribute(cal, UCAL_LENIENT, 1);
        ucal_setAttribute(cal, UCAL_REPEATED_WALL_TIME, UCAL_WALLTIME_FIRST);
        ucal_setAttribute(cal, UCAL_SKIPPED_WALL_TIME,
                          UCAL_WALLTIME_NEXT_VALID);
        tz = sl_malloc(sizeof(*tz));
        tz->name = sl_strndup(name, len);
        tz->cal = cal;
        tz->fast = 1;
        tz->w0 = tz->w1 = tz->off = 0;
        if (c->cnt == c->size) {
                c->size = c->size ? c->size * 2 : 8;
                c->zones = sl_realloc(c->zones, c->size * sizeof(*c->zones));
        }
        c->zones[c->cnt++] = tz;
        *out = tz;
        return 0;
}

/*
 * The next instant.
 */

static int64_t floor_div(int64_t a, int64_t b) {
        int64_t q = a / b;
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Epoch ms of a civil time read as UTC, and back (whole seconds). */
static int64_t civil_to_ms(const civil_t *t) {
        return ((days_from_civil(t->y, t->mo, t->d) * 24 + t->h) * 60 + t->mi) *
                   60000 +
               t->s * 1000;
}

static void civil_from_ms(int64_t ms, civil_t *t) {
        int64_t days = floor_div(ms, 86400000), sod = ms - days * 86400000;
        /* H. Hinnant's civil_from_days. */
        int64_t z = days + 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        int64_t d = doy - (153 * mp + 2) / 5 + 1;
        int64_t m = mp < 10 ? mp + 3 : mp - 9;

        t->y = (int)(yoe + era * 400 + (m <= 2));
        t->mo = (int)m;
        t->d = (int)d;
        t->h = (int)(sod / 3600000);
        t->mi = (int)(sod / 60000 % 60);
        t->s = (int)(sod / 1000 % 60);
}

/* More than the largest change of a zone's offset (-12:00 to +14:00). */
#define WINDOW_GUARD_MS (27LL * 3600000)

/* Sets tz's window to the one of instant t (the calendar is there). */
static void tz_window(sl_tz_t *tz, int64_t t) {
        UErrorCode st = U_ZERO_ERROR;
        int64_t w0 = INT64_MIN, w1 = INT64_MAX, off;
        UDate d;

        tz->w0 = tz->w1 = 0;
        off = (int64_t)ucal_get(tz->cal, UCAL_ZONE_OFFSET, &st) +
              ucal_get(tz->cal, UCAL_DST_OFFSET, &st);
        if (ucal_getTimeZoneTransitionDate(
                tz->cal, UCAL_TZ_TRANSITION_PREVIOUS_INCLUSIVE, &d, &st))
                w0 = (int64_t)d;
        if (ucal_getTimeZoneTransitionDate(tz->cal, UCAL_TZ_TRANSITION_NEXT, &d,
                                           &st))
                w1 = (int64_t)d;
        if (U_FAILURE(st) || !(w0 <= t && t < w1))
                return;
        tz->w0 = w0;
        tz->w1 = w1;
        tz->off = off;
}

static int in_window(const sl_tz_t *tz, int64_t t) {
        return tz->w0 < tz->w1 && tz->w0 <= t && t < tz->w1;
}

/* The local civil time of epoch second t_ms (a whole second). */
static int tz_local(sl_tz_t *tz, int64_t t_ms, civil_t *out) {
        UErrorCode st = U_ZERO_ERROR;

        if (tz->fast && in_window(tz, t_ms)) {
                civil_from_ms(t_ms + tz->off, out);
                return 0;
        }
        ucal_setMillis(tz->cal, (UDate)t_ms, &st);
        if (tz->fast && U_SUCCESS(st))
                tz_window(tz, t_ms);
        out->y = ucal_get(tz->cal, UCAL_EXTENDED_YEAR, &st);
        out->mo = ucal_get(tz->cal, UCAL_MONTH, &st) + 1;
        out->d = ucal_get(tz->cal, UCAL_DATE, &st);
        out->h = ucal_get(tz->cal, UCAL_HOUR_OF_DAY, &st);
        out->mi = ucal_get(tz->cal, UCAL_MINUTE, &st);
        out->s = ucal_get(tz->cal, UCAL_SECOND, &st);
        return U_FAILURE(st) ? -1 : 0;
}

/* The first instant of local time t (the end of the gap, for a skipped
 * one: the calendar's options).
 *
 * In the window: local time t at offset off is instant i = t - off, and
 * when i falls in the window, t exists (no gap) and i is its only instant
 * there.  An earlier one could only be in an earlier window whose offset
 * is larger by more than i - w0; no offset change is as large as
 * WINDOW_GUARD_MS, so from w0 + WINDOW_GUARD_MS on, i is the first.
 * Nearer the transition, or outside the window, ICU answers. */
static int tz_instant(sl_tz_t *tz, const civil_t *t, int64_t *out_ms) {
        UErrorCode st = U_ZERO_ERROR;
        UDate ms;

        if (tz->fast && tz->w0 < tz->w1) {
                int64_t i = civil_to_ms(t) - tz->off;
                if (i < tz->w1 &&
                    (tz->w0 == INT64_MIN || i - WINDOW_GUARD_MS >= tz->w0)) {
                        *out_ms = i;
                        return 0;
                }
        }

        ucal_clear(tz->cal);
        ucal_setDateTime(tz->cal, t->y, t->mo - 1, t->d, t->h, t->mi, t->s,
                         &st);
        ms = ucal_getMillis(tz->cal, &st);
        if (U_FAILURE(st))
                return -1;
        *out_ms = (int64_t)ms;
        return 0;
}

static int next_every(const sl_schedule_t *s, int64_t after_ms,
                      int64_t *out_ms) {
        int64_t anchor = s->start_ms == SL_SCHEDULE_NO_START ? 0 : s->start_ms;
        int64_t k, at;

        if (after_ms < anchor) {
                *out_ms = anchor;
                return 0;
        }
        k = floor_div(after_ms - anchor, s->every_ms) + 1;
        /* after_ms - anchor and every_ms are below 2^54: no overflow
         * before the bound check, as k * every_ms <= after - anchor +
         * every. */
        at = anchor + k * s->every_ms;
        if (at >= SEARCH_END_MS)
                return SL_SCHEDULE_END;
        *out_ms = at;
        return 0;
}

static int next_cron(const sl_schedule_t *s, sl_tz_t *tz, int64_t after_ms,
                     int64_t *out_ms, char *errstr, size_t errstr_size) {
        civil_t t;
        int ylimit;

        if (tz_local(tz, floor_div(after_ms, 1000) * 1000, &t) == -1)
                return sl_errf(errstr, errstr_size, "ICU: local time failed");
        ylimit = t.y + SL_SCHEDULE_SEARCH_YEARS;
        if (ylimit > 10000)
                ylimit = 10000;
        for (int steps = 0; steps < MAX_STEPS; steps++) {
                int64_t at;

                if (civil_match(&s->cron, &t, ylimit) == -1) {
                        civil_t lim = {ylimit, 1, 1, 0, 0, 0};
                        if (ylimit == 10000)
                                return SL_SCHEDULE_END;
                        /* None before the until: the schedule is over. */
                        if (tz_instant(tz, &lim, &at) == 0 && s->until_ms < at)
                                return SL_SCHEDULE_END;
                        return sl_errf(errstr, errstr_size,
                                       "never fires: no occurrence in %d years "
                                       "of %s",
                                       SL_SCHEDULE_SEARCH_YEARS, tz->name);
                }
                if (tz_instant(tz, &t, &at) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "ICU: instant of a local time failed");
                if (at > after_ms) {
                        if (at >= SEARCH_END_MS)
                                return SL_SCHEDULE_END;
                        *out_ms = at;
                        return 0;
                }
                /* Its first instant is past (a repeated hour, after_ms in
                 * its second pass; or a second of after_ms itself). */
                civil_next_second(&t);
        }
        return sl_errf(errstr, errstr_size,
                       "search stepped over %d local times", MAX_STEPS);
}

int sl_schedule_next(const sl_schedule_t *s, sl_tz_t *tz, int64_t after_ms,
                     int64_t fired, int64_t *out_ms, char *errstr,
                     size_t errstr_size) {
        int64_t at = 0;
        int r;

        sl_assert(s && out_ms);
        if (s->count > 0 && fired >= s->count)
                return SL_SCHEDULE_END;
        if (after_ms < SEARCH_MIN_MS || after_ms >= SEARCH_END_MS)
                return sl_errf(errstr, errstr_size,
                               "time out of range (1900 to 9999)");
        /* The start is inclusive: search after the instant before it. */
        if (s->start_ms != SL_SCHEDULE_NO_START && after_ms < s->start_ms)
                after_ms = s->start_ms - 1;
        if (after_ms >= s->until_ms)
                return SL_SCHEDULE_END;
        if (after_ms >= SEARCH_END_MS)
                return SL_SCHEDULE_END;
        switch (s->kind) {
        case SL_SCHEDULE_EVERY:
                r = next_every(s, after_ms, &at);
                break;
        case SL_SCHEDULE_CRON:
                sl_assert(tz);
                r = next_cron(s, tz, after_ms, &at, errstr, errstr_size);
                break;
        default:
                return sl_errf(errstr, errstr_size, "not a schedule");
        }
        if (r != 0)
                return r;
        if (at > s->until_ms)
                return SL_SCHEDULE_END;
        *out_ms = at;
        return 0;
}
