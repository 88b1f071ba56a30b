/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logpb.c — changelog records read in place (see logpb.h).
 *
 * DESIGN
 *
 * One pass over the fields, as protobuf-c's scan reads them: a tag of at
 * most 5 bytes (a first byte without tag bits is refused), then by wire
 * type a varint of at most 10 bytes, 8 or 4 bytes, or a length of at most
 * 5 bytes and that many bytes; any other wire type (groups) is refused, as
 * is anything that runs past the end.  A known field must come with its
 * own wire type.  Varint values are taken as protobuf-c takes them: the
 * low 64 bits (an int64), the low 32 (a sint32, then unzigzagged).  A bool
 * takes any wire type and is true when any byte after its tag has one of
 * its low 7 bits set, the length of a length-delimited one included.
 * An embedded message (a Header, a chunk's DebounceItem) is read the same
 * way, and anything wrong in it refuses the record that holds it.  Each
 * message's known fields and their wire types are one table (*_kinds);
 * next_known() walks a message field by field and skips unknown ones.
 */
#include "logpb.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "varint.h"

enum { WT_VARINT = 0, WT_64 = 1, WT_LEN = 2, WT_32 = 5 };

typedef struct field_s {
        uint32_t tag;
        unsigned wt;
        const uint8_t *val; /* the varint, the fixed bytes, or the data */
        size_t len;         /* of val */
        const uint8_t *raw; /* all after the tag: the data's length too */
        size_t raw_len;
} field_t;

/* The field at p[0..rem): its size, or 0 when it is malformed. */
static size_t next_field(const uint8_t *p, size_t rem, field_t *f) {
        size_t used, max, i;
        uint32_t tag;
        unsigned shift = 4;

        if (!rem || (p[0] & 0xf8) == 0)
                return 0;
        f->wt = p[0] & 7;
        tag = (p[0] & 0x7f) >> 3;
        if (p[0] & 0x80) {
                max = rem < 5 ? rem : 5;
                for (used = 1; used < max; used++) {
                        tag |= (uint32_t)(p[used] & 0x7f) << shift;
                        shift += 7;
                        if (!(p[used] & 0x80))
                                break;
                }
                if (used == max)
                        return 0;
                used++;
        } else {
                used = 1;
        }
        f->tag = tag;
        p += used;
        rem -= used;
        f->raw = p;
        switch (f->wt) {
        case WT_VARINT:
                max = rem < 10 ? rem : 10;
                for (i = 0; i < max && (p[i] & 0x80); i++)
                        ;
                if (i == max)
                        return 0;
                f->val = p;
                f->raw_len = f->len = i + 1;
                return used + f->len;
        case WT_64:
        case WT_32:
                f->len = f->wt == WT_64 ? 8 : 4;
                if (rem < f->len)
                        return 0;
                f->val = p;
                f->raw_len = f->len;
                return used + f->len;
        case WT_LEN: {
                uint64_t n = 0;
                max = rem < 5 ? rem : 5;
                for (i = 0; i < max; i++) {
                        n |= (uint64_t)(p[i] & 0x7f) << (7 * i);
                        if (!(p[i] & 0x80))
                                break;
                }
                if (i == max || n > INT32_MAX || i + 1 + n > rem)
                        return 0;
                f->val = p + i + 1;
                f->len = (size_t)n;
                f->raw_len = i + 1 + f->len;
                return used + f->raw_len;
        }
        default:
                return 0;
        }
}

static uint64_t varint_u64(const field_t *f) {
        uint64_t v = 0;
        for (size_t i = 0; i < f->len; i++)
                v |= (uint64_t)(f->val[i] & 0x7f) << (7 * i);
        return v;
}

/* A bool, of any wire type (protobuf-c checks none for a bool): true when
 * any byte after the tag has one of its low 7 bits set. */
static int field_bool(const field_t *f) {
        for (size_t i = 0; i < f->raw_len; i++)
                if (f->raw[i] & 0x7f)
                        return 1;
        return 0;
}

static int32_t varint_sint32(const field_t *f) {
        uint32_t v = (uint32_t)varint_u64(f);
        return (int32_t)((v >> 1) ^ (~(v & 1) + 1));
}

/* A string field: up to its first NUL. */
static size_t str_len(const field_t *f) {
        const void *nul = memchr(f->val, '\0', f->len);
        return nul ? (size_t)((const uint8_t *)nul - f->val) : f->len;
}

/* What each known field of a message takes (0: an unknown field). */
enum { K_UNKNOWN = 0, K_VARINT, K_LEN, K_BOOL /* any wire type */ };

static const unsigned char timer_kinds[] = {
    [1] = K_VARINT,  [2] = K_LEN,     [3] = K_LEN,     [4] = K_BOOL,
    [5] = K_VARINT,  [6] = K_LEN,     [7] = K_BOOL,    [8] = K_LEN,
    [9] = K_VARINT,  [10] = K_VARINT, [11] = K_BOOL,   [12] = K_LEN,
    [13] = K_LEN,    [14] = K_LEN,    [15] = K_VARINT, [16] = K_VARINT,
    [17] = K_VARINT, [18] = K_VARINT, [19] = K_VARINT, [20] = K_VARINT,
};
static const unsigned char header_kinds[] = {
    [1] = K_LEN,
    [2] = K_LEN,
    [3] = K_BOOL,
};
static const unsigned char dbitem_kinds[] = {
    [1] = K_LEN,    [2] = K_VARINT, [3] = K_VARINT, [4] = K_VARINT,
    [5] = K_VARINT, [6] = K_LEN,    [7] = K_LEN,
};
static const unsigned char dbchunk_kinds[] = {
    [1] = K_LEN,
};

/* 1: f is a known field of its wire type; 0: unknown (skipped); -1: a
 * known field of another wire type (protobuf-c refuses the record). */
static int field_known(const unsigned char *kinds, size_t n, const field_t *f) {
        unsigned k = f->tag < n ? kinds[f->tag] : K_UNKNOWN;
        if (k == K_UNKNOWN)
                return 0;
        if ((k == K_VARINT && f->wt != WT_VARINT) ||
            (k == K_LEN && f->wt != WT_LEN))
                return -1;
        return 1;
}

/* The message's next known field from *pos (unknown ones are skipped): 1
 * with *f set, 0 at the end, -1 when protobuf-c refuses the message. */
static int next_known(const uint8_t *buf, size_t len, size_t *pos,
                      const unsigned char *kinds, size_t n, field_t *f) {
        while (*pos < len) {
                size_t used = next_field(buf + *pos, len - *pos, f);
                int known;
                if (!used || (known = field_known(kinds, n, f)) < 0)
                        return -1;
                *pos += used;
                if (known)
                        return 1;
        }
        return 0;
}

static int read_header(sl_logpb_timer_hdr_t *h, const uint8_t *p, size_t len) {
        size_t pos = 0;
        field_t f;
        int r;
        memset(h, 0, sizeof(*h));
        h->name = "";
        while ((r = next_known(p, len, &pos, header_kinds, sizeof(header_kinds),
                               &f)) == 1) {
                switch (f.tag) {
                case 1:
                        h->name = (const char *)f.val;
                        h->name_len = str_len(&f);
                        break;
                case 2:
                        h->value = f.val;
                        h->value_len = f.len;
                        break;
                case 3:
                        h->null_value = field_bool(&f);
                        break;
                }
        }
        return r;
}

static sl_logpb_timer_hdr_t *header_slot(sl_logpb_timer_t *t) {
        if (t->n_headers == t->hdr_cap) {
                size_t cap = t->hdr_cap * 2;
                sl_logpb_timer_hdr_t *h;
                if (t->headers == t->hdr_in) {
                        h = sl_malloc(cap * sizeof(*h));
                        memcpy(h, t->hdr_in, sizeof(t->hdr_in));
                } else {
                        h = sl_realloc(t->headers, cap * sizeof(*h));
                }
                t->headers = h;
                t->hdr_cap = cap;
        }
        return &t->headers[t->n_headers++];
}

int sl_logpb_timer_read(sl_logpb_timer_t *t, const void *buf, size_t len) {
        size_t pos = 0;
        field_t f;
        int r;

        memset(t, 0, offsetof(sl_logpb_timer_t, hdr_in));
        t->target_topic = t->every = t->cron = t->tz = "";
        t->headers = t->hdr_in;
        t->hdr_cap = SL_TIMERPB_HDRS;
        while ((r = next_known(buf, len, &pos, timer_kinds, sizeof(timer_kinds),
                               &f)) == 1) {
                switch (f.tag) {
                case 1:
                        t->due_ms = (int64_t)varint_u64(&f);
                        break;
                case 2:
                        t->target_topic = (const char *)f.val;
                        t->target_topic_len = str_len(&f);
                        break;
                case 3:
                        t->target_key = f.val;
                        t->target_key_len = f.len;
                        break;
                case 4:
                        t->has_target_key = field_bool(&f);
                        break;
                case 5:
                        t->target_partition = varint_sint32(&f);
                        break;
                case 6:
                        t->payload = f.val;
                        t->payload_len = f.len;
                        break;
                case 7:
                        t->null_payload = field_bool(&f);
                        break;
                case 8:
                        if (read_header(header_slot(t), f.val, f.len) < 0)
                                return -1;
                        break;
                case 9:
                        t->seq = (int64_t)varint_u64(&f);
                        break;
                case 10:
                        t->created_ms = (int64_t)varint_u64(&f);
                        break;
                case 11:
                        t->null_target_key = field_bool(&f);
                        break;
                case 12:
                        t->every = (const char *)f.val;
                        t->every_len = str_len(&f);
                        break;
                case 13:
                        t->cron = (const char *)f.val;
                        t->cron_len = str_len(&f);
                        break;
                case 14:
                        t->tz = (const char *)f.val;
                        t->tz_len = str_len(&f);
                        break;
                case 15:
                        t->start_ms = (int64_t)varint_u64(&f);
                        break;
                case 16:
                        t->until_ms = (int64_t)varint_u64(&f);
                        break;
                case 17:
                        t->count = (int64_t)varint_u64(&f);
                        break;
                case 18:
                        t->catch_up = (int32_t)(uint32_t)varint_u64(&f);
                        break;
                case 19:
                        t->fired = (int64_t)varint_u64(&f);
                        break;
                case 20:
                        t->last_fired_ms = (int64_t)varint_u64(&f);
                        break;
                }
        }
        return r;
}

void sl_logpb_timer_free(sl_logpb_timer_t *t) {
        if (t->headers && t->headers != t->hdr_in)
                free(t->headers);
        t->headers = t->hdr_in;
        t->hdr_cap = SL_TIMERPB_HDRS;
        t->n_headers = 0;
}

int sl_logpb_dbitem_read(sl_logpb_dbitem_t *it, const void *buf, size_t len) {
        sl_logpb_timer_hdr_t h;
        size_t pos = 0;
        field_t f;
        int r;

        memset(it, 0, sizeof(*it));
        while ((r = next_known(buf, len, &pos, dbitem_kinds,
                               sizeof(dbitem_kinds), &f)) == 1) {
                switch (f.tag) {
                case 1:
                        it->payload = f.len ? f.val : NULL;
                        it->payload_len = f.len;
                        break;
                case 2:
                        it->first_seen_ms = (int64_t)varint_u64(&f);
                        break;
                case 3:
                        it->last_update_ms = (int64_t)varint_u64(&f);
                        break;
                case 4:
                        it->seq = (int64_t)varint_u64(&f);
                        break;
                case 5:
                        it->group_opened_ms = (int64_t)varint_u64(&f);
                        break;
                case 6:
                        if (read_header(&h, f.val, f.len) < 0)
                                return -1;
                        it->n_headers++;
                        break;
                case 7:
                        it->id = f.len ? f.val : NULL;
                        it->id_len = f.len;
                        break;
                }
        }
        return r;
}

long sl_logpb_dbchunk_read(const void *buf, size_t len,
                           sl_logpb_dbitem_t *items, size_t cap, size_t *rest) {
        sl_logpb_dbitem_t it;
        size_t pos = 0, n = 0;
        field_t f;
        int r;
        if (rest)
                *rest = len;
        while ((r = next_known(buf, len, &pos, dbchunk_kinds,
                               sizeof(dbchunk_kinds), &f)) == 1) {
                if (sl_logpb_dbitem_read(n < cap ? &items[n] : &it, f.val,
                                         f.len) < 0)
                        return -1;
                if (++n == cap && rest)
                        *rest = pos;
        }
        return r < 0 ? -1 : (long)n;
}

int sl_logpb_dbchunk_next(const void *buf, size_t len, size_t *pos,
                          sl_logpb_dbitem_t *it) {
        field_t f;
        if (next_known(buf, len, pos, dbchunk_kinds, sizeof(dbchunk_kinds),
                       &f) != 1 ||
            sl_logpb_dbitem_read(it, f.val, f.len) < 0)
                return 0;
        return 1;
}

size_t sl_logpb_index_put(uint8_t *buf, int64_t due_ms, int64_t offset) {
        size_t n = 0;
        buf[n++] = 0xff;
        buf[n++] = 1;
        n += sl_varint_put(buf + n, (uint64_t)due_ms);
        n += sl_varint_put(buf + n, (uint64_t)offset);
        return n;
}

int sl_logpb_index_read(const void *buf, size_t len, int64_t *due_ms,
                        int64_t *offset) {
        const uint8_t *p = buf, *end = p + len;
        uint64_t d, o;
        if (len < 2 || p[0] != 0xff || p[1] != 1)
                return -1;
        p += 2;
        if (sl_varint_get(&p, end, &d) || sl_varint_get(&p, end, &o) ||
            d > (uint64_t)INT64_MAX || o > (uint64_t)INT64_MAX)
                return -1;
        *due_ms = (int64_t)d;
        *offset = (int64_t)o;
        return 0;
}

uint8_t *sl_logpb_gone_put(const sl_logpb_gone_t *g, size_t n, size_t *len) {
        uint8_t *buf = sl_malloc(12 + 20 * n);
        size_t k = 0;
        buf[k++] = 0xfe;
        buf[k++] = 1;
        k += sl_varint_put(buf + k, (uint64_t)n);
        for (size_t i = 0; i < n; i++) {
                k += sl_varint_put(
                    buf + k,
                    (uint64_t)(i ? g[i].loc - g[i - 1].loc : g[i].loc));
                k += sl_varint_put(buf + k, (uint64_t)g[i].due_ms);
        }
        *len = k;
        return buf;
}

int sl_logpb_gone_read(const void *buf, size_t len, sl_logpb_gone_t **g,
                       size_t *n) {
        const uint8_t *p = buf, *end = p + len;
        uint64_t cnt, d, due, at = 0;
        sl_logpb_gone_t *o = NULL;
        *g = NULL;
        *n = 0;
        if (len < 2 || p[0] != 0xfe || p[1] != 1)
                return -1;
        p += 2;
        /* Each timer takes two bytes at least. */
        if (sl_varint_get(&p, end, &cnt) || cnt > SL_LOGPB_GONE_MAX ||
            cnt > (uint64_t)(end - p) / 2)
                return -1;
        if (cnt)
                o = sl_malloc(cnt * sizeof(*o));
        for (uint64_t i = 0; i < cnt; i++) {
                if (sl_varint_get(&p, end, &d) || (i && !d) ||
                    d > (uint64_t)INT64_MAX - at ||
                    sl_varint_get(&p, end, &due) || due > (uint64_t)INT64_MAX) {
                        free(o);
                        return -1;
                }
                at += d;
                o[i].loc = (int64_t)at;
                o[i].due_ms = (int64_t)due;
        }
        if (p != end) {
                free(o);
                return -1;
        }
        *g = o;
        *n = (size_t)cnt;
        return 0;
}
