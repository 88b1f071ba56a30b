/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topiccache.h — what sluice knows of the topics operators write to:
 * whether each exists, how many partitions it has and the largest record
 * it accepts, as a bounded cache in front of asynchronous lookups.
 *
 * The names come from producers (a timer's sluice-target header), so the
 * cache must stay small whatever they send: at most `capacity` entries,
 * at most `max_lookups` lookups in flight, and names hashed with the
 * seeded sl_hash() (hash.h).  A flood of distinct names that do not exist
 * therefore costs a fixed amount of memory and at most max_lookups
 * metadata requests at a time; the records that carry them simply wait
 * for a free lookup (the caller pauses that input until some lookup
 * answers).
 *
 * Entries and their lifetime.  An entry is made when a lookup for its name
 * starts (never without one), answers with the partition count (0: the
 * topic does not exist) and expires after SL_TOPICCACHE_TTL_POS_MS (exists)
 * or SL_TOPICCACHE_TTL_NEG_MS (does not); an expired entry keeps answering
 * with what it knew while it is looked up again.  A lookup Kafka did not
 * answer leaves the entry UNKNOWN (or its previous answer) and is retried
 * after SL_TOPICCACHE_RETRY_MS.
 *
 * Eviction (only when the cache is full and a new name needs an entry):
 * CLOCK, a hand sweeping the slots, with a small credit per entry instead
 * of a single reference bit.  An answer that the topic exists gives 3
 * credits and so does every hit on it; an answer that it does not exist
 * gives 1, and hits on it give none.  The hand takes a credit from each
 * entry it passes and evicts the first with none left, or any expired
 * entry at once; an entry whose lookup is in flight is never evicted (its
 * lookup holds a pointer to it).  So names that turned out not to exist go
 * first, after surviving one sweep (time for the record that asked to see
 * the answer), and topics in use stay.  Each eviction costs at most four
 * sweeps of the slots, and the cost spreads over the insertions.
 *
 * Pure: no Kafka, no libuv, no locks: each user serialises its calls (the
 * runtime's cache runs on the loop thread; the API's, behind a mutex, on
 * its connections' threads).
 */
#ifndef SL_TOPICCACHE_H
#define SL_TOPICCACHE_H

#include <stddef.h>
#include <stdint.h>

/* Default bounds (targets.c). */
#define SL_TOPICCACHE_CAPACITY 1024
#define SL_TOPICCACHE_LOOKUPS  8

#define SL_TOPICCACHE_TTL_POS_MS (60 * 1000)
#define SL_TOPICCACHE_TTL_NEG_MS (5 * 1000)
#define SL_TOPICCACHE_RETRY_MS   1000

/* What sl_topiccache_get() says besides a partition count (> 0) or 0 (the
 * topic does not exist). */
#define SL_TOPICCACHE_UNKNOWN (-1) /* Kafka did not answer the lookup */
#define SL_TOPICCACHE_LOOKING (-2) /* no answer yet: ask again later */
#define SL_TOPICCACHE_FORBIDDEN                                                \
        (-3) /* not authorized to describe it (so not to write either) */

typedef struct sl_topiccache_s sl_topiccache_t;
typedef struct sl_topiccache_entry_s sl_topiccache_entry_t;

typedef struct sl_topiccache_stats_s {
        size_t entries;
        size_t capacity;
        int lookups;        /* in flight now */
        uint64_t evictions; /* since the cache was made */
        uint64_t deferred;  /* new names turned away: every lookup busy */
} sl_topiccache_stats_t;

/* A cache of at most capacity (>= 2 * max_lookups) entries and max_lookups
 * (>= 1) lookups in flight.  opaque is the caller's, for the lookups'
 * callbacks (sl_topiccache_opaque()). */
sl_topiccache_t *sl_topiccache_new(size_t capacity, int max_lookups,
                                   void *opaque);

/* Replaces the expiry times of answers to come (SL_TOPICCACHE_TTL_POS_MS
 * and _NEG_MS by default): pos_ms for a topic that exists, neg_ms for one
 * that does not or may not be described.  Both >= 1. */
void sl_topiccache_set_ttl(sl_topiccache_t *tc, int64_t pos_ms, int64_t neg_ms);

/* Frees the cache and every entry.  The caller first cancels the lookups
 * still in flight (sl_topiccache_foreach_looking()).  NULL is a no-op. */
void sl_topiccache_destroy(sl_topiccache_t *tc);

/*
 * What is known of topic at now_ms: its partition count (> 0), 0 (it does
 * not exist), SL_TOPICCACHE_FORBIDDEN, SL_TOPICCACHE_UNKNOWN or
 * SL_TOPICCACHE_LOOKING.
 *
 * When a lookup must start — a new name, or an expired entry — and fewer
 * than max_lookups are in flight, *lookupp is set to the entry: the caller
 * starts the lookup of sl_topiccache_name(*lookupp) and later calls
 * sl_topiccache_answer() exactly once for it.  Otherwise *lookupp is NULL.
 * A new name while every lookup is busy gets no entry: LOOKING, and the
 * caller asks again once some lookup answered.
 */
int sl_topiccache_get(sl_topiccache_t *tc, const char *topic, int64_t now_ms,
                      sl_topiccache_entry_t **lookupp);

/* The lookup of e answered: ok with partitions (0: no such topic;
 * SL_TOPICCACHE_FORBIDDEN: not authorized), or not ok (Kafka did not
 * answer; partitions is ignored).  Forbidden is cached like a topic that
 * does not exist. */
void sl_topiccache_answer(sl_topiccache_t *tc, sl_topiccache_entry_t *e, int ok,
                          int partitions, int64_t now_ms);

/* The largest record topic accepts (its max.message.bytes, learned by a
 * lookup of its own after the topic was found, kquery.h), kept in its
 * entry for as long as the entry lives; nothing when topic has no entry
 * (evicted meanwhile) or max_bytes <= 0. */
void sl_topiccache_set_max_bytes(sl_topiccache_t *tc, const char *topic,
                                 int64_t max_bytes);

/* Kafka refused to let topic be written although a lookup found it (Write
 * not granted, Describe is): its entry answers SL_TOPICCACHE_FORBIDDEN
 * until it expires like a missing topic's.  -1 when topic has no entry or
 * its lookup is in flight. */
int sl_topiccache_forbid(sl_topiccache_t *tc, const char *topic,
                         int64_t now_ms);

/* What the cache learned of topic's max.message.bytes, or -1 (not cached,
 * not learned yet, or not describable).  Starts no lookup and gives no
 * credit: for the size check of every produced record (runtime.h). */
int64_t sl_topiccache_max_bytes(const sl_topiccache_t *tc, const char *topic);

/* The topic name of e (owned by the cache, valid while e is). */
const char *sl_topiccache_name(const sl_topiccache_entry_t *e);

/* The cache of e, and the opaque it was made with. */
sl_topiccache_t *sl_topiccache_of(const sl_topiccache_entry_t *e);
void *sl_topiccache_opaque(const sl_topiccache_t *tc);

/* Calls cb for every entry whose lookup is in flight. */
void sl_topiccache_foreach_looking(sl_topiccache_t *tc,
                                   void (*cb)(sl_topiccache_entry_t *e,
                                              void *opaque),
                                   void *opaque);

void sl_topiccache_stats(const sl_topiccache_t *tc, sl_topiccache_stats_t *st);

/* Checks the internal invariants (index, counts); 0 or -1.  Tests. */
int sl_topiccache_verify(const sl_topiccache_t *tc);

#endif
