/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eos_copy.c — the baseline every sluice figure is divided by: a plain
 * exactly-once consume→produce copy with librdkafka, nothing else.
 *
 * A consumer group member (read_committed, no auto-commit) reads an input
 * topic; a transactional producer writes each record to the output topic
 * with the same key, value, headers and partition number, and commits a
 * transaction every --commit-ms (default 100 ms, like the runtime's
 * commit_interval) or every --commit-records records, whichever comes first.
 * The consumed offsets travel in the same transaction
 * (rd_kafka_send_offsets_to_transaction with the group's metadata), so a
 * crash neither loses nor duplicates a record.
 *
 * It stops after --count records are committed and prints one line:
 *
 *   eos_copy records=1000000 seconds=6.23 rate=160495 transactions=32 aborts=0
 *            commit_seconds=0.47 cpu_us_per_record=2.91
 *            cpu_us_per_record_main=1.52
 *
 * The clock runs from the first record consumed to the last transaction
 * committed: broker start, group join and topic metadata are not counted.
 * commit_seconds is the part of it spent blocked in send_offsets and
 * commit_transaction.  cpu_us_per_record is the CPU (user + system, every
 * thread of the process, getrusage) spent over the same span, divided by
 * the records committed: the figure sluice's CPU per record is set beside.
 * cpu_us_per_record_main is the part of it on the main thread, the one that
 * consumes and produces (the rest is librdkafka's threads): beside sluice's
 * loop thread.
 *
 * Error handling follows librdkafka's transaction contract: a retriable
 * error is retried, an abortable one aborts the transaction and rewinds the
 * consumer to the committed offsets (the aborted records are copied again),
 * a fatal one ends the program with exit code 1.
 *
 * Single-threaded: the rebalance callback runs inside
 * rd_kafka_consumer_poll() on the main thread and commits the open
 * transaction before partitions are revoked.
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>

#include "bench.h"

static const char *prog = "eos_copy";

#define MAX_PROPS 64

typedef struct copy_s {
        rd_kafka_t *consumer;
        rd_kafka_t *producer;
        const char *input;     /* input topic name */
        rd_kafka_topic_t *out; /* output topic handle */

        /* Next offset to commit per input partition, for the open
         * transaction; dirty[p] when partition p has records in it. */
        int64_t *next_offset;
        bool *dirty;
        int32_t part_cap;

        bool in_txn;          /* begin_transaction called, not ended */
        bool revoking;        /* inside the revoke callback: no rewind */
        int64_t pending;      /* records produced in the open txn */
        int64_t committed;    /* records in committed txns */
        int64_t txn_start_us; /* when the open txn got its first record */
        int64_t transactions; /* committed */
        int64_t aborts;       /* aborted */
        int64_t commit_us;    /* time spent blocked in commits */
        int64_t dr_errors;    /* failed deliveries (abort the txn) */
        int txn_timeout_ms;   /* per transactional API call */
} copy_t;

static volatile sig_atomic_t stop_signal;

/* CPU time so far (user + system), µs: of the whole process (every
 * thread, RUSAGE_SELF) or of the calling thread (RUSAGE_THREAD). */
static int64_t cpu_us(int who) {
        struct rusage ru;
        getrusage(who, &ru);
        return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
               ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static void on_signal(int sig) {
        stop_signal = sig;
}

static void usage(FILE *fp) {
        fprintf(fp,
                "usage: eos_copy -b BOOTSTRAP -i INPUT -o OUTPUT -g GROUP "
                "--count N [options]\n"
                "\n"
                "Copies records from INPUT to OUTPUT (same key, value, "
                "headers, partition)\n"
                "in Kafka transactions, then prints\n"
                "  eos_copy records=N seconds=S rate=R transactions=T "
                "aborts=A commit_seconds=C cpu_us_per_record=U\n"
                "\n"
                "  -b, --bootstrap HOSTS    bootstrap.servers\n"
                "  -i, --input TOPIC        input topic\n"
                "  -o, --output TOPIC       output topic (same partition "
                "count or more)\n"
                "  -g, --group ID           consumer group id\n"
                "  -n, --count N            stop after N records are "
                "committed\n"
                "      --commit-ms MS       commit every MS ms (default "
                "100)\n"
                "      --commit-records N   ... or every N records (default "
                "0: time only)\n"
                "  -t, --transactional-id ID  (default eos_copy-GROUP)\n"
                "      --timeout S          give up after S seconds "
                "(default 300)\n"
                "  -X KEY=VALUE             librdkafka property for both "
                "clients;\n"
                "                           prefix consumer. or producer. "
                "for one of them\n"
                "  -h, --help\n");
}

/* Fatal librdkafka errors (e.g. producer fenced) end the program. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque) {
        char buf[512];

        (void)opaque;
        if (err != RD_KAFKA_RESP_ERR__FATAL) {
                fprintf(stderr, "%s: %s: %s: %s\n", prog, rd_kafka_name(rk),
                        rd_kafka_err2name(err), reason);
                return;
        }
        err = rd_kafka_fatal_error(rk, buf, sizeof(buf));
        bench_die(prog, "fatal error: %s: %s", rd_kafka_err2name(err), buf);
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm,
                      void *opaque) {
        copy_t *c = opaque;

        (void)rk;
        if (rkm->err) {
                if (c->dr_errors++ == 0)
                        fprintf(stderr, "%s: delivery failed: %s\n", prog,
                                rd_kafka_err2str(rkm->err));
        }
}

/*
 * Handles the error of a transactional API call: returns 0 when there was
 * none, -1 when the transaction must be aborted, 1 when the call may be
 * retried; exits on a fatal error.
 */
static int txn_error(const char *what, rd_kafka_error_t *error) {
        int ret;

        if (!error)
                return 0;
        if (rd_kafka_error_is_fatal(error))
                bench_die(prog, "%s: fatal: %s", what,
                          rd_kafka_error_string(error));
        if (rd_kafka_error_txn_requires_abort(error))
                ret = -1;
        else if (rd_kafka_error_is_retriable(error))
                ret = 1;
        else
                bench_die(prog, "%s: %s", what, rd_kafka_error_string(error));
        fprintf(stderr, "%s: %s: %s (%s)\n", prog, what,
                rd_kafka_error_string(error),
                ret < 0 ? "aborting" : "retrying");
        rd_kafka_error_destroy(error);
        return ret;
}

static void track_partition(copy_t *c, int32_t p) {
        if (p < c->part_cap)
                return;
        int32_t cap = SL_MAX(p + 1, c->part_cap * 2);
        c->next_offset = sl_realloc(c->next_offset, sizeof(int64_t) * cap);
        c->dirty = sl_realloc(c->dirty, sizeof(bool) * cap);
        for (int32_t i = c->part_cap; i < cap; i++) {
                c->next_offset[i] = -1;
                c->dirty[i] = false;
        }
        c->part_cap = cap;
}

/*
 * After an abort: seek every assigned partition back to its committed
 * offset (or the beginning when the group has none), so the aborted
 * records are read and copied again.
 */
static void rewind_to_committed(copy_t *c) {
        rd_kafka_topic_partition_list_t *parts;
        rd_kafka_resp_err_t err;
        rd_kafka_error_t *error;

        err = rd_kafka_assignment(c->consumer, &parts);
        if (err)
                bench_die(prog, "assignment: %s", rd_kafka_err2str(err));
        if (parts->cnt > 0) {
                err = rd_kafka_committed(c->consumer, parts, c->txn_timeout_ms);
                if (err)
                        bench_die(prog, "committed: %s", rd_kafka_err2str(err));
                for (int i = 0; i < parts->cnt; i++)
                        if (parts->elems[i].offset < 0)
                                parts->elems[i].offset =
                                    RD_KAFKA_OFFSET_BEGINNING;
                error = rd_kafka_seek_partitions(c->consumer, parts,
                                                 c->txn_timeout_ms);
                if (error)
                        bench_die(prog, "seek: %s",
                                  rd_kafka_error_string(error));
                for (int i = 0; i < parts->cnt; i++)
                        if (parts->elems[i].err)
                                bench_die(
                                    prog, "seek %s [%d]: %s",
                                    parts->elems[i].topic,
                                    (int)parts->elems[i].partition,
                                    rd_kafka_err2str(parts->elems[i].err));
        }
        rd_kafka_topic_partition_list_destroy(parts);
}

static void txn_abort(copy_t *c) {
        rd_kafka_error_t *error;

        while ((error = rd_kafka_abort_transaction(c->producer,
                                                   c->txn_timeout_ms))) {
                if (rd_kafka_error_is_fatal(error) ||
                    !rd_kafka_error_is_retriable(error))
                        bench_die(prog, "abort_transaction: %s",
                                  rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        }
        c->aborts++;
        c->in_txn = false;
        c->pending = 0;
        c->dr_errors = 0;
        for (int32_t p = 0; p < c->part_cap; p++)
                c->dirty[p] = false;
        /* Partitions being revoked are not ours to seek: their next owner
         * starts from the committed offsets anyway. */
        if (!c->revoking)
                rewind_to_committed(c);
}

/*
 * Commits the open transaction with the consumed offsets.  Returns 0 when
 * committed, -1 when it had to be aborted (the records will be copied
 * again).
 */
static int txn_commit_untimed(copy_t *c) {
        rd_kafka_topic_partition_list_t *offsets;
        rd_kafka_consumer_group_metadata_t *cgmd;
        int r;

        if (!c->in_txn)
                return 0;
        offsets = rd_kafka_topic_partition_list_new(4);
        for (int32_t p = 0; p < c->part_cap; p++)
                if (c->dirty[p])
                        rd_kafka_topic_partition_list_add(offsets, c->input, p)
                            ->offset = c->next_offset[p];

        cgmd = rd_kafka_consumer_group_metadata(c->consumer);
        do {
                r = txn_error(
                    "send_offsets_to_transaction",
                    rd_kafka_send_offsets_to_transaction(
                        c->producer, offsets, cgmd, c->txn_timeout_ms));
        } while (r > 0);
        rd_kafka_consumer_group_metadata_destroy(cgmd);
        rd_kafka_topic_partition_list_destroy(offsets);
        if (r < 0) {
                txn_abort(c);
                return -1;
        }

        do {
                r = txn_error("commit_transaction",
                              rd_kafka_commit_transaction(c->producer,
                                                          c->txn_timeout_ms));
        } while (r > 0);
        if (r < 0) {
                txn_abort(c);
                return -1;
        }

        c->transactions++;
        c->committed += c->pending;
        c->pending = 0;
        c->in_txn = false;
        for (int32_t p = 0; p < c->part_cap; p++)
                c->dirty[p] = false;
        return 0;
}

/* txn_commit_untimed(), adding the time it blocks to commit_us. */
static int txn_commit(copy_t *c) {
        int64_t t0 = sl_mono_us();
        int r = txn_commit_untimed(c);

        c->commit_us += sl_mono_us() - t0;
        return r;
}

/*
 * Eager protocol: commit before giving partitions away so the next owner
 * starts after what we copied; cooperative protocol: the same, through the
 * incremental calls.
 */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
        copy_t *c = opaque;
        bool coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
        rd_kafka_error_t *error = NULL;
        rd_kafka_resp_err_t aerr = RD_KAFKA_RESP_ERR_NO_ERROR;

        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                fprintf(stderr, "%s: assigned %d partition(s)\n", prog,
                        parts->cnt);
                if (coop)
                        error = rd_kafka_incremental_assign(rk, parts);
                else
                        aerr = rd_kafka_assign(rk, parts);
                break;
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                /* Lost partitions may already belong to someone else:
                 * committing their offsets would be fenced, so abort. */
                c->revoking = true;
                if (c->in_txn && !rd_kafka_assignment_lost(rk))
                        txn_commit(c);
                else if (c->in_txn)
                        txn_abort(c);
                c->revoking = false;
                if (coop)
                        error = rd_kafka_incremental_unassign(rk, parts);
                else
                        aerr = rd_kafka_assign(rk, NULL);
                break;
        default:
                fprintf(stderr, "%s: rebalance: %s\n", prog,
                        rd_kafka_err2str(err));
                aerr = rd_kafka_assign(rk, NULL);
                break;
        }
        if (error)
                bench_die(prog, "assign: %s", rd_kafka_error_string(error));
        if (aerr)
                bench_die(prog, "assign: %s", rd_kafka_err2str(aerr));
}

/* Produces a copy of rkm in the open transaction (begun if need be). */
static void copy_record(copy_t *c, rd_kafka_message_t *rkm) {
        rd_kafka_headers_t *hdrs = NULL;
        rd_kafka_vu_t vus[6];
        size_t n = 0;
        rd_kafka_error_t *error;

        if (!c->in_txn) {
                if (txn_error("begin_transaction",
                              rd_kafka_begin_transaction(c->producer)))
                        bench_die(prog, "cannot begin a transaction");
                c->in_txn = true;
                c->txn_start_us = sl_mono_us();
        }

        /* Take the headers out of the consumed message: ownership passes
         * to the produced one on success, no copy. */
        if (rd_kafka_message_detach_headers(rkm, &hdrs))
                hdrs = NULL;

        vus[n].vtype = RD_KAFKA_VTYPE_RKT;
        vus[n++].u.rkt = c->out;
        vus[n].vtype = RD_KAFKA_VTYPE_PARTITION;
        vus[n++].u.i32 = rkm->partition;
        vus[n].vtype = RD_KAFKA_VTYPE_KEY;
        vus[n].u.mem.ptr = rkm->key;
        vus[n++].u.mem.size = rkm->key_len;
        vus[n].vtype = RD_KAFKA_VTYPE_VALUE;
        vus[n].u.mem.ptr = rkm->payload;
        vus[n++].u.mem.size = rkm->len;
        vus[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
        vus[n++].u.i = RD_KAFKA_MSG_F_COPY;
        if (hdrs) {
                vus[n].vtype = RD_KAFKA_VTYPE_HEADERS;
                vus[n++].u.headers = hdrs;
        }

        while ((error = rd_kafka_produceva(c->producer, vus, n))) {
                if (rd_kafka_error_code(error) !=
                    RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        if (rd_kafka_error_is_fatal(error))
                                bench_die(prog, "produce: fatal: %s",
                                          rd_kafka_error_string(error));
                        bench_die(prog, "produce: %s",
                                  rd_kafka_error_string(error));
                }
                rd_kafka_error_destroy(error);
                rd_kafka_poll(c->producer, 10);
        }

        track_partition(c, rkm->partition);
        c->next_offset[rkm->partition] = rkm->offset + 1;
        c->dirty[rkm->partition] = true;
        c->pending++;
}

static rd_kafka_t *client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf) {
        char errstr[512];
        rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));

        if (!rk)
                bench_die(prog, "%s: %s",
                          type == RD_KAFKA_PRODUCER ? "producer" : "consumer",
                          errstr);
        return rk;
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"input", required_argument, NULL, 'i'},
            {"output", required_argument, NULL, 'o'},
            {"group", required_argument, NULL, 'g'},
            {"count", required_argument, NULL, 'n'},
            {"commit-ms", required_argument, NULL, 'm'},
            {"commit-records", required_argument, NULL, 'r'},
            {"transactional-id", required_argument, NULL, 't'},
            {"timeout", required_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *input = NULL, *output = NULL;
        const char *group = NULL, *txnid = NULL;
        int64_t count = -1, commit_ms = 100, commit_records = 0;
        int64_t timeout_s = 300;
        rd_kafka_conf_t *cconf = rd_kafka_conf_new();
        rd_kafka_conf_t *pconf = rd_kafka_conf_new();
        copy_t c = {.txn_timeout_ms = 30000};
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_resp_err_t err;
        int64_t t_first = 0, t_end, deadline, last_poll = 0;
        int64_t cpu_first = 0, cpu_end, main_first = 0, main_end;
        char txnid_buf[256];
        const char *props[MAX_PROPS];
        int nprops = 0;
        int opt;

        while ((opt = getopt_long(argc, argv, "b:i:o:g:n:t:X:h", longopts,
                                  NULL)) != -1) {
                switch (opt) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 'i':
                        input = optarg;
                        break;
                case 'o':
                        output = optarg;
                        break;
                case 'g':
                        group = optarg;
                        break;
                case 'n':
                        count = bench_parse_int(prog, "--count", optarg, 1,
                                                INT64_MAX);
                        break;
                case 'm':
                        commit_ms = bench_parse_int(prog, "--commit-ms", optarg,
                                                    1, 3600000);
                        break;
                case 'r':
                        commit_records = bench_parse_int(
                            prog, "--commit-records", optarg, 0, INT64_MAX);
                        break;
                case 't':
                        txnid = optarg;
                        break;
                case 'T':
                        timeout_s = bench_parse_int(prog, "--timeout", optarg,
                                                    1, 86400);
                        break;
                case 'X':
                        if (nprops == MAX_PROPS) {
                                fprintf(stderr, "%s: at most %d -X\n", prog,
                                        MAX_PROPS);
                                return BENCH_EXIT_USAGE;
                        }
                        props[nprops++] = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return BENCH_EXIT_USAGE;
                }
        }
        if (optind != argc || !bootstrap || !input || !output || !group ||
            count < 0) {
                fprintf(stderr,
                        "%s: -b, -i, -o, -g and --count are "
                        "required\n",
                        prog);
                usage(stderr);
                return BENCH_EXIT_USAGE;
        }
        if (!txnid) {
                snprintf(txnid_buf, sizeof(txnid_buf), "eos_copy-%s", group);
                txnid = txnid_buf;
        }

        bench_conf_set(prog, cconf, "bootstrap.servers", bootstrap);
        bench_conf_set(prog, cconf, "group.id", group);
        bench_conf_set(prog, cconf, "client.id", "eos_copy-consumer");
        bench_conf_set(prog, cconf, "enable.auto.commit", "false");
        bench_conf_set(prog, cconf, "auto.offset.reset", "earliest");
        bench_conf_set(prog, cconf, "isolation.level", "read_committed");
        rd_kafka_conf_set_error_cb(cconf, error_cb);
        rd_kafka_conf_set_rebalance_cb(cconf, rebalance_cb);
        rd_kafka_conf_set_opaque(cconf, &c);

        bench_conf_set(prog, pconf, "bootstrap.servers", bootstrap);
        bench_conf_set(prog, pconf, "client.id", "eos_copy-producer");
        bench_conf_set(prog, pconf, "transactional.id", txnid);

        /* -X last, so it may override any setting above. */
        for (int j = 0; j < nprops; j++) {
                const char *kv = props[j];
                if (!strncmp(kv, "consumer.", 9))
                        bench_conf_set_kv(prog, cconf, kv + 9);
                else if (!strncmp(kv, "producer.", 9))
                        bench_conf_set_kv(prog, pconf, kv + 9);
                else {
                        bench_conf_set_kv(prog, cconf, kv);
                        bench_conf_set_kv(prog, pconf, kv);
                }
        }
        rd_kafka_conf_set_error_cb(pconf, error_cb);
        rd_kafka_conf_set_dr_msg_cb(pconf, dr_msg_cb);
        rd_kafka_conf_set_opaque(pconf, &c);

        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        deadline = sl_mono_us() + timeout_s * 1000000;

        /* conf objects are owned by the clients from here on. */
        c.producer = client_new(RD_KAFKA_PRODUCER, pconf);
        c.consumer = client_new(RD_KAFKA_CONSUMER, cconf);
        rd_kafka_poll_set_consumer(c.consumer);
        c.input = input;
        c.out = rd_kafka_topic_new(c.producer, output, NULL);
        if (!c.out)
                bench_die(prog, "topic %s: %s", output,
                          rd_kafka_err2str(rd_kafka_last_error()));

        while (txn_error("init_transactions",
                         rd_kafka_init_transactions(c.producer,
                                                    c.txn_timeout_ms)) > 0)
                ;

        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, input, RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(c.consumer, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (err)
                bench_die(prog, "subscribe %s: %s", input,
                          rd_kafka_err2str(err));

        while (c.committed < count) {
                rd_kafka_message_t *rkm;
                int64_t now = sl_mono_us();

                if (stop_signal)
                        bench_die(prog,
                                  "interrupted after %" PRId64
                                  " committed records",
                                  c.committed);
                if (now >= deadline)
                        bench_die(prog,
                                  "deadline: %" PRId64 " of %" PRId64
                                  " records committed in %" PRId64 " s",
                                  c.committed, count, timeout_s);

                /* Block only while nothing is waiting for a commit. */
                rkm = rd_kafka_consumer_poll(c.consumer, c.in_txn ? 0 : 100);
                if (rkm) {
                        if (rkm->err) {
                                if (rkm->err !=
                                    RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                        fprintf(stderr, "%s: consumer: %s\n",
                                                prog,
                                                rd_kafka_message_errstr(rkm));
                        } else {
                                if (!t_first) {
                                        t_first = sl_mono_us();
                                        cpu_first = cpu_us(RUSAGE_SELF);
                                        main_first = cpu_us(RUSAGE_THREAD);
                                }
                                copy_record(&c, rkm);
                        }
                        rd_kafka_message_destroy(rkm);
                } else if (c.in_txn) {
                        /* Input is idle: wait briefly in the producer
                         * instead of spinning. */
                        rd_kafka_poll(c.producer, 1);
                }

                now = sl_mono_us();
                if (now - last_poll > 10000) {
                        rd_kafka_poll(c.producer, 0); /* delivery reports */
                        last_poll = now;
                }
                if (c.in_txn &&
                    (c.committed + c.pending >= count ||
                     (commit_records && c.pending >= commit_records) ||
                     now - c.txn_start_us >= commit_ms * 1000))
                        txn_commit(&c);
        }
        t_end = sl_mono_us();
        cpu_end = cpu_us(RUSAGE_SELF);
        main_end = cpu_us(RUSAGE_THREAD);

        {
                double secs = bench_seconds(t_first, t_end);
                printf("eos_copy records=%" PRId64 " seconds=%.3f rate=%.0f "
                       "transactions=%" PRId64 " aborts=%" PRId64
                       " commit_seconds=%.3f cpu_us_per_record=%.2f"
                       " cpu_us_per_record_main=%.2f\n",
                       c.committed, secs, bench_rate(c.committed, secs),
                       c.transactions, c.aborts, bench_seconds(0, c.commit_us),
                       c.committed
                           ? (double)(cpu_end - cpu_first) / (double)c.committed
                           : 0.0,
                       c.committed ? (double)(main_end - main_first) /
                                         (double)c.committed
                                   : 0.0);
                fflush(stdout);
        }

        err = rd_kafka_consumer_close(c.consumer);
        if (err)
                fprintf(stderr, "%s: consumer close: %s\n", prog,
                        rd_kafka_err2str(err));
        rd_kafka_destroy(c.consumer);
        rd_kafka_topic_destroy(c.out);
        rd_kafka_destroy(c.producer);
        free(c.next_offset);
        free(c.dirty);
        return 0;
}
