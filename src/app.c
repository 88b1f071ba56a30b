/* SPDX-License-Identifier: Apache-2.0 */
/*
 * app.c — `sluice run`: the composition root of the process.
 *
 * DESIGN
 *
 * One libuv loop thread does everything that touches operator state.  It is
 * woken by librdkafka (the consumer's, the producers' and the reader's
 * queues), by operator wake-ups (one uv_timer per task), by the commit
 * timers, by lookups answered off the loop (kquery.h), by the transaction
 * worker (txn.h), by the HTTP API (api.h) and by signals.  No librdkafka
 * call made on it blocks: lookups go through sl_kquery, transactional calls
 * through the txn worker, seeks are asynchronous (timeout 0); the one
 * bounded wait is sl_txn_drain() when a suspect record is sent alone
 * (runtime.c).  A watchdog thread (watchdog.h) fails /healthz when the loop
 * stops turning.
 *
 * This file makes the runtime (runtime.h) and its rooms, in the order each
 * needs the ones before it, wires the hooks by which the rooms and the
 * transaction machine reach each other, ticks them every second, and
 * drives the shutdown:
 *
 *   start     the memory budget (memlimit.h: it scales the pipelines' byte
 *             caps in the configuration), metrics and health endpoints,
 *             the API, the long-lived clients (clients.h), the topics'
 *             limits (targets.h), the pipelines (pipeline.h), then the
 *             transaction machine, which makes the
 *             consumer and the producers and, through clients.c, joins the
 *             group; the watchdog last
 *   tick      every second: the consumer's poll stamp, lag and readiness,
 *             memory trim, the Kafka probe, the topic cache, the input's
 *             partition count, the group watch
 *   shutdown  SIGTERM or SIGINT: stop taking input, commit, close the
 *             consumer (which revokes through the usual path, member.c),
 *             commit what the revocation carried, exit 0.  The watchdog
 *             thread bounds the whole shutdown by shutdown_grace (exit 1
 *             past it), also as PID 1.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "authz.h"
#include "cli.h"
#include "clients.h"
#include "commit.h"
#include "health.h"
#include "http.h"
#include "input.h"
#include "kafka.h"
#include "log.h"
#include "member.h"
#include "memlimit.h"
#include "parts.h"
#include "pipeline.h"
#include "runtime.h"
#include "targets.h"
#include "util.h"
#include "watchdog.h"

/* The outbox's bounds (records decided during a commit); past them input
 * is held (input.h). */
#define SL_APP_OUTBOX_MAX_BYTES   (64 * 1024 * 1024)
#define SL_APP_OUTBOX_MAX_RECORDS 50000

typedef struct sl_app_s {
        sl_runtime_t rt;
        sl_http_t *http; /* metrics, /healthz, /readyz; NULL: none */
        sl_api_t *api;   /* NULL unless api_listen is set */
        sl_watchdog_t *watchdog;
        uv_timer_t tick_timer; /* every second */
        uv_timer_t stop_timer; /* drives the shutdown */
        uv_signal_t sigterm;
        uv_signal_t sigint;
} sl_app_t;

/* ------------------------------------------------------------------ */
/* Shutdown.                                                           */

/* One step of the shutdown; called whenever something it waits for may
 * have happened (the transaction settled, the consumer served, a timer):
 * the stop_step hook. */
static void app_stop_step(sl_runtime_t *rt) {
        rd_kafka_error_t *error;
        sl_txn_state_t s = sl_txn_state(rt->txn);
        if (s == SL_TXN_CREATING || s == SL_TXN_RECOVERING ||
            s == SL_TXN_DEAD || !rt->consumer) {
                /* No clients to leave with: nothing is open. */
                rt->phase = SL_RUN_STOPPED;
                uv_stop(rt->loop);
                return;
        }
        switch (rt->phase) {
        case SL_RUN_STOP_COMMIT:
                if (sl_txn_commit(rt->txn) != 1)
                        return; /* committing, or busy: called again */
                rt->phase = SL_RUN_STOP_CLOSE;
                /* Closing revokes every partition through the rebalance
                 * callback on the consumer's queue, which we keep
                 * serving. */
                error =
                    rd_kafka_consumer_close_queue(rt->consumer, rt->consumer_q);
                if (error) {
                        sl_log(LOG_WARNING, "SHUTDOWN", "consumer close: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
                sl_kwatch_kick(rt->consumer_w);
                break;
        case SL_RUN_STOP_CLOSE:
                if (!rd_kafka_consumer_closed(rt->consumer))
                        return;
                if (sl_txn_commit(rt->txn) != 1)
                        return;
                rt->phase = SL_RUN_STOPPED;
                uv_stop(rt->loop);
                break;
        default:
                break;
        }
}

static void app_on_stop_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        app_stop_step(&app->rt);
}

static void app_stop(sl_app_t *app, const char *why) {
        sl_runtime_t *rt = &app->rt;
        if (rt->phase != SL_RUN_RUNNING)
                return;
        sl_log(LOG_NOTICE, "SHUTDOWN", "%s: committing and leaving", why);
        /* Bounded by a thread of its own: works as PID 1 too. */
        sl_watchdog_shutdown_deadline(
            app->watchdog, rt->conf->shutdown_grace_ms, SL_EXIT_FAIL);
        rt->phase = SL_RUN_STOP_COMMIT;
        sl_txn_stopping(rt->txn);
        sl_input_clear(rt);
        sl_health_update_ready(rt);
        uv_timer_start(&app->stop_timer, app_on_stop_timer, 0, 20);
}

static void app_on_signal(uv_signal_t *sig, int signum) {
        app_stop(sig->data, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* ------------------------------------------------------------------ */
/* Every second.                                                        */

static void app_on_tick(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        sl_runtime_t *rt = &app->rt;
        int64_t now = sl_now_ms(), lag, read;
        sl_clients_tick(rt);
        sl_health_lag_tick(rt, now, &lag, &read);
        sl_commit_trim(rt, now, lag, read);
        sl_health_tick(rt, now);
        sl_targets_tick(rt);
        sl_parts_tick(rt, now);
        sl_member_tick(rt, now);
        sl_health_update_ready(rt);
}

/* ------------------------------------------------------------------ */
/* Start and end.                                                       */

/* What the rooms below ask of the ones above (runtime.h). */
static const sl_runtime_hooks_t app_hooks = {
    .update_ready = sl_health_update_ready,
    .commit_soon = sl_commit_soon,
    .commit_linger = sl_commit_linger,
    .topic_partitions = sl_targets_partitions,
    .topic = sl_targets_handle,
    .max_bytes = sl_targets_max_bytes,
    .stop_step = app_stop_step,
};

static void app_exit_hook(void *opaque, int code) {
        sl_runtime_exit(opaque, code);
}

/* The transaction machine, with the hooks of the rooms that serve it. */
static int app_txn(sl_runtime_t *rt, char *errstr, size_t errstr_size) {
        const sl_conf_t *conf = rt->conf;
        sl_txn_conf_t tc = {0};
        sl_txn_hooks_t hooks = {
            .opaque = rt,
            .producer_conf = sl_clients_producer_conf,
            .consumer_conf = sl_clients_consumer_conf,
            .clients_ready = sl_clients_ready,
            .turn = sl_clients_turn,
            .clients_lost = sl_clients_lost,
            .offsets = sl_commit_offsets,
            .committed = sl_commit_committed,
            .aborted = sl_commit_aborted,
            .resumed = sl_commit_resumed,
            .delivery = sl_commit_delivery,
            .exit = app_exit_hook,
            .not_authorized = sl_targets_txn_refused,
        };
        const char *v;

        if (sl_pipeline_tracks_deliveries(rt)) {
                hooks.precommit = sl_commit_precommit;
                hooks.reports_pending = sl_commit_reports_pending;
        }
        for (int i = 0; i < rt->pipeline_cnt; i++)
                if (rt->pipelines[i].op->seal)
                        hooks.seal = sl_commit_seal;
        tc.group_id = conf->app_id;
        tc.instance_id = conf->instance_id;
        tc.client_id = rt->client_id;
        tc.transaction_timeout_ms = conf->transaction_timeout_ms;
        tc.recovery_timeout_ms = conf->recovery_timeout_ms;
        tc.producers = (int)conf->transaction_producers;
        tc.session_timeout_ms = 45000; /* librdkafka's default */
        if ((v = sl_kafka_user_value(conf, "session.timeout.ms")))
                tc.session_timeout_ms = atoll(v);
        rt->txn = sl_txn_new(rt->loop, &tc, &hooks, rt->kq, rt->metrics, errstr,
                             errstr_size);
        return rt->txn ? 0 : -1;
}

static int app_init(sl_app_t *app, char *errstr, size_t errstr_size) {
        sl_runtime_t *rt = &app->rt;
        const sl_conf_t *conf = rt->conf;

        if (conf->metrics_listen && *conf->metrics_listen) {
                sl_http_limits_t limits = {
                    conf->metrics_max_connections,
                    conf->metrics_max_connections_client,
                    conf->metrics_request_timeout_ms,
                };
                app->http = sl_http_start(conf->metrics_listen, rt->metrics,
                                          &limits, errstr, errstr_size);
                if (!app->http)
                        return -1;
                sl_log(LOG_INFO, "HTTP", "metrics on %s (port %d)",
                       conf->metrics_listen, sl_http_port(app->http));
                /* Alive while starting; the watchdog judges the loop once
                 * it runs. */
                sl_http_set_alive(app->http, 1);
        }
        rt->health = sl_health_new(rt, app->http);
        sl_health_update_ready(rt);
        if (conf->api_listen && *conf->api_listen) {
                size_t n = strlen(rt->client_id);
                if (!(app->api = sl_api_start(conf, rt->loop, rt->metrics,
                                              sl_pipeline_describe, rt, errstr,
                                              errstr_size)))
                        return -1;
                /* Members find each other's API in the group's client ids
                 * (api.h): before any client is created. */
                snprintf(rt->client_id + n, sizeof(rt->client_id) - n, "@%s",
                         sl_api_advertised(app->api));
        }
        if (!sl_clients_new(rt, errstr, errstr_size))
                return -1;
        /* Before the pipelines: their set-up reads what topics take. */
        sl_targets_learn_limits(rt);
        if (sl_pipeline_create_all(rt, errstr, errstr_size) == -1 ||
            sl_clients_watch_reader(rt, errstr, errstr_size) == -1 ||
            app_txn(rt, errstr, errstr_size) == -1)
                return -1;
        sl_txn_start(rt->txn);
        /* Last: the loop counts as turning from here on. */
        app->watchdog =
            sl_watchdog_new(rt->loop, 100, conf->loop_stall_timeout_ms,
                            rt->metrics, errstr, errstr_size);
        if (!app->watchdog)
                return -1;
        if (app->http)
                sl_http_set_alive_fn(app->http, sl_watchdog_probe,
                                     app->watchdog);
        return 0;
}

static void app_destroy(sl_app_t *app) {
        sl_runtime_t *rt = &app->rt;
        /* The API first: its lookups reach into the tasks. */
        sl_api_stop(app->api);
        app->api = NULL;
        /* Tasks next: nothing may call back into them after. */
        sl_pipeline_drop_tasks(rt);
        sl_input_detach(rt);
        sl_member_lost(rt);
        sl_outbox_destroy(rt->outbox);
        rt->outbox = NULL;
        /* The clients go with the txn, the producers' topic handles
         * first; the rebalance callback ignores a consumer that is no
         * longer rt->consumer. */
        sl_targets_cool(rt);
        rt->consumer = rt->producer = NULL;
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                rt->producers[i] = NULL;
        rt->producer_cnt = 0;
        sl_txn_destroy(rt->txn);
        rt->txn = NULL;
        sl_targets_destroy(rt->targets);
        sl_authz_destroy(rt->authz);
        sl_pipeline_destroy_all(rt);
        sl_clients_destroy(rt->clients);
        if (app->http)
                sl_http_set_alive_fn(app->http, NULL, NULL);
        sl_watchdog_destroy(app->watchdog);
        sl_member_destroy(rt->member);
        sl_input_destroy(rt->input);
        sl_health_destroy(rt->health);
        sl_commit_destroy(rt->commit);
        rt->targets = NULL;
        rt->authz = NULL;
        rt->member = NULL;
        rt->input = NULL;
        rt->health = NULL;
        rt->commit = NULL;
        uv_close((uv_handle_t *)&app->tick_timer, NULL);
        uv_close((uv_handle_t *)&app->stop_timer, NULL);
        uv_close((uv_handle_t *)&app->sigterm, NULL);
        uv_close((uv_handle_t *)&app->sigint, NULL);
        uv_run(rt->loop, UV_RUN_DEFAULT);
        sl_http_stop(app->http);
        sl_metrics_destroy(rt->metrics);
        uv_loop_close(rt->loop);
        free(rt->loop);
}

/* cgroup v2's memory.max, or for tests the file SLUICE_TEST_CGROUP_MEMORY
 * names instead. */
static const char *app_cgroup_v2(void) {
        const char *p = getenv("SLUICE_TEST_CGROUP_MEMORY");
        return p && *p ? p : SL_MEMLIMIT_CGROUP_V2;
}

static int app_run(sl_conf_t *conf) {
        sl_app_t app_s = {0}, *app = &app_s;
        sl_runtime_t *rt = &app->rt;
        char errstr[512], host[64] = "host";
        int rc = SL_EXIT_FAIL;

        rt->conf = conf;
        rt->hooks = &app_hooks;
        rt->loop = sl_malloc(sizeof(uv_loop_t));
        uv_loop_init(rt->loop);
        /* Unique to this process: how a fenced instance tells its own
         * membership from another process's (txn.h). */
        gethostname(host, sizeof(host));
        host[20] = '\0';
        snprintf(rt->client_id, sizeof(rt->client_id), "sluice-%s-%d-%llx",
                 host, (int)getpid(),
                 (unsigned long long)(sl_mono_us() ^ (uint64_t)sl_now_ms()));
        rt->metrics = sl_metrics_new();
        /* Before the pipelines: their byte caps share memory_limit. */
        sl_gauge_set(sl_metrics_gauge(rt->metrics, "sluice_memory_limit_bytes",
                                      "The memory the pipelines' byte caps "
                                      "share (memory_limit; 0: none).",
                                      NULL),
                     (double)sl_memlimit_apply(conf, app_cgroup_v2(),
                                               SL_MEMLIMIT_CGROUP_V1));
        rt->outbox =
            sl_outbox_new(SL_APP_OUTBOX_MAX_BYTES, SL_APP_OUTBOX_MAX_RECORDS);
        rt->authz = sl_authz_new(rt);
        rt->targets = sl_targets_new(rt);
        rt->member = sl_member_new(rt);
        rt->commit = sl_commit_new(rt);
        rt->input = sl_input_new(rt);
        uv_timer_init(rt->loop, &app->tick_timer);
        uv_timer_init(rt->loop, &app->stop_timer);
        uv_signal_init(rt->loop, &app->sigterm);
        uv_signal_init(rt->loop, &app->sigint);
        app->tick_timer.data = app->stop_timer.data = app;
        app->sigterm.data = app->sigint.data = app;

        if (app_init(app, errstr, sizeof(errstr)) == -1) {
                sl_log(LOG_ERR, "INIT", "%s", errstr);
                goto out;
        }
        sl_commit_start(rt);
        uv_timer_start(&app->tick_timer, app_on_tick, 1000, 1000);
        uv_signal_start(&app->sigterm, app_on_signal, SIGTERM);
        uv_signal_start(&app->sigint, app_on_signal, SIGINT);
        sl_log(LOG_NOTICE, "INIT", "sluice %s running %d pipelines as %s",
               SL_VERSION, rt->pipeline_cnt, conf->app_id);

        rt->exit_code = SL_EXIT_OK;
        uv_run(rt->loop, UV_RUN_DEFAULT);
        rc = rt->exit_code;
        sl_log(LOG_NOTICE, "SHUTDOWN", "exiting with status %d", rc);
out:
        if (app->http)
                sl_http_set_alive(app->http, 0);
        app_destroy(app);
        return rc;
}

static void run_usage(FILE *out) {
        fprintf(out, "usage: sluice run -c FILE\n"
                     "\n"
                     "Runs the pipelines of the config file as one member of "
                     "the consumer group\n"
                     "[sluice] app_id.  SIGTERM or SIGINT commits and "
                     "leaves.\n");
}

int sl_app_cmd(int argc, char **argv) {
        static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        const char *path = NULL;
        sl_conf_t *conf;
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'h':
                        run_usage(stdout);
                        return SL_EXIT_OK;
                default:
                        run_usage(stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (!path || optind != argc) {
                run_usage(stderr);
                return SL_EXIT_USAGE;
        }
        if (sl_conf_load(path, 1, &conf, stderr) != 0)
                return SL_EXIT_FAIL;
        sl_log_set_level(conf->log_level);
        sl_log_set_format(conf->log_format);
        signal(SIGPIPE, SIG_IGN);
        c = app_run(conf);
        sl_conf_destroy(conf);
        return c;
}
