/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_jsontext.c — sl_json_text_scan() against jansson on any bytes: where
 * the scan answers yes or no, json_loadb() (with the flags debounce.c
 * uses) must give the same answer; SL_JSON_ASK is the scan's own "ask
 * jansson", allowed only for what jsontext.h names.  Also the contracts of
 * sl_json_plain_len(), sl_ascii_len() and sl_utf8_seq() at every offset.
 *
 * Input: the bytes are the candidate JSON text as they are.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsontext.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int plain(uint8_t c) {
        return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        sl_json_verdict_t v = sl_json_text_scan(data, size);
        json_error_t err;
        json_t *j;

        CHECK(v == SL_JSON_NO || v == SL_JSON_YES || v == SL_JSON_ASK);
        j = json_loadb(
            (const char *)data, size,
            JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
        /* Raw NUL bytes are never JSON; jansson drops one that directly
         * follows a number or a literal (it takes it for the end of the
         * input), so it accepts "0\0" where the scan, on purpose, does
         * not (jsontext.h). */
        CHECK(v != SL_JSON_YES || !memchr(data, 0, size));
        if (v != SL_JSON_ASK && (v == SL_JSON_YES) != (j != NULL) &&
            !(v == SL_JSON_NO && memchr(data, 0, size))) {
                fprintf(stderr, "scan says %d, jansson %s (%s)\n", (int)v,
                        j ? "accepts" : "refuses", j ? "" : err.text);
                abort();
        }
        json_decref(j);

        for (size_t i = 0; i < size && i < 64; i++) {
                size_t n = size - i, k = sl_json_plain_len(data + i, n);
                size_t a = sl_ascii_len(data + i, n, 0);
                size_t z = sl_ascii_len(data + i, n, 1);
                size_t u = sl_utf8_seq(data + i, n);
                CHECK(k <= n && a <= z && z <= n && u <= 4 && u <= n);
                for (size_t m = 0; m < k; m++)
                        CHECK(plain(data[i + m]));
                CHECK(k == n || !plain(data[i + k]));
                for (size_t m = 0; m < z; m++)
                        CHECK(data[i + m] < 0x80);
                CHECK(z == n || data[i + z] >= 0x80);
                CHECK(a == z || data[i + a] == 0);
                CHECK((data[i] < 0x80) == (u == 1));
        }
        return 0;
}
