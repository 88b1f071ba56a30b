/*
 * inspect.c — `sluice inspect -c FILE PIPELINE [--key K]`: reads a
 * pipeline's changelog (without joining the consumer group, read_committed,
 * up to the end offsets captured at start) and prints the pending state.
 *
 * The changelog is folded the way a rebuild folds it — a value replaces the
 * key's state, a tombstone removes it — into one map per partition (a timer
 * heap used as a key → record map, ordered by due time for delay).  For
 * debounce the folded items then go through the operator's own window logic
 * (debounce.c), so the deadlines shown are the ones a rebuild would arm.
 *
 * For throttle the rates topic is read whole into a rates table, the
 * changelog gives each partition's checkpoint and each key's ThrottleKey
 * record, and the overflow partition is read from the checkpoint to its
 * end into a backlog (backlog.c, no payload cache) exactly as a rebuild
 * does; each key's row shows its rate, its bucket as of its last record,
 * its backlog and the age of its oldest buffered message.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backlog.h"
#include "cli.h"
#include "config.h"
#include "debounce.h"
#include "kafka.h"
#include "log.h"
#include "opdef_debounce.h"
#include "opdef_throttle.h"
#include "parse.h"
#include "rates.h"
#include "sluice.pb-c.h"
#include "timerheap.h"
#include "util.h"

#define INSPECT_DEADLINE_MS (120 * 1000)

static void usage(FILE *out) {
        fprintf(out,
                "usage: sluice inspect -c FILE PIPELINE [--key K] [--limit N]\n"
                "\n"
                "Reads PIPELINE's changelog (without joining the group) and "
                "prints its\n"
                "pending state: for delay, the pending timers in due order "
                "with their\n"
                "target; for debounce, the open groups in flush order with "
                "their\n"
                "item counts and ages.  --key shows one id (delay) or one "
                "group and\n"
                "its items (debounce) only; --limit caps the rows (default "
                "50).\n"
                "For throttle, it also reads the rates topic and the "
                "overflow partitions\n"
                "from their checkpoints, and lists the keys with a backlog, "
                "largest first:\n"
                "rate, tokens as of the key's last changelog record, backlog "
                "length and\n"
                "bytes, age of the oldest buffered message.\n");
}

/* A changelog record may hold any time (an older sluice, a corrupted or
 * hand-written record): formatting and differences must not overflow. */
static void fmt_time(int64_t ms, char *buf, size_t size) {
        if (sl_time_rfc3339(ms, buf, size))
                snprintf(buf, size, "%" PRId64 "ms", ms);
}

/* Seconds from a to b, in floating point (no int64 subtraction). */
static double secs_between(int64_t a, int64_t b) {
        return ((double)b - (double)a) / 1000.0;
}

/* What read_topic() passes each record to. */
typedef void (*read_cb_t)(int p, const rd_kafka_message_t *m, void *opaque);

/* A read_committed consumer that assigns partitions itself (never
 * commits), with conf's [kafka] settings; NULL, said on stderr, when it
 * cannot be made. */
static rd_kafka_t *inspect_consumer_new(sl_conf_t *conf) {
        char errstr[512];
        rd_kafka_conf_t *kc = sl_conf_rdkafka(conf, errstr, sizeof(errstr));
        rd_kafka_t *rk;

        if (!kc) {
                fprintf(stderr, "sluice inspect: %s\n", errstr);
                return NULL;
        }
        rd_kafka_conf_set_log_cb(kc, sl_kafka_log_cb);
        if (sl_kafka_conf_set(kc, "group.id", "sluice-inspect", errstr,
                              sizeof(errstr)) ||
            sl_kafka_conf_set(kc, "enable.auto.commit", "false", errstr,
                              sizeof(errstr)) ||
            sl_kafka_conf_set(kc, "isolation.level", "read_committed", errstr,
                              sizeof(errstr)) ||
            sl_kafka_conf_set(kc, "auto.offset.reset", "earliest", errstr,
                              sizeof(errstr)) ||
            sl_kafka_conf_set(kc, "enable.partition.eof", "true", errstr,
                              sizeof(errstr))) {
                fprintf(stderr, "sluice inspect: %s\n", errstr);
                rd_kafka_conf_destroy(kc);
                return NULL;
        }
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "sluice inspect: %s\n", errstr);
                rd_kafka_conf_destroy(kc);
                return NULL;
        }
        rd_kafka_poll_set_consumer(rk);
        return rk;
}

/* Reads every partition p of topic from from[p] (NULL: from the
 * beginning) to its end captured at start (read_committed), passing each
 * record to cb.  Returns 0, or -1 with a message on stderr. */
static int read_topic(sl_conf_t *conf, const char *topic, int parts,
                      const int64_t *from, read_cb_t cb, void *opaque) {
        rd_kafka_t *rk = inspect_consumer_new(conf);
        rd_kafka_topic_partition_list_t *l;
        int64_t *end;
        int done = 0;
        int64_t deadline = sl_now_ms() + INSPECT_DEADLINE_MS;

        if (!rk)
                return -1;
        end = sl_calloc((size_t)parts, sizeof(*end));
        l = rd_kafka_topic_partition_list_new(parts);
        for (int p = 0; p < parts; p++) {
                int64_t lo = 0, hi = 0, start;
                rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
                    rk, topic, p, &lo, &hi, 10000);
                if (err) {
                        fprintf(stderr, "sluice inspect: %s [%d]: %s\n", topic,
                                p, rd_kafka_err2str(err));
                        goto fail;
                }
                start = from ? SL_MAX(from[p], lo) : lo;
                end[p] = hi;
                if (hi <= start) {
                        end[p] = -1; /* nothing to read */
                        done++;
                        continue;
                }
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    from ? start : RD_KAFKA_OFFSET_BEGINNING;
        }
        rd_kafka_assign(rk, l);
        while (done < parts) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 500);
                if (sl_now_ms() > deadline) {
                        fprintf(stderr,
                                "sluice inspect: %s not read to its end "
                                "within %d s (an open transaction?)\n",
                                topic, INSPECT_DEADLINE_MS / 1000);
                        if (m)
                                rd_kafka_message_destroy(m);
                        goto fail;
                }
                if (!m)
                        continue;
                if (m->partition >= 0 && m->partition < parts &&
                    end[m->partition] >= 0) {
                        int p = m->partition;
                        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                if (m->offset >= end[p]) {
                                        end[p] = -1;
                                        done++;
                                }
                        } else if (!m->err) {
                                cb(p, m, opaque);
                                if (m->offset + 1 >= end[p]) {
                                        end[p] = -1;
                                        done++;
                                }
                        } else {
                                fprintf(stderr, "sluice inspect: %s\n",
                                        rd_kafka_message_errstr(m));
                        }
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_topic_partition_list_destroy(l);
        free(end);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return 0;
fail:
        rd_kafka_topic_partition_list_destroy(l);
        free(end);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return -1;
}

typedef struct fold_ctx_s {
        sl_timerheap_t **maps;
        int64_t *records;
} fold_ctx_t;

/* Folds a changelog record the way a rebuild does. */
static void fold_changelog(int p, const rd_kafka_message_t *m, void *opaque) {
        fold_ctx_t *c = opaque;
        if (!m->key)
                return;
        (*c->records)++;
        if (m->payload)
                sl_timerheap_upsert(c->maps[p], m->key, m->key_len, 0,
                                    m->offset, m->payload, m->len);
        else
                sl_timerheap_remove(c->maps[p], m->key, m->key_len);
}

/* Reads every partition of topic into maps[p] (key → last value). */
static int read_changelog(sl_conf_t *conf, const char *topic, int parts,
                          sl_timerheap_t **maps, int64_t *records) {
        fold_ctx_t c = {maps, records};
        return read_topic(conf, topic, parts, NULL, fold_changelog, &c);
}

/* delay: re-key the folded records by due time and print them in order. */
typedef struct delay_ctx_s {
        sl_timerheap_t *by_due;
        int partition;
        const char *key;
} delay_ctx_t;

static void delay_collect(const sl_timer_t *t, void *opaque) {
        delay_ctx_t *c = opaque;
        Sluice__V1__Timer *tm;
        char id[64];
        if (c->key && (strlen(c->key) != t->keylen ||
                       memcmp(c->key, sl_timer_key(t), t->keylen)))
                return;
        tm = sluice__v1__timer__unpack(NULL, t->datalen, sl_timer_data(t));
        if (!tm)
                return;
        /* by_due key: partition + id, so equal ids in two partitions stay
         * apart; data: the packed record again. */
        snprintf(id, sizeof(id), "%d/", c->partition);
        {
                size_t il = strlen(id);
                char *k = sl_malloc(il + t->keylen);
                memcpy(k, id, il);
                memcpy(k + il, sl_timer_key(t), t->keylen);
                sl_timerheap_upsert(c->by_due, k, il + t->keylen, tm->due_ms,
                                    tm->seq, sl_timer_data(t), t->datalen);
                free(k);
        }
        sluice__v1__timer__free_unpacked(tm, NULL);
}

static int inspect_delay(const sl_pipeline_conf_t *pc, sl_timerheap_t **maps,
                         int parts, const char *key, long limit) {
        delay_ctx_t c = {sl_timerheap_new(), 0, key};
        int64_t now = sl_now_ms();
        long shown = 0;
        size_t total;

        for (int p = 0; p < parts; p++) {
                c.partition = p;
                sl_timerheap_foreach(maps[p], delay_collect, &c);
        }
        total = sl_timerheap_count(c.by_due);
        printf("pipeline %s (delay): %zu pending timers in %d partitions\n",
               pc->name, total, parts);
        if (total)
                printf("%-24s %10s  %-4s %-24s %s\n", "DUE", "IN", "PART",
                       "TARGET", "ID");
        while (shown < limit) {
                sl_timer_t *t = sl_timerheap_pop(c.by_due);
                Sluice__V1__Timer *tm;
                const char *k, *slash;
                char due[40], in[32], tgt[256], id[256];
                if (!t)
                        break;
                tm = sluice__v1__timer__unpack(NULL, t->datalen,
                                               sl_timer_data(t));
                k = sl_timer_key(t);
                slash = memchr(k, '/', t->keylen);
                fmt_time(tm->due_ms, due, sizeof(due));
                snprintf(in, sizeof(in), "%+.1fs",
                         secs_between(now, tm->due_ms));
                printf("%-24s %10s  %-4.*s %-24s %s\n", due, in,
                       (int)(slash - k), k,
                       sl_escape(tm->target_topic, strlen(tm->target_topic),
                                 tgt, sizeof(tgt)),
                       sl_escape(slash + 1, t->keylen - (size_t)(slash - k) - 1,
                                 id, sizeof(id)));
                sluice__v1__timer__free_unpacked(tm, NULL);
                sl_timer_free(t);
                shown++;
        }
        if ((size_t)shown < total)
                printf("... %zu more\n", total - (size_t)shown);
        sl_timerheap_destroy(c.by_due);
        return key && total == 0 ? SL_EXIT_FAIL : SL_EXIT_OK;
}

/* debounce: fold the records into windows, in log order (the map's order:
 * it holds each key's last record with its offset as seq), exactly as a
 * rebuild after compaction would, and list the open groups. */
static void debounce_fold(sl_debounce_t *d, sl_timerheap_t *map, int64_t now) {
        sl_timer_t *t;
        const char *why;
        while ((t = sl_timerheap_pop(map))) {
                sl_debounce_restore_record(d, sl_timer_key(t), t->keylen,
                                           sl_timer_data(t), t->datalen, now,
                                           &why);
                sl_timer_free(t);
        }
}

typedef struct debounce_ctx_s {
        sl_timerheap_t *by_due; /* key "p/group", data: the group view */
        int partition;
} debounce_ctx_t;

static void debounce_collect(const sl_debounce_group_t *g, void *opaque) {
        debounce_ctx_t *c = opaque;
        char pfx[16];
        size_t pl = (size_t)snprintf(pfx, sizeof(pfx), "%d/", c->partition);
        char *k = sl_malloc(pl + g->keylen);
        memcpy(k, pfx, pl);
        memcpy(k + pl, g->key, g->keylen);
        sl_timerheap_upsert(c->by_due, k, pl + g->keylen, g->due_ms,
                            c->partition, g, sizeof(*g));
        free(k);
}

static void debounce_item_row(const sl_debounce_item_t *it, void *opaque) {
        int64_t now = *(const int64_t *)opaque;
        char first[40], id[256];
        fmt_time(it->first_seen_ms, first, sizeof(first));
        printf("    %-24s %9.1fs %9.1fs %8zu  %s\n", first,
               secs_between(it->first_seen_ms, now),
               secs_between(it->last_update_ms, now), it->payload_len,
               sl_escape(it->id, it->idlen, id, sizeof(id)));
}

static int inspect_debounce(const sl_pipeline_conf_t *pc, sl_timerheap_t **maps,
                            int parts, const char *key, long limit) {
        const sl_debounce_conf_t *dc = sl_debounce_conf(pc);
        sl_debounce_params_t params = {dc->idle_ms, dc->max_age_ms,
                                       dc->max_items, dc->max_bytes, pc->name};
        debounce_ctx_t c = {sl_timerheap_new(), 0};
        sl_debounce_t **wins = sl_calloc((size_t)parts, sizeof(*wins));
        int64_t now = sl_now_ms();
        size_t items = 0, groups, found = 0;
        long shown = 0;

        for (int p = 0; p < parts; p++) {
                wins[p] = sl_debounce_new(&params);
                debounce_fold(wins[p], maps[p], now);
                items += sl_debounce_items(wins[p]);
                c.partition = p;
                if (!key) {
                        sl_debounce_foreach_group(wins[p], debounce_collect,
                                                  &c);
                } else {
                        sl_debounce_group_t g;
                        if (sl_debounce_group(wins[p], key, strlen(key), &g))
                                debounce_collect(&g, &c);
                }
        }
        groups = sl_timerheap_count(c.by_due);
        printf("pipeline %s (debounce): %zu open groups, %zu pending items in "
               "%d partitions\n",
               pc->name, groups, items, parts);
        if (groups)
                printf("%-24s %9s  %-4s %6s %9s %9s %9s  %-9s %s\n", "FLUSH AT",
                       "IN", "PART", "ITEMS", "BYTES", "AGE", "IDLE", "REASON",
                       "GROUP");
        while (shown < limit) {
                sl_timer_t *t = sl_timerheap_pop(c.by_due);
                sl_debounce_group_t g;
                char due[40], gkey[256];
                int p;
                if (!t)
                        break;
                memcpy(&g, sl_timer_data(t), sizeof(g));
                p = (int)t->seq;
                fmt_time(g.due_ms, due, sizeof(due));
                printf("%-24s %+8.1fs  %-4d %6zu %9zu %8.1fs %8.1fs  %-9s "
                       "%s\n",
                       due, secs_between(now, g.due_ms), p, g.items, g.bytes,
                       secs_between(g.opened_ms, now),
                       secs_between(g.last_update_ms, now),
                       sl_debounce_reason_str(g.reason),
                       sl_escape(g.key, g.keylen, gkey, sizeof(gkey)));
                if (key) {
                        printf("    %-24s %10s %10s %8s  %s\n", "FIRST SEEN",
                               "AGE", "IDLE", "BYTES", "ITEM");
                        sl_debounce_foreach_item(wins[p], key, strlen(key),
                                                 debounce_item_row, &now);
                        found++;
                }
                sl_timer_free(t);
                shown++;
        }
        if ((size_t)shown < groups)
                printf("... %zu more\n", groups - (size_t)shown);
        for (int p = 0; p < parts; p++)
                sl_debounce_destroy(wins[p]);
        free(wins);
        sl_timerheap_destroy(c.by_due);
        return key && !found ? SL_EXIT_FAIL : SL_EXIT_OK;
}

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
                         secs_between(o->due_ms, now));
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
                rparts = sl_kafka_partition_count(rk, pc->rates, 10000);
                rd_kafka_destroy(rk);
        } else if (kc) {
                rd_kafka_conf_destroy(kc);
        }
        if (rparts > 0 && read_topic(conf, pc->rates, rparts, NULL,
                                     throttle_rates_cb, rates) == -1)
                rparts = -1;
        if (rparts <= 0)
                fprintf(stderr,
                        "sluice inspect: rates topic %s not read: rates "
                        "shown are the default_rate\n",
                        pc->rates);
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

static int inspect_throttle(sl_conf_t *conf, const sl_pipeline_conf_t *pc,
                            sl_timerheap_t **maps, int parts, const char *key,
                            long limit) {
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
        if (read_topic(conf, pc->overflow, parts, from, throttle_overflow_cb,
                       &c) == -1) {
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

int sl_inspect_cmd(int argc, char **argv) {
        static const struct option opts[] = {{"config", 1, NULL, 'c'},
                                             {"key", 1, NULL, 'k'},
                                             {"limit", 1, NULL, 'n'},
                                             {"help", 0, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        const char *path = NULL, *key = NULL;
        long limit = 50;
        const sl_pipeline_conf_t *pc;
        sl_conf_t *conf;
        sl_timerheap_t **maps;
        int c, parts, rc;
        int64_t records = 0;

        optind = 1;
        while ((c = getopt_long(argc, argv, "c:k:n:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        path = optarg;
                        break;
                case 'k':
                        key = optarg;
                        break;
                case 'n':
                        limit = strtol(optarg, NULL, 10);
                        break;
                case 'h':
                        usage(stdout);
                        return SL_EXIT_OK;
                default:
                        usage(stderr);
                        return SL_EXIT_USAGE;
                }
        }
        if (!path || optind != argc - 1 || limit < 0) {
                usage(stderr);
                return SL_EXIT_USAGE;
        }
        sl_log_set_level(LOG_WARNING);
        if (sl_conf_load(path, 1, &conf, stderr) != 0)
                return SL_EXIT_FAIL;
        if (!(pc = sl_conf_pipeline(conf, argv[optind]))) {
                fprintf(stderr, "sluice inspect: %s: no pipeline named %s\n",
                        path, argv[optind]);
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        if (pc->type != SL_OP_DELAY && pc->type != SL_OP_DEBOUNCE &&
            pc->type != SL_OP_THROTTLE) {
                fprintf(stderr,
                        "sluice inspect: pipeline %s: inspect of type %s is "
                        "not available in this build\n",
                        pc->name, sl_op_type_name(pc->type));
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        {
                char errstr[512];
                rd_kafka_conf_t *kc =
                    sl_conf_rdkafka(conf, errstr, sizeof(errstr));
                rd_kafka_t *rk = kc ? rd_kafka_new(RD_KAFKA_PRODUCER, kc,
                                                   errstr, sizeof(errstr))
                                    : NULL;
                if (!rk) {
                        fprintf(stderr, "sluice inspect: %s\n", errstr);
                        if (kc)
                                rd_kafka_conf_destroy(kc);
                        sl_conf_destroy(conf);
                        return SL_EXIT_FAIL;
                }
                parts = sl_kafka_partition_count(rk, pc->changelog, 10000);
                rd_kafka_destroy(rk);
        }
        if (parts <= 0) {
                fprintf(stderr, "sluice inspect: changelog %s %s\n",
                        pc->changelog,
                        parts == 0 ? "does not exist" : "cannot be described");
                sl_conf_destroy(conf);
                return SL_EXIT_FAIL;
        }
        maps = sl_calloc((size_t)parts, sizeof(*maps));
        for (int p = 0; p < parts; p++)
                maps[p] = sl_timerheap_new();
        if (read_changelog(conf, pc->changelog, parts, maps, &records) == -1)
                rc = SL_EXIT_FAIL;
        else if (pc->type == SL_OP_DEBOUNCE)
                rc = inspect_debounce(pc, maps, parts, key, limit);
        else if (pc->type == SL_OP_THROTTLE)
                rc = inspect_throttle(conf, pc, maps, parts, key, limit);
        else
                rc = inspect_delay(pc, maps, parts, key, limit);
        for (int p = 0; p < parts; p++)
                sl_timerheap_destroy(maps[p]);
        free(maps);
        sl_conf_destroy(conf);
        return rc;
}
