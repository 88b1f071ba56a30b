/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmap.h — one intrusive chained hash map keyed by bytes, generated for
 * each entry type.
 *
 * DESIGN
 *
 * sluice looks things up by keys that producers chose: timer ids, debounce
 * group keys, throttle keys, rates keys, target topic names.  Each table
 * is a power-of-two array of buckets, each bucket a chain of entries, and
 * the bucket of a key is the low bits of sl_hash() (hash.h): SipHash under
 * a per-process secret seed, so no producer can aim its keys at one chain.
 *
 * The map is intrusive: an entry embeds its link (sl_hmap_link_t, one
 * pointer) and the map allocates nothing per entry, so the entry is one
 * block with its key and whatever else it holds.  A pending timer's
 * memory is the budget here (at most 64 bytes beyond key and payload,
 * the targets of docs/benchmarks.md), and a boxed node per entry (a
 * pointer to the key, a pointer to the value, the link, malloc's header) would
 * spend half of it.  The map keeps no hash in the entry either: where the key
 * is at hand the hash is cheaper to compute again at a resize than to store in
 * millions of entries (an entry that has its hash anyway, as the topic cache's,
 * can compare it first in its EQ).
 *
 * Comparisons must inline, as the heap's do (heap.h): a lookup walks a
 * chain and compares a key at each entry, on the path of every input
 * record.  So the typed part is a macro that writes `static` functions
 * for one entry type, its link member, HASH(e) (the entry's sl_hash(), for
 * resizing and verifying) and EQ(e, hash, key, keylen) (1 when e holds
 * that key):
 *
 *   #define T_HASH(t)             sl_hash((t)->key, (t)->keylen)
 *   #define T_EQ(t, h, k, n)      sl_hmap_key_eq((t)->key, (t)->keylen, k, n)
 *   SL_HMAP_DEFINE(tmap, my_t, link, T_HASH, T_EQ)
 *
 * gives tmap_entry, _link, _find, _insert_at, _insert, _replace, _unlink,
 * _remove, _shrink, _resize and _verify over an sl_hmap_t.  The untyped part
 * (init, fini, clear, iteration, the sizing rules) is below and in
 * hmap.c.
 *
 * _link() is the one lookup: it returns the link that points at the
 * entry with the key, or at the NULL that ends its chain.  So a miss is
 * also where a new entry of that key goes (_insert_at), and a hit is
 * where a new version of the entry goes (_replace) or where it comes out
 * (_unlink), each without walking the chain again.
 *
 * Sizing.  Each map has its own rules, set at sl_hmap_init(): the bucket
 * array doubles when the entries exceed max_load per bucket (fourfold
 * below fast_below buckets, where a resize costs a cache miss per entry
 * of a small map, and memory does not count) and halves when they fall
 * below a quarter of that, never under min_buckets; max_load 0 fixes the
 * array at min_buckets (a table whose entries are bounded).  A resize
 * happens in place, in the one array (realloc): growing from n buckets,
 * an entry of bucket i can only go to i, i + n, i + 2n ..., so each chain
 * keeps its stayers and hands the others to buckets above n, which no
 * later step looks at; shrinking, bucket i's chain joins bucket
 * i % newsize, with no key hashed again.  No second array is held while
 * entries move (which, beside a heap array that grows at the same
 * moment, cost a delay partition's timers ~1 B each in RSS under
 * jemalloc).  The order of a chain means nothing.
 *
 * Pure: no Kafka, no libuv, not thread-safe.  Allocation failure aborts
 * (util.h).
 */
#ifndef SL_HMAP_H
#define SL_HMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The link an entry embeds: the next entry of its chain. */
typedef struct sl_hmap_link_s {
        struct sl_hmap_link_s *next;
} sl_hmap_link_t;

typedef struct sl_hmap_s {
        sl_hmap_link_t **buckets;
        size_t nbuckets; /* power of two */
        size_t count;
        uint32_t min_buckets; /* power of two */
        uint16_t max_load;    /* entries per bucket before doubling; 0: fixed */
        uint16_t fast_below;  /* below this many buckets, grow fourfold */
} sl_hmap_t;

/* An empty map of min_buckets (rounded up to a power of two, at least 1)
 * buckets, with its sizing rules (see above).  Never fails. */
void sl_hmap_init(sl_hmap_t *m, size_t min_buckets, unsigned max_load,
                  unsigned fast_below);

/* Frees the bucket array; the entries are the caller's.  The map must be
 * initialised again before any other use. */
void sl_hmap_fini(sl_hmap_t *m);

/* Forgets every entry at once (their links are left as they were); the
 * bucket array keeps its size. */
void sl_hmap_clear(sl_hmap_t *m);

/* Bytes of the bucket array (the entries are the caller's). */
static inline size_t sl_hmap_memory(const sl_hmap_t *m) {
        return m->nbuckets * sizeof(*m->buckets);
}

static inline size_t sl_hmap_count(const sl_hmap_t *m) {
        return m->count;
}

/* 1 when the bytes of two keys are the same (what an entry's EQ compares
 * for most maps: its key bytes with the key looked up). */
static inline int sl_hmap_key_eq(const void *a, size_t alen, const void *b,
                                 size_t blen) {
        return alen == blen && (!alen || !memcmp(a, b, alen));
}

/* The head of the chain of keys whose sl_hash() is hash. */
static inline sl_hmap_link_t **sl_hmap_bucket(const sl_hmap_t *m,
                                              uint64_t hash) {
        return &m->buckets[(size_t)hash & (m->nbuckets - 1)];
}

/* The bucket count the map should grow to now, or 0. */
static inline size_t sl_hmap_grow_to(const sl_hmap_t *m) {
        if (!m->max_load || m->count <= m->nbuckets * m->max_load)
                return 0;
        return m->nbuckets * (m->nbuckets < m->fast_below ? 4 : 2);
}

/* The bucket count the map should shrink to now, or 0. */
static inline size_t sl_hmap_shrink_to(const sl_hmap_t *m) {
        if (!m->max_load || m->nbuckets <= m->min_buckets ||
            m->count >= m->nbuckets * m->max_load / 4)
                return 0;
        return m->nbuckets / 2;
}

/* Grows the bucket array to nbuckets (a power of two, more than now) in
 * place (realloc), the new buckets empty, and returns it: the typed
 * _resize then moves each entry whose bucket changed.  No second array
 * is held beside the first while the entries move. */
sl_hmap_link_t **sl_hmap_widen(sl_hmap_t *m, size_t nbuckets);

/* Shrinks the bucket array to nbuckets (a power of two, fewer than now):
 * bucket i's chain joins bucket i & (nbuckets - 1), which is where its
 * entries' hashes put them, so no key is hashed again; then the array is
 * cut down in place. */
void sl_hmap_fold(sl_hmap_t *m, size_t nbuckets);

/*
 * Iteration: every entry once, in no particular order, with the next one
 * read ahead, so the loop may free (or unlink) the entry it is given;
 * nothing else may change the map meanwhile.
 *
 *   sl_hmap_iter_t it = SL_HMAP_ITER_INIT;
 *   for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&m, &it));)
 *           use(tmap_entry(l));
 */
typedef struct sl_hmap_iter_s {
        size_t bucket;
        sl_hmap_link_t *next;
} sl_hmap_iter_t;

#define SL_HMAP_ITER_INIT                                                      \
        { 0, NULL }

static inline sl_hmap_link_t *sl_hmap_iter_next(const sl_hmap_t *m,
                                                sl_hmap_iter_t *it) {
        sl_hmap_link_t *l = it->next;
        while (!l) {
                if (it->bucket >= m->nbuckets)
                        return NULL;
                l = m->buckets[it->bucket++];
        }
        it->next = l->next;
        return l;
}

/* A resize that grows asks for the head of bucket i + SL_HMAP_PREFETCH,
 * and for the second entry of bucket i + SL_HMAP_PREFETCH / 2 (whose head
 * it asked for earlier), while it splits the chain of bucket i: the
 * entries of a large map are cache misses, and a chain walk alone waits
 * for each in turn.  With it resizing took 9-11 % of the CPU of 250k
 * timer inserts (perf), against 13-16 % in the timer heap's former rehash
 * by its heap array, and 14-18 % asking for the heads alone. */
#define SL_HMAP_PREFETCH 8

#define SL_HMAP_DEFINE(name, type, member, HASH, EQ)                           \
        /* The entry of link l. */                                             \
        __attribute__((unused)) static inline type *name##_entry(              \
            const sl_hmap_link_t *l) {                                         \
                return (type *)((char *)(l)-offsetof(type, member));           \
        }                                                                      \
                                                                               \
        /* The link that points at the entry with this key (hash is its        \
         * sl_hash()), or at the NULL that ends the key's chain. */            \
        __attribute__((unused)) static inline sl_hmap_link_t **name##_link(    \
            const sl_hmap_t *m, uint64_t hash, const void *key,                \
            size_t keylen) {                                                   \
                sl_hmap_link_t **l = sl_hmap_bucket(m, hash);                  \
                (void)key;                                                     \
                (void)keylen;                                                  \
                while (*l && !(EQ(name##_entry(*l), hash, key, keylen)))       \
                        l = &(*l)->next;                                       \
                return l;                                                      \
        }                                                                      \
                                                                               \
        /* The entry with this key, or NULL. */                                \
        __attribute__((unused)) static inline type *name##_find(               \
            const sl_hmap_t *m, uint64_t hash, const void *key,                \
            size_t keylen) {                                                   \
                sl_hmap_link_t *l = *name##_link(m, hash, key, keylen);        \
                return l ? name##_entry(l) : NULL;                             \
        }                                                                      \
                                                                               \
        /* Gives the map nbuckets buckets (a power of two), in place: growing, \
         * each chain i keeps the entries that stay in bucket i and hands the  \
         * others to the new buckets above; shrinking, sl_hmap_fold(). */      \
        __attribute__((unused)) static void name##_resize(sl_hmap_t *m,        \
                                                          size_t nbuckets) {   \
                size_t oldn = m->nbuckets;                                     \
                sl_hmap_link_t **b;                                            \
                if (nbuckets < oldn) {                                         \
                        sl_hmap_fold(m, nbuckets);                             \
                        return;                                                \
                }                                                              \
                b = sl_hmap_widen(m, nbuckets);                                \
                for (size_t i = 0; i < oldn; i++) {                            \
                        sl_hmap_link_t **keep = &b[i], *l = b[i], *next;       \
                        if (i + SL_HMAP_PREFETCH < oldn)                       \
                                __builtin_prefetch(b[i + SL_HMAP_PREFETCH]);   \
                        if (i + SL_HMAP_PREFETCH / 2 < oldn &&                 \
                            b[i + SL_HMAP_PREFETCH / 2])                       \
                                __builtin_prefetch(                            \
                                    b[i + SL_HMAP_PREFETCH / 2]->next);        \
                        for (; l; l = next) {                                  \
                                size_t k = (size_t)HASH(name##_entry(l)) &     \
                                           (nbuckets - 1);                     \
                                next = l->next;                                \
                                if (k == i) {                                  \
                                        *keep = l;                             \
                                        keep = &l->next;                       \
                                } else {                                       \
                                        l->next = b[k];                        \
                                        b[k] = l;                              \
                                }                                              \
                        }                                                      \
                        *keep = NULL;                                          \
                }                                                              \
        }                                                                      \
                                                                               \
        /* Puts e (whose key is in no entry) where link points: the end of     \
         * its key's chain (what _link() answered for it) or its bucket's      \
         * head.  The link is invalid afterwards (the map may grow). */        \
        __attribute__((unused)) static inline void name##_insert_at(           \
            sl_hmap_t *m, sl_hmap_link_t **link, type *e) {                    \
                size_t n;                                                      \
                e->member.next = *link;                                        \
                *link = &e->member;                                            \
                m->count++;                                                    \
                if ((n = sl_hmap_grow_to(m)))                                  \
                        name##_resize(m, n);                                   \
        }                                                                      \
                                                                               \
        /* Adds e, whose key (hash is its sl_hash()) is in no entry. */        \
        __attribute__((unused)) static inline void name##_insert(              \
            sl_hmap_t *m, uint64_t hash, type *e) {                            \
                name##_insert_at(m, sl_hmap_bucket(m, hash), e);               \
        }                                                                      \
                                                                               \
        /* Puts e where the entry link points at is (one with the same key),   \
         * which leaves the map. */                                            \
        __attribute__((unused)) static inline void name##_replace(             \
            sl_hmap_link_t **link, type *e) {                                  \
                e->member.next = (*link)->next;                                \
                *link = &e->member;                                            \
        }                                                                      \
                                                                               \
        /* Takes out the entry link points at (_link()'s answer for its        \
         * key). */                                                            \
        __attribute__((unused)) static inline void name##_unlink(              \
            sl_hmap_t *m, sl_hmap_link_t **link) {                             \
                size_t n;                                                      \
                *link = (*link)->next;                                         \
                m->count--;                                                    \
                if ((n = sl_hmap_shrink_to(m)))                                \
                        name##_resize(m, n);                                   \
        }                                                                      \
                                                                               \
        /* Takes e (in the map) out, finding its link in its chain. */         \
        __attribute__((unused)) static inline void name##_remove(sl_hmap_t *m, \
                                                                 type *e) {    \
                sl_hmap_link_t **l = sl_hmap_bucket(m, HASH(e));               \
                while (*l != &e->member) {                                     \
                        sl_assert(*l);                                         \
                        l = &(*l)->next;                                       \
                }                                                              \
                name##_unlink(m, l);                                           \
        }                                                                      \
                                                                               \
        /* Halves the bucket array if the map is under its load (after a       \
         * _clear, say). */                                                    \
        __attribute__((unused)) static inline void name##_shrink(              \
            sl_hmap_t *m) {                                                    \
                size_t n;                                                      \
                if ((n = sl_hmap_shrink_to(m)))                                \
                        name##_resize(m, n);                                   \
        }                                                                      \
                                                                               \
        /* 0 when every entry is in the chain of its hash, no chain loops,     \
         * and the count is right; else -1.  O(n), for tests. */               \
        __attribute__((unused)) static int name##_verify(const sl_hmap_t *m) { \
                size_t seen = 0;                                               \
                if (!m->buckets || !m->nbuckets ||                             \
                    (m->nbuckets & (m->nbuckets - 1)))                         \
                        return -1;                                             \
                for (size_t b = 0; b < m->nbuckets; b++)                       \
                        for (const sl_hmap_link_t *l = m->buckets[b]; l;       \
                             l = l->next) {                                    \
                                if (++seen > m->count)                         \
                                        return -1;                             \
                                if (((size_t)HASH(name##_entry(l)) &           \
                                     (m->nbuckets - 1)) != b)                  \
                                        return -1;                             \
                        }                                                      \
                return seen == m->count ? 0 : -1;                              \
        }

#endif
