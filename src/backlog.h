/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backlog.h — the throttle state of one input partition: a token bucket per
 * key, each key's FIFO backlog of messages buffered in the overflow topic,
 * the schedule of what to do next, the overflow checkpoint, and a payload
 * cache whose byte budget is shared by the whole pipeline.
 *
 * Pure data structure: no Kafka, no libuv, not thread-safe (all of it lives
 * on the loop thread).  The operator drives it:
 *
 *   live input     sl_backlog_offer() says FORWARD (a token was taken: send
 *                  to the output now), EXPIRED (deadline already past: DLQ)
 *                  or APPEND: produce the record to the overflow partition
 *                  and call sl_backlog_append() with the same bytes; when the
 *                  delivery report arrives, sl_backlog_acked(offset).
 *   drain          sl_backlog_poll(now) hands out due work one item at a
 *                  time: SEND (token taken, head popped), EXPIRE (head past
 *                  its deadline, popped) or FETCH (the head's payload is not
 *                  in memory: re-read the overflow partition from that offset
 *                  and pass what is read to sl_backlog_fill()).  When nothing
 *                  is due it says when something will be.
 *   commit         first wait for every overflow delivery report of the
 *                  transaction (stats.awaiting == 0): a message sent before
 *                  its report moves its key's drained_to only when the
 *                  report comes.  Then sl_backlog_checkpoint() is
 *                  ThrottleCheckpoint.from_offset;
 *                  sl_backlog_flush_dirty() lists keys whose ThrottleKey
 *                  record changed; sl_backlog_sweep() drops keys that carry no
 *                  state worth keeping (the operator tombstones them).
 *   rebuild        sl_backlog_new(from_offset), sl_backlog_restore_key() per
 *                  changelog key record, sl_backlog_rebuild_append() per
 *                  overflow record from from_offset to the end captured at
 *                  assignment, sl_backlog_set_next_offset(end).
 *
 * See backlog.c for the memory layout, the cache policy and the invariants.
 */
#ifndef SL_BACKLOG_H
#define SL_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

#include "parse.h"
#include "rates.h"
#include "tbucket.h"

/* The offset of an appended message whose delivery report has not come. */
#define SL_BACKLOG_UNKNOWN ((int64_t)-1)

/* "Never", as a time. */
#define SL_BACKLOG_NEVER INT64_MAX

/*
 * One buffered message in a key's backlog: the whole per-message index,
 * 24 bytes.  `ref` is either a pointer to the cached payload block (low bit
 * 0) or, when the payload is not in memory, (size << 1) | 1.  Read it
 * through the accessors below.
 */
typedef struct sl_backlog_entry_s {
        int64_t offset;      /* overflow offset, or SL_BACKLOG_UNKNOWN */
        int64_t deadline_ms; /* send before this, epoch ms */
        uint64_t ref;
} sl_backlog_entry_t;

/* Payload bytes of the message, whether cached or not. */
uint32_t sl_backlog_entry_size(const sl_backlog_entry_t *e);
/* 1 if the payload is in memory. */
int sl_backlog_entry_cached(const sl_backlog_entry_t *e);
/* The payload's bytes (sl_backlog_entry_size() of them) when it is in memory,
 * else NULL.  Owned by the cache: valid until the next call that changes
 * the backlog or the cache. */
const void *sl_backlog_entry_payload(const sl_backlog_entry_t *e);

/* What a cached payload costs the budget beyond its bytes: the block header
 * (8) and an estimate of malloc's own overhead (16). */
#define SL_BACKLOG_CACHE_OVERHEAD 24

typedef struct sl_backlog_cache_s sl_backlog_cache_t;
typedef struct sl_backlog_s sl_backlog_t;
typedef struct sl_backlog_key_s sl_backlog_key_t;

/*
 * Payload cache (one per pipeline, shared by its partitions' backlogs)
 */

/* A cache holding at most budget_bytes of payloads (each charged its size +
 * SL_BACKLOG_CACHE_OVERHEAD) plus pinned ones, which the budget does not
 * count: payloads whose offset is not known yet (they cannot be re-read;
 * bounded by the producer's in-flight window) and heads fetched for a
 * parked key (one per key).  budget 0 keeps only those.  Never fails. */
sl_backlog_cache_t *sl_backlog_cache_new(int64_t budget_bytes);

/* Frees the cache.  Every backlog using it must be destroyed first.  NULL
 * is a no-op. */
void sl_backlog_cache_destroy(sl_backlog_cache_t *c);

/* Changes the budget, evicting at once if the cache is now over it. */
void sl_backlog_cache_set_budget(sl_backlog_cache_t *c, int64_t budget_bytes);

typedef struct sl_backlog_cache_stats_s {
        int64_t budget;
        int64_t bytes;        /* charged bytes of all cached payloads */
        int64_t pinned_bytes; /* of which pinned: bytes - pinned <= budget */
        uint64_t entries;     /* cached payloads */
        uint64_t evicted;     /* payloads dropped before use (budget) */
        uint64_t refused;     /* fills not cached for lack of room */
} sl_backlog_cache_stats_t;

void sl_backlog_cache_stats(const sl_backlog_cache_t *c,
                            sl_backlog_cache_stats_t *st);

/*
 * Backlog (one per assigned input partition)
 */

/* An empty backlog whose overflow partition is re-read from from_offset
 * (ThrottleCheckpoint.from_offset; 0 for a new partition).  rates and cache
 * are borrowed and must outlive it.  Never fails. */
sl_backlog_t *sl_backlog_new(const sl_rates_t *rates, sl_backlog_cache_t *cache,
                             int64_t from_offset);

/* Frees the backlog, every key and every cached payload it holds.  NULL is
 * a no-op. */
void sl_backlog_destroy(sl_backlog_t *bl);

/* Verdicts of sl_backlog_offer(). */
typedef enum {
        SL_BACKLOG_FORWARD = 1, /* token taken: send to the output now */
        SL_BACKLOG_APPEND = 2,  /* buffer: overflow + sl_backlog_append() */
        SL_BACKLOG_EXPIRED = 3, /* deadline <= now: DLQ, reason expired */
} sl_backlog_verdict_t;

/*
 * A live input message for key (any bytes) with this deadline arrives at
 * now_ms.  FORWARD only when the key has no backlog and a token (taken); a
 * key with a backlog never bypasses it.  On APPEND, *kp is the key and the
 * caller must call sl_backlog_append(bl, *kp, ...) before anything else
 * touches this backlog.  *kp is set for every verdict (the key is created
 * if new, with a full bucket); it stays valid until sl_backlog_sweep() or
 * sl_backlog_destroy().
 */
sl_backlog_verdict_t sl_backlog_offer(sl_backlog_t *bl, const void *key,
                                      size_t keylen, int64_t deadline_ms,
                                      int64_t now_ms, sl_backlog_key_t **kp);

/*
 * Appends a message to k's backlog with an unknown offset; payload (size
 * bytes, copied) is what sl_backlog_poll() hands back when the message is
 * sent or expired, normally the OverflowRecord produced.  The payload stays
 * pinned in the cache until sl_backlog_acked() gives the offset.  The
 * caller produces the overflow records of a partition in append order.
 */
void sl_backlog_append(sl_backlog_t *bl, sl_backlog_key_t *k,
                       int64_t deadline_ms, const void *payload, uint32_t size);

/*
 * The overflow delivery report of the oldest appended message without an
 * offset: it landed at `offset`.  Returns 0, or -1 (nothing changed) when no
 * append awaits a report or offset is below sl_backlog_next_offset() (a
 * report out of order).  A failed delivery aborts the transaction: the
 * operator then rebuilds the partition and never reports it here.
 */
int sl_backlog_acked(sl_backlog_t *bl, int64_t offset);

/* Actions of sl_backlog_poll(). */
typedef enum {
        SL_BACKLOG_SEND = 1,   /* send to the output (token taken) */
        SL_BACKLOG_EXPIRE = 2, /* past its deadline: DLQ, reason expired */
        SL_BACKLOG_FETCH = 3,  /* re-read the overflow from `offset` */
} sl_backlog_action_t;

typedef struct sl_backlog_item_s {
        sl_backlog_action_t action;
        sl_backlog_key_t *key;
        int64_t offset; /* SL_BACKLOG_UNKNOWN if popped before its report */
        int64_t deadline_ms;
        uint32_t size;
        /* SEND, EXPIRE: the payload, owned by the caller, freed with
         * sl_backlog_payload_free().  FETCH, or a dropped head: NULL. */
        void *payload;
} sl_backlog_item_t;

/*
 * The next piece of due work at now_ms.  Returns 1 with *out filled, or 0
 * when nothing is due, with *next_ms the earliest time something will be
 * (SL_BACKLOG_NEVER: nothing scheduled); call again until it returns 0.
 *
 * SEND and EXPIRE pop the key's head (FIFO per key).  FETCH parks the key:
 * it gets no further work until sl_backlog_fill() supplies the head's
 * payload (or sl_backlog_drop_head() / sl_backlog_unpark_all()); other keys
 * are not held up.  A message is never SENT at or after its deadline.
 */
int sl_backlog_poll(sl_backlog_t *bl, int64_t now_ms, sl_backlog_item_t *out,
                    int64_t *next_ms);

/* Frees a payload handed out by sl_backlog_poll().  NULL is a no-op. */
void sl_backlog_payload_free(void *payload);

/*
 * An overflow record re-read at `offset` for key: caches a copy of its
 * payload if that key still has it buffered, the payload is not cached yet,
 * and the cache policy admits it (always, for a parked head, which unparks
 * the key).  Returns 1 if cached, 0 if not needed or not admitted, -1 if
 * size differs from the size appended (a corrupt or foreign record).
 */
int sl_backlog_fill(sl_backlog_t *bl, const void *key, size_t keylen,
                    int64_t offset, const void *payload, uint32_t size);

/* Pops k's head without its payload (out->payload NULL), e.g. when the
 * overflow record is gone (offset out of range).  Returns 0, or -1 when k
 * has no backlog. */
int sl_backlog_drop_head(sl_backlog_t *bl, sl_backlog_key_t *k,
                         sl_backlog_item_t *out);

/* Unparks every parked key: their heads come out as FETCH again at the next
 * poll (after the re-reader restarted). */
void sl_backlog_unpark_all(sl_backlog_t *bl);

/*
 * Rebuild
 */

/* Restores a key from its changelog record (ThrottleKey) before any of its
 * overflow records are appended.  Returns the key, or NULL if the key
 * already has a backlog (nothing changed). */
sl_backlog_key_t *sl_backlog_restore_key(sl_backlog_t *bl, const void *key,
                                         size_t keylen, int64_t drained_to,
                                         double tokens, int64_t updated_ms);

/*
 * An overflow record read at rebuild, in offset order.  Skipped (returns 0)
 * when offset < the key's drained_to (it was already sent or expired);
 * otherwise appended with its offset known (returns 1), and payload, if
 * not NULL, is cached when the policy admits it.  Returns -1 (nothing
 * changed) if offset is below sl_backlog_next_offset() or live appends await
 * their reports.
 */
int sl_backlog_rebuild_append(sl_backlog_t *bl, const void *key, size_t keylen,
                              int64_t offset, int64_t deadline_ms,
                              const void *payload, uint32_t size,
                              int64_t now_ms);

/* Raises the next overflow offset (the end offset captured at assignment,
 * which can be past the last record: transaction markers).  Lower values
 * are ignored. */
void sl_backlog_set_next_offset(sl_backlog_t *bl, int64_t next_offset);

/*
 * Commit-time state
 */

/* ThrottleCheckpoint.from_offset: the smallest overflow offset any key's
 * backlog still needs, or the next offset when none does.  Never moves
 * back.  O(1). */
int64_t sl_backlog_checkpoint(const sl_backlog_t *bl);

/* One past the last overflow offset reported (or set at rebuild). */
int64_t sl_backlog_next_offset(const sl_backlog_t *bl);

/* Calls cb for every key whose drained_to or bucket changed since the last
 * flush (its ThrottleKey record is stale), then forgets them.  cb must not
 * modify the backlog. */
void sl_backlog_flush_dirty(sl_backlog_t *bl,
                            void (*cb)(sl_backlog_key_t *k, void *opaque),
                            void *opaque);

/*
 * Drops keys that carry no state worth keeping: no backlog, no appends
 * awaiting reports, not dirty, drained_to <= checkpoint (a rebuild from
 * the checkpoint needs no record of it), and a full bucket (dropping it
 * changes no future decision; a key at rate 0 is therefore kept).  Visits
 * at most max_visit idle keys, least recently used first, so the cost per
 * call is bounded; calls cb (which must not modify the backlog) just before
 * each key is freed, for the operator to tombstone "k/" + key.  The
 * tombstones must commit in the same transaction as a checkpoint record at
 * least as new as sl_backlog_checkpoint() at the time of the sweep.  Returns
 * the number dropped.
 */
size_t sl_backlog_sweep(sl_backlog_t *bl, int64_t now_ms, size_t max_visit,
                        void (*cb)(const sl_backlog_key_t *k, void *opaque),
                        void *opaque);

/*
 * Keys
 */

/* The key's state, or NULL. */
sl_backlog_key_t *sl_backlog_find(const sl_backlog_t *bl, const void *key,
                                  size_t keylen);

/* Calls cb for every key (for inspect and metrics).  cb must not modify the
 * backlog. */
void sl_backlog_foreach(const sl_backlog_t *bl,
                        void (*cb)(const sl_backlog_key_t *k, void *opaque),
                        void *opaque);

const void *sl_backlog_key_key(const sl_backlog_key_t *k, size_t *keylen);
/* Buffered messages and their payload bytes. */
uint32_t sl_backlog_key_len(const sl_backlog_key_t *k);
uint64_t sl_backlog_key_bytes(const sl_backlog_key_t *k);
/* The i-th buffered message from the head (0), or NULL past the end. */
const sl_backlog_entry_t *sl_backlog_key_entry(const sl_backlog_key_t *k,
                                               uint32_t i);
/* ThrottleKey.drained_to: overflow offsets below it are done for the key. */
int64_t sl_backlog_key_drained_to(const sl_backlog_key_t *k);
/* The bucket (ThrottleKey.tokens and updated_ms) and the rate in force. */
const sl_tbucket_t *sl_backlog_key_bucket(const sl_backlog_key_t *k);
const sl_rate_t *sl_backlog_key_rate(const sl_backlog_key_t *k);
/* When the key's head is next due (SL_BACKLOG_NEVER: parked or empty). */
int64_t sl_backlog_key_due_ms(const sl_backlog_key_t *k);
/* 1 if the key waits for its head's payload (FETCH handed out). */
int sl_backlog_key_parked(const sl_backlog_key_t *k);
/* Bits for the operator's own use (e.g. "has a changelog record"); the
 * backlog never reads them.  0 for a new key. */
uint32_t *sl_backlog_key_opflags(sl_backlog_key_t *k);
uint32_t sl_backlog_key_get_opflags(const sl_backlog_key_t *k);

/*
 * Accounting
 */

typedef struct sl_backlog_stats_s {
        uint64_t keys;        /* keys with state */
        uint64_t keys_queued; /* keys with a backlog */
        uint64_t parked;      /* keys waiting for a FETCH */
        uint64_t messages;    /* buffered messages */
        uint64_t bytes;       /* their payload bytes */
        uint64_t awaiting;    /* appends awaiting delivery reports */
        /* Memory of the per-message index: the key rings (capacity) and the
         * queue of appends awaiting reports.  The figure to keep under 32
         * bytes per buffered message. */
        uint64_t index_bytes;
        /* Memory of the per-key state: key structs and bytes, hash table,
         * heaps. */
        uint64_t key_bytes;
} sl_backlog_stats_t;

void sl_backlog_stats(const sl_backlog_t *bl, sl_backlog_stats_t *st);

/* Index bytes alone (see sl_backlog_stats_t.index_bytes). */
uint64_t sl_backlog_index_bytes(const sl_backlog_t *bl);

/* Checks every internal invariant in O(n): 0 if sound, -1 if not (with a
 * reason on stderr).  For tests. */
int sl_backlog_verify(const sl_backlog_t *bl);

#endif
