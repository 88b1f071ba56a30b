/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topicplan.h — which Kafka topics a configuration needs, with which
 * partition counts and settings, and what is wrong with the topics a broker
 * actually has.  Pure: no Kafka client, no I/O.  topics.c fetches the
 * observed state with the Admin API and acts on the verdicts.
 *
 * A plan holds one spec per topic of each pipeline, in the order of
 * sl_pipeline_topics() (config.h), each with its role (opdef.h): the roles
 * every pipeline has are settled here, an operator's own roles bring their
 * settings in its definition (opdef_<name>.c):
 *
 *   role       partitions           created by apply with
 *   input      any (must exist)     input_partitions, when > 0
 *   changelog  = input              compact, fast cleaning, short tombstones
 *   overflow   = input  (throttle)  delete, retention.ms = ttl + 1h
 *   payloads   = input  (delay)     the changelog's (when payload_topic set)
 *   rates      any      (throttle)  compact, 1 partition
 *   dlq        = input              delete, retention.ms = 7d
 *   output     any (must exist)     never: output topics belong to the user
 *
 * (An SL_ROLE_COPART role has the input's partition count; an
 * SL_ROLE_OUTPUT one must exist and is never created.)
 *
 * The rates topic has one partition on purpose: it is a small global table
 * (key -> rate) that every instance reads whole, not a co-partitioned
 * stream, so more partitions would only add fetch overhead.
 *
 * Checks on existing topics (each failure is one problem, all are reported):
 *
 *   changelog  cleanup.policy = compact
 *              segment.ms <= 1d, max.compaction.lag.ms <= 1d,
 *              min.compaction.lag.ms <= 1h, min.cleanable.dirty.ratio <= 0.5:
 *              stale records are compacted within a day, so rebuild reads
 *              roughly the live state and not the history;
 *              1min <= delete.retention.ms <= 1d: tombstones are purged in
 *              hours (kept for days, they make every rebuild read them until
 *              they go), yet live long enough for a rebuild that started
 *              before the cleaner ran to still see them.
 *   overflow   cleanup.policy = delete, retention.ms >= ttl (or -1),
 *              retention.bytes = -1: nothing is deleted before it expires.
 *   rates,     cleanup.policy = compact.
 *   payloads
 *   dlq        cleanup.policy = delete (compaction would drop bad records).
 *
 *   every topic sluice writes (changelog, overflow, payloads, dlq,
 *              output):
 *              min.insync.replicas <= its replicas, else every acks=all
 *              write (each transaction) fails with NOT_ENOUGH_REPLICAS;
 *   any topic  as many replicas as replication_factor, when set.
 *
 * Apply never alters an existing topic's configs; it only reports what
 * differs.  A config value or a replica count that differs is drift (the
 * verdict's drift flag): sluice runs with it, slower or less safe, so
 * apply warns and goes on (--strict makes it fail); a partition count, a
 * min.insync.replicas above the replicas, or configs it cannot read are
 * not drift.  Apply does add partitions to a changelog, overflow, payloads
 * or dlq topic that has fewer than its input (grow_parts in the verdict):
 * partition p of those topics only ever holds what sluice wrote for input
 * partition p, so new, empty partitions change nothing for the existing
 * ones.  A topic with more partitions than its input cannot be fixed that
 * way (Kafka never removes partitions): the input must grow instead.
 */
#ifndef SL_TOPICPLAN_H
#define SL_TOPICPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* How an observed config value is judged. */
typedef enum {
        SL_TCHECK_NONE = 0, /* set at creation, not checked */
        SL_TCHECK_EQ,       /* the string must equal bound */
        SL_TCHECK_LE,       /* the number must be <= bound; -1 fails */
        SL_TCHECK_GE,       /* the number must be >= bound; -1 passes */
} sl_tcheck_t;

typedef struct sl_topic_setting_s {
        const char *key;   /* topic config name, static */
        char value[24];    /* value given at creation; "" = not set */
        sl_tcheck_t check; /* how an existing topic's value is judged */
        char bound[24];    /* operand of check */
        const char *why;   /* static: what breaks when check fails */
} sl_topic_setting_t;

#define SL_TOPIC_SETTINGS_MAX 8

typedef struct sl_topic_spec_s {
        char *name;              /* topic name, owned by the plan */
        char *pipeline;          /* pipeline name, owned by the plan */
        const sl_roledef_t *def; /* its role: name, flags (static) */
        int input_idx;           /* index of this pipeline's input spec */
        int match_input;         /* partition count must equal the input's */
        int create_parts;        /* > 0: create with this many partitions;
                                    0: with the input's count when match_input,
                                    else never created */
        int replication_factor;  /* -1 = broker default */
        sl_topic_setting_t settings[SL_TOPIC_SETTINGS_MAX];
        int setting_cnt;
        char *conflict; /* set when the name is also used by another spec
                           in a way that cannot work; owned */
} sl_topic_spec_t;

/* Settings of a spec, for an operator's roles (sl_roledef_t.settings):
 * key = value at creation ("" / NULL: not set), judged by check against
 * bound on an existing topic, why saying what breaks when it fails (key
 * and why static).  _ms: numbers, -1 for none. */
void sl_topicplan_spec_set(sl_topic_spec_t *spec, const char *key,
                           const char *value, sl_tcheck_t check,
                           const char *bound, const char *why);
void sl_topicplan_spec_set_ms(sl_topic_spec_t *spec, const char *key,
                              int64_t value, sl_tcheck_t check, int64_t bound,
                              const char *why);
/* The compaction settings of the changelog (checked: they bound the
 * rebuild time), also given to a compacted table of an operator's, then
 * unchecked (checked 0). */
void sl_topicplan_spec_compacted(sl_topic_spec_t *spec, int checked);

typedef struct sl_topicplan_s {
        sl_topic_spec_t *specs;
        int cnt;
} sl_topicplan_t;

/* Builds the plan for every pipeline of conf.  Topic names default to
 * "<pipeline>.<role>" when conf leaves them NULL (dlq NULL means none).
 * Never fails; the caller owns the result (sl_topicplan_destroy).  The plan
 * copies what it needs: conf may be destroyed first. */
sl_topicplan_t *sl_topicplan_new(const sl_conf_t *conf);
void sl_topicplan_destroy(sl_topicplan_t *plan);

/* The distinct topic names of the plan, in plan order, in names (a caller
 * array of at least plan->cnt entries, pointing into the plan).  Returns the
 * count. */
int sl_topicplan_names(const sl_topicplan_t *plan, const char **names);

/* What a broker has: filled by topics.c from metadata and DescribeConfigs,
 * or by hand in tests. */
typedef struct sl_topic_conf_entry_s {
        char *key;   /* owned */
        char *value; /* owned; NULL when the broker hides it */
        int is_set;  /* set on the topic itself (not a default) */
} sl_topic_conf_entry_t;

typedef struct sl_topic_state_s {
        char *name;     /* owned */
        int exists;     /* in the metadata */
        int partitions; /* when exists */
        int replicas;   /* the fewest replicas of any partition; 0 unknown */
        int described;  /* configs below are known */
        char *error;    /* why configs or metadata are unknown; owned */
        sl_topic_conf_entry_t *configs; /* owned */
        int config_cnt;
} sl_topic_state_t;

typedef struct sl_topics_observed_s {
        sl_topic_state_t *topics;
        int cnt;
} sl_topics_observed_t;

sl_topics_observed_t *sl_topicplan_observed_new(void);
/* Appends a topic; returns it (valid until the next add). */
sl_topic_state_t *sl_topicplan_observed_add(sl_topics_observed_t *obs,
                                            const char *name, int exists,
                                            int partitions);
/* Adds a config entry to st (value may be NULL). */
void sl_topicplan_state_set_config(sl_topic_state_t *st, const char *key,
                                   const char *value, int is_set);
void sl_topicplan_observed_destroy(sl_topics_observed_t *obs);

const sl_topic_state_t *
sl_topicplan_observed_find(const sl_topics_observed_t *obs, const char *name);
/* The value of key in st, or NULL if absent or hidden. */
const char *sl_topicplan_state_config(const sl_topic_state_t *st,
                                      const char *key);

typedef enum {
        SL_TOPIC_OK = 0,      /* exists and matches the plan */
        SL_TOPIC_MISSING = 1, /* does not exist; see create_parts */
        SL_TOPIC_BAD = 2,     /* exists but differs; see problems */
} sl_topic_status_t;

typedef struct sl_topic_verdict_s {
        const sl_topic_spec_t *spec; /* points into the plan */
        sl_topic_status_t status;
        /* MISSING: > 0 when apply can create it with this many partitions;
         * 0 when it cannot, with the reason as the one problem. */
        int create_parts;
        /* BAD: > 0 when the topic is co-partitioned with its input and has
         * fewer partitions: apply may grow it to this many. */
        int grow_parts;
        char **problems; /* owned, one sentence each, no topic name */
        /* owned, one per problem: 1 when the problem is drift, a config
         * value or replica count of an existing topic that differs from
         * the plan while sluice still works with it (apply warns), 0 when
         * sluice cannot work with the topic as it is */
        unsigned char *drift;
        int problem_cnt;
        int drift_cnt; /* problems with drift set */
} sl_topic_verdict_t;

typedef struct sl_topicplan_eval_s {
        sl_topic_verdict_t *verdicts; /* one per plan spec, in plan order */
        int cnt;
} sl_topicplan_eval_t;

/* Judges obs against plan: one verdict per spec.  A topic absent from obs
 * counts as missing.  The result points into plan (keep plan alive) and is
 * owned by the caller (sl_topicplan_eval_destroy). */
sl_topicplan_eval_t *sl_topicplan_eval(const sl_topicplan_t *plan,
                                       const sl_topics_observed_t *obs);
void sl_topicplan_eval_destroy(sl_topicplan_eval_t *ev);

/* Number of problems in ev; a missing topic that apply would create counts
 * as one problem when count_missing is set (check), not otherwise (apply). */
int sl_topicplan_eval_problems(const sl_topicplan_eval_t *ev,
                               int count_missing);

/* One sentence for an operator about a co-partitioned topic (an
 * SL_ROLE_COPART role: changelog, overflow, dlq; role is its name) of
 * pipeline that has have partitions (0: it does not exist) where its input
 * has want: what is wrong and the command that fixes it.  Written to buf
 * (snprintf semantics; returns what snprintf returns).  Used by `sluice
 * run` at start and when the input grows while it runs. */
int sl_topicplan_copart_problem(char *buf, size_t size, const char *pipeline,
                                const char *role, const char *topic, int have,
                                const char *input, int want);

#endif
