/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlqrec.h — reading back what a DLQ record holds (the reader of what
 * task.h's sl_task_dlq_send writes): the original headers first, then
 * sluice's own, which start with sluice-error (sluice-error-detail,
 * sluice-source-topic, -partition, -offset; sluice-timer-id and sluice-due
 * for a timer that fired; for a debounce item, its sluice-item comes first,
 * before sluice-error, and counts as an original header), then sluice-cut
 * when the copy had to be cut to fit.  The original headers are those
 * before the last sluice-error (an original header of that name stays
 * original).  Pure: headers in, facts out; no client.
 */
#ifndef SL_DLQREC_H
#define SL_DLQREC_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

/* What a record is, for a replay. */
typedef enum {
        SL_DLQREC_WHOLE = 0, /* a whole copy of an input record */
        SL_DLQREC_NOT_DLQ,   /* no sluice-error: sluice did not write it */
        SL_DLQREC_CUT,       /* a cut copy (sluice-cut): not the original */
        SL_DLQREC_NO_SOURCE, /* no sluice-source-offset: a fired timer or a
                              * lost payload, whose control headers are gone */
} sl_dlqrec_kind_t;

typedef struct sl_dlqrec_s {
        sl_dlqrec_kind_t kind;
        size_t orig_cnt;    /* the original headers: [0, orig_cnt) */
        const char *reason; /* sluice-error's value (borrowed), or NULL */
        size_t reason_len;
        const char *source_topic; /* sluice-source-topic (borrowed), or NULL */
        size_t source_topic_len;
        int32_t source_partition; /* sluice-source-partition; -1: none */
} sl_dlqrec_t;

/* Reads h (NULL: a record without headers) into *out; the borrowed
 * pointers live as long as h.  Returns out->kind. */
sl_dlqrec_kind_t sl_dlqrec_read(const rd_kafka_headers_t *h, sl_dlqrec_t *out);

/* 1 if the record's sluice-error is reason (NUL-terminated). */
int sl_dlqrec_reason_is(const sl_dlqrec_t *d, const char *reason);

/* A new list of h's original headers (owned by the caller), or NULL when
 * it has none. */
rd_kafka_headers_t *sl_dlqrec_original(const rd_kafka_headers_t *h,
                                       const sl_dlqrec_t *d);

#endif
