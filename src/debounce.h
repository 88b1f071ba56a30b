/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debounce.h — the pending windows of one debounce partition: open groups,
 * their items, the flush rules, batch ids and the batch encodings.
 *
 * Pure logic: no Kafka, no libuv, not thread-safe (one partition's state
 * lives on the loop thread).  The operator (op_debounce.c) feeds it input
 * and changelog records and turns the batches it hands out into output
 * records; `sluice inspect` folds a changelog through it too.
 *
 * A group (the input key) holds items (by item id) in arrival order: the
 * order of the input offset that first brought each id (its seq).  A group
 * is due, whichever comes first, when
 *
 *   now - last update        >= idle        reason idle
 *   now - oldest first-seen  >= max_age     reason max_age
 *   items                    >= max_items   reason max_items
 *   payload bytes            >= max_bytes   reason max_bytes
 *
 * where last update is the latest last_update of its pending items and
 * oldest first-seen the earliest first_seen: both are functions of the
 * pending items alone, so a group rebuilt from the changelog has exactly
 * the deadline it had before.  A batch takes items in arrival order, at
 * most max_items of them and at most max_bytes payload bytes (but at least
 * one item); a group over a size limit flushes batch after batch until it
 * is under both, and the rest waits for its own deadline.
 *
 * The batch id is a 128-bit hash (32 hex digits) of the salt (the pipeline
 * name), the group key and, per item in batch order, its id and seq: the
 * same items flushed again after a crash and replay get the same id.
 */
#ifndef SL_DEBOUNCE_H
#define SL_DEBOUNCE_H

#include <stddef.h>
#include <stdint.h>

/* Length of a batch id in hex digits (128 bits). */
#define SL_DEBOUNCE_ID_LEN 32

typedef enum {
        SL_DEBOUNCE_IDLE = 1,
        SL_DEBOUNCE_MAX_AGE = 2,
        SL_DEBOUNCE_MAX_ITEMS = 3,
        SL_DEBOUNCE_MAX_BYTES = 4,
        SL_DEBOUNCE_REQUESTED = 5, /* a flush control record (below) */
} sl_debounce_reason_t;

#define SL_DEBOUNCE_REASON_CNT 5

/* "idle", "max_age", "max_items", "max_bytes", "requested" ("?" for
 * anything else). */
const char *sl_debounce_reason_str(sl_debounce_reason_t r);

typedef struct sl_debounce_params_s {
        int64_t idle_ms;    /* > 0 */
        int64_t max_age_ms; /* > 0 */
        int64_t max_items;  /* >= 1 */
        int64_t max_bytes;  /* >= 1: payload bytes */
        const char *salt;   /* batch id salt (copied); NULL = none */
        /* Largest chunk record, key and value (THE CHANGELOG below); 0 =
         * SL_DEBOUNCE_CHUNK_MAX, at most that.  An item that does not fit
         * in a chunk of its own is an item record. */
        size_t chunk_max;
} sl_debounce_params_t;

/* A view of one item.  The pointers are into memory owned by the state or
 * by a batch: valid until the next modification of the state, or until
 * the batch is freed. */
typedef struct sl_debounce_item_s {
        const char *id;
        size_t idlen;
        const void *payload;
        size_t payload_len;
        int64_t first_seen_ms;
        int64_t last_update_ms;
        int64_t seq; /* input offset of the first sighting */
} sl_debounce_item_t;

/* A view of one open group (key owned by the state, same validity). */
typedef struct sl_debounce_group_s {
        const char *key;
        size_t keylen;
        size_t items;
        size_t bytes;                /* payload bytes */
        int64_t opened_ms;           /* earliest first_seen */
        int64_t last_update_ms;      /* latest last_update */
        int64_t due_ms;              /* when it flushes */
        sl_debounce_reason_t reason; /* and why */
} sl_debounce_group_t;

/* One flushed batch, owned by the caller: sl_debounce_batch_free(). */
typedef struct sl_debounce_batch_s {
        char *key;
        size_t keylen;
        sl_debounce_reason_t reason;
        int64_t due_ms;     /* the deadline that made it due */
        int64_t opened_ms;  /* earliest first_seen of its items */
        int64_t flushed_ms; /* the now of sl_debounce_take() */
        char id[SL_DEBOUNCE_ID_LEN + 1];
        size_t cnt;
        size_t bytes;              /* payload bytes */
        sl_debounce_item_t *items; /* cnt views, arrival order */
        void **priv;               /* the items' storage */
} sl_debounce_batch_t;

typedef struct sl_debounce_s sl_debounce_t;

/* An empty state with these parameters (copied).  Never fails. */
sl_debounce_t *sl_debounce_new(const sl_debounce_params_t *p);

/* Frees the state and every pending item.  NULL is a no-op. */
void sl_debounce_destroy(sl_debounce_t *d);

/* The pending item id of group key, or 0.  When found and out is not NULL,
 * *out gets its view (see sl_debounce_item_t for how long it is valid).
 * Not const: the state remembers the answer for an upsert of the same
 * item that follows. */
int sl_debounce_find(sl_debounce_t *d, const void *key, size_t keylen,
                     const void *id, size_t idlen, sl_debounce_item_t *out);

/*
 * Input: adds item id to group key (opening the group), or replaces the
 * payload of the pending item with that id, which keeps its first_seen and
 * seq.  last_update becomes now_ms; seq is used for a new item only.
 * Bytes are copied.  Returns 0 for a new item, 1 for a replaced one, -1
 * when a length is 4 GiB or more (nothing changed).  The group's deadline
 * moves; when it is now over a size limit it is due at now_ms.
 */
int sl_debounce_upsert(sl_debounce_t *d, const void *key, size_t keylen,
                       const void *id, size_t idlen, const void *payload,
                       size_t payload_len, int64_t now_ms, int64_t seq);

/* Rebuild: sets item id of group key with the times of its changelog
 * record, replacing any pending item with that id.  Returns as
 * sl_debounce_upsert(). */
int sl_debounce_restore(sl_debounce_t *d, const void *key, size_t keylen,
                        const void *id, size_t idlen, const void *payload,
                        size_t payload_len, int64_t first_seen_ms,
                        int64_t last_update_ms, int64_t seq);

/* Removes a pending item: 1 if it was there, 0 if not.  A group left empty
 * closes without a batch. */
int sl_debounce_remove(sl_debounce_t *d, const void *key, size_t keylen,
                       const void *id, size_t idlen);

/* The earliest deadline of any group, INT64_MAX when none is open.  Not
 * const: it brings the deadline index up to date (see debounce.c). */
int64_t sl_debounce_next_due(sl_debounce_t *d);

/* A time at or before the earliest deadline (INT64_MAX when no group is
 * open), in O(1) without the upkeep of sl_debounce_next_due(): for arming
 * a wake-up, which then asks sl_debounce_next_due(). */
int64_t sl_debounce_due_bound(const sl_debounce_t *d);

/*
 * Takes the next batch due at now_ms: from group key when key is not NULL,
 * else from the group with the earliest deadline.  Returns 1 and a batch in
 * *out (owned by the caller) or 0 when nothing is due.  The items leave the
 * state; a group left empty closes.
 */
int sl_debounce_take(sl_debounce_t *d, const void *key, size_t keylen,
                     int64_t now_ms, sl_debounce_batch_t **out);

/*
 * A flush asked for (a control record): takes the next batch of group key
 * whatever its deadline, with reason SL_DEBOUNCE_REQUESTED and due_ms =
 * flushed_ms = now_ms.  The batch is cut as sl_debounce_take() cuts one
 * (at most max_items items and max_bytes payload bytes, at least one
 * item), so call it until it returns 0 to empty the group.  Returns 1 and
 * a batch in *out (owned by the caller), or 0 when the group is not open.
 */
int sl_debounce_take_requested(sl_debounce_t *d, const void *key, size_t keylen,
                               int64_t now_ms, sl_debounce_batch_t **out);

/* Splits batch b in two for an output that refused it as too large: the
 * first half of its items (rounded down, at least one) stay in b, the rest
 * move to a new batch in *out, with the same group, reason and times; both
 * get the batch id of their own items.  Returns 0, or -1 (nothing changed)
 * when b holds fewer than 2 items. */
int sl_debounce_batch_split(const sl_debounce_t *d, sl_debounce_batch_t *b,
                            sl_debounce_batch_t **out);

/* Frees a batch.  NULL is a no-op. */
void sl_debounce_batch_free(sl_debounce_batch_t *b);

/* Open groups; pending items; the bytes of input they hold: the items'
 * payloads and ids and the groups' keys (what max_pending_bytes bounds). */
size_t sl_debounce_groups(const sl_debounce_t *d);
size_t sl_debounce_items(const sl_debounce_t *d);
size_t sl_debounce_bytes(const sl_debounce_t *d);

/* Earliest first_seen of any pending item, INT64_MAX when none.  O(groups). */
int64_t sl_debounce_oldest(const sl_debounce_t *d);

/* The parameters the state runs with (owned by the state). */
const sl_debounce_params_t *sl_debounce_params(const sl_debounce_t *d);

/* The view of group key: 1 if open (and *out filled), 0 if not. */
int sl_debounce_group(const sl_debounce_t *d, const void *key, size_t keylen,
                      sl_debounce_group_t *out);

/* Calls cb for every open group, in no particular order.  cb must not
 * modify the state. */
void sl_debounce_foreach_group(const sl_debounce_t *d,
                               void (*cb)(const sl_debounce_group_t *g,
                                          void *opaque),
                               void *opaque);

/* Calls cb for every item of group key in arrival order; returns the
 * number of items (0 when the group is not open).  cb must not modify the
 * state. */
size_t
sl_debounce_foreach_item(const sl_debounce_t *d, const void *key, size_t keylen,
                         void (*cb)(const sl_debounce_item_t *it, void *opaque),
                         void *opaque);

/* The batch id of these items of group key (what sl_debounce_take() puts
 * in a batch): 32 lower-case hex digits and a NUL into id. */
void sl_debounce_batch_id(const char *salt, const void *key, size_t keylen,
                          const sl_debounce_item_t *items, size_t cnt,
                          char id[SL_DEBOUNCE_ID_LEN + 1]);

/*
 * The JSON encoding of a batch (output_format = json):
 *
 *   {"batch_id":"…","key":"WH-42","reason":"idle","opened_at":1700000000000,
 *    "flushed_at":1700000002000,"items":[{"id":"A001","payload":{…},
 *    "first_seen":1700000000000,"last_update":1700000000500}]}
 *
 * Times are epoch milliseconds.  An item's payload is embedded as JSON
 * when it is a valid JSON text (RFC 8259, any value; surrounding
 * whitespace trimmed, the bytes otherwise verbatim; jsontext.h decides,
 * with no tree built), else as a JSON string
 * when it is valid UTF-8, else as a base64 string with an extra member
 * "payload_encoding":"base64".  Key and ids must be valid UTF-8 (the
 * operator refuses others at input); invalid bytes would be replaced by
 * U+FFFD.  Returns a malloc'd buffer (not NUL-terminated) the caller
 * frees, its length in *lenp.
 */
char *sl_debounce_batch_json(const sl_debounce_batch_t *b, size_t *lenp);

/* The protobuf encoding (sluice.v1.Batch, proto/sluice.proto): a malloc'd
 * buffer the caller frees, its length in *lenp. */
uint8_t *sl_debounce_batch_protobuf(const sl_debounce_batch_t *b, size_t *lenp);

/*
 * THE CHANGELOG
 *
 * The state writes its own changelog records through a callback, when one
 * is set (the operator's; inspect and the tests may leave it unset, and
 * then nothing is written).  Two kinds of records, both on the group's
 * partition (debounce.c says when each is written):
 *
 *   item    key = group, 0x00, item id; value sluice.v1.DebounceItem.
 *           Written at once for an item that changes or leaves after it
 *           was saved in a chunk, and for an item too large for a chunk;
 *           tombstoned when that item leaves.
 *   chunk   key = group, 0x00, 0x00, chunk number (4 bytes, big endian);
 *           value sluice.v1.DebounceChunk: the items a transaction added
 *           to the group, written once, by sl_debounce_seal(), just before
 *           the transaction commits.  Tombstoned, all the group's chunks
 *           together, when the group empties or an item in one of them
 *           changes or leaves (the others then become item records).
 *
 * write() gets the key, the value (NULL: a tombstone), seq and must, and
 * returns 0 or a negative error code.  must is 1 when a refusal leaves the
 * changelog behind memory (the caller must abort the transaction); 0 when
 * the state takes a refusal back: the record an upsert writes for itself
 * (the state is left unchanged and the upsert returns -1), and the seal's
 * records (a chunk refused is written as item records; an item record
 * refused there drops its item through dropped(), for the DLQ).  seq >= 0
 * names the work the record stands for across replays (the first-sighting
 * offset of the item, or of a chunk's first item): with the key, what the
 * caller may use to recognise a record Kafka refused before (refused.h).
 */
typedef struct sl_debounce_writer_s {
        int (*write)(void *opaque, const void *key, size_t keylen,
                     const void *value, size_t len, int64_t seq, int must);
        void (*dropped)(void *opaque, const void *key, size_t keylen,
                        const sl_debounce_item_t *it, int err);
        void *opaque;
} sl_debounce_writer_t;

/* Sets (or, with w NULL, clears) the changelog writer (copied). */
void sl_debounce_set_writer(sl_debounce_t *d, const sl_debounce_writer_t *w);

/* The error code of the write that made the last sl_debounce_upsert()
 * return -1, or 0 when it failed for a length. */
int sl_debounce_write_error(const sl_debounce_t *d);

/* Writes a chunk record for each group that gained items since the last
 * seal (at most chunk_max bytes each, key included; a group may need
 * several).  Call it just before the transaction's input offsets are
 * taken for its commit.  A chunk Kafka refuses is written as item records
 * instead, and an item whose record is refused too leaves the state
 * through dropped().  Returns the records written. */
int sl_debounce_seal(sl_debounce_t *d);

/* Largest chunk record (key and value) by default. */
#define SL_DEBOUNCE_CHUNK_MAX (64 * 1024)

/* Rebuild: applies one changelog record (value NULL: a tombstone) as it
 * stands in the log; now_ms clamps the item times it holds.  Returns 0,
 * or -1 with a reason in *why for a record that is not one of ours (it
 * is skipped, nothing changed). */
int sl_debounce_restore_record(sl_debounce_t *d, const void *key, size_t keylen,
                               const void *value, size_t len, int64_t now_ms,
                               const char **why);

/* Room sl_debounce_item_pack() needs beyond the payload: a tag and a
 * length of up to 10 bytes for it, and a tag and up to 10 bytes for each
 * of the four times. */
#define SL_DEBOUNCE_ITEM_PACK_EXTRA (1 + 10 + 4 * (1 + 10))

/* The changelog value of an item, sluice.v1.DebounceItem, into out (at
 * least payload_len + SL_DEBOUNCE_ITEM_PACK_EXTRA bytes): the very bytes
 * protobuf-c packs for it (fields in number order, zero values left out),
 * without building the message.  Returns its length. */
size_t sl_debounce_item_pack(const void *payload, size_t payload_len,
                             int64_t first_seen_ms, int64_t last_update_ms,
                             int64_t seq, int64_t group_opened_ms,
                             uint8_t *out);

/* 1 if p[0..n) is valid UTF-8 without NUL bytes (what group keys and item
 * ids must be, to be JSON strings and protobuf strings), else 0. */
int sl_debounce_text_ok(const void *p, size_t n);

/* Longest sluice-item value. */
#define SL_DEBOUNCE_MAX_ID 1024

/* What a debounce input record asks for. */
typedef enum {
        SL_DEBOUNCE_REFUSE, /* bad input: to the DLQ */
        SL_DEBOUNCE_UPSERT, /* add or replace an item */
        SL_DEBOUNCE_REMOVE, /* a null value: remove the named item */
        SL_DEBOUNCE_FLUSH,  /* a control record: flush the group now */
} sl_debounce_verb_t;

/* The checks of one input record, before any state is touched: key is the
 * group; nids is how many sluice-item headers it carries, id/idlen the
 * first one's value (id NULL: a null header); null_value and len describe
 * the record's value; max_record_bytes (0: no limit) bounds the key and
 * the value together.  On
 * SL_DEBOUNCE_REFUSE, *reason is the DLQ reason code (missing-key,
 * bad-key, bad-header, missing-item, oversize) and detail says why
 * (quoting no input bytes).  Pure; any thread. */
sl_debounce_verb_t sl_debounce_check(const void *key, size_t keylen, int nids,
                                     const void *id, size_t idlen,
                                     int null_value, size_t len,
                                     int64_t max_record_bytes,
                                     const char **reason, char *detail,
                                     size_t detail_size);

/*
 * CONTROL RECORDS
 *
 * A record of the input topic with a header sluice-control is a control
 * record, never an item: key = the group, value ignored (null or empty by
 * convention), other headers (sluice-item too) ignored.  It is read in
 * offset order with the group's items, in the same transaction as what it
 * causes, so it is exactly-once like them.  The only control today:
 *
 *   sluice-control: flush   flush the group now: every pending item, in
 *                           batches cut as usual, reason "requested"; a
 *                           no-op (counted) when the group is not open
 */
#define SL_DEBOUNCE_CONTROL_HEADER "sluice-control"
#define SL_DEBOUNCE_CONTROL_FLUSH  "flush"

/* The checks of a control record (one carrying nctl > 0 sluice-control
 * headers, ctl/ctllen the first one's value, ctl NULL for a null header):
 * SL_DEBOUNCE_FLUSH, or SL_DEBOUNCE_REFUSE with *reason (missing-key,
 * bad-key, bad-header: repeated, null or unknown) and a detail that quotes
 * no input bytes.  Pure; any thread. */
sl_debounce_verb_t sl_debounce_check_control(const void *key, size_t keylen,
                                             int nctl, const void *ctl,
                                             size_t ctllen, const char **reason,
                                             char *detail, size_t detail_size);

#endif
