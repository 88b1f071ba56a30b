/*
 * inspect_delay.c — `sluice inspect` of a delay pipeline: the pending
 * timers of the folded changelog (inspect.h), re-keyed by due time and
 * printed in due order with their target.
 */
#include "inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "logpb.h"
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

int sl_inspect_delay(const sl_inspect_t *in) {
        const sl_pipeline_conf_t *pc = in->pc;
        sl_timerheap_t **maps = in->maps;
        int parts = in->parts;
        const char *key = in->key;
        long limit = in->limit;
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
                k = sl_timer_key(t);
                slash = memchr(k, '/', t->keylen);
                sl_inspect_fmt_time(t->due_ms, due, sizeof(due));
                snprintf(in, sizeof(in), "%+.1fs",
                         sl_inspect_secs_between(now, t->due_ms));
                if (sl_logpb_is_index(sl_timer_data(t), t->datalen)) {
                        /* Its target is in its record in payload_topic. */
                        snprintf(tgt, sizeof(tgt), "(payload @%" PRId64 ")",
                                 t->seq);
                } else {
                        tm = sluice__v1__timer__unpack(NULL, t->datalen,
                                                       sl_timer_data(t));
                        sl_escape(tm->target_topic, strlen(tm->target_topic),
                                  tgt, sizeof(tgt));
                        sluice__v1__timer__free_unpacked(tm, NULL);
                }
                printf("%-24s %10s  %-4.*s %-24s %s\n", due, in,
                       (int)(slash - k), k, tgt,
                       sl_escape(slash + 1, t->keylen - (size_t)(slash - k) - 1,
                                 id, sizeof(id)));
                sl_timer_free(t);
                shown++;
        }
        if ((size_t)shown < total)
                printf("... %zu more\n", total - (size_t)shown);
        sl_timerheap_destroy(c.by_due);
        return key && total == 0 ? SL_EXIT_FAIL : SL_EXIT_OK;
}
