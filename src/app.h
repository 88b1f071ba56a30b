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
 *              partitions during rebuild (read_committed, partition EOF on),
 *              and the handle of every lookup (sl_kquery).
 *
 * The consumer and the producer are owned by the transaction state machine
 * (txn.h), which re-creates them after a fatal error; the reader lives as
 * long as the process.  All three are served on the libuv loop thread
 * through sl_kwatch.
 */
#ifndef SL_APP_H
#define SL_APP_H

#include <librdkafka/rdkafka.h>
#include <uv.h>

#include "api.h"
#include "config.h"
#include "groupcheck.h"
#include "http.h"
#include "kafka.h"
#include "kquery.h"
#include "kwatch.h"
#include "metrics.h"
#include "outbox.h"
#include "refused.h"
#include "task.h"
#include "txn.h"
#include "watchdog.h"

typedef struct sl_topic_cache_s sl_topic_cache_t;

/* Ticks of the commit timer over which app_catching_up() measures the
 * pace of reading. */
#define SL_CATCHUP_TICKS 10

/* Where a SIGTERM shutdown stands. */
typedef enum {
        SL_RUN_RUNNING,
        SL_RUN_STOP_COMMIT, /* committing what is open */
        SL_RUN_STOP_CLOSE,  /* closing the consumer (revokes go through the
                               usual path) */
        SL_RUN_STOPPED,
} sl_run_phase_t;

/* Input records held while the transaction cannot take work (a commit or
 * an abort in flight); past this many the consumer is not polled. */
#define SL_HELD_MAX 20000
/* The outbox's bounds (records decided during a commit); past them input is
 * held as above. */
#define SL_OUTBOX_MAX_BYTES   (64 * 1024 * 1024)
#define SL_OUTBOX_MAX_RECORDS 50000

struct sl_app_s {
        sl_conf_t *conf;
        uv_loop_t *loop;

        /* The producers and the consumer belong to txn (re-created after a
         * fatal error); these mirror it and are NULL while it has none.
         * producer is producers[turn], the one whose transaction records
         * go to (the producers take turns, txn.h). */
        sl_txn_t *txn;
        rd_kafka_t *consumer;
        rd_kafka_t *producer;
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX];
        int producer_cnt;
        int turn;
        rd_kafka_t *reader; /* lives as long as the process */
        rd_kafka_queue_t *consumer_q;
        rd_kafka_queue_t *reader_q;
        sl_kwatch_t *consumer_w;
        sl_kwatch_t *reader_w;
        sl_kquery_t *kq; /* lookups off the loop, on the reader */
        sl_watchdog_t *watchdog;
        /* Unique to this process; with the API on, it ends in
         * "@HOST:PORT", the API address other members forward to. */
        char client_id[384];

        sl_pipeline_t *pipelines;
        int pipeline_cnt;

        /* Input held back while the transaction is busy (a ring), each
         * with the epoch of its task when it was held: a record held for a
         * task that was rebuilt or replaced since is dropped. */
        struct sl_held_s *held;
        int held_head, held_cnt;

        /* librdkafka 2.0.2 stops fetching once queued.min.messages wait in
         * the consumer queue, and looks again only when its broker thread
         * wakes (up to a second later): past fetch_full_at records queued,
         * fetch_full says so, and the drain that empties the queue wakes
         * the fetcher (app.c, app_wake_fetcher). */
        size_t fetch_full_at;
        int fetch_full;

        /* Records decided while a commit is in flight, for the next
         * transaction (outbox.h); replaying: they are being sent now. */
        sl_outbox_t *outbox;
        int replaying;

        /* sl_app_now_ms(): the time read, on which loop turn, and how
         * often since. */
        int64_t clock_ms;
        uint64_t clock_turn;
        int clock_reads;

        /* A revocation waiting for the commit of its partitions' work. */
        rd_kafka_topic_partition_list_t *revoking;
        int revoke_commit_started;

        uv_timer_t commit_timer; /* every commit_interval */
        uv_timer_t soon_timer;   /* "commit promptly" */
        int soon_armed;
        uv_timer_t linger_timer; /* sl_task_commit_linger */
        int64_t linger_since;    /* ms, 0: not lingering */
        int linger_ms;           /* SL_COMMIT_LINGER_MS (tests: env) */
        int commit_wanted;       /* asked while a commit was in flight */
        int64_t trim_read;       /* input offsets summed at the last trim */
        int64_t trim_last_ms;    /* when (app_trim_after_burst) */
        int64_t last_commit_us;
        int64_t read_cnt;   /* input records handed to tasks */
        int64_t read_bytes; /* their keys and values since the last commit */
        /* app_catching_up(): read_cnt and the time at each of the last
         * SL_CATCHUP_TICKS ticks of the commit timer (a ring). */
        int64_t catch_read[SL_CATCHUP_TICKS], catch_us[SL_CATCHUP_TICKS];
        uint64_t catch_tick;
        int64_t behind_since_us; /* first of the ticks that found it behind */
        int64_t catch_end_us;    /* when the last backlog was caught up */
        int catching_up;         /* app_catching_up() said so last time */
        int catch_quiet;         /* this backlog logs at debug level */

        /* Lifecycle. */
        sl_run_phase_t phase;
        int exit_code;
        int assigned;       /* an assignment since the consumer (re)joined */
        int rebuilding_cnt; /* tasks in REBUILDING */
        uv_signal_t sigterm;
        uv_signal_t sigint;
        uv_timer_t stats_timer; /* lag, readiness, Kafka probe */
        int input_end_asks;     /* lookups of app_ask_input_ends() */
        uv_timer_t stop_timer;  /* drives the shutdown */

        /* Is Kafka answering (a probe every two seconds)? */
        int kafka_up;
        int probe_inflight;
        int64_t probe_next_ms;
        int64_t kafka_down_since_ms;
        char kafka_why[200];

        /* Partitions of the group nobody owns (groupcheck.h): a look at
         * the group every SL_GROUPCHECK_EVERY_MS; rejoin_at_ms, when this
         * member left the group to repair a gap, is when it subscribes
         * again (0: it has not). */
        sl_groupcheck_t groupcheck;
        int group_look_inflight;
        int64_t group_look_next_ms;
        int64_t rejoin_at_ms;

        sl_topic_cache_t *topics; /* metadata cache for operator targets */
        /* Each producer's handles of the pipelines' own topics, kept
         * while it lives (app_warm_topics), by the configured name. */
        struct {
                const char *name;
                rd_kafka_topic_t *rkt[SL_TXN_PRODUCERS_MAX]; /* by producer */
        } * warm;
        int warm_cnt;
        sl_refused_t refused;
        uint32_t epoch_counter; /* task epochs (task.h) */
        uint64_t reader_batch;  /* batches taken from reader_q so far */
        int has_tracking;       /* some operator tracks deliveries */
        /* Tracked records sent whose delivery report is not served yet:
         * a commit waits for them before the precommit hooks (txn.h,
         * reports_pending), and for nothing else. */
        int64_t tracked_inflight;

        sl_metrics_t *metrics;
        sl_http_t *http;
        sl_api_t *api; /* NULL unless api_listen is set */
        sl_counter_t *m_rebalances;
        sl_counter_t *m_deferred; /* records sent from the outbox */
        sl_gauge_t *m_catching_up;
        sl_gauge_t *m_kafka_up;
        sl_gauge_t *m_ready;
        sl_gauge_t *m_unowned;
        sl_counter_t *m_group_rejoins;
        sl_gauge_t *m_malloc_allocated, *m_malloc_resident;
};

/* Runtime internals shared by app.c and task.c. */
void sl_app_commit_soon(sl_app_t *app);
void sl_app_update_ready(sl_app_t *app);
/* 1 when tasks may do work that produces (input, wake-ups): the
 * transaction is open or ready, or a commit is in flight and the outbox has
 * room. */
int sl_app_may_produce(const sl_app_t *app);
/* task.c: sends what the outbox holds into a new transaction, in order;
 * records of tasks dropped or rebuilt since are left out.  Called when a
 * commit has returned. */
void sl_app_outbox_replay(sl_app_t *app);
/* The producer's kept handle of topic name when it is one of the
 * pipelines' own topics (output, changelog, overflow, DLQ), else NULL.
 * Producing through it skips librdkafka's lookup of the topic by name,
 * which takes the client's write lock for every record. */
rd_kafka_topic_t *sl_app_topic(const sl_app_t *app, const char *name);

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
/* Publishes the caps' usage gauges (stats timer) and writes the caps that
 * are full into buf as one reason ("" when none); returns how many. */
int sl_app_caps_reason(sl_app_t *app, char *buf, size_t size);

#endif
