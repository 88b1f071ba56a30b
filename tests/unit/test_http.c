/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http.c — the metrics address on loopback: status lines, headers and
 * bodies of /metrics, /healthz (the loop's flag and the alive function),
 * /readyz, 404 and 405, listen-address parsing, and start/stop hygiene.  A
 * raw-socket client, no curl.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http.h"
#include "metrics.h"
#include "util.h"

typedef struct {
        int status;
        char *head; /* status line and headers */
        char *body;
} resp_t;

static void resp_free(resp_t *r) {
        free(r->head);
        free(r->body);
}

/* Sends raw bytes to the server at addr:port, reads to EOF (the requests
 * say Connection: close), splits the answer.  Every read has a deadline. */
static resp_t http_raw(int family, const char *addr, int port,
                       const char *request) {
        resp_t r = {0};
        struct sockaddr_storage ss = {0};
        socklen_t sl;
        int fd = socket(family, SOCK_STREAM, 0);
        assert_true(fd >= 0);

        if (family == AF_INET) {
                struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
                sin->sin_family = AF_INET;
                sin->sin_port = htons((uint16_t)port);
                assert_int_equal(inet_pton(AF_INET, addr, &sin->sin_addr), 1);
                sl = sizeof(*sin);
        } else {
                struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons((uint16_t)port);
                assert_int_equal(inet_pton(AF_INET6, addr, &sin6->sin6_addr),
                                 1);
                sl = sizeof(*sin6);
        }
        struct timeval tv = {.tv_sec = 5};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        assert_int_equal(connect(fd, (struct sockaddr *)&ss, sl), 0);

        size_t len = strlen(request);
        assert_int_equal(send(fd, request, len, MSG_NOSIGNAL), (ssize_t)len);

        size_t cap = 4096, n = 0;
        char *buf = sl_malloc(cap);
        for (;;) {
                if (n + 1024 > cap)
                        buf = sl_realloc(buf, cap *= 2);
                ssize_t k = recv(fd, buf + n, cap - n - 1, 0);
                assert_true(k >= 0); /* -1 would be the 5 s deadline */
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        buf[n] = '\0';
        close(fd);

        char *sep = strstr(buf, "\r\n\r\n");
        assert_non_null(sep);
        r.head = sl_strndup(buf, (size_t)(sep - buf));
        r.body = sl_strdup(sep + 4);
        assert_int_equal(sscanf(buf, "HTTP/1.%*d %d ", &r.status), 1);
        free(buf);
        return r;
}

static resp_t http_req(int port, const char *method, const char *path) {
        char req[512];
        snprintf(req, sizeof(req),
                 "%s %s HTTP/1.1\r\nHost: localhost\r\n"
                 "Connection: close\r\n\r\n",
                 method, path);
        return http_raw(AF_INET, "127.0.0.1", port, req);
}

/* Case-insensitive header lookup in r->head: is "name: value" there? */
static int has_header(const resp_t *r, const char *name, const char *value) {
        char want[256];
        snprintf(want, sizeof(want), "\r\n%s: %s\r", name, value);
        size_t hlen = strlen(r->head) + 3;
        char *h = sl_malloc(hlen);
        snprintf(h, hlen, "%s\r\n", r->head);
        int found = strcasestr(h, want) != NULL;
        free(h);
        return found;
}

static int count_fds(void) {
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

typedef struct {
        sl_metrics_t *m;
        sl_http_t *h;
        int port;
} fixture_t;

static int setup(void **state) {
        fixture_t *f = sl_calloc(1, sizeof(*f));
        char err[256] = "";
        f->m = sl_metrics_new();
        f->h = sl_http_start("127.0.0.1:0", f->m, NULL, err, sizeof(err));
        if (!f->h) {
                fprintf(stderr, "sl_http_start: %s\n", err);
                return -1;
        }
        f->port = sl_http_port(f->h);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        fixture_t *f = *state;
        sl_http_stop(f->h);
        sl_metrics_destroy(f->m);
        free(f);
        return 0;
}

static void test_metrics_endpoint(void **state) {
        fixture_t *f = *state;
        assert_true(f->port > 0 && f->port < 65536);

        sl_counter_t *c =
            sl_metrics_counter(f->m, "sluice_records_in_total", "Records read.",
                               "pipeline", "p\"1", NULL);
        sl_counter_add(c, 7);

        resp_t r = http_req(f->port, "GET", "/metrics");
        assert_int_equal(r.status, 200);
        assert_true(has_header(&r, "Content-Type",
                               "text/plain; version=0.0.4; charset=utf-8"));
        /* The body is exactly what the registry renders (modulo the
         * process figures, which move). */
        assert_non_null(strstr(r.body, "# TYPE sluice_records_in_total "
                                       "counter\n"
                                       "sluice_records_in_total{pipeline="
                                       "\"p\\\"1\"} 7\n"));
        assert_non_null(strstr(r.body, "\nprocess_resident_memory_bytes "));
        assert_non_null(strstr(r.body, "\nprocess_start_time_seconds "));
        assert_true(strlen(r.body) > 0 && r.body[strlen(r.body) - 1] == '\n');
        resp_free(&r);

        /* A scrape sees updates made since the last one. */
        sl_counter_inc(c);
        r = http_req(f->port, "GET", "/metrics?x=1");
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, "{pipeline=\"p\\\"1\"} 8\n"));
        resp_free(&r);
}

static void test_healthz(void **state) {
        fixture_t *f = *state;

        resp_t r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503); /* the loop has not started */
        assert_string_equal(r.body, "event loop not running\n");
        resp_free(&r);

        sl_http_set_alive(f->h, 1);
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok\n");
        assert_true(
            has_header(&r, "Content-Type", "text/plain; charset=utf-8"));
        assert_true(has_header(&r, "Cache-Control", "no-store"));
        resp_free(&r);

        sl_http_set_alive(f->h, 0);
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503);
        resp_free(&r);
}

/* An alive function driven by the test: what it answers, and what it saw. */
typedef struct {
        int alive;
        const char *why;
        int calls;
        int on_other_thread; /* every call ran off the test's thread */
        pthread_t test_thread;
} probe_t;

static int probe_fn(void *opaque, char *why, size_t why_size) {
        probe_t *p = opaque;
        p->calls++;
        if (pthread_equal(pthread_self(), p->test_thread))
                p->on_other_thread = 0;
        if (!p->alive)
                snprintf(why, why_size, "%s", p->why);
        return p->alive;
}

static void test_healthz_alive_fn(void **state) {
        fixture_t *f = *state;
        probe_t p = {.alive = 1,
                     .why = "",
                     .on_other_thread = 1,
                     .test_thread = pthread_self()};

        sl_http_set_alive(f->h, 1);
        sl_http_set_alive_fn(f->h, probe_fn, &p);

        resp_t r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);
        assert_int_equal(p.calls, 1);

        /* Not alive: 503 with the function's reason, asked per request. */
        p.alive = 0;
        p.why = "event loop stalled for 12.3 s";
        for (int i = 0; i < 2; i++) {
                r = http_req(f->port, "GET", "/healthz");
                assert_int_equal(r.status, 503);
                assert_string_equal(r.body, "event loop stalled for 12.3 s\n");
                assert_true(has_header(&r, "Cache-Control", "no-store"));
                resp_free(&r);
        }
        assert_int_equal(p.calls, 3);

        /* A reason is one line; no reason at all still says something. */
        p.why = "stalled\nfor a while\r";
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "stalled for a while \n");
        resp_free(&r);
        p.why = "";
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "not alive\n");
        resp_free(&r);

        /* A reason longer than the buffer is cut, still one line. */
        char longr[600];
        memset(longr, 'y', sizeof(longr) - 1);
        longr[sizeof(longr) - 1] = '\0';
        p.why = longr;
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503);
        assert_int_equal(strlen(r.body), 256); /* 255 bytes + newline */
        resp_free(&r);

        /* Both must say alive: the flag down wins over an alive function,
         * and the function is not asked. */
        p.alive = 1;
        sl_http_set_alive(f->h, 0);
        int calls = p.calls;
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "event loop not running\n");
        resp_free(&r);
        assert_int_equal(p.calls, calls);

        sl_http_set_alive(f->h, 1);
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 200);
        resp_free(&r);

        /* /readyz does not ask it. */
        calls = p.calls;
        r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 503);
        resp_free(&r);
        assert_int_equal(p.calls, calls);

        /* Removed: the flag alone decides again, the function is never
         * called after the removal returned. */
        p.alive = 0;
        p.why = "stale";
        sl_http_set_alive_fn(f->h, NULL, &p);
        calls = p.calls;
        r = http_req(f->port, "GET", "/healthz");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);
        assert_int_equal(p.calls, calls);
        assert_true(p.on_other_thread);

        sl_http_set_alive_fn(NULL, probe_fn, &p); /* NULL h: no-op */
}

static void test_readyz(void **state) {
        fixture_t *f = *state;

        resp_t r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "starting\n");
        resp_free(&r);

        sl_http_set_ready(f->h, 0, "rebuilding 3 of 12\npartitions\r");
        r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "rebuilding 3 of 12 partitions \n");
        resp_free(&r);

        sl_http_set_ready(f->h, 1, NULL);
        r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ready\n");
        resp_free(&r);

        /* A rebalance takes readiness away again; no reason given. */
        sl_http_set_ready(f->h, 0, NULL);
        r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 503);
        assert_string_equal(r.body, "not ready\n");
        resp_free(&r);

        /* A reason longer than the limit is cut, still one line. */
        char longr[600];
        memset(longr, 'x', sizeof(longr) - 1);
        longr[sizeof(longr) - 1] = '\0';
        sl_http_set_ready(f->h, 0, longr);
        r = http_req(f->port, "GET", "/readyz");
        assert_int_equal(r.status, 503);
        assert_int_equal(strlen(r.body), 256); /* 255 bytes + newline */
        resp_free(&r);
}

static void test_not_found_and_methods(void **state) {
        fixture_t *f = *state;
        static const char *const paths[] = {"/", "/metricsx", "/metrics/",
                                            "/health", "/readyz/x"};

        for (size_t i = 0; i < SL_ARRAY_SIZE(paths); i++) {
                resp_t r = http_req(f->port, "GET", paths[i]);
                assert_int_equal(r.status, 404);
                assert_string_equal(r.body, "not found\n");
                resp_free(&r);
        }

        static const char *const methods[] = {"PUT", "DELETE", "OPTIONS"};
        for (size_t i = 0; i < SL_ARRAY_SIZE(methods); i++) {
                resp_t r = http_req(f->port, methods[i], "/metrics");
                assert_int_equal(r.status, 405);
                assert_true(has_header(&r, "Allow", "GET, HEAD"));
                resp_free(&r);
        }

        /* A POST with a body is refused without reading it. */
        resp_t r = http_raw(AF_INET, "127.0.0.1", f->port,
                            "POST /metrics HTTP/1.1\r\nHost: x\r\n"
                            "Connection: close\r\nContent-Length: 5\r\n\r\n"
                            "hello");
        assert_int_equal(r.status, 405);
        assert_string_equal(r.body, "method not allowed\n");
        resp_free(&r);

        /* HEAD answers like GET, without a body. */
        sl_http_set_alive(f->h, 1);
        r = http_req(f->port, "HEAD", "/healthz");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "");
        resp_free(&r);

        /* HTTP/1.0, no Host header. */
        r = http_raw(AF_INET, "127.0.0.1", f->port,
                     "GET /healthz HTTP/1.0\r\n\r\n");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ok\n");
        resp_free(&r);
}

static void test_listen_check(void **state) {
        (void)state;
        char err[256];
        static const char *const good[] = {
            "127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464",  "[::]:0",
            ":9464",          "*:9464",       "localhost:1", "127.0.0.1:65535",
        };
        static const char *const bad[] = {
            "",           "127.0.0.1",    "127.0.0.1:",     "127.0.0.1:65536",
            "1.2.3.4:ab", "::1:9464",     "[::1]9464",      "[::1:9464",
            "[]:9464",    "127.0.0.1:-1", "1.2.3.4:123456", "999.1.1.1x:9464",
        };
        for (size_t i = 0; i < SL_ARRAY_SIZE(good); i++) {
                err[0] = '\0';
                if (sl_http_listen_check(good[i], err, sizeof(err)) != 0)
                        fail_msg("%s: %s", good[i], err);
        }
        for (size_t i = 0; i < SL_ARRAY_SIZE(bad); i++) {
                err[0] = '\0';
                if (sl_http_listen_check(bad[i], err, sizeof(err)) != -1)
                        fail_msg("accepted \"%s\"", bad[i]);
                assert_true(err[0] != '\0');
        }
        assert_int_equal(sl_http_listen_check(NULL, err, sizeof(err)), -1);
}

static void test_start_errors(void **state) {
        fixture_t *f = *state;
        char err[256] = "", addr[64];

        /* The fixture holds the port: a second server cannot have it. */
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
        assert_null(sl_http_start(addr, f->m, NULL, err, sizeof(err)));
        assert_non_null(strstr(err, addr));
        assert_true(strlen(err) > strlen("cannot listen on ") + strlen(addr));

        err[0] = '\0';
        assert_null(sl_http_start("nonsense", f->m, NULL, err, sizeof(err)));
        assert_true(err[0] != '\0');

        err[0] = '\0';
        assert_null(sl_http_start("127.0.0.1:0", NULL, NULL, err, sizeof(err)));
        assert_true(err[0] != '\0');

        /* NULL handles are no-ops. */
        sl_http_stop(NULL);
        sl_http_set_alive(NULL, 1);
        sl_http_set_ready(NULL, 1, "x");
        assert_int_equal(sl_http_port(NULL), 0);
}

static void test_ipv6_loopback(void **state) {
        (void)state;
        char err[256] = "";
        sl_metrics_t *m = sl_metrics_new();

        int probe = socket(AF_INET6, SOCK_STREAM, 0);
        if (probe < 0) {
                sl_metrics_destroy(m);
                skip(); /* no IPv6 in this sandbox */
        }
        close(probe);

        sl_http_t *h = sl_http_start("[::1]:0", m, NULL, err, sizeof(err));
        if (!h && strstr(err, "ddress")) { /* ::1 not configured */
                sl_metrics_destroy(m);
                skip();
        }
        assert_non_null(h);
        sl_http_set_ready(h, 1, NULL);
        resp_t r = http_raw(AF_INET6, "::1", sl_http_port(h),
                            "GET /readyz HTTP/1.0\r\n\r\n");
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body, "ready\n");
        resp_free(&r);
        sl_http_stop(h);
        sl_metrics_destroy(m);
}

/* Start and stop leave no descriptor behind, and a stopped server's port
 * refuses connections. */
static void test_stop_releases(void **state) {
        (void)state;
        char err[256] = "";
        sl_metrics_t *m = sl_metrics_new();
        int before = count_fds();

        for (int i = 0; i < 3; i++) {
                sl_http_t *h =
                    sl_http_start("127.0.0.1:0", m, NULL, err, sizeof(err));
                assert_non_null(h);
                int port = sl_http_port(h);
                resp_t r = http_req(port, "GET", "/metrics");
                assert_int_equal(r.status, 200);
                resp_free(&r);
                sl_http_stop(h);

                int fd = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in sin = {.sin_family = AF_INET,
                                          .sin_port = htons((uint16_t)port)};
                inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
                assert_int_equal(
                    connect(fd, (struct sockaddr *)&sin, sizeof(sin)), -1);
                assert_int_equal(errno, ECONNREFUSED);
                close(fd);
        }
        assert_int_equal(count_fds(), before);
        sl_metrics_destroy(m);
}

/* A connection to 127.0.0.1:port that has sent nothing. */
static int connect_to(int port) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port)};
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fd >= 0);
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
        assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        return fd;
}

/* 1 when the server closed fd (an end of file or a reset is waiting). */
static int is_closed(int fd) {
        char b[256];
        ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        return r == 0 || (r == -1 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Waits up to ms for the gauge g to read v. */
static int gauge_reaches(sl_gauge_t *g, double v, int ms) {
        int64_t end = sl_mono_us() + (int64_t)ms * 1000;
        struct timespec ts = {0, 5 * 1000 * 1000};
        while (sl_gauge_get(g) != v) {
                if (sl_mono_us() > end)
                        return 0;
                nanosleep(&ts, NULL);
        }
        return 1;
}

/* The guard in the server (connguard.h has the rules; test_connguard.c
 * tests them alone): a request trickled a byte every 50 ms is closed at
 * its deadline, though it never goes quiet for the 10 s of
 * libmicrohttpd's inactivity timeout; and with the client's share held by
 * two connections that sent a byte each (one that sends nothing is not
 * even accepted: TCP_DEFER_ACCEPT), a request from the same address is
 * answered and the older of the two makes room. */
static void test_hostile_clients(void **state) {
        sl_http_limits_t lim = {4, 2, 1000};
        sl_metrics_t *m = sl_metrics_new();
        char err[256] = "";
        const char *head = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        struct timespec tick = {0, 50 * 1000 * 1000};
        (void)state;

        sl_http_t *h = sl_http_start("127.0.0.1:0", m, &lim, err, sizeof(err));
        assert_non_null(h);
        sl_http_set_alive(h, 1);
        int port = sl_http_port(h);
        sl_gauge_t *open =
            sl_metrics_gauge(m, "sluice_http_connections", "", NULL);
        sl_counter_t *deadline =
            sl_metrics_counter(m, "sluice_http_connections_closed_total", "",
                               "reason", "deadline", NULL);
        sl_counter_t *client_limit =
            sl_metrics_counter(m, "sluice_http_connections_closed_total", "",
                               "reason", "client_limit", NULL);

        int64_t t0 = sl_mono_us();
        int t = connect_to(port);
        for (size_t i = 0; !is_closed(t); i++) {
                /* A write to a connection closed meanwhile may fail. */
                (void)send(t, head + i % strlen(head), 1, MSG_NOSIGNAL);
                assert_true(sl_mono_us() - t0 < 5000 * 1000);
                nanosleep(&tick, NULL);
        }
        int64_t held_ms = (sl_mono_us() - t0) / 1000;
        assert_true(held_ms >= 1000 && held_ms < 2500);
        assert_int_equal(sl_counter_get(deadline), 1);
        close(t);
        assert_true(gauge_reaches(open, 0, 2000));

        int a = connect_to(port);
        assert_int_equal(send(a, "G", 1, MSG_NOSIGNAL), 1);
        assert_true(gauge_reaches(open, 1, 900));
        int b = connect_to(port);
        assert_int_equal(send(b, "G", 1, MSG_NOSIGNAL), 1);
        assert_true(gauge_reaches(open, 2, 900));
        resp_t r = http_req(port, "GET", "/healthz");
        assert_int_equal(r.status, 200);
        resp_free(&r);
        assert_true(is_closed(a));
        assert_false(is_closed(b));
        assert_int_equal(sl_counter_get(client_limit), 1);
        close(a);
        close(b);
        sl_http_stop(h);
        sl_metrics_destroy(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_metrics_endpoint, setup,
                                            teardown),
            cmocka_unit_test_setup_teardown(test_healthz, setup, teardown),
            cmocka_unit_test_setup_teardown(test_healthz_alive_fn, setup,
                                            teardown),
            cmocka_unit_test_setup_teardown(test_readyz, setup, teardown),
            cmocka_unit_test_setup_teardown(test_not_found_and_methods, setup,
                                            teardown),
            cmocka_unit_test(test_listen_check),
            cmocka_unit_test_setup_teardown(test_start_errors, setup, teardown),
            cmocka_unit_test(test_ipv6_loopback),
            cmocka_unit_test(test_stop_releases),
            cmocka_unit_test(test_hostile_clients),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
