/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kquery.c — Kafka lookups off the loop thread (kquery.c).
 *
 * Without a broker (the default, fast): a client pointed at a closed port
 * (127.0.0.1:1).  Every lookup calls back with an error within its
 * timeout, on the loop thread, while a 10 ms ticker keeps firing; cancel
 * silences callbacks; destroy with lookups in flight is clean (run under
 * ASan); bad arguments return -1 and never call back.
 *
 * On librdkafka's mock cluster (three brokers, in-process): a group's
 * coordinator moves between two lookups, and the second is still answered
 * (kquery.c, kquery_coord_moved).
 *
 * Against a real broker: the it_* cases run only when
 * tests/integration/0011-kquery.sh sets SLUICE_TEST_BOOTSTRAP and
 * SLUICE_TEST_KQUERY_TOPIC (a topic it created with `sluice topics create`
 * and filled with kcat, SLUICE_TEST_KQUERY_COUNTS records per partition);
 * otherwise they are skipped.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kquery.h"
#include "util.h"

/* After rdkafka.h (kquery.h). */
#include <librdkafka/rdkafka_mock.h>

/* Every lookup here that expects a silent broker uses this timeout. */
#define TIMEOUT_MS 300
/* The longest pause between two ticks allowed: a lookup blocking the loop
 * would pause it for a whole timeout; a busy machine may delay a tick by
 * tens of milliseconds. */
#define MAX_GAP_US (TIMEOUT_MS / 2 * 1000)
/* How late past its timeout a callback may come (the module's grace is
 * 200 ms; a loaded CI machine under ASan needs some more). */
#define MARGIN_MS 350
#define TICK_MS   10

typedef struct {
        uv_loop_t loop;
        rd_kafka_t *rk;
        sl_kquery_t *q;
        uv_timer_t tick;
        int ticks;
        int64_t last_tick_us;
        int64_t max_gap_us; /* longest pause between two ticks */
        pthread_t loop_thread;
} fx_t;

/* One callback's record. */
typedef struct {
        fx_t *fx;
        int calls;
        int on_loop_thread;
        rd_kafka_resp_err_t err;
        int64_t a, b; /* lo/hi, offset, partition count, rtt */
        int member_cnt;
        rd_kafka_consumer_group_state_t group_state;
        int instance_parts; /* partitions assigned to the matching member */
        char topic[256];
        char instance[256]; /* group_instance_id of a matching member */
        const char *want_instance;
        int64_t start_us, end_us;
        int destroy_q; /* the callback destroys fx->q */
        int after_destroy_rc;
} rec_t;

static void rec_start(rec_t *r, fx_t *fx) {
        memset(r, 0, sizeof(*r));
        r->fx = fx;
        r->start_us = sl_mono_us();
        r->after_destroy_rc = 1;
}

static int64_t rec_ms(const rec_t *r) {
        return (r->end_us - r->start_us) / 1000;
}

static void on_probe(void *opaque, rd_kafka_resp_err_t err, int64_t rtt_ms);

static void rec_hit(rec_t *r, rd_kafka_resp_err_t err) {
        r->calls++;
        r->err = err;
        r->end_us = sl_mono_us();
        r->on_loop_thread = pthread_equal(pthread_self(), r->fx->loop_thread);
        if (r->destroy_q) {
                sl_kquery_t *q = r->fx->q;
                sl_kquery_destroy(q);
                /* q's memory lives until the loop's next turn; it refuses
                 * new work. */
                r->after_destroy_rc = sl_kquery_probe(q, 100, on_probe, r);
                r->fx->q = NULL;
        }
}

static void on_watermarks(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                          int64_t hi) {
        rec_t *r = opaque;
        r->a = lo;
        r->b = hi;
        rec_hit(r, err);
}

static void on_committed(void *opaque, rd_kafka_resp_err_t err,
                         int64_t offset) {
        rec_t *r = opaque;
        r->a = offset;
        rec_hit(r, err);
}

static void on_partitions(void *opaque, rd_kafka_resp_err_t err,
                          const char *topic, int cnt) {
        rec_t *r = opaque;
        r->a = cnt;
        snprintf(r->topic, sizeof(r->topic), "%s", topic);
        rec_hit(r, err);
}

static void on_group(void *opaque, rd_kafka_resp_err_t err,
                     rd_kafka_consumer_group_state_t state,
                     const sl_groupcheck_member_t *members, int cnt) {
        rec_t *r = opaque;
        r->group_state = state;
        r->member_cnt = cnt;
        for (int i = 0; i < cnt; i++) {
                assert_non_null(members[i].consumer_id);
                assert_non_null(members[i].client_id);
                assert_non_null(members[i].host);
                if (r->want_instance && members[i].group_instance_id &&
                    !strcmp(members[i].group_instance_id, r->want_instance)) {
                        snprintf(r->instance, sizeof(r->instance), "%s/%s",
                                 members[i].group_instance_id,
                                 members[i].client_id);
                        r->instance_parts = members[i].assignment
                                                ? members[i].assignment->cnt
                                                : 0;
                }
        }
        rec_hit(r, err);
}

static void on_probe(void *opaque, rd_kafka_resp_err_t err, int64_t rtt_ms) {
        rec_t *r = opaque;
        r->a = rtt_ms;
        rec_hit(r, err);
}

static void on_tick(uv_timer_t *t) {
        fx_t *fx = t->data;
        int64_t now = sl_mono_us();
        if (fx->last_tick_us && now - fx->last_tick_us > fx->max_gap_us)
                fx->max_gap_us = now - fx->last_tick_us;
        fx->last_tick_us = now;
        fx->ticks++;
}

static void log_quiet(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf) {
        (void)rk;
        (void)level;
        (void)fac;
        (void)buf;
}

/* A consumer like sluice's reader: assign-only, read_committed. */
static rd_kafka_t *client_new(const char *bootstrap, const char *group,
                              const char *instance) {
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;

        assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap,
                                           errstr, sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(
            rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof(errstr)),
            RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "isolation.level",
                                           "read_committed", errstr,
                                           sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "enable.auto.commit", "false",
                                           errstr, sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        /* As a lookup client must be (kquery.h). */
        assert_int_equal(rd_kafka_conf_set(conf, "metadata.max.age.ms",
                                           SL_KQUERY_COORD_TTL, errstr,
                                           sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        if (instance) {
                assert_int_equal(rd_kafka_conf_set(conf, "group.instance.id",
                                                   instance, errstr,
                                                   sizeof(errstr)),
                                 RD_KAFKA_CONF_OK);
                assert_int_equal(rd_kafka_conf_set(conf, "client.id",
                                                   "kquery-member", errstr,
                                                   sizeof(errstr)),
                                 RD_KAFKA_CONF_OK);
        }
        rd_kafka_conf_set_log_cb(conf, log_quiet);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        assert_non_null(rk);
        return rk;
}

static void fx_open(fx_t *fx, const char *bootstrap) {
        char errstr[256];

        memset(fx, 0, sizeof(*fx));
        fx->loop_thread = pthread_self();
        assert_int_equal(uv_loop_init(&fx->loop), 0);
        fx->rk = client_new(bootstrap, "kquery-test-reader", NULL);
        fx->q = sl_kquery_new(&fx->loop, fx->rk, errstr, sizeof(errstr));
        assert_non_null(fx->q);
        uv_timer_init(&fx->loop, &fx->tick);
        fx->tick.data = fx;
        uv_timer_start(&fx->tick, on_tick, TICK_MS, TICK_MS);
}

static int fx_setup(void **state) {
        fx_t *fx = sl_calloc(1, sizeof(*fx));
        fx_open(fx, "127.0.0.1:1");
        *state = fx;
        return 0;
}

/* Destroys q (if a test did not), lets every handle close, then checks
 * that nothing is left on the loop. */
static int fx_teardown(void **state) {
        fx_t *fx = *state;

        sl_kquery_destroy(fx->q);
        uv_close((uv_handle_t *)&fx->tick, NULL);
        uv_run(&fx->loop, UV_RUN_DEFAULT);
        assert_int_equal(uv_loop_close(&fx->loop), 0);
        rd_kafka_destroy(fx->rk);
        free(fx);
        return 0;
}

/* Turns the loop until every record has been called (or, with recs NULL,
 * for ms milliseconds).  Fails the test at the deadline. */
static void run_until(fx_t *fx, rec_t **recs, int n, int ms) {
        int64_t end = sl_mono_us() + (int64_t)ms * 1000;
        for (;;) {
                int all = recs != NULL;
                for (int i = 0; recs && i < n; i++)
                        if (recs[i]->calls == 0)
                                all = 0;
                if (all)
                        return;
                if (sl_mono_us() >= end) {
                        assert_null(recs); /* a callback was missing */
                        return;
                }
                uv_run(&fx->loop, UV_RUN_ONCE);
        }
}

static void assert_answered_in_time(const rec_t *r, const char *what) {
        assert_int_equal(r->calls, 1);
        assert_true(r->on_loop_thread);
        print_message("    %-12s %-30s after %3" PRId64 " ms\n", what,
                      rd_kafka_err2name(r->err), rec_ms(r));
        assert_true(rec_ms(r) <= TIMEOUT_MS + MARGIN_MS);
}

/* Every lookup against a closed port: one error callback each, on the
 * loop thread, within the timeout, and the loop never stalls. */
static void test_down_every_lookup(void **state) {
        fx_t *fx = *state;
        rec_t wm, cm, pc, gr, pr;
        rec_t *all[] = {&wm, &cm, &pc, &gr, &pr};
        int ticks0;
        int64_t t0;

        rec_start(&wm, fx);
        rec_start(&cm, fx);
        rec_start(&pc, fx);
        rec_start(&gr, fx);
        rec_start(&pr, fx);
        t0 = sl_mono_us();
        ticks0 = fx->ticks;
        assert_int_equal(
            sl_kquery_watermarks(fx->q, "t", 0, TIMEOUT_MS, on_watermarks, &wm),
            0);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 0, TIMEOUT_MS,
                                             on_committed, &cm),
                         0);
        assert_int_equal(
            sl_kquery_partitions(fx->q, "t", TIMEOUT_MS, on_partitions, &pc),
            0);
        assert_int_equal(
            sl_kquery_describe_group(fx->q, "g", TIMEOUT_MS, on_group, &gr), 0);
        assert_int_equal(sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &pr), 0);
        /* Never called from inside the function that started it. */
        for (int i = 0; i < 5; i++)
                assert_int_equal(all[i]->calls, 0);

        fx->max_gap_us = 0;
        run_until(fx, all, 5, TIMEOUT_MS + MARGIN_MS + 1000);

        assert_answered_in_time(&wm, "watermarks");
        assert_answered_in_time(&cm, "committed");
        assert_answered_in_time(&pc, "partitions");
        assert_answered_in_time(&gr, "group");
        assert_answered_in_time(&pr, "probe");
        for (int i = 0; i < 5; i++)
                assert_int_not_equal(all[i]->err, RD_KAFKA_RESP_ERR_NO_ERROR);
        /* The "no value" of each kind on error. */
        assert_int_equal(wm.a, -1);
        assert_int_equal(wm.b, -1);
        assert_int_equal(cm.a, RD_KAFKA_OFFSET_INVALID);
        assert_int_equal(pc.a, -1);
        assert_string_equal(pc.topic, "t");
        assert_int_equal(gr.member_cnt, 0);
        assert_int_equal(pr.a, -1);

        /* The loop kept turning: ticks kept coming, none late by much. */
        print_message("    %d ticks in %" PRId64 " ms, longest gap %" PRId64
                      " ms\n",
                      fx->ticks - ticks0, (sl_mono_us() - t0) / 1000,
                      fx->max_gap_us / 1000);
        assert_true(fx->ticks - ticks0 >= (TIMEOUT_MS / TICK_MS) / 2);
        assert_true(fx->max_gap_us < MAX_GAP_US);
}

/* A flood of watermark lookups (more than there are workers, each call
 * taking its full timeout): all answered within the timeout, and a probe
 * sent last is answered too. */
static void test_down_flood(void **state) {
        fx_t *fx = *state;
        enum { N = 40 };
        rec_t wm[N], pr;
        rec_t *all[N + 1];
        int64_t worst = 0;

        for (int i = 0; i < N; i++) {
                rec_start(&wm[i], fx);
                all[i] = &wm[i];
                assert_int_equal(sl_kquery_watermarks(fx->q, "flood", i,
                                                      TIMEOUT_MS, on_watermarks,
                                                      &wm[i]),
                                 0);
        }
        rec_start(&pr, fx);
        all[N] = &pr;
        assert_int_equal(sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &pr), 0);
        run_until(fx, all, N + 1, TIMEOUT_MS + MARGIN_MS + 1000);
        for (int i = 0; i < N + 1; i++) {
                assert_int_equal(all[i]->calls, 1);
                assert_true(all[i]->on_loop_thread);
                assert_int_not_equal(all[i]->err, RD_KAFKA_RESP_ERR_NO_ERROR);
                worst = SL_MAX(worst, rec_ms(all[i]));
        }
        print_message("    %d watermarks + probe: slowest after %" PRId64
                      " ms, probe %s after %" PRId64 " ms\n",
                      N, worst, rd_kafka_err2name(pr.err), rec_ms(&pr));
        assert_true(worst <= TIMEOUT_MS + MARGIN_MS);
        assert_true(fx->max_gap_us < MAX_GAP_US);
}

/* Cancel: callbacks started with that opaque never run, whether the
 * lookup was still queued, in a worker's hands or out with librdkafka;
 * others run. */
static void test_cancel(void **state) {
        fx_t *fx = *state;
        rec_t a, b, c;
        rec_t *bs[] = {&b};

        rec_start(&a, fx);
        rec_start(&b, fx);
        rec_start(&c, fx);
        /* a: cancelled at once. */
        assert_int_equal(
            sl_kquery_watermarks(fx->q, "t", 0, TIMEOUT_MS, on_watermarks, &a),
            0);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 0, TIMEOUT_MS,
                                             on_committed, &a),
                         0);
        assert_int_equal(
            sl_kquery_partitions(fx->q, "t", TIMEOUT_MS, on_partitions, &a), 0);
        assert_int_equal(
            sl_kquery_describe_group(fx->q, "g", TIMEOUT_MS, on_group, &a), 0);
        assert_int_equal(sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &a), 0);
        /* c: cancelled once the workers and librdkafka hold it. */
        assert_int_equal(
            sl_kquery_watermarks(fx->q, "t", 1, TIMEOUT_MS, on_watermarks, &c),
            0);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 1, TIMEOUT_MS,
                                             on_committed, &c),
                         0);
        assert_int_equal(sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &c), 0);
        /* b: not cancelled. */
        assert_int_equal(
            sl_kquery_watermarks(fx->q, "t", 2, TIMEOUT_MS, on_watermarks, &b),
            0);
        sl_kquery_cancel(fx->q, &a);
        sl_kquery_cancel(fx->q, &a);   /* twice is harmless */
        sl_kquery_cancel(fx->q, NULL); /* no such opaque */
        run_until(fx, NULL, 0, 100);
        sl_kquery_cancel(fx->q, &c);

        run_until(fx, bs, 1, TIMEOUT_MS + MARGIN_MS + 1000);
        /* Past every deadline and grace period. */
        run_until(fx, NULL, 0, TIMEOUT_MS + MARGIN_MS);
        assert_int_equal(a.calls, 0);
        assert_int_equal(c.calls, 0);
        assert_int_equal(b.calls, 1);
}

/* Destroy with lookups queued, running and out with librdkafka: no
 * callback, it waits for the worker calls (bounded by their timeouts),
 * everything is freed (ASan) and every handle closes (teardown). */
static void test_destroy_in_flight(void **state) {
        fx_t *fx = *state;
        enum { N = 10 };
        rec_t r;
        int64_t t0, ms;

        rec_start(&r, fx);
        for (int i = 0; i < N; i++) {
                assert_int_equal(sl_kquery_watermarks(fx->q, "t", i, TIMEOUT_MS,
                                                      on_watermarks, &r),
                                 0);
                assert_int_equal(sl_kquery_committed(fx->q, "g", "t", i,
                                                     TIMEOUT_MS, on_committed,
                                                     &r),
                                 0);
                assert_int_equal(sl_kquery_partitions(fx->q, "t", TIMEOUT_MS,
                                                      on_partitions, &r),
                                 0);
                assert_int_equal(sl_kquery_describe_group(
                                     fx->q, "g", TIMEOUT_MS, on_group, &r),
                                 0);
                assert_int_equal(
                    sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &r), 0);
        }
        run_until(fx, NULL, 0, 50); /* the workers are in their calls now */
        t0 = sl_mono_us();
        sl_kquery_destroy(fx->q);
        fx->q = NULL;
        ms = (sl_mono_us() - t0) / 1000;
        print_message("    destroy with %d lookups in flight took %" PRId64
                      " ms\n",
                      5 * N, ms);
        assert_true(ms <= TIMEOUT_MS + MARGIN_MS);
        run_until(fx, NULL, 0, TIMEOUT_MS + MARGIN_MS);
        assert_int_equal(r.calls, 0);
}

/* A callback that destroys q: no other callback runs, and q refuses new
 * lookups from then on. */
static void test_destroy_from_callback(void **state) {
        fx_t *fx = *state;
        rec_t first, w, c, p;
        rec_t *firsts[] = {&first};

        rec_start(&first, fx);
        rec_start(&w, fx);
        rec_start(&c, fx);
        rec_start(&p, fx);
        first.destroy_q = 1;
        assert_int_equal(sl_kquery_probe(fx->q, 100, on_probe, &first), 0);
        assert_int_equal(
            sl_kquery_watermarks(fx->q, "t", 0, TIMEOUT_MS, on_watermarks, &w),
            0);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 0, TIMEOUT_MS,
                                             on_committed, &c),
                         0);
        assert_int_equal(sl_kquery_probe(fx->q, TIMEOUT_MS, on_probe, &p), 0);
        run_until(fx, firsts, 1, 100 + MARGIN_MS + 1000);
        assert_null(fx->q);
        assert_int_equal(first.after_destroy_rc, -1);
        run_until(fx, NULL, 0, TIMEOUT_MS + MARGIN_MS);
        assert_int_equal(w.calls, 0);
        assert_int_equal(c.calls, 0);
        assert_int_equal(p.calls, 0);
}

/* Bad arguments: -1, and no callback ever. */
static void test_bad_args(void **state) {
        fx_t *fx = *state;
        sl_kquery_t *q = fx->q;
        char errstr[128] = "";
        rec_t r;

        rec_start(&r, fx);
        assert_int_equal(
            sl_kquery_watermarks(NULL, "t", 0, 100, on_watermarks, &r), -1);
        assert_int_equal(
            sl_kquery_watermarks(q, NULL, 0, 100, on_watermarks, &r), -1);
        assert_int_equal(sl_kquery_watermarks(q, "", 0, 100, on_watermarks, &r),
                         -1);
        assert_int_equal(
            sl_kquery_watermarks(q, "t", -1, 100, on_watermarks, &r), -1);
        assert_int_equal(sl_kquery_watermarks(q, "t", 0, 0, on_watermarks, &r),
                         -1);
        assert_int_equal(sl_kquery_watermarks(q, "t", 0, -1, on_watermarks, &r),
                         -1);
        assert_int_equal(sl_kquery_watermarks(q, "t", 0, 100, NULL, &r), -1);

        assert_int_equal(
            sl_kquery_committed(NULL, "g", "t", 0, 100, on_committed, &r), -1);
        assert_int_equal(
            sl_kquery_committed(q, NULL, "t", 0, 100, on_committed, &r), -1);
        assert_int_equal(
            sl_kquery_committed(q, "", "t", 0, 100, on_committed, &r), -1);
        assert_int_equal(
            sl_kquery_committed(q, "g", NULL, 0, 100, on_committed, &r), -1);
        assert_int_equal(
            sl_kquery_committed(q, "g", "t", -1, 100, on_committed, &r), -1);
        assert_int_equal(
            sl_kquery_committed(q, "g", "t", 0, 0, on_committed, &r), -1);
        assert_int_equal(sl_kquery_committed(q, "g", "t", 0, 100, NULL, &r),
                         -1);

        assert_int_equal(
            sl_kquery_partitions(NULL, "t", 100, on_partitions, &r), -1);
        assert_int_equal(sl_kquery_partitions(q, NULL, 100, on_partitions, &r),
                         -1);
        assert_int_equal(sl_kquery_partitions(q, "", 100, on_partitions, &r),
                         -1);
        assert_int_equal(sl_kquery_partitions(q, "t", 0, on_partitions, &r),
                         -1);
        assert_int_equal(sl_kquery_partitions(q, "t", 100, NULL, &r), -1);

        assert_int_equal(sl_kquery_describe_group(NULL, "g", 100, on_group, &r),
                         -1);
        assert_int_equal(sl_kquery_describe_group(q, NULL, 100, on_group, &r),
                         -1);
        assert_int_equal(sl_kquery_describe_group(q, "", 100, on_group, &r),
                         -1);
        assert_int_equal(sl_kquery_describe_group(q, "g", -5, on_group, &r),
                         -1);
        assert_int_equal(sl_kquery_describe_group(q, "g", 100, NULL, &r), -1);

        assert_int_equal(sl_kquery_probe(NULL, 100, on_probe, &r), -1);
        assert_int_equal(sl_kquery_probe(q, 0, on_probe, &r), -1);
        assert_int_equal(sl_kquery_probe(q, 100, NULL, &r), -1);

        assert_null(sl_kquery_new(NULL, fx->rk, errstr, sizeof(errstr)));
        assert_true(errstr[0] != '\0');
        assert_null(sl_kquery_new(&fx->loop, NULL, errstr, sizeof(errstr)));
        sl_kquery_destroy(NULL);
        sl_kquery_cancel(NULL, &r);

        run_until(fx, NULL, 0, 100 + MARGIN_MS);
        assert_int_equal(r.calls, 0);
}

/* Strings are copied: the caller may free them right after the call. */
static void test_strings_copied(void **state) {
        fx_t *fx = *state;
        rec_t pc, cm;
        rec_t *all[] = {&pc, &cm};
        char *topic = sl_strdup("copied-topic");
        char *group = sl_strdup("copied-group");

        rec_start(&pc, fx);
        rec_start(&cm, fx);
        assert_int_equal(
            sl_kquery_partitions(fx->q, topic, TIMEOUT_MS, on_partitions, &pc),
            0);
        assert_int_equal(sl_kquery_committed(fx->q, group, topic, 0, TIMEOUT_MS,
                                             on_committed, &cm),
                         0);
        memset(topic, 'x', strlen(topic));
        memset(group, 'x', strlen(group));
        free(topic);
        free(group);
        run_until(fx, all, 2, TIMEOUT_MS + MARGIN_MS + 1000);
        assert_string_equal(pc.topic, "copied-topic");
}

/*
 * On librdkafka's mock cluster.
 */

/* The Kafka protocol's ApiKey of OffsetFetch (librdkafka does not install
 * its protocol header). */
#define SL_TEST_API_OFFSETFETCH 9

/* The mock cluster lives in a handle of its own, kept here; the fixture
 * itself is the usual one, pointed at it. */
static rd_kafka_t *mock_host;
static rd_kafka_mock_cluster_t *mock_mc;

static int mock_setup(void **state) {
        fx_t *fx = sl_calloc(1, sizeof(*fx));
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        rd_kafka_conf_set_log_cb(conf, log_quiet);
        assert_non_null(mock_host = rd_kafka_new(RD_KAFKA_PRODUCER, conf,
                                                 errstr, sizeof(errstr)));
        assert_non_null(mock_mc = rd_kafka_mock_cluster_new(mock_host, 3));
        assert_int_equal(rd_kafka_mock_topic_create(mock_mc, "t", 1, 3),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        fx_open(fx, rd_kafka_mock_cluster_bootstraps(mock_mc));
        *state = fx;
        return 0;
}

static int mock_teardown(void **state) {
        fx_teardown(state);
        rd_kafka_mock_cluster_destroy(mock_mc);
        rd_kafka_destroy(mock_host);
        return 0;
}

/* librdkafka 2.0.2 keeps a group's coordinator in a cache its admin
 * requests never correct, and renews the entry at each use: after the
 * coordinator moved, ListConsumerGroupOffsets kept going to the old broker,
 * answered NOT_COORDINATOR, and asked again every 150 ms until its deadline
 * — for ever, to a rebuild that asks again.  Now the lookup is answered
 * once the entry has expired: within the coordinator TTL plus a few
 * seconds. */
static void test_mock_coordinator_moved(void **state) {
        fx_t *fx = *state;
        rec_t first, second;
        rec_t *f[] = {&first}, *s[] = {&second};

        assert_int_equal(
            rd_kafka_mock_coordinator_set(mock_mc, "group", "g", 1),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        rec_start(&first, fx);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 0, 10000,
                                             on_committed, &first),
                         0);
        run_until(fx, f, 1, 15000);
        print_message("    coordinator 1: %s after %" PRId64 " ms\n",
                      rd_kafka_err2name(first.err), rec_ms(&first));
        assert_int_equal(first.err, RD_KAFKA_RESP_ERR_NO_ERROR);

        /* The coordinator moves to broker 2; broker 1, still cached, now
         * answers every OffsetFetch as a broker that is no longer the
         * coordinator does (the mock itself would answer anyway). */
        assert_int_equal(
            rd_kafka_mock_coordinator_set(mock_mc, "group", "g", 2),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        for (int i = 0; i < 500; i++)
                assert_int_equal(rd_kafka_mock_broker_push_request_error_rtts(
                                     mock_mc, 1, SL_TEST_API_OFFSETFETCH, 1,
                                     RD_KAFKA_RESP_ERR_NOT_COORDINATOR, 0),
                                 RD_KAFKA_RESP_ERR_NO_ERROR);
        rec_start(&second, fx);
        assert_int_equal(sl_kquery_committed(fx->q, "g", "t", 0, 15000,
                                             on_committed, &second),
                         0);
        run_until(fx, s, 1, 20000);
        print_message("    moved to 2: %s after %" PRId64 " ms\n",
                      rd_kafka_err2name(second.err), rec_ms(&second));
        assert_int_equal(second.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_true(rec_ms(&second) < SL_KQUERY_COORD_TTL_MS + 6000);
}

/*
 * Against a real broker (tests/integration/0011-kquery.sh).
 */

static const char *it_bootstrap(void) {
        const char *b = getenv("SLUICE_TEST_BOOTSTRAP");
        return b && *b && getenv("SLUICE_TEST_KQUERY_TOPIC") ? b : NULL;
}

static int it_setup(void **state) {
        fx_t *fx;

        if (!it_bootstrap()) {
                *state = NULL;
                return 0;
        }
        fx = sl_calloc(1, sizeof(*fx));
        fx_open(fx, it_bootstrap());
        *state = fx;
        return 0;
}

static int it_teardown(void **state) {
        return *state ? fx_teardown(state) : 0;
}

#define IT_SKIP_UNLESS_BROKER()                                                \
        do {                                                                   \
                if (!*state) {                                                 \
                        print_message("    needs a broker: run "               \
                                      "tests/integration/0011-kquery.sh\n");   \
                        skip();                                                \
                }                                                              \
        } while (0)

/* The records per partition the script produced ("5,3,0"). */
static int it_counts(int64_t *counts, int max) {
        const char *s = getenv("SLUICE_TEST_KQUERY_COUNTS");
        int n = 0;
        assert_non_null(s);
        while (*s && n < max) {
                char *end;
                counts[n++] = strtoll(s, &end, 10);
                s = *end == ',' ? end + 1 : end;
        }
        return n;
}

/* A group name no test has used. */
static void it_name(char *buf, size_t size, const char *what) {
        snprintf(buf, size, "%s-%s-%d", getenv("SLUICE_TEST_KQUERY_TOPIC"),
                 what, (int)getpid());
}

static void test_it_watermarks(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        const char *topic = getenv("SLUICE_TEST_KQUERY_TOPIC");
        int64_t counts[16];
        int n = it_counts(counts, 16);
        rec_t r[17];
        rec_t *all[17];

        for (int i = 0; i <= n; i++) {
                rec_start(&r[i], fx);
                all[i] = &r[i];
                /* i == n: a partition the topic does not have. */
                assert_int_equal(sl_kquery_watermarks(fx->q, topic, i, 10000,
                                                      on_watermarks, &r[i]),
                                 0);
        }
        run_until(fx, all, n + 1, 15000);
        for (int i = 0; i < n; i++) {
                print_message("    %s [%d]: %s lo %" PRId64 " hi %" PRId64
                              " after %" PRId64 " ms\n",
                              topic, i, rd_kafka_err2name(r[i].err), r[i].a,
                              r[i].b, rec_ms(&r[i]));
                assert_int_equal(r[i].err, RD_KAFKA_RESP_ERR_NO_ERROR);
                assert_int_equal(r[i].a, 0);
                assert_int_equal(r[i].b, counts[i]);
        }
        print_message("    %s [%d] (no such partition): %s\n", topic, n,
                      rd_kafka_err2name(r[n].err));
        assert_int_not_equal(r[n].err, RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void test_it_partitions(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        const char *topic = getenv("SLUICE_TEST_KQUERY_TOPIC");
        int64_t counts[16];
        int n = it_counts(counts, 16);
        char missing[300];
        rec_t have, miss;
        rec_t *all[] = {&have, &miss};

        it_name(missing, sizeof(missing), "missing");
        rec_start(&have, fx);
        rec_start(&miss, fx);
        assert_int_equal(
            sl_kquery_partitions(fx->q, topic, 10000, on_partitions, &have), 0);
        assert_int_equal(
            sl_kquery_partitions(fx->q, missing, 10000, on_partitions, &miss),
            0);
        run_until(fx, all, 2, 15000);
        print_message("    %s: %" PRId64 " partitions; %s: %" PRId64 " (%s)\n",
                      topic, have.a, missing, miss.a,
                      rd_kafka_err2name(miss.err));
        assert_int_equal(have.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(have.a, n);
        assert_string_equal(have.topic, topic);
        assert_int_equal(miss.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(miss.a, 0);
}

/* Commits `offset` for (topic, partition) in `group` with a plain consumer
 * (no group membership needed for a manual commit). */
static void it_commit(const char *group, const char *topic, int32_t partition,
                      int64_t offset) {
        rd_kafka_t *c = client_new(it_bootstrap(), group, NULL);
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
        assert_int_equal(rd_kafka_commit(c, l, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(l->elems[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
}

static void test_it_committed(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        const char *topic = getenv("SLUICE_TEST_KQUERY_TOPIC");
        char group[300];
        rec_t before, after;
        rec_t *b[] = {&before}, *a[] = {&after};

        it_name(group, sizeof(group), "committed");
        rec_start(&before, fx);
        assert_int_equal(sl_kquery_committed(fx->q, group, topic, 0, 10000,
                                             on_committed, &before),
                         0);
        run_until(fx, b, 1, 15000);
        print_message("    unknown group: %s offset %" PRId64 "\n",
                      rd_kafka_err2name(before.err), before.a);
        assert_int_equal(before.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(before.a, RD_KAFKA_OFFSET_INVALID);

        it_commit(group, topic, 0, 2);
        rec_start(&after, fx);
        assert_int_equal(sl_kquery_committed(fx->q, group, topic, 0, 10000,
                                             on_committed, &after),
                         0);
        run_until(fx, a, 1, 15000);
        print_message("    after commit of 2: %s offset %" PRId64 "\n",
                      rd_kafka_err2name(after.err), after.a);
        assert_int_equal(after.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(after.a, 2);
}

/* A transactional producer holding offsets for the group in an open
 * transaction. */
static rd_kafka_t *it_txn_begin(const char *group, const char *topic,
                                int32_t partition, int64_t offset) {
        char errstr[512], txn_id[320];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_consumer_group_metadata_t *cgmd;
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        rd_kafka_t *p;

        snprintf(txn_id, sizeof(txn_id), "%s-txn", group);
        assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers",
                                           it_bootstrap(), errstr,
                                           sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "transactional.id", txn_id,
                                           errstr, sizeof(errstr)),
                         RD_KAFKA_CONF_OK);
        rd_kafka_conf_set_log_cb(conf, log_quiet);
        assert_non_null(
            p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)));
        assert_null(error = rd_kafka_init_transactions(p, 30000));
        assert_null(error = rd_kafka_begin_transaction(p));
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
        cgmd = rd_kafka_consumer_group_metadata_new(group);
        error = rd_kafka_send_offsets_to_transaction(p, l, cgmd, 30000);
        if (error)
                print_message("    send_offsets_to_transaction: %s\n",
                              rd_kafka_error_string(error));
        assert_null(error);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        rd_kafka_topic_partition_list_destroy(l);
        return p;
}

typedef struct {
        rd_kafka_t *producer;
        int64_t committed_us;
} it_txn_t;

/* Commits the transaction from another thread, so the loop (and the
 * lookup waiting on the loop) keeps turning meanwhile. */
static void *it_txn_commit(void *arg) {
        it_txn_t *t = arg;
        rd_kafka_error_t *error;
        usleep(700 * 1000);
        error = rd_kafka_commit_transaction(t->producer, 30000);
        assert_null(error);
        t->committed_us = sl_mono_us();
        return NULL;
}

/* require_stable: while a transaction holds offsets for the partition the
 * answer waits; when it commits, the lookup returns the new offset.  A
 * lookup whose timeout ends first gets UNSTABLE_OFFSET_COMMIT. */
static void test_it_committed_stable(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        const char *topic = getenv("SLUICE_TEST_KQUERY_TOPIC");
        char group[300];
        it_txn_t txn = {0};
        pthread_t th;
        rec_t early, wait;
        rec_t *all[] = {&early, &wait};

        it_name(group, sizeof(group), "stable");
        it_commit(group, topic, 1, 1);
        txn.producer = it_txn_begin(group, topic, 1, 3);

        rec_start(&early, fx);
        rec_start(&wait, fx);
        assert_int_equal(sl_kquery_committed(fx->q, group, topic, 1, 400,
                                             on_committed, &early),
                         0);
        assert_int_equal(sl_kquery_committed(fx->q, group, topic, 1, 20000,
                                             on_committed, &wait),
                         0);
        assert_int_equal(pthread_create(&th, NULL, it_txn_commit, &txn), 0);
        run_until(fx, all, 2, 25000);
        pthread_join(th, NULL);

        print_message("    pending txn, 400 ms timeout: %s offset %" PRId64
                      " after %" PRId64 " ms\n",
                      rd_kafka_err2name(early.err), early.a, rec_ms(&early));
        print_message("    pending txn, committed after %" PRId64
                      " ms: %s offset %" PRId64 " after %" PRId64 " ms\n",
                      (txn.committed_us - wait.start_us) / 1000,
                      rd_kafka_err2name(wait.err), wait.a, rec_ms(&wait));
        assert_int_equal(early.err, RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT);
        assert_int_equal(early.a, RD_KAFKA_OFFSET_INVALID);
        assert_true(rec_ms(&early) <= 400 + MARGIN_MS);
        assert_int_equal(wait.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(wait.a, 3);
        /* It waited for the commit (and not much longer). */
        assert_true(wait.end_us >= txn.committed_us - 50 * 1000);
        assert_true(fx->max_gap_us < MAX_GAP_US);
        rd_kafka_destroy(txn.producer);
}

static void test_it_group(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        const char *topic = getenv("SLUICE_TEST_KQUERY_TOPIC");
        char group[300], none[300], instance[300];
        rd_kafka_topic_partition_list_t *sub, *assigned = NULL;
        rd_kafka_t *member;
        int64_t end;
        int want_parts = 0;
        rec_t live, dead;
        rec_t *all[] = {&live, &dead};

        it_name(group, sizeof(group), "group");
        it_name(none, sizeof(none), "nogroup");
        it_name(instance, sizeof(instance), "instance");
        member = client_new(it_bootstrap(), group, instance);
        rd_kafka_poll_set_consumer(member);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        assert_int_equal(rd_kafka_subscribe(member, sub),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(sub);
        /* Joined once it has an assignment. */
        end = sl_mono_us() + 30 * 1000000LL;
        while (sl_mono_us() < end) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(member, 100);
                if (m)
                        rd_kafka_message_destroy(m);
                assert_int_equal(rd_kafka_assignment(member, &assigned), 0);
                if (assigned->cnt > 0)
                        break;
                rd_kafka_topic_partition_list_destroy(assigned);
                assigned = NULL;
        }
        assert_non_null(assigned);
        want_parts = assigned->cnt;
        rd_kafka_topic_partition_list_destroy(assigned);

        rec_start(&live, fx);
        rec_start(&dead, fx);
        live.want_instance = instance;
        assert_int_equal(
            sl_kquery_describe_group(fx->q, group, 10000, on_group, &live), 0);
        assert_int_equal(
            sl_kquery_describe_group(fx->q, none, 10000, on_group, &dead), 0);
        run_until(fx, all, 2, 15000);
        print_message("    live group: %s, %d member(s), ours: %s\n",
                      rd_kafka_err2name(live.err), live.member_cnt,
                      live.instance);
        print_message("    unknown group: %s, %d member(s)\n",
                      rd_kafka_err2name(dead.err), dead.member_cnt);
        assert_int_equal(live.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(live.member_cnt, 1);
        /* What groupcheck.h reads: the state and who owns what. */
        assert_int_equal(live.group_state,
                         RD_KAFKA_CONSUMER_GROUP_STATE_STABLE);
        assert_int_equal(live.instance_parts, want_parts);
        {
                char want[700];
                snprintf(want, sizeof(want), "%s/kquery-member", instance);
                assert_string_equal(live.instance, want);
        }
        assert_int_equal(dead.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(dead.member_cnt, 0);

        rd_kafka_consumer_close(member);
        rd_kafka_destroy(member);
}

static void test_it_probe(void **state) {
        IT_SKIP_UNLESS_BROKER();
        fx_t *fx = *state;
        rec_t r;
        rec_t *all[] = {&r};

        rec_start(&r, fx);
        assert_int_equal(sl_kquery_probe(fx->q, 5000, on_probe, &r), 0);
        run_until(fx, all, 1, 10000);
        print_message("    probe: %s, rtt %" PRId64 " ms\n",
                      rd_kafka_err2name(r.err), r.a);
        assert_int_equal(r.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_true(r.a >= 0 && r.a < 5000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_down_every_lookup, fx_setup,
                                            fx_teardown),
            cmocka_unit_test_setup_teardown(test_down_flood, fx_setup,
                                            fx_teardown),
            cmocka_unit_test_setup_teardown(test_cancel, fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(test_destroy_in_flight, fx_setup,
                                            fx_teardown),
            cmocka_unit_test_setup_teardown(test_destroy_from_callback,
                                            fx_setup, fx_teardown),
            cmocka_unit_test_setup_teardown(test_bad_args, fx_setup,
                                            fx_teardown),
            cmocka_unit_test_setup_teardown(test_strings_copied, fx_setup,
                                            fx_teardown),
            cmocka_unit_test_setup_teardown(test_mock_coordinator_moved,
                                            mock_setup, mock_teardown),
            cmocka_unit_test_setup_teardown(test_it_watermarks, it_setup,
                                            it_teardown),
            cmocka_unit_test_setup_teardown(test_it_partitions, it_setup,
                                            it_teardown),
            cmocka_unit_test_setup_teardown(test_it_committed, it_setup,
                                            it_teardown),
            cmocka_unit_test_setup_teardown(test_it_committed_stable, it_setup,
                                            it_teardown),
            cmocka_unit_test_setup_teardown(test_it_group, it_setup,
                                            it_teardown),
            cmocka_unit_test_setup_teardown(test_it_probe, it_setup,
                                            it_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
