/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kquery.h — Kafka lookups that never block the loop thread: watermarks,
 * committed offsets, partition counts, consumer group members and a
 * liveness probe, each answered by a callback on the loop thread.
 *
 * Why: the loop serves every partition of every pipeline, so a lookup that
 * waits for a broker that is down or paused stalls them all.  Each lookup
 * here is started on the loop thread and answered on it, exactly once,
 * after at most about its timeout_ms:
 *
 *   sl_kquery_watermarks()  ─┐
 *   sl_kquery_partitions()   ├─ worker threads (blocking librdkafka calls
 *   sl_kquery_probe()        │  with no async form in 2.0.2)
 *   sl_kquery_group_owners()─┘
 *   sl_kquery_committed()      ─┬─ librdkafka admin API; results come back
 *   sl_kquery_describe_group()  │  as events on a queue the loop watches
 *   sl_kquery_max_bytes()      ─┘
 *                                              │
 *                              callback on the loop thread
 *
 * The usual libuv rules hold: a function that returns -1 never calls its
 * callback; a callback is never called from inside the function that
 * started the lookup; a cancelled lookup's callback never runs.  Strings
 * passed in are copied; pointers passed to a callback are valid only until
 * it returns.  A callback may start new lookups, cancel others, or destroy
 * the handle.
 *
 * Not thread-safe: every function is for the loop thread of `loop`.
 */
#ifndef SL_KQUERY_H
#define SL_KQUERY_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "groupcheck.h"

typedef struct sl_kquery_s sl_kquery_t;

/* The metadata.max.age.ms the lookup client must run with (as a string for
 * rd_kafka_conf_set, and in ms): librdkafka 2.0.2 forgets a group
 * coordinator only once it went unused that long, and after a coordinator
 * moved kquery waits that long before asking the group again (kquery.c,
 * kquery_coord_moved).  It also bounds how old the client's cached topic
 * metadata gets, which costs a metadata request per lookup at most. */
#define SL_KQUERY_COORD_TTL    "2000"
#define SL_KQUERY_COORD_TTL_MS 2000

/* A lookup handle.  rk is the client every lookup uses (sluice passes a
 * client of its own that fetches nothing, clients.h: a client whose fetches
 * a broker throttles has its connection muted, lookups included); it is
 * borrowed and must outlive q; it must be configured with
 * metadata.max.age.ms = SL_KQUERY_COORD_TTL.  Its configuration shapes some
 * answers: with isolation.level=read_committed the "high" watermark is the last
 * stable offset.  Starts the worker threads.  Returns NULL and a message in
 * errstr on failure (handles it opened close on the loop's next turn, as after
 * sl_kquery_destroy).  Loop thread. */
sl_kquery_t *sl_kquery_new(uv_loop_t *loop, rd_kafka_t *rk, char *errstr,
                           size_t errstr_size);

/* Cancels every pending lookup (no callback runs after this), waits for the
 * worker calls still in flight (each bounded by what is left of its
 * timeout_ms), and frees q: its libuv handles are closed, so the memory
 * goes on the loop's next turn (run the loop before uv_loop_close).  After
 * it returns, no thread of q touches rk.  NULL is a no-op.  Loop thread;
 * may be called from a kquery callback. */
void sl_kquery_destroy(sl_kquery_t *q);

/* Cancels every pending lookup started with this opaque: their callbacks
 * will not run (the caller is about to free opaque).  Loop thread. */
void sl_kquery_cancel(sl_kquery_t *q, void *opaque);

/* Low and high watermark of a partition (rd_kafka_query_watermark_offsets
 * semantics: hi is the high watermark, or the last stable offset when rk
 * reads committed).  err is set (and lo, hi are -1) when they could not be
 * read, e.g. RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION. */
typedef void(sl_kquery_watermarks_cb)(void *opaque, rd_kafka_resp_err_t err,
                                      int64_t lo, int64_t hi);
/* Returns 0, or -1 on bad arguments (NULL q, topic or cb, partition < 0,
 * timeout_ms <= 0) or when q is shutting down.  Same for every lookup. */
int sl_kquery_watermarks(sl_kquery_t *q, const char *topic, int32_t partition,
                         int timeout_ms, sl_kquery_watermarks_cb *cb,
                         void *opaque);

/* Committed offsets of `group` go through rk, a consumer of that group
 * that never joins it (group.id = group, isolation.level=read_committed),
 * on a worker thread with rd_kafka_committed(): its own group coordinator,
 * found again when it moves, not the admin API, whose coordinator-bound
 * requests can abort the process in librdkafka 2.0.2 (kquery.c).  rk is
 * borrowed and must outlive q; NULL (the default) leaves every group to
 * the admin API.  Loop thread. */
void sl_kquery_set_offsets_client(sl_kquery_t *q, rd_kafka_t *rk,
                                  const char *group);

/* The offset committed by consumer group `group` for (topic, partition),
 * read with require_stable semantics (KIP-447): while a transaction that
 * carries offsets for this partition is pending, the broker answers
 * UNSTABLE_OFFSET_COMMIT and the lookup asks again (the admin API: every
 * 150 ms until timeout_ms; the offsets client: librdkafka does) — then err
 * is UNSTABLE_OFFSET_COMMIT or __TIMED_OUT.  offset is
 * RD_KAFKA_OFFSET_INVALID (-1001) when the group has no committed offset
 * for it, and on error. */
typedef void(sl_kquery_committed_cb)(void *opaque, rd_kafka_resp_err_t err,
                                     int64_t offset);
int sl_kquery_committed(sl_kquery_t *q, const char *group, const char *topic,
                        int32_t partition, int timeout_ms,
                        sl_kquery_committed_cb *cb, void *opaque);

/* Partition count of a topic: > 0, or 0 when the topic does not exist; err
 * set (and partition_cnt -1) when the broker could not be asked.  topic is
 * q's copy. */
typedef void(sl_kquery_partitions_cb)(void *opaque, rd_kafka_resp_err_t err,
                                      const char *topic, int partition_cnt);
int sl_kquery_partitions(sl_kquery_t *q, const char *topic, int timeout_ms,
                         sl_kquery_partitions_cb *cb, void *opaque);

/* The state and members of a consumer group (DescribeConsumerGroups): to
 * find out whether another live process holds our group.instance.id, and
 * whether some partition has no owner (groupcheck.h).  A group that does
 * not exist or is dead has no members: err 0, member_cnt 0, state DEAD (or
 * UNKNOWN).  On error, state is UNKNOWN. */
typedef void(sl_kquery_group_cb)(void *opaque, rd_kafka_resp_err_t err,
                                 rd_kafka_consumer_group_state_t state,
                                 const sl_groupcheck_member_t *members,
                                 int member_cnt);
int sl_kquery_describe_group(sl_kquery_t *q, const char *group, int timeout_ms,
                             sl_kquery_group_cb *cb, void *opaque);

/* The same from the classic DescribeGroups answer, on a worker thread: the
 * state, and each member's id, client id, host and assignment (parsed by
 * groupcheck.h); group_instance_id is always NULL (that answer lacks it).
 * For looks repeated while brokers may come and go: librdkafka 2.0.2's
 * admin API can abort the process then (kquery.c says how).  err
 * RD_KAFKA_RESP_ERR__BAD_MSG when an assignment could not be parsed. */
int sl_kquery_group_owners(sl_kquery_t *q, const char *group, int timeout_ms,
                           sl_kquery_group_cb *cb, void *opaque);

/* The largest record batch a topic accepts (its max.message.bytes, from
 * DescribeConfigs): max_bytes > 0, and dflt 1 when the topic does not set
 * it (the value is then the broker's message.max.bytes).  err set (and
 * max_bytes -1) when it could not be read: the topic does not exist,
 * TOPIC_AUTHORIZATION_FAILED without the DescribeConfigs ACL, a timeout.
 * topic is q's copy. */
typedef void(sl_kquery_max_bytes_cb)(void *opaque, rd_kafka_resp_err_t err,
                                     const char *topic, int64_t max_bytes,
                                     int dflt);
int sl_kquery_max_bytes(sl_kquery_t *q, const char *topic, int timeout_ms,
                        sl_kquery_max_bytes_cb *cb, void *opaque);

/* A cheap round trip to the cluster (a metadata request for the topics rk
 * already knows) to tell whether Kafka answers: err 0 and the round-trip
 * time, or an error after at most timeout_ms (rtt_ms -1).  For the "kafka
 * up" gauge and /readyz.  One worker is kept free of watermark lookups, so
 * a flood of those against a silent broker does not delay the probe. */
typedef void(sl_kquery_probe_cb)(void *opaque, rd_kafka_resp_err_t err,
                                 int64_t rtt_ms);
int sl_kquery_probe(sl_kquery_t *q, int timeout_ms, sl_kquery_probe_cb *cb,
                    void *opaque);

#endif
