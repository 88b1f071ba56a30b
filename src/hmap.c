/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hmap.c — the untyped part of the intrusive hash map (see hmap.h): the
 * bucket array.  The lookups, insertions and resizes, which compare and
 * hash keys of one entry type, are the typed functions SL_HMAP_DEFINE
 * writes.
 */
#include "hmap.h"

#include <string.h>

static size_t pow2_at_least(size_t n) {
        size_t p = 1;
        while (p < n)
                p <<= 1;
        return p;
}

void sl_hmap_init(sl_hmap_t *m, size_t min_buckets, unsigned max_load,
                  unsigned fast_below) {
        sl_assert(m && min_buckets <= UINT32_MAX / 2 &&
                  max_load <= UINT16_MAX && fast_below <= UINT16_MAX);
        m->nbuckets = pow2_at_least(min_buckets ? min_buckets : 1);
        m->min_buckets = (uint32_t)m->nbuckets;
        m->max_load = (uint16_t)max_load;
        m->fast_below = (uint16_t)fast_below;
        m->count = 0;
        m->buckets = sl_calloc(m->nbuckets, sizeof(*m->buckets));
}

void sl_hmap_fini(sl_hmap_t *m) {
        if (!m)
                return;
        free(m->buckets);
        m->buckets = NULL;
        m->nbuckets = 0;
        m->count = 0;
}

void sl_hmap_clear(sl_hmap_t *m) {
        sl_assert(m);
        memset(m->buckets, 0, m->nbuckets * sizeof(*m->buckets));
        m->count = 0;
}

sl_hmap_link_t **sl_hmap_widen(sl_hmap_t *m, size_t nbuckets) {
        size_t oldn = m->nbuckets;

        sl_assert(nbuckets > oldn && !(nbuckets & (nbuckets - 1)));
        m->buckets = sl_realloc(m->buckets, nbuckets * sizeof(*m->buckets));
        memset(m->buckets + oldn, 0, (nbuckets - oldn) * sizeof(*m->buckets));
        m->nbuckets = nbuckets;
        return m->buckets;
}

void sl_hmap_fold(sl_hmap_t *m, size_t nbuckets) {
        sl_hmap_link_t **b = m->buckets;

        sl_assert(nbuckets && nbuckets < m->nbuckets &&
                  !(nbuckets & (nbuckets - 1)));
        for (size_t i = nbuckets; i < m->nbuckets; i++) {
                sl_hmap_link_t *l = b[i], *next;
                for (; l; l = next) {
                        sl_hmap_link_t **h = &b[i & (nbuckets - 1)];
                        next = l->next;
                        l->next = *h;
                        *h = l;
                }
        }
        m->buckets = sl_realloc(b, nbuckets * sizeof(*b));
        m->nbuckets = nbuckets;
}
