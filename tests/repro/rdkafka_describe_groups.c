/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdkafka_describe_groups.c — librdkafka 2.0.2's admin DescribeConsumerGroups
 * when the group's coordinator cannot take a DescribeGroups request
 * (here: librdkafka's mock cluster with the API made unsupported).
 *
 * In the cluster fault tests (0703, 0704) sluice aborted, while nodes were
 * down, on rd_kafka_enq_once_del_source_return: Assertion
 * `eonce->refcnt > 0' failed.  In 2.0.2, rd_kafka_admin_coord_request()
 * drops the "coordinator response" source of the request's eonce when the
 * request cannot be built, and rd_kafka_admin_common_worker_destroy() drops
 * it again (librdkafka removed the first drop in 2.10, commit 8bf0a679c).
 * Here the first answer comes, the next never does, and rd_kafka_destroy()
 * hangs.  sluice no longer uses DescribeConsumerGroups (txn.c asks the
 * classic DescribeGroups, rd_kafka_list_groups, as groupcheck does).
 *
 *   cc -o /tmp/describe-groups tests/repro/rdkafka_describe_groups.c -lrdkafka
 *   timeout 60 stdbuf -o0 /tmp/describe-groups   # 2.0.2: prints one answer,
 * then hangs
 */
#include <stdio.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int main(void) {
        char e[256];
        const char *groups[] = {"g"};
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        rd_kafka_t *rk;
        rd_kafka_mock_cluster_t *mc;
        rd_kafka_queue_t *q;

        rd_kafka_conf_set(c, "test.mock.num.brokers", "3", e, sizeof(e));
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof(e));
        mc = rd_kafka_handle_mock_cluster(rk);
        rd_kafka_mock_coordinator_set(mc, "group", "g", 1);
        rd_kafka_mock_set_apiversion(mc, 15 /* DescribeGroups */, -1, -1);
        q = rd_kafka_queue_new(rk);
        for (int i = 0; i < 3; i++) {
                rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(
                    rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
                rd_kafka_event_t *ev;
                rd_kafka_AdminOptions_set_request_timeout(o, 2000, e,
                                                          sizeof(e));
                rd_kafka_DescribeConsumerGroups(rk, groups, 1, o, q);
                rd_kafka_AdminOptions_destroy(o);
                ev = rd_kafka_queue_poll(q, 5000);
                printf("answer %d: %s\n", i,
                       ev ? rd_kafka_event_error_string(ev) : "none in 5 s");
                if (ev)
                        rd_kafka_event_destroy(ev);
        }
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        printf("destroyed\n");
        return 0;
}
