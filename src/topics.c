/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topics.c — `sluice topics apply | check | create | describe`, and the
 * Admin API calls they need (see topics.h).  The plan and the judgement of
 * existing topics are in topicplan.c; this file talks to the broker and
 * prints.
 *
 * Output is one line per topic, first word the verdict, so a person reads it
 * and a script greps it:
 *
 *   created  notify.changelog   notify changelog, 3 partitions
 *   exists   notify.in          notify input, 3 partitions
 *   problem  notify.overflow    notify overflow: cleanup.policy is compact, ...
 *   missing  notify.dlq         notify dlq: would be created with 3 ...
 *   grown    notify.changelog   notify changelog: grown from 2 to 3 ...
 *   warning  notify.changelog   notify changelog: segment.ms is ...
 *
 * ("missing" and "grow" only from apply --dry-run).  apply creates what is
 * missing and adds the partitions a changelog, overflow or dlq lacks when
 * its input grew (the one change it makes to an existing topic, safe for
 * sluice's co-partitioned topics: see topicplan.h); it never alters a
 * topic's configs.  A config that differs (drift, topicplan.h) is a
 * "warning" line per difference, so a platform team's change to one
 * setting does not stop every later rollout at the init container;
 * --strict makes drift a problem, as check always does.  A second apply
 * changes nothing and says so.  check reports every problem of every
 * topic in one run.  Exit codes: 0 all good (apply: warnings allowed),
 * 1 problems or errors, 2 usage.
 */
#include "topics.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kafka.h"
#include "log.h"
#include "parse.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 30000

struct sl_topics_admin_s {
        rd_kafka_t *rk;
        rd_kafka_queue_t *rkqu; /* admin results */
        int timeout_ms;
        char bootstrap[256]; /* for error messages */
};

/*
 * Admin client
 */

static void conf_bootstrap(const sl_conf_t *conf, char *buf, size_t size) {
        snprintf(buf, size, "(bootstrap.servers not set)");
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, "bootstrap.servers") ||
                    !strcmp(conf->kafka[i].key, "metadata.broker.list"))
                        snprintf(buf, size, "%s", conf->kafka[i].value);
}

sl_topics_admin_t *sl_topics_admin_new(const sl_conf_t *conf, int timeout_ms,
                                       char *errstr, size_t errstr_size) {
        sl_topics_admin_t *adm;
        rd_kafka_conf_t *kconf;

        if (!conf || timeout_ms <= 0) {
                snprintf(errstr, errstr_size, "invalid arguments");
                return NULL;
        }
        kconf = sl_conf_rdkafka(conf, errstr, errstr_size);
        if (!kconf)
                return NULL;
        rd_kafka_conf_set_log_cb(kconf, sl_kafka_log_cb);

        adm = sl_calloc(1, sizeof(*adm));
        adm->timeout_ms = timeout_ms;
        conf_bootstrap(conf, adm->bootstrap, sizeof(adm->bootstrap));
        adm->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kconf, errstr, errstr_size);
        if (!adm->rk) {
                rd_kafka_conf_destroy(kconf);
                free(adm);
                return NULL;
        }
        adm->rkqu = rd_kafka_queue_new(adm->rk);
        return adm;
}

void sl_topics_admin_destroy(sl_topics_admin_t *adm) {
        if (!adm)
                return;
        rd_kafka_queue_destroy(adm->rkqu);
        rd_kafka_destroy(adm->rk);
        free(adm);
}

static int unreachable(sl_topics_admin_t *adm, const char *what,
                       rd_kafka_resp_err_t err, char *errstr,
                       size_t errstr_size) {
        int timeout = err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
                      err == RD_KAFKA_RESP_ERR__TRANSPORT;

        snprintf(errstr, errstr_size, "%s: %s%s (bootstrap.servers %s, %d ms)",
                 what, rd_kafka_err2str(err),
                 timeout ? ": the Kafka cluster did not answer" : "",
                 adm->bootstrap, adm->timeout_ms);
        return timeout ? -ETIMEDOUT : -EIO;
}

/* Waits for the one result event of an admin request on adm->rkqu.  The
 * request's own timeout makes librdkafka emit a timed-out result; the extra
 * second here only guards against a lost event. */
static rd_kafka_event_t *admin_wait(sl_topics_admin_t *adm,
                                    rd_kafka_event_type_t type,
                                    const char *what, char *errstr,
                                    size_t errstr_size) {
        int64_t end = sl_mono_us() + (int64_t)(adm->timeout_ms + 1000) * 1000;
        rd_kafka_event_t *ev;

        for (;;) {
                int64_t left_ms = (end - sl_mono_us()) / 1000;
                if (left_ms <= 0) {
                        unreachable(adm, what, RD_KAFKA_RESP_ERR__TIMED_OUT,
                                    errstr, errstr_size);
                        return NULL;
                }
                ev = rd_kafka_queue_poll(adm->rkqu, (int)left_ms);
                if (!ev)
                        continue;
                if (rd_kafka_event_type(ev) == type)
                        break;
                rd_kafka_event_destroy(ev);
        }
        if (rd_kafka_event_error(ev)) {
                unreachable(adm, what, rd_kafka_event_error(ev), errstr,
                            errstr_size);
                rd_kafka_event_destroy(ev);
                return NULL;
        }
        return ev;
}

static rd_kafka_AdminOptions_t *admin_options(sl_topics_admin_t *adm,
                                              rd_kafka_admin_op_t op) {
        rd_kafka_AdminOptions_t *opts = rd_kafka_AdminOptions_new(adm->rk, op);
        char err[256];

        rd_kafka_AdminOptions_set_request_timeout(opts, adm->timeout_ms, err,
                                                  sizeof(err));
        if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS ||
            op == RD_KAFKA_ADMIN_OP_CREATEPARTITIONS)
                rd_kafka_AdminOptions_set_operation_timeout(
                    opts, adm->timeout_ms, err, sizeof(err));
        return opts;
}

/* "not authorized: OP on TOPIC name", what `sluice acls` calls it. */
static char *strfmt_authz(const char *op, const char *name) {
        char *s;
        if (asprintf(&s, "not authorized: %s on TOPIC %s", op, name) < 0)
                sl_assert(!"out of memory");
        return s;
}

/* Cluster metadata of every topic; never triggers auto-creation (a request
 * for all topics names none). */
static int metadata(sl_topics_admin_t *adm,
                    const struct rd_kafka_metadata **mdp, char *errstr,
                    size_t errstr_size) {
        rd_kafka_resp_err_t err =
            rd_kafka_metadata(adm->rk, 1, NULL, mdp, adm->timeout_ms);

        if (err)
                return unreachable(adm, "metadata", err, errstr, errstr_size);
        return 0;
}

static const rd_kafka_metadata_topic_t *
md_topic(const struct rd_kafka_metadata *md, const char *name) {
        for (int i = 0; i < md->topic_cnt; i++)
                if (!strcmp(md->topics[i].topic, name))
                        return &md->topics[i];
        return NULL;
}

static int describe(sl_topics_admin_t *adm, sl_topics_observed_t *obs,
                    int *unknownp, char *errstr, size_t errstr_size) {
        rd_kafka_ConfigResource_t **res;
        rd_kafka_AdminOptions_t *opts;
        const rd_kafka_ConfigResource_t **rres;
        rd_kafka_event_t *ev;
        size_t rcnt;
        int cnt = 0;

        res = sl_calloc(obs->cnt, sizeof(*res));
        for (int i = 0; i < obs->cnt; i++)
                if (obs->topics[i].exists)
                        res[cnt++] = rd_kafka_ConfigResource_new(
                            RD_KAFKA_RESOURCE_TOPIC, obs->topics[i].name);
        if (!cnt) {
                free(res);
                return 0;
        }
        opts = admin_options(adm, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
        rd_kafka_DescribeConfigs(adm->rk, res, cnt, opts, adm->rkqu);
        rd_kafka_AdminOptions_destroy(opts);
        rd_kafka_ConfigResource_destroy_array(res, cnt);
        free(res);

        ev = admin_wait(adm, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT,
                        "DescribeConfigs", errstr, errstr_size);
        if (!ev)
                return -ETIMEDOUT;
        rres = rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &rcnt);
        for (size_t i = 0; i < rcnt; i++) {
                const rd_kafka_ConfigEntry_t **entries;
                sl_topic_state_t *st = NULL;
                size_t ecnt;

                for (int j = 0; j < obs->cnt && !st; j++)
                        if (!strcmp(obs->topics[j].name,
                                    rd_kafka_ConfigResource_name(rres[i])))
                                st = &obs->topics[j];
                if (!st)
                        continue;
                if (rd_kafka_ConfigResource_error(rres[i])) {
                        const char *e =
                            rd_kafka_ConfigResource_error_string(rres[i]);
                        if (rd_kafka_ConfigResource_error(rres[i]) ==
                            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                                (*unknownp)++;
                        free(st->error);
                        if (rd_kafka_ConfigResource_error(rres[i]) ==
                            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                                st->error =
                                    strfmt_authz("DESCRIBE_CONFIGS", st->name);
                        else
                                st->error = sl_strdup(
                                    e ? e
                                      : rd_kafka_err2str(
                                            rd_kafka_ConfigResource_error(
                                                rres[i])));
                        continue;
                }
                entries = rd_kafka_ConfigResource_configs(rres[i], &ecnt);
                for (size_t k = 0; k < ecnt; k++)
                        sl_topicplan_state_set_config(
                            st, rd_kafka_ConfigEntry_name(entries[k]),
                            rd_kafka_ConfigEntry_value(entries[k]),
                            rd_kafka_ConfigEntry_source(entries[k]) ==
                                RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
                /* A topic with no configs at all is still described. */
                st->described = 1;
        }
        rd_kafka_event_destroy(ev);
        return 0;
}

/* Whether name is one of the cnt in list. */
static int named(const char *const *list, int cnt, const char *name) {
        for (int i = 0; i < cnt; i++)
                if (!strcmp(list[i], name))
                        return 1;
        return 0;
}

/* One look: the metadata, then the configs.  *unsettledp counts the
 * topics a cluster is still telling apart: one the metadata shows but
 * DescribeConfigs calls unknown, and one of the cnt in expect (known to
 * exist) that the metadata leaves out or shows without a leader. */
static int observe_once(sl_topics_admin_t *adm, const char *const *names,
                        int cnt, const char *const *expect, int expect_cnt,
                        sl_topics_observed_t **obsp, int *unsettledp,
                        int *brokersp, char *errstr, size_t errstr_size) {
        const struct rd_kafka_metadata *md;
        sl_topics_observed_t *obs;
        int r, unsettled = 0;

        *obsp = NULL;
        if ((r = metadata(adm, &md, errstr, errstr_size)))
                return r;
        *brokersp = md->broker_cnt;
        obs = sl_topicplan_observed_new();
        for (int i = 0; i < cnt; i++) {
                const rd_kafka_metadata_topic_t *t = md_topic(md, names[i]);
                int expected = named(expect, expect_cnt, names[i]);
                sl_topic_state_t *st;

                if (sl_topicplan_observed_find(obs, names[i]))
                        continue;
                st = sl_topicplan_observed_add(obs, names[i], t != NULL,
                                               t ? t->partition_cnt : 0);
                unsettled += expected && (!t || t->err);
                for (int p = 0; t && p < t->partition_cnt; p++) {
                        if (!st->replicas ||
                            t->partitions[p].replica_cnt < st->replicas)
                                st->replicas = t->partitions[p].replica_cnt;
                        if (expected && t->partitions[p].leader < 0) {
                                unsettled++;
                                break;
                        }
                }
                if (t && t->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        st->error = strfmt_authz("DESCRIBE (granted with READ "
                                                 "or WRITE)",
                                                 st->name);
                else if (t && t->err)
                        st->error = sl_strdup(rd_kafka_err2str(t->err));
        }
        rd_kafka_metadata_destroy(md);
        if ((r = describe(adm, obs, &unsettled, errstr, errstr_size))) {
                sl_topicplan_observed_destroy(obs);
                return r;
        }
        *unsettledp = unsettled;
        *obsp = obs;
        return 0;
}

int sl_topics_observe_expect(sl_topics_admin_t *adm, const char *const *names,
                             int cnt, const char *const *expect, int expect_cnt,
                             sl_topics_observed_t **obsp, char *errstr,
                             size_t errstr_size) {
        int settle_ms = adm->timeout_ms < SL_TOPICS_SETTLE_MS
                            ? adm->timeout_ms
                            : SL_TOPICS_SETTLE_MS;
        int64_t end = sl_mono_us() + (int64_t)settle_ms * 1000;
        int r, unsettled, brokers;

        for (;;) {
                if ((r = observe_once(adm, names, cnt, expect, expect_cnt, obsp,
                                      &unsettled, &brokers, errstr,
                                      errstr_size)))
                        return r;
                /* One node is never behind itself. */
                if (!unsettled || brokers < 2 || sl_mono_us() > end)
                        return 0;
                sl_log(LOG_DEBUG, "TOPICS",
                       "%d topic(s) not yet known to every node; asking "
                       "again",
                       unsettled);
                sl_topicplan_observed_destroy(*obsp);
                *obsp = NULL;
                rd_kafka_poll(adm->rk, 200);
        }
}

int sl_topics_observe(sl_topics_admin_t *adm, const char *const *names, int cnt,
                      sl_topics_observed_t **obsp, char *errstr,
                      size_t errstr_size) {
        return sl_topics_observe_expect(adm, names, cnt, NULL, 0, obsp, errstr,
                                        errstr_size);
}

/* Waits until the metadata shows name with partitions partitions, each
 * with a leader: a created topic is then usable by the next command. */
static int await_topic(sl_topics_admin_t *adm, const char *name, int partitions,
                       char *errstr, size_t errstr_size) {
        int64_t end = sl_mono_us() + (int64_t)adm->timeout_ms * 1000;

        for (;;) {
                const struct rd_kafka_metadata *md;
                const rd_kafka_metadata_topic_t *t;
                int ok, r;

                if ((r = metadata(adm, &md, errstr, errstr_size)))
                        return r;
                t = md_topic(md, name);
                ok = t && !t->err &&
                     (partitions <= 0 || t->partition_cnt == partitions);
                for (int p = 0; ok && p < t->partition_cnt; p++)
                        ok = t->partitions[p].leader >= 0;
                rd_kafka_metadata_destroy(md);
                if (ok)
                        return 0;
                if (sl_mono_us() > end) {
                        snprintf(errstr, errstr_size,
                                 "created, but not in the metadata after %d ms",
                                 adm->timeout_ms);
                        return -ETIMEDOUT;
                }
                rd_kafka_poll(adm->rk, 100);
        }
}

int sl_topics_create(sl_topics_admin_t *adm, const char *name, int partitions,
                     int replication_factor, const char *const *keys,
                     const char *const *values, int cnt, char *errstr,
                     size_t errstr_size) {
        rd_kafka_NewTopic_t *nt;
        rd_kafka_AdminOptions_t *opts;
        rd_kafka_event_t *ev;
        const rd_kafka_topic_result_t **tres;
        rd_kafka_resp_err_t err;
        size_t tcnt;

        if (!adm || !name || partitions <= 0 || cnt < 0) {
                snprintf(errstr, errstr_size, "invalid arguments");
                return -EINVAL;
        }
        nt = rd_kafka_NewTopic_new(name, partitions, replication_factor, errstr,
                                   errstr_size);
        if (!nt)
                return -EINVAL;
        for (int i = 0; i < cnt; i++) {
                if (rd_kafka_NewTopic_set_config(nt, keys[i], values[i])) {
                        snprintf(errstr, errstr_size, "config %s=%s refused",
                                 keys[i], values[i]);
                        rd_kafka_NewTopic_destroy(nt);
                        return -EINVAL;
                }
        }
        opts = admin_options(adm, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_CreateTopics(adm->rk, &nt, 1, opts, adm->rkqu);
        rd_kafka_AdminOptions_destroy(opts);
        rd_kafka_NewTopic_destroy(nt);

        ev = admin_wait(adm, RD_KAFKA_EVENT_CREATETOPICS_RESULT, "CreateTopics",
                        errstr, errstr_size);
        if (!ev)
                return -ETIMEDOUT;
        tres = rd_kafka_CreateTopics_result_topics(
            rd_kafka_event_CreateTopics_result(ev), &tcnt);
        err = tcnt == 1 ? rd_kafka_topic_result_error(tres[0])
                        : RD_KAFKA_RESP_ERR__BAD_MSG;
        if (err && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                snprintf(errstr, errstr_size, "%s",
                         tcnt == 1 &&
                                 rd_kafka_topic_result_error_string(tres[0])
                             ? rd_kafka_topic_result_error_string(tres[0])
                             : rd_kafka_err2str(err));
        rd_kafka_event_destroy(ev);
        if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                return -EEXIST;
        if (err)
                return -EIO;
        return await_topic(adm, name, partitions, errstr, errstr_size);
}

int sl_topics_grow(sl_topics_admin_t *adm, const char *name, int partitions,
                   char *errstr, size_t errstr_size) {
        rd_kafka_NewPartitions_t *np;
        rd_kafka_AdminOptions_t *opts;
        rd_kafka_event_t *ev;
        const rd_kafka_topic_result_t **tres;
        rd_kafka_resp_err_t err;
        size_t tcnt;

        if (!adm || !name || partitions <= 0) {
                snprintf(errstr, errstr_size, "invalid arguments");
                return -EINVAL;
        }
        np = rd_kafka_NewPartitions_new(name, (size_t)partitions, errstr,
                                        errstr_size);
        if (!np)
                return -EINVAL;
        opts = admin_options(adm, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
        rd_kafka_CreatePartitions(adm->rk, &np, 1, opts, adm->rkqu);
        rd_kafka_AdminOptions_destroy(opts);
        rd_kafka_NewPartitions_destroy(np);

        ev = admin_wait(adm, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT,
                        "CreatePartitions", errstr, errstr_size);
        if (!ev)
                return -ETIMEDOUT;
        tres = rd_kafka_CreatePartitions_result_topics(
            rd_kafka_event_CreatePartitions_result(ev), &tcnt);
        err = tcnt == 1 ? rd_kafka_topic_result_error(tres[0])
                        : RD_KAFKA_RESP_ERR__BAD_MSG;
        if (err)
                snprintf(errstr, errstr_size, "%s",
                         tcnt == 1 &&
                                 rd_kafka_topic_result_error_string(tres[0])
                             ? rd_kafka_topic_result_error_string(tres[0])
                             : rd_kafka_err2str(err));
        rd_kafka_event_destroy(ev);
        if (err)
                return -EIO;
        return await_topic(adm, name, partitions, errstr, errstr_size);
}

int sl_topics_create_spec(sl_topics_admin_t *adm, const sl_topic_spec_t *spec,
                          int partitions, char *errstr, size_t errstr_size) {
        const char *keys[SL_TOPIC_SETTINGS_MAX], *values[SL_TOPIC_SETTINGS_MAX];
        int cnt = 0;

        for (int i = 0; i < spec->setting_cnt; i++) {
                const sl_topic_setting_t *s = &spec->settings[i];
                int dup = 0;
                if (!s->value[0])
                        continue;
                for (int j = 0; j < cnt && !dup; j++)
                        dup = !strcmp(keys[j], s->key);
                if (dup)
                        continue;
                keys[cnt] = s->key;
                values[cnt++] = s->value;
        }
        return sl_topics_create(adm, spec->name, partitions,
                                spec->replication_factor, keys, values, cnt,
                                errstr, errstr_size);
}

/*
 * Command line
 */

typedef struct topics_opts_s {
        const char *conf_path;
        int timeout_ms;
        int dry_run;
        int strict;
        int all;
        int partitions;
        int replication_factor;
        const char **cfg_keys; /* --set key=value, split in place */
        const char **cfg_values;
        int cfg_cnt;
        char **args; /* positional arguments */
        int arg_cnt;
} topics_opts_t;

static const char *sub_usage[] = {
    "apply",
    "usage: sluice topics apply -c FILE [--dry-run] [--strict]\n"
    "                           [--timeout DURATION]\n"
    "\n"
    "Creates every missing topic of every pipeline with the Admin API: the\n"
    "changelog (compacted), the throttle's overflow (delete, retention =\n"
    "ttl + 1h) and rates (compacted, 1 partition), the dlq (delete, 7d),\n"
    "all with the input's partition count.  A missing input is created\n"
    "only when the pipeline sets input_partitions.  A changelog, overflow\n"
    "or dlq with fewer partitions than its input (the input grew) gets the\n"
    "missing partitions.  Existing topics' configs are never altered.  A\n"
    "config value or replica count that differs from the plan (drift) is a\n"
    "\"warning\" line per difference and exit 0; what sluice cannot run\n"
    "with (a topic missing that apply may not create, a failed create,\n"
    "partition counts, min.insync.replicas above the replicas) is a\n"
    "\"problem\" and exit 1.\n"
    "Output topics belong to you; a missing one is reported.\n"
    "\n"
    "  -c, --config FILE      the sluice config file\n"
    "  -n, --dry-run          print what would be created or grown, change\n"
    "                         nothing\n"
    "      --strict           drift is a problem too (exit 1), as in check\n"
    "  -t, --timeout DURATION bound on each broker request (default 30s)\n",

    "check",
    "usage: sluice topics check -c FILE [--timeout DURATION]\n"
    "\n"
    "Verifies every topic of every pipeline and reports every problem in one\n"
    "run: missing topics, partition counts that differ from the input's,\n"
    "replica counts that differ from replication_factor (when set) or are\n"
    "below min.insync.replicas on a topic sluice writes,\n"
    "cleanup policies, changelog settings that would make rebuilds slow\n"
    "(segment.ms, max.compaction.lag.ms <= 1d; min.compaction.lag.ms <= 1h;\n"
    "min.cleanable.dirty.ratio <= 0.5; 1min <= delete.retention.ms <= 1d),\n"
    "and overflow retention shorter than the pipeline's ttl.\n"
    "Exit 0 and \"ok\" when all is well, 1 otherwise.\n"
    "\n"
    "  -c, --config FILE      the sluice config file\n"
    "  -t, --timeout DURATION bound on each broker request (default 30s)\n",

    "create",
    "usage: sluice topics create -c FILE NAME --partitions N\n"
    "                            [--replication-factor N] [--set K=V]...\n"
    "\n"
    "Creates one topic (for tests and demos).  An existing topic with the\n"
    "same partition count is fine (\"exists\", exit 0); another count is an\n"
    "error (exit 1).  Configs of an existing topic are not compared.\n"
    "\n"
    "  -c, --config FILE            the sluice config file ([kafka] section)\n"
    "  -p, --partitions N           partition count (required)\n"
    "  -r, --replication-factor N   default -1: the broker's default\n"
    "      --set KEY=VALUE          a topic config; repeatable\n"
    "  -t, --timeout DURATION       bound on each broker request\n",

    "describe",
    "usage: sluice topics describe -c FILE [--all] [TOPIC]...\n"
    "\n"
    "Prints each topic (default: every topic of the config's pipelines) on\n"
    "one line: its name, partitions=N and the configs set on the topic\n"
    "itself as key=value, or \"missing\".  With --all, every config,\n"
    "defaults included.  Exit 1 when a topic is missing.\n"
    "\n"
    "  -c, --config FILE      the sluice config file\n"
    "  -a, --all              include configs left at their defaults\n"
    "  -t, --timeout DURATION bound on each broker request (default 30s)\n",
};

static void usage_topics(FILE *out) {
        fprintf(out,
                "usage: sluice topics <subcommand> -c FILE [options]\n"
                "\n"
                "subcommands:\n"
                "  apply      create the missing topics of every pipeline\n"
                "  check      verify partition counts and configs\n"
                "  create     create one topic\n"
                "  describe   print topics with their partitions and "
                "configs\n"
                "\n"
                "`sluice topics <subcommand> --help` describes each.\n");
}

static const char *sub_help(const char *sub) {
        for (size_t i = 0; i < SL_ARRAY_SIZE(sub_usage); i += 2)
                if (!strcmp(sub_usage[i], sub))
                        return sub_usage[i + 1];
        return NULL;
}

/* --timeout DURATION: 1 ms to 1 h.  Returns 0, or -1 (said on stderr). */
static int opt_timeout(const char *sub, const char *arg, topics_opts_t *o) {
        char err[128];
        int64_t ms;

        if (sl_parse_duration_ms(arg, &ms, err, sizeof(err)) == -1) {
                fprintf(stderr, "sluice topics %s: --timeout %s: %s\n", sub,
                        arg, err);
                return -1;
        }
        if (ms <= 0 || ms > 3600000) {
                fprintf(stderr,
                        "sluice topics %s: --timeout %s: must be between 1ms "
                        "and 1h\n",
                        sub, arg);
                return -1;
        }
        o->timeout_ms = (int)ms;
        return 0;
}

/* --partitions N (1 to 100000) when c is 'p', --replication-factor N (-1
 * for the broker's default, or 1 to 1000) when 'r'.  Returns 0, or -1
 * (said on stderr). */
static int opt_count(const char *sub, int c, const char *arg,
                     topics_opts_t *o) {
        char *end;
        long n;

        errno = 0;
        n = strtol(arg, &end, 10);
        if (errno || end == arg || *end ||
            (c == 'p' && (n < 1 || n > 100000)) ||
            (c == 'r' && (n < -1 || n == 0 || n > 1000))) {
                fprintf(stderr, "sluice topics %s: %s: invalid count '%s'\n",
                        sub, c == 'p' ? "--partitions" : "--replication-factor",
                        arg);
                return -1;
        }
        if (c == 'p')
                o->partitions = (int)n;
        else
                o->replication_factor = (int)n;
        return 0;
}

/* Parses argv (argv[0] is the subcommand).  Returns -1 to exit with
 * SL_EXIT_OK (help printed), 0 to go on, or SL_EXIT_USAGE. */
static int parse_opts(const char *sub, int argc, char **argv,
                      topics_opts_t *o) {
        enum { OPT_SET = 1000, OPT_STRICT };
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"set", required_argument, NULL, OPT_SET},
            {"dry-run", no_argument, NULL, 'n'},
            {"strict", no_argument, NULL, OPT_STRICT},
            {"timeout", required_argument, NULL, 't'},
            {"all", no_argument, NULL, 'a'},
            {"partitions", required_argument, NULL, 'p'},
            {"replication-factor", required_argument, NULL, 'r'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;

        memset(o, 0, sizeof(*o));
        o->timeout_ms = DEFAULT_TIMEOUT_MS;
        o->replication_factor = -1;
        o->cfg_keys = sl_calloc(argc, sizeof(*o->cfg_keys));
        o->cfg_values = sl_calloc(argc, sizeof(*o->cfg_values));
        optind = 0; /* glibc: full reinitialisation */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:nt:ap:r:h", longopts, NULL)) !=
               -1) {
                switch (c) {
                case OPT_SET: {
                        /* create's topic configs: --set KEY=VALUE.  (It
                         * was --config KEY=VALUE, which a file name with
                         * '=' made ambiguous: --config is -c only.) */
                        char *eq = strchr(optarg, '=');
                        if (strcmp(sub, "create") || !eq || eq == optarg) {
                                fprintf(stderr,
                                        "sluice topics %s: --set %s: %s\n", sub,
                                        optarg,
                                        strcmp(sub, "create")
                                            ? "only create sets topic "
                                              "configs"
                                            : "want KEY=VALUE");
                                fputs(sub_help(sub), stderr);
                                return SL_EXIT_USAGE;
                        }
                        *eq = '\0';
                        o->cfg_keys[o->cfg_cnt] = optarg;
                        o->cfg_values[o->cfg_cnt++] = eq + 1;
                        break;
                }
                case 'c':
                        if (o->conf_path) {
                                fprintf(stderr,
                                        "sluice topics %s: -c/--config FILE "
                                        "given twice (%s, %s)%s\n",
                                        sub, o->conf_path, optarg,
                                        strcmp(sub, "create")
                                            ? ""
                                            : "; a topic config is --set "
                                              "KEY=VALUE");
                                return SL_EXIT_USAGE;
                        }
                        o->conf_path = optarg;
                        break;
                case OPT_STRICT:
                        if (strcmp(sub, "apply")) {
                                fprintf(stderr,
                                        "sluice topics %s: --strict is an "
                                        "option of apply\n",
                                        sub);
                                return SL_EXIT_USAGE;
                        }
                        o->strict = 1;
                        break;
                case 'n':
                        o->dry_run = 1;
                        break;
                case 'a':
                        o->all = 1;
                        break;
                case 't':
                        if (opt_timeout(sub, optarg, o))
                                return SL_EXIT_USAGE;
                        break;
                case 'p':
                case 'r':
                        if (opt_count(sub, c, optarg, o))
                                return SL_EXIT_USAGE;
                        break;
                case 'h':
                        fputs(sub_help(sub), stdout);
                        return -1;
                case ':':
                        fprintf(stderr,
                                "sluice topics %s: option %s needs a "
                                "value\n",
                                sub, argv[optind - 1]);
                        fputs(sub_help(sub), stderr);
                        return SL_EXIT_USAGE;
                default:
                        fprintf(stderr, "sluice topics %s: unknown option %s\n",
                                sub, argv[optind - 1]);
                        fputs(sub_help(sub), stderr);
                        return SL_EXIT_USAGE;
                }
        }
        o->args = argv + optind;
        o->arg_cnt = argc - optind;
        if (!o->conf_path) {
                fprintf(stderr, "sluice topics %s: -c FILE is required\n", sub);
                fputs(sub_help(sub), stderr);
                return SL_EXIT_USAGE;
        }
        return 0;
}

static void opts_free(topics_opts_t *o) {
        free(o->cfg_keys);
        free(o->cfg_values);
}

/* Loads the config and connects.  Returns 0, or an exit code. */
static int open_admin(const char *sub, const topics_opts_t *o,
                      sl_conf_t **confp, sl_topics_admin_t **admp) {
        char errstr[512];

        *admp = NULL;
        /* `create` needs only [kafka]: a file without pipelines will do. */
        if (sl_conf_load_flags(
                o->conf_path,
                SL_CONF_ENV |
                    (strcmp(sub, "create") == 0 ? SL_CONF_NO_PIPES : 0),
                confp, stderr) != 0) {
                fprintf(stderr, "sluice topics %s: %s: invalid config\n", sub,
                        o->conf_path);
                return SL_EXIT_FAIL;
        }
        sl_log_set_level((*confp)->log_level);
        *admp =
            sl_topics_admin_new(*confp, o->timeout_ms, errstr, sizeof(errstr));
        if (!*admp) {
                fprintf(stderr, "sluice topics %s: %s\n", sub, errstr);
                sl_conf_destroy(*confp);
                *confp = NULL;
                return SL_EXIT_FAIL;
        }
        return 0;
}

/* The plan's topics as the cluster has them; expect (expect_cnt names) were
 * created or found existing just now (sl_topics_observe_expect). */
static int observe_plan(const char *sub, sl_topics_admin_t *adm,
                        const sl_topicplan_t *plan, char *const *expect,
                        int expect_cnt, sl_topics_observed_t **obsp) {
        const char **names = sl_calloc(plan->cnt, sizeof(*names));
        int cnt = sl_topicplan_names(plan, names);
        char errstr[512];
        int r;

        r = sl_topics_observe_expect(adm, names, cnt,
                                     (const char *const *)expect, expect_cnt,
                                     obsp, errstr, sizeof(errstr));
        free(names);
        if (r) {
                fprintf(stderr, "sluice topics %s: %s\n", sub, errstr);
                return SL_EXIT_FAIL;
        }
        return 0;
}

/* Width of the name column: the longest topic name of the plan. */
static int name_width = 30;

static void set_name_width(const sl_topicplan_t *plan) {
        name_width = 1;
        for (int i = 0; i < plan->cnt; i++)
                name_width =
                    SL_MAX(name_width, (int)strlen(plan->specs[i].name));
}

/* "created  notify.changelog  notify changelog, 3 partitions" */
static void print_topic(const char *verdict, const sl_topic_spec_t *spec,
                        int partitions, const char *text) {
        printf("%-8s %-*s  %s %s", verdict, name_width, spec->name,
               spec->pipeline, spec->def->name);
        if (text)
                printf(": %s\n", text);
        else if (partitions > 0)
                printf(", %d partition%s\n", partitions,
                       partitions == 1 ? "" : "s");
        else
                printf("\n");
}

/* v's problems as "problem" lines: one each, or joined on one line
 * (apply); skip_drift leaves out the drift (apply warns of it). */
static void print_problems(const sl_topic_verdict_t *v, int joined,
                           int skip_drift) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int n = 0;

        if (!joined) {
                for (int i = 0; i < v->problem_cnt; i++)
                        if (!(skip_drift && v->drift[i]))
                                print_topic("problem", v->spec, 0,
                                            v->problems[i]);
                return;
        }
        f = open_memstream(&buf, &size);
        for (int i = 0; i < v->problem_cnt; i++)
                if (!(skip_drift && v->drift[i]))
                        fprintf(f, "%s%s", n++ ? "; " : "", v->problems[i]);
        fclose(f);
        print_topic("problem", v->spec, 0, buf);
        free(buf);
}

static int observed_parts(const sl_topics_observed_t *obs, const char *name) {
        const sl_topic_state_t *st = sl_topicplan_observed_find(obs, name);
        return st && st->exists ? st->partitions : 0;
}

/* 1 when name occurs in list[0..cnt). */
static int in_list(char **list, int cnt, const char *name) {
        for (int i = 0; i < cnt; i++)
                if (!strcmp(list[i], name))
                        return 1;
        return 0;
}

/* "grown  notify.changelog  notify changelog: grown from 2 to 3 partitions"
 * when apply grew v's topic; returns 1 when it printed. */
static int print_grown(const sl_topic_verdict_t *v,
                       const sl_topics_observed_t *obs, char **grown,
                       const int *grown_from, int grown_cnt) {
        char text[96];

        for (int j = 0; j < grown_cnt; j++) {
                if (strcmp(grown[j], v->spec->name))
                        continue;
                snprintf(text, sizeof(text), "grown from %d to %d partitions",
                         grown_from[j], observed_parts(obs, v->spec->name));
                print_topic("grown", v->spec, 0, text);
                return 1;
        }
        return 0;
}

/* What `topics apply` did, topic by topic (names point into the plan). */
typedef struct apply_s {
        char **created, **failed, **failed_why, **printed, **grown;
        char **expect; /* created, or found existing when creating it */
        int *grown_from;
        int created_cnt, failed_cnt, printed_cnt, grown_cnt, expect_cnt;
        int attempts;
        int problems, existed, would_create, would_grow;
        int warnings, drifted; /* drift lines, topics with drift */
} apply_t;

/* Creates what is missing, inputs first (plan order), and adds the
 * partitions sluice's own topics lack: their partition p only holds what
 * was written for input partition p, so the new ones start empty and
 * nothing moves (topicplan.h).  Stops at a timeout: the cluster is gone. */
static void apply_changes(apply_t *ap, sl_topics_admin_t *adm,
                          const sl_topicplan_eval_t *ev,
                          const sl_topics_observed_t *obs) {
        for (int i = 0; i < ev->cnt; i++) {
                const sl_topic_verdict_t *v = &ev->verdicts[i];
                int create =
                    v->status == SL_TOPIC_MISSING && v->create_parts > 0 &&
                    !in_list(ap->created, ap->created_cnt, v->spec->name);
                int grow = v->status == SL_TOPIC_BAD && v->grow_parts > 0 &&
                           !in_list(ap->grown, ap->grown_cnt, v->spec->name);
                char errstr[512];
                int r;

                if ((!create && !grow) ||
                    in_list(ap->failed, ap->failed_cnt, v->spec->name))
                        continue;
                ap->attempts++;
                if (create) {
                        r = sl_topics_create_spec(adm, v->spec, v->create_parts,
                                                  errstr, sizeof(errstr));
                } else {
                        ap->grown_from[ap->grown_cnt] =
                            observed_parts(obs, v->spec->name);
                        r = sl_topics_grow(adm, v->spec->name, v->grow_parts,
                                           errstr, sizeof(errstr));
                }
                if (r == 0 || (create && r == -EEXIST))
                        ap->expect[ap->expect_cnt++] = v->spec->name;
                if (r == 0) {
                        if (create)
                                ap->created[ap->created_cnt++] = v->spec->name;
                        else
                                ap->grown[ap->grown_cnt++] = v->spec->name;
                        sl_log(LOG_DEBUG, "TOPICS", "%s %s %d partition(s)",
                               v->spec->name,
                               create ? "created with" : "grown to",
                               create ? v->create_parts : v->grow_parts);
                } else if (!(create && r == -EEXIST)) {
                        ap->failed[ap->failed_cnt] = v->spec->name;
                        ap->failed_why[ap->failed_cnt++] = sl_strdup(errstr);
                        if (r == -ETIMEDOUT)
                                break;
                }
        }
}

/* One line (or a topic's problems) for verdict v, as the broker now has
 * it, counted in ap. */
static void apply_report_one(apply_t *ap, const topics_opts_t *o,
                             const sl_topic_verdict_t *v,
                             const sl_topics_observed_t *obs) {
        const char *name = v->spec->name;
        int fi = -1;

        for (int j = 0; j < ap->failed_cnt; j++)
                if (!strcmp(ap->failed[j], name))
                        fi = j;
        if (fi >= 0) {
                char *text;
                if (asprintf(&text, "%s failed: %s",
                             v->status == SL_TOPIC_MISSING
                                 ? "create"
                                 : "adding partitions",
                             ap->failed_why[fi]) < 0)
                        sl_assert(!"out of memory");
                print_topic("problem", v->spec, 0, text);
                free(text);
                ap->problems++;
        } else if (o->dry_run && v->status == SL_TOPIC_MISSING &&
                   v->create_parts > 0 && !v->spec->conflict) {
                char text[64];
                if (in_list(ap->printed, ap->printed_cnt, name))
                        return;
                snprintf(text, sizeof(text),
                         "would be created with %d partition%s",
                         v->create_parts, v->create_parts == 1 ? "" : "s");
                print_topic("missing", v->spec, 0, text);
                ap->would_create++;
        } else if (o->dry_run && v->status == SL_TOPIC_BAD &&
                   v->grow_parts > 0 && v->problem_cnt == 1) {
                char text[96];
                if (in_list(ap->printed, ap->printed_cnt, name))
                        return;
                snprintf(text, sizeof(text),
                         "would grow from %d to %d partitions",
                         observed_parts(obs, name), v->grow_parts);
                print_topic("grow", v->spec, 0, text);
                ap->would_grow++;
        } else if (v->status == SL_TOPIC_OK) {
                int was_created = in_list(ap->created, ap->created_cnt, name);
                if (in_list(ap->printed, ap->printed_cnt, name))
                        return;
                if (!print_grown(v, obs, ap->grown, ap->grown_from,
                                 ap->grown_cnt)) {
                        print_topic(was_created ? "created" : "exists", v->spec,
                                    observed_parts(obs, name), NULL);
                        ap->existed += !was_created;
                }
        } else {
                /* Differs (maybe grown, yet some other setting differs).
                 * Drift is a warning line per difference unless --strict;
                 * the rest, or all with --strict, one problem line. */
                int skip_drift = !o->strict && v->drift_cnt;
                if (!in_list(ap->printed, ap->printed_cnt, name))
                        print_grown(v, obs, ap->grown, ap->grown_from,
                                    ap->grown_cnt);
                for (int i = 0; skip_drift && i < v->problem_cnt; i++)
                        if (v->drift[i])
                                print_topic("warning", v->spec, 0,
                                            v->problems[i]);
                if (skip_drift) {
                        ap->warnings += v->drift_cnt;
                        ap->drifted++;
                }
                if (v->problem_cnt > (skip_drift ? v->drift_cnt : 0)) {
                        print_problems(v, 1, skip_drift);
                        ap->problems +=
                            v->problem_cnt - (skip_drift ? v->drift_cnt : 0);
                }
        }
        if (!in_list(ap->printed, ap->printed_cnt, name))
                ap->printed[ap->printed_cnt++] = (char *)name;
}

/* The summary line, and one for the warnings; the exit code. */
static int apply_summary(const apply_t *ap, const topics_opts_t *o) {
        if (ap->problems)
                printf("apply: %d problem%s; existing topics' configs are "
                       "never altered\n",
                       ap->problems, ap->problems == 1 ? "" : "s");
        else if (o->dry_run)
                printf("apply: dry run: would create %d topic%s and grow "
                       "%d\n",
                       ap->would_create, ap->would_create == 1 ? "" : "s",
                       ap->would_grow);
        else if (ap->created_cnt || ap->grown_cnt)
                printf("apply: created %d topic%s, grew %d, %d existed\n",
                       ap->created_cnt, ap->created_cnt == 1 ? "" : "s",
                       ap->grown_cnt, ap->existed);
        else if (ap->drifted)
                printf("apply: nothing created: %d topic%s as planned, %d "
                       "differing\n",
                       ap->existed, ap->existed == 1 ? "" : "s", ap->drifted);
        else
                printf("apply: nothing to change: all %d topics exist as "
                       "planned\n",
                       ap->existed);
        if (ap->warnings)
                printf("apply: %d warning%s: %d existing topic%s differ%s "
                       "from the plan and %s left as %s (`sluice topics "
                       "check` and apply --strict fail on this)\n",
                       ap->warnings, ap->warnings == 1 ? "" : "s", ap->drifted,
                       ap->drifted == 1 ? "" : "s", ap->drifted == 1 ? "s" : "",
                       ap->drifted == 1 ? "is" : "are",
                       ap->drifted == 1 ? "it is" : "they are");
        return ap->problems ? SL_EXIT_FAIL : SL_EXIT_OK;
}

static int cmd_apply(const topics_opts_t *o) {
        sl_conf_t *conf = NULL;
        sl_topics_admin_t *adm = NULL;
        sl_topicplan_t *plan = NULL;
        sl_topics_observed_t *obs = NULL;
        sl_topicplan_eval_t *ev = NULL;
        apply_t ap = {0};
        int rc;

        if ((rc = open_admin("apply", o, &conf, &adm)))
                return rc;
        plan = sl_topicplan_new(conf);
        set_name_width(plan);
        ap.created = sl_calloc(plan->cnt, sizeof(*ap.created));
        ap.failed = sl_calloc(plan->cnt, sizeof(*ap.failed));
        ap.failed_why = sl_calloc(plan->cnt, sizeof(*ap.failed_why));
        ap.printed = sl_calloc(plan->cnt, sizeof(*ap.printed));
        ap.grown = sl_calloc(plan->cnt, sizeof(*ap.grown));
        ap.grown_from = sl_calloc(plan->cnt, sizeof(*ap.grown_from));
        ap.expect = sl_calloc(plan->cnt, sizeof(*ap.expect));
        if ((rc = observe_plan("apply", adm, plan, NULL, 0, &obs)))
                goto done;
        ev = sl_topicplan_eval(plan, obs);
        if (!o->dry_run)
                apply_changes(&ap, adm, ev, obs);

        /* Judge the result as the broker now has it (a topic may also have
         * been created by someone else meanwhile: -EEXIST). */
        if (ap.attempts) {
                sl_topicplan_eval_destroy(ev);
                sl_topicplan_observed_destroy(obs);
                ev = NULL;
                if ((rc = observe_plan("apply", adm, plan, ap.expect,
                                       ap.expect_cnt, &obs)))
                        goto done;
                ev = sl_topicplan_eval(plan, obs);
        }
        for (int i = 0; i < ev->cnt; i++)
                apply_report_one(&ap, o, &ev->verdicts[i], obs);
        rc = apply_summary(&ap, o);
done:
        for (int i = 0; i < ap.failed_cnt; i++)
                free(ap.failed_why[i]);
        free(ap.created);
        free(ap.failed);
        free(ap.failed_why);
        free(ap.printed);
        free(ap.grown);
        free(ap.grown_from);
        free(ap.expect);
        sl_topicplan_eval_destroy(ev);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
        sl_topics_admin_destroy(adm);
        sl_conf_destroy(conf);
        return rc;
}

static int cmd_check(const topics_opts_t *o) {
        sl_conf_t *conf = NULL;
        sl_topics_admin_t *adm = NULL;
        sl_topicplan_t *plan;
        sl_topics_observed_t *obs = NULL;
        sl_topicplan_eval_t *ev;
        int problems, rc;

        if ((rc = open_admin("check", o, &conf, &adm)))
                return rc;
        plan = sl_topicplan_new(conf);
        set_name_width(plan);
        if ((rc = observe_plan("check", adm, plan, NULL, 0, &obs)))
                goto done;
        ev = sl_topicplan_eval(plan, obs);
        for (int i = 0; i < ev->cnt; i++) {
                const sl_topic_verdict_t *v = &ev->verdicts[i];
                if (v->status == SL_TOPIC_OK)
                        print_topic("ok", v->spec,
                                    observed_parts(obs, v->spec->name), NULL);
                else
                        print_problems(v, 0, 0);
        }
        problems = sl_topicplan_eval_problems(ev, 1);
        if (problems)
                printf("check: %d problem%s (%d topics checked)\n", problems,
                       problems == 1 ? "" : "s", ev->cnt);
        else
                printf("check: ok (%d topics)\n", ev->cnt);
        rc = problems ? SL_EXIT_FAIL : SL_EXIT_OK;
        sl_topicplan_eval_destroy(ev);
done:
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
        sl_topics_admin_destroy(adm);
        sl_conf_destroy(conf);
        return rc;
}

static int cmd_create(const topics_opts_t *o) {
        sl_conf_t *conf = NULL;
        sl_topics_admin_t *adm = NULL;
        sl_topics_observed_t *obs = NULL;
        const char *name;
        char errstr[512];
        int r, rc;

        if (o->arg_cnt != 1 || o->partitions <= 0) {
                fprintf(stderr, "sluice topics create: %s\n",
                        o->arg_cnt != 1 ? "exactly one topic NAME is needed"
                                        : "--partitions N is required");
                fputs(sub_help("create"), stderr);
                return SL_EXIT_USAGE;
        }
        for (int i = 0; i < o->cfg_cnt; i++) {
                if (!*o->cfg_keys[i]) {
                        fprintf(stderr, "sluice topics create: --set needs "
                                        "KEY=VALUE\n");
                        return SL_EXIT_USAGE;
                }
        }
        name = o->args[0];
        if ((rc = open_admin("create", o, &conf, &adm)))
                return rc;
        r = sl_topics_create(adm, name, o->partitions, o->replication_factor,
                             o->cfg_keys, o->cfg_values, o->cfg_cnt, errstr,
                             sizeof(errstr));
        if (r == 0) {
                printf("created  %s, %d partition%s\n", name, o->partitions,
                       o->partitions == 1 ? "" : "s");
                rc = SL_EXIT_OK;
        } else if (r == -EEXIST) {
                r = sl_topics_observe(adm, &name, 1, &obs, errstr,
                                      sizeof(errstr));
                if (r) {
                        fprintf(stderr, "sluice topics create: %s\n", errstr);
                        rc = SL_EXIT_FAIL;
                } else if (obs->topics[0].partitions == o->partitions) {
                        printf("exists   %s, %d partition%s\n", name,
                               o->partitions, o->partitions == 1 ? "" : "s");
                        rc = SL_EXIT_OK;
                } else {
                        printf("problem  %s: exists with %d partitions, want "
                               "%d\n",
                               name, obs->topics[0].partitions, o->partitions);
                        rc = SL_EXIT_FAIL;
                }
        } else {
                fprintf(stderr, "sluice topics create: %s: %s\n", name, errstr);
                rc = SL_EXIT_FAIL;
        }
        sl_topicplan_observed_destroy(obs);
        sl_topics_admin_destroy(adm);
        sl_conf_destroy(conf);
        return rc;
}

static int cmd_describe(const topics_opts_t *o) {
        sl_conf_t *conf = NULL;
        sl_topics_admin_t *adm = NULL;
        sl_topicplan_t *plan = NULL;
        sl_topics_observed_t *obs = NULL;
        const char **names;
        int cnt, missing = 0, rc;
        char errstr[512];

        if ((rc = open_admin("describe", o, &conf, &adm)))
                return rc;
        if (o->arg_cnt) {
                names = sl_calloc(o->arg_cnt, sizeof(*names));
                for (int i = 0; i < o->arg_cnt; i++)
                        names[i] = o->args[i];
                cnt = o->arg_cnt;
        } else {
                plan = sl_topicplan_new(conf);
                names = sl_calloc(plan->cnt, sizeof(*names));
                cnt = sl_topicplan_names(plan, names);
        }
        if (sl_topics_observe(adm, names, cnt, &obs, errstr, sizeof(errstr))) {
                fprintf(stderr, "sluice topics describe: %s\n", errstr);
                rc = SL_EXIT_FAIL;
                goto done;
        }
        for (int i = 0; i < obs->cnt; i++) {
                const sl_topic_state_t *st = &obs->topics[i];
                if (!st->exists) {
                        printf("%s missing\n", st->name);
                        missing++;
                        continue;
                }
                printf("%s partitions=%d", st->name, st->partitions);
                for (int j = 0; j < st->config_cnt; j++)
                        if (o->all || st->configs[j].is_set)
                                printf(" %s=%s", st->configs[j].key,
                                       st->configs[j].value
                                           ? st->configs[j].value
                                           : "(hidden)");
                if (st->error)
                        printf(" error=\"%s\"", st->error);
                printf("\n");
        }
        rc = missing ? SL_EXIT_FAIL : SL_EXIT_OK;
done:
        free(names);
        sl_topicplan_observed_destroy(obs);
        sl_topicplan_destroy(plan);
        sl_topics_admin_destroy(adm);
        sl_conf_destroy(conf);
        return rc;
}

int sl_topics_cmd(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*fn)(const topics_opts_t *o);
        } subs[] = {
            {"apply", cmd_apply},
            {"check", cmd_check},
            {"create", cmd_create},
            {"describe", cmd_describe},
        };
        topics_opts_t o;
        const char *sub;
        int rc;

        if (argc < 2) {
                usage_topics(stderr);
                return SL_EXIT_USAGE;
        }
        sub = argv[1];
        if (!strcmp(sub, "--help") || !strcmp(sub, "-h") ||
            !strcmp(sub, "help")) {
                usage_topics(stdout);
                return SL_EXIT_OK;
        }
        for (size_t i = 0; i < SL_ARRAY_SIZE(subs); i++) {
                if (strcmp(sub, subs[i].name))
                        continue;
                rc = parse_opts(sub, argc - 1, argv + 1, &o);
                if (rc == 0) {
                        if (o.arg_cnt && strcmp(sub, "create") &&
                            strcmp(sub, "describe")) {
                                fprintf(stderr,
                                        "sluice topics %s: unexpected "
                                        "argument '%s'\n",
                                        sub, o.args[0]);
                                rc = SL_EXIT_USAGE;
                        } else {
                                rc = subs[i].fn(&o);
                        }
                } else if (rc == -1) {
                        rc = SL_EXIT_OK;
                }
                opts_free(&o);
                return rc;
        }
        fprintf(stderr, "sluice topics: unknown subcommand '%s'\n", sub);
        usage_topics(stderr);
        return SL_EXIT_USAGE;
}
