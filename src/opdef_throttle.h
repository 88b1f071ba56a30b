/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_throttle.h — the throttle operator's definition (opdef.h): its
 * configuration keys, topics and HTTP routes.  Pure.
 */
#ifndef SL_OPDEF_THROTTLE_H
#define SL_OPDEF_THROTTLE_H

#include <stdint.h>

#include "config.h"
#include "parse.h"
#include "util.h"

/* A throttle pipeline's own keys (pc->params); output is in
 * sl_pipeline_conf_t. */
typedef struct sl_throttle_conf_s {
        char *overflow; /* default <name>.overflow */
        char *rates;    /* default <name>.rates */
        sl_rate_t default_rate;
        int64_t ttl_ms;
        int64_t payload_cache_bytes;
        int64_t max_backlog_keys; /* caps (task.h): 0 = unlimited */
        int64_t max_backlog_messages;
        int64_t max_key_bytes;   /* throttle keys' bytes: a cap too */
        int64_t max_rates_bytes; /* the rates table (rates.h) */
} sl_throttle_conf_t;

/* The keys of throttle pipeline pc. */
static inline const sl_throttle_conf_t *
sl_throttle_conf(const sl_pipeline_conf_t *pc) {
        sl_assert(pc->type == SL_OP_THROTTLE && pc->params);
        return pc->params;
}

#endif
