/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commit.c — the commit schedule and the transaction's hooks (see
 * commit.h).
 */
#include "commit.h"

#include <inttypes.h>
#include <stdlib.h>

#include "health.h"
#include "input.h"
#include "log.h"
#include "member.h"
#include "pipeline.h"
#include "task.h"
#include "util.h"

/* Commit linger.  Deadlines come in clusters: the groups of one burst of
 * input fall due within a few ms of each other, on every partition.  A
 * commit started at the first of them takes that one alone, and the rest
 * wait for it to end before their own begins: two commits, and the
 * coordinator's markers twice.  So a linger waits, from the first batch
 * flushed while no commit is in flight, for the tasks' next deadlines
 * (their wake-ups) that fall within SL_COMMIT_LINGER_MS of it (and those
 * already passed whose flush has not run yet, one window more); then one
 * commit takes them all.  A deadline further away, or none, commits at
 * once.  During a commit what is flushed is deferred to the next
 * transaction anyway, which opens as the commit returns. */
#define SL_COMMIT_LINGER_MS 10

/* Ticks of the commit timer over which commit_catching_up() measures the
 * pace of reading. */
#define SL_CATCHUP_TICKS 10

/* Catching up.  A transaction costs the same few round trips however much
 * it holds, and debounce writes one chunk record per group a transaction
 * touched (then one tombstone per chunk when the group flushes): at 100
 * ms, a backlog spread over many groups is written ten times over in small
 * pieces.  So while the input is behind, the regular commit waits up to
 * backlog_commit_interval (never below commit_interval, at most half the
 * transaction timeout).
 *
 * Behind: at every tick of the commit timer for SL_CATCHUP_PERSIST_MS, the
 * lag of the partitions being read would have taken SL_CATCHUP_BEHIND_MS
 * (or commit_interval) or more to read at the pace of the last
 * SL_CATCHUP_TICKS ticks (about a second).  A burst that sluice reads in
 * a few ms meets that at one tick at most, and steady traffic, read as it
 * comes, never.  Caught up again once the lag would take less than one
 * commit_interval to read, or nothing was read.  A record read meanwhile
 * waits longer for its commit, but less than the backlog already made it
 * wait.  Commits asked for by operators (due timers, debounce deadlines),
 * by a transaction grown large, a rebalance or a shutdown do not wait. */
#define SL_CATCHUP_BEHIND_MS  250
#define SL_CATCHUP_PERSIST_MS 100
#define SL_CATCHUP_QUIET_MS   10000

/* A burst of input leaves pages malloc has freed but keeps (the consumer's
 * prefetched batches, freed as the records were handled, between long-lived
 * state), and the outbox's chunks kept for the next burst of commits (up to
 * 4 MiB, which 500k pending timers would otherwise share): once the input
 * is caught up, give them back — at most every SL_TRIM_EVERY_MS and only
 * after SL_TRIM_AFTER_RECORDS were read, as after a rebuild (task.c).  With
 * lag 0 there is no burst left to serve. */
#define SL_TRIM_EVERY_MS      10000
#define SL_TRIM_AFTER_RECORDS 100000

struct sl_commit_s {
        sl_runtime_t *rt;
        uv_timer_t commit_timer; /* every commit_interval */
        uv_timer_t soon_timer;   /* "commit promptly" */
        int soon_armed;
        uv_timer_t linger_timer; /* sl_commit_linger */
        int64_t linger_since;    /* ms, 0: not lingering */
        int linger_ms;           /* SL_COMMIT_LINGER_MS (tests: env) */
        int commit_wanted;       /* asked while a commit was in flight */
        int closing;             /* timers being closed by destroy */
        int64_t last_commit_us;

        /* commit_catching_up(): the input read and the time at each of
         * the last SL_CATCHUP_TICKS ticks of the commit timer (a ring). */
        int64_t catch_read[SL_CATCHUP_TICKS], catch_us[SL_CATCHUP_TICKS];
        uint64_t catch_tick;
        int64_t behind_since_us; /* first of the ticks that found it behind */
        int64_t catch_end_us;    /* when the last backlog was caught up */
        int catching_up;         /* commit_catching_up() said so last time */
        int catch_quiet;         /* this backlog logs at debug level */

        int64_t trim_read;    /* input offsets summed at the last trim */
        int64_t trim_last_ms; /* when */

        sl_gauge_t *m_catching_up;
        sl_counter_t *m_deferred; /* records sent from the outbox */
};

static const sl_metric_def_t commit_metrics[] = {
    SL_METRICS_GAUGE(sl_commit_t, m_catching_up, "sluice_catching_up",
                     "1 while the input is behind and the regular commit waits "
                     "backlog_commit_interval instead of commit_interval."),
    SL_METRICS_COUNTER(sl_commit_t, m_deferred,
                       "sluice_txn_deferred_records_total",
                       "Records decided while a commit was in flight, sent "
                       "into the next transaction when it returned."),
};

static void commit_on_timer(uv_timer_t *timer);

sl_commit_t *sl_commit_new(sl_runtime_t *rt) {
        sl_commit_t *c = sl_calloc(1, sizeof(*c));
        const char *linger = getenv("SLUICE_TEST_COMMIT_LINGER_MS");
        c->rt = rt;
        uv_timer_init(rt->loop, &c->commit_timer);
        uv_timer_init(rt->loop, &c->soon_timer);
        uv_timer_init(rt->loop, &c->linger_timer);
        c->commit_timer.data = c->soon_timer.data = c->linger_timer.data = c;
        /* Tests only: a window wide enough to judge on a busy machine. */
        c->linger_ms = linger ? atoi(linger) : SL_COMMIT_LINGER_MS;
        sl_metrics_register(rt->metrics, commit_metrics,
                            SL_ARRAY_SIZE(commit_metrics), c, NULL);
        return c;
}

void sl_commit_start(sl_runtime_t *rt) {
        uv_timer_start(&rt->commit->commit_timer, commit_on_timer,
                       rt->conf->commit_interval_ms,
                       rt->conf->commit_interval_ms);
}

static void commit_on_close(uv_handle_t *h) {
        sl_commit_t *c = h->data;
        if (--c->closing == 0)
                free(c);
}

void sl_commit_destroy(sl_commit_t *c) {
        if (!c)
                return;
        c->closing = 3;
        uv_close((uv_handle_t *)&c->commit_timer, commit_on_close);
        uv_close((uv_handle_t *)&c->soon_timer, commit_on_close);
        uv_close((uv_handle_t *)&c->linger_timer, commit_on_close);
}

void sl_commit_lost(sl_runtime_t *rt) {
        rt->commit->commit_wanted = 0;
}

/* ------------------------------------------------------------------ */
/* The schedule.                                                        */

static int commit_catching_up(sl_commit_t *c);

void sl_commit_soon(sl_runtime_t *rt) {
        sl_commit_t *c = rt->commit;
        if (c->soon_armed || rt->phase != SL_RUN_RUNNING)
                return;
        c->soon_armed = 1;
        uv_timer_start(&c->soon_timer, commit_on_timer, 0, 0);
}

static void commit_on_timer(uv_timer_t *timer) {
        sl_commit_t *c = timer->data;
        sl_runtime_t *rt = c->rt;
        if (timer == &c->soon_timer)
                c->soon_armed = 0;
        else if (commit_catching_up(c))
                return; /* the regular commit waits */
        if (rt->phase == SL_RUN_RUNNING && rt->txn &&
            sl_txn_commit(rt->txn) == -1)
                c->commit_wanted = 1; /* right after the one in flight */
}

static void task_next_due(sl_task_t *t, void *opaque) {
        int64_t *next = opaque;
        if (t->pl->op->wake_is_deadline && t->state == SL_TASK_RUNNING &&
            t->wake_at > 0 && (!*next || t->wake_at < *next))
                *next = t->wake_at;
}

/* The earliest wake-up armed by a task whose wake-ups are deadlines
 * (sl_op_t wake_is_deadline), 0: none. */
static int64_t commit_next_due(sl_runtime_t *rt) {
        int64_t next = 0;
        sl_pipeline_foreach_task(rt, task_next_due, &next);
        return next;
}

static void commit_on_linger(uv_timer_t *timer) {
        sl_commit_t *c = timer->data;
        sl_runtime_t *rt = c->rt;
        int64_t now = sl_now_ms(), next, end = c->linger_since + c->linger_ms;
        if (!c->linger_since)
                return;
        next = commit_next_due(rt);
        /* A deadline inside the window; or one already passed whose flush
         * has not run yet, behind the other tasks' flushes in this turn of
         * the loop (at most one window more). */
        if (next && rt->txn && !sl_txn_deferring(rt->txn) &&
            ((next <= end && now < end) ||
             (next <= now && now < end + c->linger_ms))) {
                /* Timers of the same due time run in the order they were
                 * started: the task's wake-up first. */
                uv_timer_start(&c->linger_timer, commit_on_linger,
                               next > now ? (uint64_t)(next - now) : 1, 0);
                return;
        }
        c->linger_since = 0;
        sl_commit_soon(rt);
}

void sl_commit_linger(sl_runtime_t *rt) {
        sl_commit_t *c = rt->commit;
        if (c->linger_since)
                return; /* its timer is armed */
        c->linger_since = sl_now_ms();
        /* After the task has armed its next deadline. */
        uv_timer_start(&c->linger_timer, commit_on_linger, 0, 0);
}

/* Called at every tick of the commit timer; returns 1 when this one
 * should not commit. */
static int commit_catching_up(sl_commit_t *c) {
        sl_runtime_t *rt = c->rt;
        const sl_conf_t *cf = rt->conf;
        int64_t now = sl_mono_us(),
                hold_ms = SL_MIN(SL_MAX(cf->backlog_commit_interval_ms,
                                        cf->commit_interval_ms),
                                 cf->transaction_timeout_ms / 2),
                need_ms = c->catching_up ? cf->commit_interval_ms
                                         : SL_MAX(SL_CATCHUP_BEHIND_MS,
                                                  cf->commit_interval_ms),
                span_us, read, lag = 0, read_cnt = sl_input_read_cnt(rt);
        int i = (int)(c->catch_tick % SL_CATCHUP_TICKS), o, behind = 0;

        /* The pace's window: from the oldest tick kept (the first ever,
         * until the ring is full) to this one. */
        o = c->catch_us[i] ? i : 0;
        c->catch_tick++;
        span_us = c->catch_us[o] ? now - c->catch_us[o] : 0;
        read = read_cnt - c->catch_read[o];
        c->catch_us[i] = now;
        c->catch_read[i] = read_cnt;

        if (hold_ms > cf->commit_interval_ms && read > 0 && span_us > 0 &&
            rt->consumer && rt->phase == SL_RUN_RUNNING) {
                for (int k = 0; k < rt->pipeline_cnt; k++)
                        lag += sl_health_pipeline_lag(rt, &rt->pipelines[k], 1,
                                                      NULL);
                /* lag / (read / span) >= need */
                behind = (double)lag * (double)span_us >=
                         (double)read * (double)need_ms * 1000.0;
        }
        if (!behind)
                c->behind_since_us = 0;
        else if (!c->behind_since_us)
                c->behind_since_us = now;
        if (!c->catching_up)
                behind = behind && now - c->behind_since_us >=
                                       SL_CATCHUP_PERSIST_MS * 1000;
        if (behind != c->catching_up) {
                /* A backlog that comes back within SL_CATCHUP_QUIET_MS of
                 * the last one's end (a saturated input) logs its start
                 * and end at debug level. */
                if (behind)
                        c->catch_quiet =
                            c->catch_end_us &&
                            now - c->catch_end_us < SL_CATCHUP_QUIET_MS * 1000;
                else
                        c->catch_end_us = now;
                c->catching_up = behind;
                sl_gauge_set(c->m_catching_up, behind);
                sl_log(c->catch_quiet ? LOG_DEBUG : LOG_INFO, "COMMIT",
                       "input %s (lag %" PRId64 " records, %" PRId64
                       " read in the last %" PRId64
                       " ms): committing every %" PRId64 " ms",
                       behind ? "behind" : "caught up", lag, read,
                       span_us / 1000,
                       behind ? hold_ms : cf->commit_interval_ms);
        }
        return behind && now - c->last_commit_us < hold_ms * 1000;
}

void sl_commit_trim(sl_runtime_t *rt, int64_t now, int64_t lag, int64_t read) {
        sl_commit_t *c = rt->commit;
        int64_t t0;
        size_t spare;
        if (!rt->consumer)
                return;
        if (read < c->trim_read) /* partitions left: count afresh */
                c->trim_read = read;
        if (lag > 0 || read - c->trim_read < SL_TRIM_AFTER_RECORDS ||
            now - c->trim_last_ms < SL_TRIM_EVERY_MS)
                return;
        t0 = sl_mono_us();
        spare = sl_outbox_trim(rt->outbox);
        sl_mem_trim();
        c->trim_read = read;
        c->trim_last_ms = now;
        sl_log(LOG_DEBUG, "MEMORY",
               "input caught up: freed pages (%zu B of outbox chunks among "
               "them) given back in %.1f ms",
               spare, (double)(sl_mono_us() - t0) / 1000.0);
}

/* ------------------------------------------------------------------ */
/* The transaction's hooks (txn.h).                                     */

/* Offsets of running tasks: those that moved since the last commit, or,
 * with all set, every task's.  A transaction always sends offsets when it
 * can: send_offsets_to_transaction carries the consumer-group generation,
 * which is what fences a zombie member whose partitions moved on. */
typedef struct commit_offsets_s {
        rd_kafka_topic_partition_list_t *offs;
        int all;
} commit_offsets_t;

static void task_offset(sl_task_t *t, void *opaque) {
        commit_offsets_t *co = opaque;
        if (t->state != SL_TASK_RUNNING || t->next_offset < 0 ||
            (!co->all && t->next_offset == t->committed_offset))
                return;
        if (!co->offs)
                co->offs = rd_kafka_topic_partition_list_new(8);
        rd_kafka_topic_partition_list_add(co->offs, t->pl->conf->input,
                                          t->partition)
            ->offset = t->next_offset;
}

rd_kafka_topic_partition_list_t *sl_commit_offsets(void *opaque, int all) {
        commit_offsets_t co = {NULL, all};
        sl_pipeline_foreach_task(opaque, task_offset, &co);
        return co.offs;
}

/* A precommit needs the reports of the tracked records alone. */
int sl_commit_reports_pending(void *opaque) {
        const sl_runtime_t *rt = opaque;
        return rt->tracked_inflight > 0;
}

static void task_precommit(sl_task_t *t, void *opaque) {
        (void)opaque;
        if (t->pl->op->precommit && t->state == SL_TASK_RUNNING)
                t->pl->op->precommit(t);
}

static void task_seal(sl_task_t *t, void *opaque) {
        (void)opaque;
        if (t->pl->op->seal && t->state == SL_TASK_RUNNING)
                t->pl->op->seal(t);
}

/* Operators with a precommit hook write their checkpoints, once every
 * tracked record of the transaction was delivered. */
void sl_commit_precommit(void *opaque) {
        sl_pipeline_foreach_task(opaque, task_precommit, NULL);
}

/* Operators with a seal hook write what they gathered for the
 * transaction, just before its offsets are taken. */
void sl_commit_seal(void *opaque) {
        sl_pipeline_foreach_task(opaque, task_seal, NULL);
}

/* What was decided during a commit opens the next transaction, in order;
 * records of tasks dropped or rebuilt since are left out: the work is
 * redone by whoever owns the partition now. */
static void commit_replay(sl_runtime_t *rt) {
        sl_outbox_rec_t r;
        if (rt->replaying)
                return;
        rt->replaying = 1;
        while (sl_outbox_pop(rt->outbox, &r)) {
                sl_task_t *t =
                    sl_pipeline_task_at(rt, r.pl_index, r.task_partition);
                if (!t || t->epoch != r.epoch) {
                        if (r.hdrs)
                                rd_kafka_headers_destroy(r.hdrs);
                        continue;
                }
                sl_runtime_replay(rt, &r);
        }
        rt->replaying = 0;
}

void sl_commit_committed(void *opaque,
                         const rd_kafka_topic_partition_list_t *offs) {
        sl_runtime_t *rt = opaque;
        sl_commit_t *c = rt->commit;
        for (int i = 0; offs && i < offs->cnt; i++) {
                sl_task_t *t = sl_pipeline_task(rt, offs->elems[i].topic,
                                                offs->elems[i].partition);
                if (t)
                        t->committed_offset = offs->elems[i].offset;
        }
        c->last_commit_us = sl_mono_us();
        sl_input_txn_ended(rt);
        /* Revoked partitions whose work this commit carried go first, so
         * nothing they decided since is sent: their next owner does it. */
        if (rt->revoking && rt->revoke_commit_started)
                sl_member_revoke_finish(rt);
        /* What was decided during the commit opens the next transaction,
         * before any other commit can start. */
        sl_counter_add(c->m_deferred, (uint64_t)sl_outbox_count(rt->outbox));
        commit_replay(rt);
        if (c->commit_wanted) {
                c->commit_wanted = 0;
                sl_commit_soon(rt);
        }
        sl_member_revoke_try(rt);
        if (rt->phase != SL_RUN_RUNNING)
                rt->hooks->stop_step(rt);
}

static void task_restart(sl_task_t *t, void *opaque) {
        (void)opaque;
        sl_task_restart(t);
}

void sl_commit_aborted(void *opaque) {
        sl_runtime_t *rt = opaque;
        /* Revoked partitions go as they are: the next owner rebuilds them
         * from what was committed. */
        sl_member_revoke_finish(rt);
        sl_input_clear(rt);
        sl_outbox_clear(rt->outbox);
        rt->commit->commit_wanted = 0;
        sl_input_txn_ended(rt); /* the input is read again from the commit */
        sl_pipeline_foreach_task(rt, task_restart, NULL);
        sl_health_update_ready(rt);
        if (rt->phase != SL_RUN_RUNNING)
                rt->hooks->stop_step(rt);
}

static void task_resume_wake(sl_task_t *t, void *opaque) {
        (void)opaque;
        if (t->wake_deferred) {
                t->wake_deferred = 0;
                sl_task_wake_at(t, sl_now_ms());
        }
}

void sl_commit_resumed(void *opaque) {
        sl_runtime_t *rt = opaque;
        sl_member_revoke_try(rt);
        if (rt->phase != SL_RUN_RUNNING) {
                rt->hooks->stop_step(rt);
                return;
        }
        if (!sl_runtime_may_produce(rt))
                return;
        sl_pipeline_foreach_task(rt, task_resume_wake, NULL);
        sl_input_drain(rt);
        sl_kwatch_kick(rt->consumer_w);
        sl_kwatch_kick(rt->reader_w);
        sl_health_update_ready(rt);
}

/* A tracked record was delivered: its task is told, unless the task was
 * rebuilt since it produced the record (another epoch). */
void sl_commit_delivery(void *opaque, const rd_kafka_message_t *m) {
        sl_runtime_t *rt = opaque;
        uintptr_t flags = (uintptr_t)m->_private;
        sl_task_t *t;
        if (!sl_runtime_delivered(rt, m))
                return;
        t = sl_pipeline_task_at(rt, SL_MSG_PIPELINE(flags),
                                SL_MSG_PARTITION(flags));
        if (t && t->epoch == SL_MSG_EPOCH(flags) &&
            t->state == SL_TASK_RUNNING && t->pl->op->delivered)
                t->pl->op->delivered(t, m);
}
