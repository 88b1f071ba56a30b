/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit.h — when transactions commit, and what the process does when one
 * commits, aborts or settles (the hooks of txn.h's state machine).
 *
 * A transaction opens on the first record produced and is committed, with
 * the input offsets of every running task, every commit_interval — or
 * promptly after an operator produced due work (sl_task_commit_soon), or
 * after a short linger that lets clustered deadlines share one commit
 * (sl_task_commit_linger), or when a transaction grew large (input.c).
 * Just before a commit takes the input offsets, operators with a seal
 * hook write what they gathered for the transaction (debounce: one chunk
 * record per group it touched); before that, operators with a precommit
 * hook write their checkpoints once every tracked record was delivered
 * (throttle).
 *
 * While a commit is on the txn worker, input, wake-ups and fetches go on:
 * what operators produce waits in the outbox (outbox.h) and opens the next
 * transaction as soon as the commit returns, before any other commit may
 * start; a commit asked for meanwhile follows at once.  An aborted
 * transaction rebuilds every task from its changelog.
 *
 * While the input is behind (catching up), the regular commit waits up to
 * backlog_commit_interval: a transaction costs the same few round trips
 * however much it holds.
 *
 * Loop thread only.
 */
#ifndef SL_COMMIT_H
#define SL_COMMIT_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "runtime.h"

typedef struct sl_commit_s sl_commit_t;

/* Its state (rt->commit), timers and series; sl_commit_start() starts
 * the regular commit.  _destroy(NULL) is a no-op; the state is freed
 * once the loop has closed its timers. */
sl_commit_t *sl_commit_new(sl_runtime_t *rt);
void sl_commit_start(sl_runtime_t *rt);
void sl_commit_destroy(sl_commit_t *c);

/* The hooks of runtime.h: commit soon; commit soon, lingering for
 * clustered deadlines. */
void sl_commit_soon(sl_runtime_t *rt);
void sl_commit_linger(sl_runtime_t *rt);

/* Every second, with the input's lag and the sum of the tasks' next
 * offsets (health.h): once a burst is caught up, malloc's spare pages and
 * the outbox's spare chunks are given back. */
void sl_commit_trim(sl_runtime_t *rt, int64_t now, int64_t lag, int64_t read);

/* The clients are gone: no commit is wanted any more. */
void sl_commit_lost(sl_runtime_t *rt);

/* The hooks of txn.h (opaque is the runtime). */
rd_kafka_topic_partition_list_t *sl_commit_offsets(void *opaque, int all);
int sl_commit_reports_pending(void *opaque);
void sl_commit_precommit(void *opaque);
void sl_commit_seal(void *opaque);
void sl_commit_committed(void *opaque,
                         const rd_kafka_topic_partition_list_t *offs);
void sl_commit_aborted(void *opaque);
void sl_commit_resumed(void *opaque);
void sl_commit_delivery(void *opaque, const rd_kafka_message_t *m);

#endif
