/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h — the HTTP server on the metrics address: /metrics, /healthz and
 * /readyz for Prometheus and Kubernetes probes.
 *
 *   GET /metrics  200, the registry in Prometheus text format 0.0.4
 *   GET /healthz  200 "ok" while the runtime says its loop is alive, else
 *                 503 with a one-line reason
 *   GET /readyz   200 "ready" once the runtime says so (every assigned
 *                 partition rebuilt), or 200 with the reason the runtime
 *                 gave a ready state ("ready; ..."), else 503 with a
 *                 one-line reason
 *   other paths   404;  methods other than GET and HEAD: 405
 *
 * Liveness has two sources, and /healthz says alive only when both do:
 *
 *   - a flag the loop sets (sl_http_set_alive): "the loop was started and
 *     has not been shut down";
 *   - optionally, a function asked on every request (sl_http_set_alive_fn),
 *     e.g. the loop watchdog's probe: "the loop turned recently".  The flag
 *     alone cannot say that, because a stuck loop cannot clear its own flag.
 *
 * Threading: libmicrohttpd serves every request on one internal thread of
 * its own, never on the libuv loop, so a slow scrape cannot stall the
 * pipelines and a stalled loop is seen by the liveness probe.  The runtime
 * sets the alive and ready states from the loop thread; they are published
 * to the server thread through an atomic and a mutex.  The alive function
 * runs on the server thread.
 *
 * Hostile clients: this is the liveness probe's port, so whoever can
 * reach it must not be able to make the probe fail.  The connections are
 * guarded (connguard.h): a request must be all in within a deadline,
 * however slowly it trickles; a client holds at most so many connections;
 * and a new connection past either limit closes the oldest connection
 * still waiting for its request rather than being turned away.  A probe,
 * which sends its request at once, is answered under any flood of slow or
 * idle clients, its own address's included.
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

typedef struct sl_http_s sl_http_t;

/*
 * Checks a listen address without binding it: "HOST:PORT" where HOST is an
 * IPv4 address, a host name, or an IPv6 address in brackets ("[::1]:9464");
 * an empty HOST or "*" means every IPv4 interface; PORT is 0-65535 (0 picks
 * a free port).  Returns 0, or -1 with the reason in errstr.  For config
 * validation.  Any thread.
 */
int sl_http_listen_check(const char *listen, char *errstr, size_t errstr_size);

/* What clients may hold of the server (the metrics_* keys; connguard.h
 * says what each bound does).  A field at 0 takes the default below. */
typedef struct sl_http_limits_s {
        int max_connections;        /* default 64 */
        int max_connections_client; /* per client address; default 32 */
        int64_t request_timeout_ms; /* the request's head; default 5 s */
} sl_http_limits_t;

/*
 * Starts serving on listen (see sl_http_listen_check()), rendering m on
 * /metrics, with limits (NULL: the defaults).  Counts what its guard
 * closes in m (sluice_http_connections_closed_total{reason},
 * sluice_http_connections).  The server starts not alive and not ready
 * ("starting").  m is borrowed: it must outlive the server.  Returns the
 * server, or NULL with the reason in errstr (bad address, address in use,
 * ...).  Call from the thread that will call sl_http_stop().
 */
sl_http_t *sl_http_start(const char *listen, sl_metrics_t *m,
                         const sl_http_limits_t *limits, char *errstr,
                         size_t errstr_size);

/* Stops serving, waiting for requests in progress, and frees h.  NULL is a
 * no-op. */
void sl_http_stop(sl_http_t *h);

/* The port actually bound (the ephemeral one when the address said 0). */
int sl_http_port(const sl_http_t *h);

/* What /healthz reports: alive non-zero while the loop runs.  Called from
 * the loop thread; NULL h is a no-op (no HTTP server configured). */
void sl_http_set_alive(sl_http_t *h, int alive);

/*
 * Asks fn, on the server thread, on every /healthz request (after the flag
 * of sl_http_set_alive() said alive): non-zero means alive, 200 "ok"; zero
 * means not alive, 503 with the reason fn wrote into why (a NUL-terminated
 * string of at most why_size - 1 bytes; line breaks become spaces; empty
 * reads "not alive").  fn must be quick and must not call
 * sl_http_set_alive_fn() (that would deadlock).  opaque is passed to fn and
 * is not owned.  A NULL fn removes the function.
 *
 * Replacing or removing the function waits for a call in progress, so once
 * sl_http_set_alive_fn(h, NULL, NULL) has returned, fn is not running and
 * will not be called again: opaque may then be freed.  Any thread; NULL h
 * is a no-op.
 */
void sl_http_set_alive_fn(sl_http_t *h,
                          int (*fn)(void *opaque, char *why, size_t why_size),
                          void *opaque);

/* What /readyz reports.  reason (copied; may be NULL) explains not ready,
 * e.g. "rebuilding 3 of 12 partitions", or is the body of a ready answer
 * (NULL or "" there: "ready"); line breaks become spaces and it is cut at
 * 255 bytes.  Called from the loop thread; NULL h is a no-op. */
void sl_http_set_ready(sl_http_t *h, int ready, const char *reason);

#endif
