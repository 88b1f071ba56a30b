/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kwatch.h — a librdkafka queue watched by the libuv loop.
 *
 * Wake-ups: librdkafka writes a byte to a non-blocking pipe whenever one of
 * its queues goes from empty to non-empty (rd_kafka_queue_io_event_enable);
 * a uv_poll_t watches the pipe.  Because the byte is written only on that
 * transition, the owner must drain the queue until it is empty on every
 * wake-up — or, when it stops early to keep the loop responsive, keep
 * draining from a uv_idle_t until it is empty (sl_kwatch does both).
 * Loop thread only.
 */
#ifndef SL_KWATCH_H
#define SL_KWATCH_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <uv.h>

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

#endif
