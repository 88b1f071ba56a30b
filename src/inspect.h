/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect.h — `sluice inspect`: what inspect.c hands an operator's
 * printer, and the helpers they share.
 *
 * inspect.c reads a pipeline's changelog (without joining the consumer
 * group, read_committed, up to the end offsets captured at start) and
 * folds it the way a rebuild folds it — a value replaces the key's state,
 * a tombstone removes it — into one map per partition (a timer heap used
 * as a key → record map; each key's last record, its offset as seq).  The
 * printer of the pipeline's operator (inspect_<name>.c, one per line of
 * ops.def) prints the pending state from there, reading more topics
 * through sl_inspect_read_topic() when it needs them.
 */
#ifndef SL_INSPECT_H
#define SL_INSPECT_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "timerheap.h"

/* A printer's input. */
typedef struct sl_inspect_s {
        sl_conf_t *conf;
        const sl_pipeline_conf_t *pc;
        sl_timerheap_t **maps; /* the folded changelog, by partition */
        int parts;             /* the changelog's partitions */
        const char *key;       /* --key, or NULL */
        long limit;            /* --limit: the most rows */
} sl_inspect_t;

/* Each operator's printer: prints in->pc's pending state on stdout;
 * returns SL_EXIT_OK, or SL_EXIT_FAIL when --key found nothing or a topic
 * could not be read (said on stderr). */
#define SL_OPERATOR(name, NAME) int sl_inspect_##name(const sl_inspect_t *in);
#include "ops.def"
#undef SL_OPERATOR

/* What sl_inspect_read_topic() passes each record to. */
typedef void (*sl_inspect_read_cb)(int p, const rd_kafka_message_t *m,
                                   void *opaque);

/* Reads every partition p of topic from from[p] (NULL: from the
 * beginning) to its end captured at start (read_committed), passing each
 * record to cb.  Returns 0, or -1 with a message on stderr. */
int sl_inspect_read_topic(sl_conf_t *conf, const char *topic, int parts,
                          const int64_t *from, sl_inspect_read_cb cb,
                          void *opaque);

/* A record wanted by offset (sl_inspect_read_offsets()). */
typedef struct sl_inspect_at_s {
        int partition;
        int64_t offset;
} sl_inspect_at_t;

/* Reads the records of topic at the n offsets at[] (sorted by partition,
 * then offset; duplicates allowed), read_committed, passing each record
 * found to cb.  Per partition it reads on from one wanted offset to the
 * next when they are close, and seeks past long gaps.  A wanted offset
 * the topic no longer holds (compacted away, deleted by retention, past
 * the end captured at start) is passed over silently: the caller sees
 * which records came.  Returns 0, or -1 with a message on stderr. */
int sl_inspect_read_offsets(sl_conf_t *conf, const char *topic,
                            const sl_inspect_at_t *at, size_t n,
                            sl_inspect_read_cb cb, void *opaque);

/* An instant as RFC 3339, or "<ms>ms" when it is out of range (a
 * changelog record may hold any time: formatting must not overflow). */
void sl_inspect_fmt_time(int64_t ms, char *buf, size_t size);

/* Seconds from a to b, in floating point (no int64 subtraction). */
double sl_inspect_secs_between(int64_t a, int64_t b);

#endif
