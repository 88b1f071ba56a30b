/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c — the configuration table, loader, finalize rules,
 * environment overrides, dump, reference and `sluice config`.
 *
 * Each malformed file is written to a temporary file and loaded; the test
 * asserts the exact error lines, with the file's path shown as "CFG".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "config.h"
#include "opdef_debounce.h"
#include "opdef_delay.h"
#include "opdef_throttle.h"

static char tmpdir[] = "/tmp/sluice-test-config-XXXXXX";
static char cfg_path[256];

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

static void write_file(const char *path, const char *text) {
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

/* Replaces every occurrence of from in s by to; returns a new string. */
static char *replace_all(const char *s, const char *from, const char *to) {
        size_t fl = strlen(from), tl = strlen(to), n = 0;
        const char *p;
        char *out, *o;

        for (p = s; (p = strstr(p, from)); p += fl)
                n++;
        out = malloc(strlen(s) + n * tl + 1);
        for (o = out, p = s;;) {
                const char *q = strstr(p, from);
                if (!q) {
                        strcpy(o, p);
                        break;
                }
                memcpy(o, p, (size_t)(q - p));
                o += q - p;
                memcpy(o, to, tl);
                o += tl;
                p = q + fl;
        }
        return out;
}

/* Loads ini; returns the error count and the error text (path shown as
 * "CFG"), which the caller frees. */
static int load(const char *ini, int use_env, sl_conf_t **confp, char **errs) {
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);
        int n;

        write_file(cfg_path, ini);
        n = sl_conf_load(cfg_path, use_env, confp, mem);
        fclose(mem);
        *errs = replace_all(buf, cfg_path, "CFG");
        free(buf);
        return n;
}

/* Asserts that ini fails with exactly the error lines expected. */
static void expect_errors(const char *ini, int cnt, const char *expected) {
        sl_conf_t *conf = (void *)1;
        char *errs;
        int n = load(ini, 0, &conf, &errs);

        if (strcmp(errs, expected))
                fail_msg("errors differ\n--- expected\n%s--- got\n%s", expected,
                         errs);
        assert_int_equal(n, cnt);
        assert_null(conf);
        free(errs);
}

static sl_conf_t *load_ok(const char *ini, int use_env) {
        sl_conf_t *conf = NULL;
        char *errs;
        int n = load(ini, use_env, &conf, &errs);

        if (n != 0)
                fail_msg("unexpected errors:\n%s", errs);
        assert_string_equal(errs, "");
        free(errs);
        assert_non_null(conf);
        return conf;
}

#define DELAY_OK                                                               \
        "[pipeline timers]\n"                                                  \
        "type = delay\n"                                                       \
        "input = timers.in\n"

/* Good files and defaults. */

static void test_defaults(void **state) {
        sl_conf_t *conf;
        const sl_pipeline_conf_t *t, *d, *b;
        char buf[64];
        (void)state;

        conf = load_ok("; a comment\n"
                       "# another\n"
                       "[kafka]\n"
                       "bootstrap.servers = localhost:9092\n"
                       "\n"
                       "[pipeline push]\n"
                       "type = throttle\n"
                       "input = push.in\n"
                       "output = push.out\n"
                       "\n"
                       "[pipeline timers]\n"
                       "input = timers.in\n"
                       "type = delay  ; type after input is fine\n"
                       "\n"
                       "[pipeline orders]\n"
                       "type = debounce\n"
                       "input = orders.in\n"
                       "output = orders.batches\n",
                       0);
        assert_string_equal(conf->path, cfg_path);
        assert_string_equal(conf->app_id, "sluice");
        assert_null(conf->instance_id);
        assert_string_equal(conf->metrics_listen, "127.0.0.1:9464");
        assert_int_equal(conf->log_level, LOG_INFO);
        assert_int_equal(conf->commit_interval_ms, 100);
        assert_int_equal(conf->shutdown_grace_ms, 30000);
        assert_int_equal(conf->transaction_timeout_ms, 10000);
        assert_int_equal(conf->kafka_cnt, 1);
        assert_string_equal(conf->kafka[0].key, "bootstrap.servers");
        assert_string_equal(conf->kafka[0].value, "localhost:9092");
        assert_int_equal(conf->kafka[0].line, 4);
        assert_int_equal(conf->pipeline_cnt, 3);

        t = sl_conf_pipeline(conf, "push");
        assert_non_null(t);
        assert_int_equal(t->line, 6);
        assert_int_equal(t->type, SL_OP_THROTTLE);
        assert_string_equal(t->input, "push.in");
        assert_string_equal(t->output, "push.out");
        assert_string_equal(t->changelog, "push.changelog");
        assert_string_equal(t->dlq, "push.dlq");
        assert_string_equal(sl_throttle_conf(t)->overflow, "push.overflow");
        assert_string_equal(sl_throttle_conf(t)->rates, "push.rates");
        assert_string_equal(sl_pipeline_topic(t, "overflow"), "push.overflow");
        assert_string_equal(sl_pipeline_topic(t, "rates"), "push.rates");
        assert_int_equal(t->replication_factor, -1);
        assert_int_equal(t->input_partitions, 0);
        assert_int_equal(t->max_record_bytes, 1 << 20);
        assert_int_equal(t->catchup_rate, 50000);
        assert_float_equal(sl_throttle_conf(t)->default_rate.per_sec, 100,
                           1e-9);
        assert_float_equal(sl_throttle_conf(t)->default_rate.burst, 100, 1e-9);
        assert_int_equal(sl_throttle_conf(t)->ttl_ms, 6 * 3600 * 1000);
        assert_int_equal(sl_throttle_conf(t)->payload_cache_bytes, 64 << 20);
        /* Keys of other types have no storage: params is the type's own
         * struct. */
        assert_non_null(t->params);

        d = sl_conf_pipeline(conf, "timers");
        assert_non_null(d);
        assert_int_equal(d->type, SL_OP_DELAY);
        assert_string_equal(d->changelog, "timers.changelog");
        assert_string_equal(d->dlq, "timers.dlq");
        assert_null(sl_pipeline_topic(d, "overflow"));
        assert_null(sl_pipeline_topic(d, "rates"));
        assert_null(d->output);
        assert_null(sl_delay_conf(d)->default_target);
        assert_int_equal(sl_delay_conf(d)->allowed_targets.cnt, 1);
        assert_string_equal(sl_delay_conf(d)->allowed_targets.pat[0], "**");
        /* The default allows any target, dotted names included. */
        assert_true(sl_globs_match(&sl_delay_conf(d)->allowed_targets,
                                   "reminders.out.eu"));
        assert_int_equal(sl_delay_conf(d)->max_delay_ms, 366LL * 86400000);
        assert_int_equal(sl_delay_conf(d)->input_format, SL_INPUT_HEADERS);
        /* Payloads in memory unless payload_topic is set. */
        assert_null(sl_delay_conf(d)->payload_topic);
        assert_null(sl_pipeline_topic(d, "payloads"));
        assert_int_equal(sl_delay_conf(d)->payload_cache_bytes, 64 << 20);

        b = sl_conf_pipeline(conf, "orders");
        assert_non_null(b);
        assert_int_equal(b->type, SL_OP_DEBOUNCE);
        assert_string_equal(b->output, "orders.batches");
        assert_null(sl_pipeline_topic(b, "overflow"));
        assert_null(sl_pipeline_topic(b, "rates"));
        assert_string_equal(b->changelog, "orders.changelog");
        assert_int_equal(sl_debounce_conf(b)->idle_ms, 2000);
        assert_int_equal(sl_debounce_conf(b)->max_age_ms, 30000);
        assert_int_equal(sl_debounce_conf(b)->max_items, 1000);
        assert_int_equal(sl_debounce_conf(b)->max_bytes, 1 << 20);
        assert_int_equal(sl_debounce_conf(b)->output_format, SL_OUTPUT_JSON);

        assert_null(sl_conf_pipeline(conf, "nope"));
        assert_null(sl_conf_pipeline(NULL, "push"));
        assert_string_equal(sl_op_type_name(SL_OP_DEBOUNCE), "debounce");

        {
                char errstr[256];
                rd_kafka_conf_t *kc =
                    sl_conf_rdkafka(conf, errstr, sizeof(errstr));
                size_t sz = sizeof(buf);
                assert_non_null(kc);
                assert_int_equal(
                    rd_kafka_conf_get(kc, "bootstrap.servers", buf, &sz),
                    RD_KAFKA_CONF_OK);
                assert_string_equal(buf, "localhost:9092");
                rd_kafka_conf_destroy(kc);
        }
        sl_conf_destroy(conf);
        sl_conf_destroy(NULL);
}

static void test_all_keys_set(void **state) {
        sl_conf_t *conf;
        const sl_pipeline_conf_t *t, *d, *b;
        (void)state;

        conf = load_ok("[sluice]\n"
                       "  app_id = billing\n"
                       "  instance_id = pod-0\n"
                       "  metrics_listen =\n"
                       "  log_level = debug\n"
                       "  commit_interval = 250ms\n"
                       "  shutdown_grace = 1m\n"
                       "  transaction_timeout = 15m\n"
                       "[pipeline t]\n"
                       "  type = throttle\n"
                       "  input = in.t\n"
                       "  output = out.t\n"
                       "  changelog = cl.t\n"
                       "  dlq = none\n"
                       "  overflow = of.t\n"
                       "  rates = r.t\n"
                       "  replication_factor = 3\n"
                       "  input_partitions = 12\n"
                       "  max_record_bytes = 2MiB\n"
                       "  catchup_rate = 0\n"
                       "  default_rate = 6000/m burst=50\n"
                       "  ttl = 30d\n"
                       "  payload_cache = 1GiB\n"
                       "[pipeline d]\n"
                       "  type = delay\n"
                       "  input = in.d\n"
                       "  default_target = orders.due\n"
                       "  allowed_targets = orders.*, billing.due\n"
                       "  max_delay = 7d\n"
                       "  input_format = json-envelope\n"
                       "  payload_topic = d.payloads\n"
                       "  payload_cache = 16MiB\n"
                       "[pipeline b]\n"
                       "  type = debounce\n"
                       "  input = in.b\n"
                       "  output = out.b\n"
                       "  idle = 500ms\n"
                       "  max_age = 500ms\n"
                       "  max_items = 1\n"
                       "  max_bytes = 10kB\n"
                       "  output_format = protobuf\n",
                       0);
        assert_string_equal(conf->app_id, "billing");
        assert_string_equal(conf->instance_id, "pod-0");
        assert_null(conf->metrics_listen);
        assert_int_equal(conf->log_level, LOG_DEBUG);
        assert_int_equal(conf->commit_interval_ms, 250);
        assert_int_equal(conf->shutdown_grace_ms, 60000);
        assert_int_equal(conf->transaction_timeout_ms, 900000);

        t = sl_conf_pipeline(conf, "t");
        assert_string_equal(t->changelog, "cl.t");
        assert_null(t->dlq);
        assert_string_equal(sl_throttle_conf(t)->overflow, "of.t");
        assert_string_equal(sl_throttle_conf(t)->rates, "r.t");
        assert_int_equal(t->replication_factor, 3);
        assert_int_equal(t->input_partitions, 12);
        assert_int_equal(t->max_record_bytes, 2 << 20);
        assert_int_equal(t->catchup_rate, 0);
        assert_float_equal(sl_throttle_conf(t)->default_rate.per_sec, 100,
                           1e-9);
        assert_float_equal(sl_throttle_conf(t)->default_rate.burst, 50, 1e-9);
        assert_int_equal(sl_throttle_conf(t)->ttl_ms, 30LL * 86400000);
        assert_int_equal(sl_throttle_conf(t)->payload_cache_bytes, 1LL << 30);

        d = sl_conf_pipeline(conf, "d");
        assert_string_equal(sl_delay_conf(d)->default_target, "orders.due");
        assert_int_equal(sl_delay_conf(d)->allowed_targets.cnt, 2);
        assert_string_equal(sl_delay_conf(d)->allowed_targets.pat[1],
                            "billing.due");
        assert_int_equal(sl_delay_conf(d)->max_delay_ms, 7 * 86400000);
        assert_int_equal(sl_delay_conf(d)->input_format,
                         SL_INPUT_JSON_ENVELOPE);
        assert_string_equal(sl_delay_conf(d)->payload_topic, "d.payloads");
        assert_string_equal(sl_pipeline_topic(d, "payloads"), "d.payloads");
        assert_int_equal(sl_delay_conf(d)->payload_cache_bytes, 16 << 20);

        b = sl_conf_pipeline(conf, "b");
        assert_int_equal(sl_debounce_conf(b)->idle_ms, 500);
        assert_int_equal(sl_debounce_conf(b)->max_age_ms, 500);
        assert_int_equal(sl_debounce_conf(b)->max_items, 1);
        assert_int_equal(sl_debounce_conf(b)->max_bytes, 10000);
        assert_int_equal(sl_debounce_conf(b)->output_format,
                         SL_OUTPUT_PROTOBUF);
        sl_conf_destroy(conf);
}

static void test_long_line(void **state) {
        char ini[2048], servers[1200] = "";
        sl_conf_t *conf;
        (void)state;

        /* Longer than inih's default 200-byte line buffer. */
        for (int i = 0; i < 60; i++)
                snprintf(servers + strlen(servers),
                         sizeof(servers) - strlen(servers),
                         "%sbroker-%02d:9092", i ? "," : "", i);
        snprintf(ini, sizeof(ini),
                 "[kafka]\nbootstrap.servers = %s\nclient.id = x\n" DELAY_OK,
                 servers);
        conf = load_ok(ini, 0);
        assert_int_equal(conf->kafka_cnt, 2);
        assert_string_equal(conf->kafka[0].value, servers);
        assert_int_equal(conf->kafka[1].line, 3);
        assert_int_equal(conf->pipelines[0].line, 4);
        sl_conf_destroy(conf);
}

/* Malformed files: one error each. */

static void test_unknown_key(void **state) {
        (void)state;
        expect_errors(DELAY_OK "colour = blue\n", 1,
                      "CFG:4: colour: unknown key in [pipeline timers]\n");
        expect_errors("[sluice]\nappid = x\n" DELAY_OK, 1,
                      "CFG:2: appid: unknown key in [sluice]\n");
}

static void test_key_for_wrong_type(void **state) {
        (void)state;
        expect_errors(DELAY_OK "ttl = 1h\n", 1,
                      "CFG:4: ttl: not valid for type delay (only for "
                      "throttle)\n");
        expect_errors(DELAY_OK "output = x\n", 1,
                      "CFG:4: output: not valid for type delay (only for "
                      "throttle, debounce)\n");
}

/* Instance a's second transactional producer is app_id-a#2, so no
 * instance may be called a#2. */
static void test_instance_id_suffix(void **state) {
        sl_conf_t *conf;
        (void)state;
        expect_errors("[sluice]\ninstance_id = pod-0#2\n" DELAY_OK, 1,
                      "CFG:2: instance_id: may not end in \"#2\" (the "
                      "transactional id of another instance's second "
                      "producer)\n");
        conf = load_ok("[sluice]\ninstance_id = pod#2-0\n" DELAY_OK, 0);
        assert_string_equal(conf->instance_id, "pod#2-0");
        sl_conf_destroy(conf);
}

static void test_bad_duration(void **state) {
        (void)state;
        expect_errors("[sluice]\ncommit_interval = 5x\n" DELAY_OK, 1,
                      "CFG:2: commit_interval: invalid duration '5x': unknown "
                      "unit 'x' (use ms, s, m, h or d)\n");
        expect_errors(DELAY_OK "max_delay = 10\n", 1,
                      "CFG:4: max_delay: invalid duration '10': missing unit "
                      "after '10' (use ms, s, m, h or d)\n");
        expect_errors("[sluice]\ncommit_interval = 2m\n" DELAY_OK, 1,
                      "CFG:2: commit_interval: 2m is out of range 1ms..60s\n");
}

static void test_bad_size(void **state) {
        (void)state;
        expect_errors(DELAY_OK "max_record_bytes = 1 megabyte\n", 1,
                      "CFG:4: max_record_bytes: invalid size '1 megabyte': "
                      "unknown unit 'megabyte' (use B, kB, MB, GB, TB, KiB, "
                      "MiB, GiB or TiB)\n");
        expect_errors(DELAY_OK "max_record_bytes = 2GiB\n", 1,
                      "CFG:4: max_record_bytes: 2GiB is out of range "
                      "1..1GiB\n");
}

static void test_bad_rate(void **state) {
        (void)state;
        expect_errors("[pipeline p]\ntype = throttle\ninput = a\noutput = b\n"
                      "default_rate = 100 per second\n",
                      1,
                      "CFG:5: default_rate: invalid rate '100 per second': "
                      "expected <number>/<unit>, e.g. '100/s'\n");
}

static void test_int_out_of_bounds(void **state) {
        (void)state;
        expect_errors(DELAY_OK "replication_factor = 40000\n", 1,
                      "CFG:4: replication_factor: 40000 is out of range "
                      "-1..32767\n");
        expect_errors("[pipeline b]\ntype = debounce\ninput = a\noutput = b\n"
                      "max_items = 0\n",
                      1, "CFG:5: max_items: 0 is out of range 1..1000000\n");
        expect_errors(DELAY_OK "catchup_rate = -5\n", 1,
                      "CFG:4: catchup_rate: -5 is below the minimum 0\n");
        expect_errors(DELAY_OK "input_partitions = twelve\n", 1,
                      "CFG:4: input_partitions: 'twelve' is not an integer\n");
        expect_errors(DELAY_OK "replication_factor = 0\n", 1,
                      "CFG:4: replication_factor: must be -1 (broker default) "
                      "or at least 1\n");
        expect_errors("[pipeline p]\ntype = throttle\ninput = a\noutput = b\n"
                      "ttl = 31d\n",
                      1, "CFG:5: ttl: 31d is out of range 1s..30d\n");
}

static void test_missing_required(void **state) {
        (void)state;
        expect_errors("[pipeline p]\ntype = throttle\ninput = a\n", 1,
                      "CFG:1: output: missing (required for type "
                      "throttle)\n");
        expect_errors("[pipeline p]\ninput = a\n", 1,
                      "CFG:1: type: missing (one of throttle, delay, "
                      "debounce)\n");
        expect_errors("[pipeline p]\n", 2,
                      "CFG:1: type: missing (one of throttle, delay, "
                      "debounce)\n"
                      "CFG:1: input: missing (required)\n");
        expect_errors("[pipeline p]\ntype = delay\ninput =\n", 1,
                      "CFG:3: input: must not be empty\n");
}

static void test_duplicate_key(void **state) {
        (void)state;
        expect_errors(DELAY_OK "\ninput = other\n", 1,
                      "CFG:5: input: duplicate key (first set at line 3)\n");
        expect_errors("[kafka]\nacks = all\nacks = 1\n" DELAY_OK, 1,
                      "CFG:3: acks: duplicate key (first set at line 2)\n");
        expect_errors("[sluice]\nlog_level = info\n[sluice]\n" DELAY_OK, 1,
                      "CFG:3: [sluice]: duplicate section (first at line "
                      "1)\n");
}

static void test_unknown_section(void **state) {
        (void)state;
        expect_errors("[sluise]\napp_id = x\n" DELAY_OK, 1,
                      "CFG:1: [sluise]: unknown section (expected [sluice], "
                      "[kafka] or [pipeline NAME])\n");
        expect_errors("app_id = x\n" DELAY_OK, 1,
                      "CFG:1: app_id: key outside of any section (add "
                      "[sluice], [kafka] or [pipeline NAME] above it)\n");
}

static void test_bad_pipeline_name(void **state) {
        (void)state;
        expect_errors("[pipeline my timers]\ntype = delay\ninput = a\n", 1,
                      "CFG:1: [pipeline my timers]: invalid pipeline name 'my "
                      "timers' (use A-Z a-z 0-9 . _ -)\n");
        expect_errors("[pipeline]\ntype = delay\ninput = a\n" DELAY_OK, 1,
                      "CFG:1: [pipeline]: missing pipeline name ([pipeline "
                      "NAME])\n");
        expect_errors(DELAY_OK "[pipeline timers]\ntype = delay\ninput = b\n",
                      1,
                      "CFG:4: [pipeline timers]: duplicate pipeline name "
                      "(first at line 1)\n");
}

static void test_duplicate_input(void **state) {
        (void)state;
        expect_errors(DELAY_OK "[pipeline b]\ntype = debounce\noutput = x\n"
                               "input = timers.in\n",
                      1,
                      "CFG:7: input: topic 'timers.in' is already the input "
                      "of pipeline 'timers' (line 3)\n");
}

static void test_internal_topic_as_output(void **state) {
        (void)state;
        expect_errors(DELAY_OK "[pipeline b]\ntype = debounce\ninput = x\n"
                               "output = timers.dlq\n",
                      1,
                      "CFG:7: output: 'timers.dlq' is the dlq topic of "
                      "pipeline 'timers'; sluice's internal topics cannot be "
                      "used here\n");
        expect_errors("[pipeline t]\ntype = delay\ninput = t.changelog\n", 1,
                      "CFG:3: input: 't.changelog' is the changelog topic of "
                      "pipeline 't'; sluice's internal topics cannot be used "
                      "here\n");
        expect_errors(DELAY_OK "default_target = timers.changelog\n", 1,
                      "CFG:4: default_target: 'timers.changelog' is the "
                      "changelog topic of pipeline 'timers'; sluice's "
                      "internal topics cannot be used here\n");
        /* Kafka's own topics are never written, whatever the pipeline. */
        expect_errors(DELAY_OK "default_target = __transaction_state\n", 1,
                      "CFG:4: default_target: '__transaction_state' is an "
                      "internal topic of Kafka (\"__*\"); sluice never writes "
                      "there\n");
        expect_errors(DELAY_OK "[pipeline b]\ntype = debounce\ninput = x\n"
                               "output = __consumer_offsets\n",
                      1,
                      "CFG:7: output: '__consumer_offsets' is an internal "
                      "topic of Kafka (\"__*\"); sluice never writes there\n");
        /* Internal topics are unique across pipelines; a default clashes
         * at its section's header line. */
        expect_errors(DELAY_OK "dlq = shared.dlq\n"
                               "[pipeline p]\ntype = throttle\ninput = x\n"
                               "output = y\noverflow = shared.dlq\n",
                      1,
                      "CFG:9: overflow: topic 'shared.dlq' is already the dlq "
                      "topic of pipeline 'timers' (line 4)\n");
        expect_errors(DELAY_OK "[pipeline x]\ntype = delay\ninput = x\n"
                               "changelog = timers.changelog\n",
                      1,
                      "CFG:7: changelog: topic 'timers.changelog' is already "
                      "the changelog topic of pipeline 'timers' (line 1)\n");
        expect_errors("[pipeline p]\ntype = throttle\ninput = a\noutput = a\n",
                      1, "CFG:4: output: same topic as input ('a')\n");
}

/* payload_topic is an internal topic like the changelog: unique to its
 * pipeline, never an input or output; payload_cache has a floor. */
static void test_payload_topic_errors(void **state) {
        sl_conf_t *conf;
        (void)state;
        expect_errors(DELAY_OK "payload_topic = timers.changelog\n", 1,
                      "CFG:4: payload_topic: topic 'timers.changelog' is "
                      "already the changelog topic of pipeline 'timers' "
                      "(line 1)\n");
        expect_errors(DELAY_OK "payload_topic = timers.payloads\n"
                               "[pipeline x]\ntype = delay\ninput = x\n"
                               "default_target = timers.payloads\n",
                      1,
                      "CFG:8: default_target: 'timers.payloads' is the "
                      "payloads topic of pipeline 'timers'; sluice's "
                      "internal topics cannot be used here\n");
        expect_errors(DELAY_OK "payload_topic = timers.payloads\n"
                               "[pipeline x]\ntype = delay\n"
                               "input = timers.payloads\n",
                      1,
                      "CFG:7: input: 'timers.payloads' is the payloads topic "
                      "of pipeline 'timers'; sluice's internal topics cannot "
                      "be used here\n");
        expect_errors(DELAY_OK "payload_topic = timers/payloads\n", 1,
                      "CFG:4: payload_topic: invalid topic name "
                      "'timers/payloads' (use A-Z a-z 0-9 . _ -, at most "
                      "249)\n");
        expect_errors(DELAY_OK "payload_cache = 512KiB\n", 1,
                      "CFG:4: payload_cache: 512KiB is below the minimum "
                      "1MiB\n");
        /* Set empty: payloads in memory, as by default. */
        conf = load_ok(DELAY_OK "payload_topic =\n", 0);
        assert_null(sl_delay_conf(&conf->pipelines[0])->payload_topic);
        assert_null(sl_pipeline_topic(&conf->pipelines[0], "payloads"));
        sl_conf_destroy(conf);
}

static void test_bad_kafka(void **state) {
        (void)state;
        expect_errors("[kafka]\nbootstrap.servers = b:9092\nacks = maybe\n"
                      "no.such.thing = 1\n" DELAY_OK,
                      2,
                      /* librdkafka's words, with its alias name */
                      "CFG:3: acks: Invalid value for configuration property "
                      "\"request.required.acks\"\n"
                      "CFG:4: no.such.thing: No such configuration property: "
                      "\"no.such.thing\"\n");
        expect_errors("[kafka]\ngroup.id = mine\ngroup.instance.id = pod\n"
                      "enable.auto.commit = true\n" DELAY_OK,
                      3,
                      "CFG:2: group.id: set by sluice (set app_id in "
                      "[sluice])\n"
                      "CFG:3: group.instance.id: set by sluice (set "
                      "instance_id in [sluice])\n"
                      "CFG:4: enable.auto.commit: set by sluice (sluice "
                      "commits offsets in its transactions)\n");
}

/* A linger.ms at or above the message timeout: librdkafka makes the
 * client, then refuses every record's topic. */
static void test_linger_over_timeout(void **state) {
        sl_conf_t *conf;
        (void)state;
        expect_errors("[kafka]\nlinger.ms = 10000\n" DELAY_OK, 1,
                      "CFG:2: linger.ms: 10000 ms is not below "
                      "transaction_timeout (10000 ms): librdkafka would "
                      "refuse every record\n");
        expect_errors("[sluice]\ntransaction_timeout = 1m\n[kafka]\n"
                      "message.timeout.ms = 5000\n"
                      "queue.buffering.max.ms = 5000\n" DELAY_OK,
                      1,
                      "CFG:5: queue.buffering.max.ms: 5000 ms is not below "
                      "message.timeout.ms (5000 ms): librdkafka would "
                      "refuse every record\n");
        conf = load_ok("[kafka]\nlinger.ms = 9999\n" DELAY_OK, 0);
        sl_conf_destroy(conf);
        /* From the environment: named by its variable. */
        setenv("SLUICE_KAFKA_LINGER_MS", "15000", 1);
        {
                char *errs;
                assert_int_equal(load(DELAY_OK, 1, &conf, &errs), 1);
                assert_string_equal(
                    errs, "env SLUICE_KAFKA_LINGER_MS: linger.ms: 15000 ms "
                          "is not below transaction_timeout (10000 ms): "
                          "librdkafka would refuse every record\n");
                assert_null(conf);
                free(errs);
        }
        unsetenv("SLUICE_KAFKA_LINGER_MS");
}

static void test_idle_over_max_age(void **state) {
        (void)state;
        expect_errors("[pipeline b]\ntype = debounce\ninput = a\noutput = b\n"
                      "idle = 1m\n",
                      1, "CFG:5: idle: 1m is longer than max_age (30s)\n");
        expect_errors("[pipeline b]\ntype = debounce\ninput = a\noutput = b\n"
                      "max_age = 1s\n",
                      1, "CFG:5: max_age: 1s is shorter than idle (2s)\n");
}

static void test_default_target_not_allowed(void **state) {
        (void)state;
        expect_errors(DELAY_OK "allowed_targets = orders.*\n"
                               "default_target = billing.due\n",
                      1,
                      "CFG:5: default_target: 'billing.due' does not match "
                      "allowed_targets (orders.*)\n");
        expect_errors(DELAY_OK "allowed_targets = orders/*\n", 1,
                      "CFG:4: allowed_targets: invalid pattern 'orders/*': "
                      "'/' cannot appear in a topic name\n");
}

static void test_misc_errors(void **state) {
        (void)state;
        expect_errors("[sluice]\n", 1,
                      "CFG: [pipeline NAME]: no pipeline configured\n");
        expect_errors("[sluice]\nlog_level = loud\n" DELAY_OK, 1,
                      "CFG:2: log_level: 'loud' is not one of debug, info, "
                      "notice, warning, error\n");
        expect_errors("[sluice]\nmetrics_listen = 9464\n" DELAY_OK, 1,
                      "CFG:2: metrics_listen: invalid address '9464' "
                      "(expected host:port, e.g. 0.0.0.0:9464; port 0 picks a "
                      "free one)\n");
        expect_errors("[sluice]\napp_id =\n" DELAY_OK, 1,
                      "CFG:2: app_id: must not be empty\n");
        expect_errors(DELAY_OK "changelog = my changelog\n", 1,
                      "CFG:4: changelog: invalid topic name 'my changelog' "
                      "(use A-Z a-z 0-9 . _ -, at most 249)\n");
        expect_errors(DELAY_OK "type = debounce\n", 1,
                      "CFG:4: type: duplicate key (first set at line 2)\n");
        expect_errors("[pipeline p]\ntype = filter\ninput = a\n", 1,
                      "CFG:2: type: 'filter' is not one of throttle, delay, "
                      "debounce\n");
        /* The secret's value is never in an error. */
        expect_errors("[sluice]\napi_peer_secret = correct-horse-battery\n"
                      "api_peer_secret_file = /run/secret\n" DELAY_OK,
                      1,
                      "CFG: api_peer_secret_file: set api_peer_secret or "
                      "api_peer_secret_file, not both\n");
}

/* A boolean takes true/yes/on/1 and false/no/off/0, nothing else; a
 * refused word leaves the default. */
static void test_booleans(void **state) {
        static const struct {
                const char *word;
                int value;
        } words[] = {{"true", 1},  {"yes", 1}, {"on", 1},  {"1", 1},
                     {"false", 0}, {"no", 0},  {"off", 0}, {"0", 0}};
        char ini[256];
        (void)state;

        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
                sl_conf_t *conf;
                snprintf(ini, sizeof(ini), DELAY_OK "api = %s\n",
                         words[i].word);
                conf = load_ok(ini, 0);
                assert_int_equal(conf->pipelines[0].api, words[i].value);
                sl_conf_destroy(conf);
        }
        expect_errors(DELAY_OK "api = maybe\n", 1,
                      "CFG:4: api: 'maybe' is not a boolean (true or false)\n");
        expect_errors(DELAY_OK "api = TRUE\n", 1,
                      "CFG:4: api: 'TRUE' is not a boolean (true or false)\n");
}

static void test_syntax_errors(void **state) {
        (void)state;
        expect_errors(DELAY_OK "just some words\n", 1,
                      "CFG:4: syntax error: expected 'key = value', "
                      "'[section]' or a comment, not 'just some words'\n");
        /* Pairs under a broken header are not blamed on another section. */
        expect_errors(DELAY_OK "[pipeline x\ninput = y\n", 1,
                      "CFG:4: syntax error: unterminated section header "
                      "'[pipeline x'\n");
        expect_errors(DELAY_OK "= 5\n", 1,
                      "CFG:4: syntax error: missing key name before '='\n");
}

static void test_no_pipelines_flag(void **state) {
        sl_conf_t *conf = NULL;
        (void)state;

        /* `topics create` only needs [kafka]. */
        write_file(cfg_path, "[kafka]\nbootstrap.servers = b:9092\n");
        assert_int_equal(
            sl_conf_load_flags(cfg_path, SL_CONF_NO_PIPES, &conf, NULL), 0);
        assert_non_null(conf);
        assert_int_equal(conf->pipeline_cnt, 0);
        assert_int_equal(conf->kafka_cnt, 1);
        sl_conf_destroy(conf);
        assert_int_equal(sl_conf_load_flags(cfg_path, 0, &conf, NULL), 1);
        assert_null(conf);
        /* Everything else is still checked. */
        write_file(cfg_path, "[kafka]\ngroup.id = x\n");
        assert_int_equal(
            sl_conf_load_flags(cfg_path, SL_CONF_NO_PIPES, &conf, NULL), 1);
        assert_null(conf);
}

static void test_missing_file(void **state) {
        sl_conf_t *conf = (void *)1;
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);
        (void)state;

        assert_int_equal(sl_conf_load("/nonexistent/sluice.ini", 0, &conf, mem),
                         1);
        fclose(mem);
        assert_null(conf);
        assert_string_equal(
            buf, "/nonexistent/sluice.ini: cannot open: No such file or "
                 "directory\n");
        free(buf);

        buf = NULL;
        mem = open_memstream(&buf, &size);
        assert_int_equal(sl_conf_load(tmpdir, 0, &conf, mem), 1);
        fclose(mem);
        assert_null(conf);
        assert_non_null(strstr(buf, ": cannot open: Is a directory\n"));
        free(buf);
}

/* One file with many errors: all of them, in line order. */
static void test_many_errors(void **state) {
        (void)state;
        expect_errors("[sluice]\n"                           /* 1 */
                      "log_level = chatty\n"                 /* 2 */
                      "commit_interval = 0\n"                /* 3 */
                      "[kafka]\n"                            /* 4 */
                      "isolation.level = read_uncommitted\n" /* 5 */
                      "[pipeline a]\n"                       /* 6 */
                      "type = delay\n"                       /* 7 */
                      "input = shared\n"                     /* 8 */
                      "ttl = 5m\n"                           /* 9 */
                      "max_delay = soon\n"                   /* 10 */
                      "[pipeline b]\n"                       /* 11 */
                      "type = debounce\n"                    /* 12 */
                      "input = shared\n"                     /* 13 */
                      "output = a.changelog\n"               /* 14 */
                      "idle = 1h\n"                          /* 15 */
                      "max_bytes = lots\n"                   /* 16 */
                      "[mystery]\n"                          /* 17 */
                      "x = 1\n",                             /* 18 */
                      10,
                      "CFG:2: log_level: 'chatty' is not one of debug, info, "
                      "notice, warning, error\n"
                      "CFG:3: commit_interval: 0 is out of range 1ms..60s\n"
                      "CFG:5: isolation.level: set by sluice (sluice always "
                      "reads read_committed)\n"
                      "CFG:9: ttl: not valid for type delay (only for "
                      "throttle)\n"
                      "CFG:10: max_delay: invalid duration 'soon': expected "
                      "a number at 'soon'\n"
                      "CFG:13: input: topic 'shared' is already the input of "
                      "pipeline 'a' (line 8)\n"
                      "CFG:14: output: 'a.changelog' is the changelog topic "
                      "of pipeline 'a'; sluice's internal topics cannot be "
                      "used here\n"
                      "CFG:15: idle: 1h is longer than max_age (30s)\n"
                      "CFG:16: max_bytes: invalid size 'lots': expected a "
                      "number at 'lots'\n"
                      "CFG:17: [mystery]: unknown section (expected "
                      "[sluice], [kafka] or [pipeline NAME])\n");
}

/* Environment overrides. */

static void test_env_overrides(void **state) {
        sl_conf_t *conf;
        char *errs;
        const char *ini = "[sluice]\n"
                          "log_level = warning\n"
                          "[kafka]\n"
                          "bootstrap.servers = file:9092\n"
                          "acks = all\n" DELAY_OK;
        (void)state;

        setenv("SLUICE_LOG_LEVEL", "debug", 1);
        setenv("SLUICE_INSTANCE_ID", "pod-7", 1);
        setenv("SLUICE_KAFKA_BOOTSTRAP_SERVERS", "env:9092", 1);
        setenv("SLUICE_KAFKA_SOCKET_TIMEOUT_MS", "5000", 1);
        setenv("SLUICE_NOT_A_KEY", "ignored", 1);

        conf = load_ok(ini, 1);
        assert_int_equal(conf->log_level, LOG_DEBUG);
        assert_string_equal(conf->instance_id, "pod-7");
        assert_int_equal(conf->kafka_cnt, 3);
        assert_string_equal(conf->kafka[0].key, "acks");
        assert_string_equal(conf->kafka[1].key, "bootstrap.servers");
        assert_string_equal(conf->kafka[1].value, "env:9092");
        assert_int_equal(conf->kafka[1].line, 0);
        assert_string_equal(conf->kafka[2].key, "socket.timeout.ms");
        assert_string_equal(conf->kafka[2].value, "5000");
        sl_conf_destroy(conf);

        /* Without use_env the file stands. */
        conf = load_ok(ini, 0);
        assert_int_equal(conf->log_level, LOG_WARNING);
        assert_null(conf->instance_id);
        assert_string_equal(conf->kafka[0].value, "file:9092");
        sl_conf_destroy(conf);

        /* Bad values name the variable. */
        setenv("SLUICE_LOG_LEVEL", "shouty", 1);
        setenv("SLUICE_KAFKA_GROUP_ID", "g", 1);
        setenv("SLUICE_KAFKA_SOCKET_TIMEOUT_MS", "never", 1);
        assert_int_equal(load(ini, 1, &conf, &errs), 3);
        assert_null(conf);
        assert_string_equal(
            errs, "env SLUICE_LOG_LEVEL: log_level: 'shouty' is not one of "
                  "debug, info, notice, warning, error\n"
                  "env SLUICE_KAFKA_GROUP_ID: group.id: set by sluice (set "
                  "app_id in [sluice])\n"
                  "env SLUICE_KAFKA_SOCKET_TIMEOUT_MS: socket.timeout.ms: "
                  "Invalid value for configuration property "
                  "\"socket.timeout.ms\"\n");
        free(errs);

        unsetenv("SLUICE_LOG_LEVEL");
        unsetenv("SLUICE_INSTANCE_ID");
        unsetenv("SLUICE_KAFKA_BOOTSTRAP_SERVERS");
        unsetenv("SLUICE_KAFKA_SOCKET_TIMEOUT_MS");
        unsetenv("SLUICE_KAFKA_GROUP_ID");
        unsetenv("SLUICE_NOT_A_KEY");
}

/* Dump and reference. */

__attribute__((noinline)) static char *dump_str(const sl_conf_t *conf) {
        char *buf = NULL;
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);
        sl_conf_dump(conf, mem);
        fclose(mem);
        return buf;
}

static void test_dump_roundtrip(void **state) {
        sl_conf_t *conf, *again;
        char *d1, *d2, *body1, *body2;
        const char *ini = "[sluice]\n"
                          "app_id = billing\n"
                          "api_peer_secret = correct-horse-battery\n"
                          "[kafka]\n"
                          "bootstrap.servers = b:9092\n"
                          "sasl.password = hunter2\n"
                          "[pipeline p]\n"
                          "type = throttle\n"
                          "input = a\n"
                          "output = b\n"
                          "default_rate = 1/m burst=3\n"
                          "dlq = none\n"
                          "ttl = 90m\n"
                          "[pipeline d]\n"
                          "type = delay\n"
                          "input = c\n"
                          "allowed_targets = x.*, y\n";
        (void)state;

        conf = load_ok(ini, 0);
        d1 = dump_str(conf);
        assert_null(strstr(d1, "hunter2"));
        assert_non_null(strstr(d1, "sasl.password = ***\n"));
        assert_null(strstr(d1, "correct-horse"));
        assert_non_null(strstr(d1, "api_peer_secret = ***\n"));
        assert_non_null(strstr(d1, "default_rate = 1/m burst=3\n"));
        assert_non_null(strstr(d1, "dlq = none\n"));
        assert_non_null(strstr(d1, "ttl = 90m\n"));
        assert_non_null(strstr(d1, "changelog = p.changelog\n"));
        assert_non_null(strstr(d1, "allowed_targets = x.*, y\n"));
        assert_non_null(strstr(d1, "instance_id = \n"));
        assert_null(strstr(d1, "idle"));

        /* The dump is itself a valid file with the same meaning. */
        again = load_ok(d1, 0);
        d2 = dump_str(again);
        body1 = strchr(d1, '\n');
        body2 = strchr(d2, '\n');
        assert_string_equal(body1, body2);
        free(d1);
        free(d2);
        sl_conf_destroy(again);
        sl_conf_destroy(conf);
}

/* Removes the comment lines (the first names the file, others values the
 * dump could not write) in place. */
static void strip_comments(char *s) {
        char *o = s;

        for (char *p = s; *p;) {
                char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
                if (*p != ';') {
                        memmove(o, p, n);
                        o += n;
                }
                p += n;
        }
        *o = '\0';
}

/* Loads ini (with the environment when use_env), dumps it, loads the dump
 * and dumps again: both dumps must be the same text, which for every value
 * type means the same value (each formatter is exact).  Returns 0, or -1
 * when ini itself is refused (then the dump is not tried). */
static int roundtrip(const char *ini, int use_env) {
        sl_conf_t *conf = NULL, *again = NULL;
        char *errs, *d1, *d2;
        int n = load(ini, use_env, &conf, &errs);

        free(errs);
        if (n != 0)
                return -1;
        d1 = dump_str(conf);
        /* The dump alone (no environment) must mean the same. */
        n = load(d1, 0, &again, &errs);
        if (n != 0)
                fail_msg("the dump of\n%s\ndoes not load back:\n%s\n"
                         "--- dump\n%s",
                         ini, errs, d1);
        free(errs);
        d2 = dump_str(again);
        strip_comments(d1);
        strip_comments(d2);
        if (strcmp(d1, d2))
                fail_msg("the dump of\n%s\nloads back differently:\n--- "
                         "first\n%s--- second\n%s",
                         ini, d1, d2);
        free(d1);
        free(d2);
        sl_conf_destroy(again);
        sl_conf_destroy(conf);
        return 0;
}

static int roundtrip_value(const char *section, const char *key,
                           const char *value) {
        char *ini;
        int r;

        if (asprintf(&ini,
                     "[sluice]\n%s%s%s%s"
                     "[pipeline t]\ntype = throttle\ninput = a\noutput = b\n"
                     "%s%s%s%s"
                     "[pipeline d]\ntype = delay\ninput = c\n%s%s%s%s"
                     "[pipeline b]\ntype = debounce\ninput = e\noutput = f\n"
                     "%s%s%s%s",
                     !strcmp(section, "sluice") ? key : "",
                     !strcmp(section, "sluice") ? " = " : "",
                     !strcmp(section, "sluice") ? value : "",
                     !strcmp(section, "sluice") ? "\n" : "",
                     !strcmp(section, "throttle") ? key : "",
                     !strcmp(section, "throttle") ? " = " : "",
                     !strcmp(section, "throttle") ? value : "",
                     !strcmp(section, "throttle") ? "\n" : "",
                     !strcmp(section, "delay") ? key : "",
                     !strcmp(section, "delay") ? " = " : "",
                     !strcmp(section, "delay") ? value : "",
                     !strcmp(section, "delay") ? "\n" : "",
                     !strcmp(section, "debounce") ? key : "",
                     !strcmp(section, "debounce") ? " = " : "",
                     !strcmp(section, "debounce") ? value : "",
                     !strcmp(section, "debounce") ? "\n" : "") < 0)
                fail_msg("asprintf");
        r = roundtrip(ini, 0);
        free(ini);
        return r;
}

/* Every value the loader accepts dumps to a file that loads back to the
 * same configuration: odd values of each type, then random ones. */
static void test_dump_roundtrip_values(void **state) {
        static const struct {
                const char *section, *key;
                const char *values[16];
        } cases[] = {
            {"sluice",
             "app_id",
             {"x", "a;b", "a=b", "#x", "a ; b", "\xc3\xbc"}},
            {"sluice", "instance_id", {"", "pod-0", "a\tb"}},
            {"sluice", "metrics_listen", {"", "[::1]:0", "0.0.0.0:65535"}},
            {"sluice", "log_level", {"debug", "error", "notice"}},
            {"sluice",
             "commit_interval",
             {"1ms", "60s", "1.5s", "0.001s", "59999ms", "1m"}},
            {"sluice", "recovery_timeout", {"0", "7d", "1d23h59m59s999ms"}},
            {"throttle",
             "payload_cache",
             {"0", "1", "1023", "1536", "4444444444494MB",
              "9223372036854775807", "1.5MiB", "10kB", "7TiB", "8388607TiB",
              "9223372036854775807B", "0.5KiB"}},
            {"throttle",
             "default_rate",
             {"0/s", "1/d", "1.5/d", "1/m burst=3", "2.5/s burst=1",
              "1000000000/s", "0.0000000000000000001/s",
              "86400000000000/d burst=1000000000", "3/h burst=2.25",
              "9999999999999.99/d burst=999999999.999999",
              "7/min burst=1.00000000000001"}},
            {"throttle", "ttl", {"1s", "30d", "1001ms", "719h59m"}},
            {"throttle", "catchup_rate", {"0", "9223372036854775807", "007"}},
            {"throttle", "dlq", {"none", "x.dlq"}},
            {"delay",
             "allowed_targets",
             {"", "**", "*", "a.*, b", "t[!]]x", "x.**.y?[a-c]"}},
            {"delay",
             "max_delay",
             {"1s", "9007199254740992ms", "104249991d", "1.001s",
              "100000000d"}},
            {"delay", "input_format", {"json-envelope", "headers"}},
            {"delay", "payload_topic", {"", "t.payloads", "x"}},
            {"delay", "payload_cache", {"1MiB", "1048576", "1GiB"}},
            {"debounce", "max_bytes", {"1", "1GiB", "999999999"}},
            {"debounce", "max_items", {"1", "1000000"}},
        };
        uint64_t x = 0x9E3779B97F4A7C15ULL;
        char value[160], *globs;
        size_t off = 0;
        int loaded = 0;
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                for (int j = 0; cases[i].values[j]; j++)
                        if (roundtrip_value(cases[i].section, cases[i].key,
                                            cases[i].values[j]) != 0)
                                fail_msg("%s = %s refused", cases[i].key,
                                         cases[i].values[j]);

        /* A glob list longer than any fixed buffer. */
        globs = malloc(300 * 16);
        for (int i = 0; i < 300; i++)
                off +=
                    (size_t)sprintf(globs + off, "%sp%d.**", i ? ", " : "", i);
        assert_int_equal(roundtrip_value("delay", "allowed_targets", globs), 0);
        free(globs);

        /* Random numbers with random units for every numeric key: each is
         * either refused or round-trips. */
        for (int i = 0; i < 600; i++) {
                static const struct {
                        const char *section, *key, *units[5];
                } keys[] = {
                    {"throttle",
                     "payload_cache",
                     {"", "KiB", "MB", "TiB", "B"}},
                    {"throttle",
                     "default_rate",
                     {"/s", "/m", "/h", "/d", "/min"}},
                    {"delay", "max_delay", {"ms", "s", "m", "h", "d"}},
                    {"throttle", "catchup_rate", {"", "", "", "", ""}},
                    {"sluice", "shutdown_grace", {"ms", "s", "m", "h", "d"}}};
                int intd, fracd, key;
                char *p = value;

                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                key = (int)((x >> 40) % 5);
                intd = 1 + (int)(x % 12);
                fracd =
                    x & 0x10000 ? (int)((x >> 5) % 22) : (int)((x >> 5) % 4);
                for (int k = 0; k < intd; k++)
                        *p++ = (char)('0' + (x >> (k * 3 % 60)) % 10);
                if (fracd && key != 3) {
                        *p++ = '.';
                        for (int k = 0; k < fracd; k++)
                                *p++ = (char)('0' + (x >> (k * 5 % 60)) % 7);
                }
                strcpy(p, keys[key].units[(x >> 30) % 5]);
                if (roundtrip_value(keys[key].section, keys[key].key, value) ==
                    0)
                        loaded++;
        }
        /* Not everything is refused: the loop tested something. */
        if (loaded < 150)
                fail_msg("only %d of 600 random values loaded", loaded);
}

/* Environment values go through the same parsers and checks; one a config
 * file could not hold is refused, not dumped as something else. */
static void test_env_roundtrip(void **state) {
        sl_conf_t *conf = (void *)1;
        char *errs, *d1;
        const char *ini = "[kafka]\nbootstrap.servers = b:9092\n" DELAY_OK;
        (void)state;

#define TINY                                                                   \
        "0.0000000000000000000000000000000000000000000000000000000000000000"   \
        "1s"
        setenv("SLUICE_SHUTDOWN_GRACE", TINY, 1);
        assert_int_equal(load(ini, 1, &conf, &errs), 1);
        assert_null(conf);
        assert_string_equal(errs,
                            "env SLUICE_SHUTDOWN_GRACE: shutdown_grace: "
                            "invalid duration '" TINY "': too many digits\n");
        free(errs);
#undef TINY
        setenv("SLUICE_SHUTDOWN_GRACE", "1h", 1);
        assert_int_equal(roundtrip(ini, 1), 0);
        unsetenv("SLUICE_SHUTDOWN_GRACE");

        setenv("SLUICE_APP_ID", "a ;b", 1);
        assert_int_equal(load(ini, 1, &conf, &errs), 1);
        assert_string_equal(errs,
                            "env SLUICE_APP_ID: app_id: the value holds a "
                            "';' first or after a blank, which starts a "
                            "comment (not possible in a config file)\n");
        /* A ';' first follows the blank after '=' (found by
         * fuzz_config). */
        setenv("SLUICE_APP_ID", ";x", 1);
        assert_int_equal(roundtrip(ini, 1), -1);
        free(errs);
        setenv("SLUICE_APP_ID", "a\nb", 1);
        assert_int_equal(load(ini, 1, &conf, &errs), 1);
        assert_string_equal(errs,
                            "env SLUICE_APP_ID: app_id: the value holds a "
                            "control character (not possible in a config "
                            "file)\n");
        free(errs);
        setenv("SLUICE_APP_ID", " a", 1);
        assert_int_equal(roundtrip(ini, 1), -1);
        setenv("SLUICE_APP_ID", "a;b", 1);
        assert_int_equal(roundtrip(ini, 1), 0);
        unsetenv("SLUICE_APP_ID");

        /* A [kafka] value librdkafka takes but INI cannot say (a PEM with
         * line breaks) is named in a comment; the dump still loads. */
        setenv("SLUICE_KAFKA_CLIENT_ID", "x ;y\nz", 1);
        conf = load_ok(ini, 1);
        d1 = dump_str(conf);
        assert_non_null(strstr(d1,
                               "; client.id: set from the environment; "
                               "its value holds a ';' first or after a blank, "
                               "which starts a comment, not "
                               "possible in a config file\n"));
        free(d1);
        sl_conf_destroy(conf);
        assert_int_equal(roundtrip(ini, 1), 0);
        unsetenv("SLUICE_KAFKA_CLIENT_ID");
}

static void test_reference(void **state) {
        static const char *keys[] = {"app_id",
                                     "instance_id",
                                     "metrics_listen",
                                     "log_level",
                                     "commit_interval",
                                     "shutdown_grace",
                                     "transaction_timeout",
                                     "type",
                                     "input",
                                     "changelog",
                                     "dlq",
                                     "replication_factor",
                                     "input_partitions",
                                     "max_record_bytes",
                                     "catchup_rate",
                                     "output",
                                     "overflow",
                                     "rates",
                                     "default_rate",
                                     "ttl",
                                     "payload_cache",
                                     "default_target",
                                     "allowed_targets",
                                     "max_delay",
                                     "input_format",
                                     "payload_topic",
                                     "idle",
                                     "max_age",
                                     "max_items",
                                     "max_bytes",
                                     "output_format"};
        char *buf = NULL, needle[64];
        size_t size = 0;
        FILE *mem = open_memstream(&buf, &size);
        (void)state;

        sl_conf_reference(mem);
        fclose(mem);
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                snprintf(needle, sizeof(needle), "| `%s` |", keys[i]);
                if (!strstr(buf, needle))
                        fail_msg("reference lacks %s", keys[i]);
        }
        assert_non_null(strstr(buf, "### [sluice]\n"));
        assert_non_null(strstr(buf, "### [kafka]\n"));
        assert_non_null(
            strstr(buf, "### [pipeline NAME] with type = throttle"));
        assert_non_null(strstr(buf, "### [pipeline NAME] with type = delay"));
        assert_non_null(
            strstr(buf, "### [pipeline NAME] with type = debounce"));
        assert_non_null(strstr(buf, "| `commit_interval` | duration, "
                                    "1ms..60s | `100ms` |"));
        assert_non_null(strstr(buf, "| `changelog` | topic | "
                                    "`NAME.changelog` |"));
        assert_non_null(strstr(buf, "| `input` | topic | required |"));
        assert_non_null(strstr(buf, "| `payload_topic` | topic | (empty) |"));
        assert_non_null(
            strstr(buf, "| `payload_cache` | size, ≥ 1MiB | `64MiB` |"));
        assert_non_null(strstr(buf, "`group.id` (set app_id in [sluice])"));
        free(buf);
}

/* `sluice config ...`, with stdout and stderr captured. */

static int run_cmd(char **out, char **err, int argc, ...) {
        char *argv[16], opath[300], epath[300];
        int saved_out, saved_err, rc;
        va_list ap;
        FILE *fp;
        long n;

        va_start(ap, argc);
        for (int i = 0; i < argc; i++)
                argv[i] = va_arg(ap, char *);
        va_end(ap);
        argv[argc] = NULL;

        snprintf(opath, sizeof(opath), "%s/out", tmpdir);
        snprintf(epath, sizeof(epath), "%s/err", tmpdir);
        fflush(stdout);
        fflush(stderr);
        saved_out = dup(1);
        saved_err = dup(2);
        assert_non_null(freopen(opath, "w", stdout));
        assert_non_null(freopen(epath, "w", stderr));
        rc = sl_conf_cmd(argc, argv);
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, 1);
        dup2(saved_err, 2);
        close(saved_out);
        close(saved_err);

        for (int i = 0; i < 2; i++) {
                char **dst = i ? err : out;
                fp = fopen(i ? epath : opath, "r");
                assert_non_null(fp);
                fseek(fp, 0, SEEK_END);
                n = ftell(fp);
                rewind(fp);
                *dst = calloc(1, (size_t)n + 1);
                if (n)
                        assert_int_equal(fread(*dst, 1, (size_t)n, fp), n);
                fclose(fp);
                unlink(i ? epath : opath);
        }
        return rc;
}

static void test_cmd(void **state) {
        char *out, *err, *expect;
        (void)state;

        write_file(cfg_path, DELAY_OK);
        assert_int_equal(
            run_cmd(&out, &err, 4, "config", "check", "-c", cfg_path),
            SL_EXIT_OK);
        assert_true(asprintf(&expect, "%s: ok (1 pipeline)\n", cfg_path) > 0);
        assert_string_equal(out, expect);
        assert_string_equal(err, "");
        free(expect);
        free(out);
        free(err);

        assert_int_equal(run_cmd(&out, &err, 2, "config", "dump"),
                         SL_EXIT_USAGE);
        free(out);
        free(err);

        write_file(cfg_path, DELAY_OK "bogus = 1\n");
        assert_int_equal(run_cmd(&out, &err, 3, "config", "check", "-c"),
                         SL_EXIT_USAGE);
        free(out);
        free(err);
        assert_int_equal(
            run_cmd(&out, &err, 4, "config", "check", "--config", cfg_path),
            SL_EXIT_FAIL);
        assert_string_equal(out, "");
        assert_true(asprintf(&expect,
                             "%s:4: bogus: unknown key in [pipeline "
                             "timers]\n",
                             cfg_path) > 0);
        assert_string_equal(err, expect);
        free(expect);
        free(out);
        free(err);

        write_file(cfg_path, "[kafka]\nsasl.password = s3cret\n" DELAY_OK);
        assert_int_equal(
            run_cmd(&out, &err, 4, "config", "dump", "-c", cfg_path),
            SL_EXIT_OK);
        assert_non_null(strstr(out, "[pipeline timers]\ntype = delay\n"));
        assert_null(strstr(out, "s3cret"));
        free(out);
        free(err);

        assert_int_equal(run_cmd(&out, &err, 2, "config", "reference"),
                         SL_EXIT_OK);
        assert_non_null(strstr(out, "### [sluice]"));
        free(out);
        free(err);

        assert_int_equal(run_cmd(&out, &err, 3, "config", "check", "--help"),
                         SL_EXIT_OK);
        assert_non_null(strstr(out, "usage: sluice config check -c FILE"));
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 2, "config", "--help"),
                         SL_EXIT_OK);
        assert_non_null(strstr(out, "usage: sluice config check"));
        free(out);
        free(err);

        /* Usage errors: exit 2 with a usage line on stderr. */
        assert_int_equal(run_cmd(&out, &err, 2, "config", "frobnicate"),
                         SL_EXIT_USAGE);
        assert_non_null(strstr(err, "usage: sluice config"));
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 1, "config"), SL_EXIT_USAGE);
        assert_non_null(strstr(err, "usage: sluice config"));
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 3, "config", "check", "--frob"),
                         SL_EXIT_USAGE);
        assert_non_null(strstr(err, "usage: sluice config check"));
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 2, "config", "check"),
                         SL_EXIT_USAGE);
        assert_non_null(strstr(err, "-c FILE is required"));
        free(out);
        free(err);
        assert_int_equal(run_cmd(&out, &err, 3, "config", "reference", "x"),
                         SL_EXIT_USAGE);
        free(out);
        free(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_defaults),
            cmocka_unit_test(test_all_keys_set),
            cmocka_unit_test(test_long_line),
            cmocka_unit_test(test_unknown_key),
            cmocka_unit_test(test_key_for_wrong_type),
            cmocka_unit_test(test_bad_duration),
            cmocka_unit_test(test_instance_id_suffix),
            cmocka_unit_test(test_bad_size),
            cmocka_unit_test(test_bad_rate),
            cmocka_unit_test(test_int_out_of_bounds),
            cmocka_unit_test(test_missing_required),
            cmocka_unit_test(test_duplicate_key),
            cmocka_unit_test(test_unknown_section),
            cmocka_unit_test(test_bad_pipeline_name),
            cmocka_unit_test(test_duplicate_input),
            cmocka_unit_test(test_internal_topic_as_output),
            cmocka_unit_test(test_payload_topic_errors),
            cmocka_unit_test(test_bad_kafka),
            cmocka_unit_test(test_linger_over_timeout),
            cmocka_unit_test(test_idle_over_max_age),
            cmocka_unit_test(test_default_target_not_allowed),
            cmocka_unit_test(test_misc_errors),
            cmocka_unit_test(test_syntax_errors),
            cmocka_unit_test(test_no_pipelines_flag),
            cmocka_unit_test(test_missing_file),
            cmocka_unit_test(test_many_errors),
            cmocka_unit_test(test_env_overrides),
            cmocka_unit_test(test_dump_roundtrip),
            cmocka_unit_test(test_dump_roundtrip_values),
            cmocka_unit_test(test_env_roundtrip),
            cmocka_unit_test(test_reference),
            cmocka_unit_test(test_booleans),
            cmocka_unit_test(test_cmd),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
