/*
 * util.c — assertions, clocks, checked allocation and escaping (see
 * util.h).
 */
#include "util.h"

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
