/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_op_describe.c — the operators' describe() hooks and the debounce
 * flush control record, through the real operators (src/op_*.c) on the
 * fuzz harnesses' stub runtime (tests/fuzz/runtime_stub.inc): state
 * rebuilt from changelog, overflow and rates records, input records fed to
 * input(), then looked up as the HTTP API will look it up.
 *
 * Input records carry headers, which librdkafka keeps in its private
 * rd_kafka_msg_t, whose first member is the public rd_kafka_message_t
 * (rd_kafka_message_set_headers() writes past the public struct): a test
 * message is therefore a zeroed block far larger than either.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <jansson.h>

#include "../fuzz/runtime_stub.inc"
#include "debounce.h"
#include "sluice.pb-c.h"

static const char conf_text[] =
    "[sluice]\napp_id = t\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "[pipeline groups]\ntype = debounce\ninput = groups.in\n"
    "output = groups.out\nidle = 60s\nmax_age = 10m\nmax_items = 2\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n"
    "default_rate = 100/s\n";

static sl_conf_t *conf;

static int setup(void **state) {
        (void)state;
        fz_log_init();
        conf = fz_conf_from_text(conf_text);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        sl_conf_destroy(conf);
        return 0;
}

/* ------------------------------------------------------------------ */
/* Framed rebuild input (runtime_stub.inc's framing).                  */

typedef struct frame_s {
        uint8_t buf[8192];
        size_t n;
} frame_t;

static void frame_init(frame_t *f) {
        memset(f, 0, sizeof(*f));
        f->n = 8; /* header: clock +0, variant 0, mode 0 */
}

/* One record: src 0 changelog, 1 second source, 2 table; value NULL is a
 * tombstone. */
static void frame_rec(frame_t *f, int src, const void *key, size_t keylen,
                      const void *value, size_t len) {
        f->buf[f->n++] = (uint8_t)(src | (value ? 0 : FZ_TAG_TOMBSTONE));
        f->buf[f->n++] = (uint8_t)(keylen & 0xff);
        f->buf[f->n++] = (uint8_t)(keylen >> 8);
        memcpy(f->buf + f->n, key, keylen);
        f->n += keylen;
        if (!value)
                return;
        f->buf[f->n++] = (uint8_t)(len & 0xff);
        f->buf[f->n++] = (uint8_t)(len >> 8);
        memcpy(f->buf + f->n, value, len);
        f->n += len;
}

/* Sets up pipeline pl_index and rebuilds it from f (no wake-ups). */
static void start(fz_runtime_t *rt, fz_input_t *in, const frame_t *f,
                  int pl_index, const sl_op_t *op) {
        fz_parse(f->buf, f->n, in);
        fz_setup(rt, conf, pl_index, op, 0);
        fz_rebuild(rt, in, 1);
}

static void stop(fz_runtime_t *rt, fz_input_t *in) {
        fz_teardown(rt);
        fz_input_free(in);
}

/* ------------------------------------------------------------------ */
/* Input records with headers.                                         */

#define MSG_BLOCK 4096

/* A message for input(): key and value as given (value NULL: a null
 * value), headers as name/value pairs (value NULL: a null header) up to a
 * NULL name.  Free with msg_free(). */
static rd_kafka_message_t *msg_new(int64_t offset, const char *key,
                                   const char *value, ...) {
        rd_kafka_message_t *m = calloc(1, MSG_BLOCK);
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        const char *name;
        va_list ap;

        m->partition = FZ_PARTITION;
        m->offset = offset;
        if (key) {
                m->key = strdup(key);
                m->key_len = strlen(key);
        }
        if (value) {
                m->payload = strdup(value);
                m->len = strlen(value);
        }
        va_start(ap, value);
        while ((name = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);
                rd_kafka_header_add(h, name, -1, v, v ? -1 : 0);
        }
        va_end(ap);
        rd_kafka_message_set_headers(m, h);
        return m;
}

static void msg_free(rd_kafka_message_t *m) {
        rd_kafka_headers_t *h = NULL;
        if (!rd_kafka_message_headers(m, &h))
                rd_kafka_headers_destroy(h);
        free(m->key);
        free(m->payload);
        free(m);
}

static void input(fz_runtime_t *rt, rd_kafka_message_t *m) {
        rt->pl.op->input(&rt->task, m);
        msg_free(m);
}

static json_t *describe(fz_runtime_t *rt, const char *key) {
        return rt->pl.op->describe(&rt->task, key, strlen(key));
}

static json_int_t int_of(const json_t *o, const char *name) {
        const json_t *v = json_object_get(o, name);
        if (!json_is_integer(v))
                fail_msg("%s is not an integer", name);
        return json_integer_value(v);
}

static const char *str_of(const json_t *o, const char *name) {
        const json_t *v = json_object_get(o, name);
        if (!json_is_string(v))
                fail_msg("%s is not a string", name);
        return json_string_value(v);
}

static uint64_t counter(fz_runtime_t *rt, const char *name, const char *label,
                        const char *value) {
        return sl_counter_get(sl_metrics_counter(rt->run.metrics, name, "",
                                                 "pipeline", rt->pl.conf->name,
                                                 label, value, NULL));
}

/* ------------------------------------------------------------------ */
/* delay                                                               */

/* A timer restored from the changelog, and one scheduled by input with a
 * target key, partition and headers of its own; cancelled, it is gone. */
static void test_delay(void **state) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header h = SLUICE__V1__HEADER__INIT, *hp = &h;
        int64_t due = sl_now_ms() + 3600000;
        uint8_t rec[256];
        fz_runtime_t rt;
        fz_input_t in;
        frame_t f;
        json_t *o;
        char at[32];
        (void)state;

        tm.due_ms = due;
        tm.target_topic = "out.a";
        tm.payload.data = (uint8_t *)"hello";
        tm.payload.len = 5;
        tm.target_partition = -1;
        tm.seq = 41;
        tm.created_ms = sl_now_ms();
        h.name = "trace";
        h.value.data = (uint8_t *)"abc";
        h.value.len = 3;
        tm.n_headers = 1;
        tm.headers = &hp;
        frame_init(&f);
        frame_rec(&f, 0, "t-1", 3, rec, sluice__v1__timer__pack(&tm, rec));
        start(&rt, &in, &f, 0, &sl_op_delay);

        o = describe(&rt, "t-1");
        assert_non_null(o);
        assert_string_equal(str_of(o, "id"), "t-1");
        assert_int_equal(int_of(o, "partition"), FZ_PARTITION);
        assert_int_equal(int_of(o, "due_ms"), due);
        assert_string_equal(str_of(o, "target_topic"), "out.a");
        assert_string_equal(str_of(o, "target_key"), "t-1");
        assert_string_equal(str_of(o, "target_key_source"), "id");
        assert_true(json_is_null(json_object_get(o, "target_partition")));
        assert_int_equal(int_of(o, "payload_bytes"), 5);
        assert_int_equal(int_of(o, "header_count"), 1);
        assert_int_equal(int_of(o, "header_bytes"), 8);
        assert_int_equal(int_of(o, "seq"), 41);
        json_decref(o);
        assert_null(describe(&rt, "t-2"));
        assert_null(describe(&rt, "t-"));

        snprintf(at, sizeof(at), "%" PRId64, due + 1000);
        input(&rt, msg_new(7, "t-2", "payload!", "sluice-target", "out.b",
                           "sluice-at", at, "sluice-target-key", "K",
                           "sluice-target-partition", "2", "x-a", "12",
                           "x-null", NULL, NULL));
        o = describe(&rt, "t-2");
        assert_non_null(o);
        assert_int_equal(int_of(o, "due_ms"), due + 1000);
        assert_string_equal(str_of(o, "target_topic"), "out.b");
        assert_string_equal(str_of(o, "target_key"), "K");
        assert_string_equal(str_of(o, "target_key_source"), "header");
        assert_int_equal(int_of(o, "target_partition"), 2);
        assert_int_equal(int_of(o, "payload_bytes"), 8);
        assert_int_equal(int_of(o, "header_count"), 2);
        assert_int_equal(int_of(o, "header_bytes"), 3 + 2 + 6);
        assert_int_equal(int_of(o, "seq"), 7);
        json_decref(o);

        input(&rt, msg_new(8, "t-2", NULL, NULL)); /* cancel */
        assert_null(describe(&rt, "t-2"));
        assert_non_null(o = describe(&rt, "t-1"));
        json_decref(o);
        stop(&rt, &in);
}

/* ------------------------------------------------------------------ */
/* debounce                                                            */

/* Items, a lookup, then a flush control record: one batch, reason
 * requested, before the group's idle deadline; the control record is not
 * an item; on an empty group it is a counted no-op; an unknown control is
 * refused and changes nothing. */
static void test_debounce_flush(void **state) {
        fz_runtime_t rt;
        fz_input_t in;
        frame_t f;
        json_t *o;
        uint64_t produced;
        (void)state;

        frame_init(&f);
        start(&rt, &in, &f, 1, &sl_op_debounce);
        assert_null(describe(&rt, "WH-1"));

        input(&rt, msg_new(10, "WH-1", "{\"o\":1}", "sluice-item", "A1", NULL));
        o = describe(&rt, "WH-1");
        assert_non_null(o);
        assert_int_equal(int_of(o, "items"), 1);
        assert_int_equal(int_of(o, "bytes"), 7);
        assert_string_equal(str_of(o, "next_flush_reason"), "idle");
        assert_int_equal(int_of(o, "next_flush_ms"),
                         int_of(o, "last_update_ms") + 60000);
        assert_string_equal(
            str_of(json_array_get(json_object_get(o, "pending"), 0), "id"),
            "A1");
        json_decref(o);

        /* The commit's seal: the item's chunk record. */
        produced = rt.produced;
        sl_op_debounce.seal(&rt.task);
        assert_int_equal(rt.produced, produced + 1);

        /* An unknown control: refused (DLQ), not an item. */
        produced = rt.produced;
        input(&rt,
              msg_new(11, "WH-1", "", "sluice-control", "flush-all", NULL));
        assert_int_equal(rt.produced, produced);
        o = describe(&rt, "WH-1");
        assert_int_equal(int_of(o, "items"), 1);
        json_decref(o);

        /* The flush: the batch (1 record) and its chunk's tombstone. */
        input(&rt, msg_new(12, "WH-1", NULL, "sluice-control", "flush",
                           "sluice-item", "A1", NULL));
        assert_int_equal(rt.produced, produced + 2);
        assert_null(describe(&rt, "WH-1"));
        assert_int_equal(counter(&rt, "sluice_debounce_batches_total", "reason",
                                 "requested"),
                         1);
        assert_int_equal(
            counter(&rt, "sluice_debounce_batches_total", "reason", "idle"), 0);
        assert_int_equal(counter(&rt, "sluice_debounce_flush_requests_total",
                                 "result", "flushed"),
                         1);

        /* Again, on the now empty group: nothing produced, counted. */
        input(&rt, msg_new(13, "WH-1", "", "sluice-control", "flush", NULL));
        assert_int_equal(rt.produced, produced + 2);
        assert_int_equal(counter(&rt, "sluice_debounce_flush_requests_total",
                                 "result", "empty"),
                         1);
        assert_int_equal(
            counter(&rt, "sluice_debounce_items_added_total", NULL, NULL), 1);

        /* Three items with max_items = 2: the first two went out when the
         * group filled; the flush takes the third. */
        input(&rt, msg_new(20, "WH-2", "a", "sluice-item", "i1", NULL));
        input(&rt, msg_new(21, "WH-2", "b", "sluice-item", "i2", NULL));
        input(&rt, msg_new(22, "WH-2", "c", "sluice-item", "i3", NULL));
        assert_int_equal(counter(&rt, "sluice_debounce_batches_total", "reason",
                                 "max_items"),
                         1);
        o = describe(&rt, "WH-2");
        assert_int_equal(int_of(o, "items"), 1);
        json_decref(o);
        input(&rt, msg_new(23, "WH-2", NULL, "sluice-control", "flush", NULL));
        assert_null(describe(&rt, "WH-2"));
        assert_int_equal(counter(&rt, "sluice_debounce_batches_total", "reason",
                                 "requested"),
                         2);
        stop(&rt, &in);
}

/* ------------------------------------------------------------------ */
/* throttle                                                            */

static size_t overflow_rec(uint8_t *buf, const char *payload, int64_t received,
                           int64_t deadline) {
        Sluice__V1__OverflowRecord r = SLUICE__V1__OVERFLOW_RECORD__INIT;
        r.payload.data = (uint8_t *)payload;
        r.payload.len = strlen(payload);
        r.deadline_ms = deadline;
        r.received_ms = received;
        return sluice__v1__overflow_record__pack(&r, buf);
}

/* A rate set on the rates topic is what the lookup shows, with the key's
 * bucket and backlog as rebuilt; a tombstone returns it to the default. */
static void test_throttle(void **state) {
        Sluice__V1__ThrottleKey k = SLUICE__V1__THROTTLE_KEY__INIT;
        int64_t now = sl_now_ms();
        uint8_t rec[256];
        fz_runtime_t rt;
        fz_input_t in;
        frame_t f;
        json_t *o;
        rd_kafka_message_t tomb = {0};
        (void)state;

        frame_init(&f);
        frame_rec(&f, 2, "K", 1, "10/s burst=5", 12);
        frame_rec(&f, 2, "*", 1, "50/s", 4);
        k.tokens = 0;
        k.updated_ms = now;
        k.drained_to = 0;
        frame_rec(&f, 0, "k/K", 3, rec,
                  sluice__v1__throttle_key__pack(&k, rec));
        frame_rec(&f, 1, "K", 1, rec,
                  overflow_rec(rec, "m1", now - 8000, now + 60000));
        frame_rec(&f, 1, "K", 1, rec,
                  overflow_rec(rec, "m22", now - 100, now + 90000));
        start(&rt, &in, &f, 2, &sl_op_throttle);

        o = describe(&rt, "K");
        assert_non_null(o);
        assert_string_equal(str_of(o, "key"), "K");
        assert_true(json_is_true(json_object_get(o, "tracked")));
        assert_string_equal(str_of(o, "rate"), "10/s burst=5");
        assert_string_equal(str_of(o, "rate_source"), "key");
        assert_true(json_is_false(json_object_get(o, "is_default")));
        assert_true(json_number_value(json_object_get(o, "tokens")) < 5);
        assert_int_equal(int_of(o, "backlog"), 2);
        assert_true(int_of(o, "backlog_bytes") > 0);
        assert_true(int_of(o, "oldest_age_ms") >= 8000 &&
                    int_of(o, "oldest_age_ms") < 60000);
        assert_int_equal(int_of(o, "head_deadline_ms"), now + 60000);
        /* An empty bucket at 10/s: a token within 100 ms. */
        assert_true(int_of(o, "next_send_ms") <= sl_now_ms() + 100);
        json_decref(o);

        /* A key without state: the "*" default, a full bucket. */
        o = describe(&rt, "other");
        assert_true(json_is_false(json_object_get(o, "tracked")));
        assert_string_equal(str_of(o, "rate"), "50/s burst=50");
        assert_string_equal(str_of(o, "rate_source"), "default");
        assert_true(json_number_value(json_object_get(o, "tokens")) == 50.0);
        assert_int_equal(int_of(o, "backlog"), 0);
        assert_true(json_is_null(json_object_get(o, "next_send_ms")));
        json_decref(o);

        /* Tombstones on the rates topic: K, then "*", go back. */
        tomb.key = "K";
        tomb.key_len = 1;
        rt.pl.op->table(&rt.pl, &tomb);
        o = describe(&rt, "K");
        assert_string_equal(str_of(o, "rate"), "50/s burst=50");
        assert_string_equal(str_of(o, "rate_source"), "default");
        assert_int_equal(int_of(o, "backlog"), 2);
        json_decref(o);
        tomb.key = "*";
        rt.pl.op->table(&rt.pl, &tomb);
        o = describe(&rt, "K");
        assert_string_equal(str_of(o, "rate"), "100/s burst=100");
        assert_string_equal(str_of(o, "rate_source"), "config");
        assert_true(json_is_true(json_object_get(o, "is_default")));
        json_decref(o);
        stop(&rt, &in);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_delay),
            cmocka_unit_test(test_debounce_flush),
            cmocka_unit_test(test_throttle),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
