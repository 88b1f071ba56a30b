/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clients.c — the Kafka clients of the process (see clients.h).
 */
#include "clients.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acls.h"
#include "authz.h"
#include "cli.h"
#include "commit.h"
#include "health.h"
#include "input.h"
#include "kafka.h"
#include "log.h"
#include "member.h"
#include "parts.h"
#include "pipeline.h"
#include "reader.h"
#include "targets.h"
#include "util.h"

/* The lookup client gives up on a silent connection after this long at
 * most (never raised above the configured value): its requests all have
 * deadlines of 2 to 5 s, and a broker whose connection is torn down is no
 * longer picked by the probe (health.c). */
#define SL_CLIENTS_LOOKUP_SOCKET_TMO_MS 5000

struct sl_clients_s {
        sl_runtime_t *rt;
        /* The lookup client: kquery's lookups (rt->kq); its events
         * (errors) come on lookup_q, served by lookup_w. */
        rd_kafka_t *lookup;
        rd_kafka_queue_t *lookup_q;
        sl_kwatch_t *lookup_w;
        /* A consumer of the group that never joins it: kquery's committed
         * offsets (sl_kquery_set_offsets_client); polled each second. */
        rd_kafka_t *offsets;
};

/* ------------------------------------------------------------------ */
/* Errors.                                                              */

/* Errors of the consumer, the reader and the lookup and offsets clients
 * (the producers' come as events to txn.c). */
static void clients_error_cb(rd_kafka_t *rk, int err, const char *reason,
                             void *opaque) {
        sl_runtime_t *rt = opaque;
        const sl_clients_t *cl = rt->clients;
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
                if (rk == rt->consumer)
                        sl_input_consumer_fatal(rt);
                else
                        sl_log(LOG_ERR, "KAFKA", "%s: fatal error: %s",
                               rd_kafka_name(rk), reason);
                return;
        }
        /* The lookup and offsets clients connect to few nodes (one may be
         * all they know of): the probe speaks for them. */
        if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN &&
            (rk == rt->consumer || rk == rt->reader))
                sl_health_kafka_up(rt, 0, reason, sl_now_ms());
        /* The lookup client's topic refusals are a target's, answered
         * where it was looked up (targets.c). */
        if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
            (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
             rk != cl->lookup)) {
                sl_authz_fetch_refused(rt, rk == rt->reader || rk == cl->lookup,
                                       (rd_kafka_resp_err_t)err, NULL, reason);
                return;
        }
        sl_kafka_log_error(rk == rt->reader    ? "reader"
                           : rk == cl->lookup  ? "lookups"
                           : rk == cl->offsets ? "offsets"
                                               : "consumer",
                           err, reason);
}

/* The lookup client's events: its errors (through clients_error_cb). */
static int clients_serve_lookup(void *opaque, int budget) {
        sl_runtime_t *rt = opaque;
        (void)budget;
        rd_kafka_poll(rt->clients->lookup, 0);
        return 0;
}

/* ------------------------------------------------------------------ */
/* Configurations.                                                      */

static rd_kafka_conf_t *clients_kconf(sl_runtime_t *rt, char *errstr,
                                      size_t errstr_size) {
        rd_kafka_conf_t *kc = sl_conf_rdkafka(rt->conf, errstr, errstr_size);
        if (!kc)
                return NULL;
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        rd_kafka_conf_set_error_cb(kc, clients_error_cb);
        rd_kafka_conf_set_opaque(kc, rt);
        return kc;
}

#define SET(kc, k, v)                                                          \
        do {                                                                   \
                if (sl_kafka_conf_set(kc, k, v, errstr, errstr_size) == -1) {  \
                        rd_kafka_conf_destroy(kc);                             \
                        return NULL;                                           \
                }                                                              \
        } while (0)

/* sluice's own defaults for one client (config.c, sl_kafka_defaults),
 * where [kafka] does not set them; -1 (kc destroyed) on error. */
static int clients_defaults(sl_runtime_t *rt, rd_kafka_conf_t *kc,
                            sl_kafka_client_t client, char *errstr,
                            size_t errstr_size) {
        for (size_t i = 0; i < sl_kafka_defaults_cnt; i++) {
                const sl_kafka_default_t *d = &sl_kafka_defaults[i];
                if (d->client != client ||
                    sl_kafka_user_value(rt->conf, d->name))
                        continue;
                if (sl_kafka_conf_set(kc, d->name, d->value, errstr,
                                      errstr_size) == -1) {
                        rd_kafka_conf_destroy(kc);
                        return -1;
                }
        }
        return 0;
}

rd_kafka_conf_t *sl_clients_producer_conf(void *opaque, int idx, char *errstr,
                                          size_t errstr_size) {
        sl_runtime_t *rt = opaque;
        rd_kafka_conf_t *kc;
        char txnid[512], buf[64];
        if (!(kc = clients_kconf(rt, errstr, errstr_size)))
                return NULL;
        sl_runtime_txn_id(rt, idx, txnid, sizeof(txnid));
        SET(kc, "transactional.id", txnid);
        snprintf(buf, sizeof(buf), "%lld",
                 (long long)rt->conf->transaction_timeout_ms);
        SET(kc, "transaction.timeout.ms", buf);
        SET(kc, "client.id", rt->client_id);
        if (clients_defaults(rt, kc, SL_KAFKA_PRODUCER, errstr, errstr_size) ==
            -1)
                return NULL;
        /* The largest record any written topic accepts (targets.h): the
         * default of librdkafka, 1,000,000, is below Kafka's. */
        if (!sl_kafka_user_value(rt->conf, "message.max.bytes")) {
                snprintf(buf, sizeof(buf), "%" PRId64,
                         SL_MIN(rt->producer_max_bytes, 1000000000));
                SET(kc, "message.max.bytes", buf);
        }
        /* A batch of many records must fit the smallest topic too: its
         * limit less the batch's header and some slack (librdkafka counts
         * framing its own way).  One record larger than batch.size still
         * goes, alone in its batch. */
        if (!sl_kafka_user_value(rt->conf, "batch.size") &&
            rt->max_bytes_floor - 128 < 1000000) {
                snprintf(buf, sizeof(buf), "%" PRId64,
                         SL_MAX(rt->max_bytes_floor - 128, 1));
                SET(kc, "batch.size", buf);
        }
        SET(kc, "delivery.report.only.error",
            sl_pipeline_tracks_deliveries(rt) ? "false" : "true");
        return kc;
}

rd_kafka_conf_t *sl_clients_consumer_conf(void *opaque, char *errstr,
                                          size_t errstr_size) {
        sl_runtime_t *rt = opaque;
        rd_kafka_conf_t *kc;
        if (!(kc = clients_kconf(rt, errstr, errstr_size)))
                return NULL;
        SET(kc, "group.id", rt->conf->app_id);
        if (rt->conf->instance_id && *rt->conf->instance_id)
                SET(kc, "group.instance.id", rt->conf->instance_id);
        SET(kc, "partition.assignment.strategy", "cooperative-sticky");
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "enable.auto.offset.store", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "auto.offset.reset", "earliest");
        SET(kc, "client.id", rt->client_id);
        if (clients_defaults(rt, kc, SL_KAFKA_CONSUMER, errstr, errstr_size) ==
            -1)
                return NULL;
        rd_kafka_conf_set_rebalance_cb(kc, sl_member_rebalance_cb);
        return kc;
}

/* The lookup client: read_committed, so that a watermark's "high" is the
 * last stable offset; it joins no group and fetches nothing.  It has a
 * group.id all the same: librdkafka 2.0.2 passes a committed-offset
 * lookup's coordinator errors (NOT_COORDINATOR, as after a broker pause)
 * to the client's group handle, which a consumer without group.id lacks
 * (a NULL dereference; 0403 under load crashed so). */
static rd_kafka_conf_t *clients_lookup_conf(sl_runtime_t *rt, char *errstr,
                                            size_t errstr_size) {
        rd_kafka_conf_t *kc;
        if (!(kc = clients_kconf(rt, errstr, errstr_size)))
                return NULL;
        SET(kc, "group.id", SL_ACLS_REBUILD_GROUP); /* acls.h */
        SET(kc, "enable.auto.commit", "false");
        SET(kc, "isolation.level", "read_committed");
        SET(kc, "client.id", rt->client_id);
        return kc;
}

/* The lookup client's socket.timeout.ms: SL_CLIENTS_LOOKUP_SOCKET_TMO_MS
 * unless the configured one is lower. */
static int clients_lookup_socket_timeout(rd_kafka_conf_t *kc, char *errstr,
                                         size_t errstr_size) {
        char buf[32];
        size_t size = sizeof(buf);
        if (rd_kafka_conf_get(kc, "socket.timeout.ms", buf, &size) ==
                RD_KAFKA_CONF_OK &&
            atoll(buf) <= SL_CLIENTS_LOOKUP_SOCKET_TMO_MS)
                return 0;
        snprintf(buf, sizeof(buf), "%d", SL_CLIENTS_LOOKUP_SOCKET_TMO_MS);
        return sl_kafka_conf_set(kc, "socket.timeout.ms", buf, errstr,
                                 errstr_size);
}

/* The reader: the lookup client's configuration (one group.id,
 * read_committed, nothing committed) plus what fetching needs, and its
 * own client.id, the one name an operator can set a rebuild quota on
 * (docs/operations.md, "Kafka faults"). */
static rd_kafka_conf_t *clients_reader_conf(sl_runtime_t *rt, char *errstr,
                                            size_t errstr_size) {
        rd_kafka_conf_t *kc;
        if (!(kc = clients_lookup_conf(rt, errstr, errstr_size)))
                return NULL;
        SET(kc, "enable.auto.offset.store", "false");
        SET(kc, "enable.partition.eof", "true");
        SET(kc, "auto.offset.reset", "earliest");
        SET(kc, "client.id", "sluice-rebuild");
        /* Rebuild ends on partition EOF: do not let the broker hold an
         * empty fetch for long. */
        SET(kc, "fetch.wait.max.ms", "10");
        /* The reader also reads payloads back by offset (delay with
         * payload_topic): a seek to one record must not pull 16 MiB per
         * partition (1 MiB: bench/NOTES.md, "The reader's fetch size").
         * librdkafka 2.0 stops fetching a partition once
         * queued.min.messages are queued and looks again only a second
         * later: let a rebuild prefetch generously (it is transient, and
         * bounded by kbytes; 16 MiB there made a rebuild 3x slower). */
        SET(kc, "fetch.max.bytes", "104857600");
        SET(kc, "queued.min.messages", "1000000");
        SET(kc, "queued.max.messages.kbytes", "262144");
        SET(kc, "max.partition.fetch.bytes", "1048576");
        return kc;
}
#undef SET

/* ------------------------------------------------------------------ */
/* The clients that live as long as the process.                       */

/* A new consumer from kc (consumed, whatever the outcome), or NULL. */
static rd_kafka_t *clients_consumer(rd_kafka_conf_t *kc, char *errstr,
                                    size_t errstr_size) {
        rd_kafka_t *rk;
        if (!kc)
                return NULL;
        if (!(rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, errstr_size)))
                rd_kafka_conf_destroy(kc);
        return rk;
}

sl_clients_t *sl_clients_new(sl_runtime_t *rt, char *errstr,
                             size_t errstr_size) {
        sl_clients_t *cl = sl_calloc(1, sizeof(*cl));
        rd_kafka_conf_t *kc;

        cl->rt = rt;
        rt->clients = cl;
        if (!(rt->reader =
                  clients_consumer(clients_reader_conf(rt, errstr, errstr_size),
                                   errstr, errstr_size)))
                goto fail;
        rt->reader_q = rd_kafka_queue_get_consumer(rt->reader);
        rd_kafka_poll_set_consumer(rt->reader);
        if (!(kc = clients_lookup_conf(rt, errstr, errstr_size)))
                goto fail;
        /* Its group lookups must see a moved coordinator (kquery.h). */
        if (sl_kafka_conf_set(kc, "metadata.max.age.ms", SL_KQUERY_COORD_TTL,
                              errstr, errstr_size) == -1 ||
            clients_lookup_socket_timeout(kc, errstr, errstr_size) == -1) {
                rd_kafka_conf_destroy(kc);
                goto fail;
        }
        if (!(cl->lookup = clients_consumer(kc, errstr, errstr_size)))
                goto fail;
        cl->lookup_q = rd_kafka_queue_get_main(cl->lookup);
        if (!(cl->lookup_w =
                  sl_kwatch_new(rt->loop, cl->lookup_q, clients_serve_lookup,
                                rt, errstr, errstr_size)))
                goto fail;
        if (!(rt->kq =
                  sl_kquery_new(rt->loop, cl->lookup, errstr, errstr_size)))
                goto fail;
        /* Committed offsets through a consumer of the group (kquery.h). */
        if (!(kc = clients_lookup_conf(rt, errstr, errstr_size)))
                goto fail;
        if (sl_kafka_conf_set(kc, "group.id", rt->conf->app_id, errstr,
                              errstr_size) == -1) {
                rd_kafka_conf_destroy(kc);
                goto fail;
        }
        if (!(cl->offsets = clients_consumer(kc, errstr, errstr_size)))
                goto fail;
        sl_kquery_set_offsets_client(rt->kq, cl->offsets, rt->conf->app_id);
        return cl;
fail:
        sl_clients_destroy(cl);
        return NULL;
}

int sl_clients_watch_reader(sl_runtime_t *rt, char *errstr,
                            size_t errstr_size) {
        rt->reader_w = sl_kwatch_new(rt->loop, rt->reader_q, sl_reader_serve,
                                     rt, errstr, errstr_size);
        return rt->reader_w ? 0 : -1;
}

void sl_clients_destroy(sl_clients_t *cl) {
        sl_runtime_t *rt;
        if (!cl)
                return;
        rt = cl->rt;
        sl_kwatch_close(rt->reader_w);
        rt->reader_w = NULL;
        sl_kquery_destroy(rt->kq);
        rt->kq = NULL;
        if (cl->offsets)
                rd_kafka_destroy(cl->offsets);
        sl_kwatch_close(cl->lookup_w);
        if (cl->lookup_q)
                rd_kafka_queue_destroy(cl->lookup_q);
        if (cl->lookup)
                rd_kafka_destroy(cl->lookup);
        if (rt->reader_q)
                rd_kafka_queue_destroy(rt->reader_q);
        rt->reader_q = NULL;
        if (rt->reader) {
                rd_kafka_consumer_close(rt->reader);
                rd_kafka_destroy(rt->reader);
        }
        rt->reader = NULL;
        rt->clients = NULL;
        free(cl);
}

/* Stamps the consumer's "the application polled" time without taking
 * anything from its queue (a batch of no messages).  librdkafka leaves the
 * group when the application has not polled for max.poll.interval.ms (5 min
 * by default), and the loop polls the consumer only when its queue wakes
 * it: an input that stays quiet that long, or one paused at a cap, cost a
 * rebalance and a rebuild of every partition each interval ("Application
 * maximum poll interval exceeded ... leaving group", then "revoking N
 * partitions (lost)").  The loop turning is what alive means here: a
 * stalled loop stops these stamps too, and /healthz says so. */
void sl_clients_tick(sl_runtime_t *rt) {
        rd_kafka_message_t *none[1];
        if (rt->consumer && rt->consumer_q)
                (void)rd_kafka_consume_batch_queue(rt->consumer_q, 0, none, 0);
        if (rt->clients->offsets)
                rd_kafka_poll(rt->clients->offsets, 0); /* its errors */
}

/* ------------------------------------------------------------------ */
/* The transaction's clients (txn.h).                                   */

void sl_clients_ready(void *opaque, rd_kafka_t *const *producers,
                      int producer_cnt, rd_kafka_t *consumer) {
        sl_runtime_t *rt = opaque;
        rd_kafka_resp_err_t err;
        char errstr[256];

        rt->producer_cnt = SL_MIN(producer_cnt, SL_TXN_PRODUCERS_MAX);
        for (int i = 0; i < rt->producer_cnt; i++)
                rt->producers[i] = producers[i];
        rt->turn = 0;
        rt->producer = producers[0];
        rt->consumer = consumer;
        if (sl_input_attach(rt, errstr, sizeof(errstr)) == -1)
                sl_assert(!"the consumer's queue cannot be watched");
        sl_targets_warm(rt);
        if ((err = sl_member_subscribe(rt))) {
                sl_log(LOG_CRIT, "INIT", "subscribe: %s",
                       rd_kafka_err2str(err));
                sl_runtime_exit(rt, SL_EXIT_FAIL);
                return;
        }
        sl_log(LOG_NOTICE, "INIT", "Kafka clients ready; joining group %s%s%s",
               rt->conf->app_id,
               rt->conf->instance_id && *rt->conf->instance_id ? " as " : "",
               rt->conf->instance_id ? rt->conf->instance_id : "");
        sl_health_update_ready(rt);
}

void sl_clients_turn(void *opaque, int idx) {
        sl_runtime_t *rt = opaque;
        if (idx < rt->producer_cnt) {
                rt->turn = idx;
                rt->producer = rt->producers[idx];
        }
}

void sl_clients_lost(void *opaque) {
        sl_runtime_t *rt = opaque;
        rt->tracked_inflight = 0; /* their reports went with the clients */
        sl_outbox_clear(rt->outbox);
        sl_commit_lost(rt);
        sl_member_lost(rt);
        sl_pipeline_drop_tasks(rt);
        for (int i = 0; i < rt->pipeline_cnt; i++)
                sl_parts_reset(&rt->pipelines[i]);
        sl_input_detach(rt);
        sl_targets_cool(rt);
        rt->consumer = NULL;
        rt->producer = NULL;
        for (int i = 0; i < SL_TXN_PRODUCERS_MAX; i++)
                rt->producers[i] = NULL;
        rt->producer_cnt = 0;
        rt->turn = 0;
        sl_health_update_ready(rt);
}
