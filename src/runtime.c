/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runtime.c — the core of the handle every room of the process shares (see
 * runtime.h): its clock, whether work may produce now, the exit, and the
 * path by which every record a task decides enters the transaction.
 *
 * A record goes straight into the open transaction, or, while a commit is
 * in flight (txn.h: the commit runs off the loop), into the outbox, which
 * is sent in order into the next transaction as soon as the commit
 * returns.  A record Kafka refused once is remembered (refused.h): the
 * same record decided again after the abort and rebuild is refused up
 * front, and a suspect is sent alone to learn whether the failure was its
 * own.
 */
#include "runtime.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "recsize.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* Lifecycle.                                                          */

int sl_runtime_may_produce(const sl_runtime_t *rt) {
        if (rt->phase != SL_RUN_RUNNING || !rt->txn)
                return 0;
        if (sl_txn_accepting(rt->txn))
                return 1;
        /* A commit is on the worker: work goes on, and what it produces
         * waits in the outbox for the next transaction. */
        return sl_txn_deferring(rt->txn) && sl_outbox_room(rt->outbox);
}

void sl_runtime_exit(sl_runtime_t *rt, int code) {
        rt->exit_code = code;
        rt->phase = SL_RUN_STOPPED;
        uv_stop(rt->loop);
}

void sl_runtime_txn_id(const sl_runtime_t *rt, int idx, char *buf,
                       size_t size) {
        const char *suffix = idx ? SL_TXNID_SECOND_SUFFIX : "";
        if (rt->conf->instance_id && *rt->conf->instance_id)
                snprintf(buf, size, "%s-%s%s", rt->conf->app_id,
                         rt->conf->instance_id, suffix);
        else
                snprintf(buf, size, "%s-%s%s", rt->conf->app_id, rt->client_id,
                         suffix);
}

/* ------------------------------------------------------------------ */
/* Clock.                                                              */

/* The wall clock for the input path and for stamping what is produced (a
 * record's decided time, a topic lookup's age): read afresh on each turn of
 * the loop, for each batch taken from the consumer queue and every
 * SL_CLOCK_READS_MAX reads within one, so a batch of input or a burst of
 * fired timers costs a clock read per 64 records and is never stale by
 * more than those 64 (microseconds each; a produce that waits for room in
 * a full producer queue is the exception, bounded below).  The read
 * per batch keeps a record's time at or after the time it was produced:
 * the batch was fetched after that, while a time read earlier in the same
 * turn may be older than the record (0201 saw an item's first_seen 3 ms
 * before its producer's timestamp, with the loop thread preempted between
 * a read and the next batch). */
#define SL_CLOCK_READS_MAX 64

int64_t sl_runtime_now_fresh_ms(sl_runtime_t *rt) {
        rt->clock_turn = uv_now(rt->loop);
        rt->clock_reads = 0;
        rt->clock_ms = sl_now_ms();
        return rt->clock_ms;
}

int64_t sl_runtime_now_ms(sl_runtime_t *rt) {
        if (uv_now(rt->loop) != rt->clock_turn ||
            ++rt->clock_reads >= SL_CLOCK_READS_MAX || !rt->clock_ms)
                return sl_runtime_now_fresh_ms(rt);
        return rt->clock_ms;
}

/* ------------------------------------------------------------------ */
/* Writes.                                                             */

/* Waiting for the delivery of a suspect sent alone: bounded, and short
 * next to transaction_timeout (a suspect is rare: it follows a refusal). */
#define SL_RUNTIME_ISOLATE_MS 5000

/* Errors of rd_kafka_producev() that are the record's own, not the
 * producer's: the work is refused, never retried. */
static int produce_err_is_permanent(rd_kafka_resp_err_t err) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR__INVALID_ARG:
                return 1;
        default:
                return 0;
        }
}

static uint64_t rec_refused_id(const sl_outbox_rec_t *r) {
        return sl_refused_id(r->topic, r->key, r->keylen,
                             (r->flags & SL_MSG_TRACKED) ? 0 : r->flags >> 2,
                             r->value, r->valuelen);
}

/* The produce arguments of r: through the producer's kept handle of its
 * topic when it is a pipeline's own (the topic hook), else by name. */
#define SL_SEND_ARGS 8
static void send_args(sl_runtime_t *rt, const sl_outbox_rec_t *r, int replayed,
                      int isolated, rd_kafka_vu_t *vu) {
        rd_kafka_topic_t *rkt = rt->hooks->topic(rt, r->topic);
        if (rkt) {
                vu[0].vtype = RD_KAFKA_VTYPE_RKT;
                vu[0].u.rkt = rkt;
        } else {
                vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
                vu[0].u.cstr = r->topic;
        }
        vu[1].vtype = RD_KAFKA_VTYPE_PARTITION;
        vu[1].u.i32 = r->partition;
        vu[2].vtype = RD_KAFKA_VTYPE_KEY;
        vu[2].u.mem.ptr = (void *)r->key;
        vu[2].u.mem.size = r->keylen;
        vu[3].vtype = RD_KAFKA_VTYPE_VALUE;
        vu[3].u.mem.ptr = (void *)r->value;
        vu[3].u.mem.size = r->valuelen;
        vu[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
        vu[4].u.i = RD_KAFKA_MSG_F_COPY;
        vu[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
        vu[5].u.i64 = r->timestamp_ms ? r->timestamp_ms
                      : replayed      ? r->decided_ms
                                      : 0;
        vu[6].vtype = RD_KAFKA_VTYPE_HEADERS;
        vu[6].u.headers = r->hdrs;
        vu[7].vtype = RD_KAFKA_VTYPE_OPAQUE;
        vu[7].u.ptr = (void *)(r->flags | (isolated ? SL_MSG_ISOLATED : 0));
}

/*
 * Sends one record into the open transaction (opening it).  A suspect
 * (refused.h) goes alone: the records in flight are delivered first, then
 * it, then it is waited for — the one bounded wait on the loop thread.  A
 * record from the outbox (replayed) keeps the time it was decided as its
 * timestamp.  Returns 0 when sent or when the transaction is doomed (the
 * work is redone after the rebuild), or a negative permanent error of the
 * record itself; r->hdrs is consumed either way.
 */
static int runtime_send(sl_runtime_t *rt, const sl_outbox_rec_t *r,
                        int replayed) {
        rd_kafka_vu_t vu[SL_SEND_ARGS];
        rd_kafka_resp_err_t err;
        int64_t until = 0;
        uint64_t id = 0;
        int isolated = 0, e = 0;
        int isolate_ms = (int)SL_MIN(SL_RUNTIME_ISOLATE_MS,
                                     rt->conf->transaction_timeout_ms / 2);

        if (sl_txn_produce_begin(rt->txn) == -1) {
                /* The transaction is doomed: it aborts and every task is
                 * rebuilt, so this work is redone.  Nothing to do. */
                if (r->hdrs)
                        rd_kafka_headers_destroy(r->hdrs);
                return 0;
        }
        if (rt->refused.used)
                id = rec_refused_id(r);
        if (id && sl_refused_get(&rt->refused, id, sl_now_ms(), &e) ==
                      SL_REFUSED_SUSPECT) {
                /* Alone in its batch: a failure is its own. */
                isolated = 1;
                sl_txn_drain(rt->txn, isolate_ms);
        }
        for (;;) {
                rd_kafka_error_t *error;
                /* Each try: draining below serves the producer's events. */
                send_args(rt, r, replayed, isolated, vu);
                error = rd_kafka_produceva(rt->producer, vu, SL_SEND_ARGS);
                err = error ? rd_kafka_error_code(error)
                            : RD_KAFKA_RESP_ERR_NO_ERROR;
                if (error)
                        rd_kafka_error_destroy(error);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        break;
                /* The producer's queue is full: serve its delivery reports
                 * for a bounded while. */
                if (!until)
                        until = sl_now_ms() + 1000;
                else if (sl_now_ms() > until)
                        break;
                sl_txn_drain(rt->txn, 10);
                if (sl_txn_produce_begin(rt->txn) == -1) {
                        /* A report doomed the transaction, or a fatal
                         * error came (txn.h): the work is redone. */
                        if (r->hdrs)
                                rd_kafka_headers_destroy(r->hdrs);
                        return 0;
                }
        }
        if (!err) {
                sl_txn_produced(rt->txn);
                if (r->flags & SL_MSG_TRACKED)
                        rt->tracked_inflight++;
                if (isolated && sl_txn_drain(rt->txn, isolate_ms) == 0 &&
                    sl_refused_get(&rt->refused, id, sl_now_ms(), &e) ==
                        SL_REFUSED_SUSPECT)
                        sl_refused_clear(&rt->refused, id);
                return 0;
        }
        if (r->hdrs)
                rd_kafka_headers_destroy(r->hdrs);
        if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                /* librdkafka knows the topic may not be written: the
                 * process ends (one of the pipelines' own), or a target's
                 * timer goes to the DLQ once redone (txn.h). */
                char why[300];
                snprintf(why, sizeof(why),
                         "the producer refused a record "
                         "for %s: %s",
                         r->topic, rd_kafka_err2str(err));
                sl_txn_refused(rt->txn, err, r->topic, why);
                return 0;
        }
        if (!produce_err_is_permanent(err)) {
                /* E.g. still QUEUE_FULL: the work is redone after the
                 * abort and rebuild. */
                sl_txn_doom(rt->txn, rd_kafka_err2str(err));
                return 0;
        }
        if (!replayed) {
                snprintf(rt->refused_why, sizeof(rt->refused_why),
                         "the producer refused a record for %s: %s", r->topic,
                         rd_kafka_err2str(err));
                return -(int)err;
        }
        /* The operator that made it has moved on: remember the record as
         * refused, so that after the abort and rebuild the same work is
         * refused up front, and the operator sends it to the DLQ. */
        sl_refused_note(&rt->refused, rec_refused_id(r), (int)err, 1,
                        sl_now_ms());
        sl_txn_doom(rt->txn, "a record decided during a commit was refused");
        return 0;
}

int64_t sl_runtime_max_bytes(const sl_runtime_t *rt, const char *topic) {
        if (!rt->size_exact)
                return rt->producer_max_bytes;
        return SL_MIN(rt->hooks->max_bytes(rt, topic), rt->producer_max_bytes);
}

/* The size check of every record (recsize.h): 1 when r cannot be written
 * whole, with rt->refused_why saying why.  One pass over the headers; the
 * topic's limit is looked up only for a record larger than the smallest
 * limit known. */
static int runtime_too_large(sl_runtime_t *rt, const sl_outbox_rec_t *r) {
        size_t hcnt = 0, hbytes = 0, size;
        int64_t max;

        if (r->hdrs) {
                const char *name;
                const void *val;
                size_t vlen;
                while (!rd_kafka_header_get_all(r->hdrs, hcnt, &name, &val,
                                                &vlen)) {
                        hbytes += sl_recsize_header(strlen(name),
                                                    val ? (int64_t)vlen : -1);
                        hcnt++;
                }
        }
        size = sl_recsize_batch(r->key ? (int64_t)r->keylen : -1,
                                r->value ? (int64_t)r->valuelen : -1, hcnt,
                                hbytes);
        if ((int64_t)size <= rt->max_bytes_floor)
                return 0;
        max = sl_runtime_max_bytes(rt, r->topic);
        if ((int64_t)size <= max)
                return 0;
        snprintf(rt->refused_why, sizeof(rt->refused_why),
                 "a record of %zu bytes (key %zu, value %zu, %zu headers of "
                 "%zu bytes); %s takes %" PRId64 "%s",
                 size, r->key ? r->keylen : 0, r->value ? r->valuelen : 0, hcnt,
                 hbytes, r->topic, max,
                 max == rt->producer_max_bytes &&
                         (!rt->size_exact ||
                          rt->hooks->max_bytes(rt, r->topic) > max)
                     ? " (the producers' message.max.bytes)"
                     : "");
        return 1;
}

/* While a commit is in flight, or the outbox is being sent, records wait in
 * the outbox so that they keep their order. */
static int runtime_deferring(const sl_runtime_t *rt) {
        return rt->replaying || sl_outbox_count(rt->outbox) > 0 ||
               sl_txn_deferring(rt->txn);
}

int sl_runtime_produce(sl_runtime_t *rt, sl_outbox_rec_t *r) {
        uint64_t id;
        int e = 0;

        if (runtime_too_large(rt, r)) {
                if (r->hdrs)
                        rd_kafka_headers_destroy(r->hdrs);
                return -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
        }
        if (rt->refused.used && (id = rec_refused_id(r)) &&
            sl_refused_get(&rt->refused, id, sl_now_ms(), &e) ==
                SL_REFUSED_GUILTY) {
                if (r->hdrs)
                        rd_kafka_headers_destroy(r->hdrs);
                snprintf(rt->refused_why, sizeof(rt->refused_why),
                         "%s refused the record when it was sent alone: %s",
                         r->topic, rd_kafka_err2str((rd_kafka_resp_err_t)e));
                return -e;
        }
        if (runtime_deferring(rt)) {
                r->decided_ms = sl_runtime_now_ms(rt);
                sl_outbox_push(rt->outbox, r);
                /* Not when the commit in flight is the one partitions wait
                 * for to leave: the next transaction would re-send their
                 * offsets after they are someone else's. */
                if (sl_txn_deferring(rt->txn) &&
                    !(rt->revoking && rt->revoke_commit_started))
                        sl_txn_deferred(rt->txn);
                return 0;
        }
        return runtime_send(rt, r, 0);
}

void sl_runtime_replay(sl_runtime_t *rt, sl_outbox_rec_t *r) {
        runtime_send(rt, r, 1);
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

/* Delivery reports: failures always; successes matter only for tracked
 * records (delivery.report.only.error is off only when an operator tracks
 * deliveries).  Any failure dooms the transaction (librdkafka would fail
 * its commit anyway); a permanent one is remembered so the record is sent
 * alone, then refused up front (refused.h). */
int sl_runtime_delivered(sl_runtime_t *rt, const rd_kafka_message_t *m) {
        uintptr_t flags = (uintptr_t)m->_private;
        int alone = (flags & SL_MSG_ISOLATED) != 0;
        const char *topic = rd_kafka_topic_name(m->rkt);
        uint64_t id;
        char why[256];

        if ((flags & SL_MSG_TRACKED) && rt->tracked_inflight > 0)
                rt->tracked_inflight--;
        if (!m->err)
                return (flags & SL_MSG_TRACKED) != 0;
        if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE ||
            m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
                return 0; /* purged by an abort: its consequence, not a cause */
        snprintf(why, sizeof(why), "delivery to %s [%d] failed: %s", topic,
                 (int)m->partition, rd_kafka_err2str(m->err));
        if (m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                /* The topic's, not the record's (txn.h, not_authorized). */
                sl_txn_refused(rt->txn, m->err, topic, why);
                return 0;
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
                sl_refused_note(&rt->refused, id, (int)m->err, alone,
                                sl_now_ms());
        }
        sl_txn_doom(rt->txn, why);
        return 0;
}
