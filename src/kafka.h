/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka.h — small librdkafka helpers shared by the runtime and the
 * operators: its log lines into sl_log, rate-limited client errors,
 * config setters, metadata lookups.  The wake-ups of the
 * libuv loop by librdkafka's queues are kwatch.h.
 */
#ifndef SL_KAFKA_H
#define SL_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

/* librdkafka log lines into sl_log. Set with rd_kafka_conf_set_log_cb. */
void sl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf);

/* The topic librdkafka last named in a refused AddPartitionsToTxn
 * ("Failed to add partition \"T\" [P] to transaction: Broker: Topic
 * authorization failed", its ADDPARTS log line): copied into buf (size
 * > 0), "" when none was seen.  Returns how many such lines were seen so
 * far (0: none).  librdkafka 2.0.2 says which topic only there; the
 * transaction's error carries the code alone, and a transaction doomed
 * for another reason meanwhile (a record's error) is aborted without it.
 * Any thread. */
uint64_t sl_kafka_denied_topic(char *buf, size_t size);

/* Logs a client error (not fatal) as a warning, at most once every 30 s
 * for the same client and error; the next line says how many were
 * suppressed.  Loop thread. */
void sl_kafka_log_error(const char *who, rd_kafka_resp_err_t err,
                        const char *reason);

/* [kafka]'s value of key as the configuration sets it (the last one), or
 * NULL when it does not. */
const char *sl_kafka_user_value(const sl_conf_t *conf, const char *key);

/* Sets a property on conf; on failure logs and returns -1. */
int sl_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, char *errstr, size_t errstr_size);

/* A client of type with conf's [kafka] settings, sluice's log callback
 * and the properties kv (name, value, ..., NULL), for the commands that
 * read or write outside the runtime (inspect, dlq replay); NULL with the
 * reason in errstr when it cannot be made. */
rd_kafka_t *sl_kafka_client_new(const sl_conf_t *conf, rd_kafka_type_t type,
                                const char *const *kv, char *errstr,
                                size_t errstr_size);

/* A command's reader: a read_committed consumer with conf's [kafka]
 * settings and group.id group_id that assigns partitions itself and
 * commits nothing by itself, from the earliest offset, with an event at
 * each partition's end; its queue is the consumer's.  NULL with the reason
 * in errstr when it cannot be made. */
rd_kafka_t *sl_kafka_reader_new(const sl_conf_t *conf, const char *group_id,
                                char *errstr, size_t errstr_size);

/* Partition count of topic as seen by rk (a metadata request, blocking up to
 * timeout_ms); 0 if the topic does not exist, SL_KAFKA_PARTS_REFUSED if the
 * authorizer hides it (no Describe: none of the operations that imply
 * it), -1 on another error. */
#define SL_KAFKA_PARTS_REFUSED (-2)
int sl_kafka_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms);

#endif
