/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_delay_input.c — sl_delay_input_parse(): one delay input record,
 * headers and JSON envelope, under varied pipeline parameters.
 *
 * Input layout (lines split at '\n'):
 *
 *   byte 0          parameters: bit 0 input_format (0 headers, 1
 *                   json-envelope), bit 1 a default_target, bit 2
 *                   allowed_targets set, bits 3-4 max_delay (none, 1h,
 *                   366d, the largest duration), bit 5 max_record_bytes
 *                   100 (else none), bits 6-7 the clock (2026, 0, the
 *                   last due time, 1 s after the epoch)
 *   line 1          the key; "\x01" alone is a null key
 *   line 2          the value; "\x01" alone is a null value (a cancel)
 *   lines 3..       headers "name=value"; a line without '=' is a null
 *                   header of that name
 *
 * The record's timestamp is chosen by the input's length (mod 5: none, a
 * day before the clock, 30 s ahead, an hour ahead, 0), so every corpus
 * file meets one of them; the skew allowed is 1 min.
 *
 * Checks what the operator relies on: a known reason; on success a
 * NUL-terminated legal-length target that is no internal topic and matches
 * allowed_targets, a payload for a schedule, pass-through headers that are
 * the record's own, the key or a generated "<partition>-<offset>" as the
 * id, a due time within SL_DELAY_DUE_MIN_MS..SL_DELAY_DUE_MAX_MS (so
 * now - due cannot overflow), and a relative due time counted from the
 * timestamp only when it is plausible, within max_delay of its base.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delay_input.h"

#include "check.inc"

#define MAX_HDRS 64

static sl_globs_t allowed;
static const char *const internal[] = {"p.changelog", "p.dlq", "fallback.dlq"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const int64_t max_delay[] = {0, 3600000LL, 366 * 86400000LL,
                                            SL_PARSE_DURATION_MAX_MS};
        static const int64_t clocks[] = {1767225600000LL, 0,
                                         SL_DELAY_DUE_MAX_MS, 1000};
        sl_hdr_t hdrs[MAX_HDRS];
        char names[MAX_HDRS][64], detail[256], err[128];
        sl_delay_record_t rec = {0};
        sl_delay_params_t p = {0};
        sl_delay_req_t req;
        const char *line[2 + MAX_HDRS];
        size_t len[2 + MAX_HDRS], nlines = 0;
        const uint8_t *s, *end = data + size;
        uint8_t flags;
        int64_t now;
        int r;

        if (size < 1)
                return 0;
        if (!allowed.cnt)
                CHECK(sl_globs_parse("orders.*, p.*, fallback, **.x", &allowed,
                                     err, sizeof(err)) == 0);
        flags = data[0];
        p.input_format = flags & 1 ? SL_INPUT_JSON_ENVELOPE : SL_INPUT_HEADERS;
        p.default_target = flags & 2 ? "fallback" : NULL;
        p.allowed_targets = flags & 4 ? &allowed : NULL;
        p.max_delay_ms = max_delay[(flags >> 3) & 3];
        p.max_record_bytes = flags & 32 ? 100 : 0;
        p.internal_topics = internal;
        p.internal_cnt = 3;
        p.timestamp_skew_ms = 60000;
        now = clocks[flags >> 6];
        {
                const int64_t stamps[] = {-1, now - 86400000LL, now + 30000,
                                          now + 3600000, 0};
                rec.timestamp_ms = stamps[size % 5];
        }

        /* Split the rest into lines. */
        for (s = data + 1; s <= end && nlines < 2 + MAX_HDRS;) {
                const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
                size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
                line[nlines] = (const char *)s;
                len[nlines++] = n;
                s += n + 1;
                if (!nl)
                        break;
        }
        if (nlines > 0 && !(len[0] == 1 && line[0][0] == 1)) {
                rec.key = line[0];
                rec.key_len = len[0];
        }
        if (nlines > 1 && !(len[1] == 1 && line[1][0] == 1)) {
                rec.value = line[1];
                rec.value_len = len[1];
        }
        for (size_t i = 2; i < nlines; i++) {
                const char *eq = memchr(line[i], '=', len[i]);
                size_t n = eq ? (size_t)(eq - line[i]) : len[i];
                sl_hdr_t *h = &hdrs[rec.hdr_cnt++];
                if (n > 63)
                        n = 63;
                memcpy(names[i - 2], line[i], n);
                names[i - 2][n] = '\0';
                h->name = names[i - 2];
                h->value = eq ? eq + 1 : NULL;
                h->size = eq ? len[i] - (size_t)(eq + 1 - line[i]) : 0;
        }
        rec.hdrs = hdrs;
        rec.partition = 3;
        rec.offset = (int64_t)size * 1000;

        r = sl_delay_input_parse(&p, &rec, now, &req, detail, sizeof(detail));
        CHECK(r >= 0 && r < SL_DELAY_REASON_CNT);
        CHECK(strcmp(sl_delay_reason_str(r), "unknown") != 0);
        CHECK(memchr(detail, '\0', sizeof(detail)) != NULL);
        if (r == SL_DELAY_OK) {
                CHECK(req.action == SL_DELAY_SCHEDULE ||
                      req.action == SL_DELAY_CANCEL);
                if (req.id_generated)
                        CHECK(req.id == req.gen_id &&
                              req.id_len == strlen(req.gen_id) &&
                              !strncmp(req.gen_id, "3-", 2));
                else
                        CHECK(req.id == rec.key && req.id_len == rec.key_len &&
                              rec.key_len > 0);
        }
        if (r == SL_DELAY_OK && req.action == SL_DELAY_SCHEDULE) {
                size_t tl = strnlen(req.target, sizeof(req.target));
                CHECK(tl > 0 && tl <= SL_TOPICNAME_MAX);
                for (int i = 0; i < p.internal_cnt; i++)
                        CHECK(strcmp(req.target, internal[i]) != 0);
                if (p.allowed_targets)
                        CHECK(sl_globs_match(p.allowed_targets, req.target));
                CHECK(req.payload != NULL);
                CHECK(req.target_partition >= -1);
                CHECK(req.due_ms >= SL_DELAY_DUE_MIN_MS &&
                      req.due_ms <= SL_DELAY_DUE_MAX_MS);
                if (req.base == SL_DELAY_BASE_TIMESTAMP)
                        CHECK(rec.timestamp_ms >= SL_DELAY_TS_MIN_MS &&
                              rec.timestamp_ms - now <= p.timestamp_skew_ms);
                if (p.max_delay_ms > 0 && req.base == SL_DELAY_BASE_TIMESTAMP)
                        CHECK(req.due_ms - rec.timestamp_ms <= p.max_delay_ms);
                else if (p.max_delay_ms > 0)
                        CHECK(req.due_ms - now <= p.max_delay_ms);
                CHECK(req.hdr_cnt <= rec.hdr_cnt);
                for (size_t i = 0; i < req.hdr_cnt; i++) {
                        int own = 0;
                        for (size_t j = 0; j < rec.hdr_cnt; j++)
                                own |= req.hdrs[i].name == hdrs[j].name &&
                                       req.hdrs[i].value == hdrs[j].value;
                        CHECK(own);
                        CHECK(strcmp(req.hdrs[i].name, "sluice-target") &&
                              strcmp(req.hdrs[i].name, "sluice-delay") &&
                              strcmp(req.hdrs[i].name, "sluice-at"));
                }
                /* Touch every byte handed out: ASan checks the bounds. */
                volatile uint8_t sum = 0;
                for (size_t i = 0; i < req.payload_len; i++)
                        sum += ((const uint8_t *)req.payload)[i];
                for (size_t i = 0; req.target_key && i < req.target_key_len;
                     i++)
                        sum += ((const uint8_t *)req.target_key)[i];
                (void)sum;
        }
        sl_delay_req_clear(&req);
        return 0;
}
