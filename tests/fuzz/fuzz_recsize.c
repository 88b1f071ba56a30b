/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_recsize.c — the size of a record as the broker counts it, and the
 * copy of it cut to fit a limit (recsize.h), for any parts: the DLQ copy
 * of every record producers send is planned so.
 *
 * Input: a limit (4 bytes), a key and a value length (4 bytes each, the
 * top bit set: null), sluice's own headers' bytes (3 bytes, and as many
 * with each value cut), then the original headers' sizes (2 bytes each).
 *
 * Checks: a record's size grows with each part; a copy planned (0) is no
 * larger than the limit, keeps no more than the record (a null stays
 * null), keeps the whole record when that fits (and says nothing was
 * cut), and cuts sluice's own values only after the key; a copy refused
 * (-1) would not fit even at its smallest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "recsize.h"
#include "util.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t rd(const uint8_t *p, size_t n) {
        uint32_t v = 0;
        for (size_t i = 0; i < n; i++)
                v = v << 8 | p[i];
        return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        sl_recsize_parts_t z = {0};
        sl_recsize_cut_t c;
        int64_t max, kl, vl;
        size_t n, whole;
        int r;

        if (size < 18)
                return 0;
        max = rd(data, 4) & 0x7fffffff;
        kl = rd(data + 4, 4);
        vl = rd(data + 8, 4);
        kl = kl & 0x80000000U ? -1 : kl & 0xfffff;
        vl = vl & 0x80000000U ? -1 : vl & 0xffffff;
        z.own_cnt = 3;
        z.own_bytes = rd(data + 12, 3) & 0xfffff;
        z.own_trimmed = SL_MIN(z.own_bytes, rd(data + 15, 3) & 0xfffff);
        n = (size - 18) / 2;
        z.src_cnt = n;
        z.src_prefix = malloc((n + 1) * sizeof(*z.src_prefix));
        z.src_prefix[0] = 0;
        for (size_t i = 0; i < n; i++)
                z.src_prefix[i + 1] =
                    z.src_prefix[i] + 2 + rd(data + 18 + 2 * i, 2) % 4096;
        whole = sl_recsize_batch(kl, vl, z.own_cnt + n,
                                 z.own_bytes + z.src_prefix[n]);
        CHECK(whole > SL_RECSIZE_BATCH_OVERHEAD);
        /* Each byte more costs at least a byte (a null and an empty key or
         * value take the same one byte). */
        if (kl >= 0)
                CHECK(sl_recsize_batch(kl + 1, vl, 0, 0) >
                      sl_recsize_batch(kl, vl, 0, 0));
        if (vl >= 0)
                CHECK(sl_recsize_batch(kl, vl + 1, 0, 0) >
                      sl_recsize_batch(kl, vl, 0, 0));

        r = sl_recsize_cut(&z, kl, vl, max, &c);
        CHECK(r == 0 || r == -1);
        if (r == 0) {
                CHECK((int64_t)sl_recsize_copy(&z, &c) <= max);
                CHECK(c.key <= kl && (kl < 0) == (c.key < 0));
                CHECK(c.value <= vl && (vl < 0) == (c.value < 0));
                CHECK(c.hdrs <= z.src_cnt);
                if ((int64_t)whole <= max)
                        CHECK(!c.cut && c.key == kl && c.value == vl &&
                              c.hdrs == z.src_cnt && !c.trim);
                else
                        CHECK(c.cut);
                if (c.trim)
                        CHECK(kl <= SL_RECSIZE_CUT_KEY ||
                              c.key == SL_RECSIZE_CUT_KEY);
        } else {
                sl_recsize_cut_t s = {kl < 0 ? -1
                                             : SL_MIN(kl, SL_RECSIZE_CUT_KEY),
                                      vl < 0 ? -1 : 0, 0, 1, 1};
                CHECK((int64_t)sl_recsize_copy(&z, &s) > max);
        }
        free(z.src_prefix);
        return 0;
}
