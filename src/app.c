/*
 * app.c — `sluice run`: the process runtime.
 *
 * DESIGN
 *
 * One libuv loop thread does everything that touches operator state.  It is
 * woken by librdkafka (the consumer's, the producer's and the reader's
 * queues, see app.h), by operator wake-ups (one uv_timer per task), by the
 * commit timers, by lookups answered off the loop (kquery.h), by the
 * transaction worker (txn.h) and by signals.  No librdkafka call made here
 * blocks: lookups go through sl_kquery, transactional calls through the
 * txn worker, seeks are asynchronous (timeout 0); the one bounded wait is
 * sl_txn_drain() when a suspect record is sent alone (runtime.c).  A watchdog
 * thread (watchdog.h) fails /healthz when the loop stops turning.
 *
 * Transactions (txn.h has the state machine).  A transaction opens on the
 * first record produced and is committed, with the input offsets of every
 * running task, every commit_interval — or promptly after an operator
 * produced due work (sl_task_commit_soon); just before a commit takes the
 * input offsets, operators with a seal hook write what they gathered for
 * the transaction (debounce: one chunk record per group it touched).
 * While a commit is on the txn worker, input, wake-ups and fetches go on:
 * what operators produce waits in the outbox (outbox.h) and opens the next
 * transaction as soon as the commit returns (app_committed), before any
 * other commit may start; a commit asked for meanwhile follows at once
 * (commit_wanted).  While the
 * outbox is full, the reports of a commit's tracked records are awaited
 * (FLUSHING: throttle's overflow appends, whose offsets its checkpoint
 * needs) or
 * an abort is in flight, operators may not produce: input records are held
 * (up to SL_HELD_MAX, then the consumer is simply not polled), wake-ups are
 * deferred, and both resume when the transaction settles.  An aborted
 * transaction rebuilds every task from its changelog; a fatal client error
 * drops every task and re-creates the clients, after which the group gives
 * the partitions back and they are rebuilt.
 *
 * Rebalances (cooperative-sticky).  Assigned partitions are paused and a task
 * is created per partition in REBUILDING.  Revoked partitions first have
 * their work committed — the revocation waits for that commit, which runs
 * on the worker while the loop keeps turning — then their tasks are dropped
 * and the partitions unassigned.  Lost partitions cannot be committed: they
 * are dropped at once and the open transaction is aborted.  Every 5 s the
 * group is described: input partitions that nobody owns while the group is
 * Stable, for 15 s, make one member leave and rejoin (groupcheck.h says
 * why that happens and who repairs it).
 *
 * Shutdown (SIGTERM, SIGINT).  Stop taking input, commit, close the consumer
 * (which revokes through the same path), exit 0.  The watchdog thread bounds
 * the whole shutdown by shutdown_grace (exit 1 past it), also as PID 1.
 */
#include "app.h"

#include <jansson.h>

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acls.h"
#include "cli.h"
#include "delay_input.h"
#include "hash.h"
#include "kwatch.h"
#include "log.h"
#include "parts.h"
#include "recsize.h"
#include "topiccache.h"
#include "topics.h"
#include "util.h"

/* Records taken from a queue per librdkafka call.  One call serves a batch
 * under one pass of the queue's bookkeeping (timeout set-up, poll-interval
 * stamp) where rd_kafka_consumer_poll() pays it per record; rebalance and
 * error events met on the way are served inside the call exactly as
 * consumer_poll serves them (rd_kafka_poll_cb with RD_KAFKA_Q_CB_RETURN:
 * the rebalance callback runs, consumer errors come back as messages). */
#define SL_CONSUME_BATCH 64

/* Commit early when a transaction grows past this many records, or when
 * this many input bytes were read since the last commit: what an operator
 * keeps for its transaction (debounce's journal of new items, a copy of
 * each) grows with the input read, and while catching up a transaction
 * may last backlog_commit_interval. */
#define SL_TXN_MAX_RECORDS     50000
#define SL_TXN_MAX_INPUT_BYTES (64 << 20)
/* Kafka probe: how often, and how long it may take.  One probe asks one
 * broker: librdkafka 2.0.2 picks the connection it used last, so a node
 * cut off without a reset is asked again and again while its connection
 * looks up, until a request on it times out (the lookup client's
 * socket.timeout.ms, SL_LOOKUP_SOCKET_TMO_MS) and the connection is torn
 * down.  So a failed probe is asked again at the next tick, and Kafka is
 * called unreachable only once probes have failed for SL_PROBE_DOWN_MS,
 * longer than that timeout and a probe's: one node of three cut off is
 * not "Kafka unreachable" (0704; with 8 s and 10 s it was). */
#define SL_PROBE_EVERY_MS       2000
#define SL_PROBE_TMO_MS         3000
#define SL_LOOKUP_SOCKET_TMO_MS 5000
#define SL_PROBE_DOWN_MS        10000
/* Lookups of the topics operators write to. */
#define SL_LOOKUP_TMO_MS 5000

/* The app behind the runtime it shares with its tasks (sl_app_t.rt). */
static sl_app_t *app_of(sl_runtime_t *rt) {
        return (sl_app_t *)((char *)rt - offsetof(sl_app_t, rt));
}

static const sl_app_t *app_of_const(const sl_runtime_t *rt) {
        return (const sl_app_t *)((const char *)rt - offsetof(sl_app_t, rt));
}

/* ------------------------------------------------------------------ */
/* Topic metadata cache (operator targets), filled off the loop: the    */
/* bounded sl_topiccache (topiccache.h), its lookups through sl_kquery. */

_Static_assert(SL_TOPIC_LOOKING == SL_TOPICCACHE_LOOKING &&
                   SL_TOPIC_FORBIDDEN == SL_TOPICCACHE_FORBIDDEN,
               "task.h and topiccache.h agree");

struct sl_topic_cache_s {
        sl_topiccache_t *tc;
        sl_gauge_t *m_entries;
        sl_counter_t *m_evictions;
        uint64_t evictions_counted;
};

static void app_resume_lookup_waits(sl_app_t *app);

static void topic_cache_metrics(sl_app_t *app) {
        sl_topic_cache_t *c = app->topics;
        sl_topiccache_stats_t st;
        sl_topiccache_stats(c->tc, &st);
        sl_gauge_set(c->m_entries, (double)st.entries);
        if (st.evictions != c->evictions_counted) {
                sl_counter_add(c->m_evictions,
                               st.evictions - c->evictions_counted);
                c->evictions_counted = st.evictions;
        }
}

static int app_first_refusal(sl_app_t *app, sl_acl_op_t op, const char *topic);

/* What a refusal of op on res:name means (sl_acls_refusal), against the
 * bindings of this configuration. */
static const char *app_refusal(sl_app_t *app, sl_acl_resource_t res,
                               const char *name, sl_acl_op_t op, char *buf,
                               size_t size) {
        if (!app->acls)
                app->acls = sl_acls_new(app->rt.conf);
        return sl_acls_refusal(app->acls, res, name, op, buf, size);
}

/* A delay target may not be written: said once a topic. */
static void app_target_refused(sl_app_t *app, const char *topic) {
        char buf[512];
        if (!app_first_refusal(app, SL_ACL_WRITE, topic))
                return;
        sl_log(LOG_WARNING, "AUTHZ",
               "not authorized: %s; timers for it go to the DLQ "
               "(target-refused)",
               app_refusal(app, SL_ACL_TOPIC, topic, SL_ACL_WRITE, buf,
                           sizeof(buf)));
}

/* 1 when topic is one of the pipelines' own (app_limits_learn): a
 * refusal to write it ends the process when it is written (txn.h's
 * not_authorized), where a target's sends the timer to the DLQ. */
static int app_own_topic(const sl_app_t *app, const char *topic) {
        for (int i = 0; i < app->limit_cnt; i++)
                if (!strcmp(app->limits[i].name, topic))
                        return 1;
        return 0;
}

/* 1 the first time op on topic is refused (of the last SL_APP_REFUSALS
 * refusals). */
static int app_first_refusal(sl_app_t *app, sl_acl_op_t op, const char *topic) {
        uint64_t h = (sl_hash(topic, strlen(topic)) + (uint64_t)op) | 1;
        for (int i = 0; i < SL_APP_REFUSALS; i++)
                if (app->refusals[i] == h)
                        return 0;
        app->refusals[app->refusal_next++ % SL_APP_REFUSALS] = h;
        return 1;
}

/* The largest record a topic accepts, learned after the topic was found:
 * kept in its cache entry, and the size check's floor follows it down. */
static void topic_on_max_bytes(void *opaque, rd_kafka_resp_err_t err,
                               const char *topic, int64_t max_bytes, int dflt) {
        sl_topic_cache_t *c = opaque;
        sl_app_t *app = sl_topiccache_opaque(c->tc);
        (void)dflt;
        if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
            app_first_refusal(app, SL_ACL_DESCRIBE_CONFIGS, topic)) {
                /* Without DescribeConfigs on the topic: the broker's limit
                 * is assumed (README, Security); said once a topic. */
                char buf[512];
                sl_log(LOG_WARNING, "AUTHZ",
                       "not authorized: %s; assuming the broker's "
                       "message.max.bytes for it",
                       app_refusal(app, SL_ACL_TOPIC, topic,
                                   SL_ACL_DESCRIBE_CONFIGS, buf, sizeof(buf)));
                return;
        }
        if (err) {
                if (err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        sl_kafka_log_error("describe configs", err, topic);
                return;
        }
        sl_topiccache_set_max_bytes(c->tc, topic, max_bytes);
        if (max_bytes < app->rt.max_bytes_floor)
                app->rt.max_bytes_floor = max_bytes;
}

static void topic_on_lookup(void *opaque, rd_kafka_resp_err_t err,
                            const char *topic, int cnt) {
        sl_topiccache_entry_t *e = opaque;
        sl_topiccache_t *tc = sl_topiccache_of(e);
        sl_app_t *app = sl_topiccache_opaque(tc);
        if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                /* No Describe means no Write: refused up front rather
                 * than by the broker at delivery (which aborts). */
                if (!app_own_topic(app, topic))
                        app_target_refused(app, topic);
                sl_topiccache_answer(tc, e, 1, SL_TOPICCACHE_FORBIDDEN,
                                     sl_now_ms());
        } else /* err: Kafka did not answer; keep what we knew, retry soon */
                sl_topiccache_answer(tc, e, !err, cnt, sl_now_ms());
        /* Tell the producer now: a topic it first meets in producev()
         * waits for its once-a-second scan of unknown topics (librdkafka
         * 2.0) before the record can leave, while rd_kafka_topic_new()
         * asks for the topic's leaders at once (non-blocking). */
        for (int i = 0; !err && cnt > 0 && i < app->producer_cnt; i++) {
                rd_kafka_topic_t *rkt =
                    rd_kafka_topic_new(app->producers[i], topic, NULL);
                if (rkt)
                        rd_kafka_topic_destroy(rkt);
        }
        if (!err && cnt > 0)
                sl_kquery_max_bytes(app->rt.kq, topic, SL_LOOKUP_TMO_MS,
                                    topic_on_max_bytes, app->topics);
        app_resume_lookup_waits(app);
}

static int topic_cache_get(sl_app_t *app, const char *topic) {
        sl_topiccache_entry_t *look;
        int r = sl_topiccache_get(app->topics->tc, topic, sl_app_now_ms(app),
                                  &look);
        if (look) {
                if (sl_kquery_partitions(app->rt.kq, sl_topiccache_name(look),
                                         SL_LOOKUP_TMO_MS, topic_on_lookup,
                                         look) != 0)
                        sl_topiccache_answer(app->topics->tc, look, 0, 0,
                                             sl_now_ms());
                topic_cache_metrics(app);
        }
        return r;
}

static void topic_cache_new(sl_app_t *app) {
        sl_topic_cache_t *c = sl_calloc(1, sizeof(*c));
        c->tc = sl_topiccache_new(SL_TOPICCACHE_CAPACITY, SL_TOPICCACHE_LOOKUPS,
                                  app);
        c->m_entries = sl_metrics_gauge(
            app->rt.metrics, "sluice_topic_cache_entries",
            "Topics in the target metadata cache (at most 1024).", NULL);
        c->m_evictions = sl_metrics_counter(
            app->rt.metrics, "sluice_topic_cache_evictions_total",
            "Topics evicted from the full target metadata cache.", NULL);
        app->topics = c;
}

static void topic_cancel_cb(sl_topiccache_entry_t *e, void *opaque) {
        sl_app_t *app = opaque;
        sl_kquery_cancel(app->rt.kq, e);
}

static void topic_cache_destroy(sl_app_t *app) {
        if (!app->topics)
                return;
        sl_topiccache_foreach_looking(app->topics->tc, topic_cancel_cb, app);
        sl_kquery_cancel(app->rt.kq, app->topics);
        sl_topiccache_destroy(app->topics->tc);
        free(app->topics);
        app->topics = NULL;
}

int sl_task_topic_partitions(sl_task_t *t, const char *topic) {
        return topic_cache_get(t->app, topic);
}

int sl_app_is_internal_topic(const sl_app_t *app, const char *name) {
        if (sl_topic_is_kafka_internal(name))
                return 1;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = app->rt.pipelines[i].conf;
                if ((pc->changelog && !strcmp(name, pc->changelog)) ||
                    (pc->dlq && !strcmp(name, pc->dlq)) ||
                    (pc->overflow && !strcmp(name, pc->overflow)) ||
                    (pc->rates && !strcmp(name, pc->rates)))
                        return 1;
        }
        return 0;
}

const sl_conf_t *sl_app_conf(const sl_app_t *app) {
        return app->rt.conf;
}

sl_metrics_t *sl_app_metrics(sl_app_t *app) {
        return app->rt.metrics;
}

/* ------------------------------------------------------------------ */
/* Authorization.                                                       */

static void app_exit_hook(void *opaque, int code);
static void app_txn_id(const sl_app_t *app, int idx, char *buf, size_t size);

/* A refusal by Kafka's authorizer ends the process with status 1 and one
 * line naming the binding that is missing (acls.h): retrying cannot help
 * until an operator grants it, and a loop of aborts or fetch errors would
 * bury the cause among its retries (README, Security).  name NULL: Kafka
 * did not say which (what stands in `what` then). */
static void app_refused(sl_app_t *app, sl_acl_resource_t res, const char *name,
                        sl_acl_op_t op, const char *what) {
        char buf[512];
        if (app->phase == SL_RUN_STOPPED)
                return;
        if (name)
                app_refusal(app, res, name, op, buf, sizeof(buf));
        else
                snprintf(buf, sizeof(buf), "%s on a %s of %s",
                         op == SL_ACL_ANY ? "an operation" : sl_acl_op_name(op),
                         sl_acl_resource_name(res), what);
        sl_log(LOG_CRIT, "AUTHZ",
               "not authorized: %s; exiting (%s; `sluice acls -c %s` prints "
               "every binding sluice needs)",
               buf, what, app->rt.conf->path ? app->rt.conf->path : "FILE");
        app_exit_hook(app, SL_EXIT_FAIL);
}

static int app_err_is_refusal(rd_kafka_resp_err_t err) {
        return err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
               err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED;
}

/* The first input named in text, or NULL. */
static const char *app_input_in(const sl_app_t *app, const char *text) {
        for (int i = 0; text && i < app->rt.pipeline_cnt; i++)
                if (strstr(text, app->rt.pipelines[i].conf->input))
                        return app->rt.pipelines[i].conf->input;
        return NULL;
}

/* A fetch or group error of a consumer refused by the authorizer: 1 when
 * it was one (and the process ends).  reader: the rebuild reader (its
 * group id only looked up), else the group consumer; topic NULL when the
 * error came without a partition. */
static int app_fetch_refused(sl_app_t *app, int reader, rd_kafka_resp_err_t err,
                             const char *topic, const char *errstr) {
        if (!app_err_is_refusal(err))
                return 0;
        if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
                if (reader)
                        app_refused(app, SL_ACL_GROUP, SL_ACLS_REBUILD_GROUP,
                                    SL_ACL_DESCRIBE, errstr);
                else
                        app_refused(app, SL_ACL_GROUP, app->rt.conf->app_id,
                                    SL_ACL_READ, errstr);
                return 1;
        }
        if (!topic && !reader)
                topic = app_input_in(app, errstr);
        app_refused(app, SL_ACL_TOPIC, topic, SL_ACL_READ, errstr);
        return 1;
}

/* The transaction's clients were refused (txn.h): Kafka names no
 * resource but for a topic, which librdkafka logs (kafka.h) when it is
 * AddPartitionsToTxn that refused.  A delay target's refusal (Describe
 * granted, not Write) is the timer's: its topic is marked forbidden, the
 * transaction aborted, and the timer goes to the DLQ when redone. */
static int app_txn_refused(void *opaque, rd_kafka_resp_err_t code,
                           const char *topic, const char *why) {
        sl_app_t *app = opaque;
        char name[512];
        switch (code) {
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
                /* TxnOffsetCommit names the input partitions it refused;
                 * committing an input's offsets takes its Read. */
                if (!topic && strstr(why, "commit offsets") &&
                    app_input_in(app, why)) {
                        app_refused(app, SL_ACL_TOPIC, app_input_in(app, why),
                                    SL_ACL_READ, why);
                        break;
                }
                if (!topic) {
                        sl_kafka_denied_topic(name, sizeof(name));
                        topic = *name ? name : NULL;
                }
                if (topic && !app_own_topic(app, topic) && app->topics &&
                    sl_topiccache_forbid(app->topics->tc, topic, sl_now_ms()) ==
                        0) {
                        app_target_refused(app, topic);
                        return 0;
                }
                app_refused(app, SL_ACL_TOPIC, topic, SL_ACL_WRITE, why);
                break;
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
                app_refused(app, SL_ACL_GROUP, app->rt.conf->app_id,
                            SL_ACL_READ, why);
                break;
        default: /* a transactional id's, or the cluster's */
                app_txn_id(app, 0, name, sizeof(name));
                app_refused(app, SL_ACL_TRANSACTIONAL_ID, name, SL_ACL_ANY,
                            why);
                break;
        }
        return 1;
}

/* ------------------------------------------------------------------ */
/* Delivery reports.                                                    */

/* Errors that will repeat however often the same record is sent.  A
 * timeout is not one: the broker may just have been away. */
static int refusal_is_permanent(rd_kafka_resp_err_t err) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
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
        if (idx >= app->rt.pipeline_cnt ||
            part >= app->rt.pipelines[idx].partition_cnt)
                return;
        t = app->rt.pipelines[idx].tasks[part];
        if (t && t->epoch == epoch && t->state == SL_TASK_RUNNING &&
            t->pl->op->delivered)
                t->pl->op->delivered(t, m);
}

/* Delivery reports: failures always; successes matter only for tracked
 * records (delivery.report.only.error is off only when an operator tracks
 * deliveries).  Any failure dooms the transaction (librdkafka would fail
 * its commit anyway); a permanent one is remembered so the record is sent
 * alone, then refused up front (refused.h). */
static void app_on_delivery(void *opaque, const rd_kafka_message_t *m) {
        sl_app_t *app = opaque;
        uintptr_t flags = (uintptr_t)m->_private;
        int alone = (flags & SL_MSG_ISOLATED) != 0;
        const char *topic = rd_kafka_topic_name(m->rkt);
        uint64_t id;
        char why[256];

        if ((flags & SL_MSG_TRACKED) && app->rt.tracked_inflight > 0)
                app->rt.tracked_inflight--;
        if (!m->err) {
                if (flags & SL_MSG_TRACKED)
                        app_delivered(app, m, flags);
                return;
        }
        if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
            m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
                return; /* purged by an abort: its consequence, not a cause */
        snprintf(why, sizeof(why), "delivery to %s [%d] failed: %s", topic,
                 (int)m->partition, rd_kafka_err2str(m->err));
        if (m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                /* The topic's, not the record's (txn.h, not_authorized). */
                sl_txn_refused(app->rt.txn, m->err, topic, why);
                return;
        }
        if (refusal_is_permanent(m->err)) {
                id = sl_refused_id(
                    topic, m->key, m->key_len,
                    (flags & SL_MSG_TRACKED) ? 0 : (uint64_t)(flags >> 2),
                    m->payload, m->len);
                sl_log(LOG_WARNING, "PRODUCE",
                       "%s [%d]: record of %zu bytes %s: %s", topic,
                       (int)m->partition, m->len,
                       alone ? "refused when sent alone (it will go to the "
                               "DLQ)"
                             : "refused with its batch (it will be retried "
                               "alone)",
                       rd_kafka_err2str(m->err));
                sl_refused_note(&app->rt.refused, id, (int)m->err, alone,
                                sl_now_ms());
        }
        sl_txn_doom(app->rt.txn, why);
}

/* ------------------------------------------------------------------ */
/* Transactions: the hooks of the state machine (txn.h).               */

static void app_drop_tasks(sl_app_t *app,
                           const rd_kafka_topic_partition_list_t *parts);
static void app_held_clear(sl_app_t *app);
static void app_held_drain(sl_app_t *app);
static void app_stop_step(sl_app_t *app);

static int app_may_produce(const sl_app_t *app) {
        if (app->phase != SL_RUN_RUNNING || !app->rt.txn)
                return 0;
        if (sl_txn_accepting(app->rt.txn))
                return 1;
        /* A commit is on the worker: work goes on, and what it produces
         * waits in the outbox for the next transaction. */
        return sl_txn_deferring(app->rt.txn) && sl_outbox_room(app->rt.outbox);
}

static void app_for_each_task(sl_app_t *app, void (*fn)(sl_task_t *t)) {
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p])
                                fn(pl->tasks[p]);
        }
}

static sl_pipeline_t *app_pipeline_by_input(sl_app_t *app, const char *topic) {
        for (int i = 0; i < app->rt.pipeline_cnt; i++)
                if (!strcmp(app->rt.pipelines[i].conf->input, topic))
                        return &app->rt.pipelines[i];
        return NULL;
}

static sl_task_t *app_task_of(sl_app_t *app, const char *topic, int32_t p) {
        sl_pipeline_t *pl = app_pipeline_by_input(app, topic);
        return pl && p >= 0 && p < pl->partition_cnt ? pl->tasks[p] : NULL;
}

/* Offsets of running tasks: those that moved since the last commit, or,
 * with all set, every task's.  A transaction always sends offsets when it
 * can: send_offsets_to_transaction carries the consumer-group generation,
 * which is what fences a zombie member whose partitions moved on. */
static rd_kafka_topic_partition_list_t *app_offsets(void *opaque, int all) {
        sl_app_t *app = opaque;
        rd_kafka_topic_partition_list_t *offs = NULL;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
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

/* A precommit needs the reports of the tracked records alone. */
static int app_reports_pending(void *opaque) {
        const sl_app_t *app = opaque;
        return app->rt.tracked_inflight > 0;
}

/* Operators with a precommit hook write their checkpoints, once every
 * tracked record of the transaction was delivered. */
static void app_precommit(void *opaque) {
        sl_app_t *app = opaque;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                if (!pl->op->precommit)
                        continue;
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p] &&
                            pl->tasks[p]->state == SL_TASK_RUNNING)
                                pl->op->precommit(pl->tasks[p]);
        }
}

/* Operators with a seal hook write what they gathered for the
 * transaction, just before its offsets are taken. */
static void app_seal(void *opaque) {
        sl_app_t *app = opaque;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                if (!pl->op->seal)
                        continue;
                for (int p = 0; p < pl->partition_cnt; p++)
                        if (pl->tasks[p] &&
                            pl->tasks[p]->state == SL_TASK_RUNNING)
                                pl->op->seal(pl->tasks[p]);
        }
}

/* The revoked partitions' work is committed (or was aborted, and the next
 * owner redoes it): drop them and let the group move on. */
static void app_revoke_finish(sl_app_t *app) {
        rd_kafka_topic_partition_list_t *parts = app->rt.revoking;
        rd_kafka_error_t *error;
        if (!parts)
                return;
        app->rt.revoking = NULL;
        app->rt.revoke_commit_started = 0;
        app_drop_tasks(app, parts);
        if (app->rt.consumer) {
                error = rd_kafka_incremental_unassign(app->rt.consumer, parts);
                if (error) {
                        sl_log(LOG_ERR, "REBALANCE", "incremental_unassign: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
        }
        sl_log(LOG_INFO, "REBALANCE", "revoked %d partitions", parts->cnt);
        rd_kafka_topic_partition_list_destroy(parts);
        sl_app_update_ready(app);
}

/* Commits the revoked partitions' work, now or once the transaction is
 * free. */
static void app_revoke_try(sl_app_t *app) {
        int r;
        if (!app->rt.revoking || app->rt.revoke_commit_started)
                return;
        r = sl_txn_commit(app->rt.txn);
        if (r == 1)
                app_revoke_finish(app);
        else if (r == 0)
                app->rt.revoke_commit_started = 1;
        /* -1: busy; tried again when it settles. */
}

static void app_committed(void *opaque,
                          const rd_kafka_topic_partition_list_t *offs) {
        sl_app_t *app = opaque;
        for (int i = 0; offs && i < offs->cnt; i++) {
                sl_task_t *t = app_task_of(app, offs->elems[i].topic,
                                           offs->elems[i].partition);
                if (t)
                        t->committed_offset = offs->elems[i].offset;
        }
        app->last_commit_us = sl_mono_us();
        app->read_bytes = 0;
        /* Revoked partitions whose work this commit carried go first, so
         * nothing they decided since is sent: their next owner does it. */
        if (app->rt.revoking && app->rt.revoke_commit_started)
                app_revoke_finish(app);
        /* What was decided during the commit opens the next transaction,
         * before any other commit can start. */
        sl_counter_add(app->m_deferred,
                       (uint64_t)sl_outbox_count(app->rt.outbox));
        sl_runtime_outbox_replay(&app->rt);
        if (app->commit_wanted) {
                app->commit_wanted = 0;
                sl_app_commit_soon(app);
        }
        app_revoke_try(app);
        if (app->phase != SL_RUN_RUNNING)
                app_stop_step(app);
}

static void task_restart_cb(sl_task_t *t) {
        sl_task_restart(t);
}

static void app_aborted(void *opaque) {
        sl_app_t *app = opaque;
        /* Revoked partitions go as they are: the next owner rebuilds them
         * from what was committed. */
        app_revoke_finish(app);
        app_held_clear(app);
        sl_outbox_clear(app->rt.outbox);
        app->commit_wanted = 0;
        app->read_bytes = 0; /* the input is read again from the commit */
        app_for_each_task(app, task_restart_cb);
        sl_app_update_ready(app);
        if (app->phase != SL_RUN_RUNNING)
                app_stop_step(app);
}

static void task_lookup_resume_cb(sl_task_t *t) {
        if (t->lookup_wait)
                sl_task_lookup_done(t);
}

/* A topic lookup answered: inputs that waited for one go on. */
static void app_resume_lookup_waits(sl_app_t *app) {
        app_for_each_task(app, task_lookup_resume_cb);
}

static void task_resume_cb(sl_task_t *t) {
        if (t->wake_deferred) {
                t->wake_deferred = 0;
                sl_task_wake_at(t, sl_now_ms());
        }
}

static void app_resumed(void *opaque) {
        sl_app_t *app = opaque;
        app_revoke_try(app);
        if (app->phase != SL_RUN_RUNNING) {
                app_stop_step(app);
                return;
        }
        if (!app_may_produce(app))
                return;
        app_for_each_task(app, task_resume_cb);
        app_held_drain(app);
        sl_kwatch_kick(app->rt.consumer_w);
        sl_kwatch_kick(app->rt.reader_w);
        sl_app_update_ready(app);
}

static void app_exit_hook(void *opaque, int code) {
        sl_app_t *app = opaque;
        app->exit_code = code;
        app->phase = SL_RUN_STOPPED;
        uv_stop(app->rt.loop);
}

static void app_on_commit_timer(uv_timer_t *timer);

void sl_app_commit_soon(sl_app_t *app) {
        if (app->soon_armed || app->phase != SL_RUN_RUNNING)
                return;
        app->soon_armed = 1;
        uv_timer_start(&app->soon_timer, app_on_commit_timer, 0, 0);
}

static int app_catching_up(sl_app_t *app);

static void app_on_commit_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        if (timer == &app->soon_timer)
                app->soon_armed = 0;
        else if (app_catching_up(app))
                return; /* the regular commit waits */
        if (app->phase == SL_RUN_RUNNING && app->rt.txn &&
            sl_txn_commit(app->rt.txn) == -1)
                app->commit_wanted = 1; /* right after the one in flight */
}

void sl_task_commit_soon(sl_task_t *t) {
        sl_app_commit_soon(t->app);
}

/* Commit linger.  Deadlines come in clusters: the groups of one burst of
 * input fall due within a few ms of each other, on every partition.  A
 * commit started at the first of them takes that one alone, and the rest
 * wait for it to end before their own begins: two commits, and the
 * coordinator's markers twice.  So a linger waits, from the first batch
 * flushed while no commit is in flight, for the tasks' next deadlines
 * (their wake-ups) that fall within SL_COMMIT_LINGER_MS of it (and those
 * already passed whose flush has not run yet, one window more); then one
 * commit takes them all.  A deadline further away, or none, commits at
 * once.  During a commit what is flushed is deferred to the next
 * transaction anyway, which opens as the commit returns. */
#define SL_COMMIT_LINGER_MS 10

/* The earliest wake-up armed by a task whose wake-ups are deadlines
 * (sl_op_t wake_is_deadline), 0: none. */
static int64_t app_next_due(sl_app_t *app) {
        int64_t next = 0;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                if (!pl->op->wake_is_deadline)
                        continue;
                for (int p = 0; p < pl->partition_cnt; p++) {
                        sl_task_t *t = pl->tasks[p];
                        if (t && t->state == SL_TASK_RUNNING &&
                            t->wake_at > 0 && (!next || t->wake_at < next))
                                next = t->wake_at;
                }
        }
        return next;
}

static void app_on_linger(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        int64_t now = sl_now_ms(), next,
                end = app->linger_since + app->linger_ms;
        if (!app->linger_since)
                return;
        next = app_next_due(app);
        /* A deadline inside the window; or one already passed whose flush
         * has not run yet, behind the other tasks' flushes in this turn of
         * the loop (at most one window more). */
        if (next && app->rt.txn && !sl_txn_deferring(app->rt.txn) &&
            ((next <= end && now < end) ||
             (next <= now && now < end + app->linger_ms))) {
                /* Timers of the same due time run in the order they were
                 * started: the task's wake-up first. */
                uv_timer_start(&app->linger_timer, app_on_linger,
                               next > now ? (uint64_t)(next - now) : 1, 0);
                return;
        }
        app->linger_since = 0;
        sl_app_commit_soon(app);
}

void sl_task_commit_linger(sl_task_t *t) {
        sl_app_t *app = t->app;
        if (app->linger_since)
                return; /* its timer is armed */
        app->linger_since = sl_now_ms();
        /* After the task has armed its next deadline. */
        uv_timer_start(&app->linger_timer, app_on_linger, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Readiness and the Kafka probe.                                       */

int sl_app_caps_reason(sl_app_t *app, char *buf, size_t size) {
        size_t len = 0;
        int n = 0;
        if (size)
                buf[0] = '\0';
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                for (int j = 0; j < pl->cap_cnt; j++) {
                        const sl_pcap_t *c = pl->caps[j];
                        sl_gauge_set(c->m_used, (double)c->cap.used);
                        if (!c->cap.full)
                                continue;
                        if (len < size)
                                len += (size_t)snprintf(
                                    buf + len, size - len,
                                    "%spipeline %s: input paused, %" PRId64
                                    " %s at cap %s = %" PRId64,
                                    n ? "; " : "", pl->conf->name, c->cap.used,
                                    c->what, c->key, c->cap.limit);
                        n++;
                }
        }
        return n;
}

/* /readyz and the sluice_ready gauge say the same. */
static void app_set_ready(sl_app_t *app, int ready, const char *why) {
        sl_gauge_set(app->m_ready, ready);
        if (app->http)
                sl_http_set_ready(app->http, ready, why);
}

void sl_app_update_ready(sl_app_t *app) {
        char why[320], trouble[256], caps[256];
        int rebuilding = 0, capped;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
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
        app->rt.rebuilding_cnt = rebuilding;
        capped = sl_app_caps_reason(app, caps, sizeof(caps));
        if (app->phase != SL_RUN_RUNNING)
                app_set_ready(app, 0, "shutting down");
        else if (!app->rt.txn ||
                 sl_txn_trouble(app->rt.txn, trouble, sizeof(trouble))) {
                app_set_ready(app, 0, app->rt.txn ? trouble : "starting");
        } else if (!app->kafka_up) {
                snprintf(why, sizeof(why), "Kafka unreachable for %.0f s: %s",
                         (double)(sl_now_ms() - app->kafka_down_since_ms) /
                             1000.0,
                         app->kafka_why);
                app_set_ready(app, 0, why);
        } else if (!app->assigned)
                app_set_ready(app, 0, "waiting for a partition assignment");
        else if (sl_parts_trouble(app, why, sizeof(why)))
                app_set_ready(app, 0, why);
        else if (rebuilding) {
                snprintf(why, sizeof(why), "%d partitions rebuilding",
                         rebuilding);
                app_set_ready(app, 0, why);
        } else if (capped) {
                /* Ready all the same: the instance works (its due work is
                 * what makes room) and a not-ready pod would hold up
                 * rollouts and, under the PodDisruptionBudget, node drains
                 * for as long as the cap lasts (README, Operations). */
                snprintf(why, sizeof(why), "ready; %s", caps);
                app_set_ready(app, 1, why);
        } else
                app_set_ready(app, 1, "ready");
}

/* since_ms: when Kafka stopped answering (when up is 0). */
static void app_set_kafka_up(sl_app_t *app, int up, const char *why,
                             int64_t since_ms) {
        if (up && !app->kafka_up)
                sl_log(
                    LOG_NOTICE, "KAFKA", "Kafka answers again (after %.1f s)",
                    (double)(sl_now_ms() - app->kafka_down_since_ms) / 1000.0);
        else if (!up && app->kafka_up) {
                sl_log(LOG_WARNING, "KAFKA", "Kafka unreachable: %s", why);
                app->kafka_down_since_ms = since_ms;
        }
        if (!up)
                snprintf(app->kafka_why, sizeof(app->kafka_why), "%s", why);
        app->kafka_up = up;
        sl_gauge_set(app->m_kafka_up, up);
        sl_app_update_ready(app);
}

static void app_on_probe(void *opaque, rd_kafka_resp_err_t err,
                         int64_t rtt_ms) {
        sl_app_t *app = opaque;
        int64_t now = sl_now_ms();
        (void)rtt_ms;
        app->probe_inflight = 0;
        if (!err) {
                app->probe_failing_since_ms = 0;
                app_set_kafka_up(app, 1, NULL, 0);
                return;
        }
        if (!app->probe_failing_since_ms)
                app->probe_failing_since_ms = app->probe_sent_ms;
        app->probe_next_ms = 0; /* ask again at the next tick */
        if (now - app->probe_failing_since_ms >= SL_PROBE_DOWN_MS)
                app_set_kafka_up(app, 0, rd_kafka_err2str(err),
                                 app->probe_failing_since_ms);
}

/* The input's end of a partition that is not fetched, for the lag.  A
 * partition rebuilding, or paused for a cap or a lookup, is not fetched,
 * so librdkafka's cached watermark stands still (or is missing, when it
 * paused before its first fetch): while so, its end is looked up every
 * SL_INPUT_END_EVERY_MS,
 * with at most SL_INPUT_END_ASKS lookups in flight for the whole process
 * (they share kquery's workers with the rebuilds' lookups), each answer
 * starting the next. */
#define SL_INPUT_END_EVERY_MS 1000
#define SL_INPUT_END_ASKS     2
#define SL_INPUT_END_TMO_MS   2000

static int task_unfetched(const sl_task_t *t) {
        return t->state == SL_TASK_REBUILDING || t->cap_wait || t->lookup_wait;
}

/* Which unfetched partitions look up their end: a rebuild once it has
 * lasted SL_INPUT_END_EVERY_MS (most end sooner, and when many partitions
 * are assigned at once their rebuilds' own lookups, which share kquery's
 * workers, come first). */
static int task_asks_input_end(const sl_task_t *t) {
        if (t->state == SL_TASK_REBUILDING)
                return sl_mono_us() - t->rebuild_start_us >=
                       SL_INPUT_END_EVERY_MS * 1000;
        return t->cap_wait || t->lookup_wait;
}

static void app_ask_input_ends(sl_app_t *app, int64_t now);

static void app_on_input_end(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                             int64_t hi) {
        struct sl_task_end_s *e = opaque;
        sl_task_t *t =
            (sl_task_t *)((char *)e - offsetof(sl_task_t, input_end));
        e->asking = 0;
        t->app->rt.input_end_asks--;
        /* Ends only grow: a lower answer is an older view. */
        if (!err && hi > e->offset) {
                e->offset = hi;
                e->start = lo;
        }
        app_ask_input_ends(t->app, sl_now_ms());
}

static void app_ask_input_ends(sl_app_t *app, int64_t now) {
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++) {
                        sl_task_t *t = pl->tasks[p];
                        if (app->rt.input_end_asks >= SL_INPUT_END_ASKS)
                                return;
                        if (!t || !task_asks_input_end(t) ||
                            t->input_end.asking ||
                            now - t->input_end.asked_ms < SL_INPUT_END_EVERY_MS)
                                continue;
                        t->input_end.asked_ms = now;
                        if (sl_kquery_watermarks(app->rt.kq, pl->conf->input, p,
                                                 SL_INPUT_END_TMO_MS,
                                                 app_on_input_end,
                                                 &t->input_end) == 0) {
                                t->input_end.asking = 1;
                                app->rt.input_end_asks++;
                        }
                }
        }
}

/* Where a partition's lag counts from: the next offset it reads; for a
 * partition rebuilding, the committed offset its input resumes at (the
 * one this instance last committed while that is still being read
 * again).  -1: from the log's first offset (nothing read, nothing
 * committed); -2: not known yet (a first rebuild still reading its
 * committed offset). */
static int64_t task_lag_from(const sl_task_t *t) {
        if (t->state == SL_TASK_RUNNING)
                return t->next_offset;
        if (t->rebuild_phase != SL_REBUILD_COMMITTED)
                return t->rebuild_committed;
        return t->committed_offset >= 0 ? t->committed_offset : -2;
}

/* The records a pipeline's input holds beyond what its tasks have read,
 * from the consumer's cached watermarks (as of the last fetch), or for a
 * partition not fetched (rebuilding, or waiting at a cap or a lookup) the
 * end looked up above when that is further.  A partition with no offset
 * to start from reads from the log's first one; one whose committed
 * offset is still being read is left out until it is known.  With
 * running_only, over the partitions being read (not rebuilding, not
 * paused for a cap or a lookup).  *read, when given, gets the sum of the
 * tasks' next offsets. */
static int64_t app_pipeline_lag(sl_app_t *app, sl_pipeline_t *pl,
                                int running_only, int64_t *read) {
        int64_t lag = 0;
        for (int p = 0; p < pl->partition_cnt; p++) {
                sl_task_t *t = pl->tasks[p];
                int64_t lo, hi, from;
                if (!t || (from = task_lag_from(t)) == -2)
                        continue;
                if (running_only &&
                    (t->state != SL_TASK_RUNNING || t->revoking ||
                     t->cap_wait || t->lookup_wait))
                        continue;
                if (read && t->next_offset >= 0)
                        *read += t->next_offset;
                if (rd_kafka_get_watermark_offsets(
                        app->rt.consumer, pl->conf->input, p, &lo, &hi))
                        lo = hi = -1;
                if (task_unfetched(t) && t->input_end.offset > hi) {
                        hi = t->input_end.offset;
                        lo = t->input_end.start;
                }
                if (from < 0)
                        from = lo;
                if (from >= 0 && hi > from)
                        lag += hi - from;
        }
        return lag;
}

/* Catching up.  A transaction costs the same few round trips however much
 * it holds, and debounce writes one chunk record per group a transaction
 * touched (then one tombstone per chunk when the group flushes): at 100
 * ms, a backlog spread over many groups is written ten times over in small
 * pieces.  So while the input is behind, the regular commit waits up to
 * backlog_commit_interval (never below commit_interval, at most half the
 * transaction timeout).
 *
 * Behind: at every tick of the commit timer for SL_CATCHUP_PERSIST_MS, the
 * lag of the partitions being read would have taken SL_CATCHUP_BEHIND_MS
 * (or commit_interval) or more to read at the pace of the last
 * SL_CATCHUP_TICKS ticks (about a second).  A burst that sluice reads in
 * a few ms meets that at one tick at most, and steady traffic, read as it
 * comes, never.  Caught up again once the lag would take less than one
 * commit_interval to read, or nothing was read.  A record read meanwhile
 * waits longer for its commit, but less than the backlog already made it
 * wait.  Commits asked for by operators (due timers, debounce deadlines),
 * by a transaction grown past SL_TXN_MAX_RECORDS, a rebalance or a
 * shutdown do not wait.  Called at every tick of the commit timer;
 * returns 1 when this one should not commit. */
#define SL_CATCHUP_BEHIND_MS  250
#define SL_CATCHUP_PERSIST_MS 100
#define SL_CATCHUP_QUIET_MS   10000

static int app_catching_up(sl_app_t *app) {
        const sl_conf_t *c = app->rt.conf;
        int64_t now = sl_mono_us(),
                hold_ms = SL_MIN(SL_MAX(c->backlog_commit_interval_ms,
                                        c->commit_interval_ms),
                                 c->transaction_timeout_ms / 2),
                need_ms = app->catching_up ? c->commit_interval_ms
                                           : SL_MAX(SL_CATCHUP_BEHIND_MS,
                                                    c->commit_interval_ms),
                span_us, read, lag = 0;
        int i = (int)(app->catch_tick % SL_CATCHUP_TICKS), o, behind = 0;

        /* The pace's window: from the oldest tick kept (the first ever,
         * until the ring is full) to this one. */
        o = app->catch_us[i] ? i : 0;
        app->catch_tick++;
        span_us = app->catch_us[o] ? now - app->catch_us[o] : 0;
        read = app->read_cnt - app->catch_read[o];
        app->catch_us[i] = now;
        app->catch_read[i] = app->read_cnt;

        if (hold_ms > c->commit_interval_ms && read > 0 && span_us > 0 &&
            app->rt.consumer && app->phase == SL_RUN_RUNNING) {
                for (int k = 0; k < app->rt.pipeline_cnt; k++)
                        lag += app_pipeline_lag(app, &app->rt.pipelines[k], 1,
                                                NULL);
                /* lag / (read / span) >= need */
                behind = (double)lag * (double)span_us >=
                         (double)read * (double)need_ms * 1000.0;
        }
        if (!behind)
                app->behind_since_us = 0;
        else if (!app->behind_since_us)
                app->behind_since_us = now;
        if (!app->catching_up)
                behind = behind && now - app->behind_since_us >=
                                       SL_CATCHUP_PERSIST_MS * 1000;
        if (behind != app->catching_up) {
                /* A backlog that comes back within SL_CATCHUP_QUIET_MS of
                 * the last one's end (a saturated input) logs its start
                 * and end at debug level. */
                if (behind)
                        app->catch_quiet =
                            app->catch_end_us && now - app->catch_end_us <
                                                     SL_CATCHUP_QUIET_MS * 1000;
                else
                        app->catch_end_us = now;
                app->catching_up = behind;
                sl_gauge_set(app->m_catching_up, behind);
                sl_log(app->catch_quiet ? LOG_DEBUG : LOG_INFO, "COMMIT",
                       "input %s (lag %" PRId64 " records, %" PRId64
                       " read in the last %" PRId64
                       " ms): committing every %" PRId64 " ms",
                       behind ? "behind" : "caught up", lag, read,
                       span_us / 1000,
                       behind ? hold_ms : c->commit_interval_ms);
        }
        return behind && now - app->last_commit_us < hold_ms * 1000;
}

/* A burst of input leaves pages malloc has freed but keeps (the consumer's
 * prefetched batches, freed as the records were handled, between long-lived
 * state), and the outbox's chunks kept for the next burst of commits (up to
 * 4 MiB, which 500k pending timers would otherwise share): once the input
 * is caught up, give them back — at most every SL_TRIM_EVERY_MS and only
 * after SL_TRIM_AFTER_RECORDS were read, as after a rebuild (task.c).  With
 * lag 0 there is no burst left to serve. */
#define SL_TRIM_EVERY_MS      10000
#define SL_TRIM_AFTER_RECORDS 100000

static void app_trim_after_burst(sl_app_t *app, int64_t now, int64_t lag,
                                 int64_t read) {
        int64_t t0;
        size_t spare;
        if (read < app->trim_read) /* partitions left: count afresh */
                app->trim_read = read;
        if (lag > 0 || read - app->trim_read < SL_TRIM_AFTER_RECORDS ||
            now - app->trim_last_ms < SL_TRIM_EVERY_MS)
                return;
        t0 = sl_mono_us();
        spare = sl_outbox_trim(app->rt.outbox);
        sl_mem_trim();
        app->trim_read = read;
        app->trim_last_ms = now;
        sl_log(LOG_DEBUG, "MEMORY",
               "input caught up: freed pages (%zu B of outbox chunks among "
               "them) given back in %.1f ms",
               spare, (double)(sl_mono_us() - t0) / 1000.0);
}

/* ------------------------------------------------------------------ */
/* Partitions nobody owns (groupcheck.h).                               */

#define SL_GROUP_LOOK_TMO_MS 5000
/* Between leaving the group and joining again: the LeaveGroup must reach
 * the broker first, or the join would come back as a static member's
 * rejoin with the same stale assignment. */
#define SL_GROUP_REJOIN_PAUSE_MS 1000

static rd_kafka_resp_err_t app_subscribe(sl_app_t *app) {
        rd_kafka_topic_partition_list_t *topics;
        rd_kafka_resp_err_t err;
        topics = rd_kafka_topic_partition_list_new(app->rt.pipeline_cnt);
        for (int i = 0; i < app->rt.pipeline_cnt; i++)
                rd_kafka_topic_partition_list_add(
                    topics, app->rt.pipelines[i].conf->input,
                    RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(app->rt.consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        return err;
}

static int app_task_cnt(const sl_app_t *app) {
        int n = 0;
        for (int i = 0; i < app->rt.pipeline_cnt; i++)
                for (int p = 0; p < app->rt.pipelines[i].partition_cnt; p++)
                        n += app->rt.pipelines[i].tasks[p] != NULL;
        return n;
}

/* Leaves the group (its partitions are revoked through the usual path,
 * their work committed first) and joins again once they are gone: the
 * broker then rebalances the whole group. */
static void app_group_rejoin(sl_app_t *app, const sl_groupcheck_look_t *look,
                             int64_t gap_ms) {
        rd_kafka_resp_err_t err;
        sl_log(LOG_WARNING, "GROUP",
               "%d input partitions (e.g. %s) have had no owner for %.0f s "
               "while group %s was stable; this member (%d partitions) leaves "
               "and rejoins the group so that it rebalances",
               look->unowned, look->example, (double)gap_ms / 1000.0,
               app->rt.conf->app_id, app_task_cnt(app));
        sl_counter_inc(app->m_group_rejoins);
        if ((err = rd_kafka_unsubscribe(app->rt.consumer)))
                sl_log(LOG_ERR, "GROUP", "unsubscribe: %s",
                       rd_kafka_err2str(err));
        app->assigned = 0;
        app->rejoin_at_ms = sl_now_ms() + SL_GROUP_REJOIN_PAUSE_MS;
        sl_app_update_ready(app);
}

static void app_on_group_look(void *opaque, rd_kafka_resp_err_t err,
                              rd_kafka_consumer_group_state_t state,
                              const sl_kquery_member_t *members,
                              int member_cnt) {
        sl_app_t *app = opaque;
        sl_groupcheck_topic_t *topics;
        sl_groupcheck_look_t look;
        int64_t now = sl_now_ms(), since;
        int stable = state == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE;
        char *mine;

        app->group_look_inflight = 0;
        if (err || !app->rt.consumer || app->phase != SL_RUN_RUNNING ||
            app->rejoin_at_ms)
                return;
        topics = sl_calloc((size_t)app->rt.pipeline_cnt, sizeof(*topics));
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                topics[i].name = app->rt.pipelines[i].conf->input;
                topics[i].partition_cnt = app->rt.pipelines[i].partition_cnt;
        }
        mine = rd_kafka_memberid(app->rt.consumer);
        sl_groupcheck_look(topics, app->rt.pipeline_cnt, members, member_cnt,
                           mine, &look);
        free(topics);
        if (mine)
                rd_kafka_mem_free(NULL, mine);
        sl_gauge_set(app->m_unowned, stable ? look.unowned : 0);
        since = app->groupcheck.gap_since_ms;
        switch (sl_groupcheck_judge(&app->groupcheck, now, stable, &look)) {
        case SL_GROUPCHECK_OK:
                if (since)
                        sl_log(LOG_INFO, "GROUP",
                               "every input partition has an owner again");
                break;
        case SL_GROUPCHECK_WATCH:
                if (!since)
                        sl_log(LOG_NOTICE, "GROUP",
                               "%d input partitions (e.g. %s) have no owner "
                               "while group %s is stable; watching",
                               look.unowned, look.example,
                               app->rt.conf->app_id);
                break;
        case SL_GROUPCHECK_REPAIR:
                app_group_rejoin(app, &look, now - since);
                break;
        }
}

/* Every second: a look at the group now and then, or the join after a
 * repair's leave once this member's partitions are gone. */
static void app_group_tick(sl_app_t *app, int64_t now) {
        rd_kafka_resp_err_t err;
        if (!app->rt.consumer || app->phase != SL_RUN_RUNNING)
                return;
        if (app->rejoin_at_ms) {
                if (now < app->rejoin_at_ms || app->rt.revoking ||
                    app_task_cnt(app))
                        return;
                app->rejoin_at_ms = 0;
                if ((err = app_subscribe(app))) {
                        sl_log(LOG_CRIT, "GROUP", "subscribe: %s",
                               rd_kafka_err2str(err));
                        app_exit_hook(app, SL_EXIT_FAIL);
                        return;
                }
                sl_log(LOG_NOTICE, "GROUP", "joining group %s again",
                       app->rt.conf->app_id);
                return;
        }
        if (app->group_look_inflight || now < app->group_look_next_ms)
                return;
        if (sl_kquery_group_owners(app->rt.kq, app->rt.conf->app_id,
                                   SL_GROUP_LOOK_TMO_MS, app_on_group_look,
                                   app) == 0) {
                app->group_look_inflight = 1;
                app->group_look_next_ms = now + SL_GROUPCHECK_EVERY_MS;
        }
}

/* The allocator's figures, beside the state's own (sluice_*_memory_bytes):
 * what RSS holds that no pending state explains. */
static void app_malloc_gauges(sl_app_t *app) {
        int64_t allocated, resident;
        sl_mem_stats(&allocated, &resident);
        if (app->m_malloc_allocated && allocated >= 0)
                sl_gauge_set(app->m_malloc_allocated, (double)allocated);
        if (app->m_malloc_resident && resident >= 0)
                sl_gauge_set(app->m_malloc_resident, (double)resident);
}

/* Stamps the consumer's "the application polled" time without taking
 * anything from its queue (a batch of no messages).  librdkafka leaves the
 * group when the application has not polled for max.poll.interval.ms (5 min
 * by default), and the loop polls the consumer only when its queue wakes
 * it: an input that stays quiet that long, or one paused at a cap, cost a
 * rebalance and a rebuild of every partition each interval ("Application
 * maximum poll interval exceeded ... leaving group", then "revoking N
 * partitions (lost)").  The loop turning is what alive means here: a
 * stalled loop stops these stamps too, and /healthz says so. */
static void app_consumer_polled(sl_app_t *app) {
        rd_kafka_message_t *none[1];
        if (app->rt.consumer && app->consumer_q)
                (void)rd_kafka_consume_batch_queue(app->consumer_q, 0, none, 0);
}

/* Lag from the consumer's cached watermarks, readiness (time-based
 * reasons), the probe and the consumer's poll stamp; every second. */
static void app_on_stats_timer(uv_timer_t *timer) {
        sl_app_t *app = timer->data;
        int64_t now = sl_now_ms();
        int64_t lag_all = 0, read = 0;
        app_consumer_polled(app);
        if (app->offsets)
                rd_kafka_poll(app->offsets, 0); /* its errors */
        if (app->rt.consumer)
                app_ask_input_ends(app, now);
        for (int i = 0; i < app->rt.pipeline_cnt && app->rt.consumer; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                int64_t lag = app_pipeline_lag(app, pl, 0, &read);
                sl_gauge_set(pl->metrics->consumer_lag, (double)lag);
                lag_all += lag;
        }
        if (app->rt.consumer)
                app_trim_after_burst(app, now, lag_all, read);
        app_malloc_gauges(app);
        /* The pipelines' own topics stay known to the topic cache, their
         * limits (max.message.bytes) learned again once it has expired
         * (SL_TOPICCACHE_TTL_POS_MS): a limit changed while sluice runs
         * is counted within a minute or so. */
        for (int i = 0; i < app->limit_cnt; i++)
                topic_cache_get(app, app->limits[i].name);
        sl_parts_tick(app, now);
        app_group_tick(app, now);
        if (!app->probe_inflight && now >= app->probe_next_ms &&
            sl_kquery_probe(app->rt.kq, SL_PROBE_TMO_MS, app_on_probe, app) ==
                0) {
                app->probe_inflight = 1;
                app->probe_sent_ms = now;
                app->probe_next_ms = now + SL_PROBE_EVERY_MS;
        }
        sl_app_update_ready(app);
}

/* ------------------------------------------------------------------ */
/* Consumer: input records and rebalances.                             */

static void app_assign(sl_app_t *app, rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_error_t *error;

        /* An explicit start offset: librdkafka would otherwise fetch the
         * committed offsets of all the new partitions in one request, and
         * one partition with a pending transaction (a zombie's) would hold
         * every other one back.  The rebuild fetches each partition's
         * committed offset itself and seeks there; until then the
         * partitions are paused.  BEGINNING, not END: if the lookup of the
         * logical offset answers after our seek, the position moves back
         * and sl_task_on_input() drops what it already processed; END
         * moved it forward once, past unprocessed records. */
        for (int i = 0; i < parts->cnt; i++)
                parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        error = rd_kafka_incremental_assign(app->rt.consumer, parts);
        if (error) {
                sl_log(LOG_ERR, "REBALANCE", "incremental_assign: %s",
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return;
        }
        /* Input waits until the partition's state is rebuilt. */
        rd_kafka_pause_partitions(app->rt.consumer, parts);
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = app_pipeline_by_input(app, tp->topic);
                if (!pl) {
                        sl_log(LOG_ERR, "REBALANCE",
                               "assigned %s [%d] that no pipeline reads",
                               tp->topic, tp->partition);
                        continue;
                }
                if (tp->partition >= pl->partition_cnt) {
                        /* The input grew: served once its topics have the
                         * partition too (parts.h); paused until then. */
                        sl_parts_assigned(pl, tp->partition);
                        continue;
                }
                if (pl->tasks[tp->partition])
                        continue;
                pl->tasks[tp->partition] = sl_task_new(pl, tp->partition);
        }
}

static void app_drop_tasks(sl_app_t *app,
                           const rd_kafka_topic_partition_list_t *parts) {
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = app_pipeline_by_input(app, tp->topic);
                if (pl)
                        sl_parts_revoked(pl, tp->partition);
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
        int lost;

        if (rk != app->rt.consumer)
                return; /* a consumer being destroyed */
        sl_counter_inc(app->m_rebalances);
        sl_txn_rebalanced(app->rt.txn);
        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                sl_log(LOG_INFO, "REBALANCE", "assigned %d partitions",
                       parts->cnt);
                app->assigned = 1;
                app_assign(app, parts);
                break;
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                lost = rd_kafka_assignment_lost(app->rt.consumer);
                sl_log(LOG_INFO, "REBALANCE", "revoking %d partitions%s",
                       parts->cnt, lost ? " (lost)" : "");
                if (!lost && app->rt.revoking) {
                        /* A second revocation while the first waits for
                         * its commit: it joins the first.  Dropping these
                         * tasks now would let what they wrote into the
                         * open transaction commit without their input
                         * offsets (a duplicate at their next owner); they
                         * go with the first, once a commit carries their
                         * work too (app_offsets counts revoking tasks). */
                        for (int i = 0; i < parts->cnt; i++) {
                                sl_task_t *t =
                                    app_task_of(app, parts->elems[i].topic,
                                                parts->elems[i].partition);
                                if (t)
                                        t->revoking = 1;
                                rd_kafka_topic_partition_list_add(
                                    app->rt.revoking, parts->elems[i].topic,
                                    parts->elems[i].partition);
                        }
                        sl_log(LOG_NOTICE, "REBALANCE",
                               "%d more partitions join the revocation that "
                               "waits for its commit",
                               parts->cnt);
                        app_revoke_try(app);
                        break;
                }
                if (lost || app->rt.revoking) {
                        /* Our offsets for them would be refused: abort so
                         * nothing written for them becomes visible. */
                        app_revoke_finish(app);
                        app_drop_tasks(app, parts);
                        error = rd_kafka_incremental_unassign(app->rt.consumer,
                                                              parts);
                        if (error) {
                                sl_log(LOG_ERR, "REBALANCE",
                                       "incremental_unassign: %s",
                                       rd_kafka_error_string(error));
                                rd_kafka_error_destroy(error);
                        }
                        if (lost) {
                                app->assigned = 0;
                                if (sl_txn_state(app->rt.txn) != SL_TXN_READY)
                                        sl_txn_doom(app->rt.txn,
                                                    "partitions lost");
                        }
                        break;
                }
                /* What was done for them becomes durable first; the
                 * group waits for the unassign. */
                for (int i = 0; i < parts->cnt; i++) {
                        sl_task_t *t = app_task_of(app, parts->elems[i].topic,
                                                   parts->elems[i].partition);
                        if (t)
                                t->revoking = 1;
                }
                app->rt.revoking = rd_kafka_topic_partition_list_copy(parts);
                app->rt.revoke_commit_started = 0;
                app_revoke_try(app);
                break;
        default:
                sl_log(LOG_ERR, "REBALANCE", "rebalance error: %s",
                       rd_kafka_err2str(err));
                app_revoke_finish(app);
                app_drop_tasks(app, parts);
                if (sl_txn_state(app->rt.txn) != SL_TXN_READY)
                        sl_txn_doom(app->rt.txn, "rebalance error");
                rd_kafka_incremental_unassign(app->rt.consumer, parts);
                app->assigned = 0;
                break;
        }
        sl_app_update_ready(app);
}

/* A fatal error of the consumer: the txn re-creates both clients. */
static void app_consumer_fatal(sl_app_t *app) {
        char buf[256];
        rd_kafka_resp_err_t err;
        if (!app->rt.consumer)
                return;
        err = rd_kafka_fatal_error(app->rt.consumer, buf, sizeof(buf));
        sl_txn_fatal(app->rt.txn, "consumer", buf, sl_txn_err_is_fencing(err));
}

/* One input record: to its task, unless the task may not take it now. */
static void app_input(sl_app_t *app, const rd_kafka_message_t *m) {
        sl_task_t *t =
            app_task_of(app, rd_kafka_topic_name(m->rkt), m->partition);
        if (t && !t->revoking) {
                sl_task_on_input(t, m);
                app->read_cnt++;
                app->read_bytes += (int64_t)(m->len + m->key_len);
        }
        if (app->rt.txn && (sl_txn_records(app->rt.txn) >= SL_TXN_MAX_RECORDS ||
                            app->read_bytes >= SL_TXN_MAX_INPUT_BYTES))
                sl_app_commit_soon(app);
}

struct sl_held_s {
        rd_kafka_message_t *m;
        uint32_t epoch; /* of its task when held; 0: no task */
        uint64_t batch; /* rt.input_batch it came in */
};

static void app_held_push(sl_app_t *app, rd_kafka_message_t *m) {
        sl_task_t *t =
            app_task_of(app, rd_kafka_topic_name(m->rkt), m->partition);
        struct sl_held_s *h;
        if (!app->held)
                app->held = sl_calloc(SL_HELD_MAX, sizeof(*app->held));
        sl_assert(app->held_cnt < SL_HELD_MAX);
        h = &app->held[(app->held_head + app->held_cnt) % SL_HELD_MAX];
        h->m = m;
        h->epoch = t ? t->epoch : 0;
        h->batch = app->rt.input_batch;
        app->held_cnt++;
        app->held_bytes += (int64_t)(m->len + m->key_len);
}

static rd_kafka_message_t *app_held_pop(sl_app_t *app, uint32_t *epochp,
                                        uint64_t *batchp) {
        struct sl_held_s *h;
        if (!app->held_cnt)
                return NULL;
        h = &app->held[app->held_head];
        app->held_head = (app->held_head + 1) % SL_HELD_MAX;
        app->held_cnt--;
        app->held_bytes -= (int64_t)(h->m->len + h->m->key_len);
        if (epochp)
                *epochp = h->epoch;
        if (batchp)
                *batchp = h->batch;
        return h->m;
}

static void app_held_clear(sl_app_t *app) {
        rd_kafka_message_t *m;
        while ((m = app_held_pop(app, NULL, NULL)))
                rd_kafka_message_destroy(m);
}

int64_t sl_app_now_fresh_ms(sl_app_t *app) {
        return sl_runtime_now_fresh_ms(&app->rt);
}

int64_t sl_app_now_ms(sl_app_t *app) {
        return sl_runtime_now_ms(&app->rt);
}

static void app_held_drain(sl_app_t *app) {
        rd_kafka_message_t *m;
        uint32_t epoch;
        uint64_t batch;
        while (app_may_produce(app) &&
               (m = app_held_pop(app, &epoch, &batch))) {
                sl_task_t *t =
                    app_task_of(app, rd_kafka_topic_name(m->rkt), m->partition);
                app->rt.input_batch_cur = batch;
                if (t && t->epoch == epoch)
                        app_input(app, m);
                rd_kafka_message_destroy(m);
        }
}

/* One message of the consumer queue: the per-record part of
 * app_serve_consumer. */
static void app_consumed(sl_app_t *app, rd_kafka_message_t *m) {
        int take = app_may_produce(app) && !app->held_cnt;
        if (!app->rt.consumer) {
                /* A fatal error served earlier in the batch dropped the
                 * clients: what was fetched with them goes too. */
                rd_kafka_message_destroy(m);
                return;
        }
        if (m->err) {
                rd_kafka_resp_err_t err = m->err;
                if (app_fetch_refused(app, 0, err,
                                      m->rkt ? rd_kafka_topic_name(m->rkt)
                                             : NULL,
                                      rd_kafka_message_errstr(m))) {
                        rd_kafka_message_destroy(m);
                        return;
                }
                if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
                    err != RD_KAFKA_RESP_ERR__FATAL)
                        sl_kafka_log_error("consumer", err,
                                           rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                if (err == RD_KAFKA_RESP_ERR__FATAL)
                        app_consumer_fatal(app);
                return;
        }
        if (app->phase != SL_RUN_RUNNING) {
                rd_kafka_message_destroy(m); /* leaving */
        } else if (take) {
                app->rt.input_batch_cur = app->rt.input_batch;
                app_input(app, m);
                rd_kafka_message_destroy(m);
        } else {
                app_held_push(app, m);
        }
}

/* The consumer queue was full enough to stop librdkafka's fetcher and has
 * just been emptied: seek every running input partition to the record it
 * reads next, past what waits in the held ring.  Nothing is waiting in the
 * queue, so nothing is dropped or read twice; the seek is what wakes the
 * broker threads ("seek done"), where the queue draining does not. */
static void app_wake_fetcher(sl_app_t *app) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(16);
        rd_kafka_error_t *error;
        for (int i = 0; i < app->held_cnt; i++) {
                const struct sl_held_s *h =
                    &app->held[(app->held_head + i) % SL_HELD_MAX];
                const rd_kafka_message_t *m = h->m;
                const char *topic = rd_kafka_topic_name(m->rkt);
                sl_task_t *t = app_task_of(app, topic, m->partition);
                rd_kafka_topic_partition_t *tp;
                /* A record held for an earlier epoch of its task is
                 * dropped, not read: it must not move the seek. */
                if (!t || t->epoch != h->epoch)
                        continue;
                tp = rd_kafka_topic_partition_list_find(l, topic, m->partition);
                if (!tp)
                        tp = rd_kafka_topic_partition_list_add(l, topic,
                                                               m->partition);
                tp->offset = SL_MAX(tp->offset, m->offset + 1);
        }
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                for (int p = 0; p < pl->partition_cnt; p++) {
                        sl_task_t *t = pl->tasks[p];
                        rd_kafka_topic_partition_t *tp =
                            rd_kafka_topic_partition_list_find(
                                l, pl->conf->input, p);
                        if (!t || t->state != SL_TASK_RUNNING || t->revoking ||
                            t->lookup_wait || t->cap_wait ||
                            t->retry_offset >= 0 || t->next_offset < 0) {
                                if (tp)
                                        tp->offset = RD_KAFKA_OFFSET_INVALID;
                                continue;
                        }
                        if (!tp)
                                tp = rd_kafka_topic_partition_list_add(
                                    l, pl->conf->input, p);
                        tp->offset = SL_MAX(tp->offset, t->next_offset);
                }
        }
        /* Only running partitions at a known offset: drop the rest. */
        for (int i = l->cnt - 1; i >= 0; i--)
                if (l->elems[i].offset < 0)
                        rd_kafka_topic_partition_list_del_by_idx(l, i);
        if (l->cnt &&
            (error = rd_kafka_seek_partitions(app->rt.consumer, l, 0)))
                rd_kafka_error_destroy(error);
        rd_kafka_topic_partition_list_destroy(l);
}

static int app_serve_consumer(void *opaque, int budget) {
        sl_app_t *app = opaque;
        rd_kafka_message_t *ms[SL_CONSUME_BATCH];
        int n = 0, empty = 0;
        while (n < budget && app->rt.consumer) {
                int take = app_may_produce(app) && !app->held_cnt;
                ssize_t got;
                /* Never more than the held ring can still take: a batch
                 * may have to be held from any of its records on.  (When
                 * leaving, records are dropped, never held, and the queue
                 * must still be served for the close.) */
                size_t want = (size_t)SL_MIN(budget - n, SL_CONSUME_BATCH);
                if (app->phase == SL_RUN_RUNNING)
                        want =
                            SL_MIN(want, (size_t)(SL_HELD_MAX - app->held_cnt));
                if (!take && app->phase == SL_RUN_RUNNING &&
                    (app->held_cnt >= SL_HELD_MAX ||
                     app->held_bytes >= SL_HELD_MAX_BYTES))
                        break; /* resumed() kicks us */
                if (!want)
                        break;
                got =
                    rd_kafka_consume_batch_queue(app->consumer_q, 0, ms, want);
                if (got <= 0) {
                        empty = 1;
                        break;
                }
                sl_app_now_fresh_ms(app);
                app->rt.input_batch++;
                /* What the queue held before this batch. */
                if (app->fetch_full_at && !app->fetch_full &&
                    rd_kafka_queue_length(app->consumer_q) + (size_t)got >=
                        app->fetch_full_at)
                        app->fetch_full = 1;
                for (ssize_t i = 0; i < got; i++)
                        app_consumed(app, ms[i]);
                n += (int)got;
                if ((size_t)got < want) {
                        empty = 1;
                        break;
                }
        }
        if (empty && app->fetch_full && app->rt.consumer &&
            app->phase == SL_RUN_RUNNING) {
                app->fetch_full = 0;
                app_wake_fetcher(app);
        }
        if (app->phase == SL_RUN_STOP_CLOSE)
                app_stop_step(app);
        return n;
}

/* A table partition was read up to the end captured at start: once all
 * are, the pipeline's tasks may run. */
static void app_table_check(sl_pipeline_t *pl, int p) {
        if (pl->table_end[p] < 0 || pl->table_end[p] == INT64_MAX ||
            pl->table_pos[p] < pl->table_end[p])
                return;
        pl->table_end[p] = -1;
        for (int i = 0; i < pl->table_parts; i++)
                if (pl->table_end[i] >= 0)
                        return;
        if (!pl->table_ready)
                sl_log(LOG_INFO, "TABLE", "%s: %s read to its end",
                       pl->conf->name, pl->op->table_topic(pl));
        pl->table_ready = 1;
}

/* A record of a pipeline's global table (e.g. throttle rates). */
static void app_on_table(sl_pipeline_t *pl, const rd_kafka_message_t *m) {
        if (m->partition < 0 || m->partition >= pl->table_parts)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                pl->table_pos[m->partition] = m->offset;
        } else if (m->err) {
                sl_kafka_log_error("reader", m->err,
                                   rd_kafka_message_errstr(m));
                return;
        } else {
                pl->op->table(pl, m);
                pl->table_pos[m->partition] = m->offset + 1;
        }
        app_table_check(pl, m->partition);
}

/* One record of the reader, served in a batch (app_serve_reader()). */
static void app_reader_record(sl_app_t *app, const rd_kafka_message_t *m) {
        const char *topic;
        int served = 0;
        if (m->err &&
            app_fetch_refused(app, 1, m->err,
                              m->rkt ? rd_kafka_topic_name(m->rkt) : NULL,
                              rd_kafka_message_errstr(m)))
                return;
        if (!m->rkt) {
                if (m->err)
                        sl_kafka_log_error("reader", m->err,
                                           rd_kafka_message_errstr(m));
                return;
        }
        topic = rd_kafka_topic_name(m->rkt);
        for (int i = 0; i < app->rt.pipeline_cnt && !served; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                sl_task_t *t;
                if (pl->table_parts &&
                    !strcmp(pl->op->table_topic(pl), topic)) {
                        app_on_table(pl, m);
                        served = 1;
                } else if (m->partition >= 0 &&
                           m->partition < pl->partition_cnt &&
                           (t = pl->tasks[m->partition]) && t->reader_topic &&
                           !strcmp(t->reader_topic, topic)) {
                        /* The task's reader moved (assign, seek, unassign)
                         * while an earlier record of this batch was served:
                         * this one was taken from the queue before, so it
                         * belongs to what the task read before.  One at a
                         * time, librdkafka's version check would have
                         * dropped it at the pop. */
                        if (t->reader_moved != app->rt.reader_batch)
                                sl_task_on_reader(t, m);
                        served = 1;
                }
        }
        if (!served && m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                sl_kafka_log_error("reader", m->err,
                                   rd_kafka_message_errstr(m));
}

/* The reader's records, SL_CONSUME_BATCH per librdkafka call: one
 * timeout set-up and one poll-interval stamp (each a clock read) per batch
 * instead of per record.  In perf profiles of bench delay_rebuild, the
 * loop thread's share in clock reads, queue locks and the pop fell from
 * 9.0 % of the process to 6.3 %. */
static int app_serve_reader(void *opaque, int budget) {
        sl_app_t *app = opaque;
        rd_kafka_message_t *ms[SL_CONSUME_BATCH];
        int n = 0;
        while (n < budget) {
                size_t want = (size_t)SL_MIN(budget - n, SL_CONSUME_BATCH);
                ssize_t got =
                    rd_kafka_consume_batch_queue(app->reader_q, 0, ms, want);
                if (got <= 0)
                        break;
                /* Read after the batch was taken: later than any of its
                 * records was written (on this host's clock), the bound
                 * restores clamp their times to (sl_app_now_ms). */
                sl_app_now_fresh_ms(app);
                app->rt.reader_batch++;
                for (ssize_t i = 0; i < got; i++) {
                        app_reader_record(app, ms[i]);
                        rd_kafka_message_destroy(ms[i]);
                }
                n += (int)got;
                if ((size_t)got < want)
                        break;
        }
        return n;
}

/* Errors of the consumer and the reader (the producer's come as events to
 * txn.c). */
static void app_error_cb(rd_kafka_t *rk, int err, const char *reason,
                         void *opaque) {
        sl_app_t *app = opaque;
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
                if (rk == app->rt.consumer)
                        app_consumer_fatal(app);
                else
                        sl_log(LOG_ERR, "KAFKA", "%s: fatal error: %s",
                               rd_kafka_name(rk), reason);
                return;
        }
        /* The lookup and offsets clients connect to few nodes (one may be
         * all they know of): the probe speaks for them. */
        if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN &&
            (rk == app->rt.consumer || rk == app->rt.reader))
                app_set_kafka_up(app, 0, reason, sl_now_ms());
        /* The lookup client's topic refusals are a target's, answered
         * where it was looked up (topic_on_lookup). */
        if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
            (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
             rk != app->lookup)) {
                if (rk == app->rt.reader || rk == app->lookup)
                        app_fetch_refused(app, 1, (rd_kafka_resp_err_t)err,
                                          NULL, reason);
                else
                        app_fetch_refused(app, 0, (rd_kafka_resp_err_t)err,
                                          NULL, reason);
                return;
        }
        sl_kafka_log_error(rk == app->rt.reader ? "reader"
                           : rk == app->lookup  ? "lookups"
                           : rk == app->offsets ? "offsets"
                                                : "consumer",
                           err, reason);
}

/* The lookup client's events: its errors (through app_error_cb). */
static int app_serve_lookup(void *opaque, int budget) {
        sl_app_t *app = opaque;
        (void)budget;
        rd_kafka_poll(app->lookup, 0);
        return 0;
}

/* ------------------------------------------------------------------ */
/* Global tables.                                                       */

static void app_on_table_end(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                             int64_t hi);

typedef struct table_part_s {
        sl_pipeline_t *pl;
        int32_t partition;
} table_part_t;

static void app_table_ask(sl_app_t *app, table_part_t *tp) {
        if (sl_kquery_watermarks(app->rt.kq, tp->pl->op->table_topic(tp->pl),
                                 tp->partition, SL_LOOKUP_TMO_MS,
                                 app_on_table_end, tp) == -1)
                sl_log(LOG_ERR, "TABLE", "cannot ask for the end of %s",
                       tp->pl->op->table_topic(tp->pl));
}

/* The end of one table partition, captured before it is read. */
static void app_on_table_end(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                             int64_t hi) {
        table_part_t *tp = opaque;
        sl_pipeline_t *pl = tp->pl;
        if (err) {
                sl_kafka_log_error("reader", err, "table end offset");
                app_table_ask(pl->app, tp); /* bounded by its timeout */
                return;
        }
        pl->table_end[tp->partition] = hi;
        if (hi <= lo)
                pl->table_pos[tp->partition] = hi;
        app_table_check(pl, tp->partition);
}

/* Starts reading a pipeline's global table (all partitions, from the
 * beginning, for as long as the process runs); the pipeline's tasks run
 * once it was read to the ends captured now. */
static int app_table_start(sl_app_t *app, sl_pipeline_t *pl, int cnt,
                           char *errstr, size_t errstr_size) {
        const char *topic = pl->op->table_topic(pl);
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        table_part_t *parts;

        pl->table_parts = cnt;
        pl->table_end = sl_calloc((size_t)cnt, sizeof(*pl->table_end));
        pl->table_pos = sl_calloc((size_t)cnt, sizeof(*pl->table_pos));
        pl->table_ready = 0;
        parts = pl->table_asks = sl_calloc((size_t)cnt, sizeof(*parts));
        l = rd_kafka_topic_partition_list_new(cnt);
        for (int p = 0; p < cnt; p++) {
                pl->table_end[p] = INT64_MAX; /* until asked */
                parts[p].pl = pl;
                parts[p].partition = p;
                app_table_ask(app, &parts[p]);
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        }
        error = rd_kafka_incremental_assign(app->rt.reader, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (error) {
                snprintf(errstr, errstr_size, "%s: assign: %s", topic,
                         rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return -1;
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* Clients.                                                             */

static rd_kafka_conf_t *app_kconf(sl_app_t *app, char *errstr,
                                  size_t errstr_size) {
        rd_kafka_conf_t *kc =
            sl_conf_rdkafka(app->rt.conf, errstr, errstr_size);
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
                        return NULL;                                           \
                }                                                              \
        } while (0)

static int user_set(const sl_conf_t *conf, const char *key) {
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, key))
                        return 1;
        return 0;
}

/* [kafka]'s value of key, or NULL. */
static const char *user_value(const sl_conf_t *conf, const char *key) {
        const char *v = NULL;
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, key))
                        v = conf->kafka[i].value;
        return v;
}

/* ------------------------------------------------------------------ */
/* What the written topics accept (recsize.h; runtime.h, the size check). */

static int64_t app_max_bytes(const sl_runtime_t *rt, const char *topic) {
        const sl_app_t *app = app_of_const(rt);
        int64_t v =
            app->topics ? sl_topiccache_max_bytes(app->topics->tc, topic) : -1;
        if (v > 0)
                return v;
        for (int i = 0; i < app->limit_cnt; i++)
                if (app->limits[i].max_bytes > 0 &&
                    !strcmp(app->limits[i].name, topic))
                        return app->limits[i].max_bytes;
        return app->broker_max_bytes;
}

/* Learns what the pipelines' own written topics accept (DescribeConfigs,
 * blocking: at start, before the loop and the producers), then sets what
 * the producers will be configured for: message.max.bytes no smaller than
 * any of those limits, unless [kafka] says otherwise (then checked here,
 * and records above it go to the DLQ as too-large).  A topic sluice may
 * not describe (no DescribeConfigs ACL) is assumed to take the broker's
 * limit; a larger record then costs two aborted transactions before the
 * broker's refusal sends it to the DLQ (refused.h). */
static void app_limits_learn(sl_app_t *app) {
        const sl_conf_t *conf = app->rt.conf;
        sl_topicplan_t *plan = sl_topicplan_new(conf);
        const char **names = sl_calloc((size_t)plan->cnt + 1, sizeof(*names));
        sl_topics_observed_t *obs = NULL;
        sl_topics_admin_t *adm;
        const char *v, *biggest = NULL;
        int64_t max_own = -1, min_own = INT64_MAX, dflt = -1;
        char errstr[256];
        int n = 0;

        /* Inputs too: a keyed record on the wrong partition is written
         * to its key's (reroute). */
        for (int i = 0; i < plan->cnt; i++)
                if (plan->specs[i].role != SL_TOPIC_RATES)
                        names[n++] = plan->specs[i].name;
        app->limits = sl_calloc((size_t)n + 1, sizeof(*app->limits));
        adm = sl_topics_admin_new(conf, 10000, errstr, sizeof(errstr));
        if (adm &&
            sl_topics_observe(adm, names, n, &obs, errstr, sizeof(errstr)) != 0)
                obs = NULL;
        if (!obs)
                sl_log(LOG_WARNING, "LIMITS",
                       "cannot describe the topics' configs (%s): assuming "
                       "Kafka's default max.message.bytes %d",
                       errstr, SL_RECSIZE_KAFKA_DEFAULT_MAX);
        for (int i = 0; i < n; i++) {
                const sl_topic_state_t *st =
                    obs ? sl_topics_observed_find(obs, names[i]) : NULL;
                struct sl_app_limit_s *l;
                int dup = 0;
                for (int j = 0; j < app->limit_cnt; j++)
                        dup |= !strcmp(app->limits[j].name, names[i]);
                if (dup)
                        continue;
                l = &app->limits[app->limit_cnt++];
                l->name = sl_strdup(names[i]); /* the plan's goes */
                l->max_bytes = -1;
                if (!st)
                        continue;
                if (!st->described) {
                        sl_log(LOG_NOTICE, "LIMITS",
                               "%s: cannot read max.message.bytes (%s): "
                               "assuming the broker's (grant DescribeConfigs "
                               "on it, README, Security)",
                               names[i],
                               st->error ? st->error : "not described");
                        continue;
                }
                for (int k = 0; k < st->config_cnt; k++) {
                        const sl_topic_conf_entry_t *e = &st->configs[k];
                        long long x;
                        if (strcmp(e->key, "max.message.bytes") || !e->value ||
                            (x = atoll(e->value)) <= 0)
                                continue;
                        l->max_bytes = x;
                        if (!e->is_set)
                                dflt = x;
                }
                if (l->max_bytes > max_own) {
                        max_own = l->max_bytes;
                        biggest = l->name;
                }
                if (l->max_bytes > 0 && l->max_bytes < min_own)
                        min_own = l->max_bytes;
        }
        app->broker_max_bytes = dflt > 0 ? dflt : SL_RECSIZE_KAFKA_DEFAULT_MAX;
        if ((v = user_value(conf, "message.max.bytes"))) {
                app->rt.producer_max_bytes = atoll(v);
                if (max_own > app->rt.producer_max_bytes)
                        sl_log(LOG_WARNING, "LIMITS",
                               "[kafka] message.max.bytes = %s is below what "
                               "%s accepts (%" PRId64
                               "): larger records go to the DLQ as too-large",
                               v, biggest, max_own);
        } else {
                app->rt.producer_max_bytes =
                    SL_MAX(max_own, app->broker_max_bytes);
        }
        v = user_value(conf, "compression.codec");
        if (!v)
                v = user_value(conf, "compression.type");
        app->rt.size_exact = !v || !strcmp(v, "none");
        app->rt.max_bytes_floor = SL_MIN(SL_MIN(min_own, app->broker_max_bytes),
                                         app->rt.producer_max_bytes);
        sl_log(LOG_INFO, "LIMITS",
               "records up to %" PRId64 " bytes (message.max.bytes); the "
               "smallest topic limit %" PRId64 ", the broker's %" PRId64 "%s",
               app->rt.producer_max_bytes, app->rt.max_bytes_floor,
               app->broker_max_bytes,
               app->rt.size_exact ? ""
                                  : "; compressed: sizes are the broker's "
                                    "to judge");
        sl_topics_observed_destroy(obs);
        sl_topics_admin_destroy(adm);
        free(names);
        sl_topicplan_destroy(plan);
}

/* sluice's own defaults for one client (config.c, sl_kafka_defaults),
 * where [kafka] does not set them; -1 (kc destroyed) on error. */
static int app_kafka_defaults(sl_app_t *app, rd_kafka_conf_t *kc,
                              sl_kafka_client_t client, char *errstr,
                              size_t errstr_size) {
        for (size_t i = 0; i < sl_kafka_defaults_cnt; i++) {
                const sl_kafka_default_t *d = &sl_kafka_defaults[i];
                if (d->client != client || user_set(app->rt.conf, d->name))
                        continue;
                if (sl_kafka_conf_set(kc, d->name, d->value, errstr,
                                      errstr_size) == -1) {
                        rd_kafka_conf_destroy(kc);
                        return -1;
                }
        }
        return 0;
}

/* The transactional producers.  A stable transactional.id (from the
 * static instance id) lets a restarted instance fence its predecessor and
 * abort its open transaction at once.  The second producer's id is the
 * first's with "#2" after it. */
static void app_txn_id(const sl_app_t *app, int idx, char *buf, size_t size) {
        const char *suffix = idx ? SL_TXNID_SECOND_SUFFIX : "";
        if (app->rt.conf->instance_id && *app->rt.conf->instance_id)
                snprintf(buf, size, "%s-%s%s", app->rt.conf->app_id,
                         app->rt.conf->instance_id, suffix);
        else
                snprintf(buf, size, "%s-%s%s", app->rt.conf->app_id,
                         app->client_id, suffix);
}

static rd_kafka_conf_t *app_producer_conf(void *opaque, int idx, char *errstr,
                                          size_t errstr_size) {
        sl_app_t *app = opaque;
        rd_kafka_conf_t *kc;
        char txnid[512], buf[64];
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return NULL;
        app_txn_id(app, idx, txnid, sizeof(txnid));
        SET(kc, "transactional.id", txnid);
        snprintf(buf, sizeof(buf), "%lld",
                 (long long)app->rt.conf->transaction_timeout_ms);
        SET(kc, "transaction.timeout.ms", buf);
        SET(kc, "client.id", app->client_id);
        if (app_kafka_defaults(app, kc, SL_KAFKA_PRODUCER, errstr,
                               errstr_size) == -1)
                return NULL;
        /* The largest record any written topic accepts (app_limits_learn):
         * librdkafka's default, 1,000,000, is below Kafka's. */
        if (!user_set(app->rt.conf, "message.max.bytes")) {
                snprintf(buf, sizeof(buf), "%" PRId64,
                         SL_MIN(app->rt.producer_max_bytes, 1000000000));
                SET(kc, "message.max.bytes", buf);
        }
        /* A batch of many records must fit the smallest topic too: its
         * limit less the batch's header and some slack (librdkafka counts
         * framing its own way).  One record larger than batch.size still
         * goes, alone in its batch. */
        if (!user_set(app->rt.conf, "batch.size") &&
            app->rt.max_bytes_floor - 128 < 1000000) {
                snprintf(buf, sizeof(buf), "%" PRId64,
                         SL_MAX(app->rt.max_bytes_floor - 128, 1));
                SET(kc, "batch.size", buf);
        }
        SET(kc, "delivery.report.only.error",
            app->has_tracking ? "false" : "true");
        return kc;
}

/* The group member. */
static rd_kafka_conf_t *app_consumer_conf(void *opaque, char *errstr,
                                          size_t errstr_size) {
        sl_app_t *app = opaque;
        rd_kafka_conf_t *kc;
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return NULL;
        SET(kc, "group.id", app->rt.conf->app_id);
        if (app->rt.conf->instance_id && *app->rt.conf->instance_id)
                SET(kc, "group.instance.id", app->rt.conf->instance_id);
        SET(kc, "partition.assignment.strategy", "cooperative-sticky");
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "enable.auto.offset.store", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "auto.offset.reset", "earliest");
        SET(kc, "client.id", app->client_id);
        if (app_kafka_defaults(app, kc, SL_KAFKA_CONSUMER, errstr,
                               errstr_size) == -1)
                return NULL;
        rd_kafka_conf_set_rebalance_cb(kc, app_rebalance_cb);
        return kc;
}

/* The lookup client (app.h): read_committed, so that a watermark's "high"
 * is the last stable offset; it joins no group and fetches nothing.  It
 * has a group.id all the same: librdkafka 2.0.2 passes a committed-offset
 * lookup's coordinator errors (NOT_COORDINATOR, as after a broker pause)
 * to the client's group handle, which a consumer without group.id lacks
 * (a NULL dereference; 0403 under load crashed so). */
static rd_kafka_conf_t *app_lookup_conf(sl_app_t *app, char *errstr,
                                        size_t errstr_size) {
        rd_kafka_conf_t *kc;
        if (!(kc = app_kconf(app, errstr, errstr_size)))
                return NULL;
        SET(kc, "group.id", SL_ACLS_REBUILD_GROUP); /* acls.h */
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "client.id", app->client_id);
        return kc;
}

/* The lookup client gives up on a silent connection after
 * SL_LOOKUP_SOCKET_TMO_MS at most (never raised above the configured
 * value): its requests all have deadlines of 2 to 5 s, and a broker whose
 * connection is torn down is no longer picked by the probe. */
static int app_lookup_socket_timeout(rd_kafka_conf_t *kc, char *errstr,
                                     size_t errstr_size) {
        char buf[32];
        size_t size = sizeof(buf);
        if (rd_kafka_conf_get(kc, "socket.timeout.ms", buf, &size) ==
                RD_KAFKA_CONF_OK &&
            atoll(buf) <= SL_LOOKUP_SOCKET_TMO_MS)
                return 0;
        snprintf(buf, sizeof(buf), "%d", SL_LOOKUP_SOCKET_TMO_MS);
        return sl_kafka_conf_set(kc, "socket.timeout.ms", buf, errstr,
                                 errstr_size);
}

/* The reader: assign-only, for rebuilds and global tables.  It is the
 * lookup client's configuration (one group.id, read_committed, nothing
 * committed) plus what fetching needs, and its own client.id, the one name
 * an operator can set a rebuild quota on (README, Kafka faults). */
static rd_kafka_conf_t *app_reader_conf(sl_app_t *app, char *errstr,
                                        size_t errstr_size) {
        rd_kafka_conf_t *kc;
        if (!(kc = app_lookup_conf(app, errstr, errstr_size)))
                return NULL;
        SET(kc, "enable.auto.offset.store", "false");
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
        return kc;
}
#undef SET

/* The producers learn each topic they will write to now, not at the first
 * record (which would wait for the next metadata refresh): the handles are
 * kept while the producers live, so librdkafka keeps the topics known. */
static void app_warm_topics(sl_app_t *app) {
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = app->rt.pipelines[i].conf;
                const char *names[] = {pc->changelog, pc->dlq, pc->output,
                                       pc->overflow,
                                       pc->reroute ? pc->input : NULL};
                for (size_t j = 0; j < SL_ARRAY_SIZE(names); j++) {
                        rd_kafka_topic_t *rkt[SL_TXN_PRODUCERS_MAX] = {NULL};
                        int k;
                        if (!names[j])
                                continue;
                        topic_cache_get(app, names[j]);
                        for (k = 0; k < app->producer_cnt; k++)
                                if (!(rkt[k] = rd_kafka_topic_new(
                                          app->producers[k], names[j], NULL)))
                                        break;
                        if (k < app->producer_cnt) {
                                while (k-- > 0)
                                        rd_kafka_topic_destroy(rkt[k]);
                                continue;
                        }
                        app->warm = sl_realloc(app->warm,
                                               sizeof(*app->warm) *
                                                   (size_t)(app->warm_cnt + 1));
                        app->warm[app->warm_cnt].name = names[j];
                        memcpy(app->warm[app->warm_cnt++].rkt, rkt,
                               sizeof(rkt));
                }
        }
}

/* Drops the warm handles (before the producers go). */
static void app_cool_topics(sl_app_t *app) {
        for (int i = 0; i < app->warm_cnt; i++)
                for (int k = 0; k < 2; k++)
                        if (app->warm[i].rkt[k])
                                rd_kafka_topic_destroy(app->warm[i].rkt[k]);
        app->warm_cnt = 0;
}

static rd_kafka_topic_t *app_topic(const sl_runtime_t *rt, const char *name) {
        const sl_app_t *app = app_of_const(rt);
        /* Operators pass the configured name itself; a record replayed
         * from the outbox carries a copy. */
        for (int i = 0; i < app->warm_cnt; i++)
                if (app->warm[i].name == name)
                        return app->warm[i].rkt[app->turn];
        for (int i = 0; i < app->warm_cnt; i++)
                if (!strcmp(app->warm[i].name, name))
                        return app->warm[i].rkt[app->turn];
        return NULL;
}

/* When librdkafka's fetcher may have stopped: a tenth below the consumer's
 * queued.min.messages (the queue is sampled at each batch taken off it;
 * its broker thread decides at other moments). */
static void app_fetch_full_at(sl_app_t *app) {
        char buf[32];
        size_t sz = sizeof(buf);
        long v = 0;
        app->fetch_full = 0;
        app->fetch_full_at = 0;
        if (rd_kafka_conf_get(rd_kafka_conf(app->rt.consumer),
                              "queued.min.messages", buf,
                              &sz) == RD_KAFKA_CONF_OK &&
            (v = strtol(buf, NULL, 10)) > 0)
                app->fetch_full_at = (size_t)v - (size_t)v / 10;
}

static void app_clients_ready(void *opaque, rd_kafka_t *const *producers,
                              int producer_cnt, rd_kafka_t *consumer) {
        sl_app_t *app = opaque;
        rd_kafka_resp_err_t err;
        char errstr[256];

        app->producer_cnt = SL_MIN(producer_cnt, SL_TXN_PRODUCERS_MAX);
        for (int i = 0; i < app->producer_cnt; i++)
                app->producers[i] = producers[i];
        app->turn = 0;
        app->rt.producer = producers[0];
        app->rt.consumer = consumer;
        rd_kafka_poll_set_consumer(consumer);
        app->consumer_q = rd_kafka_queue_get_consumer(consumer);
        app_fetch_full_at(app);
        app->rt.consumer_w =
            sl_kwatch_new(app->rt.loop, app->consumer_q, app_serve_consumer,
                          app, errstr, sizeof(errstr));
        sl_assert(app->rt.consumer_w);
        app_warm_topics(app);
        if ((err = app_subscribe(app))) {
                sl_log(LOG_CRIT, "INIT", "subscribe: %s",
                       rd_kafka_err2str(err));
                app_exit_hook(app, SL_EXIT_FAIL);
                return;
        }
        sl_log(LOG_NOTICE, "INIT", "Kafka clients ready; joining group %s%s%s",
               app->rt.conf->app_id,
               app->rt.conf->instance_id && *app->rt.conf->instance_id ? " as "
                                                                       : "",
               app->rt.conf->instance_id ? app->rt.conf->instance_id : "");
        sl_app_update_ready(app);
}

/* The next transaction is on producers[idx]. */
static void app_turn(void *opaque, int idx) {
        sl_app_t *app = opaque;
        if (idx < app->producer_cnt) {
                app->turn = idx;
                app->rt.producer = app->producers[idx];
        }
}

static void task_destroy_cb(sl_task_t *t) {
        t->pl->tasks[t->partition] = NULL;
        sl_task_destroy(t);
}

static void app_clients_lost(void *opaque) {
        sl_app_t *app = opaque;
        app->rt.tracked_inflight = 0; /* their reports went with the clients */
        app_held_clear(app);
        sl_outbox_clear(app->rt.outbox);
        app->commit_wanted = 0;
        if (app->rt.revoking)
                rd_kafka_topic_partition_list_destroy(app->rt.revoking);
        app->rt.revoking = NULL;
        app->rt.revoke_commit_started = 0;
        app_for_each_task(app, task_destroy_cb);
        for (int i = 0; i < app->rt.pipeline_cnt; i++)
                sl_parts_reset(&app->rt.pipelines[i]);
        sl_kwatch_close(app->rt.consumer_w);
        app->rt.consumer_w = NULL;
        if (app->consumer_q)
                rd_kafka_queue_destroy(app->consumer_q);
        app->consumer_q = NULL;
        app_cool_topics(app);
        app->rt.consumer = NULL;
        app->rt.producer = app->producers[0] = app->producers[1] = NULL;
        app->producer_cnt = 0;
        app->turn = 0;
        app->assigned = 0;
        app->rejoin_at_ms = 0; /* the new consumer subscribes anyway */
        app->groupcheck.gap_since_ms = 0;
        sl_app_update_ready(app);
}

static int app_pipelines_init(sl_app_t *app, const int *in_cnt, char *errstr,
                              size_t errstr_size);

/* Checks every pipeline's topics (parts.h), then sets the pipelines up. */
static int app_pipelines(sl_app_t *app, char *errstr, size_t errstr_size) {
        int *in_cnt =
            sl_calloc((size_t)app->rt.conf->pipeline_cnt + 1, sizeof(*in_cnt));
        int r;

        /* Before the loop runs: a blocking look is fine here. */
        r = sl_parts_check_start(app->rt.reader, app->rt.conf, in_cnt, errstr,
                                 errstr_size);
        if (r == 0)
                r = app_pipelines_init(app, in_cnt, errstr, errstr_size);
        free(in_cnt);
        return r;
}

/* Every pipeline's series, whatever its type (labelled pipeline="<name>"). */
static const sl_metric_def_t pipeline_metrics[] = {
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_in,
                       "sluice_records_in_total", "Input records read."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_out,
                       "sluice_records_out_total",
                       "Records produced to outputs/targets."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, records_rerouted,
                       "sluice_records_rerouted_total",
                       "Keyed input records that arrived on a partition their "
                       "key does not belong to (input_partitioner) and were "
                       "moved to the right one."),
    SL_METRICS_COUNTER(sl_pipeline_metrics_t, rebuild_records,
                       "sluice_rebuild_records_total",
                       "Changelog records applied during rebuilds."),
    SL_METRICS_GAUGE(sl_pipeline_metrics_t, rebuild_seconds,
                     "sluice_rebuild_last_seconds",
                     "Duration of the last partition rebuild."),
    SL_METRICS_GAUGE_L(sl_pipeline_metrics_t, partitions_running,
                       "sluice_partitions", "Assigned partitions by state.",
                       "state", "running"),
    SL_METRICS_GAUGE_L(sl_pipeline_metrics_t, partitions_rebuilding,
                       "sluice_partitions", "Assigned partitions by state.",
                       "state", "rebuilding"),
    SL_METRICS_GAUGE(
        sl_pipeline_metrics_t, consumer_lag, "sluice_consumer_lag",
        "Input records not yet processed (assigned partitions, rebuilding "
        "ones included)."),
};

static int app_pipelines_init(sl_app_t *app, const int *in_cnt, char *errstr,
                              size_t errstr_size) {
        app->rt.pipeline_cnt = app->rt.conf->pipeline_cnt;
        app->rt.pipelines =
            sl_calloc(app->rt.pipeline_cnt, sizeof(sl_pipeline_t));
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                const sl_pipeline_conf_t *pc = &app->rt.conf->pipelines[i];
                sl_pipeline_metrics_t *pm;
                int cnt = in_cnt[i];

                pl->conf = pc;
                pl->app = app;
                pl->rt = &app->rt;
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
                pl->partition_cnt = cnt;
                pl->tasks = sl_calloc(cnt, sizeof(*pl->tasks));
                pm = pl->metrics = sl_calloc(1, sizeof(*pm));
                sl_metrics_register(app->rt.metrics, pipeline_metrics,
                                    SL_ARRAY_SIZE(pipeline_metrics), pm,
                                    pc->name);
                pl->parts = sl_parts_new(app, pl);
                if (pl->op->pipeline_init &&
                    pl->op->pipeline_init(pl, errstr, errstr_size) == -1)
                        return -1;
                if (pl->op->table_topic && pl->op->table_topic(pl)) {
                        const char *topic = pl->op->table_topic(pl);
                        int tcnt = sl_kafka_partition_count(app->rt.reader,
                                                            topic, 10000);
                        if (tcnt == SL_KAFKA_PARTS_REFUSED) {
                                char why[400];
                                snprintf(errstr, errstr_size,
                                         "pipeline %s: topic %s is hidden: "
                                         "not authorized: %s",
                                         pc->name, topic,
                                         app_refusal(app, SL_ACL_TOPIC, topic,
                                                     SL_ACL_READ, why,
                                                     sizeof(why)));
                                return -1;
                        }
                        if (tcnt <= 0) {
                                snprintf(errstr, errstr_size,
                                         "pipeline %s: topic %s %s (run "
                                         "`sluice topics apply`)",
                                         pc->name, topic,
                                         tcnt == 0 ? "does not exist"
                                                   : "cannot be described");
                                return -1;
                        }
                        if (app_table_start(app, pl, tcnt, errstr,
                                            errstr_size) == -1)
                                return -1;
                }
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* Shutdown.                                                           */

/* One step of the shutdown; called whenever something it waits for may
 * have happened (the transaction settled, the consumer served, a timer). */
static void app_stop_step(sl_app_t *app) {
        rd_kafka_error_t *error;
        sl_txn_state_t s = sl_txn_state(app->rt.txn);
        if (s == SL_TXN_CREATING || s == SL_TXN_RECOVERING ||
            s == SL_TXN_DEAD || !app->rt.consumer) {
                /* No clients to leave with: nothing is open. */
                app->phase = SL_RUN_STOPPED;
                uv_stop(app->rt.loop);
                return;
        }
        switch (app->phase) {
        case SL_RUN_STOP_COMMIT:
                if (sl_txn_commit(app->rt.txn) != 1)
                        return; /* committing, or busy: called again */
                app->phase = SL_RUN_STOP_CLOSE;
                /* Closing revokes every partition through the rebalance
                 * callback on the consumer's queue, which we keep
                 * serving. */
                error = rd_kafka_consumer_close_queue(app->rt.consumer,
                                                      app->consumer_q);
                if (error) {
                        sl_log(LOG_WARNING, "SHUTDOWN", "consumer close: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
                sl_kwatch_kick(app->rt.consumer_w);
                break;
        case SL_RUN_STOP_CLOSE:
                if (!rd_kafka_consumer_closed(app->rt.consumer))
                        return;
                if (sl_txn_commit(app->rt.txn) != 1)
                        return;
                app->phase = SL_RUN_STOPPED;
                uv_stop(app->rt.loop);
                break;
        default:
                break;
        }
}

static void app_on_stop_timer(uv_timer_t *timer) {
        app_stop_step(timer->data);
}

static void app_stop(sl_app_t *app, const char *why) {
        if (app->phase != SL_RUN_RUNNING)
                return;
        sl_log(LOG_NOTICE, "SHUTDOWN", "%s: committing and leaving", why);
        /* Bounded by a thread of its own: works as PID 1 too. */
        sl_watchdog_shutdown_deadline(
            app->watchdog, app->rt.conf->shutdown_grace_ms, SL_EXIT_FAIL);
        app->phase = SL_RUN_STOP_COMMIT;
        sl_txn_stopping(app->rt.txn);
        app_held_clear(app);
        sl_app_update_ready(app);
        uv_timer_start(&app->stop_timer, app_on_stop_timer, 0, 20);
}

static void app_on_signal(uv_signal_t *sig, int signum) {
        sl_app_t *app = sig->data;
        app_stop(app, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void app_destroy(sl_app_t *app) {
        /* The API first: its lookups reach into the tasks. */
        sl_api_stop(app->api);
        app->api = NULL;
        /* Tasks first: nothing may call back into them after. */
        if (app->rt.pipelines)
                app_for_each_task(app, task_destroy_cb);
        app_held_clear(app);
        free(app->held);
        sl_outbox_destroy(app->rt.outbox);
        if (app->rt.revoking)
                rd_kafka_topic_partition_list_destroy(app->rt.revoking);
        sl_kwatch_close(app->rt.consumer_w);
        sl_kwatch_close(app->rt.reader_w);
        app->rt.consumer_w = app->rt.reader_w = NULL;
        if (app->consumer_q)
                rd_kafka_queue_destroy(app->consumer_q);
        app_cool_topics(app);
        free(app->warm);
        for (int i = 0; i < app->limit_cnt; i++)
                free((char *)app->limits[i].name);
        free(app->limits);
        /* The clients go with the txn; the rebalance callback ignores a
         * consumer that is no longer app->rt.consumer. */
        app->rt.consumer = app->rt.producer = NULL;
        app->producers[0] = app->producers[1] = NULL;
        app->producer_cnt = 0;
        sl_txn_destroy(app->rt.txn);
        topic_cache_destroy(app);
        sl_acls_destroy(app->acls);
        app->acls = NULL;
        for (int i = 0; i < app->rt.pipeline_cnt; i++) {
                sl_pipeline_t *pl = &app->rt.pipelines[i];
                if (pl->op && pl->op->pipeline_destroy)
                        pl->op->pipeline_destroy(pl);
                sl_parts_destroy(pl->parts);
                free(pl->tasks);
                free(pl->metrics);
                free(pl->table_end);
                free(pl->table_pos);
                free(pl->table_asks);
                sl_pipeline_caps_destroy(pl);
        }
        free(app->rt.pipelines);
        sl_kquery_destroy(app->rt.kq);
        if (app->offsets)
                rd_kafka_destroy(app->offsets);
        sl_kwatch_close(app->lookup_w);
        app->lookup_w = NULL;
        if (app->lookup_q)
                rd_kafka_queue_destroy(app->lookup_q);
        if (app->lookup)
                rd_kafka_destroy(app->lookup);
        if (app->reader_q)
                rd_kafka_queue_destroy(app->reader_q);
        if (app->rt.reader) {
                rd_kafka_consumer_close(app->rt.reader);
                rd_kafka_destroy(app->rt.reader);
        }
        if (app->http)
                sl_http_set_alive_fn(app->http, NULL, NULL);
        sl_watchdog_destroy(app->watchdog);
        uv_close((uv_handle_t *)&app->commit_timer, NULL);
        uv_close((uv_handle_t *)&app->soon_timer, NULL);
        uv_close((uv_handle_t *)&app->linger_timer, NULL);
        uv_close((uv_handle_t *)&app->stats_timer, NULL);
        uv_close((uv_handle_t *)&app->stop_timer, NULL);
        uv_close((uv_handle_t *)&app->sigterm, NULL);
        uv_close((uv_handle_t *)&app->sigint, NULL);
        uv_run(app->rt.loop, UV_RUN_DEFAULT);
        sl_http_stop(app->http);
        sl_metrics_destroy(app->rt.metrics);
        uv_loop_close(app->rt.loop);
        free(app->rt.loop);
}

/* The HTTP API's lookups (api.h), on the loop thread: what the task owning
 * partition p of pipeline pi holds for key. */
static sl_api_lookup_t app_api_lookup(void *opaque, int pi, int32_t p,
                                      const void *key, size_t keylen,
                                      char **jsonp) {
        sl_app_t *app = opaque;
        sl_pipeline_t *pl;
        sl_task_t *t;
        json_t *j;

        if (pi < 0 || pi >= app->rt.pipeline_cnt)
                return SL_API_UNOWNED;
        pl = &app->rt.pipelines[pi];
        /* Ownership first: another member's partition is forwarded there,
         * whatever this one can describe. */
        if (!pl->tasks || p < 0 || p >= pl->partition_cnt ||
            !(t = pl->tasks[p]))
                return SL_API_UNOWNED;
        if (t->state != SL_TASK_RUNNING || t->revoking)
                return SL_API_REBUILDING;
        if (!pl->op || !pl->op->describe)
                return SL_API_UNSUPPORTED;
        if (!(j = pl->op->describe(t, key, keylen)))
                return SL_API_ABSENT;
        *jsonp = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        return *jsonp ? SL_API_FOUND : SL_API_ABSENT;
}

static int app_init(sl_app_t *app, char *errstr, size_t errstr_size) {
        const sl_conf_t *conf = app->rt.conf;
        sl_txn_conf_t tc = {0};
        sl_txn_hooks_t hooks = {
            .opaque = app,
            .producer_conf = app_producer_conf,
            .consumer_conf = app_consumer_conf,
            .clients_ready = app_clients_ready,
            .turn = app_turn,
            .clients_lost = app_clients_lost,
            .offsets = app_offsets,
            .committed = app_committed,
            .aborted = app_aborted,
            .resumed = app_resumed,
            .delivery = app_on_delivery,
            .exit = app_exit_hook,
            .not_authorized = app_txn_refused,
        };

        app->rt.outbox =
            sl_outbox_new(SL_OUTBOX_MAX_BYTES, SL_OUTBOX_MAX_RECORDS);
        rd_kafka_conf_t *kc;

        if (conf->metrics_listen && *conf->metrics_listen) {
                sl_http_limits_t limits = {
                    conf->metrics_max_connections,
                    conf->metrics_max_connections_client,
                    conf->metrics_request_timeout_ms,
                };
                app->http = sl_http_start(conf->metrics_listen, app->rt.metrics,
                                          &limits, errstr, errstr_size);
                if (!app->http)
                        return -1;
                sl_log(LOG_INFO, "HTTP", "metrics on %s (port %d)",
                       conf->metrics_listen, sl_http_port(app->http));
                /* Alive while starting; the watchdog judges the loop once
                 * it runs. */
                sl_http_set_alive(app->http, 1);
        }
        sl_app_update_ready(app);
        if (conf->api_listen && *conf->api_listen) {
                size_t n = strlen(app->client_id);
                if (!(app->api = sl_api_start(conf, app->rt.loop,
                                              app->rt.metrics, app_api_lookup,
                                              app, errstr, errstr_size)))
                        return -1;
                /* Members find each other's API in the group's client ids
                 * (api.h): before any client is created. */
                snprintf(app->client_id + n, sizeof(app->client_id) - n, "@%s",
                         sl_api_advertised(app->api));
        }

        if (!(kc = app_reader_conf(app, errstr, errstr_size)))
                return -1;
        if (!(app->rt.reader =
                  rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        app->reader_q = rd_kafka_queue_get_consumer(app->rt.reader);
        rd_kafka_poll_set_consumer(app->rt.reader);
        if (!(kc = app_lookup_conf(app, errstr, errstr_size)))
                return -1;
        /* Its group lookups must see a moved coordinator (kquery.h). */
        if (sl_kafka_conf_set(kc, "metadata.max.age.ms", SL_KQUERY_COORD_TTL,
                              errstr, errstr_size) == -1 ||
            app_lookup_socket_timeout(kc, errstr, errstr_size) == -1) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        if (!(app->lookup =
                  rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        app->lookup_q = rd_kafka_queue_get_main(app->lookup);
        if (!(app->lookup_w =
                  sl_kwatch_new(app->rt.loop, app->lookup_q, app_serve_lookup,
                                app, errstr, errstr_size)))
                return -1;
        if (!(app->rt.kq = sl_kquery_new(app->rt.loop, app->lookup, errstr,
                                         errstr_size)))
                return -1;
        /* Committed offsets through a consumer of the group (kquery.h). */
        if (!(kc = app_lookup_conf(app, errstr, errstr_size)))
                return -1;
        if (sl_kafka_conf_set(kc, "group.id", app->rt.conf->app_id, errstr,
                              errstr_size) == -1) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        if (!(app->offsets =
                  rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        sl_kquery_set_offsets_client(app->rt.kq, app->offsets,
                                     app->rt.conf->app_id);
        /* Before the pipelines: their set-up reads what topics take. */
        app_limits_learn(app);
        if (app_pipelines(app, errstr, errstr_size) == -1)
                return -1;
        if (!(app->rt.reader_w =
                  sl_kwatch_new(app->rt.loop, app->reader_q, app_serve_reader,
                                app, errstr, errstr_size)))
                return -1;

        for (int i = 0; i < conf->pipeline_cnt; i++)
                if (app->rt.pipelines[i].op->delivered)
                        app->has_tracking = 1;
        if (app->has_tracking) {
                hooks.precommit = app_precommit;
                hooks.reports_pending = app_reports_pending;
        }
        for (int i = 0; i < conf->pipeline_cnt; i++)
                if (app->rt.pipelines[i].op->seal)
                        hooks.seal = app_seal;
        tc.group_id = conf->app_id;
        tc.instance_id = conf->instance_id;
        tc.client_id = app->client_id;
        tc.transaction_timeout_ms = conf->transaction_timeout_ms;
        tc.recovery_timeout_ms = conf->recovery_timeout_ms;
        tc.producers = (int)conf->transaction_producers;
        tc.session_timeout_ms = 45000; /* librdkafka's default */
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, "session.timeout.ms"))
                        tc.session_timeout_ms = atoll(conf->kafka[i].value);
        if (!(app->rt.txn = sl_txn_new(app->rt.loop, &tc, &hooks, app->rt.kq,
                                       app->rt.metrics, errstr, errstr_size)))
                return -1;
        sl_txn_start(app->rt.txn);
        /* Last: the loop counts as turning from here on. */
        app->watchdog =
            sl_watchdog_new(app->rt.loop, 100, conf->loop_stall_timeout_ms,
                            app->rt.metrics, errstr, errstr_size);
        if (!app->watchdog)
                return -1;
        if (app->http)
                sl_http_set_alive_fn(app->http, sl_watchdog_probe,
                                     app->watchdog);
        return 0;
}

/* The app's own series (no pipeline label). */
static const sl_metric_def_t app_metrics[] = {
    SL_METRICS_COUNTER(sl_app_t, m_rebalances, "sluice_rebalances_total",
                       "Rebalance events (assignments and revocations)."),
    SL_METRICS_GAUGE(sl_app_t, m_kafka_up, "sluice_kafka_up",
                     "1 while Kafka answers (a metadata probe every 2 s), "
                     "else 0."),
    SL_METRICS_GAUGE(sl_app_t, m_ready, "sluice_ready",
                     "1 while /readyz answers 200 (every assigned partition "
                     "rebuilt, Kafka answering, no transaction trouble), "
                     "else 0."),
    SL_METRICS_GAUGE(sl_app_t, m_unowned, "sluice_group_unowned_partitions",
                     "Input partitions no member of the group owned at the "
                     "last look (every 5 s) while the group was stable."),
    SL_METRICS_COUNTER(sl_app_t, m_group_rejoins, "sluice_group_rejoins_total",
                       "Times this member left and rejoined the group because "
                       "input partitions had no owner for 15 s."),
    SL_METRICS_GAUGE(sl_app_t, m_catching_up, "sluice_catching_up",
                     "1 while the input is behind and the regular commit waits "
                     "backlog_commit_interval instead of commit_interval."),
    SL_METRICS_COUNTER(sl_app_t, m_deferred,
                       "sluice_txn_deferred_records_total",
                       "Records decided while a commit was in flight, sent "
                       "into the next transaction when it returned."),
};

/* The app's own metric families (the pipelines', the transaction's and
 * the watchdog's are registered by their modules), and malloc's figures
 * where the allocator gives them. */
static void app_metrics_init(sl_app_t *app) {
        /* Only the figures this allocator gives. */
        static const char help[] =
            "What malloc holds (every thread's, librdkafka's too): "
            "allocated = handed out and not freed; resident = its "
            "pages in RAM, freed ones not yet given back and its "
            "metadata included (jemalloc only). Every second.";
        int64_t allocated, resident;

        sl_metrics_register(app->rt.metrics, app_metrics,
                            SL_ARRAY_SIZE(app_metrics), app, NULL);
        sl_gauge_set(app->m_kafka_up, 1);
        sl_mem_stats(&allocated, &resident);
        if (allocated >= 0)
                app->m_malloc_allocated =
                    sl_metrics_gauge(app->rt.metrics, "sluice_malloc_bytes",
                                     help, "kind", "allocated", NULL);
        if (resident >= 0)
                app->m_malloc_resident =
                    sl_metrics_gauge(app->rt.metrics, "sluice_malloc_bytes",
                                     help, "kind", "resident", NULL);
        if (app->m_malloc_allocated)
                sl_gauge_set(app->m_malloc_allocated, (double)allocated);
        if (app->m_malloc_resident)
                sl_gauge_set(app->m_malloc_resident, (double)resident);
}

/* What the tasks ask of the app (runtime.h). */
static int app_hook_may_produce(const sl_runtime_t *rt) {
        return app_may_produce(app_of_const(rt));
}

static void app_hook_update_ready(sl_runtime_t *rt) {
        sl_app_update_ready(app_of(rt));
}

static const sl_runtime_hooks_t app_hooks = {
    .may_produce = app_hook_may_produce,
    .update_ready = app_hook_update_ready,
    .topic = app_topic,
    .max_bytes = app_max_bytes,
};

static int app_run(sl_conf_t *conf) {
        sl_app_t app_s = {0}, *app = &app_s;
        char errstr[512], host[64] = "host";
        int rc = SL_EXIT_FAIL;

        app->rt.conf = conf;
        app->kafka_up = 1;
        app->rt.loop = sl_malloc(sizeof(uv_loop_t));
        uv_loop_init(app->rt.loop);
        /* Unique to this process: how a fenced instance tells its own
         * membership from another process's (txn.h). */
        gethostname(host, sizeof(host));
        host[20] = '\0';
        snprintf(app->client_id, sizeof(app->client_id), "sluice-%s-%d-%llx",
                 host, (int)getpid(),
                 (unsigned long long)(sl_mono_us() ^ (uint64_t)sl_now_ms()));
        app->rt.metrics = sl_metrics_new();
        app->rt.hooks = &app_hooks;
        topic_cache_new(app);
        app_metrics_init(app);
        uv_timer_init(app->rt.loop, &app->commit_timer);
        uv_timer_init(app->rt.loop, &app->soon_timer);
        uv_timer_init(app->rt.loop, &app->linger_timer);
        uv_timer_init(app->rt.loop, &app->stats_timer);
        uv_timer_init(app->rt.loop, &app->stop_timer);
        uv_signal_init(app->rt.loop, &app->sigterm);
        uv_signal_init(app->rt.loop, &app->sigint);
        app->commit_timer.data = app->soon_timer.data = app;
        app->linger_timer.data = app;
        /* Tests only: a window wide enough to judge on a busy machine. */
        app->linger_ms = getenv("SLUICE_TEST_COMMIT_LINGER_MS")
                             ? atoi(getenv("SLUICE_TEST_COMMIT_LINGER_MS"))
                             : SL_COMMIT_LINGER_MS;
        app->stats_timer.data = app->stop_timer.data = app;
        app->sigterm.data = app->sigint.data = app;

        if (app_init(app, errstr, sizeof(errstr)) == -1) {
                sl_log(LOG_ERR, "INIT", "%s", errstr);
                goto out;
        }
        uv_timer_start(&app->commit_timer, app_on_commit_timer,
                       conf->commit_interval_ms, conf->commit_interval_ms);
        uv_timer_start(&app->stats_timer, app_on_stats_timer, 1000, 1000);
        uv_signal_start(&app->sigterm, app_on_signal, SIGTERM);
        uv_signal_start(&app->sigint, app_on_signal, SIGINT);
        sl_log(LOG_NOTICE, "INIT", "sluice %s running %d pipelines as %s",
               SL_VERSION, app->rt.pipeline_cnt, conf->app_id);

        app->exit_code = SL_EXIT_OK;
        uv_run(app->rt.loop, UV_RUN_DEFAULT);
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
