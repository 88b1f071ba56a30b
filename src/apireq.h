/*
 * apireq.h — the API's requests as data: the route table, request paths
 * and the body of PUT /timers.
 *
 * These are the parts of the API that read bytes a client controls, kept
 * apart from the HTTP server, Kafka and the loop (api.c) so that they can
 * be unit-tested and fuzzed alone (tests/unit/test_apireq.c,
 * tests/fuzz/fuzz_apireq.c).  Pure: no I/O, any thread.
 *
 * The answer of another instance to a forwarded lookup is read here too.
 *
 * A path is /v1 (the index) or /v1/pipelines/{pipeline}/{what}/{key}, with
 * /flush after a group's key.  {pipeline} and {key} are percent-decoded;
 * a key may hold any byte (NUL included) but must not be empty.  A PUT
 * /timers body becomes the record a producer of the header format would
 * write (its headers and value), which api.c then checks exactly as the
 * operator will (sl_delay_input_parse()).
 */
#ifndef SLUICE_APIREQ_H
#define SLUICE_APIREQ_H

#include <stddef.h>

#include "config.h"
#include "delay_input.h"

typedef struct json_t json_t;

typedef enum {
        SL_ROUTE_INDEX,
        SL_ROUTE_TIMER_PUT,
        SL_ROUTE_TIMER_GET,
        SL_ROUTE_TIMER_DELETE,
        SL_ROUTE_KEY_GET,
        SL_ROUTE_RATE_PUT,
        SL_ROUTE_RATE_DELETE,
        SL_ROUTE_GROUP_GET,
        SL_ROUTE_GROUP_FLUSH,
        SL_ROUTE_CNT
} sl_route_id_t;

typedef struct sl_route_s {
        const char *method;
        const char *path;  /* template, e.g. "/v1/pipelines/{pipeline}/..." */
        const char *what;  /* the collection segment ("timers", ...) */
        sl_op_type_t type; /* the pipeline type served (0: none) */
        int flush;         /* .../{key}/flush */
} sl_route_t;

/* The route table, indexed by sl_route_id_t (GET /v1 and the OpenAPI
 * test list it). */
extern const sl_route_t sl_routes[SL_ROUTE_CNT];

/* A parsed request path. */
typedef struct sl_apireq_path_s {
        int route;    /* sl_route_id_t, or -1 */
        int pipeline; /* index into conf->pipelines, or -1 */
        char *key;    /* decoded id / key, owned (NUL-terminated) */
        size_t keylen;
        int bad; /* 0; 404: no such route; 405: a route, another method */
        char why[200];
} sl_apireq_path_t;

/* Parses url (the path as received, not decoded) for method against the
 * routes and conf's pipelines that the API serves.  Fills pp: route and
 * pipeline set and bad 0 when it names one, else route -1 and bad with a
 * reason in why.  Free pp->key with sl_apireq_path_clear(). */
void sl_apireq_path_parse(const sl_conf_t *conf, const char *url,
                          const char *method, sl_apireq_path_t *pp);
void sl_apireq_path_clear(sl_apireq_path_t *pp);

/* The path of a GET of key in pipeline pc (the one GET route that serves
 * its type), percent-encoded: what a forwarded lookup asks the owner.
 * Returns a malloc'd string. */
char *sl_apireq_lookup_path(const sl_pipeline_conf_t *pc, const void *key,
                            size_t keylen);

/* Percent-decodes s[0..len) into a new string (NUL-terminated; *outlen its
 * length, which may count NULs); NULL on a bad escape. */
char *sl_apireq_pct_decode(const char *s, size_t len, size_t *outlen);

/* The most user headers a PUT /timers body may carry. */
#define SL_APIREQ_MAX_USER_HEADERS 64

/* A PUT /timers body as the record it becomes: the headers of the header
 * format (pointing into the JSON document and the two buffers) and the
 * value (owned). */
typedef struct sl_apireq_timer_s {
        /* The user's headers and the five that fields become. */
        sl_hdr_t hdrs[SL_APIREQ_MAX_USER_HEADERS + 5];
        size_t hdr_cnt;
        char at_buf[32], part_buf[32];
        char *value;
        size_t value_len;
        json_t *doc; /* the document the headers point into, owned */
} sl_apireq_timer_t;

/* Reads a PUT /timers body (JSON: target, delay | at, key, partition,
 * value | value_base64, headers) into b, which must be zeroed.  Returns 0,
 * or -1 with the error's code (the API's, e.g. "bad-body") and a message
 * in why; either way release b with sl_apireq_timer_clear(). */
int sl_apireq_timer_read(const char *body, size_t len, sl_apireq_timer_t *b,
                         const char **code, char *why, size_t why_size);
void sl_apireq_timer_clear(sl_apireq_timer_t *b);

/* The header that names the instance that answered a lookup, and the one
 * that carries the owner's signature of its answer (peerauth.h's
 * SL_PEERAUTH_HDR: apireq.h stays apart from gnutls). */
#define SL_APIREQ_ANSWERED_HDR  "X-Sluice-Answered-By"
#define SL_APIREQ_PEER_AUTH_HDR "X-Sluice-Peer-Auth"

/* What the owner answered a forwarded lookup.  The header values are
 * their first word (a longer one is cut to fit), "" when absent. */
typedef struct sl_apireq_answer_s {
        int status; /* 100..599 */
        char retry_after[16];
        char answered_by[300];
        char peer_auth[160]; /* the whole value: "v1 mac=<64 hex>" */
        char *body;          /* owned, NUL-terminated (it may hold NULs) */
        size_t body_len;
} sl_apireq_answer_t;

/* Parses an HTTP/1.x answer read to the end of its connection (the API
 * forwards with Connection: close): buf holds len bytes and room for one
 * more, and is changed.  Returns 0 with *a filled (a->body owned by the
 * caller), or -1 with why ("is not an HTTP answer", "was cut short"). */
int sl_apireq_answer_parse(char *buf, size_t len, sl_apireq_answer_t *a,
                           char *why, size_t why_size);

#endif
