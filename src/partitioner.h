/* SPDX-License-Identifier: Apache-2.0 */
/*
 * partitioner.h — the partition a producer puts a keyed record in: Kafka's
 * Java client (murmur2: toPositive(murmur2(key)) % cnt, librdkafka's
 * murmur2_random) or librdkafka's default (consistent_random, kcat's too:
 * crc32(key) % cnt).  A pipeline's input_partitioner names the one its
 * keys belong by: the API writes a key there and asks that partition's
 * owner, and a keyed record that arrives on another partition is moved
 * there (task.c, rerouting).
 *
 * Pure; any thread.
 */
#ifndef SL_PARTITIONER_H
#define SL_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The partition of key among cnt partitions, or -1 when cnt <= 0. */
int32_t sl_partitioner_partition(sl_partitioner_t how, const void *key,
                                 size_t keylen, int cnt);

/* The raw hashes, for tests against Kafka's and librdkafka's vectors. */
int32_t sl_partitioner_murmur2(const void *key, size_t keylen);
uint32_t sl_partitioner_crc32(const void *key, size_t keylen);

#endif
