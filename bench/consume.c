/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consume.c — counts the committed records of a topic as they become
 * visible, for benchmarks that must wait for an operator's output.
 *
 *   consume -b BOOTSTRAP -t TOPIC --count N [--lateness-header NAME]
 *
 * A read_committed consumer assigned to every partition from the beginning
 * (no group, nothing committed).  It stops when it has read --count records
 * (or, with --count 0, when every partition is at its end) and prints:
 *
 *   consume records=N seconds=S rate=R wall=W
 *
 * seconds runs from the first record to the last, wall from the start of
 * the program to the last record.  With --lateness-header NAME each record
 * must carry NAME = a due time in epoch milliseconds; the line then adds
 * lateness_p50_ms, lateness_p99_ms and lateness_max_ms, where lateness is
 * the wall clock when the record became visible here minus its due time
 * (the "due → visible to read_committed" figure of the targets in
 * docs/benchmarks.md), and produced_p50_ms, produced_p99_ms and
 * produced_max_ms, the same for the record's own timestamp minus its due time
 * ("due → produced": when the record was made, before its transaction
 * committed).  Records without the header are counted in no_due=.  --dump FILE
 * writes one line per record with a due time: "PARTITION OFFSET DUE_MS
 * TIMESTAMP_MS VISIBLE_MS" (epoch milliseconds), to see which records were late
 * and together with which.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <unistd.h>

#include "bench.h"

static const char *prog = "consume";

#define MAX_PROPS 64

static void usage(FILE *fp) {
        fprintf(fp,
                "usage: consume -b BOOTSTRAP -t TOPIC --count N [options]\n"
                "\n"
                "  -b, --bootstrap HOSTS     bootstrap.servers\n"
                "  -t, --topic TOPIC         topic to read (all partitions)\n"
                "  -n, --count N             stop after N records (0: at "
                "the end of every partition)\n"
                "      --lateness-header H   header H holds the due time "
                "(epoch ms)\n"
                "      --dump FILE           per record: partition, offset, "
                "due, timestamp, visible\n"
                "      --timeout S           give up after S seconds "
                "(default 300)\n"
                "      --from-end            only records written after the "
                "start\n"
                "  -X KEY=VALUE              extra librdkafka property\n"
                "  -h, --help\n");
}

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static int64_t percentile(const int64_t *v, size_t n, double pct) {
        size_t rank;

        if (!n)
                return 0;
        rank = (size_t)((pct / 100.0) * (double)n + 0.999999);
        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return v[rank - 1];
}

/* Parses a decimal epoch-ms header value; -1 when it is not one. */
static int64_t parse_due(const void *val, size_t size) {
        char buf[32];
        char *end;
        long long v;

        if (!val || size == 0 || size >= sizeof(buf))
                return -1;
        memcpy(buf, val, size);
        buf[size] = '\0';
        v = strtoll(buf, &end, 10);
        return *end ? -1 : (int64_t)v;
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"topic", required_argument, NULL, 't'},
            {"count", required_argument, NULL, 'n'},
            {"lateness-header", required_argument, NULL, 'L'},
            {"timeout", required_argument, NULL, 'T'},
            {"dump", required_argument, NULL, 'D'},
            {"from-end", no_argument, NULL, 'E'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *topic = NULL, *lhdr = NULL;
        const char *props[MAX_PROPS];
        int nprops = 0, opt, parts, eofs = 0, from_end = 0;
        int64_t count = -1, timeout_s = 300, got = 0, no_due = 0;
        int64_t t_start = sl_mono_us(), t_first = 0, t_last = 0, deadline;
        int64_t *late = NULL, *made = NULL;
        size_t nlate = 0, late_cap = 0;
        bool *at_eof;
        FILE *dump = NULL;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_topic_partition_list_t *asg;
        rd_kafka_resp_err_t err;
        rd_kafka_t *rk;
        char errstr[512], group[64];

        while ((opt = getopt_long(argc, argv, "b:t:n:X:h", longopts, NULL)) !=
               -1) {
                switch (opt) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 't':
                        topic = optarg;
                        break;
                case 'n':
                        count = bench_parse_int(prog, "--count", optarg, 0,
                                                INT64_MAX);
                        break;
                case 'L':
                        lhdr = optarg;
                        break;
                case 'E':
                        from_end = 1;
                        break;
                case 'D':
                        dump = fopen(optarg, "w");
                        if (!dump)
                                bench_die(prog, "%s: %s", optarg,
                                          strerror(errno));
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
        if (optind != argc || !bootstrap || !topic || count < 0) {
                fprintf(stderr, "%s: -b, -t and --count are required\n", prog);
                usage(stderr);
                return BENCH_EXIT_USAGE;
        }
        deadline = t_start + timeout_s * 1000000;

        /* assign() needs no group, but librdkafka wants a group.id for a
         * consumer handle; nothing is ever committed to it. */
        snprintf(group, sizeof(group), "sluice-bench-consume-%d",
                 (int)getpid());
        bench_conf_set(prog, conf, "bootstrap.servers", bootstrap);
        bench_conf_set(prog, conf, "group.id", group);
        bench_conf_set(prog, conf, "client.id", "sluice-bench-consume");
        bench_conf_set(prog, conf, "enable.auto.commit", "false");
        bench_conf_set(prog, conf, "enable.auto.offset.store", "false");
        bench_conf_set(prog, conf, "isolation.level", "read_committed");
        bench_conf_set(prog, conf, "enable.partition.eof",
                       count == 0 ? "true" : "false");
        for (int j = 0; j < nprops; j++)
                bench_conf_set_kv(prog, conf, props[j]);

        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                bench_die(prog, "consumer: %s", errstr);
        rd_kafka_poll_set_consumer(rk);

        parts = bench_wait_topic(prog, rk, topic, 30000);
        at_eof = sl_calloc((size_t)parts, sizeof(*at_eof));
        asg = rd_kafka_topic_partition_list_new(parts);
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(asg, topic, p)->offset =
                    from_end ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
        err = rd_kafka_assign(rk, asg);
        rd_kafka_topic_partition_list_destroy(asg);
        if (err)
                bench_die(prog, "assign: %s", rd_kafka_err2str(err));

        while (count ? got < count : eofs < parts) {
                rd_kafka_message_t *rkm;

                if (sl_mono_us() >= deadline)
                        bench_die(prog,
                                  "deadline: %" PRId64 " records in %" PRId64
                                  " s (wanted %" PRId64 ")",
                                  got, timeout_s, count);
                rkm = rd_kafka_consumer_poll(rk, 100);
                if (!rkm)
                        continue;
                if (rkm->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        if (rkm->partition >= 0 && rkm->partition < parts &&
                            !at_eof[rkm->partition]) {
                                at_eof[rkm->partition] = true;
                                eofs++;
                        }
                } else if (rkm->err) {
                        fprintf(stderr, "%s: %s\n", prog,
                                rd_kafka_message_errstr(rkm));
                } else {
                        t_last = sl_mono_us();
                        if (!t_first)
                                t_first = t_last;
                        if (rkm->partition < parts && at_eof[rkm->partition]) {
                                at_eof[rkm->partition] = false;
                                eofs--;
                        }
                        got++;
                        if (lhdr) {
                                rd_kafka_headers_t *h;
                                const void *val;
                                size_t size;
                                int64_t due = -1;

                                if (!rd_kafka_message_headers(rkm, &h) &&
                                    !rd_kafka_header_get_last(h, lhdr, &val,
                                                              &size))
                                        due = parse_due(val, size);
                                if (due < 0) {
                                        no_due++;
                                } else {
                                        if (nlate == late_cap) {
                                                late_cap = late_cap
                                                               ? late_cap * 2
                                                               : 65536;
                                                late = sl_realloc(
                                                    late,
                                                    late_cap * sizeof(*late));
                                                made = sl_realloc(
                                                    made,
                                                    late_cap * sizeof(*made));
                                        }
                                        int64_t now = sl_now_ms(),
                                                ts = rd_kafka_message_timestamp(
                                                    rkm, NULL);
                                        late[nlate] = now - due;
                                        made[nlate++] = ts - due;
                                        if (dump)
                                                fprintf(dump,
                                                        "%" PRId32 " %" PRId64
                                                        " %" PRId64 " %" PRId64
                                                        " %" PRId64 "\n",
                                                        rkm->partition,
                                                        rkm->offset, due, ts,
                                                        now);
                                }
                        }
                }
                rd_kafka_message_destroy(rkm);
        }

        {
                double secs = bench_seconds(t_first, t_last);
                printf("consume records=%" PRId64 " seconds=%.3f rate=%.0f "
                       "wall=%.3f",
                       got, secs, bench_rate(got, secs),
                       bench_seconds(t_start, t_last ? t_last : sl_mono_us()));
                if (lhdr) {
                        qsort(late, nlate, sizeof(*late), cmp_i64);
                        printf(" lateness_p50_ms=%" PRId64
                               " lateness_p99_ms=%" PRId64
                               " lateness_max_ms=%" PRId64 " no_due=%" PRId64,
                               percentile(late, nlate, 50),
                               percentile(late, nlate, 99),
                               nlate ? late[nlate - 1] : 0, no_due);
                        qsort(made, nlate, sizeof(*made), cmp_i64);
                        printf(" produced_p50_ms=%" PRId64
                               " produced_p99_ms=%" PRId64
                               " produced_max_ms=%" PRId64,
                               percentile(made, nlate, 50),
                               percentile(made, nlate, 99),
                               nlate ? made[nlate - 1] : 0);
                }
                printf("\n");
        }

        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        free(late);
        free(made);
        free(at_eof);
        if (dump && fclose(dump))
                bench_die(prog, "--dump: %s", strerror(errno));
        return 0;
}
