/* SPDX-License-Identifier: Apache-2.0 */
/*
 * targets.c — the topics sluice writes to (see targets.h).
 */
#include "targets.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "kafka.h"
#include "log.h"
#include "pipeline.h"
#include "recsize.h"
#include "topiccache.h"
#include "topics.h"
#include "util.h"

/* How long a lookup of a target may take. */
#define SL_TARGETS_LOOKUP_TMO_MS 5000

_Static_assert(SL_TOPIC_LOOKING == SL_TOPICCACHE_LOOKING &&
                   SL_TOPIC_FORBIDDEN == SL_TOPICCACHE_FORBIDDEN,
               "task.h and topiccache.h agree");

struct sl_targets_s {
        sl_runtime_t *rt;

        /* The partition counts and limits of the topics operators write
         * to, filled off the loop. */
        sl_topiccache_t *tc;
        sl_gauge_t *m_entries;
        sl_counter_t *m_evictions;
        sl_gauge_t *m_drift; /* sluice_topic_drift */
        uint64_t evictions_counted;

        /* Each producer's handles of the pipelines' own topics, kept while
         * it lives, by the configured name. */
        struct {
                const char *name;
                rd_kafka_topic_t *rkt[SL_TXN_PRODUCERS_MAX]; /* by producer */
        } * warm;
        int warm_cnt;

        /* What the pipelines' own written topics (changelog, overflow,
         * DLQ, output, default target, input) accept, learned at start
         * with DescribeConfigs: what the producers are configured for, and
         * each topic's limit until the topic cache learns it again.
         * broker_max_bytes: the broker's message.max.bytes as those topics
         * show it (or Kafka's default), assumed for any other topic until
         * its own is learned. */
        struct sl_targets_limit_s {
                const char *name;
                int64_t max_bytes; /* -1: not learned */
        } * limits;
        int limit_cnt;
        int64_t broker_max_bytes;
};

static void targets_cache_metrics(sl_targets_t *tg) {
        sl_topiccache_stats_t st;
        sl_topiccache_stats(tg->tc, &st);
        sl_gauge_set(tg->m_entries, (double)st.entries);
        if (st.evictions != tg->evictions_counted) {
                sl_counter_add(tg->m_evictions,
                               st.evictions - tg->evictions_counted);
                tg->evictions_counted = st.evictions;
        }
}

/* A delay target may not be written: said once a topic. */
static void targets_refused(sl_runtime_t *rt, const char *topic) {
        char buf[512];
        if (!sl_authz_first(rt, SL_ACL_WRITE, topic))
                return;
        sl_log(LOG_WARNING, "AUTHZ",
               "not authorized: %s; timers for it go to the DLQ "
               "(target-refused)",
               sl_authz_refusal(rt, SL_ACL_TOPIC, topic, SL_ACL_WRITE, buf,
                                sizeof(buf)));
}

/* 1 when topic is one of the pipelines' own (sl_targets_learn_limits): a
 * refusal to write it ends the process when it is written (txn.h's
 * not_authorized), where a target's sends the timer to the DLQ. */
static int targets_own(const sl_targets_t *tg, const char *topic) {
        for (int i = 0; i < tg->limit_cnt; i++)
                if (!strcmp(tg->limits[i].name, topic))
                        return 1;
        return 0;
}

/* The largest record a topic accepts, learned after the topic was found:
 * kept in its cache entry, and the size check's floor follows it down. */
static void targets_on_max_bytes(void *opaque, rd_kafka_resp_err_t err,
                                 const char *topic, int64_t max_bytes,
                                 int dflt) {
        sl_targets_t *tg = opaque;
        sl_runtime_t *rt = tg->rt;
        (void)dflt;
        if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
            sl_authz_first(rt, SL_ACL_DESCRIBE_CONFIGS, topic)) {
                /* Without DescribeConfigs on the topic: the broker's limit
                 * is assumed (docs/security.md); said once a topic. */
                char buf[512];
                sl_log(LOG_WARNING, "AUTHZ",
                       "not authorized: %s; assuming the broker's "
                       "message.max.bytes for it",
                       sl_authz_refusal(rt, SL_ACL_TOPIC, topic,
                                        SL_ACL_DESCRIBE_CONFIGS, buf,
                                        sizeof(buf)));
                return;
        }
        if (err) {
                if (err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        sl_kafka_log_error("describe configs", err, topic);
                return;
        }
        sl_topiccache_set_max_bytes(tg->tc, topic, max_bytes);
        if (max_bytes < rt->max_bytes_floor)
                rt->max_bytes_floor = max_bytes;
}

static void task_lookup_answered(sl_task_t *t, void *opaque) {
        (void)opaque;
        if (t->lookup_wait)
                sl_task_lookup_done(t);
}

static void targets_on_lookup(void *opaque, rd_kafka_resp_err_t err,
                              const char *topic, int cnt) {
        sl_topiccache_entry_t *e = opaque;
        sl_topiccache_t *tc = sl_topiccache_of(e);
        sl_targets_t *tg = sl_topiccache_opaque(tc);
        sl_runtime_t *rt = tg->rt;
        if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
                /* No Describe means no Write: refused up front rather
                 * than by the broker at delivery (which aborts). */
                if (!targets_own(tg, topic))
                        targets_refused(rt, topic);
                sl_topiccache_answer(tc, e, 1, SL_TOPICCACHE_FORBIDDEN,
                                     sl_now_ms());
        } else /* err: Kafka did not answer; keep what we knew, retry soon */
                sl_topiccache_answer(tc, e, !err, cnt, sl_now_ms());
        /* Tell the producer now: a topic it first meets in producev()
         * waits for its once-a-second scan of unknown topics (librdkafka
         * 2.0) before the record can leave, while rd_kafka_topic_new()
         * asks for the topic's leaders at once (non-blocking). */
        for (int i = 0; !err && cnt > 0 && i < rt->producer_cnt; i++) {
                rd_kafka_topic_t *rkt =
                    rd_kafka_topic_new(rt->producers[i], topic, NULL);
                if (rkt)
                        rd_kafka_topic_destroy(rkt);
        }
        if (!err && cnt > 0)
                sl_kquery_max_bytes(rt->kq, topic, SL_TARGETS_LOOKUP_TMO_MS,
                                    targets_on_max_bytes, tg);
        /* Inputs that waited for a lookup go on. */
        sl_pipeline_foreach_task(rt, task_lookup_answered, NULL);
}

int sl_targets_partitions(sl_runtime_t *rt, const char *topic) {
        sl_targets_t *tg = rt->targets;
        sl_topiccache_entry_t *look;
        int r = sl_topiccache_get(tg->tc, topic, sl_runtime_now_ms(rt), &look);
        if (look) {
                if (sl_kquery_partitions(rt->kq, sl_topiccache_name(look),
                                         SL_TARGETS_LOOKUP_TMO_MS,
                                         targets_on_lookup, look) != 0)
                        sl_topiccache_answer(tg->tc, look, 0, 0, sl_now_ms());
                targets_cache_metrics(tg);
        }
        return r;
}

sl_targets_t *sl_targets_new(sl_runtime_t *rt) {
        sl_targets_t *tg = sl_calloc(1, sizeof(*tg));
        tg->rt = rt;
        tg->tc = sl_topiccache_new(SL_TOPICCACHE_CAPACITY,
                                   SL_TOPICCACHE_LOOKUPS, tg);
        tg->m_entries = sl_metrics_gauge(
            rt->metrics, "sluice_topic_cache_entries",
            "Topics in the target metadata cache (at most 1024).", NULL);
        tg->m_evictions = sl_metrics_counter(
            rt->metrics, "sluice_topic_cache_evictions_total",
            "Topics evicted from the full target metadata cache.", NULL);
        tg->m_drift = sl_metrics_gauge(
            rt->metrics, "sluice_topic_drift",
            "Config values and replica counts of the pipelines' topics that "
            "differ from what `sluice topics apply` plans (its warnings), "
            "found at start; -1: not known (before the check, or the "
            "configs could not be read).",
            NULL);
        sl_gauge_set(tg->m_drift, -1);
        tg->broker_max_bytes = SL_RECSIZE_KAFKA_DEFAULT_MAX;
        return tg;
}

static void targets_cancel_cb(sl_topiccache_entry_t *e, void *opaque) {
        sl_targets_t *tg = opaque;
        sl_kquery_cancel(tg->rt->kq, e);
}

void sl_targets_destroy(sl_targets_t *tg) {
        if (!tg)
                return;
        sl_targets_cool(tg->rt);
        free(tg->warm);
        sl_topiccache_foreach_looking(tg->tc, targets_cancel_cb, tg);
        sl_kquery_cancel(tg->rt->kq, tg);
        sl_topiccache_destroy(tg->tc);
        for (int i = 0; i < tg->limit_cnt; i++)
                free((char *)tg->limits[i].name);
        free(tg->limits);
        free(tg);
}

/* ------------------------------------------------------------------ */
/* Limits (recsize.h; runtime.h, the size check).                       */

int64_t sl_targets_max_bytes(const sl_runtime_t *rt, const char *topic) {
        const sl_targets_t *tg = rt->targets;
        int64_t v = sl_topiccache_max_bytes(tg->tc, topic);
        if (v > 0)
                return v;
        for (int i = 0; i < tg->limit_cnt; i++)
                if (tg->limits[i].max_bytes > 0 &&
                    !strcmp(tg->limits[i].name, topic))
                        return tg->limits[i].max_bytes;
        return tg->broker_max_bytes;
}

/* The drift `topics apply` warns of (topicplan.h), judged from what start
 * described: one line per difference, and sluice_topic_drift.  A topic two
 * pipelines name is judged once; one not described (the rates topics,
 * which are only read, or one without the DescribeConfigs ACL) has none. */
static void targets_drift(sl_targets_t *tg, const sl_topicplan_t *plan,
                          const sl_topics_observed_t *obs) {
        sl_topicplan_eval_t *ev;
        int drift = 0;

        if (!obs)
                return; /* stays -1 */
        ev = sl_topicplan_eval(plan, obs);
        for (int i = 0; i < ev->cnt; i++) {
                const sl_topic_verdict_t *v = &ev->verdicts[i];
                int dup = 0;
                for (int j = 0; j < i; j++)
                        dup |=
                            !strcmp(ev->verdicts[j].spec->name, v->spec->name);
                for (int k = 0; !dup && k < v->problem_cnt; k++) {
                        if (!v->drift[k])
                                continue;
                        drift++;
                        sl_log(LOG_WARNING, "TOPICS",
                               "%s: %s (drift: sluice runs with it; `sluice "
                               "topics check` lists what differs)",
                               v->spec->name, v->problems[k]);
                }
        }
        sl_topicplan_eval_destroy(ev);
        sl_gauge_set(tg->m_drift, drift);
}

/* A topic sluice may not describe (no DescribeConfigs ACL) is assumed to
 * take the broker's limit; a larger record then costs two aborted
 * transactions before the broker's refusal sends it to the DLQ
 * (refused.h). */
void sl_targets_learn_limits(sl_runtime_t *rt) {
        sl_targets_t *tg = rt->targets;
        const sl_conf_t *conf = rt->conf;
        sl_topicplan_t *plan = sl_topicplan_new(conf);
        const char **names = sl_calloc((size_t)plan->cnt + 1, sizeof(*names));
        sl_topics_observed_t *obs = NULL;
        sl_topics_admin_t *adm;
        const char *v, *biggest = NULL;
        int64_t max_own = -1, min_own = INT64_MAX, dflt = -1;
        char errstr[256];
        int n = 0;

        /* Inputs too: a keyed record on the wrong partition is written
         * to its key's (reroute). */
        for (int i = 0; i < plan->cnt; i++)
                if (!(plan->specs[i].def->flags & SL_ROLE_TABLE))
                        names[n++] = plan->specs[i].name;
        tg->limits = sl_calloc((size_t)n + 1, sizeof(*tg->limits));
        adm = sl_topics_admin_new(conf, 10000, errstr, sizeof(errstr));
        if (adm &&
            sl_topics_observe(adm, names, n, &obs, errstr, sizeof(errstr)) != 0)
                obs = NULL;
        if (!obs)
                sl_log(LOG_WARNING, "LIMITS",
                       "cannot describe the topics' configs (%s): assuming "
                       "Kafka's default max.message.bytes %d",
                       errstr, SL_RECSIZE_KAFKA_DEFAULT_MAX);
        for (int i = 0; i < n; i++) {
                const sl_topic_state_t *st =
                    obs ? sl_topicplan_observed_find(obs, names[i]) : NULL;
                struct sl_targets_limit_s *l;
                int dup = 0;
                for (int j = 0; j < tg->limit_cnt; j++)
                        dup |= !strcmp(tg->limits[j].name, names[i]);
                if (dup)
                        continue;
                l = &tg->limits[tg->limit_cnt++];
                l->name = sl_strdup(names[i]); /* the plan's goes */
                l->max_bytes = -1;
                if (!st)
                        continue;
                if (!st->described) {
                        sl_log(LOG_NOTICE, "LIMITS",
                               "%s: cannot read max.message.bytes (%s): "
                               "assuming the broker's (grant DescribeConfigs "
                               "on it, docs/security.md)",
                               names[i],
                               st->error ? st->error : "not described");
                        continue;
                }
                for (int k = 0; k < st->config_cnt; k++) {
                        const sl_topic_conf_entry_t *e = &st->configs[k];
                        long long x;
                        if (strcmp(e->key, "max.message.bytes") || !e->value ||
                            (x = atoll(e->value)) <= 0)
                                continue;
                        l->max_bytes = x;
                        if (!e->is_set)
                                dflt = x;
                }
                if (l->max_bytes > max_own) {
                        max_own = l->max_bytes;
                        biggest = l->name;
                }
                if (l->max_bytes > 0 && l->max_bytes < min_own)
                        min_own = l->max_bytes;
        }
        tg->broker_max_bytes = dflt > 0 ? dflt : SL_RECSIZE_KAFKA_DEFAULT_MAX;
        if ((v = sl_kafka_user_value(conf, "message.max.bytes"))) {
                rt->producer_max_bytes = atoll(v);
                if (max_own > rt->producer_max_bytes)
                        sl_log(LOG_WARNING, "LIMITS",
                               "[kafka] message.max.bytes = %s is below what "
                               "%s accepts (%" PRId64
                               "): larger records go to the DLQ as too-large",
                               v, biggest, max_own);
        } else {
                rt->producer_max_bytes = SL_MAX(max_own, tg->broker_max_bytes);
        }
        v = sl_kafka_user_value(conf, "compression.codec");
        if (!v)
                v = sl_kafka_user_value(conf, "compression.type");
        rt->size_exact = !v || !strcmp(v, "none");
        rt->max_bytes_floor = SL_MIN(SL_MIN(min_own, tg->broker_max_bytes),
                                     rt->producer_max_bytes);
        sl_log(LOG_INFO, "LIMITS",
               "records up to %" PRId64 " bytes (message.max.bytes); the "
               "smallest topic limit %" PRId64 ", the broker's %" PRId64 "%s",
               rt->producer_max_bytes, rt->max_bytes_floor,
               tg->broker_max_bytes,
               rt->size_exact ? ""
                              : "; compressed: sizes are the broker's "
                                "to judge");
        targets_drift(tg, plan, obs);
        sl_topicplan_observed_destroy(obs);
        sl_topics_admin_destroy(adm);
        free(names);
        sl_topicplan_destroy(plan);
}

void sl_targets_tick(sl_runtime_t *rt) {
        sl_targets_t *tg = rt->targets;
        for (int i = 0; i < tg->limit_cnt; i++)
                sl_targets_partitions(rt, tg->limits[i].name);
}

/* ------------------------------------------------------------------ */
/* The producers' handles of the pipelines' own topics.                */

void sl_targets_warm(sl_runtime_t *rt) {
        sl_targets_t *tg = rt->targets;
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = rt->pipelines[i].conf;
                sl_ptopic_t tps[SL_PIPELINE_TOPICS_MAX];
                int n = sl_pipeline_topics(pc, tps);
                for (int j = 0; j < n; j++) {
                        rd_kafka_topic_t *rkt[SL_TXN_PRODUCERS_MAX] = {NULL};
                        unsigned f = tps[j].role->flags;
                        int k;
                        /* What sluice writes in its transactions (a delay
                         * pipeline's default target is a target like any
                         * other), and the input when a keyed record may be
                         * moved to its key's partition. */
                        if (!(((f & SL_ROLE_WRITE) &&
                               !(f & SL_ROLE_FALLBACK)) ||
                              ((f & SL_ROLE_INPUT) && pc->reroute)))
                                continue;
                        sl_targets_partitions(rt, tps[j].name);
                        for (k = 0; k < rt->producer_cnt; k++)
                                if (!(rkt[k] = rd_kafka_topic_new(
                                          rt->producers[k], tps[j].name, NULL)))
                                        break;
                        if (k < rt->producer_cnt) {
                                while (k-- > 0)
                                        rd_kafka_topic_destroy(rkt[k]);
                                continue;
                        }
                        tg->warm = sl_realloc(tg->warm,
                                              sizeof(*tg->warm) *
                                                  (size_t)(tg->warm_cnt + 1));
                        tg->warm[tg->warm_cnt].name = tps[j].name;
                        memcpy(tg->warm[tg->warm_cnt++].rkt, rkt, sizeof(rkt));
                }
        }
}

void sl_targets_cool(sl_runtime_t *rt) {
        sl_targets_t *tg = rt->targets;
        for (int i = 0; i < tg->warm_cnt; i++)
                for (int k = 0; k < SL_TXN_PRODUCERS_MAX; k++)
                        if (tg->warm[i].rkt[k])
                                rd_kafka_topic_destroy(tg->warm[i].rkt[k]);
        tg->warm_cnt = 0;
}

rd_kafka_topic_t *sl_targets_handle(const sl_runtime_t *rt, const char *name) {
        const sl_targets_t *tg = rt->targets;
        /* Operators pass the configured name itself; a record replayed
         * from the outbox carries a copy. */
        for (int i = 0; i < tg->warm_cnt; i++)
                if (tg->warm[i].name == name)
                        return tg->warm[i].rkt[rt->turn];
        for (int i = 0; i < tg->warm_cnt; i++)
                if (!strcmp(tg->warm[i].name, name))
                        return tg->warm[i].rkt[rt->turn];
        return NULL;
}

/* ------------------------------------------------------------------ */
/* Refused writes.                                                      */

/* Kafka names no resource but for a topic, which librdkafka logs
 * (kafka.h) when it is AddPartitionsToTxn that refused.  A delay target's
 * refusal (Describe granted, not Write) is the timer's: its topic is
 * marked forbidden, the transaction aborted, and the timer goes to the
 * DLQ when redone. */
int sl_targets_txn_refused(void *opaque, rd_kafka_resp_err_t code,
                           const char *topic, const char *why) {
        sl_runtime_t *rt = opaque;
        sl_targets_t *tg = rt->targets;
        char name[512];
        switch (code) {
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
                /* TxnOffsetCommit names the input partitions it refused;
                 * committing an input's offsets takes its Read. */
                if (!topic && strstr(why, "commit offsets") &&
                    sl_authz_input_in(rt, why)) {
                        sl_authz_refused(rt, SL_ACL_TOPIC,
                                         sl_authz_input_in(rt, why),
                                         SL_ACL_READ, why);
                        break;
                }
                if (!topic) {
                        sl_kafka_denied_topic(name, sizeof(name));
                        topic = *name ? name : NULL;
                }
                if (topic && !targets_own(tg, topic) &&
                    sl_topiccache_forbid(tg->tc, topic, sl_now_ms()) == 0) {
                        targets_refused(rt, topic);
                        return 0;
                }
                sl_authz_refused(rt, SL_ACL_TOPIC, topic, SL_ACL_WRITE, why);
                break;
        case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
                sl_authz_refused(rt, SL_ACL_GROUP, rt->conf->app_id,
                                 SL_ACL_READ, why);
                break;
        default: /* a transactional id's, or the cluster's */
                sl_runtime_txn_id(rt, 0, name, sizeof(name));
                sl_authz_refused(rt, SL_ACL_TRANSACTIONAL_ID, name, SL_ACL_ANY,
                                 why);
                break;
        }
        return 1;
}
