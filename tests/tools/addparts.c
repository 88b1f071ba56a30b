/* SPDX-License-Identifier: Apache-2.0 */
/*
 * addparts — what `kafka-topics --alter --topic TOPIC --partitions N` does,
 * for the integration tests (the test broker's jars carry no Kafka CLI):
 * grows TOPIC to N partitions with the Admin API's CreatePartitions.
 *
 *   usage: addparts BOOTSTRAP TOPIC N
 *
 * Exit 0 once the broker accepted the request, 1 with the broker's reason
 * on stderr otherwise (e.g. the topic already has N or more), 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>

#include <librdkafka/rdkafka.h>

#define TIMEOUT_MS 30000

int main(int argc, char **argv) {
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        rd_kafka_queue_t *q;
        rd_kafka_NewPartitions_t *np;
        rd_kafka_AdminOptions_t *opts;
        rd_kafka_event_t *ev;
        const rd_kafka_topic_result_t **res;
        size_t cnt = 0;
        char errstr[512];
        int n, rc = 1;

        if (argc != 4 || (n = atoi(argv[3])) <= 0) {
                fprintf(stderr, "usage: addparts BOOTSTRAP TOPIC N\n");
                return 2;
        }
        conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr,
                              sizeof(errstr)) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "addparts: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 1;
        }
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "addparts: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 1;
        }
        q = rd_kafka_queue_new(rk);
        np = rd_kafka_NewPartitions_new(argv[2], (size_t)n, errstr,
                                        sizeof(errstr));
        if (!np) {
                fprintf(stderr, "addparts: %s\n", errstr);
                goto out;
        }
        opts =
            rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
        rd_kafka_AdminOptions_set_request_timeout(opts, TIMEOUT_MS, errstr,
                                                  sizeof(errstr));
        rd_kafka_AdminOptions_set_operation_timeout(opts, TIMEOUT_MS, errstr,
                                                    sizeof(errstr));
        rd_kafka_CreatePartitions(rk, &np, 1, opts, q);
        rd_kafka_AdminOptions_destroy(opts);
        rd_kafka_NewPartitions_destroy(np);

        ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 5000);
        if (!ev) {
                fprintf(stderr, "addparts: no answer\n");
                goto out;
        }
        if (rd_kafka_event_error(ev)) {
                fprintf(stderr, "addparts: %s\n",
                        rd_kafka_event_error_string(ev));
        } else {
                res = rd_kafka_CreatePartitions_result_topics(
                    rd_kafka_event_CreatePartitions_result(ev), &cnt);
                if (cnt == 1 && !rd_kafka_topic_result_error(res[0]))
                        rc = 0;
                else
                        fprintf(stderr, "addparts: %s: %s\n", argv[2],
                                cnt == 1
                                    ? rd_kafka_topic_result_error_string(res[0])
                                    : "no result");
        }
        rd_kafka_event_destroy(ev);
out:
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return rc;
}
