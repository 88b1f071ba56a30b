/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kwatch.c — a librdkafka queue watched by the libuv loop (see kwatch.h).
 */
#include "kwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Events served per wake-up before yielding to the rest of the loop. */
#define SL_KWATCH_BUDGET 2000

struct sl_kwatch_s {
        uv_poll_t poll;
        uv_idle_t idle;
        int fds[2];
        int closing;
        int pending_close; /* handles still to close */
        rd_kafka_queue_t *rkqu;
        sl_kwatch_cb *cb;
        void *opaque;
};

static void kwatch_on_idle(uv_idle_t *idle);

static void kwatch_drain(sl_kwatch_t *w) {
        int n = w->cb(w->opaque, SL_KWATCH_BUDGET);
        if (w->closing)
                return; /* closed by its own callback */
        if (n >= SL_KWATCH_BUDGET) {
                if (!uv_is_active((uv_handle_t *)&w->idle))
                        uv_idle_start(&w->idle, kwatch_on_idle);
        } else if (uv_is_active((uv_handle_t *)&w->idle)) {
                uv_idle_stop(&w->idle);
        }
}

static void kwatch_on_idle(uv_idle_t *idle) {
        sl_kwatch_t *w = idle->data;
        kwatch_drain(w);
}

static void kwatch_on_poll(uv_poll_t *poll, int status, int events) {
        sl_kwatch_t *w = poll->data;
        char buf[256];
        (void)status;
        (void)events;
        /* Empty the pipe first: a byte written after this read and before
         * the drain below wakes us again, which is harmless. */
        while (read(w->fds[0], buf, sizeof(buf)) > 0)
                ;
        kwatch_drain(w);
}

sl_kwatch_t *sl_kwatch_new(uv_loop_t *loop, rd_kafka_queue_t *rkqu,
                           sl_kwatch_cb *cb, void *opaque, char *errstr,
                           size_t errstr_size) {
        sl_kwatch_t *w = sl_calloc(1, sizeof(*w));
        if (pipe2(w->fds, O_NONBLOCK | O_CLOEXEC) == -1) {
                snprintf(errstr, errstr_size, "pipe: %s", strerror(errno));
                free(w);
                return NULL;
        }
        w->rkqu = rkqu;
        w->cb = cb;
        w->opaque = opaque;
        uv_poll_init(loop, &w->poll, w->fds[0]);
        uv_idle_init(loop, &w->idle);
        w->poll.data = w;
        w->idle.data = w;
        uv_poll_start(&w->poll, UV_READABLE, kwatch_on_poll);
        rd_kafka_queue_io_event_enable(rkqu, w->fds[1], "1", 1);
        /* Events queued before the watch existed never wrote a byte. */
        sl_kwatch_kick(w);
        return w;
}

void sl_kwatch_kick(sl_kwatch_t *w) {
        if (w && !w->closing && !uv_is_active((uv_handle_t *)&w->idle))
                uv_idle_start(&w->idle, kwatch_on_idle);
}

static void kwatch_on_close(uv_handle_t *h) {
        sl_kwatch_t *w = h->data;
        if (--w->pending_close == 0) {
                close(w->fds[0]);
                close(w->fds[1]);
                free(w);
        }
}

void sl_kwatch_close(sl_kwatch_t *w) {
        if (!w || w->closing)
                return;
        w->closing = 1;
        rd_kafka_queue_io_event_enable(w->rkqu, -1, NULL, 0);
        w->pending_close = 2;
        uv_close((uv_handle_t *)&w->poll, kwatch_on_close);
        uv_close((uv_handle_t *)&w->idle, kwatch_on_close);
}
