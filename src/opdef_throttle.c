/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef_throttle.c — the throttle operator's definition (opdef.h): the
 * keys of a throttle pipeline, its topics (the overflow, the rates table,
 * the output) and its HTTP routes.  Pure: the runtime half is
 * op_throttle.c, `sluice inspect` inspect_throttle.c.
 */
#include "opdef_throttle.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "apireq.h"
#include "topicplan.h"

static const sl_conf_key_t throttle_keys[] = {
    SL_CONF_KEY_OUTPUT,
    {"overflow", SL_KT_TOPIC, NULL, "NAME.overflow", NULL, NULL, SL_KF_NONEMPTY,
     SL_CONF_FIELD(sl_throttle_conf_t, overflow),
     "Topic holding the backlog of messages over their key's rate."},
    {"rates", SL_KT_TOPIC, NULL, "NAME.rates", NULL, NULL, SL_KF_NONEMPTY,
     SL_CONF_FIELD(sl_throttle_conf_t, rates),
     "Compacted topic of per-key rates (key = throttle key or `*`, value "
     "such as `100/s burst=10`)."},
    {"default_rate", SL_KT_RATE, NULL, "100/s", NULL, NULL, 0,
     SL_CONF_FIELD(sl_throttle_conf_t, default_rate),
     "Rate of keys without an entry in the rates topic (and no `*` "
     "entry)."},
    {"ttl", SL_KT_DURATION, NULL, "6h", "1s", "30d", 0,
     SL_CONF_FIELD(sl_throttle_conf_t, ttl_ms),
     "A message not sent within this time goes to the DLQ as `expired`; "
     "also caps the sluice-ttl header."},
    {"payload_cache", SL_KT_SIZE, NULL, "64MiB", "0", NULL, 0,
     SL_CONF_FIELD(sl_throttle_conf_t, payload_cache_bytes),
     "Memory for backlog payloads; the rest are re-read from the overflow "
     "topic."},
    {"max_backlog_keys", SL_KT_INT, NULL, "5000000", "0", NULL, 0,
     SL_CONF_FIELD(sl_throttle_conf_t, max_backlog_keys),
     "Keys held in memory on this instance (a backlog, or a bucket not yet "
     "full again); a record for a new key waits (input paused) at the cap. "
     "~200 B + key per key: 5M ~ 1-1.5 GiB. 0 = unlimited."},
    {"max_backlog_messages", SL_KT_INT, NULL, "20000000", "0", NULL, 0,
     SL_CONF_FIELD(sl_throttle_conf_t, max_backlog_messages),
     "Messages buffered in the backlog on this instance; a record that "
     "would be buffered waits (input paused) at the cap. The index is <= 32 "
     "B per message: 20M ~ 640 MiB. 0 = unlimited."},
    {"max_key_bytes", SL_KT_SIZE, NULL, "1GiB", "0", NULL, SL_KF_MEMCAP,
     SL_CONF_FIELD(sl_throttle_conf_t, max_key_bytes),
     "Memory of the keys held on this instance (their bytes and ~200 B "
     "each); a record for a new key waits (input paused) at the cap. 0 = "
     "unlimited."},
    {"max_rates_bytes", SL_KT_SIZE, NULL, "256MiB", "0", NULL, 0,
     SL_CONF_FIELD(sl_throttle_conf_t, max_rates_bytes),
     "Memory of the rates table on each instance (keys and ~100 B each); a "
     "rates record for a new key past it is ignored (the key keeps the "
     "default rate), logged and counted as rejected. 0 = unlimited."},
};

/* The overflow is kept one hour beyond the TTL, in segments of at most an
 * hour so that expired backlog leaves the disk promptly. */
#define OVERFLOW_MARGIN_MS  (60 * 60 * 1000LL)
#define OVERFLOW_SEGMENT_MS (60 * 60 * 1000LL)

static void overflow_settings(sl_topic_spec_t *s,
                              const sl_pipeline_conf_t *pc) {
        int64_t ttl = sl_throttle_conf(pc)->ttl_ms;

        ttl = ttl > 0 ? ttl : 0;
        sl_topicplan_spec_set(
            s, "cleanup.policy", "delete", SL_TCHECK_EQ, "delete",
            "the backlog holds many records per key; compaction "
            "would drop all but the last");
        sl_topicplan_spec_set_ms(s, "retention.ms", ttl + OVERFLOW_MARGIN_MS,
                                 SL_TCHECK_GE, ttl,
                                 "backlog would be deleted before its TTL "
                                 "(the pipeline's ttl)");
        sl_topicplan_spec_set(s, "retention.bytes", "-1", SL_TCHECK_EQ, "-1",
                              "a size limit deletes backlog before its TTL");
        sl_topicplan_spec_set_ms(s, "segment.ms",
                                 ttl > 0 ? SL_MIN(OVERFLOW_SEGMENT_MS, ttl)
                                         : OVERFLOW_SEGMENT_MS,
                                 SL_TCHECK_NONE, 0, NULL);
}

/* The rates topic is a small global table (key -> rate) every instance
 * reads whole: compacted like a changelog, one partition. */
static void rates_settings(sl_topic_spec_t *s, const sl_pipeline_conf_t *pc) {
        (void)pc;
        sl_topicplan_spec_compacted(s, 0);
}

static const sl_roledef_t throttle_roles[] = {
    {"overflow", "overflow",
     SL_ROLE_INTERNAL | SL_ROLE_COPART | SL_ROLE_READ | SL_ROLE_WRITE, 0,
     SL_ACL_WHY_OVERFLOW, 0, overflow_settings},
    {"rates", "rates", SL_ROLE_INTERNAL | SL_ROLE_READ | SL_ROLE_TABLE, 1,
     SL_ACL_WHY_RATES, SL_ACL_WHY_API_RATES, rates_settings},
    {"output", "output", SL_ROLE_OUTPUT | SL_ROLE_WRITE | SL_ROLE_OPTIONAL, 0,
     SL_ACL_WHY_OUTPUT, 0, NULL},
};

/* PUT .../rates/{key}: {"rate": "100/s", "burst": 20} (burst optional)
 * becomes the rates record an operator would write with kcat (value
 * "100/s burst=20"), checked as the operators will read it; 200 with the
 * rate as they read it. */
static int rate_put_build(sl_apiwrite_t *w) {
        json_t *j = json_loadb(w->body, w->bodylen, 0, NULL), *rate, *burst;
        char errstr[200];
        sl_rate_t r;

        w->status = 400;
        if (!json_is_object(j) || !(rate = json_object_get(j, "rate")) ||
            !json_is_string(rate) || json_object_size(j) > 2 ||
            (json_object_size(j) == 2 && !json_object_get(j, "burst"))) {
                json_decref(j);
                w->code = "bad-body";
                snprintf(w->msg, sizeof(w->msg),
                         "expected {\"rate\": \"100/s\", \"burst\": 20} "
                         "(burst optional)");
                return -1;
        }
        burst = json_object_get(j, "burst");
        if (burst && !json_is_number(burst)) {
                json_decref(j);
                w->code = "bad-rate";
                snprintf(w->msg, sizeof(w->msg), "burst: a number");
                return -1;
        }
        if (burst)
                snprintf(w->text, sizeof(w->text), "%.60s burst=%.17g",
                         json_string_value(rate), json_number_value(burst));
        else
                snprintf(w->text, sizeof(w->text), "%.60s",
                         json_string_value(rate));
        json_decref(j);
        if (sl_parse_rate(w->text, &r, errstr, sizeof(errstr)) != 0) {
                w->code = "bad-rate";
                snprintf(w->msg, sizeof(w->msg), "%s", errstr);
                return -1;
        }
        w->num[0] = r.per_sec;
        w->num[1] = r.burst;
        w->value = w->text;
        w->value_len = strlen(w->text);
        return 0;
}

static json_t *rate_put_answer(const sl_apiwrite_t *w, int *status) {
        *status = 200;
        return json_pack("{s:s, s:s%, s:s, s:f, s:f}", "pipeline", w->pc->name,
                         "key", w->key, w->keylen, "rate", w->text, "per_sec",
                         w->num[0], "burst", w->num[1]);
}

/* GET looks a key up; DELETE returns it to the default rate: a tombstone
 * in the rates topic. */
static const sl_route_t throttle_routes[] = {
    {"GET", "/v1/pipelines/{pipeline}/keys/{key}", "keys", NULL,
     SL_ROUTE_LOOKUP},
    {"PUT", "/v1/pipelines/{pipeline}/rates/{key}", "rates", NULL,
     SL_ROUTE_WRITE, "rates", rate_put_build, rate_put_answer, NULL},
    {"DELETE", "/v1/pipelines/{pipeline}/rates/{key}", "rates", NULL,
     SL_ROUTE_WRITE, "rates", sl_apireq_build_tombstone,
     sl_apireq_answer_no_content, NULL},
};

const sl_opdef_t sl_opdef_throttle = {
    .name = "throttle",
    .type = SL_OP_THROTTLE,
    .keys = throttle_keys,
    .key_cnt = SL_ARRAY_SIZE(throttle_keys),
    .params_size = sizeof(sl_throttle_conf_t),
    .roles = throttle_roles,
    .role_cnt = SL_ARRAY_SIZE(throttle_roles),
    .routes = throttle_routes,
    .route_cnt = SL_ARRAY_SIZE(throttle_routes),
    .api_rank = 2,
};
