/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tbucket.c — token bucket arithmetic (see tbucket.h).
 *
 * DESIGN
 *
 * The bucket is {tokens, updated_ms}: the level as of a whole millisecond.
 * Bringing it up to now adds (now - updated_ms) * rate / 1000 tokens, caps
 * at the burst and moves updated_ms to now.  Nothing is ever rounded away
 * except by the cap: the fraction of a token earned so far stays in
 * `tokens`, so a bucket at 3/s that is taken at each next-token time (334,
 * 667, 1000 ms ...) lets exactly 3 through per second over any long run; the
 * per-take error is the 1 ms rounding of the wake-up time, which the kept
 * fraction pays back on the next take.  The only drift is float rounding,
 * about 1e-16 of a token per operation.
 *
 * Doubles rather than fixed point: rates run from 1/d (1.2e-5 tokens per
 * second) to millions per second, and a fixed-point tokens-per-millisecond
 * would lose the slow end.  A double holds 53 bits, so a level up to 2^20
 * tokens keeps better than 1e-9 of a token.
 *
 * Availability uses a tolerance: a level of at least 1 - EPS is a token.
 * Without it, t + k * r / 1000 can come out at 0.9999999999 where the exact
 * value is 1 and a take at the computed next-token time would fail.
 * sl_tbucket_next_ms() computes the time from the same level function the
 * take uses and steps forward until that function agrees, so a take at the
 * returned time always succeeds (the scheduler never spins).  Taking a token
 * at 1 - EPS leaves the level at 0 (clamped), losing at most EPS.
 *
 * A rate of 0 stops the key (docs/throttle.md: "`0/s` stops a key"): a stopped
 * bucket never grants a token, whatever its level, so every message of the
 * key waits in the backlog until the rate is raised or the message
 * expires.  The level is frozen, not emptied: the bucket neither earns nor
 * loses tokens while stopped, and a rate raised again resumes from where
 * it was (a key stopped before its first message resumes with a full
 * bucket, as a new key would).  sl_parse_rate still gives 0/s a burst of 1;
 * the burst only matters once the rate is positive again.
 *
 * A burst below 1 (never produced by sl_parse_rate) counts as 1, and a
 * negative or NaN rate as 0, so no input can make a bucket that never fills
 * while a token is still awaited.
 *
 * Debt.  sl_tbucket_charge() takes any number of tokens, so the level may
 * go below zero; level_at() refills from there like from any level, and
 * sl_tbucket_next_ms() says when a whole token is back.  Work starts only
 * on a whole token (sl_tbucket_ready(), the test sl_tbucket_take() makes,
 * level >= 1 - EPS), never on a positive fraction of one: "> 0" would let
 * a bucket refilled for a thousandth of a token start a batch as readily
 * as a full one (nearly one unit more than the burst at once), and would
 * start work before the time sl_tbucket_next_ms() names for it, so a
 * caller that sleeps until then and one woken early for another reason
 * would not see the same bucket.  Over time both give the same rate; the
 * whole token is the rule that keeps the burst and the wake-up time
 * honest.
 */
#include "tbucket.h"

#include <math.h>

#include "util.h"

#define EPS 1e-9

static inline double eff_rate(const sl_rate_t *rate) {
        return rate->per_sec > 0 ? rate->per_sec : 0; /* NaN -> 0 */
}

static inline double eff_burst(const sl_rate_t *rate) {
        return rate->burst >= 1 ? rate->burst : 1; /* NaN -> 1 */
}

/* The level at `at` (>= updated_ms or not: a backwards clock adds nothing). */
static double level_at(const sl_tbucket_t *b, const sl_rate_t *rate,
                       int64_t at) {
        double burst = eff_burst(rate), t = b->tokens;

        if (at > b->updated_ms)
                t += (double)(at - b->updated_ms) * eff_rate(rate) / 1000.0;
        return t < burst ? t : burst;
}

sl_rate_t sl_tbucket_pace_rate(double per_sec) {
        sl_rate_t r;

        r.per_sec = per_sec > 0 ? per_sec : 0; /* NaN -> 0 */
        r.burst = r.per_sec / 10 > 1 ? r.per_sec / 10 : 1;
        return r;
}

void sl_tbucket_init(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms) {
        sl_assert(b && rate);
        b->tokens = eff_burst(rate);
        b->updated_ms = now_ms;
}

void sl_tbucket_restore(sl_tbucket_t *b, const sl_rate_t *rate, double tokens,
                        int64_t updated_ms) {
        double burst;

        sl_assert(b && rate);
        burst = eff_burst(rate);
        if (!(tokens > 0)) /* also NaN */
                tokens = 0;
        b->tokens = tokens < burst ? tokens : burst;
        b->updated_ms = updated_ms;
}

void sl_tbucket_refill(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms) {
        sl_assert(b && rate);
        b->tokens = level_at(b, rate, now_ms);
        b->updated_ms = now_ms;
}

double sl_tbucket_level(const sl_tbucket_t *b, const sl_rate_t *rate,
                        int64_t now_ms) {
        sl_assert(b && rate);
        return level_at(b, rate, now_ms);
}

int sl_tbucket_take(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms) {
        sl_tbucket_refill(b, rate, now_ms);
        if (eff_rate(rate) == 0 || b->tokens < 1 - EPS)
                return 0;
        b->tokens -= 1;
        if (b->tokens < 0)
                b->tokens = 0;
        return 1;
}

int sl_tbucket_ready(const sl_tbucket_t *b, const sl_rate_t *rate,
                     int64_t now_ms) {
        sl_assert(b && rate);
        return eff_rate(rate) > 0 && level_at(b, rate, now_ms) >= 1 - EPS;
}

void sl_tbucket_charge(sl_tbucket_t *b, const sl_rate_t *rate, int64_t now_ms,
                       double n) {
        sl_assert(b && rate && n >= 0);
        sl_tbucket_refill(b, rate, now_ms);
        b->tokens -= n;
}

/* The earliest time >= now_ms at which level_at() reaches `want` (which
 * must not exceed the burst), or SL_TBUCKET_NEVER. */
static int64_t time_to_reach(const sl_tbucket_t *b, const sl_rate_t *rate,
                             int64_t now_ms, double want) {
        double r = eff_rate(rate), ms;
        int64_t from, at;

        if (level_at(b, rate, now_ms) >= want)
                return now_ms;
        if (r == 0)
                return SL_TBUCKET_NEVER;
        /* The level grows from b->tokens at updated_ms (or from now_ms if
         * the clock went back: level_at adds nothing before updated_ms). */
        from = b->updated_ms > now_ms ? b->updated_ms : now_ms;
        ms = ceil((want - level_at(b, rate, from)) * 1000.0 / r);
        if (!(ms < (double)(INT64_MAX / 4)) || from > INT64_MAX / 4)
                return SL_TBUCKET_NEVER;
        at = from + (int64_t)ms;
        if (at < now_ms)
                at = now_ms;
        /* Float rounding can leave the level a hair short: step until the
         * same function the take uses agrees (one or two steps at most). */
        for (int i = 0; i < 64 && level_at(b, rate, at) < want; i++)
                at++;
        for (int i = 0;
             i < 64 && at > now_ms && level_at(b, rate, at - 1) >= want; i++)
                at--;
        return at;
}

int64_t sl_tbucket_next_ms(const sl_tbucket_t *b, const sl_rate_t *rate,
                           int64_t now_ms) {
        sl_assert(b && rate);
        if (eff_rate(rate) == 0)
                return SL_TBUCKET_NEVER; /* stopped: no token, ever */
        return time_to_reach(b, rate, now_ms, 1 - EPS);
}

int64_t sl_tbucket_full_ms(const sl_tbucket_t *b, const sl_rate_t *rate,
                           int64_t now_ms) {
        sl_assert(b && rate);
        return time_to_reach(b, rate, now_ms, eff_burst(rate) - EPS);
}

void sl_tbucket_set_rate(sl_tbucket_t *b, const sl_rate_t *old_rate,
                         const sl_rate_t *new_rate, int64_t now_ms) {
        double burst;

        sl_assert(b && old_rate && new_rate);
        sl_tbucket_refill(b, old_rate, now_ms);
        burst = eff_burst(new_rate);
        if (b->tokens > burst)
                b->tokens = burst;
}
