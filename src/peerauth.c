/* SPDX-License-Identifier: Apache-2.0 */
/*
 * peerauth.c — the instances' credential (see peerauth.h for the wire
 * format and what each MAC covers).
 *
 * MACs are computed with gnutls's HMAC-SHA256, field by field (each a
 * length and its bytes), never by building the input in a buffer, so a
 * path or a body of any size costs no copy.  Comparisons of MACs walk all
 * 64 hex characters whatever differs, as the bearer tokens' do.
 *
 * The replay guard keeps 64-bit keyed hashes of the nonces (sl_hash(),
 * SipHash under the process's random key) in open-addressed sets that
 * double up to their maximum; 0 marks a free slot.  Two nonces with one
 * hash would make the second look replayed: a refused forward, at odds of
 * one in 2^64 per pair.  Only requests whose MAC verified reach it, so
 * only holders of the secret can fill it.
 */
#include "peerauth.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "util.h"

#define MAC_LEN 32 /* SHA-256 */

/* ------------------------------------------------------------------ */
/* MACs.                                                                */

/* One field: its length, big-endian, then its bytes. */
static void mac_field(gnutls_hmac_hd_t h, const void *p, size_t len) {
        uint8_t l[8];
        for (int i = 0; i < 8; i++)
                l[i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        gnutls_hmac(h, l, sizeof(l));
        if (len)
                gnutls_hmac(h, p, len);
}

static void mac_str(gnutls_hmac_hd_t h, const char *s) {
        mac_field(h, s ? s : "", s ? strlen(s) : 0);
}

static void hex(const uint8_t *p, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
        out[2 * n] = '\0';
}

/* 1 when the 64 hex characters at a and b are equal; the time does not
 * depend on where they differ. */
static int mac_eq(const char *a, const char *b) {
        unsigned diff = 0;
        for (int i = 0; i < 2 * MAC_LEN; i++)
                diff |= (unsigned)(uint8_t)a[i] ^ (unsigned)(uint8_t)b[i];
        return diff == 0;
}

static int request_mac(const sl_peerauth_key_t *key,
                       const sl_peerauth_what_t *w, int64_t ts_ms,
                       const char *nonce, char out[2 * MAC_LEN + 1]) {
        gnutls_hmac_hd_t h;
        uint8_t d[MAC_LEN];
        char ts[24];

        if (gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, key->p, key->len) < 0)
                return -1;
        snprintf(ts, sizeof(ts), "%" PRId64, ts_ms);
        mac_str(h, "sluice-peer-request-v1");
        mac_str(h, w->method);
        mac_str(h, w->path);
        mac_str(h, w->to);
        mac_str(h, w->from);
        mac_str(h, ts);
        mac_str(h, nonce);
        mac_field(h, w->body, w->body ? w->body_len : 0);
        gnutls_hmac_deinit(h, d);
        hex(d, sizeof(d), out);
        return 0;
}

static int answer_mac(const sl_peerauth_key_t *key,
                      const sl_peerauth_answer_t *a,
                      char out[2 * MAC_LEN + 1]) {
        gnutls_hmac_hd_t h;
        uint8_t d[MAC_LEN];
        char status[16];

        if (gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, key->p, key->len) < 0)
                return -1;
        snprintf(status, sizeof(status), "%d", a->status);
        mac_str(h, "sluice-peer-answer-v1");
        mac_str(h, a->nonce);
        mac_str(h, status);
        mac_str(h, a->answered_by);
        mac_str(h, a->retry_after);
        mac_field(h, a->body, a->body ? a->body_len : 0);
        gnutls_hmac_deinit(h, d);
        hex(d, sizeof(d), out);
        return 0;
}

int sl_peerauth_request_sign(const sl_peerauth_key_t *key,
                             const sl_peerauth_what_t *w, int64_t ts_ms,
                             const char *nonce, char *out) {
        char mac[2 * MAC_LEN + 1];
        if (request_mac(key, w, ts_ms, nonce, mac) == -1)
                return -1;
        snprintf(out, SL_PEERAUTH_HDR_MAX, "v1 ts=%" PRId64 " nonce=%s mac=%s",
                 ts_ms, nonce, mac);
        return 0;
}

/* n lowercase hex characters at p, followed by end (a character, or
 * '\0'): 1, else 0. */
static int is_hex(const char *p, size_t n, char end) {
        for (size_t i = 0; i < n; i++)
                if (!((p[i] >= '0' && p[i] <= '9') ||
                      (p[i] >= 'a' && p[i] <= 'f')))
                        return 0;
        return p[n] == end;
}

int sl_peerauth_request_parse(const char *value, sl_peerauth_req_t *r,
                              char *why, size_t why_size) {
        const char *p = value;
        int64_t ts = 0;
        int digits = 0;

        memset(r, 0, sizeof(*r));
        if (!p || strncmp(p, "v1 ts=", 6)) {
                snprintf(why, why_size, "not a v1 peer credential");
                return -1;
        }
        for (p += 6; *p >= '0' && *p <= '9'; p++) {
                /* 16 digits: epoch ms until the year 316889. */
                if (++digits > 16) {
                        snprintf(why, why_size, "ts: too long");
                        return -1;
                }
                ts = ts * 10 + (*p - '0');
        }
        if (!digits || strncmp(p, " nonce=", 7)) {
                snprintf(why, why_size, "ts: epoch ms expected, then nonce=");
                return -1;
        }
        p += 7;
        if (!is_hex(p, 32, ' ') || strncmp(p + 32, " mac=", 5)) {
                snprintf(why, why_size,
                         "nonce: 32 lowercase hex digits expected, then mac=");
                return -1;
        }
        memcpy(r->nonce, p, 32);
        p += 32 + 5;
        if (!is_hex(p, 2 * MAC_LEN, '\0')) {
                snprintf(why, why_size,
                         "mac: 64 lowercase hex digits expected, and nothing "
                         "after");
                return -1;
        }
        memcpy(r->mac, p, 2 * MAC_LEN);
        r->ts_ms = ts;
        return 0;
}

int sl_peerauth_request_verify(const sl_peerauth_key_t *key,
                               const sl_peerauth_req_t *r,
                               const sl_peerauth_what_t *w) {
        char mac[2 * MAC_LEN + 1];
        if (request_mac(key, w, r->ts_ms, r->nonce, mac) == -1)
                return 0;
        return mac_eq(mac, r->mac);
}

int sl_peerauth_answer_sign(const sl_peerauth_key_t *key,
                            const sl_peerauth_answer_t *a, char *out) {
        char mac[2 * MAC_LEN + 1];
        if (answer_mac(key, a, mac) == -1)
                return -1;
        snprintf(out, SL_PEERAUTH_HDR_MAX, "v1 mac=%s", mac);
        return 0;
}

int sl_peerauth_answer_verify(const sl_peerauth_key_t *key, const char *value,
                              const sl_peerauth_answer_t *a) {
        char mac[2 * MAC_LEN + 1];
        if (!value || strncmp(value, "v1 mac=", 7) ||
            !is_hex(value + 7, 2 * MAC_LEN, '\0') ||
            answer_mac(key, a, mac) == -1)
                return 0;
        return mac_eq(mac, value + 7);
}

/* ------------------------------------------------------------------ */
/* The replay guard.                                                    */

typedef struct {
        uint64_t *slots; /* NULL: empty */
        size_t mask;     /* slots - 1 */
        size_t n;
} set_t;

struct sl_peerauth_replay_s {
        int64_t skew_ms, gen_ms;
        size_t max;
        set_t cur, prev;
        int64_t cur_start_ms; /* 0: no generation yet */
};

static void set_clear(set_t *s) {
        free(s->slots);
        memset(s, 0, sizeof(*s));
}

static int set_has(const set_t *s, uint64_t k) {
        if (!s->slots)
                return 0;
        for (size_t i = k & s->mask;; i = (i + 1) & s->mask) {
                if (s->slots[i] == k)
                        return 1;
                if (!s->slots[i])
                        return 0;
        }
}

static void set_put(set_t *s, uint64_t k) {
        size_t i = k & s->mask;
        while (s->slots[i])
                i = (i + 1) & s->mask;
        s->slots[i] = k;
        s->n++;
}

/* Adds k (not there yet): 0, or -1 when s holds max already. */
static int set_add(set_t *s, uint64_t k, size_t max) {
        if (s->n >= max)
                return -1;
        if (!s->slots || 2 * (s->n + 1) > s->mask + 1) {
                set_t g = {0};
                size_t cap = s->slots ? 2 * (s->mask + 1) : 1024;
                g.slots = sl_calloc(cap, sizeof(*g.slots));
                g.mask = cap - 1;
                for (size_t i = 0; s->slots && i <= s->mask; i++)
                        if (s->slots[i])
                                set_put(&g, s->slots[i]);
                free(s->slots);
                *s = g;
        }
        set_put(s, k);
        return 0;
}

sl_peerauth_replay_t *sl_peerauth_replay_new(int64_t skew_ms, size_t max) {
        sl_peerauth_replay_t *r = sl_calloc(1, sizeof(*r));
        sl_assert(skew_ms >= 1 && max >= 1);
        r->skew_ms = skew_ms;
        /* A generation outlives the window of any nonce it holds: a ts can
         * be within skew of the clock for 2 * skew after its arrival. */
        r->gen_ms = 2 * skew_ms + 1;
        r->max = max;
        return r;
}

void sl_peerauth_replay_destroy(sl_peerauth_replay_t *r) {
        if (!r)
                return;
        set_clear(&r->cur);
        set_clear(&r->prev);
        free(r);
}

sl_peerauth_verdict_t sl_peerauth_replay_check(sl_peerauth_replay_t *r,
                                               int64_t ts_ms, const char *nonce,
                                               int64_t now_ms) {
        uint64_t k;

        if (ts_ms < now_ms - r->skew_ms || ts_ms > now_ms + r->skew_ms)
                return SL_PEERAUTH_STALE;
        /* Every nonce of cur came before cur_start + gen (else the
         * generation would have turned then), and every one of prev
         * before cur_start: at a turn, what is dropped is a generation
         * old or more. */
        if (!r->cur_start_ms) {
                r->cur_start_ms = now_ms;
        } else if (now_ms - r->cur_start_ms >= 2 * r->gen_ms) {
                set_clear(&r->prev);
                set_clear(&r->cur);
                r->cur_start_ms = now_ms;
        } else if (now_ms - r->cur_start_ms >= r->gen_ms) {
                set_clear(&r->prev);
                r->prev = r->cur;
                memset(&r->cur, 0, sizeof(r->cur));
                r->cur_start_ms = now_ms;
        }
        k = sl_hash(nonce, strlen(nonce));
        if (!k)
                k = 1;
        if (set_has(&r->cur, k) || set_has(&r->prev, k))
                return SL_PEERAUTH_REPLAY;
        if (set_add(&r->cur, k, r->max) == -1)
                return SL_PEERAUTH_FULL;
        return SL_PEERAUTH_OK;
}
