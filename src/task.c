/* SPDX-License-Identifier: Apache-2.0 */
/*
 * task.c — one assigned input partition of one pipeline: its lifecycle,
 * its rebuild from the changelog, and the write helpers operators use.
 * The state machine and the exactly-once contract are described in task.h.
 *
 * REBUILD (the phases are sl_rebuild_phase_t in task.h)
 *
 * At assignment (and after an aborted transaction) the input offset
 * committed for the partition is fetched first, with require_stable: while
 * a transaction that carries offsets for it is pending (a previous owner's,
 * a zombie's), the answer waits until that transaction ends.  Then the
 * changelog partition's high watermark is captured, and the partition is
 * read from the beginning on the reader (read_committed) until a record at
 * end-1 or a partition EOF at or past end arrives.  In that order, a pending
 * transaction of a lost owner is either wholly seen (it committed before the
 * end was taken: its changelog records and its offsets are both read) or
 * wholly absent.  The EOF matters: the tail below the watermark may be
 * transaction markers or aborted records, which are never delivered.  While
 * a previous owner's transaction is still open, the reader cannot pass it
 * (read_committed stops at the last stable offset); the rebuild waits until
 * that transaction is aborted or committed.
 *
 * Then the operator's second source, if any, the same way; then the input
 * is sought to the committed offset fetched first and resumed.  Input
 * records below that offset are dropped if any arrive.
 *
 * Every lookup goes through sl_kquery (answered on the loop, never a
 * blocking call here); seeks are asynchronous.  A lookup that fails is
 * asked again a second later, so a rebuild rides through a broker outage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "kwatch.h"
#include "log.h"
#include "partitioner.h"
#include "recsize.h"
#include "runtime.h"
#include "task.h"
#include "util.h"

/* How long a lookup may take before it is asked again. */
#define SL_TASK_LOOKUP_MS 5000
/* The committed-offset fetch waits for pending transactions this long per
 * ask (then says so in the log and asks again). */
#define SL_TASK_COMMITTED_MS 3000
/* Retry delay when a rebuild step could not talk to the broker. */
#define SL_TASK_RETRY_MS 1000

static void task_start_rebuild(sl_task_t *t);
static void task_ask_committed(sl_task_t *t);
static void task_ask_changelog_end(sl_task_t *t);
static void task_ask_source_end(sl_task_t *t);
static void task_finish_rebuild(sl_task_t *t);
static void task_cap_refused(sl_task_t *t, sl_pcap_t *c,
                             const rd_kafka_message_t *m);

static const char *task_changelog(const sl_task_t *t) {
        return t->pl->conf->changelog;
}

static rd_kafka_topic_partition_list_t *
task_tp(const char *topic, int32_t partition, int64_t offset) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
        return l;
}

static void task_pause_input(sl_task_t *t) {
        rd_kafka_topic_partition_list_t *l =
            task_tp(t->pl->conf->input, t->partition, RD_KAFKA_OFFSET_INVALID);
        rd_kafka_pause_partitions(t->rt->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
}

/* Resumes the input paused for a lookup or a cap, and seeks it again to
 * the record it stopped at.  librdkafka 2.0.2 does not wake the broker
 * thread on a resume, while a seek to an absolute offset does ("seek
 * done"): with every partition that broker fetched paused, its thread
 * sleeps out its 1 s block before it fetches again, and the records read
 * then were all a second late (a 1 s timer due on arrival). */
static void task_resume_input(sl_task_t *t) {
        rd_kafka_topic_partition_list_t *l = task_tp(
            t->pl->conf->input, t->partition,
            t->retry_offset >= 0 ? t->retry_offset : RD_KAFKA_OFFSET_INVALID);
        rd_kafka_error_t *error;
        rd_kafka_resume_partitions(t->rt->consumer, l);
        t->retry_batch = t->rt->input_batch;
        if (t->retry_offset >= 0 &&
            (error = rd_kafka_seek_partitions(t->rt->consumer, l, 0)))
                rd_kafka_error_destroy(error);
        rd_kafka_topic_partition_list_destroy(l);
}

static void task_reader_unassign(sl_task_t *t) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        if (!t->reader_topic)
                return;
        l = task_tp(t->reader_topic, t->partition, RD_KAFKA_OFFSET_INVALID);
        error = rd_kafka_incremental_unassign(t->rt->reader, l);
        if (error) {
                sl_log(LOG_WARNING, "REBUILD", "%s [%d]: unassign: %s",
                       t->reader_topic, t->partition,
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        }
        rd_kafka_topic_partition_list_destroy(l);
        t->reader_topic = NULL;
        t->fetch_topic = NULL;
        t->reader_moved = t->rt->reader_batch;
}

/* Points the reader at (topic, t->partition) from offset on, in place of
 * whatever it read for this task. */
static int task_reader_assign(sl_task_t *t, const char *topic, int64_t offset) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;

        l = task_tp(topic, t->partition, offset);
        if (t->reader_topic && !strcmp(t->reader_topic, topic)) {
                /* Timeout 0: asynchronous. */
                error = rd_kafka_seek_partitions(t->rt->reader, l, 0);
        } else {
                task_reader_unassign(t);
                error = rd_kafka_incremental_assign(t->rt->reader, l);
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (error) {
                sl_log(LOG_WARNING, "REBUILD",
                       "%s [%d]: read from %" PRId64 ": %s", topic,
                       t->partition, offset, rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return -1;
        }
        t->reader_topic = topic;
        t->reader_moved = t->rt->reader_batch;
        sl_kwatch_kick(t->rt->reader_w);
        return 0;
}

/* The wake timer doubles as the retry timer while rebuilding. */
static void task_on_wake(uv_timer_t *timer) {
        sl_task_t *t = timer->data;
        t->wake_at = 0;
        if (t->state == SL_TASK_REBUILDING) {
                switch (t->rebuild_phase) {
                case SL_REBUILD_COMMITTED:
                        task_ask_committed(t);
                        break;
                case SL_REBUILD_CHANGELOG_END:
                        task_ask_changelog_end(t);
                        break;
                case SL_REBUILD_SOURCE_END:
                        task_ask_source_end(t);
                        break;
                case SL_REBUILD_FINISH:
                        task_finish_rebuild(t);
                        break;
                default:
                        break;
                }
                return;
        }
        if (!sl_runtime_may_produce(t->rt) || t->revoking) {
                /* The transaction is busy: commit.c wakes us when it is not. */
                t->wake_deferred = 1;
                return;
        }
        /* A timer fired at now is stamped no earlier than now. */
        t->pl->op->wake(t, sl_runtime_now_fresh_ms(t->rt));
        t->origin = 0;
}

static void task_retry_in(sl_task_t *t, int64_t ms) {
        t->wake_at = sl_now_ms() + ms;
        uv_timer_start(&t->wake, task_on_wake, (uint64_t)ms, 0);
}

static void task_finish_rebuild(sl_task_t *t) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        int64_t committed = t->rebuild_committed;
        double secs;
        char src[64] = "";

        task_reader_unassign(t);
        t->rebuild_phase = SL_REBUILD_FINISH;

        /* A pipeline with a global table runs only once the table was read
         * to its end: the first decisions must see the configured rates. */
        if (t->pl->op->table_topic && t->pl->op->table_topic(t->pl) &&
            !t->pl->table_ready) {
                task_retry_in(t, 100);
                return;
        }

        /* Input resumes at the offset committed with the state just read. */
        l = task_tp(t->pl->conf->input, t->partition,
                    committed >= 0 ? committed : RD_KAFKA_OFFSET_BEGINNING);
        t->state = SL_TASK_RUNNING;
        t->next_offset = committed >= 0 ? committed : -1;
        t->committed_offset = t->next_offset;
        t->pl->op->restored(t);

        /* Resume, then seek (asynchronously: timeout 0): the seek discards
         * anything fetched from an older position (after an abort the
         * consumer is ahead). */
        rd_kafka_resume_partitions(t->rt->consumer, l);
        error = rd_kafka_seek_partitions(t->rt->consumer, l, 0);
        if (error) {
                sl_log(LOG_ERR, "REBUILD", "%s [%d]: seek: %s",
                       t->pl->conf->input, t->partition,
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
        }
        rd_kafka_topic_partition_list_destroy(l);
        sl_kwatch_kick(t->rt->consumer_w);

        secs = (double)(sl_mono_us() - t->rebuild_start_us) / 1e6;
        if (t->rebuild_source_records)
                snprintf(src, sizeof(src), " and %" PRId64 " source records",
                         t->rebuild_source_records);
        sl_gauge_set(t->pl->metrics->rebuild_seconds, secs);
        sl_log(LOG_INFO, "REBUILD",
               "%s [%d]: rebuilt from %" PRId64 " changelog records%s in "
               "%.3f s; input resumes at %" PRId64,
               t->pl->conf->name, t->partition, t->rebuild_records, src, secs,
               committed);
        sl_runtime_update_ready(t->rt);
        /* The reader's prefetch and the rebuild's garbage are freed now;
         * give the pages back once the last rebuild is done. */
        if (t->rt->rebuilding_cnt == 0)
                sl_mem_trim();
}

/* The second source's end: read it from the operator's offset. */
static void task_on_source_end(void *opaque, rd_kafka_resp_err_t err,
                               int64_t lo, int64_t hi) {
        sl_task_t *t = opaque;
        const char *topic;
        int64_t from = t->rebuild_source_from;
        if (err) {
                sl_kafka_log_error("reader", err, "rebuild: source end offset");
                task_retry_in(t, SL_TASK_RETRY_MS);
                return;
        }
        topic = t->pl->op->rebuild_source(t, &from);
        if (from < lo)
                from = lo; /* older records left with retention */
        /* Read even when the last stable offset says there is nothing:
         * a transaction still undecided may hold records (task_settled). */
        t->rebuild_end = hi;
        t->rebuild_source_lo = lo;
        t->rebuild_source_hi = hi;
        t->rebuild_phase = SL_REBUILD_SOURCE;
        if (task_reader_assign(t, topic, from) == -1) {
                t->rebuild_phase = SL_REBUILD_SOURCE_END;
                task_retry_in(t, SL_TASK_RETRY_MS);
        }
}

static void task_ask_source_end(sl_task_t *t) {
        int64_t from = RD_KAFKA_OFFSET_BEGINNING;
        const char *topic = t->pl->op->rebuild_source(t, &from);
        t->rebuild_source_from = from;
        t->rebuild_source_lo = t->rebuild_source_hi = -1;
        if (sl_kquery_watermarks(t->rt->kq, topic, t->partition,
                                 SL_TASK_LOOKUP_MS, task_on_source_end,
                                 t) == -1)
                task_retry_in(t, SL_TASK_RETRY_MS);
}

/* The changelog is read: the operator's second source (throttle: the
 * overflow backlog from its checkpoint), up to its end captured now. */
static void task_start_source(sl_task_t *t) {
        int64_t from = RD_KAFKA_OFFSET_BEGINNING;
        task_reader_unassign(t);
        if (!t->pl->op->rebuild_source ||
            !t->pl->op->rebuild_source(t, &from)) {
                task_finish_rebuild(t);
                return;
        }
        t->rebuild_phase = SL_REBUILD_SOURCE_END;
        task_ask_source_end(t);
}

static void task_on_changelog_end(void *opaque, rd_kafka_resp_err_t err,
                                  int64_t lo, int64_t hi) {
        sl_task_t *t = opaque;
        if (err) {
                sl_kafka_log_error("reader", err,
                                   "rebuild: changelog end offset");
                task_retry_in(t, SL_TASK_RETRY_MS);
                return;
        }
        /* Read even when the last stable offset says the changelog is
         * empty: a transaction still undecided may hold records
         * (task_settled). */
        (void)lo;
        t->rebuild_end = hi;
        t->rebuild_phase = SL_REBUILD_CHANGELOG;
        if (task_reader_assign(t, task_changelog(t),
                               RD_KAFKA_OFFSET_BEGINNING) == -1) {
                t->rebuild_phase = SL_REBUILD_CHANGELOG_END;
                task_retry_in(t, SL_TASK_RETRY_MS);
        }
}

static void task_ask_changelog_end(sl_task_t *t) {
        t->rebuild_phase = SL_REBUILD_CHANGELOG_END;
        if (sl_kquery_watermarks(t->rt->kq, task_changelog(t), t->partition,
                                 SL_TASK_LOOKUP_MS, task_on_changelog_end,
                                 t) == -1)
                task_retry_in(t, SL_TASK_RETRY_MS);
}

static void task_on_committed(void *opaque, rd_kafka_resp_err_t err,
                              int64_t offset) {
        sl_task_t *t = opaque;
        if (err) {
                /* Most often a pending transaction with offsets for this
                 * partition (UNSTABLE_OFFSET_COMMIT): wait for it. */
                if (t->rebuild_waits++ % 10 == 0)
                        sl_log(LOG_NOTICE, "REBUILD",
                               "%s [%d]: committed offset pending (%s); "
                               "waiting",
                               t->pl->conf->name, t->partition,
                               rd_kafka_err2str(err));
                task_retry_in(t, 200);
                return;
        }
        t->rebuild_committed = offset >= 0 ? offset : -1;
        task_ask_changelog_end(t);
}

static void task_ask_committed(sl_task_t *t) {
        t->rebuild_phase = SL_REBUILD_COMMITTED;
        if (sl_kquery_committed(
                t->rt->kq, t->rt->conf->app_id, t->pl->conf->input,
                t->partition, SL_TASK_COMMITTED_MS, task_on_committed, t) == -1)
                task_retry_in(t, SL_TASK_RETRY_MS);
}

/* From an empty state: the committed offset, then the changelog. */
static void task_start_rebuild(sl_task_t *t) {
        t->state = SL_TASK_REBUILDING;
        t->epoch = ++t->rt->epoch_counter;
        t->rebuild_start_us = sl_mono_us();
        t->rebuild_records = 0;
        t->rebuild_source_records = 0;
        t->rebuild_committed = -1;
        t->rebuild_waits = 0;
        t->settle_logged = 0;
        t->wake_deferred = 0;
        t->lookup_wait = 0;
        t->cap_wait = 0;
        t->retry_offset = -1;
        task_ask_committed(t);
}

sl_task_t *sl_task_new(sl_pipeline_t *pl, int32_t partition) {
        sl_task_t *t = sl_calloc(1, sizeof(*t));
        t->rt = pl->rt;
        t->pl = pl;
        t->partition = partition;
        t->next_offset = -1;
        t->committed_offset = -1;
        t->input_end.offset = -1;
        t->input_end.start = -1;
        uv_timer_init(t->rt->loop, &t->wake);
        t->wake.data = t;
        t->state_data = pl->op->state_new(t);
        sl_log(LOG_INFO, "REBUILD", "%s [%d]: rebuilding from %s",
               pl->conf->name, partition, pl->conf->changelog);
        task_start_rebuild(t);
        return t;
}

static void task_on_close(uv_handle_t *h) {
        free(h->data);
}

void sl_task_destroy(sl_task_t *t) {
        if (!t)
                return;
        sl_kquery_cancel(t->rt->kq, t);
        sl_kquery_cancel(t->rt->kq, &t->input_end);
        if (t->input_end.asking)
                t->rt->input_end_asks--;
        task_reader_unassign(t);
        t->pl->op->state_destroy(t->state_data);
        t->state_data = NULL;
        uv_timer_stop(&t->wake);
        uv_close((uv_handle_t *)&t->wake, task_on_close);
}

void sl_task_restart(sl_task_t *t) {
        sl_kquery_cancel(t->rt->kq, t);
        task_reader_unassign(t);
        task_pause_input(t);
        uv_timer_stop(&t->wake);
        t->wake_at = 0;
        t->pl->op->state_destroy(t->state_data);
        t->state_data = t->pl->op->state_new(t);
        t->state = SL_TASK_REBUILDING;
        sl_log(LOG_INFO, "REBUILD", "%s [%d]: rebuilding after abort",
               t->pl->conf->name, t->partition);
        task_start_rebuild(t);
}

/* Whether the reader, at offset pos of what it rebuilds from, has read
 * everything written there: the partition's high watermark of the
 * reader's last fetch is not past pos.  The reader is read_committed, so
 * it stops (and reports the partition's end) at the last stable offset,
 * before the first record of a transaction not yet decided — one still
 * open (a previous owner's, to be aborted at its timeout), or one already
 * committed whose markers have not reached this partition yet (their
 * leader was away: seen with two of three nodes down).  The records
 * after it, that transaction's and later ones, are part of the state too:
 * finishing there would miss a committed timer (lost) or its tombstone
 * (fired again).  So a rebuild goes on until the two ends meet; the
 * partition's end is reported again once the stable offset moves. */
static int task_settled(sl_task_t *t, int64_t pos, int at_end) {
        int64_t lo = -1, hi = -1;

        if (rd_kafka_get_watermark_offsets(t->rt->reader, t->reader_topic,
                                           t->partition, &lo, &hi) ||
            hi < 0 || hi <= pos)
                return 1;
        /* Past the last record, the commit's own marker is expected: only
         * the partition's end tells a wait. */
        if (at_end && !t->settle_logged) {
                t->settle_logged = 1;
                sl_log(LOG_NOTICE, "REBUILD",
                       "%s [%d]: a transaction not yet decided holds offsets "
                       "%" PRId64 " to %" PRId64 "; waiting for it",
                       t->reader_topic, t->partition, pos, hi - 1);
        }
        return 0;
}

void sl_task_on_reader(sl_task_t *t, const rd_kafka_message_t *m) {
        if (!t->reader_topic ||
            strcmp(rd_kafka_topic_name(m->rkt), t->reader_topic))
                return; /* left over from an earlier assignment */
        if (t->state == SL_TASK_RUNNING) {
                if (t->fetch_topic && t->pl->op->fetched)
                        t->pl->op->fetched(t, m);
                return;
        }
        if (t->rebuild_phase != SL_REBUILD_CHANGELOG &&
            t->rebuild_phase != SL_REBUILD_SOURCE)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (m->offset < t->rebuild_end ||
                    !task_settled(t, m->offset, 1))
                        return;
        } else if (m->err) {
                sl_log(LOG_WARNING, "REBUILD", "%s [%d]: %s", t->reader_topic,
                       t->partition, rd_kafka_message_errstr(m));
                return;
        } else {
                if (t->rebuild_phase == SL_REBUILD_CHANGELOG) {
                        t->pl->op->restore(t, m);
                        t->rebuild_records++;
                } else {
                        t->pl->op->restore_source(t, m);
                        t->rebuild_source_records++;
                }
                sl_counter_inc_owner(t->pl->metrics->rebuild_records);
                if (m->offset + 1 < t->rebuild_end ||
                    !task_settled(t, m->offset + 1, 0))
                        return;
        }
        if (t->rebuild_phase == SL_REBUILD_CHANGELOG) {
                task_start_source(t);
        } else {
                /* The source ends where the read settled, past a stable
                 * offset that an undecided transaction held back when the
                 * read began. */
                int64_t pos = m->err ? m->offset : m->offset + 1;
                t->rebuild_source_hi = SL_MAX(t->rebuild_source_hi, pos);
                task_finish_rebuild(t);
        }
}

int sl_task_fetch(sl_task_t *t, const char *topic, int64_t offset) {
        sl_assert(t->state == SL_TASK_RUNNING);
        if (task_reader_assign(t, topic, offset) == -1)
                return -1;
        t->fetch_topic = topic;
        return 0;
}

int sl_task_fetch_watermarks(sl_task_t *t, int64_t *lo, int64_t *hi) {
        *lo = *hi = -1;
        if (!t->fetch_topic ||
            rd_kafka_get_watermark_offsets(t->rt->reader, t->fetch_topic,
                                           t->partition, lo, hi)) {
                *lo = *hi = -1;
                return -1;
        }
        return 0;
}

void sl_task_fetch_stop(sl_task_t *t) {
        if (t->fetch_topic)
                task_reader_unassign(t);
}

static int task_produce(sl_task_t *t, const char *topic, int32_t partition,
                        const void *key, size_t keylen, const void *value,
                        size_t valuelen, rd_kafka_headers_t *hdrs,
                        uintptr_t flags, int64_t timestamp_ms);

/* A keyed input record on a partition its key does not belong to (by the
 * pipeline's input_partitioner): a copy goes to the key's partition, in
 * the transaction that also commits this record's offset, with its key,
 * value, headers and timestamp and a header sluice-rerouted-from naming
 * where it came from; its key's partition handles it as if it had been
 * produced there.  Returns 1 when m was moved (or, when the copy cannot
 * be written, sent to the DLQ), 0 when it belongs here. */
static int task_reroute(sl_task_t *t, const rd_kafka_message_t *m) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        int32_t want = sl_partitioner_partition(
            pc->input_partitioner, m->key, m->key_len, t->pl->partition_cnt);
        rd_kafka_headers_t *src = NULL, *hdrs;
        rd_kafka_timestamp_type_t tstype;
        int64_t ts;
        char from[48];
        int r;

        if (want < 0 || want == t->partition)
                return 0;
        ts = rd_kafka_message_timestamp(m, &tstype);
        if (rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR)
                hdrs = rd_kafka_headers_copy(src);
        else
                hdrs = rd_kafka_headers_new(1);
        snprintf(from, sizeof(from), "%" PRId32 ":%" PRId64, m->partition,
                 m->offset);
        rd_kafka_header_add(hdrs, SL_TASK_REROUTED_HEADER, -1, from, -1);
        r = task_produce(t, pc->input, want, m->key, m->key_len, m->payload,
                         m->len, hdrs, 0,
                         tstype == RD_KAFKA_TIMESTAMP_CREATE_TIME ? ts : 0);
        if (r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
                char detail[320];
                snprintf(detail, sizeof(detail),
                         "its copy for partition %" PRId32 ": %s", want,
                         sl_task_refused_why(t));
                sl_task_dlq(t, m, "too-large", detail);
        } else if (r < 0) {
                sl_task_dlq(t, m, "reroute-refused",
                            rd_kafka_err2str((rd_kafka_resp_err_t)-r));
        } else {
                sl_counter_inc_owner(t->pl->metrics->records_rerouted);
        }
        return 1;
}

void sl_task_on_input(sl_task_t *t, const rd_kafka_message_t *m) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_error_t *error;
        int32_t p = t->partition;
        if (t->state == SL_TASK_RUNNING && t->lookup_wait && !t->cap_wait &&
            t->pl->op->peek && m->offset > t->retry_offset)
                t->pl->op->peek(t, m); /* it comes again after the wait */
        if (t->state != SL_TASK_RUNNING || t->lookup_wait || t->cap_wait)
                return;
        if (t->retry_offset >= 0) {
                /* After a retry's seek, the first record of a later batch
                 * is the one that waited, or, when that one is gone from
                 * the input (compacted away, deleted) while it waited, the
                 * first one after it.  Records of the batches taken before
                 * the seek were fetched before it: they come again. */
                if (t->rt->input_batch_cur <= t->retry_batch ||
                    m->offset < t->retry_offset)
                        return;
                if (m->offset > t->retry_offset)
                        sl_log(LOG_NOTICE, "INPUT",
                               "%s [%d]: the record at offset %" PRId64
                               " that waited is gone from the input "
                               "(compacted or deleted); input goes on at "
                               "%" PRId64,
                               t->pl->conf->name, t->partition, t->retry_offset,
                               m->offset);
                t->retry_offset = -1;
        }
        if (t->next_offset >= 0 && m->offset < t->next_offset)
                return; /* already part of the committed state */
        t->input_retry = 0;
        t->input_full = NULL;
        t->origin = sl_refused_origin(&p, sizeof(p), m->offset) ^
                    (uint64_t)t->pl->index;
        if (m->key && t->pl->conf->reroute && task_reroute(t, m)) {
                t->origin = 0;
                sl_counter_inc_owner(t->pl->metrics->records_in);
                t->next_offset = m->offset + 1;
                return;
        }
        t->pl->op->input(t, m);
        t->origin = 0;
        if (t->input_retry) {
                /* Seen again once the lookup answers (or the cap opens):
                 * pause, and seek back so what was fetched after it comes
                 * again too. */
                if (t->input_full) {
                        t->cap_wait = 1;
                        task_cap_refused(t, t->input_full, m);
                        t->input_full = NULL;
                } else {
                        t->lookup_wait = 1;
                }
                t->retry_offset = m->offset;
                t->retry_batch = t->rt->input_batch;
                l = task_tp(t->pl->conf->input, t->partition, m->offset);
                rd_kafka_pause_partitions(t->rt->consumer, l);
                error = rd_kafka_seek_partitions(t->rt->consumer, l, 0);
                if (error)
                        rd_kafka_error_destroy(error);
                rd_kafka_topic_partition_list_destroy(l);
                return;
        }
        sl_counter_inc_owner(t->pl->metrics->records_in);
        t->next_offset = m->offset + 1;
}

void sl_task_input_retry(sl_task_t *t) {
        t->input_retry = 1;
}

/* ------------------------------------------------------------------ */
/* Caps (task.h; the arithmetic is cap.h).                              */

sl_pcap_t *sl_pipeline_cap(sl_pipeline_t *pl, const char *key, const char *what,
                           int64_t limit) {
        sl_metrics_t *m = pl->rt->metrics;
        const char *name = pl->conf->name;
        sl_pcap_t *c;

        sl_assert(pl->cap_cnt < SL_PIPELINE_CAPS_MAX);
        c = sl_calloc(1, sizeof(*c));
        sl_cap_init(&c->cap, limit);
        c->pl = pl;
        c->key = key;
        c->what = what;
        c->m_paused = sl_metrics_gauge(
            m, "sluice_input_paused",
            "1 while the pipeline's input waits for room under this cap "
            "(memory bound reached on this instance), else 0.",
            "pipeline", name, "cap", key, NULL);
        c->m_pauses = sl_metrics_counter(
            m, "sluice_input_pauses_total",
            "Times the pipeline's input was paused by this cap.", "pipeline",
            name, "cap", key, NULL);
        c->m_used = sl_metrics_gauge(
            m, "sluice_cap_used",
            "What the cap bounds, held by this instance (refreshed every "
            "second).",
            "pipeline", name, "cap", key, NULL);
        c->m_limit = sl_metrics_gauge(m, "sluice_cap_limit",
                                      "The cap's limit (0: unlimited).",
                                      "pipeline", name, "cap", key, NULL);
        sl_gauge_set(c->m_limit, (double)c->cap.limit);
        pl->caps[pl->cap_cnt++] = c;
        return c;
}

void sl_pipeline_caps_destroy(sl_pipeline_t *pl) {
        for (int i = 0; i < pl->cap_cnt; i++)
                free(pl->caps[i]);
        pl->cap_cnt = 0;
}

int sl_pcap_room(const sl_pcap_t *c, int64_t n) {
        return sl_cap_room(&c->cap, n);
}

void sl_task_input_full(sl_task_t *t, sl_pcap_t *c) {
        t->input_retry = 1;
        t->input_full = c;
}

/* A record of t did not fit under c: said once per pause. */
static void task_cap_refused(sl_task_t *t, sl_pcap_t *c,
                             const rd_kafka_message_t *m) {
        if (!sl_cap_refuse(&c->cap))
                return;
        c->full_since_ms = sl_now_ms();
        sl_gauge_set(c->m_paused, 1);
        sl_counter_inc(c->m_pauses);
        sl_log(
            LOG_WARNING, "CAP",
            "%s: input paused: %" PRId64 " %s on this instance, %s = %" PRId64
            " (first waiting record: [%d] @%" PRId64 "); resumes at %" PRId64,
            t->pl->conf->name, c->cap.used, c->what, c->key, c->cap.limit,
            t->partition, m->offset, c->cap.low);
        sl_runtime_update_ready(t->rt);
}

void sl_pcap_add(sl_pcap_t *c, int64_t delta) {
        sl_pipeline_t *pl = c->pl;
        sl_runtime_t *rt = pl->rt;
        int n = 0;

        if (!sl_cap_add(&c->cap, delta))
                return;
        sl_gauge_set(c->m_paused, 0);
        for (int p = 0; p < pl->partition_cnt; p++) {
                sl_task_t *t = pl->tasks[p];
                if (!t || !t->cap_wait)
                        continue;
                t->cap_wait = 0;
                n++;
                /* The consumer is gone while the clients are re-created;
                 * the partitions come back through a new assignment then. */
                if (rt->consumer)
                        task_resume_input(t);
        }
        sl_log(LOG_NOTICE, "CAP",
               "%s: input resumed: %" PRId64 " %s, %s = %" PRId64
               ", after %.1f s (%d partitions waited)",
               pl->conf->name, c->cap.used, c->what, c->key, c->cap.limit,
               (double)(sl_now_ms() - c->full_since_ms) / 1000.0, n);
        if (n && rt->consumer)
                sl_kwatch_kick(rt->consumer_w);
        sl_runtime_update_ready(rt);
}

void sl_task_lookup_done(sl_task_t *t) {
        if (!t->lookup_wait)
                return;
        t->lookup_wait = 0;
        task_resume_input(t);
        sl_kwatch_kick(t->rt->consumer_w);
}

/* ------------------------------------------------------------------ */
/* What operators ask of the process (task.h), through the handle.      */

void sl_task_commit_soon(sl_task_t *t) {
        t->rt->hooks->commit_soon(t->rt);
}

void sl_task_commit_linger(sl_task_t *t) {
        t->rt->hooks->commit_linger(t->rt);
}

int sl_task_topic_partitions(sl_task_t *t, const char *topic) {
        return t->rt->hooks->topic_partitions(t->rt, topic);
}

const sl_conf_t *sl_pipeline_sluice_conf(const sl_pipeline_t *pl) {
        return pl->rt->conf;
}

sl_metrics_t *sl_pipeline_metrics_registry(sl_pipeline_t *pl) {
        return pl->rt->metrics;
}

int64_t sl_task_now_ms(sl_task_t *t) {
        return sl_runtime_now_ms(t->rt);
}

int64_t sl_task_now_fresh_ms(sl_task_t *t) {
        return sl_runtime_now_fresh_ms(t->rt);
}

void sl_task_origin(sl_task_t *t, const void *id, size_t len, int64_t n) {
        t->origin = len ? sl_refused_origin(id, len, n) : 0;
}

/* ------------------------------------------------------------------ */
/* Writes.                                                             */

static int task_produce(sl_task_t *t, const char *topic, int32_t partition,
                        const void *key, size_t keylen, const void *value,
                        size_t valuelen, rd_kafka_headers_t *hdrs,
                        uintptr_t flags, int64_t timestamp_ms) {
        sl_outbox_rec_t r = {
            .topic = topic,
            .partition = partition,
            .key = key,
            .keylen = keylen,
            .value = value,
            .valuelen = valuelen,
            .hdrs = hdrs,
            .pl_index = t->pl->index,
            .task_partition = t->partition,
            .epoch = t->epoch,
            .timestamp_ms = timestamp_ms,
        };
        /* The origin travels with an untracked record, so a delivery
         * failure can name it; the identity is hashed (runtime.c) only
         * while something was refused (refused.h). */
        if (!(flags & SL_MSG_TRACKED))
                flags |= SL_MSG_ORIGIN(t->origin);
        r.flags = flags;
        return sl_runtime_produce(t->rt, &r);
}

int sl_task_produce(sl_task_t *t, const char *topic, int32_t partition,
                    const void *key, size_t keylen, const void *value,
                    size_t valuelen, rd_kafka_headers_t *hdrs) {
        return task_produce(t, topic, partition, key, keylen, value, valuelen,
                            hdrs, 0, 0);
}

int sl_task_produce_tracked(sl_task_t *t, const char *topic, int32_t partition,
                            const void *key, size_t keylen, const void *value,
                            size_t valuelen, rd_kafka_headers_t *hdrs) {
        return task_produce(
            t, topic, partition, key, keylen, value, valuelen, hdrs,
            SL_MSG_TRACK(t->pl->index, t->partition, t->epoch), 0);
}

void sl_task_abort(sl_task_t *t, const char *why) {
        sl_txn_doom(t->rt->txn, why);
}

int sl_task_changelog(sl_task_t *t, const void *key, size_t keylen,
                      const void *value, size_t valuelen) {
        int r = sl_task_produce(t, task_changelog(t), t->partition, key, keylen,
                                value, valuelen, NULL);
        if (r < 0) {
                /* Memory now differs from the changelog: abort and rebuild. */
                sl_txn_doom(t->rt->txn, "changelog record refused");
        }
        return r;
}

void sl_task_dlq_headers(sl_task_t *t, rd_kafka_headers_t *hdrs,
                         const char *reason, const char *detail,
                         int64_t source_offset) {
        char buf[32];
        rd_kafka_header_add(hdrs, "sluice-error", -1, reason, -1);
        rd_kafka_header_add(hdrs, "sluice-error-detail", -1, detail, -1);
        rd_kafka_header_add(hdrs, "sluice-source-topic", -1, t->pl->conf->input,
                            -1);
        snprintf(buf, sizeof(buf), "%" PRId32, t->partition);
        rd_kafka_header_add(hdrs, "sluice-source-partition", -1, buf, -1);
        snprintf(buf, sizeof(buf), "%" PRId64, source_offset);
        rd_kafka_header_add(hdrs, "sluice-source-offset", -1, buf, -1);
}

void sl_task_dlq_count(sl_task_t *t, const char *reason) {
        sl_counter_inc(sl_metrics_counter(
            t->rt->metrics, "sluice_records_dlq_total", SL_DLQ_HELP, "pipeline",
            t->pl->conf->name, "reason", reason, NULL));
}

int sl_task_refusals(const sl_task_t *t) {
        return t->rt->refused.used > 0;
}

int sl_task_refused(const sl_task_t *t, const char *topic, const void *key,
                    size_t keylen, const void *origin, size_t origin_len,
                    int64_t n) {
        int e = 0;
        uint64_t id;
        if (!t->rt->refused.used)
                return 0;
        id = sl_refused_id(topic, key, keylen,
                           sl_refused_origin(origin, origin_len, n), NULL, 0);
        return sl_refused_get(&t->rt->refused, id, sl_now_ms(), &e) ==
                       SL_REFUSED_GUILTY
                   ? e
                   : 0;
}

const char *sl_task_refused_why(const sl_task_t *t) {
        return t->rt->refused_why;
}

int64_t sl_task_max_bytes(const sl_task_t *t, const char *topic) {
        return sl_runtime_max_bytes(t->rt, topic);
}

int64_t sl_pipeline_max_bytes(const sl_pipeline_t *pl, const char *topic) {
        return sl_runtime_max_bytes(pl->rt, topic);
}

/* ------------------------------------------------------------------ */
/* DLQ copies that always fit (task.h, sl_task_dlq_send).              */

/* The smallest copy keeps this much of the key. */
#define SL_DLQ_MIN_KEY 256

typedef sl_recsize_cut_t dlq_cut_t;
typedef sl_recsize_parts_t dlq_sizes_t;

/* Sizes of sluice's own headers and of each prefix of the original ones. */
static void dlq_sizes(dlq_sizes_t *z, const rd_kafka_headers_t *src,
                      const rd_kafka_headers_t *own) {
        const char *name;
        const void *val;
        size_t vlen, i;
        memset(z, 0, sizeof(*z));
        for (i = 0; own && !rd_kafka_header_get_all(own, i, &name, &val, &vlen);
             i++) {
                z->own_bytes +=
                    sl_recsize_header(strlen(name), val ? (int64_t)vlen : -1);
                z->own_trimmed += sl_recsize_header(
                    strlen(name),
                    val ? (int64_t)SL_MIN(vlen, SL_RECSIZE_CUT_KEY) : -1);
        }
        z->own_cnt = i;
        z->src_cnt = src ? rd_kafka_header_cnt(src) : 0;
        z->src_prefix = sl_calloc(z->src_cnt + 1, sizeof(*z->src_prefix));
        for (i = 0; i < z->src_cnt &&
                    !rd_kafka_header_get_all(src, i, &name, &val, &vlen);
             i++)
                z->src_prefix[i + 1] =
                    z->src_prefix[i] +
                    sl_recsize_header(strlen(name), val ? (int64_t)vlen : -1);
        z->src_cnt = i;
}

/* The copy's headers: the first c->hdrs originals, then sluice's own, then
 * sluice-cut when something was cut. */
static rd_kafka_headers_t *dlq_headers(const rd_kafka_headers_t *src,
                                       const rd_kafka_headers_t *own,
                                       const dlq_sizes_t *z, const dlq_cut_t *c,
                                       int64_t keylen, int64_t valuelen) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(c->hdrs + z->own_cnt + 1);
        const char *name;
        const void *val;
        size_t vlen;
        char buf[SL_RECSIZE_CUT_HDR_MAX];

        for (size_t i = 0; i < c->hdrs &&
                           !rd_kafka_header_get_all(src, i, &name, &val, &vlen);
             i++)
                rd_kafka_header_add(h, name, -1, val, val ? (ssize_t)vlen : 0);
        for (size_t i = 0;
             own && !rd_kafka_header_get_all(own, i, &name, &val, &vlen); i++)
                rd_kafka_header_add(
                    h, name, -1, val,
                    !val      ? 0
                    : c->trim ? (ssize_t)SL_MIN(vlen, SL_RECSIZE_CUT_KEY)
                              : (ssize_t)vlen);
        if (c->cut) {
                snprintf(buf, sizeof(buf),
                         "key=%" PRId64 ":%" PRId64 ",value=%" PRId64
                         ":%" PRId64 ",headers=%zu:%zu%s",
                         keylen, c->key, valuelen, c->value, z->src_cnt,
                         c->hdrs, c->trim ? ",sluice-headers=1024" : "");
                rd_kafka_header_add(h, "sluice-cut", -1, buf, -1);
        }
        return h;
}

int sl_task_dlq_send(sl_task_t *t, const void *key, size_t keylen,
                     const void *value, size_t valuelen,
                     const rd_kafka_headers_t *src, rd_kafka_headers_t *own) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        int64_t kl = key ? (int64_t)keylen : -1,
                vl = value ? (int64_t)valuelen : -1;
        int64_t max = sl_runtime_max_bytes(t->rt, pc->dlq);
        uint64_t origin = t->origin;
        dlq_sizes_t z;
        dlq_cut_t c;
        int r = -1;

        sl_assert(pc->dlq);
        dlq_sizes(&z, src, own);
        if (sl_recsize_cut(&z, kl, vl, max, &c) == 0) {
                r = sl_task_produce(t, pc->dlq, t->partition, key,
                                    c.key < 0 ? 0 : (size_t)c.key, value,
                                    c.value < 0 ? 0 : (size_t)c.value,
                                    dlq_headers(src, own, &z, &c, kl, vl));
                if (r == 0 && c.cut)
                        sl_log(LOG_NOTICE, "DLQ",
                               "%s [%d]: a record of %zu bytes cut to fit %s "
                               "(%" PRId64 " bytes): key %" PRId64
                               " of %" PRId64 ", value %" PRId64 " of %" PRId64
                               ", headers %zu of %zu",
                               pc->name, t->partition,
                               sl_recsize_batch(kl, vl, z.own_cnt + z.src_cnt,
                                                z.own_bytes +
                                                    z.src_prefix[z.src_cnt]),
                               pc->dlq, max, c.key, kl, c.value, vl, c.hdrs,
                               z.src_cnt);
        }
        if (r < 0) {
                /* Refused (the broker's limit is not what sluice learned,
                 * or the copy was refused alone before): the smallest copy,
                 * under another origin than the refused one. */
                char why[256];
                snprintf(why, sizeof(why), "%s", t->rt->refused_why);
                c.key = kl < 0 ? -1 : SL_MIN(kl, SL_DLQ_MIN_KEY);
                c.value = vl < 0 ? -1 : 0;
                c.hdrs = 0;
                c.trim = 1;
                c.cut = 1;
                t->origin = origin ^ 0x2545f4914f6cdd1dULL;
                r = sl_task_produce(t, pc->dlq, t->partition, key,
                                    c.key < 0 ? 0 : (size_t)c.key, value, 0,
                                    dlq_headers(src, own, &z, &c, kl, vl));
                t->origin = origin;
                if (r < 0) {
                        sl_log(LOG_ERR, "DLQ",
                               "%s [%d]: DLQ %s refuses even the smallest copy "
                               "of a record (%s; %s): the transaction aborts "
                               "and the input is read again",
                               pc->name, t->partition, pc->dlq, why,
                               t->rt->refused_why);
                        sl_txn_doom(t->rt->txn, "the DLQ refused a record");
                } else {
                        sl_log(LOG_WARNING, "DLQ",
                               "%s [%d]: DLQ %s refused a copy (%s): the "
                               "smallest copy went instead (sluice-cut)",
                               pc->name, t->partition, pc->dlq, why);
                }
        }
        free(z.src_prefix);
        if (own)
                rd_kafka_headers_destroy(own);
        return r < 0 ? r : 0;
}

void sl_task_dlq(sl_task_t *t, const rd_kafka_message_t *m, const char *reason,
                 const char *detail) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *src = NULL, *own_src = NULL, *hdrs;
        char buf[32], esc[512];

        sl_task_dlq_count(t, reason);
        /* Details may quote input: printable ASCII only, bounded (a
         * detail its caller escaped already is left as it is). */
        if (detail)
                detail = sl_escape(detail, strlen(detail), esc, sizeof(esc));
        if (!pc->dlq) {
                sl_log(LOG_WARNING, "DLQ",
                       "%s [%d] @%" PRId64 ": %s%s%s (no DLQ: dropped)",
                       pc->name, m->partition, m->offset, reason,
                       detail ? ": " : "", detail ? detail : "");
                return;
        }
        if (rd_kafka_message_headers(m, &src) != RD_KAFKA_RESP_ERR_NO_ERROR)
                src = NULL;
        if (src &&
            !rd_kafka_header_get_last(src, SL_TASK_REROUTED_HEADER,
                                      &(const void *){NULL}, &(size_t){0})) {
                /* A rerouted record goes on as if produced here. */
                own_src = rd_kafka_headers_copy(src);
                rd_kafka_header_remove(own_src, SL_TASK_REROUTED_HEADER);
                src = own_src;
        }
        hdrs = rd_kafka_headers_new(6);
        rd_kafka_header_add(hdrs, "sluice-error", -1, reason, -1);
        if (detail)
                rd_kafka_header_add(hdrs, "sluice-error-detail", -1, detail,
                                    -1);
        rd_kafka_header_add(hdrs, "sluice-source-topic", -1,
                            rd_kafka_topic_name(m->rkt), -1);
        snprintf(buf, sizeof(buf), "%" PRId32, m->partition);
        rd_kafka_header_add(hdrs, "sluice-source-partition", -1, buf, -1);
        snprintf(buf, sizeof(buf), "%" PRId64, m->offset);
        rd_kafka_header_add(hdrs, "sluice-source-offset", -1, buf, -1);
        sl_task_dlq_send(t, m->key, m->key_len, m->payload, m->len, src, hdrs);
        if (own_src)
                rd_kafka_headers_destroy(own_src);
}

void sl_task_wake_at(sl_task_t *t, int64_t when_ms) {
        int64_t now;
        if (when_ms == 0) {
                uv_timer_stop(&t->wake);
                t->wake_at = 0;
                return;
        }
        if (t->wake_at && t->wake_at <= when_ms)
                return;
        /* The loop's cached time may be stale after a blocking call. */
        uv_update_time(t->rt->loop);
        now = sl_now_ms();
        t->wake_at = when_ms;
        uv_timer_start(&t->wake, task_on_wake,
                       when_ms > now ? (uint64_t)(when_ms - now) : 0, 0);
}
