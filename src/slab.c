/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slab.c — a size-classed arena for the pending timers of one partition
 * (see slab.h).
 *
 * DESIGN
 *
 * Why not malloc.  A delay partition holds up to millions of timers of a
 * few hundred bytes each, and the target is at most 64 bytes per timer
 * beyond its key and payload, counted by RSS.  One malloc per timer costs
 * its chunk header and rounding (~20 bytes), and worse, it interleaves
 * long-lived timers with the short-lived buffers of the same thread (the
 * decoded changelog record, the blob being built, librdkafka's messages):
 * when those are freed, the holes between timers stay resident, and RSS
 * came out at about twice the live heap.  Here the timers of a partition
 * sit side by side in chunks of their own, which nothing else shares, and
 * all of them go back to the system at once when the partition is revoked
 * or rebuilt.  (1M timers of 16-byte ids and 100-byte payloads, rebuilt:
 * 56-57 bytes per timer beyond key and payload by RSS, where a malloc per
 * timer gave 72; bench/sections/20-delay.sh.)
 *
 * Layout.  A slab is a list of chunks of SL_SLAB_CHUNK bytes, each mapped
 * with mmap (not malloc'd: glibc serves large requests from its heaps once
 * its mmap threshold has risen, and would keep them resident after they are
 * freed), and carved by a bump pointer:
 *
 *   chunk:  next | block block block ... block | tail (unused)
 *           8      8-byte aligned, sizes are size classes
 *
 * A fresh mapping costs nothing until a page is touched, so a partition
 * with three timers holds one page, not a megabyte.  A block carries no
 * header: whoever frees it says its size (the timer knows its key and data
 * lengths), which gives the size class.
 *
 * Size classes.  Multiples of 8 bytes up to 1 KiB (128 classes: at most 7
 * bytes of rounding, 3.5 on average, for the common timer), then four
 * classes per doubling up to SL_SLAB_MAX_BLOCK (24 more: at most 25% of
 * rounding, on blocks where it matters less).  Blocks beyond that are
 * rare (payloads over 64 KiB) and are each their own malloc, linked in a
 * list so that destroy still frees them in bulk.
 *
 * Reuse.  A freed block goes onto the free list of its class (the link is
 * written into the block itself) and the next allocation of that class
 * takes it back before bumping: a partition whose timers come and go at
 * the same sizes reaches a steady state and maps no more.  When a block
 * does not fit in the current chunk's tail, the tail is cut into free
 * blocks of the largest classes that fit, and a new chunk is mapped.
 *
 * What a slab does not do is move blocks: space freed in one class serves
 * only that class.  The owner, which knows where its blocks are referenced,
 * compacts by copying every live block into a new slab and destroying the
 * old one (timerheap.c does so when the idle space outgrows the live).
 */
#include "slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "util.h"

#define ALIGN          8
#define SMALL_MAX      1024
#define NSMALL         (SMALL_MAX / ALIGN) /* 8, 16, ..., 1024 */
#define STEPS          4                   /* classes per doubling above */
#define SMALL_MAX_LOG2 10
#define NMEDIUM        (STEPS * 6) /* 1280 ... 65536 */
#define NCLASSES       (NSMALL + NMEDIUM)

/* A mapped chunk; its blocks follow the header. */
typedef struct chunk_s {
        struct chunk_s *next;
} chunk_t;

/* A block over SL_SLAB_MAX_BLOCK, with its own allocation. */
typedef struct large_s {
        struct large_s *prev, *next;
        size_t size;
        size_t pad; /* the block stays 16-byte aligned, as malloc's are */
} large_t;

/* A free block: the link lives in the block. */
typedef struct free_s {
        struct free_s *next;
} free_t;

struct sl_slab_s {
        free_t *free[NCLASSES];
        chunk_t *chunks;
        char *bump, *end; /* the current chunk's unused tail */
        large_t *large;
        sl_slab_stats_t st;
};

/* The class of a block of size bytes (0 < size <= SL_SLAB_MAX_BLOCK); its
 * real size goes to *block. */
static size_t class_of(size_t size, size_t *block) {
        size_t c, p, step, b;

        if (size <= SMALL_MAX) {
                c = (size + ALIGN - 1) / ALIGN;
                *block = c * ALIGN;
                return c - 1;
        }
        /* size lies in (2^p, 2^(p+1)], cut into STEPS classes. */
        p = 63 - (size_t)__builtin_clzll((unsigned long long)(size - 1));
        step = (size_t)1 << (p - 2);
        b = (size + step - 1) & ~(step - 1);
        *block = b;
        return NSMALL + (p - SMALL_MAX_LOG2) * STEPS + (b >> (p - 2)) - STEPS -
               1;
}

static size_t class_size(size_t c) {
        size_t m, p;

        if (c < NSMALL)
                return (c + 1) * ALIGN;
        m = c - NSMALL;
        p = SMALL_MAX_LOG2 + m / STEPS;
        return ((size_t)1 << p) + (m % STEPS + 1) * ((size_t)1 << (p - 2));
}

size_t sl_slab_block_size(size_t size) {
        size_t b;

        if (size > SL_SLAB_MAX_BLOCK)
                return size;
        class_of(size ? size : 1, &b);
        return b;
}

sl_slab_t *sl_slab_new(void) {
        return sl_calloc(1, sizeof(sl_slab_t));
}

void sl_slab_destroy(sl_slab_t *s) {
        if (!s)
                return;
        while (s->chunks) {
                chunk_t *c = s->chunks;
                s->chunks = c->next;
                munmap(c, SL_SLAB_CHUNK);
        }
        while (s->large) {
                large_t *l = s->large;
                s->large = l->next;
                free(l);
        }
        free(s);
}

static void push_free(sl_slab_t *s, size_t c, void *p) {
        free_t *f = p;

        f->next = s->free[c];
        s->free[c] = f;
}

/* Cuts the rest of the current chunk into free blocks, largest classes
 * first, so that no byte of it is lost for good. */
static void retire_tail(sl_slab_t *s) {
        size_t rest = (size_t)(s->end - s->bump);

        while (rest >= ALIGN) {
                size_t b, c = class_of(SL_MIN(rest, SL_SLAB_MAX_BLOCK), &b);
                if (b > rest)
                        b = class_size(--c);
                push_free(s, c, s->bump);
                s->bump += b;
                rest -= b;
        }
        s->bump = s->end = NULL;
}

static void new_chunk(sl_slab_t *s) {
        chunk_t *c = mmap(NULL, SL_SLAB_CHUNK, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        if (c == MAP_FAILED)
                sl_assert(!"slab: out of memory mapping a chunk");
        retire_tail(s);
        c->next = s->chunks;
        s->chunks = c;
        s->bump = (char *)c + sizeof(*c);
        s->end = (char *)c + SL_SLAB_CHUNK;
        s->st.chunks++;
        s->st.mapped += SL_SLAB_CHUNK;
        s->st.idle += SL_SLAB_CHUNK - sizeof(*c);
}

void *sl_slab_alloc(sl_slab_t *s, size_t size) {
        size_t c, b;
        void *p;

        sl_assert(s && size);
        if (size > SL_SLAB_MAX_BLOCK) {
                large_t *l = sl_malloc(sizeof(*l) + size);
                l->prev = NULL;
                l->next = s->large;
                l->size = size;
                if (l->next)
                        l->next->prev = l;
                s->large = l;
                s->st.large++;
                s->st.live += size;
                s->st.mapped += size;
                return l + 1;
        }
        c = class_of(size, &b);
        if (s->free[c]) {
                p = s->free[c];
                s->free[c] = s->free[c]->next;
        } else {
                if ((size_t)(s->end - s->bump) < b)
                        new_chunk(s);
                p = s->bump;
                s->bump += b;
        }
        s->st.live += b;
        s->st.idle -= b;
        return p;
}

void sl_slab_free(sl_slab_t *s, void *p, size_t size) {
        size_t c, b;

        sl_assert(s && size);
        if (!p)
                return;
        if (size > SL_SLAB_MAX_BLOCK) {
                large_t *l = (large_t *)p - 1;
                sl_assert(l->size == size);
                if (l->prev)
                        l->prev->next = l->next;
                else
                        s->large = l->next;
                if (l->next)
                        l->next->prev = l->prev;
                s->st.large--;
                s->st.live -= size;
                s->st.mapped -= size;
                free(l);
                return;
        }
        c = class_of(size, &b);
        push_free(s, c, p);
        s->st.live -= b;
        s->st.idle += b;
}

void sl_slab_stats(const sl_slab_t *s, sl_slab_stats_t *st) {
        sl_assert(s && st);
        *st = s->st;
        st->tail = (size_t)(s->end - s->bump);
}
