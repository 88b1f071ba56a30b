/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline.h — the pipelines of a running process: their set-up from the
 * configuration, their tasks by input partition, and the walks over them.
 *
 * A pipeline (task.h, sl_pipeline_t) is one [pipeline NAME] section: its
 * operator, its per-pipeline operator data, its series, its caps, and one
 * task slot per input partition it serves (NULL where this member is not
 * assigned the partition).  The array of pipelines (rt->pipelines) is
 * made once at start, before the loop runs, after the topics were checked
 * (parts.h) and their limits learned (targets.h); it never changes size
 * (a pipeline's task array grows with its input, parts.h).
 *
 * Loop thread only (sl_pipeline_create_all() runs before the loop).
 */
#ifndef SL_PIPELINE_H
#define SL_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "runtime.h"
#include "task.h"

/* Checks every pipeline's topics (blocking: at start), then sets up every
 * pipeline of rt->conf: its operator, tasks array, series, topic watch
 * (parts.h), operator data and global table.  -1 with errstr on failure
 * (what was made is freed by sl_pipeline_destroy_all()). */
int sl_pipeline_create_all(sl_runtime_t *rt, char *errstr, size_t errstr_size);

/* Frees every pipeline (their tasks must be gone: sl_pipeline_drop_tasks()
 * first). */
void sl_pipeline_destroy_all(sl_runtime_t *rt);

/* Destroys every task of every pipeline (the clients are gone, or the
 * process ends). */
void sl_pipeline_drop_tasks(sl_runtime_t *rt);

/* Calls fn(t, opaque) for every task, pipeline by pipeline, partition by
 * partition.  fn may destroy t (and clear its slot), nothing else. */
void sl_pipeline_foreach_task(sl_runtime_t *rt,
                              void (*fn)(sl_task_t *t, void *opaque),
                              void *opaque);

/* The pipeline that reads topic, or NULL. */
sl_pipeline_t *sl_pipeline_by_input(sl_runtime_t *rt, const char *topic);

/* The task of partition p of the pipeline that reads topic, or NULL. */
sl_task_t *sl_pipeline_task(sl_runtime_t *rt, const char *topic, int32_t p);

/* The task of partition p of pipeline index pl_index, or NULL (both out
 * of range too): for records that name their task by index (runtime.h,
 * SL_MSG_TRACK; the outbox). */
sl_task_t *sl_pipeline_task_at(sl_runtime_t *rt, int pl_index, int32_t p);

/* How many tasks this member has. */
int sl_pipeline_task_cnt(sl_runtime_t *rt);

/* 1 when some operator tracks its deliveries (sl_op_t delivered). */
int sl_pipeline_tracks_deliveries(const sl_runtime_t *rt);

/* The HTTP API's lookup (api.h, sl_api_lookup_fn; opaque is the
 * runtime): what the task owning partition p of pipeline pi holds for
 * key, through its operator's describe(). */
sl_api_lookup_t sl_pipeline_describe(void *opaque, int pi, int32_t p,
                                     const void *key, size_t keylen,
                                     char **jsonp);

#endif
