/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlqreplay.c — a DLQ replay (see dlqreplay.h for what it does and why it
 * is exactly once).
 *
 * One run: the producer (none in a dry run) inits its transactions, the
 * consumer reads each DLQ partition's committed offset and high watermark,
 * assigns the partitions from there and reads to those ends.  Every
 * DLQ_TXN_RECORDS records, and at the end, the open transaction commits the
 * records re-produced and the offsets past what was read, skipped records
 * included.  A failure aborts the open transaction: its records are read
 * again by the next run.
 */
#include "dlqreplay.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acls.h"
#include "dlqrec.h"
#include "kafka.h"
#include "log.h"
#include "util.h"

#define DLQ_TIMEOUT_MS  60000
#define DLQ_DEADLINE_MS (120 * 1000) /* no record for this long: fail */
#define DLQ_TXN_RECORDS 500          /* records read per transaction */

static const char *const skip_texts[SL_DLQREPLAY_SKIP__CNT] = {
    "other reason", "outside --since/--until", "cut copy (sluice-cut)",
    "no source record (fired timer or lost payload)",
    "not a DLQ record (no sluice-error)"};
static const char *const skip_names[SL_DLQREPLAY_SKIP__CNT] = {
    "reason", "time", "cut", "no-source", "not-dlq"};

const char *sl_dlqreplay_skip_text(sl_dlqreplay_skip_t s) {
        sl_assert(s >= 0 && s < SL_DLQREPLAY_SKIP__CNT);
        return skip_texts[s];
}

const char *sl_dlqreplay_skip_name(sl_dlqreplay_skip_t s) {
        sl_assert(s >= 0 && s < SL_DLQREPLAY_SKIP__CNT);
        return skip_names[s];
}

typedef struct run_s {
        const sl_conf_t *conf;
        const sl_pipeline_conf_t *pc;
        const sl_dlqreplay_opts_t *o;
        const sl_dlqreplay_cbs_t *cbs;
        const atomic_int *cancel;
        sl_dlqreplay_result_t *res;
        rd_kafka_t *consumer, *producer; /* producer NULL: dry run */
        int input_parts;
        int in_txn;
        char *errstr; /* the first failure's reason */
        size_t errstr_size;
        int failed;
} run_t;

static void fail(run_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(run_t *r, const char *fmt, ...) {
        va_list ap;

        if (r->failed++)
                return;
        va_start(ap, fmt);
        vsnprintf(r->errstr, r->errstr_size, fmt, ap);
        va_end(ap);
}

/* Says that Kafka's authorizer refused op on res:name, naming the binding
 * of `sluice acls` that grants it: "not authorized: READ on TOPIC o.dlq
 * (a DLQ replay; sluice acls lists TOPIC LITERAL o.dlq READ)".  name
 * NULL: the replay's group or transactional id. */
static void refused(run_t *r, sl_acl_resource_t res, const char *name,
                    sl_acl_op_t op) {
        sl_acls_t *acls = sl_acls_new(r->conf);
        char buf[400];

        fail(r, "not authorized: %s",
             sl_acls_refusal(acls, res, name ? name : r->res->id, op, buf,
                             sizeof(buf)));
        sl_acls_destroy(acls);
}

/* 1 (and the run's reason said) when err is a refusal by the authorizer:
 * of the group, of the transactional id, or of topic (the input when a
 * write, else the DLQ). */
static int refused_err(run_t *r, rd_kafka_resp_err_t err, int write) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
                refused(r, SL_ACL_GROUP, NULL, SL_ACL_READ);
                return 1;
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                refused(r, SL_ACL_TRANSACTIONAL_ID, NULL, SL_ACL_ANY);
                return 1;
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
                refused(r, SL_ACL_TOPIC, write ? r->pc->input : r->pc->dlq,
                        write ? SL_ACL_WRITE : SL_ACL_READ);
                return 1;
        default:
                return 0;
        }
}

/* After a failed request of the consumer: the refusal its queue may hold
 * (a group refused comes there, the request itself only times out); 1
 * when one was said. */
static int consumer_refused(run_t *r) {
        for (int i = 0; i < 16; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(r->consumer, 0);
                int said;
                if (!m)
                        return 0;
                said = m->err && refused_err(r, m->err, 0);
                rd_kafka_message_destroy(m);
                if (said)
                        return 1;
        }
        return 0;
}

/*
 * Sorts one DLQ record: returns -1 when it is replayed (*out: its original
 * headers, owned by the caller, NULL when it had none; *part: the input
 * partition it came from, or -1) or the sl_dlqreplay_skip_t that leaves
 * it out.
 */
static int classify(const run_t *r, const rd_kafka_message_t *m,
                    rd_kafka_headers_t **out, int32_t *part) {
        rd_kafka_headers_t *h = NULL;
        sl_dlqrec_t d;

        *out = NULL;
        *part = -1;
        if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
                h = NULL;
        if (sl_dlqrec_read(h, &d) == SL_DLQREC_NOT_DLQ)
                return SL_DLQREPLAY_SKIP_NOT_DLQ;
        if (r->o->reason_cnt) {
                int match = 0;
                for (int k = 0; k < r->o->reason_cnt; k++)
                        match |= sl_dlqrec_reason_is(&d, r->o->reasons[k]);
                if (!match)
                        return SL_DLQREPLAY_SKIP_REASON;
        }
        if (r->o->since >= 0 || r->o->until >= 0) {
                int64_t ts = rd_kafka_message_timestamp(m, NULL);
                if ((r->o->since >= 0 && ts < r->o->since) ||
                    (r->o->until >= 0 && ts >= r->o->until))
                        return SL_DLQREPLAY_SKIP_TIME;
        }
        if (d.kind == SL_DLQREC_CUT)
                return SL_DLQREPLAY_SKIP_CUT;
        if (d.kind == SL_DLQREC_NO_SOURCE)
                return SL_DLQREPLAY_SKIP_NO_SOURCE;
        if (d.source_topic && d.source_partition >= 0 &&
            d.source_partition < r->input_parts &&
            d.source_topic_len == strlen(r->pc->input) &&
            !memcmp(d.source_topic, r->pc->input, d.source_topic_len))
                *part = d.source_partition;
        *out = sl_dlqrec_original(h, &d);
        return -1;
}

/* A client of type with conf's [kafka] settings and these properties
 * (name, value, ..., NULL); NULL when it cannot be made (r->errstr). */
static rd_kafka_t *client_new(run_t *r, const sl_conf_t *conf,
                              rd_kafka_type_t type, const char *const *kv) {
        char errstr[512];
        rd_kafka_t *rk =
            sl_kafka_client_new(conf, type, kv, errstr, sizeof(errstr));

        if (!rk)
                fail(r, "%s", errstr);
        return rk;
}

/* Takes what a transactional call returned; -1 on an error (said in
 * r->errstr).  An abortable error aborts the open transaction (what it
 * held is read again by the next run). */
static int txn_check(run_t *r, rd_kafka_error_t *e, const char *what) {
        if (!e)
                return 0;
        /* A refusal is said first, as the binding it lacks. */
        refused_err(r, rd_kafka_error_code(e),
                    strcmp(what, "send_offsets_to_transaction") != 0);
        fail(r, "%s: %s%s", what, rd_kafka_error_string(e),
             rd_kafka_error_is_fatal(e) ? " (fatal: another replay of "
                                          "this pipeline fenced this one?)"
                                        : "");
        if (rd_kafka_error_txn_requires_abort(e) && r->in_txn) {
                rd_kafka_error_t *a =
                    rd_kafka_abort_transaction(r->producer, DLQ_TIMEOUT_MS);
                if (a)
                        rd_kafka_error_destroy(a);
                r->in_txn = 0;
        }
        rd_kafka_error_destroy(e);
        return -1;
}

static int txn_begin(run_t *r) {
        if (r->in_txn)
                return 0;
        if (txn_check(r, rd_kafka_begin_transaction(r->producer),
                      "begin_transaction"))
                return -1;
        r->in_txn = 1;
        return 0;
}

/* rd_kafka_init_transactions() up to DLQ_TIMEOUT_MS, in steps of a
 * second, so that a cancel (sluice stopping) is seen within one. */
static rd_kafka_error_t *init_transactions(run_t *r) {
        int64_t end = sl_now_ms() + DLQ_TIMEOUT_MS;

        for (;;) {
                rd_kafka_error_t *e =
                    rd_kafka_init_transactions(r->producer, 1000);
                if (!e ||
                    rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR__TIMED_OUT ||
                    sl_now_ms() >= end || (r->cancel && atomic_load(r->cancel)))
                        return e;
                rd_kafka_error_destroy(e);
        }
}

/* Commits the open transaction: the records produced and the offsets past
 * what was read.  A dry run only moves its own counters. */
static int commit(run_t *r) {
        sl_dlqreplay_result_t *res = r->res;
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_consumer_group_metadata_t *g;
        rd_kafka_error_t *e;
        const char *sleep_ms = getenv("SLUICE_TEST_REPLAY_SLEEP_MS");

        if (!r->in_txn)
                return 0;
        l = rd_kafka_topic_partition_list_new(res->part_cnt);
        for (int p = 0; p < res->part_cnt; p++)
                if (res->parts[p].next > res->parts[p].committed)
                        rd_kafka_topic_partition_list_add(l, r->pc->dlq, p)
                            ->offset = res->parts[p].next;
        if (sleep_ms && atoi(sleep_ms) > 0) {
                /* Tests: a window for a kill -9 in the middle of a run. */
                struct timespec ts = {atoi(sleep_ms) / 1000,
                                      (atoi(sleep_ms) % 1000) * 1000000L};
                nanosleep(&ts, NULL);
        }
        g = rd_kafka_consumer_group_metadata(r->consumer);
        e = l->cnt ? rd_kafka_send_offsets_to_transaction(r->producer, l, g,
                                                          DLQ_TIMEOUT_MS)
                   : NULL;
        rd_kafka_consumer_group_metadata_destroy(g);
        rd_kafka_topic_partition_list_destroy(l);
        if (txn_check(r, e, "send_offsets_to_transaction"))
                return -1;
        if (txn_check(r,
                      rd_kafka_commit_transaction(r->producer, DLQ_TIMEOUT_MS),
                      "commit_transaction"))
                return -1;
        r->in_txn = 0;
        for (int p = 0; p < res->part_cnt; p++)
                res->parts[p].committed = res->parts[p].next;
        return 0;
}

/* Re-produces one record to the input in the open transaction (hdrs: its
 * headers, owned by this call). */
static int produce(run_t *r, const rd_kafka_message_t *m,
                   rd_kafka_headers_t *hdrs, int32_t part) {
        rd_kafka_resp_err_t err;

        if (txn_begin(r)) {
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                return -1;
        }
        for (;;) {
                err = rd_kafka_producev(
                    r->producer, RD_KAFKA_V_TOPIC(r->pc->input),
                    RD_KAFKA_V_PARTITION(part >= 0 ? part
                                                   : RD_KAFKA_PARTITION_UA),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_KEY(m->key, m->key_len),
                    RD_KAFKA_V_VALUE(m->payload, m->len),
                    RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_END);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        break;
                rd_kafka_poll(r->producer, 100);
        }
        if (err) {
                fail(r, "produce to %s: %s", r->pc->input,
                     rd_kafka_err2str(err));
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                return -1;
        }
        rd_kafka_poll(r->producer, 0);
        return 0;
}

/* Handles one DLQ record; -1 on a failure that ends the run. */
static int record(run_t *r, const rd_kafka_message_t *m) {
        sl_dlqreplay_part_t *dp = &r->res->parts[m->partition];
        rd_kafka_headers_t *hdrs;
        int32_t part;
        int skip = classify(r, m, &hdrs, &part);
        sl_dlqreplay_rec_t rec = {
            m->partition, m->offset,  rd_kafka_message_timestamp(m, NULL),
            m->key,       m->key_len, m->len,
            hdrs,         skip};

        if (r->cbs && r->cbs->record)
                r->cbs->record(r->cbs->opaque, &rec);
        if (skip >= 0) {
                r->res->skips[skip]++;
                r->res->skipped++;
                dp->skipped++;
        } else {
                if (!r->producer) {
                        if (hdrs)
                                rd_kafka_headers_destroy(hdrs);
                } else if (produce(r, m, hdrs, part)) {
                        return -1;
                }
                r->res->replayed++;
                dp->replayed++;
        }
        /* Offsets alone (skipped records) go in a transaction too. */
        if (r->producer && dp->next < m->offset + 1 && txn_begin(r))
                return -1;
        dp->next = m->offset + 1;
        return 0;
}

/* Reads the DLQ from each partition's start to its end; commits every
 * DLQ_TXN_RECORDS records and at the end. */
static int read_all(run_t *r) {
        sl_dlqreplay_result_t *res = r->res;
        int done = 0, in_batch = 0;
        int64_t last = sl_now_ms();
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(res->part_cnt);

        for (int p = 0; p < res->part_cnt; p++) {
                if (res->parts[p].start >= res->parts[p].end) {
                        res->parts[p].done = 1;
                        done++;
                        continue;
                }
                rd_kafka_topic_partition_list_add(l, r->pc->dlq, p)->offset =
                    res->parts[p].start;
        }
        if (l->cnt)
                rd_kafka_assign(r->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
        while (done < res->part_cnt &&
               (r->o->limit < 0 || res->replayed < r->o->limit)) {
                rd_kafka_message_t *m;
                sl_dlqreplay_part_t *dp;

                if (r->cancel && atomic_load(r->cancel)) {
                        fail(r, "cancelled (sluice is stopping)");
                        return -1;
                }
                if (!(m = rd_kafka_consumer_poll(r->consumer, 500))) {
                        if (sl_now_ms() - last > DLQ_DEADLINE_MS) {
                                fail(r,
                                     "%s not read to its end within %d s (an "
                                     "open transaction?)",
                                     r->pc->dlq, DLQ_DEADLINE_MS / 1000);
                                return -1;
                        }
                        continue;
                }
                last = sl_now_ms();
                if (m->partition < 0 || m->partition >= res->part_cnt ||
                    res->parts[m->partition].done) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                dp = &res->parts[m->partition];
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        if (m->offset >= dp->end) {
                                dp->done = 1;
                                done++;
                        }
                } else if (m->err) {
                        if (refused_err(r, m->err, 0)) {
                                rd_kafka_message_destroy(m);
                                return -1;
                        }
                        sl_log(LOG_WARNING, "DLQ", "replay of %s: %s",
                               r->pc->dlq, rd_kafka_message_errstr(m));
                } else if (m->offset >= dp->end) {
                        dp->done = 1; /* came after the start: not ours */
                        done++;
                } else {
                        if (record(r, m)) {
                                rd_kafka_message_destroy(m);
                                return -1;
                        }
                        in_batch++;
                        if (m->offset + 1 >= dp->end) {
                                dp->done = 1;
                                done++;
                        }
                }
                rd_kafka_message_destroy(m);
                if (in_batch >= DLQ_TXN_RECORDS) {
                        if (commit(r))
                                return -1;
                        in_batch = 0;
                }
        }
        return commit(r);
}

/* rd_kafka_committed() up to DLQ_TIMEOUT_MS, in steps of two seconds:
 * a group the authorizer refuses only times the request out, and its
 * refusal waits in the consumer's queue (said, and _TIMED_OUT returned,
 * as soon as it is there); a cancel is seen within a step. */
static rd_kafka_resp_err_t committed(run_t *r,
                                     rd_kafka_topic_partition_list_t *l) {
        int64_t end = sl_now_ms() + DLQ_TIMEOUT_MS;

        for (;;) {
                rd_kafka_resp_err_t err =
                    rd_kafka_committed(r->consumer, l, 2000);
                if (err != RD_KAFKA_RESP_ERR__TIMED_OUT || sl_now_ms() >= end ||
                    consumer_refused(r) ||
                    (r->cancel && atomic_load(r->cancel)))
                        return err;
        }
}

/* Each partition's start (the group's committed offset, or the first
 * record kept) and end (the high watermark now). */
static int offsets(run_t *r) {
        sl_dlqreplay_result_t *res = r->res;
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(res->part_cnt);
        rd_kafka_resp_err_t err;

        for (int p = 0; p < res->part_cnt; p++)
                rd_kafka_topic_partition_list_add(l, r->pc->dlq, p);
        err =
            r->o->from_beginning ? RD_KAFKA_RESP_ERR_NO_ERROR : committed(r, l);
        if (err) {
                if (!r->failed && !refused_err(r, err, 0))
                        consumer_refused(r);
                fail(r, "committed offsets of %s: %s", r->pc->dlq,
                     rd_kafka_err2str(err));
                rd_kafka_topic_partition_list_destroy(l);
                return -1;
        }
        for (int p = 0; p < res->part_cnt; p++) {
                int64_t lo = 0, hi = 0, c = l->elems[p].offset;
                err = rd_kafka_query_watermark_offsets(
                    r->consumer, r->pc->dlq, p, &lo, &hi, DLQ_TIMEOUT_MS);
                if (!err && !r->o->from_beginning && l->elems[p].err)
                        err = l->elems[p].err;
                if (err) {
                        refused_err(r, err, 0);
                        fail(r, "%s [%d]: %s", r->pc->dlq, p,
                             rd_kafka_err2str(err));
                        rd_kafka_topic_partition_list_destroy(l);
                        return -1;
                }
                res->parts[p].start =
                    (r->o->from_beginning || c < 0) ? lo : SL_MAX(c, lo);
                res->parts[p].end = hi;
                res->parts[p].next = res->parts[p].committed =
                    res->parts[p].start;
        }
        rd_kafka_topic_partition_list_destroy(l);
        return 0;
}

int sl_dlqreplay_run(const sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                     const sl_dlqreplay_opts_t *o,
                     const sl_dlqreplay_cbs_t *cbs, const atomic_int *cancel,
                     sl_dlqreplay_result_t *res, char *errstr,
                     size_t errstr_size) {
        run_t r = {.conf = conf,
                   .pc = pc,
                   .o = o,
                   .cbs = cbs,
                   .cancel = cancel,
                   .res = res,
                   .errstr = errstr,
                   .errstr_size = errstr_size};
        int rc = -1;

        sl_assert(pc->dlq);
        memset(res, 0, sizeof(*res));
        if (errstr_size)
                errstr[0] = '\0';
        sl_conf_replay_id(conf, pc, res->id, sizeof(res->id));
        if (!o->dry_run) {
                /* librdkafka's default message.max.bytes, 1,000,000, is
                 * below Kafka's: the broker says what the input takes. */
                const char *kv[] = {
                    "transactional.id",
                    res->id,
                    "enable.idempotence",
                    "true",
                    sl_kafka_user_value(conf, "message.max.bytes")
                        ? NULL
                        : "message.max.bytes",
                    "100000000",
                    NULL};
                if (!(r.producer = client_new(&r, conf, RD_KAFKA_PRODUCER, kv)))
                        return -1;
                /* Aborts what a killed run left open, before its offsets
                 * are read. */
                if (txn_check(&r, init_transactions(&r), "init_transactions"))
                        goto out;
        }
        {
                char errstr2[512];
                /* Its group is the replay's: offsets come from it. */
                if (!(r.consumer = sl_kafka_reader_new(conf, res->id, errstr2,
                                                       sizeof(errstr2)))) {
                        fail(&r, "%s", errstr2);
                        goto out;
                }
        }
        res->part_cnt = sl_kafka_partition_count(r.consumer, pc->dlq, 10000);
        r.input_parts = sl_kafka_partition_count(r.consumer, pc->input, 10000);
        if (res->part_cnt == SL_KAFKA_PARTS_REFUSED ||
            (res->part_cnt > 0 && r.input_parts == SL_KAFKA_PARTS_REFUSED)) {
                /* Hidden: Read (DLQ) or Write (input) implies Describe. */
                refused(&r, SL_ACL_TOPIC,
                        res->part_cnt < 0 ? pc->dlq : pc->input,
                        SL_ACL_DESCRIBE);
                res->part_cnt = 0;
                goto out;
        }
        if (res->part_cnt <= 0 || r.input_parts <= 0) {
                fail(&r, "%s %s", res->part_cnt <= 0 ? pc->dlq : pc->input,
                     (res->part_cnt <= 0 ? res->part_cnt : r.input_parts) == 0
                         ? "does not exist"
                         : "cannot be described");
                res->part_cnt = 0;
                goto out;
        }
        res->parts = sl_calloc((size_t)res->part_cnt, sizeof(*res->parts));
        if (offsets(&r))
                goto out;
        res->started = 1;
        if (cbs && cbs->started)
                cbs->started(cbs->opaque, res);
        if (read_all(&r) == 0) {
                if (r.producer)
                        rd_kafka_flush(r.producer, DLQ_TIMEOUT_MS);
                rc = 0;
        } else if (r.in_txn) {
                txn_check(
                    &r, rd_kafka_abort_transaction(r.producer, DLQ_TIMEOUT_MS),
                    "abort_transaction");
        }
out:
        if (r.consumer) {
                rd_kafka_consumer_close(r.consumer);
                rd_kafka_destroy(r.consumer);
        }
        if (r.producer)
                rd_kafka_destroy(r.producer);
        return rc;
}

void sl_dlqreplay_result_clear(sl_dlqreplay_result_t *res) {
        if (!res)
                return;
        free(res->parts);
        res->parts = NULL;
        res->part_cnt = 0;
}
