/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delay_recurring.c — recurring timers of the delay operator (see
 * delay_recurring.h for the contract).
 *
 * DESIGN
 *
 * A recurring timer is a one-shot timer that comes back.  It is one entry
 * of the partition's timer heap, due at its next occurrence, whatever its
 * frequency; its changelog record (sluice.v1.Timer) is the one-shot one
 * plus the schedule as it was given (the sluice-every or sluice-cron text,
 * the zone, the bounds, the catch-up policy) and its progress (occurrences
 * produced, the instant of the last).  Schedules are kept as text and
 * parsed again on a rebuild: sl_schedule_t is a value of this build, the
 * text is the contract.
 *
 * Firing an occurrence (op_delay.c) produces one record to the target and,
 * in the same transaction, rewrites the changelog record with the next
 * instant and the count one higher, or tombstones it after the last.  So
 * an occurrence is produced exactly once per (id, instant): a transaction
 * that aborts takes the output and the rewrite with it, and the rebuild
 * finds the occurrence pending again.  An occurrence is never produced
 * before its instant: the heap fires an entry at its due time, and
 * catch-up (below) only ever picks an instant already past.
 *
 * sluice-occurrence counts the records produced (1, 2, ...), and
 * sluice-count bounds that count: occurrences skipped by catch-up are not
 * counted, so each id's occurrences are consecutive.
 *
 * Catch-up.  After a rebuild the pending occurrence may lie in the past:
 * sluice was down, or the partition moved.  An occurrence due by the end
 * of the rebuild (caught_until) follows sluice-catch-up: latest (the
 * default) fires the most recent instant by then, and waits for the next;
 * all fires each in order (the next instant is computed from the one
 * fired, so every missed one comes due at once, paced by catchup_rate as
 * any backlog); none fires nothing and waits for the first instant after
 * the rebuild.  A fixed interval's most recent instant is found in one
 * step; a cron expression's by walking its instants, at most
 * LATEST_WALK_MAX of them (past that, the walk's last instant fires: a
 * schedule of every second down for over a day catches up in two steps
 * rather than one).
 *
 * Blob section (after the target key, before the headers): the
 * sl_schedule_t as it lies in memory (the blob never leaves the process),
 * u8 catch-up, varints fired and last_ms, then the zone and the
 * expression, each a varint length and its bytes.
 */
#include "delay_recurring.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "varint.h"

/* How many instants a catch-up latest walks at most (above). */
#define LATEST_WALK_MAX 100000

const char *const sl_recur_header_names[SL_RECUR_HDR_CNT] = {
    [SL_RECUR_EVERY] = "sluice-every",
    [SL_RECUR_CRON] = "sluice-cron",
    [SL_RECUR_TZ] = "sluice-tz",
    [SL_RECUR_START] = "sluice-start",
    [SL_RECUR_UNTIL] = "sluice-until",
    [SL_RECUR_COUNT] = "sluice-count",
    [SL_RECUR_CATCH_UP] = "sluice-catch-up",
};

int sl_recur_asked(const char *const vals[SL_RECUR_HDR_CNT]) {
        for (int i = 0; i < SL_RECUR_HDR_CNT; i++)
                if (vals[i])
                        return 1;
        return 0;
}

static const char *const catch_up_names[] = {"latest", "all", "none"};

static int read_catch_up(const char *v, size_t len) {
        for (int i = 0; i < 3; i++)
                if (len == strlen(catch_up_names[i]) &&
                    !memcmp(v, catch_up_names[i], len))
                        return i;
        return -1;
}

const char *sl_recur_catch_up_name(int catch_up) {
        return catch_up >= 0 && catch_up < 3 ? catch_up_names[catch_up]
                                             : "latest";
}

int sl_recur_parse(sl_recur_t *r, const char *const vals[SL_RECUR_HDR_CNT],
                   const size_t lens[SL_RECUR_HDR_CNT], int64_t base_ms,
                   char *detail, size_t detail_size) {
        char err[200], ex[SL_ESCAPE_SIZE(40)];
        int i = vals[SL_RECUR_EVERY] ? SL_RECUR_EVERY : SL_RECUR_CRON;
        int rc;

        memset(r, 0, sizeof(*r));
        if (vals[SL_RECUR_EVERY] && vals[SL_RECUR_CRON]) {
                snprintf(detail, detail_size,
                         "both sluice-every and sluice-cron given");
                return -1;
        }
        if (!vals[i]) {
                for (i = 0; i < SL_RECUR_HDR_CNT && !vals[i]; i++)
                        ;
                snprintf(detail, detail_size,
                         "%s without sluice-every or sluice-cron",
                         sl_recur_header_names[i]);
                return -1;
        }
        rc = i == SL_RECUR_EVERY
                 ? sl_schedule_parse_every(&r->sched, vals[i], lens[i], err,
                                           sizeof(err))
                 : sl_schedule_parse_cron(&r->sched, vals[i], lens[i], err,
                                          sizeof(err));
        /* The bounds' errors name their header ("count: ..."). */
        if (!rc &&
            sl_schedule_parse_bounds(&r->sched, vals[SL_RECUR_START],
                                     lens[SL_RECUR_START], vals[SL_RECUR_UNTIL],
                                     lens[SL_RECUR_UNTIL], vals[SL_RECUR_COUNT],
                                     lens[SL_RECUR_COUNT], err, sizeof(err))) {
                rc = -1;
                i = -1;
        }
        if (rc) {
                char ebuf[SL_ESCAPE_SIZE(200)];
                snprintf(detail, detail_size, "%s%s%s",
                         i < 0 ? "sluice-" : sl_recur_header_names[i],
                         i < 0 ? "" : ": ",
                         sl_escape(err, strlen(err), ebuf, sizeof(ebuf)));
                return -1;
        }
        r->expr = vals[i];
        r->expr_len = lens[i];
        if (vals[SL_RECUR_TZ]) {
                if (!lens[SL_RECUR_TZ] || lens[SL_RECUR_TZ] > SL_RECUR_TZ_MAX) {
                        snprintf(detail, detail_size,
                                 "sluice-tz: empty or over %d bytes",
                                 SL_RECUR_TZ_MAX);
                        return -1;
                }
                r->tz = vals[SL_RECUR_TZ];
                r->tz_len = lens[SL_RECUR_TZ];
        }
        if (vals[SL_RECUR_CATCH_UP] &&
            (r->catch_up = read_catch_up(vals[SL_RECUR_CATCH_UP],
                                         lens[SL_RECUR_CATCH_UP])) < 0) {
                snprintf(detail, detail_size,
                         "sluice-catch-up: not latest, all or none: '%s'",
                         sl_escape(vals[SL_RECUR_CATCH_UP],
                                   lens[SL_RECUR_CATCH_UP], ex, sizeof(ex)));
                return -1;
        }
        /* An interval counts from the record's timestamp, as a delay does
         * (EventBridge's rate): the anchor, so the first occurrence is
         * one interval after it. */
        if (r->sched.kind == SL_SCHEDULE_EVERY &&
            r->sched.start_ms == SL_SCHEDULE_NO_START)
                r->sched.start_ms = base_ms;
        return 0;
}

int sl_recur_from_record(sl_recur_t *r, const char *every, size_t every_len,
                         const char *cron, size_t cron_len, const char *tz,
                         size_t tz_len, int64_t start_ms, int64_t until_ms,
                         int64_t count, int32_t catch_up, int64_t fired,
                         int64_t last_ms, char *errstr, size_t errstr_size) {
        int rc;

        memset(r, 0, sizeof(*r));
        if (every_len && cron_len) {
                snprintf(errstr, errstr_size, "both every and cron set");
                return -1;
        }
        rc = every_len ? sl_schedule_parse_every(&r->sched, every, every_len,
                                                 errstr, errstr_size)
                       : sl_schedule_parse_cron(&r->sched, cron, cron_len,
                                                errstr, errstr_size);
        if (rc)
                return -1;
        if (catch_up < SL_CATCH_UP_LATEST || catch_up > SL_CATCH_UP_NONE ||
            count < 0 || count > SL_SCHEDULE_COUNT_MAX || fired < 0 ||
            tz_len > SL_RECUR_TZ_MAX) {
                snprintf(errstr, errstr_size, "a field out of range");
                return -1;
        }
        r->expr = every_len ? every : cron;
        r->expr_len = every_len ? every_len : cron_len;
        r->tz = tz;
        r->tz_len = tz_len;
        r->sched.start_ms = start_ms ? start_ms : SL_SCHEDULE_NO_START;
        r->sched.until_ms = until_ms ? until_ms : SL_SCHEDULE_NO_UNTIL;
        r->sched.count = count;
        r->catch_up = catch_up;
        r->fired = fired;
        r->last_ms = last_ms;
        return 0;
}

int64_t sl_recur_start_field(const sl_recur_t *r) {
        return r->sched.start_ms == SL_SCHEDULE_NO_START ? 0
                                                         : r->sched.start_ms;
}

int64_t sl_recur_until_field(const sl_recur_t *r) {
        return r->sched.until_ms == SL_SCHEDULE_NO_UNTIL ? 0
                                                         : r->sched.until_ms;
}

static void put_varint(sl_buf_t *b, uint64_t v) {
        uint8_t tmp[SL_VARINT_MAX];
        sl_buf_put(b, tmp, sl_varint_put(tmp, v));
}

void sl_recur_blob_put(sl_buf_t *b, const sl_recur_t *r) {
        uint8_t cu = (uint8_t)r->catch_up;
        sl_buf_put(b, &r->sched, sizeof(r->sched));
        sl_buf_put(b, &cu, 1);
        put_varint(b, (uint64_t)r->fired);
        put_varint(b, (uint64_t)r->last_ms);
        put_varint(b, r->tz_len);
        sl_buf_put(b, r->tz, r->tz_len);
        put_varint(b, r->expr_len);
        sl_buf_put(b, r->expr, r->expr_len);
}

int sl_recur_blob_get(const uint8_t **p, const uint8_t *end, sl_recur_t *r) {
        const uint8_t *q = *p;
        uint64_t v[4];

        if ((size_t)(end - q) < sizeof(r->sched) + 1)
                return -1;
        memcpy(&r->sched, q, sizeof(r->sched));
        q += sizeof(r->sched);
        r->catch_up = *q++;
        if (sl_varint_get(&q, end, &v[0]) || sl_varint_get(&q, end, &v[1]) ||
            sl_varint_get(&q, end, &v[2]) || (uint64_t)(end - q) < v[2])
                return -1;
        r->fired = (int64_t)v[0];
        r->last_ms = (int64_t)v[1];
        r->tz = (const char *)q;
        r->tz_len = (size_t)v[2];
        q += v[2];
        if (sl_varint_get(&q, end, &v[3]) || (uint64_t)(end - q) < v[3])
                return -1;
        r->expr = (const char *)q;
        r->expr_len = (size_t)v[3];
        *p = q + v[3];
        return 0;
}

int sl_recur_tz(const sl_recur_t *r, sl_tzcache_t *c, sl_tz_t **out,
                char *errstr, size_t errstr_size) {
        if (!r->tz_len)
                return sl_tzcache_get(c, "UTC", 3, out, errstr, errstr_size);
        return sl_tzcache_get(c, r->tz, r->tz_len, out, errstr, errstr_size);
}

int sl_recur_first(const sl_recur_t *r, sl_tz_t *tz, int64_t base_ms,
                   int64_t *out_ms, char *errstr, size_t errstr_size) {
        int64_t after = base_ms;
        /* The start is inclusive: an instant at it fires. */
        if (r->sched.start_ms != SL_SCHEDULE_NO_START &&
            r->sched.start_ms - 1 > after)
                after = r->sched.start_ms - 1;
        return sl_schedule_next(&r->sched, tz, after, r->fired, out_ms, errstr,
                                errstr_size);
}

/* The most recent instant of r at or before until, from due (one). */
static int latest_by(const sl_recur_t *r, sl_tz_t *tz, int64_t due,
                     int64_t until, int64_t *out_ms, char *errstr,
                     size_t errstr_size) {
        int64_t at = due, n;
        int rc;

        /* A fixed interval: the instant in (until - every, until]. */
        if (r->sched.kind == SL_SCHEDULE_EVERY &&
            until - r->sched.every_ms > due) {
                rc = sl_schedule_next(&r->sched, tz, until - r->sched.every_ms,
                                      r->fired, &n, errstr, errstr_size);
                if (rc < 0)
                        return -1;
                if (rc == 0 && n <= until)
                        at = n;
        }
        for (int i = 0; i < LATEST_WALK_MAX; i++) {
                rc = sl_schedule_next(&r->sched, tz, at, r->fired, &n, errstr,
                                      errstr_size);
                if (rc < 0)
                        return -1;
                if (rc == SL_SCHEDULE_END || n > until)
                        break;
                at = n;
        }
        *out_ms = at;
        return 0;
}

int sl_recur_due(const sl_recur_t *r, sl_tz_t *tz, int64_t due_ms,
                 int64_t caught_until, int64_t *out_ms, char *errstr,
                 size_t errstr_size) {
        int rc;

        if (due_ms > caught_until || r->catch_up == SL_CATCH_UP_ALL) {
                *out_ms = due_ms;
                return SL_RECUR_FIRE;
        }
        if (r->catch_up == SL_CATCH_UP_LATEST) {
                if (latest_by(r, tz, due_ms, caught_until, out_ms, errstr,
                              errstr_size) < 0)
                        return -1;
                return SL_RECUR_FIRE;
        }
        rc = sl_schedule_next(&r->sched, tz, caught_until, r->fired, out_ms,
                              errstr, errstr_size);
        return rc == 0 ? SL_RECUR_SKIP : rc;
}

int sl_recur_upcoming(const sl_recur_t *r, sl_tz_t *tz, int64_t due_ms,
                      int64_t *out, int max, char *errstr, size_t errstr_size) {
        int64_t at = due_ms;
        int n = 0;
        /* After the pending one, fired + 1 + n are produced. */
        while (n < max) {
                int rc = sl_schedule_next(&r->sched, tz, at, r->fired + 1 + n,
                                          &at, errstr, errstr_size);
                if (rc == SL_SCHEDULE_END)
                        break;
                if (rc < 0)
                        return n ? n : -1;
                out[n++] = at;
        }
        return n;
}
