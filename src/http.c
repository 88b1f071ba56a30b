/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.c — the metrics address, served by libmicrohttpd (see http.h).
 *
 * DESIGN
 *
 * libmicrohttpd runs with MHD_USE_INTERNAL_POLLING_THREAD: one thread of its
 * own accepts connections and calls handle_request() for each request.
 * Nothing here runs on the libuv loop.  That is deliberate: Prometheus and
 * the kubelet must get answers even while the loop is busy or stuck, and a
 * stuck loop must show up as a failing /healthz rather than as a hung
 * connection.  A stuck loop cannot say so itself, so /healthz also asks an
 * alive function, when one is set, on this thread (the loop watchdog's
 * probe, which reads the time of the loop's last turn from an atomic).
 *
 * State shared with the loop thread:
 *   - alive: an atomic int, written by the loop, read per request;
 *   - the alive function and its opaque: behind a mutex of their own, held
 *     across each call, so removing the function waits for a call in
 *     progress and the opaque can be freed right after;
 *   - ready and its reason: a flag and a short string, which must be read
 *     together, so both sit behind a mutex held only to copy them;
 *   - the metrics registry, which has its own lock for rendering.
 *
 * Every response is one small buffer handed to libmicrohttpd, which frees
 * it (or copies it) when sent.  Request bodies are never read: any request
 * is answered on the first call of the access handler.
 *
 * Connections are guarded (connguard.h), through libmicrohttpd's
 * connection notifications: STARTED and CLOSED open and close the guard's
 * entries, the access handler's call marks the request all in (BUSY: its
 * head is, and its body is never read), and NOTIFY_COMPLETED marks the
 * connection waiting again.  libmicrohttpd's own limit sits above the
 * guard's (sl_connguard_mhd_limit()) so that the guard, not libmicrohttpd,
 * decides who goes when the server is full; libmicrohttpd's inactivity
 * timeout (10 s) still bounds an answer nobody reads.  The guard's reaper
 * is a second thread of this server, and its counters are families of
 * the registry (guard_defs).
 */
#include "http.h"

#include "connguard.h"
#include "log.h"
#include "util.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define READY_REASON_MAX 256
#define ALIVE_REASON_MAX 256

typedef int(alive_fn_t)(void *opaque, char *why, size_t why_size);

/* The defaults of sl_http_limits_t (and of the metrics_* keys). */
#define DEF_MAX_CONNECTIONS        64
#define DEF_MAX_CONNECTIONS_CLIENT 32
#define DEF_REQUEST_TIMEOUT_MS     5000

struct sl_http_s {
        struct MHD_Daemon *daemon;
        sl_metrics_t *metrics; /* borrowed */
        sl_connguard_t *guard;
        sl_connguard_metrics_t guard_m;
        int port;
        atomic_int alive;
        pthread_mutex_t alive_lock; /* guards alive_fn and alive_opaque */
        alive_fn_t *alive_fn;
        void *alive_opaque;
        pthread_mutex_t lock; /* guards ready and reason */
        int ready;
        char reason[READY_REASON_MAX];
        /* While starting, the last message libmicrohttpd logged on the
         * starting thread, so a failed start can say why in errstr. */
        char starterr[256];
        atomic_int starting;
        pthread_t starter;
        sl_log_budget_t log_budget;
};

/*
 * Splits "HOST:PORT" / "[V6]:PORT" into host and port strings.  Returns 0,
 * or -1 with errstr set.
 */
static int listen_split(const char *listen, char *host, size_t hostsize,
                        char *port, size_t portsize, char *errstr,
                        size_t errstr_size) {
        const char *h, *colon;
        size_t hlen;

        if (!listen || !*listen) {
                snprintf(errstr, errstr_size, "empty listen address");
                return -1;
        }
        if (listen[0] == '[') {
                const char *close = strchr(listen, ']');
                if (!close || close[1] != ':') {
                        snprintf(errstr, errstr_size,
                                 "\"%s\": expected [IPV6]:PORT", listen);
                        return -1;
                }
                h = listen + 1;
                hlen = (size_t)(close - h);
                colon = close + 1;
        } else {
                colon = strrchr(listen, ':');
                if (!colon) {
                        snprintf(errstr, errstr_size,
                                 "\"%s\": expected HOST:PORT", listen);
                        return -1;
                }
                if (memchr(listen, ':', (size_t)(colon - listen))) {
                        snprintf(errstr, errstr_size,
                                 "\"%s\": an IPv6 address needs brackets, "
                                 "e.g. [::1]:9464",
                                 listen);
                        return -1;
                }
                h = listen;
                hlen = (size_t)(colon - listen);
                if (hlen == 0 || (hlen == 1 && h[0] == '*')) {
                        h = "0.0.0.0";
                        hlen = strlen(h);
                }
        }
        if (hlen == 0 || hlen >= hostsize) {
                snprintf(errstr, errstr_size, "\"%s\": bad host", listen);
                return -1;
        }
        memcpy(host, h, hlen);
        host[hlen] = '\0';

        const char *p = colon + 1;
        size_t plen = strlen(p);
        long v = 0;
        if (plen == 0 || plen > 5 || plen >= portsize) {
                snprintf(errstr, errstr_size, "\"%s\": bad port", listen);
                return -1;
        }
        for (size_t i = 0; i < plen; i++) {
                if (p[i] < '0' || p[i] > '9') {
                        snprintf(errstr, errstr_size, "\"%s\": bad port",
                                 listen);
                        return -1;
                }
                v = v * 10 + (p[i] - '0');
        }
        if (v > 65535) {
                snprintf(errstr, errstr_size, "\"%s\": port must be 0-65535",
                         listen);
                return -1;
        }
        memcpy(port, p, plen + 1);
        return 0;
}

/* Resolves listen to one socket address.  Returns 0, or -1 with errstr. */
static int listen_resolve(const char *listen, struct sockaddr_storage *ss,
                          char *errstr, size_t errstr_size) {
        char host[256], port[8];
        struct addrinfo hints = {0}, *res = NULL;
        int r;

        if (listen_split(listen, host, sizeof(host), port, sizeof(port), errstr,
                         errstr_size) == -1)
                return -1;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        r = getaddrinfo(host, port, &hints, &res);
        if (r != 0) {
                snprintf(errstr, errstr_size, "\"%s\": %s", listen,
                         gai_strerror(r));
                return -1;
        }
        sl_assert(res && res->ai_addrlen <= sizeof(*ss));
        memset(ss, 0, sizeof(*ss));
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        return 0;
}

int sl_http_listen_check(const char *listen, char *errstr, size_t errstr_size) {
        struct sockaddr_storage ss;
        return listen_resolve(listen, &ss, errstr, errstr_size);
}

/* libmicrohttpd's error messages, into our log (and errstr while
 * starting). */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
        sl_http_t *h = cls;
        char buf[512];
        size_t n;

        vsnprintf(buf, sizeof(buf), fmt, ap);
        n = strlen(buf);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
        if (atomic_load(&h->starting) &&
            pthread_equal(pthread_self(), h->starter))
                snprintf(h->starterr, sizeof(h->starterr), "%.*s",
                         (int)sizeof(h->starterr) - 1, buf);
        /* Clients make libmicrohttpd talk (a line for each one that leaves
         * mid-request, as every connection the guard closes does). */
        sl_log_budgeted(&h->log_budget, "HTTP", buf);
}

/*
 * Queues one response.  body is copied unless owned (then libmicrohttpd
 * frees it with free()).
 */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
                             const char *content_type, char *body, size_t len,
                             int owned) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(
            len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
        enum MHD_Result r;

        if (!resp) {
                if (owned)
                        free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                content_type);
        /* Probes and scrapes want the state now, never a cached copy. */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                                "no-store");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                                        "GET, HEAD");
        r = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn,
                                  unsigned int status, const char *text) {
        return reply(conn, status, "text/plain; charset=utf-8", (char *)text,
                     strlen(text), 0);
}

/* A reason on one line: a probe's output is logged line by line. */
static void one_line(char *s) {
        for (; *s; s++)
                if (*s == '\n' || *s == '\r')
                        *s = ' ';
}

/*
 * /healthz: the loop's flag, then the alive function if one is set.
 * Returns 1 if alive, else 0 with a one-line reason in why.
 */
static int healthz_alive(sl_http_t *h, char *why, size_t why_size) {
        int alive = 1;

        if (!atomic_load_explicit(&h->alive, memory_order_relaxed)) {
                snprintf(why, why_size, "event loop not running");
                return 0;
        }
        why[0] = '\0';
        pthread_mutex_lock(&h->alive_lock);
        if (h->alive_fn)
                alive = h->alive_fn(h->alive_opaque, why, why_size) != 0;
        pthread_mutex_unlock(&h->alive_lock);
        if (alive)
                return 1;
        why[why_size - 1] = '\0'; /* whatever fn did */
        if (!why[0])
                snprintf(why, why_size, "not alive");
        one_line(why);
        return 0;
}

/* Runs on the libmicrohttpd thread, once per request. */
static enum MHD_Result
handle_request(void *cls, struct MHD_Connection *conn, const char *url,
               const char *method, const char *version, const char *upload_data,
               size_t *upload_data_size, void **req_cls) {
        sl_http_t *h = cls;
        (void)version;
        (void)upload_data;
        (void)upload_data_size;
        (void)req_cls;

        /* The head is in, and the answer is given now: out of the
         * deadline's reach until it is sent. */
        sl_connguard_mhd_busy(h->guard, conn);

        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
            strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                                  "method not allowed\n");

        if (!strcmp(url, "/metrics")) {
                size_t len;
                char *text = sl_metrics_render(h->metrics, &len);
                return reply(conn, MHD_HTTP_OK,
                             "text/plain; version=0.0.4; charset=utf-8", text,
                             len, 1);
        }
        if (!strcmp(url, "/healthz")) {
                char why[ALIVE_REASON_MAX], body[ALIVE_REASON_MAX + 1];
                if (healthz_alive(h, why, sizeof(why)))
                        return reply_text(conn, MHD_HTTP_OK, "ok\n");
                snprintf(body, sizeof(body), "%s\n", why);
                return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, body);
        }
        if (!strcmp(url, "/readyz")) {
                char body[READY_REASON_MAX + 1];
                int ready;
                pthread_mutex_lock(&h->lock);
                ready = h->ready;
                snprintf(body, sizeof(body), "%s\n", h->reason);
                pthread_mutex_unlock(&h->lock);
                if (ready)
                        return reply_text(conn, MHD_HTTP_OK,
                                          strcmp(body, "\n") ? body
                                                             : "ready\n");
                return reply_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, body);
        }
        return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* NOTIFY_COMPLETED: the answer went out (or the request ended without
 * one); the connection waits for its next request, if any. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
        sl_http_t *h = cls;
        (void)req_cls;
        (void)toe;
        sl_connguard_mhd_idle(h->guard, conn);
}

/* What the guard counts, as families of the registry. */
static const sl_metric_def_t guard_defs[] = {
#define CLOSED_HELP                                                            \
        "Connections to metrics_listen that sluice closed: a request not "     \
        "all in within metrics_request_timeout (deadline), one still "         \
        "waiting for its request closed to admit a newer connection of the "   \
        "same client (client_limit) or at metrics_max_connections (limit), "   \
        "or a new one closed at once because every other was being "           \
        "answered (refused)."
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, deadline,
                         "sluice_http_connections_closed_total", CLOSED_HELP,
                         "reason", "deadline"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, client_limit,
                         "sluice_http_connections_closed_total", CLOSED_HELP,
                         "reason", "client_limit"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, limit,
                         "sluice_http_connections_closed_total", CLOSED_HELP,
                         "reason", "limit"),
    SL_METRICS_COUNTER_L(sl_connguard_metrics_t, refused,
                         "sluice_http_connections_closed_total", CLOSED_HELP,
                         "reason", "refused"),
#undef CLOSED_HELP
    SL_METRICS_GAUGE(sl_connguard_metrics_t, open, "sluice_http_connections",
                     "Connections open to metrics_listen, not counting those "
                     "sluice closed and libmicrohttpd has yet to clean up."),
};

sl_http_t *sl_http_start(const char *listen, sl_metrics_t *m,
                         const sl_http_limits_t *limits, char *errstr,
                         size_t errstr_size) {
        struct sockaddr_storage ss;
        unsigned int flags;
        sl_http_t *h;
        sl_connguard_conf_t gc = {"metrics_listen", DEF_MAX_CONNECTIONS,
                                  DEF_MAX_CONNECTIONS_CLIENT,
                                  DEF_REQUEST_TIMEOUT_MS};

        if (!m) {
                snprintf(errstr, errstr_size, "no metrics registry");
                return NULL;
        }
        if (listen_resolve(listen, &ss, errstr, errstr_size) == -1)
                return NULL;

        if (limits && limits->max_connections > 0)
                gc.max_conns = limits->max_connections;
        if (limits && limits->max_connections_client > 0)
                gc.per_client = limits->max_connections_client;
        if (limits && limits->request_timeout_ms > 0)
                gc.deadline_ms = limits->request_timeout_ms;

        h = sl_calloc(1, sizeof(*h));
        h->log_budget = (sl_log_budget_t)SL_LOG_BUDGET_INIT;
        h->metrics = m;
        sl_metrics_register(m, guard_defs, SL_ARRAY_SIZE(guard_defs),
                            &h->guard_m, NULL);
        h->guard = sl_connguard_new(&gc, &h->guard_m);
        atomic_init(&h->alive, 0);
        atomic_init(&h->starting, 0);
        pthread_mutex_init(&h->alive_lock, NULL);
        pthread_mutex_init(&h->lock, NULL);
        snprintf(h->reason, sizeof(h->reason), "starting");

        flags =
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
        if (ss.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;

        h->starter = pthread_self();
        atomic_store(&h->starting, 1);
        /* The port is ignored beside MHD_OPTION_SOCK_ADDR, but libmicrohttpd
         * names it in its error messages. */
        uint16_t port = ntohs(ss.ss_family == AF_INET6
                                  ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                  : ((struct sockaddr_in *)&ss)->sin_port);
        h->daemon = MHD_start_daemon(
            flags, port, NULL, NULL, handle_request, h,
            /* The logger must come first to catch start-up errors. */
            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_SOCK_ADDR,
            (struct sockaddr *)&ss,
            /* Scrapers and probes are few; the guard bounds what a flood
             * can take, and libmicrohttpd's limit is above its own. */
            MHD_OPTION_NOTIFY_CONNECTION, sl_connguard_mhd_notify, h->guard,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
            MHD_OPTION_CONNECTION_LIMIT, sl_connguard_mhd_limit(h->guard),
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
        atomic_store(&h->starting, 0);
        if (h->daemon)
                sl_connguard_mhd_listen(h->guard, h->daemon);
        if (h->daemon && sl_connguard_start(h->guard) == -1) {
                MHD_stop_daemon(h->daemon);
                h->daemon = NULL;
                snprintf(h->starterr, sizeof(h->starterr),
                         "cannot start a thread");
        }
        if (!h->daemon) {
                snprintf(errstr, errstr_size, "cannot listen on %s: %s", listen,
                         h->starterr[0] ? h->starterr : "libmicrohttpd failed");
                sl_connguard_destroy(h->guard);
                pthread_mutex_destroy(&h->alive_lock);
                pthread_mutex_destroy(&h->lock);
                free(h);
                return NULL;
        }

        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
        h->port = info ? (int)info->port : 0;
        sl_log(LOG_INFO, "HTTP",
               "serving /metrics, /healthz, /readyz on %s "
               "(port %d; at most %d connections, %d per client, a request "
               "within %" PRId64 " ms)",
               listen, h->port, gc.max_conns, gc.per_client, gc.deadline_ms);
        return h;
}

void sl_http_stop(sl_http_t *h) {
        if (!h)
                return;
        /* Every connection is reported CLOSED before this returns: the
         * guard holds no descriptor after it. */
        MHD_stop_daemon(h->daemon);
        sl_connguard_destroy(h->guard);
        pthread_mutex_destroy(&h->alive_lock);
        pthread_mutex_destroy(&h->lock);
        free(h);
}

int sl_http_port(const sl_http_t *h) {
        return h ? h->port : 0;
}

void sl_http_set_alive(sl_http_t *h, int alive) {
        if (h)
                atomic_store_explicit(&h->alive, alive != 0,
                                      memory_order_relaxed);
}

void sl_http_set_alive_fn(sl_http_t *h, alive_fn_t *fn, void *opaque) {
        if (!h)
                return;
        pthread_mutex_lock(&h->alive_lock);
        h->alive_fn = fn;
        h->alive_opaque = fn ? opaque : NULL;
        pthread_mutex_unlock(&h->alive_lock);
}

void sl_http_set_ready(sl_http_t *h, int ready, const char *reason) {
        if (!h)
                return;
        pthread_mutex_lock(&h->lock);
        h->ready = ready != 0;
        snprintf(h->reason, sizeof(h->reason), "%s",
                 reason && *reason ? reason : (ready ? "" : "not ready"));
        one_line(h->reason);
        pthread_mutex_unlock(&h->lock);
}
