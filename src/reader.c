/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reader.c — the reader's records (see reader.h).
 *
 * The records come in batches of SL_READER_BATCH per librdkafka call: one
 * timeout set-up and one poll-interval stamp (each a clock read) per batch
 * instead of per record.  In perf profiles of bench delay_rebuild, the
 * loop thread's share in clock reads, queue locks and the pop fell from
 * 9.0 % of the process to 6.3 %.
 */
#include "reader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "kafka.h"
#include "log.h"
#include "task.h"
#include "util.h"

#define SL_READER_BATCH 64
/* How long the lookup of a table partition's end may take. */
#define SL_READER_LOOKUP_TMO_MS 5000

/* A table partition whose end is looked up (pl->table_asks). */
typedef struct table_part_s {
        sl_pipeline_t *pl;
        int32_t partition;
} table_part_t;

/* A table partition was read up to the end captured at start: once all
 * are, the pipeline's tasks may run. */
static void table_check(sl_pipeline_t *pl, int p) {
        if (pl->table_end[p] < 0 || pl->table_end[p] == INT64_MAX ||
            pl->table_pos[p] < pl->table_end[p])
                return;
        pl->table_end[p] = -1;
        for (int i = 0; i < pl->table_parts; i++)
                if (pl->table_end[i] >= 0)
                        return;
        if (!pl->table_ready)
                sl_log(LOG_INFO, "TABLE", "%s: %s read to its end",
                       pl->conf->name, pl->op->table_topic(pl));
        pl->table_ready = 1;
}

/* A record of a pipeline's global table (e.g. throttle rates). */
static void table_record(sl_pipeline_t *pl, const rd_kafka_message_t *m) {
        if (m->partition < 0 || m->partition >= pl->table_parts)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                pl->table_pos[m->partition] = m->offset;
        } else if (m->err) {
                sl_kafka_log_error("reader", m->err,
                                   rd_kafka_message_errstr(m));
                return;
        } else {
                pl->op->table(pl, m);
                pl->table_pos[m->partition] = m->offset + 1;
        }
        table_check(pl, m->partition);
}

/* One record of the reader, served in a batch (sl_reader_serve()). */
static void reader_record(sl_runtime_t *rt, const rd_kafka_message_t *m) {
        const char *topic;
        int served = 0;
        if (m->err &&
            sl_authz_fetch_refused(rt, 1, m->err,
                                   m->rkt ? rd_kafka_topic_name(m->rkt) : NULL,
                                   rd_kafka_message_errstr(m)))
                return;
        if (!m->rkt) {
                if (m->err)
                        sl_kafka_log_error("reader", m->err,
                                           rd_kafka_message_errstr(m));
                return;
        }
        topic = rd_kafka_topic_name(m->rkt);
        for (int i = 0; i < rt->pipeline_cnt && !served; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                sl_task_t *t;
                if (pl->table_parts &&
                    !strcmp(pl->op->table_topic(pl), topic)) {
                        table_record(pl, m);
                        served = 1;
                } else if (m->partition >= 0 &&
                           m->partition < pl->partition_cnt &&
                           (t = pl->tasks[m->partition]) && t->reader_topic &&
                           !strcmp(t->reader_topic, topic)) {
                        /* The task's reader moved (assign, seek, unassign)
                         * while an earlier record of this batch was served:
                         * this one was taken from the queue before, so it
                         * belongs to what the task read before.  One at a
                         * time, librdkafka's version check would have
                         * dropped it at the pop. */
                        if (t->reader_moved != rt->reader_batch)
                                sl_task_on_reader(t, m);
                        served = 1;
                }
        }
        if (!served && m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                sl_kafka_log_error("reader", m->err,
                                   rd_kafka_message_errstr(m));
}

int sl_reader_serve(void *opaque, int budget) {
        sl_runtime_t *rt = opaque;
        rd_kafka_message_t *ms[SL_READER_BATCH];
        int n = 0;
        while (n < budget) {
                size_t want = (size_t)SL_MIN(budget - n, SL_READER_BATCH);
                ssize_t got =
                    rd_kafka_consume_batch_queue(rt->reader_q, 0, ms, want);
                if (got <= 0)
                        break;
                /* Read after the batch was taken: later than any of its
                 * records was written (on this host's clock), the bound
                 * restores clamp their times to (sl_task_now_ms). */
                sl_runtime_now_fresh_ms(rt);
                rt->reader_batch++;
                for (ssize_t i = 0; i < got; i++) {
                        reader_record(rt, ms[i]);
                        rd_kafka_message_destroy(ms[i]);
                }
                n += (int)got;
                if ((size_t)got < want)
                        break;
        }
        return n;
}

/* ------------------------------------------------------------------ */
/* Global tables.                                                       */

static void table_on_end(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                         int64_t hi);

static void table_ask(table_part_t *tp) {
        if (sl_kquery_watermarks(
                tp->pl->rt->kq, tp->pl->op->table_topic(tp->pl), tp->partition,
                SL_READER_LOOKUP_TMO_MS, table_on_end, tp) == -1)
                sl_log(LOG_ERR, "TABLE", "cannot ask for the end of %s",
                       tp->pl->op->table_topic(tp->pl));
}

/* The end of one table partition, captured before it is read. */
static void table_on_end(void *opaque, rd_kafka_resp_err_t err, int64_t lo,
                         int64_t hi) {
        table_part_t *tp = opaque;
        sl_pipeline_t *pl = tp->pl;
        if (err) {
                sl_kafka_log_error("reader", err, "table end offset");
                table_ask(tp); /* bounded by its timeout */
                return;
        }
        pl->table_end[tp->partition] = hi;
        if (hi <= lo)
                pl->table_pos[tp->partition] = hi;
        table_check(pl, tp->partition);
}

int sl_reader_table_start(sl_runtime_t *rt, sl_pipeline_t *pl, int cnt,
                          char *errstr, size_t errstr_size) {
        const char *topic = pl->op->table_topic(pl);
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        table_part_t *parts;

        pl->table_parts = cnt;
        pl->table_end = sl_calloc((size_t)cnt, sizeof(*pl->table_end));
        pl->table_pos = sl_calloc((size_t)cnt, sizeof(*pl->table_pos));
        pl->table_ready = 0;
        parts = pl->table_asks = sl_calloc((size_t)cnt, sizeof(*parts));
        l = rd_kafka_topic_partition_list_new(cnt);
        for (int p = 0; p < cnt; p++) {
                pl->table_end[p] = INT64_MAX; /* until asked */
                parts[p].pl = pl;
                parts[p].partition = p;
                table_ask(&parts[p]);
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        }
        error = rd_kafka_incremental_assign(rt->reader, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (error) {
                snprintf(errstr, errstr_size, "%s: assign: %s", topic,
                         rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return -1;
        }
        return 0;
}

void sl_reader_table_free(sl_pipeline_t *pl) {
        free(pl->table_end);
        free(pl->table_pos);
        free(pl->table_asks);
        pl->table_end = pl->table_pos = NULL;
        pl->table_asks = NULL;
        pl->table_parts = 0;
}
