/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.h — small things every module uses: assertions for internal misuse,
 * clocks, checked allocation, and escaping untrusted bytes for logs and
 * error headers.
 *
 * sl_assert() is for bugs in sluice itself, never for bad input data (that
 * goes to the DLQ).  It prints file and line and aborts.
 */
#ifndef SL_UTIL_H
#define SL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define sl_assert(cond)                                                        \
        do {                                                                   \
                if (!(cond))                                                   \
                        sl_assert_fail(#cond, __FILE__, __LINE__);             \
        } while (0)

void sl_assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn));

/* Wall clock in milliseconds since the epoch (timers are wall-clock). */
int64_t sl_now_ms(void);
/* Monotonic clock in microseconds, for measuring durations. */
int64_t sl_mono_us(void);

/* Allocation that aborts on out-of-memory (there is no sane recovery). */
void *sl_malloc(size_t size);
void *sl_calloc(size_t n, size_t size);
void *sl_realloc(void *ptr, size_t size);
char *sl_strdup(const char *s);

/* The allocator.  ./sluice links jemalloc (the Makefile's MALLOC; librdkafka
 * allocates and frees every message on one thread and another, which libc's
 * malloc serves with arena locks and fragmented free lists: jemalloc took
 * 30-40% off the CPU per record, bench/README.md).  The unit tests and the
 * sanitizer build keep libc's malloc; these work with either. */
/* Gives freed pages back to the kernel now (after a rebuild or a caught-up
 * backlog), instead of when the allocator would. */
void sl_mem_trim(void);
/* "jemalloc 5.3.0" or "glibc malloc" in buf (size bytes); returns buf. */
const char *sl_mem_allocator(char *buf, size_t size);
/* What the allocator holds: *allocated, the bytes handed out and not
 * freed; *resident, the bytes of its pages in RAM (live blocks, pages freed
 * and not yet given back, its own metadata), or -1 where it does not say
 * (glibc's malloc).  Both -1 when neither can be read. */
void sl_mem_stats(int64_t *allocated, int64_t *resident);

/* A byte string being built (a JSON batch, the /metrics page, a timer's
 * blob): p holds len bytes of size.  Zero-initialise it; whoever builds it
 * owns p (free() it, or hand it over).  Grows by doubling. */
typedef struct sl_buf_s {
        char *p;
        size_t len, size;
} sl_buf_t;

/* Makes room for n more bytes and a NUL after them. */
void sl_buf_reserve(sl_buf_t *b, size_t n);

static inline void sl_buf_put(sl_buf_t *b, const void *s, size_t n) {
        if (!n) /* s may be NULL then (an empty protobuf bytes field) */
                return;
        if (b->size - b->len <= n)
                sl_buf_reserve(b, n);
        memcpy(b->p + b->len, s, n);
        b->len += n;
}

/* Ends the bytes with a NUL that len does not count; returns p. */
static inline char *sl_buf_cstr(sl_buf_t *b) {
        if (b->size - b->len < 1)
                sl_buf_reserve(b, 0);
        b->p[b->len] = '\0';
        return b->p;
}

/* A reusable buffer for per-record scratch (packing a record, a key): one
 * allocation serves every record instead of a malloc and free each.  It
 * grows to what is asked; sl_scratch_done() after each use gives a buffer
 * larger than SL_SCRATCH_KEEP back, so one huge record does not pin its
 * size.  Not thread-safe: one owner (an operator's state, on the loop
 * thread). */
typedef struct sl_scratch_s {
        void *buf;
        size_t size;
} sl_scratch_t;
#define SL_SCRATCH_KEEP ((size_t)64 * 1024)
/* At least need bytes (1 if need is 0), valid until the next call. */
void *sl_scratch_get(sl_scratch_t *s, size_t need);
/* As sl_scratch_get(), but what the buffer held is kept (a buffer being
 * filled). */
void *sl_scratch_grow(sl_scratch_t *s, size_t need);
void sl_scratch_done(sl_scratch_t *s);
/* Frees the buffer; the scratch may be used again. */
void sl_scratch_free(sl_scratch_t *s);
char *sl_strndup(const char *s, size_t n);

/*
 * Escaping.  Every byte that comes from input (keys, values, header values,
 * rates records, fragments of them inside parse errors) and reaches a log
 * line or an error header (sluice-error-detail) goes through sl_escape():
 * a producer must not be able to forge log lines with a newline, drive an
 * operator's terminal with ESC sequences, cut a line short with a NUL or
 * flood a log with megabytes.
 *
 * Printable ASCII (0x20 to 0x7e) is kept as it is, backslash included;
 * every other byte becomes \xNN (two lowercase hex digits).  The output is
 * therefore printable ASCII only, and escaping it again (into a buffer as
 * large) changes nothing: a sink (sl_task_dlq) may escape a detail that its
 * caller already escaped without garbling it.  The price is that a literal
 * "\x1b" in the input reads like an escaped ESC; the text is for people, not
 * for decoding.
 */

/* Buffer size that holds sl_escape() of n bytes without truncation. */
#define SL_ESCAPE_SIZE(n) ((n)*4 + 1)

/*
 * Writes the escaped form of the len bytes at p (p may be NULL when len is
 * 0) into buf, NUL-terminated, and returns buf.  When the whole form does
 * not fit in size bytes, it is cut before a whole character (never inside
 * a \xNN) and "..." marks the cut, so the result is at most size - 1
 * characters.  size must be at least 8.  Pure; any thread.
 */
const char *sl_escape(const void *p, size_t len, char *buf, size_t size);

/* The value of a hex digit (either case), or -1. */
int sl_hexval(int ch);

/* Base64 (RFC 4648, standard alphabet, padded) of n bytes: the text length
 * (without NUL) is SL_BASE64_LEN(n). */
#define SL_BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* Writes the base64 of the n bytes at in to out (SL_BASE64_LEN(n) + 1
 * bytes: the text and a NUL).  Returns the text length.  Pure. */
size_t sl_base64_encode(char *out, const void *in, size_t n);

/* Decodes the len characters at s, standard or URL alphabet, padding
 * optional.  Returns a malloc'd buffer (the caller frees it) holding
 * *outlen bytes, or NULL when s is not base64.  Pure. */
void *sl_base64_decode(const char *s, size_t len, size_t *outlen);

/* Epoch ms as RFC 3339 UTC with milliseconds ("2026-11-24T15:21:58.341Z")
 * into buf (at least 25 bytes).  Returns 0, or -1 when ms is outside
 * 1970-01-01 .. 9999-12-31 or buf is too small (buf is then unchanged or
 * empty).  Pure. */
int sl_time_rfc3339(int64_t ms, char *buf, size_t size);

/* Writes the formatted message into errstr (when it is not NULL and has
 * room) and returns -1: the error return of the parsers. */
int sl_errf(char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define SL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b)     ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b)     ((a) > (b) ? (a) : (b))

#endif
