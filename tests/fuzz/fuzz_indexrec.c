/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_indexrec.c — sl_logpb_index_read() (a delay changelog's index
 * record with payload_topic set: anyone who writes the changelog chooses
 * its bytes) against a reference reader written from logpb.h's contract,
 * and the round trip through sl_logpb_index_put().
 *
 * Input: the bytes are the changelog value as they are.  The first 16
 * bytes (missing bytes read as 0) are also taken as two little-endian
 * int64s, cut to 0..INT64_MAX, for the round trip from a due time and an
 * offset.
 *
 * Checked: an accepted value is an index record (sl_logpb_is_index) and
 * none is a Timer record (neither protobuf-c nor sl_logpb_timer_read()
 * takes a value beginning with 0xff, which is how a rebuild tells the two
 * kinds apart); the fields read are the reference's, both in range;
 * sl_logpb_index_put() of them writes at most SL_LOGPB_INDEX_MAX bytes,
 * the shortest form, which reads back the same, and which reads as
 * nothing once cut short.  The same bytes as a gone list
 * (sl_logpb_gone_read): an accepted one holds at most SL_LOGPB_GONE_MAX
 * timers, offsets ascending and distinct, fields in range, and
 * sl_logpb_gone_put() of them reads back the same; no value is both kinds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logpb.h"
#include "sluice.pb-c.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference: 0xff, version 1, then two protobuf varints (at most 10
 * bytes, bits past 64 dropped), each at most INT64_MAX; bytes after them
 * are not looked at. */
static int ref_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v) {
        uint64_t x = 0;
        for (size_t i = 0; i < 10 && *pos + i < len; i++) {
                uint8_t c = p[*pos + i];
                if (i < 9)
                        x |= (uint64_t)(c & 0x7f) << (7 * i);
                else
                        x |= (uint64_t)(c & 0x01) << 63;
                if (!(c & 0x80)) {
                        *pos += i + 1;
                        *v = x;
                        return 0;
                }
        }
        return -1;
}

static int ref_read(const uint8_t *p, size_t len, int64_t *due, int64_t *off) {
        size_t pos = 2;
        uint64_t d, o;
        if (len < 2 || p[0] != 0xff || p[1] != 1 ||
            ref_varint(p, len, &pos, &d) || ref_varint(p, len, &pos, &o) ||
            d > (uint64_t)INT64_MAX || o > (uint64_t)INT64_MAX)
                return -1;
        *due = (int64_t)d;
        *off = (int64_t)o;
        return 0;
}

/* Bytes of the shortest varint of v. */
static size_t varint_len(uint64_t v) {
        size_t n = 1;
        for (; v >= 0x80; v >>= 7)
                n++;
        return n;
}

/* put(due, off), read back whole and cut short. */
static void round_trip(int64_t due, int64_t off) {
        uint8_t buf[SL_LOGPB_INDEX_MAX + 8];
        int64_t d = -1, o = -1;
        size_t n;

        memset(buf, 0xa5, sizeof(buf));
        n = sl_logpb_index_put(buf, due, off);
        CHECK(n <= SL_LOGPB_INDEX_MAX);
        CHECK(n == 2 + varint_len((uint64_t)due) + varint_len((uint64_t)off));
        for (size_t i = n; i < sizeof(buf); i++)
                CHECK(buf[i] == 0xa5); /* nothing written past n */
        CHECK(sl_logpb_is_index(buf, n));
        CHECK(sl_logpb_index_read(buf, n, &d, &o) == 0);
        CHECK(d == due && o == off);
        for (size_t cut = 0; cut < n; cut++)
                CHECK(sl_logpb_index_read(buf, cut, &d, &o) == -1);
}

static int64_t le64_nonneg(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return (int64_t)(v & (uint64_t)INT64_MAX);
}

static void gone_list(const uint8_t *data, size_t size) {
        sl_logpb_gone_t *g = NULL, *g2 = NULL;
        size_t n = 0, n2 = 0, len;
        uint8_t *buf;
        if (sl_logpb_gone_read(data, size, &g, &n) == -1) {
                CHECK(!g && !n);
                return;
        }
        CHECK(sl_logpb_is_gone(data, size) && !sl_logpb_is_index(data, size));
        CHECK(n <= SL_LOGPB_GONE_MAX);
        for (size_t i = 0; i < n; i++) {
                CHECK(g[i].loc >= 0 && g[i].due_ms >= 0);
                CHECK(!i || g[i].loc > g[i - 1].loc);
        }
        buf = sl_logpb_gone_put(g, n, &len);
        CHECK(len <= size); /* the shortest form */
        CHECK(sl_logpb_gone_read(buf, len, &g2, &n2) == 0);
        CHECK(n2 == n && (!n || !memcmp(g, g2, n * sizeof(*g))));
        free(buf);
        free(g);
        free(g2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t head[16] = {0};
        int64_t due = -1, off = -1, rdue = -1, roff = -1;
        int r = sl_logpb_index_read(data, size, &due, &off);
        int rr = ref_read(data, size, &rdue, &roff);

        CHECK(r == rr);
        if (r == 0) {
                CHECK(due == rdue && off == roff);
                CHECK(due >= 0 && off >= 0);
                round_trip(due, off);
        }
        if (sl_logpb_is_index(data, size)) {
                /* No Timer record begins with 0xff: the two kinds of value
                 * of a delay changelog are never confused. */
                sl_logpb_timer_t t;
                Sluice__V1__Timer *pc =
                    sluice__v1__timer__unpack(NULL, size, data);
                CHECK(!pc);
                CHECK(sl_logpb_timer_read(&t, data, size) == -1);
                sl_logpb_timer_free(&t);
        } else {
                CHECK(r == -1);
        }
        memcpy(head, data, size < sizeof(head) ? size : sizeof(head));
        round_trip(le64_nonneg(head), le64_nonneg(head + 8));
        gone_list(data, size);
        return 0;
}
