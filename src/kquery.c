/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kquery.c — Kafka lookups off the loop thread (see kquery.h).
 *
 * DESIGN
 *
 * Two ways out, chosen by what librdkafka 2.0.2 offers:
 *
 *  - Watermarks, partition counts and the probe have only blocking calls,
 *    so they run on SL_KQUERY_WORKERS threads of our own (not libuv's
 *    threadpool: its four threads are shared with file and DNS work, and a
 *    broker that is down would hold them for whole timeouts).  Each call is
 *    given what is left of the request's deadline as its timeout.
 *    Watermark lookups may occupy all workers but one: at startup every
 *    partition asks at once, and against a silent broker each ask takes
 *    its full timeout; the spare worker keeps the probe (which also jumps
 *    the queue) and partition counts answering.  Watermarks are read with
 *    rd_kafka_offsets_for_times() and the logical offsets BEGINNING/END,
 *    not rd_kafka_query_watermark_offsets(): in 2.0.2 the latter waits for
 *    its ListOffsets answers with no deadline of its own, so a paused
 *    broker holds the thread for socket.timeout.ms (60 s by default).
 *
 *  - Committed offsets, group members and topic configs use the admin API
 *    (ListConsumerGroupOffsets with require_stable_offsets,
 *    DescribeConsumerGroups, DescribeConfigs).  Results arrive as events on a
 * queue of ours, watched by an sl_kwatch; each event's opaque is the request.
 * The broker's "ask again" answers (UNSTABLE_OFFSET_COMMIT while a transaction
 * holds offsets for the partition, coordinator loading or moving) are retried
 * here every SL_KQUERY_RETRY_MS until the deadline.
 *
 * A request (kq_req_t) lives on q->reqs from the call that starts it until
 * it is freed.  `where` says who holds it besides that list:
 *
 *   KQ_LOOP     the loop thread alone (being answered, or about to be freed)
 *   KQ_WORKER   the worker side; wstate, under q->lock, says how far it is:
 *               KQ_QUEUED (q->todo) → KQ_RUNNING → KQ_DONE (q->done, then
 *               the uv_async wakes the loop, which takes it back)
 *   KQ_ADMIN    librdkafka: an admin request whose result event names it
 *   KQ_BACKOFF  the loop thread, waiting on req->timer to ask again
 *
 * Each request answers exactly once: `answered` is set when its callback
 * runs or it is cancelled.  An answered request is freed as soon as nobody
 * else holds it — at once when it is KQ_LOOP, KQ_BACKOFF or still queued;
 * otherwise when the worker or the admin result hands it back.
 *
 * The deadline guard: req->timer fires at the deadline.  A request still
 * queued is answered __TIMED_OUT there and then; one that a worker or
 * librdkafka holds gets SL_KQUERY_GRACE_MS more to come back with its own
 * (more telling) error, then is answered __TIMED_OUT.  The calls made are
 * all bounded by the deadline in 2.0.2, so the guard is a backstop that
 * keeps the "at most about timeout_ms" promise whatever librdkafka does.
 *
 * Teardown: sl_kquery_destroy() stops the workers and joins them (each
 * call in flight returns by its deadline), stops the queue watch and
 * destroys the queue (librdkafka drops results that arrive later), frees
 * every request and closes the handles.  Memory goes in libuv close
 * callbacks, so pointers stay valid for the rest of the current callback
 * even when a kquery callback destroys q: every loop here checks
 * q->closing after each callback it makes.
 */
#include "kquery.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "groupcheck.h"
#include "kafka.h"
#include "kwatch.h"
#include "log.h"
#include "util.h"

/* Threads making blocking librdkafka calls. */
#define SL_KQUERY_WORKERS 4
/* How many of them watermark lookups may occupy at once. */
#define SL_KQUERY_BULK_MAX (SL_KQUERY_WORKERS - 1)
/* Pause between asks while the broker says "ask again". */
#define SL_KQUERY_RETRY_MS 150
/* Extra time past the deadline for a call in flight to return. */
#define SL_KQUERY_GRACE_MS 200
/* After a group's coordinator moved: how long the lookup client may keep
 * an unused coordinator (its metadata.max.age.ms, sl_kquery_client_conf),
 * and the margin past it for librdkafka's once-a-second expiry scan.  See
 * kquery_coord_moved. */
#define SL_KQUERY_COORD_SLACK_MS 1500
/* The admin API's request timeout cannot exceed an hour. */
#define SL_KQUERY_ADMIN_TIMEOUT_MAX (3600 * 1000)

typedef enum {
        KQ_WATERMARKS, /* worker */
        KQ_PARTITIONS, /* worker */
        KQ_PROBE,      /* worker */
        KQ_OWNERS,     /* worker */
        KQ_COMMITTED,  /* admin API */
        KQ_GROUP,      /* admin API */
        KQ_MAX_BYTES,  /* admin API */
} kq_kind_t;

typedef enum { KQ_LOOP, KQ_WORKER, KQ_ADMIN, KQ_BACKOFF } kq_where_t;

typedef enum { KQ_QUEUED, KQ_RUNNING, KQ_DONE } kq_wstate_t;

/* An answer, whatever the kind; fields a kind does not use stay at their
 * "no value" defaults (kquery_out_init). */
typedef struct kq_out_s {
        rd_kafka_resp_err_t err;
        int64_t lo, hi;
        int64_t offset;
        int partition_cnt;
        int64_t rtt_ms;
        int64_t max_bytes;
        int max_bytes_default;
        const sl_groupcheck_member_t *members;
        int member_cnt;
        rd_kafka_consumer_group_state_t group_state;
} kq_out_t;

typedef struct kq_req_s {
        sl_kquery_t *q;
        kq_kind_t kind;
        kq_where_t where;   /* loop thread */
        kq_wstate_t wstate; /* q->lock, while where == KQ_WORKER */
        int answered;       /* callback ran, or cancelled */
        int late;           /* the guard granted the grace period */
        int freed;          /* timer closing; memory goes in its callback */
        /* Set when the request starts, then read-only (workers read them). */
        char *topic;
        char *group;
        int32_t partition;
        int64_t deadline_us; /* sl_mono_us() */
        union {
                sl_kquery_watermarks_cb *watermarks;
                sl_kquery_committed_cb *committed;
                sl_kquery_partitions_cb *partitions;
                sl_kquery_group_cb *group;
                sl_kquery_probe_cb *probe;
                sl_kquery_max_bytes_cb *max_bytes;
        } cb;
        void *opaque;
        uv_timer_t timer; /* the deadline guard, or the backoff */
        kq_out_t out;     /* a worker's answer, read after KQ_DONE */
        /* KQ_OWNERS: what out.members points into, freed with req. */
        const struct rd_kafka_group_list *glist;
        sl_groupcheck_member_t *owners;
        int owner_cnt;
        LIST_ENTRY(kq_req_s) link;   /* q->reqs */
        TAILQ_ENTRY(kq_req_s) wlink; /* q->todo or q->done, under q->lock */
} kq_req_t;

struct sl_kquery_s {
        uv_loop_t *loop;
        rd_kafka_t *rk;
        int closing;
        LIST_HEAD(, kq_req_s) reqs; /* every request not yet freed */
        /* Admin results. */
        rd_kafka_queue_t *rkqu;
        sl_kwatch_t *watch;
        /* Workers. */
        uv_async_t async; /* a worker finished a request */
        pthread_t workers[SL_KQUERY_WORKERS];
        int worker_cnt;
        pthread_mutex_t lock;
        pthread_cond_t cond;         /* q->todo grew, or stopping */
        TAILQ_HEAD(, kq_req_s) todo; /* lock */
        TAILQ_HEAD(, kq_req_s) done; /* lock */
        int bulk_running;            /* lock: watermark calls in flight */
        int stopping;                /* lock: workers exit */
        /* Committed offsets of this group through this consumer's own
         * group coordinator, on a worker (sl_kquery_set_offsets_client);
         * NULL: the admin API. */
        rd_kafka_t *offsets_rk;
        char *offsets_group;
        /* Group requests (loop thread): when the last was sent, and until
         * when none is sent (kquery_coord_moved). */
        int64_t group_sent_us;
        int64_t coord_hold_until_us;
};

static void kquery_on_timer(uv_timer_t *timer);

static void kquery_out_init(kq_out_t *out, rd_kafka_resp_err_t err) {
        memset(out, 0, sizeof(*out));
        out->err = err;
        out->lo = out->hi = -1;
        out->offset = RD_KAFKA_OFFSET_INVALID;
        out->partition_cnt = -1;
        out->rtt_ms = -1;
        out->max_bytes = -1;
        out->group_state = RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN;
}

/* Milliseconds left before req's deadline, 0 when it has passed.  Any
 * thread. */
static int kquery_left_ms(const kq_req_t *req) {
        int64_t left = (req->deadline_us - sl_mono_us()) / 1000;
        return left > 0 ? (int)SL_MIN(left, INT32_MAX) : 0;
}

/*
 * Request lifetime (loop thread).
 */

static void kquery_req_on_close(uv_handle_t *h) {
        kq_req_t *req = h->data;
        for (int i = 0; i < req->owner_cnt; i++)
                if (req->owners[i].assignment)
                        rd_kafka_topic_partition_list_destroy(
                            (rd_kafka_topic_partition_list_t *)req->owners[i]
                                .assignment);
        free(req->owners);
        if (req->glist)
                rd_kafka_group_list_destroy(req->glist);
        free(req->topic);
        free(req->group);
        free(req);
}

static void kquery_req_free(kq_req_t *req) {
        sl_assert(!req->freed);
        req->freed = 1;
        LIST_REMOVE(req, link);
        uv_close((uv_handle_t *)&req->timer, kquery_req_on_close);
}

/* Takes req back from the worker queue if no worker has started it; 1 if
 * it did (req is then KQ_LOOP). */
static int kquery_unqueue(kq_req_t *req) {
        sl_kquery_t *q = req->q;
        int taken = 0;

        pthread_mutex_lock(&q->lock);
        if (req->wstate == KQ_QUEUED) {
                TAILQ_REMOVE(&q->todo, req, wlink);
                taken = 1;
        }
        pthread_mutex_unlock(&q->lock);
        if (taken)
                req->where = KQ_LOOP;
        return taken;
}

/* Runs req's callback with out, then frees req unless someone else still
 * holds it.  The callback may destroy q (which frees req: its memory stays
 * until the loop's next turn, and `freed` says so). */
static void kquery_answer(kq_req_t *req, const kq_out_t *out) {
        sl_assert(!req->answered);
        req->answered = 1;
        uv_timer_stop(&req->timer);
        switch (req->kind) {
        case KQ_WATERMARKS:
                req->cb.watermarks(req->opaque, out->err, out->lo, out->hi);
                break;
        case KQ_COMMITTED:
                req->cb.committed(req->opaque, out->err, out->offset);
                break;
        case KQ_PARTITIONS:
                req->cb.partitions(req->opaque, out->err, req->topic,
                                   out->partition_cnt);
                break;
        case KQ_GROUP:
        case KQ_OWNERS:
                req->cb.group(req->opaque, out->err, out->group_state,
                              out->members, out->member_cnt);
                break;
        case KQ_PROBE:
                req->cb.probe(req->opaque, out->err, out->rtt_ms);
                break;
        case KQ_MAX_BYTES:
                req->cb.max_bytes(req->opaque, out->err, req->topic,
                                  out->max_bytes, out->max_bytes_default);
                break;
        }
        if (!req->freed && req->where == KQ_LOOP)
                kquery_req_free(req);
}

/*
 * Worker threads.
 */

/* One end of a partition: which is RD_KAFKA_OFFSET_BEGINNING or _END.
 * Blocks up to what is left of req's deadline. */
static rd_kafka_resp_err_t kquery_list_offset(rd_kafka_t *rk,
                                              const kq_req_t *req,
                                              int64_t which, int64_t *offp) {
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_resp_err_t err;
        int left = kquery_left_ms(req);

        if (left == 0)
                return RD_KAFKA_RESP_ERR__TIMED_OUT;
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, req->topic, req->partition)
            ->offset = which;
        err = rd_kafka_offsets_for_times(rk, l, left);
        if (!err)
                err = l->elems[0].err;
        if (!err && l->elems[0].offset < 0)
                err = RD_KAFKA_RESP_ERR__BAD_MSG; /* not in the answer */
        if (!err)
                *offp = l->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(l);
        return err;
}

static void kquery_run_watermarks(rd_kafka_t *rk, kq_req_t *req) {
        int64_t lo, hi;
        rd_kafka_resp_err_t err;

        if (!(err = kquery_list_offset(rk, req, RD_KAFKA_OFFSET_BEGINNING,
                                       &lo)) &&
            !(err = kquery_list_offset(rk, req, RD_KAFKA_OFFSET_END, &hi))) {
                req->out.lo = lo;
                req->out.hi = hi;
        }
        req->out.err = err;
}

/* Blocks up to what is left of req's deadline (rd_kafka_metadata). */
static void kquery_run_partitions(rd_kafka_t *rk, kq_req_t *req) {
        const struct rd_kafka_metadata *md;
        rd_kafka_topic_t *rkt;
        rd_kafka_resp_err_t err;

        if (!(rkt = rd_kafka_topic_new(rk, req->topic, NULL))) {
                req->out.err = rd_kafka_last_error();
                return;
        }
        err = rd_kafka_metadata(rk, 0, rkt, &md, kquery_left_ms(req));
        rd_kafka_topic_destroy(rkt);
        if (err) {
                req->out.err = err;
                return;
        }
        if (md->topic_cnt != 1 || strcmp(md->topics[0].topic, req->topic))
                req->out.err = RD_KAFKA_RESP_ERR__BAD_MSG;
        else if (md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                req->out.partition_cnt = 0;
        else if (md->topics[0].err)
                req->out.err = md->topics[0].err;
        else
                req->out.partition_cnt = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
}

/* Metadata for the topics rk knows already (none asked by name): one
 * round trip to any broker.  Blocks up to what is left of the deadline. */
static void kquery_run_probe(rd_kafka_t *rk, kq_req_t *req) {
        const struct rd_kafka_metadata *md;
        int64_t t0 = sl_mono_us();

        req->out.err = rd_kafka_metadata(rk, 0, NULL, &md, kquery_left_ms(req));
        if (!req->out.err) {
                req->out.rtt_ms = (sl_mono_us() - t0) / 1000;
                rd_kafka_metadata_destroy(md);
        }
}

/* The group through the classic ListGroups + DescribeGroups requests
 * (rd_kafka_list_groups), not the admin API: librdkafka 2.0.2 aborts on an
 * assertion (rd_kafka_enq_once_del_source_return, eonce->refcnt > 0;
 * librdkafka issues #3663, #4605) when a coordinator-bound admin request
 * crosses a broker restart, which 0401 hit twice in two runs once the group
 * was described every 5 s.  Blocks up to what is left of the deadline. */
static void kquery_run_owners(rd_kafka_t *rk, kq_req_t *req) {
        const struct rd_kafka_group_info *g;
        rd_kafka_resp_err_t err;

        err = rd_kafka_list_groups(rk, req->group, &req->glist,
                                   kquery_left_ms(req));
        if (err && !(err == RD_KAFKA_RESP_ERR__PARTIAL && req->glist)) {
                req->out.err = err;
                return;
        }
        if (!req->glist || req->glist->group_cnt == 0) {
                req->out.group_state = RD_KAFKA_CONSUMER_GROUP_STATE_DEAD;
                return;
        }
        g = &req->glist->groups[0];
        if (g->err) {
                req->out.err = g->err;
                return;
        }
        req->out.group_state = rd_kafka_consumer_group_state_code(g->state);
        if (g->member_cnt > 0 && strcmp(g->protocol_type, "consumer")) {
                req->out.err = RD_KAFKA_RESP_ERR__BAD_MSG;
                return;
        }
        req->owners = sl_calloc((size_t)g->member_cnt, sizeof(*req->owners));
        req->owner_cnt = g->member_cnt;
        for (int i = 0; i < g->member_cnt; i++) {
                const struct rd_kafka_group_member_info *m = &g->members[i];
                req->owners[i].consumer_id = m->member_id;
                req->owners[i].client_id = m->client_id;
                req->owners[i].host = m->client_host;
                req->owners[i].assignment = sl_groupcheck_parse_assignment(
                    m->member_assignment,
                    m->member_assignment_size > 0
                        ? (size_t)m->member_assignment_size
                        : 0);
                /* Who owns what cannot be told: no answer rather than a
                 * wrong one. */
                if (!req->owners[i].assignment)
                        req->out.err = RD_KAFKA_RESP_ERR__BAD_MSG;
        }
        if (req->out.err)
                return;
        req->out.members = req->owners;
        req->out.member_cnt = req->owner_cnt;
}

/* The committed offset through rd_kafka_committed() on the offsets client,
 * a consumer of the group that never joins it: its group coordinator is
 * the consumer's own (found again when it moves, unlike the admin API's
 * cached one), and with isolation.level=read_committed the fetch requires
 * stable offsets.  Not the admin API: in librdkafka 2.0.2 its
 * coordinator-bound requests can abort the process
 * (rd_kafka_enq_once_del_source_return: eonce->refcnt > 0; issues #3663,
 * #4605), which 0704 hit with a node cut off.  Blocks up to what is left
 * of the deadline. */
static void kquery_run_committed(rd_kafka_t *rk, kq_req_t *req) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_add(l, req->topic, req->partition);
        rd_kafka_resp_err_t err =
            rd_kafka_committed(rk, l, kquery_left_ms(req));

        if (!err)
                err = p->err;
        req->out.err = err;
        if (!err)
                req->out.offset = p->offset;
        rd_kafka_topic_partition_list_destroy(l);
}

static void kquery_run(rd_kafka_t *rk, kq_req_t *req) {
        kquery_out_init(&req->out, RD_KAFKA_RESP_ERR_NO_ERROR);
        if (kquery_left_ms(req) == 0) {
                req->out.err = RD_KAFKA_RESP_ERR__TIMED_OUT;
                return;
        }
        switch (req->kind) {
        case KQ_WATERMARKS:
                kquery_run_watermarks(rk, req);
                break;
        case KQ_PARTITIONS:
                kquery_run_partitions(rk, req);
                break;
        case KQ_PROBE:
                kquery_run_probe(rk, req);
                break;
        case KQ_OWNERS:
                kquery_run_owners(rk, req);
                break;
        case KQ_COMMITTED:
                kquery_run_committed(req->q->offsets_rk, req);
                break;
        default:
                sl_assert(!"not a worker request");
        }
}

/* The first queued request this worker may start, unlinked; NULL if none.
 * Under q->lock. */
static kq_req_t *kquery_next(sl_kquery_t *q) {
        kq_req_t *req;

        TAILQ_FOREACH(req, &q->todo, wlink) {
                if ((req->kind == KQ_WATERMARKS || req->kind == KQ_COMMITTED) &&
                    q->bulk_running >= SL_KQUERY_BULK_MAX)
                        continue;
                TAILQ_REMOVE(&q->todo, req, wlink);
                return req;
        }
        return NULL;
}

static void *kquery_worker(void *arg) {
        sl_kquery_t *q = arg;
        kq_req_t *req = NULL;
        int bulk;

        pthread_mutex_lock(&q->lock);
        for (;;) {
                while (!q->stopping && !(req = kquery_next(q)))
                        pthread_cond_wait(&q->cond, &q->lock);
                if (q->stopping)
                        break;
                req->wstate = KQ_RUNNING;
                bulk = req->kind == KQ_WATERMARKS || req->kind == KQ_COMMITTED;
                q->bulk_running += bulk;
                pthread_mutex_unlock(&q->lock);

                kquery_run(q->rk, req); /* blocks up to the deadline */

                pthread_mutex_lock(&q->lock);
                q->bulk_running -= bulk;
                req->wstate = KQ_DONE;
                TAILQ_INSERT_TAIL(&q->done, req, wlink);
                uv_async_send(&q->async);
        }
        pthread_mutex_unlock(&q->lock);
        return NULL;
}

/* Requests back from the workers.  Loop thread. */
static void kquery_on_async(uv_async_t *async) {
        sl_kquery_t *q = async->data;
        kq_req_t *req;

        while (!q->closing) {
                pthread_mutex_lock(&q->lock);
                if ((req = TAILQ_FIRST(&q->done)))
                        TAILQ_REMOVE(&q->done, req, wlink);
                pthread_mutex_unlock(&q->lock);
                if (!req)
                        return;
                req->where = KQ_LOOP;
                if (req->answered)
                        kquery_req_free(req);
                else
                        kquery_answer(req, &req->out);
        }
}

/*
 * Admin API (loop thread).
 */

/* The broker's "ask again soon" answers. */
static int kquery_retriable(rd_kafka_resp_err_t err) {
        switch (err) {
        case RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT:
        case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
        case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
                return 1;
        default:
                return 0;
        }
}

/* A group request was answered "not the coordinator" (or "none
 * available").  librdkafka 2.0.2 keeps each group's coordinator in a
 * cache that admin requests never correct: the answer leaves the entry in
 * place, and every request renews it (rd_kafka_coord_cache_expire drops
 * only entries unused for metadata.max.age.ms).  Asked again and again,
 * it would send every ListConsumerGroupOffsets to the old node for as long
 * as the asking lasts — a rebuild waiting for ever.  So no group request
 * is sent until the entry has gone unused for the lookup client's
 * metadata.max.age.ms (SL_KQUERY_COORD_TTL_MS) and the next expiry scan
 * has run; the next request then looks the coordinator up afresh. */
static void kquery_coord_moved(sl_kquery_t *q, rd_kafka_resp_err_t err) {
        int64_t until;

        if (err != RD_KAFKA_RESP_ERR_NOT_COORDINATOR &&
            err != RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE)
                return;
        until =
            q->group_sent_us +
            (int64_t)(SL_KQUERY_COORD_TTL_MS + SL_KQUERY_COORD_SLACK_MS) * 1000;
        if (until <= q->coord_hold_until_us)
                return;
        q->coord_hold_until_us = until;
        sl_log(LOG_NOTICE, "LOOKUP",
               "group coordinator moved (%s): group lookups wait %d ms for "
               "the client to forget the old one",
               rd_kafka_err2str(err), (int)((until - sl_mono_us()) / 1000));
}

/* Parks req to ask again after SL_KQUERY_RETRY_MS if its deadline leaves
 * room; 1 if it did. */
static int kquery_backoff(kq_req_t *req) {
        if (kquery_left_ms(req) <= SL_KQUERY_RETRY_MS)
                return 0;
        req->where = KQ_BACKOFF;
        uv_timer_start(&req->timer, kquery_on_timer, SL_KQUERY_RETRY_MS, 0);
        return 1;
}

/* Sends req's admin request; the answer comes as an event on q->rkqu. */
static void kquery_admin_send(kq_req_t *req) {
        sl_kquery_t *q = req->q;
        rd_kafka_AdminOptions_t *opts;
        char errstr[256];
        int left =
            SL_MAX(1, SL_MIN(kquery_left_ms(req), SL_KQUERY_ADMIN_TIMEOUT_MAX));

        opts = rd_kafka_AdminOptions_new(
            q->rk, req->kind == KQ_COMMITTED
                       ? RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS
                   : req->kind == KQ_MAX_BYTES
                       ? RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS
                       : RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
        if (rd_kafka_AdminOptions_set_request_timeout(opts, left, errstr,
                                                      sizeof(errstr)))
                sl_assert(!"request timeout out of range");
        rd_kafka_AdminOptions_set_opaque(opts, req);
        req->where = KQ_ADMIN;

        if (req->kind == KQ_COMMITTED) {
                rd_kafka_topic_partition_list_t *l;
                rd_kafka_ListConsumerGroupOffsets_t *lgo;
                rd_kafka_error_t *error =
                    rd_kafka_AdminOptions_set_require_stable_offsets(opts, 1);

                sl_assert(!error); /* fails only for another request type */
                l = rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(l, req->topic,
                                                  req->partition);
                lgo = rd_kafka_ListConsumerGroupOffsets_new(req->group, l);
                rd_kafka_ListConsumerGroupOffsets(q->rk, &lgo, 1, opts,
                                                  q->rkqu);
                rd_kafka_ListConsumerGroupOffsets_destroy(lgo);
                rd_kafka_topic_partition_list_destroy(l);
        } else if (req->kind == KQ_MAX_BYTES) {
                rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(
                    RD_KAFKA_RESOURCE_TOPIC, req->topic);
                rd_kafka_DescribeConfigs(q->rk, &res, 1, opts, q->rkqu);
                rd_kafka_ConfigResource_destroy(res);
        } else {
                const char *groups[1] = {req->group};
                rd_kafka_DescribeConsumerGroups(q->rk, groups, 1, opts,
                                                q->rkqu);
        }
        rd_kafka_AdminOptions_destroy(opts);
}

/* ListConsumerGroupOffsets: errors come at three levels — the request
 * (event), the group, and each partition (UNSTABLE_OFFSET_COMMIT is a
 * partition's).  A partition without a committed offset has offset
 * RD_KAFKA_OFFSET_INVALID and no error. */
static rd_kafka_resp_err_t kquery_committed_parse(const kq_req_t *req,
                                                  rd_kafka_event_t *ev,
                                                  int64_t *offsetp) {
        const rd_kafka_ListConsumerGroupOffsets_result_t *res;
        const rd_kafka_group_result_t **groups;
        const rd_kafka_topic_partition_list_t *parts;
        const rd_kafka_topic_partition_t *p;
        const rd_kafka_error_t *error;
        rd_kafka_resp_err_t err;
        size_t cnt = 0;

        if ((err = rd_kafka_event_error(ev)))
                return err;
        if (!(res = rd_kafka_event_ListConsumerGroupOffsets_result(ev)))
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        groups = rd_kafka_ListConsumerGroupOffsets_result_groups(res, &cnt);
        if (cnt != 1)
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        if ((error = rd_kafka_group_result_error(groups[0])))
                return rd_kafka_error_code(error);
        parts = rd_kafka_group_result_partitions(groups[0]);
        if (!parts || !(p = rd_kafka_topic_partition_list_find(
                            parts, req->topic, req->partition)))
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        if (p->err)
                return p->err;
        *offsetp = p->offset;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void kquery_on_committed(kq_req_t *req, rd_kafka_event_t *ev) {
        kq_out_t out;
        int64_t offset = RD_KAFKA_OFFSET_INVALID;

        kquery_out_init(&out, kquery_committed_parse(req, ev, &offset));
        kquery_coord_moved(req->q, out.err);
        if (kquery_retriable(out.err) && kquery_backoff(req))
                return;
        if (!out.err)
                out.offset = offset;
        kquery_answer(req, &out);
}

/* DescribeConsumerGroups: errors come for the request (event) and for the
 * group.  A group that does not exist comes back "Dead" with no members
 * (newer brokers say GROUP_ID_NOT_FOUND): no members, not an error. */
static rd_kafka_resp_err_t
kquery_group_parse(rd_kafka_event_t *ev,
                   const rd_kafka_ConsumerGroupDescription_t **descp) {
        const rd_kafka_DescribeConsumerGroups_result_t *res;
        const rd_kafka_ConsumerGroupDescription_t **groups;
        const rd_kafka_error_t *error;
        rd_kafka_resp_err_t err;
        size_t cnt = 0;

        if ((err = rd_kafka_event_error(ev)))
                return err;
        if (!(res = rd_kafka_event_DescribeConsumerGroups_result(ev)))
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        groups = rd_kafka_DescribeConsumerGroups_result_groups(res, &cnt);
        if (cnt != 1)
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        if ((error = rd_kafka_ConsumerGroupDescription_error(groups[0]))) {
                err = rd_kafka_error_code(error);
                return err == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND
                           ? RD_KAFKA_RESP_ERR_NO_ERROR
                           : err;
        }
        *descp = groups[0];
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void kquery_on_group(kq_req_t *req, rd_kafka_event_t *ev) {
        const rd_kafka_ConsumerGroupDescription_t *desc = NULL;
        sl_groupcheck_member_t *members = NULL;
        size_t n = 0;
        kq_out_t out;

        kquery_out_init(&out, kquery_group_parse(ev, &desc));
        kquery_coord_moved(req->q, out.err);
        if (kquery_retriable(out.err) && kquery_backoff(req))
                return;
        if (desc) {
                n = rd_kafka_ConsumerGroupDescription_member_count(desc);
                out.group_state = rd_kafka_ConsumerGroupDescription_state(desc);
        }
        members = sl_calloc(n, sizeof(*members));
        for (size_t i = 0; i < n; i++) {
                const rd_kafka_MemberDescription_t *m =
                    rd_kafka_ConsumerGroupDescription_member(desc, i);
                members[i].consumer_id =
                    rd_kafka_MemberDescription_consumer_id(m);
                members[i].group_instance_id =
                    rd_kafka_MemberDescription_group_instance_id(m);
                members[i].client_id = rd_kafka_MemberDescription_client_id(m);
                members[i].host = rd_kafka_MemberDescription_host(m);
                if (rd_kafka_MemberDescription_assignment(m))
                        members[i].assignment =
                            rd_kafka_MemberAssignment_partitions(
                                rd_kafka_MemberDescription_assignment(m));
        }
        out.members = members;
        out.member_cnt = (int)n;
        kquery_answer(req, &out); /* the strings live in ev until it returns */
        free(members);
}

/* DescribeConfigs of one topic: errors come for the request (event) and
 * for the resource (an unknown topic, a missing DescribeConfigs ACL).  The
 * value of max.message.bytes is the topic's own or, unset there, the
 * broker's message.max.bytes (*dflt says which). */
static rd_kafka_resp_err_t kquery_max_bytes_parse(rd_kafka_event_t *ev,
                                                  int64_t *maxp, int *dflt) {
        const rd_kafka_DescribeConfigs_result_t *res;
        const rd_kafka_ConfigResource_t **rres;
        const rd_kafka_ConfigEntry_t **entries;
        rd_kafka_resp_err_t err;
        size_t cnt = 0, ecnt = 0;

        if ((err = rd_kafka_event_error(ev)))
                return err;
        if (!(res = rd_kafka_event_DescribeConfigs_result(ev)))
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        rres = rd_kafka_DescribeConfigs_result_resources(res, &cnt);
        if (cnt != 1)
                return RD_KAFKA_RESP_ERR__BAD_MSG;
        if ((err = rd_kafka_ConfigResource_error(rres[0])))
                return err;
        entries = rd_kafka_ConfigResource_configs(rres[0], &ecnt);
        for (size_t i = 0; i < ecnt; i++) {
                const char *v;
                char *end;
                long long n;
                if (strcmp(rd_kafka_ConfigEntry_name(entries[i]),
                           "max.message.bytes"))
                        continue;
                if (!(v = rd_kafka_ConfigEntry_value(entries[i])))
                        return RD_KAFKA_RESP_ERR__BAD_MSG;
                n = strtoll(v, &end, 10);
                if (*end || n <= 0)
                        return RD_KAFKA_RESP_ERR__BAD_MSG;
                *maxp = n;
                *dflt = rd_kafka_ConfigEntry_source(entries[i]) !=
                        RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
                return RD_KAFKA_RESP_ERR_NO_ERROR;
        }
        return RD_KAFKA_RESP_ERR__BAD_MSG;
}

static void kquery_on_max_bytes(kq_req_t *req, rd_kafka_event_t *ev) {
        kq_out_t out;
        int64_t max = -1;
        int dflt = 0;

        kquery_out_init(&out, kquery_max_bytes_parse(ev, &max, &dflt));
        if (!out.err) {
                out.max_bytes = max;
                out.max_bytes_default = dflt;
        }
        kquery_answer(req, &out);
}

/* Serves admin results (sl_kwatch callback). */
static int kquery_serve(void *opaque, int budget) {
        sl_kquery_t *q = opaque;
        rd_kafka_event_t *ev;
        kq_req_t *req;
        int n = 0;

        while (n < budget && !q->closing &&
               (ev = rd_kafka_queue_poll(q->rkqu, 0))) {
                n++;
                switch (rd_kafka_event_type(ev)) {
                case RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT:
                case RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT:
                case RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT:
                        req = rd_kafka_event_opaque(ev);
                        sl_assert(req && req->where == KQ_ADMIN);
                        req->where = KQ_LOOP;
                        if (req->answered)
                                kquery_req_free(req);
                        else if (req->kind == KQ_COMMITTED)
                                kquery_on_committed(req, ev);
                        else if (req->kind == KQ_MAX_BYTES)
                                kquery_on_max_bytes(req, ev);
                        else
                                kquery_on_group(req, ev);
                        break;
                default:
                        sl_log(LOG_WARNING, "KQUERY", "unexpected event %s",
                               rd_kafka_event_name(ev));
                }
                rd_kafka_event_destroy(ev);
        }
        return q->closing ? 0 : n;
}

/*
 * Starting requests, the deadline guard, cancel (loop thread).
 */

/* Hands req to a worker or to librdkafka and arms the deadline guard. */
/* Whether req is a committed-offsets lookup the offsets client answers. */
static int kquery_on_worker(const kq_req_t *req) {
        const sl_kquery_t *q = req->q;
        return req->kind == KQ_COMMITTED && q->offsets_rk &&
               !strcmp(req->group, q->offsets_group);
}

static void kquery_dispatch(kq_req_t *req) {
        sl_kquery_t *q = req->q;
        int group = (req->kind == KQ_COMMITTED && !kquery_on_worker(req)) ||
                    req->kind == KQ_GROUP;

        if (group && q->coord_hold_until_us > sl_mono_us()) {
                /* kquery_coord_moved: wait, within the deadline. */
                int64_t held = (q->coord_hold_until_us - sl_mono_us()) / 1000;
                int left = kquery_left_ms(req);
                if (!left && req->where == KQ_BACKOFF) {
                        kq_out_t out;
                        kquery_out_init(&out, RD_KAFKA_RESP_ERR__TIMED_OUT);
                        kquery_answer(req, &out);
                        return;
                }
                req->where = KQ_BACKOFF;
                uv_update_time(q->loop);
                uv_timer_start(&req->timer, kquery_on_timer,
                               (uint64_t)SL_MIN(held, left) + 1, 0);
                return;
        }
        if (group)
                q->group_sent_us = sl_mono_us();
        if (group || req->kind == KQ_MAX_BYTES) {
                kquery_admin_send(req);
        } else {
                req->where = KQ_WORKER;
                pthread_mutex_lock(&q->lock);
                req->wstate = KQ_QUEUED;
                if (req->kind == KQ_PROBE)
                        TAILQ_INSERT_HEAD(&q->todo, req, wlink);
                else
                        TAILQ_INSERT_TAIL(&q->todo, req, wlink);
                pthread_cond_signal(&q->cond);
                pthread_mutex_unlock(&q->lock);
        }
        uv_update_time(q->loop);
        uv_timer_start(&req->timer, kquery_on_timer,
                       (uint64_t)kquery_left_ms(req) + 1, 0);
}

/* The deadline, the end of the grace period, or the end of a backoff. */
static void kquery_on_timer(uv_timer_t *timer) {
        kq_req_t *req = timer->data;
        kq_out_t out;

        if (req->answered)
                return;
        if (req->where == KQ_BACKOFF) {
                kquery_dispatch(req);
                return;
        }
        if (req->where == KQ_WORKER)
                kquery_unqueue(req);
        if (req->where != KQ_LOOP && !req->late) {
                req->late = 1;
                uv_timer_start(&req->timer, kquery_on_timer, SL_KQUERY_GRACE_MS,
                               0);
                return;
        }
        kquery_out_init(&out, RD_KAFKA_RESP_ERR__TIMED_OUT);
        kquery_answer(req, &out);
}

static kq_req_t *kquery_req_new(sl_kquery_t *q, kq_kind_t kind, int timeout_ms,
                                void *opaque) {
        kq_req_t *req = sl_calloc(1, sizeof(*req));

        req->q = q;
        req->kind = kind;
        req->where = KQ_LOOP;
        req->opaque = opaque;
        req->partition = -1;
        req->deadline_us = sl_mono_us() + (int64_t)timeout_ms * 1000;
        uv_timer_init(q->loop, &req->timer);
        req->timer.data = req;
        LIST_INSERT_HEAD(&q->reqs, req, link);
        return req;
}

/* The checks every lookup shares. */
static int kquery_usable(const sl_kquery_t *q, int timeout_ms, int has_cb) {
        return q && !q->closing && timeout_ms > 0 && has_cb;
}

int sl_kquery_watermarks(sl_kquery_t *q, const char *topic, int32_t partition,
                         int timeout_ms, sl_kquery_watermarks_cb *cb,
                         void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !topic || !*topic ||
            partition < 0)
                return -1;
        req = kquery_req_new(q, KQ_WATERMARKS, timeout_ms, opaque);
        req->cb.watermarks = cb;
        req->topic = sl_strdup(topic);
        req->partition = partition;
        kquery_dispatch(req);
        return 0;
}

void sl_kquery_set_offsets_client(sl_kquery_t *q, rd_kafka_t *rk,
                                  const char *group) {
        free(q->offsets_group);
        q->offsets_rk = rk;
        q->offsets_group = rk && group ? sl_strdup(group) : NULL;
        if (!q->offsets_group)
                q->offsets_rk = NULL;
}

int sl_kquery_committed(sl_kquery_t *q, const char *group, const char *topic,
                        int32_t partition, int timeout_ms,
                        sl_kquery_committed_cb *cb, void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !group || !*group ||
            !topic || !*topic || partition < 0)
                return -1;
        req = kquery_req_new(q, KQ_COMMITTED, timeout_ms, opaque);
        req->cb.committed = cb;
        req->group = sl_strdup(group);
        req->topic = sl_strdup(topic);
        req->partition = partition;
        kquery_dispatch(req);
        return 0;
}

int sl_kquery_partitions(sl_kquery_t *q, const char *topic, int timeout_ms,
                         sl_kquery_partitions_cb *cb, void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !topic || !*topic)
                return -1;
        req = kquery_req_new(q, KQ_PARTITIONS, timeout_ms, opaque);
        req->cb.partitions = cb;
        req->topic = sl_strdup(topic);
        kquery_dispatch(req);
        return 0;
}

int sl_kquery_describe_group(sl_kquery_t *q, const char *group, int timeout_ms,
                             sl_kquery_group_cb *cb, void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !group || !*group)
                return -1;
        req = kquery_req_new(q, KQ_GROUP, timeout_ms, opaque);
        req->cb.group = cb;
        req->group = sl_strdup(group);
        kquery_dispatch(req);
        return 0;
}

int sl_kquery_group_owners(sl_kquery_t *q, const char *group, int timeout_ms,
                           sl_kquery_group_cb *cb, void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !group || !*group)
                return -1;
        req = kquery_req_new(q, KQ_OWNERS, timeout_ms, opaque);
        req->cb.group = cb;
        req->group = sl_strdup(group);
        kquery_dispatch(req);
        return 0;
}

int sl_kquery_max_bytes(sl_kquery_t *q, const char *topic, int timeout_ms,
                        sl_kquery_max_bytes_cb *cb, void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL) || !topic || !*topic)
                return -1;
        req = kquery_req_new(q, KQ_MAX_BYTES, timeout_ms, opaque);
        req->cb.max_bytes = cb;
        req->topic = sl_strdup(topic);
        kquery_dispatch(req);
        return 0;
}

int sl_kquery_probe(sl_kquery_t *q, int timeout_ms, sl_kquery_probe_cb *cb,
                    void *opaque) {
        kq_req_t *req;

        if (!kquery_usable(q, timeout_ms, cb != NULL))
                return -1;
        req = kquery_req_new(q, KQ_PROBE, timeout_ms, opaque);
        req->cb.probe = cb;
        kquery_dispatch(req);
        return 0;
}

void sl_kquery_cancel(sl_kquery_t *q, void *opaque) {
        kq_req_t *req, *next;

        if (!q)
                return;
        for (req = LIST_FIRST(&q->reqs); req; req = next) {
                next = LIST_NEXT(req, link);
                if (req->answered || req->opaque != opaque)
                        continue;
                req->answered = 1;
                uv_timer_stop(&req->timer);
                if (req->where == KQ_WORKER)
                        kquery_unqueue(req);
                if (req->where == KQ_LOOP || req->where == KQ_BACKOFF)
                        kquery_req_free(req);
                /* else freed when the worker or librdkafka hands it back */
        }
}

/*
 * Lifecycle.
 */

static void kquery_on_close(uv_handle_t *h) {
        sl_kquery_t *q = h->data;
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->cond);
        free(q->offsets_group);
        free(q);
}

sl_kquery_t *sl_kquery_new(uv_loop_t *loop, rd_kafka_t *rk, char *errstr,
                           size_t errstr_size) {
        sl_kquery_t *q;
        sigset_t all, old;
        int r;

        if (!loop || !rk) {
                snprintf(errstr, errstr_size, "kquery: no loop or client");
                return NULL;
        }
        q = sl_calloc(1, sizeof(*q));
        q->loop = loop;
        q->rk = rk;
        LIST_INIT(&q->reqs);
        TAILQ_INIT(&q->todo);
        TAILQ_INIT(&q->done);
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        if ((r = uv_async_init(loop, &q->async, kquery_on_async))) {
                snprintf(errstr, errstr_size, "kquery: %s", uv_strerror(r));
                pthread_mutex_destroy(&q->lock);
                pthread_cond_destroy(&q->cond);
                free(q);
                return NULL;
        }
        q->async.data = q;
        q->rkqu = rd_kafka_queue_new(rk);
        if (!(q->watch = sl_kwatch_new(loop, q->rkqu, kquery_serve, q, errstr,
                                       errstr_size)))
                goto fail;

        /* Signals are the loop thread's business (uv_signal_t). */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (int i = 0; i < SL_KQUERY_WORKERS; i++) {
                if ((r = pthread_create(&q->workers[i], NULL, kquery_worker,
                                        q))) {
                        snprintf(errstr, errstr_size,
                                 "kquery: pthread_create: %s", strerror(r));
                        break;
                }
                pthread_setname_np(q->workers[i], "sl-kquery");
                q->worker_cnt++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (q->worker_cnt < SL_KQUERY_WORKERS)
                goto fail;
        return q;

fail:
        sl_kquery_destroy(q);
        return NULL;
}

void sl_kquery_destroy(sl_kquery_t *q) {
        if (!q || q->closing)
                return;
        q->closing = 1;

        pthread_mutex_lock(&q->lock);
        q->stopping = 1;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        /* Blocks while calls are in flight: each ends by its deadline. */
        for (int i = 0; i < q->worker_cnt; i++)
                pthread_join(q->workers[i], NULL);

        sl_kwatch_close(q->watch);
        rd_kafka_queue_destroy(q->rkqu); /* later results are dropped */
        while (!LIST_EMPTY(&q->reqs))
                kquery_req_free(LIST_FIRST(&q->reqs));
        uv_close((uv_handle_t *)&q->async, kquery_on_close);
}
