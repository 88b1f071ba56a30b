/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.c — readiness, the Kafka probe, lag (see health.h).
 */
#include "health.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "parts.h"
#include "pipeline.h"
#include "task.h"
#include "util.h"

/* Kafka probe: how often, and how long it may take.  One probe asks one
 * broker: librdkafka 2.0.2 picks the connection it used last, so a node
 * cut off without a reset is asked again and again while its connection
 * looks up, until a request on it times out (the lookup client's
 * socket.timeout.ms, 5 s at most: clients.c) and the connection is torn
 * down.  So a failed probe is asked again at the next tick, and Kafka is
 * called unreachable only once probes have failed for SL_HEALTH_DOWN_MS,
 * longer than that timeout and a probe's: one node of three cut off is
 * not "Kafka unreachable" (0704; with 8 s and 10 s it was). */
#define SL_HEALTH_PROBE_EVERY_MS 2000
#define SL_HEALTH_PROBE_TMO_MS   3000
#define SL_HEALTH_DOWN_MS        10000

/* The input's end of a partition that is not fetched, for the lag.  A
 * partition rebuilding, or paused for a cap or a lookup, is not fetched,
 * so librdkafka's cached watermark stands still (or is missing, when it
 * paused before its first fetch): while so, its end is looked up every
 * SL_HEALTH_END_EVERY_MS, with at most SL_HEALTH_END_ASKS lookups in
 * flight for the whole process (they share kquery's workers with the
 * rebuilds' lookups), each answer starting the next. */
#define SL_HEALTH_END_EVERY_MS 1000
#define SL_HEALTH_END_ASKS     2
#define SL_HEALTH_END_TMO_MS   2000

struct sl_health_s {
        sl_runtime_t *rt;
        sl_http_t *http;

        /* Is Kafka answering (a probe every two seconds)? */
        int kafka_up;
        int probe_inflight;
        int64_t probe_next_ms;
        int64_t probe_sent_ms;
        int64_t probe_failing_since_ms; /* 0: the last probe answered */
        int64_t kafka_down_since_ms;
        char kafka_why[200];

        sl_gauge_t *m_kafka_up;
        sl_gauge_t *m_ready;
        sl_gauge_t *m_malloc_allocated, *m_malloc_resident;
};

static const sl_metric_def_t health_metrics[] = {
    SL_METRICS_GAUGE(sl_health_t, m_kafka_up, "sluice_kafka_up",
                     "1 while Kafka answers (a metadata probe every 2 s), "
                     "else 0."),
    SL_METRICS_GAUGE(sl_health_t, m_ready, "sluice_ready",
                     "1 while /readyz answers 200 (every assigned partition "
                     "rebuilt, Kafka answering, no transaction trouble), "
                     "else 0."),
};

/* The allocator's figures, beside the state's own (sluice_*_memory_bytes):
 * what RSS holds that no pending state explains.  Only the figures this
 * allocator gives. */
static void health_malloc_gauges(sl_health_t *h) {
        int64_t allocated, resident;
        sl_mem_stats(&allocated, &resident);
        if (h->m_malloc_allocated && allocated >= 0)
                sl_gauge_set(h->m_malloc_allocated, (double)allocated);
        if (h->m_malloc_resident && resident >= 0)
                sl_gauge_set(h->m_malloc_resident, (double)resident);
}

sl_health_t *sl_health_new(sl_runtime_t *rt, sl_http_t *http) {
        static const char help[] =
            "What malloc holds (every thread's, librdkafka's too): "
            "allocated = handed out and not freed; resident = its "
            "pages in RAM, freed ones not yet given back and its "
            "metadata included (jemalloc only). Every second.";
        sl_health_t *h = sl_calloc(1, sizeof(*h));
        int64_t allocated, resident;

        h->rt = rt;
        h->http = http;
        h->kafka_up = 1;
        sl_metrics_register(rt->metrics, health_metrics,
                            SL_ARRAY_SIZE(health_metrics), h, NULL);
        sl_gauge_set(h->m_kafka_up, 1);
        sl_mem_stats(&allocated, &resident);
        if (allocated >= 0)
                h->m_malloc_allocated =
                    sl_metrics_gauge(rt->metrics, "sluice_malloc_bytes", help,
                                     "kind", "allocated", NULL);
        if (resident >= 0)
                h->m_malloc_resident =
                    sl_metrics_gauge(rt->metrics, "sluice_malloc_bytes", help,
                                     "kind", "resident", NULL);
        health_malloc_gauges(h);
        return h;
}

void sl_health_destroy(sl_health_t *h) {
        free(h);
}

/* ------------------------------------------------------------------ */
/* Readiness.                                                           */

/* Publishes the caps' usage gauges and writes the caps that are full into
 * buf as one reason ("" when none); returns how many. */
static int health_caps(sl_runtime_t *rt, char *buf, size_t size) {
        size_t len = 0;
        int n = 0;
        if (size)
                buf[0] = '\0';
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                for (int j = 0; j < pl->cap_cnt; j++) {
                        const sl_pcap_t *c = pl->caps[j];
                        sl_gauge_set(c->m_used, (double)c->cap.used);
                        if (!c->cap.full)
                                continue;
                        if (len < size)
                                len += (size_t)snprintf(
                                    buf + len, size - len,
                                    "%spipeline %s: input paused, %" PRId64
                                    " %s at cap %s = %" PRId64,
                                    n ? "; " : "", pl->conf->name, c->cap.used,
                                    c->what, c->key, c->cap.limit);
                        n++;
                }
        }
        return n;
}

/* /readyz and the sluice_ready gauge say the same. */
static void health_set_ready(sl_health_t *h, int ready, const char *why) {
        sl_gauge_set(h->m_ready, ready);
        if (h->http)
                sl_http_set_ready(h->http, ready, why);
}

void sl_health_update_ready(sl_runtime_t *rt) {
        sl_health_t *h = rt->health;
        char why[320], trouble[256], caps[256];
        int rebuilding = 0, capped;
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                int run = 0, reb = 0;
                for (int p = 0; p < pl->partition_cnt; p++) {
                        if (!pl->tasks[p])
                                continue;
                        if (pl->tasks[p]->state == SL_TASK_RUNNING)
                                run++;
                        else
                                reb++;
                }
                sl_gauge_set(pl->metrics->partitions_running, run);
                sl_gauge_set(pl->metrics->partitions_rebuilding, reb);
                rebuilding += reb;
        }
        rt->rebuilding_cnt = rebuilding;
        capped = health_caps(rt, caps, sizeof(caps));
        if (rt->phase != SL_RUN_RUNNING)
                health_set_ready(h, 0, "shutting down");
        else if (!rt->txn ||
                 sl_txn_trouble(rt->txn, trouble, sizeof(trouble))) {
                health_set_ready(h, 0, rt->txn ? trouble : "starting");
        } else if (!h->kafka_up) {
                snprintf(why, sizeof(why), "Kafka unreachable for %.0f s: %s",
                         (double)(sl_now_ms() - h->kafka_down_since_ms) /
                             1000.0,
                         h->kafka_why);
                health_set_ready(h, 0, why);
        } else if (!rt->assigned)
                health_set_ready(h, 0, "waiting for a partition assignment");
        else if (sl_parts_trouble(rt, why, sizeof(why)))
                health_set_ready(h, 0, why);
        else if (rebuilding) {
                snprintf(why, sizeof(why), "%d partitions rebuilding",
                         rebuilding);
                health_set_ready(h, 0, why);
        } else if (capped) {
                /* Ready all the same: the instance works (its due work is
                 * what makes room) and a not-ready pod would hold up
                 * rollouts and, under the PodDisruptionBudget, node drains
                 * for as long as the cap lasts (docs/operations.md,
                 * "Memory caps"). */
                snprintf(why, sizeof(why), "ready; %s", caps);
                health_set_ready(h, 1, why);
        } else
                health_set_ready(h, 1, "ready");
}

/* ------------------------------------------------------------------ */
/* The Kafka probe.                                                     */

void sl_health_kafka_up(sl_runtime_t *rt, int up, const char *why,
                        int64_t since_ms) {
        sl_health_t *h = rt->health;
        if (up && !h->kafka_up)
                sl_log(LOG_NOTICE, "KAFKA",
                       "Kafka answers again (after %.1f s)",
                       (double)(sl_now_ms() - h->kafka_down_since_ms) / 1000.0);
        else if (!up && h->kafka_up) {
                sl_log(LOG_WARNING, "KAFKA", "Kafka unreachable: %s", why);
                h->kafka_down_since_ms = since_ms;
        }
        if (!up)
                snprintf(h->kafka_why, sizeof(h->kafka_why), "%s", why);
        h->kafka_up = up;
        sl_gauge_set(h->m_kafka_up, up);
        sl_health_update_ready(rt);
}

static void health_on_probe(void *opaque, rd_kafka_resp_err_t err,
                            int64_t rtt_ms) {
        sl_runtime_t *rt = opaque;
        sl_health_t *h = rt->health;
        int64_t now = sl_now_ms();
        (void)rtt_ms;
        h->probe_inflight = 0;
        if (!err) {
                h->probe_failing_since_ms = 0;
                sl_health_kafka_up(rt, 1, NULL, 0);
                return;
        }
        if (!h->probe_failing_since_ms)
                h->probe_failing_since_ms = h->probe_sent_ms;
        h->probe_next_ms = 0; /* ask again at the next tick */
        if (now - h->probe_failing_since_ms >= SL_HEALTH_DOWN_MS)
                sl_health_kafka_up(rt, 0, rd_kafka_err2str(err),
                                   h->probe_failing_since_ms);
}

void sl_health_tick(sl_runtime_t *rt, int64_t now) {
        sl_health_t *h = rt->health;
        health_malloc_gauges(h);
        if (!h->probe_inflight && now >= h->probe_next_ms &&
            sl_kquery_probe(rt->kq, SL_HEALTH_PROBE_TMO_MS, health_on_probe,
                            rt) == 0) {
                h->probe_inflight = 1;
                h->probe_sent_ms = now;
                h->probe_next_ms = now + SL_HEALTH_PROBE_EVERY_MS;
        }
}

/* ------------------------------------------------------------------ */
/* Lag.                                                                 */

static int task_unfetched(const sl_task_t *t) {
        return t->state == SL_TASK_REBUILDING || t->cap_wait || t->lookup_wait;
}

/* Which unfetched partitions look up their end: a rebuild once it has
 * lasted SL_HEALTH_END_EVERY_MS (most end sooner, and when many partitions
 * are assigned at once their rebuilds' own lookups, which share kquery's
 * workers, come first). */
static int task_asks_input_end(const sl_task_t *t) {
        if (t->state == SL_TASK_REBUILDING)
                return sl_mono_us() - t->rebuild_start_us >=
                       SL_HEALTH_END_EVERY_MS * 1000;
        return t->cap_wait || t->lookup_wait;
}

static void health_ask_input_ends(sl_runtime_t *rt, int64_t now);

static void health_on_input_end(void *opaque, rd_kafka_resp_err_t err,
                                int64_t lo, int64_t hi) {
        struct sl_task_end_s *e = opaque;
        sl_task_t *t =
            (sl_task_t *)((char *)e - offsetof(sl_task_t, input_end));
        e->asking = 0;
        t->rt->input_end_asks--;
        /* Ends only grow: a lower answer is an older view. */
        if (!err && hi > e->offset) {
                e->offset = hi;
                e->start = lo;
        }
        health_ask_input_ends(t->rt, sl_now_ms());
}

static void task_ask_input_end(sl_task_t *t, void *opaque) {
        sl_runtime_t *rt = t->rt;
        int64_t now = *(const int64_t *)opaque;
        if (rt->input_end_asks >= SL_HEALTH_END_ASKS ||
            !task_asks_input_end(t) || t->input_end.asking ||
            now - t->input_end.asked_ms < SL_HEALTH_END_EVERY_MS)
                return;
        t->input_end.asked_ms = now;
        if (sl_kquery_watermarks(rt->kq, t->pl->conf->input, t->partition,
                                 SL_HEALTH_END_TMO_MS, health_on_input_end,
                                 &t->input_end) == 0) {
                t->input_end.asking = 1;
                rt->input_end_asks++;
        }
}

static void health_ask_input_ends(sl_runtime_t *rt, int64_t now) {
        sl_pipeline_foreach_task(rt, task_ask_input_end, &now);
}

/* Where a partition's lag counts from: the next offset it reads; for a
 * partition rebuilding, the committed offset its input resumes at (the
 * one this instance last committed while that is still being read
 * again).  -1: from the log's first offset (nothing read, nothing
 * committed); -2: not known yet (a first rebuild still reading its
 * committed offset). */
static int64_t task_lag_from(const sl_task_t *t) {
        if (t->state == SL_TASK_RUNNING)
                return t->next_offset;
        if (t->rebuild_phase != SL_REBUILD_COMMITTED)
                return t->rebuild_committed;
        return t->committed_offset >= 0 ? t->committed_offset : -2;
}

/* A partition with no offset to start from reads from the log's first
 * one; one whose committed offset is still being read is left out until
 * it is known. */
int64_t sl_health_pipeline_lag(sl_runtime_t *rt, sl_pipeline_t *pl,
                               int running_only, int64_t *read) {
        int64_t lag = 0;
        for (int p = 0; p < pl->partition_cnt; p++) {
                sl_task_t *t = pl->tasks[p];
                int64_t lo, hi, from;
                if (!t || (from = task_lag_from(t)) == -2)
                        continue;
                if (running_only &&
                    (t->state != SL_TASK_RUNNING || t->revoking ||
                     t->cap_wait || t->lookup_wait))
                        continue;
                if (read && t->next_offset >= 0)
                        *read += t->next_offset;
                if (rd_kafka_get_watermark_offsets(
                        rt->consumer, pl->conf->input, p, &lo, &hi))
                        lo = hi = -1;
                if (task_unfetched(t) && t->input_end.offset > hi) {
                        hi = t->input_end.offset;
                        lo = t->input_end.start;
                }
                if (from < 0)
                        from = lo;
                if (from >= 0 && hi > from)
                        lag += hi - from;
        }
        return lag;
}

void sl_health_lag_tick(sl_runtime_t *rt, int64_t now, int64_t *lag,
                        int64_t *read) {
        *lag = *read = 0;
        if (!rt->consumer)
                return;
        health_ask_input_ends(rt, now);
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_pipeline_t *pl = &rt->pipelines[i];
                int64_t l = sl_health_pipeline_lag(rt, pl, 0, read);
                sl_gauge_set(pl->metrics->consumer_lag, (double)l);
                *lag += l;
        }
}
