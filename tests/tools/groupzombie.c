/* SPDX-License-Identifier: Apache-2.0 */
/*
 * groupzombie.c — a static group member that vanishes in the middle of a
 * cooperative rebalance (the stale member fault test,
 * tests/integration/0407-fault-stale-member).
 *
 * It stands for a sluice instance whose consumer disappears between the
 * two phases of a cooperative-sticky rebalance: a process killed with
 * SIGKILL at that moment, or clients re-created after a fatal error.  It
 * joins GROUP with group.instance.id INSTANCE and the cooperative-sticky
 * assignor, subscribes to the TOPICs and
 *
 *   on every assignment     incremental_assign()s what it is given and
 *                           prints "assigned N" (N: all it owns now)
 *   on its first revocation prints "revoke N" (N: the partitions it is
 *                           told to give up) and calls _exit(0) at once:
 *                           no unassign, no close, no LeaveGroup, no
 *                           second JoinGroup.  A revocation of partitions
 *                           already lost (the session expired) prints
 *                           "lost N" and exits 3: that is not the
 *                           first phase of a rebalance.
 *
 * The broker keeps the member, and the assignment of phase 1, until its
 * session times out.  A process that joins with the same instance id
 * before then replaces it as a static member of a Stable group.
 *
 * It reads records but commits nothing.  It ends by itself after
 * --max-seconds whatever happened (exit 2), also with _exit(): a close
 * could wait on the group.
 *
 * With --describe it joins nothing: it prints the group as the broker
 * describes it and exits,
 *
 *   group GROUP state STATE members N
 *   member INSTANCE|- MEMBER_ID TOPIC:P,P,... ...|-
 *
 * so that a test can name the partitions no member owns.
 *
 * Single-threaded; stdout is flushed after every line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

static const char *prog = "groupzombie";

static void usage(FILE *fp) {
        fprintf(fp, "usage: groupzombie -b BOOTSTRAP -g GROUP -i INSTANCE_ID\n"
                    "                   -t TOPIC [-t TOPIC ...]\n"
                    "                   [--session-timeout-ms MS (6000)]\n"
                    "                   [--heartbeat-interval-ms MS (1000)]\n"
                    "                   [--max-seconds S (120)]\n"
                    "       groupzombie -b BOOTSTRAP -g GROUP --describe\n"
                    "                   [--max-seconds S (120)]\n"
                    "\n"
                    "Joins GROUP as static member INSTANCE_ID "
                    "(cooperative-sticky),\n"
                    "prints \"assigned N\" after each assignment and, on "
                    "its first\n"
                    "revocation, \"revoke N\" and exits 0 at once, "
                    "without leaving the\n"
                    "group.  Exits 3 when that revocation is of lost "
                    "partitions, 2 after\n"
                    "--max-seconds.  --describe prints the group's members "
                    "and their\n"
                    "partitions.\n");
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

static int64_t now_ms(void) {
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static int parse_int(const char *s, const char *what, long lo, long hi) {
        char *end;
        long v;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < lo || v > hi)
                die("%s: not an integer in [%ld, %ld]: '%s'", what, lo, hi, s);
        return (int)v;
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
        char errstr[512];
        if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK)
                die("%s=%s: %s", k, v, errstr);
}

/* The number of partitions the consumer owns now. */
static int owned(rd_kafka_t *rk) {
        rd_kafka_topic_partition_list_t *parts = NULL;
        int n;
        if (rd_kafka_assignment(rk, &parts) || !parts)
                return -1;
        n = parts->cnt;
        rd_kafka_topic_partition_list_destroy(parts);
        return n;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
        rd_kafka_error_t *error;
        (void)opaque;
        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                if ((error = rd_kafka_incremental_assign(rk, parts)))
                        die("incremental_assign: %s",
                            rd_kafka_error_string(error));
                printf("assigned %d\n", owned(rk));
                fflush(stdout);
                break;
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                /* The point of this program: gone before the revocation
                 * is acknowledged by the rejoin of phase 2. */
                if (rd_kafka_assignment_lost(rk)) {
                        printf("lost %d\n", parts->cnt);
                        fflush(stdout);
                        _exit(3);
                }
                printf("revoke %d\n", parts->cnt);
                fflush(stdout);
                _exit(0);
        default:
                die("rebalance error: %s", rd_kafka_err2str(err));
        }
}

/* Prints one line for the group and one per member (see the top). */
static int describe(rd_kafka_t *rk, const char *group, int timeout_ms) {
        rd_kafka_AdminOptions_t *opts;
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_event_t *ev;
        const rd_kafka_DescribeConsumerGroups_result_t *res;
        const rd_kafka_ConsumerGroupDescription_t **groups;
        const rd_kafka_ConsumerGroupDescription_t *g;
        const rd_kafka_error_t *gerr;
        char errstr[512];
        size_t cnt, members;

        opts = rd_kafka_AdminOptions_new(
            rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
        if (rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, errstr,
                                                      sizeof(errstr)))
                die("request timeout: %s", errstr);
        rd_kafka_DescribeConsumerGroups(rk, &group, 1, opts, q);
        rd_kafka_AdminOptions_destroy(opts);
        if (!(ev = rd_kafka_queue_poll(q, timeout_ms + 1000)))
                die("describe %s: no answer within %d ms", group, timeout_ms);
        if (rd_kafka_event_error(ev))
                die("describe %s: %s", group, rd_kafka_event_error_string(ev));
        res = rd_kafka_event_DescribeConsumerGroups_result(ev);
        if (!res)
                die("describe %s: unexpected event %s", group,
                    rd_kafka_event_name(ev));
        groups = rd_kafka_DescribeConsumerGroups_result_groups(res, &cnt);
        if (cnt != 1)
                die("describe %s: %zu groups in the answer", group, cnt);
        g = groups[0];
        if ((gerr = rd_kafka_ConsumerGroupDescription_error(g)))
                die("describe %s: %s", group, rd_kafka_error_string(gerr));
        members = rd_kafka_ConsumerGroupDescription_member_count(g);
        printf("group %s state %s members %zu\n", group,
               rd_kafka_consumer_group_state_name(
                   rd_kafka_ConsumerGroupDescription_state(g)),
               members);
        for (size_t i = 0; i < members; i++) {
                const rd_kafka_MemberDescription_t *m =
                    rd_kafka_ConsumerGroupDescription_member(g, i);
                const rd_kafka_topic_partition_list_t *parts =
                    rd_kafka_MemberAssignment_partitions(
                        rd_kafka_MemberDescription_assignment(m));
                const char *iid =
                    rd_kafka_MemberDescription_group_instance_id(m);
                printf("member %s %s", iid && *iid ? iid : "-",
                       rd_kafka_MemberDescription_consumer_id(m));
                if (!parts || !parts->cnt)
                        printf(" -");
                /* One TOPIC:P,P,... word per topic, in the broker's order. */
                for (int j = 0; parts && j < parts->cnt; j++) {
                        const rd_kafka_topic_partition_t *tp = &parts->elems[j];
                        if (j && !strcmp(tp->topic, parts->elems[j - 1].topic))
                                printf(",%d", tp->partition);
                        else
                                printf(" %s:%d", tp->topic, tp->partition);
                }
                printf("\n");
        }
        fflush(stdout);
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        return 0;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"group", required_argument, NULL, 'g'},
            {"instance-id", required_argument, NULL, 'i'},
            {"topic", required_argument, NULL, 't'},
            {"session-timeout-ms", required_argument, NULL, 'S'},
            {"heartbeat-interval-ms", required_argument, NULL, 'H'},
            {"max-seconds", required_argument, NULL, 'M'},
            {"describe", no_argument, NULL, 'D'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *bootstrap = NULL, *group = NULL, *instance = NULL;
        int session_ms = 6000, heartbeat_ms = 1000, max_seconds = 120;
        int describe_only = 0, c;
        rd_kafka_topic_partition_list_t *topics =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk;
        rd_kafka_resp_err_t err;
        char errstr[512], buf[32];
        int64_t deadline;

        while ((c = getopt_long(argc, argv, "b:g:i:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        bootstrap = optarg;
                        break;
                case 'g':
                        group = optarg;
                        break;
                case 'i':
                        instance = optarg;
                        break;
                case 't':
                        rd_kafka_topic_partition_list_add(
                            topics, optarg, RD_KAFKA_PARTITION_UA);
                        break;
                case 'S':
                        session_ms = parse_int(optarg, "--session-timeout-ms",
                                               1, 3600000);
                        break;
                case 'H':
                        heartbeat_ms = parse_int(
                            optarg, "--heartbeat-interval-ms", 1, 3600000);
                        break;
                case 'M':
                        max_seconds =
                            parse_int(optarg, "--max-seconds", 1, 86400);
                        break;
                case 'D':
                        describe_only = 1;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind != argc || !bootstrap || !group ||
            (!describe_only && (!instance || !topics->cnt))) {
                usage(stderr);
                return 2;
        }

        conf = rd_kafka_conf_new();
        set(conf, "bootstrap.servers", bootstrap);
        set(conf, "client.id", prog);
        if (describe_only) {
                if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                                        sizeof(errstr))))
                        die("rd_kafka_new: %s", errstr);
                describe(rk, group, max_seconds * 1000);
                rd_kafka_destroy(rk);
                rd_kafka_topic_partition_list_destroy(topics);
                return 0;
        }
        set(conf, "group.id", group);
        set(conf, "group.instance.id", instance);
        set(conf, "partition.assignment.strategy", "cooperative-sticky");
        snprintf(buf, sizeof(buf), "%d", session_ms);
        set(conf, "session.timeout.ms", buf);
        snprintf(buf, sizeof(buf), "%d", heartbeat_ms);
        set(conf, "heartbeat.interval.ms", buf);
        set(conf, "enable.auto.commit", "false");
        set(conf, "auto.offset.reset", "earliest");
        rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
        if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr,
                                sizeof(errstr))))
                die("rd_kafka_new: %s", errstr);
        rd_kafka_poll_set_consumer(rk);
        if ((err = rd_kafka_subscribe(rk, topics)))
                die("subscribe: %s", rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(topics);

        /* The rebalance callback runs from here; it is what ends the
         * program, unless nothing happens in time. */
        deadline = now_ms() + (int64_t)max_seconds * 1000;
        while (now_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        fprintf(stderr, "%s: %s\n", prog,
                                rd_kafka_message_errstr(m));
                rd_kafka_message_destroy(m);
        }
        fprintf(stderr, "%s: no revocation within %d s; giving up\n", prog,
                max_seconds);
        fflush(stderr);
        _exit(2);
}
