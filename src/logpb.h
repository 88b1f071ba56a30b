/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logpb.h — changelog records read in place (proto/sluice.proto): delay's
 * Timer, debounce's DebounceItem and DebounceChunk.
 *
 * A rebuild reads every pending timer or item from its changelog.  Through
 * protobuf-c each record was a descriptor-driven unpack plus an allocation
 * for every string, bytes field, header and item, all freed right after
 * the record was copied into the operator's state: in perf profiles of
 * bench delay_rebuild ~10 % of the process, of debounce_rebuild_pending
 * ~13 % plus the allocator.  These readers allocate nothing (below nine
 * headers of a Timer) and point into the record.
 *
 * The answer must stay protobuf-c 1.4's (sluice__v1__timer__unpack() and
 * friends): the same records refused (a tag, varint or length that does
 * not end in the record, a known field with another wire type, a group,
 * anything wrong in an embedded message), unknown fields skipped, the last
 * value of a repeated scalar kept, a bool true when any of its varint's
 * bits is, a string up to its first NUL (what strlen() of protobuf-c's
 * copy gives).  tests/fuzz/fuzz_timerpb.c and fuzz_dbitem.c hold the two
 * to the same answer on any bytes.
 *
 * Pure functions; any thread.
 */
#ifndef SL_LOGPB_H
#define SL_LOGPB_H

#include <stddef.h>
#include <stdint.h>

/* Headers kept in the record itself; more go to the heap. */
#define SL_TIMERPB_HDRS 8

typedef struct sl_logpb_timer_hdr_s {
        const char *name; /* not NUL-terminated */
        size_t name_len;
        const uint8_t *value; /* NULL or not when value_len is 0 */
        size_t value_len;
        int null_value;
} sl_logpb_timer_hdr_t;

typedef struct sl_logpb_timer_s {
        int64_t due_ms;
        const char *target_topic; /* not NUL-terminated */
        size_t target_topic_len;
        const uint8_t *target_key;
        size_t target_key_len;
        int has_target_key;
        int32_t target_partition;
        const uint8_t *payload;
        size_t payload_len;
        int null_payload;
        int64_t seq;
        int64_t created_ms;
        int null_target_key;
        /* A recurring timer (proto/sluice.proto fields 12-20): every or
         * cron set (not NUL-terminated; *_len 0: absent). */
        const char *every;
        size_t every_len;
        const char *cron;
        size_t cron_len;
        const char *tz;
        size_t tz_len;
        int64_t start_ms, until_ms, count;
        int32_t catch_up;
        int64_t fired, last_fired_ms;
        size_t n_headers;
        sl_logpb_timer_hdr_t *headers; /* hdr_in, or the heap */
        sl_logpb_timer_hdr_t hdr_in[SL_TIMERPB_HDRS];
        size_t hdr_cap;
} sl_logpb_timer_t;

/* Reads the Timer record buf[0..len) into *t, pointing into buf: 0, or -1
 * when protobuf-c would refuse it.  Call sl_logpb_timer_free() after either. */
int sl_logpb_timer_read(sl_logpb_timer_t *t, const void *buf, size_t len);

void sl_logpb_timer_free(sl_logpb_timer_t *t);

/* A DebounceItem: what a rebuild takes of it (its headers are checked,
 * counted and skipped). */
typedef struct sl_logpb_dbitem_s {
        const uint8_t *payload; /* NULL when payload_len is 0 */
        size_t payload_len;
        int64_t first_seen_ms;
        int64_t last_update_ms;
        int64_t seq;
        int64_t group_opened_ms;
        const uint8_t *id; /* NULL when id_len is 0 */
        size_t id_len;
        size_t n_headers;
} sl_logpb_dbitem_t;

/* Reads the DebounceItem record buf[0..len) into *it, pointing into buf:
 * 0, or -1 when protobuf-c would refuse it. */
int sl_logpb_dbitem_read(sl_logpb_dbitem_t *it, const void *buf, size_t len);

/* Reads the DebounceChunk record buf[0..len), every item as above, the
 * first cap of them into items[]: how many it holds, or -1 when protobuf-c
 * would refuse it.  *rest (when not NULL) is where the item after those
 * cap starts: the rest come from sl_logpb_dbchunk_next() from there. */
long sl_logpb_dbchunk_read(const void *buf, size_t len,
                           sl_logpb_dbitem_t *items, size_t cap, size_t *rest);

/* The next item of a chunk that sl_logpb_dbchunk_read() took, from *pos (0 at
 * the start, or its *rest): 1 with *it set, or 0 after the last. */
int sl_logpb_dbchunk_next(const void *buf, size_t len, size_t *pos,
                          sl_logpb_dbitem_t *it);

/*
 * delay with payload_topic: the changelog holds an index record per
 * pending timer (key: the timer id) instead of its Timer: the byte 0xff,
 * a version byte (1), the due time and the offset of the timer's record in
 * the payload topic, each a varint.  No Timer begins with 0xff (a tag
 * whose wire type, 7, protobuf has not), so a changelog's two kinds of
 * value are told apart by their first byte (sl_logpb_is_index).
 */
#define SL_LOGPB_INDEX_MAX 22 /* bytes of the longest index record */

/* 1 when the value buf[0..len) is an index record (of any version). */
static inline int sl_logpb_is_index(const void *buf, size_t len) {
        return len && ((const uint8_t *)buf)[0] == 0xff;
}

/* Writes the index record of a timer due at due_ms (>= 0) whose record
 * lies at offset (>= 0) into buf (SL_LOGPB_INDEX_MAX bytes): its length. */
size_t sl_logpb_index_put(uint8_t *buf, int64_t due_ms, int64_t offset);

/* Reads an index record: 0, or -1 when it is not one of version 1 or a
 * field does not end in it. */
int sl_logpb_index_read(const void *buf, size_t len, int64_t *due_ms,
                        int64_t *offset);

/*
 * delay with payload_topic: the gone list, one record per changelog
 * partition under the empty key (no timer id is empty): the timers that
 * went to the DLQ as payload-missing while their index records stayed
 * (the read found the payload record gone, and the timer's id with it, so
 * nothing could name the index record), each by the offset its index
 * record names and its due time.  A rebuild removes the index records
 * that match one in both, without sending their timers again.  The byte
 * 0xfe (a tag of wire type 6, which protobuf has not: no Timer begins
 * with it), a version byte (1), the count, then per timer in ascending
 * order of offset: the offset as a varint (the first) or its distance
 * from the one before (at least 1), and the due time as a varint.
 */
/* Timers in one gone list, at most: at 20 bytes a timer at worst (two
 * 10-byte varints) a full list is 320 KiB, well inside a changelog
 * record (1 MiB by default). */
#define SL_LOGPB_GONE_MAX 16384

typedef struct sl_logpb_gone_s {
        int64_t loc; /* the payload record's offset */
        int64_t due_ms;
} sl_logpb_gone_t;

/* 1 when the value buf[0..len) is a gone list (of any version). */
static inline int sl_logpb_is_gone(const void *buf, size_t len) {
        return len && ((const uint8_t *)buf)[0] == 0xfe;
}

/* The gone list of g[0..n) (ascending, distinct offsets, both fields >= 0;
 * n at most SL_LOGPB_GONE_MAX) in a new buffer (free()), its length in
 * *len. */
uint8_t *sl_logpb_gone_put(const sl_logpb_gone_t *g, size_t n, size_t *len);

/* Reads a gone list: 0 with *g (malloc'd; NULL when *n is 0) and *n, or -1
 * when it is not one of version 1, holds more than SL_LOGPB_GONE_MAX
 * timers, a field past INT64_MAX or a distance of 0, or does not end
 * where its last timer does. */
int sl_logpb_gone_read(const void *buf, size_t len, sl_logpb_gone_t **g,
                       size_t *n);

#endif
