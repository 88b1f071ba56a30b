/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbchangelog.c — writes a debounce changelog for rebuild benchmarks:
 * COUNT records spread over the topic's partitions (record i to partition
 * i mod P, i counted from --first), of which --tombstones percent are
 * tombstones and the rest sluice.v1.DebounceItem values, as op_debounce.c
 * writes them:
 *
 *   key    "g<i mod GROUPS>" 0x00 "i<i>"
 *   value  DebounceItem{payload: --size bytes, first_seen_ms, last_update_ms,
 *          seq: i} or null (a tombstone of an item flushed earlier)
 *
 * Live items are records i with i mod 100 >= tombstones (so 10% of every
 * hundred records are live at --tombstones 90), first seen now: a rebuild
 * restores them as open groups that flush after idle.  An idempotent
 * producer; waits for every delivery and prints
 *
 *   dbchangelog records=1000000 live=100000 seconds=2.1 rate=476190
 */
#include <getopt.h>

#include "bench.h"
#include "sluice.pb-c.h"

static const char *prog = "dbchangelog";
static int64_t delivered, failed;

static void usage(FILE *fp) {
        fprintf(fp,
                "usage: %s -b BOOTSTRAP -t TOPIC -n COUNT [options]\n"
                "  --tombstones PCT   percent of tombstones (default 90)\n"
                "  --groups G         group keys g0..g(G-1) (default 10000)\n"
                "  --first I          number the records from I (default 0):\n"
                "                     a later run with fresh keys\n"
                "  -s, --size B       payload bytes of live items (default "
                "100)\n"
                "  -X key=value       librdkafka property\n"
                "  --timeout S        give up after S seconds (default 300)\n",
                prog);
}

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err) {
                if (!failed++)
                        fprintf(stderr, "%s: delivery failed: %s\n", prog,
                                rd_kafka_err2str(m->err));
        } else {
                delivered++;
        }
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"topic", required_argument, NULL, 't'},
            {"count", required_argument, NULL, 'n'},
            {"size", required_argument, NULL, 's'},
            {"tombstones", required_argument, NULL, 'D'},
            {"groups", required_argument, NULL, 'g'},
            {"first", required_argument, NULL, 'f'},
            {"timeout", required_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *topic = NULL;
        int64_t count = -1, size = 100, dead = 90, groups = 10000, first = 0;
        int64_t timeout_s = 300, live = 0, t0, deadline;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        char errstr[512], key[64];
        uint8_t *payload, *packed;
        int parts, opt;

        while ((opt = getopt_long(argc, argv, "b:t:n:s:X:h", longopts, NULL)) !=
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
                case 's':
                        size = bench_parse_int(prog, "--size", optarg, 0,
                                               1024 * 1024);
                        break;
                case 'D':
                        dead = bench_parse_int(prog, "--tombstones", optarg, 0,
                                               100);
                        break;
                case 'g':
                        groups = bench_parse_int(prog, "--groups", optarg, 1,
                                                 INT64_MAX);
                        break;
                case 'f':
                        first = bench_parse_int(prog, "--first", optarg, 0,
                                                INT64_MAX / 2);
                        break;
                case 'T':
                        timeout_s = bench_parse_int(prog, "--timeout", optarg,
                                                    1, 86400);
                        break;
                case 'X':
                        bench_conf_set_kv(prog, conf, optarg);
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
                usage(stderr);
                return BENCH_EXIT_USAGE;
        }
        bench_conf_set(prog, conf, "bootstrap.servers", bootstrap);
        bench_conf_set(prog, conf, "enable.idempotence", "true");
        bench_conf_set(prog, conf, "linger.ms", "5");
        bench_conf_set(prog, conf, "batch.size", "1000000");
        bench_conf_set(prog, conf, "queue.buffering.max.messages", "1000000");
        bench_conf_set(prog, conf, "queue.buffering.max.kbytes", "1048576");
        rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                bench_die(prog, "producer: %s", errstr);
        parts = bench_wait_topic(prog, rk, topic, 30000);
        deadline = sl_mono_us() + timeout_s * 1000000;

        payload = sl_malloc((size_t)size + 1);
        memset(payload, 'p', (size_t)size);
        packed = sl_malloc((size_t)size + 128);
        t0 = sl_mono_us();
        for (int64_t i = first; i < first + count; i++) {
                Sluice__V1__DebounceItem it = SLUICE__V1__DEBOUNCE_ITEM__INIT;
                int klen = snprintf(key, sizeof(key), "g%" PRId64 "%ci%" PRId64,
                                    i % groups, '\0', i);
                int is_live = i % 100 >= dead;
                size_t plen = 0;
                rd_kafka_resp_err_t err;

                if (is_live) {
                        it.payload.data = payload;
                        it.payload.len = (size_t)size;
                        it.first_seen_ms = it.last_update_ms =
                            it.group_opened_ms = sl_now_ms();
                        it.seq = i;
                        plen = sluice__v1__debounce_item__pack(&it, packed);
                        live++;
                }
                for (;;) {
                        err = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC(topic),
                            RD_KAFKA_V_PARTITION((int32_t)(i % parts)),
                            RD_KAFKA_V_KEY(key, (size_t)klen),
                            RD_KAFKA_V_VALUE(is_live ? packed : NULL, plen),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_END);
                        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                break;
                        rd_kafka_poll(rk, 10);
                }
                if (err)
                        bench_die(prog, "produce: %s", rd_kafka_err2str(err));
                rd_kafka_poll(rk, 0);
                if (sl_mono_us() > deadline)
                        bench_die(prog, "deadline of %" PRId64 " s passed",
                                  timeout_s);
        }
        while (delivered + failed < count) {
                rd_kafka_poll(rk, 100);
                if (sl_mono_us() > deadline)
                        bench_die(prog, "deadline of %" PRId64 " s passed",
                                  timeout_s);
        }
        if (failed)
                bench_die(prog, "%" PRId64 " records not delivered", failed);
        {
                double secs = (double)(sl_mono_us() - t0) / 1e6;
                printf("dbchangelog records=%" PRId64 " live=%" PRId64
                       " seconds=%.2f rate=%.0f\n",
                       count, live, secs, secs > 0 ? (double)count / secs : 0);
        }
        free(payload);
        free(packed);
        rd_kafka_destroy(rk);
        return 0;
}
