/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txnzombie.c — a stand-in for a previous owner of an input partition
 * whose Kafka transaction is still open while sluice rebuilds that
 * partition (the zombie fault test, tests/integration/04NN-fault-zombie).
 *
 * It plays the part of a sluice instance that read input partition P up to
 * offset O, wrote the state that follows from it to the changelog, and
 * commits both in one transaction, but slowly, in steps the test drives
 * over stdin:
 *
 *   init_transactions, begin_transaction,
 *   send_offsets_to_transaction((INPUT, P) = O, group GROUP)
 *                                          prints "offsets-sent"
 *                                          (--no-offsets: skipped)
 *   ... waits for a line on stdin ...
 *   produce the changelog record (KEY, VALUE) to (CHANGELOG, P), flush
 *                                          prints "produced"
 *   ... waits for a line on stdin ...
 *   commit_transaction                     prints "committed", exits 0
 *
 * Any error, or stdin closing before the transaction is committed, aborts
 * the transaction and exits non-zero with a message on stderr.  The
 * transactional id must differ from sluice's own (app_id-instance_id), or
 * sluice would fence the zombie at once instead of having to wait for it.
 *
 * The value is either the bytes of a file (--value-file) or a delay timer
 * encoded here as sluice.v1.Timer, exactly as op_delay.c writes it
 * (--delay-timer ID,DUE_MS,TARGET,PAYLOAD: ID is the changelog key).
 *
 * Single-threaded; every librdkafka call is bounded by --call-timeout-ms.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <librdkafka/rdkafka.h>

#include "sluice.pb-c.h"

static const char *prog = "txnzombie";

typedef struct zombie_s {
        const char *bootstrap;
        const char *txnid;
        const char *group;
        const char *input;
        const char *changelog;
        int32_t partition;
        int64_t offset;
        char *key;
        size_t keylen;
        uint8_t *value;
        size_t valuelen;
        int txn_timeout_ms;
        int call_timeout_ms;
        int no_offsets; /* --no-offsets: the transaction holds no offsets */
        rd_kafka_resp_err_t dr_err; /* first failed delivery */
} zombie_t;

static void usage(FILE *fp) {
        fprintf(
            fp,
            "usage: txnzombie -b BOOTSTRAP -t TXNID -g GROUP --input TOPIC\n"
            "                 --partition P --offset O --changelog TOPIC\n"
            "                 (--key K --value-file F |\n"
            "                  --delay-timer ID,DUE_MS,TARGET,PAYLOAD)\n"
            "                 [--txn-timeout-ms MS (60000)]\n"
            "                 [--call-timeout-ms MS (30000)] [--no-offsets]\n"
            "\n"
            "Opens a transaction that commits input offset O of (TOPIC, P) "
            "for GROUP,\n"
            "prints offsets-sent; after a line on stdin produces one "
            "changelog record\n"
            "to partition P, prints produced; after another line commits, "
            "prints\n"
            "committed.  Exits 0 once committed, 1 on any error.  With\n"
            "--no-offsets the transaction holds the changelog record only\n"
            "(offsets-sent is printed all the same): a transaction open on\n"
            "the changelog that no offset lookup waits for.\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)))
__attribute__((noreturn));
static void die(const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "%s: ", prog);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

static void say(const char *what) {
        printf("%s\n", what);
        fflush(stdout);
}

static int64_t now_ms(void) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int64_t parse_int(const char *s, const char *what) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end)
                die("%s: not an integer: '%s'", what, s);
        return v;
}

static void read_file(zombie_t *z, const char *path) {
        FILE *f = fopen(path, "rb");
        long n;
        if (!f)
                die("%s: %s", path, strerror(errno));
        if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
            fseek(f, 0, SEEK_SET))
                die("%s: cannot size it", path);
        z->value = malloc(n ? (size_t)n : 1);
        if (!z->value || fread(z->value, 1, (size_t)n, f) != (size_t)n)
                die("%s: read failed", path);
        z->valuelen = (size_t)n;
        fclose(f);
}

/* --delay-timer ID,DUE_MS,TARGET,PAYLOAD: the changelog record op_delay.c
 * writes for a timer scheduled from input offset O-1 (seq), due at DUE_MS,
 * to TARGET through the partitioner, keyed by its id, with PAYLOAD (the
 * rest of the argument, commas included) and no headers. */
static void delay_timer(zombie_t *z, const char *arg) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        char *s = strdup(arg), *id, *due, *target, *payload;

        if (!s)
                die("out of memory");
        id = s;
        if (!(due = strchr(id, ',')))
                die("--delay-timer: want ID,DUE_MS,TARGET,PAYLOAD");
        *due++ = '\0';
        if (!(target = strchr(due, ',')))
                die("--delay-timer: want ID,DUE_MS,TARGET,PAYLOAD");
        *target++ = '\0';
        if (!(payload = strchr(target, ',')))
                die("--delay-timer: want ID,DUE_MS,TARGET,PAYLOAD");
        *payload++ = '\0';
        if (!*id || !*target)
                die("--delay-timer: empty id or target");
        if (z->key && strcmp(z->key, id))
                die("--delay-timer id '%s' differs from --key '%s'", id,
                    z->key);

        tm.due_ms = parse_int(due, "--delay-timer DUE_MS");
        tm.target_topic = target;
        tm.has_target_key = 0;
        tm.target_partition = -1;
        tm.payload.data = (uint8_t *)payload;
        tm.payload.len = strlen(payload);
        tm.seq = z->offset > 0 ? z->offset - 1 : 0;
        tm.created_ms = now_ms();
        z->valuelen = sluice__v1__timer__get_packed_size(&tm);
        if (!(z->value = malloc(z->valuelen ? z->valuelen : 1)))
                die("out of memory");
        sluice__v1__timer__pack(&tm, z->value);
        z->key = strdup(id);
        z->keylen = strlen(id);
        free(s);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        zombie_t *z = opaque;
        (void)rk;
        if (m->err && !z->dr_err) {
                z->dr_err = m->err;
                fprintf(stderr, "%s: delivery failed: %s\n", prog,
                        rd_kafka_err2str(m->err));
        }
}

/* Ends the program on a transactional API error, aborting first when the
 * transaction is still abortable. */
static void check(rd_kafka_t *rk, rd_kafka_error_t *error, const char *what,
                  int timeout_ms) {
        if (!error)
                return;
        fprintf(stderr, "%s: %s: %s%s\n", prog, what,
                rd_kafka_error_string(error),
                rd_kafka_error_is_fatal(error) ? " (fatal)" : "");
        if (rd_kafka_error_txn_requires_abort(error)) {
                rd_kafka_error_t *e2 =
                    rd_kafka_abort_transaction(rk, timeout_ms);
                if (e2) {
                        fprintf(stderr, "%s: abort_transaction: %s\n", prog,
                                rd_kafka_error_string(e2));
                        rd_kafka_error_destroy(e2);
                }
        }
        rd_kafka_error_destroy(error);
        exit(1);
}

/* Waits for the test's go-ahead: one line on stdin.  EOF aborts. */
static void wait_line(rd_kafka_t *rk, const zombie_t *z, const char *before) {
        char line[256];
        if (fgets(line, sizeof(line), stdin))
                return;
        fprintf(stderr, "%s: stdin closed before %s; aborting\n", prog, before);
        rd_kafka_error_t *e =
            rd_kafka_abort_transaction(rk, z->call_timeout_ms);
        if (e)
                rd_kafka_error_destroy(e);
        exit(1);
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
        char errstr[512];
        if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK)
                die("%s=%s: %s", k, v, errstr);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"txnid", required_argument, NULL, 't'},
            {"group", required_argument, NULL, 'g'},
            {"input", required_argument, NULL, 'i'},
            {"partition", required_argument, NULL, 'p'},
            {"offset", required_argument, NULL, 'o'},
            {"changelog", required_argument, NULL, 'c'},
            {"key", required_argument, NULL, 'k'},
            {"value-file", required_argument, NULL, 'f'},
            {"delay-timer", required_argument, NULL, 'd'},
            {"txn-timeout-ms", required_argument, NULL, 'T'},
            {"call-timeout-ms", required_argument, NULL, 'C'},
            {"no-offsets", no_argument, NULL, 'N'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        zombie_t z = {.partition = -1,
                      .offset = -1,
                      .txn_timeout_ms = 60000,
                      .call_timeout_ms = 30000};
        const char *value_file = NULL, *timer = NULL;
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *offsets;
        rd_kafka_consumer_group_metadata_t *cgmd;
        rd_kafka_resp_err_t err;
        char errstr[512], buf[32];
        int c;

        while ((c = getopt_long(argc, argv, "b:t:g:h", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        z.bootstrap = optarg;
                        break;
                case 't':
                        z.txnid = optarg;
                        break;
                case 'g':
                        z.group = optarg;
                        break;
                case 'i':
                        z.input = optarg;
                        break;
                case 'p':
                        z.partition = (int32_t)parse_int(optarg, "--partition");
                        break;
                case 'o':
                        z.offset = parse_int(optarg, "--offset");
                        break;
                case 'c':
                        z.changelog = optarg;
                        break;
                case 'k':
                        z.key = optarg;
                        z.keylen = strlen(optarg);
                        break;
                case 'f':
                        value_file = optarg;
                        break;
                case 'd':
                        timer = optarg;
                        break;
                case 'T':
                        z.txn_timeout_ms =
                            (int)parse_int(optarg, "--txn-timeout-ms");
                        break;
                case 'C':
                        z.call_timeout_ms =
                            (int)parse_int(optarg, "--call-timeout-ms");
                        break;
                case 'N':
                        z.no_offsets = 1;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc || !z.bootstrap || !z.txnid || !z.group ||
            !z.input || !z.changelog || z.partition < 0 || z.offset < 0 ||
            (!value_file == !timer) || (value_file && !z.key)) {
                usage(stderr);
                return 2;
        }
        if (value_file)
                read_file(&z, value_file);
        else
                delay_timer(&z, timer);

        conf = rd_kafka_conf_new();
        set(conf, "bootstrap.servers", z.bootstrap);
        set(conf, "transactional.id", z.txnid);
        snprintf(buf, sizeof(buf), "%d", z.txn_timeout_ms);
        set(conf, "transaction.timeout.ms", buf);
        set(conf, "client.id", "txnzombie");
        set(conf, "linger.ms", "0");
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
        rd_kafka_conf_set_opaque(conf, &z);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                                sizeof(errstr))))
                die("rd_kafka_new: %s", errstr);

        check(rk, rd_kafka_init_transactions(rk, z.call_timeout_ms),
              "init_transactions", z.call_timeout_ms);
        check(rk, rd_kafka_begin_transaction(rk), "begin_transaction",
              z.call_timeout_ms);

        if (!z.no_offsets) {
                offsets = rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(offsets, z.input, z.partition)
                    ->offset = z.offset;
                cgmd = rd_kafka_consumer_group_metadata_new(z.group);
                check(rk,
                      rd_kafka_send_offsets_to_transaction(rk, offsets, cgmd,
                                                           z.call_timeout_ms),
                      "send_offsets_to_transaction", z.call_timeout_ms);
                rd_kafka_consumer_group_metadata_destroy(cgmd);
                rd_kafka_topic_partition_list_destroy(offsets);
        }
        say("offsets-sent");

        wait_line(rk, &z, "the changelog record");
        err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(z.changelog),
            RD_KAFKA_V_PARTITION(z.partition), RD_KAFKA_V_KEY(z.key, z.keylen),
            RD_KAFKA_V_VALUE(z.value, z.valuelen),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err) {
                fprintf(stderr, "%s: produce: %s\n", prog,
                        rd_kafka_err2str(err));
                check(rk, rd_kafka_abort_transaction(rk, z.call_timeout_ms),
                      "abort_transaction", z.call_timeout_ms);
                return 1;
        }
        err = rd_kafka_flush(rk, z.call_timeout_ms);
        if (err || z.dr_err) {
                fprintf(stderr, "%s: flush: %s\n", prog,
                        rd_kafka_err2str(err ? err : z.dr_err));
                check(rk, rd_kafka_abort_transaction(rk, z.call_timeout_ms),
                      "abort_transaction", z.call_timeout_ms);
                return 1;
        }
        say("produced");

        wait_line(rk, &z, "the commit");
        check(rk, rd_kafka_commit_transaction(rk, z.call_timeout_ms),
              "commit_transaction", z.call_timeout_ms);
        say("committed");

        rd_kafka_destroy(rk);
        free(z.value);
        if (timer)
                free(z.key);
        return 0;
}
