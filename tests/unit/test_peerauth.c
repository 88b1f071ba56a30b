/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_peerauth.c — the instances' credential: fixed vectors (computed with
 * Python's hmac module, so another implementation can check its own), a
 * request signed, parsed and verified, and refused when any field it
 * covers changes or the key differs; the strict header grammar; answers
 * bound to their request's nonce; and the replay guard (the window, a
 * nonce kept across a generation's turn, the maximum).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "peerauth.h"

static const sl_peerauth_key_t key = {"0123456789abcdef0123", 20};
static const sl_peerauth_key_t other = {"0123456789abcdef0124", 20};
static const char *nonce = "00112233445566778899aabbccddeeff";

static sl_peerauth_what_t what(void) {
        sl_peerauth_what_t w = {"GET",
                                "/v1/pipelines/p/timers/id%201",
                                "10.0.0.2:8080",
                                "10.0.0.1:8080",
                                "",
                                0};
        return w;
}

static void test_vectors(void **state) {
        sl_peerauth_what_t w = what();
        sl_peerauth_answer_t a = {
            nonce, 200, "10.0.0.2:8080", NULL, "{\"id\":\"id 1\"}", 13};
        char hdr[SL_PEERAUTH_HDR_MAX];
        (void)state;

        assert_int_equal(
            sl_peerauth_request_sign(&key, &w, 1767225600000LL, nonce, hdr), 0);
        assert_string_equal(hdr, "v1 ts=1767225600000 "
                                 "nonce=00112233445566778899aabbccddeeff "
                                 "mac=57a2a522f6da70ed04779198c133d3baacc77bc71"
                                 "6b6d2766d637c8d53a8310a");
        assert_int_equal(sl_peerauth_answer_sign(&key, &a, hdr), 0);
        assert_string_equal(hdr, "v1 mac=15d9192d98b197fd5d0fda91295b7a3ea0c77"
                                 "5c8818af249075d3eb918f904e2");
}

static void test_request(void **state) {
        sl_peerauth_what_t w = what(), x;
        sl_peerauth_req_t r;
        char hdr[SL_PEERAUTH_HDR_MAX], why[100];
        (void)state;

        assert_int_equal(sl_peerauth_request_sign(&key, &w, 42, nonce, hdr), 0);
        assert_int_equal(sl_peerauth_request_parse(hdr, &r, why, sizeof(why)),
                         0);
        assert_int_equal(r.ts_ms, 42);
        assert_string_equal(r.nonce, nonce);
        assert_true(sl_peerauth_request_verify(&key, &r, &w));
        assert_false(sl_peerauth_request_verify(&other, &r, &w));
        /* Every field counts. */
        x = w, x.method = "PUT";
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        x = w, x.path = "/v1/pipelines/p/timers/id%202";
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        x = w, x.to = "10.0.0.3:8080";
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        x = w, x.from = NULL;
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        x = w, x.body = "x", x.body_len = 1;
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        /* Fields are length-prefixed: moving a byte between two does not
         * give the same MAC. */
        x = w, x.to = "10.0.0.2:808", x.from = "010.0.0.1:8080";
        assert_false(sl_peerauth_request_verify(&key, &r, &x));
        r.ts_ms = 43;
        assert_false(sl_peerauth_request_verify(&key, &r, &w));
        r.ts_ms = 42;
        r.nonce[0] = '1';
        assert_false(sl_peerauth_request_verify(&key, &r, &w));
        r.nonce[0] = '0';
        r.mac[63] = r.mac[63] == '0' ? '1' : '0';
        assert_false(sl_peerauth_request_verify(&key, &r, &w));
}

static void test_parse(void **state) {
        static const char *const bad[] = {
            NULL,
            "",
            "v2 ts=1 nonce=00112233445566778899aabbccddeeff mac=" /* ... */,
            "v1 ts= nonce=00112233445566778899aabbccddeeff mac=",
            "v1 ts=12345678901234567 nonce=00112233445566778899aabbccddeeff",
            "v1 ts=1 nonce=00112233445566778899AABBCCDDEEFF mac=",
            "v1 ts=1 nonce=00112233445566778899aabbccddeef mac=",
            "v1 ts=1  nonce=00112233445566778899aabbccddeeff mac=",
            "v1 ts=-1 nonce=00112233445566778899aabbccddeeff mac=",
        };
        const char *good = "v1 ts=1 nonce=00112233445566778899aabbccddeeff "
                           "mac=57a2a522f6da70ed04779198c133d3baacc77bc716b6d27"
                           "66d637c8d53a8310a";
        char buf[300], why[100];
        sl_peerauth_req_t r;
        (void)state;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why[0] = '\0';
                assert_int_equal(
                    sl_peerauth_request_parse(bad[i], &r, why, sizeof(why)),
                    -1);
                assert_true(why[0] != '\0');
        }
        assert_int_equal(sl_peerauth_request_parse(good, &r, why, sizeof(why)),
                         0);
        /* Anything after the MAC, a short or long MAC, upper case. */
        snprintf(buf, sizeof(buf), "%s ", good);
        assert_int_equal(sl_peerauth_request_parse(buf, &r, why, sizeof(why)),
                         -1);
        snprintf(buf, sizeof(buf), "%s0", good);
        assert_int_equal(sl_peerauth_request_parse(buf, &r, why, sizeof(why)),
                         -1);
        snprintf(buf, sizeof(buf), "%.*s", (int)strlen(good) - 1, good);
        assert_int_equal(sl_peerauth_request_parse(buf, &r, why, sizeof(why)),
                         -1);
        snprintf(buf, sizeof(buf), "%.*sA", (int)strlen(good) - 1, good);
        assert_int_equal(sl_peerauth_request_parse(buf, &r, why, sizeof(why)),
                         -1);
}

static void test_answer(void **state) {
        sl_peerauth_answer_t a = {nonce,
                                  503,
                                  "10.0.0.2:8080",
                                  "1",
                                  "{\"code\":\"rebuilding\"}",
                                  21},
                             x;
        char hdr[SL_PEERAUTH_HDR_MAX];
        (void)state;

        assert_int_equal(sl_peerauth_answer_sign(&key, &a, hdr), 0);
        assert_true(sl_peerauth_answer_verify(&key, hdr, &a));
        assert_false(sl_peerauth_answer_verify(&other, hdr, &a));
        assert_false(sl_peerauth_answer_verify(&key, NULL, &a));
        assert_false(sl_peerauth_answer_verify(&key, "v1 mac=", &a));
        assert_false(sl_peerauth_answer_verify(&key, hdr + 1, &a));
        /* An answer to another request (its nonce), or changed. */
        x = a, x.nonce = "ffeeddccbbaa99887766554433221100";
        assert_false(sl_peerauth_answer_verify(&key, hdr, &x));
        x = a, x.status = 200;
        assert_false(sl_peerauth_answer_verify(&key, hdr, &x));
        x = a, x.answered_by = "10.0.0.9:8080";
        assert_false(sl_peerauth_answer_verify(&key, hdr, &x));
        x = a, x.retry_after = NULL;
        assert_false(sl_peerauth_answer_verify(&key, hdr, &x));
        x = a, x.body_len = 20;
        assert_false(sl_peerauth_answer_verify(&key, hdr, &x));
}

static void test_replay(void **state) {
        sl_peerauth_replay_t *r = sl_peerauth_replay_new(1000, 3);
        const char *n2 = "ffeeddccbbaa99887766554433221100";
        const char *n3 = "0000000000000000000000000000000a";
        const char *n4 = "0000000000000000000000000000000b";
        (void)state;

        /* The window: ts within 1 s of now. */
        assert_int_equal(
            sl_peerauth_replay_check(r, 10000 - 1001, nonce, 10000),
            SL_PEERAUTH_STALE);
        assert_int_equal(
            sl_peerauth_replay_check(r, 10000 + 1001, nonce, 10000),
            SL_PEERAUTH_STALE);
        assert_int_equal(
            sl_peerauth_replay_check(r, 10000 - 1000, nonce, 10000),
            SL_PEERAUTH_OK);
        assert_int_equal(sl_peerauth_replay_check(r, 10000, nonce, 10000),
                         SL_PEERAUTH_REPLAY);
        /* Remembered for as long as a ts of it can be in the window: past
         * one generation's turn (2001 ms) it is still there. */
        assert_int_equal(sl_peerauth_replay_check(r, 11000, n2, 11000),
                         SL_PEERAUTH_OK);
        assert_int_equal(sl_peerauth_replay_check(r, 12100, nonce, 12100),
                         SL_PEERAUTH_REPLAY);
        assert_int_equal(sl_peerauth_replay_check(r, 12100, n2, 12100),
                         SL_PEERAUTH_REPLAY);
        /* The maximum of a generation (3), in the one that began at
         * 12100: the fourth new nonce is refused. */
        assert_int_equal(sl_peerauth_replay_check(r, 12100, n3, 12100),
                         SL_PEERAUTH_OK);
        assert_int_equal(sl_peerauth_replay_check(r, 12100, n4, 12100),
                         SL_PEERAUTH_OK);
        assert_int_equal(
            sl_peerauth_replay_check(r, 12100,
                                     "0000000000000000000000000000000d", 12100),
            SL_PEERAUTH_OK);
        assert_int_equal(
            sl_peerauth_replay_check(r, 12100,
                                     "0000000000000000000000000000000c", 12100),
            SL_PEERAUTH_FULL);
        /* Two generations later everything is forgotten, and any old ts
         * would be stale anyway. */
        assert_int_equal(sl_peerauth_replay_check(r, 16300, nonce, 16300),
                         SL_PEERAUTH_OK);
        assert_int_equal(sl_peerauth_replay_check(r, 10000, n2, 16300),
                         SL_PEERAUTH_STALE);
        sl_peerauth_replay_destroy(r);
        sl_peerauth_replay_destroy(NULL);
}

/* A generation that grows past its first table keeps every nonce. */
static void test_replay_grows(void **state) {
        sl_peerauth_replay_t *r = sl_peerauth_replay_new(30000, 5000);
        char n[33];
        (void)state;
        for (int i = 0; i < 5000; i++) {
                snprintf(n, sizeof(n), "%032x", i);
                assert_int_equal(sl_peerauth_replay_check(r, 1000, n, 1000),
                                 SL_PEERAUTH_OK);
        }
        for (int i = 0; i < 5000; i += 7) {
                snprintf(n, sizeof(n), "%032x", i);
                assert_int_equal(sl_peerauth_replay_check(r, 1000, n, 1000),
                                 SL_PEERAUTH_REPLAY);
        }
        sl_peerauth_replay_destroy(r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_vectors), cmocka_unit_test(test_request),
            cmocka_unit_test(test_parse),   cmocka_unit_test(test_answer),
            cmocka_unit_test(test_replay),  cmocka_unit_test(test_replay_grows),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
