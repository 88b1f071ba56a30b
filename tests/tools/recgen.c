/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recgen.c — produces records of exact sizes and shapes for the tests of
 * real records (tests/integration/06NN-records-*): keys and values of a
 * given number of bytes, thousands of headers, null keys and values, an
 * explicit partition or a named partitioner.  kcat can do each of these
 * only in part (its producer refuses records over 1,000,000 bytes, and
 * fifty thousand -H arguments is a long command line).
 *
 *   recgen -b BOOTSTRAP -t TOPIC [options]
 *
 *   --key K             the key (default: none, a null key)
 *   --key-bytes N       a key of N bytes: K (or "k") then 'x' up to N
 *   --value V           the value (default: empty)
 *   --value-bytes N     a value of N bytes: V (or "v") then 'y' up to N
 *   --null-value        a null value (a cancel, a removal)
 *   -H NAME=VALUE       one header (repeatable, in order; NAME alone: a
 *                       null value)
 *   --headers N         N more headers "h<i>" = "<i>", after the -H ones
 *   --header-name NAME  the name of the --headers ones (default: h<i>)
 *   -p PARTITION        to this partition (default: the partitioner's)
 *   -X KEY=VALUE        a librdkafka property (partitioner=murmur2_random,
 *                       ...), applied last
 *   --count N           N such records (default 1); with --seq, key and
 *                       value get "-<i>" after the given text
 *   --seq
 *
 * The producer is idempotent, with message.max.bytes at its maximum, so
 * the broker decides what fits.  Each delivered record prints
 * "ok PARTITION OFFSET"; a refused one "err PARTITION CODE MESSAGE".
 * Exits 0 when every record was delivered, 1 when any was refused, 2 on
 * bad usage.  Ends within --timeout-ms (default 30000).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

typedef struct {
        char *name;
        char *value; /* NULL: a null value */
} hdr_t;

static int refused;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err) {
                refused = 1;
                printf("err %d %d %s\n", (int)m->partition, (int)m->err,
                       rd_kafka_err2str(m->err));
        } else {
                printf("ok %d %lld\n", (int)m->partition, (long long)m->offset);
        }
        fflush(stdout);
}

static void usage(void) {
        fprintf(stderr,
                "usage: recgen -b BOOTSTRAP -t TOPIC [--key K] [--key-bytes "
                "N]\n"
                "              [--value V] [--value-bytes N] [--null-value]\n"
                "              [-H NAME=VALUE]... [--headers N] "
                "[--header-name NAME]\n"
                "              [-p PARTITION] [-X KEY=VALUE]... [--count N] "
                "[--seq]\n"
                "              [--timeout-ms MS]\n");
        exit(2);
}

/* text, then fill up to n bytes (n < strlen(text): cut). */
static char *filled(const char *text, size_t n, char fill) {
        char *p = malloc(n + 1);
        size_t tl = strlen(text);
        if (!p)
                exit(2);
        memset(p, fill, n);
        memcpy(p, text, tl < n ? tl : n);
        p[n] = '\0';
        return p;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
            {"key", required_argument, NULL, 'k'},
            {"key-bytes", required_argument, NULL, 'K'},
            {"value", required_argument, NULL, 'v'},
            {"value-bytes", required_argument, NULL, 'V'},
            {"null-value", no_argument, NULL, 'n'},
            {"headers", required_argument, NULL, 'N'},
            {"header-name", required_argument, NULL, 'a'},
            {"count", required_argument, NULL, 'c'},
            {"seq", no_argument, NULL, 's'},
            {"timeout-ms", required_argument, NULL, 'T'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *topic = NULL, *key = NULL, *value = "";
        const char *hname = NULL;
        long long key_bytes = -1, value_bytes = -1, nhdrs = 0, count = 1;
        int null_value = 0, seq = 0, partition = RD_KAFKA_PARTITION_UA;
        int timeout_ms = 30000, hcnt = 0, xcnt = 0, c;
        hdr_t *hv = calloc((size_t)argc, sizeof(*hv));
        char **xv = calloc((size_t)argc, sizeof(*xv));
        char errstr[512];
        rd_kafka_conf_t *kc;
        rd_kafka_t *rk;

        while ((c = getopt_long(argc, argv, "b:t:H:p:X:", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 't':
                        topic = optarg;
                        break;
                case 'k':
                        key = optarg;
                        break;
                case 'K':
                        key_bytes = atoll(optarg);
                        break;
                case 'v':
                        value = optarg;
                        break;
                case 'V':
                        value_bytes = atoll(optarg);
                        break;
                case 'n':
                        null_value = 1;
                        break;
                case 'N':
                        nhdrs = atoll(optarg);
                        break;
                case 'a':
                        hname = optarg;
                        break;
                case 'c':
                        count = atoll(optarg);
                        break;
                case 's':
                        seq = 1;
                        break;
                case 'T':
                        timeout_ms = atoi(optarg);
                        break;
                case 'p':
                        partition = atoi(optarg);
                        break;
                case 'H': {
                        char *eq = strchr(optarg, '=');
                        hv[hcnt].name = optarg;
                        hv[hcnt].value = NULL;
                        if (eq) {
                                *eq = '\0';
                                hv[hcnt].value = eq + 1;
                        }
                        hcnt++;
                        break;
                }
                case 'X':
                        xv[xcnt++] = optarg;
                        break;
                default:
                        usage();
                }
        }
        if (!bootstrap || !topic || optind != argc)
                usage();

        kc = rd_kafka_conf_new();
        if (rd_kafka_conf_set(kc, "bootstrap.servers", bootstrap, errstr,
                              sizeof(errstr)) ||
            rd_kafka_conf_set(kc, "message.max.bytes", "1000000000", errstr,
                              sizeof(errstr)) ||
            rd_kafka_conf_set(kc, "enable.idempotence", "true", errstr,
                              sizeof(errstr))) {
                fprintf(stderr, "recgen: %s\n", errstr);
                return 2;
        }
        for (int i = 0; i < xcnt; i++) {
                char *eq = strchr(xv[i], '=');
                if (!eq)
                        usage();
                *eq = '\0';
                if (rd_kafka_conf_set(kc, xv[i], eq + 1, errstr,
                                      sizeof(errstr))) {
                        fprintf(stderr, "recgen: %s\n", errstr);
                        return 2;
                }
        }
        rd_kafka_conf_set_dr_msg_cb(kc, dr_cb);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr,
                                sizeof(errstr)))) {
                fprintf(stderr, "recgen: %s\n", errstr);
                return 2;
        }

        for (long long i = 0; i < count; i++) {
                char kbuf[256], vbuf[256];
                char *k = NULL, *v = NULL;
                size_t klen = 0, vlen = 0;
                rd_kafka_headers_t *hdrs = NULL;
                rd_kafka_resp_err_t err;

                if (key || key_bytes >= 0) {
                        snprintf(kbuf, sizeof(kbuf), "%s", key ? key : "k");
                        if (seq)
                                snprintf(kbuf + strlen(kbuf),
                                         sizeof(kbuf) - strlen(kbuf), "-%lld",
                                         i);
                        k = key_bytes >= 0
                                ? filled(kbuf, (size_t)key_bytes, 'x')
                                : strdup(kbuf);
                        klen = strlen(k);
                }
                if (!null_value) {
                        snprintf(vbuf, sizeof(vbuf), "%s",
                                 value_bytes >= 0 && !*value ? "v" : value);
                        if (seq)
                                snprintf(vbuf + strlen(vbuf),
                                         sizeof(vbuf) - strlen(vbuf), "-%lld",
                                         i);
                        v = value_bytes >= 0
                                ? filled(vbuf, (size_t)value_bytes, 'y')
                                : strdup(vbuf);
                        vlen = strlen(v);
                }
                if (hcnt || nhdrs) {
                        hdrs = rd_kafka_headers_new((size_t)(hcnt + nhdrs));
                        for (int j = 0; j < hcnt; j++)
                                rd_kafka_header_add(hdrs, hv[j].name, -1,
                                                    hv[j].value, -1);
                        for (long long j = 0; j < nhdrs; j++) {
                                char n[64], hvv[32];
                                snprintf(n, sizeof(n), "h%lld", j);
                                snprintf(hvv, sizeof(hvv), "%lld", j);
                                rd_kafka_header_add(hdrs, hname ? hname : n, -1,
                                                    hvv, -1);
                        }
                }
                for (;;) {
                        err = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC(topic),
                            RD_KAFKA_V_PARTITION(partition),
                            RD_KAFKA_V_KEY(k, klen), RD_KAFKA_V_VALUE(v, vlen),
                            RD_KAFKA_V_HEADERS(hdrs),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_END);
                        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                break;
                        rd_kafka_poll(rk, 100);
                }
                if (err) {
                        if (hdrs)
                                rd_kafka_headers_destroy(hdrs);
                        refused = 1;
                        printf("err %d %d %s\n", partition, (int)err,
                               rd_kafka_err2str(err));
                }
                free(k);
                free(v);
                rd_kafka_poll(rk, 0);
        }
        if (rd_kafka_flush(rk, timeout_ms)) {
                fprintf(stderr,
                        "recgen: %d records not delivered within %d "
                        "ms\n",
                        rd_kafka_outq_len(rk), timeout_ms);
                refused = 1;
        }
        rd_kafka_destroy(rk);
        free(hv);
        free(xv);
        return refused ? 1 : 0;
}
