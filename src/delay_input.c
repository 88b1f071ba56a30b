/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delay_input.c — one delay input record to a schedule/cancel request or a
 * DLQ reason (see delay_input.h for the contract).
 *
 * DESIGN
 *
 * The record is read in a fixed order, so a record with several faults
 * always gets the same reason:
 *
 *   1. key        null or empty key: the id is      missing-key for a
 *                 "<partition>-<offset>"            cancel (null value)
 *   2. cancel     null value: done (headers ignored)
 *   3. size       key and value over max_record_bytes oversize
 *   4. headers    a control header twice or null    bad-header
 *   5. envelope   (json-envelope mode) parse it     bad-envelope
 *   6. target     header, envelope or default       missing-target,
 *                 legal Kafka topic name            bad-header / bad-envelope
 *   7. due        exactly one of sluice-delay, sluice-at, countdown, at;
 *                 parsed; from 1970 to year 9999    missing-due,
 *                 (checked before any arithmetic);  conflicting-due,
 *                 within max_delay; a delay counts  bad-delay, bad-at,
 *                 from the record's timestamp       delay-too-long
 *                 (sl_delay_base_ms)
 *   8. partition  non-negative int32                bad-target-partition
 *   9. target     not internal (Kafka's "__*" or    target-internal,
 *                 any pipeline's own topics),
 *                 matches the globs
 *                                                   target-not-allowed
 *
 * Nothing is copied that does not have to be: the request points into the
 * caller's record, except the target name (copied into the request so it is
 * NUL-terminated for glob matching and for librdkafka) and, in envelope
 * mode, the parsed JSON document that the payload points into.
 */
#include "delay_input.h"
#include "topicname.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const reason_names[SL_DELAY_REASON_CNT] = {
    [SL_DELAY_OK] = "ok",
    [SL_DELAY_MISSING_KEY] = "missing-key",
    [SL_DELAY_MISSING_TARGET] = "missing-target",
    [SL_DELAY_MISSING_DUE] = "missing-due",
    [SL_DELAY_CONFLICTING_DUE] = "conflicting-due",
    [SL_DELAY_BAD_DELAY] = "bad-delay",
    [SL_DELAY_BAD_AT] = "bad-at",
    [SL_DELAY_TOO_LONG] = "delay-too-long",
    [SL_DELAY_TARGET_NOT_ALLOWED] = "target-not-allowed",
    [SL_DELAY_TARGET_INTERNAL] = "target-internal",
    [SL_DELAY_BAD_TARGET_PARTITION] = "bad-target-partition",
    [SL_DELAY_BAD_ENVELOPE] = "bad-envelope",
    [SL_DELAY_OVERSIZE] = "oversize",
    [SL_DELAY_BAD_HEADER] = "bad-header",
    [SL_DELAY_BAD_SCHEDULE] = "bad-schedule",
};

const char *sl_delay_reason_str(int reason) {
        if (reason < 0 || reason >= SL_DELAY_REASON_CNT)
                return "unknown";
        return reason_names[reason];
}

/* The control headers this module consumes. */
enum {
        CTL_TARGET,
        CTL_DELAY,
        CTL_AT,
        CTL_TARGET_KEY,
        CTL_TARGET_PARTITION,
        CTL_RECUR, /* CTL_RECUR + SL_RECUR_*: the recurring headers */
        CTL_CNT = CTL_RECUR + SL_RECUR_HDR_CNT
};

static const char *const ctl_names[CTL_CNT] = {
    [CTL_TARGET] = "sluice-target",
    [CTL_DELAY] = "sluice-delay",
    [CTL_AT] = "sluice-at",
    [CTL_TARGET_KEY] = "sluice-target-key",
    [CTL_TARGET_PARTITION] = "sluice-target-partition",
    [CTL_RECUR + SL_RECUR_EVERY] = "sluice-every",
    [CTL_RECUR + SL_RECUR_CRON] = "sluice-cron",
    [CTL_RECUR + SL_RECUR_TZ] = "sluice-tz",
    [CTL_RECUR + SL_RECUR_START] = "sluice-start",
    [CTL_RECUR + SL_RECUR_UNTIL] = "sluice-until",
    [CTL_RECUR + SL_RECUR_COUNT] = "sluice-count",
    [CTL_RECUR + SL_RECUR_CATCH_UP] = "sluice-catch-up",
};

static int ctl_index(const char *name) {
        if (!name || strncmp(name, "sluice-", 7))
                return -1;
        for (int i = 0; i < CTL_CNT; i++)
                if (!strcmp(name, ctl_names[i]))
                        return i;
        return -1;
}

/* Empties req, writes the detail and returns reason: every refusal goes
 * through here so that a refused request never holds memory. */
static int refuse(sl_delay_req_t *req, int reason, char *detail,
                  size_t detail_size, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int refuse(sl_delay_req_t *req, int reason, char *detail,
                  size_t detail_size, const char *fmt, ...) {
        va_list ap;

        /* Format first: the arguments may point into req. */
        if (detail && detail_size) {
                va_start(ap, fmt);
                vsnprintf(detail, detail_size, fmt, ap);
                va_end(ap);
        }
        sl_delay_req_clear(req);
        return reason;
}

/* Input bytes quoted in a detail (sluice-error-detail and the log) go
 * through sl_escape(): into an EXCERPT_SIZE buffer for bytes taken from the
 * record, and into an ERR_SIZE one for the error texts of parse.c and
 * jansson, which quote fragments of the input as they are. */
#define EXCERPT_SIZE 100
#define ERR_SIZE     160

const char *sl_delay_target_internal(const sl_delay_params_t *params,
                                     const char *target) {
        if (sl_topicname_kafka_internal(target))
                return "an internal topic of Kafka";
        for (int i = 0; i < params->internal_cnt; i++)
                if (params->internal_topics[i] &&
                    !strcmp(target, params->internal_topics[i]))
                        return "an internal topic of sluice";
        return NULL;
}

/* Parses a non-negative int32 in decimal, digits only; -1 if it is not. */
static int64_t parse_partition(const char *s, size_t len) {
        int64_t v = 0;

        if (len == 0 || len > 10)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v <= INT32_MAX ? v : -1;
}

/* Where the due time comes from: exactly one of these may be present. */
enum { DUE_HDR_DELAY, DUE_HDR_AT, DUE_ENV_COUNTDOWN, DUE_ENV_AT, DUE_CNT };

static const char *const due_names[DUE_CNT] = {
    [DUE_HDR_DELAY] = "sluice-delay",
    [DUE_HDR_AT] = "sluice-at",
    [DUE_ENV_COUNTDOWN] = "countdown",
    [DUE_ENV_AT] = "at",
};

/* What the envelope contributes (json-envelope mode). */
typedef struct envelope_s {
        const char *topic; /* NULL: not given */
        size_t topic_len;
        json_t *countdown; /* borrowed from the document; NULL: not given */
        json_t *at;
} envelope_t;

/* Parses the envelope in value; on success the document is owned by req
 * and the payload is set. */
static int parse_envelope(const sl_delay_record_t *rec, sl_delay_req_t *req,
                          envelope_t *env, char *detail, size_t detail_size) {
        json_error_t jerr;
        json_t *root, *topic, *msg;
        char ebuf[ERR_SIZE];

        root = json_loadb(rec->value, rec->value_len,
                          JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!root)
                return refuse(
                    req, SL_DELAY_BAD_ENVELOPE, detail, detail_size,
                    "envelope: %s at byte %d",
                    sl_escape(jerr.text, strlen(jerr.text), ebuf, sizeof(ebuf)),
                    jerr.position);
        req->priv_json = root;
        if (!json_is_object(root))
                return refuse(req, SL_DELAY_BAD_ENVELOPE, detail, detail_size,
                              "envelope: not a JSON object");

        if ((topic = json_object_get(root, "topic"))) {
                if (!json_is_string(topic))
                        return refuse(req, SL_DELAY_BAD_ENVELOPE, detail,
                                      detail_size, "topic: not a string");
                env->topic = json_string_value(topic);
                env->topic_len = json_string_length(topic);
        }

        if (!(msg = json_object_get(root, "message")))
                return refuse(req, SL_DELAY_BAD_ENVELOPE, detail, detail_size,
                              "envelope: no message");
        if (json_is_string(msg)) {
                req->payload = json_string_value(msg);
                req->payload_len = json_string_length(msg);
        } else {
                req->priv_dumped =
                    json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!req->priv_dumped)
                        return refuse(req, SL_DELAY_BAD_ENVELOPE, detail,
                                      detail_size,
                                      "message: cannot be encoded");
                req->payload = req->priv_dumped;
                req->payload_len = strlen(req->priv_dumped);
        }

        env->countdown = json_object_get(root, "countdown");
        env->at = json_object_get(root, "at");
        return SL_DELAY_OK;
}

int64_t sl_delay_base_ms(int64_t timestamp_ms, int64_t now_ms, int64_t skew_ms,
                         sl_delay_base_t *basep) {
        sl_delay_base_t base = SL_DELAY_BASE_TIMESTAMP;
        int64_t ahead;
        if (timestamp_ms < 0)
                base = SL_DELAY_BASE_READ_NO_TS;
        else if (timestamp_ms < SL_DELAY_TS_MIN_MS)
                base = SL_DELAY_BASE_READ_PAST;
        else if (skew_ms < 0 ||
                 __builtin_sub_overflow(timestamp_ms, now_ms, &ahead) ||
                 ahead > skew_ms)
                base = SL_DELAY_BASE_READ_FUTURE;
        *basep = base;
        return base == SL_DELAY_BASE_TIMESTAMP ? timestamp_ms : now_ms;
}

/* An envelope's "countdown": seconds, possibly fractional, rounded to the
 * ms.  Returns SL_DELAY_OK or a reason. */
static int read_countdown(json_t *v, int64_t *delay_ms, sl_delay_req_t *req,
                          char *detail, size_t detail_size) {
        double ms;
        if (json_is_integer(v)) {
                json_int_t s = json_integer_value(v);
                if (s < 0)
                        return refuse(req, SL_DELAY_BAD_DELAY, detail,
                                      detail_size, "countdown: negative");
                if (s > INT64_MAX / 1000)
                        return refuse(
                            req, SL_DELAY_TOO_LONG, detail, detail_size,
                            "countdown: %" PRId64 " s is too far ahead",
                            (int64_t)s);
                *delay_ms = (int64_t)s * 1000;
                return SL_DELAY_OK;
        }
        if (!json_is_real(v))
                return refuse(req, SL_DELAY_BAD_DELAY, detail, detail_size,
                              "countdown: not a number");
        ms = json_real_value(v) * 1000.0;
        if (ms < 0)
                return refuse(req, SL_DELAY_BAD_DELAY, detail, detail_size,
                              "countdown: negative");
        if (ms >= 9.2e18)
                return refuse(req, SL_DELAY_TOO_LONG, detail, detail_size,
                              "countdown: %g s is too far ahead",
                              json_real_value(v));
        *delay_ms = llround(ms);
        return SL_DELAY_OK;
}

/* An envelope's "at": epoch ms as a number, or a string as in sluice-at.
 * Returns SL_DELAY_OK or a reason. */
static int read_env_at(json_t *v, int64_t *at_ms, sl_delay_req_t *req,
                       char *detail, size_t detail_size) {
        char err[128], ebuf[ERR_SIZE];
        if (json_is_integer(v)) {
                *at_ms = (int64_t)json_integer_value(v);
        } else if (json_is_real(v)) {
                double d = json_real_value(v);
                if (!(d > -9.2e18 && d < 9.2e18))
                        return refuse(req, SL_DELAY_BAD_AT, detail, detail_size,
                                      "at: out of range");
                *at_ms = llround(d);
        } else if (json_is_string(v)) {
                if (sl_parse_timestamp_ms_n(json_string_value(v),
                                            json_string_length(v), at_ms, err,
                                            sizeof(err)))
                        return refuse(
                            req, SL_DELAY_BAD_AT, detail, detail_size, "at: %s",
                            sl_escape(err, strlen(err), ebuf, sizeof(ebuf)));
        } else {
                return refuse(req, SL_DELAY_BAD_AT, detail, detail_size,
                              "at: not a number or a string");
        }
        return SL_DELAY_OK;
}

/* Reads the value of due source src (a DUE_* present in ctl or env) into
 * *value_ms: a delay for sluice-delay and countdown, a time for sluice-at and
 * at.  Returns SL_DELAY_OK, or the refusal with req and detail filled. */
static int read_due(int src, const sl_hdr_t *const *ctl, const envelope_t *env,
                    int64_t *value_ms, sl_delay_req_t *req, char *detail,
                    size_t detail_size) {
        char err[128], ebuf[ERR_SIZE];
        const sl_hdr_t *h;
        int r;

        switch (src) {
        case DUE_ENV_COUNTDOWN:
                return read_countdown(env->countdown, value_ms, req, detail,
                                      detail_size);
        case DUE_ENV_AT:
                return read_env_at(env->at, value_ms, req, detail, detail_size);
        case DUE_HDR_DELAY:
                h = ctl[CTL_DELAY];
                r = sl_parse_duration_ms_n(h->value, h->size, value_ms, err,
                                           sizeof(err));
                break;
        default: /* DUE_HDR_AT */
                h = ctl[CTL_AT];
                r = sl_parse_timestamp_ms_n(h->value, h->size, value_ms, err,
                                            sizeof(err));
                break;
        }
        if (r)
                return refuse(req,
                              src == DUE_HDR_DELAY ? SL_DELAY_BAD_DELAY
                                                   : SL_DELAY_BAD_AT,
                              detail, detail_size, "%s: %s", due_names[src],
                              sl_escape(err, strlen(err), ebuf, sizeof(ebuf)));
        return SL_DELAY_OK;
}

/* Reads the one due source into *due_ms; returns a reason. */
static int parse_due(const sl_delay_params_t *params,
                     const sl_hdr_t *const *ctl, const envelope_t *env,
                     int64_t timestamp_ms, int64_t now_ms, sl_delay_req_t *req,
                     char *detail, size_t detail_size) {
        const void *present[DUE_CNT] = {
            [DUE_HDR_DELAY] = ctl[CTL_DELAY],
            [DUE_HDR_AT] = ctl[CTL_AT],
            [DUE_ENV_COUNTDOWN] = env->countdown,
            [DUE_ENV_AT] = env->at,
        };
        int src = -1;
        int64_t delay_ms = 0, at_ms = 0, ahead;
        int is_delay, r;

        for (int i = 0; i < DUE_CNT; i++) {
                if (!present[i])
                        continue;
                if (src >= 0)
                        return refuse(req, SL_DELAY_CONFLICTING_DUE, detail,
                                      detail_size, "both %s and %s given",
                                      due_names[src], due_names[i]);
                src = i;
        }
        if (src < 0)
                return refuse(req, SL_DELAY_MISSING_DUE, detail, detail_size,
                              params->input_format == SL_INPUT_JSON_ENVELOPE
                                  ? "no countdown or at (nor sluice-delay "
                                    "or sluice-at header)"
                                  : "no sluice-delay or sluice-at header");

        is_delay = src == DUE_HDR_DELAY || src == DUE_ENV_COUNTDOWN;
        r = read_due(src, ctl, env, is_delay ? &delay_ms : &at_ms, req, detail,
                     detail_size);
        if (r != SL_DELAY_OK)
                return r;

        /* The range first, before any arithmetic on the value; then how
         * far ahead the timer is (a due in the past fires at once). */
        if (is_delay) {
                sl_delay_base_t base;
                int64_t from = sl_delay_base_ms(
                    timestamp_ms, now_ms, params->timestamp_skew_ms, &base);
                if (delay_ms < 0)
                        return refuse(req, SL_DELAY_BAD_DELAY, detail,
                                      detail_size, "%s: negative",
                                      due_names[src]);
                req->base = base;
                if (__builtin_add_overflow(from, delay_ms, &req->due_ms) ||
                    req->due_ms > SL_DELAY_DUE_MAX_MS)
                        return refuse(
                            req, SL_DELAY_TOO_LONG, detail, detail_size,
                            "%s: %" PRId64 " ms ahead is after year 9999",
                            due_names[src], delay_ms);
                ahead = delay_ms;
        } else {
                if (at_ms < SL_DELAY_DUE_MIN_MS)
                        return refuse(req, SL_DELAY_BAD_AT, detail, detail_size,
                                      "%s: %" PRId64
                                      " is before 1970-01-01T00:00:00Z",
                                      due_names[src], at_ms);
                if (at_ms > SL_DELAY_DUE_MAX_MS)
                        return refuse(req, SL_DELAY_TOO_LONG, detail,
                                      detail_size,
                                      "%s: %" PRId64 " is after year 9999",
                                      due_names[src], at_ms);
                req->due_ms = at_ms;
                if (__builtin_sub_overflow(at_ms, now_ms, &ahead))
                        ahead = INT64_MAX; /* a clock beyond reason */
        }
        if (params->max_delay_ms > 0 && ahead > params->max_delay_ms)
                return refuse(req, SL_DELAY_TOO_LONG, detail, detail_size,
                              "%s: %" PRId64 " ms ahead, max_delay is %" PRId64
                              " ms",
                              due_names[src], ahead, params->max_delay_ms);
        return SL_DELAY_OK;
}

/* Step 7 for a recurring timer: -1 when no recurring header is given (a
 * one-shot timer), else a reason (SL_DELAY_OK: req->recur is read). */
static int parse_recurring(const sl_delay_params_t *params,
                           const sl_hdr_t *const *ctl, const envelope_t *env,
                           int64_t timestamp_ms, int64_t now_ms,
                           sl_delay_req_t *req, char *detail,
                           size_t detail_size) {
        const char *vals[SL_RECUR_HDR_CNT];
        size_t lens[SL_RECUR_HDR_CNT];
        const char *one = ctl[CTL_DELAY]   ? "sluice-delay"
                          : ctl[CTL_AT]    ? "sluice-at"
                          : env->countdown ? "countdown"
                          : env->at        ? "at"
                                           : NULL;
        sl_delay_base_t base;

        for (int i = 0; i < SL_RECUR_HDR_CNT; i++) {
                const sl_hdr_t *h = ctl[CTL_RECUR + i];
                vals[i] = h ? h->value : NULL;
                lens[i] = h ? h->size : 0;
        }
        if (!sl_recur_asked(vals))
                return -1;
        if (one)
                return refuse(req, SL_DELAY_CONFLICTING_DUE, detail,
                              detail_size,
                              "both %s and a recurring schedule "
                              "(sluice-every, sluice-cron) given",
                              one);
        req->base_ms = sl_delay_base_ms(timestamp_ms, now_ms,
                                        params->timestamp_skew_ms, &base);
        req->base = base;
        if (sl_recur_parse(&req->recur, vals, lens, req->base_ms, detail,
                           detail_size))
                return refuse(req, SL_DELAY_BAD_SCHEDULE, NULL, 0, "-");
        req->recurring = 1;
        return SL_DELAY_OK;
}

/* The timer id: the key, or for a keyless record "<partition>-<offset>"
 * (req->gen_id); a keyless cancel names nothing. */
static int read_id(const sl_delay_record_t *rec, sl_delay_req_t *req,
                   char *detail, size_t detail_size) {
        int n;

        if (rec->key && rec->key_len) {
                req->id = rec->key;
                req->id_len = rec->key_len;
                return SL_DELAY_OK;
        }
        if (!rec->value)
                return refuse(req, SL_DELAY_MISSING_KEY, detail, detail_size,
                              "a cancel (null value) needs the timer id in "
                              "the key; the key is %s",
                              rec->key ? "empty" : "null");
        n = snprintf(req->gen_id, sizeof(req->gen_id), "%" PRId32 "-%" PRId64,
                     rec->partition, rec->offset);
        sl_assert(n > 0 && (size_t)n < sizeof(req->gen_id));
        req->id = req->gen_id;
        req->id_len = (size_t)n;
        req->id_generated = 1;
        return SL_DELAY_OK;
}

/* The key of the fired record: sluice-target-key (h) when given, else the
 * key the record came with: its id, or for a keyless record no key (null)
 * or the empty key it had. */
static void read_target_key(const sl_hdr_t *h, const sl_delay_record_t *rec,
                            sl_delay_req_t *req) {
        if (h) {
                req->target_key = h->value;
                req->target_key_len = h->size;
                req->has_target_key = 1;
        } else if (req->id_generated && !rec->key) {
                req->null_target_key = 1;
        } else if (req->id_generated) {
                req->target_key = rec->key;
                req->target_key_len = 0;
                req->has_target_key = 1;
        } else {
                req->target_key = req->id;
                req->target_key_len = req->id_len;
        }
}

/* Step 4: finds the control headers (ctl, by CTL_*) among the record's;
 * *npass counts the others, which pass through. A control header given
 * twice, or with a null value, is refused. */
static int read_controls(const sl_delay_record_t *rec,
                         const sl_hdr_t *ctl[CTL_CNT], size_t *npass,
                         sl_delay_req_t *req, char *detail,
                         size_t detail_size) {
        for (size_t i = 0; i < rec->hdr_cnt; i++) {
                int c = ctl_index(rec->hdrs[i].name);
                if (c < 0) {
                        (*npass)++;
                        continue;
                }
                if (ctl[c])
                        return refuse(req, SL_DELAY_BAD_HEADER, detail,
                                      detail_size, "%s: given twice",
                                      ctl_names[c]);
                if (!rec->hdrs[i].value)
                        return refuse(req, SL_DELAY_BAD_HEADER, detail,
                                      detail_size, "%s: null value",
                                      ctl_names[c]);
                ctl[c] = &rec->hdrs[i];
        }
        return SL_DELAY_OK;
}

/* Step 6: req->target from exactly one place: the sluice-target header
 * (h), the envelope's topic, or the pipeline's default_target. A name
 * Kafka would refuse is refused here, with the reason of where it came
 * from. */
static int read_target(const sl_delay_params_t *params, const sl_hdr_t *h,
                       const envelope_t *env, sl_delay_req_t *req, char *detail,
                       size_t detail_size) {
        static const int reasons[] = {SL_DELAY_BAD_HEADER,
                                      SL_DELAY_BAD_ENVELOPE,
                                      SL_DELAY_MISSING_TARGET};
        static const char *const where[] = {"sluice-target", "topic",
                                            "default_target"};
        const char *tname, *why;
        size_t tlen;
        int tsrc; /* target from: 0 header, 1 envelope, 2 default */
        char ex[EXCERPT_SIZE];

        if (h && env->topic)
                return refuse(req, SL_DELAY_BAD_HEADER, detail, detail_size,
                              "sluice-target: the envelope has a topic too");
        if (h) {
                tname = h->value;
                tlen = h->size;
                tsrc = 0;
        } else if (env->topic) {
                tname = env->topic;
                tlen = env->topic_len;
                tsrc = 1;
        } else if (params->default_target && *params->default_target) {
                tname = params->default_target;
                tlen = strlen(tname);
                tsrc = 2;
        } else {
                return refuse(req, SL_DELAY_MISSING_TARGET, detail, detail_size,
                              params->input_format == SL_INPUT_JSON_ENVELOPE
                                  ? "no topic in the envelope, no "
                                    "sluice-target header and no "
                                    "default_target"
                                  : "no sluice-target header and no "
                                    "default_target");
        }
        if ((why = sl_topicname_illegal(tname, tlen)))
                return refuse(req, reasons[tsrc], detail, detail_size,
                              "%s: %s: '%s'", where[tsrc], why,
                              sl_escape(tname, tlen, ex, sizeof(ex)));
        memcpy(req->target, tname, tlen);
        req->target[tlen] = '\0';
        return SL_DELAY_OK;
}

int sl_delay_input_parse(const sl_delay_params_t *params,
                         const sl_delay_record_t *rec, int64_t now_ms,
                         sl_delay_req_t *req, char *detail,
                         size_t detail_size) {
        const sl_hdr_t *ctl[CTL_CNT] = {NULL};
        envelope_t env = {NULL};
        const char *why;
        size_t npass = 0;
        int r;
        char ex[EXCERPT_SIZE];

        sl_assert(params && rec && req && (rec->hdrs || !rec->hdr_cnt));
        memset(req, 0, sizeof(*req));
        req->target_partition = -1;
        if (detail && detail_size)
                detail[0] = '\0';

        /* 1, 2: the id, and cancels. */
        if ((r = read_id(rec, req, detail, detail_size)))
                return r;
        if (!rec->value) {
                req->action = SL_DELAY_CANCEL;
                return SL_DELAY_OK;
        }
        req->action = SL_DELAY_SCHEDULE;

        /* 3: size. */
        if (params->max_record_bytes > 0 &&
            (uint64_t)rec->key_len + rec->value_len >
                (uint64_t)params->max_record_bytes)
                return refuse(req, SL_DELAY_OVERSIZE, detail, detail_size,
                              "key and value are %zu bytes, max_record_bytes "
                              "is %" PRId64,
                              rec->key_len + rec->value_len,
                              params->max_record_bytes);

        /* 4: control headers, each at most once and not null. */
        if ((r = read_controls(rec, ctl, &npass, req, detail, detail_size)))
                return r;

        /* 5: the payload, from the envelope or the value itself. */
        if (params->input_format == SL_INPUT_JSON_ENVELOPE) {
                if ((r = parse_envelope(rec, req, &env, detail, detail_size)))
                        return r;
        } else {
                /* An empty value is "", never NULL: NULL means cancel. */
                req->payload = rec->value;
                req->payload_len = rec->value_len;
        }

        /* 6: the target, from exactly one place. */
        if ((r = read_target(params, ctl[CTL_TARGET], &env, req, detail,
                             detail_size)))
                return r;

        /* 7: when: once, or again and again. */
        if ((r = parse_recurring(params, ctl, &env, rec->timestamp_ms, now_ms,
                                 req, detail, detail_size)) < 0 &&
            (r = parse_due(params, ctl, &env, rec->timestamp_ms, now_ms, req,
                           detail, detail_size)))
                return r;
        if (r > 0)
                return r;

        /* 8: where in the target. */
        read_target_key(ctl[CTL_TARGET_KEY], rec, req);
        if (ctl[CTL_TARGET_PARTITION]) {
                const sl_hdr_t *h = ctl[CTL_TARGET_PARTITION];
                int64_t p = parse_partition(h->value, h->size);
                if (p < 0)
                        return refuse(
                            req, SL_DELAY_BAD_TARGET_PARTITION, detail,
                            detail_size,
                            "sluice-target-partition: not an "
                            "integer in [0, 2147483647]: '%s'",
                            sl_escape(h->value, h->size, ex, sizeof(ex)));
                req->target_partition = (int32_t)p;
        }

        /* 9: may it write there? */
        if ((why = sl_delay_target_internal(params, req->target)))
                return refuse(req, SL_DELAY_TARGET_INTERNAL, detail,
                              detail_size, "'%s' is %s", req->target, why);
        if (params->allowed_targets &&
            !sl_globs_match(params->allowed_targets, req->target))
                return refuse(
                    req, SL_DELAY_TARGET_NOT_ALLOWED, detail, detail_size,
                    "'%s' does not match allowed_targets", req->target);

        /* The rest of the headers pass through, in order. */
        if (npass) {
                req->hdrs = sl_malloc(npass * sizeof(*req->hdrs));
                for (size_t i = 0; i < rec->hdr_cnt; i++)
                        if (ctl_index(rec->hdrs[i].name) < 0)
                                req->hdrs[req->hdr_cnt++] = rec->hdrs[i];
        }
        return SL_DELAY_OK;
}

void sl_delay_req_clear(sl_delay_req_t *req) {
        if (!req)
                return;
        if (req->priv_json)
                json_decref((json_t *)req->priv_json);
        free(req->priv_dumped);
        free(req->hdrs);
        memset(req, 0, sizeof(*req));
        req->target_partition = -1;
}
