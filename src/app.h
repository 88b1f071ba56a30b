/*
 * app.h — the process runtime, for the runtime modules (app.c, task.c).
 * Operators see only task.h.
 *
 * One process is one consumer-group member:
 *
 *   consumer   group member (cooperative-sticky, static membership,
 *              read_committed), subscribed to every pipeline's input;
 *              offsets are committed only through the producer's
 *              transactions, never by the consumer.
 *   producer   transactional; carries outputs, changelog, overflow and DLQ
 *              records and the input offsets in one transaction.
 *   reader     an assign-only consumer (no group) that reads changelog
 *              partitions during rebuild (read_committed, partition EOF on).
 *
 * All three are served on the libuv loop thread through sl_kwatch.
 */
#ifndef SL_APP_H
#define SL_APP_H

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "config.h"
#include "http.h"
#include "kafka.h"
#include "metrics.h"
#include "task.h"

typedef struct sl_topic_cache_s sl_topic_cache_t;

/* Records the broker refused for good at delivery (too large for the topic,
 * not authorized, ...).  Such a failure aborts the transaction, and after
 * the rebuild the same work would produce the same record again, forever.
 * The broker refuses a whole batch, so a failed record is first only a
 * SUSPECT: next time it is sent alone (flushed before and after).  Failing
 * alone makes it GUILTY, and sl_task_produce() then refuses it up front so
 * the operator sends it to the DLQ; going through alone clears it. */
#define SL_REFUSED_MAX 256
typedef enum {
        SL_REFUSED_NONE = 0,
        SL_REFUSED_SUSPECT,
        SL_REFUSED_GUILTY,
} sl_refused_state_t;

typedef struct sl_refused_s {
        uint64_t hash; /* of topic and key; 0 = empty slot */
        sl_refused_state_t state;
        rd_kafka_resp_err_t err;
        int64_t expires_ms;
} sl_refused_t;

struct sl_app_s {
        sl_conf_t *conf;
        uv_loop_t *loop;

        rd_kafka_t *consumer;
        rd_kafka_t *producer;
        rd_kafka_t *reader;
        rd_kafka_queue_t *consumer_q;
        rd_kafka_queue_t *producer_q;
        rd_kafka_queue_t *reader_q;
        sl_kwatch_t *consumer_w;
        sl_kwatch_t *producer_w;
        sl_kwatch_t *reader_w;

        sl_pipeline_t *pipelines;
        int pipeline_cnt;

        /* Transaction state. */
        int txn_open;
        int txn_failed;      /* a produce failed: the next commit aborts */
        int64_t txn_records; /* records produced in the open transaction */
        int64_t last_commit_us;
        uv_timer_t commit_timer; /* every commit_interval */
        uv_timer_t soon_timer;   /* "commit promptly" */
        int soon_armed;

        /* Lifecycle. */
        int stopping;
        int exit_code;
        int assigned_once;  /* the group gave us an assignment (maybe empty) */
        int rebuilding_cnt; /* tasks in REBUILDING */
        uv_signal_t sigterm;
        uv_signal_t sigint;
        uv_timer_t stats_timer;

        sl_topic_cache_t *topics; /* metadata cache for operator targets */
        rd_kafka_topic_t **warm;  /* producer handles of pipeline topics */
        int warm_cnt;
        sl_refused_t refused[SL_REFUSED_MAX];
        int refused_next;
        uint32_t epoch_counter; /* task epochs (task.h) */
        int has_tracking;       /* some operator tracks deliveries */

        sl_metrics_t *metrics;
        sl_http_t *http;
        sl_counter_t *m_rebalances;
        sl_counter_t *m_commits;
        sl_counter_t *m_aborts;
};

/* Runtime internals shared by app.c and task.c. */
int sl_app_txn_begin(sl_app_t *app);
void sl_app_txn_fail(sl_app_t *app, const char *why);
void sl_app_commit_soon(sl_app_t *app);
void sl_app_update_ready(sl_app_t *app);

/* The refusal state of a record (topic, key, value), its error in *errp. */
sl_refused_state_t sl_app_refused(sl_app_t *app, const char *topic,
                                  const void *key, size_t keylen,
                                  const void *value, size_t valuelen,
                                  rd_kafka_resp_err_t *errp);
/* Forgets a record: it went through when sent alone. */
void sl_app_refused_clear(sl_app_t *app, const char *topic, const void *key,
                          size_t keylen, const void *value, size_t valuelen);

/* The msg_opaque of a produced record: bit 0, sent alone to test a
 * suspect; bit 1, tracked (op->delivered wants its offset), with the
 * pipeline index in bits 2-9, the partition in bits 10-31 and the task's
 * epoch in bits 32-63. */
#define SL_MSG_ISOLATED ((uintptr_t)1)
#define SL_MSG_TRACKED  ((uintptr_t)2)
#define SL_MSG_TRACK(pl_index, partition, epoch)                               \
        (SL_MSG_TRACKED | ((uintptr_t)(pl_index) << 2) |                       \
         ((uintptr_t)(partition) << 10) | ((uintptr_t)(epoch) << 32))

/* task.c */
sl_task_t *sl_task_new(sl_app_t *app, sl_pipeline_t *pl, int32_t partition);
void sl_task_destroy(sl_task_t *t);
/* Drops operator state and rebuilds from the changelog (after an abort). */
void sl_task_restart(sl_task_t *t);
/* A record (or partition EOF) the reader read for this task: changelog or
 * second source during rebuild, sl_task_fetch() records when running. */
void sl_task_on_reader(sl_task_t *t, const rd_kafka_message_t *m);
/* One input record for a task. */
void sl_task_on_input(sl_task_t *t, const rd_kafka_message_t *m);

/* Per-pipeline runtime metrics (created in app.c). */
typedef struct sl_pipeline_metrics_s {
        sl_counter_t *records_in;
        sl_counter_t *rebuild_records;
        sl_gauge_t *rebuild_seconds;
        sl_gauge_t *partitions_running;
        sl_gauge_t *partitions_rebuilding;
        sl_gauge_t *consumer_lag;
} sl_pipeline_metrics_t;

#endif
