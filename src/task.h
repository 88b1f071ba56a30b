/*
 * task.h — one assigned input partition of one pipeline, and the contract
 * between the runtime and the operators.
 *
 * LIFECYCLE
 *
 *   assigned ──► REBUILDING ──► RUNNING ──► (revoked: destroyed)
 *                    ▲              │
 *                    └── abort ─────┘
 *
 * On assignment the partition's input is paused and its changelog partition
 * is read, on a separate consumer, from the beginning to the high watermark
 * captured at assignment (read_committed).  Each record goes to the
 * operator's restore(); then restored() runs, the input is sought to its
 * committed offset and resumed.  Other partitions keep running meanwhile.
 * When a transaction aborts, memory may be ahead of what Kafka holds, so every
 * task goes back to REBUILDING with fresh operator state.
 *
 * EXACTLY ONCE
 *
 * Everything an operator writes (outputs, changelog records, DLQ records)
 * goes through sl_task_produce() and friends into the runtime's open Kafka
 * transaction, which also carries the input offsets.  An operator never
 * commits; it changes memory and produces the records that make the change
 * durable, in the same call.  If the transaction aborts, the change is
 * forgotten and rebuilt from the changelog.
 *
 * THREADS
 *
 * Everything here runs on the loop thread.
 */
#ifndef SL_TASK_H
#define SL_TASK_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

typedef struct sl_app_s sl_app_t;
typedef struct sl_pipeline_s sl_pipeline_t;
typedef struct sl_task_s sl_task_t;

typedef enum {
        SL_TASK_REBUILDING,
        SL_TASK_RUNNING,
} sl_task_state_t;

/* An operator: the per-partition behaviour of a pipeline type. */
typedef struct sl_op_s {
        const char *name;
        /* Per-pipeline setup (metrics, parsed parameters); may be NULL. */
        int (*pipeline_init)(sl_pipeline_t *pl, char *errstr,
                             size_t errstr_size);
        void (*pipeline_destroy)(sl_pipeline_t *pl);
        /* Empty per-partition state for a task. */
        void *(*state_new)(sl_task_t *t);
        void (*state_destroy)(void *state);
        /* One changelog record during rebuild (value NULL: tombstone). */
        void (*restore)(sl_task_t *t, const rd_kafka_message_t *m);
        /* Rebuild finished; arm wake-ups for due work. */
        void (*restored)(sl_task_t *t);
        /* One input record.  Bad input goes to sl_task_dlq(). */
        void (*input)(sl_task_t *t, const rd_kafka_message_t *m);
        /* The wake-up armed with sl_task_wake_at() fell due. */
        void (*wake)(sl_task_t *t, int64_t now_ms);
} sl_op_t;

extern const sl_op_t sl_op_delay;
extern const sl_op_t sl_op_debounce;

/* A pipeline: its configuration, operator and per-pipeline operator data. */
struct sl_pipeline_s {
        const sl_pipeline_conf_t *conf;
        const sl_op_t *op;
        void *op_data; /* owned by the operator */
        sl_app_t *app;
        int partition_cnt; /* of the input topic */
        sl_task_t **tasks; /* by partition; NULL when not assigned */
        struct sl_pipeline_metrics_s *metrics; /* runtime's (app.h) */
};

struct sl_task_s {
        sl_app_t *app;
        sl_pipeline_t *pl;
        int32_t partition;
        sl_task_state_t state;
        void *state_data; /* the operator's per-partition state */

        int64_t next_offset;      /* next input offset to process */
        int64_t committed_offset; /* next_offset as of the last commit */

        /* Rebuild bookkeeping. */
        int64_t rebuild_end; /* changelog high watermark at assignment */
        int64_t rebuild_start_us;
        int64_t rebuild_records;
        int rebuild_reading; /* the changelog reader has this partition */

        uv_timer_t wake;
        int64_t wake_at; /* ms, 0 = not armed */
};

/* Produces one record into the open transaction (opened on demand).
 * partition may be RD_KAFKA_PARTITION_UA.  hdrs (may be NULL) is owned by
 * this call in every case.  Returns 0, or a negative rd_kafka_resp_err_t
 * for a record Kafka refuses outright (e.g. too large, unknown topic): the
 * caller decides what to do with it (usually a DLQ record). */
int sl_task_produce(sl_task_t *t, const char *topic, int32_t partition,
                    const void *key, size_t keylen, const void *value,
                    size_t valuelen, rd_kafka_headers_t *hdrs);

/* Writes a changelog record for this task's partition (value NULL writes a
 * tombstone).  A failure here is fatal to the transaction. */
int sl_task_changelog(sl_task_t *t, const void *key, size_t keylen,
                      const void *value, size_t valuelen);

/* Sends input record m to the pipeline's DLQ (same partition) with the
 * headers sluice-error = reason, sluice-error-detail = detail (may be NULL),
 * sluice-source-topic/partition/offset, and m's own key, value and headers.
 * Counts it in sluice_records_dlq_total{reason}.  Without a DLQ the record
 * is dropped, counted and logged. */
void sl_task_dlq(sl_task_t *t, const rd_kafka_message_t *m, const char *reason,
                 const char *detail);

/* Arms the task's wake-up for when_ms (wall clock); an earlier arming wins
 * until it fires.  0 disarms. */
void sl_task_wake_at(sl_task_t *t, int64_t when_ms);

/* Partition count of a topic the operator wants to write to (cached
 * metadata): > 0, 0 if the topic does not exist, -1 if unknown now. */
int sl_task_topic_partitions(sl_task_t *t, const char *topic);

/* Asks the runtime to commit soon (due work was produced: lateness is the
 * commit, not the commit interval). */
void sl_task_commit_soon(sl_task_t *t);

/* 1 if name is one of sluice's internal topics (any pipeline's). */
int sl_app_is_internal_topic(const sl_app_t *app, const char *name);

/* The configuration the app runs with. */
const sl_conf_t *sl_app_conf(const sl_app_t *app);

/* The app's metrics registry (metrics.h). */
struct sl_metrics_s *sl_app_metrics(sl_app_t *app);

#endif
