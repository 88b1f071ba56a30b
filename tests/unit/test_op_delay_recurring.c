/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_op_delay_recurring.c — the delay operator's recurring timers through
 * the stub runtime (tests/fuzz/runtime_stub.inc): a schedule rebuilt from
 * its changelog record with occurrences missed fires as its catch-up says,
 * rewriting its record once per occurrence, and ends at its count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/runtime_stub.inc"
#include "sluice.pb-c.h"

static const char conf_text[] =
    "[sluice]\napp_id = t\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n";

static sl_conf_t *conf;

/* Records produced to the target, and to the changelog. */
static int to_target, to_changelog;

static void count_produce(sl_task_t *t, const char *topic, const void *value) {
        (void)t;
        (void)value;
        if (!strcmp(topic, "out"))
                to_target++;
}

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

/*
 * Rebuilds timer "r" (every 1 s from anchor, fired occurrences produced,
 * catch-up cu, count) pending at due, then wakes it at the real clock's
 * now; returns the describe() answer's due_in_ms (-1: no timer left).
 */
static int64_t run(int64_t anchor, int64_t due, int64_t fired, int cu,
                   int64_t count) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        rd_kafka_message_t m = {0};
        fz_runtime_t rt;
        uint8_t buf[512];
        uint64_t before;
        json_t *o;
        int64_t in = -1;

        tm.due_ms = due;
        tm.target_topic = "out";
        tm.target_partition = -1;
        tm.payload.data = (uint8_t *)"p";
        tm.payload.len = 1;
        tm.seq = 7;
        tm.created_ms = anchor;
        tm.every = "1s";
        tm.start_ms = anchor;
        tm.catch_up = cu;
        tm.fired = fired;
        tm.count = count;
        m.key = "r";
        m.key_len = 1;
        m.payload = buf;
        m.len = sluice__v1__timer__pack(&tm, buf);
        m.partition = FZ_PARTITION;

        fz_setup(&rt, conf, 0, &sl_op_delay, 0);
        rt.check_produce = count_produce;
        to_target = to_changelog = 0;
        sl_op_delay.restore(&rt.task, &m);
        rt.task.state = SL_TASK_RUNNING;
        sl_op_delay.restored(&rt.task);
        before = rt.produced;
        sl_op_delay.wake(&rt.task, sl_now_ms());
        to_changelog = (int)(rt.produced - before) - to_target;
        o = sl_op_delay.describe(&rt.task, "r", 1);
        if (o) {
                in = json_integer_value(json_object_get(o, "due_in_ms"));
                json_decref(o);
        }
        fz_teardown(&rt);
        return in;
}

/* 10 s down with an occurrence every second. */
static void test_catch_up(void **state) {
        int64_t now = sl_now_ms(), anchor = now - 10500, in;
        (void)state;

        /* latest: one record (the most recent instant), one rewrite. */
        in = run(anchor, anchor + 1000, 1, 0, 0);
        assert_int_equal(to_target, 1);
        assert_int_equal(to_changelog, 1);
        assert_true(in > -100 && in <= 1000);

        /* all: each of the ten, each with its rewrite. */
        in = run(anchor, anchor + 1000, 1, 1, 0);
        assert_in_range(to_target, 10, 11);
        assert_int_equal(to_changelog, to_target);
        assert_true(in > -100 && in <= 1000);

        /* none: no record, the rewrite to the next instant. */
        in = run(anchor, anchor + 1000, 1, 2, 0);
        assert_int_equal(to_target, 0);
        assert_int_equal(to_changelog, 1);
        assert_true(in > -100 && in <= 1000);

        /* all with a count of 4, 1 fired: three more, then the tombstone
         * (the record rewritten twice, then tombstoned). */
        in = run(anchor, anchor + 1000, 1, 1, 4);
        assert_int_equal(to_target, 3);
        assert_int_equal(to_changelog, 3);
        assert_true(in == -1);
}

/* Not due: nothing happens. */
static void test_not_due(void **state) {
        int64_t now = sl_now_ms(), in;
        (void)state;

        in = run(now - 500, now + 60000, 0, 0, 0);
        assert_int_equal(to_target, 0);
        assert_int_equal(to_changelog, 0);
        assert_true(in > 50000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_catch_up),
            cmocka_unit_test(test_not_due),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
