/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_delay.c — the delay operator's definition (opdef.h): the keys of a
 * delay pipeline and the rule between them, its topics (the payload topic,
 * the default target; the targets its timers name), its HTTP routes, and the
 * parameters of the input parser (delay_input.h) made from its keys.
 * Pure: the runtime half is op_delay.c, `sluice inspect`
 * inspect_delay.c.
 */
#include "opdef_delay.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "apireq.h"
#include "topicplan.h"

static const sl_conf_enum_t input_formats[] = {
    {"headers", SL_INPUT_HEADERS},
    {"json-envelope", SL_INPUT_JSON_ENVELOPE},
    {NULL, 0}};

static const sl_conf_key_t delay_keys[] = {
    {"default_target", SL_KT_TOPIC, NULL, "", NULL, NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, default_target),
     "Target topic of timers without a sluice-target header; empty = the "
     "header is required."},
    {"allowed_targets", SL_KT_GLOBS, NULL, "**", NULL, NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, allowed_targets),
     "Glob patterns (comma-separated) a timer's target topic must match: "
     "`*` stays within one dot-separated segment, `**` crosses dots."},
    {"max_delay", SL_KT_DURATION, NULL, "366d", "1s", NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, max_delay_ms),
     "Timers due further in the future go to the DLQ."},
    {"timestamp_skew", SL_KT_DURATION, NULL, "1m", "0", NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, timestamp_skew_ms),
     "A sluice-delay counts from the record's timestamp; one further ahead "
     "of sluice's clock than this (or missing, or before 2010) counts from "
     "when sluice reads the record instead."},
    {"input_format", SL_KT_ENUM, input_formats, "headers", NULL, NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, input_format),
     "`headers`: sluice-* headers; `json-envelope`: a "
     "`{\"topic\",\"message\",\"countdown\"}` value."},
    {"max_pending_timers", SL_KT_INT, NULL, "-1", "-1", NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, max_pending_timers),
     "Pending timers on this instance; a record for a new timer id waits "
     "(input paused) at the cap. -1 = 5M, or 20M with payload_topic; 0 = "
     "unlimited. A timer costs ~60 B beyond its key and data, or ~39 B in "
     "all with payload_topic (sluice_timers_memory_bytes), plus ~25 B while "
     "its partition rebuilds; RSS adds librdkafka's buffers (~0.3 GiB during "
     "a rebuild). 20M with payload_topic: ~0.8 GiB, ~1.6 GiB at the peak "
     "of a rebuild."},
    {"max_pending_bytes", SL_KT_SIZE, NULL, "1GiB", "0", NULL, SL_KF_MEMCAP,
     SL_CONF_FIELD(sl_delay_conf_t, max_pending_bytes),
     "Bytes of pending state on this instance (delay: timer keys and data, "
     "or with payload_topic the index and the payloads held; "
     "debounce: group keys, item ids and payloads); a record that would add "
     "to it waits (input paused) at the cap, which one record may pass. 0 = "
     "unlimited."},
    {"payload_topic", SL_KT_TOPIC, NULL, "", NULL, NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, payload_topic),
     "Compacted topic holding each pending timer's payload, target and "
     "headers, keyed by timer id (`NAME.payloads` by convention): memory "
     "keeps an index, and payloads are read back ahead of their due time "
     "into payload_cache. Empty: payloads are kept in memory."},
    {"payload_cache", SL_KT_SIZE, NULL, "64MiB", "1MiB", NULL, 0,
     SL_CONF_FIELD(sl_delay_conf_t, payload_cache_bytes),
     "Memory for the payloads of timers due soon; the rest are read back "
     "from payload_topic. Used only when payload_topic is set."},
};

/* A default target must be one the pipeline may write to. */
static void delay_finalize(const sl_pipeline_conf_t *pc, sl_conf_check_t *chk) {
        const sl_delay_conf_t *dc = sl_delay_conf(pc);
        char globs[256];

        if (!dc->default_target ||
            sl_globs_match(&dc->allowed_targets, dc->default_target))
                return;
        sl_globs_format(&dc->allowed_targets, globs, sizeof(globs));
        sl_conf_check_error(chk, "default_target",
                            "'%s' does not match allowed_targets (%s)",
                            dc->default_target, globs);
}

/* The payload topic is a table (timer id -> its record) like the
 * changelog, created with the changelog's settings so that the payloads of
 * fired and cancelled timers leave the disk within the hour.  Only the
 * policy is checked on an existing topic: the changelog's bounds keep its
 * rebuild short, and this topic is read a payload at a time by offset,
 * not whole at a rebuild. */
static void payloads_settings(sl_topic_spec_t *s,
                              const sl_pipeline_conf_t *pc) {
        (void)pc;
        sl_topicplan_spec_compacted(s, 0);
}

static const sl_roledef_t delay_roles[] = {
    {"payloads", "payload_topic",
     SL_ROLE_INTERNAL | SL_ROLE_COPART | SL_ROLE_READ | SL_ROLE_WRITE |
         SL_ROLE_OPTIONAL,
     0, SL_ACL_WHY_PAYLOADS, 0, payloads_settings},
    {"output", "default_target",
     SL_ROLE_OUTPUT | SL_ROLE_WRITE | SL_ROLE_OPTIONAL | SL_ROLE_FALLBACK, 0,
     SL_ACL_WHY_DEFAULT_TARGET, 0, NULL},
};

static const sl_globs_t *delay_targets(const sl_pipeline_conf_t *pc) {
        return &sl_delay_conf(pc)->allowed_targets;
}

/* PUT .../timers/{id}: the body becomes the record a producer of the
 * header format would write (apireq.h), checked as the operator will check
 * it, so that a 400 carries the reason the DLQ would have given it; it is
 * written with the request's time as its timestamp, from which a
 * sluice-delay counts, so the owner computes the due time this answer
 * states.  201 when the owner said it held no timer for the id, else 200
 * ("existed": null when it could not tell). */
typedef struct timer_put_s {
        sl_apireq_timer_t body;
        sl_delay_req_t req;
} timer_put_t;

/* A recurring timer's first occurrence, as the owner will find it (the
 * zone and the first instant after the record's timestamp): 0 with
 * req->due_ms, or -1 with the reason the DLQ would give.  A zone cache
 * of its own: the API's threads share none with the loop. */
static int recurring_first(sl_apiwrite_t *w, sl_delay_req_t *req) {
        sl_tzcache_t *zc = sl_tzcache_new();
        sl_tz_t *tz;
        char err[200];
        int rc = sl_recur_tz(&req->recur, zc, &tz, err, sizeof(err));
        if (rc < 0) {
                w->code = "unknown-zone";
                snprintf(w->msg, sizeof(w->msg), "tz: %s", err);
        } else if ((rc = sl_recur_first(&req->recur, tz, req->base_ms,
                                        &req->due_ms, err, sizeof(err)))) {
                w->code = "never-fires";
                snprintf(w->msg, sizeof(w->msg), "%s",
                         rc < 0 ? err
                                : "no occurrence after now within start, "
                                  "until and count");
                rc = -1;
        }
        sl_tzcache_destroy(zc);
        return rc;
}

static int timer_put_build(sl_apiwrite_t *w) {
        const sl_delay_params_t *params = w->data;
        sl_delay_record_t rec;
        timer_put_t *t;
        int reason;

        if (params->input_format != SL_INPUT_HEADERS) {
                w->status = 409;
                w->code = "unsupported-input-format";
                snprintf(w->msg, sizeof(w->msg),
                         "pipeline %s reads json-envelope input; the API "
                         "writes the header format only",
                         w->pc->name);
                return -1;
        }
        w->priv = t = sl_calloc(1, sizeof(*t));
        w->status = 400;
        if (sl_apireq_timer_read(w->body, w->bodylen, &t->body, &w->code,
                                 w->msg, 300))
                return -1;
        rec = (sl_delay_record_t){
            .key = w->key,
            .key_len = w->keylen,
            .value = t->body.value,
            .value_len = t->body.value_len,
            .hdrs = t->body.hdrs,
            .hdr_cnt = t->body.hdr_cnt,
            .timestamp_ms = w->now_ms,
        };
        reason =
            sl_delay_input_parse(params, &rec, w->now_ms, &t->req, w->msg, 300);
        if (reason != SL_DELAY_OK) {
                w->code = sl_delay_reason_str(reason);
                return -1;
        }
        if (t->req.recurring && recurring_first(w, &t->req) == -1)
                return -1;
        w->value = t->body.value;
        w->value_len = t->body.value_len;
        w->hdrs = t->body.hdrs;
        w->hdr_cnt = t->body.hdr_cnt;
        w->timestamp_ms = w->now_ms;
        w->target = t->req.target;
        w->target_partition = t->req.target_partition;
        w->ask_existed = 1;
        return 0;
}

static json_t *timer_put_answer(const sl_apiwrite_t *w, int *status) {
        const timer_put_t *t = w->priv;

        *status = w->existed == 0 ? 201 : 200;
        return json_pack(
            "{s:s, s:s%, s:i, s:I, s:I, s:s, s:o}", "pipeline", w->pc->name,
            "id", w->key, w->keylen, "partition", (int)w->partition, "offset",
            (json_int_t)w->offset, "due", (json_int_t)t->req.due_ms, "target",
            t->req.target, "existed",
            w->existed == -1 ? json_null() : json_boolean(w->existed));
}

static void timer_put_clear(sl_apiwrite_t *w) {
        timer_put_t *t = w->priv;

        if (!t)
                return;
        sl_delay_req_clear(&t->req);
        sl_apireq_timer_clear(&t->body);
        free(t);
        w->priv = NULL;
}

/* PUT .../schedules/{id}: a timer PUT that must be recurring (every or
 * cron), so that a client who meant a schedule never makes a one-shot
 * timer by leaving the field out. */
static int schedule_put_build(sl_apiwrite_t *w) {
        const timer_put_t *t;

        if (timer_put_build(w) == -1)
                return -1;
        t = w->priv;
        if (t->req.recurring)
                return 0;
        w->status = 400;
        w->code = "not-a-schedule";
        snprintf(w->msg, sizeof(w->msg),
                 "a schedule needs \"every\" or \"cron\" (a one-shot "
                 "timer is PUT under /timers)");
        return -1;
}

/* GET looks a timer up; DELETE cancels it: a null value for the id.  An id
 * names one timer, one-shot or recurring: /schedules/{id} is the same id
 * seen as a schedule, whose GET answers 404 not-a-schedule for a one-shot
 * timer.  The first lookup route is the one forwarded to an owner. */
static const sl_route_t delay_routes[] = {
    {"PUT", "/v1/pipelines/{pipeline}/timers/{id}", "timers", NULL,
     SL_ROUTE_WRITE, "input", timer_put_build, timer_put_answer,
     timer_put_clear},
    {"GET", "/v1/pipelines/{pipeline}/timers/{id}", "timers", NULL,
     SL_ROUTE_LOOKUP},
    {"DELETE", "/v1/pipelines/{pipeline}/timers/{id}", "timers", NULL,
     SL_ROUTE_WRITE, "input", sl_apireq_build_tombstone,
     sl_apireq_answer_no_content, NULL},
    {"PUT", "/v1/pipelines/{pipeline}/schedules/{id}", "schedules", NULL,
     SL_ROUTE_WRITE, "input", schedule_put_build, timer_put_answer,
     timer_put_clear},
    {"GET", "/v1/pipelines/{pipeline}/schedules/{id}", "schedules", NULL,
     SL_ROUTE_LOOKUP, .needs = "schedule", .lacks = "not-a-schedule"},
    {"DELETE", "/v1/pipelines/{pipeline}/schedules/{id}", "schedules", NULL,
     SL_ROUTE_WRITE, "input", sl_apireq_build_tombstone,
     sl_apireq_answer_no_content, NULL},
};

/* The API checks a timer with the parameters of the operator's input. */
static void *delay_api_new(const sl_conf_t *conf, int pipeline) {
        sl_delay_params_t *params = sl_malloc(sizeof(*params));
        sl_delay_params_init(params, conf, &conf->pipelines[pipeline]);
        return params;
}

static void delay_api_destroy(void *data) {
        if (!data)
                return;
        sl_delay_params_clear(data);
        free(data);
}

const sl_opdef_t sl_opdef_delay = {
    .name = "delay",
    .type = SL_OP_DELAY,
    .keys = delay_keys,
    .key_cnt = SL_ARRAY_SIZE(delay_keys),
    .params_size = sizeof(sl_delay_conf_t),
    .finalize = delay_finalize,
    .roles = delay_roles,
    .role_cnt = SL_ARRAY_SIZE(delay_roles),
    .targets = delay_targets,
    .routes = delay_routes,
    .route_cnt = SL_ARRAY_SIZE(delay_routes),
    .api_rank = 1,
    .api_new = delay_api_new,
    .api_destroy = delay_api_destroy,
};

void sl_delay_params_init(sl_delay_params_t *params, const sl_conf_t *conf,
                          const sl_pipeline_conf_t *pc) {
        const sl_delay_conf_t *dc = sl_delay_conf(pc);
        int n = 0;

        memset(params, 0, sizeof(*params));
        params->default_target = dc->default_target;
        params->allowed_targets = &dc->allowed_targets;
        params->max_delay_ms = dc->max_delay_ms;
        params->timestamp_skew_ms = dc->timestamp_skew_ms;
        params->max_record_bytes = pc->max_record_bytes;
        params->input_format = dc->input_format;
        /* Every pipeline's internal topics are refused as targets. */
        params->internal_topics = sl_conf_internal_topics(conf, &n);
        params->internal_cnt = n;
}

void sl_delay_params_clear(sl_delay_params_t *params) {
        free((void *)params->internal_topics);
        memset(params, 0, sizeof(*params));
}
