/* SPDX-License-Identifier: Apache-2.0 */
/*
 * input.c — the consumer's records (see input.h).
 */
#include "input.h"

#include <stdlib.h>

#include "authz.h"
#include "kafka.h"
#include "pipeline.h"
#include "task.h"
#include "util.h"

/* Records taken from a queue per librdkafka call.  One call serves a batch
 * under one pass of the queue's bookkeeping (timeout set-up, poll-interval
 * stamp) where rd_kafka_consumer_poll() pays it per record; rebalance and
 * error events met on the way are served inside the call exactly as
 * consumer_poll serves them (rd_kafka_poll_cb with RD_KAFKA_Q_CB_RETURN:
 * the rebalance callback runs, consumer errors come back as messages). */
#define SL_INPUT_BATCH 64

/* Commit early when a transaction grows past this many records, or when
 * this many input bytes were read since the last commit: what an operator
 * keeps for its transaction (debounce's journal of new items, a copy of
 * each) grows with the input read, and while catching up a transaction
 * may last backlog_commit_interval. */
#define SL_INPUT_TXN_MAX_RECORDS 50000
#define SL_INPUT_TXN_MAX_BYTES   (64 << 20)

struct sl_held_s {
        rd_kafka_message_t *m;
        uint32_t epoch; /* of its task when held; 0: no task */
        uint64_t batch; /* rt->input_batch it came in */
};

struct sl_input_s {
        sl_runtime_t *rt;
        /* Input held back while the transaction is busy (a ring). */
        struct sl_held_s *held;
        int held_head, held_cnt;
        int64_t held_bytes; /* their keys and values */
        /* Past fetch_full_at records queued, fetch_full says so, and the
         * drain that empties the queue wakes the fetcher
         * (input_wake_fetcher). */
        size_t fetch_full_at;
        int fetch_full;
        int64_t read_cnt;   /* input records handed to tasks */
        int64_t read_bytes; /* their keys and values since the last commit */
};

sl_input_t *sl_input_new(sl_runtime_t *rt) {
        sl_input_t *in = sl_calloc(1, sizeof(*in));
        in->rt = rt;
        return in;
}

void sl_input_destroy(sl_input_t *in) {
        if (!in)
                return;
        sl_input_clear(in->rt);
        free(in->held);
        free(in);
}

int64_t sl_input_read_cnt(const sl_runtime_t *rt) {
        return rt->input->read_cnt;
}

void sl_input_txn_ended(sl_runtime_t *rt) {
        rt->input->read_bytes = 0;
}

void sl_input_consumer_fatal(sl_runtime_t *rt) {
        char buf[256];
        rd_kafka_resp_err_t err;
        if (!rt->consumer)
                return;
        err = rd_kafka_fatal_error(rt->consumer, buf, sizeof(buf));
        sl_txn_fatal(rt->txn, "consumer", buf, sl_txn_err_is_fencing(err));
}

/* One input record: to its task, unless the task may not take it now. */
static void input_record(sl_runtime_t *rt, const rd_kafka_message_t *m) {
        sl_input_t *in = rt->input;
        sl_task_t *t =
            sl_pipeline_task(rt, rd_kafka_topic_name(m->rkt), m->partition);
        if (t && !t->revoking) {
                sl_task_on_input(t, m);
                in->read_cnt++;
                in->read_bytes += (int64_t)(m->len + m->key_len);
        }
        if (rt->txn && (sl_txn_records(rt->txn) >= SL_INPUT_TXN_MAX_RECORDS ||
                        in->read_bytes >= SL_INPUT_TXN_MAX_BYTES))
                rt->hooks->commit_soon(rt);
}

/* ------------------------------------------------------------------ */
/* The held ring.                                                       */

static void input_hold(sl_input_t *in, rd_kafka_message_t *m) {
        sl_task_t *t =
            sl_pipeline_task(in->rt, rd_kafka_topic_name(m->rkt), m->partition);
        struct sl_held_s *h;
        if (!in->held)
                in->held = sl_calloc(SL_INPUT_HELD_MAX, sizeof(*in->held));
        sl_assert(in->held_cnt < SL_INPUT_HELD_MAX);
        h = &in->held[(in->held_head + in->held_cnt) % SL_INPUT_HELD_MAX];
        h->m = m;
        h->epoch = t ? t->epoch : 0;
        h->batch = in->rt->input_batch;
        in->held_cnt++;
        in->held_bytes += (int64_t)(m->len + m->key_len);
}

static rd_kafka_message_t *input_unhold(sl_input_t *in, uint32_t *epochp,
                                        uint64_t *batchp) {
        struct sl_held_s *h;
        if (!in->held_cnt)
                return NULL;
        h = &in->held[in->held_head];
        in->held_head = (in->held_head + 1) % SL_INPUT_HELD_MAX;
        in->held_cnt--;
        in->held_bytes -= (int64_t)(h->m->len + h->m->key_len);
        if (epochp)
                *epochp = h->epoch;
        if (batchp)
                *batchp = h->batch;
        return h->m;
}

void sl_input_clear(sl_runtime_t *rt) {
        rd_kafka_message_t *m;
        while ((m = input_unhold(rt->input, NULL, NULL)))
                rd_kafka_message_destroy(m);
}

void sl_input_drain(sl_runtime_t *rt) {
        rd_kafka_message_t *m;
        uint32_t epoch;
        uint64_t batch;
        while (sl_runtime_may_produce(rt) &&
               (m = input_unhold(rt->input, &epoch, &batch))) {
                sl_task_t *t = sl_pipeline_task(rt, rd_kafka_topic_name(m->rkt),
                                                m->partition);
                rt->input_batch_cur = batch;
                if (t && t->epoch == epoch)
                        input_record(rt, m);
                rd_kafka_message_destroy(m);
        }
}

/* ------------------------------------------------------------------ */
/* The consumer's queue.                                                */

/* One message of the consumer queue: the per-record part of
 * input_serve(). */
static void input_consumed(sl_runtime_t *rt, rd_kafka_message_t *m) {
        int take = sl_runtime_may_produce(rt) && !rt->input->held_cnt;
        if (!rt->consumer) {
                /* A fatal error served earlier in the batch dropped the
                 * clients: what was fetched with them goes too. */
                rd_kafka_message_destroy(m);
                return;
        }
        if (m->err) {
                rd_kafka_resp_err_t err = m->err;
                if (sl_authz_fetch_refused(
                        rt, 0, err, m->rkt ? rd_kafka_topic_name(m->rkt) : NULL,
                        rd_kafka_message_errstr(m))) {
                        rd_kafka_message_destroy(m);
                        return;
                }
                if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
                    err != RD_KAFKA_RESP_ERR__FATAL)
                        sl_kafka_log_error("consumer", err,
                                           rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
                if (err == RD_KAFKA_RESP_ERR__FATAL)
                        sl_input_consumer_fatal(rt);
                return;
        }
        if (rt->phase != SL_RUN_RUNNING) {
                rd_kafka_message_destroy(m); /* leaving */
        } else if (take) {
                rt->input_batch_cur = rt->input_batch;
                input_record(rt, m);
                rd_kafka_message_destroy(m);
        } else {
                input_hold(rt->input, m);
        }
}

/* Where t's input is read next, in l: its next offset when it runs and
 * may take input, past what l holds for it from the held ring; else
 * nowhere (INVALID). */
static void task_fetch_position(sl_task_t *t, void *opaque) {
        rd_kafka_topic_partition_list_t *l = opaque;
        const char *topic = t->pl->conf->input;
        rd_kafka_topic_partition_t *tp =
            rd_kafka_topic_partition_list_find(l, topic, t->partition);
        if (t->state != SL_TASK_RUNNING || t->revoking || t->lookup_wait ||
            t->cap_wait || t->retry_offset >= 0 || t->next_offset < 0) {
                if (tp)
                        tp->offset = RD_KAFKA_OFFSET_INVALID;
                return;
        }
        if (!tp)
                tp = rd_kafka_topic_partition_list_add(l, topic, t->partition);
        tp->offset = SL_MAX(tp->offset, t->next_offset);
}

/* The consumer queue was full enough to stop librdkafka's fetcher and has
 * just been emptied: seek every running input partition to the record it
 * reads next, past what waits in the held ring.  Nothing is waiting in the
 * queue, so nothing is dropped or read twice; the seek is what wakes the
 * broker threads ("seek done"), where the queue draining does not. */
static void input_wake_fetcher(sl_runtime_t *rt) {
        sl_input_t *in = rt->input;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(16);
        rd_kafka_error_t *error;
        for (int i = 0; i < in->held_cnt; i++) {
                const struct sl_held_s *h =
                    &in->held[(in->held_head + i) % SL_INPUT_HELD_MAX];
                const rd_kafka_message_t *m = h->m;
                const char *topic = rd_kafka_topic_name(m->rkt);
                sl_task_t *t = sl_pipeline_task(rt, topic, m->partition);
                rd_kafka_topic_partition_t *tp;
                /* A record held for an earlier epoch of its task is
                 * dropped, not read: it must not move the seek. */
                if (!t || t->epoch != h->epoch)
                        continue;
                tp = rd_kafka_topic_partition_list_find(l, topic, m->partition);
                if (!tp)
                        tp = rd_kafka_topic_partition_list_add(l, topic,
                                                               m->partition);
                tp->offset = SL_MAX(tp->offset, m->offset + 1);
        }
        sl_pipeline_foreach_task(rt, task_fetch_position, l);
        /* Only running partitions at a known offset: drop the rest. */
        for (int i = l->cnt - 1; i >= 0; i--)
                if (l->elems[i].offset < 0)
                        rd_kafka_topic_partition_list_del_by_idx(l, i);
        if (l->cnt && (error = rd_kafka_seek_partitions(rt->consumer, l, 0)))
                rd_kafka_error_destroy(error);
        rd_kafka_topic_partition_list_destroy(l);
}

static int input_serve(void *opaque, int budget) {
        sl_runtime_t *rt = opaque;
        sl_input_t *in = rt->input;
        rd_kafka_message_t *ms[SL_INPUT_BATCH];
        int n = 0, empty = 0;
        while (n < budget && rt->consumer) {
                int take = sl_runtime_may_produce(rt) && !in->held_cnt;
                ssize_t got;
                /* Never more than the held ring can still take: a batch
                 * may have to be held from any of its records on.  (When
                 * leaving, records are dropped, never held, and the queue
                 * must still be served for the close.) */
                size_t want = (size_t)SL_MIN(budget - n, SL_INPUT_BATCH);
                if (rt->phase == SL_RUN_RUNNING)
                        want = SL_MIN(
                            want, (size_t)(SL_INPUT_HELD_MAX - in->held_cnt));
                if (!take && rt->phase == SL_RUN_RUNNING &&
                    (in->held_cnt >= SL_INPUT_HELD_MAX ||
                     in->held_bytes >= SL_INPUT_HELD_MAX_BYTES))
                        break; /* the transaction's resumption kicks us */
                if (!want)
                        break;
                got = rd_kafka_consume_batch_queue(rt->consumer_q, 0, ms, want);
                if (got <= 0) {
                        empty = 1;
                        break;
                }
                sl_runtime_now_fresh_ms(rt);
                rt->input_batch++;
                /* What the queue held before this batch. */
                if (in->fetch_full_at && !in->fetch_full &&
                    rd_kafka_queue_length(rt->consumer_q) + (size_t)got >=
                        in->fetch_full_at)
                        in->fetch_full = 1;
                for (ssize_t i = 0; i < got; i++)
                        input_consumed(rt, ms[i]);
                n += (int)got;
                if ((size_t)got < want) {
                        empty = 1;
                        break;
                }
        }
        if (empty && in->fetch_full && rt->consumer &&
            rt->phase == SL_RUN_RUNNING) {
                in->fetch_full = 0;
                input_wake_fetcher(rt);
        }
        if (rt->phase == SL_RUN_STOP_CLOSE)
                rt->hooks->stop_step(rt);
        return n;
}

/* When librdkafka's fetcher may have stopped: a tenth below the consumer's
 * queued.min.messages (the queue is sampled at each batch taken off it;
 * its broker thread decides at other moments). */
static void input_fetch_full_at(sl_runtime_t *rt) {
        sl_input_t *in = rt->input;
        char buf[32];
        size_t sz = sizeof(buf);
        long v = 0;
        in->fetch_full = 0;
        in->fetch_full_at = 0;
        if (rd_kafka_conf_get(rd_kafka_conf(rt->consumer),
                              "queued.min.messages", buf,
                              &sz) == RD_KAFKA_CONF_OK &&
            (v = strtol(buf, NULL, 10)) > 0)
                in->fetch_full_at = (size_t)v - (size_t)v / 10;
}

int sl_input_attach(sl_runtime_t *rt, char *errstr, size_t errstr_size) {
        rd_kafka_poll_set_consumer(rt->consumer);
        rt->consumer_q = rd_kafka_queue_get_consumer(rt->consumer);
        input_fetch_full_at(rt);
        rt->consumer_w = sl_kwatch_new(rt->loop, rt->consumer_q, input_serve,
                                       rt, errstr, errstr_size);
        return rt->consumer_w ? 0 : -1;
}

void sl_input_detach(sl_runtime_t *rt) {
        sl_input_clear(rt);
        sl_kwatch_close(rt->consumer_w);
        rt->consumer_w = NULL;
        if (rt->consumer_q)
                rd_kafka_queue_destroy(rt->consumer_q);
        rt->consumer_q = NULL;
}
