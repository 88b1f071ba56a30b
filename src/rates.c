/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rates.c — the throttle's rates table (see rates.h).
 *
 * DESIGN
 *
 * Per-key rates live in a hash map (hmap.h) of entries that hold their
 * key and their sl_rate_t in one block: a map, since nothing here is
 * ordered in time.  A rates topic holds one record per customer with a
 * special rate, so the ~60 bytes an entry costs beside its key (the
 * entry, malloc's overhead, its share of the buckets) are of no concern;
 * the bound counts SL_RATES_ENTRY_COST each.
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

#include "hash.h"
#include "hmap.h"
#include "util.h"

/* What the bound (sl_rates_set_max_bytes) counts for an entry beside its
 * key: the "~100 B each" of the max_rates_bytes reference, an upper bound
 * of what an entry costs (rate_entry_t, malloc's overhead and a bucket
 * share come to ~60), kept so that the bound admits the keys it always
 * has. */
#define SL_RATES_ENTRY_COST 96

/* A key's own rate. */
typedef struct rate_entry_s {
        sl_hmap_link_t link;
        sl_rate_t rate;
        uint32_t keylen;
        char key[];
} rate_entry_t;

#define ENTRY_HASH(e)          sl_hash((e)->key, (e)->keylen)
#define ENTRY_EQ(e, h, k, len) sl_hmap_key_eq((e)->key, (e)->keylen, k, len)
SL_HMAP_DEFINE(rmap, rate_entry_t, link, ENTRY_HASH, ENTRY_EQ)

struct sl_rates_s {
        sl_hmap_t map;     /* key -> rate_entry_t */
        size_t max_bytes;  /* 0: no cap */
        size_t used_bytes; /* keys and SL_RATES_ENTRY_COST each */
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
        sl_hmap_init(&rt->map, 16, 1, 0);
        rt->fallback = *fallback;
        rt->gen = 1;
        return rt;
}

void sl_rates_destroy(sl_rates_t *rt) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        if (!rt)
                return;
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&rt->map, &it));)
                free(rmap_entry(l));
        sl_hmap_fini(&rt->map);
        free(rt);
}

/* Removes the entry for key; 1 if there was one. */
static int rates_remove(sl_rates_t *rt, const void *key, size_t keylen) {
        sl_hmap_link_t **link;
        rate_entry_t *e;

        if (is_star(key, keylen)) {
                int had = rt->has_dflt;
                rt->has_dflt = 0;
                return had;
        }
        link = rmap_link(&rt->map, sl_hash(key, keylen), key, keylen);
        if (!*link)
                return 0;
        e = rmap_entry(*link);
        rmap_unlink(&rt->map, link);
        free(e);
        rt->used_bytes -= keylen + SL_RATES_ENTRY_COST;
        return 1;
}

/* Sets the entry for key; 1 if a lookup result changed. */
static int rates_set(sl_rates_t *rt, const void *key, size_t keylen,
                     const sl_rate_t *rate) {
        sl_hmap_link_t **link;
        rate_entry_t *e;

        if (is_star(key, keylen)) {
                if (rt->has_dflt && rate_eq(&rt->dflt, rate))
                        return 0;
                rt->dflt = *rate;
                rt->has_dflt = 1;
                return 1;
        }
        link = rmap_link(&rt->map, sl_hash(key, keylen), key, keylen);
        if (*link) {
                e = rmap_entry(*link);
                if (rate_eq(&e->rate, rate))
                        return 0;
                e->rate = *rate;
                return 1;
        }
        if (rt->max_bytes &&
            rt->used_bytes + keylen + SL_RATES_ENTRY_COST > rt->max_bytes)
                return -2;
        if (keylen >= UINT32_MAX)
                return -1;
        e = sl_malloc(sizeof(*e) + keylen);
        e->rate = *rate;
        e->keylen = (uint32_t)keylen;
        if (keylen)
                memcpy(e->key, key, keylen);
        rmap_insert_at(&rt->map, link, e);
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
                         sl_hmap_count(&rt->map), rt->used_bytes,
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
        const rate_entry_t *e;

        sl_assert(rt && out && (key || !keylen));
        if (!is_star(key, keylen) &&
            (e = rmap_find(&rt->map, sl_hash(key, keylen), key, keylen))) {
                *out = e->rate;
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
        return sl_hmap_count(&rt->map);
}

void sl_rates_set_fallback(sl_rates_t *rt, const sl_rate_t *fallback) {
        sl_assert(rt && fallback);
        if (rate_eq(&rt->fallback, fallback))
                return;
        rt->fallback = *fallback;
        if (!rt->has_dflt)
                rt->gen++;
}
