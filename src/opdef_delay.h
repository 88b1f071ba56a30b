/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_delay.h — the delay operator's definition (opdef.h): its
 * configuration keys, topics and HTTP routes, and the parameters of its
 * input parser made from them.  Pure.
 */
#ifndef SL_OPDEF_DELAY_H
#define SL_OPDEF_DELAY_H

#include <stdint.h>

#include "config.h"
#include "delay_input.h"
#include "parse.h"
#include "util.h"

/* A delay pipeline's own keys (pc->params). */
typedef struct sl_delay_conf_s {
        char *default_target; /* NULL if none */
        sl_globs_t allowed_targets;
        int64_t max_delay_ms;
        int64_t timestamp_skew_ms;
        sl_input_format_t input_format;
        int64_t max_pending_timers; /* caps (task.h): 0 = unlimited */
        int64_t max_pending_bytes;
        char *payload_topic; /* NULL: payloads kept in memory */
        int64_t payload_cache_bytes;
} sl_delay_conf_t;

/* The keys of delay pipeline pc. */
static inline const sl_delay_conf_t *
sl_delay_conf(const sl_pipeline_conf_t *pc) {
        sl_assert(pc->type == SL_OP_DELAY && pc->params);
        return pc->params;
}

/* Fills params for delay pipeline pc of conf: its keys, and every
 * pipeline's internal topics (refused as targets) in an array params
 * owns.  params borrows conf's strings: conf must outlive it.  Release
 * with sl_delay_params_clear(). */
void sl_delay_params_init(sl_delay_params_t *params, const sl_conf_t *conf,
                          const sl_pipeline_conf_t *pc);
void sl_delay_params_clear(sl_delay_params_t *params);

#endif
