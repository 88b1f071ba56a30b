/* SPDX-License-Identifier: Apache-2.0 */
/*
 * targets.h — the topics sluice writes to: the pipelines' own (changelog,
 * overflow, DLQ, output, a delay pipeline's default target, the input when
 * a keyed record is moved to its key's partition) and any delay target.
 *
 * Three things are kept about them:
 *
 *   handles  each producer's rd_kafka_topic_t of the pipelines' own
 *            topics, made when the producers are (sl_targets_warm), so a
 *            record goes out without librdkafka's lookup by name and the
 *            producers know the topics before their first record;
 *   limits   what each accepts (max.message.bytes), learned at start with
 *            DescribeConfigs for the pipelines' own topics (blocking,
 *            before the loop), and for a target once it was found; the
 *            producers are configured from them (clients.c) and every
 *            record is checked against them (runtime.c, recsize.h);
 *   targets  the partition counts of the topics operators write to, in a
 *            bounded cache filled off the loop (topiccache.h, kquery.h):
 *            an operator asks (sl_task_topic_partitions) and never waits.
 *
 * A topic sluice may not describe is a topic it may not write: a delay
 * target refused so sends its timers to the DLQ (target-refused), said
 * once per topic; the refusal of one of the pipelines' own ends the
 * process (authz.h).
 *
 * Loop thread only, but sl_targets_learn_limits(), which blocks, at start.
 */
#ifndef SL_TARGETS_H
#define SL_TARGETS_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "runtime.h"

typedef struct sl_targets_s sl_targets_t;

/* Its state (rt->targets), with the cache's series; _destroy(NULL) is a
 * no-op and cancels the lookups in flight (before rt->kq goes). */
sl_targets_t *sl_targets_new(sl_runtime_t *rt);
void sl_targets_destroy(sl_targets_t *tg);

/* Learns what the pipelines' own written topics accept, then what the
 * producers will be configured for (rt->producer_max_bytes,
 * max_bytes_floor, size_exact): message.max.bytes no smaller than any of
 * those limits, unless [kafka] says otherwise.  From the same configs it
 * counts the drift `sluice topics apply` warns of (sluice_topic_drift,
 * one log line each).  Blocks (DescribeConfigs): at start, before the loop
 * and the producers. */
void sl_targets_learn_limits(sl_runtime_t *rt);

/* The hooks (runtime.h): topic_partitions, topic, max_bytes. */
int sl_targets_partitions(sl_runtime_t *rt, const char *topic);
rd_kafka_topic_t *sl_targets_handle(const sl_runtime_t *rt, const char *name);
int64_t sl_targets_max_bytes(const sl_runtime_t *rt, const char *topic);

/* The producers are new (clients.c): their handles of the pipelines' own
 * topics are made.  sl_targets_cool() drops them, before the producers
 * go. */
void sl_targets_warm(sl_runtime_t *rt);
void sl_targets_cool(sl_runtime_t *rt);

/* Every second: the pipelines' own topics stay in the cache, their limits
 * learned again once their entries expired (a limit changed while sluice
 * runs is counted within a minute or so). */
void sl_targets_tick(sl_runtime_t *rt);

/* The transaction's not_authorized hook (txn.h; opaque is the runtime): a
 * delay target refused is marked forbidden and its timers go to the DLQ
 * once redone (0); any other refusal is named and ends the process (1). */
int sl_targets_txn_refused(void *opaque, rd_kafka_resp_err_t code,
                           const char *topic, const char *why);

#endif
