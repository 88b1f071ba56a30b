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
 *   sl_timer_t: due_ms | seq | hnext | heap_idx keylen datalen | key… data…
 *               8        8     8       4        4      4         (inline)
 *
 * and the heap keeps only two arrays of pointers:
 *
 *   heap[]     binary min-heap of timer pointers ordered by (due_ms, seq)
 *              (heap.h); each timer stores its own index, so cancelling
 *              or rescheduling one is O(log n) without searching.
 *   buckets[]  power-of-two array of hash chain heads; the chain link is
 *              the timer's hnext (intrusive: no per-entry node).
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
 * order, the hash chains relinked, and the old slab unmapped.  Each
 * compaction copies no more than a third of the bytes freed since the
 * last, so its cost is amortized over the frees.  A heap that empties gives its
 * chunks back at once, unless it never touched more than RESET_MIN_USED of them
 * (a partition ticking between zero and one timer keeps its one chunk).
 *
 * The bucket array doubles when the count exceeds MAX_LOAD per bucket and
 * halves when it falls below a quarter of that; the heap array likewise
 * doubles when full and halves below a quarter, so a partition that once
 * held a burst gives the memory back.  Resizing the buckets rehashes the
 * keys by walking the heap array (every timer is in it exactly once).
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

struct sl_timerheap_s {
        theap_t heap; /* heap.a[0] is the earliest */
        sl_timer_t **buckets;
        size_t nbuckets; /* power of two */
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

/* The bucket of a key whose sl_hash() is hash. */
static inline sl_timer_t **bucket_at(const sl_timerheap_t *h, uint64_t hash) {
        return &h->buckets[(size_t)hash & (h->nbuckets - 1)];
}

static inline size_t bucket_of(const sl_timerheap_t *h, const void *key,
                               size_t keylen) {
        return (size_t)(bucket_at(h, sl_hash(key, keylen)) - h->buckets);
}

static inline int key_eq(const sl_timer_t *t, const void *key, size_t keylen) {
        return t->keylen == keylen &&
               (keylen == 0 || !memcmp(t->buf, key, keylen));
}

static inline size_t timer_size(size_t keylen, size_t datalen) {
        return offsetof(sl_timer_t, buf) + keylen + datalen;
}

/*
 * Hash index
 */

/* The link (bucket head or a predecessor's hnext) that points at the timer
 * with this key, or at the NULL ending its chain when there is none. */
static sl_timer_t **find_link_hashed(const sl_timerheap_t *h, uint64_t hash,
                                     const void *key, size_t keylen) {
        sl_timer_t **link = bucket_at(h, hash);

        while (*link && !key_eq(*link, key, keylen))
                link = &(*link)->hnext;
        return link;
}

static sl_timer_t **find_link(const sl_timerheap_t *h, const void *key,
                              size_t keylen) {
        return find_link_hashed(h, sl_hash(key, keylen), key, keylen);
}

static void rehash(sl_timerheap_t *h, size_t nbuckets) {
        sl_timer_t **b = sl_calloc(nbuckets, sizeof(*b));

        free(h->buckets);
        h->buckets = b;
        h->nbuckets = nbuckets;
        for (size_t i = 0; i < h->heap.n; i++) {
                sl_timer_t *t = h->heap.a[i];
                size_t k = bucket_of(h, t->buf, t->keylen);
                t->hnext = b[k];
                b[k] = t;
        }
}

/* Unlinks t from its hash chain. */
static void hash_unlink(sl_timerheap_t *h, const sl_timer_t *t) {
        sl_timer_t **link = &h->buckets[bucket_of(h, t->buf, t->keylen)];

        while (*link != t) {
                sl_assert(*link);
                link = &(*link)->hnext;
        }
        *link = t->hnext;
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

/* Gives memory back once the heap has shrunk well below its buckets (the
 * heap array shrinks by itself, heap.h). */
static void maybe_shrink(sl_timerheap_t *h) {
        if (h->nbuckets > MIN_BUCKETS && h->heap.n < h->nbuckets * MAX_LOAD / 4)
                rehash(h, h->nbuckets / 2);
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
        rehash(h, h->nbuckets); /* the chains linked the old copies */
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

/* Unlinks t from both structures, updates the accounting, frees nothing. */
static void detach(sl_timerheap_t *h, sl_timer_t *t) {
        hash_unlink(h, t);
        theap_remove(&h->heap, t);
        h->bytes -= (size_t)t->keylen + t->datalen;
        maybe_shrink(h);
}

/*
 * Public API
 */

sl_timerheap_t *sl_timerheap_new(void) {
        sl_timerheap_t *h = sl_calloc(1, sizeof(*h));

        h->nbuckets = MIN_BUCKETS;
        h->buckets = sl_calloc(h->nbuckets, sizeof(*h->buckets));
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
        free(h->buckets);
        free(h);
}

static sl_timer_t *timer_new(sl_timerheap_t *h, const void *key, size_t keylen,
                             int64_t due_ms, int64_t seq, const void *data,
                             size_t datalen) {
        sl_timer_t *t = timer_alloc(h, timer_size(keylen, datalen));

        t->due_ms = due_ms;
        t->seq = seq;
        t->hnext = NULL;
        t->heap_idx = 0;
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
static int insert_at(sl_timerheap_t *h, sl_timer_t **link, const void *key,
                     size_t keylen, int64_t due_ms, int64_t seq,
                     const void *data, size_t datalen, const sl_timer_t **out) {
        sl_timer_t *t;

        if (h->heap.n >= MAX_TIMERS)
                return -1;
        t = timer_new(h, key, keylen, due_ms, seq, data, datalen);
        t->hnext = *link;
        *link = t;
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
        if (h->heap.n > h->nbuckets * MAX_LOAD)
                rehash(h,
                       h->nbuckets * (h->nbuckets < FAST_GROW_BELOW ? 4 : 2));
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
        return insert_at(h, bucket_at(h, hash), key, keylen, due_ms, seq, data,
                         datalen, out);
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
        sl_timer_t **link, *old, *t;

        sl_assert(h && (key || !keylen) && (data || !datalen));
        if (keylen >= MAX_FIELD_BYTES || datalen >= MAX_FIELD_BYTES)
                return -1;

        link = find_link_hashed(h, hash, key, keylen);
        old = *link;
        if (old) {
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
                t->hnext = old->hnext;
                *link = t;
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
        sl_timer_t *t;

        sl_assert(h && (key || !keylen));
        t = *find_link_hashed(h, hash, key, keylen);
        if (!t)
                return 0;
        detach(h, t);
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
        return *find_link(h, key, keylen);
}

const sl_timer_t *sl_timerheap_find_hashed(const sl_timerheap_t *h,
                                           uint64_t hash, const void *key,
                                           size_t keylen) {
        sl_assert(h && (key || !keylen));
        return *find_link_hashed(h, hash, key, keylen);
}

void sl_timerheap_prefetch(const sl_timerheap_t *h, uint64_t hash) {
        __builtin_prefetch(bucket_at(h, hash), 1);
        if (h->heap.n < h->heap.cap)
                __builtin_prefetch(&h->heap.a[h->heap.n], 1);
}

void sl_timerheap_prefetch_chain(const sl_timerheap_t *h, uint64_t hash) {
        const sl_timer_t *t = *bucket_at(h, hash);
        if (t) {
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
        detach(h, t);
        if (h->slab) {
                /* The caller may keep it past the slab: a copy of its own. */
                size_t size = timer_size(t->keylen, t->datalen);
                sl_timer_t *c = sl_malloc(size);
                memcpy(c, t, size);
                timer_release(h, t);
                t = c;
        }
        t->hnext = NULL;
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
                out[i]->hnext = NULL;
        memset(h->buckets, 0, h->nbuckets * sizeof(*h->buckets));
        theap_clear(&h->heap);
        h->bytes = 0;
        maybe_shrink(h);
        return n;
}

int sl_timerheap_drop_min(sl_timerheap_t *h) {
        sl_timer_t *t;

        sl_assert(h);
        if (!(t = theap_top(&h->heap)))
                return 0;
        detach(h, t);
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
            h->nbuckets * sizeof(*h->buckets);
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
        size_t chained = 0, bytes = 0, blocks = 0;

        if (theap_verify(&h->heap) || !h->nbuckets ||
            (h->nbuckets & (h->nbuckets - 1)))
                return -1;
        for (size_t i = 0; i < h->heap.n; i++) {
                const sl_timer_t *t = h->heap.a[i];
                if (*find_link(h, t->buf, t->keylen) != t)
                        return -1;
                bytes += (size_t)t->keylen + t->datalen;
                blocks += sl_slab_block_size(timer_size(t->keylen, t->datalen));
        }
        for (size_t b = 0; b < h->nbuckets; b++)
                for (const sl_timer_t *t = h->buckets[b]; t; t = t->hnext) {
                        if (bucket_of(h, t->buf, t->keylen) != b ||
                            t->heap_idx >= h->heap.n ||
                            h->heap.a[t->heap_idx] != t)
                                return -1;
                        chained++;
                }
        if (chained != h->heap.n || bytes != h->bytes)
                return -1;
        if (h->slab) {
                sl_slab_stats_t st;
                sl_slab_stats(h->slab, &st);
                if (st.live != blocks)
                        return -1;
        }
        return 0;
}
