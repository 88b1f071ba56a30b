/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_op_restore.c — operators rebuilt from corrupt changelogs, through
 * the changelog fuzz harnesses' stub runtime (tests/fuzz/runtime_stub.inc):
 * every input the fuzzers keep (seeds and the crashes they found) replays
 * cleanly through the real operator, and the crashes found stay fixed.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../fuzz/runtime_stub.inc"
#include "sluice.pb-c.h"

static const char conf_text[] =
    "[sluice]\napp_id = t\n[kafka]\nbootstrap.servers = 127.0.0.1:1\n"
    "[pipeline timers]\ntype = delay\ninput = timers.in\n"
    "[pipeline groups]\ntype = debounce\ninput = groups.in\n"
    "output = groups.out\n"
    "[pipeline lim]\ntype = throttle\ninput = lim.in\noutput = lim.out\n";

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

/* Runs one framed input through pipeline pl_index; returns what the
 * stub's producer saw, and the pipeline's bad-record count in *bad. */
static uint64_t run_input(int pl_index, const sl_op_t *op, const uint8_t *data,
                          size_t size, uint64_t *bad) {
        fz_input_t in;
        fz_runtime_t rt;
        uint64_t produced;

        fz_parse(data, size, &in);
        fz_setup(&rt, conf, pl_index, op, in.mode);
        fz_run(&rt, &in);
        produced = rt.produced;
        if (bad)
                *bad = sl_counter_get(sl_metrics_counter(
                    rt.run.metrics, "sluice_changelog_bad_records_total", "",
                    "pipeline", conf->pipelines[pl_index].name, NULL));
        fz_teardown(&rt);
        fz_input_free(&in);
        return produced;
}

static void replay_dir(const char *op_name, int pl_index, const sl_op_t *op) {
        char dir[256], path[512];
        struct dirent *de;
        DIR *d;
        int files = 0;

        snprintf(dir, sizeof(dir), "tests/fuzz/corpus/changelog_%s", op_name);
        d = opendir(dir);
        assert_non_null(d);
        while ((de = readdir(d))) {
                FILE *fp;
                uint8_t buf[65536];
                size_t n;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                fp = fopen(path, "rb");
                assert_non_null(fp);
                n = fread(buf, 1, sizeof(buf), fp);
                fclose(fp);
                run_input(pl_index, op, buf, n, NULL);
                files++;
        }
        closedir(d);
        assert_true(files > 0);
}

static void test_replay_delay(void **state) {
        (void)state;
        replay_dir("delay", 0, &sl_op_delay);
}

static void test_replay_debounce(void **state) {
        (void)state;
        replay_dir("debounce", 1, &sl_op_debounce);
}

static void test_replay_throttle(void **state) {
        (void)state;
        replay_dir("throttle", 2, &sl_op_throttle);
}

/* One framed changelog Timer record, due long ago (fires at the first
 * wake-up), after an 8-byte header asking for 3 wake-ups. */
static size_t timer_input(uint8_t *buf, const char *target, int64_t due,
                          const char *payload) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        uint8_t hdr[8] = {0, 0, 0, 0, 0, 0, 2, 0};
        size_t n = 0, len;

        tm.due_ms = due;
        tm.target_topic = (char *)target;
        tm.payload.data = (uint8_t *)payload;
        tm.payload.len = strlen(payload);
        len = sluice__v1__timer__get_packed_size(&tm);
        memcpy(buf, hdr, sizeof(hdr));
        n += sizeof(hdr);
        buf[n++] = 0; /* changelog record */
        buf[n++] = 2;
        buf[n++] = 0;
        memcpy(buf + n, "id", 2);
        n += 2;
        buf[n++] = (uint8_t)(len & 0xff);
        buf[n++] = (uint8_t)(len >> 8);
        sluice__v1__timer__pack(&tm, buf + n);
        return n + len;
}

/* A timer naming an internal topic is skipped at restore, never fired. */
static void test_delay_internal_target_skipped(void **state) {
        const char *targets[] = {"__consumer_offsets", "lim.changelog",
                                 "lim.overflow",       "lim.rates",
                                 "groups.dlq",         "timers.changelog"};
        uint8_t buf[1024];
        uint64_t bad;
        (void)state;

        for (size_t i = 0; i < SL_ARRAY_SIZE(targets); i++) {
                size_t n = timer_input(buf, targets[i], 1000, "p");
                assert_int_equal(run_input(0, &sl_op_delay, buf, n, &bad), 0);
                assert_int_equal(bad, 1);
        }
        /* An ordinary target fires: the record and its tombstone. */
        assert_int_equal(run_input(0, &sl_op_delay, buf,
                                   timer_input(buf, "out.a", 1000, "p"), &bad),
                         2);
        assert_int_equal(bad, 0);
}

/* Empty payloads (NULL in protobuf-c) and due times at the ends of int64
 * fire like any other timer. */
static void test_delay_extreme_timers_fire(void **state) {
        uint8_t buf[1024];
        uint64_t bad;
        (void)state;

        assert_int_equal(run_input(0, &sl_op_delay, buf,
                                   timer_input(buf, "out.a", 1000, ""), &bad),
                         2);
        assert_int_equal(run_input(0, &sl_op_delay, buf,
                                   timer_input(buf, "out.a", INT64_MIN, "p"),
                                   &bad),
                         2);
        assert_int_equal(bad, 0);
}

/* Appends one framed delay changelog record: a timer due long ago under
 * key id with nhdr headers, or a tombstone of id (target NULL). */
static size_t timer_record(uint8_t *buf, const char *id, const char *target,
                           size_t nhdr) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header hs[16], *hp[16];
        size_t n = 0, len, idlen = strlen(id);

        buf[n++] = target ? 0 : 4; /* changelog record, or its tombstone */
        buf[n++] = (uint8_t)idlen;
        buf[n++] = 0;
        memcpy(buf + n, id, idlen);
        n += idlen;
        if (!target)
                return n;
        tm.due_ms = 1000;
        tm.seq = 1;
        tm.target_topic = (char *)target;
        tm.payload.data = (uint8_t *)"p";
        tm.payload.len = 1;
        for (size_t i = 0; i < nhdr && i < 16; i++) {
                sluice__v1__header__init(&hs[i]);
                hs[i].name = (char *)"h";
                hs[i].value.data = (uint8_t *)"v";
                hs[i].value.len = 1;
                hp[i] = &hs[i];
        }
        tm.n_headers = nhdr < 16 ? nhdr : 16;
        tm.headers = hp;
        len = sluice__v1__timer__get_packed_size(&tm);
        buf[n++] = (uint8_t)(len & 0xff);
        buf[n++] = (uint8_t)(len >> 8);
        sluice__v1__timer__pack(&tm, buf + n);
        return n + len;
}

/* A rebuild applies its records a few behind reading them (op_delay.c,
 * RESTORE_LAG): the order still decides.  40 timers, the even ones
 * removed, one of those set again after its tombstone and one tombstone
 * of a key never set; a key longer than the slot keeps (64 bytes) and a
 * timer with 12 headers among them.  Each live timer fires once (its
 * record and its tombstone), and none of the removed ones. */
static void test_delay_restore_order(void **state) {
        static uint8_t buf[16384];
        uint8_t hdr[8] = {0, 0, 0, 0, 0, 0, 2, 0};
        char id[80];
        size_t n = sizeof(hdr);
        uint64_t bad;
        (void)state;

        memcpy(buf, hdr, sizeof(hdr));
        for (int i = 0; i < 40; i++) {
                snprintf(id, sizeof(id), "timer-%d", i);
                n += timer_record(buf + n, id, "out.a", i == 7 ? 12 : 0);
        }
        for (int i = 0; i < 40; i += 2) {
                snprintf(id, sizeof(id), "timer-%d", i);
                n += timer_record(buf + n, id, NULL, 0);
        }
        n += timer_record(buf + n, "timer-4", "out.a", 0);
        n += timer_record(buf + n, "never-set", NULL, 0);
        memset(id, 'k', 64);
        id[64] = 0;
        n += timer_record(buf + n, id, "out.a", 0);
        /* 20 odd, timer-4 again, the long key: 22 timers, 2 records each. */
        assert_int_equal(run_input(0, &sl_op_delay, buf, n, &bad), 44);
        assert_int_equal(bad, 0);
}

/* Two framed overflow records (second source) of key "k", due now, one
 * with an empty value and one with a null value that (corruptly) carries
 * bytes too.  Header: 3 wake-ups. */
static size_t overflow_input(uint8_t *buf) {
        uint8_t hdr[8] = {0, 0, 0, 0, 0, 0, 2, 0};
        size_t n = sizeof(hdr);

        memcpy(buf, hdr, sizeof(hdr));
        for (int i = 0; i < 2; i++) {
                Sluice__V1__OverflowRecord rec =
                    SLUICE__V1__OVERFLOW_RECORD__INIT;
                size_t len;
                rec.null_payload = i == 1;
                rec.payload.data = (uint8_t *)(i ? "stray" : NULL);
                rec.payload.len = i ? 5 : 0;
                rec.deadline_ms = sl_now_ms() + 3600000;
                len = sluice__v1__overflow_record__get_packed_size(&rec);
                buf[n++] = 1; /* second source */
                buf[n++] = 1;
                buf[n++] = 0;
                buf[n++] = 'k';
                buf[n++] = (uint8_t)(len & 0xff);
                buf[n++] = (uint8_t)(len >> 8);
                sluice__v1__overflow_record__pack(&rec, buf + n);
                n += len;
        }
        return n;
}

/* A drained backlog message keeps its value as it came: an empty value
 * goes out empty (protobuf-c decodes it as NULL data), a null value as
 * NULL with no length whatever the record carries beside the flag. */
static void test_throttle_drain_values(void **state) {
        uint8_t buf[1024];
        size_t n = overflow_input(buf);
        fz_input_t in;
        fz_runtime_t rt;
        (void)state;

        fz_parse(buf, n, &in);
        fz_setup(&rt, conf, 2, &sl_op_throttle, in.mode);
        fz_run(&rt, &in);
        /* Both sent (the stub aborts on NULL with a length), and only one
         * as a null value; then the checkpoint and key records. */
        assert_int_equal(sl_counter_get(sl_metrics_counter(
                             rt.run.metrics, "sluice_throttle_drained_total",
                             "", "pipeline", "lim", NULL)),
                         2);
        assert_int_equal(rt.null_values, 1);
        fz_teardown(&rt);
        fz_input_free(&in);
}

/* A key record whose bucket time lies ahead of now (a corrupt record, or
 * another instance's clock) does not hold the key's backlog until then;
 * one before the epoch does not overflow the refill. */
static void test_throttle_key_time_clamped(void **state) {
        const int64_t times[] = {INT64_MAX, INT64_MIN};
        (void)state;

        for (size_t i = 0; i < SL_ARRAY_SIZE(times); i++) {
                Sluice__V1__ThrottleKey k = SLUICE__V1__THROTTLE_KEY__INIT;
                Sluice__V1__OverflowRecord rec =
                    SLUICE__V1__OVERFLOW_RECORD__INIT;
                uint8_t buf[256], hdr[8] = {0, 0, 0, 0, 0, 0, 15, 0};
                size_t n = sizeof(hdr), len;
                fz_input_t in;
                fz_runtime_t rt;

                memcpy(buf, hdr, sizeof(hdr));
                k.tokens = 0;
                k.updated_ms = times[i];
                len = sluice__v1__throttle_key__get_packed_size(&k);
                buf[n++] = 0; /* changelog: "k/k" */
                buf[n++] = 3;
                buf[n++] = 0;
                memcpy(buf + n, "k/k", 3);
                n += 3;
                buf[n++] = (uint8_t)len;
                buf[n++] = 0;
                n += sluice__v1__throttle_key__pack(&k, buf + n);
                rec.payload.data = (uint8_t *)"x";
                rec.payload.len = 1;
                rec.deadline_ms = sl_now_ms() + 3600000;
                len = sluice__v1__overflow_record__get_packed_size(&rec);
                buf[n++] = 1; /* overflow: key "k" */
                buf[n++] = 1;
                buf[n++] = 0;
                buf[n++] = 'k';
                buf[n++] = (uint8_t)len;
                buf[n++] = 0;
                n += sluice__v1__overflow_record__pack(&rec, buf + n);

                fz_parse(buf, n, &in);
                fz_setup(&rt, conf, 2, &sl_op_throttle, in.mode);
                fz_run(&rt, &in);
                assert_int_equal(
                    sl_counter_get(sl_metrics_counter(
                        rt.run.metrics, "sluice_throttle_drained_total", "",
                        "pipeline", "lim", NULL)),
                    1);
                fz_teardown(&rt);
                fz_input_free(&in);
        }
}

/* A debounce item whose times lie ahead of now (a corrupt record, or
 * another instance's clock) does not keep its group open until then; one
 * before the epoch does not overflow the age arithmetic.  Either flushes
 * within the wake-ups. */
static void test_debounce_item_times_clamped(void **state) {
        const int64_t times[] = {INT64_MAX, INT64_MIN};
        (void)state;

        for (size_t i = 0; i < SL_ARRAY_SIZE(times); i++) {
                Sluice__V1__DebounceItem it = SLUICE__V1__DEBOUNCE_ITEM__INIT;
                uint8_t buf[256], hdr[8] = {0, 0, 0, 0, 0, 0, 15, 0};
                size_t n = sizeof(hdr), len;
                fz_input_t in;
                fz_runtime_t rt;

                memcpy(buf, hdr, sizeof(hdr));
                it.payload.data = (uint8_t *)"x";
                it.payload.len = 1;
                it.first_seen_ms = times[i];
                it.last_update_ms = times[i];
                len = sluice__v1__debounce_item__get_packed_size(&it);
                buf[n++] = 0; /* changelog: group "g", item "i" */
                buf[n++] = 3;
                buf[n++] = 0;
                memcpy(buf + n, "g\0i", 3);
                n += 3;
                buf[n++] = (uint8_t)len;
                buf[n++] = 0;
                n += sluice__v1__debounce_item__pack(&it, buf + n);

                fz_parse(buf, n, &in);
                fz_setup(&rt, conf, 1, &sl_op_debounce, in.mode);
                fz_run(&rt, &in);
                assert_int_equal(sl_counter_get(sl_metrics_counter(
                                     rt.run.metrics, "sluice_records_out_total",
                                     "", "pipeline", "groups", NULL)),
                                 1);
                fz_teardown(&rt);
                fz_input_free(&in);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_replay_delay),
            cmocka_unit_test(test_replay_debounce),
            cmocka_unit_test(test_replay_throttle),
            cmocka_unit_test(test_delay_internal_target_skipped),
            cmocka_unit_test(test_delay_extreme_timers_fire),
            cmocka_unit_test(test_delay_restore_order),
            cmocka_unit_test(test_throttle_drain_values),
            cmocka_unit_test(test_throttle_key_time_clamped),
            cmocka_unit_test(test_debounce_item_times_clamped),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
