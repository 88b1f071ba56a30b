/* SPDX-License-Identifier: Apache-2.0 */
/*
 * partitioner.c — where Kafka's producers put a keyed record (see
 * partitioner.h): Java's murmur2 and librdkafka's CRC-32, bit for bit.
 */
#include "partitioner.h"

int32_t sl_partitioner_murmur2(const void *key, size_t keylen) {
        /* Kafka's org.apache.kafka.common.utils.Utils.murmur2, in 32-bit
         * unsigned arithmetic (Java's int overflow wraps the same way). */
        const uint8_t *d = key;
        const uint32_t m = 0x5bd1e995;
        const int r = 24;
        uint32_t len = (uint32_t)keylen;
        uint32_t h = 0x9747b28cU ^ len;
        uint32_t n4 = len / 4;

        for (uint32_t i = 0; i < n4; i++) {
                uint32_t k = (uint32_t)d[i * 4] |
                             ((uint32_t)d[i * 4 + 1] << 8) |
                             ((uint32_t)d[i * 4 + 2] << 16) |
                             ((uint32_t)d[i * 4 + 3] << 24);
                k *= m;
                k ^= k >> r;
                k *= m;
                h *= m;
                h ^= k;
        }
        switch (len % 4) {
        case 3:
                h ^= (uint32_t)d[(len & ~3U) + 2] << 16;
                /* fall through */
        case 2:
                h ^= (uint32_t)d[(len & ~3U) + 1] << 8;
                /* fall through */
        case 1:
                h ^= (uint32_t)d[len & ~3U];
                h *= m;
        }
        h ^= h >> 13;
        h *= m;
        h ^= h >> 15;
        return (int32_t)h;
}

/* CRC-32 (IEEE, reflected; zlib's and librdkafka's rd_crc32), eight bytes
 * a step ("slicing by 8": eight tables of 256 words, 8 KiB): the check runs
 * once per keyed input record, and the one-table loop took 1.6 ns a byte
 * (105 ns for a 64-byte key; zlib's crc32() was no faster on short
 * keys).  The tables are built once, idempotently: threads that race to
 * build them write the same words. */
static uint32_t crc_tab[8][256];
static int crc_built;

static void crc_build(void) {
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t v = i;
                for (int j = 0; j < 8; j++)
                        v = v & 1 ? 0xedb88320U ^ (v >> 1) : v >> 1;
                crc_tab[0][i] = v;
        }
        for (uint32_t i = 0; i < 256; i++)
                for (int t = 1; t < 8; t++)
                        crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
                                        crc_tab[0][crc_tab[t - 1][i] & 0xff];
        __atomic_store_n(&crc_built, 1, __ATOMIC_RELEASE);
}

uint32_t sl_partitioner_crc32(const void *key, size_t keylen) {
        const uint8_t *d = key;
        uint32_t c = 0xffffffffU;

        if (!__atomic_load_n(&crc_built, __ATOMIC_ACQUIRE))
                crc_build();
        for (; keylen >= 8; keylen -= 8, d += 8) {
                uint32_t lo = c ^ ((uint32_t)d[0] | (uint32_t)d[1] << 8 |
                                   (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24);
                uint32_t hi = (uint32_t)d[4] | (uint32_t)d[5] << 8 |
                              (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
                c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
                    crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
                    crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
                    crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        }
        for (; keylen > 0; keylen--, d++)
                c = crc_tab[0][(c ^ *d) & 0xff] ^ (c >> 8);
        return c ^ 0xffffffffU;
}

int32_t sl_partitioner_partition(sl_partitioner_t how, const void *key,
                                 size_t keylen, int cnt) {
        if (cnt <= 0)
                return -1;
        if (how == SL_PARTITIONER_CRC32)
                return (int32_t)(sl_partitioner_crc32(key, keylen) %
                                 (uint32_t)cnt);
        return (int32_t)(((uint32_t)sl_partitioner_murmur2(key, keylen) &
                          0x7fffffff) %
                         (uint32_t)cnt);
}
