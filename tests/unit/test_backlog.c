/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_backlog.c — the throttle's per-partition state over simulated time:
 * forward vs buffer, FIFO per key and no bypass, offsets set in delivery
 * order, checkpoint movement, expiry, rate changes, the payload cache and
 * its budget (200,000 buffered messages under 1 MiB, index bytes per
 * message measured), sweeps, a rebuild from the changelog and overflow, and
 * a long randomized run against a simple reference model of what is
 * forwarded, sent, and expired, and when.
 *
 * The tests play the operator: a fake overflow partition (an array indexed
 * by offset) receives appends, delivery reports are fed back in order, and a
 * FETCH is answered by a "re-read" that passes records from that offset on
 * to sl_backlog_fill().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backlog.h"
#include "rates.h"
#include "util.h"

static const int64_t T0 = 1767225600000; /* 2026-01-01, epoch ms */
static const int64_t HOUR = 3600000;

/*
 * Fixture: rates, cache, backlog and the fake overflow partition.
 */

typedef struct rec_s {
        char key[24];
        size_t keylen;
        int64_t deadline_ms;
        uint32_t size;
        char *payload;
        int marker; /* a transaction marker: no record to read */
} rec_t;

typedef struct fx_s {
        sl_rates_t *rates;
        sl_backlog_cache_t *cache;
        sl_backlog_t *bl;
        rec_t *ovf; /* the overflow partition, index = offset */
        size_t novf, capovf;
        size_t acked;  /* records at offsets < acked were reported */
        size_t window; /* records a FETCH re-reads */
        uint64_t fetches, reread;
} fx_t;

static fx_t *fx_new(const char *fallback, int64_t budget) {
        fx_t *f = sl_calloc(1, sizeof(*f));
        sl_rate_t r;
        char err[128];

        assert_int_equal(sl_parse_rate(fallback, &r, err, sizeof(err)), 0);
        f->rates = sl_rates_new(&r);
        f->cache = sl_backlog_cache_new(budget);
        f->bl = sl_backlog_new(f->rates, f->cache, 0);
        f->window = 64;
        return f;
}

static void fx_free(fx_t *f) {
        sl_backlog_destroy(f->bl);
        sl_backlog_cache_destroy(f->cache);
        sl_rates_destroy(f->rates);
        for (size_t i = 0; i < f->novf; i++)
                free(f->ovf[i].payload);
        free(f->ovf);
        free(f);
}

static void set_rate(fx_t *f, const char *key, const char *value) {
        char err[128];
        assert_int_equal(sl_rates_apply(f->rates, key, strlen(key), value,
                                        value ? strlen(value) : 0, err,
                                        sizeof(err)),
                         0);
}

static size_t ovf_put(fx_t *f, const char *key, int64_t deadline,
                      const char *payload, uint32_t size, int marker) {
        if (f->novf == f->capovf) {
                f->capovf = f->capovf ? f->capovf * 2 : 1024;
                f->ovf = sl_realloc(f->ovf, f->capovf * sizeof(*f->ovf));
        }
        rec_t *r = &f->ovf[f->novf];
        memset(r, 0, sizeof(*r));
        r->marker = marker;
        if (!marker) {
                r->keylen = strlen(key);
                assert_true(r->keylen < sizeof(r->key));
                memcpy(r->key, key, r->keylen);
                r->deadline_ms = deadline;
                r->size = size;
                r->payload = sl_malloc(size + 1);
                memcpy(r->payload, payload, size);
                r->payload[size] = '\0';
        }
        return f->novf++;
}

/* Offers a message; on APPEND writes it to the overflow partition (not yet
 * reported) and appends it.  Returns the verdict. */
static sl_backlog_verdict_t offer(fx_t *f, const char *key, int64_t deadline,
                                  const char *payload, int64_t now) {
        sl_backlog_key_t *k = NULL;
        uint32_t size = (uint32_t)strlen(payload);
        sl_backlog_verdict_t v =
            sl_backlog_offer(f->bl, key, strlen(key), deadline, now, &k);

        assert_non_null(k);
        if (v == SL_BACKLOG_APPEND) {
                ovf_put(f, key, deadline, payload, size, 0);
                sl_backlog_append(f->bl, k, deadline, payload, size);
        }
        return v;
}

/* Delivery reports for every record written so far, in order. */
static void ack_all(fx_t *f) {
        for (; f->acked < f->novf; f->acked++)
                if (!f->ovf[f->acked].marker)
                        assert_int_equal(
                            sl_backlog_acked(f->bl, (int64_t)f->acked), 0);
}

/* A transaction marker in the overflow partition (an offset with no
 * record). */
static void marker(fx_t *f) {
        ovf_put(f, NULL, 0, NULL, 0, 1);
}

/* Answers a FETCH: reads the overflow partition from offset, up to `max`
 * records, passing each to fill. */
static void reread(fx_t *f, int64_t offset, size_t max) {
        f->fetches++;
        for (size_t o = (size_t)offset; o < f->acked && max; o++, max--) {
                rec_t *r = &f->ovf[o];
                if (r->marker)
                        continue;
                f->reread++;
                assert_true(sl_backlog_fill(f->bl, r->key, r->keylen,
                                            (int64_t)o, r->payload,
                                            r->size) >= 0);
        }
}

/* Polls one item at now, answering FETCHes; returns 1 with *it (the caller
 * frees the payload) or 0 with *next. */
static int poll1(fx_t *f, int64_t now, sl_backlog_item_t *it, int64_t *next) {
        for (;;) {
                if (!sl_backlog_poll(f->bl, now, it, next))
                        return 0;
                if (it->action != SL_BACKLOG_FETCH)
                        return 1;
                assert_true(it->offset >= 0);
                reread(f, it->offset, f->window);
        }
}

static void expect_item(fx_t *f, int64_t now, sl_backlog_action_t action,
                        const char *key, const char *payload) {
        sl_backlog_item_t it;
        int64_t next;
        size_t keylen;

        if (!poll1(f, now, &it, &next))
                fail_msg("nothing due at +%lld, want %s of '%s'",
                         (long long)(now - T0), key, payload);
        const char *k = sl_backlog_key_key(it.key, &keylen);
        if (it.action != action || keylen != strlen(key) ||
            memcmp(k, key, keylen) || it.size != strlen(payload) ||
            memcmp(it.payload, payload, it.size))
                fail_msg("at +%lld got action %d key '%.*s' payload '%.*s', "
                         "want %d '%s' '%s'",
                         (long long)(now - T0), it.action, (int)keylen, k,
                         (int)it.size, (char *)it.payload, action, key,
                         payload);
        sl_backlog_payload_free(it.payload);
}

static void expect_none(fx_t *f, int64_t now, int64_t want_next) {
        sl_backlog_item_t it;
        int64_t next = -1;

        if (poll1(f, now, &it, &next)) {
                sl_backlog_payload_free(it.payload);
                fail_msg("unexpected action %d at +%lld", it.action,
                         (long long)(now - T0));
        }
        assert_int_equal(next, want_next);
}

static void verify(fx_t *f) {
        assert_int_equal(sl_backlog_verify(f->bl), 0);
}

/*
 * Basics
 */

static void test_forward_then_buffer(void **state) {
        (void)state;
        fx_t *f = fx_new("2/s", 1 << 20);

        /* Burst 2: two go through at once, the third waits. */
        assert_int_equal(offer(f, "a", T0 + HOUR, "a1", T0),
                         SL_BACKLOG_FORWARD);
        assert_int_equal(offer(f, "a", T0 + HOUR, "a2", T0),
                         SL_BACKLOG_FORWARD);
        assert_int_equal(offer(f, "a", T0 + HOUR, "a3", T0), SL_BACKLOG_APPEND);
        /* Another key is not slowed by a's backlog. */
        assert_int_equal(offer(f, "b", T0 + HOUR, "b1", T0),
                         SL_BACKLOG_FORWARD);
        verify(f);
        expect_none(f, T0, T0 + 500);
        /* Sent at its token time, even before the delivery report. */
        expect_item(f, T0 + 500, SL_BACKLOG_SEND, "a", "a3");
        verify(f);
        expect_none(f, T0 + 500, SL_BACKLOG_NEVER);
        ack_all(f);
        verify(f);
        /* The report of a message already sent only moves drained_to. */
        assert_int_equal(
            sl_backlog_key_drained_to(sl_backlog_find(f->bl, "a", 1)), 1);
        assert_int_equal(sl_backlog_checkpoint(f->bl), 1);

        sl_backlog_stats_t st;
        sl_backlog_stats(f->bl, &st);
        assert_int_equal(st.keys, 2);
        assert_int_equal(st.messages, 0);
        assert_int_equal(st.awaiting, 0);
        fx_free(f);
}

static void test_no_bypass_fifo(void **state) {
        (void)state;
        fx_t *f = fx_new("1/s burst=1", 1 << 20);
        char p[16];

        assert_int_equal(offer(f, "k", T0 + HOUR, "m0", T0),
                         SL_BACKLOG_FORWARD);
        for (int i = 1; i <= 5; i++) {
                snprintf(p, sizeof(p), "m%d", i);
                assert_int_equal(offer(f, "k", T0 + HOUR, p, T0),
                                 SL_BACKLOG_APPEND);
        }
        ack_all(f);
        /* A minute later the bucket is full again, but the key has a
         * backlog: a new message must queue behind it, never bypass it. */
        assert_int_equal(offer(f, "k", T0 + HOUR, "m6", T0 + 60000),
                         SL_BACKLOG_APPEND);
        ack_all(f);
        /* The backlog drains in input order, one per second (burst 1: the
         * level was capped at one token while the key waited). */
        for (int i = 1; i <= 7; i++) {
                int64_t at = T0 + 60000 + (i - 1) * 1000;
                snprintf(p, sizeof(p), "m%d", i);
                if (i > 1)
                        expect_none(f, at - 1, at);
                expect_item(f, at, SL_BACKLOG_SEND, "k", p);
                if (i == 1) {
                        /* Between sends the key still has a backlog. */
                        assert_int_equal(offer(f, "k", T0 + HOUR, "m7", at),
                                         SL_BACKLOG_APPEND);
                        ack_all(f);
                }
                verify(f);
        }
        expect_none(f, T0 + 70000, SL_BACKLOG_NEVER);
        fx_free(f);
}

static void test_fifo_per_key_timing(void **state) {
        (void)state;
        fx_t *f = fx_new("1/s burst=1", 1 << 20);
        char p[16];

        /* Three keys at different rates; each drains in order, at its own
         * rate, whatever the others do. */
        set_rate(f, "fast", "10/s burst=1");
        set_rate(f, "slow", "1/s burst=1");
        set_rate(f, "stop", "0/s");
        for (int i = 0; i < 4; i++) {
                const char *keys[] = {"fast", "slow", "stop"};
                for (int j = 0; j < 3; j++) {
                        snprintf(p, sizeof(p), "%s%d", keys[j], i);
                        offer(f, keys[j], T0 + 10000, p, T0);
                }
        }
        ack_all(f);
        /* fast0 and slow0 went through on their burst token; stop0 did
         * not: 0/s holds every message, the first one too. */
        expect_item(f, T0 + 100, SL_BACKLOG_SEND, "fast", "fast1");
        expect_item(f, T0 + 200, SL_BACKLOG_SEND, "fast", "fast2");
        expect_item(f, T0 + 300, SL_BACKLOG_SEND, "fast", "fast3");
        expect_none(f, T0 + 300, T0 + 1000);
        expect_item(f, T0 + 1000, SL_BACKLOG_SEND, "slow", "slow1");
        expect_item(f, T0 + 2000, SL_BACKLOG_SEND, "slow", "slow2");
        expect_item(f, T0 + 3000, SL_BACKLOG_SEND, "slow", "slow3");
        /* The stopped key never sends: its messages expire at their
         * deadline, in order, and go to the DLQ. */
        expect_none(f, T0 + 3000, T0 + 10000);
        expect_none(f, T0 + 9999, T0 + 10000);
        expect_item(f, T0 + 10000, SL_BACKLOG_EXPIRE, "stop", "stop0");
        expect_item(f, T0 + 10000, SL_BACKLOG_EXPIRE, "stop", "stop1");
        expect_item(f, T0 + 10000, SL_BACKLOG_EXPIRE, "stop", "stop2");
        expect_item(f, T0 + 10000, SL_BACKLOG_EXPIRE, "stop", "stop3");
        expect_none(f, T0 + 10000, SL_BACKLOG_NEVER);
        verify(f);
        fx_free(f);
}

static void test_offsets_in_delivery_order(void **state) {
        (void)state;
        fx_t *f = fx_new("0.001/s", 1 << 20);
        sl_backlog_key_t *a, *b;

        /* A slow rate, burst 1: the first message of each key is
         * forwarded, the rest wait. */
        offer(f, "a", T0 + HOUR, "a0", T0);
        offer(f, "b", T0 + HOUR, "b0", T0);
        offer(f, "a", T0 + HOUR, "a1", T0);
        offer(f, "b", T0 + HOUR, "b1", T0);
        marker(f); /* offsets need not be dense */
        offer(f, "a", T0 + HOUR, "a2", T0);
        a = sl_backlog_find(f->bl, "a", 1);
        b = sl_backlog_find(f->bl, "b", 1);
        assert_int_equal(sl_backlog_key_len(a), 2);
        assert_int_equal(sl_backlog_key_entry(a, 0)->offset,
                         SL_BACKLOG_UNKNOWN);

        /* Reports come in append order: a1@0, b1@1, a2@3. */
        assert_int_equal(sl_backlog_acked(f->bl, 0), 0);
        assert_int_equal(sl_backlog_key_entry(a, 0)->offset, 0);
        assert_int_equal(sl_backlog_key_entry(a, 1)->offset,
                         SL_BACKLOG_UNKNOWN);
        /* A report below the next offset is out of order: refused. */
        assert_int_equal(sl_backlog_acked(f->bl, 0), -1);
        assert_int_equal(sl_backlog_acked(f->bl, 1), 0);
        assert_int_equal(sl_backlog_key_entry(b, 0)->offset, 1);
        assert_int_equal(sl_backlog_acked(f->bl, 3), 0);
        assert_int_equal(sl_backlog_key_entry(a, 1)->offset, 3);
        /* Nothing left awaiting a report. */
        assert_int_equal(sl_backlog_acked(f->bl, 4), -1);
        assert_int_equal(sl_backlog_next_offset(f->bl), 4);
        verify(f);
        fx_free(f);
}

static void test_checkpoint(void **state) {
        (void)state;
        fx_t *f = fx_new("1/s burst=1", 1 << 20);
        int64_t prev;

        assert_int_equal(sl_backlog_checkpoint(f->bl), 0);
        offer(f, "a", T0 + HOUR, "a0", T0); /* forwarded */
        offer(f, "b", T0 + HOUR, "b0", T0); /* forwarded */
        offer(f, "a", T0 + HOUR, "a1", T0); /* @0 */
        offer(f, "a", T0 + HOUR, "a2", T0); /* @1 */
        /* Unknown offsets hold nothing back yet: they will be >= next. */
        assert_int_equal(sl_backlog_checkpoint(f->bl), 0);
        ack_all(f);
        assert_int_equal(sl_backlog_checkpoint(f->bl), 0);
        set_rate(f, "b", "0.1/s burst=1");
        offer(f, "b", T0 + HOUR, "b1", T0 + 10); /* @2 */
        offer(f, "a", T0 + HOUR, "a3", T0 + 10); /* @3 */
        ack_all(f);
        assert_int_equal(sl_backlog_checkpoint(f->bl), 0);

        expect_item(f, T0 + 1000, SL_BACKLOG_SEND, "a", "a1");
        assert_int_equal(sl_backlog_checkpoint(f->bl), 1);
        expect_item(f, T0 + 2000, SL_BACKLOG_SEND, "a", "a2");
        /* b1 @2 is now the oldest still needed. */
        assert_int_equal(sl_backlog_checkpoint(f->bl), 2);
        expect_item(f, T0 + 3000, SL_BACKLOG_SEND, "a", "a3");
        /* a is done, but b's slow backlog holds the checkpoint. */
        assert_int_equal(sl_backlog_checkpoint(f->bl), 2);
        assert_int_equal(
            sl_backlog_key_drained_to(sl_backlog_find(f->bl, "a", 1)), 4);
        /* b had 0.01 token at the switch (10 ms at 1/s), then 0.1/s. */
        expect_none(f, T0 + 9909, T0 + 9910);
        expect_item(f, T0 + 9910, SL_BACKLOG_SEND, "b", "b1");
        /* Nothing left: the checkpoint is the next offset. */
        assert_int_equal(sl_backlog_checkpoint(f->bl), 4);
        marker(f);
        marker(f);
        sl_backlog_set_next_offset(f->bl, 6);
        sl_backlog_set_next_offset(f->bl, 5); /* lower: ignored */
        assert_int_equal(sl_backlog_checkpoint(f->bl), 6);

        /* A long run: the checkpoint never moves back. */
        prev = sl_backlog_checkpoint(f->bl);
        srand(3);
        for (int64_t t = T0 + 20000; t < T0 + 80000; t += 10) {
                char key[16], p[32];
                sl_backlog_item_t it;
                int64_t next;
                snprintf(key, sizeof(key), "k%d", rand() % 5);
                snprintf(p, sizeof(p), "%lld", (long long)t);
                offer(f, key, t + 5000, p, t);
                if (rand() % 3 == 0)
                        ack_all(f);
                while (poll1(f, t, &it, &next))
                        sl_backlog_payload_free(it.payload);
                int64_t c = sl_backlog_checkpoint(f->bl);
                assert_true(c >= prev);
                prev = c;
        }
        verify(f);
        fx_free(f);
}

static void test_expiry(void **state) {
        (void)state;
        fx_t *f = fx_new("1/s burst=1", 1 << 20);

        offer(f, "a", T0 + HOUR, "a0", T0); /* forwarded */
        /* Already past its deadline on arrival: straight to the DLQ. */
        assert_int_equal(offer(f, "a", T0, "late", T0), SL_BACKLOG_EXPIRED);
        assert_int_equal(offer(f, "z", T0 - 5, "late", T0), SL_BACKLOG_EXPIRED);
        /* a1's deadline comes before a's next token (T0 + 1000). */
        offer(f, "a", T0 + 700, "a1", T0);
        offer(f, "a", T0 + 5000, "a2", T0);
        offer(f, "b", T0 + HOUR, "b0", T0); /* forwarded */
        offer(f, "b", T0 + 300, "b1", T0);  /* expires first */
        offer(f, "b", T0 + 1000, "b2", T0); /* deadline == next token */
        offer(f, "b", T0 + HOUR, "b3", T0);
        ack_all(f);

        expect_none(f, T0, T0 + 300);
        expect_item(f, T0 + 300, SL_BACKLOG_EXPIRE, "b", "b1");
        expect_none(f, T0 + 300, T0 + 700);
        expect_item(f, T0 + 700, SL_BACKLOG_EXPIRE, "a", "a1");
        /* At T0 + 1000 both have a token: a2 is sent; b2's deadline is
         * T0 + 1000, so it is never sent at that time: expired. */
        sl_backlog_item_t it;
        int64_t next;
        int seen_a2 = 0, seen_b2 = 0;
        for (int i = 0; i < 2; i++) {
                assert_int_equal(poll1(f, T0 + 1000, &it, &next), 1);
                if (it.size == 2 && !memcmp(it.payload, "a2", 2)) {
                        assert_int_equal(it.action, SL_BACKLOG_SEND);
                        seen_a2 = 1;
                } else {
                        assert_memory_equal(it.payload, "b2", 2);
                        assert_int_equal(it.action, SL_BACKLOG_EXPIRE);
                        seen_b2 = 1;
                }
                sl_backlog_payload_free(it.payload);
        }
        assert_true(seen_a2 && seen_b2);
        /* Expiry does not use a token: b3 goes out at once. */
        expect_item(f, T0 + 1000, SL_BACKLOG_SEND, "b", "b3");
        expect_none(f, T0 + 1000, SL_BACKLOG_NEVER);
        verify(f);
        fx_free(f);
}

static void test_rate_changes(void **state) {
        (void)state;
        fx_t *f = fx_new("1/s burst=1", 1 << 20);
        char p[16];

        set_rate(f, "*", "0.5/s burst=1");
        offer(f, "k", T0 + HOUR, "k0", T0); /* forwarded */
        for (int i = 1; i <= 4; i++) {
                snprintf(p, sizeof(p), "k%d", i);
                offer(f, "k", T0 + HOUR, p, T0);
        }
        ack_all(f);
        expect_none(f, T0, T0 + 2000);
        /* Half a second later the key gets 100/s: its head is due when
         * 0.25 token (earned at 0.5/s) plus 0.75 at 100/s is there. */
        set_rate(f, "k", "100/s burst=1");
        expect_none(f, T0 + 500, T0 + 508);
        expect_item(f, T0 + 508, SL_BACKLOG_SEND, "k", "k1");
        expect_item(f, T0 + 518, SL_BACKLOG_SEND, "k", "k2");
        /* Tombstone: back to the "*" default (0.5/s). */
        set_rate(f, "k", NULL);
        expect_none(f, T0 + 518, T0 + 2518);
        assert_true(
            sl_backlog_key_rate(sl_backlog_find(f->bl, "k", 1))->per_sec ==
            0.5);
        /* Stopped: nothing is sent, only deadlines remain. */
        set_rate(f, "*", "0/s");
        expect_none(f, T0 + 1000, T0 + HOUR);
        /* "*" removed: the pipeline default (1/s) applies.  The key kept
         * 0.241 token (482 ms at 0.5/s, then nothing at 0/s). */
        set_rate(f, "*", NULL);
        expect_none(f, T0 + 2000, T0 + 2759);
        expect_item(f, T0 + 2759, SL_BACKLOG_SEND, "k", "k3");
        expect_item(f, T0 + 3759, SL_BACKLOG_SEND, "k", "k4");
        verify(f);
        fx_free(f);
}

/*
 * Payload cache
 */

static void test_cache_policy(void **state) {
        (void)state;
        /* Room for about 10 payloads of 100 bytes. */
        fx_t *f = fx_new("0/s", 10 * (100 + SL_BACKLOG_CACHE_OVERHEAD));
        char p[101];
        sl_backlog_cache_stats_t cs;

        set_rate(f, "fast", "100/s burst=1");
        set_rate(f, "slow", "1/s burst=1");
        memset(p, 'x', 100);
        p[100] = '\0';
        /* Unreported payloads are pinned: 15 of them exceed the budget. */
        for (int i = 0; i < 15; i++)
                offer(f, "pin", T0 + HOUR, p, T0);
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(cs.entries, 15);
        assert_int_equal(cs.pinned_bytes, cs.bytes);
        assert_true(cs.bytes > cs.budget);
        verify(f);
        /* Reported, they count against the budget: 10 fit, 5 are dropped. */
        ack_all(f);
        verify(f);
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(cs.bytes, cs.budget);
        assert_int_equal(cs.pinned_bytes, 0);
        assert_int_equal(cs.evicted, 5);

        /* Two keys buffer side by side, reported as they go.  The stopped
         * key's payloads are needed last (never, by its rate), so they go
         * first; then the slow key's: its 1st message is needed in 1 s,
         * fast's 10th in 0.1 s. */
        offer(f, "fast", T0 + HOUR, p, T0); /* forwarded */
        offer(f, "slow", T0 + HOUR, p, T0); /* forwarded */
        for (int i = 0; i < 15; i++) {
                p[0] = (char)('a' + i);
                offer(f, "slow", T0 + HOUR, p, T0);
                offer(f, "fast", T0 + HOUR, p, T0);
                ack_all(f);
                verify(f);
                sl_backlog_cache_stats(f->cache, &cs);
                assert_true(cs.bytes <= cs.budget);
        }
        assert_int_equal(cs.pinned_bytes, 0);
        sl_backlog_key_t *fast = sl_backlog_find(f->bl, "fast", 4);
        sl_backlog_key_t *slow = sl_backlog_find(f->bl, "slow", 4);
        uint32_t nfast = 0, nslow = 0;
        for (uint32_t i = 0; i < 15; i++) {
                nfast += sl_backlog_entry_cached(sl_backlog_key_entry(fast, i));
                nslow += sl_backlog_entry_cached(sl_backlog_key_entry(slow, i));
        }
        /* Fast's 10 first (needed within 0.1 s) are kept, slow's none. */
        assert_int_equal(nfast, 10);
        assert_int_equal(nslow, 0);
        for (uint32_t i = 0; i < 10; i++)
                assert_true(
                    sl_backlog_entry_cached(sl_backlog_key_entry(fast, i)));

        /* A fill that would leave a gap is not taken; one that extends a
         * prefix is admitted only if it is needed sooner than what it
         * displaces. */
        rec_t *r = &f->ovf[f->acked - 1]; /* fast's last */
        assert_int_equal(sl_backlog_fill(f->bl, r->key, r->keylen,
                                         (int64_t)f->acked - 1, r->payload,
                                         r->size),
                         0);
        /* slow's head (needed in 1 s) loses to fast's 10 (all sooner). */
        int64_t slow_head = sl_backlog_key_entry(slow, 0)->offset;
        r = &f->ovf[slow_head];
        assert_int_equal(
            sl_backlog_fill(f->bl, "slow", 4, slow_head, r->payload, r->size),
            0);
        /* A wrong size is refused as foreign. */
        assert_int_equal(
            sl_backlog_fill(f->bl, "slow", 4, slow_head, r->payload, 3), -1);
        /* Unknown keys and offsets are ignored. */
        assert_int_equal(
            sl_backlog_fill(f->bl, "nope", 4, slow_head, r->payload, r->size),
            0);
        assert_int_equal(
            sl_backlog_fill(f->bl, "slow", 4, 999, r->payload, r->size), 0);
        sl_backlog_cache_stats(f->cache, &cs);
        assert_true(cs.refused >= 1);

        /* When slow's head falls due it is fetched, pinned, and sent even
         * with the cache full of fast's payloads. */
        sl_backlog_item_t it;
        int64_t next;
        int sent_slow = 0, sent_fast = 0;
        for (int64_t t = T0; t <= T0 + 1000; t++)
                while (poll1(f, t, &it, &next)) {
                        assert_int_equal(it.action, SL_BACKLOG_SEND);
                        assert_int_equal(it.size, 100);
                        if (it.key == slow)
                                sent_slow++;
                        else
                                sent_fast++;
                        sl_backlog_payload_free(it.payload);
                        verify(f);
                }
        assert_int_equal(sent_slow, 1);
        assert_int_equal(sent_fast, 15);
        assert_true(f->fetches >= 2);

        /* A smaller budget evicts at once; 0 keeps nothing unpinned. */
        sl_backlog_cache_set_budget(f->cache, 0);
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(cs.bytes, 0);
        verify(f);
        fx_free(f);
}

/* A parked key's head is cached whatever the budget, and other keys are
 * not held up while it waits for its payload. */
static void test_fetch_parks_only_its_key(void **state) {
        (void)state;
        fx_t *f = fx_new("10/s burst=1", 0);
        sl_backlog_item_t it;
        int64_t next;

        offer(f, "a", T0 + HOUR, "a0", T0);
        offer(f, "a", T0 + HOUR, "a1", T0);
        offer(f, "b", T0 + HOUR, "b0", T0);
        offer(f, "b", T0 + HOUR, "b1", T0);
        ack_all(f); /* budget 0: every payload dropped once reported */
        assert_int_equal(sl_backlog_poll(f->bl, T0 + 100, &it, &next), 1);
        assert_int_equal(it.action, SL_BACKLOG_FETCH);
        sl_backlog_key_t *first = it.key;
        assert_true(sl_backlog_key_parked(first));
        assert_null(it.payload);
        /* The other key is fetched too; the parked one gives nothing. */
        assert_int_equal(sl_backlog_poll(f->bl, T0 + 100, &it, &next), 1);
        assert_int_equal(it.action, SL_BACKLOG_FETCH);
        assert_true(it.key != first);
        assert_int_equal(sl_backlog_poll(f->bl, T0 + 5000, &it, &next), 0);
        assert_int_equal(next, SL_BACKLOG_NEVER);
        /* Unpark all (the re-reader restarted): fetched again. */
        sl_backlog_unpark_all(f->bl);
        verify(f);
        assert_int_equal(sl_backlog_poll(f->bl, T0 + 5000, &it, &next), 1);
        assert_int_equal(it.action, SL_BACKLOG_FETCH);
        /* The payload arrives: pinned although the budget is 0. */
        rec_t *r = &f->ovf[it.offset];
        assert_int_equal(sl_backlog_fill(f->bl, r->key, r->keylen, it.offset,
                                         r->payload, r->size),
                         1);
        verify(f);
        sl_backlog_cache_stats_t cs;
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(cs.bytes, cs.pinned_bytes);
        assert_true(cs.bytes > 0);
        /* Both keys' heads go out (the other one fetched on the way). */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(poll1(f, T0 + 5000, &it, &next), 1);
                assert_int_equal(it.action, SL_BACKLOG_SEND);
                sl_backlog_payload_free(it.payload);
        }
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(cs.bytes, 0);

        /* A record gone from the overflow topic: the head is dropped. */
        offer(f, "c", T0 + HOUR, "c0", T0 + 5000);
        offer(f, "c", T0 + HOUR, "c1", T0 + 5000);
        ack_all(f);
        assert_int_equal(sl_backlog_poll(f->bl, T0 + 5100, &it, &next), 1);
        assert_int_equal(it.action, SL_BACKLOG_FETCH);
        sl_backlog_key_t *k = it.key;
        assert_int_equal(sl_backlog_drop_head(f->bl, k, &it), 0);
        assert_null(it.payload);
        assert_int_equal(it.size, 2);
        assert_false(sl_backlog_key_parked(k));
        assert_int_equal(sl_backlog_key_len(k), 0);
        assert_int_equal(sl_backlog_drop_head(f->bl, k, &it), -1);
        verify(f);
        fx_free(f);
}

/*
 * 200,000 buffered messages with a 1 MiB cache.
 */

static void test_200k_with_small_cache(void **state) {
        (void)state;
        const int nkeys = 100, per_key = 2000, psize = 100;
        const int64_t budget = 1 << 20;
        fx_t *f = fx_new("1000/s burst=1", budget);
        int64_t *next_seq = sl_calloc((size_t)nkeys, sizeof(int64_t));
        char key[24], p[128];
        sl_backlog_stats_t st;
        sl_backlog_cache_stats_t cs;
        int64_t max_unpinned = 0;

        /* Every key's first message goes at once; the other 200,000 are
         * buffered, reported in batches of 1000 like a producer with a
         * bounded in-flight window. */
        for (int i = 0; i <= per_key; i++) {
                for (int k = 0; k < nkeys; k++) {
                        snprintf(key, sizeof(key), "cust-%03d", k);
                        snprintf(p, sizeof(p), "%s/%06d/", key, i);
                        memset(p + strlen(p), '.', sizeof(p) - strlen(p));
                        p[psize] = '\0';
                        sl_backlog_verdict_t v =
                            offer(f, key, T0 + HOUR, p, T0);
                        assert_int_equal(v, i == 0 ? SL_BACKLOG_FORWARD
                                                   : SL_BACKLOG_APPEND);
                }
                if (f->novf - f->acked >= 1000)
                        ack_all(f);
                sl_backlog_cache_stats(f->cache, &cs);
                if (cs.bytes - cs.pinned_bytes > max_unpinned)
                        max_unpinned = cs.bytes - cs.pinned_bytes;
                assert_true(cs.bytes - cs.pinned_bytes <= budget);
        }
        ack_all(f);
        verify(f);
        sl_backlog_stats(f->bl, &st);
        sl_backlog_cache_stats(f->cache, &cs);
        assert_int_equal(st.messages, nkeys * per_key);
        assert_int_equal(st.bytes, (uint64_t)nkeys * per_key * psize);
        double per_msg = (double)st.index_bytes / (double)st.messages;
        print_message("backlog: %llu messages, index %llu bytes = %.2f bytes "
                      "per message (entry %zu); keys %llu bytes for %llu "
                      "keys; cache %lld of %lld bytes, %llu payloads\n",
                      (unsigned long long)st.messages,
                      (unsigned long long)st.index_bytes, per_msg,
                      sizeof(sl_backlog_entry_t),
                      (unsigned long long)st.key_bytes,
                      (unsigned long long)st.keys, (long long)cs.bytes,
                      (long long)cs.budget, (unsigned long long)cs.entries);
        assert_true(per_msg <= 32.0);
        assert_true(cs.bytes <= budget);
        assert_int_equal(cs.pinned_bytes, 0);

        /* Drain it all (2 s at 1000/s per key), answering FETCHes with
         * sequential re-reads of 20,000 records (about what fits in the
         * cache); every message comes out once, in order. */
        f->window = 20000;
        int64_t now = T0, sent = 0;
        sl_backlog_item_t it;
        int64_t next;
        for (;;) {
                if (!poll1(f, now, &it, &next)) {
                        if (next == SL_BACKLOG_NEVER)
                                break;
                        assert_true(next > now);
                        now = next;
                        continue;
                }
                assert_int_equal(it.action, SL_BACKLOG_SEND);
                size_t kl;
                const char *kb = sl_backlog_key_key(it.key, &kl);
                assert_int_equal(kl, 8); /* "cust-NNN", not NUL-ended */
                int k =
                    (kb[5] - '0') * 100 + (kb[6] - '0') * 10 + (kb[7] - '0');
                snprintf(p, sizeof(p), "%.*s/%06lld/", (int)kl, kb,
                         (long long)(next_seq[k] + 1));
                assert_int_equal(it.size, psize);
                assert_memory_equal(it.payload, p, strlen(p));
                next_seq[k]++;
                sent++;
                sl_backlog_payload_free(it.payload);
                sl_backlog_cache_stats(f->cache, &cs);
                if (cs.bytes - cs.pinned_bytes > max_unpinned)
                        max_unpinned = cs.bytes - cs.pinned_bytes;
                assert_true(cs.bytes - cs.pinned_bytes <= budget);
                if (sent % 20000 == 0)
                        verify(f);
        }
        assert_int_equal(sent, nkeys * per_key);
        for (int k = 0; k < nkeys; k++)
                assert_int_equal(next_seq[k], per_key);
        assert_true(now - T0 <= 2 * per_key + 10); /* ~1000/s per key */
        assert_true(max_unpinned <= budget);
        print_message("drain: %lld messages in %.1f s simulated, %llu "
                      "fetches re-reading %llu records\n",
                      (long long)sent, (double)(now - T0) / 1000,
                      (unsigned long long)f->fetches,
                      (unsigned long long)f->reread);
        sl_backlog_stats(f->bl, &st);
        assert_int_equal(st.messages, 0);
        assert_int_equal(st.index_bytes, 16 * sizeof(void *));
        assert_int_equal(sl_backlog_checkpoint(f->bl), (int64_t)f->novf);
        verify(f);
        free(next_seq);
        fx_free(f);
}

/*
 * Dirty keys, sweeps, rebuild
 */

typedef struct clog_s {
        /* The changelog as the operator would write it: one record per key
         * (drained_to, tokens, updated_ms), tombstones remove it. */
        struct {
                char key[24];
                size_t keylen;
                int64_t drained_to;
                double tokens;
                int64_t updated_ms;
                int live;
        } r[64];
        int n;
        int tombstones;
} clog_t;

static void clog_write(sl_backlog_key_t *k, void *opaque) {
        clog_t *c = opaque;
        size_t kl;
        const char *kb = sl_backlog_key_key(k, &kl);
        int i;

        for (i = 0; i < c->n; i++)
                if (c->r[i].keylen == kl && !memcmp(c->r[i].key, kb, kl))
                        break;
        if (i == c->n) {
                assert_true(c->n < 64);
                c->n++;
                memcpy(c->r[i].key, kb, kl);
                c->r[i].keylen = kl;
        }
        c->r[i].drained_to = sl_backlog_key_drained_to(k);
        c->r[i].tokens = sl_backlog_key_bucket(k)->tokens;
        c->r[i].updated_ms = sl_backlog_key_bucket(k)->updated_ms;
        c->r[i].live = 1;
        *sl_backlog_key_opflags(k) |= 1; /* has a record */
}

static void clog_tombstone(const sl_backlog_key_t *k, void *opaque) {
        clog_t *c = opaque;
        size_t kl;
        const char *kb = sl_backlog_key_key(k, &kl);

        if (!(sl_backlog_key_get_opflags(k) & 1))
                return; /* never written: nothing to delete */
        for (int i = 0; i < c->n; i++)
                if (c->r[i].keylen == kl && !memcmp(c->r[i].key, kb, kl)) {
                        c->r[i].live = 0;
                        c->tombstones++;
                }
}

static void test_dirty_and_sweep(void **state) {
        (void)state;
        fx_t *f = fx_new("10/s burst=1", 1 << 20);
        clog_t clog = {0};

        offer(f, "a", T0 + HOUR, "a0", T0);       /* forwarded */
        offer(f, "b", T0 + HOUR, "b0", T0);       /* forwarded */
        offer(f, "b", T0 + HOUR, "b1", T0);       /* @0 */
        offer(f, "stopped", T0 + HOUR, "s0", T0); /* forwarded (burst) */
        set_rate(f, "stopped", "0/s");            /* stopped once empty */
        offer(f, "c", T0 + 5, "c0", T0);          /* forwarded */
        offer(f, "c", T0 + 50, "c1", T0);         /* @1, will expire */
        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
        assert_int_equal(clog.n, 4); /* a, b, stopped, c took tokens */
        /* Nothing is dropped while the keys are dirty-free but their
         * buckets are not full, or they hold a backlog. */
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0, 100, clog_tombstone, &clog), 0);

        /* c1 expires before its report: drained_to moves on the report. */
        expect_item(f, T0 + 50, SL_BACKLOG_EXPIRE, "c", "c1");
        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 5000, 100, clog_tombstone, &clog),
            1); /* only a: c awaits its report, b holds a backlog */
        assert_null(sl_backlog_find(f->bl, "a", 1));
        assert_int_equal(clog.tombstones, 1);
        ack_all(f);
        /* c's drained_to (2) is past the checkpoint (b1 @0 is still
         * needed): c must stay so a rebuild skips its expired record. */
        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
        assert_int_equal(sl_backlog_checkpoint(f->bl), 0);
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 5000, 100, clog_tombstone, &clog), 0);
        assert_non_null(sl_backlog_find(f->bl, "c", 1));

        expect_item(f, T0 + 5000, SL_BACKLOG_SEND, "b", "b1");
        /* Dirty keys are never dropped before their record is written. */
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 9000, 100, clog_tombstone, &clog), 1);
        assert_null(sl_backlog_find(f->bl, "c", 1));
        assert_non_null(sl_backlog_find(f->bl, "b", 1));
        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
        /* b's bucket refills at 10/s: full 100 ms after its take. */
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 5099, 100, clog_tombstone, &clog), 0);
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 5100, 100, clog_tombstone, &clog), 1);
        /* A stopped key never refills: dropping it would hand it a fresh
         * burst, so it stays. */
        assert_int_equal(
            sl_backlog_sweep(f->bl, T0 + 10 * HOUR, 100, clog_tombstone, &clog),
            0);
        assert_non_null(sl_backlog_find(f->bl, "stopped", 7));
        assert_int_equal(clog.tombstones, 3);
        /* The visit budget bounds the work per call. */
        for (int i = 0; i < 50; i++) {
                char key[16];
                snprintf(key, sizeof(key), "n%d", i);
                sl_backlog_key_t *k;
                sl_backlog_offer(f->bl, key, strlen(key), T0 + 20 * HOUR,
                                 T0 + 10 * HOUR, &k);
        }
        sl_backlog_flush_dirty(f->bl, NULL, NULL);
        size_t d1 = sl_backlog_sweep(f->bl, T0 + 11 * HOUR, 20, NULL, NULL);
        assert_true(d1 >= 19 && d1 <= 20); /* "stopped" may be visited */
        size_t d2 = sl_backlog_sweep(f->bl, T0 + 11 * HOUR, 1000, NULL, NULL);
        assert_int_equal(d1 + d2, 50);
        verify(f);
        fx_free(f);
}

/* Lists a key's buffered offsets into buf (NUL-separated text). */
static void key_offsets(const sl_backlog_key_t *k, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = '\0';
        for (uint32_t i = 0; i < sl_backlog_key_len(k); i++)
                n += (size_t)snprintf(
                    buf + n, size - n, "%lld,",
                    (long long)sl_backlog_key_entry(k, i)->offset);
}

typedef struct cmp_s {
        const sl_backlog_t *other;
        int checked;
} cmp_t;

static void compare_key(const sl_backlog_key_t *k, void *opaque) {
        cmp_t *c = opaque;
        size_t kl;
        const char *kb = sl_backlog_key_key(k, &kl);
        const sl_backlog_key_t *o = sl_backlog_find(c->other, kb, kl);
        char a[4096], b[4096];

        if (!sl_backlog_key_len(k))
                return;
        assert_non_null(o);
        key_offsets(k, a, sizeof(a));
        key_offsets(o, b, sizeof(b));
        if (strcmp(a, b))
                fail_msg("key '%.*s': live %s, rebuilt %s", (int)kl, kb, a, b);
        c->checked++;
}

static void test_rebuild(void **state) {
        (void)state;
        fx_t *f = fx_new("5/s burst=1", 1 << 20);
        clog_t clog = {0};
        sl_backlog_item_t it;
        int64_t next, t;

        /* A live run: five keys, some drained, some expired, a sweep. */
        srand(11);
        for (t = T0; t < T0 + 3000; t += 7) {
                char key[16], p[48];
                snprintf(key, sizeof(key), "k%d", rand() % 5);
                snprintf(p, sizeof(p), "%s@%lld", key, (long long)(t - T0));
                offer(f, key, t + 200 + rand() % 2000, p, t);
                if (rand() % 4 == 0) {
                        ack_all(f);
                        if (rand() % 2)
                                marker(f);
                }
                while (poll1(f, t, &it, &next))
                        sl_backlog_payload_free(it.payload);
                if (rand() % 10 == 0) {
                        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
                        sl_backlog_sweep(f->bl, t, 10, clog_tombstone, &clog);
                }
        }
        /* Commit: reports in, dirty keys written, checkpoint taken. */
        ack_all(f);
        sl_backlog_flush_dirty(f->bl, clog_write, &clog);
        int64_t ckpt = sl_backlog_checkpoint(f->bl);
        sl_backlog_stats_t live;
        sl_backlog_stats(f->bl, &live);
        assert_true(live.messages > 0);

        /* Rebuild from the changelog and the overflow partition. */
        sl_backlog_t *rb = sl_backlog_new(f->rates, f->cache, ckpt);
        for (int i = 0; i < clog.n; i++)
                if (clog.r[i].live)
                        assert_non_null(sl_backlog_restore_key(
                            rb, clog.r[i].key, clog.r[i].keylen,
                            clog.r[i].drained_to, clog.r[i].tokens,
                            clog.r[i].updated_ms));
        int64_t skipped = 0;
        for (size_t o = (size_t)ckpt; o < f->novf; o++) {
                rec_t *r = &f->ovf[o];
                if (r->marker)
                        continue;
                int got = sl_backlog_rebuild_append(
                    rb, r->key, r->keylen, (int64_t)o, r->deadline_ms,
                    o % 2 ? r->payload : NULL, r->size, t);
                assert_true(got == 0 || got == 1);
                skipped += !got;
        }
        sl_backlog_set_next_offset(rb, (int64_t)f->novf);
        assert_int_equal(sl_backlog_verify(rb), 0);

        /* Same backlog, key by key, offset by offset. */
        sl_backlog_stats_t again;
        sl_backlog_stats(rb, &again);
        assert_int_equal(again.messages, live.messages);
        assert_int_equal(again.bytes, live.bytes);
        cmp_t c = {rb, 0};
        sl_backlog_foreach(f->bl, compare_key, &c);
        assert_true(c.checked > 0);
        assert_int_equal(sl_backlog_checkpoint(rb), ckpt);
        assert_int_equal(sl_backlog_next_offset(rb), (int64_t)f->novf);
        print_message("rebuild: %llu messages from offset %lld, %lld done "
                      "records skipped\n",
                      (unsigned long long)again.messages, (long long)ckpt,
                      (long long)skipped);

        /* Rebuild refuses records out of order or after live appends. */
        assert_int_equal(
            sl_backlog_rebuild_append(rb, "k0", 2, 0, T0, NULL, 0, t), -1);
        /* Nor restores a key that already has a backlog. */
        for (int i = 0; i < 5; i++) {
                char key[16];
                snprintf(key, sizeof(key), "k%d", i);
                sl_backlog_key_t *k = sl_backlog_find(rb, key, strlen(key));
                if (k && sl_backlog_key_len(k)) {
                        assert_null(sl_backlog_restore_key(rb, key, strlen(key),
                                                           0, 0, t));
                        break;
                }
        }
        sl_backlog_destroy(rb);
        fx_free(f);
}

/*
 * Randomized run against a reference model
 */

#define MKEYS 8

/* The reference model: per key, a FIFO of message ids and an integer
 * bucket in thousandths of a token, refilled every millisecond by the rate
 * (tokens per second = thousandths per millisecond).  Every millisecond
 * every key's head is examined: expired if now >= deadline, else sent if a
 * token is there and the rate is not 0 (0/s holds everything).  No
 * schedule, no cache, no offsets: just the rules. */
typedef struct mmsg_s {
        int id;
        int64_t deadline;
} mmsg_t;

typedef struct mkey_s {
        int64_t rate, burst; /* own rate (integers); rate < 0: none */
        int exists;
        int64_t milli;
        mmsg_t *q;
        size_t qh, qn, qcap;
} mkey_t;

typedef struct model_s {
        mkey_t k[MKEYS];
        int64_t star_rate, star_burst; /* star_rate < 0: none */
        int64_t fb_rate, fb_burst;
} model_t;

static void m_rate(const model_t *m, int i, int64_t *r, int64_t *b) {
        if (m->k[i].rate >= 0) {
                *r = m->k[i].rate;
                *b = m->k[i].burst;
        } else if (m->star_rate >= 0) {
                *r = m->star_rate;
                *b = m->star_burst;
        } else {
                *r = m->fb_rate;
                *b = m->fb_burst;
        }
}

/* A token is there for key i: a whole one, and a rate that grants it. */
static int m_token(const model_t *m, int i) {
        int64_t r, b;
        m_rate(m, i, &r, &b);
        return r > 0 && m->k[i].milli >= 1000;
}

static void m_push(mkey_t *k, int id, int64_t deadline) {
        if (k->qn == k->qcap) {
                size_t nc = k->qcap ? k->qcap * 2 : 16;
                mmsg_t *nq = sl_malloc(nc * sizeof(*nq));
                for (size_t x = 0; x < k->qn; x++)
                        nq[x] = k->q[(k->qh + x) % k->qcap];
                free(k->q);
                k->q = nq;
                k->qcap = nc;
                k->qh = 0;
        }
        k->q[(k->qh + k->qn++) % k->qcap] = (mmsg_t){id, deadline};
}

static int m_holds(const mkey_t *k, int id) {
        for (size_t x = 0; x < k->qn; x++)
                if (k->q[(k->qh + x) % k->qcap].id == id)
                        return 1;
        return 0;
}

/* The event log: one entry per forward, send or expiry. */
typedef struct ev_s {
        int64_t t;
        int key, id;
        char kind; /* F(orward) S(end) E(xpire) */
        size_t seq;
} ev_t;

typedef struct evlog_s {
        ev_t *e;
        size_t n, cap;
} evlog_t;

static void ev_add(evlog_t *l, int64_t t, int key, int id, char kind) {
        if (l->n == l->cap) {
                l->cap = l->cap ? l->cap * 2 : 1024;
                l->e = sl_realloc(l->e, l->cap * sizeof(*l->e));
        }
        l->e[l->n] = (ev_t){t, key, id, kind, l->n};
        l->n++;
}

/* By key, then time, then the order the log saw them. */
static int ev_cmp(const void *a, const void *b) {
        const ev_t *x = a, *y = b;
        if (x->key != y->key)
                return x->key - y->key;
        if (x->t != y->t)
                return x->t < y->t ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Reads "k<key>#<id>" from a payload, which is not NUL-terminated. */
static void parse_msg(const void *payload, uint32_t size, int *ki, int *id) {
        char buf[64];
        size_t n = SL_MIN(size, sizeof(buf) - 1);

        memcpy(buf, payload, n);
        buf[n] = '\0';
        assert_int_equal(sscanf(buf, "k%d#%d", ki, id), 2);
}

/* Reports the oldest unreported record. */
static void ack_one(fx_t *f) {
        while (f->ovf[f->acked].marker)
                f->acked++;
        assert_int_equal(sl_backlog_acked(f->bl, (int64_t)f->acked), 0);
        f->acked++;
}

static void test_random_against_model(void **state) {
        (void)state;
        /* A cache of 700 bytes: room for a dozen payloads, so FETCHes,
         * evictions and refusals happen all the time. */
        fx_t *f = fx_new("3/s burst=2", 700);
        model_t m;
        evlog_t got = {0}, want = {0};
        int next_id = 0, checks = 0, rate_changes = 0;
        int64_t *ack_at = NULL; /* report times of in-flight appends, FIFO */
        size_t ah = 0, an = 0, acap = 0;
        int64_t last_ack_at = 0;
        char key[16], p[64];
        static const char dots[] = "........................................";

        memset(&m, 0, sizeof(m));
        for (int i = 0; i < MKEYS; i++)
                m.k[i].rate = -1;
        m.star_rate = -1;
        m.fb_rate = 3;
        m.fb_burst = 2;
        srand(12345);

        for (int64_t t = T0; t < T0 + 120000; t++) {
                /* 1. The model refills (the time from t - 1 to t). */
                for (int i = 0; i < MKEYS; i++) {
                        int64_t r, b;
                        if (!m.k[i].exists)
                                continue;
                        m_rate(&m, i, &r, &b);
                        m.k[i].milli = SL_MIN(m.k[i].milli + r, b * 1000);
                }

                /* 2. A rate change now and then: a key's own rate, "*", or
                 * a tombstone; the new burst caps what was earned. */
                if (rand() % 2000 == 0) {
                        int which = rand() % (MKEYS + 1);
                        int64_t r = rand() % 4 == 0 ? 0 : 1 + rand() % 40;
                        int64_t b = 1 + rand() % 5;
                        int tomb = rand() % 4 == 0;
                        char val[32];
                        snprintf(val, sizeof(val), "%lld/s burst=%lld",
                                 (long long)r, (long long)b);
                        if (which == MKEYS)
                                snprintf(key, sizeof(key), "*");
                        else
                                snprintf(key, sizeof(key), "k%d", which);
                        set_rate(f, key, tomb ? NULL : val);
                        if (which == MKEYS) {
                                m.star_rate = tomb ? -1 : r;
                                m.star_burst = b;
                        } else {
                                m.k[which].rate = tomb ? -1 : r;
                                m.k[which].burst = b;
                        }
                        for (int i = 0; i < MKEYS; i++) {
                                int64_t nr, nb;
                                m_rate(&m, i, &nr, &nb);
                                m.k[i].milli = SL_MIN(m.k[i].milli, nb * 1000);
                        }
                        rate_changes++;
                }

                /* 3. Delivery reports that are due, in append order. */
                while (an && ack_at[ah] <= t) {
                        ack_one(f);
                        ah = (ah + 1) % acap;
                        an--;
                }

                /* 4. Due work: the implementation... */
                sl_backlog_item_t it;
                int64_t next;
                while (poll1(f, t, &it, &next)) {
                        int id, ki;
                        parse_msg(it.payload, it.size, &ki, &id);
                        ev_add(&got, t, ki, id,
                               it.action == SL_BACKLOG_SEND ? 'S' : 'E');
                        if (it.action == SL_BACKLOG_SEND)
                                assert_true(t < it.deadline_ms);
                        else
                                assert_true(t >= it.deadline_ms);
                        sl_backlog_payload_free(it.payload);
                }
                /* ...and the model: every key's head, every millisecond. */
                for (int i = 0; i < MKEYS; i++) {
                        mkey_t *k = &m.k[i];
                        while (k->qn) {
                                mmsg_t *h = &k->q[k->qh];
                                if (t >= h->deadline) {
                                        ev_add(&want, t, i, h->id, 'E');
                                } else if (m_token(&m, i)) {
                                        k->milli -= 1000;
                                        ev_add(&want, t, i, h->id, 'S');
                                } else {
                                        break;
                                }
                                k->qh = (k->qh + 1) % k->qcap;
                                k->qn--;
                        }
                }

                /* 5. New input: bursts of a few messages on random keys,
                 * now and then one already past its deadline. */
                if (rand() % 40 == 0) {
                        int n = 1 + rand() % 6;
                        for (int j = 0; j < n; j++) {
                                int i = rand() % MKEYS, id = next_id++;
                                int64_t dl = rand() % 50 == 0
                                                 ? t - rand() % 10
                                                 : t + 1 + rand() % 4000;
                                mkey_t *k = &m.k[i];
                                char mv, iv;

                                snprintf(key, sizeof(key), "k%d", i);
                                snprintf(p, sizeof(p), "k%d#%d#%.*s", i, id,
                                         rand() % 40, dots);
                                sl_backlog_verdict_t v =
                                    offer(f, key, dl, p, t);
                                iv = v == SL_BACKLOG_FORWARD  ? 'F'
                                     : v == SL_BACKLOG_APPEND ? 'A'
                                                              : 'E';
                                if (!k->exists) {
                                        int64_t r, b;
                                        m_rate(&m, i, &r, &b);
                                        k->exists = 1;
                                        k->milli = b * 1000;
                                }
                                if (dl <= t) {
                                        mv = 'E';
                                } else if (!k->qn && m_token(&m, i)) {
                                        k->milli -= 1000;
                                        mv = 'F';
                                } else {
                                        m_push(k, id, dl);
                                        mv = 'A';
                                }
                                if (iv != mv)
                                        fail_msg("+%lld k%d msg %d: verdict "
                                                 "%c, model says %c",
                                                 (long long)(t - T0), i, id, iv,
                                                 mv);
                                if (iv == 'F') {
                                        ev_add(&got, t, i, id, 'F');
                                        ev_add(&want, t, i, id, 'F');
                                }
                                if (v != SL_BACKLOG_APPEND)
                                        continue;
                                /* Its report comes 0..30 ms later, in
                                 * append order; sometimes a transaction
                                 * marker takes the next offset. */
                                if (an == acap) {
                                        size_t nc = acap ? acap * 2 : 64;
                                        int64_t *na =
                                            sl_malloc(nc * sizeof(*na));
                                        for (size_t x = 0; x < an; x++)
                                                na[x] = ack_at[(ah + x) % acap];
                                        free(ack_at);
                                        ack_at = na;
                                        acap = nc;
                                        ah = 0;
                                }
                                int64_t at = t + rand() % 30;
                                if (at < last_ack_at)
                                        at = last_ack_at;
                                last_ack_at = at;
                                ack_at[(ah + an++) % acap] = at;
                                if (rand() % 5 == 0)
                                        marker(f);
                        }
                }

                /* 6. Commit-time housekeeping: dropping keys must change
                 * no decision. */
                if (t % 97 == 0) {
                        sl_backlog_flush_dirty(f->bl, NULL, NULL);
                        sl_backlog_sweep(f->bl, t, 4, NULL, NULL);
                }
                /* 7. Invariants, and the checkpoint: the smallest reported
                 * offset still buffered in the model, or the next offset. */
                if (t % 500 == 0) {
                        int64_t want_ck = sl_backlog_next_offset(f->bl);
                        verify(f);
                        for (size_t o = 0; o < f->acked; o++) {
                                int ki, id;
                                if (f->ovf[o].marker)
                                        continue;
                                parse_msg(f->ovf[o].payload, f->ovf[o].size,
                                          &ki, &id);
                                if (m_holds(&m.k[ki], id)) {
                                        want_ck = (int64_t)o;
                                        break;
                                }
                        }
                        assert_int_equal(sl_backlog_checkpoint(f->bl), want_ck);
                        checks++;
                }
        }

        /* Same events, key by key, in the same order at the same times. */
        qsort(got.e, got.n, sizeof(*got.e), ev_cmp);
        qsort(want.e, want.n, sizeof(*want.e), ev_cmp);
        for (size_t i = 0; i < SL_MIN(got.n, want.n); i++) {
                ev_t *g = &got.e[i], *w = &want.e[i];
                if (g->t != w->t || g->key != w->key || g->id != w->id ||
                    g->kind != w->kind)
                        fail_msg("event %zu: got k%d msg %d %c at +%lld, "
                                 "model k%d msg %d %c at +%lld",
                                 i, g->key, g->id, g->kind,
                                 (long long)(g->t - T0), w->key, w->id, w->kind,
                                 (long long)(w->t - T0));
        }
        assert_int_equal(got.n, want.n);
        size_t kinds[3] = {0, 0, 0};
        for (size_t i = 0; i < got.n; i++)
                kinds[got.e[i].kind == 'F'   ? 0
                      : got.e[i].kind == 'S' ? 1
                                             : 2]++;
        sl_backlog_cache_stats_t cs;
        sl_backlog_cache_stats(f->cache, &cs);
        print_message("model: %d messages, %zu forwarded, %zu sent from the "
                      "backlog, %zu expired, %d rate changes, %llu fetches, "
                      "%llu evictions, %d checkpoint checks: all agree\n",
                      next_id, kinds[0], kinds[1], kinds[2], rate_changes,
                      (unsigned long long)f->fetches,
                      (unsigned long long)cs.evicted, checks);
        assert_true(kinds[0] > 100 && kinds[1] > 100 && kinds[2] > 10);
        assert_true(f->fetches > 10 && rate_changes > 10);

        for (int i = 0; i < MKEYS; i++)
                free(m.k[i].q);
        free(got.e);
        free(want.e);
        free(ack_at);
        fx_free(f);
}

/*
 * Randomized run with slow re-reads, two partitions sharing one cache
 */

#define PKEYS 6

typedef struct fetchreq_s {
        int part;
        int64_t offset, at;
} fetchreq_t;

static void test_random_delayed_fetches(void **state) {
        (void)state;
        fx_t *fa = fx_new("20/s burst=3", 1500);
        fx_t *fb = sl_calloc(1, sizeof(*fb));
        fx_t *parts[2];
        int last_id[2][PKEYS];
        int next_id = 0, done = 0, lost = 0, unparks = 0;
        fetchreq_t *fq = NULL;
        size_t fqn = 0, fqcap = 0;
        int64_t *ack_at[2] = {NULL, NULL};
        size_t ah[2] = {0, 0}, an[2] = {0, 0}, acap[2] = {0, 0};
        int64_t t, end = T0 + 60000;
        char key[16], p[64];
        static const char dots[] = "........................................";

        /* Partition b shares a's rates table and cache. */
        fb->rates = fa->rates;
        fb->cache = fa->cache;
        fb->bl = sl_backlog_new(fa->rates, fa->cache, 0);
        fb->window = 64;
        parts[0] = fa;
        parts[1] = fb;
        for (int q = 0; q < 2; q++)
                for (int i = 0; i < PKEYS; i++)
                        last_id[q][i] = -1;
        srand(777);

        for (t = T0;; t++) {
                int input = t < end;
                if (!input && fqn == 0 && an[0] == 0 && an[1] == 0 &&
                    done == next_id)
                        break;
                assert_true(t < end + 60000);

                if (input && rand() % 3000 == 0) {
                        char val[32];
                        snprintf(key, sizeof(key), "k%d", rand() % PKEYS);
                        snprintf(val, sizeof(val), "%d/s", rand() % 60);
                        set_rate(fa, rand() % 3 ? key : "*",
                                 rand() % 4 ? val : NULL);
                }
                if (rand() % 4000 == 0)
                        sl_backlog_cache_set_budget(fa->cache, rand() % 5000);

                for (int q = 0; q < 2; q++) {
                        fx_t *f = parts[q];
                        sl_backlog_item_t it;
                        int64_t next;

                        /* Delivery reports due. */
                        while (an[q] && ack_at[q][ah[q]] <= t) {
                                ack_one(f);
                                ah[q] = (ah[q] + 1) % acap[q];
                                an[q]--;
                        }
                        /* Due work. */
                        while (sl_backlog_poll(f->bl, t, &it, &next)) {
                                int ki, id;
                                if (it.action == SL_BACKLOG_FETCH) {
                                        assert_true(
                                            sl_backlog_key_parked(it.key));
                                        if (rand() % 50 == 0) {
                                                /* The record is gone. */
                                                rec_t *r = &f->ovf[it.offset];
                                                parse_msg(r->payload, r->size,
                                                          &ki, &id);
                                                assert_int_equal(
                                                    sl_backlog_drop_head(
                                                        f->bl, it.key, &it),
                                                    0);
                                                assert_true(id >
                                                            last_id[q][ki]);
                                                last_id[q][ki] = id;
                                                lost++;
                                                done++;
                                                continue;
                                        }
                                        if (fqn == fqcap) {
                                                fqcap = fqcap ? fqcap * 2 : 64;
                                                fq = sl_realloc(
                                                    fq, fqcap * sizeof(*fq));
                                        }
                                        fq[fqn++] = (fetchreq_t){
                                            q, it.offset, t + rand() % 50};
                                        continue;
                                }
                                parse_msg(it.payload, it.size, &ki, &id);
                                /* FIFO per key, each message once. */
                                if (id <= last_id[q][ki])
                                        fail_msg("p%d k%d: msg %d after %d", q,
                                                 ki, id, last_id[q][ki]);
                                last_id[q][ki] = id;
                                if (it.action == SL_BACKLOG_SEND)
                                        assert_true(t < it.deadline_ms);
                                else
                                        assert_true(t >= it.deadline_ms);
                                sl_backlog_payload_free(it.payload);
                                done++;
                        }
                        /* New input. */
                        if (input && rand() % 10 == 0) {
                                int i = rand() % PKEYS, id = next_id++;
                                sl_backlog_key_t *k;
                                snprintf(key, sizeof(key), "k%d", i);
                                snprintf(p, sizeof(p), "k%d#%d#%.*s", i, id,
                                         rand() % 40, dots);
                                int64_t dl = t + 1 + rand() % 3000;
                                sl_backlog_verdict_t v = sl_backlog_offer(
                                    f->bl, key, strlen(key), dl, t, &k);
                                if (v != SL_BACKLOG_APPEND) {
                                        last_id[q][i] = id;
                                        done++;
                                        continue;
                                }
                                ovf_put(f, key, dl, p, (uint32_t)strlen(p), 0);
                                sl_backlog_append(f->bl, k, dl, p,
                                                  (uint32_t)strlen(p));
                                if (an[q] == acap[q]) {
                                        size_t nc = acap[q] ? acap[q] * 2 : 64;
                                        int64_t *na =
                                            sl_malloc(nc * sizeof(*na));
                                        for (size_t x = 0; x < an[q]; x++)
                                                na[x] = ack_at[q][(ah[q] + x) %
                                                                  acap[q]];
                                        free(ack_at[q]);
                                        ack_at[q] = na;
                                        acap[q] = nc;
                                        ah[q] = 0;
                                }
                                int64_t at = t + rand() % 20;
                                if (an[q]) {
                                        int64_t prev =
                                            ack_at[q][(ah[q] + an[q] - 1) %
                                                      acap[q]];
                                        if (at < prev)
                                                at = prev;
                                }
                                ack_at[q][(ah[q] + an[q]++) % acap[q]] = at;
                        }
                }

                /* Re-reads that complete now. */
                for (size_t x = 0; x < fqn;) {
                        if (fq[x].at > t) {
                                x++;
                                continue;
                        }
                        reread(parts[fq[x].part], fq[x].offset,
                               parts[fq[x].part]->window);
                        fq[x] = fq[--fqn];
                }
                /* The re-reader restarts now and then: everything parked
                 * asks again (the fills still in flight may land later). */
                if (rand() % 2000 == 0) {
                        sl_backlog_unpark_all(fa->bl);
                        sl_backlog_unpark_all(fb->bl);
                        unparks++;
                }
                if (t % 101 == 0) {
                        sl_backlog_flush_dirty(fa->bl, NULL, NULL);
                        sl_backlog_sweep(fa->bl, t, 3, NULL, NULL);
                        sl_backlog_flush_dirty(fb->bl, NULL, NULL);
                        sl_backlog_sweep(fb->bl, t, 3, NULL, NULL);
                }
                if (t % 250 == 0) {
                        sl_backlog_cache_stats_t cs;
                        assert_int_equal(sl_backlog_verify(fa->bl), 0);
                        assert_int_equal(sl_backlog_verify(fb->bl), 0);
                        sl_backlog_cache_stats(fa->cache, &cs);
                        assert_true(cs.bytes - cs.pinned_bytes <= cs.budget);
                }
        }
        sl_backlog_stats_t sa, sb;
        sl_backlog_stats(fa->bl, &sa);
        sl_backlog_stats(fb->bl, &sb);
        assert_int_equal(sa.messages + sb.messages, 0);
        assert_int_equal(done, next_id);
        print_message("delayed fetches: %d messages, %llu fetches, %d heads "
                      "lost, %d unpark-alls, drained by +%lld s\n",
                      next_id, (unsigned long long)(fa->fetches + fb->fetches),
                      lost, unparks, (long long)((t - T0) / 1000));
        assert_true(fa->fetches + fb->fetches > 50 && lost > 0);

        free(fq);
        free(ack_at[0]);
        free(ack_at[1]);
        sl_backlog_destroy(fb->bl);
        for (size_t i = 0; i < fb->novf; i++)
                free(fb->ovf[i].payload);
        free(fb->ovf);
        free(fb);
        fx_free(fa);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_forward_then_buffer),
            cmocka_unit_test(test_no_bypass_fifo),
            cmocka_unit_test(test_fifo_per_key_timing),
            cmocka_unit_test(test_offsets_in_delivery_order),
            cmocka_unit_test(test_checkpoint),
            cmocka_unit_test(test_expiry),
            cmocka_unit_test(test_rate_changes),
            cmocka_unit_test(test_cache_policy),
            cmocka_unit_test(test_fetch_parks_only_its_key),
            cmocka_unit_test(test_200k_with_small_cache),
            cmocka_unit_test(test_dirty_and_sweep),
            cmocka_unit_test(test_rebuild),
            cmocka_unit_test(test_random_against_model),
            cmocka_unit_test(test_random_delayed_fetches),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
