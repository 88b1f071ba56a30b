/* SPDX-License-Identifier: Apache-2.0 */
/*
 * groupcheck.h — input partitions that no member of the consumer group
 * owns, found from the group's description, and who repairs that.
 *
 * Why.  With cooperative-sticky rebalancing a partition that moves is
 * first revoked by its owner (phase 1: the group is Stable with that
 * partition assigned to nobody) and assigned to its new owner only when
 * the old one has revoked it and rejoined (phase 2).  If the old owner's
 * consumer vanishes in between (kill -9, or its clients re-created after a
 * fatal error) and comes back with the same group.instance.id within the
 * session timeout, the broker treats it as a static member rejoining a
 * Stable group: it hands back the stored phase-1 assignment and starts no
 * rebalance.  Nobody ever asks for phase 2, so those partitions stay
 * unowned, and every instance looks healthy.  Seen in CI (0401).
 *
 * What.  Every instance describes its group now and then (member.c).  A
 * partition served by some pipeline (topic, 0 <= p < served count) that is
 * in no member's assignment while the group is Stable is a gap.  A gap
 * seen on every look for SL_GROUPCHECK_GAP_MS makes one member repair it:
 * the member with the fewest partitions (ties: the smallest member id), so
 * the repair moves as little as possible; after three times as long,
 * whoever sees it.  The repair is leaving the group and joining it again
 * (member.c), which makes the broker rebalance.
 *
 * Pure: no Kafka calls, no clock of its own.
 */
#ifndef SL_GROUPCHECK_H
#define SL_GROUPCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define SL_GROUPCHECK_EVERY_MS 5000
#define SL_GROUPCHECK_GAP_MS   15000

/* One member of the group as DescribeGroups tells it (kquery.h). */
typedef struct sl_groupcheck_member_s {
        const char *consumer_id;
        const char *group_instance_id; /* NULL for a dynamic member */
        const char *client_id;
        const char *host;
        /* Its partitions; NULL or empty when it has none. */
        const rd_kafka_topic_partition_list_t *assignment;
} sl_groupcheck_member_t;

/* A topic the group consumes and how many of its partitions are served. */
typedef struct sl_groupcheck_topic_s {
        const char *name;
        int partition_cnt;
} sl_groupcheck_topic_t;

/* What one look at the group found. */
typedef struct sl_groupcheck_look_s {
        int unowned;       /* served partitions in no member's assignment */
        char example[160]; /* "topic [p]" of the first one, or "" */
        int repairer;      /* index of the member to repair, -1: none */
        int mine;          /* index of our member, -1: not in the group */
} sl_groupcheck_look_t;

/* Fills *look from the members of a group (their assignments may be NULL:
 * nothing assigned) and our own member id (NULL or "": not known).
 * Returns look->unowned. */
int sl_groupcheck_look(const sl_groupcheck_topic_t *topics, int topic_cnt,
                       const sl_groupcheck_member_t *members, int member_cnt,
                       const char *my_member_id, sl_groupcheck_look_t *look);

/* A member's assignment as the broker keeps it (ConsumerProtocol
 * Assignment, the bytes the group leader's assignor wrote: int16 version,
 * int32 topic count, per topic an int16-length name and an int32 count of
 * int32 partitions, then user data, ignored).  Bytes other processes wrote,
 * so every length is checked (fuzzed: tests/fuzz/fuzz_assignment.c).
 * Returns a new list (empty for 0 bytes), or NULL when the bytes are not a
 * well-formed assignment. */
rd_kafka_topic_partition_list_t *sl_groupcheck_parse_assignment(const void *buf,
                                                                size_t len);

typedef enum {
        SL_GROUPCHECK_OK,     /* no gap */
        SL_GROUPCHECK_WATCH,  /* a gap, not for long enough (or not ours) */
        SL_GROUPCHECK_REPAIR, /* this member leaves and rejoins now */
} sl_groupcheck_verdict_t;

/* A gap's history across looks. */
typedef struct sl_groupcheck_s {
        int64_t gap_since_ms; /* first look of the current gap; 0: none */
} sl_groupcheck_t;

/* One look's verdict at now_ms.  stable: the group was Stable (a group
 * that is rebalancing has gaps by design).  After REPAIR the history
 * starts again. */
sl_groupcheck_verdict_t sl_groupcheck_judge(sl_groupcheck_t *gc, int64_t now_ms,
                                            int stable,
                                            const sl_groupcheck_look_t *look);

#endif
