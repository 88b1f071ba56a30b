/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apireq.h — the API's requests as data: the routes (the index here, the
 * operators' in their definitions), request paths and the body of PUT
 * /timers.
 *
 * These are the parts of the API that read bytes a client controls, kept
 * apart from the HTTP server, Kafka and the loop (api.c) so that they can
 * be unit-tested and fuzzed alone (tests/unit/test_apireq.c,
 * tests/fuzz/fuzz_apireq.c).  Pure: no I/O, any thread.
 *
 * The answer of another instance to a forwarded lookup is read here too.
 *
 * A path is /v1 (the index) or /v1/pipelines/{pipeline}/{what}/{key}, with
 * /{action} after the key for a route that has one (a group's /flush).
 * {pipeline} and {key} are percent-decoded; a key may hold any byte (NUL
 * included) but must not be empty.  A PUT /timers body becomes the record a
 * producer of the header format would write (its headers and value), which
 * the delay operator's route then checks exactly as the operator will
 * (sl_delay_input_parse(), opdef_delay.c).
 */
#ifndef SLUICE_APIREQ_H
#define SLUICE_APIREQ_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "delay_input.h"

typedef struct json_t json_t;

/*
 * ROUTES
 *
 * GET /v1 (the index) is the API's own; every other route belongs to an
 * operator (opdef.h: its definition's routes), under
 * /v1/pipelines/{pipeline}/{what}/{key}[/{action}], and serves its
 * pipelines only.  A route is a lookup (the owner's describe() answers,
 * task.h) or a write: build() turns the request into the record the API
 * produces, keyed by {key}, to the pipeline's topic of role `topic`, on the
 * partition its input_partitioner gives the key; once Kafka has it,
 * answer() says what the client gets.  api.c does the rest (HTTP, the
 * partition, the target check, the produce and its wait).
 */
typedef enum {
        SL_ROUTE_INDEX = 0, /* GET /v1 */
        SL_ROUTE_LOOKUP,
        SL_ROUTE_WRITE,
        SL_ROUTE_REPLAY,        /* POST /v1/pipelines/{p}/dlq/replay */
        SL_ROUTE_REPLAY_STATUS, /* GET /v1/pipelines/{p}/dlq/replay */
} sl_route_kind_t;

/* A write request: what build() reads, and the record it makes. */
typedef struct sl_apiwrite_s {
        /* The request. */
        const sl_pipeline_conf_t *pc;
        const void *data; /* the operator's api_new() for pc, or NULL */
        const char *key;  /* {key} decoded, NUL-terminated (may hold NULs) */
        size_t keylen;
        const char *body; /* the request body ("" when none), not NUL-ended */
        size_t bodylen;
        int64_t now_ms; /* when the request was read */

        /* The record, from build(); pointers stay valid until clear(). */
        const void *value; /* NULL: a null value (tombstone, cancel) */
        size_t value_len;
        const sl_hdr_t *hdrs; /* NULL: no headers */
        size_t hdr_cnt;
        int64_t timestamp_ms; /* 0: the producer's clock */
        /* A topic the record will have the operator write to (a timer's
         * target), or NULL: the API checks that it exists, and has
         * target_partition (-1: any), before it writes. */
        const char *target;
        int32_t target_partition;
        /* 1: ask the key's owner first whether it holds the key
         * (existed below). */
        int ask_existed;

        /* build()'s refusal: HTTP status, error code (static) and message. */
        int status;
        const char *code;
        char msg[512];

        /* The write, for answer(). */
        int32_t partition;
        int64_t offset;
        int existed; /* the owner held the key: 1, 0, or -1 unknown */

        /* The route's own: released by its clear(). */
        void *priv;
        char text[128];
        double num[2];
} sl_apiwrite_t;

typedef struct sl_route_s {
        const char *method;
        const char *path;   /* template, e.g. "/v1/pipelines/{pipeline}/..." */
        const char *what;   /* the collection segment ("timers", ...) */
        const char *action; /* the segment after {key} ("flush"), or NULL */
        sl_route_kind_t kind;
        /* SL_ROUTE_WRITE: the role of the topic written ("input",
         * "rates"); build(): 0, or -1 with w's status, code and msg set;
         * answer(): the JSON body (a new reference; NULL: an empty body)
         * and its status; clear() (may be NULL) releases w->priv. */
        const char *topic;
        int (*build)(sl_apiwrite_t *w);
        json_t *(*answer)(const sl_apiwrite_t *w, int *status);
        void (*clear)(sl_apiwrite_t *w);
        /* SL_ROUTE_LOOKUP: a member the owner's answer must hold (a
         * timer's "schedule"), else the route answers 404 with code
         * `lacks`; NULL: any answer. */
        const char *needs;
        const char *lacks;
} sl_route_t;

/* GET /v1. */
extern const sl_route_t sl_route_index;

/* The API's own routes of every pipeline with a DLQ, whatever its
 * operator: a DLQ replay (dlqreplay.h) started, and its state.  The path
 * has no {key} (sl_apireq_path_t.key is NULL). */
extern const sl_route_t sl_route_replay, sl_route_replay_status;

/* Every route, as GET /v1 lists them: the index, then each operator's in
 * the order of their api_rank (opdef.h), then the DLQ replay's two.
 * 0 <= i < sl_apireq_route_cnt(). */
int sl_apireq_route_cnt(void);
const sl_route_t *sl_apireq_route(int i);

/* A write route's build() and answer() for a DELETE: a null value, and
 * 204 with an empty body. */
int sl_apireq_build_tombstone(sl_apiwrite_t *w);
json_t *sl_apireq_answer_no_content(const sl_apiwrite_t *w, int *status);

/* A parsed request path. */
typedef struct sl_apireq_path_s {
        const sl_route_t *route; /* or NULL */
        int pipeline;            /* index into conf->pipelines, or -1 */
        char *key;               /* decoded id / key, owned (NUL-terminated) */
        size_t keylen;
        int bad; /* 0; 404: no such route; 405: a route, another method */
        char why[200];
        char allow[40]; /* 405: the methods the path takes ("GET, HEAD") */
} sl_apireq_path_t;

/* Parses url (the path as received, not decoded) for method against the
 * routes and conf's pipelines that the API serves.  Fills pp: route and
 * pipeline set and bad 0 when it names one, else route NULL and bad with a
 * reason in why (and, for a 405, the value of the answer's Allow header in
 * allow).  Free pp->key with sl_apireq_path_clear(). */
void sl_apireq_path_parse(const sl_conf_t *conf, const char *url,
                          const char *method, sl_apireq_path_t *pp);
void sl_apireq_path_clear(sl_apireq_path_t *pp);

/* The path of a lookup of key in pipeline pc (its operator's lookup
 * route), percent-encoded: what a forwarded lookup asks the owner.
 * Returns a malloc'd string. */
char *sl_apireq_lookup_path(const sl_pipeline_conf_t *pc, const void *key,
                            size_t keylen);

/* Percent-decodes s[0..len) into a new string (NUL-terminated; *outlen its
 * length, which may count NULs); NULL on a bad escape. */
char *sl_apireq_pct_decode(const char *s, size_t len, size_t *outlen);

/* A POST /dlq/replay body (JSON, every member optional; an empty body
 * is {}): reasons (a string or an array of strings), since and until
 * (epoch ms, or RFC 3339 text), limit (a count), dry_run and
 * from_beginning (booleans).  What the CLI's options say. */
#define SL_APIREQ_MAX_REASONS 16
typedef struct sl_apireq_replay_s {
        const char *reasons[SL_APIREQ_MAX_REASONS]; /* into doc */
        int reason_cnt;
        int64_t since, until, limit; /* -1: none */
        int dry_run, from_beginning;
        json_t *doc; /* owned */
} sl_apireq_replay_t;

/* Reads a POST /dlq/replay body into b.  Returns 0, or -1 with the error's
 * code ("bad-body") and a message in why; either way release b with
 * sl_apireq_replay_clear(). */
int sl_apireq_replay_read(const char *body, size_t len, sl_apireq_replay_t *b,
                          const char **code, char *why, size_t why_size);
void sl_apireq_replay_clear(sl_apireq_replay_t *b);

/* The most user headers a PUT /timers body may carry. */
#define SL_APIREQ_MAX_USER_HEADERS 64

/* A PUT /timers body as the record it becomes: the headers of the header
 * format (pointing into the JSON document and the two buffers) and the
 * value (owned). */
typedef struct sl_apireq_timer_s {
        /* The user's headers and the twelve that fields become. */
        sl_hdr_t hdrs[SL_APIREQ_MAX_USER_HEADERS + 12];
        size_t hdr_cnt;
        char at_buf[32], part_buf[32];
        char start_buf[32], until_buf[32], count_buf[32];
        char *value;
        size_t value_len;
        json_t *doc; /* the document the headers point into, owned */
} sl_apireq_timer_t;

/* Reads a PUT /timers body (JSON: target, delay | at, key, partition,
 * value | value_base64, headers; for a recurring timer every | cron, tz,
 * start, until, count, catch_up: the sluice-* headers of the same names)
 * into b, which must be zeroed.  Each field is given once at most.
 * Returns 0,
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
