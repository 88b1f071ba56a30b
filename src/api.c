/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.c — the HTTP/JSON API (see api.h for the routes and the contract).
 *
 * DESIGN
 *
 * One request, on its connection's thread (libmicrohttpd's thread per
 * connection, so a request may block while it waits):
 *
 *   auth, size ──► route ──► write: validate ──► produce ──► wait for the
 *                    │                            (partition    delivery
 *                    │                             of the key)  report
 *                    └─────► lookup: queue ──uv_async──► loop: describe()
 *                                 │ UNOWNED                   │
 *                                 ▼                           ▼
 *                            owner map ──► forward   cond signal, answer
 *
 * The routes other than GET /v1 are the operators' (apireq.h, opdef.h): a
 * lookup is answered by describe() on the owner; a write's record and
 * answer come from its route's pure build() and answer(), and this file
 * does the same for every write: the target check, the key's partition of
 * the route's topic, the produce and the wait for its report.
 *
 * Every wait is bounded by api_timeout and answered 503 with Retry-After
 * when it runs out; the waiter's record is then abandoned, and freed by
 * whoever answers it later (the delivery report, or the loop), under the
 * one lock of the API.
 *
 * The owner map comes from DescribeConsumerGroups on the API's producer
 * (an admin request any client may make; blocking here is fine, this is
 * not the loop): each member's assignment names its partitions, and its
 * client.id ends in "@HOST:PORT", the API address it advertises.  The map
 * is kept for OWNER_TTL_MS; a miss refreshes it at most every
 * OWNER_MIN_REFRESH_MS.
 *
 * Anyone who can join the group can advertise any address, so a forwarded
 * request carries nothing of the client's (its bearer token stays here)
 * but this instance's peer credential (peerauth.h: an HMAC-SHA256 with
 * api_peer_secret over the request, the owner's address, a timestamp and
 * a nonce), and the owner's answer is passed on only when it is signed
 * for that nonce; an unsigned one is a 502.  Without a secret nothing is
 * forwarded (421).  The receiving side (serve_peer) checks the credential,
 * the clock and the nonce (a replay guard under a lock of its own), serves
 * lookups only, and signs every answer it gives past that point.  A
 * forwarded request is never forwarded again, so two instances that
 * disagree about the owner during a rebalance answer 503 rather than
 * bounce a request between them.
 *
 * Partition counts (input, rates, targets) come from the producer's
 * metadata, kept for META_TTL_MS in a topic cache of META_CAPACITY
 * entries (topiccache.h: a PUT's target is the client's choice, and made-up
 * names, which do not exist, are evicted first), behind a lock of its own.
 * A name the cache has no answer for yet (every lookup slot busy, or its
 * first lookup in flight on another thread) is looked up without it.
 *
 * Connections are guarded (connguard.h) through libmicrohttpd's connection
 * notifications, as on the metrics address: the request is all in (BUSY)
 * once the access handler has its body, or has answered early (401, 413),
 * and waiting again once NOTIFY_COMPLETED says the answer went out.  The
 * guard's limits, not libmicrohttpd's, decide who goes when the server is
 * full (libmicrohttpd's limit is above them, sl_connguard_mhd_limit());
 * libmicrohttpd's 30 s inactivity timeout still bounds an answer nobody
 * reads.
 */
#include "api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "apireplay.h"
#include "apireq.h"
#include "connguard.h"
#include "describe.h"
#include "groupcheck.h"
#include "http.h"
#include "kafka.h"
#include "log.h"
#include "partitioner.h"
#include "peerauth.h"
#include "recsize.h"
#include "topiccache.h"
#include "util.h"

#define OWNER_TTL_MS         2000
#define OWNER_MIN_REFRESH_MS 300
#define META_TTL_MS          10000
#define META_CAPACITY        256
#define META_LOOKUPS         8
#define STR_(x)              #x
#define STR(x)               STR_(x)
#define FORWARD_MAX_BYTES    (8 * 1024 * 1024)
#define FORWARDED_HDR        "X-Sluice-Forwarded"
#define ANSWERED_HDR         SL_APIREQ_ANSWERED_HDR
#define RETRY_AFTER          "1"

/* ------------------------------------------------------------------ */
/* Routes.                                                              */

int sl_api_route_cnt(void) {
        return sl_apireq_route_cnt();
}

void sl_api_route(int i, const char **method, const char **path) {
        const sl_route_t *r = sl_apireq_route(i);
        *method = r->method;
        *path = r->path;
}

/* ------------------------------------------------------------------ */
/* Tokens.                                                              */

static int token_eq(const char *given, size_t glen, const char *tok) {
        size_t tlen = strlen(tok);
        unsigned diff = glen != tlen;
        /* Always walks the whole token: the time depends on the token's
         * length only, never on where the first difference lies. */
        for (size_t i = 0; i < tlen; i++)
                diff |= (unsigned)(uint8_t)(i < glen ? given[i] : 0) ^
                        (unsigned)(uint8_t)tok[i];
        return diff == 0;
}

int sl_api_token_ok(const char *auth, char *const *tokens, int token_cnt) {
        int ok = 0;
        size_t glen;
        if (!auth || strncasecmp(auth, "Bearer ", 7))
                return 0;
        auth += 7;
        while (*auth == ' ')
                auth++;
        glen = strlen(auth);
        while (glen && (auth[glen - 1] == ' ' || auth[glen - 1] == '\t'))
                glen--;
        if (!glen)
                return 0;
        for (int i = 0; i < token_cnt; i++)
                ok |= token_eq(auth, glen, tokens[i]);
        return ok;
}

/* ------------------------------------------------------------------ */
/* The API's state.                                                     */

/* A wait for the loop or for a delivery report.  Guarded by api->lock. */
typedef struct waiter_s {
        pthread_cond_t cond;
        int done;
        int abandoned; /* the requester gave up: the answerer frees it */
        /* lookup */
        int pipeline;
        int32_t partition;
        char *key;
        size_t keylen;
        int res; /* sl_api_lookup_t, or -1: shutting down */
        char *json;
        /* delivery */
        rd_kafka_resp_err_t err;
        int64_t offset;
} waiter_t;

typedef struct owner_s {
        char *topic;
        int32_t partition;
        char *addr; /* "host:port", or "" when the member advertises none */
} owner_t;

#define SL_META_FORBIDDEN SL_TOPICCACHE_FORBIDDEN

/* Per pipeline: what its operator's write routes read (opdef.h,
 * api_new). */
typedef struct api_pipe_s {
        const sl_pipeline_conf_t *pc;
        void *data;
} api_pipe_t;

struct sl_api_s {
        const sl_conf_t *conf;
        struct MHD_Daemon *daemon;
        sl_connguard_t *guard;
        sl_connguard_metrics_t guard_m;
        sl_log_budget_t log_budget;
        int port;
        char advertised[300];
        char group[256];
        char **tokens;
        int token_cnt;
        char *tls_cert, *tls_key;
        /* With TLS on: what a forwarded lookup trusts (api_tls_ca, else
         * the certificates of api_tls_cert).  Shared by the connections'
         * threads: GnuTLS credentials are read-only once set. */
        gnutls_certificate_credentials_t tls_client;
        atomic_llong tls_warned_ms;
        /* api_peer_secret (peerauth.h); len 0: lookups owned elsewhere
         * are not forwarded, and no forwarded request is taken. */
        char *peer_secret;
        sl_peerauth_key_t peer_key;
        pthread_mutex_t replay_lock;
        sl_peerauth_replay_t *replay;
        atomic_llong peer_warned_ms, answer_warned_ms;
        sl_counter_t *m_peer_signature, *m_peer_stale, *m_peer_replay,
            *m_peer_busy, *m_peer_no_secret, *m_peer_route;
        sl_counter_t *m_answers_unsigned;
        api_pipe_t *pipes;
        sl_apireplay_t *replays; /* POST /dlq/replay */

        sl_api_lookup_fn *fn;
        void *opaque;
        uv_async_t async;

        pthread_mutex_t lock; /* waiters, the queue, stopping */
        waiter_t **queue;     /* ring of lookups for the loop */
        int q_head, q_cnt, q_cap;
        int stopping;

        rd_kafka_t *producer;
        pthread_t poller;
        atomic_int poll_run;

        pthread_mutex_t owner_lock; /* owners */
        owner_t *owners;
        int owner_cnt;
        int64_t owners_at_ms;
        int64_t owners_tried_ms;

        pthread_mutex_t meta_lock; /* meta, meta_evictions */
        sl_topiccache_t *meta;
        uint64_t meta_evictions;
        sl_gauge_t *m_meta_entries;
        sl_counter_t *m_meta_evictions;
};

static waiter_t *waiter_new(void) {
        waiter_t *w = sl_calloc(1, sizeof(*w));
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        return w;
}

static void waiter_free(waiter_t *w) {
        if (!w)
                return;
        pthread_cond_destroy(&w->cond);
        free(w->key);
        free(w->json);
        free(w);
}

/* Waits (api->lock held) until w is done or timeout_ms passed.  Returns 1
 * when done; 0 on timeout, and w then belongs to whoever answers it. */
static int waiter_wait(sl_api_t *api, waiter_t *w, int64_t timeout_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (timeout_ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
        }
        while (!w->done)
                if (pthread_cond_timedwait(&w->cond, &api->lock, &ts) ==
                    ETIMEDOUT)
                        break;
        if (w->done)
                return 1;
        w->abandoned = 1;
        return 0;
}

/* Marks w answered (api->lock held): wakes the requester, or frees w when
 * the requester left. */
static void waiter_answer(waiter_t *w) {
        w->done = 1;
        if (w->abandoned)
                waiter_free(w);
        else
                pthread_cond_signal(&w->cond);
}

/* ------------------------------------------------------------------ */
/* The producer.                                                        */

static void api_dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                      void *opaque) {
        sl_api_t *api = opaque;
        waiter_t *w = m->_private;
        (void)rk;
        if (!w)
                return;
        pthread_mutex_lock(&api->lock);
        w->err = m->err;
        w->offset = m->offset;
        waiter_answer(w);
        pthread_mutex_unlock(&api->lock);
}

static void *api_poller(void *arg) {
        sl_api_t *api = arg;
        while (atomic_load(&api->poll_run))
                rd_kafka_poll(api->producer, 100);
        return NULL;
}

static int api_producer_new(sl_api_t *api, char *errstr, size_t errstr_size) {
        rd_kafka_conf_t *kc = sl_conf_rdkafka(api->conf, errstr, errstr_size);
        char cid[320];
        int mmb = 1; /* message.max.bytes is sluice's to set */
        if (!kc)
                return -1;
        snprintf(cid, sizeof(cid), "sluice-api@%s", api->advertised);
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        rd_kafka_conf_set_opaque(kc, api);
        rd_kafka_conf_set_dr_msg_cb(kc, api_dr_cb);
        if (sl_kafka_conf_set(kc, "enable.idempotence", "true", errstr,
                              errstr_size) == -1 ||
            sl_kafka_conf_set(kc, "acks", "all", errstr, errstr_size) == -1 ||
            sl_kafka_conf_set(kc, "linger.ms", "1", errstr, errstr_size) ==
                -1 ||
            sl_kafka_conf_set(kc, "client.id", cid, errstr, errstr_size) ==
                -1) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        /* librdkafka's default (1,000,000) is below Kafka's 1,048,588: a
         * record the input takes must not be refused here.  What the
         * input does not take, the broker refuses (413). */
        for (int i = 0; i < api->conf->kafka_cnt && mmb; i++)
                if (!strcmp(api->conf->kafka[i].key, "message.max.bytes"))
                        mmb = 0;
        if (mmb) {
                char v[32];
                snprintf(v, sizeof(v), "%lld",
                         (long long)SL_MAX(api->conf->api_max_body_bytes,
                                           SL_RECSIZE_KAFKA_DEFAULT_MAX));
                if (sl_kafka_conf_set(kc, "message.max.bytes", v, errstr,
                                      errstr_size) == -1) {
                        rd_kafka_conf_destroy(kc);
                        return -1;
                }
        }
        if (!(api->producer =
                  rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        atomic_store(&api->poll_run, 1);
        if (pthread_create(&api->poller, NULL, api_poller, api)) {
                snprintf(errstr, errstr_size, "cannot start a thread");
                atomic_store(&api->poll_run, 0);
                return -1;
        }
        return 0;
}

/* Produces one record and waits for its delivery report.  hdrs is owned
 * by this call.  ts_ms: the record's timestamp (0: librdkafka's clock).
 * Returns 0 with *offsetp, or an error: a librdkafka error (>0 or <0), or
 * RD_KAFKA_RESP_ERR__TIMED_OUT when the report did not come within
 * api_timeout. */
static rd_kafka_resp_err_t
api_produce(sl_api_t *api, const char *topic, int32_t partition,
            const void *key, size_t keylen, const void *value, size_t valuelen,
            rd_kafka_headers_t *hdrs, int64_t ts_ms, int64_t *offsetp) {
        waiter_t *w = waiter_new();
        rd_kafka_resp_err_t err;

        err = rd_kafka_producev(
            api->producer, RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(key, keylen),
            RD_KAFKA_V_VALUE((void *)value, valuelen), RD_KAFKA_V_HEADERS(hdrs),
            RD_KAFKA_V_TIMESTAMP(ts_ms), RD_KAFKA_V_OPAQUE(w), RD_KAFKA_V_END);
        if (err) {
                if (hdrs)
                        rd_kafka_headers_destroy(hdrs);
                waiter_free(w);
                return err;
        }
        pthread_mutex_lock(&api->lock);
        if (!waiter_wait(api, w, api->conf->api_timeout_ms)) {
                pthread_mutex_unlock(&api->lock);
                return RD_KAFKA_RESP_ERR__TIMED_OUT;
        }
        pthread_mutex_unlock(&api->lock);
        err = w->err;
        *offsetp = w->offset;
        waiter_free(w);
        return err;
}

/* Asks Kafka the partition count of topic: > 0, 0 when it does not exist,
 * SL_META_FORBIDDEN, or -1 when Kafka did not answer. */
static int meta_ask(sl_api_t *api, const char *topic) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt;
        rd_kafka_resp_err_t err;
        int cnt = -1;

        rkt = rd_kafka_topic_new(api->producer, topic, NULL);
        if (!rkt)
                return -1;
        err = rd_kafka_metadata(api->producer, 0, rkt, &md,
                                (int)api->conf->api_timeout_ms);
        if (!err && md && md->topic_cnt == 1) {
                const struct rd_kafka_metadata_topic *t = &md->topics[0];
                if (t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
                        cnt = 0;
                else if (t->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
                        cnt = SL_META_FORBIDDEN;
                else if (!t->err)
                        cnt = t->partition_cnt;
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return cnt;
}

/* The cache's figures, into the metrics (meta_lock held). */
static void meta_publish(sl_api_t *api) {
        sl_topiccache_stats_t st;
        sl_topiccache_stats(api->meta, &st);
        sl_gauge_set(api->m_meta_entries, (double)st.entries);
        sl_counter_add(api->m_meta_evictions,
                       st.evictions - api->meta_evictions);
        api->meta_evictions = st.evictions;
}

/* Partition count of topic from the producer's metadata, through the
 * cache: > 0, 0 when it does not exist, SL_META_FORBIDDEN, or -1 when
 * Kafka did not answer. */
static int api_partitions(sl_api_t *api, const char *topic) {
        sl_topiccache_entry_t *look;
        int64_t now = sl_mono_us() / 1000;
        int cnt;

        pthread_mutex_lock(&api->meta_lock);
        cnt = sl_topiccache_get(api->meta, topic, now, &look);
        meta_publish(api);
        pthread_mutex_unlock(&api->meta_lock);
        if (!look) {
                /* An answer (fresh, or stale while another thread looks
                 * it up again), or none yet: then ask Kafka, uncached. */
                if (cnt > 0 || cnt == 0 || cnt == SL_META_FORBIDDEN)
                        return cnt;
                return meta_ask(api, topic);
        }
        /* This thread looks it up for the cache; the entry stays put
         * while its lookup is in flight (topiccache.h). */
        cnt = meta_ask(api, topic);
        pthread_mutex_lock(&api->meta_lock);
        sl_topiccache_answer(api->meta, look, cnt != -1, cnt,
                             sl_mono_us() / 1000);
        meta_publish(api);
        pthread_mutex_unlock(&api->meta_lock);
        return cnt;
}

/* ------------------------------------------------------------------ */
/* Lookups on the loop.                                                 */

static void api_on_async(uv_async_t *a) {
        sl_api_t *api = a->data;
        for (;;) {
                waiter_t *w;
                char *json = NULL;
                sl_api_lookup_t res;

                pthread_mutex_lock(&api->lock);
                if (!api->q_cnt) {
                        pthread_mutex_unlock(&api->lock);
                        return;
                }
                w = api->queue[api->q_head];
                api->q_head = (api->q_head + 1) % api->q_cap;
                api->q_cnt--;
                if (w->abandoned) {
                        waiter_free(w);
                        pthread_mutex_unlock(&api->lock);
                        continue;
                }
                pthread_mutex_unlock(&api->lock);

                /* The key and pipeline are read only here and by the
                 * requester, which does not touch them while queued. */
                res = api->fn(api->opaque, w->pipeline, w->partition, w->key,
                              w->keylen, &json);

                pthread_mutex_lock(&api->lock);
                w->res = (int)res;
                w->json = json;
                waiter_answer(w);
                pthread_mutex_unlock(&api->lock);
        }
}

/* Asks the loop.  Returns the answer (sl_api_lookup_t) with *jsonp owned
 * by the caller, or -1 when shutting down, -2 when the queue is full, -3
 * on timeout. */
static int api_lookup_local(sl_api_t *api, int pipeline, int32_t partition,
                            const char *key, size_t keylen, char **jsonp) {
        waiter_t *w;
        int res;

        *jsonp = NULL;
        pthread_mutex_lock(&api->lock);
        if (api->stopping) {
                pthread_mutex_unlock(&api->lock);
                return -1;
        }
        if (api->q_cnt == api->q_cap) {
                pthread_mutex_unlock(&api->lock);
                return -2;
        }
        w = waiter_new();
        w->pipeline = pipeline;
        w->partition = partition;
        w->key = sl_malloc(keylen + 1);
        memcpy(w->key, key, keylen);
        w->key[keylen] = '\0';
        w->keylen = keylen;
        api->queue[(api->q_head + api->q_cnt) % api->q_cap] = w;
        api->q_cnt++;
        uv_async_send(&api->async);
        if (!waiter_wait(api, w, api->conf->api_timeout_ms)) {
                pthread_mutex_unlock(&api->lock);
                return -3;
        }
        pthread_mutex_unlock(&api->lock);
        res = w->res;
        *jsonp = w->json;
        w->json = NULL;
        waiter_free(w);
        return res;
}

/* ------------------------------------------------------------------ */
/* Owners.                                                              */

static void owners_clear(sl_api_t *api) {
        for (int i = 0; i < api->owner_cnt; i++) {
                free(api->owners[i].topic);
                free(api->owners[i].addr);
        }
        free(api->owners);
        api->owners = NULL;
        api->owner_cnt = 0;
}

/* Reads the group's assignment (owner_lock held).  Returns 0 or -1.
 * Through the classic ListGroups + DescribeGroups (rd_kafka_list_groups),
 * not the admin DescribeConsumerGroups: librdkafka 2.0.2 can abort the
 * process in a coordinator-bound admin request's failure path
 * (rd_kafka_enq_once_del_source_return; kquery.c). */
static int owners_refresh(sl_api_t *api) {
        const struct rd_kafka_group_list *gl = NULL;
        const struct rd_kafka_group_info *g;
        int tmo = (int)(api->conf->api_timeout_ms / 2);
        rd_kafka_resp_err_t err;
        int rc = -1;

        err = rd_kafka_list_groups(api->producer, api->group, &gl, tmo);
        if ((err && !(err == RD_KAFKA_RESP_ERR__PARTIAL && gl)) || !gl ||
            gl->group_cnt != 1 || gl->groups[0].err)
                goto done;
        g = &gl->groups[0];
        owners_clear(api);
        for (int i = 0; i < g->member_cnt; i++) {
                const struct rd_kafka_group_member_info *m = &g->members[i];
                const char *at =
                    m->client_id ? strrchr(m->client_id, '@') : NULL;
                rd_kafka_topic_partition_list_t *pl =
                    sl_groupcheck_parse_assignment(
                        m->member_assignment,
                        m->member_assignment_size > 0
                            ? (size_t)m->member_assignment_size
                            : 0);
                for (int j = 0; pl && j < pl->cnt; j++) {
                        owner_t *ow;
                        api->owners = sl_realloc(
                            api->owners,
                            sizeof(*ow) * (size_t)(api->owner_cnt + 1));
                        ow = &api->owners[api->owner_cnt++];
                        ow->topic = sl_strdup(pl->elems[j].topic);
                        ow->partition = pl->elems[j].partition;
                        ow->addr = sl_strdup(at ? at + 1 : "");
                }
                if (pl)
                        rd_kafka_topic_partition_list_destroy(pl);
        }
        api->owners_at_ms = sl_now_ms();
        rc = 0;
done:
        if (gl)
                rd_kafka_group_list_destroy(gl);
        return rc;
}

/* The advertised API address of the owner of (topic, partition), copied
 * into addr; 0, or -1 when unknown.  fresh: the cached map was wrong
 * (the owner named us, or did not answer): read it again if allowed. */
static int owner_find(sl_api_t *api, const char *topic, int32_t partition,
                      char *addr, size_t size) {
        int64_t now = sl_now_ms();
        int found = -1;

        pthread_mutex_lock(&api->owner_lock);
        for (int pass = 0; pass < 2 && found == -1; pass++) {
                if (pass == 1 || now - api->owners_at_ms > OWNER_TTL_MS) {
                        if (now - api->owners_tried_ms < OWNER_MIN_REFRESH_MS &&
                            pass == 1)
                                break;
                        api->owners_tried_ms = now;
                        if (owners_refresh(api) == -1)
                                break;
                }
                for (int i = 0; i < api->owner_cnt; i++)
                        if (api->owners[i].partition == partition &&
                            !strcmp(api->owners[i].topic, topic) &&
                            *api->owners[i].addr &&
                            strcmp(api->owners[i].addr, api->advertised)) {
                                snprintf(addr, size, "%s", api->owners[i].addr);
                                found = 0;
                                break;
                        }
        }
        pthread_mutex_unlock(&api->owner_lock);
        return found;
}

/* ------------------------------------------------------------------ */
/* Forwarding: a minimal HTTP/1.1 client (Connection: close).           */

static int fwd_connect(const char *addr, int timeout_ms) {
        char host[256], port[16];
        const char *colon = strrchr(addr, ':');
        struct addrinfo hints = {0}, *res = NULL;
        int fd = -1;

        if (!colon || (size_t)(colon - addr) >= sizeof(host))
                return -1;
        memcpy(host, addr, (size_t)(colon - addr));
        host[colon - addr] = '\0';
        snprintf(port, sizeof(port), "%s", colon + 1);
        if (host[0] == '[') { /* [v6] */
                size_t l = strlen(host);
                memmove(host, host + 1, l);
                if (l >= 2 && host[l - 2] == ']')
                        host[l - 2] = '\0';
        }
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host, port, &hints, &res) || !res)
                return -1;
        for (struct addrinfo *ai = res; ai && fd == -1; ai = ai->ai_next) {
                struct pollfd pfd;
                int err = 0;
                socklen_t el = sizeof(err);
                fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                            ai->ai_protocol);
                if (fd == -1)
                        continue;
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1 &&
                    errno != EINPROGRESS)
                        goto bad;
                pfd.fd = fd;
                pfd.events = POLLOUT;
                if (poll(&pfd, 1, timeout_ms) != 1 ||
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
                        goto bad;
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
                break;
        bad:
                close(fd);
                fd = -1;
        }
        freeaddrinfo(res);
        if (fd != -1) {
                struct timeval tv = {timeout_ms / 1000,
                                     (timeout_ms % 1000) * 1000};
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        return fd;
}

/* One forwarding connection: plain, or a GnuTLS client session over the
 * same blocking socket (its SO_RCVTIMEO/SO_SNDTIMEO bound every read and
 * write; GnuTLS reports a timed-out one as GNUTLS_E_AGAIN, an error here). */
typedef struct fwd_conn_s {
        int fd;
        gnutls_session_t tls; /* NULL: plain HTTP */
} fwd_conn_t;

/* Starts TLS on fc->fd to addr ("host:port"), verifying the owner's
 * certificate against api->tls_client: its chain, and that it names host
 * (a DNS name, or an IP address in a subjectAltName).  Returns 0, or -1
 * with why. */
static int fwd_tls_start(sl_api_t *api, fwd_conn_t *fc, const char *addr,
                         int timeout_ms, char *why, size_t why_size) {
        char host[256];
        const char *colon = strrchr(addr, ':');
        size_t hl = colon ? (size_t)(colon - addr) : strlen(addr);
        struct in6_addr a6;
        int rc;

        if (hl >= sizeof(host))
                hl = sizeof(host) - 1;
        memcpy(host, addr, hl);
        host[hl] = '\0';
        if (host[0] == '[') {
                memmove(host, host + 1, hl);
                if (hl >= 2 && host[hl - 2] == ']')
                        host[hl - 2] = '\0';
        }
        if ((rc = gnutls_init(&fc->tls, GNUTLS_CLIENT)) < 0) {
                fc->tls = NULL;
                snprintf(why, why_size, "TLS: %s", gnutls_strerror(rc));
                return -1;
        }
        gnutls_set_default_priority(fc->tls);
        gnutls_credentials_set(fc->tls, GNUTLS_CRD_CERTIFICATE,
                               api->tls_client);
        /* SNI for names only (RFC 6066 forbids it for addresses). */
        if (inet_pton(AF_INET, host, &a6) != 1 &&
            inet_pton(AF_INET6, host, &a6) != 1)
                gnutls_server_name_set(fc->tls, GNUTLS_NAME_DNS, host,
                                       strlen(host));
        /* The handshake fails unless the chain verifies and the
         * certificate names host. */
        gnutls_session_set_verify_cert(fc->tls, host, 0);
        gnutls_transport_set_int(fc->tls, fc->fd);
        gnutls_handshake_set_timeout(fc->tls, (unsigned)timeout_ms);
        do
                rc = gnutls_handshake(fc->tls);
        while (rc == GNUTLS_E_INTERRUPTED);
        if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
                gnutls_datum_t txt = {0};
                unsigned st = gnutls_session_get_verify_cert_status(fc->tls);
                gnutls_certificate_verification_status_print(
                    st, GNUTLS_CRT_X509, &txt, 0);
                snprintf(why, why_size,
                         "the certificate of %s is not trusted: %s", addr,
                         txt.data ? (const char *)txt.data : "?");
                gnutls_free(txt.data);
                return -1;
        }
        if (rc < 0) {
                snprintf(why, why_size, "TLS handshake with %s: %s", addr,
                         gnutls_strerror(rc));
                return -1;
        }
        return 0;
}

static int fwd_send(fwd_conn_t *fc, const char *p, size_t n) {
        while (n) {
                ssize_t w;
                if (fc->tls) {
                        do
                                w = gnutls_record_send(fc->tls, p, n);
                        while (w == GNUTLS_E_INTERRUPTED);
                } else {
                        w = send(fc->fd, p, n, MSG_NOSIGNAL);
                }
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

/* Reads up to n bytes: > 0, 0 at the end of the answer, -1 on error.  A
 * TLS peer that closes without close_notify ends the answer too (the
 * Content-Length check of forward_get catches a cut one). */
static ssize_t fwd_recv(fwd_conn_t *fc, char *p, size_t n) {
        ssize_t r;
        if (!fc->tls)
                return recv(fc->fd, p, n, 0);
        do
                r = gnutls_record_recv(fc->tls, p, n);
        while (r == GNUTLS_E_INTERRUPTED);
        if (r == GNUTLS_E_PREMATURE_TERMINATION)
                return 0;
        return r < 0 ? -1 : r;
}

static void fwd_close(fwd_conn_t *fc) {
        if (fc->tls) {
                gnutls_bye(fc->tls, GNUTLS_SHUT_WR);
                gnutls_deinit(fc->tls);
        }
        if (fc->fd != -1)
                close(fc->fd);
}

/* What forward_get() got. */
typedef enum {
        FWD_OK = 0,
        FWD_UNREACHABLE, /* the network, or no HTTP answer */
        FWD_TLS,         /* TLS refused the owner */
        FWD_UNSIGNED,    /* an answer without a valid peer signature */
} fwd_result_t;

/* 32 random lowercase hex digits: 0, or -1 when gnutls has no random
 * bytes (then nothing is forwarded). */
static int nonce_new(char out[33]) {
        static const char digits[] = "0123456789abcdef";
        uint8_t b[16];
        if (gnutls_rnd(GNUTLS_RND_NONCE, b, sizeof(b)) < 0)
                return -1;
        for (size_t i = 0; i < sizeof(b); i++) {
                out[2 * i] = digits[b[i] >> 4];
                out[2 * i + 1] = digits[b[i] & 15];
        }
        out[32] = '\0';
        return 0;
}

/* GETs url (as received: still escaped) from addr, the owner, over HTTPS
 * when this API serves HTTPS (every member of a group is configured
 * alike), with this instance's peer credential (peerauth.h) and nothing
 * of the client's.  Returns FWD_OK with *a filled in (a->body owned by the
 * caller) when the answer is signed for this request, else another
 * result with why. */
static fwd_result_t forward_get(sl_api_t *api, const char *addr,
                                const char *url, sl_apireq_answer_t *a,
                                char *why, size_t why_size) {
        int timeout_ms = (int)(api->conf->api_timeout_ms / 2);
        fwd_conn_t fc = {fwd_connect(addr, timeout_ms), NULL};
        sl_peerauth_what_t w = {"GET", url, addr, api->advertised, NULL, 0};
        char *req = NULL, *buf = NULL, nonce[33], cred[SL_PEERAUTH_HDR_MAX];
        size_t len = 0, cap = 0;
        fwd_result_t rc = FWD_UNREACHABLE;
        int n;

        memset(a, 0, sizeof(*a));
        snprintf(why, why_size, "%.200s did not answer", addr);
        if (fc.fd == -1)
                return FWD_UNREACHABLE;
        if (api->tls_client &&
            fwd_tls_start(api, &fc, addr, timeout_ms, why, why_size) == -1) {
                rc = FWD_TLS;
                goto out;
        }
        if (nonce_new(nonce) == -1 ||
            sl_peerauth_request_sign(&api->peer_key, &w, sl_now_ms(), nonce,
                                     cred) == -1) {
                snprintf(why, why_size, "cannot sign the request");
                goto out;
        }
        n = asprintf(&req,
                     "GET %s HTTP/1.1\r\nHost: %s\r\n" SL_PEERAUTH_HDR
                     ": %s\r\n" FORWARDED_HDR ": %s\r\nConnection: "
                     "close\r\n\r\n",
                     url, addr, cred, api->advertised);
        if (n < 0 || fwd_send(&fc, req, (size_t)n) == -1)
                goto out;
        for (;;) {
                ssize_t r;
                if (cap - len < 4096) {
                        cap = cap ? cap * 2 : 8192;
                        if (cap > FORWARD_MAX_BYTES)
                                goto out;
                        buf = sl_realloc(buf, cap + 1);
                }
                r = fwd_recv(&fc, buf + len, cap - len);
                if (r < 0)
                        goto out;
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        if (buf) {
                char bad[64];
                sl_peerauth_answer_t pa;
                if (sl_apireq_answer_parse(buf, len, a, bad, sizeof(bad))) {
                        snprintf(why, why_size, "the answer of %.200s %s", addr,
                                 bad);
                        goto out;
                }
                pa = (sl_peerauth_answer_t){nonce,          a->status,
                                            a->answered_by, a->retry_after,
                                            a->body,        a->body_len};
                /* Whoever does not hold the secret cannot pose as the
                 * owner: its answer is never passed on. */
                if (!sl_peerauth_answer_verify(&api->peer_key, a->peer_auth,
                                               &pa)) {
                        snprintf(why, why_size,
                                 "the answer of %.200s (HTTP %d) is not signed "
                                 "with api_peer_secret%s",
                                 addr, a->status,
                                 *a->peer_auth ? " (a wrong signature)" : "");
                        free(a->body);
                        memset(a, 0, sizeof(*a));
                        rc = FWD_UNSIGNED;
                        goto out;
                }
                rc = FWD_OK;
        }
out:
        free(req);
        free(buf);
        fwd_close(&fc);
        return rc;
}

/* ------------------------------------------------------------------ */
/* Answers.                                                             */

typedef struct conn_s {
        char *body;
        size_t len;
        int too_big;
        int answered; /* a response was queued on the first call */
        int peer;     /* another instance's request (peerauth.h) */
} conn_t;

/* Answers status with body[0..len) (copied), and the headers given (NULL
 * or 0: none). */
static enum MHD_Result reply_text(struct MHD_Connection *c, int status,
                                  const char *body, size_t len,
                                  const char *retry_after, int bearer,
                                  const char *allow) {
        struct MHD_Response *r = MHD_create_response_from_buffer(
            len, (void *)body, MHD_RESPMEM_MUST_COPY);
        enum MHD_Result rc;
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, "Content-Type", "application/json");
        if (retry_after)
                MHD_add_response_header(r, "Retry-After", retry_after);
        if (bearer)
                MHD_add_response_header(r, "WWW-Authenticate",
                                        "Bearer realm=\"sluice\"");
        if (allow)
                MHD_add_response_header(r, "Allow", allow);
        rc = MHD_queue_response(c, (unsigned)status, r);
        MHD_destroy_response(r);
        return rc;
}

/* Answers status with body j (stolen). */
static enum MHD_Result reply_json(struct MHD_Connection *c, int status,
                                  json_t *j, const char *retry_after) {
        char *s = json_dumps(j, JSON_COMPACT);
        enum MHD_Result rc;
        json_decref(j);
        if (!s)
                return MHD_NO;
        rc = reply_text(c, status, s, strlen(s), retry_after, 0, NULL);
        free(s);
        return rc;
}

/* The body of every error answer, {"code", "message"} (the Error schema of
 * api/openapi.yaml): a malloc'd string, or NULL when out of memory. */
static char *err_body(const char *code, const char *msg) {
        json_t *j = json_pack("{s:s, s:s}", "code", code, "message", msg);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        return s;
}

static enum MHD_Result reply_err(struct MHD_Connection *c, int status,
                                 const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum MHD_Result reply_err(struct MHD_Connection *c, int status,
                                 const char *code, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        char *s;
        enum MHD_Result rc;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (!(s = err_body(code, msg)))
                return MHD_NO;
        rc =
            reply_text(c, status, s, strlen(s),
                       status == 503 ? RETRY_AFTER : NULL, status == 401, NULL);
        free(s);
        return rc;
}

/* A method the path does not take: 405, and Allow lists those it takes
 * (RFC 9110 requires it). */
static enum MHD_Result reply_405(struct MHD_Connection *c,
                                 const sl_apireq_path_t *pp) {
        char *s = err_body("method-not-allowed", pp->why);
        enum MHD_Result rc;

        if (!s)
                return MHD_NO;
        rc = reply_text(c, 405, s, strlen(s), NULL, 0, pp->allow);
        free(s);
        return rc;
}

/* ------------------------------------------------------------------ */
/* Routing.                                                             */

/* ------------------------------------------------------------------ */
/* Handlers.                                                            */

static enum MHD_Result serve_index(struct MHD_Connection *c) {
        json_t *arr = json_array();
        for (int i = 0; i < sl_apireq_route_cnt(); i++)
                json_array_append_new(arr, json_pack("{s:s, s:s}", "method",
                                                     sl_apireq_route(i)->method,
                                                     "path",
                                                     sl_apireq_route(i)->path));
        return reply_json(
            c, 200, json_pack("{s:s, s:o}", "version", "v1", "routes", arr),
            NULL);
}

/* The partition of key in topic (by pc's partitioner): >= 0, or -1 with
 * the error's code and message (a 503). */
static int32_t partition_of(sl_api_t *api, const sl_pipeline_conf_t *pc,
                            const char *topic, const void *key, size_t keylen,
                            const char **code, char *msg, size_t msg_size) {
        int cnt = api_partitions(api, topic);
        *code = "kafka-unavailable";
        if (cnt > 0)
                return sl_partitioner_partition(pc->input_partitioner, key,
                                                keylen, cnt);
        if (cnt == 0) {
                *code = "unknown-topic";
                snprintf(msg, msg_size, "topic %s does not exist", topic);
        } else if (cnt == SL_META_FORBIDDEN) {
                *code = "topic-refused";
                snprintf(msg, msg_size, "Kafka refuses to describe topic %s",
                         topic);
        } else {
                *code = "kafka-unavailable";
                snprintf(msg, msg_size, "no metadata for topic %s from Kafka",
                         topic);
        }
        return -1;
}

/* The input partition of key in pipeline pi: >= 0, or < 0 after the
 * answer was queued on c (rc in *rcp). */
static int32_t key_partition(sl_api_t *api, struct MHD_Connection *c,
                             const sl_pipeline_conf_t *pc, const char *topic,
                             const void *key, size_t keylen,
                             enum MHD_Result *rcp) {
        const char *code = NULL;
        char msg[400];
        int32_t p =
            partition_of(api, pc, topic, key, keylen, &code, msg, sizeof(msg));
        if (p < 0)
                *rcp = reply_err(c, 503, code, "%s", msg);
        return p;
}

/* Result of a lookup, local or forwarded. */
typedef struct look_s {
        int status; /* HTTP status to answer */
        char *body; /* JSON text (FOUND) or error body, owned */
        const char *code;
        char msg[400];
        char retry_after[16];
        char answered_by[300]; /* the instance that answered */
} look_t;

static void look_free(look_t *l) {
        free(l->body);
}

/* Fills l from this instance's answer res (api_lookup_local()) and returns
 * 0, or returns -1 when the partition is owned elsewhere (res is
 * SL_API_UNOWNED): the caller forwards.  Takes json (FOUND) in l->body. */
static int lookup_answer_local(sl_api_t *api, int pi, int32_t partition,
                               int res, char *json, look_t *l) {
        const sl_pipeline_conf_t *pc = &api->conf->pipelines[pi];

        switch (res) {
        case SL_API_FOUND:
                l->status = 200;
                l->body = json;
                return 0;
        case SL_API_ABSENT:
                l->status = 404;
                l->code = "not-found";
                snprintf(l->msg, sizeof(l->msg),
                         "pipeline %s holds nothing for this key "
                         "(partition %d)",
                         pc->name, partition);
                break;
        case SL_API_GONE: {
                json_t *j = json ? json_loads(json, 0, NULL) : NULL;
                int64_t due = sl_describe_gone_due(j);
                char at[40] = "its due time";
                json_decref(j);
                if (due >= 0)
                        sl_time_rfc3339(due, at, sizeof(at));
                l->status = 404;
                l->code = "payload-missing";
                snprintf(l->msg, sizeof(l->msg),
                         "pipeline %s holds a timer for this key (partition "
                         "%d) whose payload record is gone from %s: it goes "
                         "to the DLQ as payload-missing at %s",
                         pc->name, partition, "its payload topic", at);
                break;
        }
        case SL_API_READING:
                l->code = "reading";
                snprintf(l->msg, sizeof(l->msg),
                         "the owner of partition %d of %s is still reading "
                         "this key's record back from Kafka",
                         partition, pc->input);
                break;
        case SL_API_REBUILDING:
                l->code = "rebuilding";
                snprintf(l->msg, sizeof(l->msg),
                         "partition %d of %s is being rebuilt", partition,
                         pc->input);
                break;
        case SL_API_UNSUPPORTED:
                l->status = 501;
                l->code = "not-implemented";
                snprintf(l->msg, sizeof(l->msg),
                         "%s pipelines cannot describe a key yet",
                         sl_op_type_name(pc->type));
                break;
        case -1:
                l->code = "shutting-down";
                snprintf(l->msg, sizeof(l->msg), "sluice is shutting down");
                break;
        case -2:
                l->code = "busy";
                snprintf(l->msg, sizeof(l->msg), "too many lookups waiting");
                break;
        case -3:
                l->code = "timeout";
                snprintf(l->msg, sizeof(l->msg),
                         "the event loop did not answer in time");
                break;
        default: /* SL_API_UNOWNED */
                free(json);
                return -1;
        }
        free(json);
        return 0;
}

/* 1 when the log line of *last_ms is due (at most one every 10 s). */
static int warn_due(atomic_llong *last_ms) {
        int64_t now = sl_now_ms();
        if (now - atomic_load(last_ms) <= 10000)
                return 0;
        atomic_store(last_ms, now);
        return 1;
}

/* Asks whoever owns (pi, partition) what it holds for key.  forwarded:
 * the request came from another instance (a peer request), which is
 * never passed on again, so that two instances that disagree about the
 * owner during a rebalance answer 503 rather than bounce it. */
static void lookup(sl_api_t *api, int pi, int32_t partition, const char *key,
                   size_t keylen, const char *forwarded_by, look_t *l) {
        const sl_pipeline_conf_t *pc = &api->conf->pipelines[pi];
        char *json = NULL, owner[300], *path, why[300];
        int res = api_lookup_local(api, pi, partition, key, keylen, &json);
        sl_apireq_answer_t a;
        fwd_result_t fr;

        /* The owner reads a record back (a timer whose payload is in
         * Kafka): asked again every 10 ms, within the lookup timeout. */
        for (int64_t waited = 0;
             res == SL_API_READING && waited < api->conf->api_timeout_ms;
             waited += 10) {
                usleep(10000);
                res = api_lookup_local(api, pi, partition, key, keylen, &json);
        }

        memset(l, 0, sizeof(*l));
        l->status = 503;
        snprintf(l->answered_by, sizeof(l->answered_by), "%s", api->advertised);
        if (lookup_answer_local(api, pi, partition, res, json, l) == 0)
                return;
        if (forwarded_by) {
                l->code = "not-owner";
                snprintf(l->msg, sizeof(l->msg),
                         "partition %d of %.100s is not owned by %.100s "
                         "(forwarded by %.100s)",
                         partition, pc->input, api->advertised, forwarded_by);
                return;
        }
        if (!api->peer_key.len) {
                /* The client's token stays here, and nothing else would
                 * prove to the owner who asks: no forwarding. */
                l->status = 421;
                l->code = "forwarding-disabled";
                snprintf(l->msg, sizeof(l->msg),
                         "partition %d of %.100s is owned by another "
                         "instance, and this one forwards lookups only with "
                         "api_peer_secret set",
                         partition, pc->input);
                return;
        }
        if (owner_find(api, pc->input, partition, owner, sizeof(owner)) == -1) {
                l->code = "owner-unknown";
                snprintf(l->msg, sizeof(l->msg),
                         "no instance is known to own partition %d of %s",
                         partition, pc->input);
                return;
        }
        path = sl_apireq_lookup_path(pc, key, keylen);
        fr = forward_get(api, owner, path, &a, why, sizeof(why));
        free(path);
        if (fr != FWD_OK) {
                l->code = fr == FWD_TLS        ? "owner-tls-failed"
                          : fr == FWD_UNSIGNED ? "owner-unauthenticated"
                                               : "owner-unreachable";
                if (fr == FWD_UNSIGNED)
                        l->status = 502;
                snprintf(l->msg, sizeof(l->msg),
                         "the owner of partition %d of %.100s (%.100s): %.150s",
                         partition, pc->input, owner, why);
                /* A configuration problem (or somebody posing as the
                 * owner), not a passing one: said in the log, at most
                 * every 10 s. */
                if (fr == FWD_TLS && warn_due(&api->tls_warned_ms))
                        sl_log(LOG_WARNING, "API", "forwarding to %s: %s",
                               owner, why);
                if (fr == FWD_UNSIGNED) {
                        sl_counter_inc(api->m_answers_unsigned);
                        if (warn_due(&api->answer_warned_ms))
                                sl_log(LOG_WARNING, "API",
                                       "forwarding to %s: %s; answered 502 "
                                       "(is api_peer_secret the same on every "
                                       "instance? is somebody else in the "
                                       "group?)",
                                       owner, why);
                }
                /* The map may be stale: read it again next time. */
                pthread_mutex_lock(&api->owner_lock);
                api->owners_at_ms = 0;
                pthread_mutex_unlock(&api->owner_lock);
                return;
        }
        l->status = a.status;
        l->body = a.body;
        snprintf(l->retry_after, sizeof(l->retry_after), "%s", a.retry_after);
        if (*a.answered_by)
                snprintf(l->answered_by, sizeof(l->answered_by), "%s",
                         a.answered_by);
}

/* Answers l on c; with peer set (the nonce of an authenticated peer
 * request), signed for that request. */
static enum MHD_Result answer_lookup(sl_api_t *api, struct MHD_Connection *c,
                                     look_t *l, const char *peer) {
        struct MHD_Response *r;
        enum MHD_Result rc;
        char *s = l->body, cred[SL_PEERAUTH_HDR_MAX] = "";
        const char *ra = *l->retry_after    ? l->retry_after
                         : l->status == 503 ? RETRY_AFTER
                                            : NULL;
        if (!s)
                s = err_body(l->code, l->msg);
        if (peer) {
                sl_peerauth_answer_t pa = {peer, l->status, l->answered_by,
                                           ra,   s,         s ? strlen(s) : 0};
                if (sl_peerauth_answer_sign(&api->peer_key, &pa, cred) == -1)
                        cred[0] = '\0'; /* refused by the asker: a 502 */
        }
        r = MHD_create_response_from_buffer(s ? strlen(s) : 0, s,
                                            MHD_RESPMEM_MUST_COPY);
        if (s != l->body)
                free(s);
        look_free(l);
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, "Content-Type", "application/json");
        MHD_add_response_header(r, ANSWERED_HDR, l->answered_by);
        if (ra)
                MHD_add_response_header(r, "Retry-After", ra);
        if (*cred)
                MHD_add_response_header(r, SL_PEERAUTH_HDR, cred);
        rc = MHD_queue_response(c, (unsigned)l->status, r);
        MHD_destroy_response(r);
        return rc;
}

/* A route that answers only what holds route->needs (GET .../schedules:
 * a recurring timer): any other answer of the owner becomes a 404. */
static void lookup_needs(const sl_pipeline_conf_t *pc,
                         const sl_apireq_path_t *pp, look_t *l) {
        json_t *root = l->body ? json_loads(l->body, 0, NULL) : NULL;
        int has = root && json_object_get(root, pp->route->needs);
        char *path;

        json_decref(root);
        if (has)
                return;
        free(l->body);
        l->body = NULL;
        l->status = 404;
        l->code = pp->route->lacks;
        path = sl_apireq_lookup_path(pc, pp->key, pp->keylen);
        snprintf(l->msg, sizeof(l->msg),
                 "what pipeline %.100s holds for this key has no %s "
                 "(GET %.200s shows it)",
                 pc->name, pp->route->needs, path);
        free(path);
}

static enum MHD_Result serve_get(sl_api_t *api, struct MHD_Connection *c,
                                 const sl_apireq_path_t *pp) {
        const sl_pipeline_conf_t *pc = &api->conf->pipelines[pp->pipeline];
        enum MHD_Result rc = MHD_NO;
        look_t l;
        int32_t p =
            key_partition(api, c, pc, pc->input, pp->key, pp->keylen, &rc);
        if (p < 0)
                return rc;
        lookup(api, pp->pipeline, p, pp->key, pp->keylen, NULL, &l);
        if (l.status == 200 && pp->route->needs)
                lookup_needs(pc, pp, &l);
        return answer_lookup(api, c, &l, NULL);
}

/* An error answer for a failed produce. */
static enum MHD_Result produce_failed(struct MHD_Connection *c,
                                      rd_kafka_resp_err_t err,
                                      const char *topic) {
        if (err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
            err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT ||
            err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                return reply_err(c, 503, "timeout",
                                 "the record to %s was not acknowledged in "
                                 "time (%s); it may still be written",
                                 topic, rd_kafka_err2str(err));
        if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
                return reply_err(c, 413, "oversize",
                                 "Kafka refuses a record this large for %s",
                                 topic);
        return reply_err(c, 503, "kafka-error", "writing to %s: %s", topic,
                         rd_kafka_err2str(err));
}

/* The target a record names, as the operator will check it when it
 * writes there: 0, or -1 with the error answered (*rc). */
static int check_target(sl_api_t *api, struct MHD_Connection *c,
                        const char *target, int32_t partition,
                        enum MHD_Result *rc) {
        int cnt = api_partitions(api, target);
        if (cnt == 0)
                *rc = reply_err(c, 400, "unknown-target",
                                "target topic %s does not exist", target);
        else if (cnt == SL_META_FORBIDDEN)
                *rc = reply_err(c, 400, "target-refused",
                                "Kafka refuses to describe %s", target);
        else if (cnt > 0 && partition >= cnt)
                *rc = reply_err(c, 400, "bad-target-partition",
                                "%s has %d partitions, not %d", target, cnt,
                                partition + 1);
        else
                return 0;
        return -1;
}

/* A write route (apireq.h): the operator's build() makes the record from
 * the request, then the record's target is checked, the key's partition
 * of the route's topic found, the owner asked whether it holds the key
 * (when the route wants to know), the record produced and its delivery
 * waited for; the operator's answer() says what the client gets. */
static enum MHD_Result serve_write(sl_api_t *api, struct MHD_Connection *c,
                                   const sl_apireq_path_t *pp, const char *body,
                                   size_t bodylen) {
        const sl_route_t *rt = pp->route;
        const sl_pipeline_conf_t *pc = &api->conf->pipelines[pp->pipeline];
        const char *topic = sl_pipeline_topic(pc, rt->topic);
        enum MHD_Result rc = MHD_NO;
        rd_kafka_headers_t *kh = NULL;
        rd_kafka_resp_err_t err;
        sl_apiwrite_t w;
        json_t *j;
        int status;

        sl_assert(topic);
        memset(&w, 0, sizeof(w));
        w.pc = pc;
        w.data = api->pipes[pp->pipeline].data;
        w.key = pp->key;
        w.keylen = pp->keylen;
        w.body = body;
        w.bodylen = bodylen;
        w.now_ms = sl_now_ms();
        w.target_partition = -1;
        w.existed = -1;
        if (rt->build(&w) != 0) {
                rc = reply_err(c, w.status, w.code, "%s", w.msg);
                goto out;
        }
        if (w.target &&
            check_target(api, c, w.target, w.target_partition, &rc) < 0)
                goto out;
        if ((w.partition = key_partition(api, c, pc, topic, pp->key, pp->keylen,
                                         &rc)) < 0)
                goto out;
        if (w.ask_existed) {
                /* Asked before the write (forwarded like any lookup), so
                 * the answer is about the state before it, and advisory:
                 * a record still on its way through the input (a write of
                 * the same key a moment earlier, not yet read by the
                 * owner) is not seen. */
                look_t l;
                lookup(api, pp->pipeline, w.partition, pp->key, pp->keylen,
                       NULL, &l);
                w.existed = l.status == 200 ? 1 : l.status == 404 ? 0 : -1;
                look_free(&l);
        }
        if (w.hdrs) {
                kh = rd_kafka_headers_new(w.hdr_cnt);
                for (size_t i = 0; i < w.hdr_cnt; i++)
                        rd_kafka_header_add(kh, w.hdrs[i].name, -1,
                                            w.hdrs[i].value,
                                            (ssize_t)w.hdrs[i].size);
        }
        err = api_produce(api, topic, w.partition, pp->key, pp->keylen, w.value,
                          w.value_len, kh, w.timestamp_ms, &w.offset);
        if (err) {
                rc = produce_failed(c, err, topic);
                goto out;
        }
        j = rt->answer(&w, &status);
        rc = j ? reply_json(c, status, j, NULL)
               : reply_text(c, status, "", 0, NULL, 0, NULL);
out:
        if (rt->clear)
                rt->clear(&w);
        return rc;
}

/* POST /dlq/replay: starts a replay on a thread of its own (apireplay.h)
 * and answers 202 with its state at once; 409 while one runs. */
static enum MHD_Result serve_replay(sl_api_t *api, struct MHD_Connection *c,
                                    const sl_apireq_path_t *pp,
                                    const char *body, size_t bodylen) {
        sl_apireq_replay_t b;
        sl_dlqreplay_opts_t o = {.since = -1, .until = -1, .limit = -1};
        enum MHD_Result rc;
        const char *code;
        char why[256];
        json_t *state;

        if (sl_apireq_replay_read(body, bodylen, &b, &code, why, sizeof(why)) !=
            0) {
                rc = reply_err(c, 400, code, "%s", why);
                sl_apireq_replay_clear(&b);
                return rc;
        }
        for (int i = 0; i < b.reason_cnt; i++)
                o.reasons[o.reason_cnt++] = b.reasons[i];
        o.since = b.since;
        o.until = b.until;
        o.limit = b.limit;
        o.dry_run = b.dry_run;
        o.from_beginning = b.from_beginning;
        if (sl_apireplay_start(api->replays, pp->pipeline, &o, &state) != 0) {
                json_decref(state);
                rc = reply_err(c, 409, "replay-running",
                               "a replay of pipeline '%s' runs on this "
                               "instance: GET this path for its state",
                               api->conf->pipelines[pp->pipeline].name);
        } else {
                rc = reply_json(c, 202, state, NULL);
        }
        sl_apireq_replay_clear(&b);
        return rc;
}

/* GET /dlq/replay: the state of the pipeline's last replay. */
static enum MHD_Result serve_replay_state(sl_api_t *api,
                                          struct MHD_Connection *c,
                                          const sl_apireq_path_t *pp) {
        json_t *state = sl_apireplay_state(api->replays, pp->pipeline);

        if (!state)
                return reply_err(c, 404, "no-replay",
                                 "no replay of pipeline '%s' was started on "
                                 "this instance since it started",
                                 api->conf->pipelines[pp->pipeline].name);
        return reply_json(c, 200, state, NULL);
}

static enum MHD_Result dispatch(sl_api_t *api, struct MHD_Connection *c,
                                const sl_apireq_path_t *pp, conn_t *cn) {
        switch (pp->route->kind) {
        case SL_ROUTE_INDEX:
                return serve_index(c);
        case SL_ROUTE_LOOKUP:
                return serve_get(api, c, pp);
        case SL_ROUTE_WRITE:
                return serve_write(api, c, pp, cn->body ? cn->body : "",
                                   cn->len);
        case SL_ROUTE_REPLAY:
                return serve_replay(api, c, pp, cn->body ? cn->body : "",
                                    cn->len);
        case SL_ROUTE_REPLAY_STATUS:
                return serve_replay_state(api, c, pp);
        }
        return reply_err(c, 404, "not-found", "no such route");
}

/* A refused peer request: counted, logged at most every 10 s (with the
 * sender's claim, escaped: anyone can send one), answered 401 unsigned
 * (whoever sent it may not hold the secret). */
static enum MHD_Result peer_refuse(sl_api_t *api, struct MHD_Connection *c,
                                   sl_counter_t *counter, int status,
                                   const char *why) {
        const char *from =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, FORWARDED_HDR);
        char esc[SL_ESCAPE_SIZE(100)];

        sl_counter_inc(counter);
        if (warn_due(&api->peer_warned_ms))
                sl_log(LOG_WARNING, "API",
                       "a forwarded request (from %s, it says) refused: %s",
                       from ? sl_escape(from,
                                        strlen(from) < 100 ? strlen(from) : 100,
                                        esc, sizeof(esc))
                            : "nobody",
                       why);
        return reply_err(c, status, "peer-auth-failed", "%s", why);
}

/* A request from another instance: its credential must verify (MAC, clock,
 * nonce), and then it may only look up a key of this instance, which is
 * answered signed for it. */
static enum MHD_Result serve_peer(sl_api_t *api, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const conn_t *cn) {
        const char *hdr =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, SL_PEERAUTH_HDR);
        const char *from =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, FORWARDED_HDR);
        sl_peerauth_what_t w = {method, url,      api->advertised,
                                from,   cn->body, cn->len};
        sl_peerauth_req_t r;
        sl_peerauth_verdict_t v;
        sl_apireq_path_t pp;
        char why[200], msg[400];
        const char *code = NULL;
        look_t l;

        if (!api->peer_key.len)
                return peer_refuse(api, c, api->m_peer_no_secret, 401,
                                   "this instance has no api_peer_secret: it "
                                   "takes no forwarded request");
        if (sl_peerauth_request_parse(hdr, &r, why, sizeof(why)) == -1)
                return peer_refuse(api, c, api->m_peer_signature, 401, why);
        if (!sl_peerauth_request_verify(&api->peer_key, &r, &w)) {
                snprintf(msg, sizeof(msg),
                         "the peer credential does not verify for %.150s "
                         "(the same api_peer_secret on every instance?)",
                         api->advertised);
                return peer_refuse(api, c, api->m_peer_signature, 401, msg);
        }
        pthread_mutex_lock(&api->replay_lock);
        v = sl_peerauth_replay_check(api->replay, r.ts_ms, r.nonce,
                                     sl_now_ms());
        pthread_mutex_unlock(&api->replay_lock);
        if (v == SL_PEERAUTH_STALE) {
                snprintf(msg, sizeof(msg),
                         "the peer credential is %lld ms from this clock "
                         "(more than %d s: are the clocks apart?)",
                         (long long)(r.ts_ms - sl_now_ms()),
                         SL_PEERAUTH_SKEW_MS / 1000);
                return peer_refuse(api, c, api->m_peer_stale, 401, msg);
        }
        if (v == SL_PEERAUTH_REPLAY)
                return peer_refuse(api, c, api->m_peer_replay, 401,
                                   "the peer credential was used before");

        /* Authenticated: every answer from here is signed. */
        memset(&l, 0, sizeof(l));
        l.status = 503;
        snprintf(l.answered_by, sizeof(l.answered_by), "%s", api->advertised);
        if (v == SL_PEERAUTH_FULL) {
                sl_counter_inc(api->m_peer_busy);
                l.code = "busy";
                snprintf(l.msg, sizeof(l.msg),
                         "too many forwarded requests in the last %d s",
                         2 * SL_PEERAUTH_SKEW_MS / 1000);
                return answer_lookup(api, c, &l, r.nonce);
        }
        sl_apireq_path_parse(api->conf, url, method, &pp);
        if (!pp.route || pp.route->kind != SL_ROUTE_LOOKUP) {
                sl_counter_inc(api->m_peer_route);
                l.status = !pp.route && pp.bad == 404 ? 404 : 403;
                l.code = l.status == 404 ? "not-found" : "peer-route";
                snprintf(l.msg, sizeof(l.msg), "%s",
                         l.status == 404 ? pp.why
                                         : "forwarded requests are lookups "
                                           "only");
                sl_apireq_path_clear(&pp);
                return answer_lookup(api, c, &l, r.nonce);
        }
        {
                const sl_pipeline_conf_t *pc =
                    &api->conf->pipelines[pp.pipeline];
                int32_t p = partition_of(api, pc, pc->input, pp.key, pp.keylen,
                                         &code, msg, sizeof(msg));
                if (p < 0) {
                        l.code = code;
                        snprintf(l.msg, sizeof(l.msg), "%s", msg);
                } else {
                        lookup(api, pp.pipeline, p, pp.key, pp.keylen,
                               from && *from ? from : "another instance", &l);
                }
        }
        sl_apireq_path_clear(&pp);
        return answer_lookup(api, c, &l, r.nonce);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
        sl_api_t *api = cls;
        conn_t *cn = *con_cls;
        sl_apireq_path_t pp;
        enum MHD_Result rc;
        (void)version;

        if (!cn) {
                const char *auth, *clen;
                cn = sl_calloc(1, sizeof(*cn));
                *con_cls = cn;
                /* Another instance's request proves itself with its
                 * credential, once the body (which it covers) is in. */
                cn->peer = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                       SL_PEERAUTH_HDR) != NULL;
                auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   "Authorization");
                if (!cn->peer &&
                    !sl_api_token_ok(auth, api->tokens, api->token_cnt)) {
                        cn->answered = 1;
                        sl_connguard_mhd_busy(api->guard, c);
                        return reply_err(c, 401, "unauthorized",
                                         auth ? "the bearer token is not "
                                                "accepted"
                                              : "a bearer token is required");
                }
                clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   "Content-Length");
                if (clen &&
                    strtoll(clen, NULL, 10) > api->conf->api_max_body_bytes) {
                        cn->answered = 1;
                        sl_connguard_mhd_busy(api->guard, c);
                        return reply_err(
                            c, 413, "oversize",
                            "the body is larger than api_max_body "
                            "(%lld bytes)",
                            (long long)api->conf->api_max_body_bytes);
                }
                return MHD_YES;
        }
        if (cn->answered) {
                *upload_size = 0;
                return MHD_YES;
        }
        if (*upload_size) {
                if (!cn->too_big && cn->len + *upload_size >
                                        (size_t)api->conf->api_max_body_bytes) {
                        cn->too_big = 1;
                } else if (!cn->too_big) {
                        cn->body =
                            sl_realloc(cn->body, cn->len + *upload_size + 1);
                        memcpy(cn->body + cn->len, upload, *upload_size);
                        cn->len += *upload_size;
                        cn->body[cn->len] = '\0';
                }
                *upload_size = 0;
                return MHD_YES;
        }
        /* The head and the body are in: out of the deadline's reach while
         * the answer is made (which may wait up to api_timeout). */
        sl_connguard_mhd_busy(api->guard, c);
        if (cn->too_big)
                return reply_err(c, 413, "oversize",
                                 "the body is larger than api_max_body (%lld "
                                 "bytes)",
                                 (long long)api->conf->api_max_body_bytes);
        if (cn->peer)
                return serve_peer(api, c, url, method, cn);
        sl_apireq_path_parse(api->conf, url, method, &pp);
        if (pp.bad == 405)
                rc = reply_405(c, &pp);
        else if (!pp.route)
                rc = reply_err(c, 404, "not-found", "%s", pp.why);
        else
                rc = dispatch(api, c, &pp, cn);
        sl_apireq_path_clear(&pp);
        return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
        sl_api_t *api = cls;
        conn_t *cn = *con_cls;
        (void)toe;
        /* Answered (or given up): the connection waits for its next
         * request, under the deadline again. */
        sl_connguard_mhd_idle(api->guard, c);
        if (cn) {
                free(cn->body);
                free(cn);
                *con_cls = NULL;
        }
}

/* Leaves the URL escaped: path segments are decoded one by one, so an id
 * may hold '/' as %2F. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
        (void)cls;
        (void)c;
        return strlen(s);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        sl_api_t *api = cls;
        char buf[512];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        /* Clients make libmicrohttpd talk: a line for each one that leaves
         * mid-request, as every connection the guard closes does. */
        sl_log_budgeted(&api->log_budget, "API", buf);
}

/* The API's own figures. */
#define META_ENTRIES_HELP                                                      \
        "Topics whose partition count the API holds (its inputs, rates "       \
        "topics and the targets PUTs named); at most " STR(META_CAPACITY) "."
#define PEER_REFUSED_HELP                                                      \
        "Requests that said they came from another instance "                  \
        "(X-Sluice-Peer-Auth), refused: a credential that does not verify "    \
        "(signature), a timestamp more than 30 s from this clock (stale), "    \
        "a nonce used before (replay), this instance without "                 \
        "api_peer_secret (no_secret), too many nonces to remember (busy), "    \
        "or not a lookup (route)."
static const sl_metric_def_t api_defs[] = {
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_signature,
                         "sluice_api_peer_refused_total", PEER_REFUSED_HELP,
                         "reason", "signature"),
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_stale,
                         "sluice_api_peer_refused_total", PEER_REFUSED_HELP,
                         "reason", "stale"),
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_replay,
                         "sluice_api_peer_refused_total", PEER_REFUSED_HELP,
                         "reason", "replay"),
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_no_secret,
                         "sluice_api_peer_refused_total", PEER_REFUSED_HELP,
                         "reason", "no_secret"),
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_busy, "sluice_api_peer_refused_total",
                         PEER_REFUSED_HELP, "reason", "busy"),
    SL_METRICS_COUNTER_L(sl_api_t, m_peer_route,
                         "sluice_api_peer_refused_total", PEER_REFUSED_HELP,
                         "reason", "route"),
    SL_METRICS_COUNTER(sl_api_t, m_answers_unsigned,
                       "sluice_api_forward_unsigned_total",
                       "Answers of a key's owner, as the group named it, "
                       "refused because they were not signed with "
                       "api_peer_secret (the lookup answered 502 "
                       "owner-unauthenticated)."),
    SL_METRICS_GAUGE(sl_api_t, m_meta_entries, "sluice_api_topic_cache_entries",
                     META_ENTRIES_HELP),
    SL_METRICS_COUNTER(sl_api_t, m_meta_evictions,
                       "sluice_api_topic_cache_evictions_total",
                       "Entries evicted from the API's full topic cache "
                       "(names that do not exist first)."),
};

/* What the guard counts, as families of the registry. */
static const sl_metric_def_t guard_defs[] = {
#define CLOSED_HELP                                                            \
        "API connections that sluice closed: a request not all in within "     \
        "api_request_timeout (deadline), one still waiting for its request "   \
        "closed to admit a newer connection of the same client "               \
        "(client_limit) or at api_max_connections (limit), or a new one "      \
        "closed at once because every other was being answered (refused)."
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, deadline,
                         "sluice_api_connections_closed_total", CLOSED_HELP,
                         "reason", "deadline"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, client_limit,
                         "sluice_api_connections_closed_total", CLOSED_HELP,
                         "reason", "client_limit"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, limit,
                         "sluice_api_connections_closed_total", CLOSED_HELP,
                         "reason", "limit"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, refused,
                         "sluice_api_connections_closed_total", CLOSED_HELP,
                         "reason", "refused"),
#undef CLOSED_HELP
    SL_METRICS_GAUGE(sl_connguard_metrics_t, open, "sluice_api_connections",
                     "API connections open, not counting those sluice closed "
                     "and libmicrohttpd has yet to clean up."),
};

/* ------------------------------------------------------------------ */
/* Start and stop.                                                      */

static char *read_file(const char *path, size_t max, char *errstr,
                       size_t errstr_size) {
        FILE *f = fopen(path, "rb");
        char *buf;
        size_t n;
        if (!f) {
                snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
                return NULL;
        }
        buf = sl_malloc(max + 1);
        n = fread(buf, 1, max, f);
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static void token_add(sl_api_t *api, const char *s, size_t len) {
        while (len && (*s == ' ' || *s == '\t' || *s == '\r')) {
                s++;
                len--;
        }
        while (len &&
               (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
                len--;
        if (!len || *s == '#')
                return;
        api->tokens = sl_realloc(api->tokens,
                                 sizeof(char *) * (size_t)(api->token_cnt + 1));
        api->tokens[api->token_cnt] = sl_malloc(len + 1);
        memcpy(api->tokens[api->token_cnt], s, len);
        api->tokens[api->token_cnt][len] = '\0';
        api->token_cnt++;
}

static void tokens_split(sl_api_t *api, const char *s, const char *seps) {
        while (*s) {
                size_t n = strcspn(s, seps);
                token_add(api, s, n);
                s += n;
                if (*s)
                        s++;
        }
}

static int tokens_load(sl_api_t *api, char *errstr, size_t errstr_size) {
        const char *env = getenv("SLUICE_API_TOKENS");
        if (api->conf->api_tokens_file) {
                char *buf = read_file(api->conf->api_tokens_file, 1 << 20,
                                      errstr, errstr_size);
                if (!buf)
                        return -1;
                tokens_split(api, buf, "\n");
                free(buf);
        }
        if (env)
                tokens_split(api, env, ",\n");
        if (!api->token_cnt) {
                snprintf(errstr, errstr_size,
                         "api_listen is set but no bearer token is "
                         "configured (api_tokens_file, SLUICE_API_TOKENS)");
                return -1;
        }
        return 0;
}

/* api_peer_secret, or the first line of api_peer_secret_file (its end
 * of line and trailing blanks cut), into api->peer_secret.  None is
 * fine (nothing is forwarded); a short one is an error.  The secret is
 * never in errstr. */
static int peer_secret_load(sl_api_t *api, char *errstr, size_t errstr_size) {
        const char *name = "api_peer_secret";
        char *s = NULL;
        size_t n;

        if (api->conf->api_peer_secret) {
                s = sl_strdup(api->conf->api_peer_secret);
        } else if (api->conf->api_peer_secret_file) {
                name = "api_peer_secret_file";
                s = read_file(api->conf->api_peer_secret_file, 4096, errstr,
                              errstr_size);
                if (!s)
                        return -1;
                s[strcspn(s, "\r\n")] = '\0';
        }
        if (!s)
                return 0;
        n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                s[--n] = '\0';
        if (n < SL_PEERAUTH_MIN_SECRET) {
                snprintf(errstr, errstr_size,
                         "%s: the secret must be %d bytes or more (it has "
                         "%zu)",
                         name, SL_PEERAUTH_MIN_SECRET, n);
                for (volatile char *p = s; *p; p++)
                        *p = 0;
                free(s);
                return -1;
        }
        api->peer_secret = s;
        api->peer_key.p = s;
        api->peer_key.len = n;
        api->replay =
            sl_peerauth_replay_new(SL_PEERAUTH_SKEW_MS, SL_PEERAUTH_REPLAY_MAX);
        return 0;
}

static void advertise(sl_api_t *api) {
        const char *listen = api->conf->api_advertise ? api->conf->api_advertise
                                                      : api->conf->api_listen;
        const char *colon = strrchr(listen, ':');
        char host[256];
        size_t hl = colon ? (size_t)(colon - listen) : 0;

        if (api->conf->api_advertise) {
                snprintf(api->advertised, sizeof(api->advertised), "%s",
                         listen);
                return;
        }
        if (hl >= sizeof(host))
                hl = sizeof(host) - 1;
        memcpy(host, listen, hl);
        host[hl] = '\0';
        if (!*host || !strcmp(host, "*") || !strcmp(host, "0.0.0.0") ||
            !strcmp(host, "[::]")) {
                gethostname(host, sizeof(host));
                host[sizeof(host) - 1] = '\0';
        }
        snprintf(api->advertised, sizeof(api->advertised), "%s:%d", host,
                 api->port);
}

/* Binds listen with libmicrohttpd.  Returns 0 or -1. */
static int api_bind(sl_api_t *api, char *errstr, size_t errstr_size) {
        const char *listen = api->conf->api_listen;
        struct sockaddr_storage ss = {0};
        struct addrinfo hints = {0}, *res = NULL;
        char host[256], port[16];
        const char *colon = strrchr(listen, ':');
        unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                         MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
        const union MHD_DaemonInfo *di;
        size_t hl;

        if (sl_http_listen_check(listen, errstr, errstr_size) == -1)
                return -1;
        hl = (size_t)(colon - listen);
        if (hl >= sizeof(host))
                hl = sizeof(host) - 1;
        memcpy(host, listen, hl);
        host[hl] = '\0';
        snprintf(port, sizeof(port), "%s", colon + 1);
        if (host[0] == '[') {
                size_t l = strlen(host);
                memmove(host, host + 1, l);
                if (l >= 2)
                        host[l - 2] = '\0';
        }
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        if (getaddrinfo(!*host || !strcmp(host, "*") ? NULL : host, port,
                        &hints, &res) ||
            !res) {
                snprintf(errstr, errstr_size, "api_listen %s: cannot resolve",
                         listen);
                return -1;
        }
        memcpy(&ss, res->ai_addr, res->ai_addrlen);
        if (res->ai_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        freeaddrinfo(res);
        if (api->tls_cert) {
                if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
                        snprintf(errstr, errstr_size,
                                 "api_tls_cert: libmicrohttpd was built "
                                 "without TLS");
                        return -1;
                }
                flags |= MHD_USE_TLS;
        }
        {
                /* The TLS options only with TLS: an empty array (its first
                 * item MHD_OPTION_END) adds nothing. */
                struct MHD_OptionItem tls[] = {
                    {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)api->tls_cert},
                    {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)api->tls_key},
                    {MHD_OPTION_END, 0, NULL},
                };
                api->daemon = MHD_start_daemon(
                    flags, 0, NULL, NULL, on_request, api,
                    /* The logger first, or libmicrohttpd says so on
                     * stderr. */
                    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, api,
                    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                    MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
                    MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, api,
                    MHD_OPTION_NOTIFY_CONNECTION, sl_connguard_mhd_notify,
                    api->guard, MHD_OPTION_CONNECTION_LIMIT,
                    sl_connguard_mhd_limit(api->guard),
                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                    MHD_OPTION_ARRAY, api->tls_cert ? tls : tls + 2,
                    MHD_OPTION_END);
        }
        if (!api->daemon) {
                snprintf(errstr, errstr_size,
                         "api_listen %s: cannot serve (address in use? bad "
                         "TLS key pair?)",
                         listen);
                return -1;
        }
        sl_connguard_mhd_listen(api->guard, api->daemon);
        if (sl_connguard_start(api->guard) == -1) {
                MHD_stop_daemon(api->daemon);
                api->daemon = NULL;
                snprintf(errstr, errstr_size,
                         "api_listen %s: cannot start a "
                         "thread",
                         listen);
                return -1;
        }
        di = MHD_get_daemon_info(api->daemon, MHD_DAEMON_INFO_BIND_PORT);
        api->port = di ? di->port : atoi(port);
        return 0;
}

/* The trust of forwarded lookups over HTTPS: api_tls_ca when set, else
 * the certificates of api_tls_cert itself (members that share one
 * certificate, as a Kubernetes Secret mounted in every pod, trust each
 * other and nothing else).  Returns 0 or -1. */
static int tls_client_new(sl_api_t *api, char *errstr, size_t errstr_size) {
        const char *ca = api->conf->api_tls_ca ? api->conf->api_tls_ca
                                               : api->conf->api_tls_cert;
        int n;
        if (gnutls_certificate_allocate_credentials(&api->tls_client) < 0) {
                api->tls_client = NULL;
                snprintf(errstr, errstr_size, "TLS: out of memory");
                return -1;
        }
        n = gnutls_certificate_set_x509_trust_file(api->tls_client, ca,
                                                   GNUTLS_X509_FMT_PEM);
        if (n <= 0) {
                snprintf(errstr, errstr_size, "%s: %s: no PEM certificate",
                         api->conf->api_tls_ca ? "api_tls_ca" : "api_tls_cert",
                         ca);
                if (n < 0)
                        snprintf(errstr, errstr_size, "%s: %s: %s",
                                 api->conf->api_tls_ca ? "api_tls_ca"
                                                       : "api_tls_cert",
                                 ca, gnutls_strerror(n));
                return -1;
        }
        return 0;
}

static void pipes_init(sl_api_t *api) {
        const sl_conf_t *conf = api->conf;
        api->pipes =
            sl_calloc((size_t)conf->pipeline_cnt + 1, sizeof(*api->pipes));
        for (int i = 0; i < conf->pipeline_cnt; i++) {
                const sl_pipeline_conf_t *pc = &conf->pipelines[i];
                const sl_opdef_t *op = sl_opdef_of(pc->type);
                api->pipes[i].pc = pc;
                if (op && op->api_new)
                        api->pipes[i].data = op->api_new(conf, i);
        }
}

static void api_free(sl_api_t *api) {
        /* Replays that run end between two records (what they committed
         * stays). */
        sl_apireplay_destroy(api->replays);
        if (api->producer) {
                atomic_store(&api->poll_run, 0);
                pthread_join(api->poller, NULL);
                rd_kafka_flush(api->producer, 2000);
                rd_kafka_destroy(api->producer);
        }
        for (int i = 0; i < api->token_cnt; i++) {
                /* Tokens are secrets: leave nothing in freed memory. */
                volatile char *t = api->tokens[i];
                for (size_t j = 0; t[j]; j++)
                        t[j] = 0;
                free(api->tokens[i]);
        }
        free(api->tokens);
        if (api->peer_secret) {
                for (volatile char *p = api->peer_secret; *p; p++)
                        *p = 0;
                free(api->peer_secret);
        }
        sl_peerauth_replay_destroy(api->replay);
        pthread_mutex_destroy(&api->replay_lock);
        free(api->tls_cert);
        free(api->tls_key);
        if (api->tls_client)
                gnutls_certificate_free_credentials(api->tls_client);
        /* After MHD_stop_daemon(): every connection was reported
         * CLOSED, the guard holds no descriptor. */
        sl_connguard_destroy(api->guard);
        for (int i = 0; api->pipes && i < api->conf->pipeline_cnt; i++) {
                const sl_opdef_t *op = sl_opdef_of(api->pipes[i].pc->type);
                if (api->pipes[i].data)
                        op->api_destroy(api->pipes[i].data);
        }
        free(api->pipes);
        free(api->queue);
        owners_clear(api);
        /* No lookup is in flight: the connections' threads are gone. */
        sl_topiccache_destroy(api->meta);
        pthread_mutex_destroy(&api->lock);
        pthread_mutex_destroy(&api->owner_lock);
        pthread_mutex_destroy(&api->meta_lock);
        free(api);
}

static void api_on_close(uv_handle_t *h) {
        api_free(h->data);
}

sl_api_t *sl_api_start(const sl_conf_t *conf, uv_loop_t *loop, sl_metrics_t *m,
                       sl_api_lookup_fn *fn, void *opaque, char *errstr,
                       size_t errstr_size) {
        sl_api_t *api = sl_calloc(1, sizeof(*api));
        sl_connguard_conf_t gc = {"api_listen", conf->api_max_connections,
                                  conf->api_max_connections_client,
                                  conf->api_request_timeout_ms};

        api->conf = conf;
        api->log_budget = (sl_log_budget_t)SL_LOG_BUDGET_INIT;
        sl_metrics_register(m, guard_defs, SL_ARRAY_SIZE(guard_defs),
                            &api->guard_m, NULL);
        sl_metrics_register(m, api_defs, SL_ARRAY_SIZE(api_defs), api, NULL);
        api->guard = sl_connguard_new(&gc, &api->guard_m);
        api->fn = fn;
        api->opaque = opaque;
        pthread_mutex_init(&api->lock, NULL);
        pthread_mutex_init(&api->owner_lock, NULL);
        pthread_mutex_init(&api->meta_lock, NULL);
        pthread_mutex_init(&api->replay_lock, NULL);
        api->meta = sl_topiccache_new(META_CAPACITY, META_LOOKUPS, api);
        sl_topiccache_set_ttl(api->meta, META_TTL_MS, META_TTL_MS);
        api->q_cap = conf->api_queue;
        api->queue = sl_calloc((size_t)api->q_cap, sizeof(*api->queue));
        snprintf(api->group, sizeof(api->group), "%s", conf->app_id);
        pipes_init(api);
        api->replays = sl_apireplay_new(conf);
        if (tokens_load(api, errstr, errstr_size) == -1 ||
            peer_secret_load(api, errstr, errstr_size) == -1)
                goto fail;
        if (conf->api_tls_cert) {
                if (!(api->tls_cert = read_file(conf->api_tls_cert, 1 << 20,
                                                errstr, errstr_size)) ||
                    !(api->tls_key = read_file(conf->api_tls_key, 1 << 20,
                                               errstr, errstr_size)))
                        goto fail;
                if (tls_client_new(api, errstr, errstr_size) == -1)
                        goto fail;
        }
        /* The port first (api_listen may say 0), then what is advertised,
         * then the producer (its client.id names the address). */
        if (api_bind(api, errstr, errstr_size) == -1)
                goto fail;
        advertise(api);
        if (api_producer_new(api, errstr, errstr_size) == -1) {
                MHD_stop_daemon(api->daemon);
                goto fail;
        }
        uv_async_init(loop, &api->async, api_on_async);
        api->async.data = api;
        sl_log(LOG_INFO, "API",
               "HTTP API on %s (port %d%s), advertised as %s; at most %d "
               "connections, %d per client, a request within %" PRId64 " ms",
               conf->api_listen, api->port, api->tls_cert ? ", TLS" : "",
               api->advertised, gc.max_conns, gc.per_client, gc.deadline_ms);
        if (api->peer_key.len)
                sl_log(LOG_INFO, "API",
                       "lookups of keys another instance owns are forwarded "
                       "to it with a credential made with api_peer_secret "
                       "(HMAC-SHA256), never with the client's token; its "
                       "answer must be signed likewise");
        else
                sl_log(LOG_NOTICE, "API",
                       "no api_peer_secret: lookups of keys another instance "
                       "owns are answered 421 forwarding-disabled, and "
                       "forwarded requests are refused (set the same "
                       "api_peer_secret on every instance to forward)");
        return api;
fail:
        api_free(api);
        return NULL;
}

const char *sl_api_advertised(const sl_api_t *api) {
        return api->advertised;
}

void sl_api_stop(sl_api_t *api) {
        if (!api)
                return;
        pthread_mutex_lock(&api->lock);
        api->stopping = 1;
        /* Lookups the loop will not answer any more. */
        while (api->q_cnt) {
                waiter_t *w = api->queue[api->q_head];
                api->q_head = (api->q_head + 1) % api->q_cap;
                api->q_cnt--;
                w->res = -1;
                waiter_answer(w);
        }
        pthread_mutex_unlock(&api->lock);
        /* Waits for the connections' threads: each waits at most
         * api_timeout for a delivery report, which the poller serves. */
        MHD_stop_daemon(api->daemon);
        api->daemon = NULL;
        uv_close((uv_handle_t *)&api->async, api_on_close);
}
