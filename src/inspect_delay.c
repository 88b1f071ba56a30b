/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect_delay.c — `sluice inspect` of a delay pipeline: the pending
 * timers of the folded changelog (inspect.h), re-keyed by due time and
 * printed in due order with their target and payload.
 *
 * A changelog value is a timer's Timer record, or with payload_topic an
 * index record (logpb.h: its due time and the offset of its Timer record
 * in the payload topic; op_delay.c, PAYLOADS IN KAFKA).  The rows to print
 * (the first --limit in due order) are taken first; the records of those
 * that are index records are then read back from the payload topic, same
 * partition, by offset, in offset order (sl_inspect_read_offsets), so
 * that they print like the others.  A record the payload topic no longer
 * holds (or that holds another id) prints as missing.  Timer records
 * written before payload_topic was set print from the changelog.
 *
 * A recurring timer (sluice-every, sluice-cron) prints one line more: its
 * schedule, how many occurrences it fired, and the instants after the
 * pending one, which delay_recurring.h computes as the operator does.
 */
#include "inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "delay_recurring.h"
#include "logpb.h"
#include "opdef_delay.h"
#include "sluice.pb-c.h"
#include "timerheap.h"
#include "util.h"

/* delay: re-key the folded records by due time and print them in order. */
typedef struct delay_ctx_s {
        sl_timerheap_t *by_due;
        int partition;
        const char *key;
} delay_ctx_t;

/* Files t under partition + id (so equal ids in two partitions stay
 * apart) by due time and seq, with its record as data. */
static void by_due_put(delay_ctx_t *c, const sl_timer_t *t, int64_t due,
                       int64_t seq) {
        char id[64];
        size_t il;
        char *k;
        snprintf(id, sizeof(id), "%d/", c->partition);
        il = strlen(id);
        k = sl_malloc(il + t->keylen);
        memcpy(k, id, il);
        memcpy(k + il, sl_timer_key(t), t->keylen);
        sl_timerheap_upsert(c->by_due, k, il + t->keylen, due, seq,
                            sl_timer_data(t), t->datalen);
        free(k);
}

static void delay_collect(const sl_timer_t *t, void *opaque) {
        delay_ctx_t *c = opaque;
        Sluice__V1__Timer *tm;
        if (!t->keylen)
                return; /* the gone list (logpb.h), no timer */
        if (c->key && (strlen(c->key) != t->keylen ||
                       memcmp(c->key, sl_timer_key(t), t->keylen)))
                return;
        if (sl_logpb_is_index(sl_timer_data(t), t->datalen)) {
                /* payload_topic: the index record of a pending timer. */
                int64_t due, off;
                if (sl_logpb_index_read(sl_timer_data(t), t->datalen, &due,
                                        &off) == -1)
                        return;
                by_due_put(c, t, due, off);
                return;
        }
        tm = sluice__v1__timer__unpack(NULL, t->datalen, sl_timer_data(t));
        if (!tm)
                return;
        by_due_put(c, t, tm->due_ms, tm->seq);
        sluice__v1__timer__free_unpacked(tm, NULL);
}

/* A row to print: the timer (key "p/id", data: its changelog value) and
 * its Timer record (from the changelog, or read back from the payload
 * topic; NULL while not read, or missing). */
typedef struct delay_row_s {
        sl_timer_t *t;
        int partition;
        int index; /* its changelog value is an index record */
        Sluice__V1__Timer *tm;
} delay_row_t;

/* The payload topic's read: where each index row's record lies, and the
 * row; sorted by place (want_cmp). */
typedef struct delay_want_s {
        sl_inspect_at_t at;
        size_t row;
} delay_want_t;

typedef struct delay_read_s {
        delay_row_t *rows;
        delay_want_t *want;
        size_t want_cnt;
} delay_read_t;

static int want_cmp(const void *a, const void *b) {
        const delay_want_t *x = a, *y = b;
        if (x->at.partition != y->at.partition)
                return x->at.partition < y->at.partition ? -1 : 1;
        return x->at.offset < y->at.offset ? -1 : x->at.offset > y->at.offset;
}

/* The id of row r (its key after "p/"). */
static const char *row_id(const delay_row_t *r, size_t *len) {
        const char *k = sl_timer_key(r->t);
        const char *slash = memchr(k, '/', r->t->keylen);
        *len = r->t->keylen - (size_t)(slash - k) - 1;
        return slash + 1;
}

/* A record of the payload topic read back: the Timer record of the rows
 * whose index names it, when it holds their id. */
static void delay_read_one(int p, const rd_kafka_message_t *m, void *opaque) {
        delay_read_t *c = opaque;
        delay_want_t key = {{p, m->offset}, 0};
        delay_want_t *w =
            bsearch(&key, c->want, c->want_cnt, sizeof(*w), want_cmp);
        if (!w || !m->key || !m->payload)
                return;
        while (w > c->want && !want_cmp(w - 1, &key))
                w--;
        for (; w < c->want + c->want_cnt && !want_cmp(w, &key); w++) {
                delay_row_t *r = &c->rows[w->row];
                size_t idlen;
                const char *id = row_id(r, &idlen);
                if (r->tm || m->key_len != idlen || memcmp(m->key, id, idlen))
                        continue;
                r->tm = sluice__v1__timer__unpack(NULL, m->len, m->payload);
        }
}

/* The pipeline's payload topic, or NULL. */
static const char *payload_topic(const sl_pipeline_conf_t *pc) {
        const char *t = sl_delay_conf(pc)->payload_topic;
        return t && *t ? t : NULL;
}

/* Reads the Timer records of the index rows back from the payload topic.
 * Returns 0, or -1 (said on stderr) when it could not be read. */
static int delay_read_back(const sl_inspect_t *in, delay_row_t *rows,
                           size_t n) {
        const char *topic = payload_topic(in->pc);
        delay_read_t c = {rows, sl_calloc(n ? n : 1, sizeof(*c.want)), 0};
        sl_inspect_at_t *at;
        int rc = 0;

        for (size_t i = 0; i < n; i++)
                if (rows[i].index)
                        c.want[c.want_cnt++] = (delay_want_t){
                            {rows[i].partition, rows[i].t->seq}, i};
        if (c.want_cnt && !topic) {
                fprintf(stderr,
                        "sluice inspect: pipeline %s: the changelog holds "
                        "index records but payload_topic is not set: their "
                        "records cannot be read\n",
                        in->pc->name);
                free(c.want);
                return 0; /* they print as missing */
        }
        if (c.want_cnt) {
                qsort(c.want, c.want_cnt, sizeof(*c.want), want_cmp);
                at = sl_calloc(c.want_cnt, sizeof(*at));
                for (size_t i = 0; i < c.want_cnt; i++)
                        at[i] = c.want[i].at;
                rc = sl_inspect_read_offsets(in->conf, topic, at, c.want_cnt,
                                             delay_read_one, &c);
                free(at);
        }
        free(c.want);
        return rc;
}

/* A payload as a column: escaped, cut short. */
/* The instants a recurring timer shows after its pending one. */
#define INSPECT_NEXT 3

/* The line under a recurring timer's row: its schedule, what it fired,
 * and the INSPECT_NEXT instants after the pending one at due_ms.  The
 * zones come from *zc (made on first use). */
static void print_recurring(const Sluice__V1__Timer *tm, int64_t due_ms,
                            sl_tzcache_t **zc) {
        const char *every = tm->every ? tm->every : "";
        const char *cron = tm->cron ? tm->cron : "";
        const char *tzn = tm->tz ? tm->tz : "";
        char err[256], expr[128], tzb[96], when[40];
        sl_recur_t r;
        sl_tz_t *tz = NULL;
        int64_t next[INSPECT_NEXT];
        int n;

        if (!*every && !*cron)
                return;
        sl_escape(*every ? every : cron, strlen(*every ? every : cron), expr,
                  sizeof(expr));
        sl_escape(*tzn ? tzn : "UTC", strlen(*tzn ? tzn : "UTC"), tzb,
                  sizeof(tzb));
        printf("    %s %s%s%s: %" PRId64 " fired", *every ? "every" : "cron",
               expr, *every ? "" : " in ", *every ? "" : tzb, tm->fired);
        if (sl_recur_from_record(&r, every, strlen(every), cron, strlen(cron),
                                 tzn, strlen(tzn), tm->start_ms, tm->until_ms,
                                 tm->count, tm->catch_up, tm->fired,
                                 tm->last_fired_ms, err, sizeof(err)) < 0) {
                printf("; schedule unreadable: %s\n", err);
                return;
        }
        if (!*zc)
                *zc = sl_tzcache_new();
        if (sl_recur_tz(&r, *zc, &tz, err, sizeof(err)) < 0) {
                printf("; %s\n", err);
                return;
        }
        n = sl_recur_upcoming(&r, tz, due_ms, next, INSPECT_NEXT, err,
                              sizeof(err));
        if (n < 0) {
                printf("; %s\n", err);
                return;
        }
        printf("; then");
        for (int i = 0; i < n; i++) {
                sl_inspect_fmt_time(next[i], when, sizeof(when));
                printf("%s %s", i ? "," : "", when);
        }
        if (n < INSPECT_NEXT)
                printf("%s none", n ? "," : "");
        printf("\n");
}

static const char *payload_col(const Sluice__V1__Timer *tm, char *buf,
                               size_t size) {
        if (tm->null_payload)
                return "(null)";
        return sl_escape(tm->payload.data, tm->payload.len, buf, size);
}

int sl_inspect_delay(const sl_inspect_t *in) {
        const sl_pipeline_conf_t *pc = in->pc;
        sl_timerheap_t **maps = in->maps;
        int parts = in->parts;
        const char *key = in->key;
        long limit = in->limit;
        delay_ctx_t c = {sl_timerheap_new(), 0, key};
        int64_t now = sl_now_ms();
        size_t total, shown, n, missing = 0;
        sl_tzcache_t *zc = NULL;
        delay_row_t *rows;
        int rc = SL_EXIT_OK;

        for (int p = 0; p < parts; p++) {
                c.partition = p;
                sl_timerheap_foreach(maps[p], delay_collect, &c);
        }
        total = sl_timerheap_count(c.by_due);
        /* The rows to print, in due order. */
        shown = SL_MIN(total, (size_t)limit);
        rows = sl_calloc(shown ? shown : 1, sizeof(*rows));
        for (n = 0; n < shown; n++) {
                delay_row_t *r = &rows[n];
                r->t = sl_timerheap_pop(c.by_due);
                r->partition = atoi(sl_timer_key(r->t)); /* "p/id" */
                r->index =
                    sl_logpb_is_index(sl_timer_data(r->t), r->t->datalen);
                if (!r->index)
                        r->tm = sluice__v1__timer__unpack(NULL, r->t->datalen,
                                                          sl_timer_data(r->t));
        }
        if (delay_read_back(in, rows, n) == -1)
                rc = SL_EXIT_FAIL;
        printf("pipeline %s (delay): %zu pending timers in %d partitions\n",
               pc->name, total, parts);
        if (total)
                printf("%-24s %10s  %-4s %-24s %-24s %s\n", "DUE", "IN", "PART",
                       "TARGET", "ID", "PAYLOAD");
        for (size_t i = 0; i < n; i++) {
                const delay_row_t *r = &rows[i];
                const char *id;
                size_t idlen;
                char due[40], inb[32], part[16], tgt[256], idb[256], pl[64];
                char gone[96];
                sl_inspect_fmt_time(r->t->due_ms, due, sizeof(due));
                snprintf(inb, sizeof(inb), "%+.1fs",
                         sl_inspect_secs_between(now, r->t->due_ms));
                snprintf(part, sizeof(part), "%d", r->partition);
                id = row_id(r, &idlen);
                sl_escape(id, idlen, idb, sizeof(idb));
                if (r->tm) {
                        printf("%-24s %10s  %-4s %-24s %-24s %s\n", due, inb,
                               part,
                               sl_escape(r->tm->target_topic,
                                         strlen(r->tm->target_topic), tgt,
                                         sizeof(tgt)),
                               idb, payload_col(r->tm, pl, sizeof(pl)));
                        print_recurring(r->tm, r->t->due_ms, &zc);
                        continue;
                }
                /* An index record whose Timer record is gone from the
                 * payload topic (deleted, compacted away) or was not
                 * read. */
                snprintf(gone, sizeof(gone), "(record @%" PRId64 " missing)",
                         r->t->seq);
                printf("%-24s %10s  %-4s %-24s %-24s %s\n", due, inb, part,
                       "(missing)", idb, gone);
                missing++;
        }
        if ((size_t)n < total)
                printf("... %zu more\n", total - (size_t)n);
        if (missing)
                printf("%zu of the timers shown have no record in %s\n",
                       missing,
                       payload_topic(pc) ? payload_topic(pc)
                                         : "the payload topic");
        for (size_t i = 0; i < n; i++) {
                if (rows[i].tm)
                        sluice__v1__timer__free_unpacked(rows[i].tm, NULL);
                sl_timer_free(rows[i].t);
        }
        free(rows);
        sl_timerheap_destroy(c.by_due);
        if (zc)
                sl_tzcache_destroy(zc);
        if (key && total == 0)
                return SL_EXIT_FAIL;
        return rc;
}
