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
 * and a non-empty key; a refused one says 404 or 405 with a reason and
 * holds no key; the lookup path of a parsed key parses back to the same
 * route, pipeline and key.  A body read names an error code and a message
 * when it fails; when it succeeds its headers fit the record's array, each
 * named, and sl_delay_input_parse() takes the record (the reason is not
 * checked: the body may be anything).  An answer read names a status
 * 100..599, its body is the bytes after the headers (NUL-terminated), and
 * its three header values fit their arrays (the peer signature within its
 * line).  ASan sees every read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apireq.h"
#include "util.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "apireq_conf.inc"

static void check_path(const char *url, const char *method) {
        sl_apireq_path_t pp, back;
        char *path;

        sl_apireq_path_parse(&conf, url, method, &pp);
        if (pp.route < 0) {
                CHECK(pp.bad == 404 || pp.bad == 405);
                CHECK(pp.why[0] && !pp.key);
                return;
        }
        CHECK(pp.bad == 0 && pp.route < SL_ROUTE_CNT);
        CHECK(!strcmp(sl_routes[pp.route].method, method) ||
              (pp.route == SL_ROUTE_INDEX && !strcmp(method, "HEAD")));
        if (pp.route == SL_ROUTE_INDEX) {
                CHECK(pp.pipeline == -1 && !pp.key);
                return;
        }
        CHECK(pp.pipeline >= 0 && pp.pipeline < conf.pipeline_cnt);
        CHECK(pipes[pp.pipeline].api);
        CHECK(pipes[pp.pipeline].type == sl_routes[pp.route].type);
        CHECK(pp.key && pp.keylen > 0 && pp.key[pp.keylen] == '\0');

        /* What a forwarded lookup of the key asks the owner. */
        path = sl_apireq_lookup_path(&pipes[pp.pipeline], pp.key, pp.keylen);
        sl_apireq_path_parse(&conf, path, "GET", &back);
        CHECK(back.bad == 0 && back.pipeline == pp.pipeline);
        CHECK(sl_routes[back.route].type == pipes[pp.pipeline].type);
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
        if (nl)
                check_body((const char *)nl + 1,
                           size - (size_t)(nl + 1 - data));
        return 0;
}
