/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debounce.c — the pending windows of one debounce partition (see
 * debounce.h for the rules).
 *
 * DESIGN
 *
 * Two levels:
 *
 *   groups   one group_t per open group, holding its key, in a hash map by
 *            key (hmap.h: lookup O(1)) and in a heap (heap.h) by (hdue,
 *            gseq): hdue is the group's deadline or earlier, gseq the
 *            order in which groups opened (ties).  A deadline that moves
 *            later leaves hdue alone (every item of an open group does
 *            that to its idle deadline; re-sorting the heap each time was
 *            ~5% of the ingest's CPU); settle() moves such groups when
 *            they reach the top, which then is the next group to flush.
 *   items    one timer heap per group (timerheap.c: one allocation per
 *            item, a min-heap by (due_ms, seq) plus a hash index by id):
 *            key = item id, due = seq = the input offset of the item's
 *            first sighting, so the top is the oldest item and popping
 *            yields arrival order; data = first_seen (8 bytes),
 *            last_update (8 bytes), then the payload.
 *
 * The group's deadline is derived from its items only (earliest
 * first_seen, latest last_update, count, payload bytes); after a removal
 * or a batch the two times are recomputed over the remaining items (O(n)
 * in a group that holds fewer than max_items), so state rebuilt from the
 * changelog has the same deadlines as the state that wrote it.
 *
 * THE CHANGELOG
 *
 * Each item knows where its current version is (its source byte):
 * unsaved, in a chunk of its group, or in an item record of its own.  A
 * new item is unsaved; sl_debounce_seal() packs a group's unsaved items
 * into one chunk record (or a few, at chunk_max bytes each),
 * so a transaction writes one record per group it touched, not one per
 * item, and an item that leaves in the transaction that brought it is
 * never written at all.  The rules keep one invariant: a chunk holds only
 * current versions of pending items.  So,
 *
 *   - an item in a chunk that changes (upsert) or leaves (removal, or a
 *     batch that leaves other items behind) converts its group: every
 *     item still in a chunk is written as an item record, and every chunk
 *     of the group is tombstoned (an upsert then writes its own item
 *     record, a removal leaves its item to the tombstones);
 *   - a group that empties tombstones its chunks, and its items in item
 *     records are tombstoned one by one, as before chunks existed;
 *   - an item record is written at once for an item too large for a
 *     chunk, and for an upsert of an item already in one.
 *
 * Each item is written at most twice (in a chunk, then converted), and a
 * conversion happens only where a size limit cuts a batch out of a group
 * or an item changes after its transaction.  A rebuild applies records in
 * log order: an item record sets its item, its tombstone removes it (if
 * its version is still that record's); a chunk sets its items, and a
 * chunk tombstone removes every item of its group whose version is from a
 * chunk — all chunks of a group are tombstoned in one transaction, with
 * the item records of a conversion before them and any new chunk of the
 * group after them, so the log folds to the state that wrote it, before
 * and after compaction.  Chunk numbers count up from 1 in each group
 * while it has chunks; reusing one after its chunks were tombstoned is
 * safe, since the new value follows the tombstone of the old.
 *
 * MEMORY
 *
 * Per pending item, beyond its id and payload: the 36-byte entry header
 * plus the 17 bytes of times and source, malloc's chunk overhead (8
 * bytes, rounded to 16), one heap slot (8, up to 16 while the array has
 * grown but is not full), a hash bucket share (4 to 8) and its share of
 * its group's chunk numbers (4 bytes a chunk): about 95 bytes, 95
 * measured at 200k items in 1,000 groups sealed every 1,000 items
 * (tests/unit/test_debounce.c).  Until the seal, an item added in the
 * open transaction also holds its entry of the journal: 40 bytes and the
 * bytes of its chunk entry (its payload, id and times again), in one
 * buffer per partition that the next transaction reuses.
 * Per open group: group_t with its key (~210 bytes beyond the key, 64 of
 * them the filter of item ids, and malloc's overhead), its slot in the
 * groups heap and its share of the map's buckets (16 to 24 bytes), and an
 * item heap (~350 bytes: a struct, a 16-slot array and 16 buckets), so
 * ~590 bytes: 688 measured for a group of one item (its ~100 bytes
 * included) at 200k groups with 14-byte keys, by mallinfo2().
 */
#include "debounce.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "heap.h"
#include "hmap.h"
#include "jsontext.h"
#include "logpb.h"
#include "sluice.pb-c.h"
#include "timerheap.h"
#include "util.h"
#include "varint.h"

#define ITEM_HDR  17  /* first_seen_ms, last_update_ms, source */
#define ITEM_SRC  16  /* offset of the source byte */
#define MEMO_ID   64  /* longest item id the find memo keeps */
#define SEEN_BITS 512 /* bits of a group's filter of item ids */
#define MAX_FIELD ((size_t)UINT32_MAX - ITEM_HDR - 1)

typedef struct group_s {
        sl_hmap_link_t link; /* in d->groups */
        sl_timerheap_t *items;
        size_t bytes; /* payload bytes */
        int64_t opened_ms;
        int64_t last_update_ms;
        sl_debounce_reason_t reason;
        int64_t due_ms; /* the deadline */
        int64_t hdue;   /* its place in d->sched: due_ms or earlier */
        int64_t gseq;   /* opening order: ties between equal deadlines */
        /* Its position in d->sched; SL_HEAP_NONE until first scheduled,
         * when it also joins d->groups, and both until it closes. */
        uint32_t hidx;
        /* A Bloom filter (two bits per id) of the ids this group has held
         * since it opened: a new id, the common case, is known to be new
         * without walking a hash chain of items that left the cache long
         * ago (that walk was ~7% of the ingest's CPU).  Ids that leave
         * keep their bits, so it only ever answers "maybe" more often;
         * past a few hundred ids it says "maybe" to all and costs one
         * hash. */
        uint64_t seen[SEEN_BITS / 64];
        /* The numbers of the group's chunk records, ascending: every item
         * they hold is pending and unchanged since (THE CHANGELOG). */
        uint32_t *chunks;
        uint32_t nchunks, chunks_cap;
        /* Its items added since the last seal: the first and last of
         * its entries in the state's journal (jent_t), listed in
         * d->journal.  jstale: an item of the group left or changed since
         * the seal, so an entry's item pointer and packed bytes may be
         * out of date and the seal looks each id up instead. */
        size_t jhead, jtail;
        int jstale;
        struct group_s *jnext, **jprev; /* jprev NULL: not listed */
        uint32_t keylen;
        char key[]; /* the group key */
} group_t;

#define GROUP_HASH(g)          sl_hash((g)->key, (g)->keylen)
#define GROUP_EQ(g, h, k, len) sl_hmap_key_eq((g)->key, (g)->keylen, k, len)
SL_HMAP_DEFINE(gmap, group_t, link, GROUP_HASH, GROUP_EQ)

static inline int group_before(const group_t *a, const group_t *b) {
        return a->hdue < b->hdue || (a->hdue == b->hdue && a->gseq < b->gseq);
}

#define GROUP_POS(g) ((g)->hidx)
SL_HEAP_DEFINE(gheap, group_t, GROUP_POS, group_before)

/* One entry of the journal (d->jbuf), for a new item of the open
 * transaction: this header, then the item's DebounceChunk entry
 * (seal_pack()), packed when the item was added and its bytes were in the
 * cache, then padding to 8 bytes.  The seal copies a group's entries in
 * order, where it looked each id up again and read the item back from
 * memory long since evicted (~5% of the ingest's CPU).  The id is the
 * last idlen packed bytes. */
typedef struct jent_s {
        size_t next; /* offset of the group's next entry, JNONE: none */
        const sl_timer_t *t;
        int64_t seq;
        uint32_t len;   /* packed bytes */
        uint32_t need;  /* chunk_entry_max() of the item */
        uint32_t idlen; /* the id's bytes at the end of the packed ones */
} jent_t;

#define JNONE ((size_t)-1)
/* A journal buffer over JOURNAL_KEEP bytes is freed after JOURNAL_IDLE
 * seals in a row that used less than a quarter of it. */
#define JOURNAL_KEEP ((size_t)256 * 1024)
#define JOURNAL_IDLE 32

/* Where an item's current version is in the changelog. */
enum {
        SRC_UNSAVED = 0, /* nowhere yet: the next seal writes it */
        SRC_CHUNK = 1,   /* in one of its group's chunks */
        SRC_ITEM = 2,    /* in an item record of its own */
        SRC_PACKED = 3,  /* in the chunk a seal is writing */
};

struct sl_debounce_s {
        sl_debounce_params_t p;
        char *salt;
        sl_hmap_t groups; /* open groups by key */
        gheap_t sched;    /* open groups by (hdue, gseq) */
        /* No group in sched comes after (smax_due, smax_seq) (an upper
         * bound: removals leave it); a group scheduled at or after it goes
         * to the end without a comparison with a parent long out of the
         * cache. */
        int64_t smax_due, smax_seq;
        size_t items;
        size_t bytes;     /* payload bytes of the pending items */
        size_t key_bytes; /* and of the open groups' keys and items' ids */
        int64_t next_gseq;
        /* The group last looked up or scheduled, NULL when it closed: an
         * input record asks for its group five times (the flush check,
         * find, group, upsert, the flush check again), and comparing one
         * key costs less than hashing it. */
        group_t *hot;
        /* The answer of the last sl_debounce_find(), which the operator
         * asks just before it upserts the same item: valid while gen has
         * not moved (every change of the items moves it), so the upsert
         * does not walk the item's hash chain a second time. */
        uint64_t gen;
        struct {
                uint64_t gen;
                const group_t *g;
                const sl_timer_t *t; /* NULL: not pending */
                uint64_t hash;       /* sl_hash() of the id */
                size_t idlen;
                char id[MEMO_ID];
        } memo;
        /* The changelog (THE CHANGELOG above). */
        sl_debounce_writer_t w;
        int write_error;
        group_t *journal;  /* groups with items to seal */
        sl_scratch_t jbuf; /* their entries (jent_t) */
        size_t jused;
        unsigned jsmall; /* seals in a row that used little of jbuf */
        sl_scratch_t kbuf, vbuf;
        sl_scratch_t packed; /* the items of the chunk being sealed */
};

static const char *const reason_names[] = {
    [SL_DEBOUNCE_IDLE] = "idle",
    [SL_DEBOUNCE_MAX_AGE] = "max_age",
    [SL_DEBOUNCE_MAX_ITEMS] = "max_items",
    [SL_DEBOUNCE_MAX_BYTES] = "max_bytes",
    [SL_DEBOUNCE_REQUESTED] = "requested",
};

const char *sl_debounce_reason_str(sl_debounce_reason_t r) {
        if ((int)r < SL_DEBOUNCE_IDLE || (int)r > SL_DEBOUNCE_REQUESTED)
                return "?";
        return reason_names[r];
}

/* ------------------------------------------------------------------ */
/* Entries.                                                            */

static int64_t rd64(const void *p) {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        return v;
}

static int hot_is(const sl_debounce_t *d, const void *key, size_t keylen) {
        const group_t *g = d->hot;
        return g && sl_heap_in(g->hidx) &&
               sl_hmap_key_eq(g->key, g->keylen, key, keylen);
}

/* The open group with this key, or NULL. */
static group_t *group_find(const sl_debounce_t *d, const void *key,
                           size_t keylen) {
        if (hot_is(d, key, keylen))
                return d->hot;
        return gmap_find(&d->groups, sl_hash(key, keylen), key, keylen);
}

static void item_view(const sl_timer_t *t, sl_debounce_item_t *v) {
        const char *data = sl_timer_data(t);
        v->id = sl_timer_key(t);
        v->idlen = t->keylen;
        v->payload = data + ITEM_HDR;
        v->payload_len = t->datalen - ITEM_HDR;
        v->first_seen_ms = rd64(data);
        v->last_update_ms = rd64(data + 8);
        v->seq = t->seq;
}

/* Earliest first_seen and latest last_update over the group's items. */
typedef struct span_s {
        int64_t opened, last;
} span_t;

static void span_cb(const sl_timer_t *t, void *opaque) {
        span_t *s = opaque;
        const char *data = sl_timer_data(t);
        int64_t first = rd64(data), last = rd64(data + 8);
        if (first < s->opened)
                s->opened = first;
        if (last > s->last)
                s->last = last;
}

static void group_recompute(group_t *g) {
        span_t s = {INT64_MAX, INT64_MIN};
        sl_timerheap_foreach(g->items, span_cb, &s);
        g->opened_ms = s.opened;
        g->last_update_ms = s.last;
}

static int64_t sat_add(int64_t a, int64_t b) {
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Raises (smax_due, smax_seq) to g's place when it comes later. */
static void sched_note_max(sl_debounce_t *d, const group_t *g) {
        if (g->hdue > d->smax_due ||
            (g->hdue == d->smax_due && g->gseq > d->smax_seq)) {
                d->smax_due = g->hdue;
                d->smax_seq = g->gseq;
        }
}

/* Puts the group (back) in the groups heap at its current deadline (and,
 * the first time, in the map by key). */
static void group_schedule(sl_debounce_t *d, group_t *g) {
        int64_t due;
        size_t n = sl_timerheap_count(g->items);

        if ((int64_t)n >= d->p.max_items) {
                due = g->last_update_ms;
                g->reason = SL_DEBOUNCE_MAX_ITEMS;
        } else if ((int64_t)g->bytes >= d->p.max_bytes) {
                due = g->last_update_ms;
                g->reason = SL_DEBOUNCE_MAX_BYTES;
        } else {
                int64_t idle = sat_add(g->last_update_ms, d->p.idle_ms);
                int64_t age = sat_add(g->opened_ms, d->p.max_age_ms);
                due = age < idle ? age : idle;
                g->reason = age < idle ? SL_DEBOUNCE_MAX_AGE : SL_DEBOUNCE_IDLE;
        }
        g->due_ms = due;
        if (sl_heap_in(g->hidx)) {
                /* Lazy: a deadline that moves later (each new item of a
                 * group pushes its idle deadline) leaves the group where
                 * it is, earlier than the truth, until it reaches the top
                 * (settle()).  Only an earlier one moves it now. */
                if (due < g->hdue) {
                        g->hdue = due;
                        gheap_update(&d->sched, g);
                }
        } else {
                g->hdue = due;
                if (!gheap_count(&d->sched)) {
                        d->smax_due = due;
                        d->smax_seq = g->gseq;
                        gheap_push_last(&d->sched, g);
                } else if (due > d->smax_due ||
                           (due == d->smax_due && g->gseq >= d->smax_seq)) {
                        sched_note_max(d, g); /* stays last */
                        gheap_push_last(&d->sched, g);
                } else {
                        gheap_push(&d->sched, g);
                }
                gmap_insert(&d->groups, GROUP_HASH(g), g);
        }
        d->hot = g;
}

static void journal_unlink(group_t *g) {
        if (!g->jprev)
                return;
        *g->jprev = g->jnext;
        if (g->jnext)
                g->jnext->jprev = g->jprev;
        g->jnext = NULL;
        g->jprev = NULL;
}

static void group_free(group_t *g) {
        journal_unlink(g);
        sl_timerheap_destroy(g->items);
        free(g->chunks);
        free(g);
}

static void group_drop(sl_debounce_t *d, group_t *g) {
        if (d->hot == g)
                d->hot = NULL;
        d->gen++;
        if (sl_heap_in(g->hidx)) {
                d->key_bytes -= g->keylen;
                gheap_remove(&d->sched, g);
                gmap_remove(&d->groups, g);
        }
        group_free(g);
}

/* ------------------------------------------------------------------ */
/* State.                                                              */

sl_debounce_t *sl_debounce_new(const sl_debounce_params_t *p) {
        sl_debounce_t *d = sl_calloc(1, sizeof(*d));
        sl_assert(p && p->idle_ms > 0 && p->max_age_ms > 0 &&
                  p->max_items >= 1 && p->max_bytes >= 1);
        d->p = *p;
        if (!d->p.chunk_max || d->p.chunk_max > SL_DEBOUNCE_CHUNK_MAX)
                d->p.chunk_max = SL_DEBOUNCE_CHUNK_MAX;
        d->salt = sl_strdup(p->salt ? p->salt : "");
        d->p.salt = d->salt;
        sl_hmap_init(&d->groups, 16, 1, 0);
        gheap_init(&d->sched);
        return d;
}

void sl_debounce_destroy(sl_debounce_t *d) {
        sl_hmap_iter_t it = SL_HMAP_ITER_INIT;

        if (!d)
                return;
        for (sl_hmap_link_t *l; (l = sl_hmap_iter_next(&d->groups, &it));)
                group_free(gmap_entry(l));
        sl_hmap_fini(&d->groups);
        gheap_fini(&d->sched);
        sl_scratch_free(&d->kbuf);
        sl_scratch_free(&d->vbuf);
        sl_scratch_free(&d->packed);
        sl_scratch_free(&d->jbuf);
        free(d->salt);
        free(d);
}

/* The two bits of an id in a group's filter, from its sl_hash() (the
 * bucket of its item heap takes the low bits; the filter takes its own). */
static void seen_bits(uint64_t h, unsigned bit[2]) {
        bit[0] = (unsigned)((h >> 20) % SEEN_BITS);
        bit[1] = (unsigned)((h >> 40) % SEEN_BITS);
}

static int seen_bit(const group_t *g, unsigned bit) {
        return (g->seen[bit / 64] >> (bit % 64)) & 1;
}

static void seen_mark(group_t *g, uint64_t hash) {
        unsigned bit[2];
        seen_bits(hash, bit);
        for (int i = 0; i < 2; i++)
                g->seen[bit[i] / 64] |= UINT64_C(1) << (bit[i] % 64);
}

/* The pending item id of group g, or NULL; hash is sl_hash(id, idlen). */
static const sl_timer_t *group_item_hashed(const group_t *g, uint64_t hash,
                                           const void *id, size_t idlen) {
        unsigned bit[2];
        seen_bits(hash, bit);
        if (!seen_bit(g, bit[0]) || !seen_bit(g, bit[1]))
                return NULL; /* never held here: no chain to walk */
        return sl_timerheap_find_hashed(g->items, hash, id, idlen);
}

static const sl_timer_t *group_item(const group_t *g, const void *id,
                                    size_t idlen) {
        return group_item_hashed(g, sl_hash(id, idlen), id, idlen);
}

int sl_debounce_find(sl_debounce_t *d, const void *key, size_t keylen,
                     const void *id, size_t idlen, sl_debounce_item_t *out) {
        group_t *g = group_find(d, key, keylen);
        const sl_timer_t *t;
        uint64_t hash;
        if (!g)
                return 0;
        d->hot = g;
        hash = sl_hash(id, idlen);
        t = group_item_hashed(g, hash, id, idlen);
        if (!t) /* the upsert that follows adds it */
                sl_timerheap_prefetch(g->items, hash);
        if (idlen <= MEMO_ID) {
                d->memo.gen = d->gen;
                d->memo.g = g;
                d->memo.t = t;
                d->memo.hash = hash;
                d->memo.idlen = idlen;
                if (idlen)
                        memcpy(d->memo.id, id, idlen);
        }
        if (!t)
                return 0;
        if (out)
                item_view(t, out);
        return 1;
}

/* Item id of group g as sl_timerheap_find() sees it, and the id's
 * sl_hash() in *hash: from the memo when the last find asked for it and
 * nothing changed since. */
static const sl_timer_t *item_find(const sl_debounce_t *d, const group_t *g,
                                   const void *id, size_t idlen,
                                   uint64_t *hash) {
        if (d->memo.gen == d->gen && d->memo.g == g && d->memo.idlen == idlen &&
            (!idlen || !memcmp(d->memo.id, id, idlen))) {
                *hash = d->memo.hash;
                return d->memo.t;
        }
        *hash = sl_hash(id, idlen);
        return group_item_hashed(g, *hash, id, idlen);
}

/* ------------------------------------------------------------------ */
/* The changelog (THE CHANGELOG above).                                */

static int item_src(const sl_timer_t *t) {
        return ((const unsigned char *)sl_timer_data(t))[ITEM_SRC];
}

/* The source byte is the state's own: the heap never reads data bytes. */
static void item_src_set(const sl_timer_t *t, int src) {
        ((unsigned char *)sl_timer_data(t))[ITEM_SRC] = (unsigned char)src;
}

void sl_debounce_set_writer(sl_debounce_t *d, const sl_debounce_writer_t *w) {
        sl_assert(d);
        memset(&d->w, 0, sizeof(d->w));
        if (w)
                d->w = *w;
}

int sl_debounce_write_error(const sl_debounce_t *d) {
        return d->write_error;
}

static int log_write(sl_debounce_t *d, const void *key, size_t keylen,
                     const void *value, size_t len, int64_t seq, int must) {
        return d->w.write
                   ? d->w.write(d->w.opaque, key, keylen, value, len, seq, must)
                   : 0;
}

/* Group, 0x00, then n more bytes (filled by the caller): in d->kbuf. */
static char *log_key(sl_debounce_t *d, const void *gkey, size_t gl, size_t n) {
        char *k = sl_scratch_get(&d->kbuf, gl + 1 + n);
        if (gl)
                memcpy(k, gkey, gl);
        k[gl] = '\0';
        return k;
}

/* The item record of t in group key (value NULL: its tombstone). */
static int log_item(sl_debounce_t *d, const void *gkey, size_t gl,
                    const group_t *g, const sl_timer_t *t, int tomb, int must) {
        char *k = log_key(d, gkey, gl, t->keylen);
        const char *data = sl_timer_data(t);
        size_t plen = t->datalen - ITEM_HDR, n = 0;
        uint8_t *v = NULL;
        int r;
        memcpy(k + gl + 1, sl_timer_key(t), t->keylen);
        if (!tomb) {
                int64_t first = rd64(data);
                v = sl_scratch_get(&d->vbuf,
                                   plen + SL_DEBOUNCE_ITEM_PACK_EXTRA);
                n = sl_debounce_item_pack(data + ITEM_HDR, plen, first,
                                          rd64(data + 8), t->seq,
                                          SL_MIN(g->opened_ms, first), v);
        }
        r = log_write(d, k, gl + 1 + t->keylen, v, n, t->seq, must);
        sl_scratch_done(&d->vbuf);
        return r;
}

static void log_chunk_key(char *k, size_t gl, uint32_t no) {
        k[gl + 1] = '\0';
        k[gl + 2] = (char)(no >> 24);
        k[gl + 3] = (char)(no >> 16);
        k[gl + 4] = (char)(no >> 8);
        k[gl + 5] = (char)no;
}

#define CHUNK_KEY_EXTRA 5 /* 0x00 and the number, after group 0x00 */

/* Bytes an item takes in a chunk at most: its entry's tag and length, the
 * fields of sl_debounce_item_pack(), the id's tag, length and bytes. */
static size_t chunk_entry_max(size_t idlen, size_t plen) {
        return 11 + plen + SL_DEBOUNCE_ITEM_PACK_EXTRA + 11 + idlen;
}

/* Room for entries in a chunk of group key (keylen). */
static size_t chunk_room(const sl_debounce_t *d, size_t keylen) {
        size_t key = keylen + 1 + CHUNK_KEY_EXTRA;
        return d->p.chunk_max > key ? d->p.chunk_max - key : 0;
}

typedef struct convert_s {
        sl_debounce_t *d;
        const void *key;
        size_t keylen;
        const group_t *g;
} convert_t;

static void convert_cb(const sl_timer_t *t, void *opaque) {
        convert_t *c = opaque;
        if (item_src(t) != SRC_CHUNK)
                return;
        log_item(c->d, c->key, c->keylen, c->g, t, 0, 1);
        item_src_set(t, SRC_ITEM);
}

/* Tombstones every chunk of group key. */
static void drop_chunks(sl_debounce_t *d, const void *key, size_t keylen,
                        group_t *g) {
        for (uint32_t i = 0; i < g->nchunks; i++) {
                char *k = log_key(d, key, keylen, CHUNK_KEY_EXTRA);
                log_chunk_key(k, keylen, g->chunks[i]);
                log_write(d, k, keylen + 1 + CHUNK_KEY_EXTRA, NULL, 0, -1, 1);
        }
        g->nchunks = 0;
}

/* Converts group key: its items in chunks become item records, then its
 * chunks are tombstoned (in that order: see THE CHANGELOG). */
static void group_convert(sl_debounce_t *d, const void *key, size_t keylen,
                          group_t *g) {
        convert_t c = {d, key, keylen, g};
        if (!g->nchunks)
                return;
        sl_timerheap_foreach(g->items, convert_cb, &c);
        drop_chunks(d, key, keylen, g);
}

static size_t seal_pack(const group_t *g, const sl_timer_t *t, uint8_t *out);

static jent_t *jent_at(const sl_debounce_t *d, size_t off) {
        return (jent_t *)((char *)d->jbuf.buf + off);
}

/* New item t of group g joins the journal (the next seal writes it). */
static void journal_add(sl_debounce_t *d, group_t *g, const sl_timer_t *t) {
        size_t need = chunk_entry_max(t->keylen, t->datalen - ITEM_HDR);
        size_t at = d->jused;
        jent_t *e;

        sl_scratch_grow(&d->jbuf, at + sizeof(*e) + need + 8);
        e = jent_at(d, at);
        e->next = JNONE;
        e->t = t;
        e->seq = t->seq;
        e->len = (uint32_t)seal_pack(g, t, (uint8_t *)(e + 1));
        e->need = (uint32_t)need;
        e->idlen = t->keylen;
        d->jused = at + ((sizeof(*e) + e->len + 7) & ~(size_t)7);
        if (g->jprev) {
                jent_at(d, g->jtail)->next = at;
                g->jtail = at;
                return;
        }
        g->jhead = g->jtail = at;
        g->jstale = 0; /* what left before is in no entry */
        g->jnext = d->journal;
        if (d->journal)
                d->journal->jprev = &g->jnext;
        d->journal = g;
        g->jprev = &d->journal;
}

/* Upsert and restore.  keep: an existing item keeps first_seen and seq;
 * src: the item's source byte. */
static int item_set(sl_debounce_t *d, const void *key, size_t keylen,
                    const void *id, size_t idlen, const void *payload,
                    size_t plen, int64_t first_seen, int64_t last_update,
                    int64_t seq, int keep, int src) {
        group_t *g;
        const sl_timer_t *old;
        size_t old_plen = 0;
        char stackbuf[512], *buf = stackbuf;
        int created = 0, r, old_src = -1;
        uint64_t hash;
        const sl_timer_t *nt = NULL;

        sl_assert(d && (key || !keylen) && (id || !idlen) &&
                  (payload || !plen));
        if (keylen > MAX_FIELD || idlen > MAX_FIELD || plen > MAX_FIELD)
                return -1;
        if (!(g = group_find(d, key, keylen))) {
                g = sl_calloc(1, sizeof(*g) + keylen);
                g->hidx = SL_HEAP_NONE;
                g->keylen = (uint32_t)keylen;
                if (keylen)
                        memcpy(g->key, key, keylen);
                g->items = sl_timerheap_new();
                g->gseq = d->next_gseq++;
                created = 1;
        }
        if (created) {
                old = NULL;
                hash = sl_hash(id, idlen);
        } else {
                old = item_find(d, g, id, idlen, &hash);
        }
        d->gen++;
        if (old) {
                old_plen = old->datalen - ITEM_HDR;
                old_src = item_src(old); /* old may move in the upsert */
                if (keep) {
                        first_seen = rd64(sl_timer_data(old));
                        seq = old->seq;
                }
        }
        if (plen + ITEM_HDR > sizeof(stackbuf))
                buf = sl_malloc(plen + ITEM_HDR);
        memcpy(buf, &first_seen, 8);
        memcpy(buf + 8, &last_update, 8);
        buf[ITEM_SRC] = (char)src;
        if (plen)
                memcpy(buf + ITEM_HDR, payload, plen);
        if (old) {
                g->jstale = 1; /* old's block may move */
                r = sl_timerheap_upsert(g->items, id, idlen, seq, seq, buf,
                                        plen + ITEM_HDR);
        } else {
                r = sl_timerheap_add_hashed(g->items, hash, id, idlen, seq, seq,
                                            buf, plen + ITEM_HDR, &nt);
        }
        if (buf != stackbuf)
                free(buf);
        if (r < 0) {
                if (created)
                        group_free(g);
                return -1;
        }
        if (!old)
                seen_mark(g, hash);
        g->bytes = g->bytes - old_plen + plen;
        d->bytes = d->bytes - old_plen + plen;
        if (!old) {
                d->items++;
                d->key_bytes += idlen;
        }
        if (created)
                d->key_bytes += keylen; /* in d->groups from here on */
        if (created) {
                g->opened_ms = first_seen;
                g->last_update_ms = last_update;
        } else if (old && !keep) {
                group_recompute(g); /* a restored item may move back */
        } else {
                if (first_seen < g->opened_ms)
                        g->opened_ms = first_seen;
                if (last_update > g->last_update_ms)
                        g->last_update_ms = last_update;
        }
        /* The pack of the journal entry reads the group's opened_ms. */
        group_schedule(d, g);
        if (src == SRC_UNSAVED && old_src != SRC_UNSAVED)
                journal_add(
                    d, g,
                    nt ? nt
                       : sl_timerheap_find_hashed(g->items, hash, id, idlen));
        return old ? 1 : 0;
}

int sl_debounce_upsert(sl_debounce_t *d, const void *key, size_t keylen,
                       const void *id, size_t idlen, const void *payload,
                       size_t payload_len, int64_t now_ms, int64_t seq) {
        group_t *g = group_find(d, key, keylen);
        uint64_t hash;
        const sl_timer_t *old = g ? item_find(d, g, id, idlen, &hash) : NULL;
        int src = old ? item_src(old) : SRC_UNSAVED;

        d->write_error = 0;
        if (keylen > MAX_FIELD || idlen > MAX_FIELD || payload_len > MAX_FIELD)
                return -1;
        if (src == SRC_CHUNK) {
                /* Its chunk would hold a version that is no longer
                 * current: the group's chunks go (old, written as an item
                 * record first, stays valid: the source byte is all that
                 * changes). */
                group_convert(d, key, keylen, g);
                src = SRC_ITEM;
        }
        if (src == SRC_ITEM ||
            chunk_entry_max(idlen, payload_len) > chunk_room(d, keylen)) {
                /* An item record now, before the state changes: if Kafka
                 * refuses it, nothing changed. */
                int64_t first = old ? rd64(sl_timer_data(old)) : now_ms;
                int64_t oseq = old ? old->seq : seq;
                int64_t opened = g ? SL_MIN(g->opened_ms, first) : first;
                char *k = log_key(d, key, keylen, idlen);
                uint8_t *v = sl_scratch_get(
                    &d->vbuf, payload_len + SL_DEBOUNCE_ITEM_PACK_EXTRA);
                size_t n = sl_debounce_item_pack(payload, payload_len, first,
                                                 now_ms, oseq, opened, v);
                int r;
                if (idlen)
                        memcpy(k + keylen + 1, id, idlen);
                r = log_write(d, k, keylen + 1 + idlen, v, n, -1, 0);
                sl_scratch_done(&d->vbuf);
                if (r < 0) {
                        d->write_error = r;
                        return -1;
                }
                src = SRC_ITEM;
        }
        return item_set(d, key, keylen, id, idlen, payload, payload_len, now_ms,
                        now_ms, seq, 1, src);
}

int sl_debounce_restore(sl_debounce_t *d, const void *key, size_t keylen,
                        const void *id, size_t idlen, const void *payload,
                        size_t payload_len, int64_t first_seen_ms,
                        int64_t last_update_ms, int64_t seq) {
        return item_set(d, key, keylen, id, idlen, payload, payload_len,
                        first_seen_ms, last_update_ms, seq, 0, SRC_ITEM);
}

/* Item t of group key (g) leaves: the record that says so, if it needs
 * one of its own; 1 when it was in a chunk (see group_after_leave()). */
static int log_left(sl_debounce_t *d, const void *key, size_t keylen,
                    group_t *g, const sl_timer_t *t) {
        switch (item_src(t)) {
        case SRC_ITEM:
                log_item(d, key, keylen, g, t, 1, 1);
                return 0;
        case SRC_CHUNK:
                return 1;
        default: /* unsaved: never written */
                return 0;
        }
}

/* After items left group key: its chunks go with its last item, or the
 * group converts when an item in a chunk left and others stay. */
static void group_after_leave(sl_debounce_t *d, const void *key, size_t keylen,
                              group_t *g, int chunk_left) {
        if (!sl_timerheap_count(g->items)) {
                drop_chunks(d, key, keylen, g);
                group_drop(d, g);
                return;
        }
        if (chunk_left)
                group_convert(d, key, keylen, g);
        group_recompute(g);
        group_schedule(d, g);
}

/* Removes item t of group key (g); log: write what that needs (not in a
 * rebuild, which only reads). */
static void item_remove(sl_debounce_t *d, const void *key, size_t keylen,
                        group_t *g, const sl_timer_t *t, int log) {
        size_t plen = t->datalen - ITEM_HDR, idlen = t->keylen;
        int chunk_left = log ? log_left(d, key, keylen, g, t) : 0;
        g->jstale = 1;
        sl_timerheap_remove(g->items, sl_timer_key(t), t->keylen);
        d->gen++;
        g->bytes -= plen;
        d->bytes -= plen;
        d->key_bytes -= idlen;
        d->items--;
        if (!log && !sl_timerheap_count(g->items)) {
                group_drop(d, g);
                return;
        }
        if (!log) {
                group_recompute(g);
                group_schedule(d, g);
                return;
        }
        group_after_leave(d, key, keylen, g, chunk_left);
}

int sl_debounce_remove(sl_debounce_t *d, const void *key, size_t keylen,
                       const void *id, size_t idlen) {
        group_t *g = group_find(d, key, keylen);
        const sl_timer_t *t;

        if (!g || !(t = group_item(g, id, idlen)))
                return 0;
        item_remove(d, key, keylen, g, t, 1);
        return 1;
}

/* Rebuild: a chunk tombstone removes the group's items whose version is
 * from a chunk (their ids gathered first: the heap may not change under
 * foreach). */
typedef struct chunked_s {
        sl_scratch_t *ids; /* 4-byte length, bytes; ... */
        size_t used, n;
} chunked_t;

static void chunked_cb(const sl_timer_t *t, void *opaque) {
        chunked_t *c = opaque;
        uint32_t l = t->keylen;
        char *p;
        if (item_src(t) != SRC_CHUNK)
                return;
        p = sl_scratch_grow(c->ids, c->used + 4 + l);
        memcpy(p + c->used, &l, 4);
        memcpy(p + c->used + 4, sl_timer_key(t), l);
        c->used += 4 + l;
        c->n++;
}

static void restore_drop_chunks(sl_debounce_t *d, const void *key,
                                size_t keylen, uint32_t no) {
        group_t *g = group_find(d, key, keylen);
        chunked_t c = {&d->kbuf, 0, 0};
        uint32_t i, j;
        size_t off = 0;
        if (!g)
                return;
        for (i = j = 0; i < g->nchunks; i++)
                if (g->chunks[i] != no)
                        g->chunks[j++] = g->chunks[i];
        g->nchunks = j;
        sl_timerheap_foreach(g->items, chunked_cb, &c);
        for (size_t k = 0; k < c.n; k++) {
                const char *p = (const char *)d->kbuf.buf + off;
                const sl_timer_t *t;
                uint32_t l;
                memcpy(&l, p, 4);
                off += 4 + l;
                if (!(t = sl_timerheap_find(g->items, p + 4, l)))
                        continue;
                d->bytes -= t->datalen - ITEM_HDR;
                g->bytes -= t->datalen - ITEM_HDR;
                d->key_bytes -= l;
                d->items--;
                g->jstale = 1;
                sl_timerheap_remove(g->items, p + 4, l);
        }
        sl_scratch_done(&d->kbuf);
        d->gen++;
        if (!sl_timerheap_count(g->items)) {
                group_drop(d, g);
        } else if (c.n) {
                group_recompute(g);
                group_schedule(d, g);
        }
}

static void chunk_note(group_t *g, uint32_t no) {
        uint32_t i;
        for (i = 0; i < g->nchunks; i++)
                if (g->chunks[i] == no)
                        return;
        if (g->nchunks == g->chunks_cap) {
                g->chunks_cap = g->chunks_cap ? g->chunks_cap * 2 : 4;
                g->chunks =
                    sl_realloc(g->chunks, g->chunks_cap * sizeof(*g->chunks));
        }
        /* Ascending: the next number is the last one plus one. */
        for (i = g->nchunks; i > 0 && g->chunks[i - 1] > no; i--)
                g->chunks[i] = g->chunks[i - 1];
        g->chunks[i] = no;
        g->nchunks++;
}

static int64_t clamp_time(int64_t v, int64_t now) {
        return SL_MAX(0, SL_MIN(v, now));
}

/* Items of a chunk kept from the pass that checks it; the rest of a larger
 * chunk are read again after the check. */
#define RESTORE_CHUNK_ITEMS 32

static int restore_chunk_item(sl_debounce_t *d, const char *key, size_t gl,
                              const sl_logpb_dbitem_t *it, int64_t now) {
        if (!it->id_len)
                return 0; /* never written: item ids are not empty */
        /* The item's times were now when it was written: one outside
         * [epoch, now] (a corrupt record, or another instance's clock)
         * would overflow the deadline and age arithmetic. */
        return item_set(d, key, gl, it->id, it->id_len, it->payload,
                        it->payload_len, clamp_time(it->first_seen_ms, now),
                        clamp_time(it->last_update_ms, now), it->seq, 0,
                        SRC_CHUNK) >= 0;
}

static int restore_chunk(sl_debounce_t *d, const char *key, size_t gl,
                         uint32_t no, const void *value, size_t len,
                         int64_t now, const char **why) {
        sl_logpb_dbitem_t items[RESTORE_CHUNK_ITEMS], it;
        size_t set = 0, pos = 0;
        group_t *g;
        long n;

        n = sl_logpb_dbchunk_read(value, len, items, RESTORE_CHUNK_ITEMS, &pos);
        if (n < 0) {
                *why = "undecodable DebounceChunk";
                return -1;
        }
        for (long i = 0; i < n && i < RESTORE_CHUNK_ITEMS; i++)
                set += restore_chunk_item(d, key, gl, &items[i], now);
        while (sl_logpb_dbchunk_next(value, len, &pos, &it))
                set += restore_chunk_item(d, key, gl, &it, now);
        if (set && (g = group_find(d, key, gl)))
                chunk_note(g, no);
        return 0;
}

int sl_debounce_restore_record(sl_debounce_t *d, const void *key, size_t keylen,
                               const void *value, size_t len, int64_t now_ms,
                               const char **why) {
        const char *k = key, *sep;
        size_t gl, rest;
        sl_logpb_dbitem_t it;
        const sl_timer_t *t;
        group_t *g;
        int r;

        sl_assert(d && why);
        sep = k ? memchr(k, '\0', keylen) : NULL;
        if (!sep || sep == k) {
                *why = "key is not group 0x00 item";
                return -1;
        }
        gl = (size_t)(sep - k);
        rest = keylen - gl - 1;
        if (rest && sep[1] == '\0') {
                const unsigned char *n = (const unsigned char *)sep + 2;
                uint32_t no;
                if (rest != CHUNK_KEY_EXTRA) {
                        *why = "chunk key is not group 0x00 0x00 number";
                        return -1;
                }
                no = (uint32_t)n[0] << 24 | (uint32_t)n[1] << 16 |
                     (uint32_t)n[2] << 8 | n[3];
                if (!value) {
                        restore_drop_chunks(d, k, gl, no);
                        return 0;
                }
                return restore_chunk(d, k, gl, no, value, len, now_ms, why);
        }
        if (!value) {
                /* Only the version this record held: a newer one from a
                 * chunk (the item left and came back) stays. */
                if ((g = group_find(d, k, gl)) &&
                    (t = group_item(g, sep + 1, rest)) &&
                    item_src(t) == SRC_ITEM)
                        item_remove(d, k, gl, g, t, 0);
                return 0;
        }
        if (sl_logpb_dbitem_read(&it, value, len) < 0) {
                *why = "undecodable DebounceItem";
                return -1;
        }
        r = sl_debounce_restore(d, k, gl, sep + 1, rest, it.payload,
                                it.payload_len,
                                clamp_time(it.first_seen_ms, now_ms),
                                clamp_time(it.last_update_ms, now_ms), it.seq);
        if (r < 0) {
                *why = "item too large";
                return -1;
        }
        return 0;
}

/* One group's chunk record from the packed items in buf (seq: its first
 * item's); the number is the group's only once it is written. */
static int seal_emit(sl_debounce_t *d, const char *key, size_t keylen,
                     group_t *g, const uint8_t *buf, size_t len, int64_t seq) {
        uint32_t no = g->nchunks ? g->chunks[g->nchunks - 1] + 1 : 1;
        char *k = log_key(d, key, keylen, CHUNK_KEY_EXTRA);
        int r;
        log_chunk_key(k, keylen, no);
        r = log_write(d, k, keylen + 1 + CHUNK_KEY_EXTRA, buf, len, seq, 0);
        if (r >= 0)
                chunk_note(g, no);
        return r;
}

/* Bytes pb_int64() writes. */
static size_t pb_int64_len(int64_t v) {
        return v ? 1 + sl_varint_len((uint64_t)v) : 0;
}

/* Packs item t as a DebounceChunk entry (field 1) at out. */
static size_t seal_pack(const group_t *g, const sl_timer_t *t, uint8_t *out) {
        const char *data = sl_timer_data(t);
        size_t plen = t->datalen - ITEM_HDR, n, body;
        int64_t first = rd64(data), last = rd64(data + 8);
        int64_t opened = SL_MIN(g->opened_ms, first);
        /* Its length first, so that the bytes are written once, in place
         * (the journal's entries are written into memory not in cache). */
        body = (plen ? 1 + sl_varint_len(plen) + plen : 0) +
               pb_int64_len(first) + pb_int64_len(last) + pb_int64_len(t->seq) +
               pb_int64_len(opened) + 1 + sl_varint_len(t->keylen) + t->keylen;
        out[0] = (1 << 3) | 2;
        n = 1 + sl_varint_put(out + 1, body);
        n += sl_debounce_item_pack(data + ITEM_HDR, plen, first, last, t->seq,
                                   opened, out + n);
        out[n++] = (7 << 3) | 2; /* id */
        n += sl_varint_put(out + n, t->keylen);
        memcpy(out + n, sl_timer_key(t), t->keylen);
        return n + t->keylen;
}

/* The chunk of the n items in d->packed went out (or was refused, and
 * they go as item records; an item refused that way too leaves the state
 * through dropped(), without a record).  Returns the records written. */
static int seal_settle(sl_debounce_t *d, const char *key, size_t keylen,
                       group_t *g, size_t n, int refused) {
        const sl_timer_t **v = d->packed.buf;
        int written = refused ? 0 : 1;
        for (size_t i = 0; i < n; i++) {
                int r;
                if (!refused) {
                        item_src_set(v[i], SRC_CHUNK);
                        continue;
                }
                r = log_item(d, key, keylen, g, v[i], 0, 0);
                if (r >= 0) {
                        item_src_set(v[i], SRC_ITEM);
                        written++;
                        continue;
                }
                if (d->w.dropped) {
                        sl_debounce_item_t it;
                        item_view(v[i], &it);
                        d->w.dropped(d->w.opaque, key, keylen, &it, r);
                }
                /* Others of the group stay where they are: the group is
                 * dropped, if it empties, once its seal is over. */
                d->bytes -= v[i]->datalen - ITEM_HDR;
                g->bytes -= v[i]->datalen - ITEM_HDR;
                d->key_bytes -= v[i]->keylen;
                d->items--;
                d->gen++;
                g->jstale = 1;
                sl_timerheap_remove(g->items, sl_timer_key(v[i]), v[i]->keylen);
        }
        return written;
}

int sl_debounce_seal(sl_debounce_t *d) {
        int written = 0;
        group_t *g;

        sl_assert(d);
        while ((g = d->journal)) {
                const char *key = g->key;
                size_t keylen = g->keylen, used = 0, n = 0;
                size_t room = chunk_room(d, keylen), items0 = d->items;
                int64_t seq = -1;
                uint8_t *buf = NULL;

                journal_unlink(g);
                for (size_t at = g->jhead; at != JNONE;) {
                        const jent_t *e = jent_at(d, at);
                        const sl_timer_t *t, **v;
                        int stale = g->jstale;
                        size_t need = e->need;
                        at = e->next;
                        if (stale) {
                                const char *id =
                                    (const char *)(e + 1) + e->len - e->idlen;
                                t = group_item(g, id, e->idlen);
                                if (!t || item_src(t) != SRC_UNSAVED)
                                        continue;
                                /* An upsert since may have made it larger
                                 * than when its entry was written. */
                                need = chunk_entry_max(t->keylen,
                                                       t->datalen - ITEM_HDR);
                        } else {
                                t = e->t;
                        }
                        if (used && used + need > room) {
                                int r = seal_emit(d, key, keylen, g, buf, used,
                                                  seq);
                                written +=
                                    seal_settle(d, key, keylen, g, n, r < 0);
                                used = n = 0;
                        }
                        if (!n)
                                seq = stale ? t->seq : e->seq;
                        buf = sl_scratch_grow(&d->vbuf, used + need);
                        if (stale) {
                                used += seal_pack(g, t, buf + used);
                                /* Packed, not yet saved: the journal may
                                 * name it again, and must then skip it. */
                                item_src_set(t, SRC_PACKED);
                        } else {
                                memcpy(buf + used, e + 1, e->len);
                                used += e->len;
                        }
                        v = sl_scratch_grow(&d->packed, (n + 1) * sizeof(*v));
                        v[n++] = t;
                }
                if (used) {
                        int r = seal_emit(d, key, keylen, g, buf, used, seq);
                        written += seal_settle(d, key, keylen, g, n, r < 0);
                }
                sl_scratch_done(&d->vbuf);
                g->jstale = 0;
                if (d->items != items0) {
                        /* Items were dropped: the group's deadline moves,
                         * or it closes. */
                        if (!sl_timerheap_count(g->items)) {
                                drop_chunks(d, key, keylen, g);
                                group_drop(d, g);
                        } else {
                                group_recompute(g);
                                group_schedule(d, g);
                        }
                }
        }
        /* The buffer stays for the next transactions, which are likely to
         * need as much (growing it again was a copy of it and fresh pages,
         * ~3% of the ingest's CPU when a small transaction between big
         * ones freed it); one that held a burst goes once JOURNAL_IDLE
         * seals in a row have used less than a quarter of it. */
        if (d->jbuf.size <= JOURNAL_KEEP || d->jused >= d->jbuf.size / 4)
                d->jsmall = 0;
        else if (++d->jsmall >= JOURNAL_IDLE) {
                sl_scratch_free(&d->jbuf);
                d->jsmall = 0;
        }
        d->jused = 0;
        return written;
}

/* Moves the groups at the top of the groups heap whose place is earlier
 * than their deadline down to it, until the top is exact: then it is the
 * group with the earliest deadline (every group's place is at or before
 * its deadline).  Each group moves once for any number of later
 * deadlines. */
static group_t *settle(sl_debounce_t *d) {
        group_t *g;
        while ((g = gheap_top(&d->sched)) && g->hdue != g->due_ms) {
                g->hdue = g->due_ms;
                sched_note_max(d, g);
                gheap_update(&d->sched, g);
        }
        return g;
}

int64_t sl_debounce_next_due(sl_debounce_t *d) {
        const group_t *g = settle(d);
        return g ? g->hdue : INT64_MAX;
}

int64_t sl_debounce_due_bound(const sl_debounce_t *d) {
        const group_t *g = gheap_top(&d->sched);
        return g ? g->hdue : INT64_MAX;
}

/* Takes the next batch of the open group g: reason 0 keeps the group's own
 * reason and deadline. */
static sl_debounce_batch_t *take_batch(sl_debounce_t *d, group_t *g,
                                       int64_t now_ms,
                                       sl_debounce_reason_t reason) {
        sl_debounce_batch_t *b;
        size_t cap;
        int chunk_left = 0;

        size_t ids = 0; /* id bytes of the batch's items */

        b = sl_calloc(1, sizeof(*b));
        b->keylen = g->keylen;
        b->key = sl_malloc(b->keylen + 1);
        memcpy(b->key, g->key, b->keylen);
        b->key[b->keylen] = '\0';
        b->reason = reason ? reason : g->reason;
        b->due_ms = reason ? now_ms : g->due_ms;
        b->flushed_ms = now_ms;
        b->opened_ms = INT64_MAX;

        cap = sl_timerheap_count(g->items);
        if ((int64_t)cap > d->p.max_items)
                cap = (size_t)d->p.max_items;
        b->priv = sl_calloc(cap, sizeof(*b->priv));
        b->items = sl_calloc(cap, sizeof(*b->items));
        g->jstale = 1;
        if (cap == sl_timerheap_count(g->items) &&
            (cap == 1 || (uint64_t)g->bytes <= (uint64_t)d->p.max_bytes)) {
                /* The whole group leaves: in one go. */
                sl_timerheap_take_all(g->items, (sl_timer_t **)b->priv);
                d->gen++;
                for (; b->cnt < cap; b->cnt++) {
                        const sl_timer_t *t = b->priv[b->cnt];
                        chunk_left |= log_left(d, b->key, b->keylen, g, t);
                        item_view(t, &b->items[b->cnt]);
                        if (b->items[b->cnt].first_seen_ms < b->opened_ms)
                                b->opened_ms = b->items[b->cnt].first_seen_ms;
                        b->bytes += b->items[b->cnt].payload_len;
                        ids += t->keylen;
                }
        }
        while (b->cnt < cap) {
                const sl_timer_t *top = sl_timerheap_peek(g->items);
                size_t plen = top->datalen - ITEM_HDR;
                sl_timer_t *t;
                if (b->cnt &&
                    (uint64_t)(b->bytes + plen) > (uint64_t)d->p.max_bytes)
                        break;
                chunk_left |= log_left(d, b->key, b->keylen, g, top);
                t = sl_timerheap_pop(g->items);
                d->gen++;
                b->priv[b->cnt] = t;
                item_view(t, &b->items[b->cnt]);
                if (b->items[b->cnt].first_seen_ms < b->opened_ms)
                        b->opened_ms = b->items[b->cnt].first_seen_ms;
                b->bytes += plen;
                ids += t->keylen;
                b->cnt++;
        }
        sl_debounce_batch_id(d->salt, b->key, b->keylen, b->items, b->cnt,
                             b->id);
        g->bytes -= b->bytes;
        d->bytes -= b->bytes;
        d->key_bytes -= ids;
        d->items -= b->cnt;
        group_after_leave(d, b->key, b->keylen, g, chunk_left);
        return b;
}

int sl_debounce_take(sl_debounce_t *d, const void *key, size_t keylen,
                     int64_t now_ms, sl_debounce_batch_t **out) {
        group_t *g;

        sl_assert(d && out);
        *out = NULL;
        g = key ? group_find(d, key, keylen) : settle(d);
        if (!g)
                return 0;
        if (key)
                d->hot = g; /* asked next for this record */
        if (g->due_ms > now_ms)
                return 0;
        *out = take_batch(d, g, now_ms, 0);
        return 1;
}

int sl_debounce_take_requested(sl_debounce_t *d, const void *key, size_t keylen,
                               int64_t now_ms, sl_debounce_batch_t **out) {
        group_t *g;

        sl_assert(d && out && (key || !keylen));
        *out = NULL;
        if (!(g = group_find(d, key, keylen)))
                return 0;
        *out = take_batch(d, g, now_ms, SL_DEBOUNCE_REQUESTED);
        return 1;
}

/* opened_ms and bytes of a batch from its items. */
static void batch_sums(sl_debounce_batch_t *b) {
        b->opened_ms = INT64_MAX;
        b->bytes = 0;
        for (size_t i = 0; i < b->cnt; i++) {
                if (b->items[i].first_seen_ms < b->opened_ms)
                        b->opened_ms = b->items[i].first_seen_ms;
                b->bytes += b->items[i].payload_len;
        }
}

int sl_debounce_batch_split(const sl_debounce_t *d, sl_debounce_batch_t *b,
                            sl_debounce_batch_t **out) {
        sl_debounce_batch_t *c;
        size_t keep;

        sl_assert(d && b && out);
        *out = NULL;
        if (b->cnt < 2)
                return -1;
        keep = b->cnt / 2;
        c = sl_calloc(1, sizeof(*c));
        c->keylen = b->keylen;
        c->key = sl_malloc(b->keylen + 1);
        memcpy(c->key, b->key, b->keylen + 1);
        c->reason = b->reason;
        c->due_ms = b->due_ms;
        c->flushed_ms = b->flushed_ms;
        c->cnt = b->cnt - keep;
        c->priv = sl_calloc(c->cnt, sizeof(*c->priv));
        c->items = sl_calloc(c->cnt, sizeof(*c->items));
        memcpy(c->priv, b->priv + keep, c->cnt * sizeof(*c->priv));
        memcpy(c->items, b->items + keep, c->cnt * sizeof(*c->items));
        b->cnt = keep;
        batch_sums(b);
        batch_sums(c);
        sl_debounce_batch_id(d->salt, b->key, b->keylen, b->items, b->cnt,
                             b->id);
        sl_debounce_batch_id(d->salt, c->key, c->keylen, c->items, c->cnt,
                             c->id);
        *out = c;
        return 0;
}

void sl_debounce_batch_free(sl_debounce_batch_t *b) {
        if (!b)
                return;
        for (size_t i = 0; i < b->cnt; i++)
                sl_timer_free(b->priv[i]);
        free(b->priv);
        free(b->items);
        free(b->key);
        free(b);
}

size_t sl_debounce_groups(const sl_debounce_t *d) {
        return sl_hmap_count(&d->groups);
}

size_t sl_debounce_items(const sl_debounce_t *d) {
        return d->items;
}

size_t sl_debounce_bytes(const sl_debounce_t *d) {
        return d->bytes + d->key_bytes;
}

int64_t sl_debounce_oldest(const sl_debounce_t *d) {
        int64_t oldest = INT64_MAX;
        for (uint32_t i = 0; i < gheap_count(&d->sched); i++) {
                const group_t *g = gheap_at(&d->sched, i);
                if (g->opened_ms < oldest)
                        oldest = g->opened_ms;
        }
        return oldest;
}

static void group_view(const group_t *g, sl_debounce_group_t *v) {
        v->key = g->key;
        v->keylen = g->keylen;
        v->items = sl_timerheap_count(g->items);
        v->bytes = g->bytes;
        v->opened_ms = g->opened_ms;
        v->last_update_ms = g->last_update_ms;
        v->due_ms = g->due_ms;
        v->reason = g->reason;
}

const sl_debounce_params_t *sl_debounce_params(const sl_debounce_t *d) {
        return &d->p;
}

int sl_debounce_group(const sl_debounce_t *d, const void *key, size_t keylen,
                      sl_debounce_group_t *out) {
        const group_t *g = group_find(d, key, keylen);
        if (!g)
                return 0;
        if (out)
                group_view(g, out);
        return 1;
}

void sl_debounce_foreach_group(const sl_debounce_t *d,
                               void (*cb)(const sl_debounce_group_t *g,
                                          void *opaque),
                               void *opaque) {
        sl_assert(d && cb);
        /* The schedule's array: every open group once, as the timer heap
         * of groups gave them before. */
        for (uint32_t i = 0; i < gheap_count(&d->sched); i++) {
                sl_debounce_group_t v;
                group_view(gheap_at(&d->sched, i), &v);
                cb(&v, opaque);
        }
}

typedef struct collect_s {
        const sl_timer_t **v;
        size_t n;
} collect_t;

static void collect_cb(const sl_timer_t *t, void *opaque) {
        collect_t *c = opaque;
        c->v[c->n++] = t;
}

static int by_seq(const void *a, const void *b) {
        const sl_timer_t *x = *(const sl_timer_t *const *)a;
        const sl_timer_t *y = *(const sl_timer_t *const *)b;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t
sl_debounce_foreach_item(const sl_debounce_t *d, const void *key, size_t keylen,
                         void (*cb)(const sl_debounce_item_t *it, void *opaque),
                         void *opaque) {
        group_t *g = group_find(d, key, keylen);
        collect_t c = {NULL, 0};
        size_t n;

        if (!g)
                return 0;
        n = sl_timerheap_count(g->items);
        c.v = sl_calloc(n, sizeof(*c.v));
        sl_timerheap_foreach(g->items, collect_cb, &c);
        qsort(c.v, n, sizeof(*c.v), by_seq);
        for (size_t i = 0; i < n; i++) {
                sl_debounce_item_t v;
                item_view(c.v[i], &v);
                cb(&v, opaque);
        }
        free(c.v);
        return n;
}

/* ------------------------------------------------------------------ */
/* Batch id: a 128-bit hash over bytes fed in a fixed, explicit layout  */
/* (lengths and seqs as 8 little-endian bytes), so it is the same on    */
/* every machine and every version that keeps this layout.              */

typedef struct h128_s {
        uint64_t a, b;
} h128_t;

static uint64_t rotl(uint64_t x, int r) {
        return (x << r) | (x >> (64 - r));
}

static uint64_t fmix64(uint64_t h) {
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 33;
        return h;
}

static void h_bytes(h128_t *h, const void *p, size_t n) {
        const unsigned char *s = p;
        for (size_t i = 0; i < n; i++) {
                h->a = (h->a ^ s[i]) * 0x100000001b3ULL; /* FNV-1a */
                h->b = rotl(h->b ^ s[i], 23) * 0x87c37b91114253d5ULL;
        }
}

static void h_u64(h128_t *h, uint64_t v) {
        unsigned char le[8];
        for (int i = 0; i < 8; i++)
                le[i] = (unsigned char)(v >> (8 * i));
        h_bytes(h, le, 8);
}

void sl_debounce_batch_id(const char *salt, const void *key, size_t keylen,
                          const sl_debounce_item_t *items, size_t cnt,
                          char id[SL_DEBOUNCE_ID_LEN + 1]) {
        static const char tag[] = "sluice.debounce.batch.v1";
        h128_t h = {0xcbf29ce484222325ULL, 0x9e3779b97f4a7c15ULL};
        uint64_t a, b;

        salt = salt ? salt : "";
        h_bytes(&h, tag, sizeof(tag) - 1);
        h_u64(&h, strlen(salt));
        h_bytes(&h, salt, strlen(salt));
        h_u64(&h, keylen);
        h_bytes(&h, key, keylen);
        h_u64(&h, cnt);
        for (size_t i = 0; i < cnt; i++) {
                h_u64(&h, items[i].idlen);
                h_bytes(&h, items[i].id, items[i].idlen);
                h_u64(&h, (uint64_t)items[i].seq);
        }
        a = fmix64(h.a ^ rotl(h.b, 29));
        b = fmix64(h.b ^ a);
        snprintf(id, SL_DEBOUNCE_ID_LEN + 1, "%016llx%016llx",
                 (unsigned long long)a, (unsigned long long)b);
}

/* ------------------------------------------------------------------ */
/* Encodings.                                                          */

static int utf8_ok(const void *p, size_t n, int allow_nul) {
        const unsigned char *s = p;
        size_t i = 0;
        while (i < n) {
                size_t l;
                /* ASCII, most of what payloads and ids hold, eight bytes at
                 * a time without the sequence rules. */
                i += sl_ascii_len(s + i, n - i, allow_nul);
                if (i == n)
                        break;
                if (!s[i] || !(l = sl_utf8_seq(s + i, n - i)))
                        return 0;
                i += l;
        }
        return 1;
}

int sl_debounce_text_ok(const void *p, size_t n) {
        return (p || !n) && utf8_ok(p, n, 0);
}

static sl_debounce_verb_t refuse(const char **reason, const char *why,
                                 char *detail, size_t detail_size,
                                 const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static sl_debounce_verb_t refuse(const char **reason, const char *why,
                                 char *detail, size_t detail_size,
                                 const char *fmt, ...) {
        va_list ap;
        *reason = why;
        va_start(ap, fmt);
        vsnprintf(detail, detail_size, fmt, ap);
        va_end(ap);
        return SL_DEBOUNCE_REFUSE;
}

/* The group key of any input record: 0, or -1 with *reason and detail. */
static int check_key(const void *key, size_t keylen, const char **reason,
                     char *detail, size_t detail_size) {
        if (!key || !keylen) {
                refuse(reason, "missing-key", detail, detail_size,
                       "the record key (the group) is required");
                return -1;
        }
        if (!sl_debounce_text_ok(key, keylen)) {
                refuse(reason, "bad-key", detail, detail_size,
                       "the group key must be UTF-8 text without NUL bytes");
                return -1;
        }
        return 0;
}

sl_debounce_verb_t sl_debounce_check_control(const void *key, size_t keylen,
                                             int nctl, const void *ctl,
                                             size_t ctllen, const char **reason,
                                             char *detail, size_t detail_size) {
        static const char flush[] = SL_DEBOUNCE_CONTROL_FLUSH;
        sl_assert(nctl > 0);
        if (check_key(key, keylen, reason, detail, detail_size))
                return SL_DEBOUNCE_REFUSE;
        if (nctl > 1)
                return refuse(reason, "bad-header", detail, detail_size,
                              SL_DEBOUNCE_CONTROL_HEADER " given %d times",
                              nctl);
        if (!ctl)
                return refuse(reason, "bad-header", detail, detail_size,
                              SL_DEBOUNCE_CONTROL_HEADER " has a null value");
        if (ctllen != sizeof(flush) - 1 || memcmp(ctl, flush, ctllen))
                return refuse(reason, "bad-header", detail, detail_size,
                              "unknown " SL_DEBOUNCE_CONTROL_HEADER
                              " (%zu bytes); the only one is "
                              "\"" SL_DEBOUNCE_CONTROL_FLUSH "\"",
                              ctllen);
        return SL_DEBOUNCE_FLUSH;
}

sl_debounce_verb_t sl_debounce_check(const void *key, size_t keylen, int nids,
                                     const void *id, size_t idlen,
                                     int null_value, size_t len,
                                     int64_t max_record_bytes,
                                     const char **reason, char *detail,
                                     size_t detail_size) {
        if (check_key(key, keylen, reason, detail, detail_size))
                return SL_DEBOUNCE_REFUSE;
        if (nids > 1)
                return refuse(reason, "bad-header", detail, detail_size,
                              "sluice-item given %d times", nids);
        if (nids && (!id || !idlen))
                return refuse(reason, "bad-header", detail, detail_size, "%s",
                              id ? "sluice-item is empty"
                                 : "sluice-item has a null value");
        if (nids && idlen > SL_DEBOUNCE_MAX_ID)
                return refuse(reason, "bad-header", detail, detail_size,
                              "sluice-item is %zu bytes, at most %d", idlen,
                              SL_DEBOUNCE_MAX_ID);
        if (nids && !sl_debounce_text_ok(id, idlen))
                return refuse(reason, "bad-header", detail, detail_size,
                              "sluice-item must be UTF-8 text without NUL "
                              "bytes");
        if (null_value) {
                if (!nids)
                        return refuse(reason, "missing-item", detail,
                                      detail_size,
                                      "a null value removes the item named "
                                      "by sluice-item, which is missing");
                return SL_DEBOUNCE_REMOVE;
        }
        if (max_record_bytes > 0 &&
            (uint64_t)keylen + len > (uint64_t)max_record_bytes)
                return refuse(reason, "oversize", detail, detail_size,
                              "key and value are %zu bytes, max_record_bytes "
                              "is %" PRId64,
                              keylen + len, max_record_bytes);
        return SL_DEBOUNCE_UPSERT;
}

static void sb_str(sl_buf_t *b, const char *s) {
        sl_buf_put(b, s, strlen(s));
}

/* What snprintf's "%lld" writes, without its format parsing, two digits
 * per division: two per item in every JSON batch. */
static void sb_i64(sl_buf_t *b, int64_t v) {
        static const char d2[] = "00010203040506070809"
                                 "10111213141516171819"
                                 "20212223242526272829"
                                 "30313233343536373839"
                                 "40414243444546474849"
                                 "50515253545556575859"
                                 "60616263646566676869"
                                 "70717273747576777879"
                                 "80818283848586878889"
                                 "90919293949596979899";
        char tmp[24], *e = tmp + sizeof(tmp), *q = e;
        uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        while (u >= 100) {
                q -= 2;
                memcpy(q, d2 + 2 * (u % 100), 2);
                u /= 100;
        }
        if (u >= 10) {
                q -= 2;
                memcpy(q, d2 + 2 * u, 2);
        } else {
                *--q = (char)('0' + u);
        }
        if (v < 0)
                *--q = '-';
        sl_buf_put(b, q, (size_t)(e - q));
}

/* A JSON string of UTF-8 text; invalid bytes become U+FFFD, or, when
 * strict, stop it: 0 then, and b holds part of the string. */
static int sb_jstr_in(sl_buf_t *b, const void *p, size_t n, int strict) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s = p;
        size_t i = 0, run = 0;

        sl_buf_put(b, "\"", 1);
        while (i < n) {
                size_t l = sl_json_plain_len(s + i, n - i);
                unsigned char c;
                run += l; /* printable ASCII: verbatim */
                if ((i += l) == n)
                        break;
                c = s[i];
                l = sl_utf8_seq(s + i, n - i);
                if (l && c >= 0x20 && c != '"' && c != '\\') {
                        run += l;
                        i += l;
                        continue;
                }
                if (!l && strict)
                        return 0;
                sl_buf_put(b, s + i - run, run);
                run = 0;
                if (!l) {
                        sb_str(b, "\xef\xbf\xbd");
                } else if (c == '"' || c == '\\') {
                        char e[2] = {'\\', (char)c};
                        sl_buf_put(b, e, 2);
                } else if (c == '\n') {
                        sb_str(b, "\\n");
                } else if (c == '\r') {
                        sb_str(b, "\\r");
                } else if (c == '\t') {
                        sb_str(b, "\\t");
                } else {
                        char e[6] = {'\\', 'u',         '0',
                                     '0',  hex[c >> 4], hex[c & 15]};
                        sl_buf_put(b, e, 6);
                }
                i++;
        }
        sl_buf_put(b, s + i - run, run);
        sl_buf_put(b, "\"", 1);
        return 1;
}

static void sb_jstr(sl_buf_t *b, const void *p, size_t n) {
        sb_jstr_in(b, p, n, 0);
}

/* Base64 in slices of 48 bytes (64 characters): no buffer per payload. */
static void sb_base64(sl_buf_t *b, const unsigned char *s, size_t n) {
        char q[SL_BASE64_LEN(48) + 1];
        sl_buf_put(b, "\"", 1);
        for (size_t i = 0; i < n; i += 48)
                sl_buf_put(b, q, sl_base64_encode(q, s + i, SL_MIN(n - i, 48)));
        sl_buf_put(b, "\"", 1);
}

static int is_ws(unsigned char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* 1 if p[0..n) is one JSON text (any value), as jansson reads it: the scan
 * of jsontext.c, which asks jansson itself only in the rare cases where
 * the grammar alone cannot tell (jsontext.h). */
static int json_ok(const char *p, size_t n) {
        json_error_t err;
        json_t *j;
        sl_json_verdict_t v = sl_json_text_scan(p, n);

        if (v != SL_JSON_ASK)
                return v == SL_JSON_YES;
        j = json_loadb(
            p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
            &err);
        if (!j)
                return 0;
        json_decref(j);
        return 1;
}

static void sb_payload(sl_buf_t *b, const sl_debounce_item_t *it) {
        const char *p = it->payload;
        size_t n = it->payload_len, at;

        while (n && is_ws((unsigned char)p[0])) {
                p++;
                n--;
        }
        while (n && is_ws((unsigned char)p[n - 1]))
                n--;
        sb_str(b, "\"payload\":");
        if (json_ok(p, n)) {
                sl_buf_put(b, p, n);
                return;
        }
        /* UTF-8 text as a string, in one pass: the string stops at the
         * first invalid sequence, and base64 replaces what it wrote. */
        at = b->len;
        if (sb_jstr_in(b, it->payload, it->payload_len, 1))
                return;
        b->len = at;
        sb_base64(b, it->payload, it->payload_len);
        sb_str(b, ",\"payload_encoding\":\"base64\"");
}

char *sl_debounce_batch_json(const sl_debounce_batch_t *b, size_t *lenp) {
        sl_buf_t s = {0};

        sl_assert(b && lenp);
        /* Room for what a batch of short ids and plain payloads takes, at
         * once: growing from nothing copied it several times over. */
        sl_buf_reserve(&s, 256 + 2 * b->keylen + b->bytes + b->cnt * 112);
        sb_str(&s, "{\"batch_id\":\"");
        sb_str(&s, b->id);
        sb_str(&s, "\",\"key\":");
        sb_jstr(&s, b->key, b->keylen);
        sb_str(&s, ",\"reason\":\"");
        sb_str(&s, sl_debounce_reason_str(b->reason));
        sb_str(&s, "\",\"opened_at\":");
        sb_i64(&s, b->opened_ms);
        sb_str(&s, ",\"flushed_at\":");
        sb_i64(&s, b->flushed_ms);
        sb_str(&s, ",\"items\":[");
        for (size_t i = 0; i < b->cnt; i++) {
                const sl_debounce_item_t *it = &b->items[i];
                sb_str(&s, i ? ",{\"id\":" : "{\"id\":");
                sb_jstr(&s, it->id, it->idlen);
                sl_buf_put(&s, ",", 1);
                sb_payload(&s, it);
                sb_str(&s, ",\"first_seen\":");
                sb_i64(&s, it->first_seen_ms);
                sb_str(&s, ",\"last_update\":");
                sb_i64(&s, it->last_update_ms);
                sl_buf_put(&s, "}", 1);
        }
        sb_str(&s, "]}");
        *lenp = s.len;
        return s.p;
}

/* An int64 field (wire type 0) numbered 1..15, left out when 0 (proto3). */
static size_t pb_int64(uint8_t *out, unsigned field, int64_t v) {
        if (!v)
                return 0;
        out[0] = (uint8_t)(field << 3);
        return 1 + sl_varint_put(out + 1, (uint64_t)v);
}

size_t sl_debounce_item_pack(const void *payload, size_t payload_len,
                             int64_t first_seen_ms, int64_t last_update_ms,
                             int64_t seq, int64_t group_opened_ms,
                             uint8_t *out) {
        size_t n = 0;
        if (payload_len) {
                out[n++] = (1 << 3) | 2; /* payload: length-delimited */
                n += sl_varint_put(out + n, payload_len);
                memcpy(out + n, payload, payload_len);
                n += payload_len;
        }
        n += pb_int64(out + n, 2, first_seen_ms);
        n += pb_int64(out + n, 3, last_update_ms);
        n += pb_int64(out + n, 4, seq);
        n += pb_int64(out + n, 5, group_opened_ms);
        return n;
}

uint8_t *sl_debounce_batch_protobuf(const sl_debounce_batch_t *b,
                                    size_t *lenp) {
        Sluice__V1__Batch m = SLUICE__V1__BATCH__INIT;
        Sluice__V1__BatchItem *iv, **ip;
        char **ids;
        uint8_t *out;

        sl_assert(b && lenp);
        iv = sl_calloc(b->cnt + 1, sizeof(*iv));
        ip = sl_calloc(b->cnt + 1, sizeof(*ip));
        ids = sl_calloc(b->cnt + 1, sizeof(*ids));
        m.batch_id = (char *)b->id;
        m.key.data = (uint8_t *)b->key;
        m.key.len = b->keylen;
        m.reason = (char *)sl_debounce_reason_str(b->reason);
        m.opened_at_ms = b->opened_ms;
        m.flushed_at_ms = b->flushed_ms;
        m.n_items = b->cnt;
        m.items = ip;
        for (size_t i = 0; i < b->cnt; i++) {
                const sl_debounce_item_t *it = &b->items[i];
                sluice__v1__batch_item__init(&iv[i]);
                ids[i] = sl_strndup(it->id, it->idlen);
                iv[i].id = ids[i];
                iv[i].payload.data = (uint8_t *)it->payload;
                iv[i].payload.len = it->payload_len;
                iv[i].first_seen_ms = it->first_seen_ms;
                iv[i].last_update_ms = it->last_update_ms;
                ip[i] = &iv[i];
        }
        *lenp = sluice__v1__batch__get_packed_size(&m);
        out = sl_malloc(*lenp ? *lenp : 1);
        sluice__v1__batch__pack(&m, out);
        for (size_t i = 0; i < b->cnt; i++)
                free(ids[i]);
        free(ids);
        free(ip);
        free(iv);
        return out;
}
