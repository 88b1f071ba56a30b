/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acls.h — the Kafka ACL bindings sluice's principal needs for a
 * configuration, derived from the topic plan (topicplan.h) and the config:
 * the one source of truth behind `sluice acls` and docs/security.md's example
 * (make docs).  Pure: no Kafka client, no file opened; the writers print
 * to a stream the caller gives.
 *
 * What each use of Kafka needs (the code that makes the request):
 *
 *   topic        operations                 why
 *   input        Read                       the group consumer (clients.c)
 *                Write, DescribeConfigs     reroute = true: a keyed record
 *                                           off its key's partition is
 *                                           produced to its key's (task.c),
 *                                           within the limit learned with
 *                                           DescribeConfigs (targets.c)
 *                Write                      the HTTP API on for a delay
 *                                           or debounce pipeline: timers,
 *                                           cancels, flushes (api.c)
 *   rates        Read                       the reader, the whole table
 *                Write                      the HTTP API on for the
 *                                           throttle: PUT/DELETE rates
 *   changelog,   Read, Write,               written in the transaction,
 *   overflow,    DescribeConfigs            read back by the reader (a
 *   payloads                                delay pipeline's payloads
 *                                           ahead of their due time)
 *   dlq, output, Write, DescribeConfigs     written in the transaction;
 *   default                                 DescribeConfigs for the
 *   target                                  largest record each takes
 *                                           (max.message.bytes)
 *   allowed_     Write, DescribeConfigs     a timer's target, described
 *   targets                                 when first named (topiccache)
 *   dlq          Read                       a DLQ replay (dlqreplay.h)
 *   input        Write                      a DLQ replay re-produces there
 *
 *   group "<app_id>"                Read     the consumer group; offsets
 *                                            committed in the transaction
 *   group "sluice-rebuild"          Describe the group.id of the
 *                                            assign-only reader and the
 *                                            lookup client (clients.c)
 *   group "<app_id>-dlq-replay.<pipeline>"
 *                                   Read     a DLQ replay's offsets, read
 *                                            at its start, committed in
 *                                            its transactions
 *   transactional id "<app_id>-"    Write    prefixed: the producers' ids
 *                                            are <app_id>-<instance_id>
 *                                            and <app_id>-<instance_id>#2,
 *                                            a DLQ replay's
 *                                            <app_id>-dlq-replay.<pipeline>
 *
 * Describe on a topic or a transactional id is never listed: Read and
 * Write imply it.
 *
 * A delay pipeline's allowed_targets glob becomes a PREFIXED topic pattern
 * on its literal part before the first glob character ("notify.*" ->
 * "notify."), which may grant more than the glob matches ("notify.a.b"):
 * sluice still checks the glob.  A glob without glob characters is the
 * LITERAL name; one that starts with a glob character ("**", the default,
 * "*", "*.events") has no prefix and needs Kafka's wildcard, the LITERAL
 * name "*".
 *
 * The replay's bindings are listed for every pipeline with a DLQ: the
 * CLI may run as sluice's principal, and the HTTP API runs replays in the
 * daemon.
 *
 * Order: the plan's (pipeline by pipeline, each pipeline's topics in plan
 * order, then its targets, then its replay's), then the groups, then the
 * transactional id;
 * within a topic, Read, Write, DescribeConfigs.  A binding is listed once
 * per (resource type, pattern type, name, operation), where first found.
 */
#ifndef SL_ACLS_H
#define SL_ACLS_H

#include <stdio.h>

#include "config.h"

typedef enum {
        SL_ACL_TOPIC = 0,
        SL_ACL_GROUP,
        SL_ACL_TRANSACTIONAL_ID,
} sl_acl_resource_t;

typedef enum {
        SL_ACL_LITERAL = 0,
        SL_ACL_PREFIXED,
} sl_acl_pattern_t;

typedef enum {
        SL_ACL_READ = 0,
        SL_ACL_WRITE,
        SL_ACL_DESCRIBE,
        SL_ACL_DESCRIBE_CONFIGS,
} sl_acl_op_t;

/* Why sluice needs a binding: bits of sl_acl_t.why, SL_ACL_WHY_* (opdef.h:
 * the operators' topic roles name theirs). */

/* The group.id of the assign-only reader and of the lookup client
 * (clients.c's clients_lookup_conf sets it): they join no group and commit
 * nothing, so Describe on it is all they need. */
#define SL_ACLS_REBUILD_GROUP "sluice-rebuild"

typedef struct sl_acl_s {
        sl_acl_resource_t resource;
        sl_acl_pattern_t pattern;
        char *name; /* owned by the set; "*" is Kafka's wildcard */
        sl_acl_op_t op;
        unsigned why;   /* every reason found (SL_ACL_WHY_*) */
        unsigned first; /* the reason it was first found for: one bit */
        char *glob;     /* the allowed_targets globs that need it, joined
                           by ", " (SL_ACL_WHY_TARGET), else NULL; owned */
} sl_acl_t;

typedef struct sl_acls_s {
        sl_acl_t *acls; /* in the order above */
        int cnt;
        char *path;   /* the config file's path; owned */
        char *app_id; /* owned */
} sl_acls_t;

/* The bindings conf needs.  Never fails; the caller owns the result
 * (sl_acls_destroy), which copies what it needs of conf. */
sl_acls_t *sl_acls_new(const sl_conf_t *conf);
void sl_acls_destroy(sl_acls_t *acls);

/* The binding for (resource, pattern, name, op), or NULL. */
const sl_acl_t *sl_acls_find(const sl_acls_t *acls, sl_acl_resource_t resource,
                             sl_acl_pattern_t pattern, const char *name,
                             sl_acl_op_t op);

/* The topic pattern an allowed_targets glob needs: returns its name (a new
 * string the caller frees) and sets *pattern.  "notify.*" -> PREFIXED
 * "notify.", "notify.email" -> LITERAL "notify.email", "**" -> LITERAL
 * "*". */
char *sl_acls_glob_pattern(const char *glob, sl_acl_pattern_t *pattern);

/* Kafka's upper-case names: "TOPIC", "PREFIXED", "DESCRIBE_CONFIGS", ... */
const char *sl_acl_resource_name(sl_acl_resource_t resource);
const char *sl_acl_pattern_name(sl_acl_pattern_t pattern);
const char *sl_acl_op_name(sl_acl_op_t op);

/* What a refusal by Kafka's authorizer means, for a log line: the operation
 * on resource:name that was refused, what sluice uses it for and the
 * binding of this set that grants it, e.g.
 *   WRITE on TOPIC orders.dlq (a dead-letter topic; sluice acls lists
 *   TOPIC LITERAL orders.dlq WRITE)
 * op SL_ACL_ANY: Kafka did not say which (a transactional id's Write or
 * Describe); every binding on the resource is named.  DESCRIBE on a
 * topic (hidden from the principal) names its Read and Write bindings,
 * which imply it.  A name no binding
 * covers is said so.  Returns buf. */
#define SL_ACL_ANY ((sl_acl_op_t)-1)
const char *sl_acls_refusal(const sl_acls_t *acls, sl_acl_resource_t resource,
                            const char *name, sl_acl_op_t op, char *buf,
                            size_t size);

/* 1 when principal reads TYPE:NAME (both non-empty, TYPE a word, no
 * control characters), as kafka-acls.sh --allow-principal takes it. */
int sl_acls_principal_ok(const char *principal);

/* One binding a line, tab-separated: RESOURCE_TYPE PATTERN_TYPE NAME
 * OPERATION in Kafka's upper-case names, no header. */
void sl_acls_write_table(const sl_acls_t *acls, FILE *out);

/* kafka-acls.sh command lines granting every binding to principal, with
 * the variables A (bootstrap, NULL for a placeholder, and the admin's
 * client config) and P (the principal) and a comment before each group of
 * lines.  Every binding is granted exactly once. */
void sl_acls_write_commands(const sl_acls_t *acls, const char *principal,
                            const char *bootstrap, FILE *out);

#endif
