/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memlimit.h — the process-wide memory budget ([sluice] memory_limit) that
 * the pipelines' byte caps share (docs/operations.md, Memory caps).
 *
 * A pipeline's caps bound what it holds on this instance (cap.h, task.h);
 * each byte cap (the config rows flagged SL_KF_MEMCAP: delay's and
 * debounce's max_pending_bytes, throttle's max_key_bytes) is set per
 * pipeline, so three pipelines with the default 1 GiB each may hold 3 GiB
 * in a pod given 2 GiB.  memory_limit is what they may hold together:
 *
 *   budget  memory_limit, or with `auto` (the default) SL_MEMLIMIT_PCT % of
 *           the cgroup's memory limit (cgroup v2 memory.max, else v1
 *           memory.limit_in_bytes; "max" or v1's huge "unlimited" value:
 *           none); the rest is for what the byte caps do not count
 *           (librdkafka's buffers, the rebuild's prefetch, per-entry
 *           overheads bounded by the count caps).  0: no budget.
 *   sum     the byte caps of all pipelines, an unlimited one (0) counting
 *           as the whole budget.
 *   share   when sum > budget, each cap becomes cap * budget / sum (at
 *           least 1), rounded down: together they fit the budget.
 *
 * It is applied once, at the start of `sluice run`, to the configuration
 * before the pipelines are made, so every cap, its sluice_cap_limit gauge
 * and its log lines show the effective value.  The caps stay separate
 * counters: a pipeline never takes room another leaves unused.
 *
 * Pure but for reading the cgroup file (paths are parameters, so tests use
 * their own) and one log line per scaled cap.  Not thread-safe: at start.
 */
#ifndef SL_MEMLIMIT_H
#define SL_MEMLIMIT_H

#include <stdint.h>

#include "config.h"

/* The share of the cgroup's memory limit `auto` gives the byte caps. */
#define SL_MEMLIMIT_PCT 75

/* Where the cgroup's limit is read: v2's file, else v1's. */
#define SL_MEMLIMIT_CGROUP_V2 "/sys/fs/cgroup/memory.max"
#define SL_MEMLIMIT_CGROUP_V1 "/sys/fs/cgroup/memory/memory.limit_in_bytes"

/* A limit at or above this (1 EiB) is none: cgroup v1 says "unlimited"
 * with the largest page-aligned int64 (9223372036854771712). */
#define SL_MEMLIMIT_HUGE (INT64_C(1) << 60)

/* The limit a cgroup memory file's text says: bytes (> 0), 0 for none
 * ("max", a value at or above SL_MEMLIMIT_HUGE), -1 when it is not a
 * number (blanks and a newline around it are ignored). */
int64_t sl_memlimit_parse(const char *text);

/* The cgroup's memory limit: from the file v2 when it exists, else from
 * v1; 0 when neither exists or the one read says none or cannot be read.
 * *path is set to the file read (v2 or v1), NULL when none. */
int64_t sl_memlimit_cgroup(const char *v2, const char *v1, const char **path);

/* Scales the n byte caps in caps (bytes; 0 unlimited) to share budget:
 * when budget > 0 and their sum (an unlimited one counting as budget) is
 * larger, each becomes cap * budget / sum, at least 1.  Returns that sum
 * (at most INT64_MAX); the caps are left as they are when it fits. */
int64_t sl_memlimit_share(int64_t budget, int64_t *caps, int n);

/* Applies conf's memory_limit to its pipelines' byte caps, reading the
 * cgroup's limit from v2 or v1 (sl_memlimit_cgroup) when it is `auto`:
 * logs the budget and each cap it scales, with the arithmetic.  Returns
 * the budget (0: none). */
int64_t sl_memlimit_apply(sl_conf_t *conf, const char *v2, const char *v1);

#endif
