/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_peerauth.c — the instances' credential (peerauth.h) on bytes anyone
 * who reaches the API can send: an X-Sluice-Peer-Auth header value.
 *
 * Input layout: the bytes up to the first NUL (or all of them) are the
 * header value, read as a request's credential and as an answer's
 * signature; all the bytes, five at a time, drive the replay guard (byte 0
 * picks one of 16 nonces, bytes 1-2 the ts, and 3-4 how far the clock
 * moves forward, in ms).
 *
 * Checks: a parsed credential has a ts of at most 16 digits and 32 + 64
 * lowercase hex digits; signed again with its own ts and nonce it gives
 * a header that parses back to the same fields and verifies, and the
 * parsed one verifies exactly when its MAC is that one; an answer's
 * signature verifies only when it is the one sl_peerauth_answer_sign()
 * writes.  The replay guard says STALE exactly when ts is over the skew
 * from the clock, never OK twice for one nonce within a window, and
 * REPLAY only for a nonce it accepted before.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peerauth.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const sl_peerauth_key_t key = {"fuzz-secret-0123456789", 22};

static int lower_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') ||
                      (s[i] >= 'a' && s[i] <= 'f')))
                        return 0;
        return s[n] == '\0';
}

static void check_request(const char *value) {
        sl_peerauth_what_t w = {
            "GET", "/v1/pipelines/p/timers/k", "b:1", "a:1", NULL, 0};
        sl_peerauth_req_t r, back;
        char why[100] = "", hdr[SL_PEERAUTH_HDR_MAX];

        if (sl_peerauth_request_parse(value, &r, why, sizeof(why)) == -1) {
                CHECK(why[0]);
                return;
        }
        CHECK(r.ts_ms >= 0 && r.ts_ms < 10000000000000000LL);
        CHECK(lower_hex(r.nonce, 32) && lower_hex(r.mac, 64));
        CHECK(sl_peerauth_request_sign(&key, &w, r.ts_ms, r.nonce, hdr) == 0);
        CHECK(strlen(hdr) < SL_PEERAUTH_HDR_MAX);
        CHECK(sl_peerauth_request_parse(hdr, &back, why, sizeof(why)) == 0);
        CHECK(back.ts_ms == r.ts_ms && !strcmp(back.nonce, r.nonce));
        CHECK(sl_peerauth_request_verify(&key, &back, &w));
        CHECK(sl_peerauth_request_verify(&key, &r, &w) ==
              !strcmp(r.mac, back.mac));
}

static void check_answer(const char *value) {
        sl_peerauth_answer_t a = {
            "00112233445566778899aabbccddeeff", 200, "b:1", NULL, "{}", 2};
        char hdr[SL_PEERAUTH_HDR_MAX];

        CHECK(sl_peerauth_answer_sign(&key, &a, hdr) == 0);
        CHECK(sl_peerauth_answer_verify(&key, hdr, &a));
        CHECK(sl_peerauth_answer_verify(&key, value, &a) ==
              !strcmp(value, hdr));
}

static void check_replay(const uint8_t *data, size_t size) {
        sl_peerauth_replay_t *r = sl_peerauth_replay_new(1000, 8);
        int64_t accepted[16]; /* the clock when accepted, or -1 */
        int64_t now = 100000;
        char nonce[33];

        for (int i = 0; i < 16; i++)
                accepted[i] = -1;
        for (size_t i = 0; i + 5 <= size; i += 5) {
                int n = data[i] & 15;
                int64_t ts =
                    now - 2000 + (data[i + 1] << 8 | data[i + 2]) % 4000;
                sl_peerauth_verdict_t v;

                now += (data[i + 3] << 8 | data[i + 4]) % 3000;

                snprintf(nonce, sizeof(nonce), "%032x", n);
                v = sl_peerauth_replay_check(r, ts, nonce, now);
                CHECK((v == SL_PEERAUTH_STALE) ==
                      (ts < now - 1000 || ts > now + 1000));
                if (v == SL_PEERAUTH_REPLAY)
                        CHECK(accepted[n] != -1);
                /* Remembered while a ts of it can be in the window: for
                 * 2 * skew after it was accepted. */
                if (v == SL_PEERAUTH_OK && accepted[n] != -1)
                        CHECK(now - accepted[n] > 2000);
                if (v == SL_PEERAUTH_OK)
                        accepted[n] = now;
        }
        sl_peerauth_replay_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t n = strnlen((const char *)data, size);
        char *value = malloc(n + 1);

        memcpy(value, data, n);
        value[n] = '\0';
        check_request(value);
        check_answer(value);
        free(value);
        check_replay(data, size);
        return 0;
}
