/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.h — what the process says of itself: readiness (/readyz and the
 * sluice_ready gauge), whether Kafka answers (a probe), and lag.
 *
 * Ready means: running, the transaction machine in no trouble, Kafka
 * answering, an assignment received, no input partition waiting for its
 * topics (parts.h), and every assigned partition rebuilt.  A full cap
 * (task.h, CAPS) is said but does not make the instance unready: it works,
 * its due work is what makes room, and a not-ready pod would hold up
 * rollouts (docs/operations.md, "Memory caps").
 *
 * Kafka answers when a probe (a metadata request every 2 s, off the loop)
 * does, or, once probes have failed for SL_HEALTH_DOWN_MS, it is called
 * unreachable; the consumer and the reader also say so when librdkafka
 * finds all their brokers down.
 *
 * Lag: per pipeline, the input records its assigned partitions hold beyond
 * what their tasks have read (sluice_consumer_lag), from the consumer's
 * cached watermarks, or for a partition not fetched now (rebuilding, or
 * paused for a cap or a lookup) from its end looked up every second.
 *
 * Loop thread only.
 */
#ifndef SL_HEALTH_H
#define SL_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "runtime.h"

typedef struct sl_health_s sl_health_t;

/* Its state (rt->health) and series; http (may be NULL) is told the
 * readiness.  _destroy(NULL) is a no-op. */
sl_health_t *sl_health_new(sl_runtime_t *rt, sl_http_t *http);
void sl_health_destroy(sl_health_t *h);

/* Works the readiness out again (the update_ready hook, runtime.h), with
 * the gauges that count partitions by state and the caps' usage. */
void sl_health_update_ready(sl_runtime_t *rt);

/* Kafka is unreachable since since_ms (a client found all its brokers
 * down), or answers again. */
void sl_health_kafka_up(sl_runtime_t *rt, int up, const char *why,
                        int64_t since_ms);

/* Every second: asks the ends of the input partitions not fetched, sets
 * each pipeline's lag gauge, and gives the total lag and the sum of the
 * tasks' next offsets (what was read) in *lag and *read. */
void sl_health_lag_tick(sl_runtime_t *rt, int64_t now, int64_t *lag,
                        int64_t *read);

/* Every second: the allocator's gauges and the Kafka probe. */
void sl_health_tick(sl_runtime_t *rt, int64_t now);

/* The records pl's input holds beyond what its tasks have read; with
 * running_only, over the partitions being read now (not rebuilding, not
 * paused for a cap or a lookup).  *read (may be NULL) gets the sum of the
 * tasks' next offsets added. */
int64_t sl_health_pipeline_lag(sl_runtime_t *rt, sl_pipeline_t *pl,
                               int running_only, int64_t *read);

#endif
