/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_groupcheck.c — finding served partitions no member owns, choosing
 * the member that repairs (fewest partitions, then the smallest member id)
 * and the time a gap must last: the CI case of 0401 (a static member back
 * with its phase-1 assignment, its peer with nothing), a group that is
 * rebalancing, partitions beyond the served count, and our member unknown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "groupcheck.h"

#define T0 1000000

static rd_kafka_topic_partition_list_t *parts(const char *topic, const int *ps,
                                              int n) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(n);
        for (int i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(l, topic, ps[i]);
        return l;
}

static const sl_groupcheck_topic_t topics[] = {{"in", 4}, {"other", 2}};

/* 0401: a holds in 2,3 and other 0,1; b holds nothing; in 0,1 are
 * nobody's. */
static void test_stale_phase_one(void **state) {
        const int a_in[] = {2, 3}, a_other[] = {0, 1};
        rd_kafka_topic_partition_list_t *a = parts("in", a_in, 2);
        rd_kafka_topic_partition_list_t *other = parts("other", a_other, 2);
        sl_groupcheck_member_t m[2] = {{.consumer_id = "a-1", .assignment = a},
                                       {.consumer_id = "b-1"}};
        sl_groupcheck_look_t look;
        sl_groupcheck_t gc = {0};
        (void)state;
        for (int i = 0; i < other->cnt; i++)
                rd_kafka_topic_partition_list_add(a, "other",
                                                  other->elems[i].partition);

        assert_int_equal(sl_groupcheck_look(topics, 2, m, 2, "b-1", &look), 2);
        assert_string_equal(look.example, "in [0]");
        assert_int_equal(look.repairer, 1); /* b: nothing to move */
        assert_int_equal(look.mine, 1);
        /* Seen first, then watched until SL_GROUPCHECK_GAP_MS. */
        assert_int_equal(sl_groupcheck_judge(&gc, T0, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(
            sl_groupcheck_judge(&gc, T0 + SL_GROUPCHECK_GAP_MS - 1, 1, &look),
            SL_GROUPCHECK_WATCH);
        assert_int_equal(
            sl_groupcheck_judge(&gc, T0 + SL_GROUPCHECK_GAP_MS, 1, &look),
            SL_GROUPCHECK_REPAIR);
        /* The history starts again after a repair. */
        assert_int_equal(gc.gap_since_ms, 0);

        /* a sees the same gap, but b repairs first; a only after three
         * times as long. */
        assert_int_equal(sl_groupcheck_look(topics, 2, m, 2, "a-1", &look), 2);
        assert_int_equal(look.mine, 0);
        assert_int_equal(sl_groupcheck_judge(&gc, T0, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(
            sl_groupcheck_judge(&gc, T0 + SL_GROUPCHECK_GAP_MS, 1, &look),
            SL_GROUPCHECK_WATCH);
        assert_int_equal(
            sl_groupcheck_judge(&gc, T0 + 3 * SL_GROUPCHECK_GAP_MS, 1, &look),
            SL_GROUPCHECK_REPAIR);
        rd_kafka_topic_partition_list_destroy(a);
        rd_kafka_topic_partition_list_destroy(other);
}

/* Every served partition owned: no gap; a partition beyond the served
 * count (the input grew, parts.h) is not counted. */
static void test_all_owned(void **state) {
        const int a_in[] = {0, 1, 9}, b_in[] = {2, 3}, b_other[] = {0, 1};
        rd_kafka_topic_partition_list_t *a = parts("in", a_in, 3);
        rd_kafka_topic_partition_list_t *b = parts("in", b_in, 2);
        sl_groupcheck_member_t m[3] = {{.consumer_id = "a", .assignment = a},
                                       {.consumer_id = "b", .assignment = b},
                                       {.consumer_id = "c"}};
        sl_groupcheck_look_t look;
        sl_groupcheck_t gc = {.gap_since_ms = T0};
        (void)state;
        for (int i = 0; i < 2; i++)
                rd_kafka_topic_partition_list_add(b, "other", b_other[i]);
        assert_int_equal(sl_groupcheck_look(topics, 2, m, 3, "c", &look), 0);
        assert_int_equal(look.repairer, -1);
        assert_string_equal(look.example, "");
        assert_int_equal(sl_groupcheck_judge(&gc, T0 + 60000, 1, &look),
                         SL_GROUPCHECK_OK);
        assert_int_equal(gc.gap_since_ms, 0);
        rd_kafka_topic_partition_list_destroy(a);
        rd_kafka_topic_partition_list_destroy(b);
}

/* A rebalancing group has gaps by design: each look that is not Stable
 * starts the history again. */
static void test_rebalancing(void **state) {
        sl_groupcheck_member_t m[1] = {{.consumer_id = "a"}};
        sl_groupcheck_look_t look;
        sl_groupcheck_t gc = {0};
        (void)state;
        assert_int_equal(sl_groupcheck_look(topics, 2, m, 1, "a", &look), 6);
        assert_int_equal(sl_groupcheck_judge(&gc, T0, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(sl_groupcheck_judge(&gc, T0 + 10000, 0, &look),
                         SL_GROUPCHECK_OK);
        assert_int_equal(sl_groupcheck_judge(&gc, T0 + 20000, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(sl_groupcheck_judge(&gc, T0 + 30000, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(sl_groupcheck_judge(&gc, T0 + 35000, 1, &look),
                         SL_GROUPCHECK_REPAIR);
}

/* Ties go to the smallest member id; a member that does not know its own
 * id (between two joins), or is not in the group, never repairs. */
static void test_ties_and_strangers(void **state) {
        sl_groupcheck_member_t m[3] = {{.consumer_id = "m-2"},
                                       {.consumer_id = "m-1"},
                                       {.consumer_id = "m-3"}};
        sl_groupcheck_look_t look;
        sl_groupcheck_t gc = {0};
        (void)state;
        sl_groupcheck_look(topics, 1, m, 3, "m-3", &look);
        assert_int_equal(look.repairer, 1);
        assert_int_equal(look.mine, 2);
        sl_groupcheck_look(topics, 1, m, 3, "", &look);
        assert_int_equal(look.mine, -1);
        assert_int_equal(sl_groupcheck_judge(&gc, T0, 1, &look),
                         SL_GROUPCHECK_WATCH);
        assert_int_equal(
            sl_groupcheck_judge(&gc, T0 + 4 * SL_GROUPCHECK_GAP_MS, 1, &look),
            SL_GROUPCHECK_WATCH);
        sl_groupcheck_look(topics, 1, m, 3, NULL, &look);
        assert_int_equal(look.mine, -1);
        /* An empty group: every served partition is a gap, and nobody is
         * there to repair it. */
        assert_int_equal(sl_groupcheck_look(topics, 2, NULL, 0, "x", &look), 6);
        assert_int_equal(look.repairer, -1);
}

/* The assignment bytes DescribeGroups returns: a well-formed one with
 * user data, none at all, and lies about lengths and counts. */
static void test_parse_assignment(void **state) {
        /* version 1; 2 topics: "in" [0, 3], "ab" [7]; 2 bytes of user
         * data. */
        const uint8_t ok[] = {0, 1, 0,   0,   0,   2,                    /* */
                              0, 2, 'i', 'n', 0,   0,  0, 2,             /* */
                              0, 0, 0,   0,   0,   0,  0, 3,             /* */
                              0, 2, 'a', 'b', 0,   0,  0, 1, 0, 0, 0, 7, /* */
                              0, 0, 0,   2,   'u', 'd'};
        const uint8_t lying_count[] = {0,   0,   0, 0,    0,    1,    0, 2,
                                       'i', 'n', 0, 0x7f, 0xff, 0xff, 0, 0};
        const uint8_t long_name[] = {0, 0, 0, 0, 0, 1, 0, 9, 'i', 'n'};
        const uint8_t negative[] = {0, 0, 0, 0, 0,    1,    0,    1,   'x',
                                    0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff};
        rd_kafka_topic_partition_list_t *l;
        (void)state;
        l = sl_groupcheck_parse_assignment(ok, sizeof(ok));
        assert_non_null(l);
        assert_int_equal(l->cnt, 3);
        assert_string_equal(l->elems[0].topic, "in");
        assert_int_equal(l->elems[1].partition, 3);
        assert_string_equal(l->elems[2].topic, "ab");
        assert_int_equal(l->elems[2].partition, 7);
        rd_kafka_topic_partition_list_destroy(l);
        /* A member with nothing assigned may have no bytes at all. */
        l = sl_groupcheck_parse_assignment(NULL, 0);
        assert_non_null(l);
        assert_int_equal(l->cnt, 0);
        rd_kafka_topic_partition_list_destroy(l);
        assert_null(sl_groupcheck_parse_assignment(ok, 5));
        assert_null(sl_groupcheck_parse_assignment(ok, 20));
        assert_null(
            sl_groupcheck_parse_assignment(lying_count, sizeof(lying_count)));
        assert_null(
            sl_groupcheck_parse_assignment(long_name, sizeof(long_name)));
        assert_null(sl_groupcheck_parse_assignment(negative, sizeof(negative)));
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_stale_phase_one),
            cmocka_unit_test(test_all_owned),
            cmocka_unit_test(test_rebalancing),
            cmocka_unit_test(test_ties_and_strangers),
            cmocka_unit_test(test_parse_assignment),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
