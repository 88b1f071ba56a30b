/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef.h — the operator registry: what the pure modules know of each
 * operator (its definition), one per line of ops.def.
 *
 * DESIGN
 *
 * An operator has three halves, and the tree's layers keep them apart:
 *
 *   pure      sl_opdef_t (this file), in src/opdef_<name>.c: its config
 *             keys and their params struct, its cross-field rule, its
 *             topics and their settings, its HTTP routes and the pure
 *             builders of the records they write.  Read by config.c,
 *             topicplan.c, acls.c, apireq.c and api.c.
 *   runtime   sl_op_t (task.h), in src/op_<name>.c: what a partition does
 *             with records.  Found by type with sl_op_of() (ops.h).
 *   command   its `sluice inspect` printer (inspect.h), in
 *             src/inspect_<name>.c.
 *
 * A pure module may not include task.h, so the registry cannot be one
 * array of runtime pointers that config.c reads.  Instead ops.def lists
 * the operators once, and each layer collects its half by including it
 * inside a definition of SL_OPERATOR: opdef.c the definitions, ops.c the
 * sl_op_t, inspect.c the printers.  A definition names no runtime symbol,
 * so config.c, the fuzz harnesses and `sluice config check` link only
 * pure code.
 *
 * This header is a leaf: the types it points to (config.h's pipeline and
 * key rows, topicplan.h's spec, apireq.h's routes) are declared, not
 * included, so that config.h can include it without a cycle.
 *
 * CONFIGURATION
 *
 * A pipeline's keys are config.c's shared ones (type, input, changelog,
 * dlq, ...; stored in sl_pipeline_conf_t) followed by its operator's
 * keys, rows of the same table type (config.h, sl_conf_key_t) whose
 * offsets point into the operator's params struct: config.c allocates
 * params_size bytes as pc->params, applies the defaults, parses, dumps
 * and frees through the rows, and lists them in the reference after the
 * shared ones, in row order.  A row flagged SL_KF_SHARED points into
 * sl_pipeline_conf_t instead (output, which throttle and debounce both
 * have).
 * finalize() holds the rules between the operator's keys; config.c runs it
 * after the shared rules, and reports its errors as it reports any
 * (FILE:LINE: key: ...).
 *
 * TOPICS
 *
 * Each topic a pipeline names has a role (sl_roledef_t): every pipeline
 * has an input, a changelog and (unless dlq = none) a DLQ; an operator
 * adds its own (throttle's overflow and rates, delay's payloads, the
 * outputs).  A role says
 * which key names its topic and what sluice does with it (the SL_ROLE_
 * flags); sl_pipeline_topics() (config.h) is the one walk over them:
 * topicplan.c, acls.c, config.c's checks and the targets a timer may not
 * name (sl_conf_internal_topics()) read it.  It lives in config.c, which
 * owns the key rows a role's topic name is read through; the settings of
 * the roles every pipeline has are topicplan.c's.
 *
 * HTTP API
 *
 * Each route (apireq.h) is a lookup, answered by the owner's describe()
 * hook (task.h; an operator has one plain lookup, the one an owner is
 * asked, and others that narrow its answer), or a write: a pure build()
 * turns the request into the
 * record the API produces (to the input, or another topic of the
 * pipeline) and answer() the JSON the client gets; api.c does the HTTP,
 * the partition, the produce and the wait.
 *
 * ORDER
 *
 * ops.def's order is that of the configuration reference, of `sluice
 * config dump` and of the types an error lists; GET /v1 lists the routes
 * by api_rank instead (delay's first, as it always has).
 */
#ifndef SL_OPDEF_H
#define SL_OPDEF_H

#include <stddef.h>

struct sl_conf_s;
struct sl_pipeline_conf_s;
struct sl_conf_key_s;
struct sl_conf_check_s;
struct sl_topic_spec_s;
struct sl_route_s;
struct sl_globs_s;

/* The pipeline types, one per line of ops.def in its order; 0 is none (a
 * pipeline whose `type` did not parse). */
typedef enum {
        SL_OP_NONE = 0,
#define SL_OPERATOR(name, NAME) SL_OP_##NAME,
#include "ops.def"
#undef SL_OPERATOR
        SL_OP_END
} sl_op_type_t;

#define SL_OP_CNT ((int)SL_OP_END - 1)

/* Why sluice needs a Kafka ACL binding (acls.h: bits of sl_acl_t.why), the
 * reasons a topic role gives in sl_roledef_t. */
#define SL_ACL_WHY_INPUT          0x0001 /* reads an input */
#define SL_ACL_WHY_RATES          0x0002 /* reads a rates topic */
#define SL_ACL_WHY_REROUTE        0x0004 /* writes an input: reroute */
#define SL_ACL_WHY_API_INPUT      0x0008 /* the HTTP API writes an input */
#define SL_ACL_WHY_API_RATES      0x0010 /* the HTTP API writes rates */
#define SL_ACL_WHY_CHANGELOG      0x0020
#define SL_ACL_WHY_OVERFLOW       0x0040
#define SL_ACL_WHY_DLQ            0x0080
#define SL_ACL_WHY_OUTPUT         0x0100
#define SL_ACL_WHY_DEFAULT_TARGET 0x0200 /* a delay pipeline's */
#define SL_ACL_WHY_TARGET         0x0400 /* allowed_targets */
#define SL_ACL_WHY_LIMITS         0x0800 /* DescribeConfigs: max.message.bytes */
#define SL_ACL_WHY_GROUP          0x1000  /* the consumer group */
#define SL_ACL_WHY_REBUILD        0x2000  /* the reader's group id */
#define SL_ACL_WHY_TXN            0x4000  /* the transactional ids */
#define SL_ACL_WHY_PAYLOADS       0x8000  /* a delay pipeline's payload_topic */
#define SL_ACL_WHY_REPLAY         0x10000 /* a DLQ replay (dlqreplay.h) */

/* What sluice does with a topic of a role: bits of sl_roledef_t.flags.
 * Exactly one of INPUT, OUTPUT and INTERNAL is set. */
#define SL_ROLE_INPUT  0x001 /* the pipeline's input */
#define SL_ROLE_OUTPUT 0x002 /* the user's: where results go */
#define SL_ROLE_INTERNAL                                                       \
        0x004 /* sluice's own: unique to its pipeline,                         \
                 never a target, never another pipeline's                      \
                 input or output */
#define SL_ROLE_COPART                                                         \
        0x008               /* as many partitions as the input: partition      \
                               p holds what input partition p made */
#define SL_ROLE_READ  0x010 /* sluice reads it */
#define SL_ROLE_WRITE 0x020 /* sluice writes it, in its transactions */
#define SL_ROLE_TABLE                                                          \
        0x040                  /* read whole (every partition) by every        \
                                  instance */
#define SL_ROLE_OPTIONAL 0x080 /* none while its key is unset (or `none`) */
#define SL_ROLE_FALLBACK                                                       \
        0x100 /* written only for records that name no                         \
                 topic of their own (a delay pipeline's                        \
                 default_target) */

/* A topic role. */
typedef struct sl_roledef_s {
        const char *name;     /* "overflow": in plans and errors, and the
                                 default topic name "<pipeline>.<name>" */
        const char *key;      /* the config key that names its topic */
        unsigned flags;       /* SL_ROLE_* */
        int create_parts;     /* > 0: `sluice topics apply` creates it with
                                 this many partitions whatever the input has */
        unsigned acl_why;     /* acls.h's SL_ACL_WHY_* of its Read and Write */
        unsigned acl_api_why; /* of the Write the HTTP API needs when one
                                 of the operator's routes writes it */
        /* The settings `topics apply` creates it with and `topics check`
         * judges (topicplan.h: sl_topicplan_spec_set*()); NULL: none. */
        void (*settings)(struct sl_topic_spec_s *spec,
                         const struct sl_pipeline_conf_s *pc);
} sl_roledef_t;

/* An operator's definition. */
typedef struct sl_opdef_s {
        const char *name;  /* `type = name` */
        sl_op_type_t type; /* SL_OP_<NAME> */

        /* Its keys after the shared ones, in reference order, and the
         * params struct they are stored in (pc->params). */
        const struct sl_conf_key_s *keys;
        int key_cnt;
        size_t params_size;
        /* Rules between its keys, once the file is read (config.h:
         * sl_conf_check_error()); NULL: none. */
        void (*finalize)(const struct sl_pipeline_conf_s *pc,
                         struct sl_conf_check_s *chk);

        /* Its topic roles beyond input, changelog and dlq, in plan order
         * (the outputs are listed after the dlq). */
        const sl_roledef_t *roles;
        int role_cnt;
        /* The topics its records may name to be written to (a delay
         * pipeline's allowed_targets), as globs; NULL: none. */
        const struct sl_globs_s *(*targets)(
            const struct sl_pipeline_conf_s *pc);

        /* Its HTTP routes (apireq.h), listed in GET /v1 after those of
         * the operators of a lower api_rank. */
        const struct sl_route_s *routes;
        int route_cnt;
        int api_rank;
        /* Per-pipeline data its routes' build() read, made when the API
         * starts (the caller owns it: api_destroy); NULL: none. */
        void *(*api_new)(const struct sl_conf_s *conf, int pipeline);
        void (*api_destroy)(void *data);
} sl_opdef_t;

#define SL_OPERATOR(name, NAME) extern const sl_opdef_t sl_opdef_##name;
#include "ops.def"
#undef SL_OPERATOR

/* The definition of type, or NULL for none (SL_OP_NONE, out of range). */
const sl_opdef_t *sl_opdef_of(sl_op_type_t type);

/* The definition of the i-th line of ops.def (0 <= i < SL_OP_CNT). */
const sl_opdef_t *sl_opdef_at(int i);

/* "throttle", ...; "unknown" for none. */
const char *sl_op_type_name(sl_op_type_t type);

#endif
