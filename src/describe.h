/* SPDX-License-Identifier: Apache-2.0 */
/*
 * describe.h — the JSON answers of the HTTP API's lookups (api.h): what
 * one RUNNING partition holds for one timer id, throttle key or debounce
 * group, built by the operators' describe() hooks (task.h).
 *
 * Pure: each builder takes a plain view of the state (filled by the
 * operator from its pure module) and a clock, and returns a new jansson
 * object the caller owns (json_decref).  No Kafka, no libuv; any thread,
 * though the views are only ever read on the loop thread.  Allocation
 * failure aborts, as everywhere in sluice.
 *
 * CONVENTIONS (every object below)
 *
 *   times      an instant is two members: NAME_ms, an integer (epoch
 *              milliseconds, UTC), and NAME, the same instant as an RFC 3339
 *              string in UTC with milliseconds ("2026-01-02T03:04:05.678Z";
 *              null when the year is outside 1970..9999).  An instant that
 *              is not known or does not apply is null in both.
 *   durations  integers in milliseconds, named *_ms (no string twin)
 *   bytes      a key or id is a JSON string when it is valid UTF-8 (NUL
 *              bytes included, escaped as \u0000), else the base64 (RFC
 *              4648, padded) of its bytes with a sibling NAME_encoding:
 *              "base64"; NAME_encoding is absent for a string
 *   sizes      integers in bytes, named *_bytes; counts are integers
 *   partition  the input partition that holds the state (the owner's)
 *
 * Every member listed is always present (null where stated); members may
 * be added later, never renamed or removed.
 */
#ifndef SL_DESCRIBE_H
#define SL_DESCRIBE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "debounce.h"
#include "parse.h"
#include "rates.h"

/*
 * delay — GET /v1/pipelines/{p}/timers/{id}
 *
 *   {"id": "order-17",            the timer id (bytes convention)
 *    "partition": 3,
 *    "due_ms": 1767225600000, "due": "2026-01-01T00:00:00.000Z",
 *    "due_in_ms": 41250,          due - now; negative when overdue (the
 *                                 timer is firing, or waits for the
 *                                 catch-up rate after a rebuild)
 *    "due_on_arrival": false,     true when it was already due when
 *                                 scheduled (fires at once; not counted in
 *                                 the lateness metrics)
 *    "target_topic": "orders.due", (bytes convention: a changelog written
 *                                 by hand may name any bytes)
 *    "target_key": "order-17",    the key the fired record gets (bytes
 *                                 convention), or null for a null key
 *    "target_key_source": "id",   "id" (no sluice-target-key: the timer
 *                                 id), "header" (sluice-target-key or the
 *                                 envelope's/API's key) or "null" (a
 *                                 keyless timer: the fired record has a
 *                                 null key)
 *    "target_partition": null,    integer, or null for the producer's
 *                                 partitioner
 *    "payload_bytes": 120,        value of the fired record
 *    "header_count": 2,           pass-through headers (sluice-timer-id
 *                                 and sluice-due, added at firing, are
 *                                 not counted)
 *    "header_bytes": 31,          their names plus values
 *    "seq": 88412,                arrival order: the input offset that
 *                                 scheduled it (equal due times fire in
 *                                 seq order)
 *    "schedule": {...}}           a recurring timer only (due is its
 *                                 pending occurrence):
 *      {"every": "10m"} or {"cron": "0 9 * * MON-FRI"} (bytes convention),
 *      "tz": "Europe/Paris",      "UTC" when none was given
 *      "catch_up": "latest",      latest, all or none
 *      "fired": 4,                occurrences produced so far
 *      "last_fired_ms": ..., "last_fired": "...",  null before the first
 *      "next_ms": [...], "next": [...]  the instants after the pending
 *                                 one (SL_DESCRIBE_NEXT at most: fewer
 *                                 when the schedule ends)
 *
 * The time a timer was scheduled is not kept in memory (a pending timer
 * costs at most 64 bytes beyond its id and payload: timerheap.c); it is in
 * the changelog record (Timer.created_ms) and `sluice inspect` shows it.
 */
typedef struct sl_describe_timer_s {
        const void *id;
        size_t idlen;
        int32_t partition;
        int64_t due_ms;
        int due_on_arrival;
        const char *target_topic;
        const void *target_key; /* NULL with target_key_null */
        size_t target_keylen;
        int target_key_null;      /* the fired record has a null key */
        int target_key_header;    /* the key is not the timer id */
        int32_t target_partition; /* -1: the partitioner */
        size_t payload_bytes;
        size_t header_count;
        size_t header_bytes;
        int64_t seq;
        /* A recurring timer: expr non-NULL, cron (else every); tz NULL
         * for UTC. */
        const char *expr;
        size_t expr_len;
        int cron;
        const char *tz;
        size_t tz_len;
        const char *catch_up;
        int64_t fired, last_fired_ms; /* last_fired_ms 0: none */
        int64_t next_ms[5];
        int next_cnt;
} sl_describe_timer_t;

/* The instants after a recurring timer's pending one that it shows. */
#define SL_DESCRIBE_NEXT 5

json_t *sl_describe_timer(const sl_describe_timer_t *v, int64_t now_ms);

/* What a describe() hook answers when it cannot tell yet (a record it
 * needs is being read from Kafka): the API answers 503 with Retry-After,
 * as for a partition that is rebuilding (sl_describe_is_retry()). */
json_t *sl_describe_retry(void);
int sl_describe_is_retry(const json_t *j);

/* What a delay describe() hook answers for a pending timer whose payload
 * record is gone from the payload topic (it goes to the DLQ as
 * payload-missing at due_ms): the API answers 404 payload-missing.
 * sl_describe_gone_due(): that due time, or -1 when j is not such an
 * answer. */
json_t *sl_describe_gone(int64_t due_ms);
int64_t sl_describe_gone_due(const json_t *j);

/*
 * throttle — GET /v1/pipelines/{p}/keys/{key}
 *
 * Answers for every key: a key the partition holds no state for runs at
 * its rate with a full bucket and no backlog ("tracked": false).
 *
 *   {"key": "customer-9",         (bytes convention)
 *    "partition": 0,
 *    "tracked": true,             the partition holds state for the key
 *                                 (a bucket it used lately, a backlog or
 *                                 both); false: full bucket, no backlog
 *    "rate": "10/s burst=5",      the rate in force, as the rates topic
 *                                 writes it (sl_rate_format)
 *    "rate_per_sec": 10.0,        number: tokens per second (0: stopped)
 *    "burst": 5.0,                number: bucket capacity
 *    "rate_source": "key",        "key" (the key's record in the rates
 *                                 topic), "default" (the "*" record) or
 *                                 "config" (the pipeline's default_rate)
 *    "is_default": false,         rate_source != "key"
 *    "tokens": 2.5,               number: the bucket's level now, 0..burst
 *    "backlog": 12,               messages waiting in the overflow topic
 *    "backlog_bytes": 4800,       their payload bytes (as appended)
 *    "oldest_age_ms": 8000,       now - when the oldest waiting message
 *                                 was received; null with no backlog, or
 *                                 when its record is not in memory (the
 *                                 index keeps offset and deadline only)
 *    "head_deadline_ms": ..., "head_deadline": "...",
 *                                 the oldest message's deadline (sent
 *                                 before it, else DLQ "expired"); null
 *                                 with no backlog
 *    "next_send_ms": ..., "next_send": "...",
 *                                 when the oldest waiting message can take
 *                                 a token (now when it can already); null
 *                                 with no backlog or a rate of 0
 *    "fetching": false}           its payload is being re-read from the
 *                                 overflow topic (sent as soon as read)
 */
typedef struct sl_describe_tkey_s {
        const void *key;
        size_t keylen;
        int32_t partition;
        int tracked;
        sl_rate_t rate;
        sl_rate_source_t source;
        double tokens;
        uint64_t backlog;
        uint64_t backlog_bytes;
        int64_t oldest_received_ms; /* INT64_MIN: unknown or none */
        int64_t head_deadline_ms;   /* INT64_MIN: no backlog */
        int64_t next_send_ms;       /* INT64_MIN: no backlog; INT64_MAX:
                                       never (rate 0) */
        int fetching;
} sl_describe_tkey_t;

json_t *sl_describe_throttle_key(const sl_describe_tkey_t *v, int64_t now_ms);

/*
 * debounce — GET /v1/pipelines/{p}/groups/{key}
 *
 *   {"key": "WH-42",              the group (UTF-8 text)
 *    "partition": 1,
 *    "items": 3,                  pending items
 *    "bytes": 1200,               their payload bytes
 *    "opened_ms": ..., "opened": "...",
 *                                 the oldest pending item's first sighting
 *    "age_ms": 4200,              now - opened
 *    "last_update_ms": ..., "last_update": "...",
 *                                 the latest update of a pending item
 *    "idle_for_ms": 900,          now - last update
 *    "next_flush_ms": ..., "next_flush": "...",
 *                                 when the group flushes unless more comes
 *    "next_flush_in_ms": 1100,    next_flush - now, at least 0
 *    "next_flush_reason": "idle", why then: "idle" (idle after the last
 *                                 update), "max_age" (the oldest item's
 *                                 age), "max_items" or "max_bytes" (full:
 *                                 flushes at once)
 *    "limits": {"idle_ms": 2000, "max_age_ms": 30000, "max_items": 1000,
 *               "max_bytes": 1048576},
 *    "pending": [                 the first SL_DESCRIBE_ITEMS_MAX items in
 *                                 batch order (arrival of each id)
 *      {"id": "A001", "payload_bytes": 400, "first_seen_ms": ...,
 *       "first_seen": "...", "last_update_ms": ..., "last_update": "..."}],
 *    "pending_truncated": false}  true when items > the pending shown
 *
 * A flush asked for through the API (POST .../flush) is a control record
 * in the input topic (debounce.h): its batches have reason "requested".
 */
#define SL_DESCRIBE_ITEMS_MAX 100

json_t *sl_describe_group(const sl_debounce_t *d, const void *key,
                          size_t keylen, int32_t partition, int64_t now_ms);

/* The conventions above, for the builders and for the API's own answers. */

/* Sets name_ms and name on obj for the instant ms (INT64_MIN: null). */
void sl_describe_time(json_t *obj, const char *name, int64_t ms);

/* Sets name (and name_encoding when base64) on obj for the bytes p[0..n)
 * (p may be NULL when n is 0). */
void sl_describe_bytes(json_t *obj, const char *name, const void *p, size_t n);

#endif
