/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect_throttle.c — `sluice inspect` of a throttle pipeline: the rates
 * topic is read whole into a rates table, the folded changelog (inspect.h)
 * gives each partition's checkpoint and each key's ThrottleKey record, and
 * the overflow partition is read from the checkpoint to its end into a
 * backlog (backlog.c, no payload cache) exactly as a rebuild does; each
 * key's row shows its rate, its bucket as of its last record, its backlog
 * and the age of its oldest buffered message, largest backlog first.
 */
#include "inspect.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "cli.h"
#include "kafka.h"
#include "opdef_throttle.h"
#include "parse.h"
#include "rates.h"
#include "sluice.pb-c.h"
#include "timerheap.h"
#include "util.h"

/* throttle: rebuild each partition's backlog the way the operator does. */
typedef struct throttle_ctx_s {
        sl_backlog_t **bls;
        sl_timerheap_t **oldest; /* per partition: key → received_ms */
        int64_t records, bad;
        int64_t now;
} throttle_ctx_t;

static void throttle_rates_cb(int p, const rd_kafka_message_t *m,
                              void *opaque) {
        char err[128];
        (void)p;
        if (sl_rates_apply(opaque, m->key, m->key_len, m->payload, m->len, err,
                           sizeof(err)) == -1)
                fprintf(stderr,
                        "sluice inspect: rates record @%" PRId64
                        " ignored: %s\n",
                        m->offset, err);
}

static void throttle_overflow_cb(int p, const rd_kafka_message_t *m,
                                 void *opaque) {
        throttle_ctx_t *c = opaque;
        Sluice__V1__OverflowRecord *rec;
        sl_backlog_key_t *k;
        int r;

        c->records++;
        if (!m->key || !m->payload || m->len > UINT32_MAX ||
            !(rec = sluice__v1__overflow_record__unpack(NULL, m->len,
                                                        m->payload))) {
                c->bad++;
                return;
        }
        r = sl_backlog_rebuild_append(c->bls[p], m->key, m->key_len, m->offset,
                                      rec->deadline_ms, NULL, (uint32_t)m->len,
                                      c->now);
        if (r == 1 && (k = sl_backlog_find(c->bls[p], m->key, m->key_len)) &&
            sl_backlog_key_len(k) == 1)
                sl_timerheap_upsert(c->oldest[p], m->key, m->key_len,
                                    rec->received_ms, m->offset, NULL, 0);
        else if (r == -1)
                c->bad++;
        sluice__v1__overflow_record__free_unpacked(rec, NULL);
}

/* A "k/" changelog record restores its key (as the operator does). */
static void throttle_restore_cb(const sl_timer_t *t, void *opaque) {
        const char *k = sl_timer_key(t);
        Sluice__V1__ThrottleKey *r;
        if (t->keylen < 2 || memcmp(k, "k/", 2))
                return;
        r = sluice__v1__throttle_key__unpack(NULL, t->datalen,
                                             sl_timer_data(t));
        if (!r)
                return;
        sl_backlog_restore_key(opaque, k + 2, t->keylen - 2, r->drained_to,
                               r->tokens, r->updated_ms);
        sluice__v1__throttle_key__free_unpacked(r, NULL);
}

typedef struct throttle_row_s {
        const sl_backlog_key_t *k;
        int partition;
} throttle_row_t;

typedef struct throttle_rows_s {
        throttle_row_t *a;
        size_t n, cap;
        int partition;
        uint64_t messages, bytes;
} throttle_rows_t;

static void throttle_collect(const sl_backlog_key_t *k, void *opaque) {
        throttle_rows_t *r = opaque;
        if (!sl_backlog_key_len(k))
                return;
        r->messages += sl_backlog_key_len(k);
        r->bytes += sl_backlog_key_bytes(k);
        if (r->n == r->cap) {
                r->cap = r->cap ? r->cap * 2 : 64;
                r->a = sl_realloc(r->a, r->cap * sizeof(*r->a));
        }
        r->a[r->n].k = k;
        r->a[r->n].partition = r->partition;
        r->n++;
}

static int throttle_row_cmp(const void *a, const void *b) {
        const throttle_row_t *x = a, *y = b;
        uint32_t lx = sl_backlog_key_len(x->k), ly = sl_backlog_key_len(y->k);
        if (lx != ly)
                return lx < ly ? 1 : -1;
        return x->partition - y->partition;
}

static void throttle_print_row(int p, const char *key, size_t keylen,
                               const sl_rate_t *rate, const sl_backlog_key_t *k,
                               const sl_timerheap_t *oldest, int64_t now) {
        char rbuf[64], tbuf[32], age[32], part[16], kbuf[256];
        uint32_t len = k ? sl_backlog_key_len(k) : 0;
        const sl_timer_t *o =
            len ? sl_timerheap_find(oldest, key, keylen) : NULL;

        sl_rate_format(rate, rbuf, sizeof(rbuf));
        if (k && isfinite(sl_backlog_key_bucket(k)->tokens))
                snprintf(tbuf, sizeof(tbuf), "%.2f",
                         sl_backlog_key_bucket(k)->tokens);
        else
                snprintf(tbuf, sizeof(tbuf), "full");
        if (o)
                snprintf(age, sizeof(age), "%.1fs",
                         sl_inspect_secs_between(o->due_ms, now));
        else
                snprintf(age, sizeof(age), "-");
        if (p >= 0)
                snprintf(part, sizeof(part), "%d", p);
        else
                snprintf(part, sizeof(part), "-"); /* no state anywhere */
        printf("%-4s %9" PRIu32 " %11" PRIu64 " %9s  %-22s %8s  %s\n", part,
               len, k ? sl_backlog_key_bytes(k) : 0, age, rbuf, tbuf,
               sl_escape(key, keylen, kbuf, sizeof(kbuf)));
}

/* The rates topic, whole, into rates; said on stderr when it cannot be
 * read (the rows then show the default_rate). */
static void throttle_read_rates(sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                                sl_rates_t *rates) {
        char errstr[512];
        rd_kafka_conf_t *kc = sl_conf_rdkafka(conf, errstr, sizeof(errstr));
        rd_kafka_t *rk =
            kc ? rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr))
               : NULL;
        int rparts = -1;

        if (rk) {
                rparts = sl_kafka_partition_count(
                    rk, sl_throttle_conf(pc)->rates, 10000);
                rd_kafka_destroy(rk);
        } else if (kc) {
                rd_kafka_conf_destroy(kc);
        }
        if (rparts > 0 &&
            sl_inspect_read_topic(conf, sl_throttle_conf(pc)->rates, rparts,
                                  NULL, throttle_rates_cb, rates) == -1)
                rparts = -1;
        if (rparts <= 0)
                fprintf(stderr,
                        "sluice inspect: rates topic %s not read: rates "
                        "shown are the default_rate\n",
                        sl_throttle_conf(pc)->rates);
}

/* The one row of --key: its backlog where a partition holds one, else
 * its rate alone (partition "-"). */
static void throttle_print_key(const throttle_ctx_t *c, int parts,
                               const sl_rates_t *rates, const char *key) {
        size_t kl = strlen(key);
        const sl_backlog_key_t *k = NULL;
        int kp = -1;
        sl_rate_t rate;

        for (int p = 0; p < parts && !k; p++)
                if ((k = sl_backlog_find(c->bls[p], key, kl)))
                        kp = p;
        if (k)
                rate = *sl_backlog_key_rate(k);
        else
                sl_rates_lookup(rates, key, kl, &rate);
        throttle_print_row(kp, key, kl, &rate, k,
                           kp >= 0 ? c->oldest[kp] : NULL, c->now);
}

int sl_inspect_throttle(const sl_inspect_t *in) {
        sl_conf_t *conf = in->conf;
        const sl_pipeline_conf_t *pc = in->pc;
        sl_timerheap_t **maps = in->maps;
        int parts = in->parts;
        const char *key = in->key;
        long limit = in->limit;
        throttle_ctx_t c = {0};
        throttle_rows_t rows = {0};
        sl_rates_t *rates = sl_rates_new(&sl_throttle_conf(pc)->default_rate);
        sl_backlog_cache_t *cache = sl_backlog_cache_new(0);
        int64_t *from = sl_calloc((size_t)parts, sizeof(*from));
        int rc = SL_EXIT_OK;
        long shown = 0;

        c.now = sl_now_ms();
        c.bls = sl_calloc((size_t)parts, sizeof(*c.bls));
        c.oldest = sl_calloc((size_t)parts, sizeof(*c.oldest));

        throttle_read_rates(conf, pc, rates);

        /* The changelog: checkpoints and key records. */
        for (int p = 0; p < parts; p++) {
                const sl_timer_t *ck = sl_timerheap_find(maps[p], "c/", 2);
                if (ck) {
                        Sluice__V1__ThrottleCheckpoint *cp =
                            sluice__v1__throttle_checkpoint__unpack(
                                NULL, ck->datalen, sl_timer_data(ck));
                        if (cp && cp->from_offset > 0)
                                from[p] = cp->from_offset;
                        sluice__v1__throttle_checkpoint__free_unpacked(cp,
                                                                       NULL);
                }
                c.bls[p] = sl_backlog_new(rates, cache, from[p]);
                c.oldest[p] = sl_timerheap_new();
        }
        for (int p = 0; p < parts; p++)
                sl_timerheap_foreach(maps[p], throttle_restore_cb, c.bls[p]);

        /* The overflow partitions from their checkpoints. */
        if (sl_inspect_read_topic(conf, sl_throttle_conf(pc)->overflow, parts,
                                  from, throttle_overflow_cb, &c) == -1) {
                rc = SL_EXIT_FAIL;
                goto out;
        }
        for (int p = 0; p < parts; p++) {
                rows.partition = p;
                sl_backlog_foreach(c.bls[p], throttle_collect, &rows);
        }
        printf("pipeline %s (throttle): %" PRIu64 " buffered messages (%" PRIu64
               " bytes) in %zu keys, %d partitions; %" PRId64
               " overflow records read%s\n",
               pc->name, rows.messages, rows.bytes, rows.n, parts, c.records,
               c.bad ? " (some undecodable)" : "");
        printf("%-4s %9s %11s %9s  %-22s %8s  %s\n", "PART", "BACKLOG", "BYTES",
               "OLDEST", "RATE", "TOKENS", "KEY");
        if (key) {
                throttle_print_key(&c, parts, rates, key);
                goto out;
        }
        qsort(rows.a, rows.n, sizeof(*rows.a), throttle_row_cmp);
        for (size_t i = 0; i < rows.n && shown < limit; i++, shown++) {
                const throttle_row_t *r = &rows.a[i];
                size_t kl;
                const char *k = sl_backlog_key_key(r->k, &kl);
                throttle_print_row(r->partition, k, kl,
                                   sl_backlog_key_rate(r->k), r->k,
                                   c.oldest[r->partition], c.now);
        }
        if ((size_t)shown < rows.n)
                printf("... %zu more\n", rows.n - (size_t)shown);
out:
        for (int p = 0; p < parts; p++) {
                sl_backlog_destroy(c.bls[p]);
                sl_timerheap_destroy(c.oldest[p]);
        }
        free(c.bls);
        free(c.oldest);
        free(rows.a);
        free(from);
        sl_backlog_cache_destroy(cache);
        sl_rates_destroy(rates);
        return rc;
}
