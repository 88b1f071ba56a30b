/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash.c — SipHash with a per-process random key (see hash.h).
 *
 * Written from the description in the SipHash paper (section 2): the state
 * is four 64-bit words initialised from the key k0, k1 and the constants
 * "somepseudorandomlygeneratedbytes"; each 8-byte little-endian message
 * word m is absorbed as v3 ^= m, c SipRounds, v0 ^= m; the last word holds
 * the remaining 0..7 bytes with the input length (mod 256) in its top
 * byte; finalisation is v2 ^= 0xff, d SipRounds, and the output is
 * v0 ^ v1 ^ v2 ^ v3.
 */
#include "hash.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t seed_k0, seed_k1;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static inline uint64_t rotl(uint64_t x, int b) {
        return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const unsigned char *p) {
        uint64_t w;
        memcpy(&w, p, 8);
        return le64toh(w);
}

#define SIPROUND                                                               \
        do {                                                                   \
                v0 += v1;                                                      \
                v1 = rotl(v1, 13);                                             \
                v1 ^= v0;                                                      \
                v0 = rotl(v0, 32);                                             \
                v2 += v3;                                                      \
                v3 = rotl(v3, 16);                                             \
                v3 ^= v2;                                                      \
                v0 += v3;                                                      \
                v3 = rotl(v3, 21);                                             \
                v3 ^= v0;                                                      \
                v2 += v1;                                                      \
                v1 = rotl(v1, 17);                                             \
                v1 ^= v2;                                                      \
                v2 = rotl(v2, 32);                                             \
        } while (0)

/* Inlined with constant c and d at each call site, so the rounds unroll. */
static inline __attribute__((always_inline)) uint64_t
siphash(uint64_t k0, uint64_t k1, int c, int d, const void *data, size_t n) {
        const unsigned char *p = data;
        const unsigned char *end = p + (n & ~(size_t)7);
        uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
        uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
        uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
        uint64_t v3 = k1 ^ 0x7465646279746573ULL;
        uint64_t m, b = (uint64_t)n << 56;
        int i;

        for (; p != end; p += 8) {
                m = load_le64(p);
                v3 ^= m;
                for (i = 0; i < c; i++)
                        SIPROUND;
                v0 ^= m;
        }
        switch (n & 7) {
        case 7:
                b |= (uint64_t)p[6] << 48;
                /* fall through */
        case 6:
                b |= (uint64_t)p[5] << 40;
                /* fall through */
        case 5:
                b |= (uint64_t)p[4] << 32;
                /* fall through */
        case 4:
                b |= (uint64_t)p[3] << 24;
                /* fall through */
        case 3:
                b |= (uint64_t)p[2] << 16;
                /* fall through */
        case 2:
                b |= (uint64_t)p[1] << 8;
                /* fall through */
        case 1:
                b |= (uint64_t)p[0];
                break;
        case 0:
                break;
        }
        v3 ^= b;
        for (i = 0; i < c; i++)
                SIPROUND;
        v0 ^= b;
        v2 ^= 0xff;
        for (i = 0; i < d; i++)
                SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

/* getrandom(2); /dev/urandom where the kernel lacks it; as a last resort
 * (no entropy source at all) the clock, pid and an address, which still
 * differ between processes though they are not secret. */
static void seed_fill(unsigned char *buf, size_t n) {
        size_t got = 0;
        ssize_t r;
        int fd;

        while (got < n) {
                r = getrandom(buf + got, n - got, 0);
                if (r > 0)
                        got += (size_t)r;
                else if (r < 0 && errno != EINTR)
                        break;
        }
        if (got == n)
                return;
        if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) >= 0) {
                while (got < n) {
                        r = read(fd, buf + got, n - got);
                        if (r > 0)
                                got += (size_t)r;
                        else if (r == 0 || errno != EINTR)
                                break;
                }
                close(fd);
        }
        if (got < n) {
                struct timespec ts;
                uint64_t mix[3];
                clock_gettime(CLOCK_REALTIME, &ts);
                mix[0] =
                    (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
                mix[1] = (uint64_t)getpid();
                mix[2] = (uint64_t)(uintptr_t)&mix;
                for (size_t i = got; i < n; i++)
                        buf[i] =
                            (unsigned char)(siphash(mix[0], mix[1], 1, 3,
                                                    &mix[2], sizeof(mix[2])) >>
                                            (8 * (i % 8)));
        }
}

static void seed_init(void) {
        unsigned char s[SL_HASH_SEED_LEN];
        seed_fill(s, sizeof(s));
        seed_k0 = load_le64(s);
        seed_k1 = load_le64(s + 8);
}

uint64_t sl_hash(const void *p, size_t n) {
        pthread_once(&seed_once, seed_init);
        return siphash(seed_k0, seed_k1, 1, 3, p, n);
}

void sl_hash_seed_set(const uint8_t seed[SL_HASH_SEED_LEN]) {
        pthread_once(&seed_once, seed_init);
        seed_k0 = load_le64(seed);
        seed_k1 = load_le64(seed + 8);
}

uint64_t sl_siphash(const uint8_t key[SL_HASH_SEED_LEN], int c, int d,
                    const void *p, size_t n) {
        uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
        if (c == 1 && d == 3)
                return siphash(k0, k1, 1, 3, p, n);
        if (c == 2 && d == 4)
                return siphash(k0, k1, 2, 4, p, n);
        return siphash(k0, k1, c, d, p, n);
}
