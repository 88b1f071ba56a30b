/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_partitioner.c — the partitioners agree with Kafka's Java client and
 * with librdkafka, so the API writes a key where producers do and a record
 * is rerouted only when its producer used another partitioner.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "partitioner.h"

/* Kafka's UtilsTest.testMurmur2 vectors. */
static void test_murmur2_java(void **state) {
        static const struct {
                const char *s;
                int32_t h;
        } v[] = {
            {"21", -973932308},
            {"foobar", -790332482},
            {"a-little-bit-long-string", -985981536},
            {"a-little-bit-longer-string", -1486304829},
            {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
            {"abc", 479470107},
        };
        (void)state;
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
                assert_int_equal(sl_partitioner_murmur2(v[i].s, strlen(v[i].s)),
                                 v[i].h);
}

/* The partition of many keys, of every length 0..64 and every partition
 * count 1..64, is librdkafka's (murmur2_random and consistent_random for
 * non-empty keys: what kcat -X partitioner=... uses). */
static void test_partition_librdkafka(void **state) {
        char key[65];
        unsigned seed = 12345;
        (void)state;
        for (int n = 0; n < 20000; n++) {
                size_t len = (size_t)(n % 65);
                int cnt = 1 + n % 64;
                for (size_t i = 0; i < len; i++)
                        key[i] = (char)(rand_r(&seed) & 0xff);
                if (len) {
                        assert_int_equal(
                            sl_partitioner_partition(SL_PARTITIONER_MURMUR2,
                                                     key, len, cnt),
                            rd_kafka_msg_partitioner_murmur2(NULL, key, len,
                                                             cnt, NULL, NULL));
                        assert_int_equal(
                            sl_partitioner_partition(SL_PARTITIONER_CRC32, key,
                                                     len, cnt),
                            rd_kafka_msg_partitioner_consistent(
                                NULL, key, len, cnt, NULL, NULL));
                }
        }
        /* The standard CRC-32 check value. */
        assert_int_equal(sl_partitioner_crc32("123456789", 9), 0xcbf43926U);
        assert_int_equal(
            sl_partitioner_partition(SL_PARTITIONER_MURMUR2, "k", 1, 0), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_murmur2_java),
            cmocka_unit_test(test_partition_librdkafka),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
