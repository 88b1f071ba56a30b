/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refused.h — records the broker refused for good at delivery (too large
 * for the topic, not authorized, ...), remembered so the same work is not
 * sent again after the abort and rebuild that such a refusal causes.
 *
 * A record is known by its identity: a hash of its topic, its key and its
 * ORIGIN — what the work that produced it stands for, stable across replays
 * (the input record's partition and offset, a timer's id and due time, a
 * batch id, an overflow offset).  Bytes of the value are used only when an
 * operator gave no origin, since values carry wall-clock fields (a batch's
 * flushed_at) that change on replay.
 *
 * The broker refuses a whole batch, so a failed record is first only a
 * SUSPECT: next time it is sent alone.  Failing alone makes it GUILTY, and
 * the producer refuses it up front so the operator sends it to the DLQ;
 * going through alone clears it.  Entries expire after SL_REFUSED_TTL_MS.
 *
 * Pure: no Kafka, no libuv; one table per process, loop thread only.
 */
#ifndef SL_REFUSED_H
#define SL_REFUSED_H

#include <stddef.h>
#include <stdint.h>

#define SL_REFUSED_MAX    256
#define SL_REFUSED_TTL_MS (10 * 60 * 1000)

typedef enum {
        SL_REFUSED_NONE = 0,
        SL_REFUSED_SUSPECT,
        SL_REFUSED_GUILTY,
} sl_refused_state_t;

typedef struct sl_refused_entry_s {
        uint64_t id; /* 0 = empty slot */
        sl_refused_state_t state;
        int err;
        int64_t expires_ms;
} sl_refused_entry_t;

typedef struct sl_refused_s {
        sl_refused_entry_t e[SL_REFUSED_MAX];
        int next; /* the slot reused next when full */
        int used; /* slots ever used */
} sl_refused_t;

/* The identity of a record: topic, key and origin (origin 0: the value's
 * bytes instead).  Never 0. */
uint64_t sl_refused_id(const char *topic, const void *key, size_t keylen,
                       uint64_t origin, const void *value, size_t valuelen);

/* An origin from bytes (a timer id, a batch id, ...), mixed with a number
 * (a due time, an offset).  Never 0; fits in 62 bits (it travels in a
 * produced message's opaque beside two flag bits). */
uint64_t sl_refused_origin(const void *bytes, size_t len, int64_t n);

/* The state of id now (NONE when unknown or expired), its error in *errp. */
sl_refused_state_t sl_refused_get(const sl_refused_t *r, uint64_t id,
                                  int64_t now_ms, int *errp);

/* A delivery of id failed with err (a permanent error): alone says it was
 * sent by itself.  Returns the new state. */
sl_refused_state_t sl_refused_note(sl_refused_t *r, uint64_t id, int err,
                                   int alone, int64_t now_ms);

/* id went through when sent alone: forget it. */
void sl_refused_clear(sl_refused_t *r, uint64_t id);

#endif
