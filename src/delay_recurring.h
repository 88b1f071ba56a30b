/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delay_recurring.h — recurring timers of the delay operator: what the
 * sluice-every / sluice-cron headers ask, how a timer keeps its schedule
 * (in the changelog record and in its in-memory blob), and which instant
 * fires next, catch-up after downtime included.  delay_recurring.c has
 * the design; docs/delay.md "Recurring timers" the contract.
 *
 * Pure: no Kafka, no libuv (time zones through schedule.h's cache).
 */
#ifndef SL_DELAY_RECURRING_H
#define SL_DELAY_RECURRING_H

#include <stddef.h>
#include <stdint.h>

#include "schedule.h"
#include "util.h"

/* The recurring headers (their values, by index, for sl_recur_parse). */
enum {
        SL_RECUR_EVERY,
        SL_RECUR_CRON,
        SL_RECUR_TZ,
        SL_RECUR_START,
        SL_RECUR_UNTIL,
        SL_RECUR_COUNT,
        SL_RECUR_CATCH_UP,
        SL_RECUR_HDR_CNT
};

/* Their names ("sluice-every", ...), by index. */
extern const char *const sl_recur_header_names[SL_RECUR_HDR_CNT];

/* What happens to occurrences that fell due while no one owned the
 * partition (sluice-catch-up; the changelog's catch_up field). */
typedef enum {
        SL_CATCH_UP_LATEST = 0, /* fire the most recent one only */
        SL_CATCH_UP_ALL = 1,    /* each, in order, at catchup_rate */
        SL_CATCH_UP_NONE = 2,   /* none: wait for the next one to come */
} sl_catch_up_t;

/* The longest sluice-tz value read. */
#define SL_RECUR_TZ_MAX 64

/* A recurring timer's schedule and progress.  expr and tz point into
 * whatever it was read from (header values, a changelog record, a blob). */
typedef struct sl_recur_s {
        sl_schedule_t sched;
        const char *expr; /* the sluice-every or sluice-cron text (which:
                           * sched.kind) */
        size_t expr_len;
        const char *tz; /* the sluice-tz value; tz_len 0: UTC */
        size_t tz_len;
        int catch_up;    /* sl_catch_up_t */
        int64_t fired;   /* occurrences produced */
        int64_t last_ms; /* the instant of the last one; 0: none */
} sl_recur_t;

/* 1 when any recurring header is given (vals[i] != NULL). */
int sl_recur_asked(const char *const vals[SL_RECUR_HDR_CNT]);

/* Reads the recurring headers (vals[i] NULL: absent; bytes, not
 * NUL-terminated) into *r, for a record whose timestamp base (what a
 * sluice-delay would count from) is base_ms: a sluice-every without
 * sluice-start is anchored there, so its first occurrence is one interval
 * after it.  0, or -1 with a one-line reason in detail (input bytes
 * escaped).  The zone is only checked for its length here: whether ICU
 * knows it is the caller's (sl_tzcache_get). */
int sl_recur_parse(sl_recur_t *r, const char *const vals[SL_RECUR_HDR_CNT],
                   const size_t lens[SL_RECUR_HDR_CNT], int64_t base_ms,
                   char *detail, size_t detail_size);

/* The schedule again from a changelog record's fields (proto/sluice.proto
 * Timer 12-20; 0 for a start or until is none): 0, or -1 with a reason. */
int sl_recur_from_record(sl_recur_t *r, const char *every, size_t every_len,
                         const char *cron, size_t cron_len, const char *tz,
                         size_t tz_len, int64_t start_ms, int64_t until_ms,
                         int64_t count, int32_t catch_up, int64_t fired,
                         int64_t last_ms, char *errstr, size_t errstr_size);

/* The changelog's start_ms / until_ms of a schedule (0: none). */
int64_t sl_recur_start_field(const sl_recur_t *r);
int64_t sl_recur_until_field(const sl_recur_t *r);

/* The blob section (op_delay.c's blob, flag SL_BLOB_RECURRING): appends
 * r to b; reads it back from *p (moved past it) into *r, pointing into
 * the blob: 0, or -1 when it does not end before end. */
void sl_recur_blob_put(sl_buf_t *b, const sl_recur_t *r);
int sl_recur_blob_get(const uint8_t **p, const uint8_t *end, sl_recur_t *r);

/* The zone of r from cache c ("UTC" when none is given): 0, or -1 with
 * "unknown time zone ..." in errstr. */
int sl_recur_tz(const sl_recur_t *r, sl_tzcache_t *c, sl_tz_t **out,
                char *errstr, size_t errstr_size);

/* The first occurrence of a new schedule read from a record whose
 * timestamp base is base_ms: the first instant after base_ms (or at the
 * start, when that is later).  0 with *out_ms, SL_SCHEDULE_END when none
 * is left ("never fires"), -1 with a reason. */
int sl_recur_first(const sl_recur_t *r, sl_tz_t *tz, int64_t base_ms,
                   int64_t *out_ms, char *errstr, size_t errstr_size);

/* sl_recur_due(): the instant to produce now. */
#define SL_RECUR_FIRE 0
/* sl_recur_due(): produce nothing now; wait for *out_ms (catch-up none). */
#define SL_RECUR_SKIP 2

/* A recurring timer whose pending occurrence is due_ms fell due.
 * caught_until is the end of the partition's last rebuild: an occurrence
 * due by then fell due while no one owned the partition, and follows
 * r->catch_up.  Returns SL_RECUR_FIRE with *out_ms the instant to produce
 * (due_ms, or for latest the most recent instant by caught_until),
 * SL_RECUR_SKIP with *out_ms the next instant after caught_until (none),
 * SL_SCHEDULE_END when none is left, or -1 with a reason. */
int sl_recur_due(const sl_recur_t *r, sl_tz_t *tz, int64_t due_ms,
                 int64_t caught_until, int64_t *out_ms, char *errstr,
                 size_t errstr_size);

/* The name of a sluice-catch-up value ("latest", "all", "none"). */
const char *sl_recur_catch_up_name(int catch_up);

/* The instants after a pending occurrence at due_ms (the one fired + 1
 * produces), at most max of them, into out[]: how many (fewer when the
 * schedule ends), or -1 with a reason when none could be computed. */
int sl_recur_upcoming(const sl_recur_t *r, sl_tz_t *tz, int64_t due_ms,
                      int64_t *out, int max, char *errstr, size_t errstr_size);

#endif
