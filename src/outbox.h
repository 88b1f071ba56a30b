/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outbox.h — records decided while a commit is in flight, kept in order
 * for the next transaction.
 *
 * The transaction worker (txn.h) commits off the loop thread.  Meanwhile the
 * loop goes on reading input, changing operator state and firing due work;
 * what operators produce then may not go into the committing transaction
 * (librdkafka refuses it, and it would not be atomic with the state that
 * commit carries).  So it waits here: each record is copied — topic,
 * partition, key, value, headers, produce flags, the task that made it and
 * the time it was decided — into chunks of one arena, and replayed in the
 * same order into the next transaction the moment the commit returns
 * (runtime.c, sl_runtime_outbox_replay).  An abort drops the outbox with the
 * state that made it: every task is rebuilt and does the work again.
 *
 * Bounded: sl_outbox_room() says no past max_bytes or max_records; the
 * runtime then holds its input as it does during an abort.  A record is
 * never refused (one input may make several records), so the bound can be
 * passed by what one decision produces.
 *
 * Memory: records are laid end to end in chunks of SL_OUTBOX_CHUNK bytes (a
 * larger record gets a chunk of its own); emptied chunks are reused (a few
 * are kept, until sl_outbox_trim()) or freed, so an outbox costs no
 * allocation per record.
 *
 * Pure but for rd_kafka_headers_t, which it holds (owned) and never reads.
 * Loop thread only.
 */
#ifndef SL_OUTBOX_H
#define SL_OUTBOX_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#define SL_OUTBOX_CHUNK (256 * 1024)

typedef struct sl_outbox_s sl_outbox_t;

/* One record.  The pointers are into the outbox and stay valid until the
 * next sl_outbox_pop() or sl_outbox_clear(); hdrs is the caller's after a
 * pop. */
typedef struct sl_outbox_rec_s {
        const char *topic;
        int32_t partition;
        const void *key; /* NULL: no key */
        size_t keylen;
        const void *value; /* NULL: a null value (tombstone) */
        size_t valuelen;
        rd_kafka_headers_t *hdrs; /* may be NULL */
        uintptr_t flags;          /* the produce's msg_opaque (runtime.h) */
        int64_t decided_ms;       /* when the operator produced it */
        int64_t timestamp_ms;     /* its own timestamp (a rerouted input
                                     record's), 0: its time of production */
        /* The task that made it: its pipeline, partition and epoch, so a
         * record of a task dropped since (revoked) is not sent. */
        int pl_index;
        int32_t task_partition;
        uint32_t epoch;
} sl_outbox_rec_t;

sl_outbox_t *sl_outbox_new(size_t max_bytes, int64_t max_records);
/* Frees every record left (and its headers).  NULL is a no-op. */
void sl_outbox_destroy(sl_outbox_t *ob);

/* Appends a copy of rec (topic, key and value are copied; rec->hdrs passes
 * to the outbox). */
void sl_outbox_push(sl_outbox_t *ob, const sl_outbox_rec_t *rec);

/* Takes the oldest record into *rec (see sl_outbox_rec_t for lifetimes).
 * Returns 1, or 0 when the outbox is empty. */
int sl_outbox_pop(sl_outbox_t *ob, sl_outbox_rec_t *rec);

/* Drops every record (and its headers). */
void sl_outbox_clear(sl_outbox_t *ob);

/* Frees the emptied chunks kept for reuse (up to 4 MiB that a burst of
 * commits left behind; records waiting are not touched) and returns how
 * many bytes that was.  The next pushes allocate again. */
size_t sl_outbox_trim(sl_outbox_t *ob);

/* 1 while the outbox is under both bounds. */
int sl_outbox_room(const sl_outbox_t *ob);

int64_t sl_outbox_count(const sl_outbox_t *ob);
size_t sl_outbox_bytes(const sl_outbox_t *ob);

#endif
