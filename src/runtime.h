/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.h — the one handle below app.c: what the modules of a running
 * process share, and the one path by which a record enters the
 * transaction.
 *
 * `sluice run` is one libuv loop and one sl_runtime_t.  app.c makes it and
 * wires the rooms that each keep one job of the process; every room and
 * every task reaches the process through this handle (libuv passes a
 * uv_loop_t *, librdkafka an rd_kafka_t *: one handle, never two):
 *
 *   runtime.c   the clock, may-produce, the exit, the produce path (below)
 *   task.c      one partition of one pipeline (task.h: the operators' side)
 *   authz.c     refusals by Kafka's authorizer: named, then the exit
 *   table.c     the reader's records: rebuilds, fetches, global tables
 *   parts.c     input partitions beyond what a pipeline's topics have
 *   pipeline.c  the pipelines: set-up, tasks by partition, iteration
 *   targets.c   the topics sluice writes: handles, limits, target lookups
 *   health.c    readiness, the Kafka probe, lag
 *   input.c     the consumer's records, held while the transaction is busy
 *   member.c    group membership: rebalances, revocations, the group watch
 *   commit.c    the commit schedule and the transaction's hooks
 *   clients.c   the Kafka clients: configurations, creation, errors
 *
 * They are listed from the bottom up: each includes the headers of rooms
 * above it in this list, never below (tools/check-layers.sh).  Where a
 * lower one must reach a higher one (a task asks for a commit, a topic
 * lookup, readiness to be worked out again), it goes through the hooks
 * app.c sets (sl_runtime_hooks_t).  Each room's own state is opaque here
 * (rt->commit, rt->member, ...), made by its _new and read only by it.
 *
 * Operators never include this header: they see task.h.
 *
 * Loop thread only, like everything the tasks touch.
 */
#ifndef SL_RUNTIME_H
#define SL_RUNTIME_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "cap.h"
#include "config.h"
#include "kquery.h"
#include "kwatch.h"
#include "metrics.h"
#include "outbox.h"
#include "refused.h"
#include "txn.h"

typedef struct sl_runtime_s sl_runtime_t;
typedef struct sl_pipeline_s sl_pipeline_t;
typedef struct sl_task_s sl_task_t;

/* Where the process stands; a SIGTERM walks it down (app.c). */
typedef enum {
        SL_RUN_RUNNING,
        SL_RUN_STOP_COMMIT, /* committing what is open */
        SL_RUN_STOP_CLOSE,  /* closing the consumer (revokes go through the
                               usual path) */
        SL_RUN_STOPPED,
} sl_run_phase_t;

/* What a lower room asks of a higher one (set by app.c at start). */
typedef struct sl_runtime_hooks_s {
        /* A task's state or a cap changed: the readiness (and the gauges
         * that count partitions) are worked out again (health.c). */
        void (*update_ready)(sl_runtime_t *rt);
        /* Commit soon: due work was produced (commit.c; task.h,
         * sl_task_commit_soon). */
        void (*commit_soon)(sl_runtime_t *rt);
        /* Commit soon, lingering for deadlines clustered with this one
         * (commit.c; task.h, sl_task_commit_linger). */
        void (*commit_linger)(sl_runtime_t *rt);
        /* A target's partition count from the topic cache (targets.c;
         * task.h, sl_task_topic_partitions). */
        int (*topic_partitions)(sl_runtime_t *rt, const char *topic);
        /* The producer's kept handle of topic name when it is one of the
         * pipelines' own topics (output, changelog, overflow, DLQ), else
         * NULL (targets.c).  Producing through it skips librdkafka's
         * lookup of the topic by name, which takes the client's write lock
         * for every record. */
        rd_kafka_topic_t *(*topic)(const sl_runtime_t *rt, const char *name);
        /* The largest record batch topic accepts, as far as the process
         * knows (its max.message.bytes, learned with DescribeConfigs, or
         * the broker's default): > 0 (targets.c). */
        int64_t (*max_bytes)(const sl_runtime_t *rt, const char *topic);
        /* Something a shutdown waits for may have happened (app.c). */
        void (*stop_step)(sl_runtime_t *rt);
} sl_runtime_hooks_t;

struct sl_runtime_s {
        /* Set once at start (the pipelines once the topics are known),
         * then fixed. */
        const sl_conf_t *conf;
        uv_loop_t *loop;
        sl_metrics_t *metrics;
        sl_pipeline_t *pipelines;
        int pipeline_cnt;
        const sl_runtime_hooks_t *hooks;
        /* Unique to this process; with the API on, it ends in
         * "@HOST:PORT", the API address other members forward to. */
        char client_id[384];

        /* Lifecycle. */
        sl_run_phase_t phase;
        int exit_code;
        int assigned; /* an assignment since the consumer (re)joined */

        /* The clients.  The consumer and the producers belong to txn
         * (re-created after a fatal error); these mirror it and are NULL
         * while it has none.  producer is producers[turn], the one whose
         * transaction records go to now (the producers take turns,
         * txn.h).  The reader, the lookup client and the offsets client
         * live as long as the process (clients.c). */
        sl_txn_t *txn;
        rd_kafka_t *consumer;
        rd_kafka_queue_t *consumer_q;
        rd_kafka_t *producer;
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX];
        int producer_cnt;
        int turn;
        rd_kafka_t *reader;
        rd_kafka_queue_t *reader_q;
        sl_kwatch_t *consumer_w;
        sl_kwatch_t *reader_w;
        sl_kquery_t *kq;       /* lookups off the loop (kquery.h) */
        uint64_t reader_batch; /* batches taken from the reader so far */
        /* Batches taken from the consumer so far, and the batch the input
         * record being handed to a task came in (input.c sets it): a
         * record of a batch taken before a task sought its input back (a
         * cap or a lookup) was fetched before the seek (task.c). */
        uint64_t input_batch;
        uint64_t input_batch_cur;
        uint32_t epoch_counter; /* task epochs (task.h) */

        /* Records decided while a commit is in flight, for the next
         * transaction (outbox.h); replaying: they are being sent now. */
        sl_outbox_t *outbox;
        int replaying;
        sl_refused_t refused;

        /* A revocation waiting for the commit of its partitions' work
         * (member.c). */
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
        int input_end_asks; /* lookups of the inputs' ends (health.c) */
        /* Tracked records sent whose delivery report is not served yet:
         * a commit waits for them before the precommit hooks (txn.h,
         * reports_pending), and for nothing else. */
        int64_t tracked_inflight;

        /* sl_runtime_now_ms(): the time read, on which loop turn, and how
         * often since. */
        int64_t clock_ms;
        uint64_t clock_turn;
        int clock_reads;

        /* The rooms' own state (each module's _new makes it). */
        struct sl_authz_s *authz;
        struct sl_targets_s *targets;
        struct sl_health_s *health;
        struct sl_input_s *input;
        struct sl_member_s *member;
        struct sl_commit_s *commit;
        struct sl_clients_s *clients;
};

/* 1 when tasks may do work that produces (input, wake-ups): the process
 * is running and the transaction is open or ready, or a commit is in
 * flight and the outbox has room. */
int sl_runtime_may_produce(const sl_runtime_t *rt);

static inline void sl_runtime_update_ready(sl_runtime_t *rt) {
        rt->hooks->update_ready(rt);
}

/* The process must end with status code: the loop stops. */
void sl_runtime_exit(sl_runtime_t *rt, int code);

/* The transactional.id of producer idx (0 or 1): from the static
 * instance id when there is one (a restarted instance fences its
 * predecessor and aborts its open transaction at once), else from the
 * client id; the second producer's is the first's with "#2" after it. */
void sl_runtime_txn_id(const sl_runtime_t *rt, int idx, char *buf, size_t size);

/* The wall clock in ms for the input path and for stamping records: read
 * at most once per 64 calls within one turn of the loop, so it is behind
 * the true time by what serving those records took (microseconds each). */
int64_t sl_runtime_now_ms(sl_runtime_t *rt);
/* The wall clock read now, which also becomes what sl_runtime_now_ms()
 * answers until its next read: for a decision against a due time (an
 * operator's wake-up), so that the records it produces are never stamped
 * earlier than the time the decision saw. */
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
#define SL_MSG_ORIGIN(origin)   ((uintptr_t)(origin) << 2)
#define SL_MSG_PIPELINE(flags)  ((int)(((flags) >> 2) & 0xff))
#define SL_MSG_PARTITION(flags) ((int32_t)(((flags) >> 10) & 0x3fffff))
#define SL_MSG_EPOCH(flags)     ((uint32_t)((flags) >> 32))

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

/* Sends r, a record taken from the outbox, into the transaction the
 * commit's return opened (commit.c replays the outbox in order, leaving
 * out the records of tasks dropped or rebuilt since).  r->hdrs is owned
 * by this call. */
void sl_runtime_replay(sl_runtime_t *rt, sl_outbox_rec_t *r);

/* A delivery report's bookkeeping in the produce path: the tracked
 * records in flight, and a refusal remembered (refused.h) or the
 * transaction doomed.  Returns 1 for a tracked record delivered (its
 * task is told, commit.c), else 0. */
int sl_runtime_delivered(sl_runtime_t *rt, const rd_kafka_message_t *m);

/* A pipeline's cap (task.h): the arithmetic (cap.h) and what the rooms
 * show of it. */
typedef struct sl_pcap_s sl_pcap_t;
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

#endif
