/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peerauth.h — the credential instances of one API give each other.
 *
 * A lookup of a key another instance owns is forwarded to it (api.h), at
 * the address that instance advertises in its consumer's client.id.  Any
 * client that can join the consumer group can advertise any address, so
 * the forwarded request must carry nothing a client gave (its bearer
 * token never leaves the instance it was sent to), and the answer must
 * prove it comes from an instance.  Both prove that their sender holds
 * api_peer_secret, the secret every instance of the group shares:
 *
 *   request   X-Sluice-Peer-Auth: v1 ts=<epoch ms> nonce=<32 hex> mac=<64 hex>
 *             mac = HMAC-SHA256(secret, "sluice-peer-request-v1", method,
 *                   path, to, from, ts, nonce, body)
 *   answer    X-Sluice-Peer-Auth: v1 mac=<64 hex>
 *             mac = HMAC-SHA256(secret, "sluice-peer-answer-v1", nonce of
 *                   the request, status, answered by, Retry-After, body)
 *
 * Each field enters the MAC as its length (8 bytes, big-endian) and its
 * bytes, so no two field lists give the same input.  `path` is the
 * request target as sent (percent-encoded), `to` the address the request
 * is sent to (the owner's advertised "host:port": the owner checks it is
 * its own, so a request captured on its way to one address is no good at
 * another), `from` the sender's advertised address (X-Sluice-Forwarded),
 * `answered by` the X-Sluice-Answered-By header, and an absent header is
 * the empty string.  Hex is lowercase.
 *
 * The owner accepts a request when its MAC verifies, its ts is within
 * SL_PEERAUTH_SKEW_MS of the owner's clock, and its nonce was not seen in
 * that window (sl_peerauth_replay_t); the forwarder accepts an answer when
 * its MAC verifies for the nonce it sent, which makes an old answer worth
 * nothing for a new request.
 *
 * Pure: no I/O (gnutls computes the MACs).  The replay guard is not
 * thread-safe; its user serialises calls.  The rest: any thread.
 */
#ifndef SL_PEERAUTH_H
#define SL_PEERAUTH_H

#include <stddef.h>
#include <stdint.h>

#define SL_PEERAUTH_HDR        "X-Sluice-Peer-Auth"
#define SL_PEERAUTH_SKEW_MS    30000
#define SL_PEERAUTH_MIN_SECRET 16 /* bytes */
/* Room for a header value, NUL included. */
#define SL_PEERAUTH_HDR_MAX 160
/* Nonces seen in one generation of the replay guard, at most. */
#define SL_PEERAUTH_REPLAY_MAX (1 << 18)

/* A shared secret (the bytes of api_peer_secret). */
typedef struct sl_peerauth_key_s {
        const void *p;
        size_t len;
} sl_peerauth_key_t;

/* A request's header, parsed. */
typedef struct sl_peerauth_req_s {
        int64_t ts_ms;
        char nonce[33]; /* 32 lowercase hex */
        char mac[65];   /* 64 lowercase hex */
} sl_peerauth_req_t;

/* What a request's MAC covers (see above; NULL strings read as ""). */
typedef struct sl_peerauth_what_s {
        const char *method, *path, *to, *from;
        const void *body;
        size_t body_len;
} sl_peerauth_what_t;

/*
 * The header value of a request (w at ts_ms with nonce, 32 lowercase hex
 * characters) into out (SL_PEERAUTH_HDR_MAX bytes).  Returns 0, or -1
 * when the MAC could not be computed.
 */
int sl_peerauth_request_sign(const sl_peerauth_key_t *key,
                             const sl_peerauth_what_t *w, int64_t ts_ms,
                             const char *nonce, char *out);

/* Parses a request's header value, strictly: "v1 ts=<1-16 digits>
 * nonce=<32 hex> mac=<64 hex>", nothing else.  Returns 0, or -1 with why
 * (NUL-terminated, at most why_size - 1 bytes). */
int sl_peerauth_request_parse(const char *value, sl_peerauth_req_t *r,
                              char *why, size_t why_size);

/* 1 when r's MAC is the one key gives w with r's ts and nonce (compared in
 * constant time), else 0. */
int sl_peerauth_request_verify(const sl_peerauth_key_t *key,
                               const sl_peerauth_req_t *r,
                               const sl_peerauth_what_t *w);

/* What an answer's MAC covers. */
typedef struct sl_peerauth_answer_s {
        const char *nonce; /* of the request */
        int status;
        const char *answered_by, *retry_after;
        const void *body;
        size_t body_len;
} sl_peerauth_answer_t;

/* The header value of answer a into out (SL_PEERAUTH_HDR_MAX bytes).
 * Returns 0 or -1. */
int sl_peerauth_answer_sign(const sl_peerauth_key_t *key,
                            const sl_peerauth_answer_t *a, char *out);

/* 1 when value (a header value, "v1 mac=<64 hex>"; NULL reads as absent)
 * is a's signature under key, else 0 (constant time in the MAC). */
int sl_peerauth_answer_verify(const sl_peerauth_key_t *key, const char *value,
                              const sl_peerauth_answer_t *a);

/*
 * The replay guard of a receiver: the nonces of requests accepted within
 * the last 2 * skew + 1 ms or more, in two generations of hash sets (a
 * generation lasts 2 * skew + 1 ms; the older is dropped when a new one
 * starts), so a nonce is remembered for as long as its ts can be within
 * skew of the receiver's clock.  At most SL_PEERAUTH_REPLAY_MAX nonces a
 * generation (8 bytes each, two slots per nonce); past it requests are
 * refused until the next generation.
 */
typedef struct sl_peerauth_replay_s sl_peerauth_replay_t;

typedef enum {
        SL_PEERAUTH_OK = 0,
        SL_PEERAUTH_STALE,  /* ts further than skew from now */
        SL_PEERAUTH_REPLAY, /* nonce seen in the window */
        SL_PEERAUTH_FULL,   /* the generation holds its maximum */
} sl_peerauth_verdict_t;

sl_peerauth_replay_t *sl_peerauth_replay_new(int64_t skew_ms, size_t max);
void sl_peerauth_replay_destroy(sl_peerauth_replay_t *r);

/* Checks a request already authenticated (its MAC verified) at now_ms (the
 * same clock as ts: epoch ms), and remembers its nonce when OK.  A clock
 * stepped back turns no generation; one stepped back by more than the
 * skew can let in again, within the step, a nonce forgotten before. */
sl_peerauth_verdict_t sl_peerauth_replay_check(sl_peerauth_replay_t *r,
                                               int64_t ts_ms, const char *nonce,
                                               int64_t now_ms);

#endif
