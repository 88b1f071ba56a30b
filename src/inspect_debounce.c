/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect_debounce.c — `sluice inspect` of a debounce pipeline: the folded
 * changelog (inspect.h) goes through the operator's own window logic
 * (debounce.c), in log order, so the deadlines shown are the ones a
 * rebuild would arm; the open groups are printed in flush order (with
 * --key, one group and its items).
 */
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "debounce.h"
#include "opdef_debounce.h"
#include "timerheap.h"
#include "util.h"

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
        sl_inspect_fmt_time(it->first_seen_ms, first, sizeof(first));
        printf("    %-24s %9.1fs %9.1fs %8zu  %s\n", first,
               sl_inspect_secs_between(it->first_seen_ms, now),
               sl_inspect_secs_between(it->last_update_ms, now),
               it->payload_len, sl_escape(it->id, it->idlen, id, sizeof(id)));
}

int sl_inspect_debounce(const sl_inspect_t *in) {
        const sl_pipeline_conf_t *pc = in->pc;
        sl_timerheap_t **maps = in->maps;
        int parts = in->parts;
        const char *key = in->key;
        long limit = in->limit;
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
                sl_inspect_fmt_time(g.due_ms, due, sizeof(due));
                printf("%-24s %+8.1fs  %-4d %6zu %9zu %8.1fs %8.1fs  %-9s "
                       "%s\n",
                       due, sl_inspect_secs_between(now, g.due_ms), p, g.items,
                       g.bytes, sl_inspect_secs_between(g.opened_ms, now),
                       sl_inspect_secs_between(g.last_update_ms, now),
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
