/*
 * app.c — `sluice run`: the process runtime.
 *
 * DESIGN
 *
 * One libuv loop thread does everything that touches operator state.  It is
 * woken by librdkafka (three queues, see app.h), by operator wake-ups (one
 * uv_timer per task), by the commit timers and by signals.
 *
 * Transactions.  A transaction opens on the first record produced (or the
 * first input offset to commit) and is committed, together with the input
 * offsets of every running task, every commit_interval — or promptly after
 * an operator produced due work (sl_task_commit_soon), so that timer
 * lateness is one commit rather than one interval.  The commit is a blocking
 * call on the loop thread; while it runs, due work piles up and is produced
 * in the next round, which batches naturally under load.
 *
 * When a commit fails with an abortable error, the transaction is aborted
 * and every task is rebuilt from its changelog and its input sought back to
 * the committed offset: memory was ahead of Kafka, Kafka is the truth.  A
 * fatal error (fenced by a newer instance) ends the process with exit 1;
 * the orchestrator restarts it.
 *
 * Rebalances (cooperative-sticky).  Assigned partitions are paused and a task
 * is created per partition in REBUILDING.  Revoked partitions are first
 * committed (what was done for them becomes durable), then dropped.  Lost
 * partitions cannot be committed: the open transaction is aborted and the
 * remaining tasks rebuilt.
 *
 * Shutdown (SIGTERM, SIGINT).  Stop taking input, commit, close the consumer
 * (which revokes through the same path), flush, exit 0.  An alarm bounds the
 * whole shutdown by shutdown_grace.
 */
#include "app.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "util.h"

/* Commit early when a transaction grows past this many records. */
#define SL_TXN_MAX_RECORDS 50000

/* ------------------------------------------------------------------ */
/* Topic metadata cache (operator targets).                            */

#define SL_TOPIC_TTL_POS_MS (60 * 1000)
#define SL_TOPIC_TTL_NEG_MS (5 * 1000)

typedef struct sl_topic_entry_s {
        char *name;
        int partitions; /* 0: does not exist */
        int64_t expires_ms;
        struct sl_topic_entry_s *next;
} sl_topic_entry_t;

struct sl_topic_cache_s {
        sl_topic_entry_t *head;
};

static int topic_cache_get(sl_app_t *app, const char *topic) {
        sl_topic_entry_t *e;
        int64_t now = sl_now_ms();
        int cnt;

        for (e = app->topics->head; e; e = e->next)
                if (!strcmp(e->name, topic))
                        break;
        if (e && e->expires_ms > now)
                return e->partitions;
        cnt = sl_kafka_partition_count(app->producer, topic, 5000);
        if (cnt < 0)
                return e ? e->partitions : -1;
        if (!e) {
                e = sl_calloc(1, sizeof(*e));
                e->name = sl_strdup(topic);
                e->next = app->topics->head;
                app->topics->head = e;
        }
        e->partitions = cnt;
        e->expires_ms =
            now + (cnt > 0 ? SL_TOPIC_TTL_POS_MS : SL_TOPIC_TTL_NEG_MS);
        return cnt;
}

static void topic_cache_destroy(sl_topic_cache_t *c) {
        sl_topic_entry_t *e, *next;
        if (!c)
                return;
        for (e = c->head; e; e = next) {
                next = e->next;
                free(e->name);
                free(e);
        }
        free(c);
}

int sl_task_topic_partitions(sl_task_t *t, const char *topic) {
        return topic_cache_get(t->app, topic);
}

int sl_app_is_internal_topic(const sl_app_t *app, const char *name) {
        for (int i = 0; i < app->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = app->pipelines[i].conf;
                if ((pc->changelog && !strcmp(name, pc->changelog)) ||
                    (pc->dlq && !strcmp(name, pc->dlq)) ||
                    (pc->overflow && !strcmp(name, pc->overflow)) ||
                    (pc->rates && !strcmp(name, pc->rates)))
                        return 1;
        }
        return 0;
}

const sl_conf_t *sl_app_conf(const sl_app_t *app) {
        return app->conf;
}

sl_metrics_t *sl_app_metrics(sl_app_t *app) {
        return app->metrics;
}

/* ------------------------------------------------------------------ */
/* Records refused at delivery (see app.h).                            */

#define SL_REFUSED_TTL_MS (10 * 60 * 1000)

static uint64_t refused_hash(const char *topic, const void *key, size_t keylen,
                             const void *value, size_t valuelen) {
        /* FNV-1a over topic, key and value, with separators: the record,
         * not just its key (one group's batches share a key). */
        uint64_t h = 1469598103934665603ULL;
        const unsigned char *p = (const unsigned char *)topic;
        for (; *p; p++)
                h = (h ^ *p) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
        p = key;
        for (size_t i = 0; i < keylen; i++)
                h = (h ^ p[i]) * 1099511628211ULL;
        h = (h ^ 0xfe) * 1099511628211ULL;
        p = value;
        for (size_t i = 0; i < valuelen; i++)
                h = (h ^ p[i]) * 1099511628211ULL;
        return h ? h : 1;
}

static sl_refused_t *refused_find(sl_app_t *app, uint64_t h) {
        int64_t now = sl_now_ms();
        for (int i = 0; i < SL_REFUSED_MAX && app->refused[i].hash; i++)
                if (app->refused[i].hash == h &&
                    app->refused[i].state != SL_REFUSED_NONE &&
                    app->refused[i].expires_ms > now)
                        return &app->refused[i];
        return NULL;
}

sl_refused_state_t sl_app_refused(sl_app_t *app, const char *topic,
                                  const void *key, size_t keylen,
                                  const void *value, size_t valuelen,
                                  rd_kafka_resp_err_t *errp) {
        sl_refused_t *r;
        if (!app->refused[0].hash)
                return SL_REFUSED_NONE; /* the common case */
        r = refused_find(app,
                         refused_hash(topic, key, keylen, value, valuelen));
        if (!r)
                return SL_REFUSED_NONE;
        *errp = r->err;
        return r->state;
}

void sl_app_refused_clear(sl_app_t *app, const char *topic, const void *key,
                          size_t keylen, const void *value, size_t valuelen) {
        sl_refused_t *r = refused_find(
            app, refused_hash(topic, key, keylen, value, valuelen));
        if (r)
                r->state = SL_REFUSED_NONE;
}

/* Errors that will repeat however often the same record is sent. */
static int refusal_is_permanent(rd_kafka_resp_err_t err) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
                return 1;
        default:
                return 0;
        }
}

/* A tracked record was delivered: tell its task, unless the task was
 * rebuilt since it produced the record (another epoch). */
static void app_delivered(sl_app_t *app, const rd_kafka_message_t *m,
                          uintptr_t flags) {
        int idx = (int)((flags >> 2) & 0xff);
        int32_t part = (int32_t)((flags >> 10) & 0x3fffff);
        uint32_t epoch = (uint32_t)(flags >> 32);
        sl_task_t *t;
        if (idx >= app->pipeline_cnt ||
            part >= app->pipelines[idx].partition_cnt)
                return;
        t = app->pipelines[idx].tasks[part];
        if (t && t->epoch == epoch && t->state == SL_TASK_RUNNING &&
            t->pl->op->delivered)
                t->pl->op->delivered(t, m);
}

/* Delivery reports: failures always; successes matter only for tracked
 * records (delivery.report.only.error is off only when an operator tracks
 * deliveries). */
static void app_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque) {
        sl_app_t *app = opaque;
        sl_refused_t *r;
        uint64_t h;
        uintptr_t flags = (uintptr_t)m->_private;
        int alone = (flags & SL_MSG_ISOLATED) != 0;
        (void)rk;
        if (!m->err) {
                if (flags & SL_MSG_TRACKED)
                        app_delivered(app, m, flags);
                return;
        }
        if (!refusal_is_permanent(m->err))
                return;
        sl_log(LOG_WARNING, "PRODUCE", "%s [%d]: record of %zu bytes %s: %s",
               rd_kafka_topic_name(m->rkt), (int)m->partition, m->len,
               alone ? "refused when sent alone (it will go to the DLQ)"
                     : "refused with its batch (it will be retried alone)",
               rd_kafka_err2str(m->err));
        h = refused_hash(rd_kafka_topic_name(m->rkt), m->key, m->key_len,
                         m->payload, m->len);
        if (!(r = refused_find(app, h))) {
                r = &app->refused[app->refused_next];
                app->refused_next = (app->refused_next + 1) % SL_REFUSED_MAX;
                r->hash = h;
                r->state = SL_REFUSED_SUSPECT;
        }
        if (alone)
                r->state = SL_REFUSED_GUILTY;
        r->err = m->err;
        r->expires_ms = sl_now_ms() + SL_REFUSED_TTL_MS;
        sl_app_txn_fail(app, rd_kafka_err2str(m->err));
}

/* ------------------------------------------------------------------ */
/* Transactions.                                                       */

int sl_app_txn_begin(sl_app_t *app) {
        rd_kafka_error_t *error;
        if (app->txn_open)
                return 0;
        error = rd_kafka_begin_transaction(app->producer);
        if (error) {
                sl_log(LOG_ERR, "TXN", "begin_transaction: %s",
                       rd_kafka_error_string(error));
                if (rd_kafka_error_is_fatal(error)) {
                        app->exit_code = SL_EXIT_FAIL;
                        app->stopping = 1;
                        uv_stop(app->loop);
                }
                rd_kafka_error_destroy(error);
                return -1;
        }
        app->txn_open = 1;
        app->txn_records = 0;
        return 0;
}

void sl_app_txn_fail(sl_app_t *app, const char *why) {
        if (!app->txn_failed)
                sl_log(LOG_WARNING, "TXN", "transaction will be aborted: %s",
                       why);
        app->txn_failed = 1;
        sl_app_commit_soon(app);
}

static void app_rebuild_all(sl_app_t *app) {
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p])
                                sl_task_restart(pl->tasks[p]);
        }
        sl_app_update_ready(app);
}

static void app_fatal(sl_app_t *app, const char *what,
                      rd_kafka_error_t *error) {
        sl_log(LOG_CRIT, "TXN", "%s: fatal: %s; exiting", what,
               rd_kafka_error_string(error));
        app->exit_code = SL_EXIT_FAIL;
        app->stopping = 1;
        uv_stop(app->loop);
}

/* Aborts the open transaction and rebuilds every task. */
static void app_abort(sl_app_t *app, const char *why) {
        rd_kafka_error_t *error;
        sl_log(LOG_WARNING, "TXN", "aborting transaction: %s", why);
        error = rd_kafka_abort_transaction(app->producer, 60 * 1000);
        if (error) {
                if (rd_kafka_error_is_fatal(error)) {
                        app_fatal(app, "abort_transaction", error);
                        rd_kafka_error_destroy(error);
                        return;
                }
                sl_log(LOG_ERR, "TXN", "abort_transaction: %s",
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        }
        app->txn_open = 0;
        app->txn_failed = 0;
        sl_counter_inc(app->m_aborts);
        app_rebuild_all(app);
}

/* Offsets of running tasks that moved since the last commit, or NULL. */
/* Offsets of running tasks: those that moved since the last commit, or,
 * with all set, every task's.  A transaction always sends offsets when it
 * can: send_offsets_to_transaction carries the consumer-group generation,
 * which is what fences a zombie member whose partitions moved on. */
static rd_kafka_topic_partition_list_t *app_offsets(sl_app_t *app, int all) {
        rd_kafka_topic_partition_list_t *offs = NULL;
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++) {
                        sl_task_t *t = pl->tasks[p];
                        if (!t || t->state != SL_TASK_RUNNING ||
                            t->next_offset < 0 ||
                            (!all && t->next_offset == t->committed_offset))
                                continue;
                        if (!offs)
                                offs = rd_kafka_topic_partition_list_new(8);
                        rd_kafka_topic_partition_list_add(offs, pl->conf->input,
                                                          p)
                            ->offset = t->next_offset;
                }
        }
        return offs;
}

/* Commits the open transaction with the input offsets.  Returns 0 when
 * committed (or nothing to do), -1 when it aborted (tasks rebuilding) or the
 * process must stop. */
static int app_commit(sl_app_t *app) {
        rd_kafka_topic_partition_list_t *offs;
        rd_kafka_error_t *error = NULL;
        int attempt;

        app->soon_armed = 0;
        uv_timer_stop(&app->soon_timer);
        if (app->txn_failed) {
                if (app->txn_open)
                        app_abort(app, "a record was refused");
                else
                        app->txn_failed = 0;
                return -1;
        }
        /* Operators with a precommit hook write their checkpoints now,
         * once every record of the transaction has been delivered (the
         * flush serves the delivery reports). */
        if (app->txn_open && app->has_tracking) {
                rd_kafka_flush(app->producer, 60 * 1000);
                if (app->txn_failed) {
                        app_abort(app, "a record was refused");
                        return -1;
                }
                for (int i = 0; i < app->pipeline_cnt; i++) {
                        sl_pipeline_t *pl = &app->pipelines[i];
                        if (!pl->op->precommit)
                                continue;
                        for (int p = 0; p < pl->partition_cnt; p++)
                                if (pl->tasks[p] &&
                                    pl->tasks[p]->state == SL_TASK_RUNNING)
                                        pl->op->precommit(pl->tasks[p]);
                }
        }
        offs = app_offsets(app, app->txn_open);
        if (!app->txn_open && !offs)
                return 0;
        if (!app->txn_open && sl_app_txn_begin(app) == -1) {
                if (offs)
                        rd_kafka_topic_partition_list_destroy(offs);
                return -1;
        }

        for (attempt = 0; attempt < 5; attempt++) {
                if (offs) {
                        rd_kafka_consumer_group_metadata_t *cgmd =
                            rd_kafka_consumer_group_metadata(app->consumer);
                        error = rd_kafka_send_offsets_to_transaction(
                            app->producer, offs, cgmd, 30 * 1000);
                        rd_kafka_consumer_group_metadata_destroy(cgmd);
                        if (error && rd_kafka_error_is_retriable(error)) {
                                rd_kafka_error_destroy(error);
                                error = NULL;
                                continue;
                        }
                        if (error)
                                break;
                }
                error = rd_kafka_commit_transaction(app->producer, 60 * 1000);
                if (error && rd_kafka_error_is_retriable(error)) {
                        rd_kafka_error_destroy(error);
                        error = NULL;
                        continue;
                }
                break;
        }

        if (!error && attempt == 5)
                error = rd_kafka_error_new(RD_KAFKA_RESP_ERR__TIMED_OUT,
                                           "commit retries exhausted");
        if (error) {
                if (rd_kafka_error_is_fatal(error)) {
                        app_fatal(app, "commit", error);
                } else {
                        char why[512];
                        snprintf(why, sizeof(why), "commit: %s",
                                 rd_kafka_error_string(error));
                        app_abort(app, why);
                }
                rd_kafka_error_destroy(error);
                if (offs)
                        rd_kafka_topic_partition_list_destroy(offs);
                return -1;
        }

        if (offs) {
                for (int i = 0; i < offs->cnt; i++) {
                        sl_task_t *t = NULL;
                        for (int j = 0; j < app->pipeline_cnt && !t; j++)
                                if (!strcmp(app->pipelines[j].conf->input,
                                            offs->elems[i].topic))
                                        t = app->pipelines[j].tasks
                                                [offs->elems[i].partition];
                        if (t)
                                t->committed_offset = offs->elems[i].offset;
                }
                rd_kafka_topic_partition_list_destroy(offs);
        }
        app->txn_open = 0;
        app->last_commit_us = sl_mono_us();
        sl_counter_inc(app->m_commits);
        return 0;
}

static void app_on_commit_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        if (!app->stopping)
                app_commit(app);
}

static void app_on_soon_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        if (!app->stopping)
                app_commit(app);
}

void sl_app_commit_soon(sl_app_t *app) {
        if (app->soon_armed || app->stopping)
                return;
        app->soon_armed = 1;
        uv_timer_start(&app->soon_timer, app_on_soon_timer, 0, 0);
}

void sl_task_commit_soon(sl_task_t *t) {
        sl_app_commit_soon(t->app);
}

/* ------------------------------------------------------------------ */
/* Readiness.                                                          */

void sl_app_update_ready(sl_app_t *app) {
        char why[128];
        int rebuilding = 0;
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                int run = 0, reb = 0;
                for (int p = 0; p < pl->partition_cnt; p++) {
                        if (!pl->tasks[p])
                                continue;
                        if (pl->tasks[p]->state == SL_TASK_RUNNING)
                                run++;
                        else
                                reb++;
                }
                sl_gauge_set(pl->metrics->partitions_running, run);
                sl_gauge_set(pl->metrics->partitions_rebuilding, reb);
                rebuilding += reb;
        }
        app->rebuilding_cnt = rebuilding;
        if (!app->http)
                return;
        if (!app->assigned_once)
                sl_http_set_ready(app->http, 0, "waiting for assignment");
        else if (rebuilding) {
                snprintf(why, sizeof(why), "%d partitions rebuilding",
                         rebuilding);
                sl_http_set_ready(app->http, 0, why);
        } else
                sl_http_set_ready(app->http, 1, "ready");
}

/* ------------------------------------------------------------------ */
/* Consumer: input records and rebalances.                             */

static sl_pipeline_t *app_pipeline_by_input(sl_app_t *app, const char *topic) {
        for (int i = 0; i < app->pipeline_cnt; i++)
                if (!strcmp(app->pipelines[i].conf->input, topic))
                        return &app->pipelines[i];
        return NULL;
}

static void app_assign(sl_app_t *app, rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_error_t *error;

        error = rd_kafka_incremental_assign(app->consumer, parts);
        if (error) {
                sl_log(LOG_ERR, "REBALANCE", "incremental_assign: %s",
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return;
        }
        /* Input waits until the partition's state is rebuilt. */
        rd_kafka_pause_partitions(app->consumer, parts);
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = app_pipeline_by_input(app, tp->topic);
                if (!pl || tp->partition >= pl->partition_cnt) {
                        sl_log(LOG_ERR, "REBALANCE",
                               "assigned %s [%d] that no pipeline can serve "
                               "(partition count changed?)",
                               tp->topic, tp->partition);
                        continue;
                }
                if (pl->tasks[tp->partition])
                        continue;
                pl->tasks[tp->partition] = sl_task_new(app, pl, tp->partition);
        }
}

static void app_drop(sl_app_t *app, rd_kafka_topic_partition_list_t *parts) {
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = app_pipeline_by_input(app, tp->topic);
                if (!pl || tp->partition >= pl->partition_cnt ||
                    !pl->tasks[tp->partition])
                        continue;
                sl_task_destroy(pl->tasks[tp->partition]);
                pl->tasks[tp->partition] = NULL;
        }
}

static void app_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *parts,
                             void *opaque) {
        sl_app_t *app = opaque;
        rd_kafka_error_t *error;
        (void)rk;

        sl_counter_inc(app->m_rebalances);
        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                sl_log(LOG_INFO, "REBALANCE", "assigned %d partitions",
                       parts->cnt);
                app->assigned_once = 1;
                app_assign(app, parts);
                break;
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                sl_log(LOG_INFO, "REBALANCE", "revoking %d partitions%s",
                       parts->cnt,
                       rd_kafka_assignment_lost(app->consumer) ? " (lost)"
                                                               : "");
                if (rd_kafka_assignment_lost(app->consumer)) {
                        /* Our offsets for them would be refused: abort so
                         * nothing written for them becomes visible. */
                        app_drop(app, parts);
                        if (app->txn_open)
                                app_abort(app, "partitions lost");
                } else {
                        /* What was done for them becomes durable first. */
                        app_commit(app);
                        app_drop(app, parts);
                }
                error = rd_kafka_incremental_unassign(app->consumer, parts);
                if (error) {
                        sl_log(LOG_ERR, "REBALANCE", "incremental_unassign: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
                break;
        default:
                sl_log(LOG_ERR, "REBALANCE", "rebalance error: %s",
                       rd_kafka_err2str(err));
                app_drop(app, parts);
                if (app->txn_open)
                        app_abort(app, "rebalance error");
                rd_kafka_incremental_unassign(app->consumer, parts);
                break;
        }
        sl_app_update_ready(app);
}

static int app_serve_consumer(void *opaque, int budget) {
        sl_app_t *app = opaque;
        int n;
        for (n = 0; n < budget && !app->stopping; n++) {
                rd_kafka_message_t *m =
                    rd_kafka_consumer_poll(app->consumer, 0);
                if (!m)
                        break;
                if (m->err) {
                        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                sl_log(LOG_WARNING, "CONSUMER", "%s",
                                       rd_kafka_message_errstr(m));
                } else {
                        sl_pipeline_t *pl = app_pipeline_by_input(
                            app, rd_kafka_topic_name(m->rkt));
                        if (pl && m->partition < pl->partition_cnt &&
                            pl->tasks[m->partition])
                                sl_task_on_input(pl->tasks[m->partition], m);
                }
                rd_kafka_message_destroy(m);
                if (app->txn_records >= SL_TXN_MAX_RECORDS)
                        sl_app_commit_soon(app);
        }
        return n;
}

/* A record of a pipeline's global table (e.g. throttle rates). */
static void app_on_table(sl_app_t *app, sl_pipeline_t *pl,
                         const rd_kafka_message_t *m) {
        int reached = 0;
        if (m->partition < 0 || m->partition >= pl->table_parts)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                reached = pl->table_end[m->partition] >= 0 &&
                          m->offset >= pl->table_end[m->partition];
        } else if (m->err) {
                sl_log(LOG_WARNING, "TABLE", "%s", rd_kafka_message_errstr(m));
                return;
        } else {
                pl->op->table(pl, m);
                reached = pl->table_end[m->partition] >= 0 &&
                          m->offset + 1 >= pl->table_end[m->partition];
        }
        if (reached) {
                pl->table_end[m->partition] = -1;
                for (int i = 0; i < pl->table_parts; i++)
                        if (pl->table_end[i] >= 0)
                                return;
                if (!pl->table_ready)
                        sl_log(LOG_INFO, "TABLE", "%s: %s read to its end",
                               pl->conf->name, pl->op->table_topic(pl));
                pl->table_ready = 1;
        }
        (void)app;
}

static int app_serve_reader(void *opaque, int budget) {
        sl_app_t *app = opaque;
        int n;
        for (n = 0; n < budget; n++) {
                rd_kafka_message_t *m =
                    rd_kafka_consume_queue(app->reader_q, 0);
                const char *topic;
                int served = 0;
                if (!m)
                        break;
                if (!m->rkt) {
                        if (m->err)
                                sl_log(LOG_WARNING, "READER", "%s",
                                       rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        continue;
                }
                topic = rd_kafka_topic_name(m->rkt);
                for (int i = 0; i < app->pipeline_cnt && !served; i++) {
                        sl_pipeline_t *pl = &app->pipelines[i];
                        sl_task_t *t;
                        if (pl->table_parts &&
                            !strcmp(pl->op->table_topic(pl), topic)) {
                                app_on_table(app, pl, m);
                                served = 1;
                        } else if (m->partition >= 0 &&
                                   m->partition < pl->partition_cnt &&
                                   (t = pl->tasks[m->partition]) &&
                                   t->reader_topic &&
                                   !strcmp(t->reader_topic, topic)) {
                                sl_task_on_reader(t, m);
                                served = 1;
                        }
                }
                if (!served && m->err &&
                    m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        sl_log(LOG_WARNING, "READER", "%s",
                               rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
        }
        return n;
}

/* Starts reading a pipeline's global table (all partitions, from the
 * beginning, for as long as the process runs). */
static int app_table_start(sl_app_t *app, sl_pipeline_t *pl, char *errstr,
                           size_t errstr_size) {
        const char *topic = pl->op->table_topic(pl);
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        int cnt = sl_kafka_partition_count(app->producer, topic, 10000);
        if (cnt <= 0) {
                snprintf(errstr, errstr_size,
                         "pipeline %s: topic %s %s (run `sluice topics apply`)",
                         pl->conf->name, topic,
                         cnt == 0 ? "does not exist" : "cannot be described");
                return -1;
        }
        pl->table_parts = cnt;
        pl->table_end = sl_calloc((size_t)cnt, sizeof(*pl->table_end));
        l = rd_kafka_topic_partition_list_new(cnt);
        pl->table_ready = 1;
        for (int p = 0; p < cnt; p++) {
                int64_t lo = 0, hi = 0;
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
                    app->reader, topic, p, &lo, &hi, 10000);
                if (err) {
                        snprintf(errstr, errstr_size, "%s [%d]: %s", topic, p,
                                 rd_kafka_err2str(err));
                        rd_kafka_topic_partition_list_destroy(l);
                        return -1;
                }
                pl->table_end[p] = hi > lo ? hi : -1;
                if (hi > lo)
                        pl->table_ready = 0;
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        }
        error = rd_kafka_incremental_assign(app->reader, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (error) {
                snprintf(errstr, errstr_size, "%s: assign: %s", topic,
                         rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return -1;
        }
        return 0;
}

static int app_serve_producer(void *opaque, int budget) {
        sl_app_t *app = opaque;
        int n = 0;
        while (n < budget) {
                int served = rd_kafka_poll(app->producer, 0);
                if (served <= 0)
                        break;
                n += served;
        }
        return n;
}

static void app_error_cb(rd_kafka_t *rk, int err, const char *reason,
                         void *opaque) {
        sl_app_t *app = opaque;
        int fatal = err == RD_KAFKA_RESP_ERR__FATAL;
        char buf[512];
        if (fatal) {
                rd_kafka_fatal_error(rk, buf, sizeof(buf));
                sl_log(LOG_CRIT, "KAFKA", "%s: fatal error: %s; exiting",
                       rd_kafka_name(rk), buf);
                app->exit_code = SL_EXIT_FAIL;
                app->stopping = 1;
                uv_stop(app->loop);
                return;
        }
        sl_log(LOG_WARNING, "KAFKA", "%s: %s: %s", rd_kafka_name(rk),
               rd_kafka_err2name(err), reason);
}

/* ------------------------------------------------------------------ */
/* Setup.                                                              */

static rd_kafka_conf_t *app_kconf(sl_app_t *app, char *errstr,
                                  size_t errstr_size) {
        rd_kafka_conf_t *kc = sl_conf_rdkafka(app->conf, errstr, errstr_size);
        if (!kc)
                return NULL;
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        rd_kafka_conf_set_error_cb(kc, app_error_cb);
        rd_kafka_conf_set_opaque(kc, app);
        return kc;
}

#define SET(kc, k, v)                                                          \
        do {                                                                   \
                if (sl_kafka_conf_set(kc, k, v, errstr, errstr_size) == -1) {  \
                        rd_kafka_conf_destroy(kc);                             \
                        return -1;                                             \
                }                                                              \
        } while (0)

static int user_set(const sl_conf_t *conf, const char *key) {
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, key))
                        return 1;
        return 0;
}

static int app_clients(sl_app_t *app, char *errstr, size_t errstr_size) {
        rd_kafka_conf_t *kc;
        char txnid[512], buf[64];
        rd_kafka_error_t *error;

        /* Producer: transactional.  A stable transactional.id (from the
         * static instance id) lets a restarted instance fence its
         * predecessor and abort its open transaction at once. */
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return -1;
        if (app->conf->instance_id && *app->conf->instance_id)
                snprintf(txnid, sizeof(txnid), "%s-%s", app->conf->app_id,
                         app->conf->instance_id);
        else {
                char host[256] = "host";
                gethostname(host, sizeof(host));
                snprintf(txnid, sizeof(txnid), "%s-%s-%d-%lld",
                         app->conf->app_id, host, (int)getpid(),
                         (long long)sl_now_ms());
        }
        SET(kc, "transactional.id", txnid);
        snprintf(buf, sizeof(buf), "%lld",
                 (long long)app->conf->transaction_timeout_ms);
        SET(kc, "transaction.timeout.ms", buf);
        SET(kc, "client.id", "sluice-producer");
        /* Defaults that suit sluice better than librdkafka's, unless the
         * [kafka] section says otherwise: short linger (lateness), a deep
         * queue (a million timers may fall due at once). */
        if (!user_set(app->conf, "linger.ms"))
                SET(kc, "linger.ms", "2");
        if (!user_set(app->conf, "queue.buffering.max.messages"))
                SET(kc, "queue.buffering.max.messages", "1000000");
        /* A transaction begun right after the previous commit often meets
         * CONCURRENT_TRANSACTIONS while the broker writes markers; the
         * default 100 ms retry backoff would land in timer lateness. */
        if (!user_set(app->conf, "retry.backoff.ms"))
                SET(kc, "retry.backoff.ms", "10");
        for (int i = 0; i < app->conf->pipeline_cnt; i++)
                if (app->conf->pipelines[i].type == SL_OP_THROTTLE)
                        app->has_tracking = 1;
        SET(kc, "delivery.report.only.error",
            app->has_tracking ? "false" : "true");
        rd_kafka_conf_set_dr_msg_cb(kc, app_dr_cb);
        app->producer =
            rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, errstr_size);
        if (!app->producer) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }

        /* Consumer: the group member. */
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return -1;
        SET(kc, "group.id", app->conf->app_id);
        if (app->conf->instance_id && *app->conf->instance_id)
                SET(kc, "group.instance.id", app->conf->instance_id);
        SET(kc, "partition.assignment.strategy", "cooperative-sticky");
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "enable.auto.offset.store", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "auto.offset.reset", "earliest");
        SET(kc, "client.id", "sluice-consumer");
        rd_kafka_conf_set_rebalance_cb(kc, app_rebalance_cb);
        app->consumer =
            rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size);
        if (!app->consumer) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        rd_kafka_poll_set_consumer(app->consumer);

        /* Reader: assign-only, for rebuilds. */
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return -1;
        snprintf(buf, sizeof(buf), "%s", "sluice-rebuild");
        SET(kc, "group.id", buf);
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "enable.auto.offset.store", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "enable.partition.eof", "true");
        SET(kc, "auto.offset.reset", "earliest");
        SET(kc, "client.id", "sluice-rebuild");
        /* Rebuild ends on partition EOF: do not let the broker hold an
         * empty fetch for long. */
        SET(kc, "fetch.wait.max.ms", "10");
        SET(kc, "fetch.max.bytes", "104857600");
        /* librdkafka 2.0 stops fetching a partition once queued.min.messages
         * are queued and looks again only a second later: let a rebuild
         * prefetch generously (it is transient, and bounded by kbytes). */
        SET(kc, "queued.min.messages", "1000000");
        SET(kc, "queued.max.messages.kbytes", "262144");
        SET(kc, "max.partition.fetch.bytes", "16777216");
        app->reader = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size);
        if (!app->reader) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }

        error = rd_kafka_init_transactions(app->producer, 60 * 1000);
        if (error) {
                snprintf(errstr, errstr_size, "init_transactions: %s",
                         rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return -1;
        }
        return 0;
}
#undef SET

static int app_pipelines(sl_app_t *app, char *errstr, size_t errstr_size) {
        app->pipeline_cnt = app->conf->pipeline_cnt;
        app->pipelines = sl_calloc(app->pipeline_cnt, sizeof(sl_pipeline_t));
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                const sl_pipeline_conf_t *pc = &app->conf->pipelines[i];
                sl_pipeline_metrics_t *pm;
                int cnt, ccnt;

                pl->conf = pc;
                pl->app = app;
                pl->index = i;
                switch (pc->type) {
                case SL_OP_DELAY:
                        pl->op = &sl_op_delay;
                        break;
                case SL_OP_DEBOUNCE:
                        pl->op = &sl_op_debounce;
                        break;
                case SL_OP_THROTTLE:
                        pl->op = &sl_op_throttle;
                        break;
                default:
                        snprintf(errstr, errstr_size,
                                 "pipeline %s: type %s is not available in "
                                 "this build",
                                 pc->name, sl_op_type_name(pc->type));
                        return -1;
                }
                cnt = sl_kafka_partition_count(app->producer, pc->input, 10000);
                ccnt = sl_kafka_partition_count(app->producer, pc->changelog,
                                                10000);
                if (cnt <= 0 || ccnt <= 0) {
                        snprintf(errstr, errstr_size,
                                 "pipeline %s: topic %s %s (run `sluice "
                                 "topics apply`)",
                                 pc->name, cnt <= 0 ? pc->input : pc->changelog,
                                 (cnt < 0 || ccnt < 0) ? "cannot be described"
                                                       : "does not exist");
                        return -1;
                }
                if (cnt != ccnt) {
                        snprintf(errstr, errstr_size,
                                 "pipeline %s: %s has %d partitions but %s has "
                                 "%d; they must match (`sluice topics check`)",
                                 pc->name, pc->input, cnt, pc->changelog, ccnt);
                        return -1;
                }
                pl->partition_cnt = cnt;
                pl->tasks = sl_calloc(cnt, sizeof(*pl->tasks));
                pm = pl->metrics = sl_calloc(1, sizeof(*pm));
                pm->records_in = sl_metrics_counter(
                    app->metrics, "sluice_records_in_total",
                    "Input records read.", "pipeline", pc->name, NULL);
                pm->rebuild_records = sl_metrics_counter(
                    app->metrics, "sluice_rebuild_records_total",
                    "Changelog records applied during rebuilds.", "pipeline",
                    pc->name, NULL);
                pm->rebuild_seconds = sl_metrics_gauge(
                    app->metrics, "sluice_rebuild_last_seconds",
                    "Duration of the last partition rebuild.", "pipeline",
                    pc->name, NULL);
                pm->partitions_running = sl_metrics_gauge(
                    app->metrics, "sluice_partitions",
                    "Assigned partitions by state.", "pipeline", pc->name,
                    "state", "running", NULL);
                pm->partitions_rebuilding = sl_metrics_gauge(
                    app->metrics, "sluice_partitions",
                    "Assigned partitions by state.", "pipeline", pc->name,
                    "state", "rebuilding", NULL);
                pm->consumer_lag = sl_metrics_gauge(
                    app->metrics, "sluice_consumer_lag",
                    "Input records not yet processed (assigned partitions).",
                    "pipeline", pc->name, NULL);
                if (pl->op->pipeline_init &&
                    pl->op->pipeline_init(pl, errstr, errstr_size) == -1)
                        return -1;
                if (pl->op->table_topic && pl->op->table_topic(pl) &&
                    app_table_start(app, pl, errstr, errstr_size) == -1)
                        return -1;
        }
        return 0;
}

/* The producer learns each topic it will write to now, not at the first
 * record (which would wait for the next metadata refresh): the handles are
 * kept for the process's lifetime so librdkafka keeps the topics known. */
static void app_warm_topics(sl_app_t *app) {
        for (int i = 0; i < app->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = app->pipelines[i].conf;
                const char *names[] = {pc->changelog, pc->dlq, pc->output,
                                       pc->overflow};
                for (size_t j = 0; j < SL_ARRAY_SIZE(names); j++) {
                        const struct rd_kafka_metadata *md;
                        rd_kafka_topic_t *rkt;
                        if (!names[j])
                                continue;
                        rkt = rd_kafka_topic_new(app->producer, names[j], NULL);
                        if (!rkt)
                                continue;
                        if (rd_kafka_metadata(app->producer, 0, rkt, &md,
                                              5000) ==
                            RD_KAFKA_RESP_ERR_NO_ERROR)
                                rd_kafka_metadata_destroy(md);
                        app->warm = sl_realloc(app->warm,
                                               sizeof(*app->warm) *
                                                   (size_t)(app->warm_cnt + 1));
                        app->warm[app->warm_cnt++] = rkt;
                }
        }
}

static int app_subscribe(sl_app_t *app, char *errstr, size_t errstr_size) {
        rd_kafka_topic_partition_list_t *topics =
            rd_kafka_topic_partition_list_new(app->pipeline_cnt);
        rd_kafka_resp_err_t err;
        for (int i = 0; i < app->pipeline_cnt; i++)
                rd_kafka_topic_partition_list_add(topics,
                                                  app->pipelines[i].conf->input,
                                                  RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(app->consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        if (err) {
                snprintf(errstr, errstr_size, "subscribe: %s",
                         rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

/* Lag from the consumer's cached watermarks; refreshed every second. */
static void app_on_stats_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                int64_t lag = 0;
                for (int p = 0; p < pl->partition_cnt; p++) {
                        sl_task_t *t = pl->tasks[p];
                        int64_t lo, hi;
                        if (!t || t->next_offset < 0)
                                continue;
                        if (rd_kafka_get_watermark_offsets(
                                app->consumer, pl->conf->input, p, &lo, &hi) ||
                            hi < 0)
                                continue;
                        if (hi > t->next_offset)
                                lag += hi - t->next_offset;
                }
                sl_gauge_set(pl->metrics->consumer_lag, (double)lag);
        }
}

/* ------------------------------------------------------------------ */
/* Shutdown.                                                           */

static void app_stop(sl_app_t *app, const char *why) {
        rd_kafka_resp_err_t err;
        if (app->stopping)
                return;
        sl_log(LOG_NOTICE, "SHUTDOWN", "%s: committing and leaving", why);
        /* Bounded: if anything below hangs, SIGALRM ends the process. */
        alarm((unsigned)((app->conf->shutdown_grace_ms + 999) / 1000));
        app_commit(app);
        app->stopping = 1;
        /* Closing the consumer revokes every partition through the
         * rebalance callback, which commits (nothing left) and drops the
         * tasks. */
        sl_kwatch_close(app->consumer_w);
        app->consumer_w = NULL;
        err = rd_kafka_consumer_close(app->consumer);
        if (err)
                sl_log(LOG_WARNING, "SHUTDOWN", "consumer close: %s",
                       rd_kafka_err2str(err));
        if (app->txn_open)
                app_commit(app);
        uv_stop(app->loop);
}

static void app_on_signal(uv_signal_t *sig, int signum) {
        sl_app_t *app = sig->data;
        app_stop(app, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void app_destroy(sl_app_t *app) {
        for (int i = 0; i < app->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p])
                                sl_task_destroy(pl->tasks[p]);
                if (pl->op && pl->op->pipeline_destroy)
                        pl->op->pipeline_destroy(pl);
                free(pl->tasks);
                free(pl->metrics);
                free(pl->table_end);
        }
        free(app->pipelines);
        sl_kwatch_close(app->consumer_w);
        sl_kwatch_close(app->producer_w);
        sl_kwatch_close(app->reader_w);
        uv_close((uv_handle_t *)&app->commit_timer, NULL);
        uv_close((uv_handle_t *)&app->soon_timer, NULL);
        uv_close((uv_handle_t *)&app->stats_timer, NULL);
        uv_close((uv_handle_t *)&app->sigterm, NULL);
        uv_close((uv_handle_t *)&app->sigint, NULL);
        uv_run(app->loop, UV_RUN_NOWAIT);
        if (app->consumer_q)
                rd_kafka_queue_destroy(app->consumer_q);
        if (app->producer_q)
                rd_kafka_queue_destroy(app->producer_q);
        if (app->reader_q)
                rd_kafka_queue_destroy(app->reader_q);
        if (app->consumer)
                rd_kafka_destroy(app->consumer);
        if (app->reader) {
                rd_kafka_consumer_close(app->reader);
                rd_kafka_destroy(app->reader);
        }
        for (int i = 0; i < app->warm_cnt; i++)
                rd_kafka_topic_destroy(app->warm[i]);
        free(app->warm);
        if (app->producer)
                rd_kafka_destroy(app->producer);
        sl_http_stop(app->http);
        sl_metrics_destroy(app->metrics);
        topic_cache_destroy(app->topics);
        uv_loop_close(app->loop);
        free(app->loop);
}

static int app_run(sl_conf_t *conf) {
        sl_app_t app_s = {0}, *app = &app_s;
        char errstr[512];
        int rc = SL_EXIT_FAIL;

        app->conf = conf;
        app->loop = sl_malloc(sizeof(uv_loop_t));
        uv_loop_init(app->loop);
        app->topics = sl_calloc(1, sizeof(*app->topics));
        app->metrics = sl_metrics_new();
        app->m_rebalances = sl_metrics_counter(
            app->metrics, "sluice_rebalances_total",
            "Rebalance events (assignments and revocations).", NULL);
        app->m_commits = sl_metrics_counter(
            app->metrics, "sluice_transactions_total",
            "Kafka transactions by outcome.", "result", "commit", NULL);
        app->m_aborts = sl_metrics_counter(
            app->metrics, "sluice_transactions_total",
            "Kafka transactions by outcome.", "result", "abort", NULL);
        uv_timer_init(app->loop, &app->commit_timer);
        uv_timer_init(app->loop, &app->soon_timer);
        uv_timer_init(app->loop, &app->stats_timer);
        uv_signal_init(app->loop, &app->sigterm);
        uv_signal_init(app->loop, &app->sigint);
        app->commit_timer.data = app->soon_timer.data = app;
        app->stats_timer.data = app->sigterm.data = app->sigint.data = app;

        if (conf->metrics_listen && *conf->metrics_listen) {
                app->http = sl_http_start(conf->metrics_listen, app->metrics,
                                          errstr, sizeof(errstr));
                if (!app->http) {
                        sl_log(LOG_ERR, "HTTP", "%s: %s", conf->metrics_listen,
                               errstr);
                        goto out;
                }
                sl_http_set_alive(app->http, 1);
                sl_log(LOG_INFO, "HTTP", "metrics on %s (port %d)",
                       conf->metrics_listen, sl_http_port(app->http));
        }
        sl_app_update_ready(app);

        if (app_clients(app, errstr, sizeof(errstr)) == -1 ||
            app_pipelines(app, errstr, sizeof(errstr)) == -1) {
                sl_log(LOG_ERR, "INIT", "%s", errstr);
                goto out;
        }
        app->consumer_q = rd_kafka_queue_get_consumer(app->consumer);
        app->producer_q = rd_kafka_queue_get_main(app->producer);
        app->reader_q = rd_kafka_queue_get_consumer(app->reader);
        rd_kafka_poll_set_consumer(app->reader);
        if (!(app->consumer_w =
                  sl_kwatch_new(app->loop, app->consumer_q, app_serve_consumer,
                                app, errstr, sizeof(errstr))) ||
            !(app->producer_w =
                  sl_kwatch_new(app->loop, app->producer_q, app_serve_producer,
                                app, errstr, sizeof(errstr))) ||
            !(app->reader_w =
                  sl_kwatch_new(app->loop, app->reader_q, app_serve_reader, app,
                                errstr, sizeof(errstr)))) {
                sl_log(LOG_ERR, "INIT", "%s", errstr);
                goto out;
        }
        app_warm_topics(app);
        if (app_subscribe(app, errstr, sizeof(errstr)) == -1) {
                sl_log(LOG_ERR, "INIT", "%s", errstr);
                goto out;
        }
        uv_timer_start(&app->commit_timer, app_on_commit_timer,
                       conf->commit_interval_ms, conf->commit_interval_ms);
        uv_timer_start(&app->stats_timer, app_on_stats_timer, 1000, 1000);
        uv_signal_start(&app->sigterm, app_on_signal, SIGTERM);
        uv_signal_start(&app->sigint, app_on_signal, SIGINT);
        sl_log(LOG_NOTICE, "INIT", "sluice %s running %d pipelines as %s",
               SL_VERSION, app->pipeline_cnt, conf->app_id);

        app->exit_code = SL_EXIT_OK;
        uv_run(app->loop, UV_RUN_DEFAULT);
        rc = app->exit_code;
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
        signal(SIGPIPE, SIG_IGN);
        c = app_run(conf);
        sl_conf_destroy(conf);
        return c;
}
