/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerheap.h — the pending timers of one delay partition: a min-heap by
 * (due_ms, seq) with an index by timer id for cancel and reschedule.
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe (one partition's
 * state lives on the loop thread).  See timerheap.c for the memory layout.
 */
#ifndef SL_TIMERHEAP_H
#define SL_TIMERHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

/*
 * One pending timer: one block holding this header, then the key (timer
 * id) bytes, then the data bytes.  Read it through the accessors; the
 * fields after seq belong to the heap.
 */
typedef struct sl_timer_s {
        int64_t due_ms; /* when it fires, epoch milliseconds */
        int64_t seq;    /* arrival order: equal due_ms fire in seq order */
        sl_hmap_link_t hlink; /* next in the same hash chain (hmap.h) */
        uint32_t heap_idx;    /* own position in the heap array (heap.h) */
        uint32_t keylen;
        uint32_t datalen;
        char buf[]; /* keylen key bytes, then datalen data bytes */
} sl_timer_t;

static inline const void *sl_timer_key(const sl_timer_t *t) {
        return t->buf;
}

static inline const void *sl_timer_data(const sl_timer_t *t) {
        return t->buf + t->keylen;
}

typedef struct sl_timerheap_s sl_timerheap_t;
typedef struct sl_slab_s sl_slab_t;

/* An empty heap whose timers are one malloc each: for small maps (a
 * debounce group's items, rates, inspect's views).  Never fails
 * (allocation failure aborts). */
sl_timerheap_t *sl_timerheap_new(void);

/* An empty heap whose timers live in a slab of its own (slab.h): no
 * allocation per timer, all freed at once by destroy, compacted when
 * frees leave much of it idle.  For the large heaps of delay partitions.
 * Never fails (allocation failure aborts). */
sl_timerheap_t *sl_timerheap_new_slab(void);

/* Frees the heap and every timer still in it.  NULL is a no-op. */
void sl_timerheap_destroy(sl_timerheap_t *h);

/*
 * Schedules the timer with this key (any bytes, keylen may be 0), or
 * replaces the one already pending under it: due, seq and data all take
 * the new values.  Key and data are copied; the caller keeps its buffers.
 * Returns 1 if a pending timer was replaced, 0 if the key was new, -1 if
 * keylen or datalen is 4 GiB or more or the heap holds 2^32 - 1 timers
 * (nothing changed).
 */
int sl_timerheap_upsert(sl_timerheap_t *h, const void *key, size_t keylen,
                        int64_t due_ms, int64_t seq, const void *data,
                        size_t datalen);

/* Schedules a timer under a key that is not pending (the caller has just
 * looked): as sl_timerheap_upsert() without the search of the key's
 * chain.  A key already pending would be there twice, which is a bug.
 * Returns 0, or -1 as sl_timerheap_upsert() (nothing changed). */
int sl_timerheap_add(sl_timerheap_t *h, const void *key, size_t keylen,
                     int64_t due_ms, int64_t seq, const void *data,
                     size_t datalen);

/* sl_timerheap_add() and sl_timerheap_find() for a caller that already
 * has the key's sl_hash(key, keylen) (hash.h), which must be exactly that:
 * one hash of an id serves several lookups.  add also gives the new timer
 * in *out (when out is not NULL), valid as find()'s answer. */
int sl_timerheap_add_hashed(sl_timerheap_t *h, uint64_t hash, const void *key,
                            size_t keylen, int64_t due_ms, int64_t seq,
                            const void *data, size_t datalen,
                            const sl_timer_t **out);
const sl_timer_t *sl_timerheap_find_hashed(const sl_timerheap_t *h,
                                           uint64_t hash, const void *key,
                                           size_t keylen);
/* sl_timerheap_upsert() and sl_timerheap_remove() with the key's sl_hash()
 * given, under the same rule. */
int sl_timerheap_upsert_hashed(sl_timerheap_t *h, uint64_t hash,
                               const void *key, size_t keylen, int64_t due_ms,
                               int64_t seq, const void *data, size_t datalen);
int sl_timerheap_remove_hashed(sl_timerheap_t *h, uint64_t hash,
                               const void *key, size_t keylen);

/* Asks the CPU to bring in, while the caller does other work, what adding
 * a timer of this sl_hash() will write (its bucket, the heap's next slot):
 * in a heap not touched for a while they are cache misses.  Only a hint:
 * it changes nothing. */
void sl_timerheap_prefetch(const sl_timerheap_t *h, uint64_t hash);

/* The second stage, some work after sl_timerheap_prefetch() of the same
 * hash: brings in the first timer of the key's chain (its length, key and
 * link), which a lookup compares next.  It reads the bucket, so it only
 * pays once the first stage has had time to bring that in.  A hint too. */
void sl_timerheap_prefetch_chain(const sl_timerheap_t *h, uint64_t hash);

/* Cancels the timer with this key: 1 if it was removed (and freed), 0 if no
 * timer has this key. */
int sl_timerheap_remove(sl_timerheap_t *h, const void *key, size_t keylen);

/* Gives the pending timer t (from find() or peek() of this heap) a new
 * due_ms and seq without looking its key up again: O(log n), no
 * allocation, t stays where it is in memory. */
void sl_timerheap_reschedule(sl_timerheap_t *h, const sl_timer_t *t,
                             int64_t due_ms, int64_t seq);

/* The pending timer with this key, or NULL.  Owned by the heap: valid until
 * the next call that modifies the heap (a slab heap may move its timers
 * when it compacts). */
const sl_timer_t *sl_timerheap_find(const sl_timerheap_t *h, const void *key,
                                    size_t keylen);

/* The earliest timer (smallest due_ms, then smallest seq), or NULL when the
 * heap is empty.  Owned by the heap, valid until the next modification. */
const sl_timer_t *sl_timerheap_peek(const sl_timerheap_t *h);

/* Takes the earliest timer out of the heap, or returns NULL when empty.
 * Ownership passes to the caller, who frees it with sl_timer_free(); a slab
 * heap hands out a malloc'd copy (use sl_timerheap_drop_min() where the
 * timer is not kept). */
sl_timer_t *sl_timerheap_pop(sl_timerheap_t *h);

/* Takes every timer out of a heap made by sl_timerheap_new() (not a slab
 * heap), in the order pop() would, into out (room for count() pointers):
 * the caller owns them as pop()'s.  Returns how many.  Cheaper than as
 * many pops: no hash chain is walked, and timers that were added in
 * firing order are not compared again. */
size_t sl_timerheap_take_all(sl_timerheap_t *h, sl_timer_t **out);

/* Removes the earliest timer and frees it: 1, or 0 when the heap is empty.
 * What peek() returned is invalid afterwards. */
int sl_timerheap_drop_min(sl_timerheap_t *h);

/* Frees a timer returned by sl_timerheap_pop().  NULL is a no-op. */
void sl_timer_free(sl_timer_t *t);

/* Number of pending timers. */
size_t sl_timerheap_count(const sl_timerheap_t *h);

/* Key plus data bytes of all pending timers (the payload the heap holds,
 * for metrics; the heap's own overhead is not included). */
size_t sl_timerheap_bytes(const sl_timerheap_t *h);

/* Calls cb for every pending timer, in no particular order.  cb must not
 * modify the heap. */
void sl_timerheap_foreach(const sl_timerheap_t *h,
                          void (*cb)(const sl_timer_t *t, void *opaque),
                          void *opaque);

/* Bytes the heap occupies: its arrays, and its slab's touched chunks and
 * large blocks (a malloc heap counts its timers' sizes, without malloc's
 * overhead).  For metrics. */
size_t sl_timerheap_memory(const sl_timerheap_t *h);

/* The slab of a slab heap (for its sl_slab_stats()), NULL for the other
 * kind.  Valid until the next modification. */
const sl_slab_t *sl_timerheap_slab(const sl_timerheap_t *h);

/* How many times a slab heap has compacted (for tests and benchmarks). */
size_t sl_timerheap_compactions(const sl_timerheap_t *h);

/* Checks every internal invariant (heap order, positions, hash chains,
 * counts, the slab's live bytes) in O(n): 0 if sound, -1 if not.  For
 * tests. */
int sl_timerheap_verify(const sl_timerheap_t *h);

#endif
