/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_dbitem.c — sl_logpb_dbitem_read() and sl_logpb_dbchunk_read()/_next()
 * against protobuf-c's sluice__v1__debounce_item__unpack() and
 * sluice__v1__debounce_chunk__unpack() on any bytes: the same records
 * refused, and of the others the same fields and items.
 *
 * Input: the bytes are read both as a DebounceItem record and as a
 * DebounceChunk record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logpb.h"
#include "sluice.pb-c.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Items read in the one pass (few, so that the fuzzer makes chunks with
 * more). */
#define SL_FZ_FIRST 2

/* The same bytes, or both empty (protobuf-c gives no data for no bytes). */
static int same(const void *a, size_t alen, const void *b, size_t blen) {
        return alen == blen && (!alen || !memcmp(a, b, alen));
}

static void check_item(const sl_logpb_dbitem_t *it,
                       const Sluice__V1__DebounceItem *pc) {
        CHECK(same(it->payload, it->payload_len, pc->payload.data,
                   pc->payload.len));
        CHECK(!it->payload_len == !it->payload);
        CHECK(it->first_seen_ms == pc->first_seen_ms);
        CHECK(it->last_update_ms == pc->last_update_ms);
        CHECK(it->seq == pc->seq);
        CHECK(it->group_opened_ms == pc->group_opened_ms);
        CHECK(same(it->id, it->id_len, pc->id.data, pc->id.len));
        CHECK(!it->id_len == !it->id);
        CHECK(it->n_headers == pc->n_headers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Sluice__V1__DebounceItem *pi =
            sluice__v1__debounce_item__unpack(NULL, size, data);
        Sluice__V1__DebounceChunk *pch =
            sluice__v1__debounce_chunk__unpack(NULL, size, data);
        sl_logpb_dbitem_t it, first[SL_FZ_FIRST];
        size_t rest;
        long n;

        if (!pi) {
                CHECK(sl_logpb_dbitem_read(&it, data, size) == -1);
        } else {
                CHECK(sl_logpb_dbitem_read(&it, data, size) == 0);
                check_item(&it, pi);
                sluice__v1__debounce_item__free_unpacked(pi, NULL);
        }

        /* The first items into the array, then the rest from where they
         * end, and all of them again one by one from the start. */
        n = sl_logpb_dbchunk_read(data, size, first, SL_FZ_FIRST, &rest);
        if (!pch) {
                CHECK(n == -1);
                return 0;
        }
        CHECK(n >= 0 && (size_t)n == pch->n_items);
        for (size_t i = 0; i < (size_t)n && i < SL_FZ_FIRST; i++)
                check_item(&first[i], pch->items[i]);
        {
                size_t i = SL_FZ_FIRST;
                while (sl_logpb_dbchunk_next(data, size, &rest, &it)) {
                        CHECK(i < pch->n_items);
                        check_item(&it, pch->items[i]);
                        i++;
                }
                CHECK(pch->n_items <= SL_FZ_FIRST || i == pch->n_items);
        }
        {
                size_t pos = 0, i = 0;
                while (sl_logpb_dbchunk_next(data, size, &pos, &it)) {
                        CHECK(i < pch->n_items);
                        check_item(&it, pch->items[i]);
                        i++;
                }
                CHECK(i == pch->n_items);
        }
        sluice__v1__debounce_chunk__free_unpacked(pch, NULL);
        return 0;
}
