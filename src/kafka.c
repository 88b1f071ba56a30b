/*
 * kafka.c — librdkafka ↔ libuv glue (see kafka.h).
 */
#include "kafka.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
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

void sl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf) {
        (void)rk;
        /* [kafka] goes to every client, so a consumer property is always
         * "ignored by this producer instance" and vice versa: expected,
         * not worth a warning on every start. */
        if (!strcmp(fac, "CONFWARN") &&
            (strstr(buf, "is a consumer property and will be ignored") ||
             strstr(buf, "is a producer property and will be ignored")))
                level = LOG_DEBUG;
        sl_log(level, fac, "%s", buf);
}

/* Recently logged client errors, to say each at most once a window. */
#define SL_KAFKA_ERRLOG_SLOTS 32
#define SL_KAFKA_ERRLOG_MS    30000

static struct {
        char who[24];
        rd_kafka_resp_err_t err;
        int64_t logged_ms;
        int suppressed;
} errlog[SL_KAFKA_ERRLOG_SLOTS];

void sl_kafka_log_error(const char *who, rd_kafka_resp_err_t err,
                        const char *reason) {
        int64_t now = sl_now_ms();
        int slot = -1, oldest = 0;
        for (int i = 0; i < SL_KAFKA_ERRLOG_SLOTS; i++) {
                if (errlog[i].err == err && !strcmp(errlog[i].who, who)) {
                        slot = i;
                        break;
                }
                if (errlog[i].logged_ms < errlog[oldest].logged_ms)
                        oldest = i;
        }
        if (slot >= 0 && now - errlog[slot].logged_ms < SL_KAFKA_ERRLOG_MS) {
                errlog[slot].suppressed++;
                return;
        }
        if (slot < 0) {
                slot = oldest;
                snprintf(errlog[slot].who, sizeof(errlog[slot].who), "%s", who);
                errlog[slot].err = err;
                errlog[slot].suppressed = 0;
        }
        if (errlog[slot].suppressed)
                sl_log(LOG_WARNING, "KAFKA",
                       "%s: %s: %s (and %d more like it in the last %d s)", who,
                       rd_kafka_err2name(err), reason, errlog[slot].suppressed,
                       SL_KAFKA_ERRLOG_MS / 1000);
        else
                sl_log(LOG_WARNING, "KAFKA", "%s: %s: %s", who,
                       rd_kafka_err2name(err), reason);
        errlog[slot].logged_ms = now;
        errlog[slot].suppressed = 0;
}

int sl_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, char *errstr, size_t errstr_size) {
        if (rd_kafka_conf_set(conf, name, value, errstr, errstr_size) !=
            RD_KAFKA_CONF_OK)
                return -1;
        return 0;
}

int sl_kafka_header(const rd_kafka_message_t *m, const char *name,
                    const void **valp, size_t *sizep) {
        rd_kafka_headers_t *hdrs;
        if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        if (rd_kafka_header_get_last(hdrs, name, valp, sizep) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        return 0;
}

int sl_kafka_partition_count(rd_kafka_t *rk, const char *topic,
                             int timeout_ms) {
        const struct rd_kafka_metadata *md;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        int cnt;
        rd_kafka_resp_err_t err =
            rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
        rd_kafka_topic_destroy(rkt);
        if (err)
                return -1;
        if (md->topic_cnt != 1 ||
            md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                cnt = 0;
        else if (md->topics[0].err)
                cnt = -1;
        else
                cnt = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
        return cnt;
}
