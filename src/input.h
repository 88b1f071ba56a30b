/* SPDX-License-Identifier: Apache-2.0 */
/*
 * input.h — the consumer's records: each to its task, or held back while
 * the transaction cannot take work.
 *
 * The consumer's queue wakes the loop (kwatch.h); its records are taken in
 * batches and handed to their partition's task (sl_task_on_input()).
 * While operators may not produce (runtime.h, sl_runtime_may_produce: a
 * commit's tracked reports awaited with the outbox full, an abort in
 * flight), records are held in a ring, each with its task's epoch, and
 * handed over in order once the transaction settles (sl_input_drain); a
 * record held for a task rebuilt or replaced since is dropped (the task
 * reads it again from its committed offset).  Past SL_INPUT_HELD_MAX
 * records or SL_INPUT_HELD_MAX_BYTES of keys and values, the consumer is
 * simply not polled.
 *
 * librdkafka 2.0.2 stops fetching once queued.min.messages wait in the
 * consumer queue, and looks again only when its broker thread wakes (up to
 * a second later): when a queue that was that full is emptied, every
 * running partition is sought to the record it reads next, which wakes
 * the fetchers (nothing waits in the queue then, so nothing is dropped or
 * read twice).
 *
 * Loop thread only.
 */
#ifndef SL_INPUT_H
#define SL_INPUT_H

#include <stdint.h>

#include "runtime.h"

/* Input records held while the transaction cannot take work; past this
 * many, or this many bytes of keys and values (a batch more at most), the
 * consumer is not polled. */
#define SL_INPUT_HELD_MAX       20000
#define SL_INPUT_HELD_MAX_BYTES (64 << 20)

typedef struct sl_input_s sl_input_t;

/* Its state (rt->input); _destroy(NULL) is a no-op (held records are
 * freed). */
sl_input_t *sl_input_new(sl_runtime_t *rt);
void sl_input_destroy(sl_input_t *in);

/* The consumer is new (clients.c): its queue is watched from now on.
 * sl_input_detach() stops that and drops what is held, before the
 * consumer goes. */
int sl_input_attach(sl_runtime_t *rt, char *errstr, size_t errstr_size);
void sl_input_detach(sl_runtime_t *rt);

/* Hands the held records to their tasks while operators may produce. */
void sl_input_drain(sl_runtime_t *rt);
/* Drops the held records (an abort: they are read again from the
 * committed offsets; a shutdown). */
void sl_input_clear(sl_runtime_t *rt);

/* Input records handed to tasks so far (commit.c measures the pace). */
int64_t sl_input_read_cnt(const sl_runtime_t *rt);
/* A transaction ended: the bytes read for the next one count from 0. */
void sl_input_txn_ended(sl_runtime_t *rt);

/* A fatal error of the consumer: the transaction machine re-creates both
 * clients (txn.h). */
void sl_input_consumer_fatal(sl_runtime_t *rt);

#endif
