/*
 * config.c — the configuration file: one table of keys, an INI reader, one
 * finalize step for cross-field rules, and `sluice config ...` (see
 * config.h).
 *
 * DESIGN
 *
 * Every key of [sluice] and [pipeline NAME] is a row of conf_keys[]: the
 * section it lives in, the pipeline types it applies to, its value type,
 * its default and bounds *as text* (parsed by the very code that parses the
 * file, so a default can never be out of its own bounds unnoticed), where it
 * is stored (offsetof) and a one-line description.  Loading, defaults,
 * environment overrides, `config dump`, `config reference` and freeing all
 * walk that one table.
 *
 * Loading runs in three passes so that every error of a file is reported
 * in one run:
 *
 *   1. read: libinih splits the file into sections and key = value pairs.
 *      inih (Debian's build) does not pass line numbers to the handler, so
 *      it reads through our own line reader, which counts lines, notes
 *      section headers (inih does not report them, nor empty sections) and
 *      flags syntax errors.  Pairs are collected per section, with lines.
 *   2. apply: each section's pairs are checked against the table and
 *      stored.  A pipeline's pairs are applied only once its `type` is
 *      known, wherever `type` appears in the section.  Environment
 *      overrides come last.
 *   3. finalize: rules that span keys and pipelines.
 *
 * Errors are collected, sorted by line and written at the end, each as
 * "FILE:LINE: key: what is wrong" (or "env VAR: key: ..." for a value from
 * the environment).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include "cli.h"
#include "topicname.h"
#include "util.h"

extern char **environ;

/* The table of keys. */

typedef enum {
        KT_STRING,   /* char *; "" is NULL unless F_NONEMPTY */
        KT_TOPIC,    /* char *, a legal Kafka topic name */
        KT_HOSTPORT, /* char *, "host:port"; "" is NULL */
        KT_INT,      /* int or int64_t (by field size) */
        KT_BOOL,     /* int: 0 or 1 */
        KT_DURATION, /* int64_t milliseconds */
        KT_SIZE,     /* int64_t bytes */
        KT_RATE,     /* sl_rate_t */
        KT_GLOBS,    /* sl_globs_t */
        KT_ENUM,     /* int-sized enum, values from .enums */
} key_type_t;

typedef struct {
        const char *name;
        int value;
} conf_enum_t;

#define F_REQUIRED 0x1 /* a pipeline must set it */
#define F_NONEMPTY 0x2 /* "" is an error */
#define F_NONE     0x4 /* the word "none" stores NULL */
#define F_TXNID    0x8 /* in a transactional id: no SL_TXNID_SECOND_SUFFIX end */
#define F_SECRET   0x10 /* `config dump` shows *** (never logged either) */

typedef enum {
        SECT_NONE = 0, /* pairs before any section header */
        SECT_SLUICE,
        SECT_KAFKA,
        SECT_PIPELINE,
        SECT_BAD, /* an erroneous header: its pairs are skipped */
} sect_kind_t;

typedef struct {
        sect_kind_t section; /* SECT_SLUICE or SECT_PIPELINE */
        int types;           /* pipeline rows: mask of SL_OP_* */
        const char *name;
        key_type_t type;
        const conf_enum_t *enums; /* KT_ENUM: NULL-terminated */
        const char *def; /* as text; NULL = none; "NAME." = pipeline name */
        const char *min, *max; /* bounds as text, NULL = unbounded */
        int flags;
        size_t off, size;
        const char *desc;
} conf_key_t;

#define ALL_OPS (SL_OP_THROTTLE | SL_OP_DELAY | SL_OP_DEBOUNCE)
#define SLUICE(field)                                                          \
        offsetof(sl_conf_t, field), sizeof(((sl_conf_t *)0)->field)
#define PIPE(field)                                                            \
        offsetof(sl_pipeline_conf_t, field),                                   \
            sizeof(((sl_pipeline_conf_t *)0)->field)

static const conf_enum_t op_types[] = {{"throttle", SL_OP_THROTTLE},
                                       {"delay", SL_OP_DELAY},
                                       {"debounce", SL_OP_DEBOUNCE},
                                       {NULL, 0}};
static const conf_enum_t log_levels[] = {
    {"debug", LOG_DEBUG},     {"info", LOG_INFO}, {"notice", LOG_NOTICE},
    {"warning", LOG_WARNING}, {"error", LOG_ERR}, {NULL, 0}};
static const conf_enum_t input_formats[] = {
    {"headers", SL_INPUT_HEADERS},
    {"json-envelope", SL_INPUT_JSON_ENVELOPE},
    {NULL, 0}};
static const conf_enum_t partitioners[] = {{"murmur2", SL_PARTITIONER_MURMUR2},
                                           {"crc32", SL_PARTITIONER_CRC32},
                                           {NULL, 0}};
static const conf_enum_t output_formats[] = {
    {"json", SL_OUTPUT_JSON}, {"protobuf", SL_OUTPUT_PROTOBUF}, {NULL, 0}};

static const conf_key_t conf_keys[] = {
    /* [sluice] */
    {SECT_SLUICE, 0, "app_id", KT_STRING, NULL, "sluice", NULL, NULL,
     F_NONEMPTY, SLUICE(app_id),
     "Consumer group id and transactional id prefix; instances with the "
     "same app_id share the work."},
    {SECT_SLUICE, 0, "instance_id", KT_STRING, NULL, "", NULL, NULL, F_TXNID,
     SLUICE(instance_id),
     "Static group membership id (group.instance.id), e.g. the pod name; "
     "empty = dynamic membership. May not end in #2."},
    {SECT_SLUICE, 0, "metrics_listen", KT_HOSTPORT, NULL, "127.0.0.1:9464",
     NULL, NULL, 0, SLUICE(metrics_listen),
     "Address of the HTTP server for /metrics, /healthz and /readyz; empty "
     "= no server."},
    {SECT_SLUICE, 0, "metrics_max_connections", KT_INT, NULL, "64", "1",
     "65536", 0, SLUICE(metrics_max_connections),
     "Connections metrics_listen holds; a new one past it closes the one "
     "that has waited longest for its request (none waiting: the new one "
     "is closed)."},
    {SECT_SLUICE, 0, "metrics_max_connections_per_client", KT_INT, NULL, "32",
     "1", "65536", 0, SLUICE(metrics_max_connections_client),
     "Connections one client address (IPv4, or IPv6 /64) holds on "
     "metrics_listen; a new one past it closes that client's connection "
     "that has waited longest for its request."},
    {SECT_SLUICE, 0, "metrics_request_timeout", KT_DURATION, NULL, "5s",
     "100ms", "10m", 0, SLUICE(metrics_request_timeout_ms),
     "A request to metrics_listen must be all in this long after its "
     "connection opened (or its previous answer was sent), or the "
     "connection is closed, however slowly bytes keep coming."},
    {SECT_SLUICE, 0, "log_level", KT_ENUM, log_levels, "info", NULL, NULL, 0,
     SLUICE(log_level), "Lines below this level are not logged."},
    {SECT_SLUICE, 0, "commit_interval", KT_DURATION, NULL, "100ms", "1ms",
     "60s", 0, SLUICE(commit_interval_ms),
     "How often the open transaction is committed: the bound on added "
     "latency (while the input is behind: backlog_commit_interval)."},
    {SECT_SLUICE, 0, "backlog_commit_interval", KT_DURATION, NULL, "1s", "1ms",
     "60s", 0, SLUICE(backlog_commit_interval_ms),
     "While the input is behind (for 100 ms its lag would have taken 250 ms "
     "or more, or commit_interval, to read at the pace of the last second), "
     "the regular commit waits this long instead: fewer, larger transactions "
     "catch up sooner. Never below commit_interval, at most half of "
     "transaction_timeout; due timers and debounce deadlines still commit "
     "at once."},
    {SECT_SLUICE, 0, "shutdown_grace", KT_DURATION, NULL, "30s", "1s", "1h", 0,
     SLUICE(shutdown_grace_ms),
     "On SIGTERM, time allowed to commit the open transaction and leave the "
     "group; past it the process exits 1 (a watchdog thread, also as PID 1)."},
    {SECT_SLUICE, 0, "recovery_timeout", KT_DURATION, NULL, "0", "0", "7d", 0,
     SLUICE(recovery_timeout_ms),
     "After a fatal Kafka client error the clients are re-created "
     "in-process; if that keeps failing this long, exit 1 (0 = keep "
     "trying)."},
    {SECT_SLUICE, 0, "loop_stall_timeout", KT_DURATION, NULL, "15s", "1s",
     "10m", 0, SLUICE(loop_stall_timeout_ms),
     "/healthz fails when the event loop has not turned for this long."},
    {SECT_SLUICE, 0, "transaction_timeout", KT_DURATION, NULL, "10s", "1s",
     "15m", 0, SLUICE(transaction_timeout_ms),
     "Kafka transaction timeout (transaction.timeout.ms); the broker aborts "
     "a transaction left open longer."},
    {SECT_SLUICE, 0, "transaction_producers", KT_INT, NULL, "2", "1", "2", 0,
     SLUICE(transaction_producers),
     "Transactional producers taking turns: with 2 the next transaction "
     "opens while Kafka still writes the last one's commit markers (ids "
     "app_id-instance and app_id-instance#2); 1 waits for them."},

    {SECT_SLUICE, 0, "api_listen", KT_HOSTPORT, NULL, "", NULL, NULL, 0,
     SLUICE(api_listen),
     "Address of the HTTP/JSON API (/v1: timers, keys, groups); empty = no "
     "API.  Needs bearer tokens (api_tokens_file or SLUICE_API_TOKENS)."},
    {SECT_SLUICE, 0, "api_advertise", KT_HOSTPORT, NULL, "", NULL, NULL, 0,
     SLUICE(api_advertise),
     "The API address other instances forward lookups to (advertised in the "
     "consumer's client.id); empty = api_listen, with this host's name for "
     "a wildcard host."},
    {SECT_SLUICE, 0, "api_tokens_file", KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tokens_file),
     "File of accepted bearer tokens, one a line (# comments); the "
     "environment variable SLUICE_API_TOKENS (comma-separated) adds more."},
    {SECT_SLUICE, 0, "api_peer_secret", KT_STRING, NULL, "", NULL, NULL,
     F_SECRET, SLUICE(api_peer_secret),
     "Secret the instances share (16 bytes or more, the same on each; or "
     "SLUICE_API_PEER_SECRET): a lookup forwarded to a key's owner carries "
     "an HMAC-SHA256 made with it instead of the client's token, and the "
     "owner's answer is checked with it. Empty (and no "
     "api_peer_secret_file): lookups of keys owned elsewhere are answered "
     "421."},
    {SECT_SLUICE, 0, "api_peer_secret_file", KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_peer_secret_file),
     "File whose first line is api_peer_secret (e.g. a mounted Kubernetes "
     "Secret); instead of api_peer_secret."},
    {SECT_SLUICE, 0, "api_tls_cert", KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tls_cert),
     "PEM certificate (chain) of the API; with api_tls_key, the API speaks "
     "HTTPS only."},
    {SECT_SLUICE, 0, "api_tls_key", KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tls_key), "PEM private key of api_tls_cert."},
    {SECT_SLUICE, 0, "api_tls_ca", KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tls_ca),
     "PEM CA certificate(s) a forwarded lookup verifies the owner's API "
     "certificate against (chain and host name); empty = the certificates "
     "of api_tls_cert (members sharing one certificate)."},
    {SECT_SLUICE, 0, "api_max_body", KT_SIZE, NULL, "2MiB", "1KiB", "64MiB", 0,
     SLUICE(api_max_body_bytes),
     "Largest request body the API reads; larger ones are answered 413."},
    {SECT_SLUICE, 0, "api_timeout", KT_DURATION, NULL, "5s", "100ms", "60s", 0,
     SLUICE(api_timeout_ms),
     "How long a request waits for a write to be durable, for the event "
     "loop or for a forwarded lookup before it is answered 503."},
    {SECT_SLUICE, 0, "api_queue", KT_INT, NULL, "1024", "1", "1000000", 0,
     SLUICE(api_queue),
     "Lookups waiting for the event loop; past it requests are answered "
     "503 at once."},
    {SECT_SLUICE, 0, "api_max_connections", KT_INT, NULL, "256", "1", "65536",
     0, SLUICE(api_max_connections),
     "Open API connections (one thread each); a new one past it closes the "
     "one that has waited longest for its request (none waiting: the new "
     "one is closed)."},
    {SECT_SLUICE, 0, "api_max_connections_per_client", KT_INT, NULL, "64", "1",
     "65536", 0, SLUICE(api_max_connections_client),
     "API connections one client address (IPv4, or IPv6 /64) holds; a new "
     "one past it closes that client's connection that has waited longest "
     "for its request. Behind a proxy or sidecar every client has its "
     "address: raise it to api_max_connections."},
    {SECT_SLUICE, 0, "api_request_timeout", KT_DURATION, NULL, "10s", "100ms",
     "10m", 0, SLUICE(api_request_timeout_ms),
     "A request to the API (TLS handshake, head and body) must be all in "
     "this long after its connection opened (or its previous answer was "
     "sent), or the connection is closed, however slowly bytes keep "
     "coming."},

    /* [pipeline NAME], every type */
    {SECT_PIPELINE, ALL_OPS, "type", KT_ENUM, op_types, NULL, NULL, NULL,
     F_REQUIRED, PIPE(type), "The operator this pipeline runs."},
    {SECT_PIPELINE, ALL_OPS, "input", KT_TOPIC, NULL, NULL, NULL, NULL,
     F_REQUIRED | F_NONEMPTY, PIPE(input),
     "Input topic; all the pipeline's internal topics get its partition "
     "count."},
    {SECT_PIPELINE, ALL_OPS, "changelog", KT_TOPIC, NULL, "NAME.changelog",
     NULL, NULL, F_NONEMPTY, PIPE(changelog),
     "Compacted topic holding the pipeline's state, read back on partition "
     "assignment."},
    {SECT_PIPELINE, ALL_OPS, "dlq", KT_TOPIC, NULL, "NAME.dlq", NULL, NULL,
     F_NONEMPTY | F_NONE, PIPE(dlq),
     "Dead-letter topic for bad input and expired messages; `none` drops "
     "them (counted in metrics)."},
    {SECT_PIPELINE, ALL_OPS, "replication_factor", KT_INT, NULL, "-1", "-1",
     "32767", 0, PIPE(replication_factor),
     "Replication factor of the topics `sluice topics apply` creates; -1 = "
     "broker default."},
    {SECT_PIPELINE, ALL_OPS, "input_partitions", KT_INT, NULL, "0", "0",
     "100000", 0, PIPE(input_partitions),
     "Partitions for a missing input topic created by `sluice topics "
     "apply`; 0 = never create the input."},
    {SECT_PIPELINE, ALL_OPS, "max_record_bytes", KT_SIZE, NULL, "1MiB", "1",
     "1GiB", 0, PIPE(max_record_bytes),
     "Input records whose key and value together are larger go to the DLQ "
     "(oversize)."},
    {SECT_PIPELINE, ALL_OPS, "catchup_rate", KT_INT, NULL, "50000", "0", NULL,
     0, PIPE(catchup_rate),
     "Work that fell due while a partition was unowned is fired at most "
     "this fast (per second per partition) after a rebuild; 0 = "
     "unlimited."},
    {SECT_PIPELINE, ALL_OPS, "api", KT_BOOL, NULL, "true", NULL, NULL, 0,
     PIPE(api),
     "Whether the HTTP API (api_listen) serves this pipeline; false answers "
     "its routes 404."},
    {SECT_PIPELINE, ALL_OPS, "input_partitioner", KT_ENUM, partitioners,
     "murmur2", NULL, NULL, 0, PIPE(input_partitioner),
     "The partition a key belongs to: `murmur2` (Java's default; "
     "kcat/librdkafka `-X partitioner=murmur2_random`) or `crc32` "
     "(librdkafka's and kcat's default `consistent_random`). The API writes "
     "a key there; with `reroute`, a keyed record produced elsewhere is "
     "moved there."},
    {SECT_PIPELINE, ALL_OPS, "reroute", KT_BOOL, NULL, "true", NULL, NULL, 0,
     PIPE(reroute),
     "A keyed input record on a partition its key does not belong to (by "
     "`input_partitioner`) is moved to the right input partition in the same "
     "transaction (sluice writes to the input: give it Write there); false: "
     "handled where it arrived, so every producer must use "
     "`input_partitioner` for cancel, upsert, order and grouping to hold."},

    /* throttle */
    {SECT_PIPELINE, SL_OP_THROTTLE | SL_OP_DEBOUNCE, "output", KT_TOPIC, NULL,
     NULL, NULL, NULL, F_REQUIRED | F_NONEMPTY, PIPE(output), "Output topic."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "overflow", KT_TOPIC, NULL, "NAME.overflow",
     NULL, NULL, F_NONEMPTY, PIPE(overflow),
     "Topic holding the backlog of messages over their key's rate."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "rates", KT_TOPIC, NULL, "NAME.rates", NULL,
     NULL, F_NONEMPTY, PIPE(rates),
     "Compacted topic of per-key rates (key = throttle key or `*`, value "
     "such as `100/s burst=10`)."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "default_rate", KT_RATE, NULL, "100/s",
     NULL, NULL, 0, PIPE(default_rate),
     "Rate of keys without an entry in the rates topic (and no `*` "
     "entry)."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "ttl", KT_DURATION, NULL, "6h", "1s", "30d",
     0, PIPE(ttl_ms),
     "A message not sent within this time goes to the DLQ as `expired`; "
     "also caps the sluice-ttl header."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "payload_cache", KT_SIZE, NULL, "64MiB",
     "0", NULL, 0, PIPE(payload_cache_bytes),
     "Memory for backlog payloads; the rest are re-read from the overflow "
     "topic."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "max_backlog_keys", KT_INT, NULL, "5000000",
     "0", NULL, 0, PIPE(max_backlog_keys),
     "Keys held in memory on this instance (a backlog, or a bucket not yet "
     "full again); a record for a new key waits (input paused) at the cap. "
     "~200 B + key per key: 5M ~ 1-1.5 GiB. 0 = unlimited."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "max_backlog_messages", KT_INT, NULL,
     "20000000", "0", NULL, 0, PIPE(max_backlog_messages),
     "Messages buffered in the backlog on this instance; a record that "
     "would be buffered waits (input paused) at the cap. The index is <= 32 "
     "B per message: 20M ~ 640 MiB. 0 = unlimited."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "max_key_bytes", KT_SIZE, NULL, "1GiB", "0",
     NULL, 0, PIPE(max_key_bytes),
     "Memory of the keys held on this instance (their bytes and ~200 B "
     "each); a record for a new key waits (input paused) at the cap. 0 = "
     "unlimited."},
    {SECT_PIPELINE, SL_OP_THROTTLE, "max_rates_bytes", KT_SIZE, NULL, "256MiB",
     "0", NULL, 0, PIPE(max_rates_bytes),
     "Memory of the rates table on each instance (keys and ~100 B each); a "
     "rates record for a new key past it is ignored (the key keeps the "
     "default rate), logged and counted as rejected. 0 = unlimited."},

    /* delay */
    {SECT_PIPELINE, SL_OP_DELAY, "default_target", KT_TOPIC, NULL, "", NULL,
     NULL, 0, PIPE(default_target),
     "Target topic of timers without a sluice-target header; empty = the "
     "header is required."},
    {SECT_PIPELINE, SL_OP_DELAY, "allowed_targets", KT_GLOBS, NULL, "**", NULL,
     NULL, 0, PIPE(allowed_targets),
     "Glob patterns (comma-separated) a timer's target topic must match: "
     "`*` stays within one dot-separated segment, `**` crosses dots."},
    {SECT_PIPELINE, SL_OP_DELAY, "max_delay", KT_DURATION, NULL, "366d", "1s",
     NULL, 0, PIPE(max_delay_ms),
     "Timers due further in the future go to the DLQ."},
    {SECT_PIPELINE, SL_OP_DELAY, "timestamp_skew", KT_DURATION, NULL, "1m", "0",
     NULL, 0, PIPE(timestamp_skew_ms),
     "A sluice-delay counts from the record's timestamp; one further ahead "
     "of sluice's clock than this (or missing, or before 2010) counts from "
     "when sluice reads the record instead."},
    {SECT_PIPELINE, SL_OP_DELAY, "input_format", KT_ENUM, input_formats,
     "headers", NULL, NULL, 0, PIPE(input_format),
     "`headers`: sluice-* headers; `json-envelope`: a "
     "`{\"topic\",\"message\",\"countdown\"}` value."},
    {SECT_PIPELINE, SL_OP_DELAY, "max_pending_timers", KT_INT, NULL, "5000000",
     "0", NULL, 0, PIPE(max_pending_timers),
     "Pending timers on this instance; a record for a new timer id waits "
     "(input paused) at the cap. A timer costs ~60 B beyond its key and "
     "data (sluice_timers_memory_bytes), and RSS adds what librdkafka's "
     "buffers leave behind: 5M ~ 0.3-0.7 GiB. 0 = unlimited."},

    /* debounce */
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "idle", KT_DURATION, NULL, "2s", "1ms",
     NULL, 0, PIPE(idle_ms),
     "Flush a group after this long without an update (at most max_age)."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "max_age", KT_DURATION, NULL, "30s", "1ms",
     NULL, 0, PIPE(max_age_ms),
     "Flush a group when its oldest item is this old."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "max_items", KT_INT, NULL, "1000", "1",
     "1000000", 0, PIPE(max_items),
     "Flush a group when it holds this many items; also the largest "
     "batch."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "max_bytes", KT_SIZE, NULL, "1MiB", "1",
     "1GiB", 0, PIPE(max_bytes),
     "Flush a group when its payloads add up to this size."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "output_format", KT_ENUM, output_formats,
     "json", NULL, NULL, 0, PIPE(output_format),
     "Batch encoding: `json` or `protobuf` (proto/)."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "max_open_groups", KT_INT, NULL, "1000000",
     "0", NULL, 0, PIPE(max_open_groups),
     "Open groups on this instance; a record for a new group waits (input "
     "paused) at the cap. ~250 B + key per group: 1M ~ 250-400 MiB. 0 = "
     "unlimited."},
    {SECT_PIPELINE, SL_OP_DEBOUNCE, "max_pending_items", KT_INT, NULL,
     "5000000", "0", NULL, 0, PIPE(max_pending_items),
     "Pending items on this instance; a record for a new item waits (input "
     "paused) at the cap. ~150-300 B + id per item beyond its payload: 5M "
     "~ 0.7-1.5 GiB. 0 = unlimited."},
    {SECT_PIPELINE, SL_OP_DELAY | SL_OP_DEBOUNCE, "max_pending_bytes", KT_SIZE,
     NULL, "1GiB", "0", NULL, 0, PIPE(max_pending_bytes),
     "Bytes of pending state on this instance (delay: timer keys and data; "
     "debounce: group keys, item ids and payloads); a record that would add "
     "to it waits (input paused) at the cap, which one record may pass. 0 = "
     "unlimited."},
};

#define KEY_CNT ((int)SL_ARRAY_SIZE(conf_keys))

/* [kafka] properties sluice sets itself, and what to do instead. */
static const struct {
        const char *name;
        const char *hint;
} kafka_reserved[] = {
    {"group.id", "set app_id in [sluice]"},
    {"transactional.id", "derived from app_id in [sluice]"},
    {"group.instance.id", "set instance_id in [sluice]"},
    {"transaction.timeout.ms", "set transaction_timeout in [sluice]"},
    {"enable.auto.commit", "sluice commits offsets in its transactions"},
    {"enable.auto.offset.store", "sluice commits offsets in its transactions"},
    {"auto.offset.reset", "sluice reads from the earliest offset"},
    {"isolation.level", "sluice always reads read_committed"},
    {"enable.idempotence", "sluice's transactional producer is idempotent"},
    {"partition.assignment.strategy",
     "sluice picks the assignment strategy its rebuilds rely on"},
};

/* Why each value (measured on the bench, bench/README.md):
 *
 * linger.ms 2: records leave while their transaction is open, so a commit
 * has little left to send (every commit flushes, so none waits for the
 * linger).  In three alternating pairs, 100 ms cut the poll() calls of
 * librdkafka 2.0.2's busy producer thread to about a third and debounce's
 * CPU per item from 3.84 to 3.50 µs (medians), but throttle pass-through
 * fell by 8-18 % (likely because FLUSHING, with the input held, then
 * sends the whole interval's records) and delay's due → visible p99 at
 * 2k timers/s rose from 44-46 to 54-57 ms in the two steadier pairs
 * (bench/NOTES.md).  queue.buffering.max.messages 1M: a
 * million timers may fall
 * due at once.  retry.backoff.ms 5: the next transaction is opened right
 * after a commit (txn.c, worker_open_next) and its AddOffsetsToTxn meets
 * CONCURRENT_TRANSACTIONS until the broker has written the markers; it is
 * retried at this pace (librdkafka's 100 ms would land in lateness; 5 ms
 * against 10 took due → visible p99 at 10k timers/s from 47 to 37 ms).
 *
 * fetch.wait.max.ms 10: librdkafka 2.0 keeps one Fetch in flight per
 * broker, held by the broker up to this long while no partition has data
 * (default 500); a partition resumed or sought meanwhile (every rebuild's
 * end) is fetched only when it returns, and a seek to a logical offset
 * first waits for its ListOffsets behind it: up to twice the wait before
 * the first record is read.  queued.min.messages 250k: librdkafka 2.0
 * compares it with the whole consumer queue (every partition's fetch queue
 * forwards to it) and, once reached, fetches nothing until its broker
 * thread wakes again, up to a second later; the default 100k, drained in
 * under a second, starved on every backlog (throttle pass-through 157k →
 * 325k rec/s, debounce ingest 93k → 176k items/s; peak RSS +65 MB).  Since
 * sluice wakes the fetcher itself when it has emptied a queue that full
 * (app.c, app_wake_fetcher), 100k no longer starves (throttle 352k-433k
 * against 191k-194k rec/s without the wake-up, debounce 240k-310k against
 * 133k-135k items/s): a lower value trades little throughput for memory.
 * topic.metadata.refresh.interval.ms 30 s: partitions added to an input are
 * noticed at the next refresh (librdkafka's default: 5 min; parts.h). */
const sl_kafka_default_t sl_kafka_defaults[] = {
    {SL_KAFKA_PRODUCER, "linger.ms", "2",
     "records leave while their transaction is open, so a commit has "
     "little left to send"},
    {SL_KAFKA_PRODUCER, "queue.buffering.max.messages", "1000000",
     "a million timers may fall due at once"},
    {SL_KAFKA_PRODUCER, "retry.backoff.ms", "5",
     "the next transaction opens as soon as the broker has written the "
     "previous commit's markers"},
    {SL_KAFKA_CONSUMER, "fetch.wait.max.ms", "10",
     "a partition resumed after its rebuild is read at once, not after the "
     "Fetch in flight"},
    {SL_KAFKA_CONSUMER, "queued.min.messages", "250000",
     "librdkafka 2.0 counts it over all partitions and, once reached, stops "
     "fetching until woken (sluice wakes it when the queue is empty): "
     "250k holds up to ~65 MB more than the default while catching up, "
     "for fewer wake-ups"},
    {SL_KAFKA_CONSUMER, "topic.metadata.refresh.interval.ms", "30000",
     "partitions added to an input are served within 30 s"},
};
const size_t sl_kafka_defaults_cnt = SL_ARRAY_SIZE(sl_kafka_defaults);

const char *sl_op_type_name(sl_op_type_t type) {
        for (const conf_enum_t *e = op_types; e->name; e++)
                if (e->value == (int)type)
                        return e->name;
        return "unknown";
}

/* Values: parse, store, format, free.  All by table row. */

/* The longest line the reader takes. */
#define MAX_LINE (64 * 1024)

/* The longest string value: its dump line "key = value" must still fit. */
#define MAX_VALUE (MAX_LINE - 256)

/* Why s cannot be written as an INI value that reads back the same, or
 * NULL.  inih strips the blanks around a value, ends it at a line break
 * and cuts an inline comment (';' after a blank).  A value read from a
 * file is always fine; one from the environment may not be, and is
 * refused rather than dumped as something else. */
static const char *ini_value_problem(const char *s) {
        size_t n = strlen(s);

        if (n > MAX_VALUE)
                return "is too long";
        if (n &&
            (isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1])))
                return "begins or ends with a blank";
        for (const char *p = s; *p; p++) {
                if (iscntrl((unsigned char)*p) && *p != '\t')
                        return "holds a control character";
                /* After "key = " a ';' first is after a blank too. */
                if (*p == ';' && (p == s || isspace((unsigned char)p[-1])))
                        return "holds a ';' first or after a blank, which "
                               "starts a comment";
        }
        return NULL;
}

static int vfail(char *errstr, size_t errstr_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int vfail(char *errstr, size_t errstr_size, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errstr, errstr_size, fmt, ap);
        va_end(ap);
        return -1;
}

static int hostport_ok(const char *s) {
        const char *colon = strrchr(s, ':');
        char *end;
        long port;

        if (!colon || colon == s)
                return 0;
        if (s[0] == '[' && colon[-1] != ']')
                return 0;
        errno = 0;
        port = strtol(colon + 1, &end, 10);
        return colon[1] && !*end && !errno && port >= 0 && port <= 65535 &&
               isdigit((unsigned char)colon[1]);
}

static int int_parse(const char *s, int64_t *out) {
        char *end;

        errno = 0;
        if (!*s || isspace((unsigned char)*s))
                return -1;
        *out = strtoll(s, &end, 10);
        return *end || errno ? -1 : 0;
}

static const char *enum_name(const conf_enum_t *e, int value) {
        for (; e->name; e++)
                if (e->value == value)
                        return e->name;
        return "?";
}

/* Writes the allowed values of an enum, joined by sep. */
static void enum_list(const conf_enum_t *e, const char *sep, char *buf,
                      size_t size) {
        size_t off = 0;
        buf[0] = '\0';
        for (int i = 0; e[i].name && off < size; i++)
                off += (size_t)snprintf(buf + off, size - off, "%s%s",
                                        i ? sep : "", e[i].name);
}

/* Integer-valued types (int, duration, size) in one place, for bounds. */
static int num_parse(const conf_key_t *k, const char *s, int64_t *out,
                     char *errstr, size_t errstr_size) {
        char why[160];

        switch (k->type) {
        case KT_INT:
                if (int_parse(s, out) == -1)
                        return vfail(errstr, errstr_size,
                                     "'%s' is not an integer", s);
                return 0;
        case KT_DURATION:
                if (sl_parse_duration_ms(s, out, why, sizeof(why)) == -1)
                        return vfail(errstr, errstr_size,
                                     "invalid duration '%s': %s", s, why);
                return 0;
        case KT_SIZE:
                if (sl_parse_size(s, out, why, sizeof(why)) == -1)
                        return vfail(errstr, errstr_size,
                                     "invalid size '%s': %s", s, why);
                return 0;
        default:
                sl_assert(!"not a number type");
                return -1;
        }
}

static int bounds_check(const conf_key_t *k, const char *s, int64_t v,
                        char *errstr, size_t errstr_size) {
        int64_t min = INT64_MIN, max = INT64_MAX;

        /* The bounds are table text: a malformed one is a bug. */
        if (k->min)
                sl_assert(num_parse(k, k->min, &min, errstr, errstr_size) == 0);
        if (k->max)
                sl_assert(num_parse(k, k->max, &max, errstr, errstr_size) == 0);
        if (v >= min && v <= max)
                return 0;
        if (k->min && k->max)
                return vfail(errstr, errstr_size, "%s is out of range %s..%s",
                             s, k->min, k->max);
        if (k->min)
                return vfail(errstr, errstr_size, "%s is below the minimum %s",
                             s, k->min);
        return vfail(errstr, errstr_size, "%s is above the maximum %s", s,
                     k->max);
}

static void str_set(void *field, const char *value) {
        char **p = field;
        free(*p);
        *p = value ? sl_strdup(value) : NULL;
}

/* Parses value for row k and stores it in base (a sl_conf_t or a
 * sl_pipeline_conf_t).  On error returns -1 with the reason and leaves the
 * field as it was. */
/* What no row of type k takes, whatever its type: an empty value where
 * one is needed, a transactional id that would clash, a string the INI
 * format cannot hold.  Returns -1 (errstr set) or 0. */
static int key_value_refused(const conf_key_t *k, const char *value,
                             char *errstr, size_t errstr_size) {
        size_t n = strlen(value), sn = strlen(SL_TXNID_SECOND_SUFFIX);
        const char *why_not;

        if (!*value && k->flags & F_NONEMPTY)
                return vfail(errstr, errstr_size, "must not be empty");
        /* Instance a's second producer is app_id-a#2: an instance named
         * a#2 would share its transactional id, and each would fence the
         * other. */
        if (k->flags & F_TXNID && n >= sn &&
            !strcmp(value + n - sn, SL_TXNID_SECOND_SUFFIX))
                return vfail(errstr, errstr_size,
                             "may not end in \"" SL_TXNID_SECOND_SUFFIX
                             "\" (the transactional id of another "
                             "instance's second producer)");
        if ((k->type == KT_STRING || k->type == KT_HOSTPORT) &&
            (why_not = ini_value_problem(value)))
                return vfail(errstr, errstr_size,
                             "the value %s (not possible in a config file)",
                             why_not);
        return 0;
}

/* A boolean's words: 1, 0, or -1 for none of them. */
static int bool_parse(const char *value) {
        if (!strcmp(value, "true") || !strcmp(value, "yes") ||
            !strcmp(value, "on") || !strcmp(value, "1"))
                return 1;
        if (!strcmp(value, "false") || !strcmp(value, "no") ||
            !strcmp(value, "off") || !strcmp(value, "0"))
                return 0;
        return -1;
}

static int key_set(const conf_key_t *k, void *base, const char *value,
                   char *errstr, size_t errstr_size) {
        void *field = (char *)base + k->off;
        char why[160];
        int64_t v;

        if (k->flags & F_NONE && !strcmp(value, "none")) {
                str_set(field, NULL);
                return 0;
        }
        if (key_value_refused(k, value, errstr, errstr_size))
                return -1;

        switch (k->type) {
        case KT_TOPIC:
                if (*value && sl_topicname_illegal(value, strlen(value)))
                        return vfail(errstr, errstr_size,
                                     "invalid topic name '%s' (use "
                                     "A-Z a-z 0-9 . _ -, at most 249)",
                                     value);
                /* fall through */
        case KT_STRING:
                str_set(field, *value ? value : NULL);
                return 0;
        case KT_HOSTPORT:
                if (*value && !hostport_ok(value))
                        return vfail(errstr, errstr_size,
                                     "invalid address '%s' (expected "
                                     "host:port, e.g. 0.0.0.0:9464; port 0 "
                                     "picks a free one)",
                                     value);
                str_set(field, *value ? value : NULL);
                return 0;
        case KT_INT:
        case KT_DURATION:
        case KT_SIZE:
                if (num_parse(k, value, &v, errstr, errstr_size) == -1 ||
                    bounds_check(k, value, v, errstr, errstr_size) == -1)
                        return -1;
                if (k->size == sizeof(int)) {
                        sl_assert(v >= INT32_MIN && v <= INT32_MAX);
                        *(int *)field = (int)v;
                } else {
                        sl_assert(k->size == sizeof(int64_t));
                        *(int64_t *)field = v;
                }
                return 0;
        case KT_BOOL:
                if ((v = bool_parse(value)) == -1)
                        return vfail(errstr, errstr_size,
                                     "'%s' is not a boolean (true or false)",
                                     value);
                *(int *)field = (int)v;
                return 0;
        case KT_RATE:
                if (sl_parse_rate(value, field, why, sizeof(why)) == -1)
                        return vfail(errstr, errstr_size,
                                     "invalid rate '%s': %s", value, why);
                return 0;
        case KT_GLOBS: {
                sl_globs_t g;
                if (sl_globs_parse(value, &g, why, sizeof(why)) == -1)
                        return vfail(errstr, errstr_size, "%s", why);
                sl_globs_free(field);
                *(sl_globs_t *)field = g;
                return 0;
        }
        case KT_ENUM:
                sl_assert(k->size == sizeof(int));
                for (const conf_enum_t *e = k->enums; e->name; e++) {
                        if (!strcmp(e->name, value)) {
                                *(int *)field = e->value;
                                return 0;
                        }
                }
                enum_list(k->enums, ", ", why, sizeof(why));
                return vfail(errstr, errstr_size, "'%s' is not one of %s",
                             value, why);
        }
        return vfail(errstr, errstr_size, "unsupported type");
}

/* Formats the stored value of row k as the file would say it. */
static void key_format(const conf_key_t *k, const void *base, char *buf,
                       size_t size) {
        const void *field = (const char *)base + k->off;
        int64_t v;

        switch (k->type) {
        case KT_STRING:
        case KT_TOPIC:
        case KT_HOSTPORT: {
                const char *s = *(char *const *)field;
                snprintf(buf, size, "%s",
                         s ? s : (k->flags & F_NONE ? "none" : ""));
                return;
        }
        case KT_INT:
        case KT_DURATION:
        case KT_SIZE:
                v = k->size == sizeof(int) ? *(const int *)field
                                           : *(const int64_t *)field;
                if (k->type == KT_DURATION)
                        sl_duration_format(v, buf, size);
                else if (k->type == KT_SIZE)
                        sl_size_format(v, buf, size);
                else
                        snprintf(buf, size, "%lld", (long long)v);
                return;
        case KT_BOOL:
                snprintf(buf, size, "%s",
                         *(const int *)field ? "true" : "false");
                return;
        case KT_RATE:
                sl_rate_format(field, buf, size);
                return;
        case KT_GLOBS:
                sl_globs_format(field, buf, size);
                return;
        case KT_ENUM:
                snprintf(buf, size, "%s",
                         enum_name(k->enums, *(const int *)field));
                return;
        }
}

static void key_free(const conf_key_t *k, void *base) {
        void *field = (char *)base + k->off;

        switch (k->type) {
        case KT_STRING:
        case KT_TOPIC:
        case KT_HOSTPORT:
                str_set(field, NULL);
                break;
        case KT_GLOBS:
                sl_globs_free(field);
                break;
        default:
                break;
        }
}

/* Sets row k to its default; "NAME." defaults are the pipeline's name. */
static void key_default(const conf_key_t *k, void *base, const char *pname) {
        char errstr[256], *def;

        if (!k->def)
                return;
        if (pname && !strncmp(k->def, "NAME.", 5)) {
                size_t n = strlen(pname) + strlen(k->def);
                def = sl_malloc(n);
                snprintf(def, n, "%s%s", pname, k->def + 4);
        } else {
                def = sl_strdup(k->def);
        }
        /* Defaults are table text: one that does not parse is a bug. */
        if (key_set(k, base, def, errstr, sizeof(errstr)) == -1) {
                fprintf(stderr, "sluice: default of %s: %s\n", k->name, errstr);
                sl_assert(!"bad default in conf_keys[]");
        }
        free(def);
}

static const conf_key_t *key_find(sect_kind_t section, const char *name) {
        for (int i = 0; i < KEY_CNT; i++)
                if (conf_keys[i].section == section &&
                    !strcmp(conf_keys[i].name, name))
                        return &conf_keys[i];
        return NULL;
}

static int key_is_secret(const char *name) {
        return strstr(name, "password") || strstr(name, "secret") ||
               strstr(name, "key") || strstr(name, "oauthbearer.config");
}

/* The loader. */

typedef struct {
        char *key;
        char *value;
        int line;
} raw_kv_t;

typedef struct {
        sect_kind_t kind;
        char *title; /* the text between [ and ] */
        char *name;  /* pipeline name */
        int line;
        raw_kv_t *kv;
        int kv_cnt;
} raw_sect_t;

typedef struct {
        int order; /* line; env errors, then file-wide errors, last */
        int seq;   /* order of discovery, for equal lines */
        char *text;
} conf_err_t;

typedef struct {
        const char *path;
        FILE *fp;

        /* The line reader. */
        int line;        /* number of the line being read */
        char *acc;       /* the line so far */
        size_t acc_len;  /* 0 at the start of a line */
        int line_long;   /* the line is over MAX_LINE */
        int cur;         /* index in sects of the current section; -1 */
        int syntax_line; /* last line with a syntax error we reported */

        raw_sect_t *sects;
        int sect_cnt;
        int pipeline_headers; /* [pipeline ...] headers, good or bad */

        conf_err_t *errs;
        int err_cnt;
} loader_t;

static void err_add(loader_t *ld, int order, char *text) {
        ld->errs =
            sl_realloc(ld->errs, sizeof(*ld->errs) * (size_t)(ld->err_cnt + 1));
        ld->errs[ld->err_cnt].order = order;
        ld->errs[ld->err_cnt].seq = ld->err_cnt;
        ld->errs[ld->err_cnt].text = text;
        ld->err_cnt++;
}

/* Records "FILE:LINE: key: msg"; line 0 means env (env names the
 * variable), line -1 a file-wide error ("FILE: key: msg"). */
static void err_at(loader_t *ld, int line, const char *env, const char *key,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void err_at(loader_t *ld, int line, const char *env, const char *key,
                   const char *fmt, ...) {
        char msg[1024], *text;
        va_list ap;
        int order;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (env) {
                order = INT32_MAX - 1;
                if (asprintf(&text, "env %s: %s: %s", env, key, msg) < 0)
                        text = NULL;
        } else if (line > 0) {
                order = line;
                if (asprintf(&text, "%s:%d: %s: %s", ld->path, line, key, msg) <
                    0)
                        text = NULL;
        } else {
                order = INT32_MAX;
                if (asprintf(&text, "%s: %s: %s", ld->path, key, msg) < 0)
                        text = NULL;
        }
        if (!text)
                text = sl_strdup(msg);
        /* One error, one line, whatever a value from the environment
         * holds. */
        for (char *c = text; *c; c++)
                if (iscntrl((unsigned char)*c))
                        *c = '?';
        err_add(ld, order, text);
}

/* Mirrors inih: the first of chars, or an inline ';' comment after a
 * blank, or the end. */
static const char *find_chars_or_comment(const char *s, const char *chars) {
        int was_space = 0;

        while (*s && !strchr(chars, *s) && !(was_space && *s == ';')) {
                was_space = isspace((unsigned char)*s);
                s++;
        }
        return s;
}

static int pipeline_name_ok(const char *s) {
        if (!*s)
                return 0;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
                        return 0;
        return 1;
}

#define PIPELINE_NAME_MAX 200

/* Appends a section; it becomes the current one. */
static void section_push(loader_t *ld, sect_kind_t kind, const char *title,
                         char *name, int line) {
        raw_sect_t *s;

        ld->sects = sl_realloc(ld->sects,
                               sizeof(*ld->sects) * (size_t)(ld->sect_cnt + 1));
        s = &ld->sects[ld->sect_cnt];
        memset(s, 0, sizeof(*s));
        s->kind = kind;
        s->title = sl_strdup(title);
        s->name = name;
        s->line = line;
        ld->cur = ld->sect_cnt++;
}

/* A section header: checks it and makes it current. */
static void section_begin(loader_t *ld, const char *title, int line) {
        sect_kind_t kind = SECT_BAD;
        char *name = NULL;
        char key[300];

        snprintf(key, sizeof(key), "[%s]", title);
        if (!strcmp(title, "sluice") || !strcmp(title, "kafka")) {
                kind = title[0] == 's' ? SECT_SLUICE : SECT_KAFKA;
                for (int i = 0; i < ld->sect_cnt; i++) {
                        if (ld->sects[i].kind == kind) {
                                err_at(ld, line, NULL, key,
                                       "duplicate section (first at line %d)",
                                       ld->sects[i].line);
                                kind = SECT_BAD;
                                break;
                        }
                }
        } else if (!strncmp(title, "pipeline", 8) &&
                   (!title[8] || isspace((unsigned char)title[8]))) {
                const char *p = title + 8;
                size_t n;

                ld->pipeline_headers++;
                while (isspace((unsigned char)*p))
                        p++;
                n = strlen(p);
                while (n && isspace((unsigned char)p[n - 1]))
                        n--;
                name = sl_strndup(p, n);
                kind = SECT_PIPELINE;
                if (!*name) {
                        err_at(ld, line, NULL, key,
                               "missing pipeline name ([pipeline NAME])");
                        kind = SECT_BAD;
                } else if (!pipeline_name_ok(name)) {
                        /* Its default topic names would be invalid too:
                         * skip the section rather than cascade. */
                        err_at(ld, line, NULL, key,
                               "invalid pipeline name '%s' (use A-Z a-z 0-9 "
                               ". _ -)",
                               name);
                        kind = SECT_BAD;
                } else if (strlen(name) > PIPELINE_NAME_MAX) {
                        err_at(ld, line, NULL, key,
                               "pipeline name longer than %d characters",
                               PIPELINE_NAME_MAX);
                        kind = SECT_BAD;
                }
                for (int i = 0; kind == SECT_PIPELINE && i < ld->sect_cnt;
                     i++) {
                        if (ld->sects[i].kind == SECT_PIPELINE &&
                            !strcmp(ld->sects[i].name, name)) {
                                err_at(ld, line, NULL, key,
                                       "duplicate pipeline name (first at "
                                       "line %d)",
                                       ld->sects[i].line);
                                kind = SECT_BAD;
                        }
                }
        } else {
                err_at(ld, line, NULL, key,
                       "unknown section (expected [sluice], [kafka] or "
                       "[pipeline NAME])");
        }

        section_push(ld, kind, title, name, line);
}

/* Classifies a complete line: section header, pair, blank, comment, or a
 * syntax error.  Pairs themselves arrive through the inih handler. */
static void line_classify(loader_t *ld) {
        char *s = ld->acc, *end;
        size_t n;

        if (ld->line_long) {
                err_at(ld, ld->line, NULL, "syntax error",
                       "line longer than %d bytes", MAX_LINE);
                ld->syntax_line = ld->line;
                return;
        }
        if (ld->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3))
                s += 3;
        while (isspace((unsigned char)*s))
                s++;
        n = strlen(s);
        while (n && isspace((unsigned char)s[n - 1]))
                s[--n] = '\0';
        if (!*s || *s == ';' || *s == '#')
                return;
        if (*s == '[') {
                end = (char *)find_chars_or_comment(s + 1, "]");
                if (*end != ']') {
                        err_at(ld, ld->line, NULL, "syntax error",
                               "unterminated section header '%s'", s);
                        ld->syntax_line = ld->line;
                        /* Pairs below belong to no known section. */
                        section_push(ld, SECT_BAD, s, NULL, ld->line);
                        return;
                }
                *end = '\0';
                section_begin(ld, s + 1, ld->line);
                return;
        }
        end = (char *)find_chars_or_comment(s, "=:");
        if (*end != '=' && *end != ':') {
                err_at(ld, ld->line, NULL, "syntax error",
                       "expected 'key = value', '[section]' or a comment, "
                       "not '%s'",
                       s);
                ld->syntax_line = ld->line;
        }
}

/* inih's line reader: fgets, counting lines and classifying each. */
static char *ld_reader(char *buf, int num, void *opaque) {
        loader_t *ld = opaque;
        size_t n;

        if (!fgets(buf, num, ld->fp)) {
                if (ld->acc_len) {
                        line_classify(ld);
                        ld->acc_len = 0;
                }
                return NULL;
        }
        n = strlen(buf);
        if (ld->acc_len == 0) {
                ld->line++;
                ld->line_long = 0;
                ld->acc[0] = '\0';
        }
        if (ld->acc_len + n > MAX_LINE) {
                ld->line_long = 1;
        } else {
                memcpy(ld->acc + ld->acc_len, buf, n + 1);
        }
        ld->acc_len += n ? n : 1;
        if ((n && buf[n - 1] == '\n') || feof(ld->fp)) {
                line_classify(ld);
                ld->acc_len = 0;
        }
        return buf;
}

static int ld_handler(void *user, const char *section, const char *name,
                      const char *value) {
        loader_t *ld = user;
        raw_sect_t *s;

        (void)section; /* ours is ld->cur, which also knows bad headers */
        if (ld->line_long || ld->syntax_line == ld->line)
                return 1;
        if (!*name) {
                err_at(ld, ld->line, NULL, "syntax error",
                       "missing key name before '='");
                return 1;
        }
        if (ld->cur < 0) {
                err_at(ld, ld->line, NULL, name,
                       "key outside of any section (add [sluice], [kafka] "
                       "or [pipeline NAME] above it)");
                return 1;
        }
        s = &ld->sects[ld->cur];
        if (s->kind == SECT_BAD)
                return 1;
        s->kv = sl_realloc(s->kv, sizeof(*s->kv) * (size_t)(s->kv_cnt + 1));
        s->kv[s->kv_cnt].key = sl_strdup(name);
        s->kv[s->kv_cnt].value = sl_strdup(value ? value : "");
        s->kv[s->kv_cnt].line = ld->line;
        s->kv_cnt++;
        return 1;
}

static void loader_free(loader_t *ld) {
        for (int i = 0; i < ld->sect_cnt; i++) {
                raw_sect_t *s = &ld->sects[i];
                for (int j = 0; j < s->kv_cnt; j++) {
                        free(s->kv[j].key);
                        free(s->kv[j].value);
                }
                free(s->kv);
                free(s->title);
                free(s->name);
        }
        free(ld->sects);
        for (int i = 0; i < ld->err_cnt; i++)
                free(ld->errs[i].text);
        free(ld->errs);
        free(ld->acc);
}

/* Pass 1: the file into ld->sects. */
static void read_file(loader_t *ld) {
        /* inih's options are process globals in this build: set what we
         * need (no multi-line values, so an indented key is a key; long
         * lines) and put them back. */
        bool multiline = ini_allow_multiline, use_stack = ini_use_stack;
        bool allow_realloc = ini_allow_realloc;
        int max_line = ini_max_line;
        int rc;

        ini_allow_multiline = false;
        ini_use_stack = false;
        ini_allow_realloc = true;
        ini_max_line = MAX_LINE + 8;
        ld->acc = sl_malloc(MAX_LINE + 1);
        ld->acc[0] = '\0';
        rc = ini_parse_stream(ld_reader, ld, ld_handler, ld);
        ini_allow_multiline = multiline;
        ini_use_stack = use_stack;
        ini_allow_realloc = allow_realloc;
        ini_max_line = max_line;

        if (rc == -2) {
                err_at(ld, -1, NULL, "syntax error", "out of memory");
        } else if (rc > 0) {
                /* Our reader reports inih's syntax errors itself; this
                 * catches any we do not mirror. */
                int seen = 0;
                for (int i = 0; i < ld->err_cnt; i++)
                        if (ld->errs[i].order == rc)
                                seen = 1;
                if (!seen)
                        err_at(ld, rc, NULL, "syntax error", "not understood");
        }
        if (ferror(ld->fp))
                err_at(ld, -1, NULL, "read error", "%s", strerror(errno));
}

/* Pass 2: [sluice]. */

static void apply_sluice(loader_t *ld, sl_conf_t *conf, int use_env) {
        int seen[KEY_CNT] = {0};
        char errstr[512];

        for (int i = 0; i < KEY_CNT; i++)
                if (conf_keys[i].section == SECT_SLUICE)
                        key_default(&conf_keys[i], conf, NULL);

        for (int i = 0; i < ld->sect_cnt; i++) {
                raw_sect_t *s = &ld->sects[i];
                if (s->kind != SECT_SLUICE)
                        continue;
                for (int j = 0; j < s->kv_cnt; j++) {
                        raw_kv_t *kv = &s->kv[j];
                        const conf_key_t *k = key_find(SECT_SLUICE, kv->key);
                        if (!k) {
                                err_at(ld, kv->line, NULL, kv->key,
                                       "unknown key in [sluice]");
                                continue;
                        }
                        if (seen[k - conf_keys]) {
                                err_at(ld, kv->line, NULL, kv->key,
                                       "duplicate key (first set at line "
                                       "%d)",
                                       seen[k - conf_keys]);
                                continue;
                        }
                        seen[k - conf_keys] = kv->line;
                        if (key_set(k, conf, kv->value, errstr,
                                    sizeof(errstr)) == -1)
                                err_at(ld, kv->line, NULL, kv->key, "%s",
                                       errstr);
                }
        }

        if (!use_env)
                return;
        for (int i = 0; i < KEY_CNT; i++) {
                const conf_key_t *k = &conf_keys[i];
                char var[64];
                const char *value;
                size_t n;

                if (k->section != SECT_SLUICE)
                        continue;
                n = (size_t)snprintf(var, sizeof(var), "SLUICE_%s", k->name);
                for (size_t j = 7; j < n; j++)
                        var[j] = (char)toupper((unsigned char)var[j]);
                if (!(value = getenv(var)))
                        continue;
                if (key_set(k, conf, value, errstr, sizeof(errstr)) == -1)
                        err_at(ld, 0, var, k->name, "%s", errstr);
        }
}

/* Pass 2: [kafka]. */

static void kafka_append(sl_conf_t *conf, const char *key, const char *value,
                         int line) {
        conf->kafka = sl_realloc(
            conf->kafka, sizeof(*conf->kafka) * (size_t)(conf->kafka_cnt + 1));
        conf->kafka[conf->kafka_cnt].key = sl_strdup(key);
        conf->kafka[conf->kafka_cnt].value = sl_strdup(value);
        conf->kafka[conf->kafka_cnt].line = line;
        conf->kafka_cnt++;
}

/* Checks one property: reserved names, then librdkafka's own verdict on a
 * scratch conf.  Returns 0 or -1 with the error recorded. */
static int kafka_check(loader_t *ld, rd_kafka_conf_t *scratch, const char *key,
                       const char *value, int line, const char *env) {
        char errstr[512];

        for (size_t i = 0; i < SL_ARRAY_SIZE(kafka_reserved); i++) {
                if (!strcmp(key, kafka_reserved[i].name)) {
                        err_at(ld, line, env, key, "set by sluice (%s)",
                               kafka_reserved[i].hint);
                        return -1;
                }
        }
        if (rd_kafka_conf_set(scratch, key, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
                err_at(ld, line, env, key, "%s", errstr);
                return -1;
        }
        return 0;
}

static int env_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void apply_kafka(loader_t *ld, sl_conf_t *conf, int use_env) {
        rd_kafka_conf_t *scratch = rd_kafka_conf_new();
        char **vars = NULL;
        int var_cnt = 0;

        for (int i = 0; i < ld->sect_cnt; i++) {
                raw_sect_t *s = &ld->sects[i];
                if (s->kind != SECT_KAFKA)
                        continue;
                for (int j = 0; j < s->kv_cnt; j++) {
                        raw_kv_t *kv = &s->kv[j];
                        int dup = 0;
                        for (int m = 0; m < conf->kafka_cnt && !dup; m++) {
                                if (!strcmp(conf->kafka[m].key, kv->key)) {
                                        err_at(ld, kv->line, NULL, kv->key,
                                               "duplicate key (first set at "
                                               "line %d)",
                                               conf->kafka[m].line);
                                        dup = 1;
                                }
                        }
                        if (dup || kafka_check(ld, scratch, kv->key, kv->value,
                                               kv->line, NULL) == -1)
                                continue;
                        kafka_append(conf, kv->key, kv->value, kv->line);
                }
        }

        /* SLUICE_KAFKA_<PROP>, sorted so the order is the same whatever
         * the environment's. */
        for (char **e = use_env ? environ : NULL; e && *e; e++) {
                if (!strncmp(*e, "SLUICE_KAFKA_", 13) && strchr(*e, '=')) {
                        vars = sl_realloc(vars, sizeof(*vars) *
                                                    (size_t)(var_cnt + 1));
                        vars[var_cnt++] = *e;
                }
        }
        if (var_cnt)
                qsort(vars, (size_t)var_cnt, sizeof(*vars), env_cmp);
        for (int i = 0; i < var_cnt; i++) {
                const char *eq = strchr(vars[i], '=');
                char *var = sl_strndup(vars[i], (size_t)(eq - vars[i]));
                char *key = sl_strdup(var + 13);

                for (char *p = key; *p; p++)
                        *p = *p == '_' ? '.' : (char)tolower((unsigned char)*p);
                if (!*key) {
                        err_at(ld, 0, var, "(empty)",
                               "no property name after SLUICE_KAFKA_");
                } else if (kafka_check(ld, scratch, key, eq + 1, 0, var) == 0) {
                        /* The environment wins: drop the file's value. */
                        for (int m = 0; m < conf->kafka_cnt; m++) {
                                if (!strcmp(conf->kafka[m].key, key)) {
                                        free(conf->kafka[m].key);
                                        free(conf->kafka[m].value);
                                        memmove(&conf->kafka[m],
                                                &conf->kafka[m + 1],
                                                sizeof(*conf->kafka) *
                                                    (size_t)(conf->kafka_cnt -
                                                             m - 1));
                                        conf->kafka_cnt--;
                                        break;
                                }
                        }
                        kafka_append(conf, key, eq + 1, 0);
                }
                free(key);
                free(var);
        }
        free(vars);
        rd_kafka_conf_destroy(scratch);
}

/* Pass 2: [pipeline NAME]. */

typedef struct {
        int line;              /* header line */
        int key_line[KEY_CNT]; /* line of each key set in the file, or 0 */
} pipe_lines_t;

static void type_list(int types, char *buf, size_t size) {
        size_t off = 0;
        buf[0] = '\0';
        for (const conf_enum_t *e = op_types; e->name && off < size; e++)
                if (types & e->value)
                        off += (size_t)snprintf(buf + off, size - off, "%s%s",
                                                off ? ", " : "", e->name);
}

static void apply_pipeline(loader_t *ld, raw_sect_t *s, sl_pipeline_conf_t *p,
                           pipe_lines_t *pl) {
        const conf_key_t *type_key = key_find(SECT_PIPELINE, "type");
        char errstr[512], types[64];
        int mask = ALL_OPS;

        p->name = sl_strdup(s->name);
        p->line = s->line;
        pl->line = s->line;

        /* The type decides which keys apply, so it goes first. */
        for (int j = 0; j < s->kv_cnt; j++) {
                if (strcmp(s->kv[j].key, "type"))
                        continue;
                if (key_set(type_key, p, s->kv[j].value, errstr,
                            sizeof(errstr)) == 0)
                        mask = p->type;
                break;
        }

        for (int i = 0; i < KEY_CNT; i++)
                if (conf_keys[i].section == SECT_PIPELINE &&
                    conf_keys[i].types & mask)
                        key_default(&conf_keys[i], p, p->name);

        for (int j = 0; j < s->kv_cnt; j++) {
                raw_kv_t *kv = &s->kv[j];
                const conf_key_t *k = key_find(SECT_PIPELINE, kv->key);
                int idx;

                if (!k) {
                        err_at(ld, kv->line, NULL, kv->key,
                               "unknown key in [pipeline %s]", s->name);
                        continue;
                }
                idx = (int)(k - conf_keys);
                if (pl->key_line[idx]) {
                        err_at(ld, kv->line, NULL, kv->key,
                               "duplicate key (first set at line %d)",
                               pl->key_line[idx]);
                        continue;
                }
                pl->key_line[idx] = kv->line;
                if (!(k->types & mask)) {
                        type_list(k->types, types, sizeof(types));
                        err_at(ld, kv->line, NULL, kv->key,
                               "not valid for type %s (only for %s)",
                               sl_op_type_name(p->type), types);
                        continue;
                }
                if (key_set(k, p, kv->value, errstr, sizeof(errstr)) == -1)
                        err_at(ld, kv->line, NULL, kv->key, "%s", errstr);
        }
}

/* Pass 3: finalize. */

typedef struct {
        const char *topic;
        const char *role; /* "changelog", ... */
        const sl_pipeline_conf_t *p;
        int line;
} claim_t;

/* The line of key name in pipeline i, or its header line when the value
 * is a default. */
static int pl_line(const pipe_lines_t *pl, const char *name) {
        const conf_key_t *k = key_find(SECT_PIPELINE, name);
        int line = k ? pl->key_line[k - conf_keys] : 0;
        return line ? line : pl->line;
}

/* librdkafka takes a linger.ms at or above the producer's message timeout
 * (transaction_timeout, or message.timeout.ms when lower) when the client
 * is made, then refuses the topic of every record produced: an instance
 * that is up and sends nothing.  Refused here instead. */
static void check_linger(loader_t *ld, const sl_conf_t *conf) {
        const sl_kv_t *linger = NULL;
        double limit = (double)conf->transaction_timeout_ms;
        const char *limit_name = "transaction_timeout";
        for (int i = 0; i < conf->kafka_cnt; i++) {
                const sl_kv_t *kv = &conf->kafka[i];
                double v = strtod(kv->value, NULL);
                if (!strcmp(kv->key, "linger.ms") ||
                    !strcmp(kv->key, "queue.buffering.max.ms"))
                        linger = kv;
                else if ((!strcmp(kv->key, "message.timeout.ms") ||
                          !strcmp(kv->key, "delivery.timeout.ms")) &&
                         v > 0 && v < limit) {
                        limit = v;
                        limit_name = kv->key;
                }
        }
        if (linger && strtod(linger->value, NULL) >= limit) {
                char env[128] = "";
                if (linger->line <= 0) {
                        int n = snprintf(env, sizeof(env), "SLUICE_KAFKA_%s",
                                         linger->key);
                        for (int i = 13; i < n && env[i]; i++)
                                env[i] =
                                    env[i] == '.'
                                        ? '_'
                                        : (char)toupper((unsigned char)env[i]);
                }
                err_at(ld, linger->line, *env ? env : NULL, linger->key,
                       "%s ms is not below %s (%.0f ms): librdkafka would "
                       "refuse every record",
                       linger->value, limit_name, limit);
        }
}

/* What finalize() checks of the topics, by role: the internal ones a
 * pipeline claims for itself, and those it reads or writes. */
static const char *const internal_roles[] = {"changelog", "overflow", "rates",
                                             "dlq"};
static const char *const external_roles[] = {"input", "output",
                                             "default_target"};

/* Keys a pipeline of its type must set. */
static void check_required(loader_t *ld, const sl_pipeline_conf_t *p,
                           const pipe_lines_t *pl) {
        char a[64];
        for (int k = 0; k < KEY_CNT; k++) {
                const conf_key_t *key = &conf_keys[k];
                /* Without a valid type, only what every type
                 * requires can be checked. */
                if (key->section != SECT_PIPELINE ||
                    !(key->flags & F_REQUIRED) || pl->key_line[k] ||
                    !(p->type ? key->types & p->type : key->types == ALL_OPS))
                        continue;
                if (key->type == KT_ENUM) {
                        enum_list(key->enums, ", ", a, sizeof(a));
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (one of %s)", a);
                } else if (key->types == ALL_OPS) {
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (required)");
                } else {
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (required for type %s)",
                               sl_op_type_name(p->type));
                }
        }
}

/* Rules between one pipeline's keys. */
static void check_pipeline_rules(loader_t *ld, const sl_pipeline_conf_t *p,
                                 const pipe_lines_t *pl) {
        char a[64], b[64];
        if (p->replication_factor == 0)
                err_at(ld, pl_line(pl, "replication_factor"), NULL,
                       "replication_factor",
                       "must be -1 (broker default) or at least 1");
        if (p->input && p->output && !strcmp(p->input, p->output))
                err_at(ld, pl_line(pl, "output"), NULL, "output",
                       "same topic as input ('%s')", p->input);
        if (p->input && p->default_target &&
            !strcmp(p->input, p->default_target))
                err_at(ld, pl_line(pl, "default_target"), NULL,
                       "default_target", "same topic as input ('%s')",
                       p->input);
        if (p->type == SL_OP_DEBOUNCE && p->idle_ms > p->max_age_ms) {
                sl_duration_format(p->idle_ms, a, sizeof(a));
                sl_duration_format(p->max_age_ms, b, sizeof(b));
                /* Blame the key the file set (idle if both). */
                if (pl->key_line[key_find(SECT_PIPELINE, "idle") - conf_keys] ||
                    !pl->key_line[key_find(SECT_PIPELINE, "max_age") -
                                  conf_keys])
                        err_at(ld, pl_line(pl, "idle"), NULL, "idle",
                               "%s is longer than max_age (%s)", a, b);
                else
                        err_at(ld, pl_line(pl, "max_age"), NULL, "max_age",
                               "%s is shorter than idle (%s)", b, a);
        }
        if (p->type == SL_OP_DELAY && p->default_target &&
            !sl_globs_match(&p->allowed_targets, p->default_target)) {
                char globs[256];
                sl_globs_format(&p->allowed_targets, globs, sizeof(globs));
                err_at(ld, pl_line(pl, "default_target"), NULL,
                       "default_target",
                       "'%s' does not match allowed_targets (%s)",
                       p->default_target, globs);
        }
}

/* p's internal topics, each unique across all pipelines: claimed in
 * claims[*claim_cnt]. */
static void claim_internal_topics(loader_t *ld, const sl_pipeline_conf_t *p,
                                  const pipe_lines_t *pl, claim_t *claims,
                                  int *claim_cnt) {
        for (size_t r = 0; r < SL_ARRAY_SIZE(internal_roles); r++) {
                const conf_key_t *key =
                    key_find(SECT_PIPELINE, internal_roles[r]);
                const char *topic =
                    *(char *const *)((const char *)p + key->off);
                int line = pl_line(pl, internal_roles[r]);

                if (!topic || !(key->types & p->type))
                        continue;
                for (int c = 0; c < *claim_cnt; c++) {
                        if (strcmp(claims[c].topic, topic))
                                continue;
                        err_at(ld, line, NULL, internal_roles[r],
                               "topic '%s' is already the %s topic "
                               "of pipeline '%s' (line %d)",
                               topic, claims[c].role, claims[c].p->name,
                               claims[c].line);
                        break;
                }
                claims[(*claim_cnt)++] =
                    (claim_t){topic, internal_roles[r], p, line};
        }
}

/* Pipeline i's input, output and target: none is an internal topic (of
 * Kafka or of any pipeline), and no two pipelines read one input. */
static void check_external_topics(loader_t *ld, const sl_conf_t *conf,
                                  const pipe_lines_t *pls, int i,
                                  const claim_t *claims, int claim_cnt) {
        const sl_pipeline_conf_t *p = &conf->pipelines[i];
        const pipe_lines_t *pl = &pls[i];

        /* No input, output or target is an internal topic. */
        for (size_t r = 0; r < SL_ARRAY_SIZE(external_roles); r++) {
                const conf_key_t *key =
                    key_find(SECT_PIPELINE, external_roles[r]);
                const char *topic =
                    *(char *const *)((const char *)p + key->off);
                if (!topic)
                        continue;
                if (r > 0 && sl_topicname_kafka_internal(topic)) {
                        err_at(ld, pl_line(pl, external_roles[r]), NULL,
                               external_roles[r],
                               "'%s' is an internal topic of Kafka "
                               "(\"__*\"); sluice never writes there",
                               topic);
                        continue;
                }
                for (int c = 0; c < claim_cnt; c++) {
                        if (strcmp(claims[c].topic, topic))
                                continue;
                        err_at(ld, pl_line(pl, external_roles[r]), NULL,
                               external_roles[r],
                               "'%s' is the %s topic of pipeline "
                               "'%s'; sluice's internal topics cannot "
                               "be used here",
                               topic, claims[c].role, claims[c].p->name);
                        break;
                }
        }
        /* Two pipelines may not consume one topic. */
        for (int j = 0; j < i && p->input; j++) {
                if (conf->pipelines[j].input &&
                    !strcmp(conf->pipelines[j].input, p->input)) {
                        err_at(ld, pl_line(pl, "input"), NULL, "input",
                               "topic '%s' is already the input of "
                               "pipeline '%s' (line %d)",
                               p->input, conf->pipelines[j].name,
                               pl_line(&pls[j], "input"));
                        break;
                }
        }
}

/* The rules between keys, once the whole file is read (each error names
 * the key the file set): the API's TLS keys, then every pipeline's
 * required keys and rules, then the topics between pipelines. */
static void finalize(loader_t *ld, sl_conf_t *conf, const pipe_lines_t *pls,
                     int flags) {
        claim_t *claims;
        int claim_cnt = 0;

        if (!conf->api_tls_cert != !conf->api_tls_key)
                err_at(ld, -1, NULL,
                       conf->api_tls_cert ? "api_tls_key" : "api_tls_cert",
                       "api_tls_cert and api_tls_key go together");
        check_linger(ld, conf);
        if (conf->api_peer_secret && conf->api_peer_secret_file)
                err_at(ld, -1, NULL, "api_peer_secret_file",
                       "set api_peer_secret or api_peer_secret_file, not "
                       "both");
        if (conf->api_tls_ca && !conf->api_tls_cert)
                err_at(ld, -1, NULL, "api_tls_ca",
                       "api_tls_ca needs api_tls_cert (it verifies the "
                       "other members' HTTPS APIs)");

        if (conf->pipeline_cnt == 0) {
                if (ld->pipeline_headers || flags & SL_CONF_NO_PIPES)
                        return; /* each bad header has its error */
                err_at(ld, -1, NULL, "[pipeline NAME]",
                       "no pipeline configured");
                return;
        }

        claims = sl_calloc((size_t)conf->pipeline_cnt * 4, sizeof(*claims));
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                check_required(ld, &conf->pipelines[i], &pls[i]);
                check_pipeline_rules(ld, &conf->pipelines[i], &pls[i]);
                claim_internal_topics(ld, &conf->pipelines[i], &pls[i], claims,
                                      &claim_cnt);
        }
        for (int i = 0; i < conf->pipeline_cnt; i++)
                check_external_topics(ld, conf, pls, i, claims, claim_cnt);
        free(claims);
}

static int err_cmp(const void *a, const void *b) {
        const conf_err_t *x = a, *y = b;
        if (x->order != y->order)
                return x->order < y->order ? -1 : 1;
        return x->seq - y->seq;
}

int sl_conf_load(const char *path, int use_env, sl_conf_t **confp,
                 FILE *errout) {
        return sl_conf_load_flags(path, use_env ? SL_CONF_ENV : 0, confp,
                                  errout);
}

int sl_conf_load_flags(const char *path, int flags, sl_conf_t **confp,
                       FILE *errout) {
        int use_env = flags & SL_CONF_ENV;
        loader_t ld = {.path = path ? path : "(null)", .cur = -1};
        sl_conf_t *conf;
        pipe_lines_t *pls;
        struct stat st;
        int n = 0, errs;

        if (confp)
                *confp = NULL;
        if (!path || !confp) {
                if (errout)
                        fprintf(errout, "sluice: no config file given\n");
                return 1;
        }
        if (!(ld.fp = fopen(path, "r")) ||
            (fstat(fileno(ld.fp), &st) == 0 && S_ISDIR(st.st_mode) &&
             (errno = EISDIR))) {
                if (errout)
                        fprintf(errout, "%s: cannot open: %s\n", path,
                                strerror(errno));
                if (ld.fp)
                        fclose(ld.fp);
                return 1;
        }
        read_file(&ld);
        fclose(ld.fp);
        ld.fp = NULL;

        conf = sl_calloc(1, sizeof(*conf));
        conf->path = sl_strdup(path);
        apply_sluice(&ld, conf, use_env);
        apply_kafka(&ld, conf, use_env);

        for (int i = 0; i < ld.sect_cnt; i++)
                if (ld.sects[i].kind == SECT_PIPELINE)
                        n++;
        conf->pipelines = sl_calloc((size_t)n, sizeof(*conf->pipelines));
        pls = sl_calloc((size_t)n, sizeof(*pls));
        for (int i = 0; i < ld.sect_cnt; i++) {
                if (ld.sects[i].kind != SECT_PIPELINE)
                        continue;
                apply_pipeline(&ld, &ld.sects[i],
                               &conf->pipelines[conf->pipeline_cnt],
                               &pls[conf->pipeline_cnt]);
                conf->pipeline_cnt++;
        }
        finalize(&ld, conf, pls, flags);
        free(pls);

        errs = ld.err_cnt;
        if (errs) {
                qsort(ld.errs, (size_t)errs, sizeof(*ld.errs), err_cmp);
                for (int i = 0; errout && i < errs; i++)
                        fprintf(errout, "%s\n", ld.errs[i].text);
                sl_conf_destroy(conf);
                conf = NULL;
        }
        loader_free(&ld);
        *confp = conf;
        return errs;
}

void sl_conf_destroy(sl_conf_t *conf) {
        if (!conf)
                return;
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                for (int k = 0; k < KEY_CNT; k++)
                        if (conf_keys[k].section == SECT_PIPELINE)
                                key_free(&conf_keys[k], &conf->pipelines[i]);
                free(conf->pipelines[i].name);
        }
        free(conf->pipelines);
        for (int k = 0; k < KEY_CNT; k++)
                if (conf_keys[k].section == SECT_SLUICE)
                        key_free(&conf_keys[k], conf);
        for (int i = 0; i < conf->kafka_cnt; i++) {
                free(conf->kafka[i].key);
                free(conf->kafka[i].value);
        }
        free(conf->kafka);
        free(conf->path);
        free(conf);
}

const sl_pipeline_conf_t *sl_conf_pipeline(const sl_conf_t *conf,
                                           const char *name) {
        if (!conf || !name)
                return NULL;
        for (int i = 0; i < conf->pipeline_cnt; i++)
                if (!strcmp(conf->pipelines[i].name, name))
                        return &conf->pipelines[i];
        return NULL;
}

rd_kafka_conf_t *sl_conf_rdkafka(const sl_conf_t *conf, char *errstr,
                                 size_t errstr_size) {
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        char why[512];

        for (int i = 0; conf && i < conf->kafka_cnt; i++) {
                if (rd_kafka_conf_set(kc, conf->kafka[i].key,
                                      conf->kafka[i].value, why,
                                      sizeof(why)) != RD_KAFKA_CONF_OK) {
                        snprintf(errstr, errstr_size, "%s: %s",
                                 conf->kafka[i].key, why);
                        rd_kafka_conf_destroy(kc);
                        return NULL;
                }
        }
        return kc;
}

/* The reference. */

static void ref_type(const conf_key_t *k, char *buf, size_t size) {
        static const char *names[] = {
            [KT_STRING] = "string",      [KT_TOPIC] = "topic",
            [KT_HOSTPORT] = "host:port", [KT_INT] = "integer",
            [KT_BOOL] = "boolean",       [KT_DURATION] = "duration",
            [KT_SIZE] = "size",          [KT_RATE] = "rate",
            [KT_GLOBS] = "globs",        [KT_ENUM] = "one of"};
        char list[256];

        if (k->type == KT_ENUM) {
                size_t off = 0;
                list[0] = '\0';
                for (const conf_enum_t *e = k->enums;
                     e->name && off < sizeof(list); e++)
                        off += (size_t)snprintf(list + off, sizeof(list) - off,
                                                "%s`%s`", off ? ", " : "",
                                                e->name);
                snprintf(buf, size, "one of %s", list);
        } else if (k->min && k->max) {
                snprintf(buf, size, "%s, %s..%s", names[k->type], k->min,
                         k->max);
        } else if (k->min) {
                snprintf(buf, size, "%s, ≥ %s", names[k->type], k->min);
        } else if (k->max) {
                snprintf(buf, size, "%s, ≤ %s", names[k->type], k->max);
        } else {
                snprintf(buf, size, "%s", names[k->type]);
        }
        if (k->flags & F_NONE)
                snprintf(buf + strlen(buf), size - strlen(buf), " or `none`");
}

static void ref_table(FILE *out, sect_kind_t section, int type) {
        char t[320];

        fprintf(out, "| key | type | default | description |\n"
                     "|---|---|---|---|\n");
        for (int i = 0; i < KEY_CNT; i++) {
                const conf_key_t *k = &conf_keys[i];
                if (k->section != section || (type && !(k->types & type)))
                        continue;
                ref_type(k, t, sizeof(t));
                fprintf(out, "| `%s` | %s | ", k->name, t);
                if (k->flags & F_REQUIRED)
                        fprintf(out, "required");
                else if (!k->def || !*k->def)
                        fprintf(out, "(empty)");
                else
                        fprintf(out, "`%s`", k->def);
                fprintf(out, " | %s |\n", k->desc);
        }
}

void sl_conf_reference(FILE *out) {
        fprintf(out,
                "<!-- Generated by `sluice config reference` from the key "
                "table in src/config.c; `make docs` updates it. -->\n"
                "\n"
                "One INI file: `[sluice]`, `[kafka]` and one `[pipeline "
                "NAME]` per pipeline (NAME: `A-Z a-z 0-9 . _ -`).  Unknown "
                "sections and keys, a key set twice and a key given for a "
                "pipeline type it does not apply to are errors; "
                "`sluice config check -c FILE` lists every error as "
                "`FILE:LINE: key: what is wrong`.  In defaults, `NAME` is "
                "the pipeline's name.\n"
                "\n"
                "Value syntaxes: *duration* `250ms`, `90s`, `1.5s`, `30m`, "
                "`24h`, `7d`, `1h30m` (or `0`); *size* `512`, `10kB`, "
                "`64KiB`, `1MiB`, `1GiB`; *rate* `100/s`, `6000/m "
                "burst=50` (units s, m, h, d; default burst: one second's "
                "worth, at least 1; at most 1000000000/s); *globs* comma- "
                "or space-separated patterns (`orders.*, billing.**`: `*`, "
                "`?` and `[a-z]` never match a `.`, `**` matches anything); "
                "*topic* a Kafka topic name.  Numbers take at most 19 "
                "digits, no exponent.\n"
                "\n"
                "### [sluice]\n\n");
        ref_table(out, SECT_SLUICE, 0);
        fprintf(out,
                "\n### [kafka]\n"
                "\n"
                "Every key is a librdkafka property, passed to both the "
                "consumer and the producer untouched (see librdkafka's "
                "CONFIGURATION.md), e.g. `bootstrap.servers`, "
                "`security.protocol`, `sasl.*`, `ssl.*`; each is checked by "
                "librdkafka when the file is loaded.  sluice sets these "
                "itself and refuses them here:");
        for (size_t i = 0; i < SL_ARRAY_SIZE(kafka_reserved); i++)
                fprintf(out, "%s `%s` (%s)", i ? "," : "",
                        kafka_reserved[i].name, kafka_reserved[i].hint);
        fprintf(out, ".  `linger.ms` must be below `transaction_timeout` "
                     "(and below `message.timeout.ms` where that is set): "
                     "librdkafka would refuse every record otherwise.  No "
                     "commit waits for it: each sends what is left at once."
                     "\n\nUnless set here, these differ from librdkafka's "
                     "defaults:\n\n| property | client | sluice's default "
                     "| why |\n|---|---|---|---|\n");
        for (size_t i = 0; i < sl_kafka_defaults_cnt; i++)
                fprintf(out, "| `%s` | %s | `%s` | %s |\n",
                        sl_kafka_defaults[i].name,
                        sl_kafka_defaults[i].client == SL_KAFKA_PRODUCER
                            ? "producer"
                            : "consumer",
                        sl_kafka_defaults[i].value, sl_kafka_defaults[i].why);
        for (const conf_enum_t *e = op_types; e->name; e++) {
                fprintf(out, "\n### [pipeline NAME] with type = %s\n\n",
                        e->name);
                ref_table(out, SECT_PIPELINE, e->value);
        }
        fprintf(out,
                "\n### Environment\n"
                "\n"
                "Applied after the file, and winning over it: "
                "`SLUICE_<KEY>` sets a `[sluice]` key (`SLUICE_INSTANCE_ID`, "
                "`SLUICE_LOG_LEVEL`, ...); `SLUICE_KAFKA_<PROP>` sets a "
                "`[kafka]` property, `_` read as `.` and lower-cased "
                "(`SLUICE_KAFKA_BOOTSTRAP_SERVERS` is "
                "`bootstrap.servers`).\n");
}

/* Writes "name = value" for row k; strings and glob lists are written
 * whole, however long. */
static void dump_key(const conf_key_t *k, const void *base, FILE *out) {
        const void *field = (const char *)base + k->off;
        char buf[256];

        if (k->type == KT_GLOBS) {
                const sl_globs_t *g = field;
                fprintf(out, "%s = ", k->name);
                for (int i = 0; i < g->cnt; i++)
                        fprintf(out, "%s%s", i ? ", " : "", g->pat[i]);
                fprintf(out, "\n");
        } else if (k->type == KT_STRING || k->type == KT_TOPIC ||
                   k->type == KT_HOSTPORT) {
                const char *v = *(char *const *)field;
                if (v && k->flags & F_SECRET)
                        v = "***";
                fprintf(out, "%s = %s\n", k->name,
                        v ? v : (k->flags & F_NONE ? "none" : ""));
        } else {
                key_format(k, base, buf, sizeof(buf));
                fprintf(out, "%s = %s\n", k->name, buf);
        }
}

void sl_conf_dump(const sl_conf_t *conf, FILE *out) {
        const char *path;

        if (!conf)
                return;
        /* The path goes in a comment: no line break may end it early. */
        fprintf(out, "; effective configuration of ");
        for (path = conf->path ? conf->path : "(none)"; *path; path++)
                fputc(iscntrl((unsigned char)*path) ? '?' : *path, out);
        fprintf(out, "\n\n[sluice]\n");
        for (int i = 0; i < KEY_CNT; i++)
                if (conf_keys[i].section == SECT_SLUICE)
                        dump_key(&conf_keys[i], conf, out);
        fprintf(out, "\n[kafka]\n");
        for (int i = 0; i < conf->kafka_cnt; i++) {
                const sl_kv_t *kv = &conf->kafka[i];
                const char *why_not = ini_value_problem(kv->value);

                if (key_is_secret(kv->key))
                        fprintf(out, "%s = ***\n", kv->key);
                else if (!why_not && strlen(kv->key) < 128)
                        fprintf(out, "%s = %s\n", kv->key, kv->value);
                else /* only from the environment; a file can't say it */
                        fprintf(out,
                                "; %.128s: set from the environment; its "
                                "value %s, not possible in a config file\n",
                                kv->key, why_not ? why_not : "is too long");
        }
        for (int p = 0; p < conf->pipeline_cnt; p++) {
                const sl_pipeline_conf_t *pc = &conf->pipelines[p];
                fprintf(out, "\n[pipeline %s]\n", pc->name);
                for (int i = 0; i < KEY_CNT; i++) {
                        const conf_key_t *k = &conf_keys[i];
                        if (k->section != SECT_PIPELINE ||
                            !(k->types & pc->type))
                                continue;
                        dump_key(k, pc, out);
                }
        }
}

/* `sluice config ...` */

static void conf_usage(FILE *out) {
        fprintf(out,
                "usage: sluice config check -c FILE      validate a config "
                "file\n"
                "       sluice config dump -c FILE       print the effective "
                "configuration\n"
                "       sluice config reference          print the "
                "configuration reference (Markdown)\n");
}

static const char *sub_help[] = {
    "usage: sluice config check -c FILE\n"
    "\n"
    "Reads FILE and the SLUICE_* environment overrides and reports every "
    "error\n"
    "as FILE:LINE: key: what is wrong.  Exit 0 when the file is valid, 1 "
    "if not.\n"
    "\n"
    "  -c, --config FILE   the config file\n"
    "  -h, --help          this help\n",
    "usage: sluice config dump -c FILE\n"
    "\n"
    "Prints the effective configuration (file, defaults and environment "
    "overrides)\n"
    "as INI; secret values are shown as ***.\n"
    "\n"
    "  -c, --config FILE   the config file\n"
    "  -h, --help          this help\n",
    "usage: sluice config reference\n"
    "\n"
    "Prints the configuration reference as Markdown, generated from the key "
    "table.\n"
    "\n"
    "  -h, --help          this help\n",
};

int sl_conf_cmd(int argc, char **argv) {
        static const struct option opts[] = {
            {"config", required_argument, NULL, 'c'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        static const char *subs[] = {"check", "dump", "reference"};
        const char *path = NULL;
        sl_conf_t *conf;
        int sub = -1, c;

        if (argc < 2) {
                conf_usage(stderr);
                return SL_EXIT_USAGE;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
            !strcmp(argv[1], "help")) {
                conf_usage(stdout);
                return SL_EXIT_OK;
        }
        for (int i = 0; i < (int)SL_ARRAY_SIZE(subs); i++)
                if (!strcmp(argv[1], subs[i]))
                        sub = i;
        if (sub < 0) {
                fprintf(stderr, "sluice config: unknown subcommand '%s'\n",
                        argv[1]);
                conf_usage(stderr);
                return SL_EXIT_USAGE;
        }

        argc--;
        argv++;
        optind = 0; /* glibc: restart scanning (we may not be first) */
        while ((c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'h':
                        fputs(sub_help[sub], stdout);
                        return SL_EXIT_OK;
                default:
                        fputs(sub_help[sub], stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sluice config %s: unexpected argument '%s'\n",
                        subs[sub], argv[optind]);
                fputs(sub_help[sub], stderr);
                return SL_EXIT_USAGE;
        }
        if (sub == 2) {
                if (path) {
                        fputs(sub_help[sub], stderr);
                        return SL_EXIT_USAGE;
                }
                sl_conf_reference(stdout);
                return SL_EXIT_OK;
        }
        if (!path) {
                fprintf(stderr, "sluice config %s: -c FILE is required\n",
                        subs[sub]);
                fputs(sub_help[sub], stderr);
                return SL_EXIT_USAGE;
        }
        if (sl_conf_load(path, 1, &conf, stderr) != 0)
                return SL_EXIT_FAIL;
        if (sub == 0)
                printf("%s: ok (%d pipeline%s)\n", path, conf->pipeline_cnt,
                       conf->pipeline_cnt == 1 ? "" : "s");
        else
                sl_conf_dump(conf, stdout);
        sl_conf_destroy(conf);
        return SL_EXIT_OK;
}
