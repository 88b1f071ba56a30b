/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_duration.c — sl_parse_duration_ms() and sl_parse_duration_ms_n()
 * on any bytes (a sluice-delay or sluice-ttl header, a config value).
 *
 * Beyond "no crash, no UB", it checks the contract: a result lies in
 * 0..SL_PARSE_DURATION_MAX_MS, both entry points agree on a NUL-free
 * input, and sl_duration_format() of a result parses back to it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char err[256], buf[64], *s;
        int64_t v = -1, w = -1, back = -1;
        int r, rn;

        /* The header form: raw bytes, NULs included, at most 63. */
        rn = sl_parse_duration_ms_n((const char *)data, size, &w, err,
                                    sizeof(err));
        CHECK(rn == 0 || rn == -1);
        if (rn == 0)
                CHECK(w >= 0 && w <= SL_PARSE_DURATION_MAX_MS);

        /* The config form: a C string. */
        s = malloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        r = sl_parse_duration_ms(s, &v, err, sizeof(err));
        CHECK(r == 0 || r == -1);
        if (r == 0) {
                CHECK(v >= 0 && v <= SL_PARSE_DURATION_MAX_MS);
                sl_duration_format(v, buf, sizeof(buf));
                CHECK(sl_parse_duration_ms(buf, &back, err, sizeof(err)) == 0);
                CHECK(back == v);
        } else {
                CHECK(strlen(err) > 0);
        }
        if (size <= 63 && !memchr(data, '\0', size)) {
                CHECK(r == rn);
                if (r == 0)
                        CHECK(v == w);
        }
        free(s);
        return 0;
}
