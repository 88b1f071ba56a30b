/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idtab.h — byte strings by handle: the ids a delay partition keeps while
 * it rebuilds (op_delay.c), in about 4 bytes plus the id rounded up to 4
 * each, where a hash map entry per id costs ~60 bytes.
 *
 * A handle is a small integer the caller owns (a timerindex.h handle);
 * the table maps it to one byte string.  Lookup by content is the
 * caller's (op_delay.c finds the candidates of a hash in its index, then
 * compares their ids here).
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe.  Allocation
 * failure aborts.
 */
#ifndef SL_IDTAB_H
#define SL_IDTAB_H

#include <stddef.h>
#include <stdint.h>

/* Zero-initialised it is empty; see idtab.c for the fields. */
typedef struct sl_idtab_s {
        uint32_t *at; /* per handle: where its string lies (0: none) */
        size_t at_cap;
        uint8_t **chunk; /* the arena */
        size_t nchunk, words;
        size_t live, dead; /* bytes of strings, of holes */
        char **big;        /* long strings, one block each */
        size_t nbig, big_cap;
        uint32_t *big_free;
        size_t nbig_free;
} sl_idtab_t;

/* Gives handle h the string id[0..len) (a copy), replacing what it had. */
void sl_idtab_put(sl_idtab_t *t, uint32_t h, const void *id, size_t len);

/* Handle h's string and its length in *len, or NULL when it has none.
 * Valid until the next put or del. */
const void *sl_idtab_get(const sl_idtab_t *t, uint32_t h, size_t *len);

/* Handle h has no string any more (a no-op when it had none). */
void sl_idtab_del(sl_idtab_t *t, uint32_t h);

/* Handles below this may have a string: the bound of a walk over them. */
size_t sl_idtab_span(const sl_idtab_t *t);

/* Bytes allocated, every array included. */
size_t sl_idtab_memory(const sl_idtab_t *t);

/* Frees everything; the table is empty again. */
void sl_idtab_fini(sl_idtab_t *t);

#endif
