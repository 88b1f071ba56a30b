/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_topicname.c — legal Kafka topic names and Kafka's own topics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "topicname.h"

static int legal(const char *s) {
        return sl_topicname_illegal(s, strlen(s)) == NULL;
}

static void test_legal(void **state) {
        char longest[SL_TOPICNAME_MAX + 2];
        (void)state;
        assert_true(legal("orders"));
        assert_true(legal("a.b_c-D9"));
        assert_true(legal("..."));
        assert_true(legal("__consumer_offsets"));
        memset(longest, 'x', SL_TOPICNAME_MAX);
        longest[SL_TOPICNAME_MAX] = '\0';
        assert_true(legal(longest));
        longest[SL_TOPICNAME_MAX] = 'x';
        longest[SL_TOPICNAME_MAX + 1] = '\0';
        assert_false(legal(longest));
        assert_false(legal(""));
        assert_false(legal("."));
        assert_false(legal(".."));
        assert_false(legal("a b"));
        assert_false(legal("a/b"));
        assert_false(legal("caf\xc3\xa9"));
        /* The length counts, not a NUL: a name with a NUL inside. */
        assert_non_null(sl_topicname_illegal("a\0b", 3));
        assert_null(sl_topicname_illegal("ab\0", 2));
}

static void test_kafka_internal(void **state) {
        (void)state;
        assert_true(sl_topicname_kafka_internal("__consumer_offsets"));
        assert_true(sl_topicname_kafka_internal("__transaction_state"));
        assert_false(sl_topicname_kafka_internal("_x"));
        assert_false(sl_topicname_kafka_internal("x__"));
        assert_false(sl_topicname_kafka_internal(""));
        assert_false(sl_topicname_kafka_internal(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_legal),
            cmocka_unit_test(test_kafka_internal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
