/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_txn.c — the transaction state machine without a broker: started
 * against an address where nothing listens it stays CREATING (the worker
 * retries init_transactions as the same call), takes no work, says why on
 * /readyz, never calls the runtime's hooks, and is destroyed within a bound
 * while its worker is in the middle of a call; and the table of state
 * transitions (txn.h): exactly the documented ones are valid, and any
 * other asserts naming both states.  What it does with a broker (commits,
 * aborts, recovery, fencing) is shown by the integration tests
 * 04NN-fault-*.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* txn.h's table, written out again: the transitions that are not a bug
 * (a state to itself aside). */
static const struct {
        sl_txn_state_t from, to;
} documented[] = {
    {SL_TXN_CREATING, SL_TXN_READY},
    {SL_TXN_CREATING, SL_TXN_RECOVERING},
    {SL_TXN_CREATING, SL_TXN_DEAD},
    {SL_TXN_READY, SL_TXN_OPEN},
    {SL_TXN_READY, SL_TXN_RECOVERING},
    {SL_TXN_READY, SL_TXN_DEAD},
    {SL_TXN_OPEN, SL_TXN_FLUSHING},
    {SL_TXN_OPEN, SL_TXN_COMMITTING},
    {SL_TXN_OPEN, SL_TXN_ABORTING},
    {SL_TXN_OPEN, SL_TXN_RECOVERING},
    {SL_TXN_OPEN, SL_TXN_DEAD},
    {SL_TXN_FLUSHING, SL_TXN_COMMITTING},
    {SL_TXN_FLUSHING, SL_TXN_ABORTING},
    {SL_TXN_FLUSHING, SL_TXN_RECOVERING},
    {SL_TXN_FLUSHING, SL_TXN_DEAD},
    {SL_TXN_COMMITTING, SL_TXN_READY},
    {SL_TXN_COMMITTING, SL_TXN_OPEN},
    {SL_TXN_COMMITTING, SL_TXN_ABORTING},
    {SL_TXN_COMMITTING, SL_TXN_RECOVERING},
    {SL_TXN_COMMITTING, SL_TXN_DEAD},
    {SL_TXN_ABORTING, SL_TXN_READY},
    {SL_TXN_ABORTING, SL_TXN_RECOVERING},
    {SL_TXN_ABORTING, SL_TXN_DEAD},
    {SL_TXN_RECOVERING, SL_TXN_CREATING},
    {SL_TXN_RECOVERING, SL_TXN_DEAD},
};

static int is_documented(sl_txn_state_t from, sl_txn_state_t to) {
        for (size_t i = 0; i < sizeof(documented) / sizeof(documented[0]); i++)
                if (documented[i].from == from && documented[i].to == to)
                        return 1;
        return 0;
}

/* Every pair of states: valid exactly when documented (or no change);
 * from CREATING every state can be reached; DEAD from every state, and
 * nothing leaves it; no state is out of the table. */
static void test_transition_table(void **state) {
        int reach[SL_TXN_STATE_CNT] = {[SL_TXN_CREATING] = 1}, grew = 1;
        (void)state;
        for (int f = 0; f < SL_TXN_STATE_CNT; f++)
                for (int t = 0; t < SL_TXN_STATE_CNT; t++) {
                        int want = f == t || is_documented(f, t);
                        if (sl_txn_transition_valid(f, t) != want)
                                fail_msg("%s -> %s: valid %d, documented %d",
                                         sl_txn_state_name(f),
                                         sl_txn_state_name(t),
                                         sl_txn_transition_valid(f, t), want);
                }
        while (grew) {
                grew = 0;
                for (int f = 0; f < SL_TXN_STATE_CNT; f++)
                        for (int t = 0; t < SL_TXN_STATE_CNT; t++)
                                if (reach[f] && !reach[t] &&
                                    sl_txn_transition_valid(f, t))
                                        reach[t] = grew = 1;
        }
        for (int s = 0; s < SL_TXN_STATE_CNT; s++) {
                assert_true(reach[s]);
                assert_true(sl_txn_transition_valid(s, SL_TXN_DEAD));
                if (s != SL_TXN_DEAD) {
                        assert_false(sl_txn_transition_valid(SL_TXN_DEAD, s));
                        assert_int_equal(
                            sl_txn_transition_valid(s, SL_TXN_RECOVERING),
                            s != SL_TXN_DEAD);
                }
        }
        /* Records go only into an open transaction: READY never skips
         * OPEN, and nothing but COMMITTING and READY opens one. */
        assert_false(sl_txn_transition_valid(SL_TXN_READY, SL_TXN_COMMITTING));
        assert_false(sl_txn_transition_valid(SL_TXN_READY, SL_TXN_FLUSHING));
        assert_false(sl_txn_transition_valid(SL_TXN_ABORTING, SL_TXN_OPEN));
        assert_false(sl_txn_transition_valid(SL_TXN_RECOVERING, SL_TXN_READY));
        assert_false(sl_txn_transition_valid(SL_TXN_STATE_CNT, SL_TXN_READY));
        assert_false(sl_txn_transition_valid(SL_TXN_READY, SL_TXN_STATE_CNT));
}

/* A transition out of the table is a bug: the process aborts and says
 * which, naming both states; a valid one goes on. */
static void test_invalid_transition_asserts(void **state) {
        int fds[2], status;
        char out[512] = "";
        ssize_t n, got = 0;
        pid_t pid;
        (void)state;
        sl_txn_transition_check(SL_TXN_COMMITTING, SL_TXN_OPEN);
        sl_txn_transition_check(SL_TXN_DEAD, SL_TXN_DEAD);
        assert_int_equal(pipe(fds), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fds[1], STDERR_FILENO);
                close(fds[0]);
                sl_txn_transition_check(SL_TXN_DEAD, SL_TXN_READY);
                _exit(0); /* not reached */
        }
        close(fds[1]);
        while ((n = read(fds[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
                got += n;
        close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
        if (!strstr(out, "BUG: invalid transaction state transition dead -> "
                         "ready"))
                fail_msg("stderr: %s", out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_no_broker),
            cmocka_unit_test(test_transition_table),
            cmocka_unit_test(test_invalid_transition_asserts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
