/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topiccache.c — the bounded topic metadata cache (see topiccache.h).
 *
 * Layout: a fixed array of `capacity` slots, filled in order and reused in
 * place once full (so an entry never moves: a lookup in flight may hold a
 * pointer to it), and a chained index over them (hmap.h), keyed by
 * sl_hash() of the name, with a fixed power-of-two bucket array at least
 * twice the capacity (the entries are bounded, so it never resizes).  An
 * entry keeps its name's hash, compared before the name.
 */
#include "topiccache.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "hmap.h"
#include "util.h"

/* Credits (topiccache.h, "Eviction"). */
#define CREDIT_EXISTS  3
#define CREDIT_MISSING 1

struct sl_topiccache_entry_s {
        char *name;          /* NULL: a free slot */
        uint64_t hash;       /* sl_hash() of the name */
        sl_hmap_link_t link; /* in the index */
        int partitions;
        int64_t max_bytes; /* max.message.bytes, -1 unknown */
        int looking;       /* a lookup is in flight */
        int credit;
        int64_t expires_ms;
        sl_topiccache_t *tc;
};

struct sl_topiccache_s {
        sl_topiccache_entry_t *slots;
        size_t capacity;
        size_t used; /* slots [0, used) have been filled at least once */
        size_t entries;
        size_t hand;     /* the CLOCK hand */
        sl_hmap_t index; /* by name */
        int max_lookups;
        int lookups;
        uint64_t evictions;
        uint64_t deferred;
        int64_t ttl_pos_ms, ttl_neg_ms;
        void *opaque;
};

sl_topiccache_t *sl_topiccache_new(size_t capacity, int max_lookups,
                                   void *opaque) {
        sl_topiccache_t *tc;
        sl_assert(max_lookups >= 1 && capacity >= 2 * (size_t)max_lookups &&
                  capacity < INT32_MAX / 4);
        tc = sl_calloc(1, sizeof(*tc));
        tc->slots = sl_calloc(capacity, sizeof(*tc->slots));
        tc->capacity = capacity;
        sl_hmap_init(&tc->index, 2 * capacity, 0, 0); /* fixed */
        tc->max_lookups = max_lookups;
        tc->ttl_pos_ms = SL_TOPICCACHE_TTL_POS_MS;
        tc->ttl_neg_ms = SL_TOPICCACHE_TTL_NEG_MS;
        tc->opaque = opaque;
        return tc;
}

void sl_topiccache_set_ttl(sl_topiccache_t *tc, int64_t pos_ms,
                           int64_t neg_ms) {
        sl_assert(pos_ms >= 1 && neg_ms >= 1);
        tc->ttl_pos_ms = pos_ms;
        tc->ttl_neg_ms = neg_ms;
}

void sl_topiccache_destroy(sl_topiccache_t *tc) {
        if (!tc)
                return;
        for (size_t i = 0; i < tc->used; i++)
                free(tc->slots[i].name);
        free(tc->slots);
        sl_hmap_fini(&tc->index);
        free(tc);
}

#define ENTRY_HASH(e)          ((e)->hash)
#define ENTRY_EQ(e, h, k, len) ((e)->hash == (h) && !strcmp((e)->name, k))
SL_HMAP_DEFINE(tmap, sl_topiccache_entry_t, link, ENTRY_HASH, ENTRY_EQ)

static sl_topiccache_entry_t *find(const sl_topiccache_t *tc, const char *name,
                                   uint64_t hash) {
        return tmap_find(&tc->index, hash, name, 0);
}

/* A slot for a new entry: a never-used one, or the one CLOCK evicts. */
static sl_topiccache_entry_t *take_slot(sl_topiccache_t *tc, int64_t now_ms) {
        sl_topiccache_entry_t *e;
        if (tc->used < tc->capacity)
                return &tc->slots[tc->used++];
        /* Every pass takes a credit (at most CREDIT_EXISTS) from each entry
         * not in flight, and fewer than half are in flight. */
        for (size_t step = 0; step < (CREDIT_EXISTS + 1) * tc->capacity;
             step++) {
                e = &tc->slots[tc->hand];
                tc->hand = (tc->hand + 1) % tc->capacity;
                if (e->looking)
                        continue;
                if (e->credit > 0 && e->expires_ms > now_ms) {
                        e->credit--;
                        continue;
                }
                tmap_remove(&tc->index, e);
                free(e->name);
                e->name = NULL;
                tc->entries--;
                tc->evictions++;
                return e;
        }
        sl_assert(!"topiccache: nothing to evict");
        return NULL;
}

int sl_topiccache_get(sl_topiccache_t *tc, const char *topic, int64_t now_ms,
                      sl_topiccache_entry_t **lookupp) {
        uint64_t hash = sl_hash(topic, strlen(topic));
        sl_topiccache_entry_t *e = find(tc, topic, hash);

        *lookupp = NULL;
        if (!e) {
                if (tc->lookups >= tc->max_lookups) {
                        tc->deferred++;
                        return SL_TOPICCACHE_LOOKING;
                }
                e = take_slot(tc, now_ms);
                memset(e, 0, sizeof(*e));
                e->name = sl_strdup(topic);
                e->hash = hash;
                e->partitions = SL_TOPICCACHE_LOOKING;
                e->max_bytes = -1;
                e->tc = tc;
                tmap_insert(&tc->index, hash, e);
                tc->entries++;
        } else if (e->partitions > 0) {
                e->credit = CREDIT_EXISTS;
        }
        if (!e->looking && e->expires_ms <= now_ms &&
            tc->lookups < tc->max_lookups) {
                e->looking = 1;
                tc->lookups++;
                *lookupp = e;
        }
        return e->partitions;
}

void sl_topiccache_answer(sl_topiccache_t *tc, sl_topiccache_entry_t *e, int ok,
                          int partitions, int64_t now_ms) {
        sl_assert(e->tc == tc && e->looking && tc->lookups > 0);
        e->looking = 0;
        tc->lookups--;
        if (!ok) {
                /* Keep what we knew; ask again soon. */
                if (e->partitions == SL_TOPICCACHE_LOOKING)
                        e->partitions = SL_TOPICCACHE_UNKNOWN;
                e->expires_ms = now_ms + SL_TOPICCACHE_RETRY_MS;
                e->credit = CREDIT_MISSING;
                return;
        }
        e->partitions = partitions > 0 || partitions == SL_TOPICCACHE_FORBIDDEN
                            ? partitions
                            : 0;
        e->expires_ms =
            now_ms + (partitions > 0 ? tc->ttl_pos_ms : tc->ttl_neg_ms);
        e->credit = partitions > 0 ? CREDIT_EXISTS : CREDIT_MISSING;
}

void sl_topiccache_set_max_bytes(sl_topiccache_t *tc, const char *topic,
                                 int64_t max_bytes) {
        sl_topiccache_entry_t *e =
            find(tc, topic, sl_hash(topic, strlen(topic)));
        if (e && max_bytes > 0)
                e->max_bytes = max_bytes;
}

int sl_topiccache_forbid(sl_topiccache_t *tc, const char *topic,
                         int64_t now_ms) {
        sl_topiccache_entry_t *e =
            find(tc, topic, sl_hash(topic, strlen(topic)));
        if (!e || e->looking)
                return -1;
        e->partitions = SL_TOPICCACHE_FORBIDDEN;
        e->expires_ms = now_ms + tc->ttl_neg_ms;
        e->credit = CREDIT_MISSING;
        return 0;
}

int64_t sl_topiccache_max_bytes(const sl_topiccache_t *tc, const char *topic) {
        const sl_topiccache_entry_t *e =
            find(tc, topic, sl_hash(topic, strlen(topic)));
        return e ? e->max_bytes : -1;
}

const char *sl_topiccache_name(const sl_topiccache_entry_t *e) {
        return e->name;
}

sl_topiccache_t *sl_topiccache_of(const sl_topiccache_entry_t *e) {
        return e->tc;
}

void *sl_topiccache_opaque(const sl_topiccache_t *tc) {
        return tc->opaque;
}

void sl_topiccache_foreach_looking(sl_topiccache_t *tc,
                                   void (*cb)(sl_topiccache_entry_t *e,
                                              void *opaque),
                                   void *opaque) {
        for (size_t i = 0; i < tc->used; i++)
                if (tc->slots[i].name && tc->slots[i].looking)
                        cb(&tc->slots[i], opaque);
}

void sl_topiccache_stats(const sl_topiccache_t *tc, sl_topiccache_stats_t *st) {
        st->entries = tc->entries;
        st->capacity = tc->capacity;
        st->lookups = tc->lookups;
        st->evictions = tc->evictions;
        st->deferred = tc->deferred;
}

int sl_topiccache_verify(const sl_topiccache_t *tc) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;
        size_t entries = 0;
        int lookups = 0;
        for (size_t i = 0; i < tc->used; i++) {
                const sl_topiccache_entry_t *e = &tc->slots[i];
                if (!e->name)
                        continue;
                entries++;
                lookups += e->looking;
                if (e->hash != sl_hash(e->name, strlen(e->name)) ||
                    find(tc, e->name, e->hash) != e)
                        return -1;
        }
        if (tmap_verify(&tc->index))
                return -1;
        for (const sl_hmap_link_t *l;
             (l = sl_hmap_iter_next(&tc->index, &it));) {
                const sl_topiccache_entry_t *e = tmap_entry(l);
                if (e < tc->slots || e >= tc->slots + tc->used || !e->name)
                        return -1;
        }
        if (entries != tc->entries || sl_hmap_count(&tc->index) != entries ||
            lookups != tc->lookups || lookups > tc->max_lookups ||
            entries > tc->capacity)
                return -1;
        return 0;
}
