/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_apireq.c — the API's requests as data: which paths name which
 * route, pipeline and key, what each refusal says, the lookup path a
 * forwarded GET asks the owner, the record a PUT /timers body becomes, the
 * records and answers of the operators' write routes, and how the owner's
 * answer is read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "apireq.h"
#include "util.h"

#include "../fuzz/apireq_conf.inc"

/* The route of the table with method and path template, or NULL. */
static const sl_route_t *route_of(const char *method, const char *path) {
        for (int i = 0; i < sl_apireq_route_cnt(); i++) {
                const sl_route_t *r = sl_apireq_route(i);
                if (!strcmp(r->method, method) && !strcmp(r->path, path))
                        return r;
        }
        return NULL;
}

#define TIMER  "/v1/pipelines/{pipeline}/timers/{id}"
#define SCHED  "/v1/pipelines/{pipeline}/schedules/{id}"
#define REPLAY "/v1/pipelines/{pipeline}/dlq/replay"
#define KEY    "/v1/pipelines/{pipeline}/keys/{key}"
#define RATE   "/v1/pipelines/{pipeline}/rates/{key}"
#define GROUP  "/v1/pipelines/{pipeline}/groups/{key}"
#define FLUSH  "/v1/pipelines/{pipeline}/groups/{key}/flush"

/* Paths that name a route: route (method and template), pipeline and the
 * decoded key. */
static void test_paths(void **state) {
        static const struct {
                const char *method, *url;
                const char *rmethod, *rpath;
                int pipeline;
                const char *key;
                size_t keylen;
        } ok[] = {
            {"GET", "/v1", "GET", "/v1", -1, NULL, 0},
            {"HEAD", "/v1/", "GET", "/v1", -1, NULL, 0},
            {"PUT", "/v1/pipelines/timers/timers/o-1", "PUT", TIMER, 0, "o-1",
             3},
            {"DELETE", "/v1/pipelines/timers/timers/a%20b%2Fc", "DELETE", TIMER,
             0, "a b/c", 5},
            {"GET", "/v1/pipelines/timers/schedules/s-1", "GET", SCHED, 0,
             "s-1", 3},
            {"GET", "/v1/pipelines/lim/keys/%00x", "GET", KEY, 1, "\0x", 2},
            {"PUT", "/v1/pipelines/lim/rates/*", "PUT", RATE, 1, "*", 1},
            {"GET", "/v1/pipelines/g%2F1%20%C3%BC/groups/w", "GET", GROUP, 2,
             "w", 1},
            {"POST", "/v1/pipelines/g%2f1%20%c3%bc/groups/w/flush", "POST",
             FLUSH, 2, "w", 1},
            {"POST", "/v1/pipelines/timers/dlq/replay", "POST", REPLAY, 0, NULL,
             0},
            {"GET", "/v1/pipelines/lim/dlq/replay", "GET", REPLAY, 1, NULL, 0},
            {"HEAD", "/v1/pipelines/lim/dlq/replay", "GET", REPLAY, 1, NULL, 0},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(ok); i++) {
                const sl_route_t *want = route_of(ok[i].rmethod, ok[i].rpath);
                sl_apireq_path_t pp;
                sl_apireq_path_parse(&conf, ok[i].url, ok[i].method, &pp);
                assert_int_equal(pp.bad, 0);
                assert_non_null(want);
                assert_ptr_equal(pp.route, want);
                assert_int_equal(pp.pipeline, ok[i].pipeline);
                if (ok[i].key) {
                        assert_int_equal(pp.keylen, ok[i].keylen);
                        assert_memory_equal(pp.key, ok[i].key, ok[i].keylen);
                } else {
                        assert_null(pp.key);
                }
                sl_apireq_path_clear(&pp);
        }
}

/* Refusals: the status, a piece of the reason, and never a route, a
 * pipeline or a key.  A name or key that does not decode is one of them
 * (the name once left its route set, and the API looked up pipeline -1). */
static void test_refused(void **state) {
        static const struct {
                const char *method, *url;
                int bad;
                const char *why;
        } no[] = {
            {"GET", "", 404, "no such route"},
            {"GET", "/", 404, "no such route"},
            {"GET", "/v2", 404, "no such route"},
            {"GET", "v1", 404, "no such route"},
            {"POST", "/v1", 405, "method POST not allowed"},
            {"GET", "/v1/pipelines/timers/timers", 404, "no such route"},
            {"GET", "/v1/pipelines/timers/timers/", 404, "no such route"},
            {"GET", "/v1/pipelines//timers/x", 404, "no such route"},
            {"GET", "/v1/pipelines/timers/timers/x/", 404, "no such route"},
            {"GET", "/v1/pipelines/timers/timers/x/y/z", 404, "no such route"},
            {"GET", "/v1/pipelines/timers/clocks/x", 404, "no such route"},
            {"POST", "/v1/pipelines/timers/timers/x", 405,
             "method POST not allowed"},
            {"GET", "/v1/pipelines/g/groups/w/flush", 405,
             "method GET not allowed"},
            {"POST", "/v1/pipelines/timers/timers/x/flush", 404,
             "no such route"},
            {"GET", "/v1/pipelines/nope/timers/x", 404, "no pipeline 'nope'"},
            {"GET", "/v1/pipelines/hidden/timers/x", 404,
             "no pipeline 'hidden' served"},
            {"GET", "/v1/pipelines/lim/timers/x", 404,
             "'lim' is a throttle pipeline: no timers"},
            {"GET", "/v1/pipelines/%zz/timers/x", 404, "no such route"},
            {"GET", "/v1/pipelines/timers%/timers/x", 404, "no such route"},
            {"GET", "/v1/pipelines/timers/timers/%4", 404, "bad key"},
            {"GET", "/v1/pipelines/timers/timers/%g0", 404, "bad key"},
            {"GET", "/v1/pipelines/%00/timers/x", 404, "no pipeline '\\x00'"},
            {"POST", "/v1/pipelines/g%2F1%20%C3%BC/dlq/replay", 404,
             "'g/1 \xc3\xbc' has no DLQ"},
            {"POST", "/v1/pipelines/hidden/dlq/replay", 404,
             "no pipeline 'hidden' served"},
            {"GET", "/v1/pipelines/nope/dlq/replay", 404, "no pipeline 'nope'"},
            {"POST", "/v1/pipelines/timers/dlq/x", 404, "no such route"},
            {"POST", "/v1/pipelines/timers/dlq/replay/x", 404, "no such route"},
            {"POST", "/v1/pipelines/%zz/dlq/replay", 404, "no such route"},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(no); i++) {
                sl_apireq_path_t pp;
                sl_apireq_path_parse(&conf, no[i].url, no[i].method, &pp);
                if (pp.bad != no[i].bad || !strstr(pp.why, no[i].why))
                        fail_msg("%s %s: %d %s (want %d %s)", no[i].method,
                                 no[i].url, pp.bad, pp.why, no[i].bad,
                                 no[i].why);
                assert_null(pp.route);
                assert_int_equal(pp.pipeline, -1);
                assert_null(pp.key);
        }
}

/* A 405 names the methods its path takes (the answer's Allow header),
 * whichever pipeline the path names; other refusals name none. */
static void test_allow(void **state) {
        static const struct {
                const char *method, *url, *allow;
        } cases[] = {
            {"POST", "/v1", "GET, HEAD"},
            {"DELETE", "/v1/", "GET, HEAD"},
            {"POST", "/v1/pipelines/timers/timers/x", "PUT, GET, DELETE"},
            {"HEAD", "/v1/pipelines/timers/timers/x", "PUT, GET, DELETE"},
            {"POST", "/v1/pipelines/timers/schedules/x", "PUT, GET, DELETE"},
            {"PUT", "/v1/pipelines/lim/keys/x", "GET"},
            {"GET", "/v1/pipelines/lim/rates/x", "PUT, DELETE"},
            {"PUT", "/v1/pipelines/g/groups/w", "GET"},
            {"GET", "/v1/pipelines/g/groups/w/flush", "POST"},
            {"DELETE", "/v1/pipelines/timers/dlq/replay", "GET, HEAD, POST"},
            {"PUT", "/v1/pipelines/nope/dlq/replay", "GET, HEAD, POST"},
            {"GET", "/v1/pipelines/nope/rates/x", "PUT, DELETE"},
            {"GET", "/v1/pipelines/timers/clocks/x", ""},
            {"GET", "/v1/pipelines/nope/timers/x", ""},
            {"GET", "/v2", ""},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                sl_apireq_path_t pp;
                sl_apireq_path_parse(&conf, cases[i].url, cases[i].method, &pp);
                if (strcmp(pp.allow, cases[i].allow) ||
                    pp.bad != (*cases[i].allow ? 405 : 404))
                        fail_msg("%s %s: %d allow \"%s\" (want \"%s\")",
                                 cases[i].method, cases[i].url, pp.bad,
                                 pp.allow, cases[i].allow);
                sl_apireq_path_clear(&pp);
        }
}

/* A POST /dlq/replay body: the CLI's options, each optional. */
static void test_replay_body(void **state) {
        static const struct {
                const char *body, *why;
        } bad[] = {
            {"[]", "not a JSON object"},
            {"{", "not JSON"},
            {"{\"reasons\": 3}", "reasons: a string or an array"},
            {"{\"reasons\": [1]}", "reasons: strings only"},
            {"{\"reasons\": [\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
             "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
             "\"a\"]}",
             "at most 16"},
            {"{\"since\": \"yesterday\"}", "since: epoch milliseconds"},
            {"{\"until\": -5}", "until: epoch milliseconds"},
            {"{\"limit\": -1}", "limit: a count"},
            {"{\"limit\": 1.5}", "limit: a count"},
            {"{\"dry_run\": 1}", "dry_run: true or false"},
            {"{\"from_beginning\": \"yes\"}", "from_beginning: true or false"},
            {"{\"dry\": true}", "unknown member 'dry'"},
            {"{\"limit\": 1, \"limit\": 2}", "not JSON"},
        };
        sl_apireq_replay_t b;
        const char *code;
        char why[256];
        const char *all = "{\"reasons\": [\"target-not-allowed\", \"bad-at\"], "
                          "\"since\": \"2026-01-01T00:00:00Z\", \"until\": "
                          "1767225601000, \"limit\": 0, \"dry_run\": true, "
                          "\"from_beginning\": true}";
        (void)state;

        /* No body: every record, from where the last run stopped. */
        assert_int_equal(
            sl_apireq_replay_read("", 0, &b, &code, why, sizeof(why)), 0);
        assert_int_equal(b.reason_cnt, 0);
        assert_true(b.since == -1 && b.until == -1 && b.limit == -1);
        assert_false(b.dry_run || b.from_beginning);
        sl_apireq_replay_clear(&b);

        assert_int_equal(sl_apireq_replay_read(all, strlen(all), &b, &code, why,
                                               sizeof(why)),
                         0);
        assert_int_equal(b.reason_cnt, 2);
        assert_string_equal(b.reasons[0], "target-not-allowed");
        assert_string_equal(b.reasons[1], "bad-at");
        assert_int_equal(b.since, 1767225600000LL);
        assert_int_equal(b.until, 1767225601000LL);
        assert_int_equal(b.limit, 0);
        assert_true(b.dry_run && b.from_beginning);
        sl_apireq_replay_clear(&b);

        /* One reason as a string; nulls are absent. */
        {
                const char *one = "{\"reasons\": \"x\", \"since\": null, "
                                  "\"limit\": null}";
                assert_int_equal(sl_apireq_replay_read(one, strlen(one), &b,
                                                       &code, why, sizeof(why)),
                                 0);
        }
        assert_int_equal(b.reason_cnt, 1);
        assert_string_equal(b.reasons[0], "x");
        assert_true(b.since == -1 && b.limit == -1);
        sl_apireq_replay_clear(&b);

        for (size_t i = 0; i < SL_ARRAY_SIZE(bad); i++) {
                int rc = sl_apireq_replay_read(bad[i].body, strlen(bad[i].body),
                                               &b, &code, why, sizeof(why));
                if (rc != -1 || strcmp(code, "bad-body") ||
                    !strstr(why, bad[i].why))
                        fail_msg("%s: %d %s (want bad-body %s)", bad[i].body,
                                 rc, why, bad[i].why);
                sl_apireq_replay_clear(&b);
        }
}

/* The forwarded lookup's path: every byte but the unreserved ones
 * encoded, whole however long, and it parses back to the same key. */
static void test_lookup_path(void **state) {
        char key[1000];
        char *p;
        sl_apireq_path_t pp;
        (void)state;

        p = sl_apireq_lookup_path(&pipes[2], "a b/\xc3\xbc~", 7);
        assert_string_equal(p, "/v1/pipelines/g%2F1%20%C3%BC/groups/"
                               "a%20b%2F%C3%BC~");
        free(p);
        p = sl_apireq_lookup_path(&pipes[1], "k", 1);
        assert_string_equal(p, "/v1/pipelines/lim/keys/k");
        free(p);

        for (size_t i = 0; i < sizeof(key); i++)
                key[i] = (char)(i * 7);
        p = sl_apireq_lookup_path(&pipes[0], key, sizeof(key));
        assert_true(strlen(p) > 2 * sizeof(key));
        sl_apireq_path_parse(&conf, p, "GET", &pp);
        assert_ptr_equal(pp.route, route_of("GET", TIMER));
        assert_int_equal(pp.keylen, sizeof(key));
        assert_memory_equal(pp.key, key, sizeof(key));
        sl_apireq_path_clear(&pp);
        free(p);
}

static const sl_hdr_t *hdr(const sl_apireq_timer_t *b, const char *name) {
        for (size_t i = 0; i < b->hdr_cnt; i++)
                if (!strcmp(b->hdrs[i].name, name))
                        return &b->hdrs[i];
        return NULL;
}

static void assert_hdr(const sl_apireq_timer_t *b, const char *name,
                       const char *value) {
        const sl_hdr_t *h = hdr(b, name);
        if (!h)
                fail_msg("no header %s", name);
        if (!value) {
                assert_null(h->value);
                return;
        }
        assert_int_equal(h->size, strlen(value));
        assert_memory_equal(h->value, value, h->size);
}

/* A body's fields become the header format's headers and value. */
static void test_timer_body(void **state) {
        static const char body[] =
            "{\"target\":\"out\",\"delay\":\"90s\",\"key\":\"tk\","
            "\"partition\":2,\"value\":\"hi\",\"headers\":{\"h\":\"v\","
            "\"n\":null}}";
        sl_apireq_timer_t b = {0};
        const char *code = NULL;
        char why[300];
        (void)state;

        assert_int_equal(sl_apireq_timer_read(body, strlen(body), &b, &code,
                                              why, sizeof(why)),
                         0);
        assert_int_equal(b.hdr_cnt, 6);
        assert_hdr(&b, "sluice-target", "out");
        assert_hdr(&b, "sluice-delay", "90s");
        assert_hdr(&b, "sluice-target-key", "tk");
        assert_hdr(&b, "sluice-target-partition", "2");
        assert_hdr(&b, "h", "v");
        assert_hdr(&b, "n", NULL);
        assert_int_equal(b.value_len, 2);
        assert_memory_equal(b.value, "hi", 2);
        sl_apireq_timer_clear(&b);

        /* A recurring timer: each field its sluice-* header. */
        {
                static const char rb[] =
                    "{\"target\":\"out\",\"cron\":\"0 9 * * MON-FRI\","
                    "\"tz\":\"Europe/Paris\",\"start\":1767225600000,"
                    "\"until\":\"2027-01-01T00:00:00Z\",\"count\":20,"
                    "\"catch_up\":\"all\"}";
                assert_int_equal(sl_apireq_timer_read(rb, strlen(rb), &b, &code,
                                                      why, sizeof(why)),
                                 0);
                assert_int_equal(b.hdr_cnt, 7);
                assert_hdr(&b, "sluice-cron", "0 9 * * MON-FRI");
                assert_hdr(&b, "sluice-tz", "Europe/Paris");
                assert_hdr(&b, "sluice-start", "1767225600000");
                assert_hdr(&b, "sluice-until", "2027-01-01T00:00:00Z");
                assert_hdr(&b, "sluice-count", "20");
                assert_hdr(&b, "sluice-catch-up", "all");
                sl_apireq_timer_clear(&b);
        }

        /* at as a number, a JSON value as its text, base64, no value. */
        {
                static const struct {
                        const char *body, *at, *value;
                        size_t value_len;
                } v[] = {
                    {"{\"at\":1767225600000,\"value\":{\"a\":[1,2]}}",
                     "1767225600000", "{\"a\":[1,2]}", 11},
                    {"{\"at\":\"2026-01-01T00:00:00Z\",\"value_base64\":"
                     "\"AGhp\"}",
                     "2026-01-01T00:00:00Z", "\0hi", 3},
                    {"{\"at\":1}", "1", "", 0},
                };
                for (size_t i = 0; i < SL_ARRAY_SIZE(v); i++) {
                        sl_apireq_timer_t t = {0};
                        assert_int_equal(
                            sl_apireq_timer_read(v[i].body, strlen(v[i].body),
                                                 &t, &code, why, sizeof(why)),
                            0);
                        assert_hdr(&t, "sluice-at", v[i].at);
                        assert_int_equal(t.value_len, v[i].value_len);
                        if (v[i].value_len)
                                assert_memory_equal(t.value, v[i].value,
                                                    v[i].value_len);
                        sl_apireq_timer_clear(&t);
                }
        }
}

/* Each refused body: its error code and a piece of the message. */
static void test_timer_body_refused(void **state) {
        static const struct {
                const char *body, *code, *why;
        } no[] = {
            {"", "bad-body", "must be a JSON object"},
            {"[1]", "bad-body", "must be a JSON object"},
            {"{\"target\":1}", "bad-header", "target: a string"},
            {"{\"delay\":90}", "bad-delay", "delay: a duration"},
            {"{\"key\":null}", "bad-header", "key: a string"},
            {"{\"at\":true}", "bad-at", "at: epoch ms"},
            {"{\"partition\":\"2\"}", "bad-target-partition",
             "partition: an integer"},
            {"{\"value\":\"a\",\"value_base64\":\"YQ==\"}", "bad-body",
             "exclude each other"},
            {"{\"value_base64\":\"!!\"}", "bad-body", "not base64"},
            {"{\"headers\":[]}", "bad-header", "an object of strings"},
            {"{\"headers\":{\"h\":1}}", "bad-header", "the value of h"},
            {"{\"colour\":1}", "bad-body", "unknown field 'colour'"},
            {"{\"every\":60}", "bad-schedule", "every: a duration"},
            {"{\"cron\":[]}", "bad-schedule", "cron: a cron expression"},
            {"{\"tz\":1}", "bad-schedule", "tz: a time zone"},
            {"{\"catch_up\":true}", "bad-schedule", "catch_up: "},
            {"{\"start\":{}}", "bad-schedule", "start: epoch ms"},
            {"{\"until\":1.5}", "bad-schedule", "until: epoch ms"},
            {"{\"count\":\"3\"}", "bad-schedule", "count: an integer"},
            {"{\"col\\u0000our\":1}", "bad-body", "NUL byte in object key"},
        };
        (void)state;
        for (size_t i = 0; i < SL_ARRAY_SIZE(no); i++) {
                sl_apireq_timer_t b = {0};
                const char *code = NULL;
                char why[300] = "";
                assert_int_equal(sl_apireq_timer_read(no[i].body,
                                                      strlen(no[i].body), &b,
                                                      &code, why, sizeof(why)),
                                 -1);
                if (!code || strcmp(code, no[i].code) ||
                    !strstr(why, no[i].why))
                        fail_msg("%s: %s %s (want %s %s)", no[i].body,
                                 code ? code : "(none)", why, no[i].code,
                                 no[i].why);
                sl_apireq_timer_clear(&b);
        }
}

/* At most SL_APIREQ_MAX_USER_HEADERS user headers, wherever "headers"
 * stands among the fields, and all twelve header fields beside them. */
static void test_timer_headers_max(void **state) {
        char body[8192];
        (void)state;
        for (int n = SL_APIREQ_MAX_USER_HEADERS;
             n <= SL_APIREQ_MAX_USER_HEADERS + 1; n++) {
                for (int first = 0; first <= 1; first++) {
                        static const char fields[] =
                            "\"target\":\"t\",\"delay\":\"1s\",\"key\":\"k\","
                            "\"at\":1,\"partition\":0,\"every\":\"1s\","
                            "\"cron\":\"@daily\",\"tz\":\"UTC\",\"start\":1,"
                            "\"until\":\"2027-01-01T00:00:00Z\",\"count\":3,"
                            "\"catch_up\":\"all\"";
                        sl_apireq_timer_t b = {0};
                        const char *code;
                        char why[300];
                        size_t o = 0;
                        int r;
                        o += (size_t)snprintf(body + o, sizeof(body) - o,
                                              "{%s%s", first ? "" : fields,
                                              first ? "" : ",");
                        o += (size_t)snprintf(body + o, sizeof(body) - o,
                                              "\"headers\":{");
                        for (int i = 0; i < n; i++)
                                o += (size_t)snprintf(
                                    body + o, sizeof(body) - o,
                                    "%s\"h%d\":\"v\"", i ? "," : "", i);
                        snprintf(body + o, sizeof(body) - o, "}%s%s}",
                                 first ? "," : "", first ? fields : "");
                        r = sl_apireq_timer_read(body, strlen(body), &b, &code,
                                                 why, sizeof(why));
                        if (n <= SL_APIREQ_MAX_USER_HEADERS) {
                                assert_int_equal(r, 0);
                                assert_int_equal(b.hdr_cnt, (size_t)n + 12);
                        } else {
                                assert_int_equal(r, -1);
                                assert_string_equal(code, "bad-header");
                                assert_non_null(strstr(why, "more than 64"));
                        }
                        sl_apireq_timer_clear(&b);
                }
        }
}

/* An owner's answer: status, the two headers read, the body; and what is
 * refused. */
/* A write request of route method path to pipeline pi for key with body,
 * built (its operator's build()); returns what build() returned.  The
 * pipeline's api_new() data is in *datap (free with free_data()). */
static int write_build(const char *method, const char *path, int pi,
                       const char *key, const char *body, sl_apiwrite_t *w,
                       void **datap) {
        const sl_opdef_t *op = sl_opdef_of(pipes[pi].type);
        const sl_route_t *r = route_of(method, path);

        assert_non_null(r);
        assert_int_equal(r->kind, SL_ROUTE_WRITE);
        *datap = op->api_new ? op->api_new(&conf, pi) : NULL;
        memset(w, 0, sizeof(*w));
        w->pc = &pipes[pi];
        w->data = *datap;
        w->key = key;
        w->keylen = strlen(key);
        w->body = body;
        w->bodylen = strlen(body);
        w->now_ms = 1767225600000LL;
        w->target_partition = -1;
        w->existed = -1;
        return r->build(w);
}

/* The answer of route method path to w after a write at partition 3,
 * offset 7, as JSON text ("" for an empty body); clears w. */
static char *write_answer(const char *method, const char *path,
                          sl_apiwrite_t *w, void *data, int *status) {
        const sl_opdef_t *op = sl_opdef_of(w->pc->type);
        const sl_route_t *r = route_of(method, path);
        json_t *j;
        char *s;

        w->partition = 3;
        w->offset = 7;
        j = r->answer(w, status);
        s = j ? json_dumps(j, JSON_COMPACT) : sl_strdup("");
        json_decref(j);
        if (r->clear)
                r->clear(w);
        if (data)
                op->api_destroy(data);
        return s;
}

/* Releases what a refused build of route method path holds. */
static void write_release(const char *method, const char *path,
                          sl_apiwrite_t *w, void *data) {
        const sl_opdef_t *op = sl_opdef_of(w->pc->type);
        const sl_route_t *r = route_of(method, path);

        if (r->clear)
                r->clear(w);
        if (data)
                op->api_destroy(data);
}

/* The routes' records: a timer is the record of the header format, with
 * its target to check and the owner to ask; a cancel and a rate's DELETE
 * are null values; a rate is its text; a flush the control record. */
static void test_write_routes(void **state) {
        sl_apiwrite_t w;
        void *data;
        char *s;
        int status;
        (void)state;

        assert_int_equal(write_build("PUT", TIMER, 0, "o-1",
                                     "{\"target\":\"out\",\"delay\":\"90s\"}",
                                     &w, &data),
                         0);
        assert_string_equal(w.target, "out");
        assert_int_equal(w.target_partition, -1);
        assert_int_equal(w.ask_existed, 1);
        assert_int_equal(w.timestamp_ms, w.now_ms);
        assert_non_null(w.value);
        assert_int_equal(w.value_len, 0);
        assert_int_equal(w.hdr_cnt, 2);
        w.existed = 0;
        s = write_answer("PUT", TIMER, &w, data, &status);
        assert_int_equal(status, 201);
        assert_string_equal(s, "{\"pipeline\":\"timers\",\"id\":\"o-1\","
                               "\"partition\":3,\"offset\":7,\"due\":"
                               "1767225690000,\"target\":\"out\","
                               "\"existed\":false}");
        free(s);

        /* The header path's refusals, with the DLQ's reason. */
        assert_int_equal(write_build("PUT", TIMER, 0, "o-1",
                                     "{\"target\":\"timers.changelog\","
                                     "\"delay\":\"1s\"}",
                                     &w, &data),
                         -1);
        assert_int_equal(w.status, 400);
        assert_string_equal(w.code, "target-internal");
        write_release("PUT", TIMER, &w, data);

        assert_int_equal(write_build("PUT", TIMER, 4, "o-1",
                                     "{\"target\":\"out\",\"delay\":\"1s\"}",
                                     &w, &data),
                         -1);
        assert_int_equal(w.status, 409);
        assert_string_equal(w.code, "unsupported-input-format");
        assert_string_equal(w.msg, "pipeline env reads json-envelope input; "
                                   "the API writes the header format only");
        write_release("PUT", TIMER, &w, data);

        /* /schedules: a timer PUT that must be recurring. */
        assert_int_equal(write_build("PUT", SCHED, 0, "s-1",
                                     "{\"target\":\"out\",\"every\":\"1m\"}",
                                     &w, &data),
                         0);
        w.existed = 1;
        s = write_answer("PUT", SCHED, &w, data, &status);
        assert_int_equal(status, 200);
        assert_string_equal(s, "{\"pipeline\":\"timers\",\"id\":\"s-1\","
                               "\"partition\":3,\"offset\":7,\"due\":"
                               "1767225660000,\"target\":\"out\","
                               "\"existed\":true}");
        free(s);
        assert_int_equal(write_build("PUT", SCHED, 0, "s-1",
                                     "{\"target\":\"out\",\"delay\":\"1m\"}",
                                     &w, &data),
                         -1);
        assert_int_equal(w.status, 400);
        assert_string_equal(w.code, "not-a-schedule");
        write_release("PUT", SCHED, &w, data);
        assert_int_equal(write_build("PUT", SCHED, 0, "s-1",
                                     "{\"target\":\"out\",\"cron\":\"@yearly\","
                                     "\"tz\":\"Nowhere/Else\"}",
                                     &w, &data),
                         -1);
        assert_string_equal(w.code, "unknown-zone");
        write_release("PUT", SCHED, &w, data);
        assert_non_null(route_of("GET", SCHED)->needs);
        assert_null(route_of("GET", TIMER)->needs);
        assert_int_equal(write_build("DELETE", SCHED, 0, "s-1", "", &w, &data),
                         0);
        assert_null(w.value);
        write_release("DELETE", SCHED, &w, data);

        assert_int_equal(write_build("DELETE", TIMER, 0, "o-1", "", &w, &data),
                         0);
        assert_null(w.value);
        assert_null(w.hdrs);
        assert_null(w.target);
        s = write_answer("DELETE", TIMER, &w, data, &status);
        assert_int_equal(status, 204);
        assert_string_equal(s, "");
        free(s);

        assert_int_equal(write_build("PUT", RATE, 1, "k",
                                     "{\"rate\":\"6000/m\",\"burst\":50}", &w,
                                     &data),
                         0);
        assert_int_equal(w.value_len, strlen("6000/m burst=50"));
        assert_memory_equal(w.value, "6000/m burst=50", w.value_len);
        assert_null(w.hdrs);
        s = write_answer("PUT", RATE, &w, data, &status);
        assert_int_equal(status, 200);
        assert_string_equal(s, "{\"pipeline\":\"lim\",\"key\":\"k\","
                               "\"rate\":\"6000/m burst=50\",\"per_sec\":"
                               "100.0,\"burst\":50.0}");
        free(s);
        assert_int_equal(
            write_build("PUT", RATE, 1, "k", "{\"rate\":1}", &w, &data), -1);
        assert_int_equal(w.status, 400);
        assert_string_equal(w.code, "bad-body");
        write_release("PUT", RATE, &w, data);
        assert_int_equal(
            write_build("PUT", RATE, 1, "k", "{\"rate\":\"fast\"}", &w, &data),
            -1);
        assert_string_equal(w.code, "bad-rate");
        write_release("PUT", RATE, &w, data);

        assert_int_equal(write_build("POST", FLUSH, 2, "w", "", &w, &data), 0);
        assert_non_null(w.value);
        assert_int_equal(w.value_len, 0);
        assert_int_equal(w.hdr_cnt, 1);
        assert_string_equal(w.hdrs[0].name, "sluice-control");
        assert_int_equal(w.hdrs[0].size, 5);
        assert_memory_equal(w.hdrs[0].value, "flush", 5);
        s = write_answer("POST", FLUSH, &w, data, &status);
        assert_int_equal(status, 202);
        assert_string_equal(s, "{\"pipeline\":\"g/1 \xc3\xbc\",\"key\":"
                               "\"w\",\"partition\":3,\"offset\":7}");
        free(s);
}

static void test_answer(void **state) {
        static const char ok[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "retry-after: 2\r\n"
                                 "X-Sluice-Answered-By:  10.0.0.7:8443\r\n"
                                 "Content-Length: 5\r\n\r\nab\0cd";
        static const char *const bad[] = {
            "",
            "HTTP/2 200\r\n\r\n",
            "HTTP/1.1 99 Low\r\n\r\n",
            "HTTP/1.1 600 High\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab",
        };
        char buf[256], why[64];
        sl_apireq_answer_t a;
        (void)state;

        memcpy(buf, ok, sizeof(ok) - 1);
        assert_int_equal(
            sl_apireq_answer_parse(buf, sizeof(ok) - 1, &a, why, sizeof(why)),
            0);
        assert_int_equal(a.status, 503);
        assert_string_equal(a.retry_after, "2");
        assert_string_equal(a.answered_by, "10.0.0.7:8443");
        assert_int_equal(a.body_len, 5);
        assert_memory_equal(a.body, "ab\0cd", 6);
        free(a.body);

        for (size_t i = 0; i < SL_ARRAY_SIZE(bad); i++) {
                size_t n = strlen(bad[i]);
                memcpy(buf, bad[i], n);
                if (sl_apireq_answer_parse(buf, n, &a, why, sizeof(why)) != -1)
                        fail_msg("accepted: %s", bad[i]);
                assert_null(a.body);
                assert_true(why[0]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_paths),
            cmocka_unit_test(test_refused),
            cmocka_unit_test(test_allow),
            cmocka_unit_test(test_replay_body),
            cmocka_unit_test(test_lookup_path),
            cmocka_unit_test(test_timer_body),
            cmocka_unit_test(test_timer_body_refused),
            cmocka_unit_test(test_timer_headers_max),
            cmocka_unit_test(test_write_routes),
            cmocka_unit_test(test_answer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
