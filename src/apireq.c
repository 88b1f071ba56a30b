/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apireq.c — the API's requests as data (see apireq.h): routes, paths and
 * PUT /timers bodies, read from bytes a client controls.  Nothing here
 * trusts a length it did not count.
 */
#include "apireq.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "opdef.h"
#include "parse.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* Routes.                                                              */

const sl_route_t sl_route_index = {"GET", "/v1", NULL, NULL, SL_ROUTE_INDEX};
const sl_route_t sl_route_replay = {"POST",
                                    "/v1/pipelines/{pipeline}/dlq/replay",
                                    "dlq", "replay", SL_ROUTE_REPLAY};
const sl_route_t sl_route_replay_status = {
    "GET", "/v1/pipelines/{pipeline}/dlq/replay", "dlq", "replay",
    SL_ROUTE_REPLAY_STATUS};

/* The i-th operator in api_rank order (ties: ops.def order). */
static const sl_opdef_t *op_by_rank(int i) {
        const sl_opdef_t *prev = NULL, *best = NULL;

        for (int k = 0; k <= i; k++, prev = best) {
                best = NULL;
                for (int j = 0; j < SL_OP_CNT; j++) {
                        const sl_opdef_t *op = sl_opdef_at(j);
                        /* After prev, and the first of what is left. */
                        if (prev && (op->api_rank < prev->api_rank ||
                                     (op->api_rank == prev->api_rank &&
                                      op->type <= prev->type)))
                                continue;
                        if (!best || op->api_rank < best->api_rank ||
                            (op->api_rank == best->api_rank &&
                             op->type < best->type))
                                best = op;
                }
        }
        return best;
}

int sl_apireq_route_cnt(void) {
        int n = 3; /* the index, the DLQ replay's two */
        for (int i = 0; i < SL_OP_CNT; i++)
                n += sl_opdef_at(i)->route_cnt;
        return n;
}

const sl_route_t *sl_apireq_route(int i) {
        sl_assert(i >= 0 && i < sl_apireq_route_cnt());
        if (i-- == 0)
                return &sl_route_index;
        for (int k = 0; k < SL_OP_CNT; k++) {
                const sl_opdef_t *op = op_by_rank(k);
                if (i < op->route_cnt)
                        return &op->routes[i];
                i -= op->route_cnt;
        }
        if (i == 0)
                return &sl_route_replay;
        if (i == 1)
                return &sl_route_replay_status;
        sl_assert(!"no such route");
        return NULL;
}

int sl_apireq_build_tombstone(sl_apiwrite_t *w) {
        w->value = NULL;
        w->value_len = 0;
        return 0;
}

json_t *sl_apireq_answer_no_content(const sl_apiwrite_t *w, int *status) {
        (void)w;
        *status = 204;
        return NULL;
}

/* ------------------------------------------------------------------ */
/* Paths.                                                               */

char *sl_apireq_pct_decode(const char *s, size_t len, size_t *outlen) {
        char *out = sl_malloc(len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '%') {
                        int h, l;
                        if (i + 2 >= len) {
                                free(out);
                                return NULL;
                        }
                        h = sl_hexval((unsigned char)s[i + 1]);
                        l = sl_hexval((unsigned char)s[i + 2]);
                        if (h < 0 || l < 0) {
                                free(out);
                                return NULL;
                        }
                        out[o++] = (char)(h * 16 + l);
                        i += 2;
                } else {
                        out[o++] = s[i];
                }
        }
        out[o] = '\0';
        *outlen = o;
        return out;
}

/* Percent-encodes s[0..len) at dst, which has room for 3 * len + 1 bytes:
 * every byte but RFC 3986's unreserved ones.  Returns the end. */
static char *pct_encode(const unsigned char *s, size_t len, char *dst) {
        static const char hex[] = "0123456789ABCDEF";
        for (size_t i = 0; i < len; i++) {
                unsigned char ch = s[i];
                if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
                    ch == '.' || ch == '~') {
                        *dst++ = (char)ch;
                } else {
                        *dst++ = '%';
                        *dst++ = hex[ch >> 4];
                        *dst++ = hex[ch & 15];
                }
        }
        *dst = '\0';
        return dst;
}

char *sl_apireq_lookup_path(const sl_pipeline_conf_t *pc, const void *key,
                            size_t keylen) {
        static const char prefix[] = "/v1/pipelines/";
        const sl_opdef_t *op = sl_opdef_of(pc->type);
        const char *what = NULL;
        size_t namelen = strlen(pc->name), size;
        char *path, *p;

        for (int i = 0; op && i < op->route_cnt && !what; i++)
                if (op->routes[i].kind == SL_ROUTE_LOOKUP)
                        what = op->routes[i].what;
        sl_assert(what);
        size = sizeof(prefix) + 3 * namelen + 1 + strlen(what) + 1 +
               3 * keylen + 1;
        path = sl_malloc(size);
        p = path + sizeof(prefix) - 1;
        memcpy(path, prefix, sizeof(prefix) - 1);
        p = pct_encode((const unsigned char *)pc->name, namelen, p);
        *p++ = '/';
        memcpy(p, what, strlen(what));
        p += strlen(what);
        *p++ = '/';
        pct_encode(key, keylen, p);
        return path;
}

/* The path's segments after each '/': at most max; returns how many, or
 * -1 when there are more or the path does not start with '/'. */
static int path_segments(const char *url, const char **seg, size_t *seglen,
                         int max) {
        const char *p = url;
        int n = 0;
        while (*p == '/') {
                const char *e = strchr(p + 1, '/');
                if (n == max)
                        return -1;
                seg[n] = p + 1;
                seglen[n] = e ? (size_t)(e - p - 1) : strlen(p + 1);
                n++;
                p = e ? e : p + 1 + seglen[n - 1];
        }
        return *p ? -1 : n;
}

static int seg_is(const char *seg, size_t len, const char *word) {
        return strlen(word) == len && !strncmp(seg, word, len);
}

/* 1 when route r has the path .../{what}/{key}[/{action}] (action NULL:
 * none). */
static int route_is(const sl_route_t *r, const char *what, size_t whatlen,
                    const char *action, size_t actionlen) {
        if (r->kind == SL_ROUTE_INDEX || r->kind == SL_ROUTE_REPLAY ||
            r->kind == SL_ROUTE_REPLAY_STATUS ||
            !seg_is(what, whatlen, r->what))
                return 0;
        return action ? r->action && seg_is(action, actionlen, r->action)
                      : !r->action;
}

/* Refuses method on a path that takes others (405): allow is the value
 * of the answer's Allow header. */
static void refuse_method(sl_apireq_path_t *pp, const char *method,
                          const char *allow) {
        pp->bad = 405;
        snprintf(pp->why, sizeof(pp->why), "method %.20s not allowed", method);
        snprintf(pp->allow, sizeof(pp->allow), "%s", allow);
}

/* 1 when the list "A, B, C" holds method m. */
static int allow_has(const char *allow, const char *m) {
        size_t ml = strlen(m);
        for (const char *p = allow; (p = strstr(p, m)); p += ml)
                if ((p == allow || p[-1] == ' ') && (!p[ml] || p[ml] == ','))
                        return 1;
        return 0;
}

/* The route of any operator with that path, for method; NULL with
 * pp->bad 404 when no route has that path, 405 when none of those takes
 * method. */
static const sl_route_t *path_route(const char *what, size_t whatlen,
                                    const char *action, size_t actionlen,
                                    const char *method, sl_apireq_path_t *pp) {
        char allow[sizeof(pp->allow)] = "";
        size_t n = 0;
        for (int i = 1; i < sl_apireq_route_cnt(); i++) {
                const sl_route_t *r = sl_apireq_route(i);
                if (!route_is(r, what, whatlen, action, actionlen))
                        continue;
                if (!strcmp(r->method, method))
                        return r;
                /* Each method once, in route order (two operators could
                 * serve the same path). */
                if (!allow_has(allow, r->method) &&
                    n + strlen(r->method) + 2 < sizeof(allow))
                        n += (size_t)snprintf(allow + n, sizeof(allow) - n,
                                              "%s%s", n ? ", " : "", r->method);
        }
        if (n)
                refuse_method(pp, method, allow);
        return NULL;
}

/* That route among pc's operator's, or NULL. */
static const sl_route_t *pipe_route(const sl_pipeline_conf_t *pc,
                                    const char *what, size_t whatlen,
                                    const char *action, size_t actionlen,
                                    const char *method) {
        const sl_opdef_t *op = sl_opdef_of(pc->type);
        for (int i = 0; op && i < op->route_cnt; i++) {
                const sl_route_t *r = &op->routes[i];
                if (route_is(r, what, whatlen, action, actionlen) &&
                    !strcmp(r->method, method))
                        return r;
        }
        return NULL;
}

/* The pipeline named by the encoded seg among those the API serves: its
 * index, or -1 with pp->why said. */
static int path_pipeline(const sl_conf_t *conf, const char *seg, size_t len,
                         sl_apireq_path_t *pp) {
        size_t namelen;
        char *name = sl_apireq_pct_decode(seg, len, &namelen);
        int found = -1;

        if (!name)
                return -1;
        for (int i = 0; i < conf->pipeline_cnt && found < 0; i++) {
                const sl_pipeline_conf_t *pc = &conf->pipelines[i];
                if (strlen(pc->name) == namelen && !strcmp(pc->name, name) &&
                    pc->api)
                        found = i;
        }
        if (found < 0)
                snprintf(pp->why, sizeof(pp->why),
                         "no pipeline '%.100s' served by the API",
                         sl_escape(name, namelen, (char[104]){0}, 104));
        free(name);
        return found;
}

/* /v1/pipelines/{pipeline}/dlq/replay: POST starts, GET says. */
static void path_replay(const sl_conf_t *conf, const char *seg, size_t len,
                        const char *method, sl_apireq_path_t *pp) {
        const sl_pipeline_conf_t *pc;
        int i;

        if (strcmp(method, "POST") && strcmp(method, "GET") &&
            strcmp(method, "HEAD")) {
                refuse_method(pp, method, "GET, HEAD, POST");
                return;
        }
        if ((i = path_pipeline(conf, seg, len, pp)) < 0)
                return;
        pc = &conf->pipelines[i];
        if (!pc->dlq) {
                snprintf(pp->why, sizeof(pp->why),
                         "pipeline '%.100s' has no DLQ (dlq = none)", pc->name);
                return;
        }
        pp->pipeline = i;
        pp->route =
            strcmp(method, "POST") ? &sl_route_replay_status : &sl_route_replay;
        pp->bad = 0;
}

void sl_apireq_path_parse(const sl_conf_t *conf, const char *url,
                          const char *method, sl_apireq_path_t *pp) {
        const char *seg[6];
        size_t seglen[6];
        int n = path_segments(url, seg, seglen, 6);
        const char *action = n == 6 ? seg[5] : NULL;
        const sl_route_t *any;
        size_t actionlen = n == 6 ? seglen[5] : 0;
        char *name;
        size_t namelen;
        const sl_pipeline_conf_t *pc;

        memset(pp, 0, sizeof(*pp));
        pp->route = NULL;
        pp->pipeline = -1;
        pp->bad = 404;
        snprintf(pp->why, sizeof(pp->why), "no such route");
        if (n < 1 || !seg_is(seg[0], seglen[0], "v1"))
                return;
        if (n == 1 || (n == 2 && seglen[1] == 0)) {
                if (!strcmp(method, "GET") || !strcmp(method, "HEAD")) {
                        pp->route = &sl_route_index;
                        pp->bad = 0;
                } else {
                        refuse_method(pp, method, "GET, HEAD");
                }
                return;
        }
        if ((n != 5 && n != 6) || !seg_is(seg[1], seglen[1], "pipelines") ||
            !seglen[2] || !seglen[4])
                return;
        if (n == 5 && seg_is(seg[3], seglen[3], "dlq") &&
            seg_is(seg[4], seglen[4], "replay")) {
                path_replay(conf, seg[2], seglen[2], method, pp);
                return;
        }
        if (!(any =
                  path_route(seg[3], seglen[3], action, actionlen, method, pp)))
                return;
        pp->route = any;

        /* The pipeline: by its decoded name, among those the API serves. */
        if (!(name = sl_apireq_pct_decode(seg[2], seglen[2], &namelen))) {
                pp->route = NULL;
                return;
        }
        for (int i = 0; i < conf->pipeline_cnt && pp->pipeline < 0; i++) {
                pc = &conf->pipelines[i];
                if (strlen(pc->name) == namelen && !strcmp(pc->name, name) &&
                    pc->api)
                        pp->pipeline = i;
        }
        if (pp->pipeline < 0) {
                snprintf(pp->why, sizeof(pp->why),
                         "no pipeline '%.100s' served by the API",
                         sl_escape(name, namelen, (char[104]){0}, 104));
                free(name);
                pp->route = NULL;
                return;
        }
        free(name);
        pc = &conf->pipelines[pp->pipeline];
        if (!(pp->route = pipe_route(pc, seg[3], seglen[3], action, actionlen,
                                     method))) {
                snprintf(pp->why, sizeof(pp->why),
                         "pipeline '%.100s' is a %s pipeline: no %s", pc->name,
                         sl_op_type_name(pc->type), any->what);
                pp->pipeline = -1;
                return;
        }
        if (!(pp->key = sl_apireq_pct_decode(seg[4], seglen[4], &pp->keylen)) ||
            !pp->keylen) {
                free(pp->key);
                pp->key = NULL;
                pp->route = NULL;
                pp->pipeline = -1;
                snprintf(pp->why, sizeof(pp->why), "bad key in the path");
                return;
        }
        pp->bad = 0;
}

void sl_apireq_path_clear(sl_apireq_path_t *pp) {
        free(pp->key);
        pp->key = NULL;
}

/* ------------------------------------------------------------------ */
/* PUT /timers bodies.                                                  */

static void body_hdr(sl_apireq_timer_t *b, const char *name, const char *value,
                     size_t size) {
        sl_assert(b->hdr_cnt < SL_ARRAY_SIZE(b->hdrs));
        b->hdrs[b->hdr_cnt].name = name;
        b->hdrs[b->hdr_cnt].value = value;
        b->hdrs[b->hdr_cnt].size = size;
        b->hdr_cnt++;
}

/* "headers": an object of strings (or nulls), passed through. */
static int body_user_headers(sl_apireq_timer_t *b, json_t *v, const char **code,
                             char *why, size_t why_size) {
        const char *hn;
        json_t *hv;
        *code = "bad-header";
        if (!json_is_object(v)) {
                snprintf(why, why_size,
                         "headers: an object of strings is expected");
                return -1;
        }
        if (json_object_size(v) > SL_APIREQ_MAX_USER_HEADERS) {
                snprintf(why, why_size, "more than %d headers",
                         SL_APIREQ_MAX_USER_HEADERS);
                return -1;
        }
        json_object_foreach(v, hn, hv) {
                if (json_is_null(hv)) {
                        body_hdr(b, hn, NULL, 0);
                } else if (json_is_string(hv)) {
                        body_hdr(b, hn, json_string_value(hv),
                                 json_string_length(hv));
                } else {
                        char esc[104];
                        snprintf(why, why_size,
                                 "headers: the value of %s is not a string",
                                 sl_escape(hn, strlen(hn), esc, sizeof(esc)));
                        return -1;
                }
        }
        return 0;
}

/* "value" (a string as is, any other JSON as its compact text) or
 * "value_base64". */
static int body_value(sl_apireq_timer_t *b, const char *name, json_t *v,
                      const char **code, char *why, size_t why_size) {
        *code = "bad-body";
        if (b->value) {
                snprintf(why, why_size,
                         "value and value_base64 exclude each other");
                return -1;
        }
        if (!strcmp(name, "value_base64")) {
                if (!json_is_string(v) ||
                    !(b->value = sl_base64_decode(json_string_value(v),
                                                  json_string_length(v),
                                                  &b->value_len))) {
                        snprintf(why, why_size, "value_base64: not base64");
                        return -1;
                }
        } else if (json_is_string(v)) {
                b->value_len = json_string_length(v);
                b->value = sl_malloc(b->value_len + 1);
                memcpy(b->value, json_string_value(v), b->value_len);
        } else {
                b->value = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                b->value_len = b->value ? strlen(b->value) : 0;
        }
        return 0;
}

/* One field of the body.  Returns 0, or -1 with the error's code and
 * message. */
static int body_field(sl_apireq_timer_t *b, const char *name, json_t *v,
                      const char **code, char *why, size_t why_size) {
        /* The fields that are one string header each. */
        static const struct {
                const char *field, *header, *code, *expected;
        } strings[] = {
            {"target", "sluice-target", "bad-header",
             "target: a string is expected"},
            {"delay", "sluice-delay", "bad-delay",
             "delay: a duration string such as \"90s\" is expected"},
            {"key", "sluice-target-key", "bad-header",
             "key: a string is expected"},
            {"every", "sluice-every", "bad-schedule",
             "every: a duration string such as \"10m\" is expected"},
            {"cron", "sluice-cron", "bad-schedule",
             "cron: a cron expression string is expected"},
            {"tz", "sluice-tz", "bad-schedule",
             "tz: a time zone name such as \"Europe/Paris\" is expected"},
            {"catch_up", "sluice-catch-up", "bad-schedule",
             "catch_up: \"latest\", \"all\" or \"none\" is expected"},
        };
        /* The fields that are epoch ms (an integer) or a string. */
        struct {
                const char *field, *header, *code;
                char *buf;
        } times[] = {
            {"at", "sluice-at", "bad-at", b->at_buf},
            {"start", "sluice-start", "bad-schedule", b->start_buf},
            {"until", "sluice-until", "bad-schedule", b->until_buf},
        };
        /* The fields that are an integer. */
        struct {
                const char *field, *header, *code;
                char *buf;
        } ints[] = {
            {"partition", "sluice-target-partition", "bad-target-partition",
             b->part_buf},
            {"count", "sluice-count", "bad-schedule", b->count_buf},
        };
        for (size_t i = 0; i < SL_ARRAY_SIZE(strings); i++) {
                if (strcmp(name, strings[i].field))
                        continue;
                if (!json_is_string(v)) {
                        *code = strings[i].code;
                        snprintf(why, why_size, "%s", strings[i].expected);
                        return -1;
                }
                body_hdr(b, strings[i].header, json_string_value(v),
                         json_string_length(v));
                return 0;
        }
        for (size_t i = 0; i < SL_ARRAY_SIZE(times); i++) {
                if (strcmp(name, times[i].field))
                        continue;
                if (json_is_integer(v)) {
                        snprintf(times[i].buf, 32, "%" PRId64,
                                 (int64_t)json_integer_value(v));
                        body_hdr(b, times[i].header, times[i].buf,
                                 strlen(times[i].buf));
                } else if (json_is_string(v)) {
                        body_hdr(b, times[i].header, json_string_value(v),
                                 json_string_length(v));
                } else {
                        *code = times[i].code;
                        snprintf(why, why_size,
                                 "%s: epoch ms or an RFC 3339 string is "
                                 "expected",
                                 times[i].field);
                        return -1;
                }
                return 0;
        }
        for (size_t i = 0; i < SL_ARRAY_SIZE(ints); i++) {
                if (strcmp(name, ints[i].field))
                        continue;
                if (!json_is_integer(v)) {
                        *code = ints[i].code;
                        snprintf(why, why_size, "%s: an integer is expected",
                                 ints[i].field);
                        return -1;
                }
                snprintf(ints[i].buf, 32, "%" PRId64,
                         (int64_t)json_integer_value(v));
                body_hdr(b, ints[i].header, ints[i].buf, strlen(ints[i].buf));
                return 0;
        }
        if (!strcmp(name, "value") || !strcmp(name, "value_base64"))
                return body_value(b, name, v, code, why, why_size);
        if (!strcmp(name, "headers"))
                return body_user_headers(b, v, code, why, why_size);
        *code = "bad-body";
        snprintf(why, why_size, "unknown field '%s'",
                 sl_escape(name, strlen(name), (char[104]){0}, 104));
        return -1;
}

int sl_apireq_timer_read(const char *body, size_t len, sl_apireq_timer_t *b,
                         const char **code, char *why, size_t why_size) {
        json_error_t jerr;
        const char *name;
        json_t *v;

        b->doc = json_loadb(body, len, 0, &jerr);
        if (!b->doc || !json_is_object(b->doc)) {
                *code = "bad-body";
                snprintf(why, why_size, "the body must be a JSON object%s%s",
                         b->doc ? "" : ": ", b->doc ? "" : jerr.text);
                return -1;
        }
        json_object_foreach(b->doc, name, v) {
                if (body_field(b, name, v, code, why, why_size))
                        return -1;
        }
        if (!b->value)
                b->value = sl_strdup("");
        return 0;
}

void sl_apireq_timer_clear(sl_apireq_timer_t *b) {
        free(b->value);
        json_decref(b->doc);
        memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------------ */
/* Answers of forwarded lookups.                                        */

int sl_apireq_answer_parse(char *buf, size_t len, sl_apireq_answer_t *a,
                           char *why, size_t why_size) {
        static const char answered[] = SL_APIREQ_ANSWERED_HDR ":";
        static const char peer[] = SL_APIREQ_PEER_AUTH_HDR ":";
        long long clen = -1;
        char *hend, *p;

        memset(a, 0, sizeof(*a));
        buf[len] = '\0';
        if (sscanf(buf, "HTTP/1.%*d %d", &a->status) != 1 || a->status < 100 ||
            a->status > 599 || !(hend = strstr(buf, "\r\n\r\n"))) {
                snprintf(why, why_size, "is not an HTTP answer");
                return -1;
        }
        *hend = '\0';
        for (p = strstr(buf, "\r\n"); p; p = strstr(p + 2, "\r\n")) {
                const char *h = p + 2;
                if (!strncasecmp(h, "Retry-After:", 12))
                        sscanf(h + 12, " %15s", a->retry_after);
                else if (!strncasecmp(h, "Content-Length:", 15))
                        clen = strtoll(h + 15, NULL, 10);
                else if (!strncasecmp(h, answered, sizeof(answered) - 1))
                        sscanf(h + sizeof(answered) - 1, " %299s",
                               a->answered_by);
                else if (!strncasecmp(h, peer, sizeof(peer) - 1))
                        /* Two words ("v1 mac=..."), to the end of the
                         * line; checked by whoever reads it. */
                        sscanf(h + sizeof(peer) - 1, " %159[^\r\n]",
                               a->peer_auth);
        }
        a->body_len = len - (size_t)(hend + 4 - buf);
        if (clen >= 0 && (size_t)clen != a->body_len) {
                snprintf(why, why_size, "was cut short");
                return -1;
        }
        a->body = sl_malloc(a->body_len + 1);
        memcpy(a->body, hend + 4, a->body_len);
        a->body[a->body_len] = '\0';
        return 0;
}

/* ------------------------------------------------------------------ */
/* POST /dlq/replay bodies.                                             */

/* A since/until member: epoch ms, or RFC 3339 text; -1 when absent. */
static int replay_time(json_t *v, const char *name, int64_t *out, char *why,
                       size_t why_size) {
        char err[200];

        *out = -1;
        if (!v || json_is_null(v))
                return 0;
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *out = json_integer_value(v);
                return 0;
        }
        if (json_is_string(v) &&
            !sl_parse_timestamp_ms_n(json_string_value(v),
                                     json_string_length(v), out, err,
                                     sizeof(err)))
                return 0;
        snprintf(why, why_size,
                 "%s: epoch milliseconds or RFC 3339 text "
                 "(2026-01-01T00:00:00Z)",
                 name);
        return -1;
}

int sl_apireq_replay_read(const char *body, size_t len, sl_apireq_replay_t *b,
                          const char **code, char *why, size_t why_size) {
        json_error_t jerr;
        const char *k;
        json_t *v;

        memset(b, 0, sizeof(*b));
        b->since = b->until = b->limit = -1;
        *code = "bad-body";
        b->doc = len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)
                     : json_object();
        if (!b->doc) {
                snprintf(why, why_size, "not JSON: %s", jerr.text);
                return -1;
        }
        if (!json_is_object(b->doc)) {
                snprintf(why, why_size, "not a JSON object");
                return -1;
        }
        json_object_foreach(b->doc, k, v) {
                if (!strcmp(k, "reasons")) {
                        size_t i;
                        json_t *r;
                        if (json_is_string(v)) {
                                b->reasons[b->reason_cnt++] =
                                    json_string_value(v);
                                continue;
                        }
                        if (!json_is_array(v) ||
                            json_array_size(v) > SL_APIREQ_MAX_REASONS) {
                                snprintf(why, why_size,
                                         "reasons: a string or an array of "
                                         "at most %d strings",
                                         SL_APIREQ_MAX_REASONS);
                                return -1;
                        }
                        json_array_foreach(v, i, r) {
                                if (!json_is_string(r)) {
                                        snprintf(why, why_size,
                                                 "reasons: strings only");
                                        return -1;
                                }
                                b->reasons[b->reason_cnt++] =
                                    json_string_value(r);
                        }
                } else if (!strcmp(k, "since")) {
                        if (replay_time(v, "since", &b->since, why, why_size))
                                return -1;
                } else if (!strcmp(k, "until")) {
                        if (replay_time(v, "until", &b->until, why, why_size))
                                return -1;
                } else if (!strcmp(k, "limit")) {
                        if (json_is_null(v))
                                continue;
                        if (!json_is_integer(v) || json_integer_value(v) < 0) {
                                snprintf(why, why_size,
                                         "limit: a count (0 or more)");
                                return -1;
                        }
                        b->limit = json_integer_value(v);
                } else if (!strcmp(k, "dry_run") ||
                           !strcmp(k, "from_beginning")) {
                        if (!json_is_boolean(v)) {
                                snprintf(why, why_size, "%s: true or false", k);
                                return -1;
                        }
                        *(!strcmp(k, "dry_run") ? &b->dry_run
                                                : &b->from_beginning) =
                            json_is_true(v);
                } else {
                        snprintf(why, why_size,
                                 "unknown member '%.40s' (reasons, since, "
                                 "until, limit, dry_run, from_beginning)",
                                 k);
                        return -1;
                }
        }
        return 0;
}

void sl_apireq_replay_clear(sl_apireq_replay_t *b) {
        json_decref(b->doc);
        b->doc = NULL;
}
