/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delay_input.c — unit tests for reading delay input records: every
 * DLQ reason with its exact string, headers and json-envelope modes,
 * cancels, pass-through headers, default target, target key and partition,
 * RFC 3339 sluice-at, the range of due times, keyless records (generated
 * ids) and escaped details.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "delay_input.h"
#include "util.h"

#define NOW     1767225600000LL /* 2026-01-01T00:00:00Z */
#define DAY_MS  86400000LL
#define MAX_HDR 8

static sl_globs_t allowed;
static const char *const internal[] = {"p.changelog", "p.dlq"};

static int setup(void **state) {
        char err[128];
        (void)state;
        return sl_globs_parse("orders.*, p.*, fallback", &allowed, err,
                              sizeof(err));
}

static int teardown(void **state) {
        (void)state;
        sl_globs_free(&allowed);
        return 0;
}

static sl_delay_params_t params(sl_input_format_t fmt,
                                const char *default_target) {
        sl_delay_params_t p = {
            .default_target = default_target,
            .allowed_targets = &allowed,
            .max_delay_ms = 366 * DAY_MS,
            .max_record_bytes = 100,
            .input_format = fmt,
            .internal_topics = internal,
            .internal_cnt = (int)SL_ARRAY_SIZE(internal),
            .timestamp_skew_ms = 60000,
        };
        return p;
}

/* Headers from "name=value" strings; a string without '=' is a null
 * header.  Storage is static: one record at a time. */
static sl_hdr_t hdrbuf[MAX_HDR];
static char hdrnames[MAX_HDR][64];

static sl_delay_record_t record(const char *key, const char *value,
                                const char *const *hdrs) {
        sl_delay_record_t rec = {
            .key = key,
            .key_len = key ? strlen(key) : 0,
            .value = value,
            .value_len = value ? strlen(value) : 0,
            .hdrs = hdrbuf,
            .timestamp_ms = -1, /* none: the delay counts from NOW */
        };
        for (size_t i = 0; hdrs && hdrs[i]; i++) {
                const char *eq = strchr(hdrs[i], '=');
                size_t n = eq ? (size_t)(eq - hdrs[i]) : strlen(hdrs[i]);
                assert_true(i < MAX_HDR && n < sizeof(hdrnames[i]));
                memcpy(hdrnames[i], hdrs[i], n);
                hdrnames[i][n] = '\0';
                hdrbuf[i].name = hdrnames[i];
                hdrbuf[i].value = eq ? eq + 1 : NULL;
                hdrbuf[i].size = eq ? strlen(eq + 1) : 0;
                rec.hdr_cnt++;
        }
        return rec;
}

static void test_reason_strings(void **state) {
        (void)state;
        static const char *const want[SL_DELAY_REASON_CNT] = {
            [SL_DELAY_OK] = "ok",
            [SL_DELAY_MISSING_KEY] = "missing-key",
            [SL_DELAY_MISSING_TARGET] = "missing-target",
            [SL_DELAY_MISSING_DUE] = "missing-due",
            [SL_DELAY_CONFLICTING_DUE] = "conflicting-due",
            [SL_DELAY_BAD_DELAY] = "bad-delay",
            [SL_DELAY_BAD_AT] = "bad-at",
            [SL_DELAY_TOO_LONG] = "delay-too-long",
            [SL_DELAY_TARGET_NOT_ALLOWED] = "target-not-allowed",
            [SL_DELAY_TARGET_INTERNAL] = "target-internal",
            [SL_DELAY_BAD_TARGET_PARTITION] = "bad-target-partition",
            [SL_DELAY_BAD_ENVELOPE] = "bad-envelope",
            [SL_DELAY_OVERSIZE] = "oversize",
            [SL_DELAY_BAD_HEADER] = "bad-header",
            [SL_DELAY_BAD_SCHEDULE] = "bad-schedule",
        };
        for (int i = 0; i < SL_DELAY_REASON_CNT; i++)
                assert_string_equal(sl_delay_reason_str(i), want[i]);
        assert_string_equal(sl_delay_reason_str(-1), "unknown");
        assert_string_equal(sl_delay_reason_str(SL_DELAY_REASON_CNT),
                            "unknown");
}

/*
 * Refusals: each row is one record and the reason (by its string, as it
 * appears in the sluice-error header) and a piece of the detail.
 */
typedef struct refusal_s {
        const char *reason;
        int envelope;
        const char *default_target;
        const char *key; /* NULL: null key */
        const char *value;
        const char *hdrs[MAX_HDR];
        const char *detail; /* substring expected in the detail */
} refusal_t;

static const refusal_t refusals[] = {
    /* Recurring timers (delay_recurring.h). */
    {"conflicting-due",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=1s", "sluice-delay=1s"},
     "both sluice-delay and a recurring schedule"},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-cron=61 * * * *"},
     "sluice-cron: "},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=1s", "sluice-cron=@daily"},
     "both sluice-every and sluice-cron"},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=10ms"},
     "sluice-every: "},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-tz=Europe/Paris"},
     "sluice-tz without sluice-every or sluice-cron"},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=1m", "sluice-catch-up=some"},
     "sluice-catch-up: not latest, all or none: 'some'"},
    {"bad-schedule",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=1m", "sluice-count=0"},
     "sluice-count: must be at least 1"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-every=1m", "sluice-every=2m"},
     "sluice-every: given twice"},
    /* A keyless record is scheduled under a generated id, but a keyless
     * cancel names nothing. */
    {"missing-key", 0, NULL, NULL, NULL, {NULL}, "the key is null"},
    {"missing-key", 0, NULL, "", NULL, {NULL}, "the key is empty"},
    {"missing-key", 1, NULL, NULL, NULL, {NULL}, "needs the timer id"},
    {"missing-target", 0, NULL, "k", "v", {"sluice-delay=1s"}, "sluice-target"},
    {"missing-target",
     1,
     NULL,
     "k",
     "{\"message\":\"m\",\"countdown\":1}",
     {NULL},
     "topic"},
    {"missing-target",
     0,
     "bad name",
     "k",
     "v",
     {"sluice-delay=1s"},
     "default_target"},
    {"missing-target",
     0,
     "",
     "k",
     "v",
     {"sluice-delay=1s"},
     "no sluice-target header and no default_target"},
    {"missing-due",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a"},
     "no sluice-delay or sluice-at"},
    {"missing-due",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\"}",
     {NULL},
     "no countdown or at"},
    {"conflicting-due",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s", "sluice-at=1767225600000"},
     "both sluice-delay and sluice-at"},
    {"conflicting-due",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":1,\"at\":1}",
     {NULL},
     "both countdown and at"},
    {"conflicting-due",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":1}",
     {"sluice-delay=5s"},
     "both sluice-delay and countdown"},
    {"bad-delay",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=5x"},
     "sluice-delay: "},
    {"bad-delay",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay="},
     "sluice-delay: "},
    {"bad-delay",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=-5s"},
     "sluice-delay: "},
    {"bad-delay",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":\"soon\"}",
     {NULL},
     "countdown: not a number"},
    {"bad-delay",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":-3}",
     {NULL},
     "countdown: negative"},
    {"bad-at",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-at=tomorrow"},
     "sluice-at: "},
    {"bad-at",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-at=2026-13-01T00:00:00Z"},
     "sluice-at: "},
    /* Due times before 1970 or after year 9999 are refused before any
     * arithmetic (now - due would overflow). */
    {"bad-at",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":"
     "-9223372036854775808}",
     {NULL},
     "at: -9223372036854775808 is before 1970-01-01"},
    {"bad-at",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":-1}",
     {NULL},
     "before 1970"},
    {"bad-at",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-at=1969-12-31T23:59:59Z"},
     "sluice-at: -1000 is before 1970"},
    {"delay-too-long",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":"
     "9223372036854775807}",
     {NULL},
     "after year 9999"},
    {"bad-at",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":true}",
     {NULL},
     "at: not a number or a string"},
    {"bad-at",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":\"noon\"}",
     {NULL},
     "at: "},
    {"delay-too-long",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=367d"},
     "max_delay"},
    {"delay-too-long",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-at=2030-01-01T00:00:00Z"},
     "max_delay"},
    {"delay-too-long",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":1e300}",
     {NULL},
     "countdown"},
    {"delay-too-long",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":31708800.5}",
     {NULL},
     "max_delay"},
    {"target-not-allowed",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=billing.due", "sluice-delay=1s"},
     "'billing.due' does not match allowed_targets"},
    {"target-not-allowed",
     0,
     "billing.x",
     "k",
     "v",
     {"sluice-delay=1s"},
     "'billing.x'"},
    /* p.dlq matches the allowed globs, but is internal. */
    {"target-internal",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=p.dlq", "sluice-delay=1s"},
     "'p.dlq' is an internal"},
    {"target-internal",
     1,
     NULL,
     "k",
     "{\"topic\":\"p.changelog\",\"message\":\"m\",\"countdown\":1}",
     {NULL},
     "p.changelog"},
    /* Kafka's own topics (test_kafka_internal: whatever the globs say). */
    {"target-internal",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=__consumer_offsets", "sluice-delay=1s"},
     "'__consumer_offsets' is an internal topic of Kafka"},
    {"target-internal",
     1,
     NULL,
     "k",
     "{\"topic\":\"__transaction_state\",\"message\":\"m\","
     "\"countdown\":1}",
     {NULL},
     "__transaction_state"},
    {"bad-target-partition",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s",
      "sluice-target-partition=-1"},
     "sluice-target-partition: "},
    {"bad-target-partition",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s",
      "sluice-target-partition=abc"},
     "'abc'"},
    {"bad-target-partition",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s",
      "sluice-target-partition=2147483648"},
     "2147483648"},
    {"bad-target-partition",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s", "sluice-target-partition="},
     "sluice-target-partition: "},
    {"bad-envelope", 1, NULL, "k", "not json", {NULL}, "envelope: "},
    {"bad-envelope", 1, NULL, "k", "", {NULL}, "envelope: "},
    {"bad-envelope", 1, NULL, "k", "[1,2]", {NULL}, "not a JSON object"},
    {"bad-envelope",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"countdown\":1}",
     {NULL},
     "no message"},
    {"bad-envelope",
     1,
     NULL,
     "k",
     "{\"topic\":7,\"message\":\"m\",\"countdown\":1}",
     {NULL},
     "topic: not a string"},
    {"bad-envelope",
     1,
     NULL,
     "k",
     "{\"topic\":\"a b\",\"message\":\"m\",\"countdown\":1}",
     {NULL},
     "topic: "},
    {"bad-envelope",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"topic\":\"orders.b\",\"message\":\"m\"}",
     {NULL},
     "envelope: "},
    {"oversize",
     0,
     NULL,
     "k",
     "0123456789012345678901234567890123456789012345678901234567890123456789"
     "0123456789012345678901234567890123456789",
     {"sluice-target=orders.a", "sluice-delay=1s"},
     "key and value are 111 bytes, max_record_bytes is 100"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s", "sluice-delay=2s"},
     "sluice-delay: given twice"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-target=orders.b", "sluice-delay=1s"},
     "sluice-target: given twice"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target", "sluice-delay=1s"},
     "sluice-target: null value"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.a", "sluice-delay=1s", "sluice-target-key"},
     "sluice-target-key: null value"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=", "sluice-delay=1s"},
     "empty topic name"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders a", "sluice-delay=1s"},
     "[A-Za-z0-9._-]"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.\xc3\xa9", "sluice-delay=1s"},
     "not ASCII"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=orders.\xff", "sluice-delay=1s"},
     "not ASCII"},
    {"bad-header",
     0,
     NULL,
     "k",
     "v",
     {"sluice-target=..", "sluice-delay=1s"},
     "'..'"},
    {"bad-header",
     1,
     NULL,
     "k",
     "{\"topic\":\"orders.a\",\"message\":\"m\",\"countdown\":1}",
     {"sluice-target=orders.b"},
     "the envelope has a topic too"},
};

static void check_refusal(const refusal_t *c, const char *value_override,
                          size_t value_len) {
        sl_delay_params_t p =
            params(c->envelope ? SL_INPUT_JSON_ENVELOPE : SL_INPUT_HEADERS,
                   c->default_target);
        sl_delay_record_t rec = record(c->key, c->value, c->hdrs);
        sl_delay_req_t req;
        char detail[256];
        int r;

        if (value_override) {
                rec.value = value_override;
                rec.value_len = value_len;
        }
        r = sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail));
        if (strcmp(sl_delay_reason_str(r), c->reason) ||
            !strstr(detail, c->detail))
                fail_msg("key %s value %.60s: got %s (\"%s\"), want %s "
                         "(\"...%s...\")",
                         c->key ? c->key : "(null)",
                         c->value ? c->value : "(null)", sl_delay_reason_str(r),
                         detail, c->reason, c->detail);
        /* A refused request holds nothing and clearing it is harmless. */
        assert_null(req.hdrs);
        assert_null(req.priv_json);
        assert_null(req.priv_dumped);
        sl_delay_req_clear(&req);
}

static void test_refusals(void **state) {
        (void)state;
        int seen[SL_DELAY_REASON_CNT] = {0};

        for (size_t i = 0; i < SL_ARRAY_SIZE(refusals); i++) {
                check_refusal(&refusals[i], NULL, 0);
                for (int r = 0; r < SL_DELAY_REASON_CNT; r++)
                        if (!strcmp(sl_delay_reason_str(r), refusals[i].reason))
                                seen[r] = 1;
        }
        /* Every reason is exercised above. */
        for (int r = 1; r < SL_DELAY_REASON_CNT; r++)
                if (!seen[r])
                        fail_msg("no refusal case for %s",
                                 sl_delay_reason_str(r));
}

static void test_long_topic_names(void **state) {
        (void)state;
        char name[300], hdr[320];
        const char *hdrs[] = {hdr, "sluice-delay=1s", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_req_t req;
        char detail[256];
        sl_globs_t any;

        assert_int_equal(sl_globs_parse("*", &any, detail, sizeof(detail)), 0);
        p.allowed_targets = &any;

        /* 249 characters: legal. */
        memset(name, 'a', 249);
        name[249] = '\0';
        snprintf(hdr, sizeof(hdr), "sluice-target=%s", name);
        sl_delay_record_t rec = record("k", "v", hdrs);
        assert_int_equal(
            sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail)),
            SL_DELAY_OK);
        assert_string_equal(req.target, name);
        sl_delay_req_clear(&req);

        /* 250: not. */
        strcat(hdr, "a");
        rec = record("k", "v", hdrs);
        assert_int_equal(
            sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail)),
            SL_DELAY_BAD_HEADER);
        assert_non_null(strstr(detail, "longer than 249"));
        sl_delay_req_clear(&req);
        sl_globs_free(&any);
}

/* A NUL byte inside a header value is a bad topic, not a truncation. */
static void test_binary_topic(void **state) {
        (void)state;
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_hdr_t hdrs[] = {
            {"sluice-target", "orders.a\0x", 10},
            {"sluice-delay", "1s", 2},
        };
        sl_delay_record_t rec = {"k", 1, "v", 1, hdrs, 2};
        sl_delay_req_t req;
        char detail[256];

        assert_int_equal(
            sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail)),
            SL_DELAY_BAD_HEADER);
        assert_non_null(strstr(detail, "'orders.a\\x00x'"));
        /* And the detail buffer may be absent. */
        assert_int_equal(sl_delay_input_parse(&p, &rec, NOW, &req, NULL, 0),
                         SL_DELAY_BAD_HEADER);
        sl_delay_req_clear(&req);
}

/* Parses a record that must be accepted. */
static void must_accept(sl_delay_params_t *p, sl_delay_record_t *rec,
                        sl_delay_req_t *req) {
        char detail[256];
        int r = sl_delay_input_parse(p, rec, NOW, req, detail, sizeof(detail));
        if (r != SL_DELAY_OK)
                fail_msg("refused: %s: %s", sl_delay_reason_str(r), detail);
}

static void test_schedule_headers(void **state) {
        (void)state;
        static const char *const hdrs[] = {"x-trace=abc",
                                           "sluice-target=orders.due",
                                           "sluice-other=1",
                                           "sluice-delay=90s",
                                           "x-null",
                                           "x-trace=second",
                                           NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record("timer-1", "hello", hdrs);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_SCHEDULE);
        assert_int_equal(req.id_len, 7);
        assert_memory_equal(req.id, "timer-1", 7);
        assert_int_equal(req.due_ms, NOW + 90000);
        assert_string_equal(req.target, "orders.due");
        assert_int_equal(req.has_target_key, 0);
        assert_ptr_equal(req.target_key, rec.key);
        assert_int_equal(req.target_key_len, 7);
        assert_int_equal(req.target_partition, -1);
        assert_int_equal(req.payload_len, 5);
        assert_memory_equal(req.payload, "hello", 5);

        /* Everything but the control headers, in input order, unchanged:
         * other sluice-* names, null headers and repeats included. */
        assert_int_equal(req.hdr_cnt, 4);
        assert_string_equal(req.hdrs[0].name, "x-trace");
        assert_int_equal(req.hdrs[0].size, 3);
        assert_memory_equal(req.hdrs[0].value, "abc", 3);
        assert_string_equal(req.hdrs[1].name, "sluice-other");
        assert_memory_equal(req.hdrs[1].value, "1", 1);
        assert_string_equal(req.hdrs[2].name, "x-null");
        assert_null(req.hdrs[2].value);
        assert_string_equal(req.hdrs[3].name, "x-trace");
        assert_memory_equal(req.hdrs[3].value, "second", 6);
        sl_delay_req_clear(&req);
        assert_null(req.hdrs);
        assert_int_equal(req.hdr_cnt, 0);
}

static void test_empty_payload_and_no_headers_left(void **state) {
        (void)state;
        static const char *const hdrs[] = {"sluice-target=orders.a",
                                           "sluice-delay=0", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record("k", "", hdrs);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_SCHEDULE);
        assert_non_null(req.payload);
        assert_int_equal(req.payload_len, 0);
        assert_int_equal(req.due_ms, NOW);
        assert_int_equal(req.hdr_cnt, 0);
        assert_null(req.hdrs);
        sl_delay_req_clear(&req);
}

static void test_cancel(void **state) {
        (void)state;
        /* Headers do not matter for a cancel, even broken ones. */
        static const char *const hdrs[] = {"sluice-delay=1s",
                                           "sluice-delay=bogus", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record("timer-1", NULL, hdrs);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_CANCEL);
        assert_int_equal(req.id_len, 7);
        assert_memory_equal(req.id, "timer-1", 7);
        assert_int_equal(req.hdr_cnt, 0);
        sl_delay_req_clear(&req);

        /* The same in envelope mode: a null value is not an envelope. */
        p = params(SL_INPUT_JSON_ENVELOPE, NULL);
        rec = record("timer-2", NULL, NULL);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_CANCEL);
        assert_null(req.priv_json);
        sl_delay_req_clear(&req);
}

static void test_default_target(void **state) {
        (void)state;
        static const char *const hdrs[] = {"sluice-delay=250ms", NULL};
        static const char *const hdrs2[] = {"sluice-delay=250ms",
                                            "sluice-target=orders.x", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, "fallback");
        sl_delay_record_t rec = record("k", "v", hdrs);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_string_equal(req.target, "fallback");
        assert_int_equal(req.due_ms, NOW + 250);
        sl_delay_req_clear(&req);

        /* sluice-target wins over the default. */
        rec = record("k", "v", hdrs2);
        must_accept(&p, &rec, &req);
        assert_string_equal(req.target, "orders.x");
        sl_delay_req_clear(&req);
}

static void test_target_key_and_partition(void **state) {
        (void)state;
        static const char *const hdrs[] = {
            "sluice-target=orders.a", "sluice-delay=24h",
            "sluice-target-key=customer-9", "sluice-target-partition=3", NULL};
        static const char *const hdrs2[] = {
            "sluice-target=orders.a", "sluice-delay=7d",
            "sluice-target-key=", "sluice-target-partition=2147483647", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record("timer-1", "v", hdrs);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + DAY_MS);
        assert_int_equal(req.has_target_key, 1);
        assert_int_equal(req.target_key_len, 10);
        assert_memory_equal(req.target_key, "customer-9", 10);
        assert_int_equal(req.target_partition, 3);
        assert_int_equal(req.hdr_cnt, 0);
        sl_delay_req_clear(&req);

        /* An empty target key is a key (not the id); the largest
         * partition number parses. */
        rec = record("timer-1", "v", hdrs2);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + 7 * DAY_MS);
        assert_int_equal(req.has_target_key, 1);
        assert_int_equal(req.target_key_len, 0);
        assert_int_equal(req.target_partition, 2147483647);
        sl_delay_req_clear(&req);
}

static void test_at(void **state) {
        (void)state;
        static const char *const rfc[] = {
            "sluice-target=orders.a", "sluice-at=2026-01-02T01:00:00.250+01:00",
            NULL};
        static const char *const epoch[] = {"sluice-target=orders.a",
                                            "sluice-at=1767312000000", NULL};
        static const char *const past[] = {
            "sluice-target=orders.a", "sluice-at=2020-01-01T00:00:00Z", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record("k", "v", rfc);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + DAY_MS + 250);
        sl_delay_req_clear(&req);

        rec = record("k", "v", epoch);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + DAY_MS);
        sl_delay_req_clear(&req);

        /* In the past: accepted, fires at once. */
        rec = record("k", "v", past);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, 1577836800000LL);
        sl_delay_req_clear(&req);

        /* Exactly max_delay ahead is still fine. */
        static const char *const edge[] = {"sluice-target=orders.a",
                                           "sluice-delay=366d", NULL};
        rec = record("k", "v", edge);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + 366 * DAY_MS);
        sl_delay_req_clear(&req);
}

/* Which clock a sluice-delay counts from: the record's timestamp when it
 * is plausible, else the read time (NOW). */
static void test_timestamp_base(void **state) {
        (void)state;
        static const char *const delay5[] = {"sluice-target=orders.a",
                                             "sluice-delay=5s", NULL};
        static const struct {
                const char *what;
                int64_t ts;
                sl_delay_base_t base;
                int64_t due;
        } cases[] = {
            /* Sat 4 s in the input (lag, a restart): due 5 s after it was
             * produced, 1 s from now, not 5. */
            {"present", NOW - 4000, SL_DELAY_BASE_TIMESTAMP, NOW + 1000},
            {"missing", -1, SL_DELAY_BASE_READ_NO_TS, NOW + 5000},
            /* Within the skew: trusted, even a little ahead. */
            {"ahead within skew", NOW + 60000, SL_DELAY_BASE_TIMESTAMP,
             NOW + 65000},
            {"far future", NOW + 60001, SL_DELAY_BASE_READ_FUTURE, NOW + 5000},
            {"year 9999", SL_DELAY_DUE_MAX_MS, SL_DELAY_BASE_READ_FUTURE,
             NOW + 5000},
            /* Old but plausible: it waited longer than its delay, so it is
             * due (in the past: fires at once). */
            {"a day old", NOW - DAY_MS, SL_DELAY_BASE_TIMESTAMP,
             NOW - DAY_MS + 5000},
            {"2010", SL_DELAY_TS_MIN_MS, SL_DELAY_BASE_TIMESTAMP,
             SL_DELAY_TS_MIN_MS + 5000},
            /* Before Kafka existed: a zero or seconds for milliseconds. */
            {"zero", 0, SL_DELAY_BASE_READ_PAST, NOW + 5000},
            {"seconds", NOW / 1000, SL_DELAY_BASE_READ_PAST, NOW + 5000},
            {"just before 2010", SL_DELAY_TS_MIN_MS - 1,
             SL_DELAY_BASE_READ_PAST, NOW + 5000},
        };
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_params_t pe = params(SL_INPUT_JSON_ENVELOPE, NULL);
        sl_delay_record_t rec;
        sl_delay_req_t req;

        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                sl_delay_base_t base = SL_DELAY_BASE_NONE;
                int64_t want_from = cases[i].base == SL_DELAY_BASE_TIMESTAMP
                                        ? cases[i].ts
                                        : NOW;
                print_message("case %s\n", cases[i].what);
                assert_int_equal(
                    sl_delay_base_ms(cases[i].ts, NOW, 60000, &base),
                    want_from);
                assert_int_equal(base, cases[i].base);

                rec = record("t", "v", delay5);
                rec.timestamp_ms = cases[i].ts;
                must_accept(&p, &rec, &req);
                assert_int_equal(req.base, cases[i].base);
                assert_int_equal(req.due_ms, cases[i].due);
                sl_delay_req_clear(&req);

                /* The envelope's countdown counts the same way. */
                rec = record("t",
                             "{\"topic\":\"orders.a\",\"message\":\"m\","
                             "\"countdown\":5}",
                             NULL);
                rec.timestamp_ms = cases[i].ts;
                must_accept(&pe, &rec, &req);
                assert_int_equal(req.base, cases[i].base);
                assert_int_equal(req.due_ms, cases[i].due);
                sl_delay_req_clear(&req);
        }

        /* sluice-at is absolute: the timestamp plays no part. */
        {
                static const char *const at[] = {
                    "sluice-target=orders.a", "sluice-at=1767225700000", NULL};
                rec = record("t", "v", at);
                rec.timestamp_ms = NOW - 4000;
                must_accept(&p, &rec, &req);
                assert_int_equal(req.base, SL_DELAY_BASE_NONE);
                assert_int_equal(req.due_ms, 1767225700000LL);
                sl_delay_req_clear(&req);
        }

        /* max_delay bounds the delay asked for, whatever the base: the
         * longest allowed from an old timestamp is accepted (and due in
         * the past), a longer one is refused. */
        {
                static const char *const longest[] = {
                    "sluice-target=orders.a", "sluice-delay=366d", NULL};
                static const char *const over[] = {"sluice-target=orders.a",
                                                   "sluice-delay=367d", NULL};
                char detail[256];
                rec = record("t", "v", longest);
                rec.timestamp_ms = NOW - 400 * DAY_MS;
                must_accept(&p, &rec, &req);
                assert_int_equal(req.due_ms, NOW - 34 * DAY_MS);
                sl_delay_req_clear(&req);
                rec = record("t", "v", over);
                rec.timestamp_ms = NOW - 400 * DAY_MS;
                assert_int_equal(sl_delay_input_parse(&p, &rec, NOW, &req,
                                                      detail, sizeof(detail)),
                                 SL_DELAY_TOO_LONG);
                sl_delay_req_clear(&req);
        }

        /* A negative skew trusts no timestamp; 0 trusts none ahead of
         * the clock. */
        {
                sl_delay_base_t base;
                assert_int_equal(sl_delay_base_ms(NOW - 1, NOW, -1, &base),
                                 NOW);
                assert_int_equal(base, SL_DELAY_BASE_READ_FUTURE);
                assert_int_equal(sl_delay_base_ms(NOW, NOW, 0, &base), NOW);
                assert_int_equal(base, SL_DELAY_BASE_TIMESTAMP);
                assert_int_equal(sl_delay_base_ms(NOW + 1, NOW, 0, &base), NOW);
                assert_int_equal(base, SL_DELAY_BASE_READ_FUTURE);
                /* No overflow at the extremes. */
                assert_int_equal(
                    sl_delay_base_ms(INT64_MAX, INT64_MIN, 60000, &base),
                    INT64_MIN);
                assert_int_equal(base, SL_DELAY_BASE_READ_FUTURE);
        }
}

static void test_envelope(void **state) {
        (void)state;
        static const char *const hdrs[] = {"x-trace=abc",
                                           "sluice-target-key=cust",
                                           "sluice-target-partition=2", NULL};
        sl_delay_params_t p = params(SL_INPUT_JSON_ENVELOPE, "fallback");
        sl_delay_record_t rec;
        sl_delay_req_t req;

        /* A string message: the payload is its bytes, escapes decoded. */
        rec = record("job-1",
                     "{\"topic\":\"orders.a\",\"message\":\"hi \\\"there\\\"\","
                     "\"countdown\":120}",
                     hdrs);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_SCHEDULE);
        assert_string_equal(req.target, "orders.a");
        assert_int_equal(req.due_ms, NOW + 120000);
        assert_int_equal(req.payload_len, 10);
        assert_memory_equal(req.payload, "hi \"there\"", 10);
        assert_int_equal(req.has_target_key, 1);
        assert_memory_equal(req.target_key, "cust", 4);
        assert_int_equal(req.target_partition, 2);
        assert_int_equal(req.hdr_cnt, 1);
        assert_string_equal(req.hdrs[0].name, "x-trace");
        sl_delay_req_clear(&req);

        /* Any other message is passed as compact JSON; fractional
         * countdown; no topic: the default target. */
        rec = record("job-2",
                     "{ \"message\" : { \"a\" : [1, 2], \"b\" : null },"
                     " \"countdown\" : 1.5 }",
                     NULL);
        must_accept(&p, &rec, &req);
        assert_string_equal(req.target, "fallback");
        assert_int_equal(req.due_ms, NOW + 1500);
        assert_int_equal(req.payload_len, strlen("{\"a\":[1,2],\"b\":null}"));
        assert_memory_equal(req.payload, "{\"a\":[1,2],\"b\":null}",
                            req.payload_len);
        assert_ptr_equal(req.target_key, rec.key);
        sl_delay_req_clear(&req);

        /* "at" as epoch ms and as RFC 3339; a number message. */
        rec = record("job-3",
                     "{\"topic\":\"orders.a\",\"message\":42,"
                     "\"at\":1767225601000}",
                     NULL);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + 1000);
        assert_memory_equal(req.payload, "42", 2);
        sl_delay_req_clear(&req);

        rec = record("job-4",
                     "{\"topic\":\"orders.a\",\"message\":\"\","
                     "\"at\":\"2026-01-01T00:00:10Z\",\"extra\":1}",
                     NULL);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + 10000);
        assert_int_equal(req.payload_len, 0);
        sl_delay_req_clear(&req);

        /* The due may come from a header when the envelope has none. */
        static const char *const due_hdr[] = {"sluice-delay=5s", NULL};
        rec = record("job-5", "{\"topic\":\"orders.a\",\"message\":\"m\"}",
                     due_hdr);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, NOW + 5000);
        assert_int_equal(req.hdr_cnt, 0);
        sl_delay_req_clear(&req);
}

/* A message string holding a NUL byte keeps its full length. */
static void test_envelope_nul_in_message(void **state) {
        (void)state;
        sl_delay_params_t p = params(SL_INPUT_JSON_ENVELOPE, NULL);
        sl_delay_record_t rec = record("k",
                                       "{\"topic\":\"orders.a\",\"message\":"
                                       "\"a\\u0000b\",\"countdown\":0}",
                                       NULL);
        sl_delay_req_t req;

        must_accept(&p, &rec, &req);
        assert_int_equal(req.payload_len, 3);
        assert_memory_equal(req.payload, "a\0b", 3);
        sl_delay_req_clear(&req);
}

static void test_no_limits(void **state) {
        (void)state;
        static const char *const hdrs[] = {"sluice-target=anything.at-all",
                                           "sluice-delay=3650d", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record(
            "k",
            "a rather long value, longer than "
            "the 100 bytes the other tests allow, by a good stretch of text",
            hdrs);
        sl_delay_req_t req;

        p.allowed_targets = NULL;
        p.max_delay_ms = 0;
        p.max_record_bytes = 0;
        must_accept(&p, &rec, &req);
        assert_string_equal(req.target, "anything.at-all");
        assert_int_equal(req.due_ms, NOW + 3650 * DAY_MS);
        sl_delay_req_clear(&req);
}

/* The range of due times with no max_delay: up to the end of year 9999,
 * from the epoch on (0 fires at once). */
static void test_due_range(void **state) {
        (void)state;
        static const char *const last[] = {"sluice-target=orders.a",
                                           "sluice-at=253402300799999", NULL};
        static const char *const over[] = {"sluice-target=orders.a",
                                           "sluice-at=253402300800000", NULL};
        static const char *const epoch[] = {"sluice-target=orders.a",
                                            "sluice-at=0", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec;
        sl_delay_req_t req;
        char detail[256];

        p.max_delay_ms = 0;
        rec = record("k", "v", last);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, SL_DELAY_DUE_MAX_MS);
        sl_delay_req_clear(&req);

        rec = record("k", "v", over);
        assert_int_equal(
            sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail)),
            SL_DELAY_TOO_LONG);
        assert_non_null(strstr(detail, "after year 9999"));
        sl_delay_req_clear(&req);

        rec = record("k", "v", epoch);
        must_accept(&p, &rec, &req);
        assert_int_equal(req.due_ms, 0);
        sl_delay_req_clear(&req);

        /* A countdown that fits in int64 ms but not before year 10000. */
        p = params(SL_INPUT_JSON_ENVELOPE, NULL);
        p.max_delay_ms = 0;
        rec = record("k",
                     "{\"topic\":\"orders.a\",\"message\":\"m\","
                     "\"countdown\":9000000000000000}",
                     NULL);
        assert_int_equal(
            sl_delay_input_parse(&p, &rec, NOW, &req, detail, sizeof(detail)),
            SL_DELAY_TOO_LONG);
        assert_non_null(strstr(detail, "after year 9999"));
        sl_delay_req_clear(&req);
}

/* Keyless records: scheduled under "<partition>-<offset>", fired with the
 * key they came with (none) unless sluice-target-key says otherwise. */
static void test_keyless(void **state) {
        (void)state;
        static const char *const hdrs[] = {
            "sluice-target=orders.a", "sluice-delay=2s", "x-trace=t", NULL};
        static const char *const keyed[] = {"sluice-target=orders.a",
                                            "sluice-delay=2s",
                                            "sluice-target-key=cust-1", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_record_t rec = record(NULL, "payload", hdrs);
        sl_delay_req_t req;

        rec.partition = 3;
        rec.offset = 9876543210LL;
        must_accept(&p, &rec, &req);
        assert_int_equal(req.action, SL_DELAY_SCHEDULE);
        assert_int_equal(req.id_generated, 1);
        assert_int_equal(req.id_len, strlen("3-9876543210"));
        assert_memory_equal(req.id, "3-9876543210", req.id_len);
        assert_int_equal(req.null_target_key, 1);
        assert_int_equal(req.has_target_key, 0);
        assert_int_equal(req.due_ms, NOW + 2000);
        assert_int_equal(req.payload_len, 7);
        assert_int_equal(req.hdr_cnt, 1);
        sl_delay_req_clear(&req);

        /* sluice-target-key still sets the key of the fired record. */
        rec = record(NULL, "payload", keyed);
        must_accept(&p, &rec, &req);
        assert_memory_equal(req.id, "0-0", 3);
        assert_int_equal(req.null_target_key, 0);
        assert_int_equal(req.has_target_key, 1);
        assert_memory_equal(req.target_key, "cust-1", 6);
        sl_delay_req_clear(&req);

        /* An empty key is no id either; the fired record keeps it. */
        rec = record("", "payload", hdrs);
        rec.offset = 5;
        must_accept(&p, &rec, &req);
        assert_int_equal(req.id_generated, 1);
        assert_memory_equal(req.id, "0-5", 3);
        assert_int_equal(req.null_target_key, 0);
        assert_int_equal(req.has_target_key, 1);
        assert_int_equal(req.target_key_len, 0);
        sl_delay_req_clear(&req);

        /* The 001 envelope, as the Redis delay box's producers send it:
         * no key at all. */
        p = params(SL_INPUT_JSON_ENVELOPE, NULL);
        rec = record(NULL,
                     "{\"topic\":\"orders.a\",\"message\":\"hello\","
                     "\"countdown\":120}",
                     NULL);
        rec.partition = 1;
        rec.offset = 17;
        must_accept(&p, &rec, &req);
        assert_int_equal(req.id_generated, 1);
        assert_int_equal(req.id_len, 4);
        assert_memory_equal(req.id, "1-17", 4);
        assert_int_equal(req.null_target_key, 1);
        assert_string_equal(req.target, "orders.a");
        assert_int_equal(req.due_ms, NOW + 120000);
        assert_int_equal(req.payload_len, 5);
        assert_memory_equal(req.payload, "hello", 5);
        sl_delay_req_clear(&req);

        /* A keyed record keeps its key as the id. */
        p = params(SL_INPUT_HEADERS, NULL);
        rec = record("timer-1", "v", hdrs);
        rec.offset = 99;
        must_accept(&p, &rec, &req);
        assert_int_equal(req.id_generated, 0);
        assert_memory_equal(req.id, "timer-1", 7);
        assert_int_equal(req.null_target_key, 0);
        sl_delay_req_clear(&req);
}

/* Every detail is printable ASCII: input bytes quoted in it are escaped,
 * also where parse.c or jansson quote them. */
static void test_details_escaped(void **state) {
        (void)state;
        static const char *const part[] = {
            "sluice-target=orders.a", "sluice-delay=1s",
            "sluice-target-partition=\x1b[2J\nFORGED", NULL};
        static const char *const delay[] = {"sluice-target=orders.a",
                                            "sluice-delay=5\x1b[31mx\ny", NULL};
        static const char *const at[] = {"sluice-target=orders.a",
                                         "sluice-at=\x07\r\nnope", NULL};
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_params_t pe = params(SL_INPUT_JSON_ENVELOPE, NULL);
        struct {
                sl_delay_params_t *p;
                const char *value;
                const char *const *hdrs;
                int reason;
                const char *want;
        } cases[] = {
            {&p, "v", part, SL_DELAY_BAD_TARGET_PARTITION,
             "'\\x1b[2J\\x0aFORGED'"},
            {&p, "v", delay, SL_DELAY_BAD_DELAY, "sluice-delay: "},
            {&p, "v", at, SL_DELAY_BAD_AT, "sluice-at: "},
            {&pe, "{\"topic\":\"orders.a\",\x1b[2J\n\"x\"}", NULL,
             SL_DELAY_BAD_ENVELOPE, "envelope: "},
            {&pe,
             "{\"topic\":\"orders.a\",\"message\":\"m\",\"at\":"
             "\"\\u001b]0;pwned\\u0007\"}",
             NULL, SL_DELAY_BAD_AT, "at: "},
        };

        for (size_t i = 0; i < SL_ARRAY_SIZE(cases); i++) {
                sl_delay_record_t rec =
                    record("k", cases[i].value, cases[i].hdrs);
                sl_delay_req_t req;
                char detail[256];
                int r = sl_delay_input_parse(cases[i].p, &rec, NOW, &req,
                                             detail, sizeof(detail));
                if (r != cases[i].reason || !strstr(detail, cases[i].want))
                        fail_msg("case %zu: got %s (\"%s\")", i,
                                 sl_delay_reason_str(r), detail);
                for (const char *c = detail; *c; c++)
                        if (*c < 0x20 || *c > 0x7e)
                                fail_msg("case %zu: byte 0x%02x in \"%s\"", i,
                                         (unsigned char)*c, detail);
                sl_delay_req_clear(&req);
        }
}

/* Kafka's internal topics are refused even when allowed_targets lets
 * every name through. */
static void test_kafka_internal(void **state) {
        static const char *const names[] = {"__consumer_offsets",
                                            "__transaction_state", "__x"};
        static const char *const hdrs[] = {"sluice-delay=1s", NULL};
        char err[128], detail[256], target[64];
        sl_globs_t any;
        sl_delay_params_t p = params(SL_INPUT_HEADERS, NULL);
        sl_delay_req_t req;
        sl_delay_record_t rec;
        (void)state;

        assert_int_equal(sl_globs_parse("*", &any, err, sizeof(err)), 0);
        p.allowed_targets = &any;
        for (size_t i = 0; i < SL_ARRAY_SIZE(names); i++) {
                const char *h[] = {target, hdrs[0], NULL};
                snprintf(target, sizeof(target), "sluice-target=%s", names[i]);
                assert_true(sl_globs_match(&any, names[i]));
                rec = record("k", "v", h);
                assert_int_equal(sl_delay_input_parse(&p, &rec, NOW, &req,
                                                      detail, sizeof(detail)),
                                 SL_DELAY_TARGET_INTERNAL);
                assert_non_null(strstr(detail, "internal topic of Kafka"));
                sl_delay_req_clear(&req);
        }
        /* One underscore is an ordinary name. */
        {
                const char *h[] = {"sluice-target=_orders", hdrs[0], NULL};
                rec = record("k", "v", h);
                assert_int_equal(sl_delay_input_parse(&p, &rec, NOW, &req,
                                                      detail, sizeof(detail)),
                                 SL_DELAY_OK);
                sl_delay_req_clear(&req);
        }
        sl_globs_free(&any);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_reason_strings),
            cmocka_unit_test(test_refusals),
            cmocka_unit_test(test_long_topic_names),
            cmocka_unit_test(test_binary_topic),
            cmocka_unit_test(test_schedule_headers),
            cmocka_unit_test(test_empty_payload_and_no_headers_left),
            cmocka_unit_test(test_cancel),
            cmocka_unit_test(test_default_target),
            cmocka_unit_test(test_target_key_and_partition),
            cmocka_unit_test(test_at),
            cmocka_unit_test(test_timestamp_base),
            cmocka_unit_test(test_envelope),
            cmocka_unit_test(test_envelope_nul_in_message),
            cmocka_unit_test(test_no_limits),
            cmocka_unit_test(test_due_range),
            cmocka_unit_test(test_keyless),
            cmocka_unit_test(test_details_escaped),
            cmocka_unit_test(test_kafka_internal),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
