/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — the configuration file: one table of keys, an INI reader, one
 * finalize step for cross-field rules, and `sluice config ...` (see
 * config.h).
 *
 * DESIGN
 *
 * Every key is a row (config.h, sl_conf_key_t): its value type, its
 * default and bounds *as text* (parsed by the very code that parses the
 * file, so a default can never be out of its own bounds unnoticed), where it
 * is stored (offsetof) and a one-line description.  [sluice] has
 * sluice_keys[]; a pipeline has pipe_keys[], the keys every pipeline has,
 * followed by the keys of its operator, which its definition brings
 * (opdef.h, ops.def) with offsets into its params struct (pc->params).
 * Loading, defaults, environment overrides, `config dump`, `config
 * reference` and freeing all walk those tables.
 *
 * A pipeline whose type did not parse still has every key checked, so that
 * one run reports all its errors: each operator's keys go into a scratch
 * params struct of the first operator (in ops.def order) that has the key,
 * kept until finalize and then freed.  Such a pipeline claims no internal
 * topic; its input and outputs are checked as any pipeline's.
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
#include "log.h"
#include "topicname.h"
#include "util.h"

extern char **environ;

/* The tables of keys. */

typedef enum {
        SECT_NONE = 0, /* pairs before any section header */
        SECT_SLUICE,
        SECT_KAFKA,
        SECT_PIPELINE,
        SECT_BAD, /* an erroneous header: its pairs are skipped */
} sect_kind_t;

#define SLUICE(field) SL_CONF_FIELD(sl_conf_t, field)
#define PIPE(field)   SL_CONF_FIELD(sl_pipeline_conf_t, field)

/* The pipeline types, as `type = ...` reads them (ops.def). */
static const sl_conf_enum_t op_types[] = {
#define SL_OPERATOR(name, NAME) {#name, SL_OP_##NAME},
#include "ops.def"
#undef SL_OPERATOR
    {NULL, 0}};
static const sl_conf_enum_t log_levels[] = {
    {"debug", LOG_DEBUG},     {"info", LOG_INFO}, {"notice", LOG_NOTICE},
    {"warning", LOG_WARNING}, {"error", LOG_ERR}, {NULL, 0}};
static const sl_conf_enum_t log_formats[] = {
    {"text", SL_LOG_TEXT}, {"json", SL_LOG_JSON}, {NULL, 0}};
static const sl_conf_enum_t partitioners[] = {
    {"murmur2", SL_PARTITIONER_MURMUR2},
    {"crc32", SL_PARTITIONER_CRC32},
    {NULL, 0}};

/* [sluice] */
static const sl_conf_key_t sluice_keys[] = {
    {"app_id", SL_KT_STRING, NULL, "sluice", NULL, NULL, SL_KF_NONEMPTY,
     SLUICE(app_id),
     "Consumer group id and transactional id prefix; instances with the "
     "same app_id share the work."},
    {"instance_id", SL_KT_STRING, NULL, "", NULL, NULL, SL_KF_TXNID,
     SLUICE(instance_id),
     "Static group membership id (group.instance.id), e.g. the pod name; "
     "empty = dynamic membership. May not end in #2."},
    {"metrics_listen", SL_KT_HOSTPORT, NULL, "127.0.0.1:9464", NULL, NULL, 0,
     SLUICE(metrics_listen),
     "Address of the HTTP server for /metrics, /healthz and /readyz; empty "
     "= no server."},
    {"metrics_max_connections", SL_KT_INT, NULL, "64", "1", "65536", 0,
     SLUICE(metrics_max_connections),
     "Connections metrics_listen holds; a new one past it closes the one "
     "that has waited longest for its request (none waiting: the new one "
     "is closed)."},
    {"metrics_max_connections_per_client", SL_KT_INT, NULL, "32", "1", "65536",
     0, SLUICE(metrics_max_connections_client),
     "Connections one client address (IPv4, or IPv6 /64) holds on "
     "metrics_listen; a new one past it closes that client's connection "
     "that has waited longest for its request."},
    {"metrics_request_timeout", SL_KT_DURATION, NULL, "5s", "100ms", "10m", 0,
     SLUICE(metrics_request_timeout_ms),
     "A request to metrics_listen must be all in this long after its "
     "connection opened (or its previous answer was sent), or the "
     "connection is closed, however slowly bytes keep coming."},
    {"log_level", SL_KT_ENUM, log_levels, "info", NULL, NULL, 0,
     SLUICE(log_level), "Lines below this level are not logged."},
    {"log_format", SL_KT_ENUM, log_formats, "text", NULL, NULL, 0,
     SLUICE(log_format),
     "text: one line per event, TIME LEVEL FACILITY MESSAGE; json: the same "
     "fields as one JSON object per line (time, level, facility, message), "
     "for log pipelines."},
    {"commit_interval", SL_KT_DURATION, NULL, "100ms", "1ms", "60s", 0,
     SLUICE(commit_interval_ms),
     "How often the open transaction is committed: the bound on added "
     "latency (while the input is behind: backlog_commit_interval)."},
    {"backlog_commit_interval", SL_KT_DURATION, NULL, "1s", "1ms", "60s", 0,
     SLUICE(backlog_commit_interval_ms),
     "While the input is behind (for 100 ms its lag would have taken 250 ms "
     "or more, or commit_interval, to read at the pace of the last second), "
     "the regular commit waits this long instead: fewer, larger transactions "
     "catch up sooner. Never below commit_interval, at most half of "
     "transaction_timeout; due timers and debounce deadlines still commit "
     "at once."},
    {"shutdown_grace", SL_KT_DURATION, NULL, "30s", "1s", "1h", 0,
     SLUICE(shutdown_grace_ms),
     "On SIGTERM, time allowed to commit the open transaction and leave the "
     "group; past it the process exits 1 (a watchdog thread, also as PID 1)."},
    {"recovery_timeout", SL_KT_DURATION, NULL, "0", "0", "7d", 0,
     SLUICE(recovery_timeout_ms),
     "After a fatal Kafka client error the clients are re-created "
     "in-process; if that keeps failing this long, exit 1 (0 = keep "
     "trying)."},
    {"loop_stall_timeout", SL_KT_DURATION, NULL, "15s", "1s", "10m", 0,
     SLUICE(loop_stall_timeout_ms),
     "/healthz fails when the event loop has not turned for this long."},
    {"transaction_timeout", SL_KT_DURATION, NULL, "10s", "1s", "15m", 0,
     SLUICE(transaction_timeout_ms),
     "Kafka transaction timeout (transaction.timeout.ms); the broker aborts "
     "a transaction left open longer."},
    {"transaction_producers", SL_KT_INT, NULL, "2", "1", "2", 0,
     SLUICE(transaction_producers),
     "Transactional producers taking turns: with 2 the next transaction "
     "opens while Kafka still writes the last one's commit markers (ids "
     "app_id-instance and app_id-instance#2); 1 waits for them."},
    {"api_listen", SL_KT_HOSTPORT, NULL, "", NULL, NULL, 0, SLUICE(api_listen),
     "Address of the HTTP/JSON API (/v1: timers, keys, groups); empty = no "
     "API.  Needs bearer tokens (api_tokens_file or SLUICE_API_TOKENS)."},
    {"api_advertise", SL_KT_HOSTPORT, NULL, "", NULL, NULL, 0,
     SLUICE(api_advertise),
     "The API address other instances forward lookups to (advertised in the "
     "consumer's client.id); empty = api_listen, with this host's name for "
     "a wildcard host."},
    {"api_tokens_file", SL_KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tokens_file),
     "File of accepted bearer tokens, one a line (# comments); the "
     "environment variable SLUICE_API_TOKENS (comma-separated) adds more."},
    {"api_peer_secret", SL_KT_STRING, NULL, "", NULL, NULL, SL_KF_SECRET,
     SLUICE(api_peer_secret),
     "Secret the instances share (16 bytes or more, the same on each; or "
     "SLUICE_API_PEER_SECRET): a lookup forwarded to a key's owner carries "
     "an HMAC-SHA256 made with it instead of the client's token, and the "
     "owner's answer is checked with it. Empty (and no "
     "api_peer_secret_file): lookups of keys owned elsewhere are answered "
     "421."},
    {"api_peer_secret_file", SL_KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_peer_secret_file),
     "File whose first line is api_peer_secret (e.g. a mounted Kubernetes "
     "Secret); instead of api_peer_secret."},
    {"api_tls_cert", SL_KT_STRING, NULL, "", NULL, NULL, 0,
     SLUICE(api_tls_cert),
     "PEM certificate (chain) of the API; with api_tls_key, the API speaks "
     "HTTPS only."},
    {"api_tls_key", SL_KT_STRING, NULL, "", NULL, NULL, 0, SLUICE(api_tls_key),
     "PEM private key of api_tls_cert."},
    {"api_tls_ca", SL_KT_STRING, NULL, "", NULL, NULL, 0, SLUICE(api_tls_ca),
     "PEM CA certificate(s) a forwarded lookup verifies the owner's API "
     "certificate against (chain and host name); empty = the certificates "
     "of api_tls_cert (members sharing one certificate)."},
    {"api_max_body", SL_KT_SIZE, NULL, "2MiB", "1KiB", "64MiB", 0,
     SLUICE(api_max_body_bytes),
     "Largest request body the API reads; larger ones are answered 413."},
    {"api_timeout", SL_KT_DURATION, NULL, "5s", "100ms", "60s", 0,
     SLUICE(api_timeout_ms),
     "How long a request waits for a write to be durable, for the event "
     "loop or for a forwarded lookup before it is answered 503."},
    {"api_queue", SL_KT_INT, NULL, "1024", "1", "1000000", 0, SLUICE(api_queue),
     "Lookups waiting for the event loop; past it requests are answered "
     "503 at once."},
    {"api_max_connections", SL_KT_INT, NULL, "256", "1", "65536", 0,
     SLUICE(api_max_connections),
     "Open API connections (one thread each); a new one past it closes the "
     "one that has waited longest for its request (none waiting: the new "
     "one is closed)."},
    {"api_max_connections_per_client", SL_KT_INT, NULL, "64", "1", "65536", 0,
     SLUICE(api_max_connections_client),
     "API connections one client address (IPv4, or IPv6 /64) holds; a new "
     "one past it closes that client's connection that has waited longest "
     "for its request. Behind a proxy or sidecar every client has its "
     "address: raise it to api_max_connections."},
    {"api_request_timeout", SL_KT_DURATION, NULL, "10s", "100ms", "10m", 0,
     SLUICE(api_request_timeout_ms),
     "A request to the API (TLS handshake, head and body) must be all in "
     "this long after its connection opened (or its previous answer was "
     "sent), or the connection is closed, however slowly bytes keep "
     "coming."},
    {"memory_limit", SL_KT_SIZE, NULL, "auto", "0", NULL, SL_KF_AUTO,
     SLUICE(memory_limit),
     "Memory the byte caps of all pipelines share (delay's and debounce's "
     "max_pending_bytes, throttle's max_key_bytes; 0 counts as the whole "
     "budget): when they sum to more, sluice run scales each down in "
     "proportion at start and logs it (docs/operations.md, Memory caps). "
     "`auto`: 75 % of the cgroup's memory limit (memory.max, or v1's "
     "memory.limit_in_bytes), none without one; 0 = no budget."},
};

/* [pipeline NAME]: the keys every pipeline has, stored in
 * sl_pipeline_conf_t.  Its operator's keys follow (opdef.h). */
static const sl_conf_key_t pipe_keys[] = {
    {"type", SL_KT_ENUM, op_types, NULL, NULL, NULL, SL_KF_REQUIRED, PIPE(type),
     "The operator this pipeline runs."},
    {"input", SL_KT_TOPIC, NULL, NULL, NULL, NULL,
     SL_KF_REQUIRED | SL_KF_NONEMPTY, PIPE(input),
     "Input topic; all the pipeline's internal topics get its partition "
     "count."},
    {"changelog", SL_KT_TOPIC, NULL, "NAME.changelog", NULL, NULL,
     SL_KF_NONEMPTY, PIPE(changelog),
     "Compacted topic holding the pipeline's state, read back on partition "
     "assignment."},
    {"dlq", SL_KT_TOPIC, NULL, "NAME.dlq", NULL, NULL,
     SL_KF_NONEMPTY | SL_KF_NONE, PIPE(dlq),
     "Dead-letter topic for bad input and expired messages; `none` drops "
     "them (counted in metrics)."},
    {"replication_factor", SL_KT_INT, NULL, "-1", "-1", "32767", 0,
     PIPE(replication_factor),
     "Replication factor of the topics `sluice topics apply` creates; -1 = "
     "broker default."},
    {"input_partitions", SL_KT_INT, NULL, "0", "0", "100000", 0,
     PIPE(input_partitions),
     "Partitions for a missing input topic created by `sluice topics "
     "apply`; 0 = never create the input."},
    {"max_record_bytes", SL_KT_SIZE, NULL, "1MiB", "1", "1GiB", 0,
     PIPE(max_record_bytes),
     "Input records whose key and value together are larger go to the DLQ "
     "(oversize)."},
    {"catchup_rate", SL_KT_INT, NULL, "50000", "0", NULL, 0, PIPE(catchup_rate),
     "Work that fell due while a partition was unowned is fired at most "
     "this fast (per second per partition) after a rebuild; 0 = "
     "unlimited."},
    {"api", SL_KT_BOOL, NULL, "true", NULL, NULL, 0, PIPE(api),
     "Whether the HTTP API (api_listen) serves this pipeline; false answers "
     "its routes 404."},
    {"input_partitioner", SL_KT_ENUM, partitioners, "murmur2", NULL, NULL, 0,
     PIPE(input_partitioner),
     "The partition a key belongs to: `murmur2` (Java's default; "
     "kcat/librdkafka `-X partitioner=murmur2_random`) or `crc32` "
     "(librdkafka's and kcat's default `consistent_random`). The API writes "
     "a key there; with `reroute`, a keyed record produced elsewhere is "
     "moved there."},
    {"reroute", SL_KT_BOOL, NULL, "true", NULL, NULL, 0, PIPE(reroute),
     "A keyed input record on a partition its key does not belong to (by "
     "`input_partitioner`) is moved to the right input partition in the same "
     "transaction (sluice writes to the input: give it Write there); false: "
     "handled where it arrived, so every producer must use "
     "`input_partitioner` for cancel, upsert, order and grouping to hold."},
};

#define SLUICE_KEY_CNT ((int)SL_ARRAY_SIZE(sluice_keys))
#define PIPE_KEY_CNT   ((int)SL_ARRAY_SIZE(pipe_keys))

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
 * (input.c, input_wake_fetcher), 100k no longer starves (throttle 352k-433k
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

static const char *enum_name(const sl_conf_enum_t *e, int value) {
        for (; e->name; e++)
                if (e->value == value)
                        return e->name;
        return "?";
}

/* Writes the allowed values of an enum, joined by sep. */
static void enum_list(const sl_conf_enum_t *e, const char *sep, char *buf,
                      size_t size) {
        size_t off = 0;
        buf[0] = '\0';
        for (int i = 0; e[i].name && off < size; i++)
                off += (size_t)snprintf(buf + off, size - off, "%s%s",
                                        i ? sep : "", e[i].name);
}

/* Integer-valued types (int, duration, size) in one place, for bounds. */
static int num_parse(const sl_conf_key_t *k, const char *s, int64_t *out,
                     char *errstr, size_t errstr_size) {
        char why[160];

        switch (k->type) {
        case SL_KT_INT:
                if (int_parse(s, out) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "'%s' is not an integer", s);
                return 0;
        case SL_KT_DURATION:
                if (sl_parse_duration_ms(s, out, why, sizeof(why)) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "invalid duration '%s': %s", s, why);
                return 0;
        case SL_KT_SIZE:
                if (sl_parse_size(s, out, why, sizeof(why)) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "invalid size '%s': %s", s, why);
                return 0;
        default:
                sl_assert(!"not a number type");
                return -1;
        }
}

static int bounds_check(const sl_conf_key_t *k, const char *s, int64_t v,
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
                return sl_errf(errstr, errstr_size, "%s is out of range %s..%s",
                               s, k->min, k->max);
        if (k->min)
                return sl_errf(errstr, errstr_size,
                               "%s is below the minimum %s", s, k->min);
        return sl_errf(errstr, errstr_size, "%s is above the maximum %s", s,
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
static int key_value_refused(const sl_conf_key_t *k, const char *value,
                             char *errstr, size_t errstr_size) {
        size_t n = strlen(value), sn = strlen(SL_TXNID_SECOND_SUFFIX);
        const char *why_not;

        if (!*value && k->flags & SL_KF_NONEMPTY)
                return sl_errf(errstr, errstr_size, "must not be empty");
        /* Instance a's second producer is app_id-a#2: an instance named
         * a#2 would share its transactional id, and each would fence the
         * other. */
        if (k->flags & SL_KF_TXNID && n >= sn &&
            !strcmp(value + n - sn, SL_TXNID_SECOND_SUFFIX))
                return sl_errf(errstr, errstr_size,
                               "may not end in \"" SL_TXNID_SECOND_SUFFIX
                               "\" (the transactional id of another "
                               "instance's second producer)");
        if (k->flags & SL_KF_TXNID && !strncmp(value, SL_TXNID_REPLAY_PREFIX,
                                               strlen(SL_TXNID_REPLAY_PREFIX)))
                return sl_errf(errstr, errstr_size,
                               "may not start with \"" SL_TXNID_REPLAY_PREFIX
                               "\" (the transactional id of a DLQ replay)");
        if ((k->type == SL_KT_STRING || k->type == SL_KT_HOSTPORT) &&
            (why_not = ini_value_problem(value)))
                return sl_errf(errstr, errstr_size,
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

static int key_set(const sl_conf_key_t *k, void *base, const char *value,
                   char *errstr, size_t errstr_size) {
        void *field = (char *)base + k->off;
        char why[160];
        int64_t v;

        if (k->flags & SL_KF_NONE && !strcmp(value, "none")) {
                str_set(field, NULL);
                return 0;
        }
        if (k->flags & SL_KF_AUTO && !strcmp(value, "auto")) {
                sl_assert(k->size == sizeof(int64_t));
                *(int64_t *)field = -1;
                return 0;
        }
        if (key_value_refused(k, value, errstr, errstr_size))
                return -1;

        switch (k->type) {
        case SL_KT_TOPIC:
                if (*value && sl_topicname_illegal(value, strlen(value)))
                        return sl_errf(errstr, errstr_size,
                                       "invalid topic name '%s' (use "
                                       "A-Z a-z 0-9 . _ -, at most 249)",
                                       value);
                /* fall through */
        case SL_KT_STRING:
                str_set(field, *value ? value : NULL);
                return 0;
        case SL_KT_HOSTPORT:
                if (*value && !hostport_ok(value))
                        return sl_errf(errstr, errstr_size,
                                       "invalid address '%s' (expected "
                                       "host:port, e.g. 0.0.0.0:9464; port 0 "
                                       "picks a free one)",
                                       value);
                str_set(field, *value ? value : NULL);
                return 0;
        case SL_KT_INT:
        case SL_KT_DURATION:
        case SL_KT_SIZE:
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
        case SL_KT_BOOL:
                if ((v = bool_parse(value)) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "'%s' is not a boolean (true or false)",
                                       value);
                *(int *)field = (int)v;
                return 0;
        case SL_KT_RATE:
                if (sl_parse_rate(value, field, why, sizeof(why)) == -1)
                        return sl_errf(errstr, errstr_size,
                                       "invalid rate '%s': %s", value, why);
                return 0;
        case SL_KT_GLOBS: {
                sl_globs_t g;
                if (sl_globs_parse(value, &g, why, sizeof(why)) == -1)
                        return sl_errf(errstr, errstr_size, "%s", why);
                sl_globs_free(field);
                *(sl_globs_t *)field = g;
                return 0;
        }
        case SL_KT_ENUM:
                sl_assert(k->size == sizeof(int));
                for (const sl_conf_enum_t *e = k->enums; e->name; e++) {
                        if (!strcmp(e->name, value)) {
                                *(int *)field = e->value;
                                return 0;
                        }
                }
                enum_list(k->enums, ", ", why, sizeof(why));
                return sl_errf(errstr, errstr_size, "'%s' is not one of %s",
                               value, why);
        }
        return sl_errf(errstr, errstr_size, "unsupported type");
}

/* Formats the stored value of row k as the file would say it. */
static void key_format(const sl_conf_key_t *k, const void *base, char *buf,
                       size_t size) {
        const void *field = (const char *)base + k->off;
        int64_t v;

        switch (k->type) {
        case SL_KT_STRING:
        case SL_KT_TOPIC:
        case SL_KT_HOSTPORT: {
                const char *s = *(char *const *)field;
                snprintf(buf, size, "%s",
                         s ? s : (k->flags & SL_KF_NONE ? "none" : ""));
                return;
        }
        case SL_KT_INT:
        case SL_KT_DURATION:
        case SL_KT_SIZE:
                v = k->size == sizeof(int) ? *(const int *)field
                                           : *(const int64_t *)field;
                if (k->flags & SL_KF_AUTO && v == -1)
                        snprintf(buf, size, "auto");
                else if (k->type == SL_KT_DURATION)
                        sl_duration_format(v, buf, size);
                else if (k->type == SL_KT_SIZE)
                        sl_size_format(v, buf, size);
                else
                        snprintf(buf, size, "%lld", (long long)v);
                return;
        case SL_KT_BOOL:
                snprintf(buf, size, "%s",
                         *(const int *)field ? "true" : "false");
                return;
        case SL_KT_RATE:
                sl_rate_format(field, buf, size);
                return;
        case SL_KT_GLOBS:
                sl_globs_format(field, buf, size);
                return;
        case SL_KT_ENUM:
                snprintf(buf, size, "%s",
                         enum_name(k->enums, *(const int *)field));
                return;
        }
}

static void key_free(const sl_conf_key_t *k, void *base) {
        void *field = (char *)base + k->off;

        switch (k->type) {
        case SL_KT_STRING:
        case SL_KT_TOPIC:
        case SL_KT_HOSTPORT:
                str_set(field, NULL);
                break;
        case SL_KT_GLOBS:
                sl_globs_free(field);
                break;
        default:
                break;
        }
}

/* Sets row k to its default; "NAME." defaults are the pipeline's name. */
static void key_default(const sl_conf_key_t *k, void *base, const char *pname) {
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
                sl_assert(!"bad default in a key table");
        }
        free(def);
}

static const sl_conf_key_t *key_find(const sl_conf_key_t *keys, int cnt,
                                     const char *name) {
        for (int i = 0; i < cnt; i++)
                if (!strcmp(keys[i].name, name))
                        return &keys[i];
        return NULL;
}

/* 1 when row k of a pipeline is stored in sl_pipeline_conf_t (a key every
 * pipeline has, or an operator's SL_KF_SHARED one), 0 when in the
 * operator's params. */
static int key_shared(const sl_conf_key_t *k) {
        uintptr_t a = (uintptr_t)k, lo = (uintptr_t)pipe_keys;
        return (a >= lo && a < lo + sizeof(pipe_keys)) ||
               k->flags & SL_KF_SHARED;
}

/* The row of a pipeline's key name: a key every pipeline has, or one of
 * its operator op (may be NULL: only the former). */
static const sl_conf_key_t *pipe_key(const sl_opdef_t *op, const char *name) {
        const sl_conf_key_t *k = key_find(pipe_keys, PIPE_KEY_CNT, name);
        if (!k && op)
                k = key_find(op->keys, op->key_cnt, name);
        return k;
}

/* Where row k of pipeline p keeps its value (params: the operator's). */
static void *key_base(const sl_conf_key_t *k, const sl_pipeline_conf_t *p,
                      const void *params) {
        return key_shared(k) ? (void *)p : (void *)params;
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
        int seen[SLUICE_KEY_CNT] = {0};
        char errstr[512];

        for (int i = 0; i < SLUICE_KEY_CNT; i++)
                key_default(&sluice_keys[i], conf, NULL);

        for (int i = 0; i < ld->sect_cnt; i++) {
                raw_sect_t *s = &ld->sects[i];
                if (s->kind != SECT_SLUICE)
                        continue;
                for (int j = 0; j < s->kv_cnt; j++) {
                        raw_kv_t *kv = &s->kv[j];
                        const sl_conf_key_t *k =
                            key_find(sluice_keys, SLUICE_KEY_CNT, kv->key);
                        if (!k) {
                                err_at(ld, kv->line, NULL, kv->key,
                                       "unknown key in [sluice]");
                                continue;
                        }
                        if (seen[k - sluice_keys]) {
                                err_at(ld, kv->line, NULL, kv->key,
                                       "duplicate key (first set at line "
                                       "%d)",
                                       seen[k - sluice_keys]);
                                continue;
                        }
                        seen[k - sluice_keys] = kv->line;
                        if (key_set(k, conf, kv->value, errstr,
                                    sizeof(errstr)) == -1)
                                err_at(ld, kv->line, NULL, kv->key, "%s",
                                       errstr);
                }
        }

        if (!use_env)
                return;
        for (int i = 0; i < SLUICE_KEY_CNT; i++) {
                const sl_conf_key_t *k = &sluice_keys[i];
                char var[64];
                const char *value;
                size_t n;

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

/* What the loader knows of a pipeline beyond its sl_pipeline_conf_t, until
 * finalize. */
typedef struct {
        int line; /* header line */
        struct pipe_set_s {
                const char *name; /* the row's */
                int line;
        } * set; /* the keys the file set, in file order */
        int set_cnt;
        /* Type none: each operator's scratch params (see DESIGN). */
        void *scratch[SL_OP_CNT];
} pipe_lines_t;

/* The line that set key name in the pipeline, or 0. */
static int set_line(const pipe_lines_t *pl, const char *name) {
        for (int i = 0; i < pl->set_cnt; i++)
                if (!strcmp(pl->set[i].name, name))
                        return pl->set[i].line;
        return 0;
}

static void set_add(pipe_lines_t *pl, const char *name, int line) {
        pl->set =
            sl_realloc(pl->set, sizeof(*pl->set) * (size_t)(pl->set_cnt + 1));
        pl->set[pl->set_cnt].name = name;
        pl->set[pl->set_cnt++].line = line;
}

static void pipe_lines_free(pipe_lines_t *pl) {
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *op = sl_opdef_at(i);
                if (!pl->scratch[i])
                        continue;
                for (int k = 0; k < op->key_cnt; k++)
                        if (!key_shared(&op->keys[k]))
                                key_free(&op->keys[k], pl->scratch[i]);
                free(pl->scratch[i]);
        }
        free(pl->set);
}

/* The operators that have a key name: "throttle, debounce". */
static void type_list(const char *name, char *buf, size_t size) {
        size_t off = 0;
        buf[0] = '\0';
        for (int i = 0; i < SL_OP_CNT && off < size; i++) {
                const sl_opdef_t *op = sl_opdef_at(i);
                if (key_find(op->keys, op->key_cnt, name))
                        off += (size_t)snprintf(buf + off, size - off, "%s%s",
                                                off ? ", " : "", op->name);
        }
}

/* Sets the defaults of operator op's keys in pipeline p, params its. */
static void op_defaults(const sl_opdef_t *op, sl_pipeline_conf_t *p,
                        void *params) {
        for (int k = 0; k < op->key_cnt; k++)
                key_default(&op->keys[k], key_base(&op->keys[k], p, params),
                            p->name);
}

/* The row of key name in pipeline p of operator op, and where its value
 * goes (*basep); NULL when no row has that name.  Of another operator's
 * key, *validp is 0.  Without an operator (type none) every operator's
 * keys are valid: the first one's row that has the name counts. */
static const sl_conf_key_t *pair_key(const sl_opdef_t *op,
                                     sl_pipeline_conf_t *p,
                                     const pipe_lines_t *pl, const char *name,
                                     void **basep, int *validp) {
        const sl_conf_key_t *k = pipe_key(op, name);

        *validp = 1;
        if (k) {
                *basep = key_base(k, p, p->params);
                return k;
        }
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *o = sl_opdef_at(i);
                if (!(k = key_find(o->keys, o->key_cnt, name)))
                        continue;
                *validp = !op;
                *basep = key_base(k, p, pl->scratch[i]);
                return k;
        }
        return NULL;
}

static void apply_pipeline(loader_t *ld, raw_sect_t *s, sl_pipeline_conf_t *p,
                           pipe_lines_t *pl) {
        const sl_conf_key_t *type_key =
            key_find(pipe_keys, PIPE_KEY_CNT, "type");
        const sl_opdef_t *op = NULL;
        char errstr[512], types[64];

        p->name = sl_strdup(s->name);
        p->line = s->line;
        pl->line = s->line;

        /* The type decides which keys apply, so it goes first. */
        for (int j = 0; j < s->kv_cnt; j++) {
                if (strcmp(s->kv[j].key, "type"))
                        continue;
                if (key_set(type_key, p, s->kv[j].value, errstr,
                            sizeof(errstr)) == 0)
                        op = sl_opdef_of(p->type);
                break;
        }

        for (int i = 0; i < PIPE_KEY_CNT; i++)
                key_default(&pipe_keys[i], p, p->name);
        if (op) {
                p->params =
                    op->params_size ? sl_calloc(1, op->params_size) : NULL;
                op_defaults(op, p, p->params);
        } else {
                for (int i = 0; i < SL_OP_CNT; i++) {
                        const sl_opdef_t *o = sl_opdef_at(i);
                        pl->scratch[i] = sl_calloc(1, o->params_size + 1);
                        op_defaults(o, p, pl->scratch[i]);
                }
        }

        for (int j = 0; j < s->kv_cnt; j++) {
                raw_kv_t *kv = &s->kv[j];
                void *base;
                int valid, line;
                const sl_conf_key_t *k =
                    pair_key(op, p, pl, kv->key, &base, &valid);

                if (!k) {
                        err_at(ld, kv->line, NULL, kv->key,
                               "unknown key in [pipeline %s]", s->name);
                        continue;
                }
                if ((line = set_line(pl, k->name))) {
                        err_at(ld, kv->line, NULL, kv->key,
                               "duplicate key (first set at line %d)", line);
                        continue;
                }
                set_add(pl, k->name, kv->line);
                if (!valid) {
                        type_list(k->name, types, sizeof(types));
                        err_at(ld, kv->line, NULL, kv->key,
                               "not valid for type %s (only for %s)",
                               sl_op_type_name(p->type), types);
                        continue;
                }
                if (key_set(k, base, kv->value, errstr, sizeof(errstr)) == -1)
                        err_at(ld, kv->line, NULL, kv->key, "%s", errstr);
        }
}

/* Pass 3: finalize. */

struct sl_conf_check_s {
        loader_t *ld;
        const pipe_lines_t *pl;
};

/* The line of key name in the pipeline, or its header line when the value
 * is a default. */
static int pl_line(const pipe_lines_t *pl, const char *name) {
        int line = set_line(pl, name);
        return line ? line : pl->line;
}

void sl_conf_check_error(sl_conf_check_t *chk, const char *key, const char *fmt,
                         ...) {
        char msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        err_at(chk->ld, pl_line(chk->pl, key), NULL, key, "%s", msg);
}

int sl_conf_check_set(const sl_conf_check_t *chk, const char *key) {
        return set_line(chk->pl, key) != 0;
}

/* An internal topic and the pipeline that claims it. */
typedef struct {
        const char *topic;
        const sl_roledef_t *role;
        const sl_pipeline_conf_t *p;
        int line;
} claim_t;

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

/* The topic of role r (of operator op, or every pipeline's) in pipeline p
 * whose operator's keys are in params; NULL when unset. */
static const char *role_topic(const sl_opdef_t *op, const sl_roledef_t *r,
                              const sl_pipeline_conf_t *p, const void *params) {
        const sl_conf_key_t *k = pipe_key(op, r->key);
        const void *base;

        sl_assert(k && k->type == SL_KT_TOPIC);
        base = key_base(k, p, params);
        return base ? *(char *const *)((const char *)base + k->off) : NULL;
}

static void topic_add(sl_ptopic_t *out, int *n, const sl_opdef_t *op,
                      const sl_roledef_t *r, const sl_pipeline_conf_t *p,
                      const void *params) {
        const char *name = role_topic(op, r, p, params);

        if (r->flags & SL_ROLE_OPTIONAL && (!name || !*name))
                return;
        sl_assert(*n < SL_PIPELINE_TOPICS_MAX);
        out[(*n)++] = (sl_ptopic_t){r, name};
}

/* sl_pipeline_topics() of pipeline p of operator op (NULL: none), whose
 * operator's keys are in params. */
static int topics_of(const sl_opdef_t *op, const sl_pipeline_conf_t *p,
                     const void *params, sl_ptopic_t *out) {
        int n = 0;

        topic_add(out, &n, op, &sl_role_input, p, params);
        topic_add(out, &n, op, &sl_role_changelog, p, params);
        for (int i = 0; op && i < op->role_cnt; i++)
                if (!(op->roles[i].flags & SL_ROLE_OUTPUT))
                        topic_add(out, &n, op, &op->roles[i], p, params);
        topic_add(out, &n, op, &sl_role_dlq, p, params);
        for (int i = 0; op && i < op->role_cnt; i++)
                if (op->roles[i].flags & SL_ROLE_OUTPUT)
                        topic_add(out, &n, op, &op->roles[i], p, params);
        return n;
}

/* The outputs of pipeline p (its operator's output roles, whether set or
 * not; with type none every operator's, each key once) into outs;
 * returns their count. */
static int pipe_outputs(const sl_pipeline_conf_t *p, const sl_opdef_t *op,
                        const pipe_lines_t *pl, sl_ptopic_t *outs) {
        int n = 0;

        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *o = sl_opdef_at(i);
                const void *params = op ? p->params : pl->scratch[i];
                if (op && o != op)
                        continue;
                for (int r = 0; r < o->role_cnt; r++) {
                        const sl_roledef_t *role = &o->roles[r];
                        int seen = 0;
                        if (!(role->flags & SL_ROLE_OUTPUT))
                                continue;
                        for (int j = 0; j < n && !seen; j++)
                                seen = !strcmp(outs[j].role->key, role->key);
                        if (seen)
                                continue;
                        sl_assert(n < SL_PIPELINE_TOPICS_MAX);
                        outs[n++] =
                            (sl_ptopic_t){role, role_topic(o, role, p, params)};
                }
        }
        return n;
}

/* Keys a pipeline of its type must set. */
static void check_required(loader_t *ld, const sl_pipeline_conf_t *p,
                           const sl_opdef_t *op, const pipe_lines_t *pl) {
        int cnt = PIPE_KEY_CNT + (op ? op->key_cnt : 0);
        char a[64];

        /* Without a valid type, only what every type requires can be
         * checked. */
        for (int i = 0; i < cnt; i++) {
                const sl_conf_key_t *key = i < PIPE_KEY_CNT
                                               ? &pipe_keys[i]
                                               : &op->keys[i - PIPE_KEY_CNT];
                if (!(key->flags & SL_KF_REQUIRED) || set_line(pl, key->name))
                        continue;
                if (key->type == SL_KT_ENUM) {
                        enum_list(key->enums, ", ", a, sizeof(a));
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (one of %s)", a);
                } else if (i < PIPE_KEY_CNT) {
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (required)");
                } else {
                        err_at(ld, pl->line, NULL, key->name,
                               "missing (required for type %s)",
                               sl_op_type_name(p->type));
                }
        }
}

/* Rules between one pipeline's keys: those of every pipeline, then its
 * operator's (its finalize hook). */
static void check_pipeline_rules(loader_t *ld, const sl_pipeline_conf_t *p,
                                 const sl_opdef_t *op, const pipe_lines_t *pl) {
        sl_ptopic_t outs[SL_PIPELINE_TOPICS_MAX];
        int n = pipe_outputs(p, op, pl, outs);

        if (p->replication_factor == 0)
                err_at(ld, pl_line(pl, "replication_factor"), NULL,
                       "replication_factor",
                       "must be -1 (broker default) or at least 1");
        for (int i = 0; i < n; i++) {
                const char *key = outs[i].role->key;
                if (p->input && outs[i].name && !strcmp(p->input, outs[i].name))
                        err_at(ld, pl_line(pl, key), NULL, key,
                               "same topic as input ('%s')", p->input);
        }
        if (op && op->finalize) {
                sl_conf_check_t chk = {ld, pl};
                op->finalize(p, &chk);
        }
}

/* p's internal topics, each unique across all pipelines: claimed in
 * claims[*claim_cnt].  A pipeline without a type claims none. */
static void claim_internal_topics(loader_t *ld, const sl_pipeline_conf_t *p,
                                  const sl_opdef_t *op, const pipe_lines_t *pl,
                                  claim_t *claims, int *claim_cnt) {
        sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
        int n = op ? topics_of(op, p, p->params, ts) : 0;

        for (int i = 0; i < n; i++) {
                const sl_roledef_t *r = ts[i].role;
                const char *topic = ts[i].name;
                int line = pl_line(pl, r->key);

                if (!topic || !(r->flags & SL_ROLE_INTERNAL))
                        continue;
                for (int c = 0; c < *claim_cnt; c++) {
                        if (strcmp(claims[c].topic, topic))
                                continue;
                        err_at(ld, line, NULL, r->key,
                               "topic '%s' is already the %s topic "
                               "of pipeline '%s' (line %d)",
                               topic, claims[c].role->name, claims[c].p->name,
                               claims[c].line);
                        break;
                }
                claims[(*claim_cnt)++] = (claim_t){topic, r, p, line};
        }
}

/* Pipeline i's input and outputs: none is an internal topic (of Kafka, for
 * an output, or of any pipeline), and no two pipelines read one input. */
static void check_external_topics(loader_t *ld, const sl_conf_t *conf,
                                  const pipe_lines_t *pls, int i,
                                  const claim_t *claims, int claim_cnt) {
        const sl_pipeline_conf_t *p = &conf->pipelines[i];
        const pipe_lines_t *pl = &pls[i];
        sl_ptopic_t ext[SL_PIPELINE_TOPICS_MAX + 1];
        int n;

        ext[0] = (sl_ptopic_t){&sl_role_input, p->input};
        n = 1 + pipe_outputs(p, sl_opdef_of(p->type), pl, ext + 1);
        for (int r = 0; r < n; r++) {
                const char *key = ext[r].role->key;
                const char *topic = ext[r].name;
                if (!topic)
                        continue;
                if (r > 0 && sl_topicname_kafka_internal(topic)) {
                        err_at(ld, pl_line(pl, key), NULL, key,
                               "'%s' is an internal topic of Kafka "
                               "(\"__*\"); sluice never writes there",
                               topic);
                        continue;
                }
                for (int c = 0; c < claim_cnt; c++) {
                        if (strcmp(claims[c].topic, topic))
                                continue;
                        err_at(ld, pl_line(pl, key), NULL, key,
                               "'%s' is the %s topic of pipeline "
                               "'%s'; sluice's internal topics cannot "
                               "be used here",
                               topic, claims[c].role->name, claims[c].p->name);
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

        claims = sl_calloc((size_t)conf->pipeline_cnt * SL_PIPELINE_TOPICS_MAX,
                           sizeof(*claims));
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *p = &conf->pipelines[i];
                const sl_opdef_t *op = sl_opdef_of(p->type);
                check_required(ld, p, op, &pls[i]);
                check_pipeline_rules(ld, p, op, &pls[i]);
                claim_internal_topics(ld, p, op, &pls[i], claims, &claim_cnt);
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
        for (int i = 0; i < conf->pipeline_cnt; i++)
                pipe_lines_free(&pls[i]);
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

/* Frees what pipeline p owns. */
static void pipe_free(sl_pipeline_conf_t *p) {
        const sl_opdef_t *op = sl_opdef_of(p->type);

        for (int k = 0; k < PIPE_KEY_CNT; k++)
                key_free(&pipe_keys[k], p);
        /* Without a type, every operator's shared keys may hold a value. */
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *o = sl_opdef_at(i);
                if (op && o != op)
                        continue;
                for (int k = 0; k < o->key_cnt; k++) {
                        const sl_conf_key_t *key = &o->keys[k];
                        if (key_shared(key))
                                key_free(key, p);
                        else if (p->params)
                                key_free(key, p->params);
                }
        }
        free(p->params);
        free(p->name);
}

void sl_conf_destroy(sl_conf_t *conf) {
        if (!conf)
                return;
        for (int i = 0; i < conf->pipeline_cnt; i++)
                pipe_free(&conf->pipelines[i]);
        free(conf->pipelines);
        for (int k = 0; k < SLUICE_KEY_CNT; k++)
                key_free(&sluice_keys[k], conf);
        for (int i = 0; i < conf->kafka_cnt; i++) {
                free(conf->kafka[i].key);
                free(conf->kafka[i].value);
        }
        free(conf->kafka);
        free(conf->path);
        free(conf);
}

void sl_conf_replay_id(const sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                       char *buf, size_t size) {
        snprintf(buf, size, "%s-" SL_TXNID_REPLAY_PREFIX "%s",
                 conf->app_id ? conf->app_id : "sluice", pc->name);
}

const sl_pipeline_conf_t *
sl_conf_load_pipeline(const char *path, const char *name, const char *cmd,
                      sl_conf_t **confp, FILE *errout) {
        const sl_pipeline_conf_t *pc;

        if (sl_conf_load(path, 1, confp, errout) != 0)
                return NULL;
        if (!(pc = sl_conf_pipeline(*confp, name))) {
                if (errout)
                        fprintf(errout, "%s: %s: no pipeline named %s\n", cmd,
                                path, name);
                sl_conf_destroy(*confp);
                *confp = NULL;
        }
        return pc;
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

/* The topics of a pipeline. */

const sl_roledef_t sl_role_input = {
    "input", "input",          SL_ROLE_INPUT | SL_ROLE_READ,
    0,       SL_ACL_WHY_INPUT, SL_ACL_WHY_API_INPUT,
    NULL};
const sl_roledef_t sl_role_changelog = {"changelog",
                                        "changelog",
                                        SL_ROLE_INTERNAL | SL_ROLE_COPART |
                                            SL_ROLE_READ | SL_ROLE_WRITE,
                                        0,
                                        SL_ACL_WHY_CHANGELOG,
                                        0,
                                        NULL};
const sl_roledef_t sl_role_dlq = {"dlq",
                                  "dlq",
                                  SL_ROLE_INTERNAL | SL_ROLE_COPART |
                                      SL_ROLE_WRITE | SL_ROLE_OPTIONAL,
                                  0,
                                  SL_ACL_WHY_DLQ,
                                  0,
                                  NULL};

int sl_pipeline_topics(const sl_pipeline_conf_t *pc, sl_ptopic_t *out) {
        return topics_of(sl_opdef_of(pc->type), pc, pc->params, out);
}

const char *sl_pipeline_topic(const sl_pipeline_conf_t *pc, const char *role) {
        sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
        int n = sl_pipeline_topics(pc, ts);

        for (int i = 0; i < n; i++)
                if (!strcmp(ts[i].role->name, role))
                        return ts[i].name;
        return NULL;
}

int sl_conf_topic_internal(const sl_conf_t *conf, const char *name) {
        for (int p = 0; conf && p < conf->pipeline_cnt; p++) {
                sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
                int n = sl_pipeline_topics(&conf->pipelines[p], ts);
                for (int i = 0; i < n; i++)
                        if (ts[i].role->flags & SL_ROLE_INTERNAL &&
                            ts[i].name && !strcmp(ts[i].name, name))
                                return 1;
        }
        return 0;
}

const char **sl_conf_internal_topics(const sl_conf_t *conf, int *cnt) {
        const char **names =
            sl_calloc((size_t)conf->pipeline_cnt * SL_PIPELINE_TOPICS_MAX + 1,
                      sizeof(*names));

        *cnt = 0;
        for (int p = 0; p < conf->pipeline_cnt; p++) {
                sl_ptopic_t ts[SL_PIPELINE_TOPICS_MAX];
                int n = sl_pipeline_topics(&conf->pipelines[p], ts);
                for (int i = 0; i < n; i++)
                        if (ts[i].role->flags & SL_ROLE_INTERNAL && ts[i].name)
                                names[(*cnt)++] = ts[i].name;
        }
        return names;
}

sl_conf_memcap_t *sl_conf_memcaps(sl_conf_t *conf, int *cnt) {
        sl_conf_memcap_t *caps = NULL;
        int n = 0;

        for (int p = 0; p < conf->pipeline_cnt; p++) {
                sl_pipeline_conf_t *pc = &conf->pipelines[p];
                const sl_opdef_t *op = sl_opdef_of(pc->type);
                for (int i = 0; op && i < op->key_cnt; i++) {
                        const sl_conf_key_t *k = &op->keys[i];
                        if (!(k->flags & SL_KF_MEMCAP))
                                continue;
                        sl_assert(k->type == SL_KT_SIZE && !key_shared(k) &&
                                  k->size == sizeof(int64_t));
                        caps =
                            sl_realloc(caps, (size_t)(n + 1) * sizeof(*caps));
                        caps[n].pc = pc;
                        caps[n].key = k->name;
                        caps[n].bytes =
                            (int64_t *)((char *)pc->params + k->off);
                        n++;
                }
        }
        *cnt = n;
        return caps;
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

static void ref_type(const sl_conf_key_t *k, char *buf, size_t size) {
        static const char *names[] = {
            [SL_KT_STRING] = "string",      [SL_KT_TOPIC] = "topic",
            [SL_KT_HOSTPORT] = "host:port", [SL_KT_INT] = "integer",
            [SL_KT_BOOL] = "boolean",       [SL_KT_DURATION] = "duration",
            [SL_KT_SIZE] = "size",          [SL_KT_RATE] = "rate",
            [SL_KT_GLOBS] = "globs",        [SL_KT_ENUM] = "one of"};
        char list[256];

        if (k->type == SL_KT_ENUM) {
                size_t off = 0;
                list[0] = '\0';
                for (const sl_conf_enum_t *e = k->enums;
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
        if (k->flags & SL_KF_NONE)
                snprintf(buf + strlen(buf), size - strlen(buf), " or `none`");
        if (k->flags & SL_KF_AUTO)
                snprintf(buf + strlen(buf), size - strlen(buf), " or `auto`");
}

static void ref_rows(FILE *out, const sl_conf_key_t *keys, int cnt) {
        char t[320];

        for (int i = 0; i < cnt; i++) {
                const sl_conf_key_t *k = &keys[i];
                ref_type(k, t, sizeof(t));
                fprintf(out, "| `%s` | %s | ", k->name, t);
                if (k->flags & SL_KF_REQUIRED)
                        fprintf(out, "required");
                else if (!k->def || !*k->def)
                        fprintf(out, "(empty)");
                else
                        fprintf(out, "`%s`", k->def);
                fprintf(out, " | %s%s |\n", k->desc,
                        k->flags & SL_KF_MEMCAP
                            ? " Shares [sluice] `memory_limit` with the "
                              "other byte caps (0 then counts as the whole "
                              "budget)."
                            : "");
        }
}

#define REF_HEAD "| key | type | default | description |\n|---|---|---|---|\n"

void sl_conf_reference(FILE *out) {
        fprintf(out,
                "<!-- Generated by `sluice config reference` from the key "
                "tables in src/config.c and src/opdef_*.c; `make docs` "
                "updates it. -->\n"
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
        fprintf(out, REF_HEAD);
        ref_rows(out, sluice_keys, SLUICE_KEY_CNT);
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
        for (int i = 0; i < SL_OP_CNT; i++) {
                const sl_opdef_t *op = sl_opdef_at(i);
                fprintf(out, "\n### [pipeline NAME] with type = %s\n\n",
                        op->name);
                fprintf(out, REF_HEAD);
                ref_rows(out, pipe_keys, PIPE_KEY_CNT);
                ref_rows(out, op->keys, op->key_cnt);
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
static void dump_key(const sl_conf_key_t *k, const void *base, FILE *out) {
        const void *field = (const char *)base + k->off;
        char buf[256];

        if (k->type == SL_KT_GLOBS) {
                const sl_globs_t *g = field;
                fprintf(out, "%s = ", k->name);
                for (int i = 0; i < g->cnt; i++)
                        fprintf(out, "%s%s", i ? ", " : "", g->pat[i]);
                fprintf(out, "\n");
        } else if (k->type == SL_KT_STRING || k->type == SL_KT_TOPIC ||
                   k->type == SL_KT_HOSTPORT) {
                const char *v = *(char *const *)field;
                if (v && k->flags & SL_KF_SECRET)
                        v = "***";
                fprintf(out, "%s = %s\n", k->name,
                        v ? v : (k->flags & SL_KF_NONE ? "none" : ""));
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
        for (int i = 0; i < SLUICE_KEY_CNT; i++)
                dump_key(&sluice_keys[i], conf, out);
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
                const sl_opdef_t *op = sl_opdef_of(pc->type);
                fprintf(out, "\n[pipeline %s]\n", pc->name);
                for (int i = 0; i < PIPE_KEY_CNT; i++)
                        dump_key(&pipe_keys[i], pc, out);
                for (int i = 0; op && i < op->key_cnt; i++)
                        dump_key(&op->keys[i],
                                 key_base(&op->keys[i], pc, pc->params), out);
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
