/*
 * test_api.c — the API's pure parts: the partitioners agree with Kafka's
 * Java client and with librdkafka (so the API writes where producers do),
 * bearer tokens, and the route table agrees with api/openapi.yaml.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>

#include "api.h"

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
                assert_int_equal(sl_api_murmur2(v[i].s, strlen(v[i].s)),
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
                            sl_api_partition(SL_PARTITIONER_MURMUR2, key, len,
                                             cnt),
                            rd_kafka_msg_partitioner_murmur2(NULL, key, len,
                                                             cnt, NULL, NULL));
                        assert_int_equal(sl_api_partition(SL_PARTITIONER_CRC32,
                                                          key, len, cnt),
                                         rd_kafka_msg_partitioner_consistent(
                                             NULL, key, len, cnt, NULL, NULL));
                }
        }
        /* The standard CRC-32 check value. */
        assert_int_equal(sl_api_crc32("123456789", 9), 0xcbf43926U);
        assert_int_equal(sl_api_partition(SL_PARTITIONER_MURMUR2, "k", 1, 0),
                         -1);
}

static void test_tokens(void **state) {
        char *toks[] = {"s3cret", "other-token"};
        (void)state;
        assert_true(sl_api_token_ok("Bearer s3cret", toks, 2));
        assert_true(sl_api_token_ok("bearer other-token", toks, 2));
        assert_true(sl_api_token_ok("Bearer  s3cret ", toks, 2));
        assert_false(sl_api_token_ok(NULL, toks, 2));
        assert_false(sl_api_token_ok("", toks, 2));
        assert_false(sl_api_token_ok("Bearer ", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cre", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cretX", toks, 2));
        assert_false(sl_api_token_ok("Basic s3cret", toks, 2));
        assert_false(sl_api_token_ok("s3cret", toks, 2));
        assert_false(sl_api_token_ok("Bearer s3cret", toks, 0));
}

/* Every route the server serves is in api/openapi.yaml under the same
 * path and method, and the description has no route the server lacks. */
static void test_openapi_routes(void **state) {
        const char *path = getenv("SLUICE_OPENAPI");
        FILE *f;
        char line[1024], cur[512] = "";
        char seen[64][600];
        int seen_cnt = 0;
        (void)state;

        f = fopen(path ? path : "api/openapi.yaml", "r");
        assert_non_null(f);
        while (fgets(line, sizeof(line), f)) {
                char p[512], m[16];
                if (sscanf(line, "  %511[^: ]:", p) == 1 && line[2] == '/' &&
                    strncmp(line, "   ", 3))
                        snprintf(cur, sizeof(cur), "%s", p);
                else if (line[0] != ' ')
                        cur[0] = '\0';
                else if (*cur && !strncmp(line, "    ", 4) && line[4] != ' ' &&
                         sscanf(line, "    %15[a-z]:", m) == 1 &&
                         (!strcmp(m, "get") || !strcmp(m, "put") ||
                          !strcmp(m, "post") || !strcmp(m, "delete") ||
                          !strcmp(m, "patch"))) {
                        assert_true(seen_cnt < 64);
                        for (char *c = m; *c; c++)
                                *c = (char)(*c - 'a' + 'A');
                        snprintf(seen[seen_cnt++], sizeof(seen[0]), "%s %s", m,
                                 cur);
                }
        }
        fclose(f);
        assert_int_equal(seen_cnt, sl_api_route_cnt());
        for (int i = 0; i < sl_api_route_cnt(); i++) {
                const char *method, *rpath;
                char want[600];
                int found = 0;
                sl_api_route(i, &method, &rpath);
                snprintf(want, sizeof(want), "%s %s", method, rpath);
                for (int j = 0; j < seen_cnt; j++)
                        found |= !strcmp(seen[j], want);
                if (!found)
                        fail_msg("route %s is not in api/openapi.yaml", want);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_murmur2_java),
            cmocka_unit_test(test_partition_librdkafka),
            cmocka_unit_test(test_tokens),
            cmocka_unit_test(test_openapi_routes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
