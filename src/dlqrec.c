/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlqrec.c — what a DLQ record holds (dlqrec.h).
 */
#include "dlqrec.h"

#include <string.h>

#define DLQREC_ERROR  "sluice-error"
#define DLQREC_CUT    "sluice-cut"
#define DLQREC_OFFSET "sluice-source-offset"
#define DLQREC_TOPIC  "sluice-source-topic"
#define DLQREC_PART   "sluice-source-partition"

/* A non-negative int32 of a header value, or -1. */
static int32_t dlqrec_partition(const char *s, size_t len) {
        int64_t v = 0;
        if (!s || !len || len > 10)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v > INT32_MAX ? -1 : (int32_t)v;
}

sl_dlqrec_kind_t sl_dlqrec_read(const rd_kafka_headers_t *h, sl_dlqrec_t *out) {
        const char *name;
        const void *val;
        size_t len, i, split = SIZE_MAX;
        int cut = 0, source = 0;

        memset(out, 0, sizeof(*out));
        out->source_partition = -1;
        for (i = 0; h && !rd_kafka_header_get_all(h, i, &name, &val, &len); i++)
                if (!strcmp(name, DLQREC_ERROR))
                        split = i;
        if (split == SIZE_MAX) {
                out->kind = SL_DLQREC_NOT_DLQ;
                return out->kind;
        }
        out->orig_cnt = split;
        for (i = split; !rd_kafka_header_get_all(h, i, &name, &val, &len);
             i++) {
                if (i == split) {
                        out->reason = val;
                        out->reason_len = val ? len : 0;
                } else if (!strcmp(name, DLQREC_CUT)) {
                        cut = 1;
                } else if (!strcmp(name, DLQREC_OFFSET)) {
                        source = 1;
                } else if (!strcmp(name, DLQREC_TOPIC)) {
                        out->source_topic = val;
                        out->source_topic_len = val ? len : 0;
                } else if (!strcmp(name, DLQREC_PART)) {
                        out->source_partition = dlqrec_partition(val, len);
                }
        }
        out->kind = cut       ? SL_DLQREC_CUT
                    : !source ? SL_DLQREC_NO_SOURCE
                              : SL_DLQREC_WHOLE;
        return out->kind;
}

int sl_dlqrec_reason_is(const sl_dlqrec_t *d, const char *reason) {
        return d->reason && strlen(reason) == d->reason_len &&
               !memcmp(d->reason, reason, d->reason_len);
}

rd_kafka_headers_t *sl_dlqrec_original(const rd_kafka_headers_t *h,
                                       const sl_dlqrec_t *d) {
        rd_kafka_headers_t *o;
        const char *name;
        const void *val;
        size_t len;

        if (!h || !d->orig_cnt)
                return NULL;
        o = rd_kafka_headers_new(d->orig_cnt);
        for (size_t i = 0; i < d->orig_cnt &&
                           !rd_kafka_header_get_all(h, i, &name, &val, &len);
             i++)
                rd_kafka_header_add(o, name, -1, val, val ? (ssize_t)len : 0);
        return o;
}
