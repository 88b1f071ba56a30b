/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerheap.c — the pending timers of one delay partition (see timerheap.h).
 *
 * DESIGN
 *
 * A delay partition can hold millions of pending timers, so memory per timer
 * is the figure that matters (the target is at most 64 bytes beyond the key
 * and data bytes, by RSS; general-purpose timer wheels and maps of boxed
 * entries spend several hundred).  Everything a timer needs sits in one
 * block:
 *
 *   sl_timer_t: due_ms | seq | hlink | heap_idx keylen datalen | key… data…
 *               8        8     8       4        4      4         (inline)
 *
 * and the heap keeps only two arrays of pointers, the project's two
 * intrusive containers:
 *
 *   heap       binary min-heap of timer pointers ordered by (due_ms, seq)
 *              (heap.h); each timer stores its own index, so cancelling
 *              or rescheduling one is O(log n) without searching.
 *   index      the hash map by key (hmap.h): a power-of-two array of chain
 *              heads; the chain link is the timer's hlink (no per-entry
 *              node).
 *
 * Where the blocks live depends on the constructor.  sl_timerheap_new()
 * mallocs each one (small maps: a debounce group's items, rates, inspect),
 * and pop() hands that very block to the caller.  sl_timerheap_new_slab()
 * (delay partitions) carves them from a slab of its own (slab.c): 8-byte
 * size classes with free lists, chunks mapped apart from malloc's heaps, no
 * per-block header, and the whole slab freed at once when the partition is
 * revoked or rebuilt.  pop() then copies the timer out (the caller may keep
 * it beyond the heap); drop_min() frees it in place.
 *
 * Per timer in a slab heap that is the 36-byte header, rounding to 8 bytes
 * (3.5 on average), one heap slot (8 bytes) and half a bucket to one bucket
 * (4 to 8 bytes, see MAX_LOAD): with a 16-byte id and a 104-byte blob (a
 * 100-byte payload), a 160-byte block and ~56 bytes beyond key and data at
 * 1M timers (bench/timerheap_mem.c; the malloc'd kind costs 16 more, for
 * malloc's chunk header and 16-byte rounding).
 *
 * A slab reuses freed space only within a size class.  Timers of one
 * partition mostly come in few sizes, so reuse is the rule; where it is
 * not (a burst of large timers fired, small ones arriving), the heap
 * compacts: once the slab holds three times more idle space than live (and
 * at least COMPACT_MIN_IDLE), every timer is copied into a new slab in heap
 * order, the index rebuilt, and the old slab unmapped.  Each
 * compaction copies no more than a third of the bytes freed since the
 * last, so its cost is amortized over the frees.  A heap that empties gives its
 * chunks back at once, unless it never touched more than RESET_MIN_USED of them
 * (a partition ticking between zero and one timer keeps its one chunk).
 *
 * The bucket array doubles when the count exceeds MAX_LOAD per bucket and
 * halves when it falls below a quarter of that; the heap array likewise
 * doubles when full and halves below a quarter, so a partition that once
 * held a burst gives the memory back.  Resizing the buckets rehashes the
 * keys (hmap.h: FAST_GROW_BELOW for small heaps).
 *
 * Keys are chosen by whoever produces to the input (timer ids, debounce
 * groups and items, rates keys), so the bucket index comes from sl_hash()
 * (hash.h): SipHash under a per-process secret seed, which no producer can
 * aim at one bucket.
 */
#include "timerheap.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "heap.h"
#include "hmap.h"
#include "slab.h"
#include "util.h"

/* Chains average at most this many timers before the bucket array doubles.
 * 2 rather than 1 halves the bucket array (4 to 8 bytes per timer instead
 * of 8 to 16), which is what keeps a 16-byte-key timer under 64 bytes of
 * overhead; a lookup then compares about 2 keys instead of 1.5, and most
 * comparisons stop at the length. */
#define MAX_LOAD    2
#define MIN_BUCKETS 16
/* Below this many buckets the array grows fourfold, not twofold.  A rehash
 * touches every timer of the heap, and in a small heap (a debounce group's
 * items) each timer is a cache miss of its own: a group of 100 items
 * rehashed 32 then 64 of them (~4 % of the debounce ingest's CPU), now 32.
 * Big heaps, where memory per timer counts, still double. */
#define FAST_GROW_BELOW 64
#define MAX_TIMERS      SL_HEAP_MAX /* heap_idx is 32 bits */
#define MAX_FIELD_BYTES UINT32_MAX  /* keylen and datalen are 32 bits */
/* A slab heap compacts once the space its slab holds idle is at least
 * COMPACT_MIN_IDLE, and COMPACT_IDLE_RATIO times the space its timers use:
 * a heap draining in due order (a burst of timers firing) then copies a
 * third of what it frees, not all of it, while idle space stays bounded. */
#define COMPACT_MIN_IDLE   (4 * SL_SLAB_CHUNK)
#define COMPACT_IDLE_RATIO 3
/* An emptied slab heap gives its chunks back once they held this much. */
#define RESET_MIN_USED ((size_t)64 * 1024)

/* 1 if a fires before b. */
static inline int before(const sl_timer_t *a, const sl_timer_t *b) {
        return a->due_ms < b->due_ms ||
               (a->due_ms == b->due_ms && a->seq < b->seq);
}

#define TIMER_POS(t) ((t)->heap_idx)
SL_HEAP_DEFINE(theap, sl_timer_t, TIMER_POS, before)

#define TIMER_HASH(t)          sl_hash((t)->buf, (t)->keylen)
#define TIMER_EQ(t, h, k, len) sl_hmap_key_eq((t)->buf, (t)->keylen, k, len)
SL_HMAP_DEFINE(tmap, sl_timer_t, hlink, TIMER_HASH, TIMER_EQ)

struct sl_timerheap_s {
        theap_t heap;    /* heap.a[0] is the earliest */
        sl_hmap_t index; /* by key (hmap.h) */
        size_t bytes;    /* key + data bytes of all timers */
        sl_slab_t *slab; /* where the timers live; NULL: one malloc each */
        size_t compactions;
        /* No timer in the heap fires after (max_due, max_seq) (an upper
         * bound: removals leave it).  A timer inserted at or after it goes
         * to the end of the array without comparing with its parent, whose
         * block may have left the cache long ago: debounce items come in
         * seq order, delay timers of one delay in due order. */
        int64_t max_due, max_seq;
};

_Static_assert(offsetof(sl_timer_t, buf) == 36,
               "a timer's header must stay 36 bytes (see DESIGN)");

static inline size_t timer_size(size_t keylen, size_t datalen) {
        return offsetof(sl_timer_t, buf) + keylen + datalen;
}

/* The link that points at the timer with this key, or at the NULL ending
 * its chain when there is none. */
static inline sl_hmap_link_t **find_link(const sl_timerheap_t *h,
                                         const void *key, size_t keylen) {
        return tmap_link(&h->index, sl_hash(key, keylen), key, keylen);
}

/*
 * Heap (heap.h)
 */

/* Raises (max_due, max_seq) to t's when t fires later. */
static void note_max(sl_timerheap_t *h, const sl_timer_t *t) {
        if (t->due_ms > h->max_due ||
            (t->due_ms == h->max_due && t->seq > h->max_seq)) {
                h->max_due = t->due_ms;
                h->max_seq = t->seq;
        }
}

/* Restores heap order after timer t changed its (due_ms, seq). */
static void heap_fix(sl_timerheap_t *h, sl_timer_t *t) {
        note_max(h, t);
        theap_update(&h->heap, t);
}

/*
 * Storage
 */

static sl_timer_t *timer_alloc(sl_timerheap_t *h, size_t size) {
        return h->slab ? sl_slab_alloc(h->slab, size) : sl_malloc(size);
}

/* Copies every timer into a new slab and drops the old one: the only way
 * space freed in one size class serves another.  O(n); run when the idle
 * space outgrew the live threefold, so each compaction follows at least
 * three times as many bytes of frees as it copies. */
static void compact(sl_timerheap_t *h) {
        sl_slab_t *old = h->slab;

        h->slab = sl_slab_new();
        for (size_t i = 0; i < h->heap.n; i++) {
                sl_timer_t *t = h->heap.a[i];
                size_t size = timer_size(t->keylen, t->datalen);
                sl_timer_t *n = sl_slab_alloc(h->slab, size);
                memcpy(n, t, size); /* its heap position too */
                h->heap.a[i] = n;
        }
        /* The chains linked the old copies. */
        sl_hmap_clear(&h->index);
        for (size_t i = 0; i < h->heap.n; i++)
                tmap_insert(&h->index, TIMER_HASH(h->heap.a[i]), h->heap.a[i]);
        sl_slab_destroy(old);
        h->compactions++;
}

/* Frees a timer that is in neither structure any more. */
static void timer_release(sl_timerheap_t *h, sl_timer_t *t) {
        sl_slab_stats_t st;

        if (!h->slab) {
                free(t);
                return;
        }
        sl_slab_free(h->slab, t, timer_size(t->keylen, t->datalen));
        sl_slab_stats(h->slab, &st);
        if (h->heap.n ? st.idle >= COMPACT_MIN_IDLE &&
                            st.idle > COMPACT_IDLE_RATIO * st.live
                      : st.mapped - st.tail >= RESET_MIN_USED)
                compact(h);
}

/* Unlinks t from both structures, updates the accounting, frees nothing.
 * link: where t's chain points at it, or NULL (found from its key). */
static void detach(sl_timerheap_t *h, sl_timer_t *t, sl_hmap_link_t **link) {
        if (link)
                tmap_unlink(&h->index, link);
        else
                tmap_remove(&h->index, t);
        theap_remove(&h->heap, t);
        h->bytes -= (size_t)t->keylen + t->datalen;
}

/*
 * Public API
 */

sl_timerheap_t *sl_timerheap_new(void) {
        sl_timerheap_t *h = sl_calloc(1, sizeof(*h));

        sl_hmap_init(&h->index, MIN_BUCKETS, MAX_LOAD, FAST_GROW_BELOW);
        return h;
}

sl_timerheap_t *sl_timerheap_new_slab(void) {
        sl_timerheap_t *h = sl_timerheap_new();

        h->slab = sl_slab_new();
        return h;
}

void sl_timerheap_destroy(sl_timerheap_t *h) {
        if (!h)
                return;
        if (h->slab)
                sl_slab_destroy(h->slab); /* every timer at once */
        else
                for (size_t i = 0; i < h->heap.n; i++)
                        free(h->heap.a[i]);
        theap_fini(&h->heap);
        sl_hmap_fini(&h->index);
        free(h);
}

static sl_timer_t *timer_new(sl_timerheap_t *h, const void *key, size_t keylen,
                             int64_t due_ms, int64_t seq, const void *data,
                             size_t datalen) {
        sl_timer_t *t = timer_alloc(h, timer_size(keylen, datalen));

        t->due_ms = due_ms;
        t->seq = seq;
        t->hlink.next = NULL;
        t->heap_idx = SL_HEAP_NONE;
        t->keylen = (uint32_t)keylen;
        t->datalen = (uint32_t)datalen;
        if (keylen)
                memcpy(t->buf, key, keylen);
        if (datalen)
                memcpy(t->buf + keylen, data, datalen);
        return t;
}

/* Inserts a new timer at link, the end of its key's chain (find_link()'s
 * answer for an absent key, or the bucket head). */
static int insert_at(sl_timerheap_t *h, sl_hmap_link_t **link, const void *key,
                     size_t keylen, int64_t due_ms, int64_t seq,
                     const void *data, size_t datalen, const sl_timer_t **out) {
        sl_timer_t *t;

        if (h->heap.n >= MAX_TIMERS)
                return -1;
        /* The heap's array grows before the index does (both may, at the
         * same timer): the allocator then finds the index's old bucket
         * array free for what comes next. */
        theap_reserve_one(&h->heap);
        t = timer_new(h, key, keylen, due_ms, seq, data, datalen);
        tmap_insert_at(&h->index, link, t);
        if (!h->heap.n) {
                h->max_due = due_ms;
                h->max_seq = seq;
                theap_push_last(&h->heap, t);
        } else if (due_ms > h->max_due ||
                   (due_ms == h->max_due && seq >= h->max_seq)) {
                note_max(h, t); /* not before any parent: stays last */
                theap_push_last(&h->heap, t);
        } else {
                theap_push(&h->heap, t);
        }
        h->bytes += keylen + datalen;
        if (out)
                *out = t;
        return 0;
}

int sl_timerheap_add(sl_timerheap_t *h, const void *key, size_t keylen,
                     int64_t due_ms, int64_t seq, const void *data,
                     size_t datalen) {
        return sl_timerheap_add_hashed(h, sl_hash(key, keylen), key, keylen,
                                       due_ms, seq, data, datalen, NULL);
}

int sl_timerheap_add_hashed(sl_timerheap_t *h, uint64_t hash, const void *key,
                            size_t keylen, int64_t due_ms, int64_t seq,
                            const void *data, size_t datalen,
                            const sl_timer_t **out) {
        sl_assert(h && (key || !keylen) && (data || !datalen));
        if (keylen >= MAX_FIELD_BYTES || datalen >= MAX_FIELD_BYTES)
                return -1;
        return insert_at(h, sl_hmap_bucket(&h->index, hash), key, keylen,
                         due_ms, seq, data, datalen, out);
}

int sl_timerheap_upsert(sl_timerheap_t *h, const void *key, size_t keylen,
                        int64_t due_ms, int64_t seq, const void *data,
                        size_t datalen) {
        sl_assert(h && (key || !keylen));
        return sl_timerheap_upsert_hashed(h, sl_hash(key, keylen), key, keylen,
                                          due_ms, seq, data, datalen);
}

int sl_timerheap_upsert_hashed(sl_timerheap_t *h, uint64_t hash,
                               const void *key, size_t keylen, int64_t due_ms,
                               int64_t seq, const void *data, size_t datalen) {
        sl_hmap_link_t **link;
        sl_timer_t *old, *t;

        sl_assert(h && (key || !keylen) && (data || !datalen));
        if (keylen >= MAX_FIELD_BYTES || datalen >= MAX_FIELD_BYTES)
                return -1;

        link = tmap_link(&h->index, hash, key, keylen);
        if (*link) {
                old = tmap_entry(*link);
                h->bytes -= old->datalen;
                h->bytes += datalen;
                if (old->datalen == datalen) {
                        /* Same size: rewrite in place, no allocation. */
                        old->due_ms = due_ms;
                        old->seq = seq;
                        if (datalen)
                                memcpy(old->buf + keylen, data, datalen);
                        heap_fix(h, old);
                        return 1;
                }
                t = timer_new(h, key, keylen, due_ms, seq, data, datalen);
                tmap_replace(link, t);
                note_max(h, t);
                theap_replace(&h->heap, old, t);
                timer_release(h, old);
                return 1;
        }
        return insert_at(h, link, key, keylen, due_ms, seq, data, datalen,
                         NULL);
}

int sl_timerheap_remove(sl_timerheap_t *h, const void *key, size_t keylen) {
        sl_assert(h && (key || !keylen));
        return sl_timerheap_remove_hashed(h, sl_hash(key, keylen), key, keylen);
}

int sl_timerheap_remove_hashed(sl_timerheap_t *h, uint64_t hash,
                               const void *key, size_t keylen) {
        sl_hmap_link_t **link;
        sl_timer_t *t;

        sl_assert(h && (key || !keylen));
        link = tmap_link(&h->index, hash, key, keylen);
        if (!*link)
                return 0;
        t = tmap_entry(*link);
        detach(h, t, link);
        timer_release(h, t);
        return 1;
}

void sl_timerheap_reschedule(sl_timerheap_t *h, const sl_timer_t *t,
                             int64_t due_ms, int64_t seq) {
        sl_timer_t *m;

        sl_assert(h && t && t->heap_idx < h->heap.n &&
                  h->heap.a[t->heap_idx] == t);
        m = h->heap.a[t->heap_idx]; /* the heap's own, writable pointer */
        m->due_ms = due_ms;
        m->seq = seq;
        heap_fix(h, m);
}

const sl_timer_t *sl_timerheap_find(const sl_timerheap_t *h, const void *key,
                                    size_t keylen) {
        sl_assert(h && (key || !keylen));
        return tmap_find(&h->index, sl_hash(key, keylen), key, keylen);
}

const sl_timer_t *sl_timerheap_find_hashed(const sl_timerheap_t *h,
                                           uint64_t hash, const void *key,
                                           size_t keylen) {
        sl_assert(h && (key || !keylen));
        return tmap_find(&h->index, hash, key, keylen);
}

void sl_timerheap_prefetch(const sl_timerheap_t *h, uint64_t hash) {
        __builtin_prefetch(sl_hmap_bucket(&h->index, hash), 1);
        if (h->heap.n < h->heap.cap)
                __builtin_prefetch(&h->heap.a[h->heap.n], 1);
}

void sl_timerheap_prefetch_chain(const sl_timerheap_t *h, uint64_t hash) {
        const sl_hmap_link_t *l = *sl_hmap_bucket(&h->index, hash);
        if (l) {
                const sl_timer_t *t = tmap_entry(l);
                __builtin_prefetch(t, 0);
                __builtin_prefetch(t->buf + 16, 0);
        }
}

const sl_timer_t *sl_timerheap_peek(const sl_timerheap_t *h) {
        sl_assert(h);
        return theap_top(&h->heap);
}

sl_timer_t *sl_timerheap_pop(sl_timerheap_t *h) {
        sl_timer_t *t;

        sl_assert(h);
        if (!(t = theap_top(&h->heap)))
                return NULL;
        detach(h, t, NULL);
        if (h->slab) {
                /* The caller may keep it past the slab: a copy of its own. */
                size_t size = timer_size(t->keylen, t->datalen);
                sl_timer_t *c = sl_malloc(size);
                memcpy(c, t, size);
                timer_release(h, t);
                t = c;
        }
        t->hlink.next = NULL;
        return t;
}

static int cmp_fire(const void *a, const void *b) {
        const sl_timer_t *x = *(sl_timer_t *const *)a;
        const sl_timer_t *y = *(sl_timer_t *const *)b;
        return before(x, y) ? -1 : before(y, x);
}

size_t sl_timerheap_take_all(sl_timerheap_t *h, sl_timer_t **out) {
        size_t n, i;

        sl_assert(h && !h->slab && (out || !h->heap.n));
        n = h->heap.n;
        if (n)
                memcpy(out, h->heap.a, n * sizeof(*out));
        /* Timers added in firing order (a debounce group's items) leave
         * the array sorted, and a heap is then left as it is. */
        for (i = 1; i < n && !before(out[i], out[i - 1]); i++)
                ;
        if (i < n)
                qsort(out, n, sizeof(*out), cmp_fire);
        for (i = 0; i < n; i++)
                out[i]->hlink.next = NULL;
        sl_hmap_clear(&h->index);
        tmap_shrink(&h->index);
        theap_clear(&h->heap);
        h->bytes = 0;
        return n;
}

int sl_timerheap_drop_min(sl_timerheap_t *h) {
        sl_timer_t *t;

        sl_assert(h);
        if (!(t = theap_top(&h->heap)))
                return 0;
        detach(h, t, NULL);
        timer_release(h, t);
        return 1;
}

void sl_timer_free(sl_timer_t *t) {
        free(t);
}

size_t sl_timerheap_count(const sl_timerheap_t *h) {
        sl_assert(h);
        return h->heap.n;
}

size_t sl_timerheap_bytes(const sl_timerheap_t *h) {
        sl_assert(h);
        return h->bytes;
}

void sl_timerheap_foreach(const sl_timerheap_t *h,
                          void (*cb)(const sl_timer_t *t, void *opaque),
                          void *opaque) {
        sl_assert(h && cb);
        for (size_t i = 0; i < h->heap.n; i++)
                cb(h->heap.a[i], opaque);
}

size_t sl_timerheap_memory(const sl_timerheap_t *h) {
        size_t m;

        sl_assert(h);
        m = sizeof(*h) + h->heap.cap * sizeof(*h->heap.a) +
            sl_hmap_memory(&h->index);
        if (h->slab) {
                sl_slab_stats_t st;
                sl_slab_stats(h->slab, &st);
                m += st.mapped - st.tail;
        } else {
                m += h->bytes + h->heap.n * offsetof(sl_timer_t, buf);
        }
        return m;
}

const sl_slab_t *sl_timerheap_slab(const sl_timerheap_t *h) {
        sl_assert(h);
        return h->slab;
}

size_t sl_timerheap_compactions(const sl_timerheap_t *h) {
        sl_assert(h);
        return h->compactions;
}

int sl_timerheap_verify(const sl_timerheap_t *h) {
        size_t bytes = 0, blocks = 0;
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        if (theap_verify(&h->heap) || tmap_verify(&h->index) ||
            sl_hmap_count(&h->index) != h->heap.n)
                return -1;
        for (size_t i = 0; i < h->heap.n; i++) {
                const sl_timer_t *t = h->heap.a[i];
                if (*find_link(h, t->buf, t->keylen) != &t->hlink)
                        return -1;
                bytes += (size_t)t->keylen + t->datalen;
                blocks += sl_slab_block_size(timer_size(t->keylen, t->datalen));
        }
        for (const sl_hmap_link_t *l;
             (l = sl_hmap_iter_next(&h->index, &it));) {
                const sl_timer_t *t = tmap_entry(l);
                if (t->heap_idx >= h->heap.n || h->heap.a[t->heap_idx] != t)
                        return -1;
        }
        if (bytes != h->bytes)
                return -1;
        if (h->slab) {
                sl_slab_stats_t st;
                sl_slab_stats(h->slab, &st);
                if (st.live != blocks)
                        return -1;
        }
        return 0;
}
