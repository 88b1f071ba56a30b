/*
 * app.h — the process, for app.c and parts.c.  Tasks see only the part of
 * it they share (runtime.h); operators see only task.h.
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

#include "acls.h"
#include "api.h"
#include "config.h"
#include "groupcheck.h"
#include "http.h"
#include "kafka.h"
#include "kquery.h"
#include "kwatch.h"
#include "metrics.h"
#include "runtime.h"
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
 * an abort in flight); past this many, or this many bytes of keys and
 * values (a batch more at most: SL_CONSUME_BATCH records), the consumer is
 * not polled. */
#define SL_HELD_MAX       20000
#define SL_HELD_MAX_BYTES (64 << 20)
/* The outbox's bounds (records decided during a commit); past them input is
 * held as above. */
#define SL_OUTBOX_MAX_BYTES   (64 * 1024 * 1024)
#define SL_OUTBOX_MAX_RECORDS 50000

struct sl_app_s {
        /* What the tasks share: the configuration, the loop, the metrics,
         * the pipelines, the clients, the transaction, the outbox, the
         * clock (runtime.h).  The app's own too: it keeps no copies. */
        sl_runtime_t rt;

        /* The producers belong to txn (re-created after a fatal error);
         * these mirror it.  rt.producer is producers[turn] (the producers
         * take turns, txn.h). */
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX];
        int producer_cnt;
        int turn;
        rd_kafka_queue_t *consumer_q;
        rd_kafka_queue_t *reader_q;
        /* The client kquery's lookups use (rt.kq), lives as long as the
         * process.  Not the reader: a broker mutes a client's connection
         * while it throttles its fetches (a fetch quota on a rebuild), and
         * the lookups, the probe among them, would time out with it.  Its
         * events (errors) come on lookup_q, served by lookup_w. */
        rd_kafka_t *lookup;
        /* A consumer of the group that never joins it: kquery's committed
         * offsets (sl_kquery_set_offsets_client); polled each second. */
        rd_kafka_t *offsets;
        rd_kafka_queue_t *lookup_q;
        sl_kwatch_t *lookup_w;
        sl_watchdog_t *watchdog;
        /* Unique to this process; with the API on, it ends in
         * "@HOST:PORT", the API address other members forward to. */
        char client_id[384];

        /* Input held back while the transaction is busy (a ring), each
         * with the epoch of its task when it was held: a record held for a
         * task that was rebuilt or replaced since is dropped. */
        struct sl_held_s *held;
        int held_head, held_cnt;
        int64_t held_bytes; /* their keys and values (SL_HELD_MAX_BYTES) */

        /* librdkafka 2.0.2 stops fetching once queued.min.messages wait in
         * the consumer queue, and looks again only when its broker thread
         * wakes (up to a second later): past fetch_full_at records queued,
         * fetch_full says so, and the drain that empties the queue wakes
         * the fetcher (app.c, app_wake_fetcher). */
        size_t fetch_full_at;
        int fetch_full;

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
        int assigned; /* an assignment since the consumer (re)joined */
        uv_signal_t sigterm;
        uv_signal_t sigint;
        uv_timer_t stats_timer; /* lag, readiness, Kafka probe */
        uv_timer_t stop_timer;  /* drives the shutdown */

        /* Is Kafka answering (a probe every two seconds)? */
        int kafka_up;
        int probe_inflight;
        int64_t probe_next_ms;
        int64_t probe_sent_ms;
        int64_t probe_failing_since_ms; /* 0: the last probe answered */
        int64_t kafka_down_since_ms;
        char kafka_why[200];

        /* Topics whose DescribeConfigs was refused, said once each
         * (app_first_refusal): hashes, 0 empty. */
#define SL_APP_REFUSALS 64
        uint64_t refusals[SL_APP_REFUSALS];
        sl_acls_t
            *acls; /* the bindings conf needs, made at the first refusal */
        unsigned refusal_next;

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
        int has_tracking; /* some operator tracks deliveries */

        /* What the pipelines' own written topics (changelog, overflow,
         * DLQ, output, default target, input) accept, learned at start with
         * DescribeConfigs (app_limits_learn): what the producers are
         * configured for, and each topic's limit until the topic cache
         * learns it again.  broker_max_bytes: the broker's
         * message.max.bytes as those topics show it (or Kafka's default),
         * assumed for any other topic until its own is learned. */
        struct sl_app_limit_s {
                const char *name;
                int64_t max_bytes; /* -1: not learned */
        } * limits;
        int limit_cnt;
        int64_t broker_max_bytes;

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

/* Shared by app.c and parts.c. */
void sl_app_commit_soon(sl_app_t *app);
void sl_app_update_ready(sl_app_t *app);

/* Publishes the caps' usage gauges (stats timer) and writes the caps that
 * are full into buf as one reason ("" when none); returns how many. */
int sl_app_caps_reason(sl_app_t *app, char *buf, size_t size);

#endif
