/*
 * config.h — the configuration: one INI file, read through one table of keys.
 *
 *   [sluice]          app-wide settings (app_id, metrics_listen, ...)
 *   [kafka]           librdkafka properties, passed through untouched
 *   [pipeline NAME]   one per pipeline; `type` picks the operator
 *
 * Every key is a row in the table in config.c: type, default, bounds, the
 * pipeline types it applies to, and a one-line description.  The README's
 * configuration reference is generated from that table (`sluice config
 * reference`), so code and docs cannot drift.  Cross-field rules live in one
 * finalize step.  Errors read `FILE:LINE: key: what is wrong`; all of a file's
 * errors are reported in one pass.
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
#include <stdint.h>
#include <stdio.h>

#include "parse.h"

typedef enum {
        SL_OP_THROTTLE = 1,
        SL_OP_DELAY = 2,
        SL_OP_DEBOUNCE = 4,
} sl_op_type_t;

const char *sl_op_type_name(sl_op_type_t type);

typedef enum {
        SL_INPUT_HEADERS = 0,       /* control in sluice-* headers */
        SL_INPUT_JSON_ENVELOPE = 1, /* {"topic","message","countdown"} */
} sl_input_format_t;

/* How a key maps to an input partition (the API writes there, and looks
 * the owner up there; every producer of the input must agree). */
typedef enum {
        SL_PARTITIONER_MURMUR2 = 0, /* Java's default, librdkafka's murmur2 */
        SL_PARTITIONER_CRC32 = 1,   /* librdkafka's consistent(_random) */
} sl_partitioner_t;

typedef enum {
        SL_OUTPUT_JSON = 0,
        SL_OUTPUT_PROTOBUF = 1,
} sl_output_format_t;

typedef struct sl_pipeline_conf_s {
        char *name;
        int line; /* line of the [pipeline NAME] header */
        sl_op_type_t type;

        /* Topics.  Internal topic names default to "<name>.<suffix>". */
        char *input;
        char *output;           /* throttle, debounce: required */
        char *changelog;        /* default <name>.changelog */
        char *dlq;              /* default <name>.dlq; NULL when dlq = none */
        char *overflow;         /* throttle: default <name>.overflow */
        char *rates;            /* throttle: default <name>.rates */
        int replication_factor; /* for topics apply; -1 = broker default */
        int input_partitions;   /* topics apply creates a missing input
                                   with this many partitions; 0 = never */

        int64_t max_record_bytes; /* larger input records go to the DLQ */
        int64_t catchup_rate;     /* due work fired per second per partition
                                     after a rebuild; 0 = unlimited */
        int api;                  /* served by the HTTP API */
        sl_partitioner_t input_partitioner;
        int reroute; /* keyed records on another partition move (task.c) */

        /* throttle */
        sl_rate_t default_rate;
        int64_t ttl_ms;
        int64_t payload_cache_bytes;
        int64_t max_backlog_keys; /* caps (task.h): 0 = unlimited */
        int64_t max_backlog_messages;
        int64_t max_key_bytes;   /* throttle keys' bytes: a cap too */
        int64_t max_rates_bytes; /* the rates table (rates.h) */

        /* delay and debounce */
        int64_t max_pending_bytes;

        /* delay */
        char *default_target; /* NULL if none */
        sl_globs_t allowed_targets;
        int64_t max_delay_ms;
        int64_t timestamp_skew_ms;
        sl_input_format_t input_format;
        int64_t max_pending_timers;

        /* debounce */
        int64_t idle_ms;
        int64_t max_age_ms;
        int64_t max_items;
        int64_t max_bytes;
        sl_output_format_t output_format;
        int64_t max_open_groups;
        int64_t max_pending_items;
} sl_pipeline_conf_t;

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
        int log_level; /* syslog level */
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
 * metrics_listen, default_target); dlq = none is NULL; keys of other
 * pipeline types are zero/NULL. */
int sl_conf_load(const char *path, int use_env, sl_conf_t **confp,
                 FILE *errout);

/* The second transactional producer's id is the first's
 * (<app_id>-<instance_id>) with this after it; so no instance_id may end
 * in it (the loader refuses one that does). */
#define SL_TXNID_SECOND_SUFFIX "#2"

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

/* The pipeline named name, or NULL. */
const sl_pipeline_conf_t *sl_conf_pipeline(const sl_conf_t *conf,
                                           const char *name);

/* A new librdkafka conf holding every [kafka] property.  Returns NULL and an
 * error in errstr when a property is refused.  The caller owns the result. */
rd_kafka_conf_t *sl_conf_rdkafka(const sl_conf_t *conf, char *errstr,
                                 size_t errstr_size);

/* Writes the configuration reference (Markdown, generated from the table). */
void sl_conf_reference(FILE *out);

/* librdkafka properties sluice sets to other values than librdkafka's
 * defaults, on the producer or on the group consumer, unless [kafka] sets
 * them (app.c applies them; the configuration reference lists them). */
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

#endif
