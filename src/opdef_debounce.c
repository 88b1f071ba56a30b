/*
 * opdef_debounce.c — the debounce operator's definition (opdef.h): the
 * keys of a debounce pipeline and the rule between them, its topics (the
 * output) and its HTTP routes.  Pure: the runtime half is op_debounce.c,
 * `sluice inspect` inspect_debounce.c.
 */
#include "opdef_debounce.h"

#include <stddef.h>

static const sl_conf_enum_t output_formats[] = {
    {"json", SL_OUTPUT_JSON}, {"protobuf", SL_OUTPUT_PROTOBUF}, {NULL, 0}};

static const sl_conf_key_t debounce_keys[] = {
    SL_CONF_KEY_OUTPUT,
    {"idle", SL_KT_DURATION, NULL, "2s", "1ms", NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, idle_ms),
     "Flush a group after this long without an update (at most max_age)."},
    {"max_age", SL_KT_DURATION, NULL, "30s", "1ms", NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_age_ms),
     "Flush a group when its oldest item is this old."},
    {"max_items", SL_KT_INT, NULL, "1000", "1", "1000000", 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_items),
     "Flush a group when it holds this many items; also the largest "
     "batch."},
    {"max_bytes", SL_KT_SIZE, NULL, "1MiB", "1", "1GiB", 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_bytes),
     "Flush a group when its payloads add up to this size."},
    {"output_format", SL_KT_ENUM, output_formats, "json", NULL, NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, output_format),
     "Batch encoding: `json` or `protobuf` (proto/)."},
    {"max_open_groups", SL_KT_INT, NULL, "1000000", "0", NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_open_groups),
     "Open groups on this instance; a record for a new group waits (input "
     "paused) at the cap. ~250 B + key per group: 1M ~ 250-400 MiB. 0 = "
     "unlimited."},
    {"max_pending_items", SL_KT_INT, NULL, "5000000", "0", NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_pending_items),
     "Pending items on this instance; a record for a new item waits (input "
     "paused) at the cap. ~150-300 B + id per item beyond its payload: 5M "
     "~ 0.7-1.5 GiB. 0 = unlimited."},
    {"max_pending_bytes", SL_KT_SIZE, NULL, "1GiB", "0", NULL, 0,
     SL_CONF_FIELD(sl_debounce_conf_t, max_pending_bytes),
     "Bytes of pending state on this instance (delay: timer keys and data; "
     "debounce: group keys, item ids and payloads); a record that would add "
     "to it waits (input paused) at the cap, which one record may pass. 0 = "
     "unlimited."},
};

/* A group is flushed idle after its last update but at most max_age after
 * its first: idle may not be the longer.  The error blames the key the
 * file set (idle if both). */
static void debounce_finalize(const sl_pipeline_conf_t *pc,
                              sl_conf_check_t *chk) {
        const sl_debounce_conf_t *dc = sl_debounce_conf(pc);
        char a[64], b[64];

        if (dc->idle_ms <= dc->max_age_ms)
                return;
        sl_duration_format(dc->idle_ms, a, sizeof(a));
        sl_duration_format(dc->max_age_ms, b, sizeof(b));
        if (sl_conf_check_set(chk, "idle") ||
            !sl_conf_check_set(chk, "max_age"))
                sl_conf_check_error(chk, "idle",
                                    "%s is longer than max_age (%s)", a, b);
        else
                sl_conf_check_error(chk, "max_age",
                                    "%s is shorter than idle (%s)", b, a);
}

static const sl_roledef_t debounce_roles[] = {
    {"output", "output", SL_ROLE_OUTPUT | SL_ROLE_WRITE | SL_ROLE_OPTIONAL, 0,
     SL_ACL_WHY_OUTPUT, 0, NULL},
};

const sl_opdef_t sl_opdef_debounce = {
    .name = "debounce",
    .type = SL_OP_DEBOUNCE,
    .keys = debounce_keys,
    .key_cnt = SL_ARRAY_SIZE(debounce_keys),
    .params_size = sizeof(sl_debounce_conf_t),
    .finalize = debounce_finalize,
    .roles = debounce_roles,
    .role_cnt = SL_ARRAY_SIZE(debounce_roles),
    .api_rank = 3,
};
