/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rates.h — the throttle's rates table: throttle key -> rate, as read from
 * the pipeline's compacted rates topic (key = throttle key or "*", value =
 * rate text such as "100/s" or "6000/m burst=50", tombstone = back to the
 * default).
 *
 * A key's rate is its own entry, else the "*" entry, else the pipeline's
 * default_rate (the fallback given at creation).  Every change that alters
 * what some lookup returns bumps a generation counter, so holders of cached
 * lookups (the per-partition backlogs) notice with one integer compare.
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe (the table is
 * read and written on the loop thread).  One table serves every partition
 * of a pipeline.
 */
#ifndef SL_RATES_H
#define SL_RATES_H

#include <stddef.h>
#include <stdint.h>

#include "parse.h"

typedef struct sl_rates_s sl_rates_t;

/* Where a looked-up rate came from. */
typedef enum {
        SL_RATE_FALLBACK = 0, /* the pipeline's default_rate */
        SL_RATE_DEFAULT = 1,  /* the "*" record of the rates topic */
        SL_RATE_KEY = 2,      /* the key's own record */
} sl_rate_source_t;

/* A rate value longer than this is rejected (no real one comes close). */
#define SL_RATES_MAX_VALUE 255

/* An empty table whose lookups all return *fallback (copied).  Never fails
 * (allocation failure aborts). */
sl_rates_t *sl_rates_new(const sl_rate_t *fallback);

/* Frees the table.  NULL is a no-op. */
void sl_rates_destroy(sl_rates_t *rt);

/*
 * Applies one record of the rates topic.  key/keylen is the record key
 * (keylen 1 "*" is the default; a NULL key is malformed); value/valuelen is
 * the record value, not NUL-terminated, or value NULL for a tombstone, which
 * removes the key's entry (a tombstone for an absent key changes nothing).
 * Returns 0 when applied, -1 when the record is malformed (NULL key, value
 * that sl_parse_rate refuses, or longer than SL_RATES_MAX_VALUE), -2 when
 * it is a new key and the table is full (sl_rates_set_max_bytes): the
 * table is left unchanged, the reason is written to errstr, and the caller
 * logs and counts it.  The generation is bumped only if a lookup result
 * changed.
 */
int sl_rates_apply(sl_rates_t *rt, const void *key, size_t keylen,
                   const void *value, size_t valuelen, char *errstr,
                   size_t errstr_size);

/* The rate that applies to key (any bytes), written to *out; returns where
 * it came from.  key "*" itself returns the default. */
sl_rate_source_t sl_rates_lookup(const sl_rates_t *rt, const void *key,
                                 size_t keylen, sl_rate_t *out);

/* Increases whenever some lookup result may have changed (starts at 1). */
uint64_t sl_rates_generation(const sl_rates_t *rt);

/* Bounds what the per-key entries hold (the rates topic is input: any
 * producer to it can add keys): each costs its key and about a hundred
 * bytes, and a new key that would take the table past max_bytes is
 * refused (sl_rates_apply: -2), so it keeps the default rate.  0: no
 * bound.  Existing keys may still change or go. */
void sl_rates_set_max_bytes(sl_rates_t *rt, size_t max_bytes);

/* What the per-key entries hold, as the bound counts it. */
size_t sl_rates_bytes(const sl_rates_t *rt);

/* Number of per-key entries (the "*" entry not included). */
size_t sl_rates_count(const sl_rates_t *rt);

/* Replaces the fallback (the pipeline's default_rate, on a config reload).
 * Bumps the generation if a lookup result changed. */
void sl_rates_set_fallback(sl_rates_t *rt, const sl_rate_t *fallback);

#endif
