/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_rates.c — the records of a throttle pipeline's rates topic:
 * sl_parse_rate() through sl_rates_apply(), then lookups.
 *
 * Input: records, one per line, "key\tvalue"; a line without a tab is a
 * tombstone for that key; a key of "\x01" alone is a null key.  "*" is the
 * default entry.
 *
 * The table is bounded (sl_rates_set_max_bytes, 8 KiB: a few dozen keys),
 * so new keys past it are refused.
 *
 * Checks, against a small model of the table kept here: every apply
 * either succeeds or leaves every lookup unchanged (a refusal for a full
 * table only ever for a new key, and never past the bound); a lookup returns
 * the key's own rate, else "*", else the fallback, always finite and within the
 * parse.h bounds; the generation never goes back and moves whenever some lookup
 * result changed; the count is the number of keys.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "rates.h"

#include "check.inc"

#define MAX_KEYS 256

typedef struct {
        const char *key;
        size_t len;
        sl_rate_t rate;
} model_t;

static int rate_same(const sl_rate_t *a, const sl_rate_t *b) {
        return a->per_sec == b->per_sec && a->burst == b->burst;
}

static int is_star(const char *k, size_t n) {
        return n == 1 && k[0] == '*';
}

static void check_lookup(const sl_rates_t *rt, const model_t *m, size_t cnt,
                         const sl_rate_t *dflt, const sl_rate_t *fallback,
                         const char *key, size_t keylen) {
        const sl_rate_t *want = dflt ? dflt : fallback;
        sl_rate_source_t src_want = dflt ? SL_RATE_DEFAULT : SL_RATE_FALLBACK;
        sl_rate_t got;
        char buf[128];

        for (size_t i = 0; i < cnt && !is_star(key, keylen); i++) {
                if (m[i].len == keylen && !memcmp(m[i].key, key, keylen)) {
                        want = &m[i].rate;
                        src_want = SL_RATE_KEY;
                }
        }
        CHECK(sl_rates_lookup(rt, key, keylen, &got) == src_want);
        CHECK(rate_same(&got, want));
        CHECK(isfinite(got.per_sec) && got.per_sec >= 0 &&
              got.per_sec <= SL_RATE_MAX_PER_SEC);
        CHECK(isfinite(got.burst) && got.burst >= 1 &&
              got.burst <= SL_RATE_MAX_BURST);
        sl_rate_format(&got, buf, sizeof(buf)); /* as sluice inspect does */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        sl_rate_t fallback = {100, 100}, dflt_rate;
        const uint8_t *s, *end = data + size;
        model_t m[MAX_KEYS];
        size_t cnt = 0;
        int has_dflt = 0;
        sl_rates_t *rt = sl_rates_new(&fallback);
        uint64_t gen;
        char err[256];

        sl_rates_set_max_bytes(rt, 8192);
        gen = sl_rates_generation(rt);
        for (s = data; s < end && cnt < MAX_KEYS;) {
                const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
                const uint8_t *le = nl ? nl : end;
                const uint8_t *tab = memchr(s, '\t', (size_t)(le - s));
                const char *key = (const char *)s;
                size_t keylen = (size_t)((tab ? tab : le) - s);
                const char *val = tab ? (const char *)tab + 1 : NULL;
                size_t vallen = tab ? (size_t)(le - tab - 1) : 0;
                int null_key = keylen == 1 && key[0] == 1, r;
                sl_rate_t parsed;
                char text[SL_RATES_MAX_VALUE + 1];
                int changed = 0;
                size_t i;

                s = le + 1;
                r = sl_rates_apply(rt, null_key ? NULL : key, keylen, val,
                                   vallen, err, sizeof(err));
                CHECK(r == 0 || r == -1 || r == -2);
                CHECK(sl_rates_bytes(rt) <= 8192);
                if (r == -2) {
                        /* Full: only a new key, with a valid value. */
                        CHECK(!null_key && val && !is_star(key, keylen));
                        for (i = 0; i < cnt; i++)
                                CHECK(m[i].len != keylen ||
                                      memcmp(m[i].key, key, keylen));
                        CHECK(sl_rates_generation(rt) == gen);
                } else if (r == -1) {
                        CHECK(null_key || val);
                        CHECK(sl_rates_generation(rt) == gen);
                } else {
                        CHECK(!null_key);
                        /* Mirror the change in the model. */
                        if (val) {
                                CHECK(vallen <= SL_RATES_MAX_VALUE);
                                memcpy(text, val, vallen);
                                text[vallen] = '\0';
                                CHECK(sl_parse_rate(text, &parsed, err,
                                                    sizeof(err)) == 0);
                        }
                        if (is_star(key, keylen)) {
                                changed =
                                    val ? !has_dflt ||
                                              !rate_same(&dflt_rate, &parsed)
                                        : has_dflt;
                                has_dflt = val != NULL;
                                if (val)
                                        dflt_rate = parsed;
                        } else {
                                for (i = 0; i < cnt; i++)
                                        if (m[i].len == keylen &&
                                            !memcmp(m[i].key, key, keylen))
                                                break;
                                if (val && i == cnt) {
                                        m[cnt++] =
                                            (model_t){key, keylen, parsed};
                                        changed = 1;
                                } else if (val) {
                                        changed =
                                            !rate_same(&m[i].rate, &parsed);
                                        m[i].rate = parsed;
                                } else if (i < cnt) {
                                        m[i] = m[--cnt];
                                        changed = 1;
                                }
                        }
                        CHECK(sl_rates_generation(rt) >= gen);
                        if (changed)
                                CHECK(sl_rates_generation(rt) > gen);
                }
                gen = sl_rates_generation(rt);
                CHECK(sl_rates_count(rt) == cnt);
                check_lookup(rt, m, cnt, has_dflt ? &dflt_rate : NULL,
                             &fallback, null_key ? "" : key,
                             null_key ? 0 : keylen);
        }
        for (size_t i = 0; i < cnt; i++)
                check_lookup(rt, m, cnt, has_dflt ? &dflt_rate : NULL,
                             &fallback, m[i].key, m[i].len);
        check_lookup(rt, m, cnt, has_dflt ? &dflt_rate : NULL, &fallback,
                     "never-set", 9);
        sl_rates_destroy(rt);
        return 0;
}
