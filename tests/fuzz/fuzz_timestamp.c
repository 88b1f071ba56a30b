/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_timestamp.c — sl_parse_timestamp_ms() and _n() on any bytes (a
 * sluice-at or sluice-deadline header, an envelope's "at" string): epoch
 * milliseconds and RFC 3339.
 *
 * Checks: a result lies in SL_PARSE_TIMESTAMP_MIN_MS..MAX_MS, epoch
 * milliseconds are never negative, and both entry points agree on a
 * NUL-free input.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char err[256], *s = malloc(size + 1);
        int64_t v = 0, w = 0;
        int r, rn;
        size_t i;

        rn = sl_parse_timestamp_ms_n((const char *)data, size, &w, err,
                                     sizeof(err));
        CHECK(rn == 0 || rn == -1);
        memcpy(s, data, size);
        s[size] = '\0';
        r = sl_parse_timestamp_ms(s, &v, err, sizeof(err));
        CHECK(r == 0 || r == -1);
        if (r == 0) {
                CHECK(v >= SL_PARSE_TIMESTAMP_MIN_MS &&
                      v <= SL_PARSE_TIMESTAMP_MAX_MS);
                /* All digits (blanks aside): epoch ms, never negative. */
                for (i = 0; i < size && (isdigit(data[i]) || isspace(data[i]));
                     i++)
                        ;
                if (i == size)
                        CHECK(v >= 0);
        }
        if (size <= 63 && !memchr(data, '\0', size)) {
                CHECK(r == rn);
                if (r == 0)
                        CHECK(v == w);
        }
        free(s);
        return 0;
}
