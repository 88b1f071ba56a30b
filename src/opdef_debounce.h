/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_debounce.h — the debounce operator's definition (opdef.h): its
 * configuration keys, topics and HTTP routes.  Pure.
 */
#ifndef SL_OPDEF_DEBOUNCE_H
#define SL_OPDEF_DEBOUNCE_H

#include <stdint.h>

#include "config.h"
#include "util.h"

typedef enum {
        SL_OUTPUT_JSON = 0,
        SL_OUTPUT_PROTOBUF = 1,
} sl_output_format_t;

/* A debounce pipeline's own keys (pc->params).  output is in
 * sl_pipeline_conf_t. */
typedef struct sl_debounce_conf_s {
        int64_t idle_ms;
        int64_t max_age_ms;
        int64_t max_items;
        int64_t max_bytes;
        sl_output_format_t output_format;
        int64_t max_open_groups; /* caps (task.h): 0 = unlimited */
        int64_t max_pending_items;
        int64_t max_pending_bytes;
} sl_debounce_conf_t;

/* The keys of debounce pipeline pc. */
static inline const sl_debounce_conf_t *
sl_debounce_conf(const sl_pipeline_conf_t *pc) {
        sl_assert(pc->type == SL_OP_DEBOUNCE && pc->params);
        return pc->params;
}

#endif
