/*
 * timerpb.h — the delay changelog's Timer record (proto/sluice.proto),
 * read in place.
 *
 * A delay rebuild reads every pending timer from its changelog.  Through
 * protobuf-c each record was a descriptor-driven unpack plus an allocation
 * for every string, bytes field and header, all freed right after the
 * timer was copied into the heap: in perf profiles of bench delay_rebuild,
 * ~10 % of the process.  This reader allocates nothing (below nine
 * headers) and points into the record.
 *
 * The answer must stay protobuf-c 1.4's (sluice__v1__timer__unpack()):
 * the same records refused (a tag, varint or length that does not end in
 * the record, a known field with another wire type, a group), unknown
 * fields skipped, the last value of a repeated scalar kept, a bool true
 * when any of its varint's bits is, a string up to its first NUL (what
 * strlen() of protobuf-c's copy gives).  tests/fuzz/fuzz_timerpb.c holds
 * the two to the same answer on any bytes.
 *
 * Pure functions; any thread.
 */
#ifndef SL_TIMERPB_H
#define SL_TIMERPB_H

#include <stddef.h>
#include <stdint.h>

/* Headers kept in the record itself; more go to the heap. */
#define SL_TIMERPB_HDRS 8

typedef struct sl_timerpb_hdr_s {
        const char *name; /* not NUL-terminated */
        size_t name_len;
        const uint8_t *value; /* NULL or not when value_len is 0 */
        size_t value_len;
        int null_value;
} sl_timerpb_hdr_t;

typedef struct sl_timerpb_s {
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
        size_t n_headers;
        sl_timerpb_hdr_t *headers; /* hdr_in, or the heap */
        sl_timerpb_hdr_t hdr_in[SL_TIMERPB_HDRS];
        size_t hdr_cap;
} sl_timerpb_t;

/* Reads the Timer record buf[0..len) into *t, pointing into buf: 0, or -1
 * when protobuf-c would refuse it.  Call sl_timerpb_free() after either. */
int sl_timerpb_read(sl_timerpb_t *t, const void *buf, size_t len);

void sl_timerpb_free(sl_timerpb_t *t);

#endif
