/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h — the synchronous HTTP/JSON API on [sluice] api_listen (docs/api.md):
 * schedule, look up and cancel timers; read a throttle key and
 * set its rate; read a debounce group.  Off unless api_listen is set.
 *
 *   GET    /v1                                   the route table
 *   PUT    /v1/pipelines/{p}/timers/{id}         schedule (upsert)
 *   GET    /v1/pipelines/{p}/timers/{id}         the timer as sluice holds it
 *   DELETE /v1/pipelines/{p}/timers/{id}         cancel
 *   GET    /v1/pipelines/{p}/keys/{key}          a throttle key
 *   PUT    /v1/pipelines/{p}/rates/{key}         set a key's rate
 *   DELETE /v1/pipelines/{p}/rates/{key}         back to the default rate
 *   GET    /v1/pipelines/{p}/groups/{key}        a debounce group
 *   POST   /v1/pipelines/{p}/groups/{key}/flush  flush a group now
 *   POST   /v1/pipelines/{p}/dlq/replay          start a DLQ replay
 *   GET    /v1/pipelines/{p}/dlq/replay          its state
 *
 * api/openapi.yaml describes every route; tests/unit/test_api.c checks the
 * two agree through sl_api_route_cnt()/sl_api_route().
 *
 * WRITES never need the partition's owner: they are records produced, by a
 * separate idempotent producer (acks=all), into the input (or rates) topic,
 * on the partition the pipeline's input_partitioner gives the key, exactly
 * as a producer on the header path would send them; the answer waits for
 * the delivery report.  A timer is validated by the header path's own code
 * (sl_delay_input_parse) before it is sent, so a 400 carries the reason the
 * DLQ would have given it.
 *
 * LOOKUPS need the owner's memory.  They are served off the loop thread,
 * but an operator's state is touched on the loop only: the request goes
 * through a bounded queue to the loop (uv_async), which calls the lookup
 * function the runtime gave (the operator's describe() hook), and the
 * connection's thread waits for the answer up to api_timeout.  A partition
 * this instance does not own is forwarded, over HTTP, to the member that
 * owns it: every member advertises its API address in its consumer's
 * client.id ("sluice-...@HOST:PORT"), and the group's assignment
 * (DescribeConsumerGroups) says who owns what.  The forwarded request and
 * the owner's answer prove themselves with api_peer_secret (peerauth.h),
 * never with the client's token; without the secret, such lookups are
 * answered 421 forwarding-disabled.
 *
 * DLQ REPLAYS run the CLI's engine on a thread each (apireplay.h): the
 * POST answers at once, and the state is asked for with GET.
 *
 * THREADS: libmicrohttpd runs a thread per connection (bounded by
 * api_max_connections); the producer's delivery reports are served by a
 * thread of this module; a DLQ replay by a thread of its own, which
 * sl_api_stop() ends (between two records) and waits for.  sl_api_start() and
 * sl_api_stop() are for the loop thread, before uv_run and after it stops
 * taking work.
 *
 * HOSTILE CLIENTS: the connections are guarded as the metrics address's
 * are (connguard.h): a request (TLS handshake, head and body) must be all
 * in within api_request_timeout however slowly it trickles, a client
 * address holds at most api_max_connections_per_client connections, and a
 * new connection past either limit closes the oldest connection still
 * waiting for its request.  A client that sends its request at once is
 * answered under any flood of slow or idle connections.
 */
#ifndef SL_API_H
#define SL_API_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "metrics.h"

typedef struct sl_api_s sl_api_t;

/* What the loop holds for a key (sl_api_lookup_fn). */
typedef enum {
        SL_API_FOUND = 0,   /* *jsonp set */
        SL_API_ABSENT,      /* the owner holds nothing for the key */
        SL_API_REBUILDING,  /* owned here, state not ready (or revoking) */
        SL_API_UNOWNED,     /* not assigned to this instance */
        SL_API_UNSUPPORTED, /* the operator has no describe() hook */
        SL_API_READING,     /* owned here; a record the answer needs is
                               being read back from Kafka: ask again */
        SL_API_GONE,        /* a timer whose payload record is gone
                               (*jsonp: sl_describe_gone()'s text) */
} sl_api_lookup_t;

/* Runs on the loop thread: the state pipeline (index into conf->pipelines)
 * holds for key on input partition `partition`.  On SL_API_FOUND *jsonp is
 * a malloc'd JSON object text, which the API frees. */
typedef sl_api_lookup_t(sl_api_lookup_fn)(void *opaque, int pipeline,
                                          int32_t partition, const void *key,
                                          size_t keylen, char **jsonp);

/*
 * Starts the API on conf->api_listen (must be set).  conf is borrowed and
 * must outlive the API; lookups arrive on loop through fn(opaque, ...).
 * Its counters go to m (borrowed, may be NULL; it must outlive the API).
 * Loads the bearer tokens (api_tokens_file, SLUICE_API_TOKENS: at least
 * one is required), the TLS key pair when configured, creates the API's
 * producer from [kafka], and binds.  Returns NULL and the reason in errstr
 * on failure.  Loop thread, before uv_run.
 */
sl_api_t *sl_api_start(const sl_conf_t *conf, uv_loop_t *loop, sl_metrics_t *m,
                       sl_api_lookup_fn *fn, void *opaque, char *errstr,
                       size_t errstr_size);

/* The address this instance advertises to the others ("host:port"). */
const char *sl_api_advertised(const sl_api_t *api);

/* Stops: lookups waiting for the loop are answered 503, connections are
 * closed after their requests, the producer is flushed (bounded) and
 * destroyed, and api freed.  Loop thread, while the loop still runs the
 * async handle's close (the memory goes on its next turn).  NULL is a
 * no-op. */
void sl_api_stop(sl_api_t *api);

/* The route table (for the OpenAPI test and GET /v1): method and path
 * template, e.g. "PUT", "/v1/pipelines/{pipeline}/timers/{id}". */
int sl_api_route_cnt(void);
void sl_api_route(int i, const char **method, const char **path);

/* 1 when the HTTP bearer header value auth ("Bearer TOKEN") names one of
 * tokens (constant time per token, whatever the input).  Pure. */
int sl_api_token_ok(const char *auth, char *const *tokens, int token_cnt);

#endif
