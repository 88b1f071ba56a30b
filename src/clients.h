/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clients.h — the Kafka clients of the process: their configurations,
 * their creation, their errors.
 *
 *   consumer   group member (cooperative-sticky, static membership,
 *              read_committed), subscribed to every pipeline's input;
 *              offsets are committed only through the producer's
 *              transactions, never by the consumer.
 *   producers  transactional (one, or two taking turns: txn.h); carry
 *              outputs, changelog, overflow and DLQ records and the input
 *              offsets in one transaction.
 *   reader     assign-only (no group): reads changelog partitions during
 *              rebuilds (read_committed, partition EOF on), fetches and
 *              global tables (reader.h).
 *   lookup     joins no group and fetches nothing: kquery's lookups
 *              (kquery.h), the Kafka probe among them.  Not the reader: a
 *              broker mutes a client's connection while it throttles its
 *              fetches (a fetch quota on a rebuild), and the lookups would
 *              time out with it.
 *   offsets    a consumer of the group that never joins it: the committed
 *              offsets kquery reads for a rebuild.
 *
 * The consumer and the producers are owned by the transaction state
 * machine (txn.h), which creates them from the configurations made here
 * and re-creates them after a fatal error (the ready, turn and lost hooks
 * below); the other three live as long as the process.  All are served on
 * the loop thread through sl_kwatch.  [kafka] properties go to every
 * client untouched; sluice's own defaults (config.c, sl_kafka_defaults)
 * apply where [kafka] does not set them.
 */
#ifndef SL_CLIENTS_H
#define SL_CLIENTS_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#include "runtime.h"

typedef struct sl_clients_s sl_clients_t;

/* Makes the reader (rt->reader, rt->reader_q), the lookup client and
 * rt->kq on it, and the offsets client; the reader's queue is watched
 * once sl_clients_watch_reader() is called (the pipelines must exist
 * first).  NULL with errstr on failure. */
sl_clients_t *sl_clients_new(sl_runtime_t *rt, char *errstr,
                             size_t errstr_size);
int sl_clients_watch_reader(sl_runtime_t *rt, char *errstr, size_t errstr_size);
/* Destroys them, rt->kq with them (its users must have cancelled their
 * lookups).  NULL is a no-op. */
void sl_clients_destroy(sl_clients_t *cl);

/* Every second: stamps the consumer's "the application polled" time and
 * serves the offsets client's events. */
void sl_clients_tick(sl_runtime_t *rt);

/* The hooks of txn.h (opaque is the runtime). */
rd_kafka_conf_t *sl_clients_producer_conf(void *opaque, int idx, char *errstr,
                                          size_t errstr_size);
rd_kafka_conf_t *sl_clients_consumer_conf(void *opaque, char *errstr,
                                          size_t errstr_size);
void sl_clients_ready(void *opaque, rd_kafka_t *const *producers,
                      int producer_cnt, rd_kafka_t *consumer);
void sl_clients_turn(void *opaque, int idx);
void sl_clients_lost(void *opaque);

#endif
