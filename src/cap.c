/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cap.c — a memory cap with hysteresis (see cap.h for the state diagram).
 *
 * The low-water mark is computed once from the limit: 95 % of it, but at
 * least one below it, so that a tiny cap (1, 2, ...) still needs something
 * to go before the input resumes, and never below 0.
 *
 * A record that does not fit while the cap holds no more than the mark is
 * taken anyway (sl_cap_room): a FULL cap must be able to open again by what
 * it counts falling, and a byte cap can meet a record larger than the band
 * between the mark and the limit.  The overshoot is that one record.
 */
#include "cap.h"

void sl_cap_init(sl_cap_t *c, int64_t limit) {
        c->limit = limit > 0 ? limit : 0;
        c->low = c->limit / 100 * SL_CAP_LOW_PCT +
                 c->limit % 100 * SL_CAP_LOW_PCT / 100;
        if (c->low > c->limit - 1)
                c->low = c->limit - 1;
        if (c->low < 0)
                c->low = 0;
        c->used = 0;
        c->full = 0;
        c->pauses = 0;
}

int sl_cap_room(const sl_cap_t *c, int64_t n) {
        if (!c->limit)
                return 1;
        if (c->full)
                return 0;
        /* At or below the low-water mark anything fits: otherwise a record
         * larger than the band between the mark and the limit (a byte cap)
         * would wait for a resume that nothing brings.  The cap can then be
         * passed by that one record. */
        return n <= 0 || c->used <= c->limit - n || c->used <= c->low;
}

int sl_cap_refuse(sl_cap_t *c) {
        if (c->full || !c->limit)
                return 0;
        c->full = 1;
        c->pauses++;
        return 1;
}

int sl_cap_add(sl_cap_t *c, int64_t delta) {
        c->used += delta;
        if (c->used < 0)
                c->used = 0;
        if (c->full && c->used <= c->low) {
                c->full = 0;
                return 1;
        }
        return 0;
}
