/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c — fills a topic with N records as fast as the broker takes them,
 * for benchmarks (kcat is too slow for a million records with per-record
 * headers).
 *
 * An idempotent producer (acks=all, no duplicates on retry) with a 5 ms
 * linger and large batches.  Record i has:
 *
 *   key      "k<i>", or "k<i mod K>" with --keys K (a key space of size K);
 *            --key-run D gives D records in a row the same key ("k<i/D>",
 *            "k<(i/D) mod K>"); --key-len L zero-pads the number so every
 *            key is L bytes ("k000000000000042" for L = 16)
 *   value    --size bytes: "v<i>" padded with '.'; --null-value for none;
 *            --value-pattern pads with printable pseudo-random text that
 *            depends on i alone (pattern_fill), so that a checker can
 *            recompute record i's value byte for byte
 *   headers  each -H name=value, plus --header-seq NAME = "<i>" (decimal),
 *            plus --random-at NAME=MIN..MAX = the wall clock when record i
 *            is produced plus a delay drawn uniformly from [MIN, MAX]
 *            (durations as sluice reads them: 1h, 7d), in epoch ms (a
 *            sluice-at whose due order is unrelated to the key order; the
 *            draws come from a fixed seed, so every run draws the same);
 *            with --near K=MIN..MAX every K-th record (i mod K = 0) draws
 *            from [MIN, MAX] counted from the load's start instead, so
 *            those fall due in one window whatever the load's pace;
 *            --at-log FILE writes "<key> <value>" of that header for
 *            every record
 *   partition  i mod P with --partitioner rr (the default; (i/D) mod P
 *            with --key-run D, so a run stays in one partition), else chosen by
 *            librdkafka's partitioner of that name (murmur2_random is
 *            Java's, consistent_random kcat's), from the key
 *
 * With --rate N the records are produced at a steady N per second (record i
 * is handed to librdkafka at t0 + i/N; the producer is polled while
 * waiting), for benchmarks of lateness under a constant load; without it,
 * as fast as the broker takes them.
 *
 * It waits for every delivery report and prints one line:
 *
 *   load records=1000000 seconds=1.52 rate=657894
 *
 * timed from the first produce call to the last delivery.  Any failed
 * delivery makes the exit code 1.
 */
#include <getopt.h>
#include <stdbool.h>
#include <unistd.h>

#include "bench.h"
#include "parse.h"

static const char *prog = "load";

#define MAX_HEADERS 32
#define MAX_PROPS   64

typedef struct hdr_s {
        char *name;
        char *value;
} hdr_t;

static int64_t delivered, failed;

/* splitmix64: a fixed, reproducible sequence for --random-at. */
static uint64_t rand_next(uint64_t *state) {
        uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* --random-at NAME=MIN..MAX (or --near K=MIN..MAX, opt says which):
 * sets *name (owned by the caller) and the bounds in ms; exits on a
 * malformed value. */
static void parse_random_at(const char *opt, const char *arg, char **name,
                            int64_t *min_ms, int64_t *max_ms) {
        const char *eq = strchr(arg, '='), *dots;
        char lo[64], errstr[128];

        dots = eq ? strstr(eq + 1, "..") : NULL;
        if (!eq || eq == arg || !dots || (size_t)(dots - eq - 1) >= sizeof(lo))
                bench_die(prog, "%s %s: expected NAME=MIN..MAX", opt, arg);
        memcpy(lo, eq + 1, (size_t)(dots - eq - 1));
        lo[dots - eq - 1] = '\0';
        if (sl_parse_duration_ms(lo, min_ms, errstr, sizeof(errstr)) == -1 ||
            sl_parse_duration_ms(dots + 2, max_ms, errstr, sizeof(errstr)) ==
                -1)
                bench_die(prog, "%s %s: %s", opt, arg, errstr);
        if (*max_ms < *min_ms)
                bench_die(prog, "%s %s: MAX is below MIN", opt, arg);
        *name = sl_strndup(arg, (size_t)(eq - arg));
}

/* --value-pattern: value[j] = pattern[(off + j) mod PATTERN_LEN], off =
 * rand_next() from the state i, mod PATTERN_LEN; then the mark "v<i>"
 * over its start.  pattern[j] = pattern_alphabet[rand_next() mod 64],
 * drawn from the state 0x5eed.  tests/integration/0134-delay-scale-1m.sh
 * recomputes it. */
#define PATTERN_LEN 65536
static const char pattern_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void pattern_fill(const char *pattern, char *value, int64_t size,
                         int64_t i) {
        uint64_t state = (uint64_t)i;
        size_t off = (size_t)(rand_next(&state) % PATTERN_LEN), j = 0;

        while (j < (size_t)size) {
                size_t at = (off + j) % PATTERN_LEN;
                size_t n = SL_MIN((size_t)size - j, PATTERN_LEN - at);
                memcpy(value + j, pattern + at, n);
                j += n;
        }
}

static void usage(FILE *fp) {
        fprintf(fp,
                "usage: load -b BOOTSTRAP -t TOPIC -n COUNT [options]\n"
                "\n"
                "  -b, --bootstrap HOSTS   bootstrap.servers\n"
                "  -t, --topic TOPIC       target topic (must exist)\n"
                "  -n, --count N           records to produce\n"
                "  -s, --size BYTES        value size (default 100)\n"
                "      --null-value        produce null values (tombstones, "
                "cancels)\n"
                "  -k, --keys K            keys k0..k(K-1), cycling "
                "(default: k<i>, all distinct)\n"
                "      --key-run D         D records in a row share a "
                "key\n"
                "      --key-len L         zero-pad keys to L bytes "
                "(k000...042)\n"
                "  -r, --rate N            produce N records per second, "
                "steadily\n"
                "                          (default: as fast as possible)\n"
                "  -H NAME=VALUE           add a fixed header (repeatable)\n"
                "      --header-seq NAME   add header NAME = record index\n"
                "      --random-at NAME=MIN..MAX  add header NAME = now + a "
                "uniform\n"
                "                          random delay in [MIN, MAX] (1h, "
                "7d), epoch ms\n"
                "      --near K=MIN..MAX   every K-th record: the load's "
                "start + a delay\n"
                "                          in [MIN, MAX] instead\n"
                "      --at-log FILE       write \"KEY AT\" of every "
                "--random-at to FILE\n"
                "      --value-pattern     values of pseudo-random text "
                "given by the index\n"
                "  -p, --partitioner NAME  rr (round-robin, default) or a "
                "librdkafka\n"
                "                          partitioner: murmur2_random, "
                "consistent_random, ...\n"
                "      --timeout S         give up after S seconds (default "
                "300)\n"
                "  -X KEY=VALUE            extra librdkafka property\n"
                "  -h, --help\n");
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkm,
                      void *opaque) {
        (void)rk;
        (void)opaque;
        if (rkm->err) {
                if (failed++ == 0)
                        fprintf(stderr, "%s: delivery failed: %s\n", prog,
                                rd_kafka_err2str(rkm->err));
        } else {
                delivered++;
        }
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque) {
        char buf[512];

        (void)opaque;
        if (err != RD_KAFKA_RESP_ERR__FATAL) {
                fprintf(stderr, "%s: %s: %s\n", prog, rd_kafka_err2name(err),
                        reason);
                return;
        }
        err = rd_kafka_fatal_error(rk, buf, sizeof(buf));
        bench_die(prog, "fatal error: %s: %s", rd_kafka_err2name(err), buf);
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"topic", required_argument, NULL, 't'},
            {"count", required_argument, NULL, 'n'},
            {"size", required_argument, NULL, 's'},
            {"null-value", no_argument, NULL, 'N'},
            {"keys", required_argument, NULL, 'k'},
            {"key-len", required_argument, NULL, 'K'},
            {"key-run", required_argument, NULL, 'D'},
            {"rate", required_argument, NULL, 'r'},
            {"header-seq", required_argument, NULL, 'S'},
            {"random-at", required_argument, NULL, 'A'},
            {"near", required_argument, NULL, 'E'},
            {"at-log", required_argument, NULL, 'L'},
            {"value-pattern", no_argument, NULL, 'P'},
            {"partitioner", required_argument, NULL, 'p'},
            {"timeout", required_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *topic = NULL, *partitioner = "rr";
        const char *seq_header = NULL;
        char *at_header = NULL;
        int64_t at_min = 0, at_max = 0;
        uint64_t at_state = 1;
        char *near_k = NULL;
        int64_t near_every = 0, near_min = 0, near_max = 0, t0_ms = 0;
        const char *at_log_path = NULL;
        FILE *at_log = NULL;
        char *pattern = NULL;
        int64_t count = -1, size = 100, keys = 0, timeout_s = 300;
        int64_t key_len = 0, rate = 0, key_run = 1;
        bool null_value = false, rr;
        hdr_t hdrs[MAX_HEADERS];
        int nhdrs = 0;
        const char *props[MAX_PROPS];
        int nprops = 0;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_topic_conf_t *tconf = rd_kafka_topic_conf_new();
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        char errstr[512], key[64], seq[32], at[32];
        char *value;
        int64_t t0, t1, deadline;
        int parts = 0, opt;

        while ((opt = getopt_long(argc, argv, "b:t:n:s:k:r:H:p:X:h", longopts,
                                  NULL)) != -1) {
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
                case 's':
                        size = bench_parse_int(prog, "--size", optarg, 0,
                                               64 * 1024 * 1024);
                        break;
                case 'N':
                        null_value = true;
                        break;
                case 'k':
                        keys = bench_parse_int(prog, "--keys", optarg, 1,
                                               INT64_MAX);
                        break;
                case 'K':
                        key_len =
                            bench_parse_int(prog, "--key-len", optarg, 2, 40);
                        break;
                case 'D':
                        key_run = bench_parse_int(prog, "--key-run", optarg, 1,
                                                  INT64_MAX);
                        break;
                case 'r':
                        rate = bench_parse_int(prog, "--rate", optarg, 1,
                                               100000000);
                        break;
                case 'H': {
                        const char *eq = strchr(optarg, '=');
                        if (!eq || eq == optarg) {
                                fprintf(stderr,
                                        "%s: -H %s: expected name=value\n",
                                        prog, optarg);
                                return BENCH_EXIT_USAGE;
                        }
                        if (nhdrs == MAX_HEADERS) {
                                fprintf(stderr, "%s: at most %d headers\n",
                                        prog, MAX_HEADERS);
                                return BENCH_EXIT_USAGE;
                        }
                        hdrs[nhdrs].name =
                            sl_strndup(optarg, (size_t)(eq - optarg));
                        hdrs[nhdrs++].value = sl_strdup(eq + 1);
                        break;
                }
                case 'S':
                        seq_header = optarg;
                        break;
                case 'A':
                        free(at_header);
                        parse_random_at("--random-at", optarg, &at_header,
                                        &at_min, &at_max);
                        break;
                case 'E':
                        free(near_k);
                        parse_random_at("--near", optarg, &near_k, &near_min,
                                        &near_max);
                        near_every = bench_parse_int(prog, "--near", near_k, 1,
                                                     INT64_MAX);
                        break;
                case 'L':
                        at_log_path = optarg;
                        break;
                case 'P':
                        if (!pattern)
                                pattern = sl_malloc(PATTERN_LEN);
                        break;
                case 'p':
                        partitioner = optarg;
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
                fprintf(stderr, "%s: -b, -t and -n are required\n", prog);
                usage(stderr);
                return BENCH_EXIT_USAGE;
        }
        if ((near_every || at_log_path) && !at_header) {
                fprintf(stderr, "%s: --near and --at-log need --random-at\n",
                        prog);
                return BENCH_EXIT_USAGE;
        }
        if (at_log_path && !(at_log = fopen(at_log_path, "w")))
                bench_die(prog, "--at-log %s: %s", at_log_path,
                          strerror(errno));
        if (pattern) {
                uint64_t state = 0x5eed;
                for (int j = 0; j < PATTERN_LEN; j++)
                        pattern[j] = pattern_alphabet[rand_next(&state) % 64];
        }
        rr = !strcmp(partitioner, "rr");
        if (!rr &&
            rd_kafka_topic_conf_set(tconf, "partitioner", partitioner, errstr,
                                    sizeof(errstr)) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "%s: --partitioner %s: %s\n", prog, partitioner,
                        errstr);
                return BENCH_EXIT_USAGE;
        }

        /* Throughput settings first, so -X can still override them. */
        bench_conf_set(prog, conf, "bootstrap.servers", bootstrap);
        bench_conf_set(prog, conf, "client.id", "sluice-bench-load");
        bench_conf_set(prog, conf, "enable.idempotence", "true");
        bench_conf_set(prog, conf, "linger.ms", "5");
        bench_conf_set(prog, conf, "batch.size", "1000000");
        bench_conf_set(prog, conf, "batch.num.messages", "100000");
        bench_conf_set(prog, conf, "queue.buffering.max.messages", "1000000");
        bench_conf_set(prog, conf, "queue.buffering.max.kbytes", "1048576");
        for (int j = 0; j < nprops; j++)
                bench_conf_set_kv(prog, conf, props[j]);
        rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        rd_kafka_conf_set_error_cb(conf, error_cb);

        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                bench_die(prog, "producer: %s", errstr);
        rkt = rd_kafka_topic_new(rk, topic, tconf);
        if (!rkt)
                bench_die(prog, "topic %s: %s", topic,
                          rd_kafka_err2str(rd_kafka_last_error()));

        deadline = sl_mono_us() + timeout_s * 1000000;
        parts = bench_wait_topic(prog, rk, topic, 30000);

        value = sl_malloc((size_t)size + 1);
        memset(value, '.', (size_t)size);

        t0 = sl_mono_us();
        t0_ms = sl_now_ms();
        for (int64_t i = 0; i < count; i++) {
                rd_kafka_headers_t *h = NULL;
                rd_kafka_resp_err_t err;
                int64_t kno;
                int klen;

                if (rate) {
                        /* Record i is due at t0 + i/rate: wait for it,
                         * serving delivery reports meanwhile. */
                        int64_t at = t0 + i * 1000000 / rate, now;
                        while ((now = sl_mono_us()) < at) {
                                if (now >= deadline)
                                        bench_die(prog,
                                                  "deadline: %" PRId64
                                                  " of %" PRId64 " produced",
                                                  i, count);
                                if (at - now >= 2000)
                                        rd_kafka_poll(
                                            rk, (int)SL_MIN((at - now) / 1000,
                                                            100));
                                else
                                        usleep((useconds_t)(at - now));
                        }
                }
                kno = keys ? (i / key_run) % keys : i / key_run;
                if (key_len)
                        klen = snprintf(key, sizeof(key), "k%0*" PRId64,
                                        (int)key_len - 1, kno);
                else
                        klen = snprintf(key, sizeof(key), "k%" PRId64, kno);
                if (!null_value && size > 0) {
                        /* Mark the value with its index (truncated to fit)
                         * so a human can tell records apart. */
                        char mark[32];
                        int mlen = snprintf(mark, sizeof(mark), "v%" PRId64, i);
                        if (pattern)
                                pattern_fill(pattern, value, size, i);
                        memcpy(value, mark, (size_t)SL_MIN(mlen, size));
                }
                if (nhdrs || seq_header || at_header) {
                        h = rd_kafka_headers_new((size_t)nhdrs + 2);
                        for (int j = 0; j < nhdrs; j++)
                                rd_kafka_header_add(h, hdrs[j].name, -1,
                                                    hdrs[j].value, -1);
                        if (seq_header) {
                                int slen =
                                    snprintf(seq, sizeof(seq), "%" PRId64, i);
                                rd_kafka_header_add(h, seq_header, -1, seq,
                                                    slen);
                        }
                        if (at_header) {
                                bool near = near_every && i % near_every == 0;
                                int64_t lo = near ? near_min : at_min;
                                int64_t hi = near ? near_max : at_max;
                                uint64_t span = (uint64_t)(hi - lo) + 1;
                                int alen = snprintf(
                                    at, sizeof(at), "%" PRId64,
                                    (near ? t0_ms : sl_now_ms()) + lo +
                                        (int64_t)(rand_next(&at_state) % span));
                                rd_kafka_header_add(h, at_header, -1, at, alen);
                                if (at_log)
                                        fprintf(at_log, "%.*s %s\n", klen, key,
                                                at);
                        }
                }

                for (;;) {
                        if (h)
                                err = rd_kafka_producev(
                                    rk, RD_KAFKA_V_RKT(rkt),
                                    RD_KAFKA_V_PARTITION(
                                        rr ? (int32_t)((i / key_run) % parts)
                                           : RD_KAFKA_PARTITION_UA),
                                    RD_KAFKA_V_KEY(key, (size_t)klen),
                                    RD_KAFKA_V_VALUE(null_value ? NULL : value,
                                                     null_value ? 0
                                                                : (size_t)size),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
                        else
                                err = rd_kafka_producev(
                                    rk, RD_KAFKA_V_RKT(rkt),
                                    RD_KAFKA_V_PARTITION(
                                        rr ? (int32_t)((i / key_run) % parts)
                                           : RD_KAFKA_PARTITION_UA),
                                    RD_KAFKA_V_KEY(key, (size_t)klen),
                                    RD_KAFKA_V_VALUE(null_value ? NULL : value,
                                                     null_value ? 0
                                                                : (size_t)size),
                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                    RD_KAFKA_V_END);
                        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                break;
                        if (sl_mono_us() >= deadline)
                                bench_die(prog,
                                          "deadline: %" PRId64 " of %" PRId64
                                          " records delivered",
                                          delivered, count);
                        rd_kafka_poll(rk, 10);
                }
                if (err) {
                        /* On failure the headers are still ours. */
                        if (h)
                                rd_kafka_headers_destroy(h);
                        bench_die(prog, "produce: %s", rd_kafka_err2str(err));
                }
                if ((i & 1023) == 0)
                        rd_kafka_poll(rk, 0);
        }

        while (rd_kafka_outq_len(rk) > 0) {
                if (sl_mono_us() >= deadline)
                        bench_die(prog,
                                  "deadline: %" PRId64 " of %" PRId64
                                  " records delivered",
                                  delivered, count);
                rd_kafka_flush(rk, 100);
        }
        t1 = sl_mono_us();

        if (failed)
                bench_die(prog, "%" PRId64 " of %" PRId64 " deliveries failed",
                          failed, count);
        {
                double secs = bench_seconds(t0, t1);
                printf("load records=%" PRId64 " seconds=%.3f rate=%.0f\n",
                       delivered, secs, bench_rate(delivered, secs));
        }

        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        free(value);
        free(at_header);
        free(near_k);
        free(pattern);
        if (at_log && fclose(at_log) != 0)
                bench_die(prog, "--at-log %s: %s", at_log_path,
                          strerror(errno));
        for (int j = 0; j < nhdrs; j++) {
                free(hdrs[j].name);
                free(hdrs[j].value);
        }
        return 0;
}
