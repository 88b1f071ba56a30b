/* SPDX-License-Identifier: Apache-2.0 */
/*
 * member.c — group membership (see member.h).
 */
#include "member.h"

#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "groupcheck.h"
#include "health.h"
#include "log.h"
#include "parts.h"
#include "pipeline.h"
#include "task.h"
#include "util.h"

#define SL_MEMBER_LOOK_TMO_MS 5000
/* Between leaving the group and joining again: the LeaveGroup must reach
 * the broker first, or the join would come back as a static member's
 * rejoin with the same stale assignment. */
#define SL_MEMBER_REJOIN_PAUSE_MS 1000

struct sl_member_s {
        sl_runtime_t *rt;
        /* Partitions of the group nobody owns (groupcheck.h): a look at
         * the group every SL_GROUPCHECK_EVERY_MS; rejoin_at_ms, when this
         * member left the group to repair a gap, is when it subscribes
         * again (0: it has not). */
        sl_groupcheck_t groupcheck;
        int look_inflight;
        int64_t look_next_ms;
        int64_t rejoin_at_ms;

        sl_counter_t *m_rebalances;
        sl_gauge_t *m_unowned;
        sl_counter_t *m_rejoins;
};

static const sl_metric_def_t member_metrics[] = {
    SL_METRICS_COUNTER(sl_member_t, m_rebalances, "sluice_rebalances_total",
                       "Rebalance events (assignments and revocations)."),
    SL_METRICS_GAUGE(sl_member_t, m_unowned, "sluice_group_unowned_partitions",
                     "Input partitions no member of the group owned at the "
                     "last look (every 5 s) while the group was stable."),
    SL_METRICS_COUNTER(sl_member_t, m_rejoins, "sluice_group_rejoins_total",
                       "Times this member left and rejoined the group because "
                       "input partitions had no owner for 15 s."),
};

sl_member_t *sl_member_new(sl_runtime_t *rt) {
        sl_member_t *mb = sl_calloc(1, sizeof(*mb));
        mb->rt = rt;
        sl_metrics_register(rt->metrics, member_metrics,
                            SL_ARRAY_SIZE(member_metrics), mb, NULL);
        return mb;
}

void sl_member_destroy(sl_member_t *mb) {
        free(mb);
}

rd_kafka_resp_err_t sl_member_subscribe(sl_runtime_t *rt) {
        rd_kafka_topic_partition_list_t *topics;
        rd_kafka_resp_err_t err;
        topics = rd_kafka_topic_partition_list_new(rt->pipeline_cnt);
        for (int i = 0; i < rt->pipeline_cnt; i++)
                rd_kafka_topic_partition_list_add(topics,
                                                  rt->pipelines[i].conf->input,
                                                  RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(rt->consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        return err;
}

void sl_member_lost(sl_runtime_t *rt) {
        sl_member_t *mb = rt->member;
        if (rt->revoking)
                rd_kafka_topic_partition_list_destroy(rt->revoking);
        rt->revoking = NULL;
        rt->revoke_commit_started = 0;
        rt->assigned = 0;
        mb->rejoin_at_ms = 0; /* the new consumer subscribes anyway */
        mb->groupcheck.gap_since_ms = 0;
}

/* ------------------------------------------------------------------ */
/* Rebalances.                                                          */

static void member_assign(sl_runtime_t *rt,
                          rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_error_t *error;

        /* An explicit start offset: librdkafka would otherwise fetch the
         * committed offsets of all the new partitions in one request, and
         * one partition with a pending transaction (a zombie's) would hold
         * every other one back.  The rebuild fetches each partition's
         * committed offset itself and seeks there; until then the
         * partitions are paused.  BEGINNING, not END: if the lookup of the
         * logical offset answers after our seek, the position moves back
         * and sl_task_on_input() drops what it already processed; END
         * moved it forward once, past unprocessed records. */
        for (int i = 0; i < parts->cnt; i++)
                parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        error = rd_kafka_incremental_assign(rt->consumer, parts);
        if (error) {
                sl_log(LOG_ERR, "REBALANCE", "incremental_assign: %s",
                       rd_kafka_error_string(error));
                rd_kafka_error_destroy(error);
                return;
        }
        /* Input waits until the partition's state is rebuilt. */
        rd_kafka_pause_partitions(rt->consumer, parts);
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = sl_pipeline_by_input(rt, tp->topic);
                if (!pl) {
                        sl_log(LOG_ERR, "REBALANCE",
                               "assigned %s [%d] that no pipeline reads",
                               tp->topic, tp->partition);
                        continue;
                }
                if (tp->partition >= pl->partition_cnt) {
                        /* The input grew: served once its topics have the
                         * partition too (parts.h); paused until then. */
                        sl_parts_assigned(pl, tp->partition);
                        continue;
                }
                if (pl->tasks[tp->partition])
                        continue;
                pl->tasks[tp->partition] = sl_task_new(pl, tp->partition);
        }
}

static void member_drop_tasks(sl_runtime_t *rt,
                              const rd_kafka_topic_partition_list_t *parts) {
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &parts->elems[i];
                sl_pipeline_t *pl = sl_pipeline_by_input(rt, tp->topic);
                if (pl)
                        sl_parts_revoked(pl, tp->partition);
                if (!pl || tp->partition >= pl->partition_cnt ||
                    !pl->tasks[tp->partition])
                        continue;
                sl_task_destroy(pl->tasks[tp->partition]);
                pl->tasks[tp->partition] = NULL;
        }
}

void sl_member_revoke_finish(sl_runtime_t *rt) {
        rd_kafka_topic_partition_list_t *parts = rt->revoking;
        rd_kafka_error_t *error;
        if (!parts)
                return;
        rt->revoking = NULL;
        rt->revoke_commit_started = 0;
        member_drop_tasks(rt, parts);
        if (rt->consumer) {
                error = rd_kafka_incremental_unassign(rt->consumer, parts);
                if (error) {
                        sl_log(LOG_ERR, "REBALANCE", "incremental_unassign: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
        }
        sl_log(LOG_INFO, "REBALANCE", "revoked %d partitions", parts->cnt);
        rd_kafka_topic_partition_list_destroy(parts);
        sl_health_update_ready(rt);
}

void sl_member_revoke_try(sl_runtime_t *rt) {
        int r;
        if (!rt->revoking || rt->revoke_commit_started)
                return;
        r = sl_txn_commit(rt->txn);
        if (r == 1)
                sl_member_revoke_finish(rt);
        else if (r == 0)
                rt->revoke_commit_started = 1;
        /* -1: busy; tried again when it settles. */
}

/* Marks the tasks of parts revoking: they take no input, and a commit
 * carries their work before they go. */
static void member_mark_revoking(sl_runtime_t *rt,
                                 const rd_kafka_topic_partition_list_t *parts) {
        for (int i = 0; i < parts->cnt; i++) {
                sl_task_t *t = sl_pipeline_task(rt, parts->elems[i].topic,
                                                parts->elems[i].partition);
                if (t)
                        t->revoking = 1;
        }
}

static void member_revoke(sl_runtime_t *rt,
                          rd_kafka_topic_partition_list_t *parts) {
        rd_kafka_error_t *error;
        int lost = rd_kafka_assignment_lost(rt->consumer);

        sl_log(LOG_INFO, "REBALANCE", "revoking %d partitions%s", parts->cnt,
               lost ? " (lost)" : "");
        if (!lost && rt->revoking) {
                /* A second revocation while the first waits for its
                 * commit: it joins the first.  Dropping these tasks now
                 * would let what they wrote into the open transaction
                 * commit without their input offsets (a duplicate at their
                 * next owner); they go with the first, once a commit
                 * carries their work too (the offsets hook counts revoking
                 * tasks). */
                member_mark_revoking(rt, parts);
                for (int i = 0; i < parts->cnt; i++)
                        rd_kafka_topic_partition_list_add(
                            rt->revoking, parts->elems[i].topic,
                            parts->elems[i].partition);
                sl_log(LOG_NOTICE, "REBALANCE",
                       "%d more partitions join the revocation that waits "
                       "for its commit",
                       parts->cnt);
                sl_member_revoke_try(rt);
                return;
        }
        if (lost || rt->revoking) {
                /* Our offsets for them would be refused: abort so nothing
                 * written for them becomes visible. */
                sl_member_revoke_finish(rt);
                member_drop_tasks(rt, parts);
                error = rd_kafka_incremental_unassign(rt->consumer, parts);
                if (error) {
                        sl_log(LOG_ERR, "REBALANCE", "incremental_unassign: %s",
                               rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
                if (lost) {
                        rt->assigned = 0;
                        if (sl_txn_state(rt->txn) != SL_TXN_READY)
                                sl_txn_doom(rt->txn, "partitions lost");
                }
                return;
        }
        /* What was done for them becomes durable first; the group waits
         * for the unassign. */
        member_mark_revoking(rt, parts);
        rt->revoking = rd_kafka_topic_partition_list_copy(parts);
        rt->revoke_commit_started = 0;
        sl_member_revoke_try(rt);
}

void sl_member_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts,
                            void *opaque) {
        sl_runtime_t *rt = opaque;

        if (rk != rt->consumer)
                return; /* a consumer being destroyed */
        sl_counter_inc(rt->member->m_rebalances);
        sl_txn_rebalanced(rt->txn);
        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                sl_log(LOG_INFO, "REBALANCE", "assigned %d partitions",
                       parts->cnt);
                rt->assigned = 1;
                member_assign(rt, parts);
                break;
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                member_revoke(rt, parts);
                break;
        default:
                sl_log(LOG_ERR, "REBALANCE", "rebalance error: %s",
                       rd_kafka_err2str(err));
                sl_member_revoke_finish(rt);
                member_drop_tasks(rt, parts);
                if (sl_txn_state(rt->txn) != SL_TXN_READY)
                        sl_txn_doom(rt->txn, "rebalance error");
                rd_kafka_incremental_unassign(rt->consumer, parts);
                rt->assigned = 0;
                break;
        }
        sl_health_update_ready(rt);
}

/* ------------------------------------------------------------------ */
/* Partitions nobody owns (groupcheck.h).                               */

/* Leaves the group (its partitions are revoked through the usual path,
 * their work committed first) and joins again once they are gone: the
 * broker then rebalances the whole group. */
static void member_rejoin(sl_runtime_t *rt, const sl_groupcheck_look_t *look,
                          int64_t gap_ms) {
        sl_member_t *mb = rt->member;
        rd_kafka_resp_err_t err;
        sl_log(LOG_WARNING, "GROUP",
               "%d input partitions (e.g. %s) have had no owner for %.0f s "
               "while group %s was stable; this member (%d partitions) leaves "
               "and rejoins the group so that it rebalances",
               look->unowned, look->example, (double)gap_ms / 1000.0,
               rt->conf->app_id, sl_pipeline_task_cnt(rt));
        sl_counter_inc(mb->m_rejoins);
        if ((err = rd_kafka_unsubscribe(rt->consumer)))
                sl_log(LOG_ERR, "GROUP", "unsubscribe: %s",
                       rd_kafka_err2str(err));
        rt->assigned = 0;
        mb->rejoin_at_ms = sl_now_ms() + SL_MEMBER_REJOIN_PAUSE_MS;
        sl_health_update_ready(rt);
}

static void member_on_look(void *opaque, rd_kafka_resp_err_t err,
                           rd_kafka_consumer_group_state_t state,
                           const sl_groupcheck_member_t *members,
                           int member_cnt) {
        sl_runtime_t *rt = opaque;
        sl_member_t *mb = rt->member;
        sl_groupcheck_topic_t *topics;
        sl_groupcheck_look_t look;
        int64_t now = sl_now_ms(), since;
        int stable = state == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE;
        char *mine;

        mb->look_inflight = 0;
        if (err || !rt->consumer || rt->phase != SL_RUN_RUNNING ||
            mb->rejoin_at_ms)
                return;
        topics = sl_calloc((size_t)rt->pipeline_cnt, sizeof(*topics));
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                topics[i].name = rt->pipelines[i].conf->input;
                topics[i].partition_cnt = rt->pipelines[i].partition_cnt;
        }
        mine = rd_kafka_memberid(rt->consumer);
        sl_groupcheck_look(topics, rt->pipeline_cnt, members, member_cnt, mine,
                           &look);
        free(topics);
        if (mine)
                rd_kafka_mem_free(NULL, mine);
        sl_gauge_set(mb->m_unowned, stable ? look.unowned : 0);
        since = mb->groupcheck.gap_since_ms;
        switch (sl_groupcheck_judge(&mb->groupcheck, now, stable, &look)) {
        case SL_GROUPCHECK_OK:
                if (since)
                        sl_log(LOG_INFO, "GROUP",
                               "every input partition has an owner again");
                break;
        case SL_GROUPCHECK_WATCH:
                if (!since)
                        sl_log(LOG_NOTICE, "GROUP",
                               "%d input partitions (e.g. %s) have no owner "
                               "while group %s is stable; watching",
                               look.unowned, look.example, rt->conf->app_id);
                break;
        case SL_GROUPCHECK_REPAIR:
                member_rejoin(rt, &look, now - since);
                break;
        }
}

void sl_member_tick(sl_runtime_t *rt, int64_t now) {
        sl_member_t *mb = rt->member;
        rd_kafka_resp_err_t err;
        if (!rt->consumer || rt->phase != SL_RUN_RUNNING)
                return;
        if (mb->rejoin_at_ms) {
                if (now < mb->rejoin_at_ms || rt->revoking ||
                    sl_pipeline_task_cnt(rt))
                        return;
                mb->rejoin_at_ms = 0;
                if ((err = sl_member_subscribe(rt))) {
                        sl_log(LOG_CRIT, "GROUP", "subscribe: %s",
                               rd_kafka_err2str(err));
                        sl_runtime_exit(rt, SL_EXIT_FAIL);
                        return;
                }
                sl_log(LOG_NOTICE, "GROUP", "joining group %s again",
                       rt->conf->app_id);
                return;
        }
        if (mb->look_inflight || now < mb->look_next_ms)
                return;
        if (sl_kquery_group_owners(rt->kq, rt->conf->app_id,
                                   SL_MEMBER_LOOK_TMO_MS, member_on_look,
                                   rt) == 0) {
                mb->look_inflight = 1;
                mb->look_next_ms = now + SL_GROUPCHECK_EVERY_MS;
        }
}
