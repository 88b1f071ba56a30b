/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_rate.c — sl_parse_rate() on any bytes (a record of a throttle
 * pipeline's rates topic, the default_rate config value).
 *
 * Checks the contract: per_sec is finite in 0..SL_RATE_MAX_PER_SEC, burst
 * finite in 1..SL_RATE_MAX_BURST, and sl_rate_format() writes a text that
 * parses back to exactly the same doubles.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char err[256], buf[128], *s = malloc(size + 1);
        sl_rate_t r = {-1, -1}, back = {-1, -1};
        int rc;

        memcpy(s, data, size);
        s[size] = '\0';
        rc = sl_parse_rate(s, &r, err, sizeof(err));
        CHECK(rc == 0 || rc == -1);
        if (rc == 0) {
                CHECK(isfinite(r.per_sec) && r.per_sec >= 0 &&
                      r.per_sec <= SL_RATE_MAX_PER_SEC);
                CHECK(isfinite(r.burst) && r.burst >= 1 &&
                      r.burst <= SL_RATE_MAX_BURST);
                sl_rate_format(&r, buf, sizeof(buf));
                if (sl_parse_rate(buf, &back, err, sizeof(err)) != 0) {
                        fprintf(stderr, "'%s' refused: %s\n", buf, err);
                        abort();
                }
                if (back.per_sec != r.per_sec || back.burst != r.burst) {
                        fprintf(stderr, "'%s' reads back as %.17g/%.17g\n", buf,
                                back.per_sec, back.burst);
                        abort();
                }
        } else {
                CHECK(strlen(err) > 0);
        }
        free(s);
        return 0;
}
