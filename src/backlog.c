/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backlog.c — the throttle state of one input partition (see backlog.h).
 *
 * DESIGN
 *
 * Keys.  A chained hash table (hmap.h: power-of-two buckets, intrusive link,
 * seeded sl_hash() of hash.h) maps the throttle key bytes to an
 * sl_backlog_key_t holding, in one allocation with the key bytes: the token
 * bucket and the rate in force, the ring of buffered messages, drained_to, and
 * the links of the structures below. A key exists as long as it carries state
 * worth keeping: a backlog, a bucket below full, a drained_to the checkpoint
 * has not passed, or a changelog record not yet written (see
 * sl_backlog_sweep()).
 *
 * Per-message index.  Each buffered message is one 24-byte sl_backlog_entry_t
 * (offset, deadline, and a word that is either the cached payload's address
 * or its size) in its key's ring buffer, oldest first.  Rings grow by a
 * quarter (not doubling), so capacity exceeds length by at most 25% plus a
 * few slots and the index stays near 30 bytes per buffered message; they
 * shrink to 1.25 x length when less than half full, and are freed when
 * empty.  Appends awaiting their delivery report also sit in one
 * partition-wide FIFO of key pointers (8 bytes each, only while in flight):
 * overflow records of a partition are delivered in append order, so the
 * report for offset o belongs to the oldest entry of the key at the front
 * of that FIFO, found in O(1).  Within a key the entries without an offset
 * are therefore always a suffix of the ring.
 *
 * Schedule.  Three binary heaps of key pointers (heap.h), each key storing
 * its own position in each (intrusive, O(log k) update, no search):
 *   sched   keys with a backlog by (due_ms, seq): due_ms is the time of the
 *           head's next action, min(next token, head deadline), or NEVER
 *           while parked.  seq breaks ties round-robin.  One heap of keys,
 *           not of messages: a key with a million buffered messages is one
 *           entry and never delays another key.
 *   ckpt    keys whose head offset is known, by head offset: the checkpoint
 *           is min(top, next_offset) in O(1).  It never moves back: new
 *           offsets are all >= next_offset, and heads only move forward.
 *   evict   (in the shared cache) keys with evictable cached payloads, by
 *           eviction priority, largest first.
 * The sched heap is preferred over reusing sl_timerheap keyed by the
 * throttle key because that would copy every key a second time and probe a
 * second hash table on every reschedule; an intrusive heap costs 4 bytes in
 * the key.
 *
 * Expiry is decided at the head: a key's action time is the head's
 * deadline if that comes before its next token.  A message behind the head
 * is never sent late either (it is checked again when it becomes the head),
 * but with mixed TTLs in one key it reaches the DLQ when it becomes the
 * head rather than exactly at its deadline.
 *
 * Payload cache.  Payloads are malloc'd blocks (an 8-byte size header, then
 * the bytes) charged size + SL_BACKLOG_CACHE_OVERHEAD against a budget
 * shared by every backlog of the pipeline.  Policy: keep the payloads that
 * will be needed soonest, estimated for the i-th message of a key as
 * (i + 1) / rate seconds.  Within a key that makes the cached set of
 * known-offset messages a prefix of the ring ([0, pre)): entries beyond it
 * are dropped when their offset arrives, and eviction always takes the last
 * entry of some prefix — the key whose prefix reaches farthest in time, so
 * rate-0 keys and slow deep backlogs go first, and a key's next messages
 * are the last to go.  A re-read fill is admitted only where it extends a
 * prefix and only if it would not itself be the first to evict.  LRU by
 * append time would be exactly wrong here: the oldest appended message of a
 * key is its head, the next one needed.
 * Pinned payloads are never evicted and do not count against the budget:
 * those whose offset is unknown (they cannot be re-read yet; librdkafka
 * holds the same bytes in its queue meanwhile, so the producer's in-flight
 * limits bound them) and a head just fetched for a parked key (one per
 * parked key, until it is popped).  The policy is applied to an appended
 * payload when its offset arrives and it stops being pinned.  So the cache
 * holds at most budget + pinned bytes.  (Counting pinned bytes against the
 * budget was tried first: every append then evicted a payload needed
 * sooner, only for the appended one to be dropped at its report.)
 *
 * A head whose payload is not cached is handed out once as FETCH and its
 * key parked (due NEVER) until sl_backlog_fill() brings the payload; a
 * sequential re-read from that offset usually refills the following
 * messages of many keys in one pass.
 *
 * Rates.  Each key caches its rate.  When the rates table's generation
 * moves, the next call that takes a time refreshes every key of the
 * partition: the time up to now is refilled at the old rate, the level is
 * capped by the new burst, and due times and eviction priorities are
 * recomputed.  Rate records are rare, so the O(keys) walk is cheap overall
 * and the bucket arithmetic stays exact.
 *
 * Complexity: offer O(1) expected (a hash probe); append, ack, poll, pop
 * O(log k) for k keys with a backlog; checkpoint O(1); sweep O(visited).
 */
#include "backlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "heap.h"
#include "hmap.h"
#include "util.h"

#define MIN_BUCKETS 16
#define MIN_RING    4
#define MIN_PENDING 16

enum { H_SCHED = 0, H_CKPT = 1, H_EVICT = 2, H_COUNT = 3 };

/* A cached payload. */
typedef struct pblock_s {
        uint32_t size;
        uint32_t pad;
        char data[];
} pblock_t;

_Static_assert(sizeof(sl_backlog_entry_t) == 24,
               "index entry must stay 24 bytes");
_Static_assert(sizeof(pblock_t) == 8, "payload block header is 8 bytes");

struct sl_backlog_key_s {
        sl_backlog_t *bl;
        sl_hmap_link_t hlink;                    /* hash chain */
        sl_backlog_key_t *idle_prev, *idle_next; /* idle list (no backlog) */
        sl_backlog_key_t *dirty_next;            /* dirty list */
        sl_backlog_entry_t *ring;
        uint32_t cap, head, len;
        uint32_t nunknown;       /* ring entries without an offset (a suffix) */
        uint32_t popped_unacked; /* popped before their report came */
        uint32_t pre;            /* known entries [0, pre) are cached */
        uint32_t hidx[H_COUNT];  /* position in each heap, or SL_HEAP_NONE */
        uint32_t opflags;
        uint32_t keylen;
        uint8_t parked;      /* FETCH handed out, waiting for the payload */
        uint8_t head_pinned; /* the head was fetched: not evictable */
        uint8_t dirty;
        uint8_t idle; /* in the idle list */
        int64_t due_ms;
        uint64_t seq;
        int64_t ckpt_off; /* head offset while in the ckpt heap */
        double evict_prio;
        int64_t drained_to;
        uint64_t bytes; /* payload bytes buffered */
        sl_tbucket_t bucket;
        sl_rate_t rate;
        char key[];
};

/*
 * The three heaps of keys (heap.h), each through its own position in
 * hidx[].
 */

static inline int sched_before(const sl_backlog_key_t *x,
                               const sl_backlog_key_t *y) {
        return x->due_ms < y->due_ms ||
               (x->due_ms == y->due_ms && x->seq < y->seq);
}

static inline int ckpt_before(const sl_backlog_key_t *x,
                              const sl_backlog_key_t *y) {
        return x->ckpt_off < y->ckpt_off;
}

/* Largest eviction priority first. */
static inline int evict_before(const sl_backlog_key_t *x,
                               const sl_backlog_key_t *y) {
        return x->evict_prio > y->evict_prio;
}

#define SCHED_POS(k) ((k)->hidx[H_SCHED])
#define CKPT_POS(k)  ((k)->hidx[H_CKPT])
#define EVICT_POS(k) ((k)->hidx[H_EVICT])
SL_HEAP_DEFINE(sched_heap, sl_backlog_key_t, SCHED_POS, sched_before)
SL_HEAP_DEFINE(ckpt_heap, sl_backlog_key_t, CKPT_POS, ckpt_before)
SL_HEAP_DEFINE(evict_heap, sl_backlog_key_t, EVICT_POS, evict_before)

struct sl_backlog_cache_s {
        int64_t budget;
        int64_t bytes;
        int64_t pinned;
        uint64_t entries;
        uint64_t evicted;
        uint64_t refused;
        evict_heap_t evict;
        size_t nbacklogs;
};

struct sl_backlog_s {
        const sl_rates_t *rates;
        uint64_t rates_gen;
        sl_backlog_cache_t *cache;

        sl_hmap_t keys;  /* by key (hmap.h) */
        size_t keybytes; /* sum of key lengths */

        sched_heap_t sched;
        ckpt_heap_t ckpt;

        /* Ring of keys, one per append awaiting its delivery report. */
        sl_backlog_key_t **pending;
        size_t pcap, phead, pn;

        sl_backlog_key_t *idle_head, *idle_tail;
        size_t nidle;
        sl_backlog_key_t *dirty_head;

        int64_t next_offset;
        int64_t last_now;
        uint64_t seq;
        uint64_t messages, bytes, ring_slots, parked;
};

/*
 * Entries and payload blocks
 */

static inline int ref_cached(uint64_t ref) {
        return ref && !(ref & 1);
}

static inline pblock_t *ref_block(uint64_t ref) {
        return (pblock_t *)(uintptr_t)ref;
}

static inline uint64_t ref_uncached(uint32_t size) {
        return ((uint64_t)size << 1) | 1;
}

uint32_t sl_backlog_entry_size(const sl_backlog_entry_t *e) {
        sl_assert(e);
        return ref_cached(e->ref) ? ref_block(e->ref)->size
                                  : (uint32_t)(e->ref >> 1);
}

int sl_backlog_entry_cached(const sl_backlog_entry_t *e) {
        sl_assert(e);
        return ref_cached(e->ref);
}

const void *sl_backlog_entry_payload(const sl_backlog_entry_t *e) {
        sl_assert(e);
        return ref_cached(e->ref) ? ref_block(e->ref)->data : NULL;
}

static inline int64_t charge_of(uint32_t size) {
        return (int64_t)size + SL_BACKLOG_CACHE_OVERHEAD;
}

static uint64_t block_new(const void *payload, uint32_t size) {
        pblock_t *b = sl_malloc(sizeof(*b) + size);

        b->size = size;
        b->pad = 0;
        if (size)
                memcpy(b->data, payload, size);
        return (uint64_t)(uintptr_t)b;
}

void sl_backlog_payload_free(void *payload) {
        if (payload)
                free((char *)payload - offsetof(pblock_t, data));
}

static inline sl_backlog_entry_t *entry_at(const sl_backlog_key_t *k,
                                           uint32_t i) {
        uint32_t j = k->head + i;

        if (j >= k->cap)
                j -= k->cap;
        return &k->ring[j];
}

/*
 * Payload cache
 */

sl_backlog_cache_t *sl_backlog_cache_new(int64_t budget_bytes) {
        sl_backlog_cache_t *c = sl_calloc(1, sizeof(*c));

        c->budget = budget_bytes > 0 ? budget_bytes : 0;
        return c;
}

void sl_backlog_cache_destroy(sl_backlog_cache_t *c) {
        if (!c)
                return;
        sl_assert(c->nbacklogs == 0);
        evict_heap_fini(&c->evict);
        free(c);
}

void sl_backlog_cache_stats(const sl_backlog_cache_t *c,
                            sl_backlog_cache_stats_t *st) {
        sl_assert(c && st);
        st->budget = c->budget;
        st->bytes = c->bytes;
        st->pinned_bytes = c->pinned;
        st->entries = c->entries;
        st->evicted = c->evicted;
        st->refused = c->refused;
}

/* Entries of k that eviction may take: the prefix, minus a pinned head. */
static inline uint32_t evictable(const sl_backlog_key_t *k) {
        return k->pre - (k->head_pinned ? 1 : 0);
}

/* Seconds until the i-th message (from 0) of k is needed, roughly. */
static inline double need_in(const sl_backlog_key_t *k, uint32_t i) {
        return k->rate.per_sec > 0 ? (double)(i + 1) / k->rate.per_sec
                                   : INFINITY;
}

static void evict_update(sl_backlog_key_t *k) {
        evict_heap_t *h = &k->bl->cache->evict;

        if (evictable(k) > 0) {
                k->evict_prio = need_in(k, k->pre - 1);
                evict_heap_put(h, k);
        } else {
                evict_heap_discard(h, k);
        }
}

/* Drops the payload of k's entry at i, which is cached. */
static void uncache(sl_backlog_cache_t *c, sl_backlog_entry_t *e, int pinned) {
        pblock_t *b = ref_block(e->ref);

        c->bytes -= charge_of(b->size);
        if (pinned)
                c->pinned -= charge_of(b->size);
        c->entries--;
        e->ref = ref_uncached(b->size);
        free(b);
}

static void cache_put(sl_backlog_cache_t *c, sl_backlog_entry_t *e,
                      const void *payload, uint32_t size, int pinned) {
        e->ref = block_new(payload, size);
        c->bytes += charge_of(size);
        if (pinned)
                c->pinned += charge_of(size);
        c->entries++;
}

/* Evicts the last entry of k's cached prefix. */
static void evict_one(sl_backlog_cache_t *c, sl_backlog_key_t *k) {
        sl_assert(evictable(k) > 0);
        uncache(c, entry_at(k, k->pre - 1), 0);
        k->pre--;
        c->evicted++;
        evict_update(k);
}

/* Charged bytes that count against the budget. */
static inline int64_t unpinned(const sl_backlog_cache_t *c) {
        return c->bytes - c->pinned;
}

/* Evicts, farthest need first, until the unpinned payloads fit the
 * budget. */
static void cache_enforce(sl_backlog_cache_t *c) {
        sl_backlog_key_t *top;

        while (unpinned(c) > c->budget && (top = evict_heap_top(&c->evict)))
                evict_one(c, top);
}

void sl_backlog_cache_set_budget(sl_backlog_cache_t *c, int64_t budget_bytes) {
        sl_assert(c);
        c->budget = budget_bytes > 0 ? budget_bytes : 0;
        cache_enforce(c);
}

/* Makes room for `charge` more unpinned bytes by evicting only payloads
 * needed later than `need` seconds from now.  Returns 1 if there is room,
 * 0 if not (counted as refused). */
static int make_room(sl_backlog_cache_t *c, double need, int64_t charge) {
        sl_backlog_key_t *top;

        while (unpinned(c) + charge > c->budget) {
                top = evict_heap_top(&c->evict);
                if (!top || top->evict_prio <= need) {
                        c->refused++;
                        return 0;
                }
                evict_one(c, top);
        }
        return 1;
}

/* Caches the payload of k's known entry at i == k->pre if the policy admits
 * it.  Returns 1 if cached. */
static int cache_admit(sl_backlog_key_t *k, uint32_t i, const void *payload,
                       uint32_t size) {
        sl_backlog_cache_t *c = k->bl->cache;

        sl_assert(i == k->pre);
        if (!make_room(c, need_in(k, i), charge_of(size)))
                return 0;
        cache_put(c, entry_at(k, i), payload, size, 0);
        k->pre++;
        evict_update(k);
        return 1;
}

/*
 * Keys: hash table, idle list, dirty list
 */

/* Throttle keys come from producers: a seeded hash (hash.h), so none can
 * aim its keys at one bucket. */
#define KEY_HASH(k)          sl_hash((k)->key, (k)->keylen)
#define KEY_EQ(k, h, p, len) sl_hmap_key_eq((k)->key, (k)->keylen, p, len)
SL_HMAP_DEFINE(kmap, sl_backlog_key_t, hlink, KEY_HASH, KEY_EQ)

/* The link that points at key's entry, or at the NULL ending its chain. */
static inline sl_hmap_link_t **find_link(const sl_backlog_t *bl,
                                         const void *key, size_t keylen) {
        return kmap_link(&bl->keys, sl_hash(key, keylen), key, keylen);
}

static inline sl_backlog_key_t *key_find(const sl_backlog_t *bl,
                                         const void *key, size_t keylen) {
        sl_hmap_link_t *l = *find_link(bl, key, keylen);
        return l ? kmap_entry(l) : NULL;
}

static void idle_add(sl_backlog_t *bl, sl_backlog_key_t *k) {
        sl_assert(!k->idle);
        k->idle = 1;
        k->idle_next = NULL;
        k->idle_prev = bl->idle_tail;
        if (bl->idle_tail)
                bl->idle_tail->idle_next = k;
        else
                bl->idle_head = k;
        bl->idle_tail = k;
        bl->nidle++;
}

static void idle_del(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (!k->idle)
                return;
        if (k->idle_prev)
                k->idle_prev->idle_next = k->idle_next;
        else
                bl->idle_head = k->idle_next;
        if (k->idle_next)
                k->idle_next->idle_prev = k->idle_prev;
        else
                bl->idle_tail = k->idle_prev;
        k->idle = 0;
        k->idle_prev = k->idle_next = NULL;
        bl->nidle--;
}

static void mark_dirty(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (k->dirty)
                return;
        k->dirty = 1;
        k->dirty_next = bl->dirty_head;
        bl->dirty_head = k;
}

static sl_backlog_key_t *key_get(sl_backlog_t *bl, const void *key,
                                 size_t keylen, int64_t now_ms) {
        sl_hmap_link_t **link = find_link(bl, key, keylen);
        sl_backlog_key_t *k;

        if (*link)
                return kmap_entry(*link);
        sl_assert(keylen < UINT32_MAX);
        k = sl_calloc(1, sizeof(*k) + keylen);
        k->bl = bl;
        for (int i = 0; i < H_COUNT; i++)
                k->hidx[i] = SL_HEAP_NONE;
        k->keylen = (uint32_t)keylen;
        if (keylen)
                memcpy(k->key, key, keylen);
        k->due_ms = SL_BACKLOG_NEVER;
        sl_rates_lookup(bl->rates, key, keylen, &k->rate);
        sl_tbucket_init(&k->bucket, &k->rate, now_ms);
        kmap_insert_at(&bl->keys, link, k);
        bl->keybytes += keylen;
        idle_add(bl, k);
        return k;
}

/* Unlinks and frees an idle key with nothing left in it. */
static void key_free(sl_backlog_t *bl, sl_backlog_key_t *k) {
        sl_hmap_link_t **link = find_link(bl, k->key, k->keylen);

        sl_assert(*link == &k->hlink && !k->len && !k->ring && !k->dirty);
        kmap_unlink(&bl->keys, link);
        idle_del(bl, k);
        bl->keybytes -= k->keylen;
        free(k);
}

/*
 * Rings
 */

static void ring_resize(sl_backlog_t *bl, sl_backlog_key_t *k, uint32_t cap) {
        sl_backlog_entry_t *r = NULL;

        sl_assert(cap >= k->len);
        if (cap) {
                r = sl_malloc((size_t)cap * sizeof(*r));
                for (uint32_t i = 0; i < k->len; i++)
                        r[i] = *entry_at(k, i);
        }
        free(k->ring);
        bl->ring_slots -= k->cap;
        bl->ring_slots += cap;
        k->ring = r;
        k->cap = cap;
        k->head = 0;
}

static sl_backlog_entry_t *ring_push(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (k->len == k->cap) {
                uint64_t cap = k->cap < MIN_RING
                                   ? MIN_RING
                                   : (uint64_t)k->cap + k->cap / 4;
                sl_assert(k->cap < UINT32_MAX);
                ring_resize(bl, k,
                            cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap);
        }
        k->len++;
        return entry_at(k, k->len - 1);
}

static void ring_pop(sl_backlog_t *bl, sl_backlog_key_t *k) {
        sl_assert(k->len > 0);
        k->head = k->head + 1 == k->cap ? 0 : k->head + 1;
        k->len--;
        if (k->len == 0)
                ring_resize(bl, k, 0);
        else if (k->cap > 2 * MIN_RING && k->len < k->cap / 2)
                ring_resize(bl, k, k->len + k->len / 4 + 1);
}

/*
 * Schedule
 */

/* When k's head is next due: its next token, or its deadline if that comes
 * first (expiry). */
static int64_t head_due(const sl_backlog_t *bl, const sl_backlog_key_t *k) {
        int64_t tok = sl_tbucket_next_ms(&k->bucket, &k->rate, bl->last_now);
        int64_t dl = entry_at(k, 0)->deadline_ms;

        return tok < dl ? tok : dl;
}

/* Recomputes k's place in the schedule (and the idle list). */
static void reschedule(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (k->len == 0) {
                sched_heap_discard(&bl->sched, k);
                k->due_ms = SL_BACKLOG_NEVER;
                if (!k->idle)
                        idle_add(bl, k);
                return;
        }
        idle_del(bl, k);
        k->due_ms = k->parked ? SL_BACKLOG_NEVER : head_due(bl, k);
        k->seq = ++bl->seq;
        sched_heap_put(&bl->sched, k);
}

/* Keeps k's entry in the ckpt heap in step with its head. */
static void ckpt_update(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (k->len > k->nunknown) {
                k->ckpt_off = entry_at(k, 0)->offset;
                ckpt_heap_put(&bl->ckpt, k);
        } else {
                ckpt_heap_discard(&bl->ckpt, k);
        }
}

static void set_now(sl_backlog_t *bl, int64_t now_ms) {
        if (now_ms > bl->last_now)
                bl->last_now = now_ms;
}

/* Applies a new generation of the rates table to every key. */
static void refresh_rates(sl_backlog_t *bl) {
        uint64_t gen = sl_rates_generation(bl->rates);
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        if (gen == bl->rates_gen)
                return;
        bl->rates_gen = gen;
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&bl->keys, &it));) {
                sl_backlog_key_t *k = kmap_entry(l);
                sl_rate_t r;
                sl_rates_lookup(bl->rates, k->key, k->keylen, &r);
                if (r.per_sec == k->rate.per_sec && r.burst == k->rate.burst)
                        continue;
                sl_tbucket_set_rate(&k->bucket, &k->rate, &r, bl->last_now);
                k->rate = r;
                if (k->len)
                        reschedule(bl, k);
                if (sl_heap_in(EVICT_POS(k)))
                        evict_update(k);
        }
}

/*
 * Backlog
 */

sl_backlog_t *sl_backlog_new(const sl_rates_t *rates, sl_backlog_cache_t *cache,
                             int64_t from_offset) {
        sl_backlog_t *bl;

        sl_assert(rates && cache);
        bl = sl_calloc(1, sizeof(*bl));
        bl->rates = rates;
        bl->rates_gen = sl_rates_generation(rates);
        bl->cache = cache;
        sl_hmap_init(&bl->keys, MIN_BUCKETS, 1, 0);
        bl->next_offset = from_offset > 0 ? from_offset : 0;
        bl->last_now = INT64_MIN;
        cache->nbacklogs++;
        return bl;
}

void sl_backlog_destroy(sl_backlog_t *bl) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;
        sl_backlog_cache_t *c;

        if (!bl)
                return;
        c = bl->cache;
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&bl->keys, &it));) {
                sl_backlog_key_t *k = kmap_entry(l);
                for (uint32_t i = 0; i < k->len; i++) {
                        sl_backlog_entry_t *e = entry_at(k, i);
                        if (ref_cached(e->ref))
                                uncache(c, e,
                                        e->offset == SL_BACKLOG_UNKNOWN ||
                                            (i == 0 && k->head_pinned));
                }
                evict_heap_discard(&c->evict, k);
                free(k->ring);
                free(k);
        }
        c->nbacklogs--;
        sl_hmap_fini(&bl->keys);
        sched_heap_fini(&bl->sched);
        ckpt_heap_fini(&bl->ckpt);
        free(bl->pending);
        free(bl);
}

sl_backlog_key_t *sl_backlog_find(const sl_backlog_t *bl, const void *key,
                                  size_t keylen) {
        sl_assert(bl && (key || !keylen));
        return key_find(bl, key, keylen);
}

sl_backlog_verdict_t sl_backlog_offer(sl_backlog_t *bl, const void *key,
                                      size_t keylen, int64_t deadline_ms,
                                      int64_t now_ms, sl_backlog_key_t **kp) {
        sl_backlog_key_t *k;

        sl_assert(bl && (key || !keylen) && kp);
        set_now(bl, now_ms);
        refresh_rates(bl);
        *kp = k = key_get(bl, key, keylen, now_ms);
        if (k->idle) { /* least recently used first in sweeps */
                idle_del(bl, k);
                idle_add(bl, k);
        }
        if (deadline_ms <= now_ms)
                return SL_BACKLOG_EXPIRED;
        if (k->len == 0 && sl_tbucket_take(&k->bucket, &k->rate, now_ms)) {
                mark_dirty(bl, k);
                return SL_BACKLOG_FORWARD;
        }
        return SL_BACKLOG_APPEND;
}

static void pending_push(sl_backlog_t *bl, sl_backlog_key_t *k) {
        if (bl->pn == bl->pcap) {
                size_t cap = bl->pcap ? bl->pcap * 2 : MIN_PENDING;
                sl_backlog_key_t **p = sl_malloc(cap * sizeof(*p));
                for (size_t i = 0; i < bl->pn; i++)
                        p[i] = bl->pending[(bl->phead + i) & (bl->pcap - 1)];
                free(bl->pending);
                bl->pending = p;
                bl->pcap = cap;
                bl->phead = 0;
        }
        bl->pending[(bl->phead + bl->pn++) & (bl->pcap - 1)] = k;
}

static sl_backlog_key_t *pending_pop(sl_backlog_t *bl) {
        sl_backlog_key_t *k = bl->pending[bl->phead];

        bl->phead = (bl->phead + 1) & (bl->pcap - 1);
        bl->pn--;
        if (bl->pcap > MIN_PENDING && bl->pn < bl->pcap / 4) {
                size_t cap = bl->pcap / 2;
                sl_backlog_key_t **p = sl_malloc(cap * sizeof(*p));
                for (size_t i = 0; i < bl->pn; i++)
                        p[i] = bl->pending[(bl->phead + i) & (bl->pcap - 1)];
                free(bl->pending);
                bl->pending = p;
                bl->pcap = cap;
                bl->phead = 0;
        }
        return k;
}

void sl_backlog_append(sl_backlog_t *bl, sl_backlog_key_t *k,
                       int64_t deadline_ms, const void *payload,
                       uint32_t size) {
        sl_backlog_entry_t *e;

        sl_assert(bl && k && k->bl == bl && (payload || !size));
        e = ring_push(bl, k);
        e->offset = SL_BACKLOG_UNKNOWN;
        e->deadline_ms = deadline_ms;
        cache_put(bl->cache, e, payload, size, 1);
        k->nunknown++;
        k->bytes += size;
        bl->messages++;
        bl->bytes += size;
        pending_push(bl, k);
        if (k->len == 1)
                reschedule(bl, k);
}

int sl_backlog_acked(sl_backlog_t *bl, int64_t offset) {
        sl_backlog_cache_t *c;
        sl_backlog_entry_t *e;
        sl_backlog_key_t *k;
        uint32_t i;

        sl_assert(bl);
        if (!bl->pn || offset < bl->next_offset)
                return -1;
        c = bl->cache;
        k = pending_pop(bl);
        bl->next_offset = offset + 1;
        if (k->popped_unacked) {
                /* Sent or expired before its report: only drained_to moves. */
                k->popped_unacked--;
                k->drained_to = offset + 1;
                mark_dirty(bl, k);
                return 0;
        }
        sl_assert(k->nunknown > 0);
        i = k->len - k->nunknown;
        e = entry_at(k, i);
        sl_assert(e->offset == SL_BACKLOG_UNKNOWN && ref_cached(e->ref));
        e->offset = offset;
        k->nunknown--;
        /* Unpinned now: it stays if it extends the cached prefix and the
         * policy admits it (decided while it is still pinned, so it does
         * not count against itself). */
        if (i == k->pre &&
            make_room(c, need_in(k, i), charge_of(ref_block(e->ref)->size))) {
                c->pinned -= charge_of(ref_block(e->ref)->size);
                k->pre++;
                evict_update(k);
        } else {
                /* Behind a gap, or needed later than all that is cached. */
                c->pinned -= charge_of(ref_block(e->ref)->size);
                uncache(c, e, 0);
                c->evicted++;
        }
        if (i == 0)
                ckpt_update(bl, k);
        return 0;
}

/* Pops k's head into *out; the payload goes to the caller if want_payload,
 * else it is freed. */
static void pop_head(sl_backlog_t *bl, sl_backlog_key_t *k,
                     sl_backlog_item_t *out, int want_payload) {
        sl_backlog_cache_t *c = bl->cache;
        sl_backlog_entry_t *e = entry_at(k, 0);
        uint32_t size = sl_backlog_entry_size(e);
        int known = e->offset != SL_BACKLOG_UNKNOWN;

        out->key = k;
        out->offset = e->offset;
        out->deadline_ms = e->deadline_ms;
        out->size = size;
        out->payload = NULL;
        if (ref_cached(e->ref)) {
                pblock_t *b = ref_block(e->ref);
                c->bytes -= charge_of(size);
                if (!known || k->head_pinned)
                        c->pinned -= charge_of(size);
                c->entries--;
                if (known)
                        k->pre--;
                if (want_payload)
                        out->payload = b->data;
                else
                        free(b);
        }
        if (known) {
                k->drained_to = e->offset + 1;
        } else {
                k->nunknown--;
                k->popped_unacked++;
        }
        mark_dirty(bl, k);
        if (k->parked) {
                k->parked = 0;
                bl->parked--;
        }
        k->head_pinned = 0;
        k->bytes -= size;
        bl->messages--;
        bl->bytes -= size;
        ring_pop(bl, k);
        ckpt_update(bl, k);
        evict_update(k);
        reschedule(bl, k);
}

int sl_backlog_poll(sl_backlog_t *bl, int64_t now_ms, sl_backlog_item_t *out,
                    int64_t *next_ms) {
        sl_backlog_key_t *k;

        sl_assert(bl && out && next_ms);
        set_now(bl, now_ms);
        refresh_rates(bl);
        for (;;) {
                sl_backlog_entry_t *e;

                k = sched_heap_top(&bl->sched);
                if (!k || k->due_ms > now_ms) {
                        *next_ms = k ? k->due_ms : SL_BACKLOG_NEVER;
                        return 0;
                }
                e = entry_at(k, 0);
                if (!ref_cached(e->ref)) {
                        k->parked = 1;
                        bl->parked++;
                        reschedule(bl, k);
                        out->action = SL_BACKLOG_FETCH;
                        out->key = k;
                        out->offset = e->offset;
                        out->deadline_ms = e->deadline_ms;
                        out->size = sl_backlog_entry_size(e);
                        out->payload = NULL;
                        return 1;
                }
                if (now_ms >= e->deadline_ms) {
                        pop_head(bl, k, out, 1);
                        out->action = SL_BACKLOG_EXPIRE;
                        return 1;
                }
                if (sl_tbucket_take(&k->bucket, &k->rate, now_ms)) {
                        pop_head(bl, k, out, 1);
                        out->action = SL_BACKLOG_SEND;
                        return 1;
                }
                /* Not due after all (cannot happen with a consistent
                 * bucket): place it at its real time and look again. */
                reschedule(bl, k);
        }
}

int sl_backlog_drop_head(sl_backlog_t *bl, sl_backlog_key_t *k,
                         sl_backlog_item_t *out) {
        sl_assert(bl && k && k->bl == bl && out);
        if (!k->len)
                return -1;
        pop_head(bl, k, out, 0);
        out->action = SL_BACKLOG_EXPIRE;
        return 0;
}

void sl_backlog_unpark_all(sl_backlog_t *bl) {
        sched_heap_t *h;

        sl_assert(bl);
        h = &bl->sched;
        if (!bl->parked)
                return;
        /* Recompute the parked keys' due times in place, then restore heap
         * order in one O(n) pass rather than a sift per key. */
        for (uint32_t i = 0; i < h->n; i++) {
                sl_backlog_key_t *k = h->a[i];
                if (!k->parked)
                        continue;
                k->parked = 0;
                bl->parked--;
                k->due_ms = head_due(bl, k);
                k->seq = ++bl->seq;
        }
        sched_heap_heapify(h);
}

/* The index of k's known entry at offset, or -1. */
static int64_t find_offset(const sl_backlog_key_t *k, int64_t offset) {
        uint32_t lo = 0, hi = k->len - k->nunknown;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                int64_t o = entry_at(k, mid)->offset;
                if (o == offset)
                        return mid;
                if (o < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

int sl_backlog_fill(sl_backlog_t *bl, const void *key, size_t keylen,
                    int64_t offset, const void *payload, uint32_t size) {
        sl_backlog_entry_t *e;
        sl_backlog_key_t *k;
        int64_t i;

        sl_assert(bl && (key || !keylen) && (payload || !size));
        k = key_find(bl, key, keylen);
        if (!k || (i = find_offset(k, offset)) < 0)
                return 0;
        e = entry_at(k, (uint32_t)i);
        if (ref_cached(e->ref))
                return 0;
        if (sl_backlog_entry_size(e) != size)
                return -1;
        if (i != k->pre)
                return 0; /* would leave a gap in the prefix */
        if (k->parked) {
                /* The head a FETCH asked for: pinned until popped. */
                sl_assert(i == 0);
                cache_put(bl->cache, e, payload, size, 1);
                k->pre = 1;
                k->head_pinned = 1;
                k->parked = 0;
                bl->parked--;
                reschedule(bl, k);
                return 1;
        }
        return cache_admit(k, (uint32_t)i, payload, size);
}

/*
 * Rebuild
 */

sl_backlog_key_t *sl_backlog_restore_key(sl_backlog_t *bl, const void *key,
                                         size_t keylen, int64_t drained_to,
                                         double tokens, int64_t updated_ms) {
        sl_backlog_key_t *k;

        sl_assert(bl && (key || !keylen));
        k = key_get(bl, key, keylen, updated_ms);
        if (k->len || k->popped_unacked)
                return NULL;
        k->drained_to = drained_to;
        sl_tbucket_restore(&k->bucket, &k->rate, tokens, updated_ms);
        return k;
}

int sl_backlog_rebuild_append(sl_backlog_t *bl, const void *key, size_t keylen,
                              int64_t offset, int64_t deadline_ms,
                              const void *payload, uint32_t size,
                              int64_t now_ms) {
        sl_backlog_entry_t *e;
        sl_backlog_key_t *k;

        sl_assert(bl && (key || !keylen));
        if (bl->pn || offset < bl->next_offset)
                return -1;
        set_now(bl, now_ms);
        refresh_rates(bl);
        bl->next_offset = offset + 1;
        k = key_get(bl, key, keylen, now_ms);
        if (offset < k->drained_to)
                return 0;
        e = ring_push(bl, k);
        e->offset = offset;
        e->deadline_ms = deadline_ms;
        e->ref = ref_uncached(size);
        k->bytes += size;
        bl->messages++;
        bl->bytes += size;
        if (k->len == 1) {
                ckpt_update(bl, k);
                reschedule(bl, k);
        }
        if (payload && k->pre == k->len - 1)
                cache_admit(k, k->len - 1, payload, size);
        return 1;
}

void sl_backlog_set_next_offset(sl_backlog_t *bl, int64_t next_offset) {
        sl_assert(bl);
        if (next_offset > bl->next_offset)
                bl->next_offset = next_offset;
}

/*
 * Commit-time state
 */

int64_t sl_backlog_checkpoint(const sl_backlog_t *bl) {
        const sl_backlog_key_t *top;

        sl_assert(bl);
        /* Known offsets are all below next_offset (verified), so the
         * oldest known head, if any, is the minimum. */
        top = ckpt_heap_top(&bl->ckpt);
        return top ? top->ckpt_off : bl->next_offset;
}

int64_t sl_backlog_next_offset(const sl_backlog_t *bl) {
        sl_assert(bl);
        return bl->next_offset;
}

void sl_backlog_flush_dirty(sl_backlog_t *bl,
                            void (*cb)(sl_backlog_key_t *k, void *opaque),
                            void *opaque) {
        sl_backlog_key_t *k, *next;

        sl_assert(bl);
        for (k = bl->dirty_head; k; k = next) {
                next = k->dirty_next;
                if (cb)
                        cb(k, opaque);
                k->dirty = 0;
                k->dirty_next = NULL;
        }
        bl->dirty_head = NULL;
}

size_t sl_backlog_sweep(sl_backlog_t *bl, int64_t now_ms, size_t max_visit,
                        void (*cb)(const sl_backlog_key_t *k, void *opaque),
                        void *opaque) {
        size_t visits, dropped = 0;
        int64_t ckpt;

        sl_assert(bl);
        set_now(bl, now_ms);
        refresh_rates(bl);
        ckpt = sl_backlog_checkpoint(bl);
        visits = SL_MIN(max_visit, bl->nidle);
        while (visits--) {
                sl_backlog_key_t *k = bl->idle_head;
                if (!k->popped_unacked && !k->dirty && k->drained_to <= ckpt &&
                    sl_tbucket_full_ms(&k->bucket, &k->rate, now_ms) <=
                        now_ms) {
                        if (cb)
                                cb(k, opaque);
                        key_free(bl, k);
                        dropped++;
                } else {
                        idle_del(bl, k);
                        idle_add(bl, k);
                }
        }
        return dropped;
}

/*
 * Keys
 */

void sl_backlog_foreach(const sl_backlog_t *bl,
                        void (*cb)(const sl_backlog_key_t *k, void *opaque),
                        void *opaque) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        sl_assert(bl && cb);
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&bl->keys, &it));)
                cb(kmap_entry(l), opaque);
}

const void *sl_backlog_key_key(const sl_backlog_key_t *k, size_t *keylen) {
        sl_assert(k);
        if (keylen)
                *keylen = k->keylen;
        return k->key;
}

uint32_t sl_backlog_key_len(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->len;
}

uint64_t sl_backlog_key_bytes(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->bytes;
}

const sl_backlog_entry_t *sl_backlog_key_entry(const sl_backlog_key_t *k,
                                               uint32_t i) {
        sl_assert(k);
        return i < k->len ? entry_at(k, i) : NULL;
}

int64_t sl_backlog_key_drained_to(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->drained_to;
}

const sl_tbucket_t *sl_backlog_key_bucket(const sl_backlog_key_t *k) {
        sl_assert(k);
        return &k->bucket;
}

const sl_rate_t *sl_backlog_key_rate(const sl_backlog_key_t *k) {
        sl_assert(k);
        return &k->rate;
}

int64_t sl_backlog_key_due_ms(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->due_ms;
}

int sl_backlog_key_parked(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->parked;
}

uint32_t *sl_backlog_key_opflags(sl_backlog_key_t *k) {
        sl_assert(k);
        return &k->opflags;
}

uint32_t sl_backlog_key_get_opflags(const sl_backlog_key_t *k) {
        sl_assert(k);
        return k->opflags;
}

/*
 * Accounting and verification
 */

uint64_t sl_backlog_index_bytes(const sl_backlog_t *bl) {
        sl_assert(bl);
        return bl->ring_slots * sizeof(sl_backlog_entry_t) +
               bl->pcap * sizeof(*bl->pending);
}

void sl_backlog_stats(const sl_backlog_t *bl, sl_backlog_stats_t *st) {
        sl_assert(bl && st);
        st->keys = sl_hmap_count(&bl->keys);
        st->keys_queued = bl->sched.n;
        st->parked = bl->parked;
        st->messages = bl->messages;
        st->bytes = bl->bytes;
        st->awaiting = bl->pn;
        st->index_bytes = sl_backlog_index_bytes(bl);
        st->key_bytes =
            sl_hmap_count(&bl->keys) * sizeof(sl_backlog_key_t) + bl->keybytes +
            sl_hmap_memory(&bl->keys) +
            (bl->sched.cap + bl->ckpt.cap) * sizeof(sl_backlog_key_t *);
}

#define BAD(...)                                                               \
        do {                                                                   \
                fprintf(stderr, "backlog verify: " __VA_ARGS__);               \
                fputc('\n', stderr);                                           \
                return -1;                                                     \
        } while (0)

static int verify_key(const sl_backlog_t *bl, const sl_backlog_key_t *k,
                      uint64_t *pinned, uint64_t *cached, uint64_t *entries) {
        uint32_t known = k->len - k->nunknown;
        uint64_t bytes = 0;
        int64_t prev = k->drained_to - 1;

        if (k->len > k->cap || k->nunknown > k->len || k->pre > known)
                BAD("key: len %u cap %u nunknown %u pre %u", k->len, k->cap,
                    k->nunknown, k->pre);
        if (!k->cap != !k->ring || (k->len == 0 && k->cap))
                BAD("key: ring %p cap %u len %u", (void *)k->ring, k->cap,
                    k->len);
        for (uint32_t i = 0; i < k->len; i++) {
                const sl_backlog_entry_t *e = entry_at(k, i);
                uint32_t size = sl_backlog_entry_size(e);
                int in_cache = ref_cached(e->ref);
                bytes += size;
                if (i < known) {
                        if (e->offset <= prev || e->offset >= bl->next_offset)
                                BAD("key: offset %lld after %lld at %u",
                                    (long long)e->offset, (long long)prev, i);
                        prev = e->offset;
                        if (in_cache != (i < k->pre))
                                BAD("key: entry %u cached %d, prefix %u", i,
                                    in_cache, k->pre);
                        if (in_cache && i == 0 && k->head_pinned)
                                *pinned += charge_of(size);
                } else {
                        if (e->offset != SL_BACKLOG_UNKNOWN || !in_cache)
                                BAD("key: unacked entry %u offset %lld "
                                    "cached %d",
                                    i, (long long)e->offset, in_cache);
                        *pinned += charge_of(size);
                }
                if (in_cache) {
                        *cached += charge_of(size);
                        (*entries)++;
                }
        }
        if (bytes != k->bytes)
                BAD("key: bytes %llu, entries sum to %llu",
                    (unsigned long long)k->bytes, (unsigned long long)bytes);
        if (k->head_pinned && (k->pre == 0 || k->parked))
                BAD("key: head pinned with prefix %u parked %d", k->pre,
                    k->parked);
        if (k->parked && (k->pre || !known))
                BAD("key: parked with prefix %u, %u known", k->pre, known);
        if (sl_heap_in(SCHED_POS(k)) != (k->len > 0) ||
            k->idle != (k->len == 0))
                BAD("key: len %u in sched %d idle %d", k->len,
                    sl_heap_in(SCHED_POS(k)), k->idle);
        if (k->parked && k->due_ms != SL_BACKLOG_NEVER)
                BAD("key: parked but due");
        if (sl_heap_in(CKPT_POS(k)) != (known > 0) ||
            (known && k->ckpt_off != entry_at(k, 0)->offset))
                BAD("key: ckpt heap membership");
        if ((sl_heap_in(SCHED_POS(k)) &&
             (SCHED_POS(k) >= bl->sched.n || bl->sched.a[SCHED_POS(k)] != k)) ||
            (sl_heap_in(CKPT_POS(k)) &&
             (CKPT_POS(k) >= bl->ckpt.n || bl->ckpt.a[CKPT_POS(k)] != k)) ||
            (sl_heap_in(EVICT_POS(k)) &&
             (EVICT_POS(k) >= bl->cache->evict.n ||
              bl->cache->evict.a[EVICT_POS(k)] != k)))
                BAD("key: a heap position points elsewhere");
        if (sl_heap_in(EVICT_POS(k)) != (evictable(k) > 0) ||
            (evictable(k) && k->evict_prio != need_in(k, k->pre - 1)))
                BAD("key: evict heap membership or priority");
        return 0;
}

int sl_backlog_verify(const sl_backlog_t *bl) {
        uint64_t pinned = 0, cached = 0, entries = 0, msgs = 0, bytes = 0;
        uint64_t slots = 0, parked = 0, idle = 0, keys = 0, keybytes = 0;
        uint64_t owed = 0;
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        if (kmap_verify(&bl->keys))
                BAD("key table: a key in the wrong chain, or a wrong count");
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&bl->keys, &it));) {
                const sl_backlog_key_t *k = kmap_entry(l);
                if (verify_key(bl, k, &pinned, &cached, &entries))
                        return -1;
                msgs += k->len;
                bytes += k->bytes;
                slots += k->cap;
                parked += k->parked;
                idle += k->idle;
                keys++;
                keybytes += k->keylen;
                owed += k->nunknown + k->popped_unacked;
        }
        if (keys != sl_hmap_count(&bl->keys) || keybytes != bl->keybytes ||
            msgs != bl->messages || bytes != bl->bytes ||
            slots != bl->ring_slots || parked != bl->parked ||
            idle != bl->nidle)
                BAD("totals differ from the keys");
        if (owed != bl->pn)
                BAD("%llu appends owed reports, %zu pending",
                    (unsigned long long)owed, bl->pn);
        for (size_t i = 0; i < bl->pn; i++) {
                const sl_backlog_key_t *k =
                    bl->pending[(bl->phead + i) & (bl->pcap - 1)];
                if (key_find(bl, k->key, k->keylen) != k)
                        BAD("pending key not in the table");
        }
        if (sched_heap_verify(&bl->sched))
                BAD("sched heap: a position or the order is broken");
        if (ckpt_heap_verify(&bl->ckpt))
                BAD("ckpt heap: a position or the order is broken");
        if (evict_heap_verify(&bl->cache->evict))
                BAD("evict heap: a position or the order is broken");
        /* With a single backlog on the cache the totals must match. */
        if (bl->cache->nbacklogs == 1 &&
            ((uint64_t)bl->cache->bytes != cached ||
             (uint64_t)bl->cache->pinned != pinned ||
             bl->cache->entries != entries))
                BAD("cache bytes %lld pinned %lld entries %llu, keys hold "
                    "%llu %llu %llu",
                    (long long)bl->cache->bytes, (long long)bl->cache->pinned,
                    (unsigned long long)bl->cache->entries,
                    (unsigned long long)cached, (unsigned long long)pinned,
                    (unsigned long long)entries);
        if (bl->cache->bytes - bl->cache->pinned > bl->cache->budget)
                BAD("cache over budget: %lld bytes, %lld pinned, budget %lld",
                    (long long)bl->cache->bytes, (long long)bl->cache->pinned,
                    (long long)bl->cache->budget);
        return 0;
}
