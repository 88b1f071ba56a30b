/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.h — helpers shared by the benchmark programs in bench/: fatal
 * errors, number parsing, and librdkafka configuration from -X options.
 *
 * Each bench/NAME.c is its own program (the Makefile builds it into
 * build/bench/NAME), so everything here is `static inline`: a program pulls
 * in what it uses and the rest costs nothing.  These are tools, not the
 * daemon: on any error they print one line to stderr and exit non-zero.
 */
#ifndef SL_BENCH_H
#define SL_BENCH_H

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Exit codes: 0 done, 1 failure (Kafka error, deadline), 2 usage. */
#define BENCH_EXIT_FAIL  1
#define BENCH_EXIT_USAGE 2

static inline void bench_die(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Prints "PROG: message" to stderr and exits with BENCH_EXIT_FAIL. */
static inline void bench_die(const char *prog, const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "%s: ", prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(BENCH_EXIT_FAIL);
}

/*
 * Parses a non-negative decimal integer in [min, max]; exits with a usage
 * error naming the option otherwise.
 */
static inline int64_t bench_parse_int(const char *prog, const char *opt,
                                      const char *s, int64_t min, int64_t max) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max) {
                fprintf(stderr,
                        "%s: %s: expected an integer in [%" PRId64 ", %" PRId64
                        "], got \"%s\"\n",
                        prog, opt, min, max, s);
                exit(BENCH_EXIT_USAGE);
        }
        return (int64_t)v;
}

/*
 * Sets one librdkafka property on conf; exits on an unknown property or a
 * bad value, with librdkafka's explanation.
 */
static inline void bench_conf_set(const char *prog, rd_kafka_conf_t *conf,
                                  const char *name, const char *value) {
        char errstr[512];

        if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
                fprintf(stderr, "%s: %s=%s: %s\n", prog, name, value, errstr);
                exit(BENCH_EXIT_USAGE);
        }
}

/* Applies "key=value" (a -X argument) to conf. */
static inline void bench_conf_set_kv(const char *prog, rd_kafka_conf_t *conf,
                                     const char *kv) {
        const char *eq = strchr(kv, '=');
        char *name;

        if (!eq || eq == kv) {
                fprintf(stderr, "%s: -X %s: expected key=value\n", prog, kv);
                exit(BENCH_EXIT_USAGE);
        }
        name = sl_strndup(kv, (size_t)(eq - kv));
        bench_conf_set(prog, conf, name, eq + 1);
        free(name);
}

/* This process's resident set size in bytes (/proc/self/statm). */
static inline int64_t bench_rss_bytes(const char *prog) {
        FILE *f = fopen("/proc/self/statm", "r");
        long long size, resident;

        if (!f)
                bench_die(prog, "/proc/self/statm: cannot open");
        if (fscanf(f, "%lld %lld", &size, &resident) != 2)
                bench_die(prog, "/proc/self/statm: unexpected format");
        fclose(f);
        return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

/* Seconds between two sl_mono_us() readings. */
static inline double bench_seconds(int64_t t0_us, int64_t t1_us) {
        return (double)(t1_us - t0_us) / 1e6;
}

/* Records per second; 0 when no time passed. */
static inline double bench_rate(int64_t records, double seconds) {
        return seconds > 0 ? (double)records / seconds : 0.0;
}

/*
 * Waits until the broker's metadata shows topic with every partition led
 * and returns the partition count; exits when timeout_ms passes first.
 */
static inline int bench_wait_topic(const char *prog, rd_kafka_t *rk,
                                   const char *topic, int timeout_ms) {
        int64_t deadline = sl_mono_us() + (int64_t)timeout_ms * 1000;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR_NO_ERROR;

        if (!rkt)
                bench_die(prog, "topic %s: %s", topic,
                          rd_kafka_err2str(rd_kafka_last_error()));
        while (sl_mono_us() < deadline) {
                const struct rd_kafka_metadata *md = NULL;
                int parts = -1;

                last = rd_kafka_metadata(rk, 0, rkt, &md, 2000);
                if (!last && md->topic_cnt == 1) {
                        const struct rd_kafka_metadata_topic *t =
                            &md->topics[0];
                        last = t->err;
                        if (!t->err && t->partition_cnt > 0) {
                                parts = t->partition_cnt;
                                for (int i = 0; i < t->partition_cnt; i++)
                                        if (t->partitions[i].err ||
                                            t->partitions[i].leader < 0)
                                                parts = -1;
                        }
                }
                if (md)
                        rd_kafka_metadata_destroy(md);
                if (parts > 0) {
                        rd_kafka_topic_destroy(rkt);
                        return parts;
                }
                rd_kafka_poll(rk, 100);
        }
        bench_die(prog, "topic %s not ready within %d ms (%s)", topic,
                  timeout_ms, rd_kafka_err2str(last));
}

#endif
