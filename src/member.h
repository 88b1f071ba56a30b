/* SPDX-License-Identifier: Apache-2.0 */
/*
 * member.h — this process as one member of the consumer group: its
 * subscription, rebalances, revocations, and the watch for partitions
 * nobody owns.
 *
 * Rebalances are cooperative-sticky.  Assigned partitions are paused and a
 * task is made per partition, in REBUILDING (task.h).  Revoked partitions
 * first have their work committed — the revocation waits for that commit,
 * which runs on the transaction worker while the loop keeps turning —
 * then their tasks are dropped and the partitions unassigned.  Lost
 * partitions cannot be committed: they are dropped at once and the open
 * transaction is aborted.
 *
 * Every 5 s the group is described: input partitions that nobody owns
 * while the group is Stable, for 15 s, make one member leave and rejoin
 * (groupcheck.h says why that happens and who repairs it).
 *
 * Loop thread only.
 */
#ifndef SL_MEMBER_H
#define SL_MEMBER_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "runtime.h"

typedef struct sl_member_s sl_member_t;

/* Its state (rt->member) and series; _destroy(NULL) is a no-op. */
sl_member_t *sl_member_new(sl_runtime_t *rt);
void sl_member_destroy(sl_member_t *mb);

/* Subscribes the consumer to every pipeline's input. */
rd_kafka_resp_err_t sl_member_subscribe(sl_runtime_t *rt);

/* The consumer's rebalance callback (rd_kafka_conf_set_rebalance_cb; the
 * client's opaque is the runtime). */
void sl_member_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                            rd_kafka_topic_partition_list_t *parts,
                            void *opaque);

/* The revoked partitions' work is committed (or was aborted, and the next
 * owner redoes it): drop them and let the group move on.  No-op without a
 * revocation. */
void sl_member_revoke_finish(sl_runtime_t *rt);
/* Commits the revoked partitions' work, now or once the transaction is
 * free (called again when it settles). */
void sl_member_revoke_try(sl_runtime_t *rt);

/* The consumer is gone (clients re-created): no revocation waits, no
 * assignment, no rejoin pending. */
void sl_member_lost(sl_runtime_t *rt);

/* Every second: a look at the group now and then, or the join after a
 * repair's leave once this member's partitions are gone. */
void sl_member_tick(sl_runtime_t *rt, int64_t now);

#endif
