/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.c — the Kafka clients and the transaction state machine (txn.h has
 * the diagram).  Every state change goes through txn_set_state(); every
 * blocking librdkafka call runs on the worker thread below.
 *
 * DESIGN
 *
 * The worker.  One thread, one job at a time: CREATE (destroy the old
 * clients if any, make new ones, init_transactions), DELIVER (flush the
 * producer for a moment while FLUSHING waits for its reports), COMMIT
 * (send_offsets_to_transaction, then commit_transaction) and ABORT
 * (abort_transaction).  Each librdkafka call is given SL_TXN_CALL_MS; a
 * retriable error (a timeout, the coordinator moving, a broker away) calls
 * the same function again after a short pause, as librdkafka requires, until
 * it succeeds, fails for good, or the job's deadline passes.  The loop learns
 * the outcome through a uv_async_t and makes the transition.
 *
 * Deadlines.  A commit, an abort and init_transactions are retried for as
 * long as Kafka is away: that is how an outage of any length is ridden
 * through.  A commit call that timed out goes on inside librdkafka, so it
 * is never given up for an abort (that would conflict with it); when the
 * broker answers, the transaction either committed or the coordinator had
 * aborted it (transaction_timeout), which comes back as an abortable or a
 * fatal error.  Waiting for delivery reports before a commit (FLUSHING) is
 * bounded by transaction_timeout.  recovery_timeout (0 = never) bounds how
 * long re-creating the clients may keep failing before the process gives
 * up and exits 1.
 *
 * Turns.  With two producers, a COMMIT job that opens the next transaction
 * (worker_open_next) begins it on the other producer, and the loop moves
 * the turn there when the job is done (txn_done_commit); every other job
 * names the producer it works on (job->rk), so the worker never reads
 * whose turn it is.  An abort stays on its producer.
 *
 * Aborts in a row back off (0, 0.25 s, 0.5 s ... 30 s) before every task is
 * rebuilt, so a record that keeps failing cannot spin the process; each
 * abort is counted.
 */
#include "txn.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kafka.h"
#include "kwatch.h"
#include "log.h"
#include "util.h"

/* The bound of one blocking librdkafka call on the worker. */
#define SL_TXN_CALL_MS 5000
/* One slice of rd_kafka_flush() while FLUSHING (JOB_DELIVER). */
#define SL_TXN_DELIVER_MS 100
/* Pause between retries of a retriable call. */
#define SL_TXN_RETRY_MS 200
/* Describes of the group that must show no other owner of our
 * instance_id before a fenced instance re-creates its clients. */
#define SL_TXN_OWNER_CHECKS   5
#define SL_TXN_OWNER_CHECK_MS 1000
/* How long a recovery waits for the old clients to be destroyed. */
#define SL_TXN_REAP_MS 10000
/* A commit or abort slower than this shows on /readyz. */
#define SL_TXN_SLOW_MS 5000

static const char *state_names[SL_TXN_STATE_CNT] = {
    [SL_TXN_CREATING] = "creating",
    [SL_TXN_READY] = "ready",
    [SL_TXN_OPEN] = "open",
    [SL_TXN_FLUSHING] = "flushing",
    [SL_TXN_COMMITTING] = "committing",
    [SL_TXN_ABORTING] = "aborting",
    [SL_TXN_RECOVERING] = "recovering",
    [SL_TXN_DEAD] = "dead",
};

/*
 * The transitions of txn.h's table: transitions[from] has the bit of
 * every state from may go to.  A state may always stay itself (no change).
 */
#define TO(s) (1u << SL_TXN_##s)
static const unsigned transitions[SL_TXN_STATE_CNT] = {
    /* txn_done_create; a failed create, or a refusal */
    [SL_TXN_CREATING] = TO(READY) | TO(RECOVERING) | TO(DEAD),
    /* sl_txn_produce_begin */
    [SL_TXN_READY] = TO(OPEN) | TO(RECOVERING) | TO(DEAD),
    /* sl_txn_commit, txn_start_commit_job, txn_start_abort */
    [SL_TXN_OPEN] = TO(FLUSHING) | TO(COMMITTING) | TO(ABORTING) |
                    TO(RECOVERING) | TO(DEAD),
    /* txn_flush_check */
    [SL_TXN_FLUSHING] =
        TO(COMMITTING) | TO(ABORTING) | TO(RECOVERING) | TO(DEAD),
    /* txn_done_commit */
    [SL_TXN_COMMITTING] =
        TO(READY) | TO(OPEN) | TO(ABORTING) | TO(RECOVERING) | TO(DEAD),
    /* txn_done_abort */
    [SL_TXN_ABORTING] = TO(READY) | TO(RECOVERING) | TO(DEAD),
    /* txn_post_create; the owner check, recovery_timeout */
    [SL_TXN_RECOVERING] = TO(CREATING) | TO(DEAD),
    [SL_TXN_DEAD] = 0,
};
#undef TO

int sl_txn_transition_valid(sl_txn_state_t from, sl_txn_state_t to) {
        if ((unsigned)from >= SL_TXN_STATE_CNT ||
            (unsigned)to >= SL_TXN_STATE_CNT)
                return 0;
        return from == to || (transitions[from] >> to) & 1;
}

void sl_txn_transition_check(sl_txn_state_t from, sl_txn_state_t to) {
        char what[128];
        if (sl_txn_transition_valid(from, to))
                return;
        snprintf(what, sizeof(what),
                 "BUG: invalid transaction state transition %s -> %s",
                 sl_txn_state_name(from), sl_txn_state_name(to));
        sl_assert_fail(what, __FILE__, __LINE__);
}

const char *sl_txn_state_name(sl_txn_state_t s) {
        return s < SL_TXN_STATE_CNT ? state_names[s] : "?";
}

typedef enum {
        JOB_NONE,
        JOB_CREATE,
        JOB_DELIVER,
        JOB_COMMIT,
        JOB_ABORT
} job_kind_t;

/* A commit's phases (sluice_txn_commit_phase_seconds), in their order. */
enum { PHASE_FLUSH, PHASE_OFFSETS, PHASE_DELIVER, PHASE_END, PHASE_CNT };
static const char *const phase_names[PHASE_CNT] = {"flush", "offsets",
                                                   "deliver", "end"};

typedef struct job_s {
        job_kind_t kind;
        int64_t deadline_ms; /* 0: none */
        /* DELIVER, COMMIT, ABORT: the producer whose turn it is. */
        rd_kafka_t *rk;
        /* CREATE */
        rd_kafka_t *old_producers[SL_TXN_PRODUCERS_MAX], *old_consumer;
        rd_kafka_conf_t *pconfs[SL_TXN_PRODUCERS_MAX], *cconf;
        int producer_cnt;
        int init_idx; /* the producer init_transactions is called for */
        /* COMMIT */
        rd_kafka_topic_partition_list_t *offsets;
        rd_kafka_consumer_group_metadata_t *cgmd;
        /* The transaction already holds these offsets (worker_open_next
         * sent them, and no input moved them since): not sent again. */
        int offsets_in;
        /* Results. */
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX], *consumer;
        rd_kafka_error_t *error; /* NULL: done */
        char call[40];           /* the call that failed */
        /* COMMIT, after it succeeded: the next transaction begun (1), and
         * what failed while opening it. */
        int64_t committed_us; /* when commit_transaction returned */
        /* Where the commit's time went (mono µs): the worker took the
         * job, send_offsets_to_transaction returned (or was not needed:
         * offsets_sent 0), the transaction's records were delivered. */
        int64_t taken_us, offsets_us, delivered_us;
        int offsets_sent;
        int64_t next_open_us; /* when the coordinator took the next one */
        int next_begun;
        int next_turn;       /* the producer the next one is begun on */
        rd_kafka_t *next_rk; /* (its handle) */
        rd_kafka_error_t *next_error;
        char next_call[48];
} job_t;

struct sl_txn_s {
        uv_loop_t *loop;
        sl_txn_hooks_t hooks;
        sl_kquery_t *kq;
        char *group_id, *instance_id, *client_id;
        int64_t txn_timeout_ms;
        int64_t recovery_timeout_ms;

        sl_txn_state_t state;
        int64_t state_since_ms;
        /* producer: producers[turn], the one records go to. */
        rd_kafka_t *producer, *consumer;
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX];
        int producer_cnt; /* configured: 1 or 2 */
        int turn;
        rd_kafka_queue_t *pqs[SL_TXN_PRODUCERS_MAX]; /* their main queues */
        sl_kwatch_t *pws[SL_TXN_PRODUCERS_MAX];
        int64_t records; /* produced in the open transaction */
        int doomed;
        char doom_why[160];
        int stopping;

        /* Recovery. */
        int recover_pending; /* a fatal error arrived while a job ran */
        uint64_t denied_seq; /* sl_kafka_denied_topic's, at the last abort */
        int recover_fenced;
        int64_t recover_since_ms; /* start of the current streak, 0: none */
        int recover_attempts;
        int owner_checks;
        char owner_foreign_id[256]; /* the foreign member watched */
        int64_t owner_foreign_since;
        int64_t session_timeout_ms;
        char fatal_why[256];
        uv_timer_t retry_timer; /* recovery backoff and owner checks */
        uv_timer_t flush_timer; /* FLUSHING: poll the producer's queue */
        uv_timer_t backoff_timer;
        int backoff; /* aborted: waiting before the rebuild */
        int aborts_in_row;

        /* Worker. */
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        job_t *job_in;   /* posted, not yet taken (guarded by lock) */
        job_t *job_done; /* finished (guarded by lock) */
        job_t *job;      /* in flight, loop's view */
        int quit;        /* guarded by lock */
        volatile int cancel;
        uv_async_t done_async;
        char last_retry[200]; /* what the worker is retrying (lock) */

        int64_t commit_start_us; /* when the commit was asked (mono) */
        /* Tests only (SLUICE_TEST_COMMIT_PAUSE_MS): the worker sleeps this
         * long before commit_transaction, so a test can act while a commit
         * is in flight. */
        int test_commit_pause_ms;
        uv_timer_t deferring_timer; /* tells the runtime a commit left */
        uv_timer_t fatal_timer;     /* a fatal error is acted on from here */
        /* Set by the loop when a record was deferred during the commit in
         * flight; read by the worker once the commit is done. */
        atomic_int open_next;
        /* Set by the loop when a JOB_DELIVER slice may end early. */
        atomic_int deliver_stop;
        /* Offsets worker_open_next sent into the open transaction (loop
         * side; NULL: none, or a rebalance since). */
        rd_kafka_topic_partition_list_t *open_offsets;

        sl_counter_t *m_commits, *m_aborts, *m_recoveries;
        sl_gauge_t *m_state;
        sl_histogram_t *m_commit_seconds;
        sl_histogram_t *m_markers_seconds;
        sl_histogram_t *m_phase[PHASE_CNT];
};

static void txn_enter_recovering(sl_txn_t *txn);
static void txn_settle(sl_txn_t *txn);
static void txn_on_fatal(uv_timer_t *timer);

static void txn_set_state(sl_txn_t *txn, sl_txn_state_t s) {
        if (txn->state == s)
                return;
        sl_txn_transition_check(txn->state, s);
        sl_log(s == SL_TXN_READY || s == SL_TXN_OPEN || s == SL_TXN_FLUSHING ||
                       s == SL_TXN_COMMITTING
                   ? LOG_DEBUG
                   : LOG_INFO,
               "TXN", "%s -> %s", sl_txn_state_name(txn->state),
               sl_txn_state_name(s));
        txn->state = s;
        txn->state_since_ms = sl_now_ms();
        sl_gauge_set(txn->m_state, (double)s);
}

int sl_txn_err_is_fencing(rd_kafka_resp_err_t err) {
        return err == RD_KAFKA_RESP_ERR__FENCED ||
               err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
               err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH ||
               err == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
}

/* ------------------------------------------------------------------ */
/* The worker thread.                                                   */

typedef rd_kafka_error_t *(call_fn)(sl_txn_t *txn, job_t *job, int timeout_ms);

static void worker_note_retry(sl_txn_t *txn, const char *call,
                              const rd_kafka_error_t *error) {
        pthread_mutex_lock(&txn->lock);
        if (error)
                snprintf(txn->last_retry, sizeof(txn->last_retry), "%s: %s",
                         call, rd_kafka_error_string(error));
        else
                txn->last_retry[0] = '\0';
        pthread_mutex_unlock(&txn->lock);
}

/* Calls fn until it succeeds, fails for good, the job's deadline passes or
 * the txn is being destroyed.  Logs the first retry and then one line a
 * minute. */
static rd_kafka_error_t *worker_retrying(sl_txn_t *txn, job_t *job,
                                         const char *call, call_fn *fn) {
        rd_kafka_error_t *error;
        int64_t logged = 0;
        int tries = 0;
        for (;;) {
                error = fn(txn, job, SL_TXN_CALL_MS);
                if (!error || !rd_kafka_error_is_retriable(error) ||
                    rd_kafka_error_is_fatal(error) || txn->cancel ||
                    (job->deadline_ms && sl_now_ms() >= job->deadline_ms))
                        break;
                tries++;
                worker_note_retry(txn, call, error);
                if (sl_now_ms() - logged >= 60000) {
                        sl_log(LOG_WARNING, "TXN",
                               "%s: %s; retrying (attempt %d)", call,
                               rd_kafka_error_string(error), tries + 1);
                        logged = sl_now_ms();
                }
                rd_kafka_error_destroy(error);
                usleep(SL_TXN_RETRY_MS * 1000);
        }
        worker_note_retry(txn, call, NULL);
        if (error)
                snprintf(job->call, sizeof(job->call), "%s", call);
        else if (tries)
                sl_log(LOG_NOTICE, "TXN", "%s: succeeded after %d retries",
                       call, tries);
        return error;
}

static rd_kafka_error_t *call_init(sl_txn_t *txn, job_t *job, int tmo) {
        (void)txn;
        return rd_kafka_init_transactions(job->producers[job->init_idx], tmo);
}

static rd_kafka_error_t *call_send_offsets(sl_txn_t *txn, job_t *job, int tmo) {
        (void)txn;
        return rd_kafka_send_offsets_to_transaction(job->rk, job->offsets,
                                                    job->cgmd, tmo);
}

/* The offsets just committed, into the next transaction (worker_open_next):
 * on the producer it was begun on. */
static rd_kafka_error_t *call_send_offsets_next(sl_txn_t *txn, job_t *job,
                                                int tmo) {
        (void)txn;
        return rd_kafka_send_offsets_to_transaction(job->next_rk, job->offsets,
                                                    job->cgmd, tmo);
}

static rd_kafka_error_t *call_commit(sl_txn_t *txn, job_t *job, int tmo) {
        (void)txn;
        return rd_kafka_commit_transaction(job->rk, tmo);
}

static rd_kafka_error_t *call_abort(sl_txn_t *txn, job_t *job, int tmo) {
        (void)txn;
        return rd_kafka_abort_transaction(job->rk, tmo);
}

/* The old clients of a recovery, destroyed on a thread of their own: a
 * destroy that hangs inside librdkafka (seen once after a producer was
 * fenced in the middle of send_offsets_to_transaction) must not keep the
 * new clients from being made.  Whoever finishes last frees it. */
typedef struct reap_s {
        rd_kafka_t *producers[SL_TXN_PRODUCERS_MAX], *consumer;
        pthread_mutex_t lock;
        int done, abandoned;
} reap_t;

static void *reaper_main(void *arg) {
        reap_t *r = arg;
        int abandoned;
        if (r->consumer)
                rd_kafka_destroy_flags(r->consumer,
                                       RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++) {
                if (!r->producers[i])
                        continue;
                rd_kafka_purge(r->producers[i], RD_KAFKA_PURGE_F_QUEUE |
                                                    RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_destroy(r->producers[i]);
        }
        pthread_mutex_lock(&r->lock);
        r->done = 1;
        abandoned = r->abandoned;
        pthread_mutex_unlock(&r->lock);
        if (abandoned) {
                sl_log(LOG_NOTICE, "TXN", "the old Kafka clients are gone");
                pthread_mutex_destroy(&r->lock);
                free(r);
        }
        return NULL;
}

/* Destroys the old clients, waiting at most SL_TXN_REAP_MS. */
static void worker_reap(rd_kafka_t *const *producers, rd_kafka_t *consumer) {
        reap_t *r;
        pthread_t th;
        pthread_attr_t attr;
        int64_t end = sl_now_ms() + SL_TXN_REAP_MS;
        int done = 0, any = consumer != NULL;
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                any |= producers[i] != NULL;
        if (!any)
                return;
        r = sl_calloc(1, sizeof(*r));
        memcpy(r->producers, producers, sizeof(r->producers));
        r->consumer = consumer;
        pthread_mutex_init(&r->lock, NULL);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &attr, reaper_main, r) != 0) {
                pthread_attr_destroy(&attr);
                r->abandoned = 1;
                reaper_main(r); /* here, then */
                return;
        }
        pthread_attr_destroy(&attr);
        while (!done) {
                pthread_mutex_lock(&r->lock);
                done = r->done;
                if (!done && sl_now_ms() >= end) {
                        r->abandoned = 1;
                        pthread_mutex_unlock(&r->lock);
                        sl_log(LOG_WARNING, "TXN",
                               "destroying the old Kafka clients takes "
                               "longer than %d s; going on without them",
                               SL_TXN_REAP_MS / 1000);
                        return;
                }
                pthread_mutex_unlock(&r->lock);
                if (!done)
                        usleep(20 * 1000);
        }
        pthread_mutex_destroy(&r->lock);
        free(r);
}

static void worker_create(sl_txn_t *txn, job_t *job) {
        char errstr[512];
        /* The old clients first (the new producers fence the old ones
         * anyway), but never waiting on them for long. */
        worker_reap(job->old_producers, job->old_consumer);
        memset(job->old_producers, 0, sizeof(job->old_producers));
        job->old_consumer = NULL;

        for (int i = 0; i < job->producer_cnt; i++) {
                job->producers[i] = rd_kafka_new(
                    RD_KAFKA_PRODUCER, job->pconfs[i], errstr, sizeof(errstr));
                if (!job->producers[i]) {
                        job->error =
                            rd_kafka_error_new(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                               "producer: %s", errstr);
                        snprintf(job->call, sizeof(job->call), "rd_kafka_new");
                        return;
                }
                job->pconfs[i] = NULL;
        }
        job->consumer =
            rd_kafka_new(RD_KAFKA_CONSUMER, job->cconf, errstr, sizeof(errstr));
        if (!job->consumer) {
                job->error = rd_kafka_error_new(RD_KAFKA_RESP_ERR__INVALID_ARG,
                                                "consumer: %s", errstr);
                snprintf(job->call, sizeof(job->call), "rd_kafka_new");
                return;
        }
        job->cconf = NULL;
        for (job->init_idx = 0; job->init_idx < job->producer_cnt;
             job->init_idx++) {
                job->error =
                    worker_retrying(txn, job, "init_transactions", call_init);
                if (job->error)
                        return;
        }
}

/* Opens the transaction after a commit, for records deferred during it,
 * and sends it the offsets just committed (a no-op for the group): when no
 * input moves them before its own commit, that commit need not send them
 * again (offsets_in), and the transaction carries the group's generation
 * for fencing from the start.  Kafka's coordinator still writes the
 * markers of the commit after commit_transaction returned, and refuses the
 * same producer's next transaction meanwhile (CONCURRENT_TRANSACTIONS),
 * which librdkafka 2.0.2 answers with a fixed 20 ms back-off.  With two
 * producers the next transaction is begun on the other one (job->next_rk),
 * which the coordinator takes at once, over a connection with nothing in
 * flight.  With one, deferred records replayed at once would wait that
 * back-off before they were even sent, while the offsets are retried every
 * retry.backoff.ms until the coordinator is done: once they are in, the
 * records go straight in (the wait, to within that back-off, is
 * sluice_txn_markers_seconds).  Those partitions are still ours: the
 * runtime never asks for this during the commit a revocation waits for. */
static void worker_open_next(sl_txn_t *txn, job_t *job) {
        rd_kafka_error_t *error;
        if (!atomic_exchange(&txn->open_next, 0) ||
            (job->next_rk == job->rk && !job->offsets))
                return;
        error = rd_kafka_begin_transaction(job->next_rk);
        if (error) {
                job->next_error = error;
                snprintf(job->next_call, sizeof(job->next_call),
                         "begin_transaction");
                return;
        }
        job->next_begun = 1;
        if (!job->offsets)
                return;
        error = worker_retrying(txn, job, "send_offsets_to_transaction",
                                call_send_offsets_next);
        if (!error) {
                job->next_open_us = sl_mono_us();
        } else {
                job->next_error = error;
                snprintf(job->next_call, sizeof(job->next_call),
                         "send_offsets_to_transaction (next)");
        }
}

/* Waits, in short slices, until every record of the transaction is
 * delivered, as commit_transaction would do first: done here, the commit's
 * delivery wait and its EndTxn are measured apart.  Gives up quietly after
 * SL_TXN_CALL_MS, when cancelled, or at a fatal error of the producer
 * (commit_transaction reports it at once): commit_transaction then goes on
 * waiting, with its retries, as it always did. */
static void worker_deliver(sl_txn_t *txn, job_t *job) {
        int64_t end = sl_now_ms() + SL_TXN_CALL_MS;
        while (rd_kafka_flush(job->rk, 100) == RD_KAFKA_RESP_ERR__TIMED_OUT &&
               !txn->cancel && sl_now_ms() < end &&
               !rd_kafka_fatal_error(job->rk, NULL, 0))
                ;
}

/* One slice of FLUSHING (JOB_DELIVER): flushes until every record is
 * delivered, the loop needs no more (deliver_stop) or SL_TXN_DELIVER_MS
 * passed; the loop posts the next slice while reports are awaited. */
static void worker_deliver_slice(sl_txn_t *txn, job_t *job) {
        int64_t end = sl_now_ms() + SL_TXN_DELIVER_MS;
        while (!atomic_load(&txn->deliver_stop) && !txn->cancel &&
               sl_now_ms() < end &&
               rd_kafka_flush(job->rk, 5) == RD_KAFKA_RESP_ERR__TIMED_OUT)
                ;
}

static void worker_commit(sl_txn_t *txn, job_t *job) {
        job->taken_us = sl_mono_us();
        if (job->offsets && !job->offsets_in) {
                job->error = worker_retrying(
                    txn, job, "send_offsets_to_transaction", call_send_offsets);
                if (job->error)
                        return;
                job->offsets_sent = 1;
        }
        job->offsets_us = sl_mono_us();
        worker_deliver(txn, job);
        job->delivered_us = sl_mono_us();
        if (txn->test_commit_pause_ms)
                usleep((useconds_t)txn->test_commit_pause_ms * 1000);
        job->error =
            worker_retrying(txn, job, "commit_transaction", call_commit);
        job->committed_us = sl_mono_us();
        if (!job->error)
                worker_open_next(txn, job);
}

static void *worker_main(void *arg) {
        sl_txn_t *txn = arg;
        pthread_mutex_lock(&txn->lock);
        for (;;) {
                job_t *job;
                while (!txn->job_in && !txn->quit)
                        pthread_cond_wait(&txn->cond, &txn->lock);
                if (!txn->job_in)
                        break;
                job = txn->job_in;
                txn->job_in = NULL;
                pthread_mutex_unlock(&txn->lock);
                switch (job->kind) {
                case JOB_CREATE:
                        worker_create(txn, job);
                        break;
                case JOB_DELIVER:
                        worker_deliver_slice(txn, job);
                        break;
                case JOB_COMMIT:
                        worker_commit(txn, job);
                        break;
                case JOB_ABORT:
                        job->error = worker_retrying(
                            txn, job, "abort_transaction", call_abort);
                        break;
                default:
                        break;
                }
                pthread_mutex_lock(&txn->lock);
                txn->job_done = job;
                uv_async_send(&txn->done_async);
        }
        pthread_mutex_unlock(&txn->lock);
        return NULL;
}

static void txn_post(sl_txn_t *txn, job_t *job) {
        sl_assert(!txn->job);
        job->rk = txn->producer;
        txn->job = job;
        pthread_mutex_lock(&txn->lock);
        txn->job_in = job;
        pthread_cond_signal(&txn->cond);
        pthread_mutex_unlock(&txn->lock);
}

static void job_free(job_t *job) {
        if (job->error)
                rd_kafka_error_destroy(job->error);
        if (job->next_error)
                rd_kafka_error_destroy(job->next_error);
        if (job->offsets)
                rd_kafka_topic_partition_list_destroy(job->offsets);
        if (job->cgmd)
                rd_kafka_consumer_group_metadata_destroy(job->cgmd);
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++) {
                if (job->pconfs[i])
                        rd_kafka_conf_destroy(job->pconfs[i]);
                if (job->producers[i])
                        rd_kafka_destroy(job->producers[i]);
        }
        if (job->cconf)
                rd_kafka_conf_destroy(job->cconf);
        if (job->consumer)
                rd_kafka_destroy_flags(job->consumer,
                                       RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        free(job);
}

/* ------------------------------------------------------------------ */
/* Authorization.                                                       */

/* The not_authorized hook decides (txn.h): 1 when the process ends, the
 * txn then dead. */
static int txn_ask_refused(sl_txn_t *txn, rd_kafka_resp_err_t code,
                           const char *topic, const char *why) {
        if (!txn->hooks.not_authorized(txn->hooks.opaque, code, topic, why))
                return 0;
        txn_set_state(txn, SL_TXN_DEAD);
        return 1;
}

/* 1 when err is the authorizer's refusal and the not_authorized hook
 * ends the process (txn.h): the txn is then dead.  0 otherwise (a
 * refusal the hook let go is then handled as any other error). */
static int txn_refused(sl_txn_t *txn, rd_kafka_resp_err_t err,
                       const char *why) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
                break;
        default:
                return 0;
        }
        return txn->state == SL_TXN_DEAD ||
               txn_ask_refused(txn, err, NULL, why);
}

int sl_txn_refused(sl_txn_t *txn, rd_kafka_resp_err_t code, const char *topic,
                   const char *why) {
        if (txn->state == SL_TXN_DEAD || txn_ask_refused(txn, code, topic, why))
                return 1;
        sl_txn_doom(txn, why);
        return 0;
}

static int txn_error_refused(sl_txn_t *txn, const rd_kafka_error_t *error,
                             const char *why) {
        return error && txn_refused(txn, rd_kafka_error_code(error), why);
}

/* ------------------------------------------------------------------ */
/* Producer events.                                                     */

static void txn_on_producer_error(sl_txn_t *txn, rd_kafka_t *rk,
                                  rd_kafka_event_t *ev) {
        rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
        char buf[256];
        if (rd_kafka_event_error_is_fatal(ev)) {
                err = rd_kafka_fatal_error(rk, buf, sizeof(buf));
                if (!txn_refused(txn, err, buf))
                        sl_txn_fatal(txn, "producer", buf,
                                     sl_txn_err_is_fencing(err));
                return;
        }
        sl_kafka_log_error("producer", err, rd_kafka_event_error_string(ev));
}

/* An event of producers[i]. */
static void txn_on_event(sl_txn_t *txn, int i, rd_kafka_event_t *ev) {
        const rd_kafka_message_t *m;
        switch (rd_kafka_event_type(ev)) {
        case RD_KAFKA_EVENT_DR:
                while ((m = rd_kafka_event_message_next(ev)))
                        txn->hooks.delivery(txn->hooks.opaque, m);
                break;
        case RD_KAFKA_EVENT_ERROR:
                txn_on_producer_error(txn, txn->producers[i], ev);
                break;
        default:
                break;
        }
        rd_kafka_event_destroy(ev);
}

static void txn_flush_check(sl_txn_t *txn);

int sl_txn_serve(sl_txn_t *txn, int budget) {
        int n = 0;
        /* An event may end the clients (a fatal error): the queues are
         * looked at again each time. */
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                while (n < budget && txn->pqs[i]) {
                        rd_kafka_event_t *ev =
                            rd_kafka_queue_poll(txn->pqs[i], 0);
                        if (!ev)
                                break;
                        n += SL_MAX(1, (int)rd_kafka_event_message_count(ev));
                        txn_on_event(txn, i, ev);
                }
        if (txn->state == SL_TXN_FLUSHING)
                txn_flush_check(txn);
        return n;
}

static int txn_serve_cb(void *opaque, int budget) {
        return sl_txn_serve(opaque, budget);
}

/* librdkafka sends a batch before linger.ms only while a flush is under
 * way, and a flush here can only wait for the reports this thread serves:
 * short flushes and the reports, in turn. */
int sl_txn_drain(sl_txn_t *txn, int timeout_ms) {
        int64_t end = sl_now_ms() + timeout_ms;
        /* A fatal error met: nothing more will be delivered. */
        while (txn->producer && txn->pqs[0] && !txn->recover_pending) {
                rd_kafka_event_t *ev;
                if (rd_kafka_outq_len(txn->producer) == 0)
                        return 0;
                if (sl_now_ms() >= end)
                        return -1;
                rd_kafka_flush(txn->producer, 1);
                /* An event may end the clients (a fatal error): pq is
                 * looked at again each time. */
                for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                        while (txn->pqs[i] &&
                               (ev = rd_kafka_queue_poll(txn->pqs[i], 0)))
                                txn_on_event(txn, i, ev);
        }
        return -1;
}

/* ------------------------------------------------------------------ */
/* Transitions.                                                         */

int sl_txn_accepting(const sl_txn_t *txn) {
        return (txn->state == SL_TXN_READY || txn->state == SL_TXN_OPEN) &&
               !txn->doomed && !txn->recover_pending && !txn->backoff;
}

int sl_txn_deferring(const sl_txn_t *txn) {
        return txn->state == SL_TXN_COMMITTING && !txn->doomed &&
               !txn->recover_pending && !txn->stopping;
}

sl_txn_state_t sl_txn_state(const sl_txn_t *txn) {
        return txn->state;
}

rd_kafka_t *sl_txn_producer(const sl_txn_t *txn) {
        return txn->producer;
}

int64_t sl_txn_records(const sl_txn_t *txn) {
        return txn->records;
}

void sl_txn_produced(sl_txn_t *txn) {
        txn->records++;
}

/* Leaves the non-accepting states: tell the runtime to resume. */
static void txn_settle(sl_txn_t *txn) {
        if (txn->state == SL_TXN_DEAD)
                return; /* the end (txn.h) */
        if (txn->recover_pending) {
                txn_enter_recovering(txn);
                return;
        }
        if (txn->doomed && !txn->backoff &&
            (txn->state == SL_TXN_READY || txn->state == SL_TXN_OPEN)) {
                sl_txn_commit(txn); /* aborts, or rebuilds */
                return;
        }
        if (sl_txn_accepting(txn))
                txn->hooks.resumed(txn->hooks.opaque);
}

int sl_txn_produce_begin(sl_txn_t *txn) {
        rd_kafka_error_t *error;
        if (txn->doomed || txn->recover_pending)
                return -1;
        if (txn->state == SL_TXN_OPEN || txn->state == SL_TXN_FLUSHING)
                return 0;
        if (txn->state != SL_TXN_READY) {
                sl_txn_doom(txn, "record produced while the transaction is "
                                 "busy");
                return -1;
        }
        error = rd_kafka_begin_transaction(txn->producer);
        if (error) {
                char why[256];
                snprintf(why, sizeof(why), "begin_transaction: %s",
                         rd_kafka_error_string(error));
                if (txn_error_refused(txn, error, why))
                        ;
                else if (rd_kafka_error_is_fatal(error))
                        sl_txn_fatal(txn, "producer", why, 0);
                else
                        sl_txn_doom(txn, why);
                rd_kafka_error_destroy(error);
                return -1;
        }
        txn->records = 0;
        txn_set_state(txn, SL_TXN_OPEN);
        return 0;
}

static void txn_on_soon(uv_timer_t *timer);

void sl_txn_doom(sl_txn_t *txn, const char *why) {
        if (!txn->doomed) {
                sl_log(LOG_WARNING, "TXN", "transaction will be aborted: %s",
                       why);
                snprintf(txn->doom_why, sizeof(txn->doom_why), "%s", why);
        }
        txn->doomed = 1;
        /* Act from the loop, never inside the operator that called us. */
        if (!uv_is_active((uv_handle_t *)&txn->flush_timer))
                uv_timer_start(&txn->flush_timer, txn_on_soon, 0, 0);
}

static void txn_forget_open_offsets(sl_txn_t *txn) {
        if (txn->open_offsets)
                rd_kafka_topic_partition_list_destroy(txn->open_offsets);
        txn->open_offsets = NULL;
}

/* 1 when a and b name the same partitions at the same offsets, in the
 * same order (both come from the runtime's walk of its tasks). */
static int offsets_same(const rd_kafka_topic_partition_list_t *a,
                        const rd_kafka_topic_partition_list_t *b) {
        if (!a || !b || a->cnt != b->cnt)
                return 0;
        for (int i = 0; i < a->cnt; i++)
                if (a->elems[i].partition != b->elems[i].partition ||
                    a->elems[i].offset != b->elems[i].offset ||
                    strcmp(a->elems[i].topic, b->elems[i].topic))
                        return 0;
        return 1;
}

static void txn_start_abort(sl_txn_t *txn, const char *why) {
        job_t *job;
        char topic[256];
        uint64_t seq;
        if (txn->state == SL_TXN_DEAD)
                return; /* the end (txn.h) */
        seq = sl_kafka_denied_topic(topic, sizeof(topic));
        /* AddPartitionsToTxn refused a topic since the last abort: the
         * cause, whatever doomed the transaction first (txn.h). */
        if (seq != txn->denied_seq) {
                txn->denied_seq = seq;
                if (txn->state != SL_TXN_DEAD &&
                    txn_ask_refused(
                        txn, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                        topic, "AddPartitionsToTxn refused it"))
                        return;
        }
        job = sl_calloc(1, sizeof(*job));
        txn_forget_open_offsets(txn);
        sl_log(LOG_WARNING, "TXN", "aborting transaction: %s", why);
        job->kind = JOB_ABORT;
        txn_set_state(txn, SL_TXN_ABORTING);
        txn_post(txn, job);
}

static void txn_on_deferring(uv_timer_t *timer) {
        sl_txn_t *txn = timer->data;
        if (sl_txn_deferring(txn))
                txn->hooks.resumed(txn->hooks.opaque);
}

static void txn_start_commit_job(sl_txn_t *txn) {
        job_t *job;
        /* What operators gathered goes in before the offsets that cover
         * it are taken (the transaction is open, nothing is deferred). */
        if (txn->hooks.seal) {
                txn->hooks.seal(txn->hooks.opaque);
                if (txn->recover_pending)
                        return; /* the clients go: txn_on_fatal() */
                if (txn->state == SL_TXN_DEAD)
                        return; /* a refusal ended it (txn.h) */
                if (txn->doomed) {
                        txn_start_abort(txn, txn->doom_why);
                        return;
                }
        }
        job = sl_calloc(1, sizeof(*job));
        job->kind = JOB_COMMIT;
        job->next_turn = (txn->turn + 1) % txn->producer_cnt;
        job->next_rk = txn->producers[job->next_turn];
        /* No deadline: a commit call that timed out goes on inside
         * librdkafka, and only the same call may be made until it ends (an
         * abort would conflict with it).  It ends when the broker answers:
         * committed, or refused because the coordinator aborted it. */
        job->offsets = txn->hooks.offsets(txn->hooks.opaque, 1);
        if (job->offsets)
                job->cgmd = rd_kafka_consumer_group_metadata(txn->consumer);
        /* A transaction opened for deferred records already carries the
         * offsets of the commit before it (worker_open_next); when no
         * input moved them since, sending them again is one more
         * AddOffsetsToTxn and TxnOffsetCommit for the same generation,
         * queued behind the transaction's produce requests. */
        job->offsets_in = offsets_same(job->offsets, txn->open_offsets);
        txn_forget_open_offsets(txn);
        atomic_store(&txn->open_next, 0);
        txn_set_state(txn, SL_TXN_COMMITTING);
        txn_post(txn, job);
        /* The loop may go on while the worker commits: say so from the
         * loop, not from inside whoever asked for the commit. */
        uv_timer_start(&txn->deferring_timer, txn_on_deferring, 0, 0);
}

/* FLUSHING: once the reports the precommit hooks need have come (every
 * record's without reports_pending), operators write their checkpoints,
 * then the commit goes to the worker.  Meanwhile the worker flushes the
 * producer in slices (JOB_DELIVER): librdkafka sends a batch before
 * linger.ms only while someone flushes.  A slice in flight is told to end
 * once nothing is awaited any more; txn_on_done() comes back here. */
static void txn_flush_check(sl_txn_t *txn) {
        int pending;
        if (txn->state != SL_TXN_FLUSHING || txn->recover_pending)
                return;
        /* (Nothing left in the producer: every report was served,
         * whatever the hook counts.) */
        pending = !txn->doomed && rd_kafka_outq_len(txn->producer) > 0 &&
                  (!txn->hooks.reports_pending ||
                   txn->hooks.reports_pending(txn->hooks.opaque));
        if (txn->job) {
                if (!pending)
                        atomic_store(&txn->deliver_stop, 1);
                return;
        }
        if (txn->doomed) {
                uv_timer_stop(&txn->flush_timer);
                txn_start_abort(txn, txn->doom_why);
                return;
        }
        if (pending) {
                job_t *job;
                if (sl_now_ms() - txn->state_since_ms > txn->txn_timeout_ms) {
                        sl_txn_doom(txn, "records not delivered within "
                                         "transaction_timeout");
                        return;
                }
                job = sl_calloc(1, sizeof(*job));
                job->kind = JOB_DELIVER;
                atomic_store(&txn->deliver_stop, 0);
                txn_post(txn, job);
                return;
        }
        uv_timer_stop(&txn->flush_timer);
        txn->hooks.precommit(txn->hooks.opaque);
        if (txn->recover_pending)
                return; /* the clients go: txn_on_fatal() */
        if (txn->state == SL_TXN_DEAD)
                return; /* a refusal ended it (txn.h) */
        if (txn->doomed) {
                txn_start_abort(txn, txn->doom_why);
                return;
        }
        txn_start_commit_job(txn);
}

static void txn_on_flush_timer(uv_timer_t *timer) {
        sl_txn_t *txn = timer->data;
        sl_txn_serve(txn, 1000);
}

/* A doom (or a deferred step) acts here, on the loop. */
static void txn_on_soon(uv_timer_t *timer) {
        sl_txn_t *txn = timer->data;
        if (txn->state == SL_TXN_FLUSHING) {
                txn_flush_check(txn);
                if (txn->state == SL_TXN_FLUSHING)
                        uv_timer_start(&txn->flush_timer, txn_on_flush_timer, 5,
                                       5);
                return;
        }
        if (txn->doomed)
                sl_txn_commit(txn);
}

int sl_txn_commit(sl_txn_t *txn) {
        rd_kafka_topic_partition_list_t *offs;
        switch (txn->state) {
        case SL_TXN_READY:
        case SL_TXN_OPEN:
                break;
        default:
                return -1;
        }
        if (txn->backoff || txn->recover_pending)
                return -1;
        txn->commit_start_us = sl_mono_us();
        if (txn->doomed) {
                if (txn->state == SL_TXN_OPEN) {
                        txn_start_abort(txn, txn->doom_why);
                } else {
                        /* Nothing reached Kafka, but memory went ahead. */
                        txn->doomed = 0;
                        txn->hooks.aborted(txn->hooks.opaque);
                        txn_settle(txn);
                }
                return 0;
        }
        if (txn->state == SL_TXN_OPEN && txn->hooks.precommit) {
                txn_set_state(txn, SL_TXN_FLUSHING);
                txn_flush_check(txn);
                if (txn->state == SL_TXN_FLUSHING)
                        uv_timer_start(&txn->flush_timer, txn_on_flush_timer, 5,
                                       5);
                return 0;
        }
        if (txn->state == SL_TXN_READY) {
                /* Offsets alone still go in a transaction: it carries the
                 * group generation that fences a zombie. */
                offs = txn->hooks.offsets(txn->hooks.opaque, 0);
                if (!offs)
                        return 1;
                rd_kafka_topic_partition_list_destroy(offs);
                if (sl_txn_produce_begin(txn) == -1)
                        return 0; /* doomed or recovering: it settles */
        }
        txn_start_commit_job(txn);
        return 0;
}

/* Aborted and backed off: rebuild every task. */
static void txn_after_abort(sl_txn_t *txn) {
        txn->backoff = 0;
        txn->hooks.aborted(txn->hooks.opaque);
        txn_settle(txn);
}

static void txn_on_backoff(uv_timer_t *timer) {
        txn_after_abort(timer->data);
}

/* ------------------------------------------------------------------ */
/* Recovery.                                                            */

static void txn_post_create(sl_txn_t *txn) {
        job_t *job = sl_calloc(1, sizeof(*job));
        char errstr[512];
        txn_forget_open_offsets(txn);
        job->kind = JOB_CREATE;
        memcpy(job->old_producers, txn->producers, sizeof(job->old_producers));
        job->old_consumer = txn->consumer;
        memset(txn->producers, 0, sizeof(txn->producers));
        txn->producer = txn->consumer = NULL;
        if (txn->recovery_timeout_ms && txn->recover_since_ms)
                job->deadline_ms =
                    txn->recover_since_ms + txn->recovery_timeout_ms;
        job->producer_cnt = txn->producer_cnt;
        for (int i = 0; i < job->producer_cnt; i++) {
                if (!(job->pconfs[i] = txn->hooks.producer_conf(
                          txn->hooks.opaque, i, errstr, sizeof(errstr))))
                        break;
                rd_kafka_conf_set_events(
                    job->pconfs[i], RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
        }
        if (!job->pconfs[job->producer_cnt - 1] ||
            !(job->cconf = txn->hooks.consumer_conf(txn->hooks.opaque, errstr,
                                                    sizeof(errstr)))) {
                sl_log(LOG_CRIT, "TXN", "client configuration: %s", errstr);
                job_free(job);
                txn_set_state(txn, SL_TXN_DEAD);
                txn->hooks.exit(txn->hooks.opaque, SL_EXIT_FAIL);
                return;
        }
        txn_set_state(txn, SL_TXN_CREATING);
        txn_post(txn, job);
}

static void txn_owner_check(sl_txn_t *txn);

static void txn_on_retry_timer(uv_timer_t *timer) {
        sl_txn_t *txn = timer->data;
        if (txn->state != SL_TXN_RECOVERING)
                return;
        if (txn->owner_checks > 0)
                txn_owner_check(txn);
        else
                txn_post_create(txn);
}

/* Whether member mb holds instance_id.  The classic DescribeGroups answer
 * (kquery's group owners) carries no group.instance.id, but a static
 * member's id is the broker's "<group.instance.id>-<uuid>" (Kafka's group
 * coordinators, classic and new, name it so). */
static int txn_member_is(const sl_groupcheck_member_t *mb,
                         const char *instance_id) {
        size_t n = strlen(instance_id);
        if (mb->group_instance_id)
                return !strcmp(mb->group_instance_id, instance_id);
        return mb->consumer_id && !strncmp(mb->consumer_id, instance_id, n) &&
               mb->consumer_id[n] == '-';
}

/* One look at the group: a member holding our instance_id under a member
 * id that is not our consumer's is another process (a static member that
 * replaces another keeps the old client id and host, so only the member id
 * tells them apart). */
static void txn_on_group(void *opaque, rd_kafka_resp_err_t err,
                         rd_kafka_consumer_group_state_t state,
                         const sl_groupcheck_member_t *members,
                         int member_cnt) {
        sl_txn_t *txn = opaque;
        (void)state;
        char *mine = NULL, foreign[256] = "";
        if (txn->state != SL_TXN_RECOVERING)
                return;
        if (err) {
                sl_log(LOG_WARNING, "TXN",
                       "describing group %s to check instance_id %s: %s",
                       txn->group_id, txn->instance_id, rd_kafka_err2str(err));
                uv_timer_start(&txn->retry_timer, txn_on_retry_timer,
                               SL_TXN_OWNER_CHECK_MS, 0);
                return;
        }
        /* Our consumer still exists (it is destroyed with the next
         * attempt): its member id now. */
        if (txn->consumer)
                mine = rd_kafka_memberid(txn->consumer);
        /* Without a member id of our own (our consumer was between two
         * joins) nothing can be told apart: that look counts as clean. */
        for (int i = 0; mine && *mine && i < member_cnt && !foreign[0]; i++) {
                const sl_groupcheck_member_t *mb = &members[i];
                if (txn_member_is(mb, txn->instance_id) && mb->consumer_id &&
                    strcmp(mb->consumer_id, mine))
                        snprintf(foreign, sizeof(foreign), "%s",
                                 mb->consumer_id);
        }
        /* A member holding our instance_id under another member id is
         * either another live process or an orphan of our own: a join
         * whose answer we never read (the broker was paused while the
         * request waited).  Nobody heartbeats for an orphan, so the broker
         * drops it; a live owner stays.  An orphan can outlive one session
         * timeout: when a rebalance completes with it as a member, its
         * session deadline starts again (0403 saw one removed 12 s after
         * the broker's resume with a 6 s session timeout).  So: the same
         * foreign member for longer than twice the session timeout is
         * another process. */
        if (foreign[0]) {
                int64_t now = sl_now_ms();
                if (strcmp(foreign, txn->owner_foreign_id)) {
                        snprintf(txn->owner_foreign_id,
                                 sizeof(txn->owner_foreign_id), "%s", foreign);
                        txn->owner_foreign_since = now;
                        sl_log(LOG_WARNING, "TXN",
                               "instance_id %s is held by member %s, not "
                               "ours (%s); watching it for twice the "
                               "session timeout (%" PRId64 " ms)",
                               txn->instance_id, foreign, mine,
                               2 * txn->session_timeout_ms);
                } else if (now - txn->owner_foreign_since >
                           2 * txn->session_timeout_ms +
                               SL_TXN_OWNER_CHECK_MS) {
                        sl_log(LOG_CRIT, "TXN",
                               "instance_id %s is owned by another live "
                               "instance (member %s has held it for %.0f s; "
                               "ours was %s); exiting",
                               txn->instance_id, foreign,
                               (double)(now - txn->owner_foreign_since) /
                                   1000.0,
                               mine);
                        rd_kafka_mem_free(NULL, mine);
                        txn_set_state(txn, SL_TXN_DEAD);
                        txn->hooks.exit(txn->hooks.opaque, SL_EXIT_FAIL);
                        return;
                }
                rd_kafka_mem_free(NULL, mine);
                uv_timer_start(&txn->retry_timer, txn_on_retry_timer,
                               SL_TXN_OWNER_CHECK_MS, 0);
                return;
        }
        if (mine)
                rd_kafka_mem_free(NULL, mine);
        txn->owner_foreign_id[0] = '\0';
        sl_log(LOG_INFO, "TXN",
               "owner check %d of %d: no other member holds instance_id %s",
               SL_TXN_OWNER_CHECKS - txn->owner_checks + 1, SL_TXN_OWNER_CHECKS,
               txn->instance_id);
        txn->owner_checks--;
        uv_timer_start(&txn->retry_timer, txn_on_retry_timer,
                       txn->owner_checks ? SL_TXN_OWNER_CHECK_MS : 0, 0);
}

/* Through the classic DescribeGroups (kquery's group owners), not the
 * admin API's DescribeConsumerGroups: librdkafka 2.0.2 aborts on an
 * assertion (rd_kafka_enq_once_del_source_return: eonce->refcnt > 0) when
 * that request cannot be built for a coordinator whose API versions it
 * does not know, which it met while nodes were down (0703, 0704). */
static void txn_owner_check(sl_txn_t *txn) {
        if (sl_kquery_group_owners(txn->kq, txn->group_id, SL_TXN_CALL_MS,
                                   txn_on_group, txn) == -1) {
                txn->owner_checks = 0;
                txn_post_create(txn);
        }
}

/* The producers' queues are no longer served. */
static void txn_unwatch_producers(sl_txn_t *txn) {
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++) {
                sl_kwatch_close(txn->pws[i]);
                txn->pws[i] = NULL;
                if (txn->pqs[i])
                        rd_kafka_queue_destroy(txn->pqs[i]);
                txn->pqs[i] = NULL;
        }
}

/* Every task is dropped and the clients handed to the worker to be
 * destroyed and made anew. */
static void txn_enter_recovering(sl_txn_t *txn) {
        int64_t delay;
        sl_assert(!txn->job);
        txn->recover_pending = 0;
        txn->doomed = 0;
        txn->backoff = 0;
        uv_timer_stop(&txn->flush_timer);
        uv_timer_stop(&txn->backoff_timer);
        txn_set_state(txn, SL_TXN_RECOVERING);
        txn->hooks.clients_lost(txn->hooks.opaque);
        txn_unwatch_producers(txn);
        if (!txn->recover_since_ms)
                txn->recover_since_ms = sl_now_ms();
        if (txn->recovery_timeout_ms &&
            sl_now_ms() - txn->recover_since_ms > txn->recovery_timeout_ms) {
                sl_log(LOG_CRIT, "TXN",
                       "recovery kept failing for more than "
                       "recovery_timeout (%" PRId64 " ms); exiting",
                       txn->recovery_timeout_ms);
                txn_set_state(txn, SL_TXN_DEAD);
                txn->hooks.exit(txn->hooks.opaque, SL_EXIT_FAIL);
                return;
        }
        txn->owner_checks = 0;
        txn->owner_foreign_id[0] = '\0';
        if (txn->recover_fenced && txn->instance_id && *txn->instance_id)
                txn->owner_checks = SL_TXN_OWNER_CHECKS;
        txn->recover_fenced = 0;
        /* Back off when recoveries follow each other. */
        delay = txn->recover_attempts
                    ? SL_MIN(30000, 500LL << SL_MIN(txn->recover_attempts, 6))
                    : 0;
        txn->recover_attempts++;
        if (txn->owner_checks)
                txn_owner_check(txn);
        else
                uv_timer_start(&txn->retry_timer, txn_on_retry_timer,
                               (uint64_t)delay, 0);
}

void sl_txn_fatal(sl_txn_t *txn, const char *who, const char *reason,
                  int fenced) {
        if (txn->state == SL_TXN_DEAD || txn->state == SL_TXN_RECOVERING ||
            txn->recover_pending) {
                txn->recover_fenced |= fenced;
                return;
        }
        sl_log(LOG_CRIT, "TXN",
               "%s: fatal error: %s; re-creating the Kafka clients and "
               "rebuilding every partition",
               who, reason);
        snprintf(txn->fatal_why, sizeof(txn->fatal_why), "%s: %s", who, reason);
        sl_counter_inc(txn->m_recoveries);
        txn->recover_fenced = fenced;
        txn->recover_pending = 1;
        /* Never inside whoever met the error: an event served while an
         * operator's produce drained the producer (a full queue, a suspect
         * sent alone), begin_transaction inside a produce, a seal.  Going
         * RECOVERING destroys every task and both clients, which that
         * caller still holds.  Until the loop acts, recover_pending makes
         * every produce a no-op (the work is redone after the rebuild) and
         * no commit starts.  With a call on the worker, txn_on_done()
         * enters RECOVERING once it ends (within its bound). */
        uv_timer_start(&txn->fatal_timer, txn_on_fatal, 0, 0);
}

/* The loop acts on a fatal error (sl_txn_fatal). */
static void txn_on_fatal(uv_timer_t *timer) {
        sl_txn_t *txn = timer->data;
        if (txn->recover_pending && !txn->job &&
            txn->state != SL_TXN_RECOVERING && txn->state != SL_TXN_DEAD)
                txn_enter_recovering(txn);
}

/* ------------------------------------------------------------------ */
/* Worker results.                                                      */

static void txn_done_create(sl_txn_t *txn, job_t *job) {
        char errstr[256];
        if (job->error) {
                snprintf(errstr, sizeof(errstr), "%s: %s", job->call,
                         rd_kafka_error_string(job->error));
                if (txn_error_refused(txn, job->error, errstr)) {
                        /* What was made goes with the txn. */
                        memcpy(txn->producers, job->producers,
                               sizeof(txn->producers));
                        memset(job->producers, 0, sizeof(job->producers));
                        txn->producer = txn->producers[0];
                        txn->consumer = job->consumer;
                        job->consumer = NULL;
                        return;
                }
                if (rd_kafka_error_code(job->error) ==
                    RD_KAFKA_RESP_ERR__INVALID_ARG) {
                        sl_log(LOG_CRIT, "TXN", "%s; exiting", errstr);
                        txn_set_state(txn, SL_TXN_DEAD);
                        txn->hooks.exit(txn->hooks.opaque, SL_EXIT_FAIL);
                        return;
                }
                /* Keep what was made: the next attempt destroys it. */
                memcpy(txn->producers, job->producers, sizeof(txn->producers));
                memset(job->producers, 0, sizeof(job->producers));
                txn->producer = txn->producers[0];
                txn->consumer = job->consumer;
                job->consumer = NULL;
                sl_log(LOG_ERR, "TXN", "creating the clients: %s", errstr);
                txn->recover_pending = 1;
                txn->recover_fenced |=
                    sl_txn_err_is_fencing(rd_kafka_error_code(job->error));
                return;
        }
        memcpy(txn->producers, job->producers, sizeof(txn->producers));
        memset(job->producers, 0, sizeof(job->producers));
        txn->turn = 0;
        txn->producer = txn->producers[0];
        txn->consumer = job->consumer;
        job->consumer = NULL;
        for (int i = 0; i < txn->producer_cnt; i++) {
                txn->pqs[i] = rd_kafka_queue_get_main(txn->producers[i]);
                txn->pws[i] =
                    sl_kwatch_new(txn->loop, txn->pqs[i], txn_serve_cb, txn,
                                  errstr, sizeof(errstr));
                sl_assert(txn->pws[i]);
        }
        if (txn->recover_since_ms)
                sl_log(LOG_NOTICE, "TXN",
                       "Kafka clients re-created after %.1f s",
                       (double)(sl_now_ms() - txn->recover_since_ms) / 1000.0);
        txn->recover_since_ms = 0;
        txn->records = 0;
        txn_set_state(txn, SL_TXN_READY);
        txn->hooks.clients_ready(txn->hooks.opaque, txn->producers,
                                 txn->producer_cnt, txn->consumer);
}

/* A committed job's phases, each from the end of the one before;
 * offsets only when they were sent. */
static void txn_observe_phases(sl_txn_t *txn, const job_t *job) {
        int64_t at[] = {txn->commit_start_us, job->taken_us, job->offsets_us,
                        job->delivered_us, job->committed_us};
        for (int i = 0; i < PHASE_CNT; i++)
                if (i != PHASE_OFFSETS || job->offsets_sent)
                        sl_histogram_observe(txn->m_phase[i],
                                             (double)(at[i + 1] - at[i]) / 1e6);
}

/* The next transaction is on producers[idx]. */
static void txn_take_turn(sl_txn_t *txn, int idx) {
        if (idx == txn->turn)
                return;
        txn->turn = idx;
        txn->producer = txn->producers[idx];
        if (txn->hooks.turn)
                txn->hooks.turn(txn->hooks.opaque, idx);
}

static void txn_done_commit(sl_txn_t *txn, job_t *job) {
        char why[512];
        if (!job->error) {
                /* Kafka decided this transaction: the next one is the other
                 * producer's (when it was begun, it is begun there). */
                txn_take_turn(txn, job->next_turn);
                sl_counter_inc(txn->m_commits);
                sl_histogram_observe(
                    txn->m_commit_seconds,
                    (double)(job->committed_us - txn->commit_start_us) / 1e6);
                txn_observe_phases(txn, job);
                if (job->next_open_us && job->next_rk == job->rk)
                        sl_histogram_observe(
                            txn->m_markers_seconds,
                            (double)(job->next_open_us - job->committed_us) /
                                1e6);
                txn->aborts_in_row = 0;
                txn->recover_attempts = 0;
                txn->records = 0;
                if (job->next_error) {
                        snprintf(why, sizeof(why), "%s: %s", job->next_call,
                                 rd_kafka_error_string(job->next_error));
                        if (txn_error_refused(txn, job->next_error, why))
                                return;
                        if (rd_kafka_error_is_fatal(job->next_error)) {
                                /* Every task is dropped: nothing of the
                                 * outbox may go anywhere. */
                                txn_set_state(txn, SL_TXN_READY);
                                sl_txn_fatal(
                                    txn, "producer", why,
                                    sl_txn_err_is_fencing(
                                        rd_kafka_error_code(job->next_error)));
                                return;
                        }
                        /* The deferred records are dropped with the open
                         * transaction and every task rebuilds. */
                        sl_txn_doom(txn, why);
                }
                txn_forget_open_offsets(txn);
                if (job->next_open_us && !job->next_error)
                        txn->open_offsets =
                            rd_kafka_topic_partition_list_copy(job->offsets);
                txn_set_state(txn,
                              job->next_begun ? SL_TXN_OPEN : SL_TXN_READY);
                txn->hooks.committed(txn->hooks.opaque, job->offsets);
                return;
        }
        snprintf(why, sizeof(why), "%s: %s", job->call,
                 rd_kafka_error_string(job->error));
        if (txn_error_refused(txn, job->error, why))
                return;
        if (rd_kafka_error_is_fatal(job->error)) {
                sl_txn_fatal(
                    txn, "producer", why,
                    sl_txn_err_is_fencing(rd_kafka_error_code(job->error)));
                return;
        }
        txn_start_abort(txn, why);
}

static void txn_done_abort(sl_txn_t *txn, job_t *job) {
        int64_t delay;
        if (job->error) {
                char why[512];
                snprintf(why, sizeof(why), "%s: %s", job->call,
                         rd_kafka_error_string(job->error));
                if (txn_error_refused(txn, job->error, why))
                        return;
                /* An abort that cannot be done leaves the producer unusable:
                 * a new one fences whatever is left. */
                sl_txn_fatal(
                    txn, "producer", why,
                    sl_txn_err_is_fencing(rd_kafka_error_code(job->error)));
                return;
        }
        sl_counter_inc(txn->m_aborts);
        txn->doomed = 0;
        txn->records = 0;
        txn->aborts_in_row++;
        txn_set_state(txn, SL_TXN_READY);
        delay = txn->aborts_in_row > 1
                    ? SL_MIN(30000, 250LL << SL_MIN(txn->aborts_in_row - 2, 7))
                    : 0;
        if (delay) {
                sl_log(LOG_WARNING, "TXN",
                       "%d aborts in a row: rebuilding in %.2f s",
                       txn->aborts_in_row, (double)delay / 1000.0);
                txn->backoff = 1;
                uv_timer_start(&txn->backoff_timer, txn_on_backoff,
                               (uint64_t)delay, 0);
                return;
        }
        txn->hooks.aborted(txn->hooks.opaque);
}

static void txn_on_done(uv_async_t *async) {
        sl_txn_t *txn = async->data;
        job_t *job;
        pthread_mutex_lock(&txn->lock);
        job = txn->job_done;
        txn->job_done = NULL;
        pthread_mutex_unlock(&txn->lock);
        if (!job)
                return;
        sl_assert(job == txn->job);
        txn->job = NULL;
        if (txn->state == SL_TXN_DEAD && job->kind != JOB_CREATE) {
                /* The end (txn.h): a refusal ended the process while the
                 * call was on the worker, and what it did changes nothing.
                 * (No create is in flight then: only a produce is refused
                 * in a state with a job.) */
                job_free(job);
                return;
        }
        switch (job->kind) {
        case JOB_CREATE:
                txn_done_create(txn, job);
                break;
        case JOB_DELIVER:
                if (!txn->recover_pending)
                        txn_flush_check(txn);
                break;
        case JOB_COMMIT:
                txn_done_commit(txn, job);
                break;
        case JOB_ABORT:
                txn_done_abort(txn, job);
                break;
        default:
                break;
        }
        job_free(job);
        if (!txn->job && txn->state != SL_TXN_DEAD)
                txn_settle(txn);
}

/* ------------------------------------------------------------------ */
/* Life.                                                                */

/* Phases are often below a millisecond. */
static const double phase_bounds[] = {0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01,
                                      0.02,   0.03,   0.05,  0.075, 0.1,   0.15,
                                      0.25,   0.5,    1,     2.5,   5,     10};
static const double commit_bounds[] = {0.002, 0.005, 0.01, 0.02, 0.03,
                                       0.05,  0.075, 0.1,  0.15, 0.25,
                                       0.5,   1,     2.5,  5,    10};

sl_txn_t *sl_txn_new(uv_loop_t *loop, const sl_txn_conf_t *conf,
                     const sl_txn_hooks_t *hooks, sl_kquery_t *kq,
                     sl_metrics_t *metrics, char *errstr, size_t errstr_size) {
        sl_txn_t *txn = sl_calloc(1, sizeof(*txn));
        txn->loop = loop;
        txn->hooks = *hooks;
        txn->kq = kq;
        txn->group_id = sl_strdup(conf->group_id);
        txn->instance_id =
            sl_strdup(conf->instance_id ? conf->instance_id : "");
        txn->client_id = sl_strdup(conf->client_id);
        txn->txn_timeout_ms = conf->transaction_timeout_ms;
        txn->recovery_timeout_ms = conf->recovery_timeout_ms;
        txn->session_timeout_ms =
            conf->session_timeout_ms > 0 ? conf->session_timeout_ms : 45000;
        txn->producer_cnt =
            SL_MAX(1, SL_MIN(conf->producers, SL_TXN_PRODUCERS_MAX));
        txn->state = SL_TXN_CREATING;
        txn->state_since_ms = sl_now_ms();
        if (getenv("SLUICE_TEST_COMMIT_PAUSE_MS")) {
                txn->test_commit_pause_ms =
                    atoi(getenv("SLUICE_TEST_COMMIT_PAUSE_MS"));
                txn->test_commit_pause_ms =
                    SL_MAX(0, SL_MIN(txn->test_commit_pause_ms, 10000));
                sl_log(LOG_WARNING, "TXN",
                       "SLUICE_TEST_COMMIT_PAUSE_MS: every commit waits %d ms "
                       "(for tests only)",
                       txn->test_commit_pause_ms);
        }
        pthread_mutex_init(&txn->lock, NULL);
        pthread_cond_init(&txn->cond, NULL);
        uv_async_init(loop, &txn->done_async, txn_on_done);
        uv_timer_init(loop, &txn->retry_timer);
        uv_timer_init(loop, &txn->flush_timer);
        uv_timer_init(loop, &txn->backoff_timer);
        uv_timer_init(loop, &txn->deferring_timer);
        txn->deferring_timer.data = txn;
        uv_timer_init(loop, &txn->fatal_timer);
        txn->fatal_timer.data = txn;
        txn->done_async.data = txn->retry_timer.data = txn;
        txn->flush_timer.data = txn->backoff_timer.data = txn;
        txn->m_commits = sl_metrics_counter(
            metrics, "sluice_transactions_total",
            "Kafka transactions by outcome.", "result", "commit", NULL);
        txn->m_aborts = sl_metrics_counter(metrics, "sluice_transactions_total",
                                           "Kafka transactions by outcome.",
                                           "result", "abort", NULL);
        txn->m_recoveries = sl_metrics_counter(
            metrics, "sluice_client_recoveries_total",
            "Fatal Kafka client errors recovered from by re-creating the "
            "clients.",
            NULL);
        txn->m_commit_seconds = sl_metrics_histogram(
            metrics, "sluice_txn_commit_seconds",
            "Time from asking for a commit to its end: waiting for the "
            "last deliveries, checkpoints, send_offsets_to_transaction and "
            "commit_transaction (the loop keeps working meanwhile).",
            commit_bounds, sizeof(commit_bounds) / sizeof(commit_bounds[0]),
            NULL);
        txn->m_markers_seconds = sl_metrics_histogram(
            metrics, "sluice_txn_markers_seconds",
            "With transaction_producers = 1 only (with two, the next "
            "transaction does not wait for them): time from "
            "commit_transaction's return until Kafka's transaction "
            "coordinator had finished that commit (written its "
            "markers) and took the next transaction, measured when records "
            "were waiting for it: read_committed readers see a "
            "transaction's records only once its markers are written.",
            commit_bounds, sizeof(commit_bounds) / sizeof(commit_bounds[0]),
            NULL);
        {
                static const char help[] =
                    "Where a commit's time goes (sluice_txn_commit_seconds "
                    "is their sum): flush, from asking for the commit until "
                    "the worker takes it (waiting for deliveries before "
                    "checkpoints, where an operator writes them); offsets, "
                    "send_offsets_to_transaction (when the transaction does "
                    "not hold them yet); deliver, until Kafka acknowledged "
                    "the transaction's last records; end, "
                    "commit_transaction's EndTxn.";
                for (int i = 0; i < PHASE_CNT; i++)
                        txn->m_phase[i] = sl_metrics_histogram(
                            metrics, "sluice_txn_commit_phase_seconds", help,
                            phase_bounds,
                            sizeof(phase_bounds) / sizeof(phase_bounds[0]),
                            "phase", phase_names[i], NULL);
        }
        txn->m_state = sl_metrics_gauge(
            metrics, "sluice_transaction_state",
            "State of the transaction state machine (0 creating, 1 ready, "
            "2 open, 3 flushing, 4 committing, 5 aborting, 6 recovering, "
            "7 dead).",
            NULL);
        if (pthread_create(&txn->thread, NULL, worker_main, txn) != 0) {
                snprintf(errstr, errstr_size, "cannot start the txn worker");
                txn->thread = 0;
                sl_txn_destroy(txn);
                return NULL;
        }
        return txn;
}

void sl_txn_start(sl_txn_t *txn) {
        txn_post_create(txn);
}

void sl_txn_stopping(sl_txn_t *txn) {
        txn->stopping = 1;
        atomic_store(&txn->open_next, 0);
}

void sl_txn_deferred(sl_txn_t *txn) {
        atomic_store(&txn->open_next, 1);
}

void sl_txn_rebalanced(sl_txn_t *txn) {
        if (txn)
                txn_forget_open_offsets(txn);
}

static void txn_on_close(uv_handle_t *h) {
        (void)h;
}

void sl_txn_destroy(sl_txn_t *txn) {
        if (!txn)
                return;
        txn->cancel = 1;
        if (txn->thread) {
                pthread_mutex_lock(&txn->lock);
                txn->quit = 1;
                pthread_cond_signal(&txn->cond);
                pthread_mutex_unlock(&txn->lock);
                pthread_join(txn->thread, NULL);
        }
        if (txn->job_in)
                job_free(txn->job_in);
        if (txn->job_done)
                job_free(txn->job_done);
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                sl_kwatch_close(txn->pws[i]);
        uv_close((uv_handle_t *)&txn->done_async, txn_on_close);
        uv_close((uv_handle_t *)&txn->retry_timer, txn_on_close);
        uv_close((uv_handle_t *)&txn->flush_timer, txn_on_close);
        uv_close((uv_handle_t *)&txn->backoff_timer, txn_on_close);
        uv_close((uv_handle_t *)&txn->deferring_timer, txn_on_close);
        uv_close((uv_handle_t *)&txn->fatal_timer, txn_on_close);
        uv_run(txn->loop, UV_RUN_NOWAIT);
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                if (txn->pqs[i])
                        rd_kafka_queue_destroy(txn->pqs[i]);
        if (txn->consumer)
                rd_kafka_destroy_flags(txn->consumer,
                                       RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++) {
                if (!txn->producers[i])
                        continue;
                rd_kafka_purge(txn->producers[i],
                               RD_KAFKA_PURGE_F_QUEUE |
                                   RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_destroy(txn->producers[i]);
        }
        txn_forget_open_offsets(txn);
        pthread_mutex_destroy(&txn->lock);
        pthread_cond_destroy(&txn->cond);
        free(txn->group_id);
        free(txn->instance_id);
        free(txn->client_id);
        free(txn);
}

const char *sl_txn_trouble(const sl_txn_t *txn, char *buf, size_t size) {
        int64_t age = sl_now_ms() - txn->state_since_ms;
        char retry[200];
        pthread_mutex_lock((pthread_mutex_t *)&txn->lock);
        snprintf(retry, sizeof(retry), "%s", txn->last_retry);
        pthread_mutex_unlock((pthread_mutex_t *)&txn->lock);
        switch (txn->state) {
        case SL_TXN_CREATING:
                snprintf(buf, size, "connecting to Kafka%s%s",
                         *retry ? ": " : "", retry);
                return buf;
        case SL_TXN_RECOVERING:
                snprintf(buf, size, "recovering the Kafka clients after %s",
                         txn->fatal_why);
                return buf;
        case SL_TXN_DEAD:
                snprintf(buf, size, "exiting");
                return buf;
        case SL_TXN_COMMITTING:
        case SL_TXN_ABORTING:
        case SL_TXN_FLUSHING:
                if (age < SL_TXN_SLOW_MS)
                        return NULL;
                snprintf(buf, size, "transaction %s for %.0f s%s%s",
                         sl_txn_state_name(txn->state), (double)age / 1000.0,
                         *retry ? ": " : "", retry);
                return buf;
        default:
                if (txn->backoff) {
                        snprintf(buf, size,
                                 "backing off after %d aborts in a row",
                                 txn->aborts_in_row);
                        return buf;
                }
                return NULL;
        }
}
