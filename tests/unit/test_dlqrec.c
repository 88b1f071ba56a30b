/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dlqrec.c — reading back DLQ records in the shapes task.c and the
 * operators write them: which headers are the original ones, and which
 * records a replay must leave alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dlqrec.h"

/* Headers from name, value, ... pairs, NULL-terminated. */
static rd_kafka_headers_t *hdrs(const char *name, ...) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        va_list ap;
        va_start(ap, name);
        for (; name; name = va_arg(ap, const char *)) {
                const char *v = va_arg(ap, const char *);
                rd_kafka_header_add(h, name, -1, v, v ? -1 : 0);
        }
        va_end(ap);
        return h;
}

static void assert_header(const rd_kafka_headers_t *h, size_t i,
                          const char *name, const char *value) {
        const char *n;
        const void *v;
        size_t len;
        assert_int_equal(rd_kafka_header_get_all(h, i, &n, &v, &len), 0);
        assert_string_equal(n, name);
        if (!value) {
                assert_null(v);
                return;
        }
        assert_int_equal(len, strlen(value));
        assert_memory_equal(v, value, len);
}

/* sl_task_dlq: the originals, then sluice-error and the source. */
static void test_input_record(void **state) {
        rd_kafka_headers_t *h, *o;
        sl_dlqrec_t d;
        (void)state;
        h = hdrs("sluice-target", "out", "x-extra", "keep me", "x-null", NULL,
                 "sluice-error", "target-not-allowed", "sluice-error-detail",
                 "no", "sluice-source-topic", "in", "sluice-source-partition",
                 "3", "sluice-source-offset", "42", NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_WHOLE);
        assert_int_equal(d.orig_cnt, 3);
        assert_true(sl_dlqrec_reason_is(&d, "target-not-allowed"));
        assert_false(sl_dlqrec_reason_is(&d, "target-not"));
        assert_false(sl_dlqrec_reason_is(&d, "target-not-allowed-x"));
        assert_int_equal(d.source_partition, 3);
        assert_int_equal(d.source_topic_len, 2);
        assert_memory_equal(d.source_topic, "in", 2);
        o = sl_dlqrec_original(h, &d);
        assert_int_equal(rd_kafka_header_cnt(o), 3);
        assert_header(o, 0, "sluice-target", "out");
        assert_header(o, 1, "x-extra", "keep me");
        assert_header(o, 2, "x-null", NULL);
        rd_kafka_headers_destroy(o);
        rd_kafka_headers_destroy(h);
}

/* No original header: nothing to copy; an original sluice-error (a
 * record from elsewhere) stays original, the last one is sluice's. */
static void test_split(void **state) {
        rd_kafka_headers_t *h, *o;
        sl_dlqrec_t d;
        (void)state;
        h = hdrs("sluice-error", "bad-delay", "sluice-source-offset", "1",
                 NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_WHOLE);
        assert_int_equal(d.orig_cnt, 0);
        assert_null(sl_dlqrec_original(h, &d));
        assert_int_equal(d.source_partition, -1);
        rd_kafka_headers_destroy(h);

        h = hdrs("sluice-error", "theirs", "sluice-error", "bad-at",
                 "sluice-source-partition", "x1", "sluice-source-offset", "1",
                 NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_WHOLE);
        assert_true(sl_dlqrec_reason_is(&d, "bad-at"));
        assert_int_equal(d.source_partition, -1); /* not a number */
        o = sl_dlqrec_original(h, &d);
        assert_int_equal(rd_kafka_header_cnt(o), 1);
        assert_header(o, 0, "sluice-error", "theirs");
        rd_kafka_headers_destroy(o);
        rd_kafka_headers_destroy(h);
}

/* A debounce item whose changelog record was refused: its sluice-item is
 * written before sluice-error and goes back with it. */
static void test_debounce_item(void **state) {
        rd_kafka_headers_t *h, *o;
        sl_dlqrec_t d;
        (void)state;
        h = hdrs("sluice-item", "order-7", "sluice-error", "too-large",
                 "sluice-error-detail", "d", "sluice-source-topic", "in",
                 "sluice-source-partition", "0", "sluice-source-offset", "9",
                 NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_WHOLE);
        o = sl_dlqrec_original(h, &d);
        assert_int_equal(rd_kafka_header_cnt(o), 1);
        assert_header(o, 0, "sluice-item", "order-7");
        rd_kafka_headers_destroy(o);
        rd_kafka_headers_destroy(h);
}

/* What a replay leaves alone: a cut copy, a fired timer (no source), a
 * record sluice did not write. */
static void test_not_whole(void **state) {
        rd_kafka_headers_t *h;
        sl_dlqrec_t d;
        (void)state;
        h = hdrs("x", "y", "sluice-error", "too-large", "sluice-source-offset",
                 "1", "sluice-cut", "key=1:1,value=9:0,headers=2:1", NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_CUT);
        rd_kafka_headers_destroy(h);
        h = hdrs("x", "y", "sluice-error", "target-refused",
                 "sluice-error-detail", "d", "sluice-timer-id", "t1",
                 "sluice-due", "5", NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_NO_SOURCE);
        rd_kafka_headers_destroy(h);
        h = hdrs("sluice-target", "out", NULL);
        assert_int_equal(sl_dlqrec_read(h, &d), SL_DLQREC_NOT_DLQ);
        assert_null(d.reason);
        rd_kafka_headers_destroy(h);
        assert_int_equal(sl_dlqrec_read(NULL, &d), SL_DLQREC_NOT_DLQ);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_input_record),
            cmocka_unit_test(test_split),
            cmocka_unit_test(test_debounce_item),
            cmocka_unit_test(test_not_whole),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
