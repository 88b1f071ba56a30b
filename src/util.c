/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.c — assertions, clocks, checked allocation and escaping (see
 * util.h).
 */
#include "util.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sl_assert_fail(const char *expr, const char *file, int line) {
        fprintf(stderr, "sluice: assertion failed: %s (%s:%d)\n", expr, file,
                line);
        abort();
}

int64_t sl_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t sl_mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void sl_buf_reserve(sl_buf_t *b, size_t n) {
        size_t size;
        if (b->p && b->size - b->len > n)
                return;
        size = SL_MAX(b->size * 2, b->len + n + 256);
        b->p = sl_realloc(b->p, size);
        b->size = size;
}

void *sl_scratch_get(sl_scratch_t *s, size_t need) {
        if (need > s->size || !s->buf) {
                size_t size = SL_MAX(need, (size_t)256);
                /* Grow geometrically, so records that grow slowly do not
                 * realloc each time. */
                if (size < s->size * 2)
                        size = s->size * 2;
                free(s->buf);
                s->buf = sl_malloc(size);
                s->size = size;
        }
        return s->buf;
}

void *sl_scratch_grow(sl_scratch_t *s, size_t need) {
        if (need > s->size || !s->buf) {
                size_t size = SL_MAX(need, (size_t)256);
                if (size < s->size * 2)
                        size = s->size * 2;
                s->buf = sl_realloc(s->buf, size);
                s->size = size;
        }
        return s->buf;
}

void sl_scratch_done(sl_scratch_t *s) {
        if (s->size > SL_SCRATCH_KEEP)
                sl_scratch_free(s);
}

void sl_scratch_free(sl_scratch_t *s) {
        free(s->buf);
        s->buf = NULL;
        s->size = 0;
}

static void oom(size_t size) {
        fprintf(stderr, "sluice: out of memory allocating %zu bytes\n", size);
        abort();
}

void *sl_malloc(size_t size) {
        void *p = malloc(size ? size : 1);
        if (!p)
                oom(size);
        return p;
}

/* jemalloc's control interface, present only when jemalloc is linked (or
 * preloaded): weak, so this file builds and runs without it. */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
            size_t newlen) __attribute__((weak));

void sl_mem_trim(void) {
        if (mallctl) {
                /* 4096 is MALLCTL_ARENAS_ALL: every arena, the librdkafka
                 * threads' included. */
                (void)mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
                return;
        }
        malloc_trim(0);
}

#ifdef __SANITIZE_ADDRESS__
/* ASan's runtime (gcc ships no header for it). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

void sl_mem_stats(int64_t *allocated, int64_t *resident) {
        *allocated = *resident = -1;
        if (mallctl) {
                /* Statistics are a snapshot taken at the last epoch. */
                uint64_t epoch = 1;
                size_t v, len = sizeof(epoch);
                if (mallctl("epoch", &epoch, &len, &epoch, len))
                        return;
                len = sizeof(v);
                if (!mallctl("stats.allocated", &v, &len, NULL, 0))
                        *allocated = (int64_t)v;
                len = sizeof(v);
                if (!mallctl("stats.resident", &v, &len, NULL, 0))
                        *resident = (int64_t)v;
                return;
        }
#ifdef __SANITIZE_ADDRESS__
        /* ./sluice-asan: ASan's allocator serves every malloc. */
        *allocated = (int64_t)__sanitizer_get_current_allocated_bytes();
#else
        {
                struct mallinfo2 mi = mallinfo2();
                *allocated = (int64_t)(mi.uordblks + mi.hblkhd);
        }
#endif
}

const char *sl_mem_allocator(char *buf, size_t size) {
        const char *v = NULL;
        size_t len = sizeof(v);
        if (mallctl && mallctl("version", &v, &len, NULL, 0) == 0 && v)
                /* "5.3.0-0-g<commit>": the release is enough. */
                snprintf(buf, size, "jemalloc %.*s", (int)strcspn(v, "-"), v);
        else
                snprintf(buf, size, "glibc malloc");
        return buf;
}

void *sl_calloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p)
                oom(n * size);
        return p;
}

void *sl_realloc(void *ptr, size_t size) {
        void *p = realloc(ptr, size ? size : 1);
        if (!p)
                oom(size);
        return p;
}

char *sl_strdup(const char *s) {
        return sl_strndup(s, strlen(s));
}

char *sl_strndup(const char *s, size_t n) {
        char *p = sl_malloc(n + 1);
        memcpy(p, s, n);
        p[n] = '\0';
        return p;
}

static int printable(unsigned char c) {
        return c >= 0x20 && c < 0x7f;
}

const char *sl_escape(const void *p, size_t len, char *buf, size_t size) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s = p;
        size_t need = 0, limit, n = 0;

        sl_assert(buf && size >= 8 && (p || !len));
        for (size_t i = 0; i < len && need < size; i++)
                need += printable(s[i]) ? 1 : 4;
        /* Room for the text, and for "..." too when it is cut. */
        limit = need < size ? size - 1 : size - 4;
        for (size_t i = 0; i < len; i++) {
                if (printable(s[i])) {
                        if (n + 1 > limit)
                                break;
                        buf[n++] = (char)s[i];
                } else {
                        if (n + 4 > limit)
                                break;
                        buf[n++] = '\\';
                        buf[n++] = 'x';
                        buf[n++] = hex[s[i] >> 4];
                        buf[n++] = hex[s[i] & 0xf];
                }
        }
        if (need >= size) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n] = '\0';
        return buf;
}

/* ------------------------------------------------------------------ */
/* Base64 and RFC 3339 text, shared by the API, the debounce batch      */
/* encoding, describe and inspect.                                      */

int sl_hexval(int ch) {
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

size_t sl_base64_encode(char *out, const void *in, size_t n) {
        static const char tab[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *s = in;
        char *q = out;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t)s[i] << 16;
                if (i + 1 < n)
                        v |= (uint32_t)s[i + 1] << 8;
                if (i + 2 < n)
                        v |= s[i + 2];
                *q++ = tab[(v >> 18) & 63];
                *q++ = tab[(v >> 12) & 63];
                *q++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
                *q++ = i + 2 < n ? tab[v & 63] : '=';
        }
        *q = '\0';
        return (size_t)(q - out);
}

static int base64_val(int ch) {
        if (ch >= 'A' && ch <= 'Z')
                return ch - 'A';
        if (ch >= 'a' && ch <= 'z')
                return ch - 'a' + 26;
        if (ch >= '0' && ch <= '9')
                return ch - '0' + 52;
        if (ch == '+' || ch == '-')
                return 62;
        if (ch == '/' || ch == '_')
                return 63;
        return -1;
}

void *sl_base64_decode(const char *s, size_t len, size_t *outlen) {
        unsigned char *out = sl_malloc(len / 4 * 3 + 4);
        size_t o = 0;
        uint32_t acc = 0;
        int bits = 0;
        while (len && s[len - 1] == '=')
                len--;
        for (size_t i = 0; i < len; i++) {
                int v = base64_val((unsigned char)s[i]);
                if (v < 0) {
                        free(out);
                        return NULL;
                }
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (unsigned char)((acc >> bits) & 0xff);
                }
        }
        if (bits >= 6) { /* a lone trailing character */
                free(out);
                return NULL;
        }
        *outlen = o;
        return out;
}

int sl_time_rfc3339(int64_t ms, char *buf, size_t size) {
        time_t s;
        struct tm tm;
        if (ms < 0 || ms > 253402300799999LL) /* 9999-12-31T23:59:59.999Z */
                return -1;
        s = (time_t)(ms / 1000);
        if (!gmtime_r(&s, &tm) ||
            snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (int)(ms % 1000)) >= (int)size)
                return -1;
        return 0;
}

int sl_errf(char *errstr, size_t errstr_size, const char *fmt, ...) {
        va_list ap;

        if (errstr && errstr_size) {
                va_start(ap, fmt);
                vsnprintf(errstr, errstr_size, fmt, ap);
                va_end(ap);
        }
        return -1;
}
