/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_throttle.c — the throttle operator: a token bucket per key, and a
 * durable FIFO backlog per key in the overflow topic for what is over the
 * key's rate, drained later at that rate (docs/throttle.md).
 *
 * STATE MODEL
 *
 *   changelog key "c/"            sluice.v1.ThrottleCheckpoint: from_offset,
 *                                 the smallest overflow offset the
 *                                 partition's backlog still needs (never
 *                                 moves back); written at commit when it
 *                                 moved
 *   changelog key "k/" + key      sluice.v1.ThrottleKey: drained_to
 *                                 (overflow offsets below it are done for
 *                                 the key), the bucket level and its time;
 *                                 written at commit for every key whose
 *                                 record is stale
 *   tombstone "k/" + key          written when sl_backlog_sweep() drops an
 *                                 idle key (no backlog, full bucket,
 *                                 drained_to <= checkpoint), in the same
 *                                 transaction as a "c/" record at least as
 *                                 new as the checkpoint of the sweep
 *   overflow record               key = throttle key, value =
 *                                 sluice.v1.OverflowRecord (payload,
 *                                 headers, deadline, source offset), to the
 *                                 task's partition; the backlog's payloads
 *                                 live only there
 *
 * Rebuild: the changelog is applied in order ("c/" sets the checkpoint,
 * "k/" restores a key, a tombstone resets it to a fresh key), then the
 * overflow partition is read from the checkpoint to its end captured then
 * (rebuild_source / restore_source): every record at or past its key's
 * drained_to is buffered again, in offset order.  Then the wake-up is
 * armed and the input resumes.
 *
 * COMMIT ORDER (backlog.h)
 *
 * Overflow appends are produced with sl_task_produce_tracked(); the
 * delivery report gives each its offset (sl_backlog_acked).  Before each
 * commit the runtime flushes the producer until the report of every
 * tracked record of the transaction has come (the other records are
 * waited for by the commit itself), then calls precommit(): the "c/"
 * record if the checkpoint moved, the "k/" records of the dirty keys, then
 * the sweep's tombstones.  Outputs, DLQ records, overflow appends, these
 * changelog records and the input offsets all commit in one transaction, so a
 * crash at any moment replays from a consistent state: a message is either sent
 * and its key's drained_to past it, or neither.
 *
 * DRAINING
 *
 * One wake-up per partition, armed at the backlog's next due time.  Each
 * wake polls the backlog: SEND produces the unpacked OverflowRecord to the
 * output (original key, payload and headers), EXPIRE sends it to the DLQ
 * (reason expired), FETCH re-reads the overflow partition from the head's
 * offset (sl_task_fetch); what is read comes back through fetched() into
 * sl_backlog_fill(), which caches the parked heads and, while the cache
 * admits them, the following messages of every key.  A parked key never
 * holds up another key.  The fetch stops at the partition's end once no key
 * is parked; a fetch that makes no progress for a while is restarted.
 *
 * RATES
 *
 * The rates topic is a global table (table_topic / table): every instance
 * reads it whole, continuously, into one sl_rates_t per pipeline.  A change
 * wakes every running partition at once, so it takes effect at the next
 * decision.  A malformed record is logged and counted, never applied.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "describe.h"
#include "log.h"
#include "metrics.h"
#include "opdef_throttle.h"
#include "rates.h"
#include "recsize.h"
#include "sluice.pb-c.h"
#include "task.h"
#include "util.h"
#include "varint.h"

/* Backlog items handled per wake-up before yielding to the loop. */
#define SL_THROTTLE_POLL_MAX 10000
/* Idle keys visited per sweep. */
#define SL_THROTTLE_SWEEP_MAX 4096
/* How often idle keys are swept while nothing else commits. */
#define SL_THROTTLE_MAINT_MS 5000
/* A fetch that delivers nothing for this long while keys are parked is
 * restarted. */
#define SL_THROTTLE_FETCH_STALL_MS 5000
/* A fetch with no parked key stops after this many records in a row that
 * the cache did not take, or this many it refused for lack of room (what
 * follows is needed later still: reading on only re-reads it again). */
#define SL_THROTTLE_PREFETCH_IDLE 2000
#define SL_THROTTLE_PREFETCH_FULL 4
/* A head asked for behind the re-read cursor waits at most this long for
 * the heads ahead of it before the cursor wraps back to it. */
#define SL_THROTTLE_WRAP_MS 200

/* Operator bits of a key (sl_backlog_key_opflags). */
#define OPF_HAS_RECORD   1u /* a "k/" record is (or will be) in the changelog */
#define OPF_HEAD_FETCHED 2u /* the head's payload was re-read */

#define CKPT_KEY     "c/"
#define CKPT_KEY_LEN 2

typedef struct throttle_pipeline_s {
        sl_rates_t *rates;
        sl_backlog_cache_t *cache;

        sl_counter_t *m_forwarded;
        sl_counter_t *m_drained;
        sl_counter_t *m_appended;
        sl_counter_t *m_expired;
        sl_counter_t *m_cache_hits;
        sl_counter_t *m_refetches;
        sl_counter_t *m_overflow_reads;
        sl_counter_t *m_rates_rejected;
        sl_counter_t *m_rates_applied;
        sl_counter_t *m_restore_bad;
        sl_counter_t *m_dlq_expired;
        sl_counter_t *m_dlq_refused;
        sl_counter_t *m_dlq_too_large;
        sl_counter_t *m_lost;
        sl_gauge_t *m_backlog;
        sl_gauge_t *m_backlog_bytes;
        sl_gauge_t *m_keys;
        sl_gauge_t *m_index_bytes;
        sl_gauge_t *m_cache_bytes;
        sl_pcap_t *c_keys;      /* max_backlog_keys */
        sl_pcap_t *c_msgs;      /* max_backlog_messages */
        sl_pcap_t *c_key_bytes; /* max_key_bytes */
        uint64_t rates_full;    /* rates records refused: the table full */
} throttle_pipeline_t;

typedef struct throttle_state_s {
        throttle_pipeline_t *tp;
        sl_backlog_t *bl;
        int64_t ckpt_restored; /* "c/" read at rebuild, 0 if none */
        int64_t ckpt_written;  /* last "c/" produced or read, -1 if none */
        int fetching;          /* sl_task_fetch() in progress */
        int64_t fetch_pos;     /* next offset the fetch delivers */
        int64_t fetch_progress_ms;
        /* The re-read cursor only moves forward while a parked head lies
         * ahead of it (ahead_max: the largest offset asked for at or past
         * fetch_pos, -1 none); heads asked for behind it wait for the wrap
         * to behind_min (-1 none), once nothing parked lies ahead or
         * SL_THROTTLE_WRAP_MS after the first of them asked. */
        int64_t ahead_max;
        int64_t behind_min, behind_max, behind_since_ms;
        uint64_t wraps;
        /* Heads whose overflow record was gone, not yet logged. */
        uint64_t lost_unlogged;
        int64_t lost_lo, lost_hi, lost_logged_ms;
        uint64_t prefetch_idle; /* fills in a row the cache did not take */
        uint64_t prefetch_full; /* of which refused for lack of room */
        int64_t maint_ms;       /* last idle sweep */
        int64_t bad_logged_ms;
        /* This partition's share of the pipeline's gauges. */
        uint64_t msgs_counted, bytes_counted, keys_counted, index_counted;
        /* ... and of its caps (kept exact on the input path). */
        uint64_t keys_capped, msgs_capped, key_bytes_capped;
        sl_scratch_t pack; /* an OverflowRecord being packed */
} throttle_state_t;

static throttle_pipeline_t *tp_of(const sl_task_t *t) {
        return t->pl->op_data;
}

static throttle_state_t *st_of(const sl_task_t *t) {
        return t->state_data;
}

/* ------------------------------------------------------------------ */
/* Small helpers.                                                      */

/* Brings the caps up to date with the backlog (O(1)). */
static void throttle_count_caps(sl_task_t *t) {
        throttle_state_t *st = st_of(t);
        sl_backlog_stats_t s;
        sl_backlog_stats(st->bl, &s);
        sl_pcap_add(st->tp->c_keys, (int64_t)s.keys - (int64_t)st->keys_capped);
        sl_pcap_add(st->tp->c_msgs,
                    (int64_t)s.messages - (int64_t)st->msgs_capped);
        sl_pcap_add(st->tp->c_key_bytes,
                    (int64_t)s.key_bytes - (int64_t)st->key_bytes_capped);
        st->keys_capped = s.keys;
        st->msgs_capped = s.messages;
        st->key_bytes_capped = s.key_bytes;
}

static void throttle_update_gauges(sl_task_t *t) {
        throttle_state_t *st = st_of(t);
        throttle_pipeline_t *tp = st->tp;
        sl_backlog_stats_t s;
        sl_backlog_cache_stats_t cs;

        sl_backlog_stats(st->bl, &s);
        sl_gauge_add_owner(tp->m_backlog,
                           (double)s.messages - (double)st->msgs_counted);
        sl_gauge_add_owner(tp->m_backlog_bytes,
                           (double)s.bytes - (double)st->bytes_counted);
        sl_gauge_add_owner(tp->m_keys,
                           (double)s.keys - (double)st->keys_counted);
        st->msgs_counted = s.messages;
        st->bytes_counted = s.bytes;
        st->keys_counted = s.keys;
        sl_gauge_add_owner(tp->m_index_bytes,
                           (double)s.index_bytes - (double)st->index_counted);
        st->index_counted = s.index_bytes;
        sl_backlog_cache_stats(tp->cache, &cs);
        sl_gauge_set(tp->m_cache_bytes, (double)cs.bytes);
        throttle_count_caps(t);
}

/* Reads a varint field of a packed OverflowRecord (4: deadline_ms, 6:
 * received_ms) without unpacking it: the rebuild reads a million of these.
 * Returns 0, or -1 if the bytes are not a well-formed record with that
 * field. */
static int overflow_field(const void *data, size_t len, uint64_t field,
                          int64_t *out) {
        const uint8_t *p = data, *end = p + len;
        int found = 0;
        while (p < end) {
                uint64_t tag, v;
                if (sl_varint_get(&p, end, &tag) == -1)
                        return -1;
                switch (tag & 7) {
                case 0:
                        if (sl_varint_get(&p, end, &v) == -1)
                                return -1;
                        if ((tag >> 3) == field) {
                                *out = (int64_t)v;
                                found = 1;
                        }
                        break;
                case 1:
                        if (end - p < 8)
                                return -1;
                        p += 8;
                        break;
                case 2:
                        if (sl_varint_get(&p, end, &v) == -1 ||
                            (uint64_t)(end - p) < v)
                                return -1;
                        p += v;
                        break;
                case 5:
                        if (end - p < 4)
                                return -1;
                        p += 4;
                        break;
                default:
                        return -1;
                }
        }
        return found ? 0 : -1;
}

static int overflow_deadline(const void *data, size_t len, int64_t *out) {
        return overflow_field(data, len, 4, out);
}

/* Field 6, received_ms: when sluice read the message from the input. */
static int overflow_received(const void *data, size_t len, int64_t *out) {
        return overflow_field(data, len, 6, out);
}

/* The changelog key "k/" + key, in buf if it fits, else allocated (the
 * caller frees the result when it differs from buf). */
static char *key_record_name(const void *key, size_t keylen, char *buf,
                             size_t size, size_t *outlen) {
        char *p = keylen + 2 <= size ? buf : sl_malloc(keylen + 2);
        p[0] = 'k';
        p[1] = '/';
        if (keylen)
                memcpy(p + 2, key, keylen);
        *outlen = keylen + 2;
        return p;
}

/* Headers of an unpacked OverflowRecord as librdkafka headers (extra
 * slots for what the caller adds). */
static rd_kafka_headers_t *
overflow_headers(const Sluice__V1__OverflowRecord *rec, size_t extra) {
        rd_kafka_headers_t *h;
        if (!rec->n_headers && !extra)
                return NULL;
        h = rd_kafka_headers_new(rec->n_headers + extra);
        for (size_t i = 0; i < rec->n_headers; i++) {
                const Sluice__V1__Header *x = rec->headers[i];
                rd_kafka_header_add(
                    h, x->name ? x->name : "", -1,
                    x->null_value
                        ? NULL
                        : (x->value.data ? (const void *)x->value.data : ""),
                    x->null_value ? 0 : (ssize_t)x->value.len);
        }
        return h;
}

/* The value of an unpacked OverflowRecord as it came: NULL (length 0)
 * for a null value, whatever bytes a corrupt record carries beside the
 * flag; an empty value is "", not NULL (protobuf-c decodes empty bytes as
 * NULL data, which would go out as a null value). */
static const void *overflow_value(const Sluice__V1__OverflowRecord *rec) {
        if (rec->null_payload)
                return NULL;
        return rec->payload.data ? (const void *)rec->payload.data : "";
}

static size_t overflow_value_len(const Sluice__V1__OverflowRecord *rec) {
        return rec->null_payload ? 0 : rec->payload.len;
}

static void log_bad(sl_task_t *t, const char *what, int64_t offset) {
        throttle_state_t *st = st_of(t);
        int64_t now = sl_now_ms();
        sl_counter_inc(st->tp->m_restore_bad);
        if (now - st->bad_logged_ms < 1000)
                return;
        st->bad_logged_ms = now;
        sl_log(LOG_WARNING, "THROTTLE", "%s [%d] @%" PRId64 ": %s",
               t->pl->conf->name, t->partition, offset, what);
}

/* ------------------------------------------------------------------ */
/* Pipeline and partition state.                                       */

/* The pipeline's series (labelled pipeline="<name>"). */
static const sl_metric_def_t throttle_metrics[] = {
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_forwarded, "sluice_throttle_forwarded_total",
        "Messages forwarded at once (key under its rate, no backlog)."),
    SL_METRICS_COUNTER(throttle_pipeline_t, m_drained,
                       "sluice_throttle_drained_total",
                       "Messages sent from the backlog at their key's rate."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_appended, "sluice_throttle_appended_total",
        "Messages over their key's rate appended to the overflow topic."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_expired, "sluice_throttle_expired_total",
        "Messages not sent by their deadline (DLQ reason expired)."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_cache_hits, "sluice_throttle_cache_hits_total",
        "Backlog messages whose payload was in memory when due."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_refetches, "sluice_throttle_rereads_total",
        "Backlog heads re-read from the overflow topic (not cached)."),
    SL_METRICS_COUNTER(throttle_pipeline_t, m_overflow_reads,
                       "sluice_throttle_overflow_read_records_total",
                       "Overflow records read back while running (re-reads)."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_rates_rejected,
        "sluice_throttle_rates_rejected_total",
        "Malformed records of the rates topic (logged, not applied)."),
    SL_METRICS_COUNTER(throttle_pipeline_t, m_rates_applied,
                       "sluice_throttle_rates_applied_total",
                       "Records of the rates topic applied."),
    SL_METRICS_COUNTER(
        throttle_pipeline_t, m_restore_bad,
        "sluice_changelog_bad_records_total",
        "Changelog records that could not be decoded (skipped)."),
    SL_METRICS_COUNTER_L(throttle_pipeline_t, m_dlq_expired,
                         "sluice_records_dlq_total", SL_DLQ_HELP, "reason",
                         "expired"),
    SL_METRICS_COUNTER_L(throttle_pipeline_t, m_dlq_refused,
                         "sluice_records_dlq_total", SL_DLQ_HELP, "reason",
                         "output-refused"),
    SL_METRICS_COUNTER_L(throttle_pipeline_t, m_dlq_too_large,
                         "sluice_records_dlq_total", SL_DLQ_HELP, "reason",
                         "too-large"),
    SL_METRICS_COUNTER(throttle_pipeline_t, m_lost,
                       "sluice_throttle_lost_total",
                       "Backlog messages whose overflow record was gone when "
                       "re-read (deleted by retention): dropped, never sent."),
    SL_METRICS_GAUGE(throttle_pipeline_t, m_backlog,
                     "sluice_throttle_backlog_messages",
                     "Messages buffered in the overflow topic."),
    SL_METRICS_GAUGE(throttle_pipeline_t, m_backlog_bytes,
                     "sluice_throttle_backlog_bytes",
                     "Bytes of the buffered messages (overflow records)."),
    SL_METRICS_GAUGE(throttle_pipeline_t, m_keys, "sluice_throttle_keys",
                     "Keys with state in memory."),
    SL_METRICS_GAUGE(throttle_pipeline_t, m_index_bytes,
                     "sluice_throttle_index_bytes",
                     "Memory of the per-message backlog index (designed for "
                     "at most 32 B per buffered message)."),
    SL_METRICS_GAUGE(
        throttle_pipeline_t, m_cache_bytes, "sluice_throttle_cache_bytes",
        "Bytes charged to the payload cache (budget: payload_cache)."),
};

static int throttle_pipeline_init(sl_pipeline_t *pl, char *errstr,
                                  size_t errstr_size) {
        const sl_pipeline_conf_t *pc = pl->conf;
        const sl_throttle_conf_t *tc = sl_throttle_conf(pc);
        sl_metrics_t *m = sl_pipeline_metrics_registry(pl);
        throttle_pipeline_t *tp = sl_calloc(1, sizeof(*tp));
        const char *name = pc->name;
        (void)errstr;
        (void)errstr_size;

        tp->rates = sl_rates_new(&tc->default_rate);
        tp->cache = sl_backlog_cache_new(tc->payload_cache_bytes);

        sl_metrics_register(m, throttle_metrics,
                            SL_ARRAY_SIZE(throttle_metrics), tp, name);
        tp->c_keys = sl_pipeline_cap(pl, "max_backlog_keys", "keys in memory",
                                     tc->max_backlog_keys);
        tp->c_msgs =
            sl_pipeline_cap(pl, "max_backlog_messages", "backlog messages",
                            tc->max_backlog_messages);
        tp->c_key_bytes = sl_pipeline_cap(pl, "max_key_bytes", "bytes of keys",
                                          tc->max_key_bytes);
        sl_rates_set_max_bytes(tp->rates, (size_t)tc->max_rates_bytes);
        pl->op_data = tp;
        return 0;
}

static void throttle_pipeline_destroy(sl_pipeline_t *pl) {
        throttle_pipeline_t *tp = pl->op_data;
        if (!tp)
                return;
        sl_backlog_cache_destroy(tp->cache);
        sl_rates_destroy(tp->rates);
        free(tp);
        pl->op_data = NULL;
}

static void *throttle_state_new(sl_task_t *t) {
        throttle_state_t *st = sl_calloc(1, sizeof(*st));
        st->tp = tp_of(t);
        st->bl = sl_backlog_new(st->tp->rates, st->tp->cache, 0);
        st->ckpt_written = -1;
        return st;
}

/* The gauges are pipeline-wide: a destroyed partition takes its share. */
static void throttle_state_destroy(void *state) {
        throttle_state_t *st = state;
        if (!st)
                return;
        sl_gauge_add_owner(st->tp->m_backlog, -(double)st->msgs_counted);
        sl_gauge_add_owner(st->tp->m_backlog_bytes, -(double)st->bytes_counted);
        sl_gauge_add_owner(st->tp->m_keys, -(double)st->keys_counted);
        sl_gauge_add_owner(st->tp->m_index_bytes, -(double)st->index_counted);
        sl_pcap_add(st->tp->c_keys, -(int64_t)st->keys_capped);
        sl_pcap_add(st->tp->c_msgs, -(int64_t)st->msgs_capped);
        sl_pcap_add(st->tp->c_key_bytes, -(int64_t)st->key_bytes_capped);
        sl_backlog_destroy(st->bl);
        sl_scratch_free(&st->pack);
        free(st);
}

/* ------------------------------------------------------------------ */
/* Rebuild.                                                            */

static void throttle_restore(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_state_t *st = st_of(t);
        const char *key = m->key;

        if (m->key_len == CKPT_KEY_LEN && !memcmp(key, CKPT_KEY, 2)) {
                Sluice__V1__ThrottleCheckpoint *c;
                if (!m->payload)
                        return;
                c = sluice__v1__throttle_checkpoint__unpack(NULL, m->len,
                                                            m->payload);
                if (!c || c->from_offset < 0) {
                        log_bad(t, "bad checkpoint record", m->offset);
                } else {
                        st->ckpt_restored = c->from_offset;
                        st->ckpt_written = c->from_offset;
                        sl_backlog_set_next_offset(st->bl, c->from_offset);
                }
                sluice__v1__throttle_checkpoint__free_unpacked(c, NULL);
                return;
        }
        if (m->key_len < 2 || memcmp(key, "k/", 2)) {
                log_bad(t, "unknown changelog key", m->offset);
                return;
        }
        if (!m->payload) {
                /* Gone: a fresh key (full bucket, nothing drained), which
                 * the next sweep drops. */
                sl_backlog_key_t *k =
                    sl_backlog_restore_key(st->bl, key + 2, m->key_len - 2, 0,
                                           HUGE_VAL, sl_task_now_ms(t));
                if (k)
                        *sl_backlog_key_opflags(k) &= ~OPF_HAS_RECORD;
                return;
        }
        {
                Sluice__V1__ThrottleKey *r =
                    sluice__v1__throttle_key__unpack(NULL, m->len, m->payload);
                sl_backlog_key_t *k;
                int64_t updated;
                if (!r) {
                        log_bad(t, "bad key record", m->offset);
                        return;
                }
                /* The bucket's time was now when it was written: one
                 * ahead of now (a corrupt record, or another instance's
                 * clock) would hold the refill until then, one before the
                 * epoch would overflow it. */
                updated = SL_MAX(0, SL_MIN(r->updated_ms, sl_task_now_ms(t)));
                k = sl_backlog_restore_key(st->bl, key + 2, m->key_len - 2,
                                           r->drained_to, r->tokens, updated);
                if (k)
                        *sl_backlog_key_opflags(k) |= OPF_HAS_RECORD;
                sluice__v1__throttle_key__free_unpacked(r, NULL);
        }
}

static const char *throttle_rebuild_source(sl_task_t *t, int64_t *from) {
        *from = st_of(t)->ckpt_restored;
        return sl_throttle_conf(t->pl->conf)->overflow;
}

static void throttle_restore_source(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_state_t *st = st_of(t);
        int64_t deadline;

        if (!m->key || !m->payload || m->len > UINT32_MAX ||
            overflow_deadline(m->payload, m->len, &deadline) == -1) {
                log_bad(t, "overflow record without key or deadline",
                        m->offset);
                return;
        }
        if (sl_backlog_rebuild_append(st->bl, m->key, m->key_len, m->offset,
                                      deadline, m->payload, (uint32_t)m->len,
                                      sl_task_now_ms(t)) == -1)
                log_bad(t, "overflow record out of order", m->offset);
}

static void throttle_restored(sl_task_t *t) {
        throttle_state_t *st = st_of(t);
        const sl_pipeline_conf_t *pc = t->pl->conf;
        int64_t now;

        /* Learn the topics we write to now (cached by the runtime, and in
         * the producer's metadata): the producer would otherwise hold the
         * first records for them until its next metadata scan, ~1 s. */
        /* (Its partition count was checked at start, and when the input
         * grew, before this partition was served: parts.h.) */
        sl_task_topic_partitions(t, sl_throttle_conf(pc)->overflow);
        if (sl_task_topic_partitions(t, pc->output) == 0)
                sl_log(LOG_ERR, "THROTTLE", "%s: output topic %s is missing",
                       pc->name, pc->output);
        if (pc->dlq)
                sl_task_topic_partitions(t, pc->dlq);
        now = sl_now_ms();
        st->maint_ms = now;
        throttle_update_gauges(t);
        sl_task_wake_at(t, 0);
        sl_task_wake_at(t, now);
}

/* ------------------------------------------------------------------ */
/* Input.                                                              */

/* The message's deadline from sluice-ttl or sluice-deadline, capped by the
 * pipeline's ttl.  Returns NULL, or a DLQ reason with detail. */
static const char *input_deadline(sl_task_t *t, const rd_kafka_message_t *m,
                                  int64_t now, int64_t *deadline, char *detail,
                                  size_t detail_size) {
        int64_t ttl_ms = sl_throttle_conf(t->pl->conf)->ttl_ms;
        rd_kafka_headers_t *h = NULL;
        int64_t cap = now + ttl_ms, v;
        int have_ttl = 0, have_dl = 0;
        char err[128], ev[100], ee[160];

        *deadline = cap;
        if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR)
                return NULL;
        for (size_t i = 0;; i++) {
                const char *name;
                const void *val;
                size_t size;
                if (rd_kafka_header_get_all(h, i, &name, &val, &size))
                        break;
                if (!strcmp(name, "sluice-ttl")) {
                        if (have_ttl++) {
                                snprintf(detail, detail_size,
                                         "sluice-ttl given twice");
                                return "bad-ttl";
                        }
                        if (!val || sl_parse_duration_ms_n(val, size, &v, err,
                                                           sizeof(err))) {
                                snprintf(detail, detail_size,
                                         "sluice-ttl '%s': %s",
                                         sl_escape(val, val ? size : 0, ev,
                                                   sizeof(ev)),
                                         val ? sl_escape(err, strlen(err), ee,
                                                         sizeof(ee))
                                             : "null value");
                                return "bad-ttl";
                        }
                        if (v <= 0) {
                                snprintf(detail, detail_size,
                                         "sluice-ttl must be positive");
                                return "bad-ttl";
                        }
                        *deadline = now + SL_MIN(v, ttl_ms);
                } else if (!strcmp(name, "sluice-deadline")) {
                        if (have_dl++) {
                                snprintf(detail, detail_size,
                                         "sluice-deadline given twice");
                                return "bad-deadline";
                        }
                        if (!val || sl_parse_timestamp_ms_n(val, size, &v, err,
                                                            sizeof(err))) {
                                snprintf(detail, detail_size,
                                         "sluice-deadline '%s': %s",
                                         sl_escape(val, val ? size : 0, ev,
                                                   sizeof(ev)),
                                         val ? sl_escape(err, strlen(err), ee,
                                                         sizeof(ee))
                                             : "null value");
                                return "bad-deadline";
                        }
                        *deadline = SL_MIN(v, cap);
                }
        }
        if (have_ttl && have_dl) {
                snprintf(detail, detail_size,
                         "both sluice-ttl and sluice-deadline given");
                return "conflicting-deadline";
        }
        return NULL;
}

/* Produces a live message to the output as it came. */
static void forward_live(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_pipeline_t *tp = tp_of(t);
        rd_kafka_headers_t *src = NULL, *h = NULL;
        int r;
        if (rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                h = rd_kafka_headers_copy(src);
                /* A rerouted record goes on as if produced here. */
                rd_kafka_header_remove(h, SL_TASK_REROUTED_HEADER);
        }
        r = sl_task_produce(t, t->pl->conf->output, RD_KAFKA_PARTITION_UA,
                            m->key, m->key_len, m->payload, m->len, h);
        if (r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
                sl_task_dlq(t, m, "too-large", sl_task_refused_why(t));
                return;
        }
        if (r < 0) {
                sl_task_dlq(t, m, "output-refused",
                            rd_kafka_err2str((rd_kafka_resp_err_t)-r));
                return;
        }
        sl_counter_inc_owner(t->pl->metrics->records_out);
        sl_counter_inc(tp->m_forwarded);
}

/* Packs the OverflowRecord of a live message into *out, which points into
 * sc (valid until sc is used again; sl_scratch_done() after use). */
static size_t pack_overflow(const rd_kafka_message_t *m, int64_t deadline,
                            int64_t now, sl_scratch_t *sc, uint8_t **out) {
        Sluice__V1__OverflowRecord rec = SLUICE__V1__OVERFLOW_RECORD__INIT;
        Sluice__V1__Header hv_in[16], *hp_in[16];
        Sluice__V1__Header *hv = hv_in, **hp = hp_in;
        rd_kafka_headers_t *h = NULL;
        size_t cnt = 0, len;

        rec.payload.data = m->payload;
        rec.payload.len = m->payload ? m->len : 0;
        rec.null_payload = m->payload == NULL;
        rec.deadline_ms = deadline;
        rec.source_offset = m->offset;
        rec.received_ms = now;
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
                cnt = rd_kafka_header_cnt(h);
        if (cnt > SL_ARRAY_SIZE(hv_in)) {
                hv = sl_calloc(cnt, sizeof(*hv));
                hp = sl_calloc(cnt, sizeof(*hp));
        }
        for (size_t i = 0, j = 0;; i++) {
                const char *name;
                const void *val;
                size_t size;
                if (i == cnt ||
                    rd_kafka_header_get_all(h, i, &name, &val, &size)) {
                        cnt = j;
                        break;
                }
                /* A rerouted record goes on as if produced here. */
                if (!strcmp(name, SL_TASK_REROUTED_HEADER))
                        continue;
                sluice__v1__header__init(&hv[j]);
                hv[j].name = (char *)name;
                hv[j].value.data = (uint8_t *)val;
                hv[j].value.len = val ? size : 0;
                hv[j].null_value = val == NULL;
                hp[j] = &hv[j];
                j++;
        }
        rec.n_headers = cnt;
        rec.headers = hp;
        len = sluice__v1__overflow_record__get_packed_size(&rec);
        *out = sl_scratch_get(sc, len);
        sluice__v1__overflow_record__pack(&rec, *out);
        if (hv != hv_in) {
                free(hv);
                free(hp);
        }
        return len;
}

/* What a key costs in memory beside its bytes (the backlog's key struct,
 * its hash and heap slots), for the max_key_bytes cap: an estimate. */
#define THROTTLE_KEY_COST 200

/* The largest ThrottleKey value: three fields, each a tag and at most a
 * ten-byte varint or an eight-byte double. */
#define THROTTLE_KEY_VALUE_MAX 31

/* 1 when every record m can make fits its topic (recsize.h): the output
 * (forwarded now or drained later, with m's key, value and headers) and
 * the key's "k/" record in the changelog, written at commit, where a
 * refusal could only abort.  Else 0, with the reason in detail.  (The
 * overflow record is checked when it is produced: a refusal there is the
 * record's own.) */
static int throttle_fits(sl_task_t *t, const rd_kafka_message_t *m,
                         char *detail, size_t detail_size) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *h = NULL;
        size_t hcnt = 0, hbytes = 0, size;
        int64_t max;

        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const char *name;
                const void *val;
                size_t vlen;
                while (!rd_kafka_header_get_all(h, hcnt, &name, &val, &vlen)) {
                        hbytes += sl_recsize_header(strlen(name),
                                                    val ? (int64_t)vlen : -1);
                        hcnt++;
                }
        }
        size =
            sl_recsize_batch((int64_t)m->key_len,
                             m->payload ? (int64_t)m->len : -1, hcnt, hbytes);
        if ((int64_t)size > (max = sl_task_max_bytes(t, pc->output))) {
                snprintf(detail, detail_size,
                         "a record of %zu bytes (key %zu, value %zu, %zu "
                         "headers); the output %s takes %" PRId64,
                         size, m->key_len, m->len, hcnt, pc->output, max);
                return 0;
        }
        size = sl_recsize_batch((int64_t)m->key_len + 2, THROTTLE_KEY_VALUE_MAX,
                                0, 0);
        if ((int64_t)size > (max = sl_task_max_bytes(t, pc->changelog))) {
                snprintf(detail, detail_size,
                         "a key of %zu bytes: its state record (%zu bytes) is "
                         "larger than the changelog %s takes (%" PRId64 ")",
                         m->key_len, size, pc->changelog, max);
                return 0;
        }
        return 1;
}

/* 1 when the broker refused m's key's "k/" record for good (refused.h:
 * sent alone and refused again), which it would do at every commit:
 * the record goes to the DLQ instead, and the key takes no more input. */
static int throttle_key_refused(sl_task_t *t, const rd_kafka_message_t *m,
                                char *detail, size_t detail_size) {
        char nbuf[256], *name;
        size_t nlen;
        int e;
        if (!sl_task_refusals(t))
                return 0;
        name = key_record_name(m->key, m->key_len, nbuf, sizeof(nbuf), &nlen);
        e = sl_task_refused(t, t->pl->conf->changelog, name, nlen, m->key,
                            m->key_len, 0);
        if (name != nbuf)
                free(name);
        if (e)
                snprintf(detail, detail_size,
                         "the key's state record (k/<key>, %zu bytes of key) "
                         "was refused by the broker: %s",
                         m->key_len, rd_kafka_err2str((rd_kafka_resp_err_t)e));
        return e != 0;
}

static void throttle_input(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_state_t *st = st_of(t);
        throttle_pipeline_t *tp = st->tp;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        int64_t now = sl_task_now_ms(t), deadline;
        const char *reason;
        char detail[256];
        sl_backlog_key_t *k;

        if (!m->key) {
                sl_task_dlq(t, m, "missing-key",
                            "the record key is the throttle key");
                return;
        }
        if ((int64_t)(m->key_len + m->len) > pc->max_record_bytes) {
                snprintf(
                    detail, sizeof(detail),
                    "%zu bytes of key and value, max_record_bytes %" PRId64,
                    m->key_len + m->len, pc->max_record_bytes);
                sl_task_dlq(t, m, "oversize", detail);
                return;
        }
        if (!throttle_fits(t, m, detail, sizeof(detail))) {
                sl_task_dlq(t, m, "too-large", detail);
                return;
        }
        if (throttle_key_refused(t, m, detail, sizeof(detail))) {
                sl_task_dlq(t, m, "changelog-refused", detail);
                return;
        }
        reason = input_deadline(t, m, now, &deadline, detail, sizeof(detail));
        if (reason) {
                sl_task_dlq(t, m, reason, detail);
                return;
        }

        /* Caps (task.h): a key not in memory needs room for one more key
         * and its bytes (looked up only when a cap is reached). */
        if ((!sl_pcap_room(tp->c_keys, 1) ||
             !sl_pcap_room(tp->c_key_bytes,
                           (int64_t)m->key_len + THROTTLE_KEY_COST)) &&
            !sl_backlog_find(st->bl, m->key, m->key_len)) {
                sl_task_input_full(t, sl_pcap_room(tp->c_keys, 1)
                                          ? tp->c_key_bytes
                                          : tp->c_keys);
                return;
        }
        switch (
            sl_backlog_offer(st->bl, m->key, m->key_len, deadline, now, &k)) {
        case SL_BACKLOG_FORWARD:
                /* The backlog did not change (a new key at most): the
                 * gauges catch up at the next wake or commit, not per
                 * record on the hot path; the caps count the key now. */
                forward_live(t, m);
                throttle_count_caps(t);
                return;
        case SL_BACKLOG_EXPIRED:
                snprintf(detail, sizeof(detail),
                         "deadline %" PRId64 " passed on arrival", deadline);
                sl_counter_inc(tp->m_expired);
                sl_task_dlq(t, m, "expired", detail);
                break;
        case SL_BACKLOG_APPEND: {
                uint8_t *packed;
                size_t plen;
                int r;
                if (!sl_pcap_room(tp->c_msgs, 1)) {
                        /* Waits: offer() changed nothing that matters
                         * without the append (at most a new key with a
                         * full bucket, as after an expired record). */
                        sl_task_input_full(t, tp->c_msgs);
                        break;
                }
                plen = pack_overflow(m, deadline, now, &st->pack, &packed);
                if (plen > UINT32_MAX) {
                        sl_scratch_done(&st->pack);
                        sl_task_dlq(t, m, "oversize",
                                    "overflow record over 4 GiB");
                        break;
                }
                r = sl_task_produce_tracked(t, sl_throttle_conf(pc)->overflow,
                                            t->partition, m->key, m->key_len,
                                            packed, plen, NULL);
                if (r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
                        snprintf(detail, sizeof(detail),
                                 "its overflow record: %s",
                                 sl_task_refused_why(t));
                        sl_task_dlq(t, m, "too-large", detail);
                } else if (r < 0) {
                        snprintf(detail, sizeof(detail),
                                 "overflow topic %s refused %zu bytes: %s",
                                 sl_throttle_conf(pc)->overflow, plen,
                                 rd_kafka_err2str((rd_kafka_resp_err_t)-r));
                        sl_task_dlq(t, m, "overflow-refused", detail);
                } else {
                        sl_backlog_append(st->bl, k, deadline, packed,
                                          (uint32_t)plen);
                        sl_counter_inc(tp->m_appended);
                        if (sl_backlog_key_len(k) == 1 &&
                            sl_backlog_key_due_ms(k) != SL_BACKLOG_NEVER)
                                sl_task_wake_at(
                                    t, SL_MAX(1, sl_backlog_key_due_ms(k)));
                }
                sl_scratch_done(&st->pack);
                break;
        }
        }
        throttle_update_gauges(t);
}

/* ------------------------------------------------------------------ */
/* Draining.                                                           */

/* Sends a backlog item to the DLQ (or drops it without one), like
 * sl_task_dlq() does for a live record: the original key, value and
 * headers, the reason and the source coordinates from the OverflowRecord.
 * m_reason is the pipeline's sluice_records_dlq_total{reason} series. */
static void drain_dlq(sl_task_t *t, const sl_backlog_item_t *it,
                      const Sluice__V1__OverflowRecord *rec, const char *reason,
                      const char *detail, sl_counter_t *m_reason) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *h, *src;
        const void *key;
        size_t keylen;

        sl_counter_inc(m_reason);
        if (!pc->dlq) {
                /* Expiry without a DLQ is the configured behaviour (counted,
                 * not logged per record); anything else is worth a line. */
                if (strcmp(reason, "expired"))
                        sl_log(
                            LOG_WARNING, "DLQ",
                            "%s [%d]: backlog record of source offset %" PRId64
                            " (%s: %s) dropped: no DLQ",
                            pc->name, t->partition, rec->source_offset, reason,
                            detail);
                return;
        }
        key = sl_backlog_key_key(it->key, &keylen);
        src = overflow_headers(rec, 0);
        h = rd_kafka_headers_new(6);
        sl_task_dlq_headers(t, h, reason, detail, rec->source_offset);
        sl_task_dlq_send(t, key, keylen, overflow_value(rec),
                         overflow_value_len(rec), src, h);
        if (src)
                rd_kafka_headers_destroy(src);
}

/* Sends a backlog item whose deadline passed to the DLQ (or drops it). */
static void drain_expired(sl_task_t *t, const sl_backlog_item_t *it,
                          const Sluice__V1__OverflowRecord *rec) {
        throttle_pipeline_t *tp = tp_of(t);
        char detail[64];

        sl_counter_inc(tp->m_expired);
        snprintf(detail, sizeof(detail),
                 "deadline %" PRId64 " passed in the backlog", it->deadline_ms);
        drain_dlq(t, it, rec, "expired", detail, tp->m_dlq_expired);
}

/* Sends a due backlog item to the output; one the output refuses goes to
 * the DLQ (reason output-refused), as a live one does. */
static void drain_send(sl_task_t *t, const sl_backlog_item_t *it,
                       const Sluice__V1__OverflowRecord *rec) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        throttle_pipeline_t *tp = tp_of(t);
        const void *key;
        size_t keylen;
        int r;

        key = sl_backlog_key_key(it->key, &keylen);
        r = sl_task_produce(t, pc->output, RD_KAFKA_PARTITION_UA, key, keylen,
                            overflow_value(rec), overflow_value_len(rec),
                            overflow_headers(rec, 0));
        if (r < 0) {
                drain_dlq(t, it, rec,
                          r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                              ? "too-large"
                              : "output-refused",
                          r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                              ? sl_task_refused_why(t)
                              : rd_kafka_err2str((rd_kafka_resp_err_t)-r),
                          r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                              ? tp->m_dlq_too_large
                              : tp->m_dlq_refused);
                return;
        }
        sl_counter_inc_owner(t->pl->metrics->records_out);
        sl_counter_inc(tp->m_drained);
}

/* Points the re-read at offset (a fresh pass: nothing behind, nothing
 * known ahead). */
static int fetch_start(sl_task_t *t, int64_t offset, int64_t now) {
        throttle_state_t *st = st_of(t);
        if (sl_task_fetch(t, sl_throttle_conf(t->pl->conf)->overflow, offset) ==
            -1)
                return -1;
        st->fetching = 1;
        st->fetch_pos = offset;
        st->fetch_progress_ms = now;
        st->prefetch_idle = 0;
        st->prefetch_full = 0;
        st->ahead_max = -1;
        st->behind_min = st->behind_max = -1;
        return 0;
}

static void fetch_stop(sl_task_t *t) {
        throttle_state_t *st = st_of(t);
        if (!st->fetching)
                return;
        sl_task_fetch_stop(t);
        st->fetching = 0;
}

/*
 * FETCH: makes sure the re-read covers offset.  Heads fall due in time
 * order, not offset order, so moving the cursor back for every head asked
 * for behind it re-reads the same stretch over and over (a 200k backlog
 * with a 1 MiB cache re-read 6 records per message).  Instead the cursor
 * keeps reading forward while parked heads lie ahead, and wraps back to
 * the smallest head left behind once none does (or after
 * SL_THROTTLE_WRAP_MS): one pass serves every head in its stretch.
 */
static int drain_fetch(sl_task_t *t, int64_t offset, int64_t now) {
        throttle_state_t *st = st_of(t);
        if (offset < 0) {
                log_bad(t, "fetch asked for an unknown offset", offset);
                return -1;
        }
        if (!st->fetching) {
                if (fetch_start(t, offset, now) == -1)
                        return -1;
                st->ahead_max = offset;
                return 0;
        }
        if (offset >= st->fetch_pos) {
                st->ahead_max = SL_MAX(st->ahead_max, offset);
                return 0;
        }
        if (st->behind_min < 0) {
                st->behind_min = st->behind_max = offset;
                st->behind_since_ms = now;
        } else {
                st->behind_min = SL_MIN(st->behind_min, offset);
                st->behind_max = SL_MAX(st->behind_max, offset);
        }
        return 0;
}

/* Wraps the cursor back to the heads left behind when it is time.
 * Returns -1 if the reader could not move. */
static int fetch_maybe_wrap(sl_task_t *t, int64_t now) {
        throttle_state_t *st = st_of(t);
        int64_t ahead, to;
        if (!st->fetching || st->behind_min < 0)
                return 0;
        if (st->fetch_pos <= st->ahead_max &&
            now - st->behind_since_ms < SL_THROTTLE_WRAP_MS)
                return 0;
        /* Heads ahead that the cursor passed were served (or found gone). */
        ahead = st->fetch_pos > st->ahead_max
                    ? st->behind_max
                    : SL_MAX(st->ahead_max, st->behind_max);
        to = st->behind_min;
        if (fetch_start(t, to, now) == -1)
                return -1;
        st->ahead_max = ahead;
        st->wraps++;
        return 0;
}

/* The re-read skipped overflow offsets [lo, hi): nothing committed is left
 * there (deleted by retention, or only transaction markers).  Drops every
 * buffered message in that range (its payload is gone for good): counted
 * as lost, never sent.  Logged at most once a second. */
typedef struct lost_ctx_s {
        int64_t lo, hi;
        sl_backlog_key_t **keys;
        size_t n, cap;
} lost_ctx_t;

static void lost_collect(const sl_backlog_key_t *k, void *opaque) {
        lost_ctx_t *c = opaque;
        const sl_backlog_entry_t *e = sl_backlog_key_entry(k, 0);
        if (!e || e->offset < c->lo || e->offset >= c->hi)
                return;
        if (c->n == c->cap) {
                c->cap = c->cap ? c->cap * 2 : 16;
                c->keys = sl_realloc(c->keys, c->cap * sizeof(*c->keys));
        }
        /* The backlog hands out const views; the key is ours to change
         * once the walk is over. */
        c->keys[c->n++] = (sl_backlog_key_t *)k;
}

static void drop_lost(sl_task_t *t, int64_t lo, int64_t hi, int64_t now) {
        throttle_state_t *st = st_of(t);
        lost_ctx_t c = {lo, hi, NULL, 0, 0};
        uint64_t lost = 0;

        sl_backlog_foreach(st->bl, lost_collect, &c);
        for (size_t i = 0; i < c.n; i++) {
                const sl_backlog_entry_t *e;
                while ((e = sl_backlog_key_entry(c.keys[i], 0)) &&
                       e->offset >= lo && e->offset < hi) {
                        sl_backlog_item_t it;
                        if (sl_backlog_drop_head(st->bl, c.keys[i], &it) == -1)
                                break;
                        *sl_backlog_key_opflags(c.keys[i]) &= ~OPF_HEAD_FETCHED;
                        lost++;
                }
        }
        free(c.keys);
        if (!lost)
                return;
        sl_counter_add(st->tp->m_lost, lost);
        if (!st->lost_unlogged)
                st->lost_lo = lo;
        st->lost_unlogged += lost;
        st->lost_hi = hi;
        if (now - st->lost_logged_ms >= 1000) {
                sl_log(LOG_WARNING, "THROTTLE",
                       "%s [%d]: %" PRIu64 " backlog messages lost: overflow "
                       "%s offsets [%" PRId64 ", %" PRId64
                       ") are gone (retention shorter than the backlog?)",
                       t->pl->conf->name, t->partition, st->lost_unlogged,
                       sl_throttle_conf(t->pl->conf)->overflow, st->lost_lo,
                       st->lost_hi);
                st->lost_unlogged = 0;
                st->lost_logged_ms = now;
        }
        sl_task_wake_at(t, now);
}

static void throttle_maintain(sl_task_t *t, int64_t now);

static void throttle_wake(sl_task_t *t, int64_t now) {
        throttle_state_t *st = st_of(t);
        throttle_pipeline_t *tp = st->tp;
        sl_backlog_item_t it;
        sl_backlog_stats_t s;
        int64_t next = SL_BACKLOG_NEVER, maint_ms;
        int n = 0, fetch_failed = 0;

        while (n < SL_THROTTLE_POLL_MAX &&
               sl_backlog_poll(st->bl, now, &it, &next)) {
                Sluice__V1__OverflowRecord *rec;
                uint32_t *of = sl_backlog_key_opflags(it.key);
                n++;
                if (it.action == SL_BACKLOG_FETCH) {
                        *of |= OPF_HEAD_FETCHED;
                        sl_counter_inc(tp->m_refetches);
                        if (drain_fetch(t, it.offset, now) == -1)
                                fetch_failed = 1;
                        continue;
                }
                if (*of & OPF_HEAD_FETCHED)
                        *of &= ~OPF_HEAD_FETCHED;
                else
                        sl_counter_inc(tp->m_cache_hits);
                rec = it.payload ? sluice__v1__overflow_record__unpack(
                                       NULL, it.size, it.payload)
                                 : NULL;
                if (!rec) {
                        log_bad(t, "backlog record could not be decoded",
                                it.offset);
                } else if (it.action == SL_BACKLOG_SEND) {
                        /* The overflow offset names this message across
                         * replays. */
                        sl_task_origin(t, "overflow", 8, it.offset);
                        drain_send(t, &it, rec);
                        sl_task_origin(t, NULL, 0, 0);
                } else {
                        drain_expired(t, &it, rec);
                }
                sluice__v1__overflow_record__free_unpacked(rec, NULL);
                sl_backlog_payload_free(it.payload);
        }
        if (n >= SL_THROTTLE_POLL_MAX)
                next = now; /* more is due: yield to the loop, then go on */
        if (!fetch_failed && fetch_maybe_wrap(t, now) == -1)
                fetch_failed = 1;

        sl_backlog_stats(st->bl, &s);
        if (fetch_failed) {
                /* The reader could not move: ask again in a second. */
                fetch_stop(t);
                sl_backlog_unpark_all(st->bl);
                next = SL_MIN(next, now + 1000);
        } else if (s.parked) {
                if (st->fetching &&
                    now - st->fetch_progress_ms > SL_THROTTLE_FETCH_STALL_MS) {
                        sl_log(LOG_WARNING, "THROTTLE",
                               "%s [%d]: overflow re-read stalled at %" PRId64
                               " with %" PRIu64 " keys waiting; restarting it",
                               t->pl->conf->name, t->partition, st->fetch_pos,
                               s.parked);
                        fetch_stop(t);
                        sl_backlog_unpark_all(st->bl);
                        next = now;
                } else {
                        next = SL_MIN(next, now + SL_THROTTLE_FETCH_STALL_MS);
                        if (st->behind_min >= 0)
                                next = SL_MIN(next, st->behind_since_ms +
                                                        SL_THROTTLE_WRAP_MS);
                }
        }
        /* While the keys cap holds input back, sweeping idle keys is what
         * makes room: sweep at every commit interval, not every 5 s. */
        maint_ms = sl_pcap_room(tp->c_keys, 1) &&
                           sl_pcap_room(tp->c_key_bytes, THROTTLE_KEY_COST)
                       ? SL_THROTTLE_MAINT_MS
                       : sl_pipeline_sluice_conf(t->pl)->commit_interval_ms;
        if (now - st->maint_ms >= maint_ms)
                throttle_maintain(t, now);
        if (s.keys > s.keys_queued)
                next = SL_MIN(next, st->maint_ms + maint_ms);
        throttle_update_gauges(t);
        sl_task_wake_at(t, 0);
        if (next != SL_BACKLOG_NEVER)
                sl_task_wake_at(t, SL_MAX(1, next));
}

static void throttle_fetched(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_state_t *st = st_of(t);
        sl_backlog_stats_t s;
        sl_backlog_cache_stats_t cs;
        uint64_t parked_before, refused_before;
        int r;

        if (!st->fetching)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                int64_t now = sl_now_ms();
                if (m->offset > st->fetch_pos) {
                        drop_lost(t, st->fetch_pos, m->offset, now);
                        st->fetch_pos = m->offset;
                }
                sl_backlog_stats(st->bl, &s);
                if (!s.parked) {
                        fetch_stop(t);
                } else if (st->behind_min >= 0) {
                        /* Nothing parked can lie ahead of the end. */
                        st->ahead_max = -1;
                        if (fetch_maybe_wrap(t, now) == -1) {
                                fetch_stop(t);
                                sl_backlog_unpark_all(st->bl);
                                sl_task_wake_at(t, now + 1000);
                        }
                }
                return;
        }
        if (m->err) {
                log_bad(t, rd_kafka_message_errstr(m), m->offset);
                return;
        }
        if (m->offset < st->fetch_pos)
                return; /* left over from before a wrap */
        if (m->offset > st->fetch_pos)
                drop_lost(t, st->fetch_pos, m->offset, sl_now_ms());
        st->fetch_pos = m->offset + 1;
        st->fetch_progress_ms = sl_now_ms();
        sl_counter_inc(st->tp->m_overflow_reads);
        if (!m->key || !m->payload || m->len > UINT32_MAX)
                return;
        sl_backlog_stats(st->bl, &s);
        parked_before = s.parked;
        sl_backlog_cache_stats(st->tp->cache, &cs);
        refused_before = cs.refused;
        r = sl_backlog_fill(st->bl, m->key, m->key_len, m->offset, m->payload,
                            (uint32_t)m->len);
        if (r == -1) {
                /* Not the record appended there: drop a head waiting for
                 * it, or the key would wait forever. */
                sl_backlog_key_t *k =
                    sl_backlog_find(st->bl, m->key, m->key_len);
                const sl_backlog_entry_t *e =
                    k ? sl_backlog_key_entry(k, 0) : NULL;
                log_bad(t, "overflow record differs from the one appended",
                        m->offset);
                if (e && sl_backlog_key_parked(k) && e->offset == m->offset) {
                        sl_backlog_item_t it;
                        sl_backlog_drop_head(st->bl, k, &it);
                        sl_task_wake_at(t, sl_now_ms());
                }
                return;
        }
        sl_backlog_stats(st->bl, &s);
        if (s.parked < parked_before)
                sl_task_wake_at(t, sl_now_ms());
        if (r == 1) {
                st->prefetch_idle = 0;
                st->prefetch_full = 0;
        } else {
                st->prefetch_idle++;
                sl_backlog_cache_stats(st->tp->cache, &cs);
                if (cs.refused != refused_before)
                        st->prefetch_full++;
        }
        if (!s.parked && st->behind_min < 0 &&
            (st->prefetch_idle >= SL_THROTTLE_PREFETCH_IDLE ||
             st->prefetch_full >= SL_THROTTLE_PREFETCH_FULL)) {
                fetch_stop(t);
        } else if (st->behind_min >= 0 && st->fetch_pos > st->ahead_max &&
                   fetch_maybe_wrap(t, sl_now_ms()) == -1) {
                fetch_stop(t);
                sl_backlog_unpark_all(st->bl);
                sl_task_wake_at(t, sl_now_ms() + 1000);
        }
}

/* ------------------------------------------------------------------ */
/* Commit.                                                             */

static void write_checkpoint(sl_task_t *t, int64_t now) {
        throttle_state_t *st = st_of(t);
        Sluice__V1__ThrottleCheckpoint c =
            SLUICE__V1__THROTTLE_CHECKPOINT__INIT;
        uint8_t buf[64];
        size_t len;
        int64_t ck = sl_backlog_checkpoint(st->bl);

        if (ck == st->ckpt_written)
                return;
        c.from_offset = ck;
        c.updated_ms = now;
        len = sluice__v1__throttle_checkpoint__pack(&c, buf);
        sl_task_changelog(t, CKPT_KEY, CKPT_KEY_LEN, buf, len);
        st->ckpt_written = ck;
}

static void write_key_cb(sl_backlog_key_t *k, void *opaque) {
        sl_task_t *t = opaque;
        Sluice__V1__ThrottleKey r = SLUICE__V1__THROTTLE_KEY__INIT;
        const sl_tbucket_t *b = sl_backlog_key_bucket(k);
        const void *key;
        size_t keylen, nlen, len;
        char nbuf[256], *name;
        uint8_t val[64];

        key = sl_backlog_key_key(k, &keylen);
        r.drained_to = sl_backlog_key_drained_to(k);
        r.tokens = b->tokens;
        r.updated_ms = b->updated_ms;
        len = sluice__v1__throttle_key__pack(&r, val);
        name = key_record_name(key, keylen, nbuf, sizeof(nbuf), &nlen);
        /* The key names this record across replays (its value holds the
         * time): one the broker refuses for good is known by it at the
         * key's next input (throttle_input). */
        sl_task_origin(t, key, keylen, 0);
        sl_task_changelog(t, name, nlen, val, len);
        sl_task_origin(t, NULL, 0, 0);
        if (name != nbuf)
                free(name);
        *sl_backlog_key_opflags(k) |= OPF_HAS_RECORD;
}

typedef struct sweep_ctx_s {
        sl_task_t *t;
        size_t tombstones;
} sweep_ctx_t;

static void sweep_cb(const sl_backlog_key_t *k, void *opaque) {
        sweep_ctx_t *c = opaque;
        const void *key;
        size_t keylen, nlen;
        char nbuf[256], *name;

        if (!(sl_backlog_key_get_opflags(k) & OPF_HAS_RECORD))
                return;
        key = sl_backlog_key_key(k, &keylen);
        name = key_record_name(key, keylen, nbuf, sizeof(nbuf), &nlen);
        sl_task_changelog(c->t, name, nlen, NULL, 0);
        if (name != nbuf)
                free(name);
        c->tombstones++;
}

/* Drops idle keys; their tombstones go out with a checkpoint at least as
 * new as the one the sweep relied on. */
static void sweep(sl_task_t *t, int64_t now) {
        throttle_state_t *st = st_of(t);
        sweep_ctx_t c = {t, 0};
        sl_backlog_sweep(st->bl, now, SL_THROTTLE_SWEEP_MAX, sweep_cb, &c);
        if (c.tombstones)
                write_checkpoint(t, now);
        st->maint_ms = now;
}

static void throttle_precommit(sl_task_t *t) {
        throttle_state_t *st = st_of(t);
        int64_t now = sl_now_ms();
        sl_backlog_stats_t s;

        sl_backlog_stats(st->bl, &s);
        if (s.awaiting)
                sl_log(LOG_ERR, "THROTTLE",
                       "%s [%d]: %" PRIu64 " overflow appends without a "
                       "delivery report at commit",
                       t->pl->conf->name, t->partition, s.awaiting);
        write_checkpoint(t, now);
        sl_backlog_flush_dirty(st->bl, write_key_cb, t);
        sweep(t, now);
        throttle_update_gauges(t);
}

/* The idle sweep while nothing commits (keys that went quiet keep their
 * changelog records until swept). */
static void throttle_maintain(sl_task_t *t, int64_t now) {
        sweep(t, now);
}

static void throttle_delivered(sl_task_t *t, const rd_kafka_message_t *m) {
        throttle_state_t *st = st_of(t);
        if (sl_backlog_acked(st->bl, m->offset) == -1)
                sl_log(LOG_ERR, "THROTTLE",
                       "%s [%d]: overflow delivery report at %" PRId64
                       " matches no append",
                       t->pl->conf->name, t->partition, m->offset);
}

/* ------------------------------------------------------------------ */
/* Rates table.                                                        */

static const char *throttle_table_topic(const sl_pipeline_t *pl) {
        return sl_throttle_conf(pl->conf)->rates;
}

static void throttle_table(sl_pipeline_t *pl, const rd_kafka_message_t *m) {
        throttle_pipeline_t *tp = pl->op_data;
        uint64_t gen = sl_rates_generation(tp->rates);
        char err[256], ee[300], ek[100], evl[100];
        int r;

        if (m->err)
                return;
        /* Keys, values and the parse errors quoting them are input:
         * escaped before they reach the log. */
        sl_escape(m->key, m->key ? m->key_len : 0, ek, sizeof(ek));
        r = sl_rates_apply(tp->rates, m->key, m->key_len, m->payload, m->len,
                           err, sizeof(err));
        if (r == -2) {
                /* Full: said once per 1000, or a flood of new keys would
                 * flood the log too. */
                sl_counter_inc(tp->m_rates_rejected);
                if (tp->rates_full++ % 1000 == 0)
                        sl_log(LOG_WARNING, "RATES",
                               "%s: %s [%d] @%" PRId64 ": key '%s': %s "
                               "(%" PRIu64 " such records so far)",
                               pl->conf->name,
                               sl_throttle_conf(pl->conf)->rates,
                               (int)m->partition, m->offset, ek, err,
                               tp->rates_full);
                return;
        }
        if (r == -1) {
                sl_counter_inc(tp->m_rates_rejected);
                sl_log(LOG_WARNING, "RATES",
                       "%s: %s [%d] @%" PRId64 ": key '%s': %s; ignored",
                       pl->conf->name, sl_throttle_conf(pl->conf)->rates,
                       (int)m->partition, m->offset, ek,
                       sl_escape(err, strlen(err), ee, sizeof(ee)));
                return;
        }
        sl_counter_inc(tp->m_rates_applied);
        sl_log(pl->table_ready ? LOG_INFO : LOG_DEBUG, "RATES",
               "%s: key '%s': %s", pl->conf->name, ek,
               m->payload ? sl_escape(m->payload, m->len, evl, sizeof(evl))
                          : "back to the default");
        if (sl_rates_generation(tp->rates) == gen)
                return;
        /* Decisions at the new rate start now, not at the old wake-up. */
        for (int p = 0; p < pl->partition_cnt; p++)
                if (pl->tasks && pl->tasks[p] &&
                    pl->tasks[p]->state == SL_TASK_RUNNING)
                        sl_task_wake_at(pl->tasks[p], sl_now_ms());
}

/* ------------------------------------------------------------------ */
/* The API's lookup (describe.h: the JSON shape).                      */

/* Every key has an answer: one without state runs at its rate with a full
 * bucket.  The rate is the table's now; a key whose cached rate is older
 * (a rates record just read: its partition is woken to apply it) is shown
 * as the switch will leave it. */
static struct json_t *throttle_describe(sl_task_t *t, const void *key,
                                        size_t keylen) {
        throttle_state_t *st = st_of(t);
        sl_describe_tkey_t v = {0};
        const sl_backlog_key_t *k;
        const sl_rate_t *kr;
        sl_tbucket_t b;
        int64_t now = sl_now_ms();

        v.key = key;
        v.keylen = keylen;
        v.partition = t->partition;
        v.source = sl_rates_lookup(st->tp->rates, key, keylen, &v.rate);
        v.oldest_received_ms = INT64_MIN;
        v.head_deadline_ms = INT64_MIN;
        v.next_send_ms = INT64_MIN;
        v.tokens = v.rate.burst;
        if (!(k = sl_backlog_find(st->bl, key, keylen)))
                return sl_describe_throttle_key(&v, now);
        v.tracked = 1;
        b = *sl_backlog_key_bucket(k);
        kr = sl_backlog_key_rate(k);
        if (kr->per_sec != v.rate.per_sec || kr->burst != v.rate.burst)
                sl_tbucket_set_rate(&b, kr, &v.rate, now);
        v.tokens = sl_tbucket_level(&b, &v.rate, now);
        v.backlog = sl_backlog_key_len(k);
        v.backlog_bytes = sl_backlog_key_bytes(k);
        if (v.backlog) {
                const sl_backlog_entry_t *e = sl_backlog_key_entry(k, 0);
                const void *p = sl_backlog_entry_payload(e);
                int64_t received;
                v.head_deadline_ms = e->deadline_ms;
                v.next_send_ms = sl_tbucket_next_ms(&b, &v.rate, now);
                v.fetching = sl_backlog_key_parked(k);
                if (p && overflow_received(p, sl_backlog_entry_size(e),
                                           &received) == 0)
                        v.oldest_received_ms = received;
        }
        return sl_describe_throttle_key(&v, now);
}

const sl_op_t sl_op_throttle = {
    .name = "throttle",
    .pipeline_init = throttle_pipeline_init,
    .pipeline_destroy = throttle_pipeline_destroy,
    .state_new = throttle_state_new,
    .state_destroy = throttle_state_destroy,
    .restore = throttle_restore,
    .restored = throttle_restored,
    .input = throttle_input,
    .wake = throttle_wake,
    .rebuild_source = throttle_rebuild_source,
    .restore_source = throttle_restore_source,
    .delivered = throttle_delivered,
    .precommit = throttle_precommit,
    .fetched = throttle_fetched,
    .table_topic = throttle_table_topic,
    .table = throttle_table,
    .describe = throttle_describe,
};
