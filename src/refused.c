/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refused.c — the refusal memo (see refused.h).
 */
#include "refused.h"

#include <string.h>

#include "hash.h"

/* Identities hash bytes the producers chose (keys, values, timer ids), so
 * they use the seeded sl_hash() (hash.h): nobody outside the process can
 * make another record's identity collide with one that was refused.  Each
 * part is hashed alone and the part hashes are hashed together, so no
 * separator is needed between them. */

/* Fits 62 bits (the opaque keeps two flag bits); never 0. */
static uint64_t finish(uint64_t h) {
        h &= (1ULL << 62) - 1;
        return h ? h : 1;
}

uint64_t sl_refused_id(const char *topic, const void *key, size_t keylen,
                       uint64_t origin, const void *value, size_t valuelen) {
        uint64_t part[4];
        part[0] = sl_hash(topic, strlen(topic));
        part[1] = key ? sl_hash(key, keylen) : 0;
        part[2] = origin ? 1 : 2;
        part[3] = origin ? origin : value ? sl_hash(value, valuelen) : 0;
        return finish(sl_hash(part, sizeof(part)));
}

uint64_t sl_refused_origin(const void *bytes, size_t len, int64_t n) {
        /* Short ids (every input record has one: its partition) are hashed
         * once, with n, in at most SHORT bytes; longer ones are hashed
         * first, and their hash with n in SHORT + 1 bytes, a length no
         * short id reaches. */
        enum { SHORT = 56 };
        unsigned char buf[SHORT + 1] = {0};
        uint64_t h;
        memcpy(buf, &n, sizeof(n));
        if (len <= SHORT - sizeof(n)) {
                if (len)
                        memcpy(buf + sizeof(n), bytes, len);
                return finish(sl_hash(buf, sizeof(n) + len));
        }
        h = sl_hash(bytes, len);
        memcpy(buf + sizeof(n), &h, sizeof(h));
        return finish(sl_hash(buf, sizeof(buf)));
}

static sl_refused_entry_t *find(const sl_refused_t *r, uint64_t id,
                                int64_t now_ms) {
        for (int i = 0; i < r->used; i++) {
                const sl_refused_entry_t *e = &r->e[i];
                if (e->id == id && e->state != SL_REFUSED_NONE &&
                    e->expires_ms > now_ms)
                        return (sl_refused_entry_t *)e;
        }
        return NULL;
}

sl_refused_state_t sl_refused_get(const sl_refused_t *r, uint64_t id,
                                  int64_t now_ms, int *errp) {
        const sl_refused_entry_t *e;
        if (!r->used)
                return SL_REFUSED_NONE; /* the common case */
        if (!(e = find(r, id, now_ms)))
                return SL_REFUSED_NONE;
        if (errp)
                *errp = e->err;
        return e->state;
}

sl_refused_state_t sl_refused_note(sl_refused_t *r, uint64_t id, int err,
                                   int alone, int64_t now_ms) {
        sl_refused_entry_t *e = find(r, id, now_ms);
        if (!e) {
                e = &r->e[r->next];
                r->next = (r->next + 1) % SL_REFUSED_MAX;
                if (r->used < SL_REFUSED_MAX)
                        r->used++;
                e->id = id;
                e->state = SL_REFUSED_SUSPECT;
        }
        if (alone)
                e->state = SL_REFUSED_GUILTY;
        e->err = err;
        e->expires_ms = now_ms + SL_REFUSED_TTL_MS;
        return e->state;
}

void sl_refused_clear(sl_refused_t *r, uint64_t id) {
        for (int i = 0; i < r->used; i++)
                if (r->e[i].id == id)
                        r->e[i].state = SL_REFUSED_NONE;
}
