/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c — the API's pure parts: bearer tokens, and the route table
 * agrees with api/openapi.yaml; and the answers the server gives before
 * it needs Kafka (a 405 and its Allow header, a 401), from an API started
 * on loopback whose producer has no broker to reach.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "api.h"
#include "log.h"
#include "util.h"

static void test_tokens(void **state) {
        char *toks[] = {"s3cret", "other-token"};
        (void)state;
        assert_true(sl_api_token_ok("Bearer s3cret", toks, 2));
        assert_true(sl_api_token_ok("bearer other-token", toks, 2));
        assert_true(sl_api_token_ok("Bearer  s3cret ", toks, 2));
        assert_false(sl_api_token_ok(NULL, toks, 2));
        assert_false(sl_api_token_ok("", toks, 2));
        assert_false(sl_api_token_ok("Bearer ", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cre", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cretX", toks, 2));
        assert_false(sl_api_token_ok("Basic s3cret", toks, 2));
        assert_false(sl_api_token_ok("s3cret", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cret", toks, 0));
}

/* Every route the server serves is in api/openapi.yaml under the same
 * path and method, and the description has no route the server lacks. */
static void test_openapi_routes(void **state) {
        const char *path = getenv("SLUICE_OPENAPI");
        FILE *f;
        char line[1024], cur[512] = "";
        char seen[64][600];
        int seen_cnt = 0;
        (void)state;

        f = fopen(path ? path : "api/openapi.yaml", "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                char p[512], m[16];
                if (sscanf(line, "  %511[^: ]:", p) == 1 && line[2] == '/' &&
                    strncmp(line, "   ", 3))
                        snprintf(cur, sizeof(cur), "%s", p);
                else if (line[0] != ' ')
                        cur[0] = '\0';
                else if (*cur && !strncmp(line, "    ", 4) && line[4] != ' ' &&
                         sscanf(line, "    %15[a-z]:", m) == 1 &&
                         (!strcmp(m, "get") || !strcmp(m, "put") ||
                          !strcmp(m, "post") || !strcmp(m, "delete") ||
                          !strcmp(m, "patch"))) {
                        assert_true(seen_cnt < 64);
                        for (char *c = m; *c; c++)
                                *c = (char)(*c - 'a' + 'A');
                        snprintf(seen[seen_cnt++], sizeof(seen[0]), "%s %s", m,
                                 cur);
                }
        }
        fclose(f);
        assert_int_equal(seen_cnt, sl_api_route_cnt());
        for (int i = 0; i < sl_api_route_cnt(); i++) {
                const char *method, *rpath;
                char want[600];
                int found = 0;
                sl_api_route(i, &method, &rpath);
                snprintf(want, sizeof(want), "%s %s", method, rpath);
                for (int j = 0; j < seen_cnt; j++)
                        found |= !strcmp(seen[j], want);
                if (!found)
                        fail_msg("route %s is not in api/openapi.yaml", want);
        }
}

/* Sends request to 127.0.0.1:port and reads the answer to its end (the
 * request says Connection: close) into buf; every read has a deadline. */
static void http_ask(int port, const char *request, char *buf, size_t size) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port)};
        struct timeval tv = {.tv_sec = 5};
        size_t n = 0;
        ssize_t k;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        assert_true(fd >= 0);
        inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
        assert_int_equal(send(fd, request, strlen(request), MSG_NOSIGNAL),
                         (ssize_t)strlen(request));
        while (n + 1 < size && (k = recv(fd, buf + n, size - n - 1, 0)) > 0)
                n += (size_t)k;
        buf[n] = '\0';
        close(fd);
}

/* A method a path does not take is answered 405 with the Error body and
 * an Allow header naming the methods it takes (the index, a timer, a
 * flush); without a token, 401 comes first. */
static void test_method_not_allowed(void **state) {
        char dir[] = "/tmp/sluice-test-api-XXXXXX", ini[64], toks[64];
        char err[256] = "", buf[4096], req[512];
        static const struct {
                const char *method, *path, *allow;
        } cases[] = {
            {"POST", "/v1", "GET, HEAD"},
            {"GET", "/v1", NULL},
            {"POST", "/v1/pipelines/timers/timers/x", "PUT, GET, DELETE"},
            {"GET", "/v1/pipelines/timers/groups/x/flush", "POST"},
            {"DELETE", "/v1/pipelines/timers/dlq/replay", "GET, HEAD, POST"},
        };
        sl_conf_t *conf = NULL;
        sl_api_t *api;
        uv_loop_t loop;
        FILE *f;
        int port;
        (void)state;

        assert_non_null(mkdtemp(dir));
        snprintf(ini, sizeof(ini), "%s/t.ini", dir);
        snprintf(toks, sizeof(toks), "%s/tokens", dir);
        assert_non_null(f = fopen(toks, "w"));
        fputs("tok-1\n", f);
        fclose(f);
        assert_non_null(f = fopen(ini, "w"));
        fprintf(f,
                "[sluice]\napp_id = test-api\napi_listen = 127.0.0.1:0\n"
                "api_tokens_file = %s\n"
                "[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
                "[pipeline timers]\ntype = delay\ninput = t.in\n"
                "api = true\n",
                toks);
        fclose(f);
        assert_int_equal(sl_conf_load(ini, 0, &conf, stderr), 0);
        assert_int_equal(uv_loop_init(&loop), 0);
        sl_log_set_level(LOG_CRIT); /* the producer's "brokers are down" */
        api = sl_api_start(conf, &loop, NULL, NULL, NULL, err, sizeof(err));
        if (!api)
                fail_msg("sl_api_start: %s", err);
        port = atoi(strrchr(sl_api_advertised(api), ':') + 1);
        assert_true(port > 0);

        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                char want[64];
                snprintf(req, sizeof(req),
                         "%s %s HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Bearer tok-1\r\n"
                         "Connection: close\r\n\r\n",
                         cases[i].method, cases[i].path);
                http_ask(port, req, buf, sizeof(buf));
                if (!cases[i].allow) {
                        /* The index takes GET: no Allow. */
                        assert_int_equal(strncmp(buf, "HTTP/1.1 200 ", 13), 0);
                        assert_null(strcasestr(buf, "\r\nAllow:"));
                        continue;
                }
                snprintf(want, sizeof(want), "\r\nAllow: %s\r\n",
                         cases[i].allow);
                if (strncmp(buf, "HTTP/1.1 405 ", 13) ||
                    !strcasestr(buf, want) ||
                    !strstr(buf, "{\"code\":\"method-not-allowed\","
                                 "\"message\":\"method "))
                        fail_msg("%s %s: %s", cases[i].method, cases[i].path,
                                 buf);
        }

        /* The DLQ replay's routes: no replay yet (404), a bad body (400),
         * in the Error shape; neither starts one. */
        http_ask(port,
                 "GET /v1/pipelines/timers/dlq/replay HTTP/1.1\r\nHost: x\r\n"
                 "Authorization: Bearer tok-1\r\nConnection: close\r\n\r\n",
                 buf, sizeof(buf));
        if (strncmp(buf, "HTTP/1.1 404 ", 13) ||
            !strstr(buf, "{\"code\":\"no-replay\",\"message\":"))
                fail_msg("GET replay: %s", buf);
        http_ask(port,
                 "POST /v1/pipelines/timers/dlq/replay HTTP/1.1\r\nHost: x\r\n"
                 "Authorization: Bearer tok-1\r\nContent-Length: 14\r\n"
                 "Connection: close\r\n\r\n{\"limit\": \"x\"}",
                 buf, sizeof(buf));
        if (strncmp(buf, "HTTP/1.1 400 ", 13) ||
            !strstr(buf, "{\"code\":\"bad-body\",\"message\":\"limit: "))
                fail_msg("POST replay, a bad body: %s", buf);

        /* No token: 401, whatever the method. */
        http_ask(port,
                 "POST /v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 buf, sizeof(buf));
        assert_int_equal(strncmp(buf, "HTTP/1.1 401 ", 13), 0);
        assert_null(strcasestr(buf, "\r\nAllow:"));

        sl_api_stop(api);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(uv_loop_close(&loop), 0);
        sl_conf_destroy(conf);
        unlink(ini);
        unlink(toks);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_tokens),
            cmocka_unit_test(test_openapi_routes),
            cmocka_unit_test(test_method_not_allowed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
