/*
 * runtime.h — what the tasks of one process share, and the one path by
 * which a record enters the transaction.
 *
 * app.c owns the process (the group membership, the commit schedule,
 * readiness, shutdown) and task.c one partition of one pipeline.  Tasks
 * need a part of the process: the clients, the transaction, the outbox of
 * records decided during a commit, the memo of refused records, the clock.
 * That part is sl_runtime_t.  The app holds one (sl_app_t.rt) and keeps it
 * current; a task reaches it through t->rt, and what the app decides
 * (may work produce now? is the instance ready?) through the hooks the app
 * sets.  So task.c includes this header and never app.h, and app.c calls
 * task.c without task.c calling back into app.c's internals.
 *
 * Loop thread only, like everything the tasks touch.
 */
#ifndef SL_RUNTIME_H
#define SL_RUNTIME_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "kquery.h"
#include "kwatch.h"
#include "metrics.h"
#include "outbox.h"
#include "refused.h"
#include "task.h"
#include "txn.h"

typedef struct sl_runtime_s sl_runtime_t;

/* What the app decides for the tasks (set by app.c at start). */
typedef struct sl_runtime_hooks_s {
        /* 1 when tasks may do work that produces (input, wake-ups): the
         * process is running and the transaction is open or ready, or a
         * commit is in flight and the outbox has room. */
        int (*may_produce)(const sl_runtime_t *rt);
        /* A task's state or a cap changed: the readiness (and the gauges
         * that count partitions) are worked out again. */
        void (*update_ready)(sl_runtime_t *rt);
        /* The producer's kept handle of topic name when it is one of the
         * pipelines' own topics (output, changelog, overflow, DLQ), else
         * NULL.  Producing through it skips librdkafka's lookup of the
         * topic by name, which takes the client's write lock for every
         * record. */
        rd_kafka_topic_t *(*topic)(const sl_runtime_t *rt, const char *name);
        /* The largest record batch topic accepts, as far as the app knows
         * (its max.message.bytes, learned with DescribeConfigs, or the
         * broker's default): > 0. */
        int64_t (*max_bytes)(const sl_runtime_t *rt, const char *topic);
} sl_runtime_hooks_t;

struct sl_runtime_s {
        /* Set once at start (the pipelines once the topics are known),
         * then fixed; the app reads them here too. */
        const sl_conf_t *conf;
        uv_loop_t *loop;
        sl_metrics_t *metrics;
        sl_pipeline_t *pipelines;
        int pipeline_cnt;
        const sl_runtime_hooks_t *hooks;

        /* The clients.  The consumer and the producer belong to txn
         * (re-created after a fatal error); these mirror it and are NULL
         * while it has none.  producer is the one whose transaction
         * records go to now (the producers take turns, txn.h).  The reader
         * lives as long as the process. */
        sl_txn_t *txn;
        rd_kafka_t *consumer;
        rd_kafka_t *producer;
        rd_kafka_t *reader;
        sl_kwatch_t *consumer_w;
        sl_kwatch_t *reader_w;
        sl_kquery_t *kq;       /* lookups off the loop (app.h: lookup) */
        uint64_t reader_batch; /* batches taken from the reader so far */
        /* Batches taken from the consumer so far, and the batch the input
         * record being handed to a task came in (app.c sets it): a record
         * of a batch taken before a task sought its input back (a cap or
         * a lookup) was fetched before the seek (task.c). */
        uint64_t input_batch;
        uint64_t input_batch_cur;
        uint32_t epoch_counter; /* task epochs (task.h) */

        /* Records decided while a commit is in flight, for the next
         * transaction (outbox.h); replaying: they are being sent now. */
        sl_outbox_t *outbox;
        int replaying;
        sl_refused_t refused;

        /* A revocation waiting for the commit of its partitions' work. */
        rd_kafka_topic_partition_list_t *revoking;
        int revoke_commit_started;

        /* What a record may take (recsize.h): the producers'
         * message.max.bytes, and below it what each topic accepts (the
         * max_bytes hook).  A record of at most max_bytes_floor bytes fits
         * every topic known so far and skips the lookup.  size_exact is 0
         * while the producers compress: the broker measures compressed
         * batches, so only the producers' own limit is checked here.
         * refused_why says why the last record was refused for its size. */
        int64_t producer_max_bytes;
        int64_t max_bytes_floor;
        int size_exact;
        char refused_why[256];

        int rebuilding_cnt; /* tasks in REBUILDING */
        int input_end_asks; /* lookups of the inputs' ends (app.c) */
        /* Tracked records sent whose delivery report is not served yet:
         * a commit waits for them before the precommit hooks (txn.h,
         * reports_pending), and for nothing else. */
        int64_t tracked_inflight;

        /* sl_runtime_now_ms(): the time read, on which loop turn, and how
         * often since. */
        int64_t clock_ms;
        uint64_t clock_turn;
        int clock_reads;
};

static inline int sl_runtime_may_produce(const sl_runtime_t *rt) {
        return rt->hooks->may_produce(rt);
}

static inline void sl_runtime_update_ready(sl_runtime_t *rt) {
        rt->hooks->update_ready(rt);
}

/* The wall clock in ms for the input path and for stamping records (see
 * sl_app_now_ms() in task.h, which answers this). */
int64_t sl_runtime_now_ms(sl_runtime_t *rt);
/* The wall clock read now (sl_app_now_fresh_ms()). */
int64_t sl_runtime_now_fresh_ms(sl_runtime_t *rt);

/* The msg_opaque of a produced record: bit 0, sent alone to test a
 * suspect; bit 1, tracked (op->delivered wants its offset), with the
 * pipeline index in bits 2-9, the partition in bits 10-31 and the task's
 * epoch in bits 32-63; untracked records carry their refusal origin
 * (sl_task_origin(), 62 bits, 0 for none) in bits 2-63. */
#define SL_MSG_ISOLATED ((uintptr_t)1)
#define SL_MSG_TRACKED  ((uintptr_t)2)
#define SL_MSG_TRACK(pl_index, partition, epoch)                               \
        (SL_MSG_TRACKED | ((uintptr_t)(pl_index) << 2) |                       \
         ((uintptr_t)(partition) << 10) | ((uintptr_t)(epoch) << 32))
#define SL_MSG_ORIGIN(origin) ((uintptr_t)(origin) << 2)

/* The largest record topic takes now: what it accepts (the max_bytes
 * hook) and the producers can send.  With size_exact 0, the producers'
 * limit alone. */
int64_t sl_runtime_max_bytes(const sl_runtime_t *rt, const char *topic);

/*
 * Produces r (a task's record; r->flags its msg_opaque) into the
 * transaction: into the outbox while a commit is in flight or the outbox
 * is being sent (so records keep their order), else into the open
 * transaction.  A record larger than its topic takes
 * (sl_runtime_max_bytes(), counted as recsize.h does) is refused up front
 * with RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, rt->refused_why saying so; so
 * is a record the refused memo holds guilty.
 * r->hdrs is owned by this call in every case; the other pointers are
 * copied before it returns.  Returns 0, or a negative rd_kafka_resp_err_t
 * for a record Kafka refuses outright.
 */
int sl_runtime_produce(sl_runtime_t *rt, sl_outbox_rec_t *r);

/* Sends what the outbox holds into a new transaction, in order; records
 * of tasks dropped or rebuilt since are left out.  Called when a commit
 * has returned. */
void sl_runtime_outbox_replay(sl_runtime_t *rt);

/* ------------------------------------------------------------------ */
/* task.c, for the runtime (app.c, parts.c).                           */

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

/* A pipeline's cap (task.h): the arithmetic (cap.h) and what the runtime
 * shows of it. */
struct sl_pcap_s {
        sl_cap_t cap;
        sl_pipeline_t *pl;
        const char *key;  /* config key, e.g. "max_pending_timers" */
        const char *what; /* unit, e.g. "pending timers" */
        int64_t full_since_ms;
        sl_gauge_t *m_paused; /* 1 while full */
        sl_counter_t *m_pauses;
        sl_gauge_t *m_used, *m_limit;
};

/* Releases a pipeline's caps (app_destroy). */
void sl_pipeline_caps_destroy(sl_pipeline_t *pl);

#endif
