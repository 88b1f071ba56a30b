/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.h — the Kafka clients of `sluice run` (the transactional producer and
 * the consumer-group member) and the state machine that keeps exactly-once
 * through Kafka's faults.  Every state and transition lives in txn.c.
 *
 *   start ──► CREATING ──► READY ──► OPEN ──► FLUSHING ──► COMMITTING
 *                ▲          ▲ ▲       ▲  │                   │ │ │
 *                │          │ │       │  └───── no hooks ───►┘ │ │
 *                │          │ │       └──── next one opened ───┘ │
 *                │          │ └─────────── committed ────────────┤
 *                │          └── aborted ── ABORTING ◄─ abortable ┘
 *                │ clients made anew         ▲
 *                │                           └─ doomed, in OPEN or FLUSHING
 *           RECOVERING ◄── fatal error of either client, in any state
 *                │         but DEAD
 *                └──► DEAD ◄── in any state (see the table)
 *
 * These are all the transitions there are (txn.c's table; any other is a
 * bug, and txn_set_state() asserts "BUG: invalid transaction state
 * transition" with both states' names):
 *
 *   from         to           when
 *   CREATING     READY        clients made, init_transactions ok
 *                RECOVERING   making them failed (retried from RECOVERING)
 *   READY        OPEN         the first record, or offsets alone to commit
 *   OPEN         FLUSHING     commit, with precommit hooks (checkpoints)
 *                COMMITTING   commit, without (or offsets alone)
 *                ABORTING     commit of a doomed transaction
 *   FLUSHING     COMMITTING   the reports precommit needs came
 *                ABORTING     doomed meanwhile
 *   COMMITTING   READY        committed
 *                OPEN         committed, the next one opened for records
 *                             deferred meanwhile
 *                ABORTING     the commit failed, abortable
 *   ABORTING     READY        aborted: every task rebuilds
 *   RECOVERING   CREATING     the clients are made anew
 *   any but      RECOVERING   a fatal error of either client
 *   DEAD
 *   any          DEAD         Kafka's authorizer refused what the process
 *                             cannot do without (the not_authorized hook
 *                             ends it); the clients cannot be configured
 *                             or made (an invalid setting); from
 *                             RECOVERING also: another live instance owns
 *                             instance_id, or recovery failed for longer
 *                             than recovery_timeout
 *
 * DEAD is the end: the process is leaving, and a worker call that comes
 * back after it changes nothing.
 *
 * READY and OPEN are the only states in which records are produced.  While
 * a commit is on the worker (COMMITTING) the runtime goes on taking input
 * and firing due work, but what operators produce then waits in the
 * runtime's outbox and goes into the next transaction the moment the commit
 * returns (sl_txn_deferring(), commit.c) — the worker opens that transaction
 * itself, COMMITTING → OPEN, once Kafka's coordinator has finished the
 * previous one (sl_txn_deferred()); in every other state the runtime
 * holds input, wake-ups and fetches back.  So no record is ever produced
 * into a transaction that is not open.  A produce that cannot go into the open
 * transaction dooms it: it will be aborted and every task rebuilt, never
 * committed.
 *
 * Two producers take turns (sl_txn_conf_t producers, 2 by default): the
 * transaction after a commit is opened on the other one.  Kafka's
 * coordinator writes a commit's markers after commit_transaction returned
 * and until then refuses the same producer's next transaction; the other
 * producer's is taken at once.  Still only one transaction is open or
 * committing at any time, so everything above holds as with one: a
 * transaction is opened only once the one before it committed (Kafka
 * decided it: its markers follow whatever happens), its records follow the
 * committed ones in every partition, and read_committed readers see them
 * after those.  A fatal error of either producer recovers both.
 *
 * Blocking librdkafka calls (init_transactions, send_offsets_to_transaction,
 * commit_transaction, abort_transaction, creating and destroying clients)
 * run on a worker thread of this module, one at a time, each call bounded by
 * a few seconds; a retriable error retries the same call.  The loop thread
 * keeps turning meanwhile and serves the producer's delivery reports (the
 * producer uses the event API, so flushes inside commit_transaction only
 * wait for the loop to serve them).
 *
 * A fatal error (producer fenced, consumer fenced, any librdkafka fatal
 * error) drops every task and re-creates both clients in-process: the new
 * producer's init_transactions fences the old one and aborts what it left
 * open; the new consumer rejoins with the same group.instance.id and the
 * assigned partitions are rebuilt from their changelogs.  When the fault
 * was a fencing and instance_id is set, the group is described first: a
 * member that holds our instance_id under another member id for longer
 * than twice the session timeout (an orphan join of our own would have
 * expired by then, even one carried through a rebalance) is another live
 * process, and this one exits 1 saying so.
 *
 * THREADS: every function here is for the loop thread.
 */
#ifndef SL_TXN_H
#define SL_TXN_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "kquery.h"
#include "metrics.h"

/* At most this many transactional producers take turns (the
 * transaction_producers key allows 1..this). */
#define SL_TXN_PRODUCERS_MAX 2

typedef struct sl_txn_s sl_txn_t;

typedef enum {
        SL_TXN_CREATING,   /* clients being created, init_transactions */
        SL_TXN_READY,      /* no transaction open */
        SL_TXN_OPEN,       /* a transaction is open: produce */
        SL_TXN_FLUSHING,   /* waiting for delivery reports before precommit */
        SL_TXN_COMMITTING, /* send_offsets + commit on the worker */
        SL_TXN_ABORTING,   /* abort on the worker */
        SL_TXN_RECOVERING, /* fatal error: clients dropped, re-created next */
        SL_TXN_DEAD,       /* giving up: the process exits */
        SL_TXN_STATE_CNT
} sl_txn_state_t;

const char *sl_txn_state_name(sl_txn_state_t s);

/* 1 when the table above allows from -> to (a state to itself too: no
 * change), 0 when it is a bug. */
int sl_txn_transition_valid(sl_txn_state_t from, sl_txn_state_t to);

/* Asserts that from -> to is valid (sl_assert, naming both states). */
void sl_txn_transition_check(sl_txn_state_t from, sl_txn_state_t to);

/* What the runtime provides (clients.c, commit.c; app.c wires them).
 * Every hook runs on the loop thread. */
typedef struct sl_txn_hooks_s {
        void *opaque;
        /* New client configurations (the worker thread calls rd_kafka_new
         * with them).  NULL with errstr on failure.  idx: which of the
         * producers (0 or 1), each with a transactional.id of its own. */
        rd_kafka_conf_t *(*producer_conf)(void *opaque, int idx, char *errstr,
                                          size_t errstr_size);
        rd_kafka_conf_t *(*consumer_conf)(void *opaque, char *errstr,
                                          size_t errstr_size);
        /* New clients are ready (init_transactions done): watch the
         * consumer's queue and subscribe.  producers[0] is the one records
         * go to first. */
        void (*clients_ready)(void *opaque, rd_kafka_t *const *producers,
                              int producer_cnt, rd_kafka_t *consumer);
        /* The next transaction is on producers[idx] (of clients_ready):
         * records go there from now on.  May be NULL. */
        void (*turn)(void *opaque, int idx);
        /* The clients are about to be destroyed: drop every task and stop
         * watching the consumer.  Nothing may use either client after. */
        void (*clients_lost)(void *opaque);
        /* Offsets to commit with the transaction (NULL for none): every
         * running task's next offset when all, else those that moved.  The
         * list is owned by the txn from here on. */
        rd_kafka_topic_partition_list_t *(*offsets)(void *opaque, int all);
        /* Before a commit, once reports_pending says 0: produce
         * checkpoints (operator precommit hooks). */
        void (*precommit)(void *opaque);
        /* 1 while a record whose delivery report precommit needs is in
         * flight (FLUSHING waits for those alone; the rest of the
         * transaction's records are waited for by the commit itself, while
         * input goes on).  NULL: every record of the transaction. */
        int (*reports_pending)(void *opaque);
        /* Right before a commit takes the input offsets: operators write
         * what they gathered for the transaction (operator seal hooks).
         * May produce; a refusal dooms the transaction.  May be NULL. */
        void (*seal)(void *opaque);
        /* The transaction committed with these offsets (may be NULL). */
        void (*committed)(void *opaque,
                          const rd_kafka_topic_partition_list_t *offsets);
        /* The transaction was aborted (or could not be used): every task
         * must rebuild from its changelog. */
        void (*aborted)(void *opaque);
        /* Produce is possible again (READY or OPEN after another state):
         * resume input, wake-ups and fetches that were held back. */
        void (*resumed)(void *opaque);
        /* A delivery report (success only for tracked records, or any
         * failure). */
        void (*delivery)(void *opaque, const rd_kafka_message_t *m);
        /* The process must end with this exit code. */
        void (*exit)(void *opaque, int code);
        /* Kafka's authorizer refused a call of these clients: code is one
         * of the *_AUTHORIZATION_FAILED errors, topic the topic refused
         * when known (else NULL), why the call and its error.  Returns 1
         * when the process ends (retrying cannot help until an operator
         * grants the ACL: the hook has said what is missing and called
         * exit), 0 when the refusal is the work's (a delay target's): the
         * transaction is then aborted and the work redone. */
        int (*not_authorized)(void *opaque, rd_kafka_resp_err_t code,
                              const char *topic, const char *why);
} sl_txn_hooks_t;

typedef struct sl_txn_conf_s {
        const char *group_id;    /* the consumer group (app_id) */
        const char *instance_id; /* group.instance.id, or NULL/"" */
        const char *client_id;   /* this process's unique client.id */
        int64_t transaction_timeout_ms;
        int64_t recovery_timeout_ms; /* 0: never give up */
        int64_t session_timeout_ms;  /* the consumer's session.timeout.ms */
        int producers;               /* 1 or 2 (taking turns); 0: 1 */
} sl_txn_conf_t;

/* Creates the state machine (and its worker thread); clients are created
 * by sl_txn_start().  conf's strings are copied; hooks is copied.  kq is
 * borrowed (for the owner check) and must outlive txn. */
sl_txn_t *sl_txn_new(uv_loop_t *loop, const sl_txn_conf_t *conf,
                     const sl_txn_hooks_t *hooks, sl_kquery_t *kq,
                     sl_metrics_t *metrics, char *errstr, size_t errstr_size);

/* A produce of topic was refused by the authorizer (runtime.c): the
 * not_authorized hook decides; 0 when the process goes on (the
 * transaction is doomed), 1 when it ends. */
int sl_txn_refused(sl_txn_t *txn, rd_kafka_resp_err_t code, const char *topic,
                   const char *why);

/* Creates the clients (asynchronously: clients_ready() follows). */
void sl_txn_start(sl_txn_t *txn);

/* Stops the worker (waits for the call in flight, each bounded), destroys
 * the clients (consumer without a close: call sl_txn_close_consumer()
 * first for a clean leave) and frees txn.  NULL is a no-op. */
void sl_txn_destroy(sl_txn_t *txn);

sl_txn_state_t sl_txn_state(const sl_txn_t *txn);

/* 1 when operators may produce now (READY or OPEN, not doomed). */
int sl_txn_accepting(const sl_txn_t *txn);

/* 1 while a commit is on the worker (COMMITTING, not doomed): operators may
 * go on deciding work, but what they produce must wait for the next
 * transaction (the runtime's outbox).  The resumed() hook is called (from
 * the loop, soon) when a commit goes to the worker, so held work can go
 * on. */
int sl_txn_deferring(const sl_txn_t *txn);
/* A record was deferred (sl_txn_deferring()): the commit in flight opens
 * the next transaction as soon as it is done, so that the record can go in
 * at once (txn.c, worker_open_next). */
void sl_txn_deferred(sl_txn_t *txn);

/* The group rebalanced: offsets already sent into the open transaction
 * (by worker_open_next) are sent again at its commit, with the group
 * metadata of now. */
void sl_txn_rebalanced(sl_txn_t *txn);

/* The producer whose turn it is, or NULL while there is none (CREATING,
 * RECOVERING). */
rd_kafka_t *sl_txn_producer(const sl_txn_t *txn);

/* Opens a transaction if none is open.  Returns 0 when records may be
 * produced now; -1 when not (the transaction is doomed: every task will be
 * rebuilt, so the caller may drop what it wanted to produce). */
int sl_txn_produce_begin(sl_txn_t *txn);

/* A record was produced into the open transaction. */
void sl_txn_produced(sl_txn_t *txn);

/* Records produced in the open transaction. */
int64_t sl_txn_records(const sl_txn_t *txn);

/* The open transaction can no longer commit (a record was refused, a
 * partition lost, a produce failed): abort it at the next step and
 * rebuild every task.  Never synchronous. */
void sl_txn_doom(sl_txn_t *txn, const char *why);

/* Commits what is open (and the offsets that moved).  Returns 0 when a
 * commit (or abort) started: a settled callback (committed or aborted)
 * follows; 1 when there was nothing to do; -1 when busy (a call is in
 * flight, or the clients are being re-created): ask again later. */
int sl_txn_commit(sl_txn_t *txn);

/* A fatal error of a client (producer or consumer) seen by the runtime:
 * recover in-process.  fenced: the error says another client took our
 * identity (the owner check runs first). */
void sl_txn_fatal(sl_txn_t *txn, const char *who, const char *reason,
                  int fenced);

/* 1 when err says another client took our identity (producer fenced,
 * static member fenced). */
int sl_txn_err_is_fencing(rd_kafka_resp_err_t err);

/* Serves up to budget producer events (delivery reports, errors).
 * Returns how many were served. */
int sl_txn_serve(sl_txn_t *txn, int budget);

/* Serves delivery reports until nothing is in flight or timeout_ms passed
 * (a bounded wait on the loop thread, for sending a suspect record alone).
 * Returns 0 when nothing is in flight. */
int sl_txn_drain(sl_txn_t *txn, int timeout_ms);

/* A one-line account of what the clients are doing, for /readyz: NULL
 * when all is well. */
const char *sl_txn_trouble(const sl_txn_t *txn, char *buf, size_t size);

/* Starts the shutdown: no new transaction is begun after the one open is
 * committed. */
void sl_txn_stopping(sl_txn_t *txn);

#endif
