/* SPDX-License-Identifier: Apache-2.0 */
/*
 * varint.h — the varint codec every record format of sluice shares:
 * protobuf's base-128 varint, 7 bits a byte, low bits first, the high bit
 * set on every byte but the last (a negative int64 cast to uint64 takes
 * 10 bytes, as protobuf's int64 wants).
 *
 * Writers: debounce's changelog chunks and items (debounce.c), delay's
 * in-memory timer blob (op_delay.c).  Readers: the blob, and throttle's
 * overflow records read without unpacking (op_throttle.c).  logpb.c reads
 * protobuf fields as protobuf-c does, bounds and all, and keeps its own.
 *
 * Static inline: these run once per field of every record.  Pure; any
 * thread.
 */
#ifndef SLUICE_VARINT_H
#define SLUICE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes a varint takes. */
#define SL_VARINT_MAX 10

/* Bytes sl_varint_put() writes for v: 1..SL_VARINT_MAX. */
static inline size_t sl_varint_len(uint64_t v) {
        size_t n = 1;
        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

/* Writes v at out, which has room for sl_varint_len(v) bytes; returns that
 * many. */
static inline size_t sl_varint_put(uint8_t *out, uint64_t v) {
        size_t n = 0;
        while (v >= 0x80) {
                out[n++] = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        out[n++] = (uint8_t)v;
        return n;
}

/* Reads the varint at *pp, which ends before end, into *v and moves *pp
 * past it.  Returns 0, or -1 (and changes nothing) when the bytes end
 * first or the varint runs past SL_VARINT_MAX bytes.  Bits beyond 64 in a
 * tenth byte are dropped, as protobuf does. */
static inline int sl_varint_get(const uint8_t **pp, const uint8_t *end,
                                uint64_t *v) {
        const uint8_t *p = *pp;
        uint64_t x = 0;
        for (int shift = 0; p < end && shift < 64; shift += 7) {
                uint8_t c = *p++;
                x |= (uint64_t)(c & 0x7f) << shift;
                if (!(c & 0x80)) {
                        *pp = p;
                        *v = x;
                        return 0;
                }
        }
        return -1;
}

#endif
