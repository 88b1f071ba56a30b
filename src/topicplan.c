/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topicplan.c — the topics a configuration needs and the judgement of what a
 * broker has (see topicplan.h for the table of roles, settings and checks).
 *
 * Values are kept as text, as the broker reports them.  Numeric checks parse
 * both sides with strtod: the bounds are far below 2^53, where a double is
 * exact, and -1 (Kafka's "unlimited") is handled before comparing.
 */
#include "topicplan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MIN_MS  (60 * 1000LL)
#define HOUR_MS (60 * MIN_MS)
#define DAY_MS  (24 * HOUR_MS)

/* Changelog (and rates) settings at creation: a segment rolls every 10
 * minutes, the cleaner runs once a tenth of the log is dirty and at the
 * latest 15 minutes after a write, tombstones stay one hour. */
#define CHANGELOG_SEGMENT_MS   (10 * MIN_MS)
#define CHANGELOG_DIRTY_RATIO  "0.1"
#define CHANGELOG_MAX_LAG_MS   (15 * MIN_MS)
#define CHANGELOG_TOMBSTONE_MS (1 * HOUR_MS)
/* Limits an existing changelog must respect. */
#define CHANGELOG_SEGMENT_MAX   DAY_MS
#define CHANGELOG_DIRTY_MAX     "0.5"
#define CHANGELOG_MAX_LAG_MAX   DAY_MS
#define CHANGELOG_MIN_LAG_MAX   HOUR_MS
#define CHANGELOG_TOMBSTONE_MAX DAY_MS
#define CHANGELOG_TOMBSTONE_MIN MIN_MS
#define DLQ_RETENTION_MS        (7 * DAY_MS)

static char *strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *strfmt(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                sl_assert(!"out of memory");
        return s;
}

/*
 * Plan
 */

void sl_topicplan_spec_set(sl_topic_spec_t *spec, const char *key,
                           const char *value, sl_tcheck_t check,
                           const char *bound, const char *why) {
        sl_topic_setting_t *s;

        sl_assert(spec->setting_cnt < SL_TOPIC_SETTINGS_MAX);
        s = &spec->settings[spec->setting_cnt++];
        s->key = key;
        snprintf(s->value, sizeof(s->value), "%s", value ? value : "");
        s->check = check;
        snprintf(s->bound, sizeof(s->bound), "%s", bound ? bound : "");
        s->why = why;
}

void sl_topicplan_spec_set_ms(sl_topic_spec_t *spec, const char *key,
                              int64_t value, sl_tcheck_t check, int64_t bound,
                              const char *why) {
        char v[24], b[24];

        snprintf(v, sizeof(v), "%" PRId64, value);
        snprintf(b, sizeof(b), "%" PRId64, bound);
        sl_topicplan_spec_set(spec, key, value >= 0 ? v : NULL, check,
                              check != SL_TCHECK_NONE ? b : NULL, why);
}

void sl_topicplan_spec_compacted(sl_topic_spec_t *spec, int checked) {
        sl_tcheck_t le = checked ? SL_TCHECK_LE : SL_TCHECK_NONE;

        sl_topicplan_spec_set(
            spec, "cleanup.policy", "compact", SL_TCHECK_EQ, "compact",
            "state is a table whose latest value per key must survive; "
            "delete would drop live state");
        sl_topicplan_spec_set_ms(
            spec, "segment.ms", CHANGELOG_SEGMENT_MS, le, CHANGELOG_SEGMENT_MAX,
            "the active segment is never compacted, so rebuild "
            "would read up to that much stale history");
        sl_topicplan_spec_set(spec, "min.cleanable.dirty.ratio",
                              CHANGELOG_DIRTY_RATIO, le,
                              checked ? CHANGELOG_DIRTY_MAX : NULL,
                              "the cleaner would wait until most of the log is "
                              "superseded records that rebuild must read");
        sl_topicplan_spec_set_ms(spec, "max.compaction.lag.ms",
                                 CHANGELOG_MAX_LAG_MS, le,
                                 CHANGELOG_MAX_LAG_MAX,
                                 "superseded records and tombstones could wait "
                                 "indefinitely for compaction");
        sl_topicplan_spec_set_ms(
            spec, "min.compaction.lag.ms", 0, le, CHANGELOG_MIN_LAG_MAX,
            "recent updates would stay uncompacted that long");
        sl_topicplan_spec_set_ms(spec, "delete.retention.ms",
                                 CHANGELOG_TOMBSTONE_MS, le,
                                 CHANGELOG_TOMBSTONE_MAX,
                                 "tombstones kept for days slow every rebuild");
        if (checked)
                sl_topicplan_spec_set_ms(
                    spec, "delete.retention.ms", -1, SL_TCHECK_GE,
                    CHANGELOG_TOMBSTONE_MIN,
                    "a rebuild running while the cleaner purges a "
                    "tombstone could miss it and revive the state");
}

static sl_topic_spec_t *spec_add(sl_topicplan_t *plan, int *alloc,
                                 const char *pipeline, const sl_roledef_t *role,
                                 const char *name, int input_idx, int rf) {
        sl_topic_spec_t *spec;

        if (plan->cnt == *alloc) {
                *alloc = *alloc ? *alloc * 2 : 8;
                plan->specs =
                    sl_realloc(plan->specs, sizeof(*plan->specs) * *alloc);
        }
        spec = &plan->specs[plan->cnt];
        memset(spec, 0, sizeof(*spec));
        spec->name =
            name ? sl_strdup(name) : strfmt("%s.%s", pipeline, role->name);
        spec->pipeline = sl_strdup(pipeline);
        spec->def = role;
        spec->input_idx = input_idx < 0 ? plan->cnt : input_idx;
        spec->replication_factor = rf;
        plan->cnt++;
        return spec;
}

/* An optional name: NULL when unset or empty. */
static const char *opt(const char *s) {
        return s && *s ? s : NULL;
}

/* The settings of the roles every pipeline has; an operator's own roles
 * bring theirs (sl_roledef_t.settings). */
static void shared_settings(sl_topic_spec_t *s) {
        if (s->def == &sl_role_changelog) {
                sl_topicplan_spec_compacted(s, 1);
        } else if (s->def == &sl_role_dlq) {
                sl_topicplan_spec_set(s, "cleanup.policy", "delete",
                                      SL_TCHECK_EQ, "delete",
                                      "compaction would drop all but the last "
                                      "bad record per key");
                sl_topicplan_spec_set_ms(s, "retention.ms", DLQ_RETENTION_MS,
                                         SL_TCHECK_NONE, 0, NULL);
        }
}

/* One spec per topic of the pipeline (sl_pipeline_topics()), the input
 * first. */
static void pipeline_plan(sl_topicplan_t *plan, int *alloc,
                          const sl_pipeline_conf_t *p) {
        sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
        int n = sl_pipeline_topics(p, ts);
        int rf = p->replication_factor;
        int in = plan->cnt;
        const char *pn = p->name ? p->name : "?";

        for (int i = 0; i < n; i++) {
                const sl_roledef_t *r = ts[i].role;
                sl_topic_spec_t *s = spec_add(plan, alloc, pn, r,
                                              opt(ts[i].name), i ? in : -1, rf);
                if (r->flags & SL_ROLE_INPUT)
                        s->create_parts =
                            p->input_partitions > 0 ? p->input_partitions : 0;
                if (r->flags & SL_ROLE_COPART)
                        s->match_input = 1;
                if (r->create_parts > 0)
                        s->create_parts = r->create_parts;
                shared_settings(s);
                if (r->settings)
                        r->settings(s, p);
        }
}

/* Two specs may share a topic only when that can work: pipelines chained
 * through a topic (one's output is another's input), pipelines reading one
 * input, or a DLQ shared by pipelines.  sluice's own state topics are never
 * shared, and within a pipeline every role has its own topic. */
static int may_share(const sl_topic_spec_t *a, const sl_topic_spec_t *b) {
        unsigned ext = SL_ROLE_INPUT | SL_ROLE_OUTPUT;
        int a_ext = !!(a->def->flags & ext), b_ext = !!(b->def->flags & ext);

        if (!strcmp(a->pipeline, b->pipeline))
                return 0;
        if (a_ext && b_ext)
                return 1;
        return a->def == &sl_role_dlq && b->def == &sl_role_dlq;
}

static void find_conflicts(sl_topicplan_t *plan) {
        for (int i = 0; i < plan->cnt; i++) {
                sl_topic_spec_t *a = &plan->specs[i];
                for (int j = i + 1; j < plan->cnt; j++) {
                        sl_topic_spec_t *b = &plan->specs[j];
                        if (strcmp(a->name, b->name) || may_share(a, b))
                                continue;
                        if (!a->conflict)
                                a->conflict =
                                    strfmt("also the %s of pipeline %s",
                                           b->def->name, b->pipeline);
                        if (!b->conflict)
                                b->conflict =
                                    strfmt("also the %s of pipeline %s",
                                           a->def->name, a->pipeline);
                }
        }
}

sl_topicplan_t *sl_topicplan_new(const sl_conf_t *conf) {
        sl_topicplan_t *plan = sl_calloc(1, sizeof(*plan));
        int alloc = 0;

        for (int i = 0; conf && i < conf->pipeline_cnt; i++)
                pipeline_plan(plan, &alloc, &conf->pipelines[i]);
        find_conflicts(plan);
        return plan;
}

void sl_topicplan_destroy(sl_topicplan_t *plan) {
        if (!plan)
                return;
        for (int i = 0; i < plan->cnt; i++) {
                free(plan->specs[i].name);
                free(plan->specs[i].pipeline);
                free(plan->specs[i].conflict);
        }
        free(plan->specs);
        free(plan);
}

int sl_topicplan_names(const sl_topicplan_t *plan, const char **names) {
        int cnt = 0;

        for (int i = 0; i < plan->cnt; i++) {
                int seen = 0;
                for (int j = 0; j < cnt && !seen; j++)
                        seen = !strcmp(names[j], plan->specs[i].name);
                if (!seen)
                        names[cnt++] = plan->specs[i].name;
        }
        return cnt;
}

/*
 * Observed state
 */

sl_topics_observed_t *sl_topicplan_observed_new(void) {
        return sl_calloc(1, sizeof(sl_topics_observed_t));
}

sl_topic_state_t *sl_topicplan_observed_add(sl_topics_observed_t *obs,
                                            const char *name, int exists,
                                            int partitions) {
        sl_topic_state_t *st;

        obs->topics =
            sl_realloc(obs->topics, sizeof(*obs->topics) * (obs->cnt + 1));
        st = &obs->topics[obs->cnt++];
        memset(st, 0, sizeof(*st));
        st->name = sl_strdup(name);
        st->exists = exists;
        st->partitions = exists ? partitions : 0;
        return st;
}

void sl_topicplan_state_set_config(sl_topic_state_t *st, const char *key,
                                   const char *value, int is_set) {
        sl_topic_conf_entry_t *e;

        st->configs = sl_realloc(st->configs,
                                 sizeof(*st->configs) * (st->config_cnt + 1));
        e = &st->configs[st->config_cnt++];
        e->key = sl_strdup(key);
        e->value = value ? sl_strdup(value) : NULL;
        e->is_set = is_set;
        st->described = 1;
}

void sl_topicplan_observed_destroy(sl_topics_observed_t *obs) {
        if (!obs)
                return;
        for (int i = 0; i < obs->cnt; i++) {
                sl_topic_state_t *st = &obs->topics[i];
                for (int j = 0; j < st->config_cnt; j++) {
                        free(st->configs[j].key);
                        free(st->configs[j].value);
                }
                free(st->configs);
                free(st->name);
                free(st->error);
        }
        free(obs->topics);
        free(obs);
}

const sl_topic_state_t *
sl_topicplan_observed_find(const sl_topics_observed_t *obs, const char *name) {
        for (int i = 0; obs && i < obs->cnt; i++)
                if (!strcmp(obs->topics[i].name, name))
                        return &obs->topics[i];
        return NULL;
}

const char *sl_topicplan_state_config(const sl_topic_state_t *st,
                                      const char *key) {
        for (int i = 0; i < st->config_cnt; i++)
                if (!strcmp(st->configs[i].key, key))
                        return st->configs[i].value;
        return NULL;
}

/*
 * Evaluation
 */

static void problem_as(sl_topic_verdict_t *v, char *text, int drift) {
        v->problems = sl_realloc(v->problems,
                                 sizeof(*v->problems) * (v->problem_cnt + 1));
        v->drift = sl_realloc(v->drift, v->problem_cnt + 1);
        v->drift[v->problem_cnt] = (unsigned char)!!drift;
        v->problems[v->problem_cnt++] = text;
        v->drift_cnt += !!drift;
}

static void problem(sl_topic_verdict_t *v, char *text) {
        problem_as(v, text, 0);
}

/* A config value or replica count that differs: sluice works with it. */
static void drift(sl_topic_verdict_t *v, char *text) {
        problem_as(v, text, 1);
}

static int parse_num(const char *s, double *out) {
        char *end;

        errno = 0;
        *out = strtod(s, &end);
        return end != s && !*end && !errno ? 0 : -1;
}

/* Returns NULL when value passes the setting's check, else the problem. */
static char *judge(const sl_topic_setting_t *s, const char *value) {
        double v, b;

        if (s->check == SL_TCHECK_NONE)
                return NULL;
        if (!value)
                return strfmt("%s: not reported by the broker", s->key);
        if (s->check == SL_TCHECK_EQ) {
                if (!strcmp(value, s->bound))
                        return NULL;
                return strfmt("%s is %s, want %s: %s", s->key, value, s->bound,
                              s->why);
        }
        if (parse_num(value, &v) == -1)
                return strfmt("%s is '%s', not a number", s->key, value);
        sl_assert(parse_num(s->bound, &b) == 0);
        if (s->check == SL_TCHECK_LE) {
                if (v != -1 && v <= b)
                        return NULL;
                return strfmt("%s is %s%s, want <= %s: %s", s->key, value,
                              v == -1 ? " (unlimited)" : "", s->bound, s->why);
        }
        if (v == -1 || v >= b)
                return NULL;
        return strfmt("%s is %s, want >= %s: %s", s->key, value, s->bound,
                      s->why);
}

static void judge_existing(const sl_topicplan_t *plan,
                           const sl_topics_observed_t *obs,
                           const sl_topic_spec_t *spec,
                           const sl_topic_state_t *st, sl_topic_verdict_t *v) {
        if (spec->match_input) {
                const sl_topic_spec_t *in = &plan->specs[spec->input_idx];
                const sl_topic_state_t *ist =
                    sl_topicplan_observed_find(obs, in->name);
                if (ist && ist->exists && ist->partitions > st->partitions) {
                        v->grow_parts = ist->partitions;
                        problem(v, strfmt("has %d partitions, want %d like "
                                          "its input %s (apply adds them)",
                                          st->partitions, ist->partitions,
                                          in->name));
                } else if (ist && ist->exists &&
                           ist->partitions < st->partitions) {
                        problem(v, strfmt("has %d partitions, want %d like "
                                          "its input %s (partitions cannot "
                                          "be removed: grow the input to %d)",
                                          st->partitions, ist->partitions,
                                          in->name, st->partitions));
                }
        }
        if (spec->replication_factor > 0 && st->replicas > 0 &&
            st->replicas != spec->replication_factor)
                drift(v, strfmt("has %d replicas, want %d "
                                "(replication_factor; apply does not "
                                "change it: kafka-reassign-partitions does)",
                                st->replicas, spec->replication_factor));
        if (spec->def->flags & SL_ROLE_WRITE && st->replicas > 0 &&
            st->described) {
                const char *mir =
                    sl_topicplan_state_config(st, "min.insync.replicas");
                double n;
                if (mir && !parse_num(mir, &n) && n > st->replicas)
                        problem(v, strfmt("min.insync.replicas is %s but it "
                                          "has %d replicas: every write "
                                          "sluice makes to it (acks=all) "
                                          "fails with NOT_ENOUGH_REPLICAS",
                                          mir, st->replicas));
        }
        /* Run as sluice's principal, check needs DescribeConfigs on
         * every topic (`sluice acls`), settings or not. */
        if (!st->described && st->error &&
            !strncmp(st->error, "not authorized", 14)) {
                problem(v, strfmt("%s", st->error));
                return;
        }
        if (!spec->setting_cnt)
                return;
        if (!st->described) {
                problem(v, strfmt("configs unknown: %s",
                                  st->error ? st->error : "not described"));
                return;
        }
        for (int i = 0; i < spec->setting_cnt; i++) {
                const sl_topic_setting_t *s = &spec->settings[i];
                const char *value = sl_topicplan_state_config(st, s->key);
                char *p = judge(s, value);
                /* A value the broker hides is not known to differ. */
                if (p)
                        problem_as(v, p, value != NULL);
        }
}

/* A missing topic: can apply create it, and with how many partitions? */
static void judge_missing(const sl_topicplan_t *plan,
                          const sl_topics_observed_t *obs,
                          const sl_topic_spec_t *spec, sl_topic_verdict_t *v) {
        const sl_topic_spec_t *in = &plan->specs[spec->input_idx];
        const sl_topic_state_t *ist = sl_topicplan_observed_find(obs, in->name);

        if (spec->def->flags & SL_ROLE_OUTPUT) {
                problem(v, strfmt("missing: sluice does not create output "
                                  "topics; create it yourself"));
        } else if (spec->def->flags & SL_ROLE_INPUT) {
                if (spec->create_parts > 0) {
                        v->create_parts = spec->create_parts;
                        problem(v, strfmt("missing (apply creates it with %d "
                                          "partitions: input_partitions)",
                                          v->create_parts));
                } else {
                        problem(v, strfmt("missing: create the input topic or "
                                          "set input_partitions"));
                }
        } else if (!spec->match_input) {
                v->create_parts = spec->create_parts;
                problem(v, strfmt("missing (apply creates it with %d "
                                  "partitions)",
                                  v->create_parts));
        } else if (ist && ist->exists) {
                v->create_parts = ist->partitions;
                problem(v, strfmt("missing (apply creates it with %d "
                                  "partitions like its input)",
                                  v->create_parts));
        } else if (in->create_parts > 0) {
                v->create_parts = in->create_parts;
                problem(v, strfmt("missing (apply creates it with %d "
                                  "partitions like its input)",
                                  v->create_parts));
        } else {
                problem(v, strfmt("missing, and its partition count is "
                                  "unknown until the input %s exists",
                                  in->name));
        }
}

sl_topicplan_eval_t *sl_topicplan_eval(const sl_topicplan_t *plan,
                                       const sl_topics_observed_t *obs) {
        sl_topicplan_eval_t *ev = sl_calloc(1, sizeof(*ev));

        ev->verdicts = sl_calloc(plan->cnt, sizeof(*ev->verdicts));
        ev->cnt = plan->cnt;
        for (int i = 0; i < plan->cnt; i++) {
                const sl_topic_spec_t *spec = &plan->specs[i];
                const sl_topic_state_t *st =
                    sl_topicplan_observed_find(obs, spec->name);
                sl_topic_verdict_t *v = &ev->verdicts[i];

                v->spec = spec;
                if (spec->conflict) {
                        v->status =
                            st && st->exists ? SL_TOPIC_BAD : SL_TOPIC_MISSING;
                        problem(v, strfmt("%s%s", spec->conflict,
                                          v->status == SL_TOPIC_MISSING
                                              ? " (not created)"
                                              : ""));
                        continue;
                }
                if (!st || !st->exists) {
                        v->status = SL_TOPIC_MISSING;
                        judge_missing(plan, obs, spec, v);
                        continue;
                }
                judge_existing(plan, obs, spec, st, v);
                v->status = v->problem_cnt ? SL_TOPIC_BAD : SL_TOPIC_OK;
        }
        return ev;
}

void sl_topicplan_eval_destroy(sl_topicplan_eval_t *ev) {
        if (!ev)
                return;
        for (int i = 0; i < ev->cnt; i++) {
                for (int j = 0; j < ev->verdicts[i].problem_cnt; j++)
                        free(ev->verdicts[i].problems[j]);
                free(ev->verdicts[i].problems);
                free(ev->verdicts[i].drift);
        }
        free(ev->verdicts);
        free(ev);
}

int sl_topicplan_eval_problems(const sl_topicplan_eval_t *ev,
                               int count_missing) {
        int n = 0;

        for (int i = 0; i < ev->cnt; i++) {
                const sl_topic_verdict_t *v = &ev->verdicts[i];
                if (v->status == SL_TOPIC_MISSING && v->create_parts > 0 &&
                    !count_missing)
                        continue;
                n += v->problem_cnt;
        }
        return n;
}

int sl_topicplan_copart_problem(char *buf, size_t size, const char *pipeline,
                                const char *r, const char *topic, int have,
                                const char *input, int want) {

        if (have <= 0)
                return snprintf(buf, size,
                                "pipeline %s: %s topic %s is missing; run "
                                "`sluice topics apply` to create it with %d "
                                "partitions like its input %s",
                                pipeline, r, topic, want, input);
        if (have < want)
                return snprintf(buf, size,
                                "pipeline %s: %s topic %s has %d partitions, "
                                "its input %s has %d; run `sluice topics "
                                "apply` (it adds the missing partitions) or "
                                "kafka-topics --alter --topic %s "
                                "--partitions %d",
                                pipeline, r, topic, have, input, want, topic,
                                want);
        if (have > want)
                return snprintf(buf, size,
                                "pipeline %s: %s topic %s has %d partitions, "
                                "its input %s has %d; partitions cannot be "
                                "removed: grow the input with kafka-topics "
                                "--alter --topic %s --partitions %d",
                                pipeline, r, topic, have, input, want, input,
                                have);
        return snprintf(buf, size, "pipeline %s: %s topic %s matches its input",
                        pipeline, r, topic);
}
