/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_watchdog.c — the loop watchdog and the shutdown bound on a real
 * libuv loop: a turning loop is alive; a callback that blocks makes it
 * stalled, seen from another thread while it blocks (alive, probe, gauge),
 * and alive again after, with the stall in the max gauge and the lag
 * histogram; the shutdown deadline really ends a forked child with its
 * code (also as PID 1 of a PID namespace when the sandbox allows one, and
 * armed from a signal handler); destroy disarms it; argument checks.
 *
 * Every wait has a deadline; a child that outlives its deadline is killed
 * with SIGKILL and the test fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

#include "metrics.h"
#include "util.h"
#include "watchdog.h"

static void sleep_ms(int64_t ms) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
                ;
}

static int64_t mono_ms(void) {
        return sl_mono_us() / 1000;
}

/* Runs loop until *done is set or max_ms passed, with a referenced timer
 * of its own (the watchdog's tick does not keep uv_run() going). */
typedef struct {
        atomic_int *done;
        int64_t deadline_ms;
} runner_t;

static void runner_cb(uv_timer_t *t) {
        runner_t *r = t->data;
        if (atomic_load(r->done) || mono_ms() > r->deadline_ms)
                uv_stop(t->loop);
}

static void run_until(uv_loop_t *loop, atomic_int *done, int64_t max_ms) {
        runner_t r = {done, mono_ms() + max_ms};
        uv_timer_t t;
        uv_timer_init(loop, &t);
        t.data = &r;
        uv_timer_start(&t, runner_cb, 5, 5);
        uv_run(loop, UV_RUN_DEFAULT);
        uv_close((uv_handle_t *)&t, NULL);
        uv_run(loop, UV_RUN_NOWAIT);
        assert_true(atomic_load(done)); /* else the deadline ran out */
}

/* Destroys w and checks the loop closes: the tick timer was closed and its
 * callback ran (so w was freed). */
static void destroy_and_close(sl_watchdog_t *w, uv_loop_t *loop) {
        sl_watchdog_destroy(w);
        uv_run(loop, UV_RUN_NOWAIT);
        assert_int_equal(uv_loop_close(loop), 0);
}

/* ------------------------------------------------------------------ */
/* A loop that turns.                                                  */

typedef struct {
        sl_watchdog_t *w;
        atomic_int done;
        int checks, dead;
        int64_t worst_ms;
} turning_t;

static void *turning_observer(void *arg) {
        turning_t *o = arg;
        int64_t end = mono_ms() + 300;
        while (mono_ms() < end) {
                int64_t ms = -1;
                o->checks++;
                if (!sl_watchdog_alive(o->w, &ms))
                        o->dead++;
                o->worst_ms = SL_MAX(o->worst_ms, ms);
                sleep_ms(5);
        }
        atomic_store(&o->done, 1);
        return NULL;
}

static void test_turning_loop_is_alive(void **state) {
        (void)state;
        uv_loop_t loop;
        char err[256] = "";
        sl_metrics_t *m = sl_metrics_new();
        turning_t o = {0};
        pthread_t t;

        uv_loop_init(&loop);
        o.w = sl_watchdog_new(&loop, 10, 200, m, err, sizeof(err));
        assert_non_null(o.w);
        assert_int_equal(sl_watchdog_alive(o.w, NULL), 1);

        assert_int_equal(pthread_create(&t, NULL, turning_observer, &o), 0);
        run_until(&loop, &o.done, 2000);
        pthread_join(t, NULL);

        assert_true(o.checks >= 10);
        assert_int_equal(o.dead, 0);
        assert_true(o.worst_ms >= 0 && o.worst_ms < 200);

        char why[64] = "untouched";
        assert_int_equal(sl_watchdog_probe(o.w, why, sizeof(why)), 1);
        assert_string_equal(why, "untouched");

        /* The tick ran (about 30 times in 300 ms on an idle machine; on
         * a loaded one the loop turns on until it has 10), never near a
         * stall. */
        sl_histogram_t *lag = sl_metrics_histogram(
            m, "sluice_loop_lag_seconds", "", sl_metrics_buckets_latency,
            sl_metrics_buckets_latency_cnt, NULL);
        for (int64_t end = mono_ms() + 5000;
             sl_histogram_count(lag) < 10 && mono_ms() < end;)
                uv_run(&loop, UV_RUN_ONCE);
        sl_gauge_t *stall =
            sl_metrics_gauge(m, "sluice_loop_stall_seconds", "", NULL);
        sl_gauge_t *max =
            sl_metrics_gauge(m, "sluice_loop_stall_max_seconds", "", NULL);
        assert_true(sl_histogram_count(lag) >= 10);
        assert_true(sl_gauge_get(max) >= 0 && sl_gauge_get(max) < 0.2);
        assert_true(sl_gauge_get(stall) < 0.2);

        size_t len;
        char *text = sl_metrics_render(m, &len);
        assert_non_null(strstr(text, "# TYPE sluice_loop_stall_seconds gauge"));
        assert_non_null(
            strstr(text, "# TYPE sluice_loop_stall_max_seconds gauge"));
        assert_non_null(
            strstr(text, "# TYPE sluice_loop_lag_seconds histogram"));
        free(text);

        destroy_and_close(o.w, &loop);
        sl_metrics_destroy(m);
}

/* ------------------------------------------------------------------ */
/* A callback that blocks.                                             */

#define STALL_MS 100
#define BLOCK_MS (3 * STALL_MS)
#define TICK_MS  20

typedef struct {
        sl_watchdog_t *w;
        sl_gauge_t *g_stall, *g_max;
        atomic_int blocking, block_over, done;
        /* What the observer saw, checked on the test's thread. */
        int saw_dead;
        int64_t stalled_ms;
        int probe;
        char why[128];
        double gauge_in_stall;
        int alive_again;
        double max_after;
} stall_t;

static void blocker_cb(uv_timer_t *t) {
        stall_t *s = t->data;
        atomic_store(&s->blocking, 1);
        sleep_ms(BLOCK_MS);
        atomic_store(&s->block_over, 1);
}

static void *stall_observer(void *arg) {
        stall_t *s = arg;
        int64_t deadline = mono_ms() + 2000;

        while (!atomic_load(&s->blocking) && mono_ms() < deadline)
                sleep_ms(1);
        /* While the loop is stuck in blocker_cb. */
        while (!atomic_load(&s->block_over) && mono_ms() < deadline) {
                int64_t ms;
                if (!s->saw_dead && !sl_watchdog_alive(s->w, &ms)) {
                        s->saw_dead = 1;
                        s->stalled_ms = ms;
                        s->probe =
                            sl_watchdog_probe(s->w, s->why, sizeof(s->why));
                }
                double g = sl_gauge_get(s->g_stall);
                if (!atomic_load(&s->block_over))
                        s->gauge_in_stall = SL_MAX(s->gauge_in_stall, g);
                sleep_ms(2);
        }
        /* After: alive again, and the max gauge holds the whole stall. */
        deadline = mono_ms() + 1000;
        while (!s->alive_again && mono_ms() < deadline) {
                s->alive_again = sl_watchdog_alive(s->w, NULL);
                sleep_ms(2);
        }
        while (s->max_after < (BLOCK_MS - TICK_MS) / 1e3 &&
               mono_ms() < deadline) {
                s->max_after = sl_gauge_get(s->g_max);
                sleep_ms(2);
        }
        atomic_store(&s->done, 1);
        return NULL;
}

static void test_blocked_loop_is_stalled(void **state) {
        (void)state;
        uv_loop_t loop;
        uv_timer_t blocker;
        char err[256] = "";
        sl_metrics_t *m = sl_metrics_new();
        stall_t s = {0};
        pthread_t t;

        uv_loop_init(&loop);
        s.w = sl_watchdog_new(&loop, TICK_MS, STALL_MS, m, err, sizeof(err));
        assert_non_null(s.w);
        s.g_stall = sl_metrics_gauge(m, "sluice_loop_stall_seconds", "", NULL);
        s.g_max =
            sl_metrics_gauge(m, "sluice_loop_stall_max_seconds", "", NULL);
        uv_timer_init(&loop, &blocker);
        blocker.data = &s;
        uv_timer_start(&blocker, blocker_cb, 50, 0);

        assert_int_equal(pthread_create(&t, NULL, stall_observer, &s), 0);
        run_until(&loop, &s.done, 3000);
        pthread_join(t, NULL);

        assert_true(atomic_load(&s.block_over));
        assert_true(s.saw_dead);
        assert_true(s.stalled_ms >= STALL_MS && s.stalled_ms <= BLOCK_MS + 200);
        assert_int_equal(s.probe, 0);
        assert_non_null(strstr(s.why, "event loop stalled for 0."));
        assert_true(strlen(s.why) > 4 &&
                    !strcmp(s.why + strlen(s.why) - 2, " s"));
        /* The watchdog thread published the stall while it lasted. */
        assert_true(s.gauge_in_stall >= STALL_MS / 1e3);
        assert_true(s.alive_again);
        /* The tick was due TICK_MS after the last one, at most. */
        assert_true(s.max_after >= (BLOCK_MS - TICK_MS) / 1e3);
        assert_int_equal(sl_watchdog_alive(s.w, NULL), 1);

        /* The tick after the block ran about BLOCK_MS late. */
        sl_histogram_t *lag = sl_metrics_histogram(
            m, "sluice_loop_lag_seconds", "", sl_metrics_buckets_latency,
            sl_metrics_buckets_latency_cnt, NULL);
        assert_true(sl_histogram_sum(lag) >= (BLOCK_MS - 50) / 1e3);

        uv_close((uv_handle_t *)&blocker, NULL);
        destroy_and_close(s.w, &loop);
        sl_metrics_destroy(m);
}

/* ------------------------------------------------------------------ */
/* The shutdown bound, in forked children.                             */

/* What a child does after fork; returns only on a failure, with a code
 * that says which (the harness exits with it). */
typedef int(child_fn)(int ready_fd);

static void block_forever_cb(uv_timer_t *t) {
        (void)t;
        for (;;)
                pause();
}

/* A tick of 1 s: a 200 ms deadline is met only because arming wakes the
 * watchdog thread. */
static sl_watchdog_t *child_watchdog(uv_loop_t *loop) {
        char err[256];
        uv_loop_init(loop);
        sl_watchdog_t *w =
            sl_watchdog_new(loop, 1000, 5000, NULL, err, sizeof(err));
        if (!w)
                fprintf(stderr, "sl_watchdog_new: %s\n", err);
        return w;
}

/* Arms 200 ms / 7, then a later 5 s / 9 (which must not postpone it), and
 * blocks the loop in a callback for good. */
static int child_deadline(int ready_fd) {
        (void)ready_fd;
        uv_loop_t loop;
        uv_timer_t t;
        sl_watchdog_t *w = child_watchdog(&loop);
        if (!w)
                return 90;
        sl_watchdog_shutdown_deadline(w, 200, 7);
        sl_watchdog_shutdown_deadline(w, 5000, 9);
        uv_timer_init(&loop, &t);
        uv_timer_start(&t, block_forever_cb, 0, 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        return 91;
}

/* A sooner deadline armed second wins, with its code. */
static int child_sooner_wins(int ready_fd) {
        (void)ready_fd;
        uv_loop_t loop;
        sl_watchdog_t *w = child_watchdog(&loop);
        if (!w)
                return 90;
        sl_watchdog_shutdown_deadline(w, 5000, 9);
        sl_watchdog_shutdown_deadline(w, 200, 7);
        for (;;)
                pause();
}

static sl_watchdog_t *child_w;

static void on_sigterm(int sig) {
        (void)sig;
        sl_watchdog_shutdown_deadline(child_w, 200, 7);
}

/* Arms from a real signal handler; says it is ready, then waits. */
static int child_signal(int ready_fd) {
        uv_loop_t loop;
        struct sigaction sa = {0};
        if (!(child_w = child_watchdog(&loop)))
                return 90;
        sa.sa_handler = on_sigterm;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGTERM, &sa, NULL) == -1 || write(ready_fd, "r", 1) != 1)
                return 92;
        for (;;)
                pause();
}

/* Destroy disarms: the child lives past the deadline and exits 0. */
static int child_destroy_disarms(int ready_fd) {
        (void)ready_fd;
        uv_loop_t loop;
        sl_watchdog_t *w = child_watchdog(&loop);
        if (!w)
                return 90;
        sl_watchdog_shutdown_deadline(w, 100, 7);
        sl_watchdog_destroy(w);
        uv_run(&loop, UV_RUN_NOWAIT);
        if (uv_loop_close(&loop) != 0)
                return 93;
        sleep_ms(400);
        _exit(0);
}

/* As PID 1 of a new PID namespace, where the kernel ignores signals with
 * the default action: the middle process unshares, its child is PID 1 and
 * runs child_deadline; the middle passes the exit status on. */
static int child_pid1(int ready_fd) {
        if (unshare(CLONE_NEWPID) == -1)
                return 77; /* no PID namespaces here: skip */
        pid_t pid = fork();
        if (pid == -1)
                return 94;
        if (pid == 0) {
                if (getpid() != 1)
                        _exit(95);
                _exit(child_deadline(ready_fd));
        }
        int st;
        if (waitpid(pid, &st, 0) != pid)
                return 96;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct {
        int status;     /* from waitpid */
        int64_t ms;     /* from the fork (or the kill, when killing) */
        char err[4096]; /* what the child wrote to stderr */
} child_t;

/* Forks a child running fn with stderr into a pipe.  With kill_sig, waits
 * for the child's ready byte and sends it the signal.  Waits at most
 * max_ms for it to end; a child still there is killed with its process
 * group and the test fails. */
static child_t run_child(child_fn *fn, int kill_sig, int64_t max_ms) {
        child_t c = {0};
        int errp[2], readyp[2];
        assert_int_equal(pipe(errp), 0);
        assert_int_equal(pipe(readyp), 0);

        int64_t t0 = mono_ms();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                setpgid(0, 0);
                dup2(errp[1], 2);
                close(errp[0]);
                close(readyp[0]);
                _exit(fn(readyp[1]));
        }
        /* Its own process group, so a kill reaches a grandchild too (which
         * would otherwise hold our stdout open for good). */
        setpgid(pid, pid);
        close(errp[1]);
        close(readyp[1]);

        if (kill_sig) {
                struct pollfd p = {.fd = readyp[0], .events = POLLIN};
                char b;
                if (poll(&p, 1, 2000) != 1 || read(readyp[0], &b, 1) != 1) {
                        kill(-pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        fail_msg("child never got ready");
                }
                t0 = mono_ms();
                kill(pid, kill_sig);
        }

        int64_t deadline = t0 + max_ms;
        pid_t r;
        while ((r = waitpid(pid, &c.status, WNOHANG)) == 0 &&
               mono_ms() < deadline)
                sleep_ms(2);
        c.ms = mono_ms() - t0;
        if (r == 0) {
                kill(-pid, SIGKILL);
                waitpid(pid, NULL, 0);
                fail_msg("child still running after %lld ms",
                         (long long)max_ms);
        }
        assert_int_equal(r, pid);

        /* Every writer is gone: read to EOF. */
        size_t n = 0;
        ssize_t k;
        fcntl(errp[0], F_SETFL, O_NONBLOCK);
        while (n < sizeof(c.err) - 1 &&
               (k = read(errp[0], c.err + n, sizeof(c.err) - 1 - n)) > 0)
                n += (size_t)k;
        c.err[n] = '\0';
        close(errp[0]);
        close(readyp[0]);
        return c;
}

static void assert_exited_by_deadline(const child_t *c) {
        if (!WIFEXITED(c->status) || WEXITSTATUS(c->status) != 7)
                fail_msg("child status %#x, stderr:\n%s", c->status, c->err);
        /* Not before the deadline, and well before the next tick. */
        assert_true(c->ms >= 200);
        assert_true(c->ms < 800);
        assert_non_null(strstr(c->err, " crit SHUTDOWN shutdown grace period "
                                       "ran out"));
        assert_non_null(strstr(c->err, "exiting with code 7\n"));
}

static void test_deadline_ends_process(void **state) {
        (void)state;
        child_t c = run_child(child_deadline, 0, 3000);
        assert_exited_by_deadline(&c);
}

static void test_deadline_sooner_wins(void **state) {
        (void)state;
        child_t c = run_child(child_sooner_wins, 0, 3000);
        assert_exited_by_deadline(&c);
}

static void test_deadline_from_signal_handler(void **state) {
        (void)state;
        child_t c = run_child(child_signal, SIGTERM, 3000);
        assert_exited_by_deadline(&c);
}

static void test_deadline_as_pid1(void **state) {
        (void)state;
        child_t c = run_child(child_pid1, 0, 3000);
        if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 77)
                skip();
        assert_exited_by_deadline(&c);
}

static void test_destroy_disarms(void **state) {
        (void)state;
        child_t c = run_child(child_destroy_disarms, 0, 3000);
        if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
                fail_msg("child status %#x, stderr:\n%s", c.status, c.err);
        assert_null(strstr(c.err, "SHUTDOWN"));
}

/* ------------------------------------------------------------------ */
/* Arguments.                                                          */

static void test_arguments(void **state) {
        (void)state;
        uv_loop_t loop;
        char err[256];
        int64_t ms = -1;

        uv_loop_init(&loop);
        err[0] = '\0';
        assert_null(sl_watchdog_new(NULL, 100, 1000, NULL, err, sizeof(err)));
        assert_true(err[0] != '\0');
        err[0] = '\0';
        assert_null(sl_watchdog_new(&loop, 0, 1000, NULL, err, sizeof(err)));
        assert_non_null(strstr(err, "tick"));
        err[0] = '\0';
        assert_null(sl_watchdog_new(&loop, 100, 100, NULL, err, sizeof(err)));
        assert_non_null(strstr(err, "stall"));
        err[0] = '\0';
        assert_null(sl_watchdog_new(&loop, 100, 100LL * 24 * 3600 * 1000, NULL,
                                    err, sizeof(err)));
        assert_non_null(strstr(err, "stall"));
        /* Nothing was left on the loop. */
        assert_int_equal(uv_loop_close(&loop), 0);

        /* NULL: no watchdog, nothing to say. */
        sl_watchdog_destroy(NULL);
        sl_watchdog_shutdown_deadline(NULL, 0, 7);
        assert_int_equal(sl_watchdog_alive(NULL, &ms), 1);
        assert_int_equal(ms, 0);
        assert_int_equal(sl_watchdog_probe(NULL, err, sizeof(err)), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            /* The forks first, while this process has one thread. */
            cmocka_unit_test(test_deadline_ends_process),
            cmocka_unit_test(test_deadline_sooner_wins),
            cmocka_unit_test(test_deadline_from_signal_handler),
            cmocka_unit_test(test_deadline_as_pid1),
            cmocka_unit_test(test_destroy_disarms),
            cmocka_unit_test(test_turning_loop_is_alive),
            cmocka_unit_test(test_blocked_loop_is_stalled),
            cmocka_unit_test(test_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
