/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cap.h — a memory cap with hysteresis: how much of something a pipeline
 * holds on this instance (pending timers, open groups, backlog keys, ...),
 * the most it may hold, and whether its input waits for room
 * (docs/operations.md, "Memory caps": memory stays bounded whatever
 * producers send).
 *
 * Pure arithmetic: no Kafka, no libuv, no allocation, not thread-safe.  The
 * runtime (task.h, sl_pcap_*) wraps one per configured cap with its metrics
 * and pauses the input partitions that wait for it.
 *
 *                 room(n): used + n <= limit
 *        OPEN ───────────────────────────────────────────────┐
 *          ▲   refuse() (a record did not fit): 1 once       │
 *          │                                                 ▼
 *          └──── add() brings used to <= low: returns 1 ── FULL
 *                                                   (room() is 0 for all)
 *
 * A cap is FULL from the first record it refused until what it counts falls
 * to the low-water mark (SL_CAP_LOW_PCT of the limit): in between no record
 * that would add to it is taken, so the input resumes in one step with room
 * for a burst instead of flapping at the line.  A limit of 0 is unlimited.
 */
#ifndef SL_CAP_H
#define SL_CAP_H

#include <stdint.h>

/* Low-water mark, in percent of the limit. */
#define SL_CAP_LOW_PCT 95

typedef struct sl_cap_s {
        int64_t limit; /* 0: unlimited */
        int64_t low;   /* FULL ends at or below this */
        int64_t used;  /* what this instance holds now */
        int full;
        uint64_t pauses; /* transitions into FULL */
} sl_cap_t;

/* An OPEN cap with nothing used.  limit < 0 is taken as 0 (unlimited). */
void sl_cap_init(sl_cap_t *c, int64_t limit);

/* 1 if n more fit now: never while FULL; else used + n <= limit, or used
 * is at or below the low-water mark (one record larger than the band
 * between the mark and the limit may pass the limit). */
int sl_cap_room(const sl_cap_t *c, int64_t n);

/* A record did not fit: the cap is FULL.  Returns 1 when it just became
 * FULL (the caller says so once), 0 when it already was. */
int sl_cap_refuse(sl_cap_t *c);

/* Counts delta more (negative: less; used never goes below 0).  Returns 1
 * when the cap was FULL and is now OPEN (used <= low): the caller resumes
 * the input that waited. */
int sl_cap_add(sl_cap_t *c, int64_t delta);

#endif
