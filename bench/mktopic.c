/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mktopic.c — creates topics for benchmarks with librdkafka's admin API,
 * so bench/ does not depend on `sluice topics` while that is being written.
 *
 *   mktopic -b BOOTSTRAP -p PARTITIONS [-c key=value ...] NAME...
 *
 * Replication factor 1 (the bench broker is a single node).  It returns
 * once every topic's partitions all have a leader in the metadata, so the
 * next program can produce at once.  An existing topic is an error unless
 * --exists-ok is given.
 */
#include <getopt.h>
#include <stdbool.h>

#include "bench.h"

static const char *prog = "mktopic";

#define MAX_CONFIGS 64

static void usage(FILE *fp) {
        fprintf(fp, "usage: mktopic -b BOOTSTRAP -p PARTITIONS "
                    "[-c key=value ...] [--exists-ok] NAME...\n"
                    "\n"
                    "  -b, --bootstrap HOSTS   bootstrap.servers\n"
                    "  -p, --partitions N      partition count\n"
                    "  -c, --config KEY=VALUE  topic config (repeatable)\n"
                    "      --exists-ok         an existing topic is not an "
                    "error\n"
                    "      --timeout S         deadline (default 30)\n"
                    "  -X KEY=VALUE            extra librdkafka property\n");
}

int main(int argc, char **argv) {
        static const struct option longopts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"partitions", required_argument, NULL, 'p'},
            {"config", required_argument, NULL, 'c'},
            {"exists-ok", no_argument, NULL, 'E'},
            {"timeout", required_argument, NULL, 'T'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *configs[MAX_CONFIGS];
        int nconfigs = 0, parts = 0, timeout_s = 30, opt, ntopics, fails = 0;
        bool exists_ok = false;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_NewTopic_t **nt;
        rd_kafka_AdminOptions_t *aopts;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        const rd_kafka_CreateTopics_result_t *res;
        const rd_kafka_topic_result_t **tres;
        size_t tcnt;
        rd_kafka_t *rk;
        char errstr[512];

        while ((opt = getopt_long(argc, argv, "b:p:c:X:h", longopts, NULL)) !=
               -1) {
                switch (opt) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 'p':
                        parts = (int)bench_parse_int(prog, "--partitions",
                                                     optarg, 1, 100000);
                        break;
                case 'c':
                        if (nconfigs == MAX_CONFIGS || !strchr(optarg, '=')) {
                                fprintf(stderr,
                                        "%s: -c %s: expected key=value (at "
                                        "most %d)\n",
                                        prog, optarg, MAX_CONFIGS);
                                return BENCH_EXIT_USAGE;
                        }
                        configs[nconfigs++] = optarg;
                        break;
                case 'E':
                        exists_ok = true;
                        break;
                case 'T':
                        timeout_s = (int)bench_parse_int(prog, "--timeout",
                                                         optarg, 1, 3600);
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
        ntopics = argc - optind;
        if (!bootstrap || !parts || ntopics < 1) {
                usage(stderr);
                return BENCH_EXIT_USAGE;
        }

        bench_conf_set(prog, conf, "bootstrap.servers", bootstrap);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                bench_die(prog, "%s", errstr);

        nt = sl_calloc((size_t)ntopics, sizeof(*nt));
        for (int i = 0; i < ntopics; i++) {
                nt[i] = rd_kafka_NewTopic_new(argv[optind + i], parts, 1,
                                              errstr, sizeof(errstr));
                if (!nt[i])
                        bench_die(prog, "%s: %s", argv[optind + i], errstr);
                for (int j = 0; j < nconfigs; j++) {
                        const char *eq = strchr(configs[j], '=');
                        char *name =
                            sl_strndup(configs[j], (size_t)(eq - configs[j]));
                        rd_kafka_resp_err_t err =
                            rd_kafka_NewTopic_set_config(nt[i], name, eq + 1);
                        if (err)
                                bench_die(prog, "-c %s: %s", configs[j],
                                          rd_kafka_err2str(err));
                        free(name);
                }
        }

        aopts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        if (rd_kafka_AdminOptions_set_request_timeout(aopts, timeout_s * 1000,
                                                      errstr, sizeof(errstr)) ||
            rd_kafka_AdminOptions_set_operation_timeout(aopts, timeout_s * 1000,
                                                        errstr, sizeof(errstr)))
                bench_die(prog, "admin options: %s", errstr);
        q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, nt, (size_t)ntopics, aopts, q);
        ev = rd_kafka_queue_poll(q, timeout_s * 1000 + 5000);
        if (!ev)
                bench_die(prog, "CreateTopics: no answer in %d s", timeout_s);
        if (rd_kafka_event_error(ev))
                bench_die(prog, "CreateTopics: %s",
                          rd_kafka_event_error_string(ev));
        res = rd_kafka_event_CreateTopics_result(ev);
        tres = rd_kafka_CreateTopics_result_topics(res, &tcnt);
        for (size_t i = 0; i < tcnt; i++) {
                rd_kafka_resp_err_t err = rd_kafka_topic_result_error(tres[i]);
                if (!err || (exists_ok &&
                             err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
                        continue;
                fprintf(stderr, "%s: %s: %s\n", prog,
                        rd_kafka_topic_result_name(tres[i]),
                        rd_kafka_topic_result_error_string(tres[i]));
                fails++;
        }
        rd_kafka_event_destroy(ev);
        if (fails)
                return BENCH_EXIT_FAIL;

        for (int i = 0; i < ntopics; i++)
                bench_wait_topic(prog, rk, argv[optind + i], timeout_s * 1000);

        rd_kafka_NewTopic_destroy_array(nt, (size_t)ntopics);
        free(nt);
        rd_kafka_AdminOptions_destroy(aopts);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return 0;
}
