/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload_fetch.c — how fast single records can be read back from one
 * Kafka partition by offset: the fetch path of timers whose payloads stay
 * in Kafka (issue 49).
 *
 *   build/bench/payload_fetch -b BOOTSTRAP -t TOPIC [options]
 *
 * Picks READS distinct offsets at random in partition 0 of TOPIC (between
 * its low and high watermark) and reads the record at each with one
 * consumer, in one of two ways:
 *
 *   random   in random order: a seek to each offset, then records are
 *            consumed until that offset arrives (what follows in the same
 *            fetch is thrown away)
 *   sorted   in offset order, as a prefetcher that sorts what it needs
 *            does: it reads on from where it is while the next wanted
 *            offset is at most GAP records ahead, and seeks past bigger
 *            gaps
 *
 * Prints one line per way: reads/s, latency p50/p99/max of the reads (seek
 * to record), the records and bytes consumed per wanted record (the read
 * amplification) and the seeks made.  The consumer's fetch sizes are
 * librdkafka properties (-X max.partition.fetch.bytes=..., fetch.max.bytes,
 * queued.max.messages.kbytes); the defaults here are small, because a read
 * that wants one record should not pull a megabyte.  Asserts nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "bench.h"
#include "util.h"

static const char *prog = "payload_fetch";

typedef struct {
        int64_t reads, consumed, bytes, seeks;
        int64_t *lat_us;
        double seconds;
} result_t;

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static void seek_to(rd_kafka_t *rk, const char *topic, int64_t off) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_error_t *e;
        rd_kafka_topic_partition_list_add(l, topic, 0)->offset = off;
        if ((e = rd_kafka_seek_partitions(rk, l, 5000)))
                bench_die(prog, "seek %" PRId64 ": %s", off,
                          rd_kafka_error_string(e));
        rd_kafka_topic_partition_list_destroy(l);
}

/* Consumes until the record at want arrives; counts what passed by.
 * Returns the offset after it. */
static int64_t read_until(rd_kafka_t *rk, int64_t want, result_t *r) {
        int64_t deadline = sl_mono_us() + 30 * 1000000LL;
        while (sl_mono_us() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                int64_t off;
                if (!m)
                        continue;
                if (m->err) {
                        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                fprintf(stderr, "%s: %s\n", prog,
                                        rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        continue;
                }
                off = m->offset;
                r->consumed++;
                r->bytes += (int64_t)(m->len + m->key_len);
                rd_kafka_message_destroy(m);
                if (off == want)
                        return off + 1;
                if (off > want)
                        bench_die(prog,
                                  "offset %" PRId64 " came before %" PRId64,
                                  off, want);
        }
        bench_die(prog, "offset %" PRId64 " did not come in 30 s", want);
        return -1;
}

static void run(rd_kafka_t *rk, const char *topic, int64_t *offs, int64_t n,
                int sorted, int64_t gap, result_t *r) {
        int64_t t0 = sl_mono_us(), pos = -1;

        memset(r, 0, sizeof(*r));
        r->lat_us = sl_calloc((size_t)n, sizeof(int64_t));
        for (int64_t i = 0; i < n; i++) {
                int64_t s = sl_mono_us();
                if (!sorted || pos < 0 || offs[i] < pos ||
                    offs[i] - pos > gap) {
                        seek_to(rk, topic, offs[i]);
                        r->seeks++;
                }
                pos = read_until(rk, offs[i], r);
                r->lat_us[i] = sl_mono_us() - s;
                r->reads++;
        }
        r->seconds = bench_seconds(t0, sl_mono_us());
}

static void print(const char *way, result_t *r) {
        qsort(r->lat_us, (size_t)r->reads, sizeof(int64_t), cmp_i64);
        printf("payload_fetch way=%s reads=%" PRId64 " rate=%.0f "
               "lat_p50_ms=%.2f lat_p99_ms=%.2f lat_max_ms=%.2f "
               "records_per_read=%.1f bytes_per_read=%.0f seeks=%" PRId64 "\n",
               way, r->reads, bench_rate(r->reads, r->seconds),
               r->lat_us[r->reads / 2] / 1000.0,
               r->lat_us[r->reads * 99 / 100] / 1000.0,
               r->lat_us[r->reads - 1] / 1000.0,
               (double)r->consumed / (double)r->reads,
               (double)r->bytes / (double)r->reads, r->seeks);
        free(r->lat_us);
}

static void usage(void) {
        fprintf(stderr,
                "usage: %s -b BOOTSTRAP -t TOPIC [-n READS] [--gap G] "
                "[--way random|sorted|both] [-X KEY=VALUE]\n",
                prog);
        exit(BENCH_EXIT_USAGE);
}

int main(int argc, char **argv) {
        const char *bootstrap = NULL, *topic = NULL, *way = "both";
        int64_t reads = 2000, gap = 64, lo, hi, *offs;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_topic_partition_list_t *l;
        char errstr[512];
        rd_kafka_t *rk;
        result_t r;

        bench_conf_set(prog, conf, "group.id", "payload-fetch");
        bench_conf_set(prog, conf, "enable.auto.commit", "false");
        bench_conf_set(prog, conf, "isolation.level", "read_committed");
        bench_conf_set(prog, conf, "enable.partition.eof", "false");
        bench_conf_set(prog, conf, "max.partition.fetch.bytes", "65536");
        bench_conf_set(prog, conf, "fetch.max.bytes", "1048576");
        bench_conf_set(prog, conf, "queued.max.messages.kbytes", "256");
        bench_conf_set(prog, conf, "fetch.wait.max.ms", "10");
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (i + 1 >= argc)
                        usage();
                if (!strcmp(a, "-b"))
                        bootstrap = argv[++i];
                else if (!strcmp(a, "-t"))
                        topic = argv[++i];
                else if (!strcmp(a, "-n"))
                        reads = bench_parse_int(prog, a, argv[++i], 1, 1000000);
                else if (!strcmp(a, "--gap"))
                        gap = bench_parse_int(prog, a, argv[++i], 0, INT64_MAX);
                else if (!strcmp(a, "--way"))
                        way = argv[++i];
                else if (!strcmp(a, "-X"))
                        bench_conf_set_kv(prog, conf, argv[++i]);
                else
                        usage();
        }
        if (!bootstrap || !topic || reads < 1)
                usage();
        bench_conf_set(prog, conf, "bootstrap.servers", bootstrap);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                bench_die(prog, "%s", errstr);
        if (rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi, 10000))
                bench_die(prog, "watermarks of %s [0]", topic);
        if (hi - lo < reads)
                bench_die(prog,
                          "%s [0] holds %" PRId64 " records, fewer "
                          "than %" PRId64 " reads",
                          topic, hi - lo, reads);
        /* Distinct offsets, uniformly at random (a partial shuffle). */
        offs = sl_calloc((size_t)reads, sizeof(*offs));
        srand48(42);
        for (int64_t i = 0; i < reads; i++) {
                int64_t o;
                int dup;
                do {
                        o = lo + (int64_t)(drand48() * (double)(hi - lo));
                        dup = 0;
                        for (int64_t j = 0; j < i && !dup; j++)
                                dup = offs[j] == o;
                } while (dup);
                offs[i] = o;
        }
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, 0)->offset = offs[0];
        if (rd_kafka_assign(rk, l))
                bench_die(prog, "assign");
        rd_kafka_topic_partition_list_destroy(l);
        /* Warm up the connection and the partition's leader. */
        read_until(rk, offs[0], &r);

        if (strcmp(way, "sorted")) {
                run(rk, topic, offs, reads, 0, gap, &r);
                print("random", &r);
        }
        if (strcmp(way, "random")) {
                qsort(offs, (size_t)reads, sizeof(*offs), cmp_i64);
                run(rk, topic, offs, reads, 1, gap, &r);
                print("sorted", &r);
        }
        free(offs);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return 0;
}
