/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topics.h — topic management against a broker: `sluice topics apply |
 * check | create | describe` (sl_topics_cmd in cli.h) and the Admin API
 * calls behind them, reusable by other modules (e.g. a startup check).
 *
 * What a configuration needs and how existing topics are judged is pure
 * logic in topicplan.h; this module only observes (metadata and
 * DescribeConfigs), creates (CreateTopics) and adds partitions
 * (CreatePartitions, for sluice's co-partitioned topics: topicplan.h says
 * why that is safe).  It never alters a topic's configs, nor deletes one.
 *
 * The admin client is a plain producer handle built from the [kafka]
 * section, so SASL/SSL settings apply as they do to `sluice run`.  Every
 * call is bounded by the handle's timeout: a broker that does not answer is
 * an error naming bootstrap.servers, never a hang.  Calls block the calling
 * thread; they are meant for the CLI and for startup, not for the loop.
 */
#ifndef SL_TOPICS_H
#define SL_TOPICS_H

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "topicplan.h"

typedef struct sl_topics_admin_s sl_topics_admin_t;

/* Creates an admin client from conf's [kafka] properties (librdkafka logs go
 * to sl_log).  timeout_ms bounds each later call.  Returns NULL with a reason
 * in errstr on failure.  conf is not retained. */
sl_topics_admin_t *sl_topics_admin_new(const sl_conf_t *conf, int timeout_ms,
                                       char *errstr, size_t errstr_size);
/* NULL is a no-op. */
void sl_topics_admin_destroy(sl_topics_admin_t *adm);

/* Observes the cnt topics in names: existence and partition count from the
 * cluster metadata (never auto-creating a topic), then every config of the
 * existing ones with DescribeConfigs.  A per-topic describe failure is kept
 * in that topic's state (error), not returned.  Returns 0 and *obsp (owned
 * by the caller: sl_topicplan_observed_destroy), or -ETIMEDOUT / -EIO with a
 * reason in errstr when the cluster did not answer. */
int sl_topics_observe(sl_topics_admin_t *adm, const char *const *names, int cnt,
                      sl_topics_observed_t **obsp, char *errstr,
                      size_t errstr_size);

/* How long sl_topics_observe_expect asks again (at most the admin timeout). */
#define SL_TOPICS_SETTLE_MS 15000

/* sl_topics_observe, on a cluster that may not have told every node of a
 * new topic yet (KRaft brokers learn it from the controller one after the
 * other): while a topic the metadata shows is unknown to DescribeConfigs,
 * or one of the expect_cnt in expect (created or found existing just now)
 * is missing from the metadata or has a partition without a leader, it
 * asks again every 200 ms for up to SL_TOPICS_SETTLE_MS, then answers with
 * what it saw last.  A single-broker cluster is taken at its first word. */
int sl_topics_observe_expect(sl_topics_admin_t *adm, const char *const *names,
                             int cnt, const char *const *expect, int expect_cnt,
                             sl_topics_observed_t **obsp, char *errstr,
                             size_t errstr_size);

/* Creates topic name with partitions and replication_factor (-1: broker
 * default) and the cnt key=value configs in keys/values, then waits until
 * the metadata shows it.  Returns 0 when created, -EEXIST when it already
 * existed (nothing changed), -ETIMEDOUT or -EIO with a reason in errstr. */
int sl_topics_create(sl_topics_admin_t *adm, const char *name, int partitions,
                     int replication_factor, const char *const *keys,
                     const char *const *values, int cnt, char *errstr,
                     size_t errstr_size);

/* Adds partitions to topic name so that it has partitions in all
 * (CreatePartitions), then waits until the metadata shows them.  Returns 0,
 * -EINVAL, -ETIMEDOUT or -EIO with a reason in errstr (e.g. the topic
 * already has that many or more). */
int sl_topics_grow(sl_topics_admin_t *adm, const char *name, int partitions,
                   char *errstr, size_t errstr_size);

/* Creates the topic of spec with partitions and the spec's settings; same
 * returns as sl_topics_create. */
int sl_topics_create_spec(sl_topics_admin_t *adm, const sl_topic_spec_t *spec,
                          int partitions, char *errstr, size_t errstr_size);

#endif
