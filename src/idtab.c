/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idtab.c — byte strings by handle (see idtab.h).
 *
 * DESIGN
 *
 * A delay partition with payloads in Kafka rebuilds its index from the
 * changelog and must tell ids apart exactly, not by their 64-bit hashes,
 * so for the length of a rebuild it keeps every pending timer's id: 10M
 * ids at 10M pending.  A map entry each (link, hash, handle, length, then
 * the id, one malloc) was ~60 bytes with its bucket for a 16-byte id and
 * made most of a 10M rebuild's peak (bench/NOTES.md).  Here:
 *
 *   at[h]    uint32_t: 0 (none), 1 + the arena word where h's string
 *            starts, or BIG | its slot in big[]
 *   arena    chunks of CHUNK bytes, filled in order: per string a length
 *            byte then the bytes, rounded up to 4 (a string never spans
 *            two chunks; a chunk's unused tail counts as a hole)
 *   big[]    strings longer than SMALL bytes, or past the arena's 2^31
 *            words (8 GiB): a uint32_t length then the bytes, one block
 *            each
 *
 * 4 + 20 = 24 bytes for a 16-byte id.  A string deleted or replaced
 * leaves a hole in the arena; when the holes outweigh the strings (and
 * make at least PACK_MIN bytes), the strings are copied into a new arena
 * in handle order and the old one is freed, so memory stays within about
 * twice the strings, at the cost of one copy per halving.
 *
 * at[] grows by doubling: handles are dense enough (timerindex.c carves
 * its lowest chunks first) that the array is ~4 bytes a handle.
 */
#include "idtab.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CHUNK    ((size_t)1 << 20)
#define SMALL    255
#define BIG      ((uint32_t)1 << 31)
#define WORDS    ((size_t)BIG - 1) /* the arena's size, in words */
#define PACK_MIN (16 * CHUNK)

static size_t rec_bytes(size_t len) {
        return (1 + len + 3) & ~(size_t)3;
}

const void *sl_idtab_get(const sl_idtab_t *t, uint32_t h, size_t *len) {
        uint32_t a = h < t->at_cap ? t->at[h] : 0;
        const uint8_t *p;
        size_t off;
        if (!a)
                return NULL;
        if (a & BIG) {
                uint32_t n;
                p = (const uint8_t *)t->big[a & ~BIG];
                memcpy(&n, p, sizeof(n));
                *len = n;
                return p + sizeof(n);
        }
        off = (size_t)(a - 1) * 4;
        p = t->chunk[off / CHUNK] + off % CHUNK;
        *len = p[0];
        return p + 1;
}

/* Appends a short string to the arena: its at[] value. */
static uint32_t arena_put(sl_idtab_t *t, const void *s, size_t len) {
        size_t need = rec_bytes(len), off = t->words * 4;
        uint8_t *p;
        if (off / CHUNK >= t->nchunk || off % CHUNK + need > CHUNK) {
                if (off / CHUNK < t->nchunk) { /* skip the chunk's tail */
                        t->dead += CHUNK - off % CHUNK;
                        off = (off / CHUNK + 1) * CHUNK;
                }
                t->chunk =
                    sl_realloc(t->chunk, (t->nchunk + 1) * sizeof(*t->chunk));
                t->chunk[t->nchunk++] = sl_malloc(CHUNK);
        }
        p = t->chunk[off / CHUNK] + off % CHUNK;
        p[0] = (uint8_t)len;
        memcpy(p + 1, s, len);
        t->words = (off + need) / 4;
        t->live += need;
        return (uint32_t)(off / 4 + 1);
}

/* Copies the arena's strings into a new one, leaving the holes. */
static void pack(sl_idtab_t *t) {
        sl_idtab_t old = *t;
        t->chunk = NULL;
        t->nchunk = t->words = t->live = t->dead = 0;
        for (size_t h = 0; h < old.at_cap; h++) {
                const void *s;
                size_t len;
                if (!old.at[h] || (old.at[h] & BIG))
                        continue;
                s = sl_idtab_get(&old, (uint32_t)h, &len);
                t->at[h] = arena_put(t, s, len);
        }
        for (size_t i = 0; i < old.nchunk; i++)
                free(old.chunk[i]);
        free(old.chunk);
}

void sl_idtab_del(sl_idtab_t *t, uint32_t h) {
        size_t len;
        uint32_t a;
        if (!sl_idtab_get(t, h, &len))
                return;
        a = t->at[h];
        t->at[h] = 0;
        if (a & BIG) {
                free(t->big[a & ~BIG]);
                t->big_free[t->nbig_free++] = a & ~BIG;
                return;
        }
        t->live -= rec_bytes(len);
        t->dead += rec_bytes(len);
        if (t->dead > t->live && t->dead >= PACK_MIN)
                pack(t);
}

void sl_idtab_put(sl_idtab_t *t, uint32_t h, const void *id, size_t len) {
        uint32_t n = (uint32_t)len, slot;
        char *p;
        sl_idtab_del(t, h);
        if (h >= t->at_cap) {
                size_t cap = SL_MAX(t->at_cap * 2, (size_t)h + 1024);
                t->at = sl_realloc(t->at, cap * sizeof(*t->at));
                memset(t->at + t->at_cap, 0,
                       (cap - t->at_cap) * sizeof(*t->at));
                t->at_cap = cap;
        }
        if (len <= SMALL && t->words + (rec_bytes(len) + CHUNK) / 4 < WORDS) {
                t->at[h] = arena_put(t, id, len);
                return;
        }
        p = sl_malloc(sizeof(n) + len);
        memcpy(p, &n, sizeof(n));
        memcpy(p + sizeof(n), id, len);
        if (t->nbig_free) {
                slot = t->big_free[--t->nbig_free];
        } else {
                if (t->nbig == t->big_cap) {
                        t->big_cap = SL_MAX(t->big_cap * 2, 64);
                        t->big =
                            sl_realloc(t->big, t->big_cap * sizeof(*t->big));
                        t->big_free = sl_realloc(
                            t->big_free, t->big_cap * sizeof(*t->big_free));
                }
                slot = (uint32_t)t->nbig++;
        }
        t->big[slot] = p;
        t->at[h] = BIG | slot;
}

size_t sl_idtab_span(const sl_idtab_t *t) {
        return t->at_cap;
}

size_t sl_idtab_memory(const sl_idtab_t *t) {
        size_t n = t->at_cap * sizeof(*t->at) + t->nchunk * CHUNK +
                   t->nchunk * sizeof(*t->chunk) +
                   t->big_cap * (sizeof(*t->big) + sizeof(*t->big_free));
        for (size_t h = 0; h < t->at_cap; h++)
                if (t->at[h] & BIG) {
                        size_t len;
                        sl_idtab_get(t, (uint32_t)h, &len);
                        n += sizeof(uint32_t) + len;
                }
        return n;
}

void sl_idtab_fini(sl_idtab_t *t) {
        for (size_t i = 0; i < t->nchunk; i++)
                free(t->chunk[i]);
        for (size_t h = 0; h < t->at_cap; h++)
                if (t->at[h] & BIG)
                        free(t->big[t->at[h] & ~BIG]);
        free(t->chunk);
        free(t->at);
        free(t->big);
        free(t->big_free);
        memset(t, 0, sizeof(*t));
}
