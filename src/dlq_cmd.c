/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlq_cmd.c — `sluice dlq replay -c FILE PIPELINE`: sends DLQ records of a
 * pipeline back to its input once their cause is fixed.
 *
 * A replayed record is the DLQ record's key, value and original headers
 * (dlqrec.h: those before sluice's own, which start with sluice-error).
 * Not replayed, counted and named: a cut copy (it is not the original
 * record), a record with no sluice-source-offset (a fired timer that could
 * not be delivered, a timer whose payload was lost: its control headers
 * are not in the copy), and a record without sluice-error (not written by
 * sluice).  It goes to the input partition it came from.
 *
 * Exactly once.  The replay is a consumer group of its own,
 * <app_id>.dlq-replay.<pipeline>, that never joins (it assigns the DLQ's
 * partitions) and whose offsets are committed only in the transactions of
 * a producer with the same transactional.id, together with the records it
 * re-produced.  The producer's init_transactions comes first: it aborts
 * what a killed run left open, before the committed offsets are read
 * (read_committed: pending offsets are waited for).  A run reads from the
 * committed offsets up to the end offsets seen at its start and stops.
 * Records the filters leave out advance the offsets too: a later run with
 * other filters goes on after them (--from-beginning starts again from
 * the first record kept).  Two runs at once fence each other (the older
 * one fails; nothing is committed twice).
 */
#include <getopt.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "config.h"
#include "dlqrec.h"
#include "kafka.h"
#include "log.h"
#include "parse.h"
#include "util.h"

#define DLQ_TIMEOUT_MS  60000
#define DLQ_DEADLINE_MS (120 * 1000) /* no record for this long: fail */
#define DLQ_TXN_RECORDS 500          /* records read per transaction */
#define DLQ_MAX_REASONS 16

static void usage(FILE *out) {
        fprintf(out,
                "usage: sluice dlq replay -c FILE PIPELINE [--reason R] "
                "[--since TIME]\n"
                "           [--until TIME] [--limit N] [--dry-run] "
                "[--from-beginning]\n"
                "\n"
                "Re-produces PIPELINE's DLQ records to its input: the original "
                "key, value\n"
                "and headers, without sluice's own (sluice-error, "
                "sluice-error-detail,\n"
                "sluice-source-*, sluice-timer-id, sluice-due, sluice-cut).  "
                "Exactly once,\n"
                "even when interrupted and run again: the progress is the "
                "consumer group\n"
                "<app_id>.dlq-replay.<pipeline>, committed in the transactions "
                "that\n"
                "re-produce the records.  Reads from the committed offsets to "
                "the DLQ's\n"
                "end as seen at start, then prints what it did.\n"
                "\n"
                "  --reason R        only records whose sluice-error is R (may "
                "repeat)\n"
                "  --since TIME      only records put in the DLQ at or after "
                "TIME\n"
                "  --until TIME      only records put in the DLQ before TIME\n"
                "  --limit N         replay at most N records, then stop\n"
                "  --dry-run         print what would be replayed; commit "
                "nothing\n"
                "  --from-beginning  start from the DLQ's first record, not "
                "from where\n"
                "                    the last run stopped\n"
                "\n"
                "TIME: epoch milliseconds or RFC 3339 (2026-01-01T00:00:00Z).  "
                "Records the\n"
                "filters leave out are passed over for good: a later run with "
                "other filters\n"
                "goes on after them (--from-beginning to see them again).  Not "
                "replayed,\n"
                "counted: a cut copy (sluice-cut), a fired timer or a lost "
                "payload (no\n"
                "source record: its control headers are gone).\n");
}

typedef struct dlq_opts_s {
        const char *reasons[DLQ_MAX_REASONS];
        int reason_cnt;
        int64_t since, until; /* -1: none */
        int64_t limit;        /* -1: none */
        int dry_run, from_beginning;
} dlq_opts_t;

/* Why a record is not replayed (the summary's order). */
typedef enum {
        DLQ_SKIP_FILTER_REASON,
        DLQ_SKIP_FILTER_TIME,
        DLQ_SKIP_CUT,
        DLQ_SKIP_NO_SOURCE,
        DLQ_SKIP_NOT_DLQ,
        DLQ_SKIP__CNT
} dlq_skip_t;

static const char *const skip_names[DLQ_SKIP__CNT] = {
    "other reason", "outside --since/--until", "cut copy (sluice-cut)",
    "no source record (fired timer or lost payload)",
    "not a DLQ record (no sluice-error)"};

typedef struct dlq_part_s {
        int64_t start, end; /* offsets: first to read, end seen at start */
        int64_t next;       /* the offset to commit: past what was handled */
        int64_t committed;  /* next as last committed (or start) */
        int64_t replayed, skipped;
        int done;
} dlq_part_t;

typedef struct dlq_run_s {
        const sl_pipeline_conf_t *pc;
        const dlq_opts_t *o;
        rd_kafka_t *consumer, *producer; /* producer NULL: dry run */
        dlq_part_t *parts;
        int part_cnt, input_parts;
        int64_t replayed, skips[DLQ_SKIP__CNT];
        int in_txn;
} dlq_run_t;

/*
 * Sorts one DLQ record: returns -1 when it is replayed (*out: its original
 * headers, owned by the caller, NULL when it had none; *part: the input
 * partition it came from, or -1) or the dlq_skip_t that leaves it out.
 */
static int dlq_classify(const dlq_run_t *r, const rd_kafka_message_t *m,
                        rd_kafka_headers_t **out, int32_t *part) {
        rd_kafka_headers_t *h = NULL;
        sl_dlqrec_t d;

        *out = NULL;
        *part = -1;
        if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
                h = NULL;
        if (sl_dlqrec_read(h, &d) == SL_DLQREC_NOT_DLQ)
                return DLQ_SKIP_NOT_DLQ;
        if (r->o->reason_cnt) {
                int match = 0;
                for (int k = 0; k < r->o->reason_cnt; k++)
                        match |= sl_dlqrec_reason_is(&d, r->o->reasons[k]);
                if (!match)
                        return DLQ_SKIP_FILTER_REASON;
        }
        if (r->o->since >= 0 || r->o->until >= 0) {
                int64_t ts = rd_kafka_message_timestamp(m, NULL);
                if ((r->o->since >= 0 && ts < r->o->since) ||
                    (r->o->until >= 0 && ts >= r->o->until))
                        return DLQ_SKIP_FILTER_TIME;
        }
        if (d.kind == SL_DLQREC_CUT)
                return DLQ_SKIP_CUT;
        if (d.kind == SL_DLQREC_NO_SOURCE)
                return DLQ_SKIP_NO_SOURCE;
        if (d.source_topic && d.source_partition >= 0 &&
            d.source_partition < r->input_parts &&
            d.source_topic_len == strlen(r->pc->input) &&
            !memcmp(d.source_topic, r->pc->input, d.source_topic_len))
                *part = d.source_partition;
        *out = sl_dlqrec_original(h, &d);
        return -1;
}

/* The TIME of --since/--until. */
static int parse_time(const char *opt, const char *s, int64_t *out) {
        char errstr[256];
        if (sl_parse_timestamp_ms(s, out, errstr, sizeof(errstr))) {
                fprintf(stderr, "sluice dlq replay: %s %s: %s\n", opt, s,
                        errstr);
                return -1;
        }
        return 0;
}

static int set_all(rd_kafka_conf_t *kc, const char *const *kv) {
        char errstr[512];
        for (; kv[0]; kv += 2)
                if (sl_kafka_conf_set(kc, kv[0], kv[1], errstr,
                                      sizeof(errstr))) {
                        fprintf(stderr, "sluice dlq replay: %s\n", errstr);
                        return -1;
                }
        return 0;
}

/* A client of type with conf's [kafka] settings and these properties
 * (name, value, ..., NULL); NULL, said on stderr, when it cannot be made. */
static rd_kafka_t *client_new(const sl_conf_t *conf, rd_kafka_type_t type,
                              const char *const *kv) {
        char errstr[512];
        rd_kafka_conf_t *kc = sl_conf_rdkafka(conf, errstr, sizeof(errstr));
        rd_kafka_t *rk;

        if (!kc) {
                fprintf(stderr, "sluice dlq replay: %s\n", errstr);
                return NULL;
        }
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        if (set_all(kc, kv)) {
                rd_kafka_conf_destroy(kc);
                return NULL;
        }
        if (!(rk = rd_kafka_new(type, kc, errstr, sizeof(errstr)))) {
                fprintf(stderr, "sluice dlq replay: %s\n", errstr);
                rd_kafka_conf_destroy(kc);
        }
        return rk;
}

/* Says what a transactional call returned; -1 on an error.  An abortable
 * error aborts the open transaction (what it held is read again by the
 * next run). */
static int txn_check(dlq_run_t *r, rd_kafka_error_t *e, const char *what) {
        if (!e)
                return 0;
        fprintf(stderr, "sluice dlq replay: %s: %s%s\n", what,
                rd_kafka_error_string(e),
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

/* Commits the open transaction: the records produced and the offsets past
 * what was read.  A dry run only moves its own counters. */
static int dlq_commit(dlq_run_t *r) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_consumer_group_metadata_t *g;
        rd_kafka_error_t *e;
        const char *sleep_ms = getenv("SLUICE_TEST_REPLAY_SLEEP_MS");

        if (!r->in_txn)
                return 0;
        l = rd_kafka_topic_partition_list_new(r->part_cnt);
        for (int p = 0; p < r->part_cnt; p++)
                if (r->parts[p].next > r->parts[p].committed)
                        rd_kafka_topic_partition_list_add(l, r->pc->dlq, p)
                            ->offset = r->parts[p].next;
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
        for (int p = 0; p < r->part_cnt; p++)
                r->parts[p].committed = r->parts[p].next;
        return 0;
}

/* Re-produces one record to the input in the open transaction (hdrs: its
 * headers, owned by this call). */
static int dlq_produce(dlq_run_t *r, const rd_kafka_message_t *m,
                       rd_kafka_headers_t *hdrs, int32_t part) {
        rd_kafka_resp_err_t err;

        if (!r->in_txn) {
                if (txn_check(r, rd_kafka_begin_transaction(r->producer),
                              "begin_transaction")) {
                        if (hdrs)
                                rd_kafka_headers_destroy(hdrs);
                        return -1;
                }
                r->in_txn = 1;
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
                fprintf(stderr, "sluice dlq replay: produce to %s: %s\n",
                        r->pc->input, rd_kafka_err2str(err));
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                return -1;
        }
        rd_kafka_poll(r->producer, 0);
        return 0;
}

/* Handles one DLQ record; -1 on a failure that ends the run. */
static int dlq_record(dlq_run_t *r, const rd_kafka_message_t *m) {
        dlq_part_t *dp = &r->parts[m->partition];
        rd_kafka_headers_t *hdrs;
        int32_t part;
        int skip = dlq_classify(r, m, &hdrs, &part);
        char k[100];

        if (skip >= 0) {
                r->skips[skip]++;
                dp->skipped++;
                if (skip >= DLQ_SKIP_CUT)
                        printf("skip [%" PRId32 "] @%" PRId64 " key '%s': %s\n",
                               m->partition, m->offset,
                               m->key
                                   ? sl_escape(m->key, m->key_len, k, sizeof(k))
                                   : "(null)",
                               skip_names[skip]);
        } else if (r->o->dry_run) {
                printf("would replay [%" PRId32 "] @%" PRId64
                       " key '%s' (%zu bytes, %zu headers) to %s\n",
                       m->partition, m->offset,
                       m->key ? sl_escape(m->key, m->key_len, k, sizeof(k))
                              : "(null)",
                       m->len, hdrs ? rd_kafka_header_cnt(hdrs) : 0,
                       r->pc->input);
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                r->replayed++;
                dp->replayed++;
        } else {
                if (dlq_produce(r, m, hdrs, part))
                        return -1;
                r->replayed++;
                dp->replayed++;
        }
        if (!r->in_txn && r->producer && dp->next < m->offset + 1) {
                /* Offsets alone (skipped records) go in a transaction too. */
                if (txn_check(r, rd_kafka_begin_transaction(r->producer),
                              "begin_transaction"))
                        return -1;
                r->in_txn = 1;
        }
        dp->next = m->offset + 1;
        return 0;
}

/* Reads the DLQ from each partition's start to its end; commits every
 * DLQ_TXN_RECORDS records and at the end. */
static int dlq_read(dlq_run_t *r) {
        int done = 0, in_batch = 0;
        int64_t last = sl_now_ms();
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(r->part_cnt);

        for (int p = 0; p < r->part_cnt; p++) {
                if (r->parts[p].start >= r->parts[p].end) {
                        r->parts[p].done = 1;
                        done++;
                        continue;
                }
                rd_kafka_topic_partition_list_add(l, r->pc->dlq, p)->offset =
                    r->parts[p].start;
        }
        if (l->cnt)
                rd_kafka_assign(r->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
        while (done < r->part_cnt &&
               (r->o->limit < 0 || r->replayed < r->o->limit)) {
                rd_kafka_message_t *m =
                    rd_kafka_consumer_poll(r->consumer, 500);
                dlq_part_t *dp;
                if (!m) {
                        if (sl_now_ms() - last > DLQ_DEADLINE_MS) {
                                fprintf(stderr,
                                        "sluice dlq replay: %s not read to "
                                        "its end within %d s (an open "
                                        "transaction?)\n",
                                        r->pc->dlq, DLQ_DEADLINE_MS / 1000);
                                return -1;
                        }
                        continue;
                }
                last = sl_now_ms();
                if (m->partition < 0 || m->partition >= r->part_cnt ||
                    r->parts[m->partition].done) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                dp = &r->parts[m->partition];
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        if (m->offset >= dp->end) {
                                dp->done = 1;
                                done++;
                        }
                } else if (m->err) {
                        fprintf(stderr, "sluice dlq replay: %s\n",
                                rd_kafka_message_errstr(m));
                } else if (m->offset >= dp->end) {
                        dp->done = 1; /* came after the start: not ours */
                        done++;
                } else {
                        if (dlq_record(r, m)) {
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
                        if (dlq_commit(r))
                                return -1;
                        in_batch = 0;
                }
        }
        return dlq_commit(r);
}

/* Each partition's start (the group's committed offset, or the first
 * record kept) and end (the high watermark now). */
static int dlq_offsets(dlq_run_t *r) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(r->part_cnt);
        rd_kafka_resp_err_t err;

        for (int p = 0; p < r->part_cnt; p++)
                rd_kafka_topic_partition_list_add(l, r->pc->dlq, p);
        err = r->o->from_beginning
                  ? RD_KAFKA_RESP_ERR_NO_ERROR
                  : rd_kafka_committed(r->consumer, l, DLQ_TIMEOUT_MS);
        if (err) {
                fprintf(stderr,
                        "sluice dlq replay: committed offsets of %s: %s\n",
                        r->pc->dlq, rd_kafka_err2str(err));
                rd_kafka_topic_partition_list_destroy(l);
                return -1;
        }
        for (int p = 0; p < r->part_cnt; p++) {
                int64_t lo = 0, hi = 0, c = l->elems[p].offset;
                err = rd_kafka_query_watermark_offsets(
                    r->consumer, r->pc->dlq, p, &lo, &hi, DLQ_TIMEOUT_MS);
                if (!err && !r->o->from_beginning && l->elems[p].err)
                        err = l->elems[p].err;
                if (err) {
                        fprintf(stderr, "sluice dlq replay: %s [%d]: %s\n",
                                r->pc->dlq, p, rd_kafka_err2str(err));
                        rd_kafka_topic_partition_list_destroy(l);
                        return -1;
                }
                r->parts[p].start =
                    (r->o->from_beginning || c < 0) ? lo : SL_MAX(c, lo);
                r->parts[p].end = hi;
                r->parts[p].next = r->parts[p].committed = r->parts[p].start;
        }
        rd_kafka_topic_partition_list_destroy(l);
        return 0;
}

static void dlq_summary(const dlq_run_t *r) {
        int64_t skipped = 0;
        const char *sep = "";

        for (int p = 0; p < r->part_cnt; p++) {
                const dlq_part_t *dp = &r->parts[p];
                printf("partition %d: offsets %" PRId64 "..%" PRId64
                       " of %" PRId64 ": %s %" PRId64 ", skipped %" PRId64 "\n",
                       p, dp->start, dp->next, dp->end,
                       r->o->dry_run ? "would replay" : "replayed",
                       dp->replayed, dp->skipped);
        }
        for (int s = 0; s < DLQ_SKIP__CNT; s++)
                skipped += r->skips[s];
        printf("%s %" PRId64 " to %s, skipped %" PRId64,
               r->o->dry_run ? "would replay" : "replayed", r->replayed,
               r->pc->input, skipped);
        if (skipped) {
                printf(" (");
                for (int s = 0; s < DLQ_SKIP__CNT; s++)
                        if (r->skips[s]) {
                                printf("%s%" PRId64 " %s", sep, r->skips[s],
                                       skip_names[s]);
                                sep = ", ";
                        }
                printf(")");
        }
        printf("%s\n", r->o->dry_run ? "; dry run: nothing committed" : "");
}

static int dlq_replay(const sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                      const dlq_opts_t *o) {
        char id[512];
        dlq_run_t r = {.pc = pc, .o = o};
        int rc = SL_EXIT_FAIL;

        snprintf(id, sizeof(id), "%s.dlq-replay.%s",
                 conf->app_id ? conf->app_id : "sluice", pc->name);
        if (!o->dry_run) {
                /* librdkafka's default message.max.bytes, 1,000,000, is
                 * below Kafka's: the broker says what the input takes. */
                const char *kv[] = {
                    "transactional.id",
                    id,
                    "enable.idempotence",
                    "true",
                    sl_kafka_user_value(conf, "message.max.bytes")
                        ? NULL
                        : "message.max.bytes",
                    "100000000",
                    NULL};
                if (!(r.producer = client_new(conf, RD_KAFKA_PRODUCER, kv)))
                        return SL_EXIT_FAIL;
                /* Aborts what a killed run left open, before its offsets
                 * are read. */
                if (txn_check(
                        &r,
                        rd_kafka_init_transactions(r.producer, DLQ_TIMEOUT_MS),
                        "init_transactions"))
                        goto out;
        }
        {
                const char *kv[] = {"group.id",
                                    id,
                                    "enable.auto.commit",
                                    "false",
                                    "isolation.level",
                                    "read_committed",
                                    "auto.offset.reset",
                                    "earliest",
                                    "enable.partition.eof",
                                    "true",
                                    NULL};
                if (!(r.consumer = client_new(conf, RD_KAFKA_CONSUMER, kv)))
                        goto out;
                rd_kafka_poll_set_consumer(r.consumer);
        }
        r.part_cnt = sl_kafka_partition_count(r.consumer, pc->dlq, 10000);
        r.input_parts = sl_kafka_partition_count(r.consumer, pc->input, 10000);
        if (r.part_cnt <= 0 || r.input_parts <= 0) {
                fprintf(stderr, "sluice dlq replay: %s %s\n",
                        r.part_cnt <= 0 ? pc->dlq : pc->input,
                        (r.part_cnt <= 0 ? r.part_cnt : r.input_parts) == 0
                            ? "does not exist"
                            : "cannot be described");
                goto out;
        }
        r.parts = sl_calloc((size_t)r.part_cnt, sizeof(*r.parts));
        if (dlq_offsets(&r))
                goto out;
        printf("%s %s -> %s (group %s)\n",
               o->dry_run ? "dry run:" : "replaying", pc->dlq, pc->input, id);
        fflush(stdout);
        if (dlq_read(&r) == 0) {
                if (r.producer)
                        rd_kafka_flush(r.producer, DLQ_TIMEOUT_MS);
                rc = SL_EXIT_OK;
        } else {
                if (r.in_txn)
                        txn_check(&r,
                                  rd_kafka_abort_transaction(r.producer,
                                                             DLQ_TIMEOUT_MS),
                                  "abort_transaction");
                fprintf(stderr,
                        "sluice dlq replay: stopped; what was committed "
                        "stays, a new run goes on from there\n");
        }
        dlq_summary(&r);
out:
        if (r.consumer) {
                rd_kafka_consumer_close(r.consumer);
                rd_kafka_destroy(r.consumer);
        }
        if (r.producer)
                rd_kafka_destroy(r.producer);
        free(r.parts);
        return rc;
}

static int replay_cmd(int argc, char **argv) {
        static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                             {"reason", 1, NULL, 'r'},
                                             {"since", 1, NULL, 's'},
                                             {"until", 1, NULL, 'u'},
                                             {"limit", 1, NULL, 'n'},
                                             {"dry-run", 0, NULL, 'd'},
                                             {"from-beginning", 0, NULL, 'b'},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        dlq_opts_t o = {.since = -1, .until = -1, .limit = -1};
        const char *path = NULL;
        const sl_pipeline_conf_t *pc;
        sl_conf_t *conf;
        char *end;
        int c, rc;

        optind = 1;
        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'r':
                        if (o.reason_cnt == DLQ_MAX_REASONS) {
                                fprintf(stderr,
                                        "sluice dlq replay: at most %d "
                                        "--reason\n",
                                        DLQ_MAX_REASONS);
                                return SL_EXIT_USAGE;
                        }
                        o.reasons[o.reason_cnt++] = optarg;
                        break;
                case 's':
                        if (parse_time("--since", optarg, &o.since))
                                return SL_EXIT_USAGE;
                        break;
                case 'u':
                        if (parse_time("--until", optarg, &o.until))
                                return SL_EXIT_USAGE;
                        break;
                case 'n':
                        o.limit = strtoll(optarg, &end, 10);
                        if (*end || !*optarg || o.limit < 0) {
                                fprintf(stderr,
                                        "sluice dlq replay: --limit %s: not "
                                        "a count\n",
                                        optarg);
                                return SL_EXIT_USAGE;
                        }
                        break;
                case 'd':
                        o.dry_run = 1;
                        break;
                case 'b':
                        o.from_beginning = 1;
                        break;
                case 'h':
                        usage(stdout);
                        return SL_EXIT_OK;
                default:
                        usage(stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (!path || optind != argc - 1) {
                usage(stderr);
                return SL_EXIT_USAGE;
        }
        sl_log_set_level(LOG_WARNING);
        if (sl_conf_load(path, 1, &conf, stderr) != 0)
                return SL_EXIT_FAIL;
        if (!(pc = sl_conf_pipeline(conf, argv[optind]))) {
                fprintf(stderr, "sluice dlq replay: %s: no pipeline named %s\n",
                        path, argv[optind]);
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        if (!pc->dlq) {
                fprintf(stderr, "sluice dlq replay: pipeline %s has no DLQ\n",
                        pc->name);
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        rc = dlq_replay(conf, pc, &o);
        sl_conf_destroy(conf);
        return rc;
}

int sl_dlq_cmd(int argc, char **argv) {
        if (argc >= 2 && !strcmp(argv[1], "replay"))
                return replay_cmd(argc - 1, argv + 1);
        if (argc >= 2 &&
            (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
                usage(stdout);
                return SL_EXIT_OK;
        }
        usage(stderr);
        return SL_EXIT_USAGE;
}
