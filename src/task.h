/* SPDX-License-Identifier: Apache-2.0 */
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

#include "cap.h"
#include "config.h"

typedef struct sl_runtime_s sl_runtime_t;
typedef struct sl_pipeline_s sl_pipeline_t;
typedef struct sl_task_s sl_task_t;
typedef struct sl_pcap_s sl_pcap_t;

/* Memory caps a pipeline may declare (sl_pipeline_cap()). */
#define SL_PIPELINE_CAPS_MAX 4

typedef enum {
        SL_TASK_REBUILDING,
        SL_TASK_RUNNING,
} sl_task_state_t;

/* The steps of a rebuild, in order.  The committed input offset is read
 * first and the changelog's end after it, so a previous owner's
 * transaction that carries offsets for the partition is either wholly seen
 * (it committed before the end was taken) or wholly absent. */
typedef enum {
        SL_REBUILD_COMMITTED,     /* fetching the committed input offset */
        SL_REBUILD_CHANGELOG_END, /* asking the changelog's end offset */
        SL_REBUILD_CHANGELOG,     /* reading the changelog to that end */
        SL_REBUILD_SOURCE_END,    /* asking the second source's end */
        SL_REBUILD_SOURCE,        /* reading the second source */
        SL_REBUILD_FINISH,        /* waiting for the global table */
} sl_rebuild_phase_t;

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

        /* --- Optional hooks (NULL when unused; throttle uses them). --- */

        /* A second source read during rebuild, after the changelog: the
         * topic (partition = the task's) and the offset to read from, or
         * NULL for none.  It is read up to its end offset captured when
         * this phase starts, each record going to restore_source(). */
        const char *(*rebuild_source)(sl_task_t *t, int64_t *from_offset);
        void (*restore_source)(sl_task_t *t, const rd_kafka_message_t *m);
        /* A record produced with sl_task_produce_tracked() was delivered;
         * m->offset is its offset.  Called in produce order per partition.
         * Failed deliveries are not reported: they abort the transaction
         * and every task is rebuilt. */
        void (*delivered)(sl_task_t *t, const rd_kafka_message_t *m);
        /* 1 when pipeline pl produces tracked records (NULL: whenever
         * delivered is set): with none, delivery reports stay off. */
        int (*tracks)(const sl_pipeline_t *pl);
        /* Before each commit, after every tracked record of the open
         * transaction was delivered: produce the records that make the
         * state durable (checkpoints).  Only for RUNNING tasks. */
        void (*precommit)(sl_task_t *t);
        /* Right before the transaction's input offsets are taken for its
         * commit (after precommit, with the transaction open): produce
         * the records the open transaction still owes its changelog, for
         * an operator that gathers them per transaction.  Only for
         * RUNNING tasks (the ones whose offsets the commit carries). */
        void (*seal)(sl_task_t *t);
        /* A record (or a partition EOF: m->err set, m->offset = the end)
         * read by sl_task_fetch(). */
        void (*fetched)(sl_task_t *t, const rd_kafka_message_t *m);
        /* An input record after the one that waits (input() called
         * sl_task_input_retry() while a lookup runs), met before the
         * input stops: input() sees it again later, whatever this does.
         * The operator may start what it will need (delay: the records
         * of the ids it will compare, so that a run of lookups waits
         * once).  Decides nothing. */
        void (*peek)(sl_task_t *t, const rd_kafka_message_t *m);
        /* A global table: the topic every instance reads whole (all
         * partitions, from the beginning, continuously), or NULL.  Tasks
         * of the pipeline stay REBUILDING until the table has been read
         * to its end once. */
        const char *(*table_topic)(const sl_pipeline_t *pl);
        void (*table)(sl_pipeline_t *pl, const rd_kafka_message_t *m);
        /* 1: the wake-ups it arms are deadlines of work it then flushes
         * with sl_task_commit_linger, which waits for them (debounce). */
        int wake_is_deadline;

        /* --- The HTTP API's lookups (api.h); NULL when unsupported. --- */

        /* The state this RUNNING task holds for one key, as a new JSON
         * object (jansson; the caller owns the reference), or NULL when it
         * holds nothing for it: delay answers a timer id, throttle a
         * throttle key, debounce a group key.  Loop thread only. */
        struct json_t *(*describe)(sl_task_t *t, const void *key,
                                   size_t keylen);
} sl_op_t;

/* The operators (ops.def); sl_op_of() (ops.h) finds one by type. */
#define SL_OPERATOR(name, NAME) extern const sl_op_t sl_op_##name;
#include "ops.def"
#undef SL_OPERATOR

/* The series every pipeline has (pipeline.c's table registers them). */
typedef struct sl_pipeline_metrics_s {
        sl_counter_t *records_in;
        sl_counter_t *records_out; /* by the operators, on the loop thread */
        sl_counter_t *records_rerouted; /* moved to their key's partition */
        sl_counter_t *rebuild_records;
        sl_gauge_t *rebuild_seconds;
        sl_gauge_t *partitions_running;
        sl_gauge_t *partitions_rebuilding;
        sl_gauge_t *consumer_lag;
} sl_pipeline_metrics_t;

/* A pipeline: its configuration, operator and per-pipeline operator data. */
struct sl_pipeline_s {
        const sl_pipeline_conf_t *conf;
        const sl_op_t *op;
        void *op_data;     /* owned by the operator */
        sl_runtime_t *rt;  /* the process (runtime.h; not the operators') */
        int partition_cnt; /* of the input topic */
        sl_task_t **tasks; /* by partition; NULL when not assigned */
        sl_pipeline_metrics_t *metrics;
        struct sl_parts_s *parts; /* served partitions (parts.h) */
        int index;                /* in the runtime's pipeline array */
        int table_ready;          /* the table topic was read to its end once */
        int64_t *table_end;       /* per table partition, captured at start;
                                     INT64_MAX until known, -1 once reached */
        int64_t *table_pos;       /* per table partition: next offset read */
        void *table_asks;         /* the runtime's end-offset requests */
        int table_parts;
        sl_pcap_t *caps[SL_PIPELINE_CAPS_MAX]; /* sl_pipeline_cap() */
        int cap_cnt;
};

struct sl_task_s {
        sl_runtime_t *rt; /* pl->rt */
        sl_pipeline_t *pl;
        int32_t partition;
        sl_task_state_t state;
        void *state_data; /* the operator's per-partition state */

        int64_t next_offset;      /* next input offset to process */
        int64_t committed_offset; /* next_offset as of the last commit */

        uint32_t epoch; /* new at every (re)build: stale delivery reports
                           are recognised by it */

        /* Rebuild bookkeeping. */
        sl_rebuild_phase_t rebuild_phase;
        int64_t rebuild_committed; /* input offset to resume at, -1: none */
        int64_t rebuild_source_from;
        int rebuild_waits;   /* committed offset still pending (logged) */
        int64_t rebuild_end; /* end offset captured for the phase */
        /* The second source's first offset when its read began, and its
         * end: the last stable offset then, moved on to where the read
         * settled (task_settled: a transaction undecided when it began
         * held the stable offset back); -1 before. */
        int64_t rebuild_source_lo, rebuild_source_hi;
        int settle_logged; /* task_settled's wait logged this rebuild */
        int64_t rebuild_start_us;
        int64_t rebuild_records;        /* changelog */
        int64_t rebuild_source_records; /* second source */
        const char *reader_topic;       /* what the reader reads for this task
                                           (changelog, source or fetch), or NULL */
        const char *fetch_topic; /* sl_task_fetch() in progress, or NULL */
        /* rt->reader_batch when the reader last moved for this task:
         * records of that batch are from before the move. */
        uint64_t reader_moved;

        uv_timer_t wake;
        int64_t wake_at;   /* ms, 0 = not armed */
        int wake_deferred; /* fell due while the transaction was busy */

        int revoking;         /* revoked: waits for the commit of its work */
        int input_retry;      /* op->input() asked to see the record again */
        int lookup_wait;      /* input paused until a topic lookup answers */
        int64_t retry_offset; /* the record to see again, -1: none */
        uint64_t retry_batch; /* rt->input_batch when input was sought back
                                 to it: later batches come from the seek */
        uint64_t origin;      /* refusal origin of what is produced now */

        /* Caps (below): input paused until a full cap opens; the cap
         * sl_task_input_full() named during input(). */
        int cap_wait;
        sl_pcap_t *input_full;

        /* The input's end as last looked up for the lag (health.c):
         * librdkafka's cached watermark comes from
         * fetches, which a waiting partition (cap_wait, lookup_wait) does
         * not make.  offset -1: never looked up; start: the log's first
         * offset then.  The lookup's opaque is &input_end, so it is
         * cancelled apart from the rebuild's. */
        struct sl_task_end_s {
                int64_t offset;
                int64_t start;
                int64_t asked_ms;
                int asking;
        } input_end;
};

/* The header on a keyed input record that sluice moved to its key's
 * partition (the pipeline's input_partitioner): "PARTITION:OFFSET" where
 * it arrived. */
#define SL_TASK_REROUTED_HEADER "sluice-rerouted-from"

/* sl_task_topic_partitions(): the topic is being looked up. */
#define SL_TOPIC_LOOKING (-2)
/* sl_task_topic_partitions(): sluice may not describe the topic (an ACL),
 * so it may not write there either. */
#define SL_TOPIC_FORBIDDEN (-3)

/* Produces one record into the open transaction (opened on demand).
 * partition may be RD_KAFKA_PARTITION_UA.  hdrs (may be NULL) is owned by
 * this call in every case.  Returns 0, or a negative rd_kafka_resp_err_t
 * for a record Kafka refuses outright (e.g. too large, unknown topic): the
 * caller decides what to do with it (usually a DLQ record). */
int sl_task_produce(sl_task_t *t, const char *topic, int32_t partition,
                    const void *key, size_t keylen, const void *value,
                    size_t valuelen, rd_kafka_headers_t *hdrs);

/* As sl_task_produce(), and op->delivered() is called with the record's
 * offset once it is delivered. */
int sl_task_produce_tracked(sl_task_t *t, const char *topic, int32_t partition,
                            const void *key, size_t keylen, const void *value,
                            size_t valuelen, rd_kafka_headers_t *hdrs);

/* Reads partition t->partition of topic from offset on (read_committed),
 * passing each record to op->fetched(), and a partition EOF whenever the end
 * is reached.  A second call moves the read to the new offset.  Stops with
 * sl_task_fetch_stop() or when the task is destroyed or rebuilt. */
int sl_task_fetch(sl_task_t *t, const char *topic, int64_t offset);
void sl_task_fetch_stop(sl_task_t *t);

/* The first offset and the high watermark of the partition sl_task_fetch()
 * reads, as of the reader's last fetch of it (-1 when not known): 0, or -1
 * with both -1.  The read stops (and reports the end) at the last stable
 * offset, before a transaction not yet decided: the records from there up
 * to the high watermark are in the log and come once that transaction
 * ends. */
int sl_task_fetch_watermarks(sl_task_t *t, int64_t *lo, int64_t *hi);

/* The open transaction must abort (why: for the log): memory went ahead
 * of what Kafka will hold, and every task is rebuilt from its changelog. */
void sl_task_abort(sl_task_t *t, const char *why);

/* Writes a changelog record for this task's partition (value NULL writes a
 * tombstone).  A failure here is fatal to the transaction. */
int sl_task_changelog(sl_task_t *t, const void *key, size_t keylen,
                      const void *value, size_t valuelen);

/* Adds the DLQ headers of a record that stands for input record
 * source_offset of this task's partition, no longer at hand (a backlog
 * record, a debounce item): sluice-error = reason, sluice-error-detail =
 * detail, sluice-source-topic (the pipeline's input), -partition, -offset. */
void sl_task_dlq_headers(sl_task_t *t, rd_kafka_headers_t *hdrs,
                         const char *reason, const char *detail,
                         int64_t source_offset);

/* The help of sluice_records_dlq_total, for the tables that register a
 * reason's series ahead (op_throttle.c). */
#define SL_DLQ_HELP                                                            \
        "Records sent to the DLQ (or dropped without one), by reason."

/* Counts one record of t's pipeline sent to the DLQ, or dropped without one,
 * in sluice_records_dlq_total{reason} (created on first use).  Loop thread. */
void sl_task_dlq_count(sl_task_t *t, const char *reason);

/* Sends input record m to the pipeline's DLQ (same partition) with the
 * headers sluice-error = reason, sluice-error-detail = detail (may be NULL),
 * sluice-source-topic/partition/offset, and m's own key, value and headers
 * (sl_task_dlq_send: cut to fit when it must be).  Counts it in
 * sluice_records_dlq_total{reason}.  Without a DLQ the record is dropped,
 * counted and logged. */
void sl_task_dlq(sl_task_t *t, const rd_kafka_message_t *m, const char *reason,
                 const char *detail);

/*
 * Writes a DLQ record that always fits the pipeline's DLQ (which must be
 * configured), to the task's partition: the original key, value and
 * headers (src, borrowed, may be NULL) with sluice's own headers (own:
 * sluice-error, the source coordinates, ...; owned by this call, may be
 * NULL) after them.  When that copy is larger than the DLQ takes
 * (sl_task_max_bytes, recsize.h), the value is cut to what fits, or left
 * out (empty); when that is not enough, original headers are dropped from
 * the end, then the key is cut to 1 KiB, then the values of sluice's own
 * headers to 1 KiB each (never dropped); a header sluice-cut says what was
 * kept of what: "key=ORIG:KEPT,value=ORIG:KEPT,headers=ORIG:KEPT" (bytes,
 * bytes, count; -1 for a null), with ",sluice-headers=1024" when those
 * were cut too.  The source record is still in the input at the offset
 * its headers name.  If the DLQ refuses the copy anyway, the smallest one
 * goes (256 bytes of key, no value, sluice's headers cut); if it refuses that
 * too, the transaction is doomed (the input is read again after the
 * rebuild: never dropped) and a negative rd_kafka_resp_err_t returned,
 * else 0.
 */
int sl_task_dlq_send(sl_task_t *t, const void *key, size_t keylen,
                     const void *value, size_t valuelen,
                     const rd_kafka_headers_t *src, rd_kafka_headers_t *own);

/* The largest record topic takes now, counted as recsize.h does (what it
 * accepts and the producers can send); the pipeline's form is for
 * op->pipeline_init(), which runs once the topics' limits are learned. */
int64_t sl_task_max_bytes(const sl_task_t *t, const char *topic);
int64_t sl_pipeline_max_bytes(const sl_pipeline_t *pl, const char *topic);

/* 1 when the broker refused some record for good lately (refused.h): the
 * cheap test before sl_task_refused(). */
int sl_task_refusals(const sl_task_t *t);

/* The error the broker refused a record with, sent alone (refused.h,
 * GUILTY), or 0: the record of topic and key that was produced under the
 * origin (origin, origin_len, n) of sl_task_origin().  For an operator
 * that must not take input whose record it could never write (a state
 * record written at commit, where a refusal could only abort). */
int sl_task_refused(const sl_task_t *t, const char *topic, const void *key,
                    size_t keylen, const void *origin, size_t origin_len,
                    int64_t n);

/* Why the last record this process produced was refused up front (a
 * sentence naming its size and the topic's limit, or the broker's error):
 * for the DLQ detail of an operator whose write got a negative return.
 * Valid until the next produce. */
const char *sl_task_refused_why(const sl_task_t *t);

/* Arms the task's wake-up for when_ms (wall clock); an earlier arming wins
 * until it fires.  0 disarms. */
void sl_task_wake_at(sl_task_t *t, int64_t when_ms);

/* Partition count of a topic the operator wants to write to (cached
 * metadata, refreshed in the background, never a blocking call): > 0, 0 if
 * the topic does not exist, -1 if unknown now (Kafka did not answer),
 * SL_TOPIC_FORBIDDEN if Kafka refused to describe it to sluice's principal,
 * SL_TOPIC_LOOKING the first time a topic is asked for, while it is looked
 * up (an input() may then call sl_task_input_retry()). */
int sl_task_topic_partitions(sl_task_t *t, const char *topic);

/* From op->input(): the record cannot be decided now (a topic lookup is in
 * flight); the runtime hands it to input() again once lookups answer.  The
 * operator must not have changed state or produced for it. */
void sl_task_input_retry(sl_task_t *t);

/*
 * CAPS (docs/operations.md, "Memory caps")
 *
 * What a pipeline holds in memory is bounded per instance: the sum over the
 * pipeline's partitions assigned here (pending timers, open groups, backlog
 * keys, their bytes).  The operator declares each cap once, counts what it
 * holds with sl_pcap_add() (a partition's state takes its share with it
 * when destroyed), and from input() asks sl_pcap_room() before it takes a
 * record that would add to it.  A record that does not fit is handed to
 * sl_task_input_full(): the partition is paused and sought back to it, so
 * it and everything after it are read again, in order, once the cap opens
 * (cap.h: at the low-water mark).  Nothing is dropped and offsets do not
 * move past the record; due work (firing, flushing, draining) goes on, and
 * is what makes room.  A paused partition reads nothing, so cancels and
 * removals behind the waiting record wait too.
 */

/* Declares a cap of the pipeline, from op->pipeline_init(): key is the
 * config key that sets it (the "cap" label of the metrics), what the unit
 * in logs ("pending timers"), limit 0 unlimited.  The cap lives as long as
 * the pipeline.  At most SL_PIPELINE_CAPS_MAX per pipeline. */
sl_pcap_t *sl_pipeline_cap(sl_pipeline_t *pl, const char *key, const char *what,
                           int64_t limit);

/* 1 if n more fit under the cap now (cap.h: never while it is full). */
int sl_pcap_room(const sl_pcap_t *c, int64_t n);

/* Counts delta more (or less) of what the cap bounds on this instance.
 * When the cap opens again, the input partitions that waited for it
 * resume.  May be called from any operator callback, state_destroy too. */
void sl_pcap_add(sl_pcap_t *c, int64_t delta);

/* From op->input(): the record does not fit under cap c (sl_pcap_room()
 * said 0).  The runtime pauses the partition, says so once (log, metrics,
 * /readyz) and hands the record to input() again once the cap opens.  The
 * operator must not have changed state or produced for the record (work
 * that was due regardless, such as flushing a due group, is fine). */
void sl_task_input_full(sl_task_t *t, sl_pcap_t *c);

/* Names the work whose records are produced next (a timer's id and due
 * time, a batch id, an overflow offset): a record the broker refuses is
 * recognised by its topic, key and origin across replays (refused.h).
 * Input records are their own origin (partition and offset) unless the
 * operator says otherwise; the runtime clears it after each input and
 * wake-up.  len 0 clears it. */
void sl_task_origin(sl_task_t *t, const void *id, size_t len, int64_t n);

/* Asks the runtime to commit soon (due work was produced: lateness is the
 * commit, not the commit interval). */
void sl_task_commit_soon(sl_task_t *t);

/* sl_task_commit_soon for deadlines that come in clusters: while no
 * commit is in flight, the commit waits up to SL_COMMIT_LINGER_MS from the
 * first such call for the wake-ups of any task whose op has
 * wake_is_deadline due within that window, or already passed and not yet
 * run (one window more), so that one commit takes the whole cluster. */
void sl_task_commit_linger(sl_task_t *t);

/* The configuration the process runs with: [sluice], [kafka] and every
 * pipeline. */
const sl_conf_t *sl_pipeline_sluice_conf(const sl_pipeline_t *pl);

/* The process's metrics registry (metrics.h), for the operator's own
 * series. */
struct sl_metrics_s *sl_pipeline_metrics_registry(sl_pipeline_t *pl);

/* The wall clock in ms for work on the input path and for stamping records:
 * read at most once per 64 calls within one turn of the loop, so it is
 * behind the true time by what serving those records took (microseconds
 * each).  Loop thread. */
int64_t sl_task_now_ms(sl_task_t *t);

/* The wall clock read now, which also becomes what sl_task_now_ms() answers
 * until its next read: for a decision against a due time (an operator's
 * wake-up), so that the records it produces are never stamped earlier than
 * the time the decision saw.  Loop thread. */
int64_t sl_task_now_fresh_ms(sl_task_t *t);

/* ------------------------------------------------------------------ */
/* The runtime's side of a task (pipeline.c, member.c, table.c, ...);   */
/* operators never call these.                                          */

sl_task_t *sl_task_new(sl_pipeline_t *pl, int32_t partition);
void sl_task_destroy(sl_task_t *t);
/* Drops operator state and rebuilds from the changelog (after an abort). */
void sl_task_restart(sl_task_t *t);
/* A record (or partition EOF) the reader read for this task: changelog or
 * second source during rebuild, sl_task_fetch() records when running. */
void sl_task_on_reader(sl_task_t *t, const rd_kafka_message_t *m);
/* One input record for a task. */
void sl_task_on_input(sl_task_t *t, const rd_kafka_message_t *m);
/* A topic lookup answered: input that waited for one resumes. */
void sl_task_lookup_done(sl_task_t *t);
/* Releases a pipeline's caps (pipeline.c, at the end). */
void sl_pipeline_caps_destroy(sl_pipeline_t *pl);

#endif
