/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reader.h — the reader's records: to the task that reads them (its
 * rebuild, or an operator's fetch) or to a pipeline's global table.
 *
 * The reader is an assign-only consumer (no group; clients.c makes it)
 * that reads a changelog partition and a second source while a task
 * rebuilds (task.c), what an operator fetches while it runs
 * (sl_task_fetch(), the throttle's overflow), and the global tables that
 * every instance reads whole, from the beginning, for as long as the
 * process runs (the throttle's rates).  A pipeline's tasks stay
 * REBUILDING until its table was read once to the ends captured at start
 * (sl_op_t table_topic).
 *
 * Loop thread only.
 */
#ifndef SL_READER_H
#define SL_READER_H

#include <stddef.h>

#include "runtime.h"

/* The reader queue's watcher callback (sl_kwatch; opaque is the runtime):
 * takes up to budget records, in batches. */
int sl_reader_serve(void *opaque, int budget);

/* Starts reading pl's global table, of cnt partitions (all from the
 * beginning); its ends are looked up now.  -1 and errstr when the reader
 * refuses the assignment. */
int sl_reader_table_start(sl_runtime_t *rt, sl_pipeline_t *pl, int cnt,
                          char *errstr, size_t errstr_size);

/* Frees what sl_reader_table_start() kept for pl (its lookups must be
 * cancelled or answered). */
void sl_reader_table_free(sl_pipeline_t *pl);

#endif
