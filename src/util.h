/*
 * util.h — small things every module uses: assertions for internal misuse,
 * clocks, and checked allocation.
 *
 * sl_assert() is for bugs in sluice itself, never for bad input data (that
 * goes to the DLQ).  It prints file and line and aborts.
 */
#ifndef SL_UTIL_H
#define SL_UTIL_H

#include <stddef.h>
#include <stdint.h>

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
char *sl_strndup(const char *s, size_t n);

#define SL_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b)     ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b)     ((a) > (b) ? (a) : (b))

#endif
