/*
 * kafka.h — glue between librdkafka and the libuv loop, and small record
 * helpers shared by the runtime and the operators.
 *
 * Wake-ups: librdkafka writes a byte to a non-blocking pipe whenever one of
 * its queues goes from empty to non-empty (rd_kafka_queue_io_event_enable);
 * a uv_poll_t watches the pipe.  Because the byte is written only on that
 * transition, the owner must drain the queue until it is empty on every
 * wake-up — or, when it stops early to keep the loop responsive, keep
 * draining from a uv_idle_t until it is empty (sl_kwatch does both).
 */
#ifndef SL_KAFKA_H
#define SL_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

typedef struct sl_kwatch_s sl_kwatch_t;

/* Called on the loop thread when the queue may hold events.  It serves at
 * most `budget` events and returns how many it served; a return equal to the
 * budget means "call me again soon" (the watch keeps an idle handle running
 * until a call returns less). */
typedef int(sl_kwatch_cb)(void *opaque, int budget);

/* Watches rkqu (not owned; the caller destroys it after sl_kwatch_close).
 * Returns NULL and an error in errstr on failure. */
sl_kwatch_t *sl_kwatch_new(uv_loop_t *loop, rd_kafka_queue_t *rkqu,
                           sl_kwatch_cb *cb, void *opaque, char *errstr,
                           size_t errstr_size);
/* Triggers a drain from the loop soon (after assignments change etc.). */
void sl_kwatch_kick(sl_kwatch_t *w);
/* Stops watching and frees w (asynchronously, via uv_close); NULL ok. */
void sl_kwatch_close(sl_kwatch_t *w);

/* librdkafka log lines into sl_log. Set with rd_kafka_conf_set_log_cb. */
void sl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf);

/* Logs a client error (not fatal) as a warning, at most once every 30 s
 * for the same client and error; the next line says how many were
 * suppressed.  Loop thread. */
void sl_kafka_log_error(const char *who, rd_kafka_resp_err_t err,
                        const char *reason);

/* Sets a property on conf; on failure logs and returns -1. */
int sl_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, char *errstr, size_t errstr_size);

/* The value of header `name` of message m: 0 and the value in *valp, *sizep if
 * present (the last one wins when repeated), -1 if absent. */
int sl_kafka_header(const rd_kafka_message_t *m, const char *name,
                    const void **valp, size_t *sizep);

/* Partition count of topic as seen by rk (a metadata request, blocking up to
 * timeout_ms); 0 if the topic does not exist, -1 on error. */
int sl_kafka_partition_count(rd_kafka_t *rk, const char *topic, int timeout_ms);

#endif
