/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlqreplay.h — a DLQ replay: sends DLQ records of a pipeline back to its
 * input once their cause is fixed.  The engine behind `sluice dlq replay`
 * (dlq_cmd.c) and POST /v1/pipelines/{p}/dlq/replay (api.c).
 *
 * A replayed record is the DLQ record's key, value and original headers
 * (dlqrec.h: those before sluice's own, which start with sluice-error).
 * Not replayed, counted: a cut copy (it is not the original record), a
 * record with no sluice-source-offset (a fired timer that could not be
 * delivered, a timer whose payload was lost: its control headers are not
 * in the copy), and a record without sluice-error (not written by
 * sluice).  It goes to the input partition it came from.
 *
 * Exactly once.  The replay is a consumer group of its own,
 * <app_id>-dlq-replay.<pipeline> (sl_conf_replay_id()), that never joins (it
 * assigns the DLQ's partitions) and whose offsets are committed only in
 * the transactions of a producer with the same transactional.id (under the
 * <app_id>- prefix of every transactional id of sluice), together with the
 * records it re-produced.  The producer's init_transactions comes first: it
 * aborts what a killed run left open, before the committed offsets are
 * read (read_committed: pending offsets are waited for).  A run reads from
 * the committed offsets up to the end offsets seen at its start and stops.
 * Records the filters leave out advance the offsets too: a later run with
 * other filters goes on after them (from_beginning starts again from the
 * first record kept).  Two runs at once, in one process or two, fence each
 * other (the older one fails; nothing is committed twice).
 *
 * What it needs of Kafka (acls.h lists it): Read on the DLQ, Write on the
 * input, Read on the group, Write on the transactional id.
 *
 * THREADS: a run blocks for as long as it reads (the CLI's thread, or a
 * thread of the API's own); it touches no loop and no state of the
 * pipelines.
 */
#ifndef SL_DLQREPLAY_H
#define SL_DLQREPLAY_H

#include <librdkafka/rdkafka.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SL_DLQREPLAY_MAX_REASONS 16

typedef struct sl_dlqreplay_opts_s {
        const char *reasons[SL_DLQREPLAY_MAX_REASONS]; /* borrowed */
        int reason_cnt;
        int64_t since, until; /* epoch ms of the DLQ record; -1: none */
        int64_t limit;        /* at most this many replayed; -1: none */
        int dry_run;          /* say what would be replayed; commit nothing */
        int from_beginning;   /* not from the group's committed offsets */
} sl_dlqreplay_opts_t;

/* Why a record is not replayed (the summary's order). */
typedef enum {
        SL_DLQREPLAY_SKIP_REASON = 0, /* --reason left it out */
        SL_DLQREPLAY_SKIP_TIME,       /* --since/--until left it out */
        SL_DLQREPLAY_SKIP_CUT,
        SL_DLQREPLAY_SKIP_NO_SOURCE,
        SL_DLQREPLAY_SKIP_NOT_DLQ,
        SL_DLQREPLAY_SKIP__CNT
} sl_dlqreplay_skip_t;

/* "other reason", "cut copy (sluice-cut)", ... */
const char *sl_dlqreplay_skip_text(sl_dlqreplay_skip_t s);
/* "reason", "time", "cut", "no-source", "not-dlq" (the API's keys). */
const char *sl_dlqreplay_skip_name(sl_dlqreplay_skip_t s);

typedef struct sl_dlqreplay_part_s {
        int64_t start, end; /* offsets: first to read, end seen at start */
        int64_t next;       /* past what was handled (committed unless a
                               dry run or a failure) */
        int64_t committed;  /* next as last committed (or start) */
        int64_t replayed, skipped;
        int done;
} sl_dlqreplay_part_t;

/* What a run did (sl_dlqreplay_result_clear() frees it). */
typedef struct sl_dlqreplay_result_s {
        char id[512]; /* the group and transactional id */
        int started;  /* the offsets were read: parts are set */
        int part_cnt; /* the DLQ's partitions */
        sl_dlqreplay_part_t *parts;
        int64_t replayed; /* or would be, in a dry run */
        int64_t skips[SL_DLQREPLAY_SKIP__CNT];
        int64_t skipped; /* their sum */
} sl_dlqreplay_result_t;

/* One DLQ record, as the run saw it (borrowed for the call). */
typedef struct sl_dlqreplay_rec_s {
        int32_t partition;
        int64_t offset;
        int64_t timestamp_ms;
        const void *key; /* NULL: none */
        size_t key_len;
        size_t value_len;
        /* The headers replayed (NULL: none); skip < 0 only. */
        const rd_kafka_headers_t *hdrs;
        int skip; /* -1: replayed (or would be), else sl_dlqreplay_skip_t */
} sl_dlqreplay_rec_t;

/* What the caller is told as the run goes (each may be NULL). */
typedef struct sl_dlqreplay_cbs_s {
        /* The offsets are read; the records come next. */
        void (*started)(void *opaque, const sl_dlqreplay_result_t *res);
        /* Each record read: replayed (or would be), or skipped. */
        void (*record)(void *opaque, const sl_dlqreplay_rec_t *rec);
        void *opaque;
} sl_dlqreplay_cbs_t;

/*
 * Replays pc's DLQ (pc->dlq must be set) to its input with conf's [kafka]
 * settings, as o says.  cancel (may be NULL) ends the run between records
 * once it reads non-zero: what was committed stays.  Returns 0 when the
 * DLQ was read to its end (or the limit reached), or -1 with the reason in
 * errstr; *res says what was done either way (release it with
 * sl_dlqreplay_result_clear()).  Blocks; any thread.
 */
int sl_dlqreplay_run(const sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                     const sl_dlqreplay_opts_t *o,
                     const sl_dlqreplay_cbs_t *cbs, const atomic_int *cancel,
                     sl_dlqreplay_result_t *res, char *errstr,
                     size_t errstr_size);

void sl_dlqreplay_result_clear(sl_dlqreplay_result_t *res);

#endif
