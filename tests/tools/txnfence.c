/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txnfence.c — fences the transactional producer of another process: a
 * producer with the same transactional.id calls init_transactions, which
 * bumps the id's epoch, so the other producer's next request fails with
 * PRODUCER_FENCED (a fatal error).  That is what a restarted instance, or
 * another process wrongly given the same instance_id, does to the one
 * before it.  For test 0410-fault-fenced-in-drain: the fence lands while
 * sluice is inside a produce (the producer's queue full).
 *
 *   txnfence -b BOOTSTRAP -x TRANSACTIONAL_ID [--timeout-ms MS (30000)]
 *
 * Prints "fenced TRANSACTIONAL_ID" and exits 0, or the error and exits 1;
 * bad usage exits 2.  It commits nothing and leaves no transaction open.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <librdkafka/rdkafka.h>

int main(int argc, char **argv) {
        static const struct option opts[] = {
            {"timeout-ms", required_argument, NULL, 'T'}, {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *txnid = NULL;
        int timeout_ms = 30000, c;
        char errstr[512];
        rd_kafka_conf_t *kc;
        rd_kafka_t *rk;
        rd_kafka_error_t *error;

        while ((c = getopt_long(argc, argv, "b:x:", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 'x':
                        txnid = optarg;
                        break;
                case 'T':
                        timeout_ms = atoi(optarg);
                        break;
                default:
                        goto usage;
                }
        }
        if (!bootstrap || !txnid || optind != argc)
                goto usage;
        kc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(kc, "bootstrap.servers", bootstrap, errstr,
                              sizeof(errstr)) ||
            rd_kafka_conf_set(kc, "transactional.id", txnid, errstr,
                              sizeof(errstr))) {
                fprintf(stderr, "txnfence: %s\n", errstr);
                return 2;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr,
                                sizeof(errstr)))) {
                fprintf(stderr, "txnfence: %s\n", errstr);
                return 2;
        }
        error = rd_kafka_init_transactions(rk, timeout_ms);
        if (error) {
                printf("error: %s\n", rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                rd_kafka_destroy(rk);
                return 1;
        }
        printf("fenced %s\n", txnid);
        fflush(stdout);
        rd_kafka_destroy(rk);
        return 0;
usage:
        fprintf(stderr, "usage: txnfence -b BOOTSTRAP -x TRANSACTIONAL_ID "
                        "[--timeout-ms MS]\n");
        return 2;
}
