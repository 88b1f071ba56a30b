/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c — the API's pure parts: bearer tokens, and the route table
 * agrees with api/openapi.yaml.
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
            cmocka_unit_test(test_tokens),
            cmocka_unit_test(test_openapi_routes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
