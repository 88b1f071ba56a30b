/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parts.h — which input partitions a pipeline serves, and how that number
 * grows while sluice runs.
 *
 * A pipeline's changelog, overflow (throttle) and dlq are co-partitioned
 * with its input: sluice writes what it did for input partition p to
 * partition p of each (docs/architecture.md, "Topics of a pipeline").  So a
 * partition of the input is served only when every one of those topics has
 * it too.
 *
 * At start (`sluice run`), sl_parts_check_start() compares every pipeline's
 * topics with its input and refuses to run when one is missing or differs,
 * naming the topic, both counts and the command that fixes it.
 *
 * While running, the input may gain partitions (kafka-topics --alter).  The
 * consumer notices at its next metadata refresh, the group rebalances and a
 * member is assigned the new partitions.  Such a partition (>= the count the
 * pipeline serves) stays paused, with no task and so no committed offset,
 * while this module asks the broker for the partition counts again (off the
 * loop, every 2 s while such partitions wait):
 *
 *   assigned p >= served ──► checking ──┬─ a topic has fewer than the input
 *                              ▲        │    ─► WAITING: ERROR logged once,
 *                              │        │       /readyz 503 naming topics,
 *                              └─ 2 s ──┘       counts and the fix, gauge
 *                                       │       sluice_partition_mismatch
 *                                       └─ every topic has enough (twice in
 *                                          a row) ─► the task array grows,
 *                                          tasks are created and rebuild
 *
 * `sluice topics apply` adds the missing partitions to those topics; the
 * next check sees them and the partitions are served without a restart.
 * "Twice in a row": after the first check that finds enough, the producer
 * is told to refresh those topics' metadata (a request that does not wait
 * for its answer), so that it knows the new partitions before a task writes
 * to them; the tasks start at the next check.
 *
 * All on the loop thread, except sl_parts_check_start(), which blocks and is
 * meant for startup, before the loop runs.
 */
#ifndef SL_PARTS_H
#define SL_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "runtime.h"

typedef struct sl_parts_s sl_parts_t;

/* Start-up check of every pipeline of conf: the input exists, and each
 * internal topic exists, the co-partitioned ones (changelog, overflow, dlq)
 * with the input's partition count.  Each problem is logged (ERROR,
 * facility TOPICS) as one sentence naming the topic, both counts and the
 * fix.  On success returns 0 and the input's partition count of pipeline i
 * in input_cnt[i] (an array of conf->pipeline_cnt); else -1 with a summary
 * in errstr.  Blocks on rk (metadata requests, 10 s each at most). */
int sl_parts_check_start(rd_kafka_t *rk, const sl_conf_t *conf, int *input_cnt,
                         char *errstr, size_t errstr_size);

/* Run-time state of pl (metrics registered now); pl->partition_cnt is the
 * count served so far.  sl_parts_destroy(NULL) is a no-op; destroy before
 * the runtime's kquery handle. */
sl_parts_t *sl_parts_new(sl_runtime_t *rt, sl_pipeline_t *pl);
void sl_parts_destroy(sl_parts_t *ps);

/* The consumer was assigned partition p >= pl->partition_cnt (the caller
 * paused it): it waits, and the counts are checked again now. */
void sl_parts_assigned(sl_pipeline_t *pl, int32_t p);
/* Partition p was revoked or lost: it no longer waits. */
void sl_parts_revoked(sl_pipeline_t *pl, int32_t p);
/* The consumer is gone (clients re-created): nothing waits. */
void sl_parts_reset(sl_pipeline_t *pl);

/* Every second: checks again where partitions wait. */
void sl_parts_tick(sl_runtime_t *rt, int64_t now_ms);

/* 1 and a reason for /readyz when some pipeline has partitions waiting,
 * else 0. */
int sl_parts_trouble(const sl_runtime_t *rt, char *why, size_t size);

#endif
