/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerindex.c — the compact index of a delay partition's pending timers
 * (see timerindex.h).
 *
 * DESIGN
 *
 * When a timer's id and payload stay in Kafka, what memory holds per
 * pending timer is this index, and the budget is at most 40 bytes of RSS
 * per timer (the goal 32) at 10M pending, every array and its growth slack
 * included.  timerheap.c spends 36 bytes of header, an 8-byte heap slot and
 * an 8-byte chain pointer before the id and payload; here pointers become
 * 32-bit handles and the id becomes its 64-bit hash:
 *
 *   entry:  hash | hi                  | lo      | pos | next | flags spare
 *           8      8                     4         4     4      2     2
 *                  due_ms << 16 | loc >> 32   loc & 0xffffffff
 *
 * due_ms and loc are 48-bit unsigned (SL_TIMERINDEX_FIELD_MAX), packed so
 * that (hi, lo) compared as unsigned integers is (due_ms, loc): a heap
 * comparison is two integer compares.  pos is the entry's own position in
 * the heap (SL_TIMERINDEX_NONE: the slot is free), next the next handle of
 * its hash chain (of a free slot: the next free slot of its chunk).  Two
 * entries share a 64-byte cache line; an entry never spans two.
 *
 * Storage.  Entries live in chunks of CHUNK_N (8192) entries, 256 KiB,
 * each mapped with mmap apart from malloc's heaps (as slab.c's, for the
 * same reason: glibc keeps large freed blocks resident once its mmap
 * threshold has risen), so growth never reallocates the entries nor
 * doubles anything, and pages are resident only once touched: a chunk is
 * carved by a bump counter, and a freed slot goes onto its chunk's free
 * list, reused before the bump.  A handle is chunk << 13 | slot.
 *
 * Handles must stay where they are, so entries never move, and memory can
 * only follow the count by whole chunks: a chunk whose last entry leaves
 * is unmapped (one empty chunk is kept as a spare, so that an index
 * ticking over a chunk boundary does not map and unmap at each add).  To
 * let chunks empty, add takes a slot in the lowest-numbered chunk with
 * room (a bitmap of the chunks with room, scanned from a low-water mark):
 * timers are transient, so after a mass firing the survivors in the high
 * chunks fire in turn while new timers fill the holes of the low ones,
 * and the high chunks go back to the system.  What lowest-first cannot do
 * is give back at once the chunks of a partition that fired most of its
 * timers and keeps a few scattered ones for days: those pages stay until
 * their last entry leaves (32 bytes times the peak count at worst).
 *
 * The heap is a binary min-heap of handles by (due_ms, loc): 4 bytes a
 * slot.  heap.h's is not used: it holds pointers (8 bytes) and writes the
 * position through an element pointer; here every step goes through the
 * chunk table.  The array grows by a quarter when full (not double: at 10M
 * entries a doubling would leave 4 bytes per entry of slack) and shrinks to
 * a quarter above the count when less than half is used.
 *
 * From 64 KiB on (BIG_ARRAY), the heap and bucket arrays are mapped, as
 * the chunks are, not malloc'd: the heap grows by mremap, without a copy,
 * and its slack is resident only once used; a shrink or a bucket resize
 * gives the pages back at once.  Under jemalloc, which keeps freed pages
 * for seconds before it purges them, the malloc'd arrays left the freed
 * bucket arrays and copies of the heap resident: 47.8 bytes per entry at
 * 1M and 41.4 at 10M right after the adds, against 38.8 and 38.4 mapped.
 *
 * The hash chains start in a bucket array of handles, 4 bytes each, whose
 * size need not be a power of two: a hash picks its bucket by the
 * multiply-shift (hash >> 32) * nbuckets >> 32 (Lemire's "fastrange").  So
 * the array grows to 1.5 entries per bucket when the load passes 2 (by a
 * third, not double) and shrinks to 1.5 when the load falls below 1.  The
 * entries keep their hash, so a resize rebuilds every chain from the heap
 * array without hashing anything, after the old array is freed (the index
 * never holds two bucket arrays); amortized, an entry is relinked about 4
 * times over the growth of an index.  Chains average 1 to 2 entries; a
 * lookup compares 64-bit hashes only.
 *
 * Per entry, then, at the worst point of growth: 32 (entry) + 5 (heap slot
 * and a quarter of slack) + 2.67 (buckets at load 1.5) = 39.7 bytes; just
 * before the next resize of each, 32 + 4 + 2 = 38, plus the untouched tail
 * of the last chunk (at most 256 KiB per index).  Draining, the heap may
 * hold up to 8 bytes and the buckets up to 4 per entry before they shrink.
 * bench/timerindex_mem.c measures the RSS.
 *
 * The bucket of a hash is chosen by the hash itself, which the caller
 * computes with sl_hash() (SipHash under a secret per-process seed,
 * hash.h): no producer can aim ids at one chain.
 *
 * Pure: no Kafka, no libuv, no globals, not thread-safe.
 */
#include "timerindex.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util.h"

#define CHUNK_SHIFT 13
#define CHUNK_N     ((uint32_t)1 << CHUNK_SHIFT) /* entries per chunk */
#define CHUNK_MASK  (CHUNK_N - 1)
#define MAX_CHUNKS  ((size_t)1 << (32 - CHUNK_SHIFT))
#define NONE        SL_TIMERINDEX_NONE
/* The heap array's least capacity. */
#define HEAP_MIN_CAP 64
/* The bucket array's least size; it grows past MAX_LOAD entries per
 * bucket to TARGET_LOAD, and shrinks below MIN_LOAD to TARGET_LOAD (loads
 * in halves: 4 is 2.0). */
#define MIN_BUCKETS 16
#define MAX_LOAD2   4 /* twice the load */
#define MIN_LOAD2   2
#define TARGET_NUM  2 /* nbuckets = count * 2 / 3: load 1.5 */
#define TARGET_DEN  3
#define PAGE        4096
/* The heap and bucket arrays are mapped from this size on. */
#define BIG_ARRAY ((size_t)64 * 1024)

typedef struct entry_s {
        uint64_t hash;
        uint64_t hi;    /* due_ms << 16 | loc >> 32 */
        uint32_t lo;    /* loc & 0xffffffff */
        uint32_t pos;   /* heap position; NONE: the slot is free */
        uint32_t next;  /* next of the hash chain, or next free slot */
        uint16_t flags; /* the caller's */
        uint16_t spare;
} entry_t;

_Static_assert(sizeof(entry_t) == 32, "an entry must stay 32 bytes (DESIGN)");

typedef struct chunk_s {
        uint32_t free; /* first free slot (its entry's next links on), NONE */
        uint32_t used; /* slots handed out by the bump counter */
        uint32_t live; /* entries in use */
        uint32_t hw;   /* most slots ever bumped since mapped (resident) */
} chunk_t;

struct sl_timerindex_s {
        entry_t **base;    /* base[c]: chunk c's entries, NULL: unmapped */
        chunk_t *chunk;    /* chunk[c]: its free list and counts */
        uint64_t *room;    /* bit c: chunk c has room (or is unmapped) */
        size_t nchunks;    /* chunks in the table; the last is mapped */
        size_t chunks_cap; /* of base, chunk and room (a multiple of 64) */
        size_t room_lo;    /* no word of room below this has a bit set */
        size_t nempty;     /* mapped chunks with no entry (0 or 1) */
        uint32_t *heap;    /* heap[0] fires first */
        uint32_t n, cap;
        uint32_t *buckets; /* chain heads */
        uint32_t nbuckets;
        size_t limit;
};

static inline entry_t *ent(const sl_timerindex_t *ix, uint32_t h) {
        return &ix->base[h >> CHUNK_SHIFT][h & CHUNK_MASK];
}

static inline uint32_t bucket_of(uint64_t hash, uint32_t nbuckets) {
        return (uint32_t)(((hash >> 32) * (uint64_t)nbuckets) >> 32);
}

/* 1 if an entry of key (hi, lo) fires before e. */
static inline int key_before(uint64_t hi, uint32_t lo, const entry_t *e) {
        return hi < e->hi || (hi == e->hi && lo < e->lo);
}

static inline int before(const entry_t *a, const entry_t *b) {
        return key_before(a->hi, a->lo, b);
}

static inline void set_key(entry_t *e, int64_t due_ms, int64_t loc) {
        sl_assert(due_ms >= 0 && due_ms <= SL_TIMERINDEX_FIELD_MAX &&
                  loc >= 0 && loc <= SL_TIMERINDEX_FIELD_MAX);
        e->hi = (uint64_t)due_ms << 16 | (uint64_t)loc >> 32;
        e->lo = (uint32_t)loc;
}

/* The entry of a handle the caller says is live. */
static entry_t *live(const sl_timerindex_t *ix, uint32_t h) {
        entry_t *e;

        sl_assert(h != NONE && (h >> CHUNK_SHIFT) < ix->nchunks &&
                  ix->base[h >> CHUNK_SHIFT]);
        e = ent(ix, h);
        sl_assert(e->pos < ix->n && ix->heap[e->pos] == h);
        return e;
}

/*
 * Chunks
 */

static void room_set(sl_timerindex_t *ix, size_t c) {
        ix->room[c / 64] |= (uint64_t)1 << (c % 64);
        if (c / 64 < ix->room_lo)
                ix->room_lo = c / 64;
}

static void room_clear(sl_timerindex_t *ix, size_t c) {
        ix->room[c / 64] &= ~((uint64_t)1 << (c % 64));
}

static void tables_grow(sl_timerindex_t *ix) {
        size_t cap = ix->chunks_cap ? ix->chunks_cap * 2 : 64;

        sl_assert(cap <= MAX_CHUNKS);
        ix->base = sl_realloc(ix->base, cap * sizeof(*ix->base));
        ix->chunk = sl_realloc(ix->chunk, cap * sizeof(*ix->chunk));
        ix->room = sl_realloc(ix->room, cap / 64 * sizeof(*ix->room));
        memset(ix->base + ix->chunks_cap, 0,
               (cap - ix->chunks_cap) * sizeof(*ix->base));
        memset(ix->room + ix->chunks_cap / 64, 0,
               (cap - ix->chunks_cap) / 64 * sizeof(*ix->room));
        ix->chunks_cap = cap;
}

static void chunk_map(sl_timerindex_t *ix, size_t c) {
        void *p = mmap(NULL, (size_t)CHUNK_N * sizeof(entry_t),
                       PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (p == MAP_FAILED)
                sl_assert(!"timerindex: out of memory mapping a chunk");
        ix->base[c] = p;
        ix->chunk[c] = (chunk_t){.free = NONE};
        ix->nempty++;
}

static void chunk_unmap(sl_timerindex_t *ix, size_t c) {
        munmap(ix->base[c], (size_t)CHUNK_N * sizeof(entry_t));
        ix->base[c] = NULL;
        ix->nempty--;
        /* The table ends with a mapped chunk. */
        while (ix->nchunks && !ix->base[ix->nchunks - 1]) {
                ix->nchunks--;
                room_clear(ix, ix->nchunks);
        }
}

/* The lowest chunk with room, made so (mapped, in the table). */
static size_t chunk_with_room(sl_timerindex_t *ix) {
        size_t words = (ix->nchunks + 63) / 64, c = ix->nchunks;

        for (size_t w = ix->room_lo; w < words; w++) {
                if (ix->room[w]) {
                        ix->room_lo = w;
                        c = w * 64 + (size_t)__builtin_ctzll(ix->room[w]);
                        break;
                }
        }
        if (c == ix->nchunks) {
                ix->room_lo = words;
                if (c == ix->chunks_cap)
                        tables_grow(ix);
                ix->nchunks++;
                room_set(ix, c);
        }
        if (!ix->base[c])
                chunk_map(ix, c);
        return c;
}

/* A free slot's handle; its entry is the caller's to fill. */
static uint32_t slot_alloc(sl_timerindex_t *ix) {
        size_t c = chunk_with_room(ix);
        chunk_t *k = &ix->chunk[c];
        uint32_t s;

        if (k->free != NONE) {
                s = k->free;
                k->free = ix->base[c][s].next;
        } else {
                sl_assert(k->used < CHUNK_N);
                s = k->used++;
                if (k->used > k->hw)
                        k->hw = k->used;
        }
        if (!k->live++)
                ix->nempty--;
        if (k->live == CHUNK_N)
                room_clear(ix, c);
        s |= (uint32_t)c << CHUNK_SHIFT;
        sl_assert(s != NONE);
        return s;
}

static void slot_free(sl_timerindex_t *ix, uint32_t h) {
        size_t c = h >> CHUNK_SHIFT;
        chunk_t *k = &ix->chunk[c];
        entry_t *e = ent(ix, h);

        e->pos = NONE;
        e->next = k->free;
        k->free = h & CHUNK_MASK;
        room_set(ix, c);
        if (--k->live)
                return;
        if (ix->nempty) {
                /* Another empty chunk is kept already. */
                ix->nempty++;
                chunk_unmap(ix, c);
                return;
        }
        /* The spare: carved from its start again (its pages stay). */
        ix->nempty++;
        k->free = NONE;
        k->used = 0;
}

/*
 * Arrays
 */

static size_t page_round(size_t bytes) {
        return (bytes + PAGE - 1) / PAGE * PAGE;
}

static void array_release(void *p, size_t bytes) {
        if (bytes >= BIG_ARRAY)
                munmap(p, page_round(bytes));
        else
                free(p);
}

/* An array of bytes bytes in place of old (of old_bytes), its first bytes
 * kept when keep, else not.  Below BIG_ARRAY it is malloc'd; from there on
 * mapped, so that growth is mremap (no copy, and the pages of the slack are
 * resident only once used), shrinking gives the tail back at once and a
 * freed array is unmapped, whatever the allocator keeps.  bytes 0 frees
 * it. */
static void *array_resize(void *old, size_t old_bytes, size_t bytes, int keep) {
        int was_big = old_bytes >= BIG_ARRAY, big = bytes >= BIG_ARRAY;
        void *p = NULL;

        if (!bytes || !keep || was_big != big) {
                if (!keep) {
                        /* Before the new one comes: never two at once. */
                        array_release(old, old_bytes);
                        old = NULL;
                }
                if (bytes && big) {
                        p = mmap(
                            NULL, page_round(bytes), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                        if (p == MAP_FAILED)
                                sl_assert(!"timerindex: out of memory");
                } else if (bytes) {
                        p = sl_malloc(bytes);
                }
                if (old) {
                        if (p)
                                memcpy(p, old, SL_MIN(old_bytes, bytes));
                        array_release(old, old_bytes);
                }
                return p;
        }
        if (!big)
                return sl_realloc(old, bytes);
        if (page_round(old_bytes) == page_round(bytes))
                return old;
        p = mremap(old, page_round(old_bytes), page_round(bytes),
                   MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
                sl_assert(!"timerindex: out of memory");
        return p;
}

/*
 * Heap of handles
 */

static inline void heap_set(sl_timerindex_t *ix, uint32_t i, uint32_t h,
                            entry_t *e) {
        ix->heap[i] = h;
        e->pos = i;
}

/* Moves the entry at i up while it fires before its parent; returns where
 * it ends. */
static uint32_t sift_up(sl_timerindex_t *ix, uint32_t i) {
        uint32_t h = ix->heap[i];
        entry_t *e = ent(ix, h);

        while (i > 0) {
                uint32_t p = (i - 1) / 2, ph = ix->heap[p];
                entry_t *pe = ent(ix, ph);
                if (!before(e, pe))
                        break;
                heap_set(ix, i, ph, pe);
                i = p;
        }
        heap_set(ix, i, h, e);
        return i;
}

/* Moves the entry at i down while a child fires before it. */
static void sift_down(sl_timerindex_t *ix, uint32_t i) {
        uint32_t h = ix->heap[i];
        entry_t *e = ent(ix, h);

        for (;;) {
                size_t c = 2 * (size_t)i + 1;
                entry_t *ce;
                if (c >= ix->n)
                        break;
                ce = ent(ix, ix->heap[c]);
                if (c + 1 < ix->n) {
                        entry_t *re = ent(ix, ix->heap[c + 1]);
                        if (before(re, ce)) {
                                c++;
                                ce = re;
                        }
                }
                if (!before(ce, e))
                        break;
                heap_set(ix, i, ix->heap[c], ce);
                i = (uint32_t)c;
        }
        heap_set(ix, i, h, e);
}

static void heap_fix(sl_timerindex_t *ix, uint32_t i) {
        if (sift_up(ix, i) == i)
                sift_down(ix, i);
}

static void heap_resize(sl_timerindex_t *ix, uint32_t cap) {
        ix->heap = array_resize(ix->heap, (size_t)ix->cap * sizeof(*ix->heap),
                                (size_t)cap * sizeof(*ix->heap), 1);
        ix->cap = cap;
}

/*
 * Buckets
 */

/* Gives the bucket array nb buckets and relinks every chain. */
static void buckets_resize(sl_timerindex_t *ix, size_t nb) {
        if (nb < MIN_BUCKETS)
                nb = MIN_BUCKETS;
        sl_assert(nb <= UINT32_MAX);
        /* Every entry is in the heap array: the old chains are not needed
         * to find them, so the old array goes before the new one comes. */
        ix->buckets = array_resize(ix->buckets,
                                   (size_t)ix->nbuckets * sizeof(*ix->buckets),
                                   nb * sizeof(*ix->buckets), 0);
        ix->nbuckets = (uint32_t)nb;
        memset(ix->buckets, 0xff, nb * sizeof(*ix->buckets));
        for (uint32_t i = 0; i < ix->n; i++) {
                uint32_t h = ix->heap[i];
                entry_t *e = ent(ix, h);
                uint32_t *b = &ix->buckets[bucket_of(e->hash, ix->nbuckets)];
                e->next = *b;
                *b = h;
        }
}

static size_t target_buckets(size_t count) {
        return (count * TARGET_NUM + TARGET_DEN - 1) / TARGET_DEN;
}

/*
 * Public API
 */

sl_timerindex_t *sl_timerindex_new(size_t limit) {
        sl_timerindex_t *ix = sl_calloc(1, sizeof(*ix));

        ix->limit =
            limit && limit < SL_TIMERINDEX_MAX ? limit : SL_TIMERINDEX_MAX;
        buckets_resize(ix, MIN_BUCKETS);
        return ix;
}

void sl_timerindex_destroy(sl_timerindex_t *ix) {
        if (!ix)
                return;
        for (size_t c = 0; c < ix->nchunks; c++)
                if (ix->base[c])
                        munmap(ix->base[c], (size_t)CHUNK_N * sizeof(entry_t));
        free(ix->base);
        free(ix->chunk);
        free(ix->room);
        array_resize(ix->heap, (size_t)ix->cap * sizeof(*ix->heap), 0, 0);
        array_resize(ix->buckets, (size_t)ix->nbuckets * sizeof(*ix->buckets),
                     0, 0);
        free(ix);
}

uint32_t sl_timerindex_add(sl_timerindex_t *ix, uint64_t hash, int64_t due_ms,
                           int64_t loc, uint16_t flags) {
        uint32_t h, *b;
        entry_t *e;

        sl_assert(ix);
        if (ix->n >= ix->limit)
                return NONE;
        if (ix->n == ix->cap) {
                size_t cap = ix->cap < HEAP_MIN_CAP
                                 ? HEAP_MIN_CAP
                                 : (size_t)ix->cap + ix->cap / 4;
                heap_resize(ix, (uint32_t)SL_MIN(cap, SL_TIMERINDEX_MAX));
        }
        if ((size_t)ix->n + 1 > (size_t)ix->nbuckets * MAX_LOAD2 / 2)
                buckets_resize(ix, target_buckets((size_t)ix->n + 1));
        h = slot_alloc(ix);
        e = ent(ix, h);
        e->hash = hash;
        set_key(e, due_ms, loc);
        e->flags = flags;
        e->spare = 0;
        b = &ix->buckets[bucket_of(hash, ix->nbuckets)];
        e->next = *b;
        *b = h;
        heap_set(ix, ix->n, h, e);
        sift_up(ix, ix->n++);
        return h;
}

void sl_timerindex_remove(sl_timerindex_t *ix, uint32_t h) {
        entry_t *e;
        uint32_t *link, i, last;

        sl_assert(ix);
        e = live(ix, h);
        link = &ix->buckets[bucket_of(e->hash, ix->nbuckets)];
        while (*link != h) {
                sl_assert(*link != NONE);
                link = &ent(ix, *link)->next;
        }
        *link = e->next;

        i = e->pos;
        last = ix->heap[--ix->n];
        if (i < ix->n) {
                heap_set(ix, i, last, ent(ix, last));
                heap_fix(ix, i);
        }
        slot_free(ix, h);

        if (ix->cap > HEAP_MIN_CAP && ix->n < ix->cap / 2)
                heap_resize(ix, (uint32_t)SL_MAX((size_t)HEAP_MIN_CAP,
                                                 (size_t)ix->n + ix->n / 4));
        if (ix->nbuckets > MIN_BUCKETS &&
            (size_t)ix->n * 2 < (size_t)ix->nbuckets * MIN_LOAD2)
                buckets_resize(ix, target_buckets(ix->n));
}

void sl_timerindex_update(sl_timerindex_t *ix, uint32_t h, int64_t due_ms,
                          int64_t loc) {
        entry_t *e;

        sl_assert(ix);
        e = live(ix, h);
        set_key(e, due_ms, loc);
        heap_fix(ix, e->pos);
}

void sl_timerindex_set_flags(sl_timerindex_t *ix, uint32_t h, uint16_t flags) {
        sl_assert(ix);
        live(ix, h)->flags = flags;
}

uint64_t sl_timerindex_hash(const sl_timerindex_t *ix, uint32_t h) {
        sl_assert(ix);
        return live(ix, h)->hash;
}

int64_t sl_timerindex_due(const sl_timerindex_t *ix, uint32_t h) {
        sl_assert(ix);
        return (int64_t)(live(ix, h)->hi >> 16);
}

int64_t sl_timerindex_loc(const sl_timerindex_t *ix, uint32_t h) {
        const entry_t *e;

        sl_assert(ix);
        e = live(ix, h);
        return (int64_t)((e->hi & 0xffff) << 32 | e->lo);
}

uint16_t sl_timerindex_flags(const sl_timerindex_t *ix, uint32_t h) {
        sl_assert(ix);
        return live(ix, h)->flags;
}

/* The first entry of the chain from h on whose hash is hash, or NONE. */
static uint32_t chain_find(const sl_timerindex_t *ix, uint32_t h,
                           uint64_t hash) {
        while (h != NONE) {
                const entry_t *e = ent(ix, h);
                if (e->hash == hash)
                        return h;
                h = e->next;
        }
        return NONE;
}

uint32_t sl_timerindex_find(const sl_timerindex_t *ix, uint64_t hash) {
        sl_assert(ix);
        return chain_find(ix, ix->buckets[bucket_of(hash, ix->nbuckets)], hash);
}

uint32_t sl_timerindex_next_same_hash(const sl_timerindex_t *ix, uint32_t h) {
        const entry_t *e;

        sl_assert(ix);
        e = live(ix, h);
        return chain_find(ix, e->next, e->hash);
}

void sl_timerindex_prefetch(const sl_timerindex_t *ix, uint64_t hash) {
        __builtin_prefetch(&ix->buckets[bucket_of(hash, ix->nbuckets)], 1);
}

void sl_timerindex_prefetch_chain(const sl_timerindex_t *ix, uint64_t hash) {
        uint32_t h = ix->buckets[bucket_of(hash, ix->nbuckets)];
        if (h != NONE)
                __builtin_prefetch(ent(ix, h), 0);
}

uint32_t sl_timerindex_min(const sl_timerindex_t *ix) {
        sl_assert(ix);
        return ix->n ? ix->heap[0] : NONE;
}

/*
 * earliest(): a best-first walk of the heap array.  An entry fires no
 * sooner than its parent, so the k entries that fire first are a subtree
 * at the root, and the next one is always a child of one already taken.
 * The candidates (heap positions with their keys, copied so that the
 * walk's own heap compares without reaching into the chunks) wait in a
 * small min-heap: take the least, emit it, offer its two children.  Each
 * step takes one candidate and offers at most two, and the children of the
 * last one emitted are not offered, so at most max candidates wait at
 * once; a child due after until_ms is not offered (nor, then, anything
 * below it).
 */
typedef struct cand_s {
        uint64_t hi; /* the entry's key (entry_t's hi and lo) */
        uint32_t lo;
        uint32_t pos; /* its position in the index's heap */
} cand_t;

/* Candidates held on the stack: 4 KiB. */
#define EARLIEST_STACK 256

static inline int cand_before(const cand_t *a, const cand_t *b) {
        return a->hi < b->hi || (a->hi == b->hi && a->lo < b->lo);
}

/* Puts c in place of the least of the n candidates of q and sifts it
 * down. */
static void cand_replace_top(cand_t *q, size_t n, cand_t c) {
        size_t i = 0;

        for (;;) {
                size_t k = 2 * i + 1;
                if (k >= n)
                        break;
                if (k + 1 < n && cand_before(&q[k + 1], &q[k]))
                        k++;
                if (!cand_before(&q[k], &c))
                        break;
                q[i] = q[k];
                i = k;
        }
        q[i] = c;
}

/* Adds c to the n candidates of q (room for one more). */
static void cand_push(cand_t *q, size_t n, cand_t c) {
        size_t i = n;

        while (i > 0) {
                size_t p = (i - 1) / 2;
                if (!cand_before(&c, &q[p]))
                        break;
                q[i] = q[p];
                i = p;
        }
        q[i] = c;
}

/* The candidate at heap position pos, if it is in the heap and due by
 * hi_max (its key's hi at most that). */
static int cand_at(const sl_timerindex_t *ix, size_t pos, uint64_t hi_max,
                   cand_t *c) {
        const entry_t *e;

        if (pos >= ix->n)
                return 0;
        e = ent(ix, ix->heap[pos]);
        if (e->hi > hi_max)
                return 0;
        *c = (cand_t){.hi = e->hi, .lo = e->lo, .pos = (uint32_t)pos};
        return 1;
}

size_t sl_timerindex_earliest(const sl_timerindex_t *ix, int64_t until_ms,
                              size_t max, uint32_t *out) {
        cand_t stack[EARLIEST_STACK], *q = stack, c;
        size_t cap, nq = 0, got = 0;
        uint64_t hi_max;

        sl_assert(ix && (out || !max));
        if (!max || !ix->n || until_ms < 0)
                return 0;
        /* due_ms <= until_ms: hi (due_ms << 16 | loc's top 16 bits) at
         * most until_ms << 16 | 0xffff. */
        hi_max = until_ms >= SL_TIMERINDEX_FIELD_MAX
                     ? UINT64_MAX
                     : (uint64_t)until_ms << 16 | 0xffff;
        if (!cand_at(ix, 0, hi_max, &c))
                return 0;
        cap = SL_MIN(max, (size_t)ix->n);
        if (cap > EARLIEST_STACK)
                q = sl_malloc(cap * sizeof(*q));
        q[nq++] = c;
        while (nq) {
                size_t child = 2 * (size_t)q[0].pos + 1;
                cand_t l, r;
                int has_l, has_r;

                out[got++] = ix->heap[q[0].pos];
                if (got == max)
                        break;
                has_l = cand_at(ix, child, hi_max, &l);
                has_r = cand_at(ix, child + 1, hi_max, &r);
                if (has_l)
                        cand_replace_top(q, nq, l);
                else if (--nq)
                        cand_replace_top(q, nq, q[nq]);
                if (has_r) {
                        sl_assert(nq < cap);
                        cand_push(q, nq++, r);
                }
        }
        if (q != stack)
                free(q);
        return got;
}

size_t sl_timerindex_count(const sl_timerindex_t *ix) {
        sl_assert(ix);
        return ix->n;
}

size_t sl_timerindex_memory(const sl_timerindex_t *ix) {
        size_t m;

        sl_assert(ix);
        m = sizeof(*ix) + (size_t)ix->cap * sizeof(*ix->heap) +
            (size_t)ix->nbuckets * sizeof(*ix->buckets) +
            ix->chunks_cap * (sizeof(*ix->base) + sizeof(*ix->chunk)) +
            ix->chunks_cap / 64 * sizeof(*ix->room);
        for (size_t c = 0; c < ix->nchunks; c++)
                if (ix->base[c])
                        m += ((size_t)ix->chunk[c].hw * sizeof(entry_t) + PAGE -
                              1) /
                             PAGE * PAGE;
        return m;
}

void sl_timerindex_foreach(const sl_timerindex_t *ix,
                           void (*cb)(uint32_t handle, void *opaque),
                           void *opaque) {
        sl_assert(ix && cb);
        for (uint32_t i = 0; i < ix->n; i++)
                cb(ix->heap[i], opaque);
}

/* The chunks' free lists, counts and room bits. */
static int verify_chunks(const sl_timerindex_t *ix) {
        size_t empty = 0, total = 0;

        if (ix->nchunks > ix->chunks_cap ||
            (ix->nchunks && !ix->base[ix->nchunks - 1]))
                return -1;
        for (size_t c = 0; c < ix->chunks_cap; c++) {
                const chunk_t *k = &ix->chunk[c];
                int room = !!(ix->room[c / 64] & (uint64_t)1 << (c % 64));
                uint32_t nfree = 0, nlive = 0;

                if (c >= ix->nchunks) {
                        if (room || ix->base[c])
                                return -1;
                        continue;
                }
                if (room && c / 64 < ix->room_lo)
                        return -1;
                if (!ix->base[c]) {
                        if (!room)
                                return -1;
                        continue;
                }
                if (k->used > CHUNK_N || k->hw < k->used ||
                    room != (k->live < CHUNK_N))
                        return -1;
                for (uint32_t s = k->free; s != NONE; s = ix->base[c][s].next) {
                        if (s >= k->used || ix->base[c][s].pos != NONE ||
                            ++nfree > k->used)
                                return -1;
                }
                for (uint32_t s = 0; s < k->used; s++) {
                        const entry_t *e = &ix->base[c][s];
                        uint32_t h = (uint32_t)(c << CHUNK_SHIFT) | s;
                        if (e->pos == NONE)
                                continue;
                        if (e->pos >= ix->n || ix->heap[e->pos] != h)
                                return -1;
                        nlive++;
                }
                if (nlive != k->live || nlive + nfree != k->used)
                        return -1;
                empty += !k->live;
                total += k->live;
        }
        return empty == ix->nempty && empty <= 1 && total == ix->n ? 0 : -1;
}

int sl_timerindex_verify(const sl_timerindex_t *ix) {
        size_t chained = 0;

        if (!ix || ix->n > ix->cap || ix->n > ix->limit ||
            (ix->cap > HEAP_MIN_CAP && ix->n < ix->cap / 2) ||
            ix->nbuckets < MIN_BUCKETS ||
            (size_t)ix->n * 2 > (size_t)ix->nbuckets * MAX_LOAD2 ||
            (ix->nbuckets > MIN_BUCKETS &&
             (size_t)ix->n * 2 < (size_t)ix->nbuckets * MIN_LOAD2))
                return -1;
        /* Heap: each handle a mapped slot that knows its position, no
         * entry before its parent. */
        for (uint32_t i = 0; i < ix->n; i++) {
                uint32_t h = ix->heap[i];
                if (h == NONE || (h >> CHUNK_SHIFT) >= ix->nchunks ||
                    !ix->base[h >> CHUNK_SHIFT] ||
                    (h & CHUNK_MASK) >= ix->chunk[h >> CHUNK_SHIFT].used ||
                    ent(ix, h)->pos != i)
                        return -1;
                if (i && before(ent(ix, h), ent(ix, ix->heap[(i - 1) / 2])))
                        return -1;
        }
        if (verify_chunks(ix))
                return -1;
        /* Chains: every entry once, in the bucket of its hash.  Every
         * handle met is live (checked above through its position), so a
         * chain that held one twice would make more than n links. */
        for (uint32_t b = 0; b < ix->nbuckets; b++) {
                for (uint32_t h = ix->buckets[b]; h != NONE;
                     h = ent(ix, h)->next) {
                        const entry_t *e;
                        if ((h >> CHUNK_SHIFT) >= ix->nchunks ||
                            !ix->base[h >> CHUNK_SHIFT])
                                return -1;
                        e = ent(ix, h);
                        if (e->pos >= ix->n || ix->heap[e->pos] != h ||
                            bucket_of(e->hash, ix->nbuckets) != b ||
                            ++chained > ix->n)
                                return -1;
                }
        }
        return chained == ix->n ? 0 : -1;
}
