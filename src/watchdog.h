/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watchdog.h — the loop watchdog and the shutdown bound.
 *
 * Everything that matters in sluice runs on one libuv loop thread, so a
 * callback that blocks (a commit that hangs, a broker call without a
 * timeout, a bug) stops every pipeline, and nothing on that thread can say
 * so.  The watchdog watches the loop from outside:
 *
 *   loop thread        a uv_timer ticks every tick_ms and stores the
 *                      monotonic time of this turn of the loop in an atomic
 *                      (and how late the tick ran, in a histogram);
 *   watchdog thread    wakes every tick_ms, computes how long the loop has
 *                      not turned and publishes it as a gauge; it also
 *                      carries the shutdown bound;
 *   any thread         sl_watchdog_alive() compares the last turn with now,
 *                      e.g. the HTTP thread for /healthz.
 *
 * "Stall" means the time since the tick timer last ran.  A healthy loop
 * reads between 0 and about tick_ms; a loop that has not turned for
 * stall_ms or more is stalled.
 *
 * The shutdown bound: once armed (on SIGTERM), the watchdog thread ends the
 * process with _exit() if it is still there when the grace period runs
 * out.  It uses no signal (a process running as PID 1 in a container
 * ignores signals whose action is the default, so alarm() would do
 * nothing), and the watchdog thread itself never blocks on I/O: the one
 * log line is written by a helper thread, waited for a bounded time.
 *
 * Metrics (registered when a registry is given):
 *
 *   sluice_loop_stall_seconds      gauge, time since the loop last turned,
 *                                  updated every tick by the watchdog
 *                                  thread (so it grows during a stall)
 *   sluice_loop_stall_max_seconds  gauge, the longest stall seen since start:
 *                                  the most a tick ran late (0 for a
 *                                  loop that always turned on time)
 *   sluice_loop_lag_seconds        histogram, how late each tick ran
 *
 * The gauges are written from the watchdog thread: sl_gauge_set() is one
 * relaxed atomic store, documented safe from any thread (metrics.h).
 */
#ifndef SL_WATCHDOG_H
#define SL_WATCHDOG_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "metrics.h"

typedef struct sl_watchdog_s sl_watchdog_t;

/*
 * Starts watching loop: a tick timer on the loop (unreferenced, so it does
 * not keep uv_run() from returning) every tick_ms, and the watchdog thread.
 * stall_ms is how long without a turn makes the loop stalled; it must be
 * greater than tick_ms (a few ticks at least, so an ordinary late tick is
 * not a stall).  m may be NULL (no metrics); it is borrowed and must
 * outlive the watchdog.  The watchdog thread blocks every signal.
 *
 * Returns the watchdog, or NULL with the reason in errstr (bad arguments,
 * no thread).  Call on the loop thread.  The loop counts as having turned
 * at creation: create the watchdog just before uv_run(), after blocking
 * start-up work.
 */
sl_watchdog_t *sl_watchdog_new(uv_loop_t *loop, int64_t tick_ms,
                               int64_t stall_ms, sl_metrics_t *m, char *errstr,
                               size_t errstr_size);

/*
 * Returns 1 while the loop turned less than stall_ms ago, else 0.  The time
 * since the last turn, in milliseconds, goes to *stalled_ms when it is not
 * NULL (whatever the result).  Any thread; lock-free.  A NULL w returns 1
 * with 0 (no watchdog, nothing to say).
 */
int sl_watchdog_alive(sl_watchdog_t *w, int64_t *stalled_ms);

/*
 * sl_watchdog_alive() in the shape of an HTTP alive function (see
 * sl_http_set_alive_fn()): opaque is the sl_watchdog_t; when the loop is
 * stalled, writes "event loop stalled for 12.3 s" to why.  Any thread.
 */
int sl_watchdog_probe(void *opaque, char *why, size_t why_size);

/*
 * Arms the shutdown bound: if the process still runs grace_ms from now
 * (a negative grace_ms counts as 0), the watchdog thread logs one line
 * (LOG_CRIT, facility SHUTDOWN) and ends the process with _exit(code & 0xff):
 * no atexit handlers, no flushing of stdio buffers, other threads
 * stopped where they stand.  When already armed, the sooner deadline stays
 * (with its code): a repeated SIGTERM can never postpone the exit.
 *
 * Any thread, and async-signal-safe (lock-free atomics, clock_gettime() and
 * write() only), so it may be called from a real signal handler too.  NULL
 * w is a no-op.  The bound holds until sl_watchdog_destroy(), which disarms
 * it: destroy the watchdog as late as the loop allows.
 */
void sl_watchdog_shutdown_deadline(sl_watchdog_t *w, int64_t grace_ms,
                                   int code);

/*
 * Stops the watchdog thread (joining it), disarms the shutdown bound and
 * closes the tick timer.  The memory is freed by the timer's close
 * callback, so the loop must run once more (uv_run(loop, UV_RUN_NOWAIT)),
 * as for any closed handle, before uv_loop_close().  Nobody may call
 * sl_watchdog_alive() or sl_watchdog_probe() on w from this call on: take
 * the probe off the HTTP server first (sl_http_set_alive_fn(h, NULL, NULL)
 * waits for a probe in progress).  Call on the loop thread; NULL is a
 * no-op.
 */
void sl_watchdog_destroy(sl_watchdog_t *w);

#endif
