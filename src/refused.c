/*
 * refused.c — the refusal memo (see refused.h).
 */
#include "refused.h"

#include <string.h>

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
        const unsigned char *b = p;
        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * FNV_PRIME;
        return h;
}

static uint64_t fnv_sep(uint64_t h, unsigned char sep) {
        return (h ^ sep) * FNV_PRIME;
}

static uint64_t finish(uint64_t h) {
        /* A final mix so nearby inputs spread over the 62 bits. */
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h &= (1ULL << 62) - 1;
        return h ? h : 1;
}

uint64_t sl_refused_id(const char *topic, const void *key, size_t keylen,
                       uint64_t origin, const void *value, size_t valuelen) {
        uint64_t h = fnv(FNV_OFFSET, topic, strlen(topic));
        h = fnv_sep(h, 0xff);
        if (key)
                h = fnv(h, key, keylen);
        h = fnv_sep(h, 0xfe);
        if (origin)
                h = fnv(h, &origin, sizeof(origin));
        else if (value)
                h = fnv(h, value, valuelen);
        return finish(h);
}

uint64_t sl_refused_origin(const void *bytes, size_t len, int64_t n) {
        uint64_t h = fnv(FNV_OFFSET, bytes, len);
        h = fnv_sep(h, 0xfd);
        h = fnv(h, &n, sizeof(n));
        return finish(h);
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
