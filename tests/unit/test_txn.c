/*
 * test_txn.c — the transaction state machine without a broker: started
 * against an address where nothing listens it stays CREATING (the worker
 * retries init_transactions as the same call), takes no work, says why on
 * /readyz, never calls the runtime's hooks, and is destroyed within a bound
 * while its worker is in the middle of a call.  What it does with a broker
 * (commits, aborts, recovery, fencing) is shown by the integration tests
 * 04NN-fault-*.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

#include <cmocka.h>

#include "metrics.h"
#include "txn.h"
#include "util.h"

static int hook_calls;

static rd_kafka_conf_t *conf_new(void *opaque, char *errstr, size_t size) {
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        (void)opaque;
        if (rd_kafka_conf_set(c, "bootstrap.servers", "127.0.0.1:1", errstr,
                              size) != RD_KAFKA_CONF_OK ||
            rd_kafka_conf_set(c, "log_level", "0", errstr, size) !=
                RD_KAFKA_CONF_OK)
                return NULL;
        return c;
}

static rd_kafka_conf_t *pconf(void *opaque, int idx, char *errstr,
                              size_t size) {
        rd_kafka_conf_t *c = conf_new(opaque, errstr, size);
        rd_kafka_conf_set(c, "transactional.id",
                          idx ? "test-txn#2" : "test-txn", errstr, size);
        return c;
}

static rd_kafka_conf_t *cconf(void *opaque, char *errstr, size_t size) {
        rd_kafka_conf_t *c = conf_new(opaque, errstr, size);
        rd_kafka_conf_set(c, "group.id", "test-txn", errstr, size);
        return c;
}

static void h_ready(void *o, rd_kafka_t *const *p, int n, rd_kafka_t *c) {
        (void)o, (void)p, (void)n, (void)c;
        hook_calls++;
}
static void h_void(void *o) {
        (void)o;
        hook_calls++;
}
static rd_kafka_topic_partition_list_t *h_offsets(void *o, int all) {
        (void)o, (void)all;
        return NULL;
}
static void h_committed(void *o, const rd_kafka_topic_partition_list_t *l) {
        (void)o, (void)l;
        hook_calls++;
}
static void h_delivery(void *o, const rd_kafka_message_t *m) {
        (void)o, (void)m;
        hook_calls++;
}
static void h_exit(void *o, int code) {
        (void)o, (void)code;
        hook_calls++;
}

static void on_tick(uv_timer_t *t) {
        uv_stop(t->loop);
}

static void test_no_broker(void **state) {
        (void)state;
        uv_loop_t loop;
        uv_timer_t tick;
        sl_metrics_t *m = sl_metrics_new();
        sl_txn_conf_t tc = {.group_id = "g",
                            .instance_id = "",
                            .client_id = "test",
                            .transaction_timeout_ms = 10000,
                            .producers = 2};
        sl_txn_hooks_t hooks = {.producer_conf = pconf,
                                .consumer_conf = cconf,
                                .clients_ready = h_ready,
                                .clients_lost = h_void,
                                .offsets = h_offsets,
                                .committed = h_committed,
                                .aborted = h_void,
                                .resumed = h_void,
                                .delivery = h_delivery,
                                .exit = h_exit};
        char errstr[256], buf[256];
        sl_txn_t *txn;
        int64_t t0;

        uv_loop_init(&loop);
        txn = sl_txn_new(&loop, &tc, &hooks, NULL, m, errstr, sizeof(errstr));
        assert_non_null(txn);
        sl_txn_start(txn);
        /* Turn the loop for a while: the worker keeps retrying. */
        uv_timer_init(&loop, &tick);
        uv_timer_start(&tick, on_tick, 1500, 0);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(sl_txn_state(txn), SL_TXN_CREATING);
        assert_false(sl_txn_accepting(txn));
        assert_null(sl_txn_producer(txn));
        assert_int_equal(sl_txn_produce_begin(txn), -1);
        assert_int_equal(sl_txn_commit(txn), -1);
        assert_non_null(sl_txn_trouble(txn, buf, sizeof(buf)));
        assert_non_null(strstr(buf, "connecting to Kafka"));
        assert_int_equal(hook_calls, 0);

        /* Destroy while init_transactions is in flight: bounded by one
         * call (5 s) plus the clients' teardown. */
        t0 = sl_mono_us();
        sl_txn_destroy(txn);
        assert_true(sl_mono_us() - t0 < 12 * 1000000);
        uv_close((uv_handle_t *)&tick, NULL);
        uv_run(&loop, UV_RUN_NOWAIT);
        assert_int_equal(uv_loop_close(&loop), 0);
        sl_metrics_destroy(m);
        sl_txn_destroy(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_no_broker),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
