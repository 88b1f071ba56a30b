/*
 * rates.c — the throttle's rates table (see rates.h).
 *
 * DESIGN
 *
 * Per-key rates live in an sl_timerheap used as a byte-keyed hash map: the
 * key is the throttle key, the data is the sl_rate_t (16 bytes, copied in
 * and out with memcpy, so its alignment inside the timer does not matter),
 * due and seq are unused.  The heap half of the structure is never
 * consulted; reusing the map keeps one hash table implementation in the
 * tree.  A rates topic holds one record per customer with a special rate,
 * so a few hundred bytes per entry is of no concern.
 *
 * The "*" entry and the fallback are kept apart from the map, so a lookup is
 * one hash probe and two branches.
 *
 * The generation moves only when a lookup could return something new: a
 * record that repeats the current value, or a tombstone for a key that has
 * no entry, leaves it alone.  Re-reading a compacted rates topic at start-up
 * therefore costs the backlogs one refresh per distinct change, not one per
 * record.
 */
#include "rates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timerheap.h"
#include "util.h"

/* What an entry costs beside its key: the heap's timer and index slots
 * and the rate (an estimate for the cap, rates.h). */
#define SL_RATES_ENTRY_COST 96

struct sl_rates_s {
        sl_timerheap_t *map; /* key -> sl_rate_t */
        size_t max_bytes;    /* 0: no cap */
        size_t used_bytes;   /* keys and SL_RATES_ENTRY_COST each */
        sl_rate_t fallback;
        sl_rate_t dflt; /* the "*" record, valid when has_dflt */
        int has_dflt;
        uint64_t gen;
};

static int is_star(const void *key, size_t keylen) {
        return keylen == 1 && *(const char *)key == '*';
}

static int rate_eq(const sl_rate_t *a, const sl_rate_t *b) {
        return a->per_sec == b->per_sec && a->burst == b->burst;
}

sl_rates_t *sl_rates_new(const sl_rate_t *fallback) {
        sl_rates_t *rt;

        sl_assert(fallback);
        rt = sl_calloc(1, sizeof(*rt));
        rt->map = sl_timerheap_new();
        rt->fallback = *fallback;
        rt->gen = 1;
        return rt;
}

void sl_rates_destroy(sl_rates_t *rt) {
        if (!rt)
                return;
        sl_timerheap_destroy(rt->map);
        free(rt);
}

/* Removes the entry for key; 1 if there was one. */
static int rates_remove(sl_rates_t *rt, const void *key, size_t keylen) {
        if (is_star(key, keylen)) {
                int had = rt->has_dflt;
                rt->has_dflt = 0;
                return had;
        }
        if (!sl_timerheap_remove(rt->map, key, keylen))
                return 0;
        rt->used_bytes -= keylen + SL_RATES_ENTRY_COST;
        return 1;
}

/* Sets the entry for key; 1 if a lookup result changed. */
static int rates_set(sl_rates_t *rt, const void *key, size_t keylen,
                     const sl_rate_t *rate) {
        const sl_timer_t *t;
        sl_rate_t cur;

        if (is_star(key, keylen)) {
                if (rt->has_dflt && rate_eq(&rt->dflt, rate))
                        return 0;
                rt->dflt = *rate;
                rt->has_dflt = 1;
                return 1;
        }
        t = sl_timerheap_find(rt->map, key, keylen);
        if (t) {
                memcpy(&cur, sl_timer_data(t), sizeof(cur));
                if (rate_eq(&cur, rate))
                        return 0;
        } else if (rt->max_bytes &&
                   rt->used_bytes + keylen + SL_RATES_ENTRY_COST >
                       rt->max_bytes) {
                return -2;
        }
        if (sl_timerheap_upsert(rt->map, key, keylen, 0, 0, rate,
                                sizeof(*rate)) < 0)
                return -1;
        if (!t)
                rt->used_bytes += keylen + SL_RATES_ENTRY_COST;
        return 1;
}

int sl_rates_apply(sl_rates_t *rt, const void *key, size_t keylen,
                   const void *value, size_t valuelen, char *errstr,
                   size_t errstr_size) {
        char text[SL_RATES_MAX_VALUE + 1];
        sl_rate_t rate;
        int r;

        sl_assert(rt);
        if (!key) {
                snprintf(errstr, errstr_size, "record has no key");
                return -1;
        }
        if (!value) {
                if (rates_remove(rt, key, keylen))
                        rt->gen++;
                return 0;
        }
        if (valuelen > SL_RATES_MAX_VALUE) {
                snprintf(errstr, errstr_size,
                         "value is %zu bytes (at most %d expected)", valuelen,
                         SL_RATES_MAX_VALUE);
                return -1;
        }
        memcpy(text, value, valuelen);
        text[valuelen] = '\0';
        if (memchr(text, '\0', valuelen)) {
                snprintf(errstr, errstr_size, "value holds a NUL byte");
                return -1;
        }
        if (sl_parse_rate(text, &rate, errstr, errstr_size) != 0)
                return -1;
        r = rates_set(rt, key, keylen, &rate);
        if (r == -2) {
                snprintf(errstr, errstr_size,
                         "the table is full (%zu keys, %zu of max_rates_bytes "
                         "%zu): the key keeps the default rate",
                         sl_timerheap_count(rt->map), rt->used_bytes,
                         rt->max_bytes);
                return -2;
        }
        if (r < 0) {
                snprintf(errstr, errstr_size, "key too long");
                return -1;
        }
        if (r)
                rt->gen++;
        return 0;
}

sl_rate_source_t sl_rates_lookup(const sl_rates_t *rt, const void *key,
                                 size_t keylen, sl_rate_t *out) {
        const sl_timer_t *t;

        sl_assert(rt && out && (key || !keylen));
        if (!is_star(key, keylen) &&
            (t = sl_timerheap_find(rt->map, key, keylen))) {
                memcpy(out, sl_timer_data(t), sizeof(*out));
                return SL_RATE_KEY;
        }
        if (rt->has_dflt) {
                *out = rt->dflt;
                return SL_RATE_DEFAULT;
        }
        *out = rt->fallback;
        return SL_RATE_FALLBACK;
}

uint64_t sl_rates_generation(const sl_rates_t *rt) {
        sl_assert(rt);
        return rt->gen;
}

void sl_rates_set_max_bytes(sl_rates_t *rt, size_t max_bytes) {
        sl_assert(rt);
        rt->max_bytes = max_bytes;
}

size_t sl_rates_bytes(const sl_rates_t *rt) {
        sl_assert(rt);
        return rt->used_bytes;
}

size_t sl_rates_count(const sl_rates_t *rt) {
        sl_assert(rt);
        return sl_timerheap_count(rt->map);
}

void sl_rates_set_fallback(sl_rates_t *rt, const sl_rate_t *fallback) {
        sl_assert(rt && fallback);
        if (rate_eq(&rt->fallback, fallback))
                return;
        rt->fallback = *fallback;
        if (!rt->has_dflt)
                rt->gen++;
}
