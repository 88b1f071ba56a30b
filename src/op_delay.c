/* SPDX-License-Identifier: Apache-2.0 */
/*
 * op_delay.c — the delay operator: durable timers with cancel and
 * reschedule.
 *
 * STATE MODEL
 *
 *   changelog key    the timer id: the input record's key, or
 *                    "<partition>-<offset>" for a keyless record (such a
 *                    timer cannot be cancelled: its producer does not know
 *                    the id)
 *   changelog value  sluice.v1.Timer (proto/sluice.proto): due time, target
 *                    topic/key/partition, payload, pass-through headers, seq
 *   tombstone        written when the timer fires or is cancelled
 *   rebuild          apply the changelog in order: a value upserts the timer,
 *                    a tombstone removes it; then arm the earliest due time.
 *                    A due time outside [SL_DELAY_DUE_MIN_MS,
 *                    SL_DELAY_DUE_MAX_MS] (written before input was
 *                    range-checked) is clamped into it and counted
 *
 * In memory each partition holds a timer heap (timerheap.c): due order, ties
 * in arrival order (seq = the input offset that scheduled it, so the order is
 * the same after a rebuild), with an index by id for cancel and reschedule.
 * Its timers live in a slab of the partition's own (slab.c), apart from
 * malloc and librdkafka's buffers, and go at once when the partition is
 * revoked or rebuilt (state_destroy); a due timer is fired from where it
 * lies and then freed (sl_timerheap_drop_min).  Nothing of a consumed
 * record is kept: restore and input copy the id and the blob into the
 * heap, and the runtime destroys the message as soon as they return.
 * Each timer carries a compact blob rather than the protobuf record, to keep
 * the per-timer overhead small (the targets of the README's Benchmarks: ≤ 64
 * bytes beyond key and payload):
 *
 *   u8      flags (1: has target key, 2: has target partition, 4: null
 *           target key, 8: due on arrival, 16: recurring)
 *   u16     target topic index into the pipeline's interned topic table
 *   varint  target partition            (flag 2)
 *   varint  target key length, bytes    (flag 1)
 *   ...     the schedule (flag 16: delay_recurring.c's blob section)
 *   varint  header count, then per header: varint name length, name,
 *           varint value length + 1 (0 = null value), value
 *   ...     payload: the rest of the blob
 *
 * FIRING
 *
 * One uv timer per partition is armed for the earliest due time.  When it
 * fires, due timers are produced to their target with the pass-through
 * headers plus sluice-timer-id and sluice-due, and tombstoned in the
 * changelog, in the same transaction; the runtime commits promptly after.
 * After a rebuild the backlog of overdue timers fires at most catchup_rate
 * per second per partition (a token bucket, tbucket.c), and any wake-up
 * fires at most SL_DELAY_FIRE_MAX before yielding to the loop.
 *
 * RECURRING TIMERS
 *
 * A timer whose record has sluice-every or sluice-cron (blob flag 16)
 * comes back: firing it produces its occurrence and rewrites its changelog
 * record with the next instant in the same transaction, and the heap takes
 * it again at that instant (recur_advance; delay_recur_fire for the heap,
 * kx_recur_fire for the index).  The schedule, its catch-up after a
 * rebuild and its blob section are delay_recurring.c's, which has the
 * design.  With payload_topic a recurring timer stays resident, its whole
 * Timer record in the changelog (kx_add_resident): it fires again and
 * again, and reading its payload back each time would cost a fetch per
 * occurrence.
 *
 * LATENESS AND DRIFT
 *
 * sluice_timer_lateness_seconds and sluice_timer_drift_seconds measure how
 * late sluice fires timers, the figure operators page on.  A timer whose due
 * time had already passed when it was scheduled (sluice-at: 0, a countdown
 * the producer computed long ago) fires at once, and its "lateness" is the
 * producer's, not sluice's: such timers carry the due-on-arrival flag (due <
 * the Timer record's created_ms, so a rebuild recomputes it) and are counted
 * in sluice_timers_due_on_arrival_total instead.  Timers that fell due while
 * a partition was unowned or rebuilding are sluice's lateness and stay in.
 *
 * PAYLOADS IN KAFKA (payload_topic set)
 *
 * The timer service this operator replaces holds billions of timers; a
 * timer in the heap above costs its id and payload plus ~60 B.  With
 * payload_topic set, memory keeps an index (timerindex.h: the hash of the
 * id, the due time and where the timer's record lies, ~38 B a timer) and
 * the records live in Kafka:
 *
 *   payload topic   key = timer id, value = the Timer record the changelog
 *                   holds in the other mode; tombstoned when the timer
 *                   fires or is cancelled (compacted, co-partitioned)
 *   changelog       key = timer id, value = an index record (logpb.h: due
 *                   time, offset of the record in the payload topic), or a
 *                   Timer record written before payload_topic was set
 *
 * Writing.  A schedule produces the record to the payload topic as a
 * tracked record (task.h) and keeps it in memory, pinned, with a
 * provisional place (KX_PROV_BASE + the input offset: after every real
 * offset, in arrival order) until its delivery report gives its offset
 * (delivered, in produce order: the FIFO).  The precommit hook then writes
 * its index record, in the same transaction, and lets the record go unless
 * its timer is due within the look-ahead.  A fire or a cancel tombstones
 * both.  An index record is written once its offset is known, so it is
 * final, ~12 bytes, and a rebuild reads no payload.  (Periodic snapshots
 * of the index, as Pulsar's bucketed delayed delivery keeps, were the other
 * way: a format of their own, and a merge with what came after the last
 * one at each rebuild.  The compacted changelog is such a snapshot, kept
 * by Kafka: bench/NOTES.md has the 10M figures.)
 *
 * Rebuild.  The changelog gives the index (and keeps the Timer records of
 * before resident: they fire from memory, their changelog record is their
 * only copy).  Then the payload topic is read from just after the highest
 * offset the index names (rebuild_source): records whose index record is
 * missing are indexed from there (owed to the next precommit).  Both
 * records of a timer are written in one transaction, so that tail holds
 * what compaction has not yet removed of the timers scheduled after the
 * newest one pending and since fired or cancelled (about 1,500 records a
 * partition in bench delay_scale), and after an upgrade the whole topic.
 * A rebuild compares ids exactly: it keeps the id of every entry (idtab.h,
 * 24 B a timer with 16-byte ids), freed when it ends: a rebuild's peak
 * memory includes the ids, the steady state does not.
 *
 * Exact ids.  The index holds hashes; Kafka holds ids.  An input record
 * (or an API lookup) whose id hashes like pending timers compares its id
 * with theirs: a resident record's at once; for the others their records
 * are read back first, and the input record waits (sl_task_input_retry,
 * resumed by fetched()).  With 64-bit hashes a match is nearly always the
 * same id (a cancel or reschedule), so the cost falls on cancels and
 * reschedules of timers not due soon.  While the input waits, the records
 * behind the waiting one that the consumer already handed over are
 * peeked (delay_peek): the entries of their ids' hashes are wanted in the
 * same read, and the input goes on once all of them are back, so a run of
 * cancels costs one read pass, not a round trip each (bench/NOTES.md "What
 * a cancel and a reschedule cost").  The peek decides nothing: input()
 * compares the id when it takes the record.  Tests cut hashes to a few
 * bits (SLUICE_TEST_TIMER_HASH_BITS) to make every id collide.
 *
 * Reading back.  One read per partition (sl_task_fetch) serves a sorted
 * set of wanted offsets: the timers that fire next within KX_LOOKAHEAD_MS
 * (kx_plan), the ids to compare, and the timer due now.  The partitions
 * share payload_cache equally; a plan wants as many as the partition's
 * share has room for (counted at the mean size of what it holds), in one
 * walk of the index, made again when a quarter of the share is free.  What
 * stays in memory is thus the head of the firing order, and a mass of
 * timers falling due at once is read in long sequential runs while the
 * head fires (bench/NOTES.md "1M timers due at once").  The read goes on
 * across gaps of up to KX_FETCH_GAP records and seeks past longer ones
 * (bench/NOTES.md "Reading one record back by offset": 1-2k scattered
 * reads a second per partition on loopback, a sequential scan as they get
 * denser).  A wanted offset the read passes without finding (compacted
 * away, deleted), finds holding another id, or that lies past the
 * partition's high watermark although it was committed, marks its timer
 * missing: it goes to the DLQ at its due time as payload-missing, id
 * unknown.  Its index record stays (nothing here knows its key), named by
 * offset and due time in the partition's gone list (logpb.h; the
 * changelog record under the empty key, written in the same
 * transaction): the next rebuild, which knows every id, removes the index
 * records the list names without a second DLQ record.  A wanted offset
 * between where the read stopped and the high watermark waits: a
 * transaction not yet decided holds the read back (kx_missing_past).  A
 * rebuild, which knows every id, finds the index records whose offset lies
 * outside the payload topic (below its first offset: deleted; at or past
 * the end its read settled at: the topic made again) and
 * keeps their ids (kx_restored): those go to the DLQ keyed by id, and
 * their index records go.  Records read on the way are
 * kept only when due soon and the share has room; those read only to
 * compare an id leave KX_HELD_MS after the last id the input waited for
 * came back (never while it waits); over the share, the records that
 * fire last go first (kx_trim, in firing order).  A timer due whose record
 * is not back waits for it (lateness = the read), the wake-up polling every
 * KX_WAIT_POLL_MS meanwhile.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delay_input.h"
#include "describe.h"
#include "hash.h"
#include "idtab.h"
#include "kafka.h"
#include "log.h"
#include "logpb.h"
#include "metrics.h"
#include "opdef_delay.h"
#include "sluice.pb-c.h"
#include "task.h"
#include "tbucket.h"
#include "timerheap.h"
#include "timerindex.h"
#include "util.h"
#include "varint.h"

/* Timers fired per wake-up before yielding to the loop. */
#define SL_DELAY_FIRE_MAX      5000
#define SL_DELAY_MAX_TARGETS   65535
#define SL_BLOB_HAS_KEY        1
#define SL_BLOB_HAS_PARTITION  2
#define SL_BLOB_NULL_KEY       4  /* fire with a null key */
#define SL_BLOB_DUE_ON_ARRIVAL 8  /* already due when scheduled */
#define SL_BLOB_RECURRING      16 /* a recurring timer (delay_recurring.h) */

/* Payloads in Kafka: how far ahead payloads are read back (the earliest
 * timers due within this long, as many as payload_cache holds). */
#define KX_LOOKAHEAD_MS 60000
/* Ids wanted at once for input records not yet taken (delay_peek). */
#define KX_PEEK_MAX 256
/* The size of a record read back assumed before any was (delay_peek):
 * large, so that the first peeks ask for few. */
#define KX_READ_MEAN0 65536

/* Headers of an input record handled without allocation. */
#define SL_DELAY_HDRS_ON_STACK 16

typedef struct delay_pipeline_s {
        char **targets; /* interned target topic names */
        int target_cnt;
        sl_delay_params_t params; /* owns its internal topics' array */

        sl_counter_t *m_scheduled;
        sl_counter_t *m_rescheduled;
        sl_counter_t *m_cancelled;
        sl_counter_t *m_cancel_unknown;
        sl_counter_t *m_restore_bad;
        sl_counter_t *m_restore_clamped;
        sl_counter_t *m_due_on_arrival;
        sl_counter_t *m_payload_reads; /* payload_topic: records read back */
        sl_counter_t *m_id_waits; /* input waits for an id to be read back */
        sl_counter_t *m_id_peeks; /* ids asked for ahead of their input */
        /* Timers whose sluice-delay counted from the read time, by why
         * (index: sl_delay_base_t - SL_DELAY_BASE_READ_NO_TS). */
        sl_counter_t *m_read_base[3];
        sl_gauge_t *m_pending;
        sl_gauge_t *m_pending_bytes;
        sl_gauge_t *m_memory;
        sl_gauge_t *m_drift;
        sl_histogram_t *m_lateness;
        sl_pcap_t *c_timers; /* max_pending_timers */
        sl_pcap_t *c_bytes;  /* max_pending_bytes */
        /* Payloads in Kafka: the budget (payload_cache), shared equally by
         * the partitions this instance holds (kx_parts). */
        int64_t cache_budget;
        size_t kx_parts;
        int64_t lookahead_ms; /* KX_LOOKAHEAD_MS, or the tests' */
        uint64_t hash_mask;   /* all ones, or the tests' collisions */
        /* Input scratch (loop thread): the changelog Timer being packed and
         * the in-memory blob being built, reused by every record. */
        sl_scratch_t pack;
        sl_scratch_t blob;
        /* Recurring timers: the zones their schedules name (loop thread;
         * made on first use). */
        sl_tzcache_t *tzc;
} delay_pipeline_t;

/* Rebuild pipelining.  A rebuild applies 250k+ changelog records per
 * partition to a heap far larger than the CPU's caches, and each lookup
 * of a key was two cache misses in a row: the bucket, then the first
 * timer of its chain (22 % of the rebuild's CPU in one profile).  So a
 * record is decoded and its key hashed when it is read, and applied
 * RESTORE_LAG records later; meanwhile its bucket is prefetched at once
 * and its chain's first timer RESTORE_NEAR records on.  Records are
 * applied in the order they were read, all before the rebuild ends
 * (delay_restored). */
#define RESTORE_LAG  8
#define RESTORE_NEAR 4
#define RESTORE_KEY  48 /* keys up to this long are kept in the slot */

typedef struct restore_slot_s {
        char *key; /* keybuf, or a copy of a longer key */
        size_t keylen;
        char *blob; /* the timer's blob (owned); NULL: a tombstone */
        size_t bloblen;
        int64_t due_ms, seq;
        uint64_t hash;
        char keybuf[RESTORE_KEY];
} restore_slot_t;

/* With payloads in Kafka: a timer's record held in memory (its id and
 * blob), by the handle of its index entry. */
typedef struct kres_s {
        sl_hmap_link_t link; /* st->res */
        struct kres_s *next; /* the delivery FIFO */
        uint32_t handle;
        uint8_t pinned; /* its offset is not known: it cannot be read back */
        uint8_t dead;   /* its timer went while a list still held it */
        uint8_t lists;  /* on the delivery FIFO (1), the owed list (2) */
        int64_t due_ms;
        int64_t held_ms; /* read back only to compare its id: when (else 0) */
        int64_t seq;     /* the input offset that scheduled it */
        uint32_t idlen, bloblen;
        char buf[]; /* the id, then the blob */
} kres_t;

#define KRES_HASH(r)        ((uint64_t)(r)->handle)
#define KRES_EQ(r, h, k, n) ((r)->handle == *(const uint32_t *)(k))
SL_HMAP_DEFINE(rmap, kres_t, link, KRES_HASH, KRES_EQ)

/* An offset wanted from the payload topic, and the entry that wants it. */
typedef struct want_s {
        int64_t loc;
        uint32_t handle;
        uint8_t id; /* wanted to compare an id (the input waits for it) */
} want_t;

typedef struct delay_state_s {
        sl_timerheap_t *heap; /* payloads in memory; NULL in Kafka */
        /* Payloads in Kafka (payload_topic): the index, the records held
         * (res_bytes of ids and blobs), the payload records awaiting
         * their delivery report in produce order, the index records owed
         * to the changelog, the offsets wanted from the payload topic
         * (sorted), and the read that brings them. */
        sl_timerindex_t *ix;
        sl_hmap_t res;
        size_t res_bytes;
        kres_t *fifo_head, *fifo_tail;
        kres_t **owed;
        size_t owed_cnt, owed_cap;
        want_t *want;     /* the want_cnt live ones, inside want_buf */
        want_t *want_buf; /* want_cap long */
        size_t want_cnt, want_cap;
        size_t id_wants;     /* of them, wanted to compare an id (want_t.id) */
        int64_t ids_back_ms; /* when the last of those came back */
        size_t read_mean;    /* bytes of a record read back (a running mean) */
        int64_t plan_ms;     /* when kx_plan() last walked the index */
        int plan_short;      /* and found all it could want by then */
        int fetching;
        int64_t fetch_next; /* the offset the read delivers next */
        int64_t fetch_from; /* where the read last began (fetch_kick) */
        int fetch_fresh;    /* nothing served since it began there */
        size_t held_cnt;    /* records read back only to compare an id */
        /* Rebuild: ids by hash (exact), and the highest payload offset the
         * changelog indexes. */
        sl_idtab_t rb;
        int rb_on;
        int64_t ix_max_loc;
        /* Payload offsets up to loc_safe are committed (the rebuild read
         * them, or a transaction after theirs began); loc_prev is the
         * highest delivered by the last precommit, loc_txn by now. */
        int64_t loc_safe, loc_prev, loc_txn;
        int undecided_logged; /* the read's wait for one was logged */
        /* The gone list (logpb.h): timers sent to the DLQ as
         * payload-missing whose index records stay, by offset (ascending);
         * gone_dirty: changed since the changelog's copy. */
        sl_logpb_gone_t *gone;
        size_t gone_cnt, gone_cap;
        int gone_dirty;
        restore_slot_t restore[RESTORE_LAG]; /* records read, not applied */
        unsigned restore_head, restore_cnt;
        struct delay_pipeline_s *dp;
        int64_t catchup_until_ms; /* timers due before the rebuild ended */
        /* Paces them (tbucket.h, on the monotonic clock in ms). */
        sl_tbucket_t catchup;
        size_t pending_counted; /* what this partition added to the gauge */
        size_t bytes_counted;
        size_t memory_counted;
        size_t capb_counted; /* what it added to max_pending_bytes */
        /* Due time of this partition's earliest pending timer, 0 for none:
         * time() minus it grows while firing is stopped (an alert's
         * measure, where the drift gauge stays at its last value). */
        sl_gauge_t *m_oldest_due;
} delay_state_t;

static const char *kx_topic(const sl_pipeline_conf_t *pc);
static void rb_free(delay_state_t *st);
static uint32_t rb_find(const delay_state_t *st, uint64_t hash, const void *id,
                        size_t idlen);
static void kx_restore(sl_task_t *t, const rd_kafka_message_t *m);
static void kx_restored(sl_task_t *t);

static delay_pipeline_t *dp_of(sl_task_t *t) {
        return t->pl->op_data;
}

/* ------------------------------------------------------------------ */
/* Blob codec.                                                         */

static void blob_varint(sl_buf_t *b, uint64_t v) {
        uint8_t tmp[SL_VARINT_MAX];
        sl_buf_put(b, tmp, sl_varint_put(tmp, v));
}

typedef struct blob_reader_s {
        const uint8_t *p, *end;
        int bad;
} blob_reader_t;

static uint64_t rd_varint(blob_reader_t *r) {
        uint64_t v;
        if (sl_varint_get(&r->p, r->end, &v) == 0)
                return v;
        r->bad = 1;
        return 0;
}

static const void *rd_bytes(blob_reader_t *r, size_t n) {
        const void *p = r->p;
        if ((size_t)(r->end - r->p) < n) {
                r->bad = 1;
                return NULL;
        }
        r->p += n;
        return p;
}

/* The decoded view of a blob (pointers into it). */
typedef struct fire_view_s {
        int target_idx;
        int32_t partition; /* -1: partitioner */
        const void *key;
        size_t keylen;
        int has_key;
        int null_key;
        int due_on_arrival;
        int recurring;
        sl_recur_t recur;            /* when recurring */
        size_t recur_off, recur_end; /* its section in the blob */
        size_t hdr_cnt;
        const uint8_t *hdrs; /* encoded headers, hdr_cnt of them */
        const void *payload;
        size_t payload_len;
} fire_view_t;

static int blob_decode(const void *data, size_t len, fire_view_t *v) {
        blob_reader_t r = {data, (const uint8_t *)data + len, 0};
        const uint8_t *flags = rd_bytes(&r, 1);
        const uint8_t *idx = rd_bytes(&r, 2);
        if (!flags || !idx)
                return -1;
        memset(v, 0, sizeof(*v));
        v->target_idx = idx[0] | (idx[1] << 8);
        v->partition = -1;
        v->null_key = !!(*flags & SL_BLOB_NULL_KEY);
        v->due_on_arrival = !!(*flags & SL_BLOB_DUE_ON_ARRIVAL);
        if (*flags & SL_BLOB_HAS_PARTITION)
                v->partition = (int32_t)rd_varint(&r);
        if (*flags & SL_BLOB_HAS_KEY) {
                v->has_key = 1;
                v->keylen = rd_varint(&r);
                v->key = rd_bytes(&r, v->keylen);
        }
        if ((*flags & SL_BLOB_RECURRING) && !r.bad) {
                v->recurring = 1;
                v->recur_off = (size_t)(r.p - (const uint8_t *)data);
                if (sl_recur_blob_get(&r.p, r.end, &v->recur))
                        r.bad = 1;
                v->recur_end = (size_t)(r.p - (const uint8_t *)data);
        }
        v->hdr_cnt = rd_varint(&r);
        v->hdrs = r.p;
        for (size_t i = 0; i < v->hdr_cnt && !r.bad; i++) {
                size_t n = rd_varint(&r);
                rd_bytes(&r, n);
                n = rd_varint(&r);
                if (n)
                        rd_bytes(&r, n - 1);
        }
        v->payload = r.p;
        v->payload_len = (size_t)(r.end - r.p);
        return r.bad ? -1 : 0;
}

/* 1 when a blob is a recurring timer's (its flags byte says so). */
static int blob_recurring(const void *data, size_t len) {
        return len && (*(const uint8_t *)data & SL_BLOB_RECURRING);
}

/* Adds the encoded headers of a view to hdrs. */
static void blob_headers(const fire_view_t *v, const void *end,
                         rd_kafka_headers_t *hdrs) {
        blob_reader_t r = {v->hdrs, end, 0};
        for (size_t i = 0; i < v->hdr_cnt && !r.bad; i++) {
                size_t nlen = rd_varint(&r);
                const char *name = rd_bytes(&r, nlen);
                size_t vlen = rd_varint(&r);
                const void *val = vlen ? rd_bytes(&r, vlen - 1) : NULL;
                if (r.bad)
                        break;
                rd_kafka_header_add(hdrs, name, (ssize_t)nlen, val,
                                    vlen ? (ssize_t)(vlen - 1) : 0);
        }
}

/* ------------------------------------------------------------------ */
/* Targets.                                                            */

static int target_index(delay_pipeline_t *dp, const char *name, size_t len) {
        for (int i = 0; i < dp->target_cnt; i++)
                if (strlen(dp->targets[i]) == len &&
                    !memcmp(dp->targets[i], name, len))
                        return i;
        if (dp->target_cnt >= SL_DELAY_MAX_TARGETS)
                return -1;
        dp->targets = sl_realloc(dp->targets,
                                 sizeof(char *) * (size_t)(dp->target_cnt + 1));
        dp->targets[dp->target_cnt] = sl_strndup(name, len);
        return dp->target_cnt++;
}

/* ------------------------------------------------------------------ */
/* Gauges: each partition adds its delta to the pipeline's gauges.      */

static void delay_update_gauges(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        size_t n, b, mem, capb;
        if (st->ix) {
                /* What memory holds: the index, and the records resident
                 * (with their map and the lists' arrays); the byte cap
                 * counts all of it. */
                n = sl_timerindex_count(st->ix);
                b = st->res_bytes;
                mem = sl_timerindex_memory(st->ix) + b +
                      sl_hmap_count(&st->res) * sizeof(kres_t) +
                      sl_hmap_memory(&st->res) +
                      st->want_cap * sizeof(*st->want_buf) +
                      st->owed_cap * sizeof(*st->owed);
                capb = mem;
        } else {
                n = sl_timerheap_count(st->heap);
                b = sl_timerheap_bytes(st->heap);
                mem = sl_timerheap_memory(st->heap);
                capb = b;
        }
        sl_gauge_add_owner(dp->m_pending,
                           (double)n - (double)st->pending_counted);
        sl_gauge_add_owner(dp->m_pending_bytes,
                           (double)b - (double)st->bytes_counted);
        sl_gauge_add_owner(dp->m_memory,
                           (double)mem - (double)st->memory_counted);
        if (st->ix) {
                uint32_t h = sl_timerindex_min(st->ix);
                sl_gauge_set(st->m_oldest_due,
                             h == SL_TIMERINDEX_NONE
                                 ? 0
                                 : (double)sl_timerindex_due(st->ix, h) / 1e3);
        } else {
                const sl_timer_t *top = sl_timerheap_peek(st->heap);
                sl_gauge_set(st->m_oldest_due,
                             top ? (double)top->due_ms / 1e3 : 0);
        }
        sl_pcap_add(dp->c_timers, (int64_t)n - (int64_t)st->pending_counted);
        sl_pcap_add(dp->c_bytes, (int64_t)capb - (int64_t)st->capb_counted);
        st->pending_counted = n;
        st->bytes_counted = b;
        st->capb_counted = capb;
        st->memory_counted = mem;
}

/* ------------------------------------------------------------------ */
/* Operator callbacks.                                                 */

#define READ_BASE_HELP                                                         \
        "Timers whose sluice-delay (or countdown) counted from the read "      \
        "time, not the record's timestamp: missing, too far in the future "    \
        "(timestamp_skew) or before 2010."

/* The pipeline's series (labelled pipeline="<name>"). */
static const sl_metric_def_t delay_metrics[] = {
    SL_METRICS_COUNTER(delay_pipeline_t, m_scheduled,
                       "sluice_timers_scheduled_total",
                       "Timers scheduled (new ids)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_rescheduled,
                       "sluice_timers_rescheduled_total",
                       "Timers rescheduled (an id seen again while pending)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_cancelled,
                       "sluice_timers_cancelled_total",
                       "Pending timers cancelled by a null-value record."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_cancel_unknown,
                       "sluice_timers_cancel_unknown_total",
                       "Cancels for ids with no pending timer (harmless)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_restore_bad,
                       "sluice_changelog_bad_records_total",
                       "Changelog records that could not be decoded or name a "
                       "target sluice never writes to (skipped)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_restore_clamped,
                       "sluice_timers_restore_clamped_total",
                       "Restored timers whose due time lay outside 1970 to "
                       "year 9999 (clamped into it)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_due_on_arrival,
                       "sluice_timers_due_on_arrival_total",
                       "Timers fired whose due time had passed before they "
                       "were scheduled (not counted in lateness or drift)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_payload_reads,
                       "sluice_timer_payload_reads_total",
                       "With payload_topic: timer records read back from it "
                       "into memory (ahead of their due time, or to compare "
                       "an id)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_id_waits,
                       "sluice_timer_id_waits_total",
                       "With payload_topic: input records that waited for "
                       "the records of pending timers whose id hash matched "
                       "theirs to be read back (ids are compared, never "
                       "their hashes alone)."),
    SL_METRICS_COUNTER(delay_pipeline_t, m_id_peeks,
                       "sluice_timer_id_peeks_total",
                       "With payload_topic: input records after one that "
                       "waited for an id whose own ids' records were asked "
                       "for in the same read back."),
    SL_METRICS_GAUGE(delay_pipeline_t, m_pending, "sluice_timers_pending",
                     "Timers waiting to fire."),
    SL_METRICS_GAUGE(delay_pipeline_t, m_pending_bytes,
                     "sluice_timers_pending_bytes",
                     "Key and data bytes held by pending timers."),
    SL_METRICS_GAUGE(delay_pipeline_t, m_memory, "sluice_timers_memory_bytes",
                     "Memory the pending timers occupy: their slabs (touched "
                     "chunks) and the heap and hash arrays."),
    SL_METRICS_GAUGE(delay_pipeline_t, m_drift, "sluice_timer_drift_seconds",
                     "Now minus the due time of the last fired timer (timers "
                     "due on arrival excluded)."),
    SL_METRICS_COUNTER_L(delay_pipeline_t, m_read_base[0],
                         "sluice_timers_read_time_base_total", READ_BASE_HELP,
                         "reason", "missing"),
    SL_METRICS_COUNTER_L(delay_pipeline_t, m_read_base[1],
                         "sluice_timers_read_time_base_total", READ_BASE_HELP,
                         "reason", "future"),
    SL_METRICS_COUNTER_L(delay_pipeline_t, m_read_base[2],
                         "sluice_timers_read_time_base_total", READ_BASE_HELP,
                         "reason", "past"),
};

/* max_pending_timers, -1 (the default) read: 5M timers in memory are
 * ~0.3 GiB beyond their keys and payloads; 20M indexed with payload_topic
 * are ~0.8 GiB, ~1.6 GiB while rebuilt (bench/NOTES.md), within a 2 GiB
 * container. */
static int64_t delay_timers_cap(const sl_pipeline_conf_t *pc,
                                const sl_delay_conf_t *dc) {
        if (dc->max_pending_timers >= 0)
                return dc->max_pending_timers;
        return kx_topic(pc) ? 20000000 : 5000000;
}

static int delay_pipeline_init(sl_pipeline_t *pl, char *errstr,
                               size_t errstr_size) {
        const sl_pipeline_conf_t *pc = pl->conf;
        sl_metrics_t *m = sl_pipeline_metrics_registry(pl);
        delay_pipeline_t *dp = sl_calloc(1, sizeof(*dp));
        const sl_delay_conf_t *dc = sl_delay_conf(pc);
        const char *name = pc->name;
        (void)errstr;
        (void)errstr_size;

        sl_delay_params_init(&dp->params, sl_pipeline_sluice_conf(pl), pc);

        sl_metrics_register(m, delay_metrics, SL_ARRAY_SIZE(delay_metrics), dp,
                            name);
        dp->m_lateness = sl_metrics_histogram(
            m, "sluice_timer_lateness_seconds",
            "Due time to produced (before the transaction commits; timers "
            "due on arrival excluded).",
            sl_metrics_buckets_latency, sl_metrics_buckets_latency_cnt,
            "pipeline", name, NULL);
        dp->c_timers =
            sl_pipeline_cap(pl, "max_pending_timers", "pending timers",
                            delay_timers_cap(pc, dc));
        dp->c_bytes =
            sl_pipeline_cap(pl, "max_pending_bytes", "bytes of pending timers",
                            dc->max_pending_bytes);
        dp->cache_budget = dc->payload_cache_bytes;
        dp->lookahead_ms = KX_LOOKAHEAD_MS;
        dp->hash_mask = UINT64_MAX;
        /* For tests only: a short look-ahead (payloads leave memory), and
         * hashes cut to a few bits (every id collides with others). */
        if (getenv("SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS"))
                dp->lookahead_ms =
                    atoll(getenv("SLUICE_TEST_PAYLOAD_LOOKAHEAD_MS"));
        if (getenv("SLUICE_TEST_TIMER_HASH_BITS"))
                dp->hash_mask = ((uint64_t)1 << atoi(
                                     getenv("SLUICE_TEST_TIMER_HASH_BITS"))) -
                                1;
        pl->op_data = dp;
        return 0;
}

static void delay_pipeline_destroy(sl_pipeline_t *pl) {
        delay_pipeline_t *dp = pl->op_data;
        if (!dp)
                return;
        for (int i = 0; i < dp->target_cnt; i++)
                free(dp->targets[i]);
        free(dp->targets);
        sl_delay_params_clear(&dp->params);
        sl_scratch_free(&dp->pack);
        sl_scratch_free(&dp->blob);
        sl_tzcache_destroy(dp->tzc);
        free(dp);
        pl->op_data = NULL;
}

static void *delay_state_new(sl_task_t *t) {
        delay_state_t *st = sl_calloc(1, sizeof(*st));
        char part[16];
        st->dp = dp_of(t);
        snprintf(part, sizeof(part), "%" PRId32, t->partition);
        st->m_oldest_due = sl_metrics_gauge(
            sl_pipeline_metrics_registry(t->pl),
            "sluice_timer_oldest_due_timestamp_seconds",
            "Due time (Unix seconds) of the partition's earliest pending "
            "timer, 0 when none is pending: time() minus it is how overdue "
            "the oldest timer is, growing while none fires.",
            "pipeline", t->pl->conf->name, "partition", part, NULL);
        if (kx_topic(t->pl->conf)) {
                st->ix = sl_timerindex_new(0);
                st->dp->kx_parts++;
                sl_hmap_init(&st->res, 64, 1, 0);
                st->rb_on = 1;
                st->ix_max_loc = -1;
                st->loc_safe = st->loc_prev = st->loc_txn = -1;
                st->read_mean = KX_READ_MEAN0;
        } else {
                st->heap = sl_timerheap_new_slab();
        }
        return st;
}

static void restore_slot_clear(restore_slot_t *s) {
        if (s->key != s->keybuf)
                free(s->key);
        free(s->blob);
        s->key = NULL;
        s->blob = NULL;
}

/* Applies the oldest record read. */
static void restore_apply_one(delay_state_t *st) {
        restore_slot_t *s = &st->restore[st->restore_head];
        if (s->blob)
                sl_timerheap_upsert_hashed(st->heap, s->hash, s->key, s->keylen,
                                           s->due_ms, s->seq, s->blob,
                                           s->bloblen);
        else
                sl_timerheap_remove_hashed(st->heap, s->hash, s->key,
                                           s->keylen);
        restore_slot_clear(s);
        st->restore_head = (st->restore_head + 1) % RESTORE_LAG;
        st->restore_cnt--;
}

/* A changelog record read: a timer (blob, whose buffer the slot takes) or
 * a tombstone (blob NULL).  Applies the record read RESTORE_LAG ago. */
static void restore_push(delay_state_t *st, const void *key, size_t keylen,
                         int64_t due_ms, int64_t seq, sl_buf_t *blob) {
        restore_slot_t *s;
        if (st->restore_cnt == RESTORE_LAG)
                restore_apply_one(st);
        s = &st->restore[(st->restore_head + st->restore_cnt) % RESTORE_LAG];
        s->key = keylen <= RESTORE_KEY ? s->keybuf : sl_malloc(keylen);
        memcpy(s->key, key, keylen);
        s->keylen = keylen;
        s->blob = blob ? blob->p : NULL;
        s->bloblen = blob ? blob->len : 0;
        if (blob)
                blob->p = NULL;
        s->due_ms = due_ms;
        s->seq = seq;
        s->hash = sl_hash(key, keylen);
        sl_timerheap_prefetch(st->heap, s->hash);
        st->restore_cnt++;
        if (st->restore_cnt > RESTORE_NEAR)
                sl_timerheap_prefetch_chain(
                    st->heap, st->restore[(st->restore_head + st->restore_cnt -
                                           1 - RESTORE_NEAR) %
                                          RESTORE_LAG]
                                  .hash);
}

/* Applies every record read. */
static void restore_drain(delay_state_t *st) {
        while (st->restore_cnt)
                restore_apply_one(st);
}

/* The gauges are pipeline-wide: a destroyed partition takes its share. */
static void delay_state_destroy(void *state) {
        delay_state_t *st = state;
        if (!st)
                return;
        while (st->restore_cnt) {
                restore_slot_clear(&st->restore[st->restore_head]);
                st->restore_head = (st->restore_head + 1) % RESTORE_LAG;
                st->restore_cnt--;
        }
        sl_gauge_add_owner(st->dp->m_pending, -(double)st->pending_counted);
        sl_gauge_add_owner(st->dp->m_pending_bytes, -(double)st->bytes_counted);
        sl_gauge_add_owner(st->dp->m_memory, -(double)st->memory_counted);
        sl_gauge_set(st->m_oldest_due, 0);
        sl_pcap_add(st->dp->c_timers, -(int64_t)st->pending_counted);
        sl_pcap_add(st->dp->c_bytes, -(int64_t)st->capb_counted);
        sl_timerheap_destroy(st->heap);
        if (st->ix) {
                /* Every record once: those a list holds are freed by it. */
                for (size_t i = 0; i < st->res.nbuckets; i++) {
                        sl_hmap_link_t *l = st->res.buckets[i], *next;
                        for (; l; l = next) {
                                kres_t *r = rmap_entry(l);
                                next = l->next;
                                if (r->lists)
                                        r->dead = 1;
                                else
                                        free(r);
                        }
                }
                sl_hmap_fini(&st->res);
                while (st->fifo_head) {
                        kres_t *r = st->fifo_head;
                        st->fifo_head = r->next;
                        r->lists &= (uint8_t)~1;
                        if (!r->lists)
                                free(r);
                }
                for (size_t i = 0; i < st->owed_cnt; i++) {
                        kres_t *r = st->owed[i];
                        r->lists &= (uint8_t)~2;
                        if (!r->lists)
                                free(r);
                }
                free(st->owed);
                free(st->want_buf);
                free(st->gone);
                rb_free(st);
                st->dp->kx_parts--;
                sl_timerindex_destroy(st->ix);
        }
        free(st);
}

/* Builds the in-memory blob for a timer. */
static int delay_blob(delay_pipeline_t *dp, sl_buf_t *b, uint8_t flags,
                      const char *target, size_t target_len, int32_t partition,
                      int has_key, const void *key, size_t keylen,
                      const sl_recur_t *recur, size_t hdr_cnt,
                      const char *const *hnames, const size_t *hnamelens,
                      const void *const *hvals, const size_t *hvallens,
                      const void *payload, size_t payload_len) {
        int idx = target_index(dp, target, target_len);
        uint8_t idxb[2];
        if (idx < 0)
                return -1;
        sl_assert(!(flags & (SL_BLOB_HAS_KEY | SL_BLOB_HAS_PARTITION)));
        if (has_key)
                flags |= SL_BLOB_HAS_KEY;
        if (recur)
                flags |= SL_BLOB_RECURRING;
        if (partition >= 0)
                flags |= SL_BLOB_HAS_PARTITION;
        idxb[0] = (uint8_t)(idx & 0xff);
        idxb[1] = (uint8_t)(idx >> 8);
        sl_buf_put(b, &flags, 1);
        sl_buf_put(b, idxb, 2);
        if (partition >= 0)
                blob_varint(b, (uint64_t)partition);
        if (has_key) {
                blob_varint(b, keylen);
                sl_buf_put(b, key, keylen);
        }
        if (recur)
                sl_recur_blob_put(b, recur);
        blob_varint(b, hdr_cnt);
        for (size_t i = 0; i < hdr_cnt; i++) {
                blob_varint(b, hnamelens[i]);
                sl_buf_put(b, hnames[i], hnamelens[i]);
                if (!hvals[i]) {
                        blob_varint(b, 0);
                } else {
                        blob_varint(b, hvallens[i] + 1);
                        sl_buf_put(b, hvals[i], hvallens[i]);
                }
        }
        sl_buf_put(b, payload, payload_len);
        return 0;
}

/* Why a restored timer's target is refused, or NULL: the changelog is
 * read back as it is, so it gets the input's rules for where a timer may
 * write (delay_input.c) — never an internal topic of sluice or Kafka. */
static const char *restore_target_refused(const delay_pipeline_t *dp,
                                          const char *target) {
        size_t len = strlen(target);
        if (!len || len > SL_TOPICNAME_MAX)
                return "not a topic name (empty or too long)";
        return sl_delay_target_internal(&dp->params, target);
}

/* Turns a Timer record (sluice.v1.Timer: the changelog's, or the payload
 * topic's) read at offset into a blob in *b (the caller frees b->p) with
 * its due time and seq: 0, or -1 when it is skipped (counted and
 * logged). */
static int timer_record_blob(sl_task_t *t, int64_t offset, const void *value,
                             size_t len, sl_buf_t *b, int64_t *duep,
                             int64_t *seqp) {
        delay_pipeline_t *dp = dp_of(t);
        sl_logpb_timer_t tm;
        char target[SL_TOPICNAME_MAX + 1];
        const char *why;
        sl_recur_t recur;
        char err[200], why_sched[240];
        int r = -1, recurring;

        if (sl_logpb_timer_read(&tm, value, len) < 0 || !tm.target_topic_len) {
                sl_counter_inc(dp->m_restore_bad);
                sl_log(LOG_WARNING, "REBUILD",
                       "%s [%d] @%" PRId64 ": undecodable timer record skipped",
                       t->pl->conf->name, t->partition, offset);
                sl_logpb_timer_free(&tm);
                return -1;
        }
        if (tm.target_topic_len > SL_TOPICNAME_MAX) {
                why = "not a topic name (empty or too long)";
        } else {
                memcpy(target, tm.target_topic, tm.target_topic_len);
                target[tm.target_topic_len] = '\0';
                why = restore_target_refused(dp, target);
        }
        recurring = tm.every_len || tm.cron_len;
        if (!why && recurring &&
            sl_recur_from_record(&recur, tm.every, tm.every_len, tm.cron,
                                 tm.cron_len, tm.tz, tm.tz_len, tm.start_ms,
                                 tm.until_ms, tm.count, tm.catch_up, tm.fired,
                                 tm.last_fired_ms, err, sizeof(err)) < 0) {
                snprintf(why_sched, sizeof(why_sched),
                         "unreadable (its schedule: %s)", err);
                why = why_sched;
        }
        if (why) {
                sl_counter_inc(dp->m_restore_bad);
                sl_log(LOG_WARNING, "REBUILD",
                       "%s [%d] @%" PRId64 ": timer record skipped: %s%s",
                       t->pl->conf->name, t->partition, offset,
                       why == why_sched ? "" : "its target is ", why);
                sl_logpb_timer_free(&tm);
                return -1;
        }
        {
                size_t n = tm.n_headers;
                int64_t due = tm.due_ms;
                uint8_t flags = 0;
                /* A timer's headers: most have none or a few. */
                const char *hn_s[8];
                size_t hnl_s[8], hvl_s[8];
                const void *hv_s[8];
                int few = n < 8;
                const char **hn = few ? hn_s : sl_calloc(n + 1, sizeof(char *));
                size_t *hnl = few ? hnl_s : sl_calloc(n + 1, sizeof(size_t));
                const void **hv = few ? hv_s : sl_calloc(n + 1, sizeof(void *));
                size_t *hvl = few ? hvl_s : sl_calloc(n + 1, sizeof(size_t));
                for (size_t i = 0; i < n; i++) {
                        const sl_logpb_timer_hdr_t *h = &tm.headers[i];
                        hn[i] = h->name;
                        hnl[i] = h->name_len;
                        hv[i] = h->null_value
                                    ? NULL
                                    : (h->value ? (const void *)h->value : "");
                        hvl[i] = h->value_len;
                }
                if (due < SL_DELAY_DUE_MIN_MS || due > SL_DELAY_DUE_MAX_MS) {
                        /* Written before input was range-checked: keep
                         * the timer, at a due time arithmetic can bear. */
                        due = due < SL_DELAY_DUE_MIN_MS ? SL_DELAY_DUE_MIN_MS
                                                        : SL_DELAY_DUE_MAX_MS;
                        sl_counter_inc(dp->m_restore_clamped);
                        sl_log(LOG_WARNING, "REBUILD",
                               "%s [%d] @%" PRId64 ": timer due at %" PRId64
                               " clamped to %" PRId64,
                               t->pl->conf->name, t->partition, offset,
                               tm.due_ms, due);
                }
                /* A recurring timer's lateness is sluice's. */
                if (tm.due_ms < tm.created_ms && !recurring)
                        flags |= SL_BLOB_DUE_ON_ARRIVAL;
                if (tm.null_target_key)
                        flags |= SL_BLOB_NULL_KEY;
                if (delay_blob(dp, b, flags, target, tm.target_topic_len,
                               tm.target_partition,
                               tm.has_target_key && !tm.null_target_key,
                               tm.target_key, tm.target_key_len,
                               recurring ? &recur : NULL, n, hn, hnl, hv, hvl,
                               tm.payload, tm.payload_len) == 0) {
                        *duep = due;
                        *seqp = tm.seq;
                        r = 0;
                } else {
                        sl_counter_inc(dp->m_restore_bad);
                }
                if (!few) {
                        free(hn);
                        free(hnl);
                        free(hv);
                        free(hvl);
                }
        }
        sl_logpb_timer_free(&tm);
        return r;
}

static void delay_restore(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        sl_buf_t b = {0};
        int64_t due, seq;

        if (st->ix) {
                kx_restore(t, m);
                return;
        }
        if (!m->key || !m->key_len) {
                sl_counter_inc(dp->m_restore_bad);
                return;
        }
        if (!m->payload) {
                restore_push(st, m->key, m->key_len, 0, 0, NULL);
                return;
        }
        if (timer_record_blob(t, m->offset, m->payload, m->len, &b, &due,
                              &seq) == 0)
                restore_push(st, m->key, m->key_len, due, seq, &b);
        free(b.p);
}

static void delay_arm(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        const sl_timer_t *next = sl_timerheap_peek(st->heap);
        sl_task_wake_at(t, 0);
        if (next)
                sl_task_wake_at(t, next->due_ms > 0 ? next->due_ms : 1);
}

static void delay_restored(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        sl_rate_t cr = sl_tbucket_pace_rate((double)t->pl->conf->catchup_rate);
        if (!st->ix)
                restore_drain(st);
        /* What fell due while nobody owned the partition fires at the
         * bounded catch-up rate; everything due later fires unthrottled. */
        st->catchup_until_ms = sl_now_ms();
        sl_tbucket_init(&st->catchup, &cr, sl_mono_us() / 1000);
        delay_update_gauges(t);
        if (st->ix)
                kx_restored(t);
        else
                delay_arm(t);
}

/* Sends a fired timer that cannot be delivered to the DLQ: its payload
 * and headers, cut to fit when they must be (sl_task_dlq_send). */
/* A timer as it fires: its id, due time and blob (delay_blob()), from the
 * heap or, with payloads in Kafka, from a resident record. */
typedef struct fire_timer_s {
        const void *id;
        size_t idlen;
        int64_t due_ms;
        const void *blob;
        size_t bloblen;
        int64_t occurrence; /* a recurring timer's: 1, 2, ...; else 0 */
} fire_timer_t;

static void delay_fire_dlq(sl_task_t *t, const fire_timer_t *tm,
                           const fire_view_t *v, const char *reason,
                           const char *detail) {
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *src, *hdrs;
        char buf[32], id[100];

        sl_task_dlq_count(t, reason);
        sl_log(LOG_WARNING, "DELAY", "%s [%d]: timer '%s': %s: %s", pc->name,
               t->partition, sl_escape(tm->id, tm->idlen, id, sizeof(id)),
               reason, detail);
        if (!pc->dlq)
                return;
        src = rd_kafka_headers_new(v->hdr_cnt ? v->hdr_cnt : 1);
        blob_headers(v, (const char *)tm->blob + tm->bloblen, src);
        hdrs = rd_kafka_headers_new(4);
        rd_kafka_header_add(hdrs, "sluice-error", -1, reason, -1);
        rd_kafka_header_add(hdrs, "sluice-error-detail", -1, detail, -1);
        rd_kafka_header_add(hdrs, "sluice-timer-id", -1, tm->id,
                            (ssize_t)tm->idlen);
        snprintf(buf, sizeof(buf), "%" PRId64, tm->due_ms);
        rd_kafka_header_add(hdrs, "sluice-due", -1, buf, -1);
        sl_task_dlq_send(t, tm->id, tm->idlen, v->payload, v->payload_len, src,
                         hdrs);
        rd_kafka_headers_destroy(src);
}

/* now - due, saturated: a due time restored from the changelog (or given
 * as sluice-at) may be anywhere in int64. */
static int64_t delay_late_ms(int64_t now, int64_t due) {
        int64_t late;
        if (__builtin_sub_overflow(now, due, &late))
                return due < 0 ? INT64_MAX : INT64_MIN;
        return late;
}

/* Produces one due timer; the caller tombstones it (or, recurring, takes
 * it again).  Returns 1 when the target refused it as too large (a
 * recurring timer's every occurrence would be), else 0. */
static int delay_fire_one(sl_task_t *t, const fire_timer_t *tm, int64_t now) {
        delay_pipeline_t *dp = dp_of(t);
        fire_view_t v;
        rd_kafka_headers_t *hdrs;
        const char *target;
        char buf[32];
        int r, parts, too_large = 0;
        int64_t late;

        if (blob_decode(tm->blob, tm->bloblen, &v) == -1 ||
            v.target_idx >= dp->target_cnt) {
                sl_assert(!"timer blob corrupt");
        }
        target = dp->targets[v.target_idx];
        /* The timer's id and due time name this work across replays. */
        sl_task_origin(t, tm->id, tm->idlen, tm->due_ms);
        /* No target is internal: input refuses such timers, and restore
         * skips them (restore_target_refused) with the current config. */
        if ((parts = sl_task_topic_partitions(t, target)) == 0) {
                delay_fire_dlq(t, tm, &v, "target-missing",
                               "the target topic no longer exists");
        } else if (parts == SL_TOPIC_FORBIDDEN) {
                delay_fire_dlq(t, tm, &v, "target-refused",
                               "not authorized: WRITE on the target");
        } else if (v.partition >= 0 && parts > 0 && v.partition >= parts) {
                delay_fire_dlq(t, tm, &v, "bad-target-partition",
                               "the target has fewer partitions now");
        } else {
                hdrs = rd_kafka_headers_new(v.hdr_cnt + 3);
                blob_headers(&v, (const char *)tm->blob + tm->bloblen, hdrs);
                rd_kafka_header_add(hdrs, "sluice-timer-id", -1, tm->id,
                                    (ssize_t)tm->idlen);
                snprintf(buf, sizeof(buf), "%" PRId64, tm->due_ms);
                rd_kafka_header_add(hdrs, "sluice-due", -1, buf, -1);
                if (tm->occurrence > 0) {
                        snprintf(buf, sizeof(buf), "%" PRId64, tm->occurrence);
                        rd_kafka_header_add(hdrs, "sluice-occurrence", -1, buf,
                                            -1);
                }
                r = sl_task_produce(t, target,
                                    v.partition >= 0 ? v.partition
                                                     : RD_KAFKA_PARTITION_UA,
                                    v.null_key  ? NULL
                                    : v.has_key ? v.key
                                                : tm->id,
                                    v.null_key  ? 0
                                    : v.has_key ? v.keylen
                                                : tm->idlen,
                                    v.payload, v.payload_len, hdrs);
                if (r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
                        delay_fire_dlq(t, tm, &v, "too-large",
                                       sl_task_refused_why(t));
                        too_large = 1;
                } else if (r < 0)
                        delay_fire_dlq(
                            t, tm, &v, "target-refused",
                            rd_kafka_err2str((rd_kafka_resp_err_t)-r));
                else
                        sl_counter_inc_owner(t->pl->metrics->records_out);
        }
        /* Due times are within [SL_DELAY_DUE_MIN_MS, SL_DELAY_DUE_MAX_MS]
         * (checked on input, clamped on restore); the difference saturates
         * all the same. */
        if (v.due_on_arrival) {
                sl_counter_inc(dp->m_due_on_arrival);
        } else {
                late = delay_late_ms(now, tm->due_ms);
                sl_histogram_observe(dp->m_lateness,
                                     (double)SL_MAX(0, late) / 1000.0);
                sl_gauge_set(dp->m_drift, (double)late / 1000.0);
        }
        return too_large;
}

/* ------------------------------------------------------------------ */
/* Recurring timers (delay_recurring.c has the design).                 */

/* The recurring fields of a Timer record (proto/sluice.proto 12-20) from
 * r; their strings are copied into strs (NUL-terminated, as protobuf-c
 * wants them), freed by recur_fields_free() once the record is packed. */
static void recur_fields(Sluice__V1__Timer *tm, const sl_recur_t *r,
                         char *strs[2]) {
        strs[0] = sl_strndup(r->expr, r->expr_len);
        strs[1] = sl_strndup(r->tz_len ? r->tz : "", r->tz_len);
        if (r->sched.kind == SL_SCHEDULE_EVERY)
                tm->every = strs[0];
        else
                tm->cron = strs[0];
        tm->tz = strs[1];
        tm->start_ms = sl_recur_start_field(r);
        tm->until_ms = sl_recur_until_field(r);
        tm->count = r->sched.count;
        tm->catch_up = r->catch_up;
        tm->fired = r->fired;
        tm->last_fired_ms = r->last_ms;
}

static void recur_fields_free(char *strs[2]) {
        free(strs[0]);
        free(strs[1]);
}

static sl_tzcache_t *recur_zones(delay_pipeline_t *dp) {
        if (!dp->tzc)
                dp->tzc = sl_tzcache_new();
        return dp->tzc;
}

/* The first occurrence of the recurring timer req asks for, into
 * req->due_ms: 0, or -1 when input record m went to the DLQ (a zone ICU
 * does not know, a schedule with no occurrence left). */
static int delay_recur_first(sl_task_t *t, const rd_kafka_message_t *m,
                             sl_delay_req_t *req) {
        char err[200], detail[300], ex[SL_ESCAPE_SIZE(SL_RECUR_TZ_MAX)];
        sl_tz_t *tz;
        int rc;

        if (sl_recur_tz(&req->recur, recur_zones(dp_of(t)), &tz, err,
                        sizeof(err)) < 0) {
                snprintf(detail, sizeof(detail), "sluice-tz: %s: '%s'", err,
                         sl_escape(req->recur.tz, req->recur.tz_len, ex,
                                   sizeof(ex)));
                sl_task_dlq(t, m, "unknown-zone", detail);
                return -1;
        }
        rc = sl_recur_first(&req->recur, tz, req->base_ms, &req->due_ms, err,
                            sizeof(err));
        if (rc == SL_SCHEDULE_END)
                sl_task_dlq(t, m, "never-fires",
                            "no occurrence after the record's timestamp "
                            "within sluice-start, sluice-until and "
                            "sluice-count");
        else if (rc < 0)
                sl_task_dlq(t, m, "never-fires", err);
        return rc ? -1 : 0;
}

/* The changelog record of a recurring timer (its blob's view v, the blob
 * ending at end) pending at due_ms with the progress in r, packed into the
 * pipeline's pack scratch. */
static uint8_t *recur_pack(delay_pipeline_t *dp, const fire_view_t *v,
                           const void *end, const sl_recur_t *r, int64_t due_ms,
                           int64_t seq, int64_t now, size_t *plen) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header *hv = sl_calloc(v->hdr_cnt + 1, sizeof(*hv));
        Sluice__V1__Header **hp = sl_calloc(v->hdr_cnt + 1, sizeof(*hp));
        blob_reader_t br = {v->hdrs, end, 0};
        char *strs[2];
        uint8_t *packed;
        size_t n = 0;

        recur_fields(&tm, r, strs);
        for (size_t i = 0; i < v->hdr_cnt && !br.bad; i++, n++) {
                size_t nlen = rd_varint(&br);
                const char *name = rd_bytes(&br, nlen);
                size_t vlen = rd_varint(&br);
                const void *val = vlen ? rd_bytes(&br, vlen - 1) : NULL;
                sluice__v1__header__init(&hv[n]);
                hv[n].name = sl_strndup(name ? name : "", name ? nlen : 0);
                hv[n].value.data = (uint8_t *)val;
                hv[n].value.len = vlen ? vlen - 1 : 0;
                hv[n].null_value = !vlen;
                hp[n] = &hv[n];
        }
        tm.due_ms = due_ms;
        tm.target_topic = dp->targets[v->target_idx];
        tm.has_target_key = v->has_key;
        tm.null_target_key = v->null_key;
        tm.target_key.data = (uint8_t *)v->key;
        tm.target_key.len = v->has_key ? v->keylen : 0;
        tm.target_partition = v->partition;
        tm.payload.data = (uint8_t *)v->payload;
        tm.payload.len = v->payload_len;
        tm.seq = seq;
        tm.created_ms = now;
        tm.n_headers = n;
        tm.headers = hp;
        *plen = sluice__v1__timer__get_packed_size(&tm);
        packed = sl_scratch_get(&dp->pack, *plen);
        sluice__v1__timer__pack(&tm, packed);
        for (size_t i = 0; i < n; i++)
                free(hv[i].name);
        free(hv);
        free(hp);
        recur_fields_free(strs);
        return packed;
}

/* Recurring timer id (blob: its in-memory form, seq: its input offset),
 * due at due, fell due: produces its occurrence (or, after downtime, the
 * one its catch-up picks, or none), and in the same transaction rewrites
 * its changelog record with the next instant, or tombstones it after the
 * last.  1 when it goes on: *b holds its new blob, *next its next instant;
 * 0 when it ends.  The caller took it out of its heap or index first. */
static int recur_advance(sl_task_t *t, const char *id, size_t idlen,
                         const uint8_t *blob, size_t bloblen, int64_t due,
                         int64_t seq, int64_t now, sl_buf_t *b, int64_t *next) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        int64_t at = 0;
        char err[200] = "";
        sl_tz_t *tz = NULL;
        fire_view_t v;
        sl_recur_t r;
        size_t plen;
        int rc;

        if (blob_decode(blob, bloblen, &v) == -1 ||
            v.target_idx >= dp->target_cnt || !v.recurring)
                sl_assert(!"timer blob corrupt");
        r = v.recur;
        fire_timer_t ft = {id, idlen, due, blob, bloblen, r.fired + 1};
        const char *why = "unknown-zone"; /* an ICU without the zone */
        rc = sl_recur_tz(&r, recur_zones(dp), &tz, err, sizeof(err));
        if (rc == 0) {
                why = "bad-schedule";
                rc = sl_recur_due(&r, tz, due, st->catchup_until_ms, &at, err,
                                  sizeof(err));
        }
        if (rc == SL_RECUR_FIRE) {
                ft.due_ms = at;
                if (delay_fire_one(t, &ft, now)) {
                        /* In the DLQ once: every occurrence would be. */
                        rc = -1;
                        snprintf(err, sizeof(err),
                                 "its occurrence is too large for the target");
                } else {
                        r.fired++;
                        r.last_ms = at;
                        rc = sl_schedule_next(&r.sched, tz, at, r.fired, &at,
                                              err, sizeof(err));
                }
        } else if (rc < 0) {
                delay_fire_dlq(t, &ft, &v, why, err);
        }
        if (rc == SL_RECUR_FIRE || rc == SL_RECUR_SKIP) {
                /* The blob again with the progress: its schedule section
                 * made anew, the rest as it was. */
                sl_buf_put(b, blob, v.recur_off);
                sl_recur_blob_put(b, &r);
                sl_buf_put(b, blob + v.recur_end, bloblen - v.recur_end);
                uint8_t *packed =
                    recur_pack(dp, &v, blob + bloblen, &r, at, seq, now, &plen);
                sl_task_changelog(t, id, idlen, packed, plen);
                sl_scratch_done(&dp->pack);
                *next = at;
                return 1;
        }
        if (rc < 0)
                sl_log(LOG_WARNING, "DELAY",
                       "%s [%d]: recurring timer ends: %s", t->pl->conf->name,
                       t->partition, err);
        sl_task_changelog(t, id, idlen, NULL, 0);
        return 0;
}

/* The earliest timer of the heap, recurring, fell due (recur_advance());
 * the heap follows. */
static void delay_recur_fire(sl_task_t *t, const sl_timer_t *next,
                             int64_t now) {
        delay_state_t *st = t->state_data;
        size_t idlen = next->keylen, bloblen = next->datalen;
        char *id = sl_malloc(idlen + 1);
        uint8_t *blob = sl_malloc(bloblen);
        int64_t seq = next->seq, due = next->due_ms, at;
        sl_buf_t b = {0};

        /* Copies: the heap entry goes before the next one is added. */
        memcpy(id, sl_timer_key(next), idlen);
        memcpy(blob, sl_timer_data(next), bloblen);
        sl_timerheap_drop_min(st->heap);
        if (recur_advance(t, id, idlen, blob, bloblen, due, seq, now, &b, &at))
                sl_timerheap_upsert(st->heap, id, idlen, at, seq, b.p, b.len);
        free(b.p);
        free(id);
        free(blob);
}

static void kx_wake(sl_task_t *t, int64_t now);

/* The end of a wake-up that fired `fired` timers: gauges and a prompt
 * commit, then the next wake-up: when more is due (limited), as soon as
 * the budget allows (at the catch-up's next token when paced, and a
 * millisecond more, as ever: now and the monotonic clock are not read at
 * the same moment), else arm(). */
static void wake_done(sl_task_t *t, int fired, int limited, int paced,
                      const sl_rate_t *cr, int64_t mono_ms, int64_t now,
                      void (*arm)(sl_task_t *t)) {
        delay_state_t *st = t->state_data;
        if (fired) {
                delay_update_gauges(t);
                sl_task_commit_soon(t);
        }
        if (limited) {
                int64_t wait_ms = 0;
                if (paced)
                        wait_ms =
                            sl_tbucket_next_ms(&st->catchup, cr, mono_ms) -
                            mono_ms + 1;
                sl_task_wake_at(t, 0);
                sl_task_wake_at(t, now + wait_ms);
        } else {
                arm(t);
        }
}

static void delay_wake(sl_task_t *t, int64_t now) {
        delay_state_t *st = t->state_data;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const sl_timer_t *next;
        int fired = 0, limited = 0, paced = 0;
        /* Catch-up: the timers that fell due before the rebuild ended fire
         * at most catchup_rate per second, a token each (tbucket.h), in
         * bursts of a tenth of a second. */
        int pace = pc->catchup_rate > 0 && st->catchup_until_ms > 0;
        sl_rate_t cr = sl_tbucket_pace_rate((double)pc->catchup_rate);
        int64_t mono_ms = pace ? sl_mono_us() / 1000 : 0;

        if (st->ix) {
                kx_wake(t, now);
                return;
        }
        while ((next = sl_timerheap_peek(st->heap)) && next->due_ms <= now) {
                if (fired >= SL_DELAY_FIRE_MAX) {
                        limited = 1;
                        break;
                }
                if (pace && next->due_ms <= st->catchup_until_ms &&
                    !sl_tbucket_take(&st->catchup, &cr, mono_ms)) {
                        limited = paced = 1;
                        break;
                }
                if (*(const uint8_t *)sl_timer_data(next) & SL_BLOB_RECURRING) {
                        delay_recur_fire(t, next, now);
                        fired++;
                        continue;
                }
                /* Fired from where it lies in the slab, then freed. */
                fire_timer_t ft = {sl_timer_key(next), next->keylen,
                                   next->due_ms, sl_timer_data(next),
                                   next->datalen};
                delay_fire_one(t, &ft, now);
                sl_task_changelog(t, ft.id, ft.idlen, NULL, 0);
                sl_timerheap_drop_min(st->heap);
                fired++;
        }
        wake_done(t, fired, limited, paced, &cr, mono_ms, now, delay_arm);
}

/* Caps (task.h): a new timer id needs room for one more timer, and any
 * schedule for what its bytes add (estimated from the request: the blob
 * holds the payload, the target key and the headers).  The timer is looked
 * up only when a cap is near.  Returns 1 when the record must wait. */
static int delay_over_cap(sl_task_t *t, const rd_kafka_message_t *m,
                          const sl_delay_req_t *req) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        const sl_timer_t *old;
        int64_t bytes =
            (int64_t)(m->key_len + req->payload_len + req->target_key_len + 8);
        for (size_t i = 0; i < req->hdr_cnt; i++)
                bytes += (int64_t)(strlen(req->hdrs[i].name) +
                                   req->hdrs[i].size + 4);
        if (sl_pcap_room(dp->c_timers, 1) && sl_pcap_room(dp->c_bytes, bytes))
                return 0;
        old = sl_timerheap_find(st->heap, m->key, m->key_len);
        if (!old && !sl_pcap_room(dp->c_timers, 1)) {
                sl_task_input_full(t, dp->c_timers);
                return 1;
        }
        if (old)
                bytes -= (int64_t)(old->keylen + old->datalen);
        if (bytes > 0 && !sl_pcap_room(dp->c_bytes, bytes)) {
                sl_task_input_full(t, dp->c_bytes);
                return 1;
        }
        return 0;
}

/* The record's headers as a plain array for the parser: into hdrs_in (n
 * slots) when they fit, else a new array (*hdrsp; the caller frees it when
 * it is not hdrs_in).  The names and values point into m.  Returns the
 * count. */
static size_t delay_read_headers(const rd_kafka_message_t *m, sl_hdr_t *hdrs_in,
                                 size_t n, sl_hdr_t **hdrsp) {
        rd_kafka_headers_t *kh = NULL;
        sl_hdr_t *hdrs = hdrs_in;
        size_t cnt, hdr_cnt = 0;

        *hdrsp = hdrs_in;
        if (rd_kafka_message_headers(m, &kh) != RD_KAFKA_RESP_ERR_NO_ERROR)
                return 0;
        cnt = rd_kafka_header_cnt(kh);
        if (cnt > n)
                hdrs = sl_calloc(cnt, sizeof(*hdrs));
        for (size_t i = 0; i < cnt; i++) {
                const char *name;
                const void *val;
                size_t size;
                if (rd_kafka_header_get_all(kh, i, &name, &val, &size))
                        break;
                /* A rerouted record is handled as if produced here. */
                if (!strcmp(name, SL_TASK_REROUTED_HEADER))
                        continue;
                hdrs[hdr_cnt].name = name;
                hdrs[hdr_cnt].value = val;
                hdrs[hdr_cnt].size = size;
                hdr_cnt++;
        }
        *hdrsp = hdrs;
        return hdr_cnt;
}

/* A cancel: the timer and its changelog record go, if it is pending. */
static void delay_cancel(sl_task_t *t, const sl_delay_req_t *req) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);

        if (sl_timerheap_remove(st->heap, req->id, req->id_len)) {
                sl_task_changelog(t, req->id, req->id_len, NULL, 0);
                sl_counter_inc(dp->m_cancelled);
                delay_update_gauges(t);
        } else {
                sl_counter_inc(dp->m_cancel_unknown);
        }
}

/* The timer's target as Kafka has it: 0 when the timer may be scheduled;
 * -1 when the record went to the DLQ, or waits for the target's lookup
 * (sl_task_input_retry: the record is seen again). */
static int delay_check_target(sl_task_t *t, const rd_kafka_message_t *m,
                              const sl_delay_req_t *req) {
        const char *target = req->target;
        char detail[512]; /* a topic name is up to 249 bytes */
        int parts = sl_task_topic_partitions(t, target);

        if (parts == SL_TOPIC_LOOKING) {
                /* A target seen for the first time: decide once Kafka said
                 * whether it exists. */
                sl_task_input_retry(t);
                return -1;
        }
        if (parts == 0) {
                snprintf(detail, sizeof(detail),
                         "target topic %s does not exist", target);
                sl_task_dlq(t, m, "unknown-target", detail);
                return -1;
        }
        if (parts == SL_TOPIC_FORBIDDEN) {
                snprintf(detail, sizeof(detail),
                         "not authorized: WRITE on TOPIC %s", target);
                sl_task_dlq(t, m, "target-refused", detail);
                return -1;
        }
        if (req->target_partition >= 0 && parts > 0 &&
            req->target_partition >= parts) {
                snprintf(detail, sizeof(detail),
                         "%s has %d partitions, asked for %d", target, parts,
                         (int)req->target_partition);
                sl_task_dlq(t, m, "bad-target-partition", detail);
                return -1;
        }
        return 0;
}

/* A scheduled timer's headers in the two forms they are kept in: the
 * changelog record's (protobuf) and the blob's (delay_blob()'s arrays).  Up
 * to SL_DELAY_HDRS_ON_STACK headers need no allocation. */
typedef struct sched_hdrs_s {
        Sluice__V1__Header hv_in[SL_DELAY_HDRS_ON_STACK],
            *hp_in[SL_DELAY_HDRS_ON_STACK];
        const char *hn_in[SL_DELAY_HDRS_ON_STACK + 1];
        size_t hnl_in[SL_DELAY_HDRS_ON_STACK + 1],
            hvl_in[SL_DELAY_HDRS_ON_STACK + 1];
        const void *hvv_in[SL_DELAY_HDRS_ON_STACK + 1];
        Sluice__V1__Header *hv, **hp;
        const char **hn;
        size_t *hnl, *hvl;
        const void **hvv;
} sched_hdrs_t;

/* Fills sh with req's headers (pointing into req); sched_hdrs_clear()
 * releases what it allocated. */
static void sched_hdrs_init(sched_hdrs_t *sh, const sl_delay_req_t *req) {
        size_t n = req->hdr_cnt;

        if (n > SL_DELAY_HDRS_ON_STACK) {
                sh->hv = sl_calloc(n, sizeof(*sh->hv));
                sh->hp = sl_calloc(n, sizeof(*sh->hp));
                sh->hn = sl_calloc(n + 1, sizeof(*sh->hn));
                sh->hnl = sl_calloc(n + 1, sizeof(*sh->hnl));
                sh->hvv = sl_calloc(n + 1, sizeof(*sh->hvv));
                sh->hvl = sl_calloc(n + 1, sizeof(*sh->hvl));
        } else {
                sh->hv = sh->hv_in;
                sh->hp = sh->hp_in;
                sh->hn = sh->hn_in;
                sh->hnl = sh->hnl_in;
                sh->hvv = sh->hvv_in;
                sh->hvl = sh->hvl_in;
        }
        for (size_t i = 0; i < n; i++) {
                const sl_hdr_t *h = &req->hdrs[i];
                sluice__v1__header__init(&sh->hv[i]);
                sh->hv[i].name = (char *)h->name;
                sh->hv[i].value.data = (uint8_t *)h->value;
                sh->hv[i].value.len = h->value ? h->size : 0;
                sh->hv[i].null_value = h->value == NULL;
                sh->hp[i] = &sh->hv[i];
                sh->hn[i] = h->name;
                sh->hnl[i] = strlen(h->name);
                sh->hvv[i] = h->value;
                sh->hvl[i] = h->value ? h->size : 0;
        }
}

static void sched_hdrs_clear(sched_hdrs_t *sh) {
        if (sh->hv == sh->hv_in)
                return;
        free(sh->hv);
        free(sh->hp);
        free(sh->hn);
        free(sh->hnl);
        free(sh->hvv);
        free(sh->hvl);
}

/* Packs the changelog record of the timer req schedules (input record m,
 * read at now) into the pipeline's pack scratch; returns it, its length in
 * *plen. */
static uint8_t *delay_pack_timer(delay_pipeline_t *dp,
                                 const sl_delay_req_t *req,
                                 const rd_kafka_message_t *m, int64_t now,
                                 const sched_hdrs_t *sh, size_t *plen) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        uint8_t *packed;
        char *strs[2] = {NULL, NULL};

        if (req->recurring)
                recur_fields(&tm, &req->recur, strs);
        tm.due_ms = req->due_ms;
        tm.target_topic = (char *)req->target;
        tm.has_target_key = req->has_target_key;
        tm.null_target_key = req->null_target_key;
        tm.target_key.data = (uint8_t *)req->target_key;
        tm.target_key.len = req->has_target_key ? req->target_key_len : 0;
        tm.target_partition = req->target_partition;
        tm.payload.data = (uint8_t *)req->payload;
        tm.payload.len = req->payload_len;
        tm.seq = m->offset;
        tm.created_ms = now;
        tm.n_headers = req->hdr_cnt;
        tm.headers = sh->hp;
        *plen = sluice__v1__timer__get_packed_size(&tm);
        packed = sl_scratch_get(&dp->pack, *plen);
        sluice__v1__timer__pack(&tm, packed);
        recur_fields_free(strs);
        return packed;
}

/* ------------------------------------------------------------------ */
/* Payloads in Kafka (payload_topic set): see PAYLOADS IN KAFKA above.  */

/* Locations of timers whose payload record has no offset yet: above every
 * offset, in arrival order (the input offset that scheduled them). */
#define KX_PROV_BASE ((int64_t)1 << 47)
/* While the earliest timer waits for its payload, the wake-up looks
 * again this often (fetched() wakes it as soon as the payload is read). */
#define KX_WAIT_POLL_MS 100
/* A record read back only to compare an id stays this long. */
#define KX_HELD_MS 1000
/* Payloads asked for per prefetch plan, at most (kx_plan). */
#define KX_PLAN_MAX 65536
/* A plan that found every timer due within the look-ahead is made again
 * this long after (kx_plan). */
#define KX_REPLAN_MS 1000
/* A fetch reads on, rather than seeking, across a gap this many records
 * long (bench/NOTES.md: "Reading one record back by offset"). */
#define KX_FETCH_GAP 64

/* Entry flags (timerindex.h). */
#define KX_F_RESIDENT 1 /* its record is in st->res */
#define KX_F_LEGACY                                                            \
        2              /* its record is a changelog Timer (written before      \
                          payload_topic was set): resident until it fires */
#define KX_F_MISSING 4 /* the payload topic no longer holds its record */
#define KX_F_GONE    8 /* ...and its timer went to the DLQ (the gone list) */

static const char *kx_topic(const sl_pipeline_conf_t *pc) {
        const char *p = sl_delay_conf(pc)->payload_topic;
        return p && *p ? p : NULL;
}

/* The gone list (see PAYLOADS IN KAFKA above).  Where loc is or would go
 * in it: 1 when there, with *at its place. */
static int gone_find(const delay_state_t *st, int64_t loc, size_t *at) {
        size_t lo = 0, hi = st->gone_cnt;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (st->gone[mid].loc < loc)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *at = lo;
        return lo < st->gone_cnt && st->gone[lo].loc == loc;
}

/* A timer whose index record stays went to the DLQ.  At the cap the
 * lowest offset leaves the list (a rebuild would send that one again). */
static void gone_add(sl_task_t *t, int64_t loc, int64_t due_ms) {
        delay_state_t *st = t->state_data;
        size_t at;
        if (gone_find(st, loc, &at))
                return;
        if (st->gone_cnt == SL_LOGPB_GONE_MAX) {
                sl_log(LOG_WARNING, "DELAY",
                       "%s [%d]: %d timers sent to the DLQ as payload-missing "
                       "keep index records; the oldest is forgotten and may "
                       "be sent again after a rebuild",
                       t->pl->conf->name, t->partition, SL_LOGPB_GONE_MAX);
                memmove(st->gone, st->gone + 1,
                        --st->gone_cnt * sizeof(*st->gone));
                if (at)
                        at--;
        }
        if (st->gone_cnt == st->gone_cap) {
                st->gone_cap = st->gone_cap ? 2 * st->gone_cap : 16;
                st->gone =
                    sl_realloc(st->gone, st->gone_cap * sizeof(*st->gone));
        }
        memmove(st->gone + at + 1, st->gone + at,
                (st->gone_cnt - at) * sizeof(*st->gone));
        st->gone[at].loc = loc;
        st->gone[at].due_ms = due_ms;
        st->gone_cnt++;
        st->gone_dirty = 1;
}

static void gone_del(delay_state_t *st, int64_t loc) {
        size_t at;
        if (!gone_find(st, loc, &at))
                return;
        memmove(st->gone + at, st->gone + at + 1,
                (st->gone_cnt - at - 1) * sizeof(*st->gone));
        st->gone_cnt--;
        st->gone_dirty = 1;
}

/* The list as it is now to the changelog, when it changed: a tombstone
 * once it is empty. */
static void gone_write(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        uint8_t *val = NULL;
        size_t len = 0;
        if (!st->gone_dirty)
                return;
        if (st->gone_cnt)
                val = sl_logpb_gone_put(st->gone, st->gone_cnt, &len);
        sl_task_changelog(t, "", 0, val, len);
        free(val);
        st->gone_dirty = 0;
}

static kres_t *res_get(const delay_state_t *st, uint32_t h) {
        return rmap_find(&st->res, h, &h, sizeof(h));
}

/* A resident record for entry h: its id and blob. */
static kres_t *res_add(sl_task_t *t, uint32_t h, const void *id, size_t idlen,
                       const void *blob, size_t bloblen, int64_t due_ms,
                       int64_t seq, int pinned) {
        delay_state_t *st = t->state_data;
        kres_t *r = sl_malloc(sizeof(*r) + idlen + bloblen);
        r->next = NULL;
        r->handle = h;
        r->pinned = (uint8_t)pinned;
        r->dead = 0;
        r->lists = 0;
        r->due_ms = due_ms;
        r->held_ms = 0;
        r->seq = seq;
        r->idlen = (uint32_t)idlen;
        r->bloblen = (uint32_t)bloblen;
        memcpy(r->buf, id, idlen);
        memcpy(r->buf + idlen, blob, bloblen);
        rmap_insert(&st->res, h, r);
        st->res_bytes += idlen + bloblen;
        sl_timerindex_set_flags(st->ix, h,
                                sl_timerindex_flags(st->ix, h) | KX_F_RESIDENT);
        return r;
}

/* Takes r out of the resident map: freed, or left to the list that still
 * holds it (the delivery FIFO, the owed list), marked dead. */
static void res_forget(delay_state_t *st, kres_t *r) {
        if (r->held_ms)
                st->held_cnt--;
        rmap_remove(&st->res, r);
        st->res_bytes -= r->idlen + r->bloblen;
        if (r->lists)
                r->dead = 1;
        else
                free(r);
}

/* Lets go of the record of a timer that stays pending: it is read back
 * when needed. */
static void res_evict(delay_state_t *st, kres_t *r) {
        uint32_t h = r->handle;
        res_forget(st, r);
        sl_timerindex_set_flags(st->ix, h,
                                sl_timerindex_flags(st->ix, h) &
                                    (uint16_t)~KX_F_RESIDENT);
}

/* The wanted offsets: sorted, each with the entry that wants it.  The
 * read takes them from the front (want moves on in want_buf); adds go in
 * place, a plan's many at once (want_merge). */
static size_t want_pos(const delay_state_t *st, int64_t loc) {
        size_t lo = 0, hi = st->want_cnt;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (st->want[mid].loc < loc)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int want_has(const delay_state_t *st, int64_t loc) {
        size_t i = want_pos(st, loc);
        return i < st->want_cnt && st->want[i].loc == loc;
}

/* Room for n more entries at the end of the live ones. */
static void want_room(delay_state_t *st, size_t n) {
        size_t off = (size_t)(st->want - st->want_buf);
        if (off + st->want_cnt + n <= st->want_cap)
                return;
        if (off) {
                memmove(st->want_buf, st->want,
                        st->want_cnt * sizeof(*st->want));
                st->want = st->want_buf;
                if (st->want_cnt + n <= st->want_cap)
                        return;
        }
        st->want_cap = SL_MAX(st->want_cnt + n, st->want_cap * 2);
        st->want_cap = SL_MAX(st->want_cap, 64);
        st->want_buf =
            sl_realloc(st->want_buf, st->want_cap * sizeof(*st->want_buf));
        st->want = st->want_buf;
}

/* Wants loc for entry h; id: to compare an id (counted in id_wants). */
static void want_add(delay_state_t *st, int64_t loc, uint32_t h, int id) {
        size_t i = want_pos(st, loc);
        if (i < st->want_cnt && st->want[i].loc == loc) {
                if (id && !st->want[i].id) {
                        st->want[i].id = 1;
                        st->id_wants++;
                }
                return;
        }
        want_room(st, 1);
        memmove(&st->want[i + 1], &st->want[i],
                (st->want_cnt - i) * sizeof(*st->want));
        st->want[i].loc = loc;
        st->want[i].handle = h;
        st->want[i].id = (uint8_t) !!id;
        st->id_wants += !!id;
        st->want_cnt++;
}

static void want_del(delay_state_t *st, int64_t loc) {
        size_t i = want_pos(st, loc);
        if (i == st->want_cnt || st->want[i].loc != loc)
                return;
        st->id_wants -= st->want[i].id;
        if (i == 0)
                st->want++;
        else
                memmove(&st->want[i], &st->want[i + 1],
                        (st->want_cnt - i - 1) * sizeof(*st->want));
        st->want_cnt--;
}

static int cmp_want(const void *a, const void *b) {
        const want_t *x = a, *y = b;
        return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/* Adds the n entries of v (none wanted already): sorts them, drops
 * repeats and merges them in from the back, O(n log n + want_cnt). */
static void want_merge(delay_state_t *st, want_t *v, size_t n) {
        size_t i, j, k;
        if (!n)
                return;
        qsort(v, n, sizeof(*v), cmp_want);
        for (i = k = 1; i < n; i++)
                if (v[i].loc != v[k - 1].loc)
                        v[k++] = v[i];
        n = k;
        want_room(st, n);
        i = st->want_cnt;
        j = n;
        k = st->want_cnt + n;
        while (j) {
                if (i && st->want[i - 1].loc > v[j - 1].loc)
                        st->want[--k] = st->want[--i];
                else
                        st->want[--k] = v[--j];
        }
        st->want_cnt += n;
}

/* Removes pending entry h with what it holds. */
static void kx_entry_remove(delay_state_t *st, uint32_t h) {
        kres_t *r = res_get(st, h);
        if (r)
                res_forget(st, r);
        else
                want_del(st, sl_timerindex_loc(st->ix, h));
        sl_timerindex_remove(st->ix, h);
}

static void fetch_stop(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        if (!st->fetching)
                return;
        sl_task_fetch_stop(t);
        st->fetching = 0;
}

/* Reads the earliest wanted record: starts the fetch, or moves it back
 * when a record behind it is wanted, or on past a long gap. */
static void fetch_kick(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        int64_t to;
        if (!st->want_cnt) {
                fetch_stop(t);
                return;
        }
        to = st->want[0].loc;
        if (st->fetching && to >= st->fetch_next &&
            to - st->fetch_next <= KX_FETCH_GAP)
                return;
        if (sl_task_fetch(t, kx_topic(t->pl->conf), to) == -1)
                return; /* tried again at the next kick */
        st->fetching = 1;
        st->fetch_next = st->fetch_from = to;
        st->fetch_fresh = 1;
}

/* The index's hash of a timer id: its sl_hash() (cut short by tests). */
static uint64_t kx_hash(const delay_pipeline_t *dp, const void *id,
                        size_t idlen) {
        return sl_hash(id, idlen) & dp->hash_mask;
}

/* The pending timer with this id (hash: kx_hash()): 1 and its handle
 * in *hp, 0 when none is pending, -1 when an entry of the same hash is not
 * resident: its record is being read, and the caller asks again once it
 * is (the input waits: sl_task_input_retry).  Exact: ids are compared
 * byte for byte, never their hashes alone. */
static int kx_lookup(sl_task_t *t, const void *id, size_t idlen, uint64_t hash,
                     uint32_t *hp) {
        delay_state_t *st = t->state_data;
        int unknown = 0;

        if (st->rb_on) {
                uint32_t h = rb_find(st, hash, id, idlen);
                if (h == SL_TIMERINDEX_NONE)
                        return 0;
                *hp = h;
                return 1;
        }
        for (uint32_t h = sl_timerindex_find(st->ix, hash);
             h != SL_TIMERINDEX_NONE;
             h = sl_timerindex_next_same_hash(st->ix, h)) {
                kres_t *r;
                if (sl_timerindex_hash(st->ix, h) != hash)
                        continue;
                if ((r = res_get(st, h))) {
                        if (sl_hmap_key_eq(r->buf, r->idlen, id, idlen)) {
                                *hp = h;
                                return 1;
                        }
                        continue;
                }
                if (sl_timerindex_flags(st->ix, h) & KX_F_MISSING)
                        continue; /* its id is lost with its record */
                want_add(st, sl_timerindex_loc(st->ix, h), h, 1);
                unknown = 1;
        }
        if (unknown) {
                sl_counter_inc(st->dp->m_id_waits);
                fetch_kick(t);
                if (!st->fetching)
                        /* The read did not start: the wake-up tries again
                         * (kx_wake plans and kicks it). */
                        sl_task_wake_at(t, sl_now_ms() + KX_WAIT_POLL_MS);
                return -1;
        }
        return 0;
}

/* This partition's share of payload_cache: the partitions of the
 * pipeline this instance holds share it equally, so that one never evicts
 * what another is about to fire. */
static size_t kx_cache_budget(const delay_state_t *st) {
        return (size_t)st->dp->cache_budget / SL_MAX(st->dp->kx_parts, 1);
}

/* A resident record and its place in firing order, for kx_trim(). */
typedef struct trim_s {
        int64_t due, loc;
        kres_t *r;
} trim_t;

static int cmp_trim_last_first(const void *a, const void *b) {
        const trim_t *x = a, *y = b;
        if (x->due != y->due)
                return x->due < y->due ? 1 : -1;
        return x->loc < y->loc ? 1 : x->loc > y->loc ? -1 : 0;
}

/* Over its share of payload_cache: lets go of this partition's records
 * that fire last, down to nine tenths of the share.  Pinned
 * records (offset unknown, or changelog timers of before) and those whose
 * index record is still owed stay. */
static void kx_trim(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        size_t budget = kx_cache_budget(st), n = 0;
        kres_t **v;
        trim_t *tv;

        if (st->held_cnt && !st->id_wants) {
                /* Records read back to compare an id leave a second after
                 * the last id wanted came back (the input that waited for
                 * them has gone on by then); never while the input waits
                 * for more of them (delay_peek). */
                int64_t now = sl_now_ms();
                v = sl_malloc(st->held_cnt * sizeof(*v));
                for (size_t i = 0; i < st->res.nbuckets; i++)
                        for (sl_hmap_link_t *l = st->res.buckets[i]; l;
                             l = l->next) {
                                kres_t *r = rmap_entry(l);
                                if (r->held_ms &&
                                    now - SL_MAX(r->held_ms, st->ids_back_ms) >=
                                        KX_HELD_MS &&
                                    !r->pinned && !r->lists && n < st->held_cnt)
                                        v[n++] = r;
                        }
                /* Out of the map only now: a removal may resize it. */
                for (size_t i = 0; i < n; i++) {
                        res_evict(st, v[i]);
                }
                free(v);
                n = 0;
                if (st->held_cnt)
                        sl_task_wake_at(t, now + KX_HELD_MS);
        }
        if (st->res_bytes <= budget || !sl_hmap_count(&st->res))
                return;
        /* In firing order (due, then place), so that what stays is the
         * head of it whatever ties there are. */
        tv = sl_malloc(sl_hmap_count(&st->res) * sizeof(*tv));
        for (size_t i = 0; i < st->res.nbuckets; i++)
                for (sl_hmap_link_t *l = st->res.buckets[i]; l; l = l->next) {
                        kres_t *r = rmap_entry(l);
                        if (r->pinned || r->lists ||
                            (r->held_ms && st->id_wants))
                                continue;
                        tv[n].due = sl_timerindex_due(st->ix, r->handle);
                        tv[n].loc = sl_timerindex_loc(st->ix, r->handle);
                        tv[n++].r = r;
                }
        qsort(tv, n, sizeof(*tv), cmp_trim_last_first);
        for (size_t i = 0; i < n && st->res_bytes > budget / 10 * 9; i++) {
                res_evict(st, tv[i].r);
        }
        free(tv);
}

/* Asks for the payloads of the timers due soonest, as far as this
 * partition's share of payload_cache allows (kx_cache_budget) less what it
 * holds and wants, the wanted counted at the mean size of what it holds.
 * One walk of the index (sl_timerindex_earliest) takes the earliest due
 * within the look-ahead, the resident ones too, so it costs O(k log k) for
 * the k timers it passes; it is walked again only when a quarter of the
 * share is free for more and, once a walk found every timer due within the
 * look-ahead, KX_REPLAN_MS after it (time moves the window on; kx_arm
 * wakes the partition then).  The timer due next is wanted by kx_arm()
 * whatever the plan holds. */
static void kx_plan(sl_task_t *t, int64_t now) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = st->dp;
        size_t budget = kx_cache_budget(st), est, planned, room, ask, n;
        size_t nadd = 0, resident = sl_hmap_count(&st->res);
        uint32_t *hs;
        want_t *add;

        kx_trim(t);
        est = resident ? SL_MAX(st->res_bytes / resident, 1) : 1024;
        planned = st->res_bytes + st->want_cnt * est;
        room = planned < budget ? (budget - planned) / est : 0;
        room = SL_MIN(room, KX_PLAN_MAX);
        if (!room || room < budget / est / 4 ||
            (st->plan_short && now - st->plan_ms < KX_REPLAN_MS)) {
                fetch_kick(t);
                return;
        }
        ask =
            SL_MIN(resident + st->want_cnt + room, sl_timerindex_count(st->ix));
        hs = sl_malloc(SL_MAX(ask, 1) * sizeof(*hs));
        add = sl_malloc(room * sizeof(*add));
        n = sl_timerindex_earliest(st->ix, now + dp->lookahead_ms, ask, hs);
        st->plan_ms = now;
        st->plan_short = n < ask;
        for (size_t i = 0; i < n; i++) {
                int64_t loc;
                if (sl_timerindex_flags(st->ix, hs[i]) &
                    (KX_F_RESIDENT | KX_F_MISSING))
                        continue;
                loc = sl_timerindex_loc(st->ix, hs[i]);
                if (want_has(st, loc))
                        continue;
                if (nadd == room) {
                        st->plan_short = 0;
                        break;
                }
                add[nadd].loc = loc;
                add[nadd].handle = hs[i];
                add[nadd].id = 0;
                nadd++;
        }
        want_merge(st, add, nadd);
        free(add);
        free(hs);
        fetch_kick(t);
}

/* The wake-up: at the earliest due time, or a look-ahead before it while
 * its payload is not resident (so it is read by then). */
static void kx_arm(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        uint32_t h = sl_timerindex_min(st->ix);
        int64_t due, now = sl_now_ms();
        uint16_t f;
        sl_task_wake_at(t, 0);
        if (h == SL_TIMERINDEX_NONE)
                return;
        due = sl_timerindex_due(st->ix, h);
        f = sl_timerindex_flags(st->ix, h);
        if (!(f & KX_F_RESIDENT) && due - st->dp->lookahead_ms > now) {
                sl_task_wake_at(t, due - st->dp->lookahead_ms);
                return;
        }
        if (!(f & (KX_F_RESIDENT | KX_F_MISSING)))
                /* It fires next: wanted whatever the cache holds. */
                want_add(st, sl_timerindex_loc(st->ix, h), h, 0);
        kx_plan(t, now);
        if (!(f & KX_F_RESIDENT) && due <= now)
                /* Due and not read back yet: fetched() wakes the
                 * partition when it is; this is only the fallback should
                 * the read not have started. */
                due = now + KX_WAIT_POLL_MS;
        if (st->plan_short &&
            sl_timerindex_count(st->ix) > sl_hmap_count(&st->res))
                /* The plan took all the look-ahead held: as time moves it
                 * on, timers not in memory come into it (kx_plan). */
                due = SL_MIN(due, now + KX_REPLAN_MS);
        sl_task_wake_at(t, due > 0 ? due : 1);
}

/* A pending timer whose payload record is gone from the payload topic
 * (deleted, or the topic recreated): the DLQ record names where it was,
 * with the timer's id as its key when the rebuild found it gone (id
 * non-NULL), and no key when the read did (the id went with the record). */
static void kx_fire_missing(sl_task_t *t, uint32_t h, const void *id,
                            size_t idlen) {
        delay_state_t *st = t->state_data;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        rd_kafka_headers_t *hdrs;
        char detail[256], buf[32];

        snprintf(detail, sizeof(detail),
                 "the payload record of this timer is gone from %s [%d] "
                 "offset %" PRId64 " (deleted or compacted away)",
                 kx_topic(pc), t->partition, sl_timerindex_loc(st->ix, h));
        sl_task_dlq_count(t, "payload-missing");
        sl_log(LOG_WARNING, "DELAY", "%s [%d]: %s", pc->name, t->partition,
               detail);
        if (!pc->dlq)
                return;
        hdrs = rd_kafka_headers_new(3);
        rd_kafka_header_add(hdrs, "sluice-error", -1, "payload-missing", -1);
        rd_kafka_header_add(hdrs, "sluice-error-detail", -1, detail, -1);
        snprintf(buf, sizeof(buf), "%" PRId64, sl_timerindex_due(st->ix, h));
        rd_kafka_header_add(hdrs, "sluice-due", -1, buf, -1);
        sl_task_dlq_send(t, id, idlen, NULL, 0, NULL, hdrs);
}

static void kx_recur_fire(sl_task_t *t, uint32_t h, kres_t *r, int64_t due,
                          int64_t now);

static void kx_wake(sl_task_t *t, int64_t now) {
        delay_state_t *st = t->state_data;
        const sl_pipeline_conf_t *pc = t->pl->conf;
        const char *ptopic = kx_topic(pc);
        int fired = 0, limited = 0, paced = 0;
        int pace = pc->catchup_rate > 0 && st->catchup_until_ms > 0;
        sl_rate_t cr = sl_tbucket_pace_rate((double)pc->catchup_rate);
        int64_t mono_ms = pace ? sl_mono_us() / 1000 : 0;
        uint32_t h;

        while ((h = sl_timerindex_min(st->ix)) != SL_TIMERINDEX_NONE &&
               sl_timerindex_due(st->ix, h) <= now) {
                int64_t due = sl_timerindex_due(st->ix, h);
                kres_t *r;
                if (fired >= SL_DELAY_FIRE_MAX) {
                        limited = 1;
                        break;
                }
                if (!(r = res_get(st, h)) &&
                    !(sl_timerindex_flags(st->ix, h) & KX_F_MISSING)) {
                        /* Not read back yet: wait for it (fetched()
                         * wakes the partition). */
                        want_add(st, sl_timerindex_loc(st->ix, h), h, 0);
                        fetch_kick(t);
                        break;
                }
                if (pace && due <= st->catchup_until_ms &&
                    !sl_tbucket_take(&st->catchup, &cr, mono_ms)) {
                        limited = paced = 1;
                        break;
                }
                if (!r) {
                        /* Its id went with the record: the index record
                         * stays, named in the gone list. */
                        kx_fire_missing(t, h, NULL, 0);
                        gone_add(t, sl_timerindex_loc(st->ix, h), due);
                } else if (sl_timerindex_flags(st->ix, h) & KX_F_MISSING) {
                        /* Found gone at the rebuild: its index record
                         * goes with it, and to the DLQ the timer, unless
                         * the gone list says it went there already. */
                        if (sl_timerindex_flags(st->ix, h) & KX_F_GONE)
                                gone_del(st, sl_timerindex_loc(st->ix, h));
                        else
                                kx_fire_missing(t, h, r->buf, r->idlen);
                        sl_task_changelog(t, r->buf, r->idlen, NULL, 0);
                        if (sl_task_produce(t, ptopic, t->partition, r->buf,
                                            r->idlen, NULL, 0, NULL) < 0)
                                sl_task_abort(t, "payload tombstone refused");
                } else if ((sl_timerindex_flags(st->ix, h) & KX_F_LEGACY) &&
                           blob_recurring(r->buf + r->idlen, r->bloblen)) {
                        kx_recur_fire(t, h, r, due, now);
                        fired++;
                        continue;
                } else {
                        fire_timer_t ft = {r->buf, r->idlen, due,
                                           r->buf + r->idlen, r->bloblen};
                        delay_fire_one(t, &ft, now);
                        /* The index record and the payload record go. */
                        sl_task_changelog(t, r->buf, r->idlen, NULL, 0);
                        if (!(sl_timerindex_flags(st->ix, h) & KX_F_LEGACY) &&
                            sl_task_produce(t, ptopic, t->partition, r->buf,
                                            r->idlen, NULL, 0, NULL) < 0)
                                sl_task_abort(t, "payload tombstone refused");
                }
                kx_entry_remove(st, h);
                fired++;
        }
        gone_write(t);
        if (limited)
                kx_plan(t, now);
        wake_done(t, fired, limited, paced, &cr, mono_ms, now, kx_arm);
}

/* The wanted record at want[i] is gone: its timer is marked missing (when
 * the entry still points there) and the want goes. */
static void kx_want_gone(sl_task_t *t, size_t i, const char *why) {
        delay_state_t *st = t->state_data;
        uint32_t h = st->want[i].handle;
        int64_t loc = st->want[i].loc;
        if (sl_timerindex_loc(st->ix, h) == loc &&
            !(sl_timerindex_flags(st->ix, h) & KX_F_RESIDENT)) {
                sl_timerindex_set_flags(
                    st->ix, h, sl_timerindex_flags(st->ix, h) | KX_F_MISSING);
                sl_log(LOG_NOTICE, "DELAY",
                       "%s [%d]: payload record at offset %" PRId64
                       " not found: %s",
                       t->pl->conf->name, t->partition, loc, why);
        }
        want_del(st, loc);
}

/* Wanted records below offset `upto`, where the read is, did not come.
 * One below the partition's first offset is gone (deleted), and so is one
 * where a read began and found a later record first (compacted away).
 * Any other is read again from its own offset (fetch_kick moves the read
 * back to it) before it is taken for gone: a read that began below it and
 * went past it without serving it says nothing certain (0131 saw one).
 * Returns how many are gone. */
static int kx_missing_below(sl_task_t *t, int64_t upto) {
        delay_state_t *st = t->state_data;
        int64_t lo = -1, hi = -1;
        int n = 0;
        sl_task_fetch_watermarks(t, &lo, &hi);
        while (st->want_cnt && st->want[0].loc < upto) {
                if (st->want[0].loc < lo)
                        kx_want_gone(t, 0,
                                     "below the partition's first offset "
                                     "(deleted)");
                else if (st->fetch_fresh && st->want[0].loc == st->fetch_from)
                        kx_want_gone(t, 0,
                                     "a read from it found a later record "
                                     "first (compacted away)");
                else
                        break;
                n++;
        }
        return n;
}

/* Wanted records from offset `end` on, where the read of the payload topic
 * reported its end.  A read_committed read stops at the last stable offset,
 * before a transaction not yet decided (another producer's still open, or
 * one of ours committed whose markers are not written yet): the records
 * between there and the high watermark are in the log and come when that
 * transaction ends, so they are waited for.  Those at or past the high
 * watermark that were committed (up to loc_safe) are gone: the topic was
 * deleted and made again.  Returns how many are gone. */
static int kx_missing_past(sl_task_t *t, int64_t end) {
        delay_state_t *st = t->state_data;
        int64_t lo = -1, hwm = -1;
        size_t i;
        int n = 0;

        sl_task_fetch_watermarks(t, &lo, &hwm);
        if (hwm < 0)
                return 0; /* not known yet: the next end reported tells */
        i = want_pos(st, end);
        if (i < st->want_cnt && st->want[i].loc < hwm &&
            !st->undecided_logged) {
                st->undecided_logged = 1;
                sl_log(LOG_NOTICE, "DELAY",
                       "%s [%d]: payload records from offset %" PRId64
                       " on wait for a transaction not yet decided at "
                       "offsets %" PRId64 " to %" PRId64 " of %s",
                       t->pl->conf->name, t->partition, st->want[i].loc, end,
                       hwm - 1, kx_topic(t->pl->conf));
        }
        for (i = want_pos(st, SL_MAX(end, hwm));
             i < st->want_cnt && st->want[i].loc <= st->loc_safe;) {
                kx_want_gone(t, i, "past the end of the partition");
                n++;
        }
        return n;
}

/* A record of the payload topic, read back. */
static void kx_fetched(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        int got = 0;
        size_t id_wants = st->id_wants;

        if (!st->ix || !st->fetching)
                return;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                got = kx_missing_below(t, m->offset) > 0;
                got |= kx_missing_past(t, m->offset) > 0;
                st->fetch_next = m->offset;
                st->fetch_fresh = 0;
        } else if (m->err) {
                sl_log(LOG_WARNING, "DELAY", "%s [%d]: reading %s: %s",
                       t->pl->conf->name, t->partition, kx_topic(t->pl->conf),
                       rd_kafka_message_errstr(m));
                return;
        } else {
                size_t wi;
                int wanted;
                uint32_t wh = SL_TIMERINDEX_NONE;
                got = kx_missing_below(t, m->offset) > 0;
                st->undecided_logged = 0;
                st->fetch_fresh = 0;
                wi = want_pos(st, m->offset);
                wanted = wi < st->want_cnt && st->want[wi].loc == m->offset;
                if (wanted)
                        wh = st->want[wi].handle;
                st->fetch_next = m->offset + 1;
                st->read_mean +=
                    (m->key_len + m->len) / 16 - st->read_mean / 16;
                if (m->key && m->key_len && m->payload) {
                        uint64_t hash = kx_hash(st->dp, m->key, m->key_len);
                        for (uint32_t h = sl_timerindex_find(st->ix, hash);
                             h != SL_TIMERINDEX_NONE;
                             h = sl_timerindex_next_same_hash(st->ix, h)) {
                                sl_buf_t b = {0};
                                int64_t due, seq;
                                if (sl_timerindex_hash(st->ix, h) != hash ||
                                    sl_timerindex_loc(st->ix, h) != m->offset ||
                                    (sl_timerindex_flags(st->ix, h) &
                                     KX_F_RESIDENT))
                                        continue;
                                if (!wanted &&
                                    (sl_timerindex_due(st->ix, h) >
                                         sl_now_ms() + st->dp->lookahead_ms ||
                                     st->res_bytes + m->len >
                                         kx_cache_budget(st)))
                                        break; /* read on the way: no room */
                                if (timer_record_blob(t, m->offset, m->payload,
                                                      m->len, &b, &due,
                                                      &seq) == 0) {
                                        kres_t *r = res_add(
                                            t, h, m->key, m->key_len, b.p,
                                            b.len, sl_timerindex_due(st->ix, h),
                                            seq, 0);
                                        if (r->due_ms >
                                            sl_now_ms() +
                                                st->dp->lookahead_ms) {
                                                /* Wanted for an id only. */
                                                r->held_ms = sl_now_ms();
                                                st->held_cnt++;
                                                /* kx_trim() then lets it go. */
                                                sl_task_wake_at(
                                                    t, r->held_ms + KX_HELD_MS +
                                                           1);
                                        }
                                        sl_counter_inc(st->dp->m_payload_reads);
                                        got = 1;
                                } else {
                                        sl_timerindex_set_flags(
                                            st->ix, h,
                                            sl_timerindex_flags(st->ix, h) |
                                                KX_F_MISSING);
                                }
                                free(b.p);
                                break;
                        }
                }
                if (wh != SL_TIMERINDEX_NONE &&
                    sl_timerindex_loc(st->ix, wh) == m->offset &&
                    !(sl_timerindex_flags(st->ix, wh) &
                      (KX_F_RESIDENT | KX_F_MISSING))) {
                        /* The record at its place is another id's, or a
                         * tombstone: its own is gone. */
                        sl_timerindex_set_flags(
                            st->ix, wh,
                            sl_timerindex_flags(st->ix, wh) | KX_F_MISSING);
                        got = 1;
                }
                want_del(st, m->offset);
        }
        if (!st->want_cnt)
                fetch_stop(t);
        else
                fetch_kick(t);
        if ((got || st->id_wants < id_wants) && !st->id_wants) {
                /* Every id wanted is back (or found gone): the input that
                 * waited goes on, and finds the records of the ids peeked
                 * after it (delay_peek) here too. */
                st->ids_back_ms = sl_now_ms();
                sl_task_lookup_done(t);
        }
        if (got) {
                /* Read back, or found gone: timers due go on. */
                delay_update_gauges(t);
                sl_task_wake_at(t, 0);
                sl_task_wake_at(t, 1);
        }
}

/* An input record after the one that waits for an id (op.peek): the
 * entries of its id's hash not in memory are wanted too, so that the read
 * the input waits for brings theirs as well, and a run of cancels or
 * reschedules costs one read back, not one each (bench/NOTES.md "What a
 * cancel and a reschedule cost").  Nothing is decided here: input() sees
 * the record later and compares its id as always.  The records read for
 * ids stay while the input waits (kx_trim), so at most KX_PEEK_MAX ids are
 * wanted at once, and no more than a quarter of the partition's share of
 * payload_cache holds at the mean size of the records read back. */
static void delay_peek(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        uint64_t hash;
        size_t most;
        int added = 0;

        if (!st->ix || st->rb_on || !m->key || !m->key_len)
                return;
        most = kx_cache_budget(st) / 4 / SL_MAX(st->read_mean, 1);
        if (st->id_wants >= SL_MIN(SL_MAX(most, 1), KX_PEEK_MAX))
                return;
        hash = kx_hash(st->dp, m->key, m->key_len);
        for (uint32_t h = sl_timerindex_find(st->ix, hash);
             h != SL_TIMERINDEX_NONE;
             h = sl_timerindex_next_same_hash(st->ix, h)) {
                if (sl_timerindex_hash(st->ix, h) != hash ||
                    (sl_timerindex_flags(st->ix, h) &
                     (KX_F_RESIDENT | KX_F_MISSING)))
                        continue;
                want_add(st, sl_timerindex_loc(st->ix, h), h, 1);
                added = 1;
        }
        if (added) {
                sl_counter_inc(st->dp->m_id_peeks);
                fetch_kick(t);
        }
}

/* The owed list: r's index record is written at the next precommit. */
static void kx_owe(delay_state_t *st, kres_t *r) {
        if (st->owed_cnt == st->owed_cap) {
                st->owed_cap = st->owed_cap ? st->owed_cap * 2 : 64;
                st->owed =
                    sl_realloc(st->owed, st->owed_cap * sizeof(*st->owed));
        }
        st->owed[st->owed_cnt++] = r;
        r->lists |= 2;
}

/* A payload record was delivered: its offset becomes its timer's place,
 * and its index record is owed to the changelog (kx_precommit). */
static void kx_delivered(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        kres_t *r = st->fifo_head;

        if (!st->ix)
                return;
        if (!r) {
                sl_log(LOG_ERR, "DELAY",
                       "%s [%d]: a delivery report with no payload record "
                       "waiting for it",
                       t->pl->conf->name, t->partition);
                return;
        }
        st->fifo_head = r->next;
        if (!st->fifo_head)
                st->fifo_tail = NULL;
        r->next = NULL;
        r->lists &= (uint8_t)~1;
        if (r->dead) {
                if (!r->lists)
                        free(r);
                return;
        }
        sl_timerindex_update(st->ix, r->handle, r->due_ms, m->offset);
        st->loc_txn = SL_MAX(st->loc_txn, m->offset);
        r->pinned = 0;
        kx_owe(st, r);
}

/* Writes the index records owed: one per payload record delivered in this
 * transaction (or read from the payload topic's tail at rebuild), then
 * lets go of the payloads not due soon. */
static void kx_precommit(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        int64_t now = sl_now_ms();
        uint8_t val[SL_LOGPB_INDEX_MAX];
        uint32_t min;

        if (!st->ix)
                return;
        min = sl_timerindex_min(st->ix);
        /* The transaction of the last precommit committed (or this one
         * would not run): what was delivered by then is readable now. */
        st->loc_safe = SL_MAX(st->loc_safe, st->loc_prev);
        st->loc_prev = st->loc_txn;
        for (size_t i = 0; i < st->owed_cnt; i++) {
                kres_t *r = st->owed[i];
                size_t n;
                r->lists &= (uint8_t)~2;
                if (r->dead) {
                        if (!r->lists)
                                free(r);
                        continue;
                }
                n = sl_logpb_index_put(val, r->due_ms,
                                       sl_timerindex_loc(st->ix, r->handle));
                sl_task_changelog(t, r->buf, r->idlen, val, n);
                if (r->due_ms > now + st->dp->lookahead_ms ||
                    st->res_bytes > kx_cache_budget(st)) {
                        res_evict(st, r);
                }
        }
        st->owed_cnt = 0;
        kx_trim(t);
        delay_update_gauges(t);
        if (min != SL_TIMERINDEX_NONE && t->state == SL_TASK_RUNNING &&
            !(sl_timerindex_flags(st->ix, min) & KX_F_RESIDENT))
                /* The next timer's record went: wake a look-ahead before
                 * it is due, to read it back. */
                kx_arm(t);
}

/* Reads an index record (logpb.h): 0, or -1 when it is not one this
 * sluice writes or its fields are out of range. */
static int kx_index_read(const void *v, size_t len, int64_t *due,
                         int64_t *loc) {
        if (sl_logpb_index_read(v, len, due, loc) == -1 ||
            *due > SL_DELAY_DUE_MAX_MS || *loc >= KX_PROV_BASE)
                return -1;
        return 0;
}

/* Rebuild: the id of every pending entry (idtab.h), so that a rebuild
 * compares ids byte for byte; freed when the rebuild ends. */
static void rb_put(delay_state_t *st, const void *id, size_t idlen,
                   uint32_t h) {
        sl_idtab_put(&st->rb, h, id, idlen);
}

/* The entry whose id this is, or SL_TIMERINDEX_NONE. */
static uint32_t rb_find(const delay_state_t *st, uint64_t hash, const void *id,
                        size_t idlen) {
        for (uint32_t h = sl_timerindex_find(st->ix, hash);
             h != SL_TIMERINDEX_NONE;
             h = sl_timerindex_next_same_hash(st->ix, h)) {
                size_t len;
                const void *p = sl_idtab_get(&st->rb, h, &len);
                if (p && sl_timerindex_hash(st->ix, h) == hash &&
                    sl_hmap_key_eq(p, len, id, idlen))
                        return h;
        }
        return SL_TIMERINDEX_NONE;
}

/* Removes the pending entry with this id, if there is one. */
static void rb_drop(delay_state_t *st, uint64_t hash, const void *id,
                    size_t idlen) {
        uint32_t h = rb_find(st, hash, id, idlen);
        if (h == SL_TIMERINDEX_NONE)
                return;
        sl_idtab_del(&st->rb, h);
        kx_entry_remove(st, h);
}

static void rb_free(delay_state_t *st) {
        sl_idtab_fini(&st->rb);
        st->rb_on = 0;
}

/* Adds a pending entry (and its rebuild id); 0, or -1 when the index is
 * full. */
static uint32_t kx_add(delay_state_t *st, uint64_t hash, int64_t due,
                       int64_t loc, uint16_t flags) {
        if (due < 0)
                due = 0;
        if (due > SL_TIMERINDEX_FIELD_MAX)
                due = SL_TIMERINDEX_FIELD_MAX;
        return sl_timerindex_add(st->ix, hash, due, loc, flags);
}

/* A changelog record at rebuild: an index record, a timer written before
 * payload_topic was set (kept resident), or a tombstone. */
/* The gone list as the changelog holds it (the last one read wins). */
static void kx_restore_gone(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        sl_logpb_gone_t *g = NULL;
        size_t n = 0;
        if (m->payload && sl_logpb_gone_read(m->payload, m->len, &g, &n)) {
                sl_counter_inc(st->dp->m_restore_bad);
                sl_log(LOG_WARNING, "REBUILD",
                       "%s [%d] @%" PRId64 ": undecodable gone list skipped",
                       t->pl->conf->name, t->partition, m->offset);
                return;
        }
        free(st->gone);
        st->gone = g;
        st->gone_cnt = st->gone_cap = n;
        st->gone_dirty = 0;
}

static void kx_restore(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = st->dp;
        uint64_t hash;
        int64_t due, loc, seq;
        sl_buf_t b = {0};
        uint32_t h;

        if (m->key && !m->key_len) {
                kx_restore_gone(t, m);
                return;
        }
        if (!m->key) {
                sl_counter_inc(dp->m_restore_bad);
                return;
        }
        hash = kx_hash(st->dp, m->key, m->key_len);
        rb_drop(st, hash, m->key, m->key_len);
        if (!m->payload)
                return;
        if (sl_logpb_is_index(m->payload, m->len)) {
                if (kx_index_read(m->payload, m->len, &due, &loc) == -1) {
                        sl_counter_inc(dp->m_restore_bad);
                        sl_log(LOG_WARNING, "REBUILD",
                               "%s [%d] @%" PRId64
                               ": undecodable index record skipped",
                               t->pl->conf->name, t->partition, m->offset);
                        return;
                }
                if ((h = kx_add(st, hash, due, loc, 0)) == SL_TIMERINDEX_NONE)
                        return;
                if (loc > st->ix_max_loc)
                        st->ix_max_loc = st->loc_safe = loc;
                rb_put(st, m->key, m->key_len, h);
                return;
        }
        if (timer_record_blob(t, m->offset, m->payload, m->len, &b, &due,
                              &seq) == 0) {
                if (seq < 0)
                        seq = 0;
                if (seq >= KX_PROV_BASE)
                        seq = KX_PROV_BASE - 1;
                h = kx_add(st, hash, due, seq, KX_F_LEGACY);
                if (h != SL_TIMERINDEX_NONE) {
                        res_add(t, h, m->key, m->key_len, b.p, b.len, due, seq,
                                1);
                        rb_put(st, m->key, m->key_len, h);
                }
        }
        free(b.p);
}

/* The payload topic after the last record the changelog indexes: records
 * whose index record was never written (a payload topic filled before
 * its changelog knew of it) are indexed now. */
static const char *delay_rebuild_source(sl_task_t *t, int64_t *from) {
        delay_state_t *st = t->state_data;
        if (!st->ix)
                return NULL;
        *from = st->ix_max_loc >= 0 ? st->ix_max_loc + 1
                                    : RD_KAFKA_OFFSET_BEGINNING;
        return kx_topic(t->pl->conf);
}

static void kx_restore_source(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        uint64_t hash;
        int64_t due, seq;
        sl_buf_t b = {0};
        uint32_t h;
        uint32_t old;
        int legacy, ok;

        if (!st->ix || !m->key || !m->key_len)
                return;
        st->loc_safe = SL_MAX(st->loc_safe, m->offset);
        hash = kx_hash(st->dp, m->key, m->key_len);
        old = rb_find(st, hash, m->key, m->key_len);
        legacy = old != SL_TIMERINDEX_NONE &&
                 (sl_timerindex_flags(st->ix, old) & KX_F_LEGACY);
        if (old != SL_TIMERINDEX_NONE && !legacy &&
            sl_timerindex_loc(st->ix, old) >= m->offset)
                return; /* indexed already, or by something newer */
        /* A whole Timer in the changelog (its place: its input offset)
         * answers to the changelog alone: no payload tombstone removes
         * it, and a payload record replaces it only when scheduled after
         * it (a recurring timer that replaced a timer whose index record
         * was never written leaves that timer's record, then its
         * tombstone, here). */
        if (legacy && !m->payload)
                return;
        if (!m->payload) {
                rb_drop(st, hash, m->key, m->key_len);
                return;
        }
        ok = timer_record_blob(t, m->offset, m->payload, m->len, &b, &due,
                               &seq) == 0;
        if (legacy && ok && seq <= sl_timerindex_loc(st->ix, old)) {
                free(b.p);
                return;
        }
        rb_drop(st, hash, m->key, m->key_len);
        if (ok &&
            (h = kx_add(st, hash, due, m->offset, 0)) != SL_TIMERINDEX_NONE) {
                kx_owe(st, res_add(t, h, m->key, m->key_len, b.p, b.len, due,
                                   seq, 0));
                rb_put(st, m->key, m->key_len, h);
        }
        free(b.p);
}

static void kx_restored(sl_task_t *t) {
        delay_state_t *st = t->state_data;
        /* Index records whose payload record the payload topic cannot hold
         * (below its first offset: deleted; at or past its end: the topic
         * made again): their timers go to the DLQ as payload-missing at
         * their due time, and the ids, known now, stay in memory (an
         * empty record, pinned) to remove their index records then and to
         * match a cancel or a reschedule exactly. */
        /* Those the gone list names went to the DLQ already: they leave
         * the same way, without a DLQ record.  What the list names that
         * no index record matches leaves the list. */
        size_t kept = 0;
        uint8_t *hit = st->gone_cnt ? sl_calloc(st->gone_cnt, 1) : NULL;
        for (size_t h = 0; h < sl_idtab_span(&st->rb); h++) {
                size_t len, at;
                const void *id = sl_idtab_get(&st->rb, (uint32_t)h, &len);
                uint16_t f, miss = 0;
                int64_t loc, due;
                if (!id)
                        continue;
                f = sl_timerindex_flags(st->ix, (uint32_t)h);
                loc = sl_timerindex_loc(st->ix, (uint32_t)h);
                due = sl_timerindex_due(st->ix, (uint32_t)h);
                if (f & (KX_F_LEGACY | KX_F_RESIDENT))
                        continue;
                if (gone_find(st, loc, &at) && st->gone[at].due_ms == due) {
                        hit[at] = 1;
                        miss = KX_F_MISSING | KX_F_GONE;
                } else if (t->rebuild_source_hi >= 0 &&
                           (loc < t->rebuild_source_lo ||
                            loc >= t->rebuild_source_hi)) {
                        miss = KX_F_MISSING;
                }
                if (!miss)
                        continue;
                res_add(t, (uint32_t)h, id, len, "", 0, due, 0, 1);
                sl_timerindex_set_flags(st->ix, (uint32_t)h,
                                        (uint16_t)(f | miss));
        }
        for (size_t i = 0; i < st->gone_cnt; i++)
                if (hit[i])
                        st->gone[kept++] = st->gone[i];
        if (kept != st->gone_cnt) {
                st->gone_cnt = kept;
                st->gone_dirty = 1;
        }
        free(hit);
        rb_free(st);
        if (st->owed_cnt)
                sl_task_commit_soon(t);
        kx_arm(t);
}

/* Only pipelines with payloads in Kafka track their payload records. */
static int delay_tracks(const sl_pipeline_t *pl) {
        return kx_topic(pl->conf) != NULL;
}

/* A cancel: the index record and the payload record go, if the timer is
 * pending; the input waits while an id of the same hash is read back. */
static void kx_cancel(sl_task_t *t, const sl_delay_req_t *req) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = st->dp;
        uint32_t h;
        int r = kx_lookup(t, req->id, req->id_len,
                          kx_hash(dp, req->id, req->id_len), &h);

        if (r < 0) {
                sl_task_input_retry(t);
                return;
        }
        if (!r) {
                sl_counter_inc(dp->m_cancel_unknown);
                return;
        }
        sl_task_changelog(t, req->id, req->id_len, NULL, 0);
        if (!(sl_timerindex_flags(st->ix, h) & KX_F_LEGACY) &&
            sl_task_produce(t, kx_topic(t->pl->conf), t->partition, req->id,
                            req->id_len, NULL, 0, NULL) < 0)
                sl_task_abort(t, "payload tombstone refused");
        kx_entry_remove(st, h);
        sl_counter_inc(dp->m_cancelled);
        delay_update_gauges(t);
}

/* Caps with payloads in Kafka: a new id needs room for one more timer,
 * and the record is held in memory until the commit that indexes it. */
static int kx_over_cap(sl_task_t *t, const rd_kafka_message_t *m,
                       const sl_delay_req_t *req, int found) {
        delay_pipeline_t *dp = dp_of(t);
        int64_t bytes = (int64_t)(m->key_len + req->payload_len +
                                  req->target_key_len + sizeof(kres_t) + 48);
        for (size_t i = 0; i < req->hdr_cnt; i++)
                bytes += (int64_t)(strlen(req->hdrs[i].name) +
                                   req->hdrs[i].size + 4);
        if (!found && !sl_pcap_room(dp->c_timers, 1)) {
                sl_task_input_full(t, dp->c_timers);
                return 1;
        }
        if (!sl_pcap_room(dp->c_bytes, bytes)) {
                sl_task_input_full(t, dp->c_bytes);
                return 1;
        }
        return 0;
}

/* Recurring timers with payloads in Kafka stay resident: their changelog
 * record is a whole Timer (a schedule fires again and again, and its
 * record would be read back each time), as a timer written before
 * payload_topic was set is, and entry h holds it pinned (KX_F_LEGACY, its
 * input offset as its place).  The timer req schedules enters the index
 * so; old (or NONE) is the entry it replaces, whose payload record goes
 * (nothing under the id takes its place in the payload topic). */
static void kx_add_resident(sl_task_t *t, const sl_delay_req_t *req,
                            int64_t input_offset, const void *blob,
                            size_t bloblen, uint32_t old) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = st->dp;
        uint32_t h;

        if (old != SL_TIMERINDEX_NONE) {
                if (!(sl_timerindex_flags(st->ix, old) & KX_F_LEGACY) &&
                    sl_task_produce(t, kx_topic(t->pl->conf), t->partition,
                                    req->id, req->id_len, NULL, 0, NULL) < 0)
                        sl_task_abort(t, "payload tombstone refused");
                kx_entry_remove(st, old);
        }
        h = kx_add(st, kx_hash(dp, req->id, req->id_len), req->due_ms,
                   input_offset, KX_F_LEGACY);
        if (h == SL_TIMERINDEX_NONE) {
                sl_task_abort(t, "timer index full");
                return;
        }
        res_add(t, h, req->id, req->id_len, blob, bloblen, req->due_ms,
                input_offset, 1);
        sl_counter_inc(old != SL_TIMERINDEX_NONE ? dp->m_rescheduled
                                                 : dp->m_scheduled);
}

/* Resident recurring entry h (record r) fell due (recur_advance()); the
 * index follows: the entry again at the next instant, or gone. */
static void kx_recur_fire(sl_task_t *t, uint32_t h, kres_t *r, int64_t due,
                          int64_t now) {
        delay_state_t *st = t->state_data;
        size_t idlen = r->idlen, bloblen = r->bloblen;
        char *id = sl_malloc(idlen + 1);
        uint8_t *blob = sl_malloc(bloblen + 1);
        int64_t seq = sl_timerindex_loc(st->ix, h), at;
        sl_buf_t b = {0};
        uint32_t nh;

        /* Copies: the entry goes before the next one is added. */
        memcpy(id, r->buf, idlen);
        memcpy(blob, r->buf + idlen, bloblen);
        kx_entry_remove(st, h);
        if (recur_advance(t, id, idlen, blob, bloblen, due, seq, now, &b,
                          &at)) {
                nh = kx_add(st, kx_hash(st->dp, id, idlen), at, seq,
                            KX_F_LEGACY);
                if (nh == SL_TIMERINDEX_NONE)
                        sl_task_abort(t, "timer index full");
                else
                        res_add(t, nh, id, idlen, b.p, b.len, at, seq, 1);
        }
        free(b.p);
        free(id);
        free(blob);
}

/* The timer req schedules enters the index, its record held (pinned)
 * until its delivery report gives its offset; old (or NONE) is the entry
 * it replaces. */
static void kx_add_scheduled(sl_task_t *t, const sl_delay_req_t *req,
                             int64_t input_offset, const void *blob,
                             size_t bloblen, uint32_t old) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = st->dp;
        uint64_t hash = kx_hash(dp, req->id, req->id_len);
        uint32_t h;
        kres_t *r;

        if (old != SL_TIMERINDEX_NONE)
                kx_entry_remove(st, old);
        h = kx_add(st, hash, req->due_ms, KX_PROV_BASE + input_offset, 0);
        if (h == SL_TIMERINDEX_NONE) {
                /* 2^32 - 1 timers in one partition: the record is written;
                 * a rebuild holds what memory cannot now. */
                sl_task_abort(t, "timer index full");
                return;
        }
        r = res_add(t, h, req->id, req->id_len, blob, bloblen, req->due_ms,
                    input_offset, 1);
        r->lists |= 1;
        if (st->fifo_tail)
                st->fifo_tail->next = r;
        else
                st->fifo_head = r;
        st->fifo_tail = r;
        sl_counter_inc(old != SL_TIMERINDEX_NONE ? dp->m_rescheduled
                                                 : dp->m_scheduled);
}

/* Schedules (or reschedules) the timer of req, read at now: its changelog
 * record into the transaction, then the heap.  A record Kafka or the blob
 * refuses goes to the DLQ and leaves the state as it was. */
static void delay_schedule(sl_task_t *t, const rd_kafka_message_t *m,
                           sl_delay_req_t *req, int64_t now, uint32_t old) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        char detail[256];
        const char *target = req->target;
        sched_hdrs_t sh;
        uint8_t *packed;
        size_t plen;
        /* The packed record and the blob are built in the pipeline's
         * scratch. */
        sl_buf_t b = {dp->blob.buf, 0, dp->blob.size};
        int replaced, r;
        uint8_t flags = 0;

        if (req->base >= SL_DELAY_BASE_READ_NO_TS)
                sl_counter_inc(
                    dp->m_read_base[req->base - SL_DELAY_BASE_READ_NO_TS]);

        sched_hdrs_init(&sh, req);
        packed = delay_pack_timer(dp, req, m, now, &sh, &plen);
        /* The rule delay_restore() applies to the record (due before
         * created), so a rebuild keeps the flag. */
        if (req->due_ms < now && !req->recurring)
                flags |= SL_BLOB_DUE_ON_ARRIVAL;
        if (req->null_target_key)
                flags |= SL_BLOB_NULL_KEY;

        /* The in-memory form first: a record refused here leaves
         * the changelog (and an earlier timer of the same id) as
         * it was. */
        if (delay_blob(
                dp, &b, flags, target, strlen(target), req->target_partition,
                req->has_target_key, req->target_key, req->target_key_len,
                req->recurring ? &req->recur : NULL, req->hdr_cnt, sh.hn,
                sh.hnl, sh.hvv, sh.hvl, req->payload, req->payload_len) == -1) {
                sl_task_dlq(t, m, "too-many-targets",
                            "over 65535 distinct targets");
        } else if ((r = st->ix && !req->recurring
                            ? sl_task_produce_tracked(
                                  t, kx_topic(t->pl->conf), t->partition,
                                  req->id, req->id_len, packed, plen, NULL)
                            : sl_task_produce(t, t->pl->conf->changelog,
                                              t->partition, req->id,
                                              req->id_len, packed, plen,
                                              NULL)) < 0) {
                snprintf(detail, sizeof(detail),
                         "the timer's changelog record: %s",
                         r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                             ? sl_task_refused_why(t)
                             : rd_kafka_err2str((rd_kafka_resp_err_t)-r));
                sl_task_dlq(t, m,
                            r == -RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
                                ? "too-large"
                                : "changelog-refused",
                            detail);
        } else if (st->ix) {
                if (req->recurring)
                        kx_add_resident(t, req, m->offset, b.p, b.len, old);
                else
                        kx_add_scheduled(t, req, m->offset, b.p, b.len, old);
                delay_update_gauges(t);
                sl_task_wake_at(t, req->due_ms > 0 ? req->due_ms : 1);
        } else {
                replaced =
                    sl_timerheap_upsert(st->heap, req->id, req->id_len,
                                        req->due_ms, m->offset, b.p, b.len);
                sl_counter_inc(replaced ? dp->m_rescheduled : dp->m_scheduled);
                delay_update_gauges(t);
                sl_task_wake_at(t, req->due_ms > 0 ? req->due_ms : 1);
        }
        /* The heap copied the blob, the producer the record. */
        dp->blob.buf = b.p;
        dp->blob.size = b.size;
        sl_scratch_done(&dp->blob);
        sl_scratch_done(&dp->pack);
        sched_hdrs_clear(&sh);
}

static void delay_input(sl_task_t *t, const rd_kafka_message_t *m) {
        delay_state_t *st = t->state_data;
        delay_pipeline_t *dp = dp_of(t);
        sl_delay_req_t req = {0};
        sl_delay_record_t rec;
        sl_hdr_t hdrs_in[64], *hdrs;
        char detail[256] = "";
        int64_t now = sl_now_ms();
        int reason;

        rec.key = m->key;
        rec.key_len = m->key_len;
        rec.value = m->payload;
        rec.value_len = m->len;
        rec.hdr_cnt =
            delay_read_headers(m, hdrs_in, SL_ARRAY_SIZE(hdrs_in), &hdrs);
        rec.hdrs = hdrs;
        rec.partition = m->partition;
        rec.offset = m->offset;
        rec.timestamp_ms = rd_kafka_message_timestamp(m, NULL);
        reason = sl_delay_input_parse(&dp->params, &rec, now, &req, detail,
                                      sizeof(detail));
        if (reason) {
                sl_task_dlq(t, m, sl_delay_reason_str(reason), detail);
        } else if (req.action == SL_DELAY_CANCEL) {
                if (st->ix)
                        kx_cancel(t, &req);
                else
                        delay_cancel(t, &req);
        } else if (req.recurring && delay_recur_first(t, m, &req) < 0) {
                /* to the DLQ */
        } else if (delay_check_target(t, m, &req) == 0) {
                uint32_t old = SL_TIMERINDEX_NONE;
                int found = 0;
                if (st->ix && (found = kx_lookup(
                                   t, req.id, req.id_len,
                                   kx_hash(dp, req.id, req.id_len), &old)) < 0)
                        sl_task_input_retry(t);
                else if (st->ix ? !kx_over_cap(t, m, &req, found)
                                : !delay_over_cap(t, m, &req))
                        delay_schedule(t, m, &req, now, old);
        }
        sl_delay_req_clear(&req);
        if (hdrs != hdrs_in)
                free(hdrs);
}

/* The API's lookup of one timer (describe.h: the JSON shape), or NULL
 * when no timer of that id is pending here. */
/* The JSON of one pending timer (describe.h: the shape). */
static struct json_t *describe_blob(sl_task_t *t, const void *id, size_t idlen,
                                    int64_t due_ms, int64_t seq,
                                    const void *blob, size_t bloblen) {
        delay_pipeline_t *dp = dp_of(t);
        sl_describe_timer_t d = {0};
        fire_view_t v;
        blob_reader_t r;

        if (blob_decode(blob, bloblen, &v) == -1 ||
            v.target_idx >= dp->target_cnt)
                sl_assert(!"timer blob corrupt");
        d.id = id;
        d.idlen = idlen;
        d.partition = t->partition;
        d.due_ms = due_ms;
        d.due_on_arrival = v.due_on_arrival;
        d.target_topic = dp->targets[v.target_idx];
        d.target_key_null = v.null_key;
        d.target_key_header = v.has_key;
        d.target_key = v.has_key ? v.key : id;
        d.target_keylen = v.has_key ? v.keylen : idlen;
        d.target_partition = v.partition;
        d.payload_bytes = v.payload_len;
        d.header_count = v.hdr_cnt;
        d.seq = seq;
        /* Names plus values of the pass-through headers. */
        r.p = v.hdrs;
        r.end = v.payload;
        r.bad = 0;
        for (size_t i = 0; i < v.hdr_cnt && !r.bad; i++) {
                size_t n = rd_varint(&r);
                rd_bytes(&r, n);
                d.header_bytes += n;
                n = rd_varint(&r);
                if (n) {
                        rd_bytes(&r, n - 1);
                        d.header_bytes += n - 1;
                }
        }
        if (v.recurring) {
                /* Its schedule, and the instants after this one. */
                sl_tz_t *tz;
                char err[200];
                int n;
                d.expr = v.recur.expr;
                d.expr_len = v.recur.expr_len;
                d.cron = v.recur.sched.kind == SL_SCHEDULE_CRON;
                d.tz = v.recur.tz_len ? v.recur.tz : NULL;
                d.tz_len = v.recur.tz_len;
                d.catch_up = sl_recur_catch_up_name(v.recur.catch_up);
                d.fired = v.recur.fired;
                d.last_fired_ms = v.recur.last_ms;
                if (sl_recur_tz(&v.recur, recur_zones(dp), &tz, err,
                                sizeof(err)) == 0 &&
                    (n = sl_recur_upcoming(&v.recur, tz, due_ms, d.next_ms,
                                           SL_DESCRIBE_NEXT, err,
                                           sizeof(err))) > 0)
                        d.next_cnt = n;
        }
        return sl_describe_timer(&d, sl_now_ms());
}

/* The API's lookup of one timer (describe.h: the JSON shape), or NULL
 * when no timer of that id is pending here.  With payloads in Kafka, an
 * id whose record is being read back answers SL_DESCRIBE_RETRY. */
static struct json_t *delay_describe(sl_task_t *t, const void *key,
                                     size_t keylen) {
        delay_state_t *st = t->state_data;
        const sl_timer_t *tm;
        uint32_t h;
        kres_t *r;

        if (st->ix) {
                switch (kx_lookup(t, key, keylen, kx_hash(st->dp, key, keylen),
                                  &h)) {
                case -1:
                        return sl_describe_retry();
                case 0:
                        return NULL;
                }
                r = res_get(st, h);
                if (sl_timerindex_flags(st->ix, h) & KX_F_MISSING)
                        /* no payload: it goes to the DLQ */
                        return sl_describe_gone(sl_timerindex_due(st->ix, h));
                return describe_blob(t, key, keylen,
                                     sl_timerindex_due(st->ix, h), r->seq,
                                     r->buf + r->idlen, r->bloblen);
        }
        if (!(tm = sl_timerheap_find(st->heap, key, keylen)))
                return NULL;
        return describe_blob(t, sl_timer_key(tm), tm->keylen, tm->due_ms,
                             tm->seq, sl_timer_data(tm), tm->datalen);
}

const sl_op_t sl_op_delay = {
    .name = "delay",
    .pipeline_init = delay_pipeline_init,
    .pipeline_destroy = delay_pipeline_destroy,
    .state_new = delay_state_new,
    .state_destroy = delay_state_destroy,
    .restore = delay_restore,
    .restored = delay_restored,
    .input = delay_input,
    .wake = delay_wake,
    .rebuild_source = delay_rebuild_source,
    .restore_source = kx_restore_source,
    .delivered = kx_delivered,
    .tracks = delay_tracks,
    .precommit = kx_precommit,
    .fetched = kx_fetched,
    .peek = delay_peek,
    .describe = delay_describe,
};
