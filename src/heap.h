/* SPDX-License-Identifier: Apache-2.0 */
/*
 * heap.h — one intrusive binary min-heap, generated for each element type.
 *
 * DESIGN
 *
 * sluice keeps large sets of things ordered by a time: the pending timers
 * of a delay partition (millions, fired at more than 250k a second), the
 * keys of a throttle backlog by their next action, by their oldest offset
 * and by eviction priority, the open windows of a debounce partition by
 * deadline.  Each needs the earliest element in O(1), and insert, remove
 * and "its time changed" in O(log n) without searching for the element.
 *
 * The heap is intrusive, as libuv's heap-inl.h is: it allocates nothing
 * per element, and each element carries its own position, so removing or
 * re-sorting an element needs no search.  Unlike libuv's, whose node is
 * three pointers forming a tree (24 bytes per element), this one is an
 * array of element pointers with the position stored in the element as a
 * 32-bit index: 8 bytes of array and 4 in the element.  At millions of
 * timers that difference is the budget (at most 64 bytes per pending timer
 * beyond its key and payload; at most 32 per buffered throttle message),
 * and an array is also what the cache likes when a heap is sifted.
 *
 * The comparison must inline: a generic heap that calls a comparison
 * through a function pointer pays a call per level of every sift, on the
 * path that fires timers and takes in debounce items.  So the heap is a
 * macro that writes typed `static` functions for one element type, one
 * position field and one "fires before" predicate:
 *
 *   #define TIMER_IDX(t)       ((t)->heap_idx)
 *   #define TIMER_LESS(a, b)   ((a)->due < (b)->due)
 *   SL_HEAP_DEFINE(timer_heap, my_timer_t, TIMER_IDX, TIMER_LESS)
 *
 * gives the type timer_heap_t and timer_heap_init, _fini, _count, _top,
 * _at, _push, _push_last, _update, _replace, _remove, _put, _discard,
 * _pop, _clear, _heapify and _verify.  IDX(e) must be an lvalue of type
 * uint32_t; LESS(a, b) is 1 when a must come out before b, a strict order (ties
 * are the user's to break, e.g. by an arrival sequence number, since a binary
 * heap is not stable).  An element may sit in several heaps at once through
 * several position fields (the throttle backlog's keys sit in three).
 *
 * Positions: an element in the heap has IDX(e) == its index in the array;
 * _remove and _pop set it to SL_HEAP_NONE, so a user who sets IDX to
 * SL_HEAP_NONE when it makes the element can ask sl_heap_in() whether it
 * is in.  A heap holds at most SL_HEAP_MAX elements.
 *
 * Memory: the array starts at SL_HEAP_MIN_CAP slots, doubles when full and
 * halves when a removal leaves it less than a quarter full, so a heap that
 * once held a burst gives the memory back.  Allocation failure aborts
 * (util.h).
 *
 * Pure: no Kafka, no libuv, not thread-safe.
 */
#ifndef SL_HEAP_H
#define SL_HEAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util.h"

/* The position of an element that is in no heap. */
#define SL_HEAP_NONE UINT32_MAX
/* Most elements a heap holds (positions 0 .. SL_HEAP_MAX - 1). */
#define SL_HEAP_MAX UINT32_MAX
/* Slots of a heap's array when it first grows, and the least it shrinks
 * to. */
#define SL_HEAP_MIN_CAP 16

/* 1 when the element whose position field is idx is in a heap (for users
 * who set it to SL_HEAP_NONE when the element is made). */
static inline int sl_heap_in(uint32_t idx) {
        return idx != SL_HEAP_NONE;
}

/* The next capacity of an array of cap slots that is full. */
static inline uint32_t sl_heap_grown(uint32_t cap) {
        if (!cap)
                return SL_HEAP_MIN_CAP;
        return cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
}

#define SL_HEAP_DEFINE(name, type, IDX, LESS)                                  \
        typedef struct name##_s {                                              \
                type **a; /* a[0] comes out first */                           \
                uint32_t n, cap;                                               \
        } name##_t;                                                            \
                                                                               \
        __attribute__((unused)) static inline void name##_init(name##_t *h) {  \
                h->a = NULL;                                                   \
                h->n = h->cap = 0;                                             \
        }                                                                      \
                                                                               \
        /* Frees the array (the elements are the caller's). */                 \
        __attribute__((unused)) static inline void name##_fini(name##_t *h) {  \
                free(h->a);                                                    \
                name##_init(h);                                                \
        }                                                                      \
                                                                               \
        __attribute__((unused)) static inline size_t name##_count(             \
            const name##_t *h) {                                               \
                return h->n;                                                   \
        }                                                                      \
                                                                               \
        /* The element that comes out first, or NULL when empty. */            \
        __attribute__((unused)) static inline type *name##_top(                \
            const name##_t *h) {                                               \
                return h->n ? h->a[0] : NULL;                                  \
        }                                                                      \
                                                                               \
        /* The element at position i < count (in no particular order). */      \
        __attribute__((unused)) static inline type *name##_at(                 \
            const name##_t *h, size_t i) {                                     \
                return h->a[i];                                                \
        }                                                                      \
                                                                               \
        static inline void name##_set(name##_t *h, uint32_t i, type *e) {      \
                h->a[i] = e;                                                   \
                IDX(e) = i;                                                    \
        }                                                                      \
                                                                               \
        /* Moves the element at i up while it comes out before its parent;     \
         * returns where it ends. */                                           \
        __attribute__((unused)) static uint32_t name##_sift_up(name##_t *h,    \
                                                               uint32_t i) {   \
                type *e = h->a[i];                                             \
                while (i > 0) {                                                \
                        uint32_t p = (i - 1) / 2;                              \
                        if (!(LESS(e, h->a[p])))                               \
                                break;                                         \
                        name##_set(h, i, h->a[p]);                             \
                        i = p;                                                 \
                }                                                              \
                name##_set(h, i, e);                                           \
                return i;                                                      \
        }                                                                      \
                                                                               \
        /* Moves the element at i down while a child comes out before it. */   \
        __attribute__((unused)) static void name##_sift_down(name##_t *h,      \
                                                             uint32_t i) {     \
                type *e = h->a[i];                                             \
                for (;;) {                                                     \
                        size_t c = 2 * (size_t)i + 1;                          \
                        if (c >= h->n)                                         \
                                break;                                         \
                        if (c + 1 < h->n && (LESS(h->a[c + 1], h->a[c])))      \
                                c++;                                           \
                        if (!(LESS(h->a[c], e)))                               \
                                break;                                         \
                        name##_set(h, i, h->a[c]);                             \
                        i = (uint32_t)c;                                       \
                }                                                              \
                name##_set(h, i, e);                                           \
        }                                                                      \
                                                                               \
        static inline void name##_reserve_one(name##_t *h) {                   \
                sl_assert(h->n < SL_HEAP_MAX);                                 \
                if (h->n == h->cap) {                                          \
                        h->cap = sl_heap_grown(h->cap);                        \
                        h->a = sl_realloc(h->a, h->cap * sizeof(*h->a));       \
                }                                                              \
        }                                                                      \
                                                                               \
        static inline void name##_maybe_shrink(name##_t *h) {                  \
                if (h->cap > SL_HEAP_MIN_CAP && h->n < h->cap / 4) {           \
                        h->cap /= 2;                                           \
                        h->a = sl_realloc(h->a, h->cap * sizeof(*h->a));       \
                }                                                              \
        }                                                                      \
                                                                               \
        /* Inserts e (not in this heap). */                                    \
        __attribute__((unused)) static inline void name##_push(name##_t *h,    \
                                                               type *e) {      \
                name##_reserve_one(h);                                         \
                h->a[h->n] = e;                                                \
                name##_sift_up(h, h->n++);                                     \
        }                                                                      \
                                                                               \
        /* Inserts e, which the caller knows comes out after (or with) every   \
         * element already in (it is at or past a known maximum): at the end,  \
         * without comparing it with a parent that may have left the cache     \
         * long ago.  Putting an element there that comes out earlier breaks   \
         * the heap (_verify says so). */                                      \
        __attribute__((unused)) static inline void name##_push_last(           \
            name##_t *h, type *e) {                                            \
                name##_reserve_one(h);                                         \
                name##_set(h, h->n++, e);                                      \
        }                                                                      \
                                                                               \
        /* Restores order after the sort key of e (in this heap) changed. */   \
        __attribute__((unused)) static inline void name##_update(name##_t *h,  \
                                                                 type *e) {    \
                uint32_t i = IDX(e);                                           \
                if (name##_sift_up(h, i) == i)                                 \
                        name##_sift_down(h, i);                                \
        }                                                                      \
                                                                               \
        /* Puts e (in no heap) where old (in this heap) is, and takes old      \
         * out (its position becomes SL_HEAP_NONE), then restores order: an    \
         * element replaced by its new version without a removal and a push.   \
         */                                                                    \
        __attribute__((unused)) static inline void name##_replace(             \
            name##_t *h, type *old, type *e) {                                 \
                uint32_t i = IDX(old);                                         \
                IDX(old) = SL_HEAP_NONE;                                       \
                name##_set(h, i, e);                                           \
                if (name##_sift_up(h, i) == i)                                 \
                        name##_sift_down(h, i);                                \
        }                                                                      \
                                                                               \
        /* Takes e (in this heap) out; its position becomes SL_HEAP_NONE. */   \
        __attribute__((unused)) static inline void name##_remove(name##_t *h,  \
                                                                 type *e) {    \
                uint32_t i = IDX(e);                                           \
                type *last = h->a[--h->n];                                     \
                IDX(e) = SL_HEAP_NONE;                                         \
                if (i < h->n) {                                                \
                        name##_set(h, i, last);                                \
                        if (name##_sift_up(h, i) == i)                         \
                                name##_sift_down(h, i);                        \
                }                                                              \
                name##_maybe_shrink(h);                                        \
        }                                                                      \
                                                                               \
        /* Inserts e, or restores order when e is in already: for users whose  \
         * elements start at SL_HEAP_NONE. */                                  \
        __attribute__((unused)) static inline void name##_put(name##_t *h,     \
                                                              type *e) {       \
                if (sl_heap_in(IDX(e)))                                        \
                        name##_update(h, e);                                   \
                else                                                           \
                        name##_push(h, e);                                     \
        }                                                                      \
                                                                               \
        /* Takes e out if it is in: for users whose elements start at          \
         * SL_HEAP_NONE. */                                                    \
        __attribute__((unused)) static inline void name##_discard(name##_t *h, \
                                                                  type *e) {   \
                if (sl_heap_in(IDX(e)))                                        \
                        name##_remove(h, e);                                   \
        }                                                                      \
                                                                               \
        /* Takes the first element out and returns it, or NULL when empty. */  \
        __attribute__((unused)) static inline type *name##_pop(name##_t *h) {  \
                type *e = name##_top(h);                                       \
                if (e)                                                         \
                        name##_remove(h, e);                                   \
                return e;                                                      \
        }                                                                      \
                                                                               \
        /* Forgets every element (their positions are left as they were)       \
         * and shrinks the array as one removal would. */                      \
        __attribute__((unused)) static inline void name##_clear(name##_t *h) { \
                h->n = 0;                                                      \
                name##_maybe_shrink(h);                                        \
        }                                                                      \
                                                                               \
        /* Restores order in O(n) after the sort keys of many elements         \
         * changed in place (cheaper than an _update each when they are a      \
         * good part of the heap). */                                          \
        __attribute__((unused)) static void name##_heapify(name##_t *h) {      \
                for (uint32_t i = h->n / 2; i-- > 0;)                          \
                        name##_sift_down(h, i);                                \
        }                                                                      \
                                                                               \
        /* 0 when every element sits where its position says and none comes    \
         * out before its parent; else -1.  O(n), for tests. */                \
        __attribute__((unused)) static int name##_verify(const name##_t *h) {  \
                if (h->n > h->cap || (h->cap && !h->a))                        \
                        return -1;                                             \
                for (uint32_t i = 0; i < h->n; i++) {                          \
                        if (IDX(h->a[i]) != i)                                 \
                                return -1;                                     \
                        if (i && (LESS(h->a[i], h->a[(i - 1) / 2])))           \
                                return -1;                                     \
                }                                                              \
                return 0;                                                      \
        }

#endif
