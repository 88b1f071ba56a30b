/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recsize.c — the size of a record in a batch of its own (see recsize.h).
 */
#include "recsize.h"

#include "varint.h"

/* Kafka's varints are zig-zag: n >= 0 is written as 2n. */
static size_t zz_len(int64_t n) {
        return sl_varint_len(((uint64_t)n << 1) ^ (uint64_t)(n >> 63));
}

/* A length then the bytes; -1: a null, its length alone. */
static size_t field(int64_t len) {
        return len < 0 ? zz_len(-1) : zz_len(len) + (size_t)len;
}

size_t sl_recsize_header(size_t namelen, int64_t valuelen) {
        return field((int64_t)namelen) + field(valuelen);
}

size_t sl_recsize_batch(int64_t keylen, int64_t valuelen, size_t hdr_cnt,
                        size_t hdr_bytes) {
        /* attributes, timestamp delta 0, offset delta 0 */
        size_t body = 1 + zz_len(0) + zz_len(0);
        body += field(keylen) + field(valuelen);
        body += zz_len((int64_t)hdr_cnt) + hdr_bytes;
        return SL_RECSIZE_BATCH_OVERHEAD + zz_len((int64_t)body) + body;
}

size_t sl_recsize_copy(const sl_recsize_parts_t *z, const sl_recsize_cut_t *c) {
        return sl_recsize_batch(
            c->key, c->value, z->own_cnt + c->hdrs + (c->cut ? 1 : 0),
            (c->trim ? z->own_trimmed : z->own_bytes) + z->src_prefix[c->hdrs] +
                (c->cut ? sl_recsize_header(10, SL_RECSIZE_CUT_HDR_MAX) : 0));
}

static int fits(const sl_recsize_parts_t *z, const sl_recsize_cut_t *c,
                int64_t max) {
        return (int64_t)sl_recsize_copy(z, c) <= max;
}

int sl_recsize_cut(const sl_recsize_parts_t *z, int64_t keylen,
                   int64_t valuelen, int64_t max, sl_recsize_cut_t *c) {
        c->key = keylen;
        c->value = valuelen;
        c->hdrs = z->src_cnt;
        c->trim = 0;
        c->cut = 0;
        if (fits(z, c, max))
                return 0;
        c->cut = 1;
        if (valuelen > 0) {
                /* The longest prefix of the value that fits, if any. */
                int64_t lo = 0, hi = valuelen;
                c->value = 0;
                if (fits(z, c, max)) {
                        while (lo < hi) {
                                int64_t mid = lo + (hi - lo + 1) / 2;
                                c->value = mid;
                                if (fits(z, c, max))
                                        lo = mid;
                                else
                                        hi = mid - 1;
                        }
                        c->value = lo;
                        return 0;
                }
        }
        while (c->hdrs > 0 && !fits(z, c, max))
                c->hdrs--;
        if (fits(z, c, max))
                return 0;
        if (keylen > SL_RECSIZE_CUT_KEY)
                c->key = SL_RECSIZE_CUT_KEY;
        if (!fits(z, c, max))
                c->trim = 1;
        /* Room again for original headers, with a shorter key or values. */
        while (c->hdrs < z->src_cnt) {
                c->hdrs++;
                if (!fits(z, c, max)) {
                        c->hdrs--;
                        break;
                }
        }
        return fits(z, c, max) ? 0 : -1;
}
