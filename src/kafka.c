/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka.c — small librdkafka helpers (see kafka.h).
 */
#include "kafka.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

/* sl_kafka_denied_topic: written by librdkafka's threads, read by the
 * loop. */
static pthread_mutex_t denied_lock = PTHREAD_MUTEX_INITIALIZER;
static char denied_topic[256];
static uint64_t denied_seq;

static void note_denied_topic(const char *buf) {
        const char *q = strstr(buf, "partition \""), *end;
        if (!q || !strstr(buf, "authorization failed"))
                return;
        q += strlen("partition \"");
        if (!(end = strchr(q, '"')) || end - q >= (int)sizeof(denied_topic))
                return;
        pthread_mutex_lock(&denied_lock);
        memcpy(denied_topic, q, (size_t)(end - q));
        denied_topic[end - q] = '\0';
        denied_seq++;
        pthread_mutex_unlock(&denied_lock);
}

uint64_t sl_kafka_denied_topic(char *buf, size_t size) {
        uint64_t seq;
        pthread_mutex_lock(&denied_lock);
        snprintf(buf, size, "%s", denied_topic);
        seq = denied_seq;
        pthread_mutex_unlock(&denied_lock);
        return seq;
}

void sl_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf) {
        (void)rk;
        if (!strcmp(fac, "ADDPARTS"))
                note_denied_topic(buf);
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

const char *sl_kafka_user_value(const sl_conf_t *conf, const char *key) {
        const char *v = NULL;
        for (int i = 0; i < conf->kafka_cnt; i++)
                if (!strcmp(conf->kafka[i].key, key))
                        v = conf->kafka[i].value;
        return v;
}

int sl_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, char *errstr, size_t errstr_size) {
        if (rd_kafka_conf_set(conf, name, value, errstr, errstr_size) !=
            RD_KAFKA_CONF_OK)
                return -1;
        return 0;
}

rd_kafka_t *sl_kafka_client_new(const sl_conf_t *conf, rd_kafka_type_t type,
                                const char *const *kv, char *errstr,
                                size_t errstr_size) {
        rd_kafka_conf_t *kc = sl_conf_rdkafka(conf, errstr, errstr_size);
        rd_kafka_t *rk;

        if (!kc)
                return NULL;
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        for (; kv && kv[0]; kv += 2)
                if (sl_kafka_conf_set(kc, kv[0], kv[1], errstr, errstr_size)) {
                        rd_kafka_conf_destroy(kc);
                        return NULL;
                }
        if (!(rk = rd_kafka_new(type, kc, errstr, errstr_size)))
                rd_kafka_conf_destroy(kc);
        return rk;
}

rd_kafka_t *sl_kafka_reader_new(const sl_conf_t *conf, const char *group_id,
                                char *errstr, size_t errstr_size) {
        const char *const kv[] = {"group.id",
                                  group_id,
                                  "enable.auto.commit",
                                  "false",
                                  "isolation.level",
                                  "read_committed",
                                  "auto.offset.reset",
                                  "earliest",
                                  "enable.partition.eof",
                                  "true",
                                  NULL};
        rd_kafka_t *rk = sl_kafka_client_new(conf, RD_KAFKA_CONSUMER, kv,
                                             errstr, errstr_size);

        if (rk)
                rd_kafka_poll_set_consumer(rk);
        return rk;
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
        else if (md->topics[0].err ==
                 RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                cnt = SL_KAFKA_PARTS_REFUSED;
        else if (md->topics[0].err)
                cnt = -1;
        else
                cnt = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
        return cnt;
}
