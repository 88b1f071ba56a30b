/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delrecords.c — deletes the records of one partition below an offset
 * (Kafka's DeleteRecords: the log start offset moves up to it), the way
 * an operator or a retention policy takes records away from under a
 * consumer.  For test 0604-records-gone: a record an input partition waits
 * on (a cap, a lookup) disappears while it waits.
 *
 *   delrecords -b BOOTSTRAP -t TOPIC -p PARTITION -o OFFSET
 *
 * Prints "deleted below OFFSET (low watermark now N)" and exits 0, or
 * prints the error and exits 1; bad usage exits 2.  Ends within 30 s.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <librdkafka/rdkafka.h>

int main(int argc, char **argv) {
        const char *bootstrap = NULL, *topic = NULL;
        int partition = -1, c;
        long long offset = -1;
        char errstr[512];
        rd_kafka_conf_t *kc;
        rd_kafka_t *rk;
        rd_kafka_queue_t *q;
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_DeleteRecords_t *del;
        rd_kafka_event_t *ev;
        const rd_kafka_topic_partition_list_t *res;
        int rc = 1;

        while ((c = getopt(argc, argv, "b:t:p:o:")) != -1) {
                switch (c) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 't':
                        topic = optarg;
                        break;
                case 'p':
                        partition = atoi(optarg);
                        break;
                case 'o':
                        offset = atoll(optarg);
                        break;
                default:
                        goto usage;
                }
        }
        if (!bootstrap || !topic || partition < 0 || offset < 0 ||
            optind != argc)
                goto usage;

        kc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(kc, "bootstrap.servers", bootstrap, errstr,
                              sizeof(errstr))) {
                fprintf(stderr, "delrecords: %s\n", errstr);
                return 2;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr,
                                sizeof(errstr)))) {
                fprintf(stderr, "delrecords: %s\n", errstr);
                return 2;
        }
        q = rd_kafka_queue_new(rk);
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
        del = rd_kafka_DeleteRecords_new(l);
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_DeleteRecords(rk, &del, 1, NULL, q);
        rd_kafka_DeleteRecords_destroy(del);
        ev = rd_kafka_queue_poll(q, 30000);
        if (!ev) {
                fprintf(stderr, "delrecords: no answer within 30 s\n");
        } else if (rd_kafka_event_error(ev)) {
                printf("error: %s\n", rd_kafka_event_error_string(ev));
        } else {
                res = rd_kafka_DeleteRecords_result_offsets(
                    rd_kafka_event_DeleteRecords_result(ev));
                if (!res || res->cnt != 1)
                        printf("error: no result\n");
                else if (res->elems[0].err)
                        printf("error: %s\n",
                               rd_kafka_err2str(res->elems[0].err));
                else {
                        printf("deleted below %lld (low watermark now %lld)\n",
                               offset, (long long)res->elems[0].offset);
                        rc = 0;
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return rc;
usage:
        fprintf(stderr,
                "usage: delrecords -b BOOTSTRAP -t TOPIC -p PARTITION -o "
                "OFFSET\n");
        return 2;
}
