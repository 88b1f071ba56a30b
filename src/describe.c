/* SPDX-License-Identifier: Apache-2.0 */
/*
 * describe.c — the JSON answers of the HTTP API's lookups (describe.h has
 * every shape).  Views in, jansson objects out; nothing here reads a clock
 * or the state of a partition on its own.
 */
#include "describe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* 9999-12-31T23:59:59.999Z */

/* Sets obj[name] = v, taking v (allocation failure aborts). */
static void set(json_t *obj, const char *name, json_t *v) {
        int r = json_object_set_new(obj, name, v);
        sl_assert(v && r == 0);
}

void sl_describe_time(json_t *obj, const char *name, int64_t ms) {
        char key[64], text[32];
        snprintf(key, sizeof(key), "%s_ms", name);
        if (ms == INT64_MIN) {
                set(obj, key, json_null());
                set(obj, name, json_null());
                return;
        }
        set(obj, key, json_integer(ms));
        set(obj, name,
            sl_time_rfc3339(ms, text, sizeof(text)) ? json_null()
                                                    : json_string(text));
}

void sl_describe_bytes(json_t *obj, const char *name, const void *p, size_t n) {
        char enc[64];
        json_t *s = json_stringn(p ? p : "", n); /* NULL: not UTF-8 */
        snprintf(enc, sizeof(enc), "%s_encoding", name);
        if (s) {
                set(obj, name, s);
                json_object_del(obj, enc);
                return;
        }
        {
                char *b = sl_malloc(SL_BASE64_LEN(n) + 1);
                sl_base64_encode(b, p, n);
                set(obj, name, json_string(b));
                set(obj, enc, json_string("base64"));
                free(b);
        }
}

/* now - then, at least 0 (then may be any int64 a record held). */
static int64_t since(int64_t now, int64_t then) {
        int64_t d;
        if (__builtin_sub_overflow(now, then, &d))
                return now > then ? INT64_MAX : 0;
        return d > 0 ? d : 0;
}

/* A double as JSON: jansson refuses NaN and infinities. */
static json_t *real(double v) {
        return json_real(isfinite(v) ? v : 0.0);
}

/* ------------------------------------------------------------------ */
/* delay                                                               */

json_t *sl_describe_timer(const sl_describe_timer_t *v, int64_t now_ms) {
        json_t *o = json_object();
        int64_t in;

        sl_assert(o && v && v->target_topic);
        sl_describe_bytes(o, "id", v->id, v->idlen);
        set(o, "partition", json_integer(v->partition));
        sl_describe_time(o, "due", v->due_ms);
        if (__builtin_sub_overflow(v->due_ms, now_ms, &in))
                in = v->due_ms < 0 ? INT64_MIN : INT64_MAX;
        set(o, "due_in_ms", json_integer(in));
        set(o, "due_on_arrival", json_boolean(v->due_on_arrival));
        /* A topic restored from a changelog may hold any bytes. */
        sl_describe_bytes(o, "target_topic", v->target_topic,
                          strlen(v->target_topic));
        if (v->target_key_null)
                set(o, "target_key", json_null());
        else
                sl_describe_bytes(o, "target_key", v->target_key,
                                  v->target_keylen);
        set(o, "target_key_source",
            json_string(v->target_key_null     ? "null"
                        : v->target_key_header ? "header"
                                               : "id"));
        set(o, "target_partition",
            v->target_partition >= 0 ? json_integer(v->target_partition)
                                     : json_null());
        set(o, "payload_bytes", json_integer((json_int_t)v->payload_bytes));
        set(o, "header_count", json_integer((json_int_t)v->header_count));
        set(o, "header_bytes", json_integer((json_int_t)v->header_bytes));
        set(o, "seq", json_integer(v->seq));
        if (v->expr) {
                json_t *sc = json_object(), *ms = json_array(),
                       *at = json_array();
                sl_assert(sc && ms && at);
                sl_describe_bytes(sc, v->cron ? "cron" : "every", v->expr,
                                  v->expr_len);
                if (v->tz)
                        sl_describe_bytes(sc, "tz", v->tz, v->tz_len);
                else
                        set(sc, "tz", json_string("UTC"));
                set(sc, "catch_up", json_string(v->catch_up));
                set(sc, "fired", json_integer(v->fired));
                if (v->last_fired_ms) {
                        sl_describe_time(sc, "last_fired", v->last_fired_ms);
                } else {
                        set(sc, "last_fired_ms", json_null());
                        set(sc, "last_fired", json_null());
                }
                for (int i = 0; i < v->next_cnt && i < SL_DESCRIBE_NEXT; i++) {
                        json_t *one = json_object();
                        sl_assert(one);
                        sl_describe_time(one, "t", v->next_ms[i]);
                        json_array_append(ms, json_object_get(one, "t_ms"));
                        json_array_append(at, json_object_get(one, "t"));
                        json_decref(one);
                }
                set(sc, "next_ms", ms);
                set(sc, "next", at);
                set(o, "schedule", sc);
        }
        return o;
}

/* ------------------------------------------------------------------ */
/* throttle                                                            */

static const char *source_name(sl_rate_source_t s) {
        switch (s) {
        case SL_RATE_KEY:
                return "key";
        case SL_RATE_DEFAULT:
                return "default";
        case SL_RATE_FALLBACK:
                break;
        }
        return "config";
}

json_t *sl_describe_throttle_key(const sl_describe_tkey_t *v, int64_t now_ms) {
        json_t *o = json_object();
        char rate[64];

        sl_assert(o && v);
        sl_describe_bytes(o, "key", v->key, v->keylen);
        set(o, "partition", json_integer(v->partition));
        set(o, "tracked", json_boolean(v->tracked));
        sl_rate_format(&v->rate, rate, sizeof(rate));
        set(o, "rate", json_string(rate));
        set(o, "rate_per_sec", real(v->rate.per_sec));
        set(o, "burst", real(v->rate.burst));
        set(o, "rate_source", json_string(source_name(v->source)));
        set(o, "is_default", json_boolean(v->source != SL_RATE_KEY));
        set(o, "tokens", real(v->tokens));
        set(o, "backlog", json_integer((json_int_t)v->backlog));
        set(o, "backlog_bytes", json_integer((json_int_t)v->backlog_bytes));
        set(o, "oldest_age_ms",
            v->backlog && v->oldest_received_ms != INT64_MIN
                ? json_integer(since(now_ms, v->oldest_received_ms))
                : json_null());
        sl_describe_time(o, "head_deadline",
                         v->backlog ? v->head_deadline_ms : INT64_MIN);
        sl_describe_time(o, "next_send",
                         v->backlog && v->next_send_ms != INT64_MAX
                             ? SL_MAX(now_ms, v->next_send_ms)
                             : INT64_MIN);
        set(o, "fetching", json_boolean(v->backlog && v->fetching));
        return o;
}

/* ------------------------------------------------------------------ */
/* debounce                                                            */

typedef struct items_s {
        json_t *arr;
        size_t shown;
} items_t;

static void item_cb(const sl_debounce_item_t *it, void *opaque) {
        items_t *a = opaque;
        json_t *o;
        int r;
        if (a->shown >= SL_DESCRIBE_ITEMS_MAX)
                return;
        o = json_object();
        sl_assert(o);
        sl_describe_bytes(o, "id", it->id, it->idlen);
        set(o, "payload_bytes", json_integer((json_int_t)it->payload_len));
        sl_describe_time(o, "first_seen", it->first_seen_ms);
        sl_describe_time(o, "last_update", it->last_update_ms);
        r = json_array_append_new(a->arr, o);
        sl_assert(r == 0);
        a->shown++;
}

json_t *sl_describe_group(const sl_debounce_t *d, const void *key,
                          size_t keylen, int32_t partition, int64_t now_ms) {
        const sl_debounce_params_t *p = sl_debounce_params(d);
        sl_debounce_group_t g;
        items_t a;
        json_t *o, *lim;

        if (!sl_debounce_group(d, key, keylen, &g))
                return NULL;
        o = json_object();
        lim = json_object();
        a.arr = json_array();
        a.shown = 0;
        sl_assert(o && lim && a.arr);
        sl_describe_bytes(o, "key", g.key, g.keylen);
        set(o, "partition", json_integer(partition));
        set(o, "items", json_integer((json_int_t)g.items));
        set(o, "bytes", json_integer((json_int_t)g.bytes));
        sl_describe_time(o, "opened", g.opened_ms);
        set(o, "age_ms", json_integer(since(now_ms, g.opened_ms)));
        sl_describe_time(o, "last_update", g.last_update_ms);
        set(o, "idle_for_ms", json_integer(since(now_ms, g.last_update_ms)));
        sl_describe_time(o, "next_flush", g.due_ms);
        set(o, "next_flush_in_ms", json_integer(since(g.due_ms, now_ms)));
        set(o, "next_flush_reason",
            json_string(sl_debounce_reason_str(g.reason)));
        set(lim, "idle_ms", json_integer(p->idle_ms));
        set(lim, "max_age_ms", json_integer(p->max_age_ms));
        set(lim, "max_items", json_integer(p->max_items));
        set(lim, "max_bytes", json_integer(p->max_bytes));
        set(o, "limits", lim);
        sl_debounce_foreach_item(d, key, keylen, item_cb, &a);
        set(o, "pending", a.arr);
        set(o, "pending_truncated", json_boolean(a.shown < g.items));
        return o;
}

json_t *sl_describe_retry(void) {
        return json_pack("{s:b}", "retry", 1);
}

int sl_describe_is_retry(const json_t *j) {
        return json_object_size(j) == 1 &&
               json_is_true(json_object_get(j, "retry"));
}

json_t *sl_describe_gone(int64_t due_ms) {
        return json_pack("{s:I}", "payload_gone_due_ms", (json_int_t)due_ms);
}

int64_t sl_describe_gone_due(const json_t *j) {
        json_t *d = json_object_get(j, "payload_gone_due_ms");
        return json_object_size(j) == 1 && json_is_integer(d)
                   ? (int64_t)json_integer_value(d)
                   : -1;
}
