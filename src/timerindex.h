/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timerindex.h — the compact index of one delay partition's pending timers
 * whose ids and payloads live in Kafka, not in memory: per timer a hash of
 * its id, its due time, where its payload lies, and a few flags, in 32
 * bytes plus its share of a heap and a bucket array (see timerindex.c).
 *
 * Entries are addressed by handles (uint32_t), stable from add() until the
 * entry is removed.  The index is a multimap by hash: several entries may
 * share one (two ids whose hashes collide, or the old and the new version
 * of one id for a while), and the caller tells them apart by reading the
 * ids back.  Entries come out in (due_ms, loc) order.
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe (one
 * partition's state lives on the loop thread).  Allocation failure aborts.
 */
#ifndef SL_TIMERINDEX_H
#define SL_TIMERINDEX_H

#include <stddef.h>
#include <stdint.h>

/* No entry: what find(), next_same_hash() and min() return when there is
 * none, and never a handle of an entry. */
#define SL_TIMERINDEX_NONE UINT32_MAX
/* Most entries an index holds (handles 0 .. 2^32 - 2). */
#define SL_TIMERINDEX_MAX ((size_t)UINT32_MAX - 1)
/* due_ms and loc are 48-bit unsigned: [0, SL_TIMERINDEX_FIELD_MAX].  Due
 * times up to 10889-08-02 (sluice clamps them to 9999-12-31, delay_input.h),
 * Kafka offsets and sequence numbers up to 2.8e14. */
#define SL_TIMERINDEX_FIELD_MAX (((int64_t)1 << 48) - 1)

typedef struct sl_timerindex_s sl_timerindex_t;

/* An empty index that holds at most limit entries (0, or more than
 * SL_TIMERINDEX_MAX: SL_TIMERINDEX_MAX).  It maps no entry storage until
 * the first add.  Never fails (allocation failure aborts). */
sl_timerindex_t *sl_timerindex_new(size_t limit);

/* Frees the index and every entry.  NULL is a no-op. */
void sl_timerindex_destroy(sl_timerindex_t *ix);

/*
 * Adds an entry: hash is the sl_hash() of the timer's id (hash.h; the
 * index never hashes anything itself), due_ms and loc in
 * [0, SL_TIMERINDEX_FIELD_MAX], flags the caller's.  An entry with the
 * same hash may be there already; this one is another.  Returns its handle,
 * or SL_TIMERINDEX_NONE when the index holds its limit (nothing changed).
 * O(log n); the heap and bucket arrays grow by a quarter and a third, so
 * now and then one add costs O(n).
 */
uint32_t sl_timerindex_add(sl_timerindex_t *ix, uint64_t hash, int64_t due_ms,
                           int64_t loc, uint16_t flags);

/* Removes the entry (a live handle); its handle may be given to a later
 * add.  O(log n) plus a walk of its hash chain (two entries on average). */
void sl_timerindex_remove(sl_timerindex_t *ix, uint32_t handle);

/* Gives the entry a new due_ms and loc (its payload's offset became known,
 * or the timer was rescheduled in place) and restores firing order:
 * O(log n), the handle stays. */
void sl_timerindex_update(sl_timerindex_t *ix, uint32_t handle, int64_t due_ms,
                          int64_t loc);

/* Replaces the entry's flags. */
void sl_timerindex_set_flags(sl_timerindex_t *ix, uint32_t handle,
                             uint16_t flags);

/* The fields of a live entry. */
uint64_t sl_timerindex_hash(const sl_timerindex_t *ix, uint32_t handle);
int64_t sl_timerindex_due(const sl_timerindex_t *ix, uint32_t handle);
int64_t sl_timerindex_loc(const sl_timerindex_t *ix, uint32_t handle);
uint16_t sl_timerindex_flags(const sl_timerindex_t *ix, uint32_t handle);

/* The first entry with this hash, or SL_TIMERINDEX_NONE; then
 * next_same_hash() gives the others, one by one, and NONE after the last
 * (in no particular order).  Take the next before removing the current
 * one: a removal or an add may change what follows. */
uint32_t sl_timerindex_find(const sl_timerindex_t *ix, uint64_t hash);
uint32_t sl_timerindex_next_same_hash(const sl_timerindex_t *ix,
                                      uint32_t handle);

/* Asks the CPU to bring in, while the caller does other work, the bucket
 * that find() or add() of this hash reads first (in a large index a cache
 * miss).  Then, some work later, sl_timerindex_prefetch_chain() of the same
 * hash brings in the first entry of its chain.  Only hints: they change
 * nothing. */
void sl_timerindex_prefetch(const sl_timerindex_t *ix, uint64_t hash);
void sl_timerindex_prefetch_chain(const sl_timerindex_t *ix, uint64_t hash);

/* The entry that fires first (smallest due_ms, then smallest loc; entries
 * equal in both come out in no particular order), or SL_TIMERINDEX_NONE
 * when the index is empty.  O(1). */
uint32_t sl_timerindex_min(const sl_timerindex_t *ix);

/*
 * Up to max handles of the entries that fire first, in firing order
 * ((due_ms, loc); ties in no particular order), among those with
 * due_ms <= until_ms, into out (room for max handles; NULL when max is 0);
 * returns how many.  The index is not changed.  For a look ahead without
 * removing anything (the payloads of the timers that fire next, fetched
 * before they are due).  O(max log max): a best-first walk of the heap
 * that reads about 2 * max entries; it allocates nothing when max <= 256
 * (or the index holds at most 256 entries), else a scratch array of
 * 16 * max bytes for the length of the call.
 */
size_t sl_timerindex_earliest(const sl_timerindex_t *ix, int64_t until_ms,
                              size_t max, uint32_t *out);

/* Number of entries. */
size_t sl_timerindex_count(const sl_timerindex_t *ix);

/* Bytes the index holds: the pages of its entry chunks that were touched,
 * its heap and bucket arrays (with their slack) and its own tables.  For
 * metrics. */
size_t sl_timerindex_memory(const sl_timerindex_t *ix);

/* Calls cb for every entry, in no particular order.  cb must not modify
 * the index. */
void sl_timerindex_foreach(const sl_timerindex_t *ix,
                           void (*cb)(uint32_t handle, void *opaque),
                           void *opaque);

/* Checks every invariant (heap order and positions, hash chains, chunk
 * free lists and counts, array sizes) in O(n): 0 if sound, -1 if not.  For
 * tests. */
int sl_timerindex_verify(const sl_timerindex_t *ix);

#endif
