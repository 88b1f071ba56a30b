/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_size.c — sl_parse_size() on any bytes (config values such as
 * payload_cache, max_bytes).
 *
 * Checks: a result is 0..INT64_MAX, and sl_size_format() of it parses back
 * to the same number (what makes `sluice config dump` load back).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char err[256], buf[64], *s = malloc(size + 1);
        int64_t v = -1, back = -1;
        int r;

        memcpy(s, data, size);
        s[size] = '\0';
        r = sl_parse_size(s, &v, err, sizeof(err));
        CHECK(r == 0 || r == -1);
        if (r == 0) {
                CHECK(v >= 0);
                sl_size_format(v, buf, sizeof(buf));
                CHECK(sl_parse_size(buf, &back, err, sizeof(err)) == 0);
                CHECK(back == v);
        } else {
                CHECK(strlen(err) > 0);
        }
        free(s);
        return 0;
}
