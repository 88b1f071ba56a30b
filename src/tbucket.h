/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tbucket.h — a token bucket: refilled at a rate (tokens per second),
 * capped at a burst.  The throttle takes one token per forwarded message;
 * the delay and debounce operators pace their catch-up after a rebuild
 * with one (a token per fired timer, or a debounce batch's items at once,
 * sl_tbucket_charge()).
 *
 * Pure arithmetic: no Kafka, no libuv, no allocation, not thread-safe.  The
 * bucket holds only its level and the time of that level (16 bytes); the
 * rate is passed in on every call, because it belongs to the rates table and
 * may change at run time (see tbucket.c for exactness over long runs).
 *
 * Times are epoch milliseconds (the operator's wall clock).  A clock that
 * steps backwards never refills nor un-refills the bucket: the step is
 * absorbed and refilling resumes from the new time.
 */
#ifndef SL_TBUCKET_H
#define SL_TBUCKET_H

#include <stdint.h>

#include "parse.h"

/* "Never": the next-token time of a stopped (rate 0) bucket. */
#define SL_TBUCKET_NEVER INT64_MAX

typedef struct sl_tbucket_s {
        double tokens;      /* level at updated_ms, up to burst (below 0
                             * only after sl_tbucket_charge()) */
        int64_t updated_ms; /* when tokens was last brought up to date */
} sl_tbucket_t;

/* A full bucket (burst tokens) at now_ms: what a key never seen before
 * gets. */
void sl_tbucket_init(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms);

/* A bucket restored from a changelog record (ThrottleKey.tokens and
 * updated_ms).  tokens is clamped to [0, burst]; a NaN is 0. */
void sl_tbucket_restore(sl_tbucket_t *b, const sl_rate_t *rate, double tokens,
                        int64_t updated_ms);

/* The rate of a pacer of per_sec units a second (a negative or NaN
 * per_sec is 0) in bursts of a tenth of a second, at least one unit: what
 * the delay and debounce operators' catch-up after a rebuild runs at
 * (catchup_rate). */
sl_rate_t sl_tbucket_pace_rate(double per_sec);

/* Brings the level up to now_ms: adds the tokens earned since updated_ms at
 * this rate, capped at the burst. */
void sl_tbucket_refill(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms);

/* The level at now_ms without changing the bucket. */
double sl_tbucket_level(const sl_tbucket_t *b, const sl_rate_t *rate,
                        int64_t now_ms);

/* Refills, then takes one token if the level is at least 1 and the rate
 * is positive.  Returns 1 if a token was taken, 0 if not (the bucket is
 * still refilled).  A rate of 0 never grants a token, even from a full
 * bucket: 0/s holds every message of the key. */
int sl_tbucket_take(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms);

/* 1 when sl_tbucket_take() would succeed at now_ms (a whole token is
 * there and the rate is positive), 0 if not.  Changes nothing. */
int sl_tbucket_ready(const sl_tbucket_t *b, const sl_rate_t *rate,
                     int64_t now_ms);

/* Refills, then takes n (>= 0) tokens whatever the level: below zero the
 * bucket is in debt, which the refill pays back before sl_tbucket_ready()
 * says yes again.  For work whose cost is known only once it is done, or
 * may exceed the burst (a debounce batch of many items after
 * sl_tbucket_ready()): over time the rate still holds. */
void sl_tbucket_charge(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms,
                       double n);

/* The earliest time >= now_ms at which sl_tbucket_take() succeeds: now_ms
 * when a token is there already, SL_TBUCKET_NEVER when the rate is 0.  Rounded
 * up to the next whole millisecond, so a take at the returned time always
 * succeeds. */
int64_t sl_tbucket_next_ms(const sl_tbucket_t *b, const sl_rate_t *rate,
                           int64_t now_ms);

/* The earliest time >= now_ms at which the bucket is full (a key whose
 * bucket is full and has no backlog carries no state worth keeping);
 * SL_TBUCKET_NEVER for a rate of 0 below the burst. */
int64_t sl_tbucket_full_ms(const sl_tbucket_t *b, const sl_rate_t *rate,
                           int64_t now_ms);

/* Switches the bucket from old_rate to new_rate at now_ms: the time up to
 * now_ms is refilled at the old rate, the level is kept but capped at the
 * new burst. */
void sl_tbucket_set_rate(sl_tbucket_t *b, const sl_rate_t *old_rate,
                         const sl_rate_t *new_rate, int64_t now_ms);

#endif
