/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.c — the loop watchdog and the shutdown bound (see watchdog.h).
 *
 * DESIGN
 *
 * Two clocks meet in one atomic.  The loop's tick callback stores the
 * monotonic time of each turn in last_turn_us; everyone else only reads it
 * and subtracts from now.  Nothing the loop does can make a stalled loop
 * look alive, and nothing the readers do can stall the loop: there is no
 * lock between them.
 *
 * Who writes what:
 *
 *   loop thread (tick callback)   last_turn_us; the lag histogram; the
 *                                 exact length of a stall once the loop
 *                                 turns again (the time past its tick),
 *                                 into max_stall_us, and one log line for
 *                                 it
 *   watchdog thread               the two gauges, sampled every tick, and
 *                                 its own sample into max_stall_us
 *   any thread                    armed (the shutdown deadline), by
 *                                 compare-and-swap
 *
 * Both sides raise max_stall_us with a compare-and-swap maximum: the
 * watchdog thread sees a stall while it lasts, the loop sees its full
 * length when it ends.  Only the watchdog thread publishes the gauges, so
 * they never go backwards through a race between two writers.
 *
 * The watchdog thread sleeps in poll() on a pipe: a byte in it means "look
 * again now" (the deadline moved, or stop).  A pipe rather than a condition
 * variable because arming the deadline must be async-signal-safe, and
 * write() is, pthread_cond_signal() is not.
 *
 * The deadline and its exit code are one 64-bit word, deadline_us << 8 |
 * code (0: not armed), so that "the sooner deadline wins, with its code"
 * is a single compare-and-swap and a reader never pairs one call's
 * deadline with another's code.  Exit codes are 8 bits anyway.
 *
 * The watchdog thread must never block, or the bound it carries is gone.
 * Logging can block: sl_log() takes stderr's lock, and a thread stuck
 * writing to a full stderr pipe holds it.  So the stall is logged by the
 * loop when it recovers (never by the watchdog thread), and the last line
 * before _exit() is written by a helper thread that the watchdog thread
 * waits for at most LAST_WORD_MS.
 */
#include "watchdog.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the watchdog thread waits for the last log line before it ends
 * the process anyway. */
#define LAST_WORD_MS 500

/* Bounds of the arguments: a tick of at most a minute, a stall threshold of
 * at most a day (microseconds fit easily), a deadline that still fits the
 * armed word with 8 bits to spare. */
#define TICK_MAX_MS     (60 * 1000)
#define STALL_MAX_MS    (24 * 3600 * 1000)
#define DEADLINE_MAX_US (INT64_MAX >> 8)

struct sl_watchdog_s {
        uv_timer_t timer; /* the tick, on the loop */
        int64_t tick_us, stall_us;

        _Atomic int64_t last_turn_us; /* loop writes, anyone reads */
        _Atomic int64_t max_stall_us; /* raised by both sides */
        _Atomic int64_t armed;        /* deadline_us << 8 | code; 0: none */
        _Atomic int64_t armed_at_us;  /* when the first arming happened */
        atomic_int stop;              /* destroy asks the thread to end */
        atomic_int said;              /* the last line is written */

        pthread_t thread;
        int wake[2]; /* pipe: a byte makes the thread look again */

        sl_gauge_t *m_stall;
        sl_gauge_t *m_stall_max;
        sl_histogram_t *m_lag;
};

/* Raises *p to v unless it is higher already. */
static void atomic_max_i64(_Atomic int64_t *p, int64_t v) {
        int64_t old = atomic_load_explicit(p, memory_order_relaxed);
        while (old < v &&
               !atomic_compare_exchange_weak_explicit(
                   p, &old, v, memory_order_relaxed, memory_order_relaxed))
                ;
}

/* Makes the watchdog thread look again.  Async-signal-safe: keeps errno;
 * a full pipe already holds a wake-up. */
static void watchdog_wake(sl_watchdog_t *w) {
        int saved = errno;
        ssize_t r;
        do
                r = write(w->wake[1], "", 1);
        while (r == -1 && errno == EINTR);
        errno = saved;
}

/* The tick, on the loop thread. */
static void watchdog_on_tick(uv_timer_t *timer) {
        sl_watchdog_t *w = timer->data;
        int64_t now = sl_mono_us();
        int64_t gap =
            now - atomic_load_explicit(&w->last_turn_us, memory_order_relaxed);

        atomic_store_explicit(&w->last_turn_us, now, memory_order_relaxed);
        /* libuv schedules the next tick from the loop's cached time, at or
         * before our reading of the last one, so this lag may read a little
         * low, never high. */
        sl_histogram_observe(w->m_lag,
                             (double)SL_MAX(gap - w->tick_us, 0) / 1e6);
        /* A tick every tick_us is the loop at rest: only what is past it
         * counts as a stall. */
        atomic_max_i64(&w->max_stall_us, SL_MAX(gap - w->tick_us, 0));
        if (gap >= w->stall_us)
                sl_log(LOG_WARNING, "WATCHDOG",
                       "event loop did not turn for %.1f s (stall threshold "
                       "%.1f s)",
                       (double)gap / 1e6, (double)w->stall_us / 1e6);
}

/* Runs on a helper thread: the watchdog thread must not block on stderr. */
static void *watchdog_last_word(void *arg) {
        sl_watchdog_t *w = arg;
        int64_t armed = atomic_load(&w->armed);
        int64_t since = sl_mono_us() - atomic_load(&w->armed_at_us);

        sl_log(LOG_CRIT, "SHUTDOWN",
               "shutdown grace period ran out (%.1f s after the shutdown "
               "began): exiting with code %d",
               (double)since / 1e6, (int)(armed & 0xff));
        atomic_store(&w->said, 1);
        return NULL;
}

/* The deadline passed: one line, if stderr lets us, then _exit(). */
__attribute__((noreturn)) static void watchdog_expire(sl_watchdog_t *w,
                                                      int code) {
        pthread_attr_t attr;
        pthread_t t;
        int started;

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &attr, watchdog_last_word, w) == 0;
        pthread_attr_destroy(&attr);
        for (int i = 0; started && i < LAST_WORD_MS && !atomic_load(&w->said);
             i++) {
                struct timespec ms = {0, 1000 * 1000};
                nanosleep(&ms, NULL);
        }
        _exit(code);
}

/* The watchdog thread's sample: the gauges, once per tick. */
static void watchdog_sample(sl_watchdog_t *w, int64_t now) {
        int64_t stall =
            now - atomic_load_explicit(&w->last_turn_us, memory_order_relaxed);

        stall = SL_MAX(stall, 0);
        atomic_max_i64(&w->max_stall_us, SL_MAX(stall - w->tick_us, 0));
        sl_gauge_set(w->m_stall, (double)stall / 1e6);
        sl_gauge_set(w->m_stall_max,
                     (double)atomic_load_explicit(&w->max_stall_us,
                                                  memory_order_relaxed) /
                         1e6);
}

static void *watchdog_main(void *arg) {
        sl_watchdog_t *w = arg;
        struct pollfd pfd = {.fd = w->wake[0], .events = POLLIN};

        while (!atomic_load(&w->stop)) {
                int64_t now = sl_mono_us();
                int64_t armed = atomic_load(&w->armed);
                int64_t next = now + w->tick_us;

                if (armed) {
                        int64_t deadline = armed >> 8;
                        if (now >= deadline)
                                watchdog_expire(w, (int)(armed & 0xff));
                        next = SL_MIN(next, deadline);
                }
                watchdog_sample(w, now);

                /* Round up: waking a little late is harmless, waking early
                 * would spin until the deadline. */
                int64_t wait_ms = (next - now + 999) / 1000;
                if (poll(&pfd, 1, (int)SL_MIN(wait_ms, INT_MAX)) > 0) {
                        char buf[64];
                        while (read(w->wake[0], buf, sizeof(buf)) > 0)
                                ;
                }
        }
        return NULL;
}

sl_watchdog_t *sl_watchdog_new(uv_loop_t *loop, int64_t tick_ms,
                               int64_t stall_ms, sl_metrics_t *m, char *errstr,
                               size_t errstr_size) {
        sigset_t all, old;
        sl_watchdog_t *w;
        int r;

        if (!loop) {
                snprintf(errstr, errstr_size, "watchdog: no loop");
                return NULL;
        }
        if (tick_ms < 1 || tick_ms > TICK_MAX_MS) {
                snprintf(errstr, errstr_size,
                         "watchdog: tick %lld ms out of range (1-%d ms)",
                         (long long)tick_ms, TICK_MAX_MS);
                return NULL;
        }
        if (stall_ms <= tick_ms || stall_ms > STALL_MAX_MS) {
                snprintf(errstr, errstr_size,
                         "watchdog: stall threshold %lld ms must be above the "
                         "tick (%lld ms) and at most %d ms",
                         (long long)stall_ms, (long long)tick_ms, STALL_MAX_MS);
                return NULL;
        }

        w = sl_calloc(1, sizeof(*w));
        w->tick_us = tick_ms * 1000;
        w->stall_us = stall_ms * 1000;
        atomic_init(&w->last_turn_us, sl_mono_us());
        atomic_init(&w->max_stall_us, 0);
        atomic_init(&w->armed, 0);
        atomic_init(&w->armed_at_us, 0);
        atomic_init(&w->stop, 0);
        atomic_init(&w->said, 0);
        /* Arming from a signal handler relies on these being lock-free. */
        sl_assert(atomic_is_lock_free(&w->armed));

        w->m_stall = sl_metrics_gauge(
            m, "sluice_loop_stall_seconds",
            "Time since the event loop last turned, as the watchdog sees it.",
            NULL);
        w->m_stall_max = sl_metrics_gauge(
            m, "sluice_loop_stall_max_seconds",
            "Longest time the event loop went without turning since start, "
            "beyond its 100 ms tick (the most a tick ran late).",
            NULL);
        w->m_lag = sl_metrics_histogram(
            m, "sluice_loop_lag_seconds",
            "How late the watchdog's tick timer ran on the event loop.",
            sl_metrics_buckets_latency, sl_metrics_buckets_latency_cnt, NULL);

        if (pipe2(w->wake, O_NONBLOCK | O_CLOEXEC) == -1) {
                snprintf(errstr, errstr_size, "watchdog: pipe: %s",
                         strerror(errno));
                free(w);
                return NULL;
        }

        /* Signals are for the loop (libuv's handlers), not for us. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = pthread_create(&w->thread, NULL, watchdog_main, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                snprintf(errstr, errstr_size, "watchdog: thread: %s",
                         strerror(r));
                close(w->wake[0]);
                close(w->wake[1]);
                free(w);
                return NULL;
        }

        uv_timer_init(loop, &w->timer);
        w->timer.data = w;
        uv_timer_start(&w->timer, watchdog_on_tick, (uint64_t)tick_ms,
                       (uint64_t)tick_ms);
        /* The watchdog alone must not keep uv_run() going. */
        uv_unref((uv_handle_t *)&w->timer);
        return w;
}

int sl_watchdog_alive(sl_watchdog_t *w, int64_t *stalled_ms) {
        int64_t stall;

        if (!w) {
                if (stalled_ms)
                        *stalled_ms = 0;
                return 1;
        }
        stall = sl_mono_us() -
                atomic_load_explicit(&w->last_turn_us, memory_order_relaxed);
        stall = SL_MAX(stall, 0);
        if (stalled_ms)
                *stalled_ms = stall / 1000;
        return stall < w->stall_us;
}

int sl_watchdog_probe(void *opaque, char *why, size_t why_size) {
        int64_t stalled_ms;

        if (sl_watchdog_alive(opaque, &stalled_ms))
                return 1;
        snprintf(why, why_size, "event loop stalled for %.1f s",
                 (double)stalled_ms / 1000);
        return 0;
}

void sl_watchdog_shutdown_deadline(sl_watchdog_t *w, int64_t grace_ms,
                                   int code) {
        int64_t now, deadline, want, old;

        if (!w)
                return;
        now = sl_mono_us();
        grace_ms = SL_MAX(grace_ms, 0);
        deadline = grace_ms > (DEADLINE_MAX_US - now) / 1000
                       ? DEADLINE_MAX_US
                       : now + grace_ms * 1000;
        want = deadline << 8 | (code & 0xff);

        old = 0;
        atomic_compare_exchange_strong(&w->armed_at_us, &old, now);
        old = atomic_load(&w->armed);
        while ((old == 0 || (old >> 8) > deadline) &&
               !atomic_compare_exchange_weak(&w->armed, &old, want))
                ;
        watchdog_wake(w);
}

static void watchdog_on_close(uv_handle_t *h) {
        free(h->data);
}

void sl_watchdog_destroy(sl_watchdog_t *w) {
        if (!w)
                return;
        atomic_store(&w->stop, 1);
        watchdog_wake(w);
        pthread_join(w->thread, NULL);
        close(w->wake[0]);
        close(w->wake[1]);
        uv_timer_stop(&w->timer);
        uv_close((uv_handle_t *)&w->timer, watchdog_on_close);
}
