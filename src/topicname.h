/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topicname.h — Kafka topic names: which are legal, which are Kafka's own.
 *
 * A legal name has 1 to 249 characters from [A-Za-z0-9._-] and is not "."
 * or "..": the broker refuses any other, so sluice refuses it first, in a
 * configuration (config.c) and in a timer's target (delay_input.c).
 * Names starting "__" are Kafka's internal topics (__consumer_offsets,
 * __transaction_state, ...), never a target.  Pure; any thread.
 */
#ifndef SL_TOPICNAME_H
#define SL_TOPICNAME_H

#include <stddef.h>

/* Kafka's longest legal topic name. */
#define SL_TOPICNAME_MAX 249

/* Why name (len bytes, NUL not needed) is not a legal topic name (a
 * static phrase), or NULL when it is. */
const char *sl_topicname_illegal(const char *name, size_t len);

/* 1 when name (NUL-terminated, may be NULL) is one of Kafka's internal
 * topics (it starts "__"). */
int sl_topicname_kafka_internal(const char *name);

#endif
