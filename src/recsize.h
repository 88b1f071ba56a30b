/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recsize.h — how many bytes a record takes where a Kafka broker measures
 * it: in a record batch of its own (magic 2), the size the broker compares
 * with the topic's max.message.bytes (an uncompressed batch).
 *
 * Why sluice counts: a record the broker refuses fails at delivery, which
 * dooms the whole transaction (every task is rebuilt, and the refused
 * record is found out only by sending it again, alone, refused.h).  A
 * record counted here against what its topic accepts is refused before it
 * is produced, at no cost: the operator sends its input to the DLQ instead
 * (reason too-large), as a copy cut to fit (task.h, sl_task_dlq_send).
 *
 * The arithmetic is Kafka's own (DefaultRecord.sizeInBytes and
 * DefaultRecordBatch.RECORD_BATCH_OVERHEAD): a 61-byte batch header, then
 * the record: its length, attributes, timestamp and offset deltas (0 in a
 * batch of one), the key and the value, each a length then the bytes (a
 * null one is length -1), the header count and each header's name and
 * value the same way.  Lengths are zig-zag varints.
 *
 * Pure; any thread.
 */
#ifndef SL_RECSIZE_H
#define SL_RECSIZE_H

#include <stddef.h>
#include <stdint.h>

/* The header of a record batch (base offset and length included): what a
 * batch of one record costs beyond the record. */
#define SL_RECSIZE_BATCH_OVERHEAD 61

/* Kafka's default max.message.bytes (and the broker's message.max.bytes):
 * 1 MiB and the 12 bytes of a log entry's offset and length. */
#define SL_RECSIZE_KAFKA_DEFAULT_MAX 1048588

/* Bytes one header takes in a record: its name (namelen bytes) and its
 * value (valuelen bytes; -1 for a null value). */
size_t sl_recsize_header(size_t namelen, int64_t valuelen);

/* Bytes a batch of this one record takes: keylen and valuelen -1 for a
 * null key or value; hdr_cnt headers that take hdr_bytes in all (the sum
 * of sl_recsize_header()). */
size_t sl_recsize_batch(int64_t keylen, int64_t valuelen, size_t hdr_cnt,
                        size_t hdr_bytes);

/*
 * CUTTING A RECORD TO FIT (the DLQ's copies, task.h sl_task_dlq_send)
 *
 * A record is its key, its value, the original headers (src) and the
 * headers sluice adds (own).  When all of it is larger than max, a copy
 * keeps, in this order of sacrifice: the value cut to what fits, or left
 * out (empty; a null stays null); original headers dropped from the end;
 * the key cut to SL_RECSIZE_CUT_KEY bytes; the values of sluice's own
 * headers cut to SL_RECSIZE_CUT_KEY bytes each.  Sluice's headers are
 * never dropped, and a header of at most SL_RECSIZE_CUT_HDR_MAX bytes
 * saying what was cut (sluice-cut) is counted in.
 */
#define SL_RECSIZE_CUT_KEY     1024
#define SL_RECSIZE_CUT_HDR_MAX 128

/* The sizes of a record's parts: own_bytes the sum of sl_recsize_header()
 * over own's headers, own_trimmed the same with each value cut to
 * SL_RECSIZE_CUT_KEY bytes, src_prefix[i] the bytes of the first i
 * original headers (src_cnt + 1 entries). */
typedef struct sl_recsize_parts_s {
        size_t own_cnt, own_bytes, own_trimmed;
        size_t src_cnt;
        size_t *src_prefix;
} sl_recsize_parts_t;

/* What a copy keeps: key and value bytes (-1: null), the first hdrs
 * original headers, trim: sluice's values cut too; cut: anything was cut
 * (the copy carries sluice-cut). */
typedef struct sl_recsize_cut_s {
        int64_t key, value;
        size_t hdrs;
        int trim;
        int cut;
} sl_recsize_cut_t;

/* The copy of the record (keylen, valuelen: -1 for null) that fits max:
 * the whole record when it fits (cut 0).  Returns 0, or -1 when not even
 * the most that can be cut fits. */
int sl_recsize_cut(const sl_recsize_parts_t *z, int64_t keylen,
                   int64_t valuelen, int64_t max, sl_recsize_cut_t *c);

/* Bytes the copy c of a record with parts z takes. */
size_t sl_recsize_copy(const sl_recsize_parts_t *z, const sl_recsize_cut_t *c);

#endif
