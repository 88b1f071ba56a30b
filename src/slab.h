/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slab.h — a size-classed arena for many small blocks of varying size that
 * share one owner and die together: the pending timers of one delay
 * partition (timerheap.c).  See slab.c for the layout.
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe.
 */
#ifndef SL_SLAB_H
#define SL_SLAB_H

#include <stddef.h>

typedef struct sl_slab_s sl_slab_t;

/* An empty slab; it maps no memory before the first allocation.  Never
 * fails (allocation failure aborts). */
sl_slab_t *sl_slab_new(void);

/* Frees the slab and every block still allocated from it, at once.  NULL
 * is a no-op. */
void sl_slab_destroy(sl_slab_t *s);

/*
 * A block of at least size bytes (size > 0), 8-byte aligned, uninitialized.
 * Owned by the slab: give it back with sl_slab_free() or let
 * sl_slab_destroy() take it.  Never fails (allocation failure aborts).
 */
void *sl_slab_alloc(sl_slab_t *s, size_t size);

/* Gives back a block; size must be the size it was allocated with.  The
 * space is reused by the next allocation of the same size class.  NULL is
 * a no-op. */
void sl_slab_free(sl_slab_t *s, void *p, size_t size);

/* What a block of this size really occupies (its size class). */
size_t sl_slab_block_size(size_t size);

/* Byte counts, for compaction decisions, metrics and tests:
 *   live     blocks allocated and not freed (class sizes)
 *   idle     space held for reuse: free lists, and the current chunk's
 *            untouched tail
 *   mapped   all the slab holds: chunks (reserved, touched as used) and
 *            large blocks */
typedef struct sl_slab_stats_s {
        size_t live;
        size_t idle;
        size_t mapped;
        size_t tail; /* the part of idle never touched yet (costs no RSS) */
        size_t chunks;
        size_t large; /* blocks over SL_SLAB_MAX_BLOCK, each its own malloc */
} sl_slab_stats_t;

void sl_slab_stats(const sl_slab_t *s, sl_slab_stats_t *st);

/* Blocks larger than this are allocated one by one with malloc (their
 * bookkeeping is then negligible next to their size). */
#define SL_SLAB_MAX_BLOCK ((size_t)64 * 1024)

/* Every chunk's size: reserved with mmap, so only the pages a partition
 * touches cost resident memory. */
#define SL_SLAB_CHUNK ((size_t)1024 * 1024)

#endif
