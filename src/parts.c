/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parts.c — the input partitions a pipeline serves: the start-up check of
 * its co-partitioned topics and their growth at run time (see parts.h for
 * the state model).
 *
 * The served count is pl->partition_cnt, the length of pl->tasks.  It only
 * grows: Kafka never removes partitions.  A partition beyond it that the
 * consumer assigns is kept in ps->waiting (paused, no task, so no offset is
 * ever committed for it) until every co-partitioned topic has it.
 */
#include "parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acls.h"
#include "kafka.h"
#include "log.h"
#include "task.h"
#include "topicplan.h"
#include "util.h"

/* Blocking metadata lookups at start. */
#define SL_PARTS_START_TMO_MS 10000
/* Run-time lookups, and how often they are repeated while partitions
 * wait. */
#define SL_PARTS_LOOKUP_TMO_MS 5000
#define SL_PARTS_RECHECK_MS    2000
/* The input and the topics co-partitioned with it, at most. */
#define SL_PARTS_TOPICS SL_PIPELINE_TOPICS_MAX

/* ------------------------------------------------------------------ */
/* Start.                                                               */

typedef struct {
        const char *name;
        int cnt;
} count_t;

/* Partition count of name, asked once per name (names repeat: a shared
 * dlq, an input that is another pipeline's output). */
static int start_count(rd_kafka_t *rk, count_t *cache, int *cache_cnt,
                       const char *name) {
        for (int i = 0; i < *cache_cnt; i++)
                if (!strcmp(cache[i].name, name))
                        return cache[i].cnt;
        cache[*cache_cnt].name = name;
        cache[*cache_cnt].cnt =
            sl_kafka_partition_count(rk, name, SL_PARTS_START_TMO_MS);
        return cache[(*cache_cnt)++].cnt;
}

/* A topic the authorizer hides from sluice's principal. */
static void start_refused(char *text, size_t size, const sl_conf_t *conf,
                          const char *pipeline, const char *role,
                          const char *name) {
        char why[400];
        sl_acls_t *acls = sl_acls_new(conf);
        snprintf(text, size,
                 "pipeline %s: %s topic %s is hidden: not "
                 "authorized: %s",
                 pipeline, role, name,
                 sl_acls_refusal(acls, SL_ACL_TOPIC, name, SL_ACL_DESCRIBE, why,
                                 sizeof(why)));
        sl_acls_destroy(acls);
}

static void start_problem(int *problems, const char *text) {
        sl_log(LOG_ERR, "TOPICS", "%s", text);
        (*problems)++;
}

int sl_parts_check_start(rd_kafka_t *rk, const sl_conf_t *conf, int *input_cnt,
                         char *errstr, size_t errstr_size) {
        sl_topicplan_t *plan = sl_topicplan_new(conf);
        count_t *cache = sl_calloc((size_t)plan->cnt + 1, sizeof(*cache));
        const sl_topic_spec_t *input = NULL;
        int cache_cnt = 0, problems = 0, pi = -1, in = 0, hidden = 0;
        char text[512];

        for (int i = 0; i < plan->cnt; i++) {
                const sl_topic_spec_t *s = &plan->specs[i];
                const char *role = s->def->name;
                int n;

                if (s->def->flags & SL_ROLE_INPUT) {
                        input = s;
                        in = start_count(rk, cache, &cache_cnt, s->name);
                        input_cnt[++pi] = in;
                        if (in == 0)
                                snprintf(text, sizeof(text),
                                         "pipeline %s: input topic %s does "
                                         "not exist; create it (or set "
                                         "input_partitions and run `sluice "
                                         "topics apply`)",
                                         s->pipeline, s->name);
                        else if (in == SL_KAFKA_PARTS_REFUSED) {
                                start_refused(text, sizeof(text), conf,
                                              s->pipeline, role, s->name);
                                hidden++;
                        } else if (in < 0)
                                snprintf(text, sizeof(text),
                                         "pipeline %s: input topic %s cannot "
                                         "be described (is Kafka up?)",
                                         s->pipeline, s->name);
                        if (in <= 0)
                                start_problem(&problems, text);
                        continue;
                }
                /* Outputs belong to the user (their operators say when one
                 * is missing); nothing to compare without an input. */
                if ((s->def->flags & SL_ROLE_OUTPUT) || !input || in <= 0)
                        continue;
                n = start_count(rk, cache, &cache_cnt, s->name);
                if (n == SL_KAFKA_PARTS_REFUSED) {
                        start_refused(text, sizeof(text), conf, s->pipeline,
                                      role, s->name);
                        start_problem(&problems, text);
                        hidden++;
                } else if (n < 0) {
                        snprintf(text, sizeof(text),
                                 "pipeline %s: %s topic %s cannot be "
                                 "described (is Kafka up?)",
                                 s->pipeline, role, s->name);
                        start_problem(&problems, text);
                } else if (s->match_input && n != in) {
                        sl_topicplan_copart_problem(text, sizeof(text),
                                                    s->pipeline, role, s->name,
                                                    n, input->name, in);
                        start_problem(&problems, text);
                } else if (n == 0) {
                        snprintf(text, sizeof(text),
                                 "pipeline %s: %s topic %s is missing; run "
                                 "`sluice topics apply` to create it",
                                 s->pipeline, role, s->name);
                        start_problem(&problems, text);
                }
        }
        if (hidden)
                snprintf(errstr, errstr_size,
                         "%d topic%s hidden from sluice's principal (logged "
                         "above); `sluice acls -c %s` prints every binding "
                         "sluice needs",
                         hidden, hidden == 1 ? "" : "s",
                         conf->path ? conf->path : "FILE");
        else if (problems)
                snprintf(errstr, errstr_size,
                         "%d topic problem%s (logged above): every "
                         "pipeline's changelog, overflow and dlq need the "
                         "partition count of its input; `sluice topics "
                         "check` lists what differs",
                         problems, problems == 1 ? "" : "s");
        free(cache);
        sl_topicplan_destroy(plan);
        return problems ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Run time.                                                            */

typedef struct parts_ask_s {
        sl_parts_t *ps;
        int slot;
} parts_ask_t;

struct sl_parts_s {
        sl_runtime_t *rt;
        sl_pipeline_t *pl;
        /* [0] the input, then the co-partitioned topics (conf's strings). */
        const char *names[SL_PARTS_TOPICS];
        const sl_roledef_t *roles[SL_PARTS_TOPICS];
        sl_gauge_t *m_lacking[SL_PARTS_TOPICS]; /* [0] unused */
        int name_cnt;
        sl_gauge_t *m_waiting;

        int32_t *waiting; /* assigned partitions >= pl->partition_cnt */
        int waiting_cnt, waiting_alloc;

        parts_ask_t asks[SL_PARTS_TOPICS];
        int counts[SL_PARTS_TOPICS]; /* answers of the current check */
        int pending;                 /* lookups in flight */
        int again;                   /* check again once these answer */
        int nudged;       /* the producer was told after a check found
                             enough partitions */
        int64_t next_ms;  /* next check while partitions wait */
        char reason[256]; /* for /readyz; "" before the first answer */
        char logged[128]; /* the counts last logged as ERROR */
};

static void parts_set_gauges(sl_parts_t *ps) {
        sl_gauge_set(ps->m_waiting, ps->waiting_cnt);
}

sl_parts_t *sl_parts_new(sl_runtime_t *rt, sl_pipeline_t *pl) {
        const sl_pipeline_conf_t *pc = pl->conf;
        sl_parts_t *ps = sl_calloc(1, sizeof(*ps));
        sl_ptopic_t tps[SL_PIPELINE_TOPICS_MAX];
        int tn;

        ps->rt = rt;
        ps->pl = pl;
        /* The input (first in the walk), then what is co-partitioned with
         * it. */
        tn = sl_pipeline_topics(pc, tps);
        for (int i = 0; i < tn; i++) {
                if (!(tps[i].role->flags & (SL_ROLE_INPUT | SL_ROLE_COPART)) ||
                    !*tps[i].name)
                        continue;
                ps->names[ps->name_cnt] = tps[i].name;
                ps->roles[ps->name_cnt++] = tps[i].role;
        }
        for (int i = 0; i < ps->name_cnt; i++) {
                ps->asks[i].ps = ps;
                ps->asks[i].slot = i;
                if (i)
                        ps->m_lacking[i] = sl_metrics_gauge(
                            rt->metrics, "sluice_partition_mismatch",
                            "Partitions a pipeline's changelog, overflow or "
                            "dlq lacks to match its input (the input grew); "
                            "the new input partitions wait until `sluice "
                            "topics apply` adds them.",
                            "pipeline", pc->name, "topic", ps->names[i], NULL);
        }
        ps->m_waiting = sl_metrics_gauge(
            rt->metrics, "sluice_partitions", "Assigned partitions by state.",
            "pipeline", pc->name, "state", "waiting", NULL);
        return ps;
}

void sl_parts_destroy(sl_parts_t *ps) {
        if (!ps)
                return;
        for (int i = 0; i < ps->name_cnt; i++)
                sl_kquery_cancel(ps->rt->kq, &ps->asks[i]);
        free(ps->waiting);
        free(ps);
}

static int parts_find(const sl_parts_t *ps, int32_t p) {
        for (int i = 0; i < ps->waiting_cnt; i++)
                if (ps->waiting[i] == p)
                        return i;
        return -1;
}

static void parts_drop(sl_parts_t *ps, int i) {
        ps->waiting[i] = ps->waiting[--ps->waiting_cnt];
        if (!ps->waiting_cnt) {
                ps->reason[0] = '\0';
                ps->nudged = 0;
        }
}

static void parts_check(sl_parts_t *ps);

/* A producer learns the co-partitioned topics' new partition counts: a
 * metadata request that does not wait for its answer (timeout 0), whose
 * answer updates the producer's cache when it comes. */
static int parts_nudge_one(sl_parts_t *ps, rd_kafka_t *producer) {
        for (int i = 1; i < ps->name_cnt; i++) {
                const struct rd_kafka_metadata *md = NULL;
                rd_kafka_topic_t *rkt =
                    rd_kafka_topic_new(producer, ps->names[i], NULL);
                if (!rkt)
                        return -1;
                if (rd_kafka_metadata(producer, 0, rkt, &md, 0) ==
                        RD_KAFKA_RESP_ERR_NO_ERROR &&
                    md)
                        rd_kafka_metadata_destroy(md);
                rd_kafka_topic_destroy(rkt);
        }
        return 0;
}

/* Every producer learns them. */
static int parts_nudge_producer(sl_parts_t *ps) {
        if (!ps->rt->producer_cnt)
                return -1;
        for (int k = 0; k < ps->rt->producer_cnt; k++)
                if (parts_nudge_one(ps, ps->rt->producers[k]) == -1)
                        return -1;
        return 0;
}

/* Every co-partitioned topic has the input's partitions: serve them. */
static void parts_grow(sl_parts_t *ps, int in) {
        sl_pipeline_t *pl = ps->pl;
        sl_runtime_t *rt = ps->rt;

        if (in > pl->partition_cnt) {
                pl->tasks = sl_realloc(pl->tasks, sizeof(*pl->tasks) * in);
                memset(pl->tasks + pl->partition_cnt, 0,
                       sizeof(*pl->tasks) * (size_t)(in - pl->partition_cnt));
                sl_log(LOG_NOTICE, "PARTITIONS",
                       "pipeline %s: input %s grew from %d to %d partitions "
                       "and its topics have as many: serving them",
                       pl->conf->name, pl->conf->input, pl->partition_cnt, in);
                pl->partition_cnt = in;
        }
        if (ps->logged[0])
                sl_log(LOG_NOTICE, "PARTITIONS",
                       "pipeline %s: its topics have the input's %d "
                       "partitions again",
                       pl->conf->name, in);
        ps->logged[0] = '\0';
        for (int i = 0; i < ps->waiting_cnt;) {
                int32_t p = ps->waiting[i];
                if (p >= pl->partition_cnt || !rt->consumer ||
                    rt->phase != SL_RUN_RUNNING) {
                        i++;
                        continue;
                }
                if (!pl->tasks[p])
                        pl->tasks[p] = sl_task_new(pl, p);
                parts_drop(ps, i);
        }
}

/* Some co-partitioned topic has fewer partitions than the input: say so,
 * once per distinct set of counts, and keep the new partitions waiting. */
static void parts_short(sl_parts_t *ps, int in) {
        const sl_pipeline_conf_t *pc = ps->pl->conf;
        char sig[128], text[512];
        size_t off;
        int n, logit;

        off = (size_t)snprintf(sig, sizeof(sig), "%d", in);
        for (int i = 1; i < ps->name_cnt && off < sizeof(sig); i++)
                off += (size_t)snprintf(sig + off, sizeof(sig) - off, ",%d",
                                        ps->counts[i]);
        logit = strcmp(sig, ps->logged) != 0;
        snprintf(ps->logged, sizeof(ps->logged), "%s", sig);

        off = (size_t)snprintf(ps->reason, sizeof(ps->reason),
                               "pipeline %s: input %s has %d partitions but",
                               pc->name, pc->input, in);
        for (int i = 1; i < ps->name_cnt; i++) {
                if (ps->counts[i] >= in)
                        continue;
                if (logit) {
                        sl_topicplan_copart_problem(
                            text, sizeof(text), pc->name, ps->roles[i]->name,
                            ps->names[i], ps->counts[i], pc->input, in);
                        sl_log(LOG_ERR, "PARTITIONS",
                               "%s; its input partitions %d and up are not "
                               "processed until then",
                               text, ps->pl->partition_cnt);
                }
                if (off < sizeof(ps->reason)) {
                        n = snprintf(ps->reason + off, sizeof(ps->reason) - off,
                                     " %s %d,", ps->names[i], ps->counts[i]);
                        off += (size_t)n;
                }
        }
        if (off < sizeof(ps->reason)) {
                if (ps->reason[off - 1] == ',')
                        off--;
                snprintf(ps->reason + off, sizeof(ps->reason) - off,
                         ": partitions %d and up wait for `sluice topics "
                         "apply`",
                         ps->pl->partition_cnt);
        }
}

/* Every lookup of a check answered. */
static void parts_judge(sl_parts_t *ps) {
        sl_pipeline_t *pl = ps->pl;
        int in = ps->counts[0], enough = 1;

        ps->next_ms = sl_now_ms() + SL_PARTS_RECHECK_MS;
        for (int i = 0; i < ps->name_cnt; i++)
                if (ps->counts[i] < 0) {
                        if (!ps->reason[0])
                                snprintf(ps->reason, sizeof(ps->reason),
                                         "pipeline %s: partitions %d and up "
                                         "of %s wait: the partition counts "
                                         "of its topics could not be read",
                                         pl->conf->name, pl->partition_cnt,
                                         pl->conf->input);
                        return;
                }
        for (int i = 1; i < ps->name_cnt; i++) {
                sl_gauge_set(ps->m_lacking[i],
                             ps->counts[i] < in ? in - ps->counts[i] : 0);
                if (ps->counts[i] < in)
                        enough = 0;
        }
        if (!ps->waiting_cnt) {
                /* Revoked meanwhile. */
        } else if (!enough) {
                ps->nudged = 0;
                parts_short(ps, in);
        } else if (!ps->nudged) {
                /* Tasks write to the new partitions: the producer must
                 * know them first.  Serve at the next check. */
                if (parts_nudge_producer(ps) == 0)
                        ps->nudged = 1;
                ps->next_ms = sl_now_ms() + SL_PARTS_RECHECK_MS / 4;
                snprintf(ps->reason, sizeof(ps->reason),
                         "pipeline %s: partitions %d and up of %s "
                         "are new; starting them",
                         pl->conf->name, pl->partition_cnt, pl->conf->input);
        } else {
                parts_grow(ps, in);
        }
        parts_set_gauges(ps);
        sl_runtime_update_ready(ps->rt);
}

static void parts_on_count(void *opaque, rd_kafka_resp_err_t err,
                           const char *topic, int cnt) {
        parts_ask_t *ask = opaque;
        sl_parts_t *ps = ask->ps;
        (void)topic;

        ps->counts[ask->slot] = err ? -1 : cnt;
        if (--ps->pending > 0)
                return;
        parts_judge(ps);
        if (ps->again && ps->waiting_cnt) {
                ps->again = 0;
                parts_check(ps);
        }
}

static void parts_check(sl_parts_t *ps) {
        if (ps->pending) {
                ps->again = 1;
                return;
        }
        ps->again = 0;
        for (int i = 0; i < ps->name_cnt; i++) {
                ps->counts[i] = -1;
                if (sl_kquery_partitions(ps->rt->kq, ps->names[i],
                                         SL_PARTS_LOOKUP_TMO_MS, parts_on_count,
                                         &ps->asks[i]) == 0)
                        ps->pending++;
        }
        if (!ps->pending)
                ps->next_ms = sl_now_ms() + SL_PARTS_RECHECK_MS;
}

void sl_parts_assigned(sl_pipeline_t *pl, int32_t p) {
        sl_parts_t *ps = pl->parts;

        if (!ps || parts_find(ps, p) >= 0)
                return;
        if (ps->waiting_cnt == ps->waiting_alloc) {
                ps->waiting_alloc =
                    ps->waiting_alloc ? ps->waiting_alloc * 2 : 8;
                ps->waiting = sl_realloc(ps->waiting, sizeof(*ps->waiting) *
                                                          ps->waiting_alloc);
        }
        ps->waiting[ps->waiting_cnt++] = p;
        sl_log(LOG_NOTICE, "PARTITIONS",
               "pipeline %s: assigned %s [%d], beyond the %d partitions it "
               "serves: checking its topics' partition counts",
               pl->conf->name, pl->conf->input, p, pl->partition_cnt);
        parts_set_gauges(ps);
        parts_check(ps);
}

void sl_parts_revoked(sl_pipeline_t *pl, int32_t p) {
        sl_parts_t *ps = pl->parts;
        int i;

        if (!ps || (i = parts_find(ps, p)) < 0)
                return;
        parts_drop(ps, i);
        parts_set_gauges(ps);
}

void sl_parts_reset(sl_pipeline_t *pl) {
        sl_parts_t *ps = pl->parts;

        if (!ps)
                return;
        ps->waiting_cnt = 0;
        ps->reason[0] = '\0';
        ps->nudged = 0;
        parts_set_gauges(ps);
}

void sl_parts_tick(sl_runtime_t *rt, int64_t now_ms) {
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                sl_parts_t *ps = rt->pipelines[i].parts;
                if (ps && ps->waiting_cnt && !ps->pending &&
                    now_ms >= ps->next_ms)
                        parts_check(ps);
        }
}

int sl_parts_trouble(const sl_runtime_t *rt, char *why, size_t size) {
        for (int i = 0; i < rt->pipeline_cnt; i++) {
                const sl_pipeline_t *pl = &rt->pipelines[i];
                const sl_parts_t *ps = pl->parts;
                if (!ps || !ps->waiting_cnt)
                        continue;
                if (ps->reason[0])
                        snprintf(why, size, "%s", ps->reason);
                else
                        snprintf(why, size,
                                 "pipeline %s: partitions %d and up of %s "
                                 "are new; checking its topics' partition "
                                 "counts",
                                 pl->conf->name, pl->partition_cnt,
                                 pl->conf->input);
                return 1;
        }
        return 0;
}
