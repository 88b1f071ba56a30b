/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_connguard.c — the connection guard's rules on socket pairs (a
 * shut-down connection reads as an end of file on its other end): the
 * oldest WAITING connection of a client makes room for its newer one,
 * BUSY ones never do (the new one is refused instead), one holding unread
 * bytes only when every other does, the server's limit
 * the same across clients, the deadline that trickling cannot renew and
 * keep-alive restarts, client identity (IPv4, v4-mapped, IPv6 /64), the
 * counters, and the reaper thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "connguard.h"
#include "metrics.h"
#include "util.h"

#define MAXC 16

/* One connection: the server's end (guarded) and the client's. */
typedef struct {
        int srv, cli;
        sl_connguard_conn_t *c;
} pair_t;

typedef struct {
        sl_metrics_t *reg;
        sl_connguard_metrics_t m;
        sl_connguard_t *g;
        pair_t p[MAXC];
        int n;
} fix_t;

static struct sockaddr_storage v4(const char *a) {
        struct sockaddr_storage ss = {0};
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, a, &sin->sin_addr), 1);
        return ss;
}

static struct sockaddr_storage v6(const char *a) {
        struct sockaddr_storage ss = {0};
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, a, &sin6->sin6_addr), 1);
        return ss;
}

static void fix_init(fix_t *f, int max, int per_client, int64_t deadline) {
        sl_connguard_conf_t conf = {"test", max, per_client, deadline};
        memset(f, 0, sizeof(*f));
        f->reg = sl_metrics_new();
        f->m.deadline = sl_metrics_counter(f->reg, "c_total", "h", "reason",
                                           "deadline", NULL);
        f->m.client_limit = sl_metrics_counter(f->reg, "c_total", "h", "reason",
                                               "client_limit", NULL);
        f->m.limit =
            sl_metrics_counter(f->reg, "c_total", "h", "reason", "limit", NULL);
        f->m.refused = sl_metrics_counter(f->reg, "c_total", "h", "reason",
                                          "refused", NULL);
        f->m.open = sl_metrics_gauge(f->reg, "open", "h", NULL);
        f->g = sl_connguard_new(&conf, &f->m);
}

/* Opens connection i from addr at now. */
static int fix_open(fix_t *f, struct sockaddr_storage addr, int64_t now) {
        int sv[2];
        pair_t *p = &f->p[f->n];
        assert_true(f->n < MAXC);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        p->srv = sv[0];
        p->cli = sv[1];
        p->c = sl_connguard_open(f->g, p->srv, (struct sockaddr *)&addr, now);
        assert_non_null(p->c);
        return f->n++;
}

/* 1 when the guard shut connection i down: its client reads an end of
 * file at once (0: nothing to read yet). */
static int shut(fix_t *f, int i) {
        char b;
        ssize_t r = recv(f->p[i].cli, &b, 1, MSG_DONTWAIT);
        if (r == 0)
                return 1;
        assert_true(r == -1 && (errno == EAGAIN || errno == EWOULDBLOCK));
        return 0;
}

static void fix_free(fix_t *f) {
        for (int i = 0; i < f->n; i++) {
                sl_connguard_close(f->g, f->p[i].c);
                close(f->p[i].srv);
                close(f->p[i].cli);
        }
        assert_int_equal(sl_connguard_count(f->g), 0);
        sl_connguard_destroy(f->g);
        sl_metrics_destroy(f->reg);
}

static void test_per_client(void **state) {
        fix_t f;
        (void)state;
        fix_init(&f, 10, 2, 60000);
        int a = fix_open(&f, v4("10.0.0.1"), 0);
        int b = fix_open(&f, v4("10.0.0.1"), 10);
        int other = fix_open(&f, v4("10.0.0.2"), 5);
        assert_false(shut(&f, a) || shut(&f, b) || shut(&f, other));
        /* A third from 10.0.0.1: its oldest waiting one goes. */
        int c = fix_open(&f, v4("10.0.0.1"), 20);
        assert_true(shut(&f, a));
        assert_false(shut(&f, b) || shut(&f, c) || shut(&f, other));
        assert_int_equal(sl_connguard_count(f.g), 3);
        assert_int_equal(sl_counter_get(f.m.client_limit), 1);
        assert_int_equal(sl_gauge_get(f.m.open), 3);
        /* b is being answered: c, though newer, makes room. */
        sl_connguard_busy(f.g, f.p[b].c);
        int d = fix_open(&f, v4("10.0.0.1"), 30);
        assert_true(shut(&f, c));
        assert_false(shut(&f, b) || shut(&f, d));
        /* Both busy: the new one is refused. */
        sl_connguard_busy(f.g, f.p[d].c);
        int e = fix_open(&f, v4("10.0.0.1"), 40);
        assert_true(shut(&f, e));
        assert_false(shut(&f, b) || shut(&f, d));
        assert_int_equal(sl_counter_get(f.m.refused), 1);
        assert_int_equal(sl_counter_get(f.m.client_limit), 2);
        /* b answered (keep-alive): waiting again, and now the one to go
         * for a newer one. */
        sl_connguard_idle(f.g, f.p[b].c, 50);
        int g = fix_open(&f, v4("10.0.0.1"), 60);
        assert_true(shut(&f, b));
        assert_false(shut(&f, d) || shut(&f, g) || shut(&f, other));
        /* The server closed d: room again, nobody shut. */
        sl_connguard_close(f.g, f.p[d].c);
        f.p[d].c = NULL;
        int h = fix_open(&f, v4("10.0.0.1"), 70);
        assert_false(shut(&f, g) || shut(&f, h));
        assert_int_equal(sl_counter_get(f.m.limit), 0);
        fix_free(&f);
}

/* A request sent whole and not yet read by the server is about to be
 * answered: its connection is passed over while another can make room. */
static void test_unread_passed_over(void **state) {
        fix_t f;
        (void)state;
        fix_init(&f, 10, 2, 60000);
        int a = fix_open(&f, v4("10.0.0.1"), 0);
        int b = fix_open(&f, v4("10.0.0.1"), 10);
        assert_int_equal(send(f.p[a].cli, "GET / HTTP/1.1\r\n\r\n", 18, 0), 18);
        int c = fix_open(&f, v4("10.0.0.1"), 20);
        assert_true(shut(&f, b));
        assert_false(shut(&f, a) || shut(&f, c));
        /* Every candidate has unread bytes: the oldest goes after all. */
        assert_int_equal(send(f.p[c].cli, "G", 1, 0), 1);
        int d = fix_open(&f, v4("10.0.0.1"), 30);
        assert_true(shut(&f, a));
        assert_false(shut(&f, c) || shut(&f, d));
        fix_free(&f);
}

static void test_capacity(void **state) {
        fix_t f;
        (void)state;
        fix_init(&f, 3, 3, 60000);
        int a = fix_open(&f, v4("10.0.0.1"), 0);
        int b = fix_open(&f, v4("10.0.0.2"), 10);
        int c = fix_open(&f, v4("10.0.0.3"), 20);
        /* a answered and waits again, later than b: b is the oldest. */
        sl_connguard_busy(f.g, f.p[a].c);
        sl_connguard_idle(f.g, f.p[a].c, 25);
        int d = fix_open(&f, v4("10.0.0.4"), 30);
        assert_true(shut(&f, b));
        assert_false(shut(&f, a) || shut(&f, c) || shut(&f, d));
        assert_int_equal(sl_counter_get(f.m.limit), 1);
        /* Every one busy: the newcomer is refused. */
        sl_connguard_busy(f.g, f.p[a].c);
        sl_connguard_busy(f.g, f.p[c].c);
        sl_connguard_busy(f.g, f.p[d].c);
        int e = fix_open(&f, v4("10.0.0.5"), 40);
        assert_true(shut(&f, e));
        assert_int_equal(sl_counter_get(f.m.refused), 1);
        assert_int_equal(sl_connguard_count(f.g), 3);
        fix_free(&f);
}

static void test_deadline(void **state) {
        fix_t f;
        (void)state;
        fix_init(&f, 10, 10, 1000);
        int a = fix_open(&f, v4("10.0.0.1"), 0);
        int b = fix_open(&f, v4("10.0.0.1"), 500);
        int c = fix_open(&f, v4("10.0.0.1"), 600);
        sl_connguard_busy(f.g, f.p[c].c);
        /* Bytes arriving change nothing: only the request being in does. */
        assert_int_equal(sl_connguard_reap(f.g, 999), 1000);
        assert_false(shut(&f, a) || shut(&f, b));
        assert_int_equal(sl_connguard_reap(f.g, 1000), 1500);
        assert_true(shut(&f, a));
        assert_false(shut(&f, b));
        /* A busy one is out of reach; once answered, it waits anew. */
        assert_int_equal(sl_connguard_reap(f.g, 1700), INT64_MAX);
        assert_true(shut(&f, b));
        assert_false(shut(&f, c));
        sl_connguard_idle(f.g, f.p[c].c, 5000);
        assert_int_equal(sl_connguard_reap(f.g, 5999), 6000);
        assert_false(shut(&f, c));
        sl_connguard_reap(f.g, 6000);
        assert_true(shut(&f, c));
        assert_int_equal(sl_counter_get(f.m.deadline), 3);
        assert_int_equal(sl_connguard_count(f.g), 0);
        /* Shut entries stay listed until the server closes them, and are
         * never shut twice. */
        assert_int_equal(sl_connguard_reap(f.g, 10000), INT64_MAX);
        assert_int_equal(sl_counter_get(f.m.deadline), 3);
        fix_free(&f);
}

static void test_client_identity(void **state) {
        fix_t f;
        (void)state;
        fix_init(&f, 16, 1, 60000);
        /* One IPv6 /64 is one client. */
        int a = fix_open(&f, v6("2001:db8:1:2::1"), 0);
        int b = fix_open(&f, v6("2001:db8:1:2:ffff::9"), 1);
        assert_true(shut(&f, a));
        assert_false(shut(&f, b));
        int c = fix_open(&f, v6("2001:db8:1:3::1"), 2);
        assert_false(shut(&f, b) || shut(&f, c));
        /* An IPv4 client and its v4-mapped IPv6 form are one client. */
        int d = fix_open(&f, v4("192.0.2.7"), 3);
        int e = fix_open(&f, v6("::ffff:192.0.2.7"), 4);
        assert_true(shut(&f, d));
        assert_false(shut(&f, e));
        /* ... and not the /64 of ::ffff:0:0. */
        int g = fix_open(&f, v6("::ffff:192.0.2.8"), 5);
        assert_false(shut(&f, e) || shut(&f, g));
        assert_int_equal(sl_counter_get(f.m.client_limit), 2);
        fix_free(&f);
}

static void test_reaper_thread(void **state) {
        fix_t f;
        struct timespec ts = {0, 10 * 1000 * 1000};
        int64_t t0 = sl_mono_us() / 1000, waited;
        (void)state;
        fix_init(&f, 4, 4, 150);
        assert_int_equal(sl_connguard_start(f.g), 0);
        int a = fix_open(&f, v4("10.0.0.1"), t0);
        int b = fix_open(&f, v4("10.0.0.1"), t0);
        sl_connguard_busy(f.g, f.p[b].c);
        while (!shut(&f, a)) {
                assert_true(sl_mono_us() / 1000 - t0 < 5000);
                nanosleep(&ts, NULL);
        }
        waited = sl_mono_us() / 1000 - t0;
        assert_true(waited >= 150);
        assert_false(shut(&f, b));
        fix_free(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_per_client),
            cmocka_unit_test(test_unread_passed_over),
            cmocka_unit_test(test_capacity),
            cmocka_unit_test(test_deadline),
            cmocka_unit_test(test_client_identity),
            cmocka_unit_test(test_reaper_thread),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
