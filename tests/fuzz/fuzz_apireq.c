/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_apireq.c — the API's request parsing (apireq.h): a method and path,
 * and a PUT /timers body, as a client sends them.
 *
 * Input layout:
 *
 *   byte 0          the method: GET, PUT, DELETE, POST, HEAD, or (any
 *                   other value) the bytes of line 1 up to a space
 *   line 1          the path as received (not decoded), from byte 1 to
 *                   the first '\n'
 *   the rest        the body
 *
 * The same bytes after byte 0 are also read as the answer of another
 * instance to a forwarded lookup.
 *
 * The pipelines: "timers" (delay), "lim" (throttle), "g/1 ü" (debounce,
 * a name that must be percent-encoded) served by the API, "hidden"
 * (delay) not served.
 *
 * Checks: a parsed path names a route of the table whose method is the
 * one asked, a pipeline the API serves and whose type the route serves,
 * and a non-empty key (a DLQ replay's route: a pipeline with a DLQ, no
 * key); a refused one says 404 or 405 with a reason and
 * holds no key; the lookup path of a parsed key parses back to the same
 * route, pipeline and key.  A body read names an error code and a message
 * when it fails; when it succeeds its headers fit the record's array, each
 * named, and sl_delay_input_parse() takes the record (the reason is not
 * checked: the body may be anything).  Every write route of the served
 * pipelines either refuses the body (4xx, code, message) or makes a record
 * and answers it (2xx, a JSON object or no body).  A DLQ replay's body is
 * refused bad-body with a reason, or read into strings and counts.  An
 * answer read names a
 * status
 * 100..599, its body is the bytes after the headers (NUL-terminated), and
 * its three header values fit their arrays (the peer signature within its
 * line).  ASan sees every read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "apireq.h"
#include "util.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "apireq_conf.inc"

/* 1 when route r is one of the routes of pipelines of type. */
static int route_serves(const sl_route_t *r, sl_op_type_t type) {
        const sl_opdef_t *op = sl_opdef_of(type);
        for (int i = 0; op && i < op->route_cnt; i++)
                if (r == &op->routes[i])
                        return 1;
        return 0;
}

static void check_path(const char *url, const char *method) {
        sl_apireq_path_t pp, back;
        char *path;

        sl_apireq_path_parse(&conf, url, method, &pp);
        if (!pp.route) {
                CHECK(pp.bad == 404 || pp.bad == 405);
                CHECK(pp.why[0] && !pp.key);
                return;
        }
        CHECK(pp.bad == 0);
        CHECK(!strcmp(pp.route->method, method) ||
              ((pp.route == &sl_route_index ||
                pp.route == &sl_route_replay_status) &&
               !strcmp(method, "HEAD")));
        if (pp.route == &sl_route_index) {
                CHECK(pp.pipeline == -1 && !pp.key);
                return;
        }
        CHECK(pp.pipeline >= 0 && pp.pipeline < conf.pipeline_cnt);
        CHECK(pipes[pp.pipeline].api);
        if (pp.route == &sl_route_replay ||
            pp.route == &sl_route_replay_status) {
                /* The API's own, of pipelines with a DLQ; no key. */
                CHECK(pipes[pp.pipeline].dlq && !pp.key);
                CHECK(!strcmp(pp.route->method, method) ||
                      (pp.route == &sl_route_replay_status &&
                       !strcmp(method, "HEAD")));
                return;
        }
        CHECK(route_serves(pp.route, pipes[pp.pipeline].type));
        CHECK(pp.key && pp.keylen > 0 && pp.key[pp.keylen] == '\0');

        /* What a forwarded lookup of the key asks the owner. */
        path = sl_apireq_lookup_path(&pipes[pp.pipeline], pp.key, pp.keylen);
        sl_apireq_path_parse(&conf, path, "GET", &back);
        CHECK(back.bad == 0 && back.pipeline == pp.pipeline);
        CHECK(back.route && back.route->kind == SL_ROUTE_LOOKUP &&
              route_serves(back.route, pipes[pp.pipeline].type));
        CHECK(back.keylen == pp.keylen && !memcmp(back.key, pp.key, pp.keylen));
        sl_apireq_path_clear(&back);
        free(path);
        sl_apireq_path_clear(&pp);
}

static void check_body(const char *body, size_t len) {
        static const char *const internal[] = {"timers.changelog",
                                               "timers.dlq"};
        sl_apireq_timer_t b = {0};
        sl_delay_params_t p = {0};
        sl_delay_record_t rec = {0};
        sl_delay_req_t req = {0};
        const char *code = NULL;
        char why[300] = "", detail[256];

        if (sl_apireq_timer_read(body, len, &b, &code, why, sizeof(why))) {
                CHECK(code && *code && why[0]);
                sl_apireq_timer_clear(&b);
                return;
        }
        CHECK(b.value && b.hdr_cnt <= SL_ARRAY_SIZE(b.hdrs));
        for (size_t i = 0; i < b.hdr_cnt; i++)
                CHECK(b.hdrs[i].name);
        p.input_format = SL_INPUT_HEADERS;
        p.internal_topics = internal;
        p.internal_cnt = 2;
        p.timestamp_skew_ms = 60000;
        rec.key = "id";
        rec.key_len = 2;
        rec.value = b.value;
        rec.value_len = b.value_len;
        rec.hdrs = b.hdrs;
        rec.hdr_cnt = b.hdr_cnt;
        rec.timestamp_ms = 1767225600000LL;
        sl_delay_input_parse(&p, &rec, rec.timestamp_ms, &req, detail,
                             sizeof(detail));
        sl_delay_req_clear(&req);
        sl_apireq_timer_clear(&b);
}

/* A POST /dlq/replay body: refused with bad-body and a reason, or read
 * into at most SL_APIREQ_MAX_REASONS reasons, each a string. */
static void check_replay_body(const char *body, size_t len) {
        sl_apireq_replay_t b;
        const char *code = NULL;
        char why[256] = "";

        if (sl_apireq_replay_read(body, len, &b, &code, why, sizeof(why))) {
                CHECK(code && !strcmp(code, "bad-body") && why[0]);
        } else {
                CHECK(b.reason_cnt >= 0 &&
                      b.reason_cnt <= SL_APIREQ_MAX_REASONS);
                for (int i = 0; i < b.reason_cnt; i++)
                        CHECK(b.reasons[i]);
                CHECK(b.limit >= -1 && b.since >= -1 && b.until >= -1);
        }
        sl_apireq_replay_clear(&b);
}

/* 1 when pc has a topic of the role named role. */
static int has_role(const sl_pipeline_conf_t *pc, const char *role) {
        sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
        int n = sl_pipeline_topics(pc, ts);
        for (int i = 0; i < n; i++)
                if (!strcmp(ts[i].role->name, role))
                        return 1;
        return 0;
}

/* Every write route of every pipeline the API serves, given body with
 * the key "id": build() either refuses with a 4xx, a code and a message,
 * or makes a record whose headers are named and whose target, if any, is
 * a string; answer() then gives a status and a body that is a JSON
 * object (or none, for 204), and clear() releases the rest (ASan sees
 * leaks). */
static void check_writes(const char *body, size_t len) {
        for (int pi = 0; pi < conf.pipeline_cnt; pi++) {
                const sl_opdef_t *op = sl_opdef_of(pipes[pi].type);
                void *data;
                if (!pipes[pi].api)
                        continue;
                data = op->api_new ? op->api_new(&conf, pi) : NULL;
                for (int i = 0; i < op->route_cnt; i++) {
                        const sl_route_t *r = &op->routes[i];
                        sl_apiwrite_t w;
                        json_t *j;
                        int status = 0;
                        if (r->kind != SL_ROUTE_WRITE)
                                continue;
                        CHECK(has_role(&pipes[pi], r->topic));
                        memset(&w, 0, sizeof(w));
                        w.pc = &pipes[pi];
                        w.data = data;
                        w.key = "id";
                        w.keylen = 2;
                        w.body = body;
                        w.bodylen = len;
                        w.now_ms = 1767225600000LL;
                        w.target_partition = -1;
                        w.existed = -1;
                        if (r->build(&w) != 0) {
                                CHECK(w.status >= 400 && w.status < 500);
                                CHECK(w.code && *w.code && w.msg[0]);
                        } else {
                                CHECK(!w.hdrs == !w.hdr_cnt || w.hdrs);
                                for (size_t h = 0; h < w.hdr_cnt; h++)
                                        CHECK(w.hdrs[h].name);
                                CHECK(!w.value_len || w.value);
                                CHECK(!w.target || strlen(w.target) <= 249);
                                j = r->answer(&w, &status);
                                CHECK(status >= 200 && status < 300);
                                CHECK(j ? json_is_object(j) : status == 204);
                                json_decref(j);
                        }
                        if (r->clear)
                                r->clear(&w);
                }
                if (data)
                        op->api_destroy(data);
        }
}

static void check_answer(const uint8_t *data, size_t size) {
        char *buf = malloc(size + 1), why[64] = "";
        sl_apireq_answer_t a;

        memcpy(buf, data, size);
        if (sl_apireq_answer_parse(buf, size, &a, why, sizeof(why))) {
                CHECK(why[0] && !a.body);
                free(buf);
                return;
        }
        CHECK(a.status >= 100 && a.status <= 599);
        CHECK(a.body && a.body_len + 4 <= size && a.body[a.body_len] == '\0');
        CHECK(!memcmp(a.body, data + size - a.body_len, a.body_len));
        CHECK(strlen(a.retry_after) < sizeof(a.retry_after));
        CHECK(strlen(a.answered_by) < sizeof(a.answered_by));
        CHECK(strlen(a.peer_auth) < sizeof(a.peer_auth) &&
              !strpbrk(a.peer_auth, "\r\n"));
        free(a.body);
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const methods[] = {"GET", "PUT", "DELETE", "POST",
                                              "HEAD"};
        const uint8_t *nl;
        char *url, method[16];
        size_t ulen;

        if (size < 1)
                return 0;
        nl = memchr(data + 1, '\n', size - 1);
        ulen = nl ? (size_t)(nl - data - 1) : size - 1;
        /* The path as libmicrohttpd hands it over: a C string. */
        url = malloc(ulen + 1);
        memcpy(url, data + 1, ulen);
        url[ulen] = '\0';
        if (data[0] < SL_ARRAY_SIZE(methods)) {
                snprintf(method, sizeof(method), "%s", methods[data[0]]);
        } else {
                size_t n = strcspn(url, " ");
                snprintf(method, sizeof(method), "%.*s", (int)(n < 15 ? n : 15),
                         url);
        }
        check_path(url, method);
        free(url);
        check_answer(data + 1, size - 1);
        if (nl) {
                check_body((const char *)nl + 1,
                           size - (size_t)(nl + 1 - data));
                check_writes((const char *)nl + 1,
                             size - (size_t)(nl + 1 - data));
                check_replay_body((const char *)nl + 1,
                                  size - (size_t)(nl + 1 - data));
        }
        return 0;
}
