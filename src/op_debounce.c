/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_debounce.c — the debounce operator: per-group batching, flushed when a
 * group has been idle, when its oldest item is too old, or when it is full.
 *
 * INPUT
 *
 *   key           the group (e.g. a warehouse id): UTF-8 text without NUL
 *   sluice-item   the item id (e.g. an order id).  Seen again while pending,
 *                 it replaces the item's payload and keeps its first-seen
 *                 time and place in the batch.  Without the header each
 *                 record is its own item, with the id "<partition>-<offset>"
 *                 (the same after a replay).
 *   value         the item's payload; a null value with sluice-item removes
 *                 that item from its pending group
 *
 *   sluice-control  "flush": a control record (debounce.h), never an item:
 *                 the group's pending items are flushed at once, in
 *                 batches with reason "requested" (the API's POST
 *                 .../groups/{key}/flush writes one); a no-op, counted in
 *                 sluice_debounce_flush_requests_total{result="empty"}, when
 *                 the group is not open.  Value and other headers ignored;
 *                 any other sluice-control value is bad-header
 *
 * Other headers are not carried into batches (a batch merges many records).
 * Bad input goes to the DLQ: missing-key, bad-key (not UTF-8 text, or a NUL
 * byte), bad-header (sluice-item repeated, null, empty, longer than 1024
 * bytes, not UTF-8 text), missing-item (a null value without sluice-item),
 * oversize (value over max_record_bytes), too-large (its changelog record,
 * or a batch of it alone, is larger than the topic takes: recsize.h),
 * changelog-refused (Kafka refused its changelog record for another
 * reason).
 *
 * STATE MODEL
 *
 * The window state (debounce.c) writes its own changelog through
 * debounce_write(); debounce.h and debounce.c (THE CHANGELOG) have the
 * format and the rules.  In short:
 *
 *   chunk record     key group, 0x00, 0x00, number; value
 *                    sluice.v1.DebounceChunk: the items one transaction
 *                    added to the group (payload, first_seen_ms,
 *                    last_update_ms, seq: the input offset of the first
 *                    sighting, batch order), written by the seal hook just
 *                    before the commit; one record per group touched, none
 *                    for an item that left in the transaction that brought it
 *   item record      key group, 0x00, item id; value sluice.v1.DebounceItem:
 *                    an item that changed or left while others of its
 *                    group stay, or one too large for a chunk (written at
 *                    once, in the input call)
 *   tombstones       a group's chunks when it empties or converts; an item
 *                    record when its item leaves; in the transaction that
 *                    carries the batch or the removal
 *   rebuild          apply the changelog in order (sl_debounce_restore_
 *                    record()); the groups and their deadlines follow from
 *                    the items alone, so they are what they were before
 *
 * Group keys hold no NUL and item ids are not empty and hold no NUL, so the
 * two kinds of key cannot be confused.
 *
 * OUTPUT
 *
 * One record per batch to `output`: key = group, headers sluice-batch-id
 * and sluice-due (the deadline that flushed it, epoch ms: the time of the
 * filling update for max_items and max_bytes), value per output_format: json
 * (see sl_debounce_batch_json() in debounce.h:
 * {"batch_id","key","reason","opened_at","flushed_at","items":
 * [{"id","payload","first_seen","last_update"}]}, times in epoch ms, a
 * payload that is valid JSON embedded as JSON, else as a string, base64
 * with "payload_encoding":"base64" when it is not UTF-8) or protobuf
 * (sluice.v1.Batch).  A batch too large for the producer is split in
 * halves (each its own batch and id) until it fits; a batch the output
 * refuses otherwise, or a single item still too large, goes to the DLQ
 * with reason output-refused.  Since the batch and its items' tombstones commit
 * in one transaction, a batch replayed after a crash was never visible
 * before; batch_id (a hash of the group, the item ids and their seqs) names
 * the same items the same way whenever they are flushed together.
 *
 * FLUSHING
 *
 * Deadlines are wall-clock: the task's wake-up is armed for the earliest
 * group deadline, so a group that goes silent still flushes.  A group that
 * reaches max_items or max_bytes flushes at once, in the input call; a
 * group already due when a record for it arrives flushes before the record
 * joins it.  After a rebuild, groups that fell due while nobody owned the
 * partition flush at most catchup_rate items per second per partition (a
 * token bucket, tbucket.c, that a batch may overdraw); any wake-up
 * flushes at most SL_DEBOUNCE_FLUSH_MAX items before yielding.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debounce.h"
#include "describe.h"
#include "log.h"
#include "metrics.h"
#include "opdef_debounce.h"
#include "sluice.pb-c.h"
#include "task.h"
#include "tbucket.h"
#include "util.h"

/* Items flushed per wake-up before yielding to the loop. */
#define SL_DEBOUNCE_FLUSH_MAX 20000
/* How often the oldest-pending gauge is refreshed while items wait. */
#define SL_DEBOUNCE_GAUGE_MS 1000

typedef struct debounce_pipeline_s {
        sl_debounce_params_t params;
        int partition_cnt;
        int64_t *oldest; /* by partition: earliest first_seen, or INT64_MAX */

        sl_counter_t *m_added;
        sl_counter_t *m_replaced;
        sl_counter_t *m_removed;
        sl_counter_t *m_remove_unknown;
        sl_counter_t *m_restore_bad;
        sl_counter_t *m_batches[SL_DEBOUNCE_REASON_CNT + 1];
        sl_counter_t *m_flush_flushed; /* flush control records, by result */
        sl_counter_t *m_flush_empty;
        sl_gauge_t *m_groups;
        sl_gauge_t *m_items;
        sl_gauge_t *m_bytes;
        sl_gauge_t *m_oldest;
        sl_histogram_t *m_lateness;
        sl_histogram_t *m_batch_items;
        sl_pcap_t *c_groups; /* max_open_groups */
        sl_pcap_t *c_items;  /* max_pending_items */
        sl_pcap_t *c_bytes;  /* max_pending_bytes */
} debounce_pipeline_t;

typedef struct debounce_state_s {
        sl_debounce_t *win;
        debounce_pipeline_t *dp;
        int32_t partition;
        int64_t catchup_until_ms; /* groups due before the rebuild ended */
        /* Paces them, a token per item (tbucket.h, on the monotonic clock
         * in ms). */
        sl_tbucket_t catchup;
        int64_t oldest_at_ms;  /* last refresh of dp->oldest[partition] */
        size_t groups_counted; /* what this partition added to the gauges */
        size_t items_counted;
        size_t bytes_counted;
} debounce_state_t;

static debounce_pipeline_t *dp_of(sl_task_t *t) {
        return t->pl->op_data;
}

/* ------------------------------------------------------------------ */
/* Gauges: each partition adds its delta to the pipeline's gauges.      */

static void oldest_publish(debounce_pipeline_t *dp, int64_t now) {
        int64_t oldest = INT64_MAX;
        for (int p = 0; p < dp->partition_cnt; p++)
                if (dp->oldest[p] < oldest)
                        oldest = dp->oldest[p];
        sl_gauge_set(dp->m_oldest,
                     oldest == INT64_MAX
                         ? 0.0
                         : (double)SL_MAX(0, now - oldest) / 1000.0);
}

static void debounce_update_gauges(sl_task_t *t, int64_t now, int force) {
        debounce_state_t *st = t->state_data;
        debounce_pipeline_t *dp = st->dp;
        size_t g = sl_debounce_groups(st->win);
        size_t n = sl_debounce_items(st->win);
        size_t b = sl_debounce_bytes(st->win);

        sl_gauge_add_owner(dp->m_groups,
                           (double)g - (double)st->groups_counted);
        sl_gauge_add_owner(dp->m_items, (double)n - (double)st->items_counted);
        sl_gauge_add_owner(dp->m_bytes, (double)b - (double)st->bytes_counted);
        sl_pcap_add(dp->c_groups, (int64_t)g - (int64_t)st->groups_counted);
        sl_pcap_add(dp->c_items, (int64_t)n - (int64_t)st->items_counted);
        sl_pcap_add(dp->c_bytes, (int64_t)b - (int64_t)st->bytes_counted);
        st->groups_counted = g;
        st->items_counted = n;
        st->bytes_counted = b;
        /* The oldest item is O(groups) to find: at most every 500 ms
         * (at once when the partition has emptied). */
        if (force || n == 0 || dp->oldest[st->partition] == INT64_MAX ||
            now - st->oldest_at_ms >= SL_DEBOUNCE_GAUGE_MS / 2) {
                dp->oldest[st->partition] =
                    n ? sl_debounce_oldest(st->win) : INT64_MAX;
                st->oldest_at_ms = now;
                oldest_publish(dp, now);
        }
}

/* ------------------------------------------------------------------ */
/* Pipeline and partition state.                                       */

/* A librdkafka property of the producer as [kafka] sets it (or its
 * default), or dflt. */
static long long kafka_conf_ll(rd_kafka_conf_t *kc, const char *name,
                               long long dflt) {
        char v[32];
        size_t vs = sizeof(v);
        if (!kc || rd_kafka_conf_get(kc, name, v, &vs) != RD_KAFKA_CONF_OK)
                return dflt;
        return atoll(v);
}

/* Chunk records stay at half of what the changelog takes (its
 * max.message.bytes and the producers' message.max.bytes,
 * sl_pipeline_max_bytes) and of what the producer puts in one batch
 * (batch.size), and at most SL_DEBOUNCE_CHUNK_MAX: an item that does not
 * fit is an item record, which is refused at once if it must (too-large),
 * where a chunk refused at the commit costs an abort before it is written
 * as item records. */
static size_t debounce_chunk_max(sl_pipeline_t *pl) {
        char errstr[256];
        rd_kafka_conf_t *kc = sl_conf_rdkafka(sl_pipeline_sluice_conf(pl),
                                              errstr, sizeof(errstr));
        long long m = SL_MIN(sl_pipeline_max_bytes(pl, pl->conf->changelog),
                             kafka_conf_ll(kc, "batch.size", 1000000));
        if (kc)
                rd_kafka_conf_destroy(kc);
        return (size_t)SL_MAX(1, SL_MIN(m / 2, SL_DEBOUNCE_CHUNK_MAX));
}

/* The pipeline's series (labelled pipeline="<name>"). */
static const sl_metric_def_t debounce_metrics[] = {
    SL_METRICS_COUNTER(debounce_pipeline_t, m_added,
                       "sluice_debounce_items_added_total",
                       "Items that joined a pending group (new item ids)."),
    SL_METRICS_COUNTER(
        debounce_pipeline_t, m_replaced, "sluice_debounce_items_replaced_total",
        "Upserts of a pending item (payload replaced, first-seen kept)."),
    SL_METRICS_COUNTER(debounce_pipeline_t, m_removed,
                       "sluice_debounce_items_removed_total",
                       "Pending items removed by a null-value record."),
    SL_METRICS_COUNTER(debounce_pipeline_t, m_remove_unknown,
                       "sluice_debounce_remove_unknown_total",
                       "Removals of items that were not pending (harmless)."),
    SL_METRICS_COUNTER(
        debounce_pipeline_t, m_restore_bad,
        "sluice_changelog_bad_records_total",
        "Changelog records that could not be decoded (skipped)."),
    SL_METRICS_COUNTER_L(
        debounce_pipeline_t, m_flush_flushed,
        "sluice_debounce_flush_requests_total",
        "Flush control records read, by result (flushed: the group's items "
        "went out; empty: the group was not open).",
        "result", "flushed"),
    SL_METRICS_COUNTER_L(debounce_pipeline_t, m_flush_empty,
                         "sluice_debounce_flush_requests_total", "", "result",
                         "empty"),
    SL_METRICS_GAUGE(debounce_pipeline_t, m_groups,
                     "sluice_debounce_open_groups",
                     "Groups with pending items (open windows)."),
    SL_METRICS_GAUGE(debounce_pipeline_t, m_items,
                     "sluice_debounce_pending_items",
                     "Items waiting in open groups."),
    SL_METRICS_GAUGE(debounce_pipeline_t, m_bytes,
                     "sluice_debounce_pending_bytes",
                     "Bytes of input the open groups hold: the items' payloads "
                     "and ids, the groups' keys."),
    SL_METRICS_GAUGE(
        debounce_pipeline_t, m_oldest, "sluice_debounce_oldest_pending_seconds",
        "Age of the oldest pending item (now minus its first-seen time)."),
};

static int debounce_pipeline_init(sl_pipeline_t *pl, char *errstr,
                                  size_t errstr_size) {
        const sl_pipeline_conf_t *pc = pl->conf;
        const sl_debounce_conf_t *dc = sl_debounce_conf(pc);
        sl_metrics_t *m = sl_pipeline_metrics_registry(pl);
        debounce_pipeline_t *dp;
        const char *name = pc->name;

        if (!pc->output || dc->idle_ms <= 0 || dc->max_age_ms <= 0 ||
            dc->max_items < 1 || dc->max_bytes < 1) {
                snprintf(errstr, errstr_size,
                         "pipeline %s: debounce needs output, idle, max_age, "
                         "max_items and max_bytes",
                         name);
                return -1;
        }
        dp = sl_calloc(1, sizeof(*dp));
        dp->params.idle_ms = dc->idle_ms;
        dp->params.max_age_ms = dc->max_age_ms;
        dp->params.max_items = dc->max_items;
        dp->params.max_bytes = dc->max_bytes;
        dp->params.salt = pc->name;
        dp->params.chunk_max = debounce_chunk_max(pl);
        dp->partition_cnt = pl->partition_cnt;
        dp->oldest = sl_calloc((size_t)SL_MAX(1, pl->partition_cnt),
                               sizeof(*dp->oldest));
        for (int p = 0; p < pl->partition_cnt; p++)
                dp->oldest[p] = INT64_MAX;

        sl_metrics_register(m, debounce_metrics,
                            SL_ARRAY_SIZE(debounce_metrics), dp, name);
        for (int r = SL_DEBOUNCE_IDLE; r <= SL_DEBOUNCE_REASON_CNT; r++)
                dp->m_batches[r] = sl_metrics_counter(
                    m, "sluice_debounce_batches_total",
                    "Batches flushed, by flush reason.", "pipeline", name,
                    "reason", sl_debounce_reason_str(r), NULL);
        dp->m_lateness = sl_metrics_histogram(
            m, "sluice_debounce_flush_lateness_seconds",
            "Flush deadline to batch produced (before the transaction "
            "commits).",
            sl_metrics_buckets_latency, sl_metrics_buckets_latency_cnt,
            "pipeline", name, NULL);
        dp->m_batch_items = sl_metrics_histogram(
            m, "sluice_debounce_batch_items", "Items per flushed batch.",
            sl_metrics_buckets_size, sl_metrics_buckets_size_cnt, "pipeline",
            name, NULL);
        dp->c_groups = sl_pipeline_cap(pl, "max_open_groups", "open groups",
                                       dc->max_open_groups);
        dp->c_items = sl_pipeline_cap(pl, "max_pending_items", "pending items",
                                      dc->max_pending_items);
        dp->c_bytes = sl_pipeline_cap(pl, "max_pending_bytes", "bytes pending",
                                      dc->max_pending_bytes);
        pl->op_data = dp;
        return 0;
}

static void debounce_pipeline_destroy(sl_pipeline_t *pl) {
        debounce_pipeline_t *dp = pl->op_data;
        if (!dp)
                return;
        free(dp->oldest);
        free(dp);
        pl->op_data = NULL;
}

/* The window state's changelog writer (debounce.h): a record it must
 * write dooms the transaction when Kafka refuses it (memory went ahead);
 * others are refused back to it.  A record with a seq is known across
 * replays by its key and seq, so one the broker refused is refused up
 * front after the abort and rebuild (refused.h), and the state writes it
 * another way or drops its item (debounce_dropped). */
static int debounce_write(void *opaque, const void *key, size_t keylen,
                          const void *value, size_t len, int64_t seq,
                          int must) {
        sl_task_t *t = opaque;
        uint64_t origin = t->origin;
        int r;
        if (seq >= 0)
                sl_task_origin(t, key, keylen, seq);
        if (must) {
                r = sl_task_changelog(t, key, keylen, value, len);
        } else {
                r = sl_task_produce(t, t->pl->conf->changelog, t->partition,
                                    key, keylen, value, len, NULL);
                if (r == -RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        /* Not the record's fault: no DLQ for it, the
                         * transaction aborts and the work is redone. */
                        sl_task_abort(t, "changelog record refused: the "
                                         "producer queue is full");
                        r = 0;
                }
        }
        t->origin = origin;
        return r;
}

/* An item whose changelog record Kafka refused even alone, at the seal:
 * it left the state; to the DLQ (cut to fit, sl_task_dlq_send) with
 * reason too-large (or changelog-refused for another refusal), its first
 * sighting as the source. */
static void debounce_dropped(void *opaque, const void *key, size_t keylen,
                             const sl_debounce_item_t *it, int err) {
        sl_task_t *t = opaque;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const char *reason = err == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                 ? "too-large"
                                 : "changelog-refused";
        char detail[320], k[100];
        rd_kafka_headers_t *hdrs;

        snprintf(detail, sizeof(detail),
                 "changelog record of the item refused: %s",
                 err == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                     ? sl_task_refused_why(t)
                     : rd_kafka_err2str((rd_kafka_resp_err_t)-err));
        sl_task_dlq_count(t, reason);
        sl_log(LOG_WARNING, "DEBOUNCE",
               "%s [%d] @%" PRId64 ": item of '%s': %s: %s", pc->name,
               t->partition, it->seq, sl_escape(key, keylen, k, sizeof(k)),
               reason, detail);
        if (!pc->dlq)
                return;
        hdrs = rd_kafka_headers_new(6);
        rd_kafka_header_add(hdrs, "sluice-item", -1, it->id,
                            (ssize_t)it->idlen);
        sl_task_dlq_headers(t, hdrs, reason, detail, it->seq);
        sl_task_dlq_send(t, key, keylen, it->payload, it->payload_len, NULL,
                         hdrs);
}

static void *debounce_state_new(sl_task_t *t) {
        debounce_state_t *st = sl_calloc(1, sizeof(*st));
        debounce_pipeline_t *dp = dp_of(t);
        /* The input may have grown since start (parts.h). */
        if (t->partition >= dp->partition_cnt) {
                dp->oldest = sl_realloc(dp->oldest, sizeof(*dp->oldest) *
                                                        (t->partition + 1));
                for (int p = dp->partition_cnt; p <= t->partition; p++)
                        dp->oldest[p] = INT64_MAX;
                dp->partition_cnt = t->partition + 1;
        }
        st->dp = dp;
        st->partition = t->partition;
        st->win = sl_debounce_new(&st->dp->params);
        {
                sl_debounce_writer_t w = {debounce_write, debounce_dropped, t};
                sl_debounce_set_writer(st->win, &w);
        }
        return st;
}

/* The gauges are pipeline-wide: a destroyed partition takes its share. */
static void debounce_state_destroy(void *state) {
        debounce_state_t *st = state;
        debounce_pipeline_t *dp;
        if (!st)
                return;
        dp = st->dp;
        sl_gauge_add_owner(dp->m_groups, -(double)st->groups_counted);
        sl_gauge_add_owner(dp->m_items, -(double)st->items_counted);
        sl_gauge_add_owner(dp->m_bytes, -(double)st->bytes_counted);
        sl_pcap_add(dp->c_groups, -(int64_t)st->groups_counted);
        sl_pcap_add(dp->c_items, -(int64_t)st->items_counted);
        sl_pcap_add(dp->c_bytes, -(int64_t)st->bytes_counted);
        if (st->partition >= 0 && st->partition < dp->partition_cnt) {
                dp->oldest[st->partition] = INT64_MAX;
                oldest_publish(dp, sl_now_ms());
        }
        sl_debounce_destroy(st->win);
        free(st);
}

/* ------------------------------------------------------------------ */
/* Rebuild.                                                            */

static void debounce_restore_bad(sl_task_t *t, const rd_kafka_message_t *m,
                                 const char *why) {
        sl_counter_inc(dp_of(t)->m_restore_bad);
        sl_log(LOG_WARNING, "REBUILD",
               "%s [%d] @%" PRId64 ": changelog record skipped: %s",
               t->pl->conf->name, t->partition, m->offset, why);
}

static void debounce_restore(sl_task_t *t, const rd_kafka_message_t *m) {
        debounce_state_t *st = t->state_data;
        const char *why = NULL;
        if (sl_debounce_restore_record(st->win, m->key, m->key_len, m->payload,
                                       m->len, sl_task_now_ms(t), &why) < 0)
                debounce_restore_bad(t, m, why);
}

/* Before the commit takes the input offsets: the items this transaction
 * added go in, one chunk record per group. */
static void debounce_seal(sl_task_t *t) {
        debounce_state_t *st = t->state_data;
        sl_debounce_seal(st->win);
        debounce_update_gauges(t, sl_task_now_ms(t), 0);
}

/* Arms the wake-up for the next deadline, and for the gauge refresh while
 * items wait. */
static void debounce_arm(sl_task_t *t, int64_t now) {
        debounce_state_t *st = t->state_data;
        int64_t next = sl_debounce_next_due(st->win);
        sl_task_wake_at(t, 0);
        if (next == INT64_MAX)
                return;
        next = SL_MIN(next, now + SL_DEBOUNCE_GAUGE_MS);
        sl_task_wake_at(t, next > 0 ? next : 1);
}

static void debounce_restored(sl_task_t *t) {
        debounce_state_t *st = t->state_data;
        int64_t now = sl_now_ms();
        sl_rate_t cr = sl_tbucket_pace_rate((double)t->pl->conf->catchup_rate);
        /* What fell due while nobody owned the partition flushes at the
         * bounded catch-up rate (counted in items); later deadlines flush
         * unthrottled. */
        st->catchup_until_ms = now;
        sl_tbucket_init(&st->catchup, &cr, sl_mono_us() / 1000);
        /* Look the output up now: a missing topic is reported before the
         * first batch, and the producer knows the topic's partitions
         * before a batch waits on them inside a commit. */
        if (sl_task_topic_partitions(t, t->pl->conf->output) == 0)
                sl_log(LOG_WARNING, "DEBOUNCE",
                       "%s [%d]: output topic %s does not exist; batches "
                       "will go to the DLQ",
                       t->pl->conf->name, t->partition, t->pl->conf->output);
        debounce_update_gauges(t, now, 1);
        debounce_arm(t, now);
}

/* ------------------------------------------------------------------ */
/* Flushing.                                                           */

/* A batch the output refused goes to the DLQ (same partition), one
 * record per item as it came in (key the group, value the payload, the
 * item id in sluice-item, its first sighting as the source offset), cut
 * to fit when it must be (sl_task_dlq_send): reason too-large when it was
 * too large even as a batch of that item alone, else output-refused. */
static void debounce_batch_dlq(sl_task_t *t, const sl_debounce_batch_t *b,
                               size_t len, int err) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const char *reason = err == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                 ? "too-large"
                                 : "output-refused";
        char detail[320], key[100];

        snprintf(detail, sizeof(detail), "batch %s: %s", b->id,
                 err == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                     ? sl_task_refused_why(t)
                     : rd_kafka_err2str((rd_kafka_resp_err_t)-err));
        sl_log(LOG_WARNING, "DEBOUNCE",
               "%s [%d]: batch %s of '%s' (%zu items, %zu bytes): %s: %s",
               pc->name, t->partition, b->id,
               sl_escape(b->key, b->keylen, key, sizeof(key)), b->cnt, len,
               reason, detail);
        for (size_t i = 0; i < b->cnt; i++) {
                const sl_debounce_item_t *it = &b->items[i];
                rd_kafka_headers_t *hdrs;
                sl_task_dlq_count(t, reason);
                if (!pc->dlq)
                        continue;
                hdrs = rd_kafka_headers_new(8);
                rd_kafka_header_add(hdrs, "sluice-item", -1, it->id,
                                    (ssize_t)it->idlen);
                rd_kafka_header_add(hdrs, "sluice-batch-id", -1, b->id, -1);
                sl_task_dlq_headers(t, hdrs, reason, detail, it->seq);
                sl_task_dlq_send(t, b->key, b->keylen, it->payload,
                                 it->payload_len, NULL, hdrs);
        }
}

/* Produces one batch and tombstones its items, in the open transaction. */
static void debounce_emit(sl_task_t *t, sl_debounce_batch_t *b, int64_t now) {
        debounce_state_t *st = t->state_data;
        debounce_pipeline_t *dp = st->dp;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *hdrs;
        char due[32];
        void *value;
        size_t len;
        int r;

        if (sl_debounce_conf(pc)->output_format == SL_OUTPUT_PROTOBUF)
                value = sl_debounce_batch_protobuf(b, &len);
        else
                value = sl_debounce_batch_json(b, &len);
        hdrs = rd_kafka_headers_new(2);
        rd_kafka_header_add(hdrs, "sluice-batch-id", -1, b->id, -1);
        snprintf(due, sizeof(due), "%" PRId64, b->due_ms);
        rd_kafka_header_add(hdrs, "sluice-due", -1, due, -1);
        /* The batch id names this work across replays (its flushed_at
         * does not). */
        sl_task_origin(t, b->id, strlen(b->id), 0);
        r = sl_task_produce(t, pc->output, RD_KAFKA_PARTITION_UA, b->key,
                            b->keylen, value, len, hdrs);
        if (r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE && b->cnt > 1) {
                /* Too large for the producer: two halves, each a batch
                 * with its own id (the same halves after a replay). */
                sl_debounce_batch_t *rest;
                free(value);
                sl_debounce_batch_split(st->win, b, &rest);
                sl_log(LOG_NOTICE, "DEBOUNCE",
                       "%s [%d]: batch of %zu bytes too large for %s: split "
                       "into %zu + %zu items",
                       pc->name, t->partition, len, pc->output, b->cnt,
                       rest->cnt);
                debounce_emit(t, b, now);
                debounce_emit(t, rest, now);
                return;
        }
        if (r < 0)
                debounce_batch_dlq(t, b, len, r);
        else
                sl_counter_inc_owner(t->pl->metrics->records_out);
        free(value);

        /* The items' tombstones went out as they left the state. */
        if (b->reason >= SL_DEBOUNCE_IDLE &&
            b->reason <= SL_DEBOUNCE_REASON_CNT)
                sl_counter_inc(dp->m_batches[b->reason]);
        sl_histogram_observe(dp->m_lateness,
                             (double)SL_MAX(0, now - b->due_ms) / 1000.0);
        sl_histogram_observe(dp->m_batch_items, (double)b->cnt);
        sl_debounce_batch_free(b);
}

/* Flushes group key while it is due (it is full, or its deadline passed). */
static int debounce_flush_group(sl_task_t *t, const void *key, size_t keylen,
                                int64_t now) {
        debounce_state_t *st = t->state_data;
        sl_debounce_batch_t *b;
        int n = 0;
        while (sl_debounce_take(st->win, key, keylen, now, &b)) {
                debounce_emit(t, b, now);
                n++;
        }
        return n;
}

static void debounce_wake(sl_task_t *t, int64_t now) {
        debounce_state_t *st = t->state_data;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        int64_t rate = pc->catchup_rate;
        size_t flushed = 0;
        int limited = 0, paced = 0;
        sl_debounce_batch_t *b;
        /* Catch-up: at most catchup_rate items per second, in bursts of a
         * tenth of a second.  A batch starts on a whole token and is
         * charged all its items (tbucket.h: a debt the refill pays back),
         * since its size is known only once it is taken. */
        sl_rate_t cr = sl_tbucket_pace_rate((double)rate);
        int64_t mono_ms = rate > 0 ? sl_mono_us() / 1000 : 0;

        for (;;) {
                int64_t due = sl_debounce_next_due(st->win);
                int catchup;
                if (due > now)
                        break;
                catchup = rate > 0 && due <= st->catchup_until_ms;
                if (flushed >= SL_DEBOUNCE_FLUSH_MAX) {
                        limited = 1;
                        break;
                }
                if (catchup && !sl_tbucket_ready(&st->catchup, &cr, mono_ms)) {
                        limited = paced = 1;
                        break;
                }
                if (!sl_debounce_take(st->win, NULL, 0, now, &b))
                        break;
                flushed += b->cnt;
                if (catchup)
                        sl_tbucket_charge(&st->catchup, &cr, mono_ms,
                                          (double)b->cnt);
                debounce_emit(t, b, now);
        }
        /* Deadlines passed: lateness is the commit, not the commit
         * interval; the commit waits for deadlines just behind these
         * (sl_task_commit_linger).  (Batches cut by max_items or max_bytes
         * in the input path wait for the regular commit: asking for a
         * commit after each of them would turn a backlog into thousands
         * of transactions.) */
        if (flushed && limited)
                sl_task_commit_soon(t);
        else if (flushed)
                sl_task_commit_linger(t);
        debounce_update_gauges(t, now, 0);
        if (limited) {
                /* More is due: come back when the budget allows (at the
                 * next token, and a millisecond more, as ever: now and the
                 * monotonic clock are not read at the same moment). */
                int64_t wait_ms = 0;
                if (paced)
                        wait_ms =
                            sl_tbucket_next_ms(&st->catchup, &cr, mono_ms) -
                            mono_ms + 1;
                sl_task_wake_at(t, 0);
                sl_task_wake_at(t, now + wait_ms);
        } else {
                debounce_arm(t, now);
        }
}

/* ------------------------------------------------------------------ */
/* Input.                                                              */

static void debounce_remove(sl_task_t *t, const rd_kafka_message_t *m,
                            const void *id, size_t idlen, int64_t now) {
        debounce_state_t *st = t->state_data;
        debounce_pipeline_t *dp = st->dp;

        /* A group already due flushes first: the removal comes too late
         * for it.  The state writes what the removal needs. */
        debounce_flush_group(t, m->key, m->key_len, now);
        if (!sl_debounce_remove(st->win, m->key, m->key_len, id, idlen)) {
                sl_counter_inc(dp->m_remove_unknown);
                return;
        }
        sl_counter_inc(dp->m_removed);
        debounce_update_gauges(t, now, 0);
}

/* A flush control record (debounce.h): what of the group is due goes out
 * first with its own reason, then every pending item, in batches, with
 * reason requested.  Nothing of the record is kept. */
static void debounce_control_flush(sl_task_t *t, const rd_kafka_message_t *m,
                                   int64_t now) {
        debounce_state_t *st = t->state_data;
        debounce_pipeline_t *dp = st->dp;
        sl_debounce_batch_t *b;
        int n = debounce_flush_group(t, m->key, m->key_len, now);

        while (
            sl_debounce_take_requested(st->win, m->key, m->key_len, now, &b)) {
                debounce_emit(t, b, now);
                n++;
        }
        if (!n) {
                sl_counter_inc(dp->m_flush_empty);
                return;
        }
        sl_counter_inc(dp->m_flush_flushed);
        debounce_update_gauges(t, now, 0);
        /* Someone asked for it: lateness is the commit, not the commit
         * interval. */
        sl_task_commit_soon(t);
}

/* Caps (task.h): a new group needs room for one more group, a new item
 * for one more item, and the record for what it adds to the bytes: its
 * payload (an upsert: its growth), a new item's id and a new group's key.
 * Returns 1 when the record must wait. */
static int debounce_over_cap(sl_task_t *t, int open,
                             const sl_debounce_item_t *old, size_t keylen,
                             size_t idlen, size_t len) {
        debounce_pipeline_t *dp = dp_of(t);
        int64_t grow = (int64_t)len - (old ? (int64_t)old->payload_len : 0) +
                       (old ? 0 : (int64_t)idlen) +
                       (open ? 0 : (int64_t)keylen);
        sl_pcap_t *c = NULL;
        if (!open && !sl_pcap_room(dp->c_groups, 1))
                c = dp->c_groups;
        else if (!old && !sl_pcap_room(dp->c_items, 1))
                c = dp->c_items;
        else if (grow > 0 && !sl_pcap_room(dp->c_bytes, grow))
                c = dp->c_bytes;
        if (!c)
                return 0;
        sl_task_input_full(t, c);
        return 1;
}

/* Reads m's control and sluice-item headers, in one pass over the
 * record's headers (rd_kafka_header_get_all by index is a lookup; a
 * by-name rd_kafka_header_get(idx) walks the list from its start every
 * call, so counting a name that way is quadratic in the header count).
 * A control record is handled here (flushed, or to the DLQ) and 1
 * returned; otherwise 0, with *nids the number of sluice-item headers and
 * *id, *idlen the first one's value (librdkafka's, valid while m is). */
static int debounce_read_headers(sl_task_t *t, const rd_kafka_message_t *m,
                                 int64_t now, const void **id, size_t *idlen,
                                 int *nids) {
        rd_kafka_headers_t *hdrs = NULL;
        const void *ctl = NULL;
        size_t ctllen = 0;
        int nctl = 0;
        const char *reason = NULL;
        char detail[256];

        if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
                return 0;
        for (size_t i = 0;; i++) {
                const char *name;
                const void *v;
                size_t sz;
                if (rd_kafka_header_get_all(hdrs, i, &name, &v, &sz))
                        break;
                if (!strcmp(name, SL_DEBOUNCE_CONTROL_HEADER)) {
                        if (!nctl++) {
                                ctl = v;
                                ctllen = v ? sz : 0;
                        }
                } else if (!strcmp(name, "sluice-item")) {
                        if (!(*nids)++) {
                                *id = v;
                                *idlen = v ? sz : 0;
                        }
                }
        }
        if (nctl) {
                if (sl_debounce_check_control(
                        m->key, m->key_len, nctl, ctl, ctllen, &reason, detail,
                        sizeof(detail)) == SL_DEBOUNCE_FLUSH)
                        debounce_control_flush(t, m, now);
                else
                        sl_task_dlq(t, m, reason, detail);
                return 1;
        }
        return 0;
}

static void debounce_input(sl_task_t *t, const rd_kafka_message_t *m) {
        debounce_state_t *st = t->state_data;
        debounce_pipeline_t *dp = st->dp;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const void *id = NULL;
        size_t idlen = 0;
        int nids = 0, r, found, open;
        char idbuf[48], detail[256];
        const char *reason = NULL;
        sl_debounce_item_t old;
        int64_t now = sl_task_now_ms(t);

        if (debounce_read_headers(t, m, now, &id, &idlen, &nids))
                return;
        switch (sl_debounce_check(
            m->key, m->key_len, nids, id, idlen, m->payload == NULL, m->len,
            pc->max_record_bytes, &reason, detail, sizeof(detail))) {
        case SL_DEBOUNCE_REFUSE:
                sl_task_dlq(t, m, reason, detail);
                return;
        case SL_DEBOUNCE_REMOVE:
                debounce_remove(t, m, id, idlen, now);
                return;
        case SL_DEBOUNCE_UPSERT:
                break;
        case SL_DEBOUNCE_FLUSH: /* only from sl_debounce_check_control() */
                sl_assert(!"sl_debounce_check() said flush");
        }
        if (!nids) {
                int n = snprintf(idbuf, sizeof(idbuf), "%" PRId32 "-%" PRId64,
                                 m->partition, m->offset);
                id = idbuf;
                idlen = (size_t)n;
        }

        /* A group already due flushes before this record joins it (and
         * the caps see the room it made). */
        if (debounce_flush_group(t, m->key, m->key_len, now))
                debounce_update_gauges(t, now, 0);

        found = sl_debounce_find(st->win, m->key, m->key_len, id, idlen, &old);
        open = sl_debounce_group(st->win, m->key, m->key_len, NULL);
        if (debounce_over_cap(t, open, found ? &old : NULL, m->key_len, idlen,
                              m->len))
                return;

        /* The state writes the item's changelog record now (an item
         * record) or at the seal (in a chunk); when Kafka refuses the one
         * it writes now, nothing changed. */
        r = sl_debounce_upsert(st->win, m->key, m->key_len, id, idlen,
                               m->payload, m->len, now, m->offset);
        if (r < 0) {
                int e = sl_debounce_write_error(st->win);
                if (e == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
                        snprintf(detail, sizeof(detail),
                                 "changelog record of the item: %s",
                                 sl_task_refused_why(t));
                else if (e)
                        snprintf(detail, sizeof(detail),
                                 "changelog record of the item refused: %s",
                                 rd_kafka_err2str((rd_kafka_resp_err_t)-e));
                else
                        snprintf(detail, sizeof(detail), "item too large");
                sl_task_dlq(t, m,
                            e == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                ? "too-large"
                            : e ? "changelog-refused"
                                : "oversize",
                            detail);
                return;
        }
        sl_counter_inc_owner(r ? dp->m_replaced : dp->m_added);

        /* Full (max_items, max_bytes): flush now. */
        debounce_flush_group(t, m->key, m->key_len, now);
        debounce_update_gauges(t, now, 0);
        {
                /* An earlier arming wins: this only ever brings the
                 * wake-up forward (the gauge refresh included). */
                int64_t next = sl_debounce_due_bound(st->win);
                if (next != INT64_MAX)
                        sl_task_wake_at(
                            t, SL_MAX(1, SL_MIN(next,
                                                now + SL_DEBOUNCE_GAUGE_MS)));
        }
}

/* The API's lookup of one group (describe.h: the JSON shape), or NULL
 * when the group is not open here. */
static struct json_t *debounce_describe(sl_task_t *t, const void *key,
                                        size_t keylen) {
        debounce_state_t *st = t->state_data;
        return sl_describe_group(st->win, key, keylen, t->partition,
                                 sl_now_ms());
}

const sl_op_t sl_op_debounce = {
    .name = "debounce",
    .pipeline_init = debounce_pipeline_init,
    .pipeline_destroy = debounce_pipeline_destroy,
    .state_new = debounce_state_new,
    .state_destroy = debounce_state_destroy,
    .restore = debounce_restore,
    .restored = debounce_restored,
    .input = debounce_input,
    .wake = debounce_wake,
    .seal = debounce_seal,
    .describe = debounce_describe,
    .wake_is_deadline = 1,
};
