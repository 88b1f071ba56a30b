/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_debounce.c — the debounce operator's definition (opdef.h): the
 * keys of a debounce pipeline and the rule between them, its topics (the
 * output) and its HTTP routes.  Pure: the runtime half is op_debounce.c,
 * `sluice inspect` inspect_debounce.c.
 */
#include "opdef_debounce.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "apireq.h"
#include "debounce.h"

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
    {"max_pending_bytes", SL_KT_SIZE, NULL, "1GiB", "0", NULL, SL_KF_MEMCAP,
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

/* POST .../groups/{key}/flush: the control record (debounce.h: key = the
 * group, header sluice-control: flush, an empty value), checked as the
 * operator will check it, written to the group's input partition after
 * the items a producer with the same partitioner sent before it.  202 once
 * durable: the owner flushes when it reads the record, in the transaction
 * that reads it (reason "requested"); a group that is not open by then is
 * a counted no-op. */
static const sl_hdr_t flush_hdrs[] = {
    {SL_DEBOUNCE_CONTROL_HEADER, SL_DEBOUNCE_CONTROL_FLUSH,
     sizeof(SL_DEBOUNCE_CONTROL_FLUSH) - 1},
};

static int flush_build(sl_apiwrite_t *w) {
        const char *reason = NULL;
        char detail[200];

        if (sl_debounce_check_control(
                w->key, w->keylen, 1, SL_DEBOUNCE_CONTROL_FLUSH,
                strlen(SL_DEBOUNCE_CONTROL_FLUSH), &reason, detail,
                sizeof(detail)) != SL_DEBOUNCE_FLUSH) {
                w->status = 400;
                w->code = reason ? reason : "bad-key";
                snprintf(w->msg, sizeof(w->msg), "%s", detail);
                return -1;
        }
        /* "" with length 0: an empty value, not a null one. */
        w->value = "";
        w->value_len = 0;
        w->hdrs = flush_hdrs;
        w->hdr_cnt = SL_ARRAY_SIZE(flush_hdrs);
        return 0;
}

static json_t *flush_answer(const sl_apiwrite_t *w, int *status) {
        *status = 202;
        return json_pack("{s:s, s:s%, s:i, s:I}", "pipeline", w->pc->name,
                         "key", w->key, w->keylen, "partition",
                         (int)w->partition, "offset", (json_int_t)w->offset);
}

/* GET looks a group up. */
static const sl_route_t debounce_routes[] = {
    {"GET", "/v1/pipelines/{pipeline}/groups/{key}", "groups", NULL,
     SL_ROUTE_LOOKUP},
    {"POST", "/v1/pipelines/{pipeline}/groups/{key}/flush", "groups", "flush",
     SL_ROUTE_WRITE, "input", flush_build, flush_answer, NULL},
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
    .routes = debounce_routes,
    .route_cnt = SL_ARRAY_SIZE(debounce_routes),
    .api_rank = 3,
};
