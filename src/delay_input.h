/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delay_input.h — reads one delay input record (docs/delay.md, "Headers")
 * into a request to schedule or cancel a timer, or into the reason it goes
 * to the DLQ.
 *
 * Pure: no Kafka, no libuv.  The operator hands over the record's key,
 * value and headers as plain arrays and acts on the request.
 */
#ifndef SL_DELAY_INPUT_H
#define SL_DELAY_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "delay_recurring.h"
#include "parse.h"
#include "topicname.h"

/* How a delay pipeline's input records carry their control (its
 * input_format key, opdef_delay.h). */
typedef enum {
        SL_INPUT_HEADERS = 0,       /* control in sluice-* headers */
        SL_INPUT_JSON_ENVELOPE = 1, /* {"topic","message","countdown"} */
} sl_input_format_t;

/*
 * The due times sluice accepts, epoch ms: from the epoch itself (0 is a
 * legal "fire at once") to the last millisecond of year 9999, whatever
 * max_delay allows.  Input outside goes to the DLQ (bad-at before, and
 * delay-too-long after); a changelog record outside is clamped on restore.
 * Within these bounds now - due and due - now cannot overflow for any sane
 * clock, so lateness, drift and wake-up arithmetic need no further checks.
 */
#define SL_DELAY_DUE_MIN_MS 0
#define SL_DELAY_DUE_MAX_MS 253402300799999LL /* 9999-12-31T23:59:59.999Z */

/*
 * A sluice-delay (or an envelope's countdown) counts from the record's
 * timestamp, what the producer meant by "in 1 s" (CreateTime, or
 * LogAppendTime when the topic sets it), so consumer lag, a rebuild or a
 * restart does not stretch it.  The read time stands in for a timestamp
 * that is missing (-1) or implausible:
 *
 *   - more than timestamp_skew_ms ahead of the local clock: the producer's
 *     clock (or a hand-set timestamp) is wrong, and trusting it would hold
 *     the timer back by the error;
 *   - before SL_DELAY_TS_MIN_MS (2010-01-01, before Kafka's first
 *     release): no record in a topic was written then, so such a stamp is
 *     a unit error (seconds for milliseconds land in January 1970) or a
 *     zero, and counting from it would fire every timer at once.
 *
 * An old but plausible timestamp is used as it is: a record that waited
 * in the input (sluice down, lag) longer than its delay is due, and fires
 * at once.  sluice-at is absolute and never looks at the timestamp.
 */
#define SL_DELAY_TS_MIN_MS 1262304000000LL /* 2010-01-01T00:00:00Z */

/* What a relative due time counted from (sl_delay_req_t.base). */
typedef enum {
        SL_DELAY_BASE_NONE = 0,    /* absolute (sluice-at, at): no base */
        SL_DELAY_BASE_TIMESTAMP,   /* the record's timestamp */
        SL_DELAY_BASE_READ_NO_TS,  /* read time: the record has none */
        SL_DELAY_BASE_READ_FUTURE, /* read time: timestamp too far ahead */
        SL_DELAY_BASE_READ_PAST,   /* read time: timestamp before 2010 */
} sl_delay_base_t;

/* The time a relative due time counts from, given the record's timestamp
 * (-1: none), the read time now_ms and the allowed skew; *basep says
 * which.  Pure. */
int64_t sl_delay_base_ms(int64_t timestamp_ms, int64_t now_ms, int64_t skew_ms,
                         sl_delay_base_t *basep);

/* One record header.  value NULL is a null header (distinct from ""). */
typedef struct sl_hdr_s {
        const char *name;
        const void *value;
        size_t size;
} sl_hdr_t;

/* Why a record is refused.  The strings (sl_delay_reason_str) are the
 * sluice-error header value and the metrics label: never change them. */
typedef enum {
        SL_DELAY_OK = 0,
        SL_DELAY_MISSING_KEY,          /* "missing-key": a cancel without
                                        * a key (the timer id) */
        SL_DELAY_MISSING_TARGET,       /* "missing-target" */
        SL_DELAY_MISSING_DUE,          /* "missing-due": no delay, no at */
        SL_DELAY_CONFLICTING_DUE,      /* "conflicting-due": both */
        SL_DELAY_BAD_DELAY,            /* "bad-delay" */
        SL_DELAY_BAD_AT,               /* "bad-at" */
        SL_DELAY_TOO_LONG,             /* "delay-too-long": over max_delay */
        SL_DELAY_TARGET_NOT_ALLOWED,   /* "target-not-allowed" */
        SL_DELAY_TARGET_INTERNAL,      /* "target-internal" */
        SL_DELAY_BAD_TARGET_PARTITION, /* "bad-target-partition" */
        SL_DELAY_BAD_ENVELOPE,         /* "bad-envelope" */
        SL_DELAY_OVERSIZE,             /* "oversize": value too large */
        SL_DELAY_BAD_HEADER,           /* "bad-header" */
        SL_DELAY_BAD_SCHEDULE,         /* "bad-schedule": a recurring
                                        * header unreadable */
        SL_DELAY_REASON_CNT
} sl_delay_reason_t;

/* The reason's stable name ("missing-key", ...; "ok" for SL_DELAY_OK), or
 * "unknown" for a value out of range. */
const char *sl_delay_reason_str(int reason);

/* Pipeline parameters, built once by the operator from its
 * sl_pipeline_conf_t.  Every pointer is borrowed and must outlive the
 * calls that use it. */
typedef struct sl_delay_params_s {
        const char *default_target; /* NULL or "": sluice-target required */
        const sl_globs_t *allowed_targets; /* NULL: any target allowed */
        int64_t max_delay_ms;              /* <= 0: no limit */
        int64_t max_record_bytes;          /* value limit; <= 0: no limit */
        sl_input_format_t input_format;
        const char *const *internal_topics; /* never a target */
        int internal_cnt;
        /* A timestamp further ahead of the read time than this is not
         * trusted (see SL_DELAY_TS_MIN_MS above); < 0: none is. */
        int64_t timestamp_skew_ms;
} sl_delay_params_t;

/* Why target may never be written by a pipeline with these params ("an
 * internal topic of Kafka" or "of sluice"), or NULL when it may: input
 * refuses such a timer, and a rebuild skips one already in a changelog. */
const char *sl_delay_target_internal(const sl_delay_params_t *params,
                                     const char *target);

/* One input record.  key NULL is a null key; value NULL is a null value
 * (a cancel).  partition and offset name a keyless record's timer.
 * Nothing here is copied by sl_delay_input_parse(). */
typedef struct sl_delay_record_s {
        const void *key;
        size_t key_len;
        const void *value;
        size_t value_len;
        const sl_hdr_t *hdrs;
        size_t hdr_cnt;
        int32_t partition;
        int64_t offset;
        int64_t timestamp_ms; /* the record's timestamp, epoch ms; -1: none */
} sl_delay_record_t;

typedef enum {
        SL_DELAY_SCHEDULE = 1, /* insert or replace the timer */
        SL_DELAY_CANCEL = 2,   /* remove the timer (absent is fine) */
} sl_delay_action_t;

/* A generated timer id: "<partition>-<offset>" and its NUL. */
#define SL_DELAY_GEN_ID_MAX 32

/*
 * What the record asks for.  Pointers point into the record or into memory
 * the request owns; both stay valid until sl_delay_req_clear() (the record
 * must outlive the request, and the request must not be copied: id may
 * point into it).  For a cancel only action and id are set.
 *
 * A keyless record (null or empty key) cannot name its timer, so it gets
 * the id "<partition>-<offset>" of the record (id_generated): unique in the
 * input topic, the same when the record is replayed, and unknown to the
 * producer, so such a timer cannot be cancelled or rescheduled.  Its target
 * key is the record's own key as it came (null or empty) unless
 * sluice-target-key is given: the 001 envelope has no key, and neither has
 * the record it fires.
 */
typedef struct sl_delay_req_s {
        sl_delay_action_t action;
        const void *id; /* the timer id: the key, or gen_id */
        size_t id_len;
        int id_generated;     /* keyless record: id is "<partition>-<offset>" */
        int64_t due_ms;       /* absolute, epoch ms; may lie in the past */
        sl_delay_base_t base; /* what a relative due_ms counted from */
        char target[SL_TOPICNAME_MAX + 1]; /* NUL-terminated */
        const void *target_key;            /* the id unless has_target_key or
                                            * null_target_key */
        size_t target_key_len;
        int has_target_key;       /* target_key is the key to fire with */
        int null_target_key;      /* fire with a null key (keyless record, no
                                   * sluice-target-key) */
        int32_t target_partition; /* -1: the producer's partitioner */
        const void *payload;      /* never NULL for a schedule */
        size_t payload_len;
        /* Headers to pass through to the target, in input order: all but
         * the control headers read here. */
        sl_hdr_t *hdrs;
        size_t hdr_cnt;
        /* A recurring timer (sluice-every or sluice-cron: docs/delay.md
         * "Recurring timers"): its schedule, pointing into the record's
         * headers; due_ms is then 0, the first occurrence being the
         * operator's to find (it needs the zone), after base_ms, the
         * record's timestamp base (sl_delay_base_ms). */
        int recurring;
        sl_recur_t recur;
        int64_t base_ms;

        /* Owned memory, released by sl_delay_req_clear(). */
        void *priv_json;   /* the parsed envelope (payload may point in) */
        char *priv_dumped; /* a non-string envelope message as JSON */
        char gen_id[SL_DELAY_GEN_ID_MAX]; /* id of a keyless record */
} sl_delay_req_t;

/*
 * Reads rec under params at time now_ms (the wall clock when the record
 * is read).  A sluice-delay or countdown counts from rec->timestamp_ms, or
 * from now_ms when that is missing or implausible (sl_delay_base_ms());
 * req->base says which.  max_delay bounds the delay asked for, not the
 * distance from now.
 *
 * Returns SL_DELAY_OK with *req filled in, or a reason (> 0) with *req
 * empty and a one-line explanation in detail (e.g. "sluice-delay: unknown
 * unit 'x'"; detail may be NULL).  Either way the caller calls
 * sl_delay_req_clear(req) when done with it.  Never asserts on bad data.
 *
 * Control headers (sluice-target, sluice-delay, sluice-at,
 * sluice-target-key, sluice-target-partition) must appear at most once and
 * are not passed through; every other header is, including other sluice-*
 * names.  In json-envelope mode the envelope's "topic" stands for
 * sluice-target and its "countdown" (seconds) or "at" (epoch ms or RFC 3339
 * string) for sluice-delay or sluice-at; giving one both ways is refused.
 *
 * The target partition is only checked to be a non-negative int32: whether
 * the target has it is for the caller to check against metadata.
 */
int sl_delay_input_parse(const sl_delay_params_t *params,
                         const sl_delay_record_t *rec, int64_t now_ms,
                         sl_delay_req_t *req, char *detail, size_t detail_size);

/* Releases what req owns and empties it.  Safe on an empty request. */
void sl_delay_req_clear(sl_delay_req_t *req);

#endif
