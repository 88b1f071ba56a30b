/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_topics.c — the pure half of topic management (topicplan.c): which
 * topics a config needs, with which settings, and the problems found in
 * hand-built broker states.  No broker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opdef_debounce.h"
#include "opdef_delay.h"
#include "opdef_throttle.h"
#include "topicplan.h"

#define HOUR_MS 3600000LL

/* A conf with up to four pipelines, built by hand (no config.c). */
typedef struct {
        sl_conf_t conf;
        sl_pipeline_conf_t p[4];
        union {
                sl_throttle_conf_t t;
                sl_delay_conf_t d;
                sl_debounce_conf_t b;
        } params[4];
} conf_t;

/* The operator's keys of a pipeline built by add_pipeline(). */
static sl_throttle_conf_t *tconf(sl_pipeline_conf_t *p) {
        return p->params;
}

static sl_delay_conf_t *dconf(sl_pipeline_conf_t *p) {
        return p->params;
}

static sl_pipeline_conf_t *add_pipeline(conf_t *c, const char *name,
                                        sl_op_type_t type, const char *input) {
        int i = c->conf.pipeline_cnt++;
        sl_pipeline_conf_t *p = &c->p[i];

        memset(p, 0, sizeof(*p));
        memset(&c->params[i], 0, sizeof(c->params[i]));
        p->name = (char *)name;
        p->type = type;
        p->params = &c->params[i];
        p->input = (char *)input;
        p->replication_factor = -1;
        if (type == SL_OP_THROTTLE)
                tconf(p)->ttl_ms = 6 * HOUR_MS;
        c->conf.pipelines = c->p;
        return p;
}

static const sl_topic_spec_t *spec_of(const sl_topicplan_t *plan,
                                      const char *pipeline, const char *role) {
        for (int i = 0; i < plan->cnt; i++)
                if (!strcmp(plan->specs[i].pipeline, pipeline) &&
                    !strcmp(plan->specs[i].def->name, role))
                        return &plan->specs[i];
        return NULL;
}

static const sl_topic_verdict_t *verdict_of(const sl_topicplan_eval_t *ev,
                                            const char *name) {
        for (int i = 0; i < ev->cnt; i++)
                if (!strcmp(ev->verdicts[i].spec->name, name))
                        return &ev->verdicts[i];
        return NULL;
}

/* The value the spec sets at creation for key, or NULL. */
static const char *create_value(const sl_topic_spec_t *s, const char *key) {
        for (int i = 0; i < s->setting_cnt; i++)
                if (!strcmp(s->settings[i].key, key) && s->settings[i].value[0])
                        return s->settings[i].value;
        return NULL;
}

/* 1 when one of v's problems contains needle. */
static int has_problem(const sl_topic_verdict_t *v, const char *needle) {
        for (int i = 0; i < v->problem_cnt; i++)
                if (strstr(v->problems[i], needle))
                        return 1;
        return 0;
}

/* v's drift flag for its problem containing needle; -1 when none does. */
static int drift_of(const sl_topic_verdict_t *v, const char *needle) {
        for (int i = 0; i < v->problem_cnt; i++)
                if (strstr(v->problems[i], needle))
                        return v->drift[i];
        return -1;
}

/* Observed state of a topic created exactly as spec says. */
static sl_topic_state_t *add_as_created(sl_topics_observed_t *obs,
                                        const sl_topic_spec_t *s, int parts) {
        sl_topic_state_t *st =
            sl_topicplan_observed_add(obs, s->name, 1, parts);

        for (int i = 0; i < s->setting_cnt; i++)
                if (s->settings[i].value[0] &&
                    !sl_topicplan_state_config(st, s->settings[i].key))
                        sl_topicplan_state_set_config(st, s->settings[i].key,
                                                      s->settings[i].value, 1);
        /* Broker defaults for what the spec leaves alone. */
        if (!sl_topicplan_state_config(st, "retention.bytes"))
                sl_topicplan_state_set_config(st, "retention.bytes", "-1", 0);
        sl_topicplan_state_set_config(st, "compression.type", "producer", 0);
        return st;
}

/* Replaces (or adds) one config value in st. */
static void set_conf(sl_topic_state_t *st, const char *key, const char *val) {
        for (int i = 0; i < st->config_cnt; i++)
                if (!strcmp(st->configs[i].key, key)) {
                        free(st->configs[i].value);
                        st->configs[i].value = strdup(val);
                        return;
                }
        sl_topicplan_state_set_config(st, key, val, 1);
}

static void test_plan_throttle(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        const sl_topic_spec_t *s;
        (void)state;

        p = add_pipeline(&c, "notify", SL_OP_THROTTLE, "notify.in");
        p->output = "notify.out";
        p->dlq = "notify.dlq";
        p->replication_factor = 3;
        plan = sl_topicplan_new(&c.conf);
        assert_int_equal(plan->cnt, 6);

        s = spec_of(plan, "notify", "input");
        assert_string_equal(s->name, "notify.in");
        assert_int_equal(s->create_parts, 0);
        assert_int_equal(s->setting_cnt, 0);

        /* NULL names default to <pipeline>.<role>. */
        s = spec_of(plan, "notify", "changelog");
        assert_string_equal(s->name, "notify.changelog");
        assert_true(s->match_input);
        assert_int_equal(s->replication_factor, 3);
        assert_string_equal(create_value(s, "cleanup.policy"), "compact");
        assert_string_equal(create_value(s, "segment.ms"), "600000");
        assert_string_equal(create_value(s, "min.cleanable.dirty.ratio"),
                            "0.1");
        assert_string_equal(create_value(s, "max.compaction.lag.ms"), "900000");
        assert_string_equal(create_value(s, "min.compaction.lag.ms"), "0");
        assert_string_equal(create_value(s, "delete.retention.ms"), "3600000");

        s = spec_of(plan, "notify", "overflow");
        assert_string_equal(s->name, "notify.overflow");
        assert_true(s->match_input);
        assert_string_equal(create_value(s, "cleanup.policy"), "delete");
        /* ttl 6h + 1h margin */
        assert_string_equal(create_value(s, "retention.ms"), "25200000");
        assert_string_equal(create_value(s, "retention.bytes"), "-1");

        s = spec_of(plan, "notify", "rates");
        assert_string_equal(s->name, "notify.rates");
        assert_false(s->match_input);
        assert_int_equal(s->create_parts, 1);
        assert_string_equal(create_value(s, "cleanup.policy"), "compact");

        s = spec_of(plan, "notify", "dlq");
        assert_string_equal(s->name, "notify.dlq");
        assert_true(s->match_input);
        assert_string_equal(create_value(s, "cleanup.policy"), "delete");
        assert_string_equal(create_value(s, "retention.ms"), "604800000");

        s = spec_of(plan, "notify", "output");
        assert_string_equal(s->name, "notify.out");
        assert_int_equal(s->create_parts, 0);
        sl_topicplan_destroy(plan);
}

static void test_plan_delay_debounce(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        const char *names[16];
        (void)state;

        p = add_pipeline(&c, "reminders", SL_OP_DELAY, "reminders.in");
        p->changelog = "rem.state";
        dconf(p)->default_target = (char *)"reminders.due";
        /* dlq NULL: none */
        p = add_pipeline(&c, "transfers", SL_OP_DEBOUNCE, "transfers.in");
        p->output = "transfers.batches";
        p->dlq = "transfers.dlq";
        p->input_partitions = 4;
        plan = sl_topicplan_new(&c.conf);

        assert_int_equal(plan->cnt, 3 + 4);
        assert_string_equal(spec_of(plan, "reminders", "changelog")->name,
                            "rem.state");
        assert_null(spec_of(plan, "reminders", "dlq"));
        assert_null(spec_of(plan, "reminders", "overflow"));
        assert_null(spec_of(plan, "reminders", "rates"));
        assert_string_equal(spec_of(plan, "reminders", "output")->name,
                            "reminders.due");
        assert_null(spec_of(plan, "transfers", "overflow"));
        assert_int_equal(spec_of(plan, "transfers", "input")->create_parts, 4);
        assert_int_equal(sl_topicplan_names(plan, names), 7);
        assert_string_equal(names[0], "reminders.in");
        sl_topicplan_destroy(plan);
}

/* A delay pipeline's payload_topic is planned beside its changelog, with
 * the input's partitions and the changelog's settings at creation; an
 * existing one is judged on its policy only, and grows with its input.
 * Without payload_topic there is none. */
static void test_plan_payloads(void **state) {
        static const char *const keys[] = {"cleanup.policy",
                                           "segment.ms",
                                           "min.cleanable.dirty.ratio",
                                           "max.compaction.lag.ms",
                                           "min.compaction.lag.ms",
                                           "delete.retention.ms"};
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        const sl_topic_spec_t *s, *cl;
        const sl_topic_verdict_t *v;
        sl_topic_state_t *st;
        (void)state;

        p = add_pipeline(&c, "rem", SL_OP_DELAY, "rem.in");
        p->dlq = "rem.dlq";
        dconf(p)->payload_topic = (char *)"rem.payloads";
        p = add_pipeline(&c, "soon", SL_OP_DELAY, "soon.in");
        plan = sl_topicplan_new(&c.conf);
        assert_int_equal(plan->cnt, 4 + 2);
        /* The walk's order: after the changelog, before the dlq. */
        assert_string_equal(plan->specs[2].name, "rem.payloads");
        assert_string_equal(plan->specs[3].name, "rem.dlq");
        assert_null(spec_of(plan, "soon", "payloads"));

        s = spec_of(plan, "rem", "payloads");
        cl = spec_of(plan, "rem", "changelog");
        assert_true(s->match_input);
        assert_int_equal(s->create_parts, 0);
        assert_true(s->def->flags & SL_ROLE_INTERNAL);
        assert_true(s->def->flags & SL_ROLE_READ);
        assert_true(s->def->flags & SL_ROLE_WRITE);
        for (size_t i = 0; i < SL_ARRAY_SIZE(keys); i++) {
                assert_non_null(create_value(s, keys[i]));
                assert_string_equal(create_value(s, keys[i]),
                                    create_value(cl, keys[i]));
        }

        /* Missing: created with the input's partitions. */
        sl_topicplan_observed_add(obs, "rem.in", 1, 4);
        ev = sl_topicplan_eval(plan, obs);
        v = verdict_of(ev, "rem.payloads");
        assert_int_equal(v->status, SL_TOPIC_MISSING);
        assert_int_equal(v->create_parts, 4);
        sl_topicplan_eval_destroy(ev);

        /* Existing: the policy is checked, the cleaning pace is not; fewer
         * partitions than the input are added. */
        st = add_as_created(obs, s, 2);
        set_conf(st, "segment.ms", "604800000");
        set_conf(st, "delete.retention.ms", "86400000");
        ev = sl_topicplan_eval(plan, obs);
        v = verdict_of(ev, "rem.payloads");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_int_equal(v->problem_cnt, 1);
        assert_int_equal(v->grow_parts, 4);
        sl_topicplan_eval_destroy(ev);
        set_conf(st, "cleanup.policy", "delete");
        ev = sl_topicplan_eval(plan, obs);
        v = verdict_of(ev, "rem.payloads");
        assert_int_equal(v->problem_cnt, 2);
        assert_true(has_problem(v, "cleanup.policy is delete, want compact"));
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* Nothing exists but the input: apply creates the internal topics with the
 * input's partition count, the rates with 1, and cannot create the output. */
static void test_eval_missing(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        const sl_topic_verdict_t *v;
        (void)state;

        p = add_pipeline(&c, "notify", SL_OP_THROTTLE, "notify.in");
        p->output = "notify.out";
        p->dlq = "notify.dlq";
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "notify.in", 1, 3);
        sl_topicplan_observed_add(obs, "notify.changelog", 0, 0);
        ev = sl_topicplan_eval(plan, obs);

        assert_int_equal(verdict_of(ev, "notify.in")->status, SL_TOPIC_OK);
        v = verdict_of(ev, "notify.changelog");
        assert_int_equal(v->status, SL_TOPIC_MISSING);
        assert_int_equal(v->create_parts, 3);
        assert_int_equal(verdict_of(ev, "notify.overflow")->create_parts, 3);
        assert_int_equal(verdict_of(ev, "notify.dlq")->create_parts, 3);
        assert_int_equal(verdict_of(ev, "notify.rates")->create_parts, 1);
        v = verdict_of(ev, "notify.out");
        assert_int_equal(v->status, SL_TOPIC_MISSING);
        assert_int_equal(v->create_parts, 0);
        assert_true(has_problem(v, "does not create output"));
        /* apply: only the output is a problem; check: all five. */
        assert_int_equal(sl_topicplan_eval_problems(ev, 0), 1);
        assert_int_equal(sl_topicplan_eval_problems(ev, 1), 5);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

static void test_eval_missing_input(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p, *q;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        const sl_topic_verdict_t *v;
        (void)state;

        p = add_pipeline(&c, "a", SL_OP_DELAY, "a.in");
        p->dlq = "a.dlq";
        q = add_pipeline(&c, "b", SL_OP_DEBOUNCE, "b.in");
        q->output = "b.out";
        q->input_partitions = 6;
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "b.out", 1, 1);
        ev = sl_topicplan_eval(plan, obs);

        /* a: no input_partitions: nothing can be created. */
        v = verdict_of(ev, "a.in");
        assert_int_equal(v->status, SL_TOPIC_MISSING);
        assert_int_equal(v->create_parts, 0);
        assert_true(has_problem(v, "input_partitions"));
        v = verdict_of(ev, "a.changelog");
        assert_int_equal(v->create_parts, 0);
        assert_true(has_problem(v, "unknown until the input a.in exists"));
        assert_int_equal(verdict_of(ev, "a.dlq")->create_parts, 0);

        /* b: the input is created with input_partitions, the rest alike. */
        assert_int_equal(verdict_of(ev, "b.in")->create_parts, 6);
        assert_int_equal(verdict_of(ev, "b.changelog")->create_parts, 6);
        assert_int_equal(verdict_of(ev, "b.out")->status, SL_TOPIC_OK);
        assert_int_equal(sl_topicplan_eval_problems(ev, 0), 3);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* Topics created as planned pass their own checks; a broker default that
 * differs (retention.bytes) does not matter where it is not checked. */
static void test_eval_as_created_ok(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        (void)state;

        p = add_pipeline(&c, "notify", SL_OP_THROTTLE, "notify.in");
        p->output = "notify.out";
        p->dlq = "notify.dlq";
        p = add_pipeline(&c, "rem", SL_OP_DELAY, "rem.in");
        plan = sl_topicplan_new(&c.conf);
        for (int i = 0; i < plan->cnt; i++) {
                const sl_topic_spec_t *s = &plan->specs[i];
                add_as_created(obs, s, !strcmp(s->def->name, "rates") ? 1 : 8);
        }
        ev = sl_topicplan_eval(plan, obs);
        for (int i = 0; i < ev->cnt; i++) {
                const sl_topic_verdict_t *v = &ev->verdicts[i];
                if (v->problem_cnt)
                        fail_msg("%s: %s", v->spec->name, v->problems[0]);
                assert_int_equal(v->status, SL_TOPIC_OK);
        }
        assert_int_equal(sl_topicplan_eval_problems(ev, 1), 0);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* Replicas: as many as replication_factor when it is set, and never fewer
 * than min.insync.replicas on a topic sluice writes (every acks=all write
 * would fail).  Inputs are the producers' business. */
static void test_eval_replicas(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        sl_topic_state_t *st;
        (void)state;

        p = add_pipeline(&c, "rem", SL_OP_DELAY, "rem.in");
        p->replication_factor = 3;
        p->dlq = "rem.dlq";
        plan = sl_topicplan_new(&c.conf);
        for (int i = 0; i < plan->cnt; i++) {
                const sl_topic_spec_t *s = &plan->specs[i];
                st = add_as_created(obs, s, 4);
                st->described = 1;
                st->replicas = 3;
                set_conf(st, "min.insync.replicas", "2");
        }
        ev = sl_topicplan_eval(plan, obs);
        assert_int_equal(sl_topicplan_eval_problems(ev, 1), 0);
        sl_topicplan_eval_destroy(ev);

        /* The changelog lost two replicas; the input has a high
         * min.insync.replicas too, which is not sluice's to judge. */
        for (int i = 0; i < obs->cnt; i++) {
                st = &obs->topics[i];
                if (!strcmp(st->name, "rem.changelog") ||
                    !strcmp(st->name, "rem.in"))
                        st->replicas = 1;
        }
        ev = sl_topicplan_eval(plan, obs);
        assert_true(has_problem(verdict_of(ev, "rem.changelog"),
                                "has 1 replicas, want 3"));
        assert_true(has_problem(verdict_of(ev, "rem.changelog"),
                                "NOT_ENOUGH_REPLICAS"));
        assert_true(
            has_problem(verdict_of(ev, "rem.in"), "has 1 replicas, want 3"));
        assert_false(
            has_problem(verdict_of(ev, "rem.in"), "NOT_ENOUGH_REPLICAS"));
        assert_int_equal(verdict_of(ev, "rem.dlq")->problem_cnt, 0);
        /* Fewer replicas than planned is drift (apply warns); writes that
         * cannot succeed are not. */
        assert_int_equal(
            drift_of(verdict_of(ev, "rem.changelog"), "has 1 replicas, want 3"),
            1);
        assert_int_equal(
            drift_of(verdict_of(ev, "rem.changelog"), "NOT_ENOUGH_REPLICAS"),
            0);
        assert_int_equal(verdict_of(ev, "rem.changelog")->drift_cnt, 1);
        sl_topicplan_eval_destroy(ev);

        /* replication_factor unset (-1): any count is fine, but
         * min.insync.replicas above it still is not. */
        sl_topicplan_destroy(plan);
        p->replication_factor = -1;
        plan = sl_topicplan_new(&c.conf);
        ev = sl_topicplan_eval(plan, obs);
        assert_int_equal(verdict_of(ev, "rem.in")->problem_cnt, 0);
        assert_int_equal(verdict_of(ev, "rem.changelog")->problem_cnt, 1);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* Every mismatch of one topic is reported, each naming what is wrong. */
static void test_eval_mismatches(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        sl_topic_state_t *st;
        const sl_topic_verdict_t *v;
        (void)state;

        p = add_pipeline(&c, "n", SL_OP_THROTTLE, "n.in");
        p->output = "n.out";
        p->dlq = "n.dlq";
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "n.in", 1, 4);
        sl_topicplan_observed_add(obs, "n.out", 1, 1);
        st = add_as_created(obs, spec_of(plan, "n", "changelog"), 2);
        set_conf(st, "cleanup.policy", "delete");
        st = add_as_created(obs, spec_of(plan, "n", "overflow"), 4);
        set_conf(st, "cleanup.policy", "compact");
        set_conf(st, "retention.ms", "3600000");
        set_conf(st, "retention.bytes", "1073741824");
        /* rates: any partition count */
        add_as_created(obs, spec_of(plan, "n", "rates"), 5);
        st = add_as_created(obs, spec_of(plan, "n", "dlq"), 4);
        set_conf(st, "cleanup.policy", "compact,delete");
        ev = sl_topicplan_eval(plan, obs);

        v = verdict_of(ev, "n.changelog");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_int_equal(v->problem_cnt, 2);
        assert_true(has_problem(v, "has 2 partitions, want 4 like its input "
                                   "n.in (apply adds them)"));
        assert_true(has_problem(v, "cleanup.policy is delete, want compact"));
        assert_int_equal(v->grow_parts, 4);
        /* A config value is drift; a partition count is not. */
        assert_int_equal(drift_of(v, "cleanup.policy is delete"), 1);
        assert_int_equal(drift_of(v, "has 2 partitions"), 0);
        assert_int_equal(v->drift_cnt, 1);

        v = verdict_of(ev, "n.overflow");
        assert_int_equal(v->problem_cnt, 3);
        assert_int_equal(v->grow_parts, 0);
        assert_true(has_problem(v, "cleanup.policy is compact, want delete"));
        assert_true(has_problem(v, "retention.ms is 3600000, want >= "
                                   "21600000"));
        assert_true(has_problem(v, "retention.bytes is 1073741824, want -1"));
        assert_int_equal(v->drift_cnt, 3);

        assert_int_equal(verdict_of(ev, "n.rates")->status, SL_TOPIC_OK);
        v = verdict_of(ev, "n.dlq");
        assert_int_equal(v->problem_cnt, 1);
        assert_true(has_problem(v, "cleanup.policy is compact,delete"));
        assert_int_equal(sl_topicplan_eval_problems(ev, 1), 6);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* Co-partitioned topics short of partitions may be grown by apply; one with
 * more than its input may not (the input must grow), and rates, an output
 * or the input itself never are. */
static void test_eval_partition_counts(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        const sl_topic_verdict_t *v;
        (void)state;

        p = add_pipeline(&c, "g", SL_OP_THROTTLE, "g.in");
        p->output = "g.out";
        p->dlq = "g.dlq";
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "g.in", 1, 3);
        sl_topicplan_observed_add(obs, "g.out", 1, 1);
        add_as_created(obs, spec_of(plan, "g", "changelog"), 2);
        add_as_created(obs, spec_of(plan, "g", "overflow"), 5);
        add_as_created(obs, spec_of(plan, "g", "rates"), 1);
        add_as_created(obs, spec_of(plan, "g", "dlq"), 1);
        ev = sl_topicplan_eval(plan, obs);

        v = verdict_of(ev, "g.changelog");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_int_equal(v->grow_parts, 3);
        v = verdict_of(ev, "g.dlq");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_int_equal(v->grow_parts, 3);
        assert_true(has_problem(v, "has 1 partitions, want 3 like its input "
                                   "g.in (apply adds them)"));
        v = verdict_of(ev, "g.overflow");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_int_equal(v->grow_parts, 0);
        assert_true(has_problem(v, "partitions cannot be removed: grow the "
                                   "input to 5"));
        v = verdict_of(ev, "g.rates");
        assert_int_equal(v->status, SL_TOPIC_OK);
        assert_int_equal(v->grow_parts, 0);
        assert_int_equal(verdict_of(ev, "g.in")->grow_parts, 0);
        assert_int_equal(verdict_of(ev, "g.out")->grow_parts, 0);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

/* The sentence `sluice run` logs and puts in /readyz names the topic, both
 * counts and the command that fixes it. */
static void test_partition_problem(void **state) {
        char buf[512];
        (void)state;

        sl_topicplan_copart_problem(buf, sizeof(buf), "p", "dlq", "p.dlq", 0,
                                    "p.in", 3);
        assert_string_equal(buf, "pipeline p: dlq topic p.dlq is missing; run "
                                 "`sluice topics apply` to create it with 3 "
                                 "partitions like its input p.in");
        sl_topicplan_copart_problem(buf, sizeof(buf), "p", "changelog",
                                    "p.changelog", 2, "p.in", 3);
        assert_string_equal(
            buf, "pipeline p: changelog topic p.changelog has 2 partitions, "
                 "its input p.in has 3; run `sluice topics apply` (it adds "
                 "the missing partitions) or kafka-topics --alter --topic "
                 "p.changelog --partitions 3");
        sl_topicplan_copart_problem(buf, sizeof(buf), "p", "overflow",
                                    "p.overflow", 4, "p.in", 3);
        assert_string_equal(
            buf, "pipeline p: overflow topic p.overflow has 4 partitions, "
                 "its input p.in has 3; partitions cannot be removed: grow "
                 "the input with kafka-topics --alter --topic p.in "
                 "--partitions 4");
}

/* One changelog setting at a time against the documented thresholds. */
static int changelog_problems(const char *key, const char *value) {
        conf_t c = {0};
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        sl_topic_state_t *st;
        int n;

        add_pipeline(&c, "d", SL_OP_DELAY, "d.in");
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "d.in", 1, 1);
        st = add_as_created(obs, spec_of(plan, "d", "changelog"), 1);
        set_conf(st, key, value);
        ev = sl_topicplan_eval(plan, obs);
        n = verdict_of(ev, "d.changelog")->problem_cnt;
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
        return n;
}

static void test_changelog_thresholds(void **state) {
        (void)state;
        assert_int_equal(changelog_problems("delete.retention.ms", "86400000"),
                         0);
        assert_int_equal(changelog_problems("delete.retention.ms", "86400001"),
                         1);
        /* the broker default: one day */
        assert_int_equal(changelog_problems("delete.retention.ms", "604800000"),
                         1);
        assert_int_equal(changelog_problems("delete.retention.ms", "60000"), 0);
        assert_int_equal(changelog_problems("delete.retention.ms", "59999"), 1);
        assert_int_equal(changelog_problems("delete.retention.ms", "-1"), 1);
        assert_int_equal(changelog_problems("min.cleanable.dirty.ratio", "0.5"),
                         0);
        assert_int_equal(
            changelog_problems("min.cleanable.dirty.ratio", "0.51"), 1);
        assert_int_equal(
            changelog_problems("max.compaction.lag.ms", "9223372036854775807"),
            1);
        assert_int_equal(
            changelog_problems("max.compaction.lag.ms", "86400000"), 0);
        assert_int_equal(changelog_problems("segment.ms", "604800000"), 1);
        assert_int_equal(changelog_problems("segment.ms", "100"), 0);
        assert_int_equal(changelog_problems("min.compaction.lag.ms", "3600001"),
                         1);
        assert_int_equal(changelog_problems("segment.ms", "soon"), 1);
        assert_int_equal(changelog_problems("cleanup.policy", "compact"), 0);
        assert_int_equal(changelog_problems("cleanup.policy", "compact,delete"),
                         1);
}

static void test_overflow_retention(void **state) {
        static const struct {
                const char *value;
                int problems;
        } cases[] = {
            {"21600000", 0}, /* = ttl */
            {"21599999", 1},
            {"-1", 0}, /* forever */
            {"25200000", 0},
        };
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                conf_t c = {0};
                sl_pipeline_conf_t *p;
                sl_topicplan_t *plan;
                sl_topics_observed_t *obs = sl_topicplan_observed_new();
                sl_topicplan_eval_t *ev;
                sl_topic_state_t *st;

                p = add_pipeline(&c, "t", SL_OP_THROTTLE, "t.in");
                tconf(p)->ttl_ms = 6 * HOUR_MS;
                plan = sl_topicplan_new(&c.conf);
                sl_topicplan_observed_add(obs, "t.in", 1, 2);
                st = add_as_created(obs, spec_of(plan, "t", "overflow"), 2);
                set_conf(st, "retention.ms", cases[i].value);
                ev = sl_topicplan_eval(plan, obs);
                assert_int_equal(verdict_of(ev, "t.overflow")->problem_cnt,
                                 cases[i].problems);
                sl_topicplan_eval_destroy(ev);
                sl_topicplan_observed_destroy(obs);
                sl_topicplan_destroy(plan);
        }
}

/* Configs that could not be described are a problem, not a pass. */
static void test_eval_undescribed(void **state) {
        conf_t c = {0};
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        sl_topic_state_t *st;
        const sl_topic_verdict_t *v;
        (void)state;

        add_pipeline(&c, "d", SL_OP_DELAY, "d.in");
        plan = sl_topicplan_new(&c.conf);
        sl_topicplan_observed_add(obs, "d.in", 1, 1);
        st = sl_topicplan_observed_add(obs, "d.changelog", 1, 1);
        st->error = strdup("Broker: Topic authorization failed");
        ev = sl_topicplan_eval(plan, obs);
        v = verdict_of(ev, "d.changelog");
        assert_int_equal(v->status, SL_TOPIC_BAD);
        assert_true(has_problem(v, "configs unknown: Broker: Topic "
                                   "authorization failed"));
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
}

static void test_conflicts(void **state) {
        conf_t c = {0};
        sl_pipeline_conf_t *p;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = sl_topicplan_observed_new();
        sl_topicplan_eval_t *ev;
        const sl_topic_verdict_t *v;
        const char *names[32];
        (void)state;

        /* a -> b chained through "mid": fine.  A shared DLQ: fine.
         * c's changelog is b's output: a conflict. */
        p = add_pipeline(&c, "a", SL_OP_DELAY, "a.in");
        dconf(p)->default_target = (char *)"mid";
        p->dlq = "all.dlq";
        p = add_pipeline(&c, "b", SL_OP_DEBOUNCE, "mid");
        p->output = "b.out";
        p->dlq = "all.dlq";
        p = add_pipeline(&c, "c", SL_OP_DELAY, "c.in");
        p->changelog = "b.out";
        plan = sl_topicplan_new(&c.conf);

        assert_null(spec_of(plan, "a", "output")->conflict);
        assert_null(spec_of(plan, "b", "input")->conflict);
        assert_null(spec_of(plan, "a", "dlq")->conflict);
        assert_null(spec_of(plan, "b", "dlq")->conflict);
        assert_non_null(spec_of(plan, "b", "output")->conflict);
        assert_non_null(spec_of(plan, "c", "changelog")->conflict);
        /* a.in a.changelog all.dlq mid b.changelog b.out c.in */
        assert_int_equal(sl_topicplan_names(plan, names), 7);

        sl_topicplan_observed_add(obs, "c.in", 1, 1);
        ev = sl_topicplan_eval(plan, obs);
        v = verdict_of(ev, "b.out");
        assert_true(has_problem(v, "also the changelog of pipeline c"));
        /* c's changelog is missing but must not be created. */
        for (int i = 0; i < ev->cnt; i++) {
                v = &ev->verdicts[i];
                if (!strcmp(v->spec->def->name, "changelog") &&
                    !strcmp(v->spec->pipeline, "c")) {
                        assert_int_equal(v->status, SL_TOPIC_MISSING);
                        assert_int_equal(v->create_parts, 0);
                        assert_true(
                            has_problem(v, "also the output of pipeline b"));
                }
        }
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);

        /* Within a pipeline every role needs its own topic. */
        memset(&c, 0, sizeof(c));
        p = add_pipeline(&c, "x", SL_OP_THROTTLE, "x.in");
        p->output = "x.out";
        p->dlq = "x.in";
        plan = sl_topicplan_new(&c.conf);
        assert_non_null(spec_of(plan, "x", "input")->conflict);
        assert_non_null(spec_of(plan, "x", "dlq")->conflict);
        sl_topicplan_destroy(plan);
}

static void test_empty(void **state) {
        sl_topicplan_t *plan = sl_topicplan_new(NULL);
        sl_topicplan_eval_t *ev;
        (void)state;

        assert_int_equal(plan->cnt, 0);
        ev = sl_topicplan_eval(plan, NULL);
        assert_int_equal(sl_topicplan_eval_problems(ev, 1), 0);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_destroy(plan);
        sl_topicplan_destroy(NULL);
        sl_topicplan_eval_destroy(NULL);
        sl_topicplan_observed_destroy(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_plan_throttle),
            cmocka_unit_test(test_plan_delay_debounce),
            cmocka_unit_test(test_plan_payloads),
            cmocka_unit_test(test_eval_missing),
            cmocka_unit_test(test_eval_missing_input),
            cmocka_unit_test(test_eval_as_created_ok),
            cmocka_unit_test(test_eval_mismatches),
            cmocka_unit_test(test_eval_partition_counts),
            cmocka_unit_test(test_partition_problem),
            cmocka_unit_test(test_changelog_thresholds),
            cmocka_unit_test(test_overflow_retention),
            cmocka_unit_test(test_eval_undescribed),
            cmocka_unit_test(test_conflicts),
            cmocka_unit_test(test_empty),
            cmocka_unit_test(test_eval_replicas),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
