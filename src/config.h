/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h — the configuration: one INI file, read through one table of keys.
 *
 *   [sluice]          app-wide settings (app_id, metrics_listen, ...)
 *   [kafka]           librdkafka properties, passed through untouched
 *   [pipeline NAME]   one per pipeline; `type` picks the operator
 *
 * Every key is a row of a table (sl_conf_key_t below): type, default,
 * bounds, where it is stored and a one-line description.  config.c's tables
 * hold [sluice] and the keys every pipeline has; each operator's definition
 * (opdef.h, ops.def) holds the keys of its type.  docs/configuration.md's
 * reference is generated from those tables (`sluice config
 * reference`), so code and docs cannot drift.  Cross-field rules live in one
 * finalize step (an operator's in its finalize hook).  Errors read
 * `FILE:LINE: key: what is wrong`; all of a file's errors are reported in
 * one pass.
 *
 * Environment overrides (for containers) are applied after the file and
 * win over it:
 *
 *   SLUICE_KAFKA_<PROP>  sets [kafka] <prop>: '_' read as '.', lower-cased;
 *                        SLUICE_KAFKA_BOOTSTRAP_SERVERS is bootstrap.servers.
 *   SLUICE_<KEY>         sets [sluice] <key>, lower-cased, for the keys of
 *                        [sluice] only; SLUICE_INSTANCE_ID is instance_id.
 *
 * An error in such a value names the variable instead of FILE:LINE:
 * "env SLUICE_LOG_LEVEL: log_level: 'x' is not one of ...".
 *
 * [kafka] properties that sluice sets itself (group.id, transactional.id,
 * group.instance.id, transaction.timeout.ms, enable.auto.commit,
 * enable.auto.offset.store, auto.offset.reset, isolation.level,
 * enable.idempotence, partition.assignment.strategy) are
 * errors that name the [sluice] key to use instead; every other property is
 * checked with rd_kafka_conf_set when the file is loaded.
 *
 * Loading is not thread-safe (libinih's options are process globals): load
 * at startup, before other threads read INI files.
 */
#ifndef SL_CONFIG_H
#define SL_CONFIG_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opdef.h"
#include "parse.h"

/* How a key maps to an input partition (the API writes there, and looks
 * the owner up there; every producer of the input must agree). */
typedef enum {
        SL_PARTITIONER_MURMUR2 = 0, /* Java's default, librdkafka's murmur2 */
        SL_PARTITIONER_CRC32 = 1,   /* librdkafka's consistent(_random) */
} sl_partitioner_t;

/*
 * KEY TABLES
 *
 * A key is a row: config.c's tables hold [sluice] and the keys every
 * pipeline has; an operator's definition (opdef.h) holds its own, with
 * offsets into its params struct.  Defaults and bounds are text, parsed
 * by the code that parses the file.
 */
typedef enum {
        SL_KT_STRING,   /* char *; "" is NULL unless SL_KF_NONEMPTY */
        SL_KT_TOPIC,    /* char *, a legal Kafka topic name */
        SL_KT_HOSTPORT, /* char *, "host:port"; "" is NULL */
        SL_KT_INT,      /* int or int64_t (by field size) */
        SL_KT_BOOL,     /* int: 0 or 1 */
        SL_KT_DURATION, /* int64_t milliseconds */
        SL_KT_SIZE,     /* int64_t bytes */
        SL_KT_RATE,     /* sl_rate_t */
        SL_KT_GLOBS,    /* sl_globs_t */
        SL_KT_ENUM,     /* int-sized enum, values from .enums */
} sl_conf_type_t;

/* One value of an SL_KT_ENUM key. */
typedef struct sl_conf_enum_s {
        const char *name;
        int value;
} sl_conf_enum_t;

/* Flags of a key.  TXNID: its value goes into a transactional id, so it may
 * not end in SL_TXNID_SECOND_SUFFIX.  SECRET: `config dump` shows ***, and
 * it is never logged.  SHARED: an operator's key whose value is stored in
 * sl_pipeline_conf_t (off), not in its params.  AUTO: the word "auto"
 * stores -1 (a size whose value is worked out at run time).  MEMCAP: a
 * byte cap of a pipeline, one of those [sluice] memory_limit shares
 * (memlimit.h); an int64_t SL_KT_SIZE. */
#define SL_KF_REQUIRED 0x01 /* a pipeline must set it */
#define SL_KF_NONEMPTY 0x02 /* "" is an error */
#define SL_KF_NONE     0x04 /* the word "none" stores NULL */
#define SL_KF_TXNID    0x08
#define SL_KF_SECRET   0x10
#define SL_KF_SHARED   0x20
#define SL_KF_AUTO     0x40
#define SL_KF_MEMCAP   0x80

typedef struct sl_conf_key_s {
        const char *name;
        sl_conf_type_t type;
        const sl_conf_enum_t *enums; /* SL_KT_ENUM: NULL-terminated */
        const char *def; /* as text; NULL = none; "NAME." = pipeline name */
        const char *min, *max; /* bounds as text, NULL = unbounded */
        int flags;             /* SL_KF_* */
        size_t off, size;      /* where it is stored: SL_CONF_FIELD() */
        const char *desc;      /* one line, for the reference */
} sl_conf_key_t;

#define SL_CONF_FIELD(type, field)                                             \
        offsetof(type, field), sizeof(((type *)0)->field)

typedef struct sl_pipeline_conf_s {
        char *name;
        int line; /* line of the [pipeline NAME] header */
        sl_op_type_t type;
        /* The operator's keys (opdef.h), its struct: each operator's
         * opdef_<name>.h has its accessor (sl_throttle_conf(), ...).
         * Owned; NULL when the type is none. */
        void *params;

        /* Topics.  Internal topic names default to "<name>.<suffix>".
         * Every topic a pipeline names, with its role, is in
         * sl_pipeline_topics(). */
        char *input;
        char *output;           /* throttle, debounce: required */
        char *changelog;        /* default <name>.changelog */
        char *dlq;              /* default <name>.dlq; NULL when dlq = none */
        int replication_factor; /* for topics apply; -1 = broker default */
        int input_partitions;   /* topics apply creates a missing input
                                   with this many partitions; 0 = never */

        int64_t max_record_bytes; /* larger input records go to the DLQ */
        int64_t catchup_rate;     /* due work fired per second per partition
                                     after a rebuild; 0 = unlimited */
        int api;                  /* served by the HTTP API */
        sl_partitioner_t input_partitioner;
        int reroute; /* keyed records on another partition move (task.c) */
} sl_pipeline_conf_t;

/* The output key of an operator that writes its results to one topic of
 * the user's (throttle, debounce): a row of its table. */
#define SL_CONF_KEY_OUTPUT                                                     \
        {                                                                      \
                "output", SL_KT_TOPIC, NULL, NULL, NULL, NULL,                 \
                    SL_KF_REQUIRED | SL_KF_NONEMPTY | SL_KF_SHARED,            \
                    SL_CONF_FIELD(sl_pipeline_conf_t, output), "Output topic." \
        }

typedef struct sl_kv_s {
        char *key;
        char *value;
        int line; /* 0 when it came from the environment */
} sl_kv_t;

typedef struct sl_conf_s {
        char *path;

        /* [sluice] */
        char *app_id;         /* group.id and transactional.id prefix */
        char *instance_id;    /* group.instance.id; NULL = dynamic member */
        char *metrics_listen; /* "host:port"; NULL or "" = no HTTP server */
        int metrics_max_connections;
        int metrics_max_connections_client;
        int64_t metrics_request_timeout_ms;
        int log_level;  /* syslog level */
        int log_format; /* sl_log_format_t */
        int64_t commit_interval_ms;
        int64_t backlog_commit_interval_ms;
        int64_t shutdown_grace_ms;
        int64_t transaction_timeout_ms;
        int transaction_producers; /* 1, or 2 taking turns */
        int64_t recovery_timeout_ms;
        int64_t loop_stall_timeout_ms;
        char *api_listen;      /* "host:port"; NULL = no API */
        char *api_advertise;   /* NULL = derived from api_listen */
        char *api_tokens_file; /* NULL = none */
        char *api_peer_secret; /* NULL = none (see api_peer_secret_file) */
        char *api_peer_secret_file;
        char *api_tls_cert; /* NULL = plain HTTP */
        char *api_tls_key;
        char *api_tls_ca; /* NULL = trust api_tls_cert's certificates */
        int64_t api_max_body_bytes;
        int64_t api_timeout_ms;
        int api_queue;
        int api_max_connections;
        int api_max_connections_client;
        int64_t api_request_timeout_ms;
        int64_t memory_limit; /* bytes; 0 none; -1 auto (memlimit.h) */

        /* [kafka], in file order, environment overrides last */
        sl_kv_t *kafka;
        int kafka_cnt;

        sl_pipeline_conf_t *pipelines;
        int pipeline_cnt;
} sl_conf_t;

/* Reads and validates path.  On success returns 0 and *confp (owned by the
 * caller: sl_conf_destroy).  On failure returns the number of errors (> 0),
 * writes each as one line "FILE:LINE: key: what is wrong\n" to errout
 * (if not NULL), sorted by line (environment errors, then errors about the
 * whole file, "FILE: key: ...", last), and sets *confp = NULL.  Environment
 * overrides are applied when use_env is non-zero.
 *
 * Values: optional strings and topics left empty are NULL (instance_id,
 * metrics_listen, default_target); dlq = none is NULL; a pipeline's
 * params hold the keys of its own type only, and the shared fields of the
 * keys of other types (output, overflow, rates) are NULL. */
int sl_conf_load(const char *path, int use_env, sl_conf_t **confp,
                 FILE *errout);

/* The second transactional producer's id is the first's
 * (<app_id>-<instance_id>) with this after it; so no instance_id may end
 * in it (the loader refuses one that does). */
#define SL_TXNID_SECOND_SUFFIX "#2"

/* A DLQ replay's transactional id is <app_id>-dlq-replay.<pipeline>
 * (dlqreplay.h): no instance_id may start with this (the loader refuses
 * one that does). */
#define SL_TXNID_REPLAY_PREFIX "dlq-replay."

/* Flags of sl_conf_load_flags(). */
#define SL_CONF_ENV 0x1 /* apply the environment overrides */
#define SL_CONF_NO_PIPES                                                       \
        0x2 /* a file without pipelines is valid: for                          \
               commands that only need [kafka], such as                        \
               `topics create` */

/* sl_conf_load() with flags: sl_conf_load(p, 1, c, e) is
 * sl_conf_load_flags(p, SL_CONF_ENV, c, e). */
int sl_conf_load_flags(const char *path, int flags, sl_conf_t **confp,
                       FILE *errout);

void sl_conf_destroy(sl_conf_t *conf);

/* The consumer group and transactional id of pc's DLQ replay
 * (dlqreplay.h), <app_id>-dlq-replay.<pipeline>, in buf. */
void sl_conf_replay_id(const sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                       char *buf, size_t size);

/* The pipeline named name, or NULL. */
const sl_pipeline_conf_t *sl_conf_pipeline(const sl_conf_t *conf,
                                           const char *name);

/* For the commands that take -c FILE PIPELINE: loads path (with the
 * environment's overrides) and finds the pipeline named name.  Returns it,
 * with *confp the configuration (the caller destroys it); or NULL, *confp
 * NULL and what is wrong written to errout, the lines of a bad file as
 * sl_conf_load() writes them, else "CMD: FILE: no pipeline named NAME". */
const sl_pipeline_conf_t *
sl_conf_load_pipeline(const char *path, const char *name, const char *cmd,
                      sl_conf_t **confp, FILE *errout);

/* A new librdkafka conf holding every [kafka] property.  Returns NULL and an
 * error in errstr when a property is refused.  The caller owns the result. */
rd_kafka_conf_t *sl_conf_rdkafka(const sl_conf_t *conf, char *errstr,
                                 size_t errstr_size);

/* Writes the configuration reference (Markdown, generated from the table). */
void sl_conf_reference(FILE *out);

/* librdkafka properties sluice sets to other values than librdkafka's
 * defaults, on the producer or on the group consumer, unless [kafka] sets
 * them (clients.c applies them; the configuration reference lists them). */
typedef enum { SL_KAFKA_PRODUCER = 1, SL_KAFKA_CONSUMER = 2 } sl_kafka_client_t;
typedef struct sl_kafka_default_s {
        sl_kafka_client_t client;
        const char *name;
        const char *value;
        const char *why; /* one sentence, for the reference */
} sl_kafka_default_t;
extern const sl_kafka_default_t sl_kafka_defaults[];
extern const size_t sl_kafka_defaults_cnt;

/* Writes the effective configuration as INI, a file that loads back to
 * the same configuration; values of [kafka] keys that look secret (their
 * name holds password, secret, key or oauthbearer.config) are replaced by
 * "***". */
void sl_conf_dump(const sl_conf_t *conf, FILE *out);

/*
 * FINALIZE HOOKS
 *
 * An operator's finalize() (opdef.h) checks the rules between its keys of
 * one pipeline, and reports each broken one with sl_conf_check_error(),
 * which names the line that set key (or the pipeline's header line when
 * its value is a default): "FILE:LINE: key: what is wrong".
 */
typedef struct sl_conf_check_s sl_conf_check_t;

void sl_conf_check_error(sl_conf_check_t *chk, const char *key, const char *fmt,
                         ...) __attribute__((format(printf, 3, 4)));

/* 1 when the file set key in the pipeline being checked, 0 when its value
 * is a default. */
int sl_conf_check_set(const sl_conf_check_t *chk, const char *key);

/*
 * TOPICS OF A PIPELINE
 *
 * sl_pipeline_topics() is the one walk over the topics a pipeline names,
 * each with its role (opdef.h: sl_roledef_t, the SL_ROLE_* flags), in this
 * order: the input, the changelog, the operator's roles that are not
 * outputs (throttle: overflow, rates; delay: payloads), the dlq, the
 * operator's outputs (output; a delay pipeline's default_target).  A role
 * flagged SL_ROLE_OPTIONAL is left out while its key is unset (dlq = none,
 * no default_target, no payload_topic); every other role is always
 * there.  name points into
 * pc (a loaded configuration sets every name); it is NULL only in a
 * configuration built by hand that left a required one unset (tests).
 */
typedef struct sl_ptopic_s {
        const sl_roledef_t *role; /* static */
        const char *name;         /* the topic; pc's string */
} sl_ptopic_t;

#define SL_PIPELINE_TOPICS_MAX 12

/* The roles every pipeline has. */
extern const sl_roledef_t sl_role_input, sl_role_changelog, sl_role_dlq;

/* Fills out (room for SL_PIPELINE_TOPICS_MAX) with pc's topics, in the
 * order above; returns their count.  Pure, any thread. */
int sl_pipeline_topics(const sl_pipeline_conf_t *pc, sl_ptopic_t *out);

/* The topic of pc's role named role ("rates"), or NULL when pc has none. */
const char *sl_pipeline_topic(const sl_pipeline_conf_t *pc, const char *role);

/* 1 when name is an SL_ROLE_INTERNAL topic of one of conf's pipelines
 * (a changelog, overflow, rates, payloads or dlq): never a target. */
int sl_conf_topic_internal(const sl_conf_t *conf, const char *name);

/* One byte cap of a pipeline (a row flagged SL_KF_MEMCAP). */
typedef struct sl_conf_memcap_s {
        const sl_pipeline_conf_t *pc;
        const char *key; /* the row's name: "max_pending_bytes" */
        int64_t *bytes;  /* its value, in pc's params (0: unlimited) */
} sl_conf_memcap_t;

/* Every byte cap of conf's pipelines, in pipeline and row order, into a new
 * array of *cnt (the caller frees it; bytes points into conf, which may be
 * changed through it before the pipelines start). */
sl_conf_memcap_t *sl_conf_memcaps(sl_conf_t *conf, int *cnt);

/* Every SL_ROLE_INTERNAL topic of conf's pipelines, in pipeline and role
 * order, into a new array of *cnt names (pointing into conf; the caller
 * frees the array): for a check on a hot path. */
const char **sl_conf_internal_topics(const sl_conf_t *conf, int *cnt);

#endif
