/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_opdef.c — the operator registry (opdef.h, ops.def): every
 * definition holds together (its type, keys, topic roles and routes), and
 * sl_pipeline_topics() walks a loaded pipeline's topics in the order and
 * with the roles config.h promises.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "apireq.h"
#include "config.h"
#include "opdef_delay.h"
#include "opdef_throttle.h"

/* Each line of ops.def, in order, is the definition of its type. */
static void test_registry(void **state) {
        (void)state;
        assert_true(SL_OP_CNT >= 1);
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *op = sl_opdef_at(i);
                assert_int_equal(op->type, i + 1);
                assert_ptr_equal(sl_opdef_of(op->type), op);
                assert_string_equal(sl_op_type_name(op->type), op->name);
        }
        assert_null(sl_opdef_of(SL_OP_NONE));
        assert_null(sl_opdef_of(SL_OP_END));
        assert_string_equal(sl_op_type_name(SL_OP_NONE), "unknown");
        assert_ptr_equal(sl_opdef_of(SL_OP_THROTTLE), &sl_opdef_throttle);
        assert_ptr_equal(sl_opdef_of(SL_OP_DELAY), &sl_opdef_delay);
        assert_ptr_equal(sl_opdef_of(SL_OP_DEBOUNCE), &sl_opdef_debounce);
}

static const sl_conf_key_t *op_key(const sl_opdef_t *op, const char *name) {
        for (int k = 0; k < op->key_cnt; k++)
                if (!strcmp(op->keys[k].name, name))
                        return &op->keys[k];
        return NULL;
}

/* An operator's keys are named once, each with a description; a role
 * names a topic key of its operator, or one every pipeline has, and says
 * whose topic it is; a route's path is its collection under
 * /v1/pipelines/{pipeline}, and a write route builds, answers and writes
 * a topic of one of the operator's roles.  Each operator that has routes
 * has a lookup (sl_apireq_lookup_path() forwards to it). */
static void test_definitions(void **state) {
        static const char *const shared[] = {
            "type", "input", "changelog", "dlq", "replication_factor", "api"};
        (void)state;
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *op = sl_opdef_at(i);
                int lookups = 0;

                for (int k = 0; k < op->key_cnt; k++) {
                        const sl_conf_key_t *key = &op->keys[k];
                        assert_ptr_equal(op_key(op, key->name), key);
                        for (size_t s = 0; s < SL_ARRAY_SIZE(shared); s++)
                                assert_string_not_equal(key->name, shared[s]);
                        assert_true(key->desc && *key->desc);
                        assert_true(key->flags & SL_KF_SHARED ||
                                    key->off + key->size <= op->params_size);
                }
                for (int r = 0; r < op->role_cnt; r++) {
                        const sl_roledef_t *role = &op->roles[r];
                        const sl_conf_key_t *key = op_key(op, role->key);
                        unsigned whose =
                            role->flags &
                            (SL_ROLE_INPUT | SL_ROLE_OUTPUT | SL_ROLE_INTERNAL);
                        assert_non_null(key);
                        assert_int_equal(key->type, SL_KT_TOPIC);
                        assert_true(whose == SL_ROLE_OUTPUT ||
                                    whose == SL_ROLE_INTERNAL);
                        assert_true(role->acl_why != 0);
                }
                for (int r = 0; r < op->route_cnt; r++) {
                        const sl_route_t *rt = &op->routes[r];
                        char want[256];
                        snprintf(want, sizeof(want),
                                 "/v1/pipelines/{pipeline}/%s/", rt->what);
                        assert_int_equal(strncmp(rt->path, want, strlen(want)),
                                         0);
                        if (rt->action)
                                assert_string_equal(rt->path +
                                                        strlen(rt->path) -
                                                        strlen(rt->action),
                                                    rt->action);
                        if (rt->kind == SL_ROUTE_LOOKUP) {
                                /* One plain lookup (what an owner is
                                 * asked); the others narrow its answer. */
                                lookups += !rt->needs;
                                assert_true(!rt->needs == !rt->lacks);
                                continue;
                        }
                        assert_null(rt->needs);
                        assert_int_equal(rt->kind, SL_ROUTE_WRITE);
                        assert_non_null(rt->build);
                        assert_non_null(rt->answer);
                        assert_non_null(rt->topic);
                        {
                                int role = !strcmp(rt->topic, "input");
                                for (int k = 0; k < op->role_cnt; k++)
                                        role |= !strcmp(rt->topic,
                                                        op->roles[k].name);
                                assert_true(role);
                        }
                }
                assert_true(!op->route_cnt || lookups == 1);
                assert_true(!op->api_new == !op->api_destroy);
        }
}

static char tmpdir[] = "/tmp/sluice-test-opdef-XXXXXX";
static char cfg_path[256];

static sl_conf_t *load(const char *ini) {
        FILE *fp = fopen(cfg_path, "w");
        sl_conf_t *conf = NULL;

        assert_non_null(fp);
        fputs(ini, fp);
        fclose(fp);
        assert_int_equal(sl_conf_load(cfg_path, 0, &conf, stderr), 0);
        return conf;
}

static void expect_topics(const sl_pipeline_conf_t *pc, const char *want) {
        sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
        char got[512] = "";
        int n = sl_pipeline_topics(pc, ts);

        for (int i = 0; i < n; i++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got),
                         "%s%s=%s", i ? " " : "", ts[i].role->name, ts[i].name);
        assert_string_equal(got, want);
}

/* The topics of a pipeline of each type, in the promised order: the
 * optional ones only when set; the internal ones are refused as targets,
 * the input and outputs are not. */
static void test_pipeline_topics(void **state) {
        sl_conf_t *conf;
        const char **names;
        int n;
        (void)state;

        conf = load("[pipeline t]\ntype = throttle\ninput = t.in\n"
                    "output = t.out\n"
                    "[pipeline d]\ntype = delay\ninput = d.in\ndlq = none\n"
                    "[pipeline e]\ntype = delay\ninput = e.in\n"
                    "default_target = e.out\n"
                    "[pipeline b]\ntype = debounce\ninput = b.in\n"
                    "output = b.out\nchangelog = b.state\n");
        expect_topics(&conf->pipelines[0],
                      "input=t.in changelog=t.changelog overflow=t.overflow "
                      "rates=t.rates dlq=t.dlq output=t.out");
        expect_topics(&conf->pipelines[1], "input=d.in changelog=d.changelog");
        expect_topics(&conf->pipelines[2], "input=e.in changelog=e.changelog "
                                           "dlq=e.dlq output=e.out");
        expect_topics(&conf->pipelines[3],
                      "input=b.in changelog=b.state dlq=b.dlq output=b.out");

        assert_string_equal(sl_pipeline_topic(&conf->pipelines[0], "rates"),
                            "t.rates");
        assert_null(sl_pipeline_topic(&conf->pipelines[1], "dlq"));
        assert_null(sl_pipeline_topic(&conf->pipelines[1], "rates"));
        assert_string_equal(sl_pipeline_topic(&conf->pipelines[2], "output"),
                            "e.out");

        assert_true(sl_conf_topic_internal(conf, "t.overflow"));
        assert_true(sl_conf_topic_internal(conf, "t.rates"));
        assert_true(sl_conf_topic_internal(conf, "b.state"));
        assert_true(sl_conf_topic_internal(conf, "e.dlq"));
        assert_false(sl_conf_topic_internal(conf, "b.changelog"));
        assert_false(sl_conf_topic_internal(conf, "d.dlq"));
        assert_false(sl_conf_topic_internal(conf, "t.in"));
        assert_false(sl_conf_topic_internal(conf, "e.out"));

        names = sl_conf_internal_topics(conf, &n);
        assert_int_equal(n, 4 + 1 + 2 + 2);
        assert_string_equal(names[0], "t.changelog");
        assert_string_equal(names[3], "t.dlq");
        free(names);
        sl_conf_destroy(conf);
}

/* The parameters of a delay pipeline's input parser are its keys, with
 * every pipeline's internal topics refused as targets. */
static void test_delay_params(void **state) {
        sl_conf_t *conf;
        sl_delay_params_t p;
        (void)state;

        conf = load("[pipeline t]\ntype = throttle\ninput = t.in\n"
                    "output = t.out\n"
                    "[pipeline d]\ntype = delay\ninput = d.in\n"
                    "default_target = d.out\nallowed_targets = d.*\n"
                    "max_delay = 2d\ninput_format = json-envelope\n");
        sl_delay_params_init(&p, conf, &conf->pipelines[1]);
        assert_string_equal(p.default_target, "d.out");
        assert_int_equal(p.allowed_targets->cnt, 1);
        assert_int_equal(p.max_delay_ms, 2 * 86400000LL);
        assert_int_equal(p.timestamp_skew_ms, 60000);
        assert_int_equal(p.max_record_bytes, 1 << 20);
        assert_int_equal(p.input_format, SL_INPUT_JSON_ENVELOPE);
        assert_int_equal(p.internal_cnt, 6);
        assert_non_null(sl_delay_target_internal(&p, "t.rates"));
        assert_non_null(sl_delay_target_internal(&p, "d.dlq"));
        assert_null(sl_delay_target_internal(&p, "d.out"));
        sl_delay_params_clear(&p);
        assert_null(p.internal_topics);
        sl_conf_destroy(conf);
}

/* A delay pipeline's payload_topic is one of its internal topics, walked
 * after the changelog, refused as a target by every delay pipeline; one
 * without it has none. */
static void test_payload_topic(void **state) {
        sl_conf_t *conf;
        sl_delay_params_t p;
        const char **names;
        int n;
        (void)state;

        conf = load("[pipeline d]\ntype = delay\ninput = d.in\n"
                    "payload_topic = d.payloads\npayload_cache = 8MiB\n"
                    "[pipeline e]\ntype = delay\ninput = e.in\n"
                    "default_target = e.out\n");
        expect_topics(&conf->pipelines[0], "input=d.in changelog=d.changelog "
                                           "payloads=d.payloads dlq=d.dlq");
        expect_topics(&conf->pipelines[1], "input=e.in changelog=e.changelog "
                                           "dlq=e.dlq output=e.out");
        assert_string_equal(sl_pipeline_topic(&conf->pipelines[0], "payloads"),
                            "d.payloads");
        assert_null(sl_pipeline_topic(&conf->pipelines[1], "payloads"));
        assert_true(sl_conf_topic_internal(conf, "d.payloads"));
        assert_false(sl_conf_topic_internal(conf, "e.payloads"));

        names = sl_conf_internal_topics(conf, &n);
        assert_int_equal(n, 3 + 2);
        assert_string_equal(names[1], "d.payloads");
        free(names);

        /* The other pipeline's timers may not target it either. */
        sl_delay_params_init(&p, conf, &conf->pipelines[1]);
        assert_non_null(sl_delay_target_internal(&p, "d.payloads"));
        assert_null(sl_delay_target_internal(&p, "e.out"));
        sl_delay_params_clear(&p);
        sl_conf_destroy(conf);
}

static int setup(void **state) {
        (void)state;
        if (!mkdtemp(tmpdir))
                return -1;
        snprintf(cfg_path, sizeof(cfg_path), "%s/t.ini", tmpdir);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        unlink(cfg_path);
        rmdir(tmpdir);
        return 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_registry),
            cmocka_unit_test(test_definitions),
            cmocka_unit_test(test_pipeline_topics),
            cmocka_unit_test(test_delay_params),
            cmocka_unit_test(test_payload_topic),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
