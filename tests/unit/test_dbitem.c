/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dbitem.c — debounce's changelog records read in place (logpb.h):
 * a DebounceItem and a DebounceChunk as protobuf-c packs them, unknown
 * fields skipped, and the records protobuf-c refuses refused as a whole
 * (a bad item or header anywhere in a chunk).  tests/fuzz/fuzz_dbitem.c
 * holds the readers to protobuf-c on any bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "logpb.h"
#include "sluice.pb-c.h"

static void item_init(Sluice__V1__DebounceItem *it, const char *id,
                      const char *payload, int64_t seq) {
        sluice__v1__debounce_item__init(it);
        it->id.data = (uint8_t *)id;
        it->id.len = id ? strlen(id) : 0;
        it->payload.data = (uint8_t *)payload;
        it->payload.len = strlen(payload);
        it->first_seen_ms = 1700000000000 + seq;
        it->last_update_ms = 1700000000500 + seq;
        it->seq = seq;
}

static void test_item(void **state) {
        Sluice__V1__DebounceItem it;
        Sluice__V1__Header h = SLUICE__V1__HEADER__INIT, *hp = &h;
        uint8_t buf[256];
        sl_logpb_dbitem_t r;
        size_t n;
        (void)state;

        item_init(&it, NULL, "{\"a\":1}", 42);
        it.group_opened_ms = 1699999999000;
        h.name = "trace";
        h.value.data = (uint8_t *)"t1";
        h.value.len = 2;
        it.n_headers = 1;
        it.headers = &hp;
        n = sluice__v1__debounce_item__pack(&it, buf);
        assert_int_equal(sl_logpb_dbitem_read(&r, buf, n), 0);
        assert_int_equal(r.payload_len, 7);
        assert_memory_equal(r.payload, "{\"a\":1}", 7);
        assert_true(r.first_seen_ms == 1700000000042);
        assert_true(r.last_update_ms == 1700000000542);
        assert_true(r.seq == 42);
        assert_true(r.group_opened_ms == 1699999999000);
        assert_int_equal(r.id_len, 0);
        assert_null(r.id);
        assert_int_equal(r.n_headers, 1);

        /* An empty record is an item of zeros; an empty payload has no
         * bytes, as protobuf-c gives it. */
        assert_int_equal(sl_logpb_dbitem_read(&r, buf, 0), 0);
        assert_int_equal(r.payload_len, 0);
        assert_null(r.payload);
        /* Truncated anywhere inside its last field: refused. */
        for (size_t cut = 1; cut < 4; cut++)
                assert_int_equal(sl_logpb_dbitem_read(&r, buf, n - cut), -1);
}

static void test_chunk(void **state) {
        Sluice__V1__DebounceItem items[3], *ip[3];
        Sluice__V1__DebounceChunk ch = SLUICE__V1__DEBOUNCE_CHUNK__INIT;
        const char *ids[3] = {"item-a", "item-b", "item-c"};
        uint8_t buf[512], more[600];
        size_t n, pos = 0, i = 0;
        sl_logpb_dbitem_t r;
        (void)state;

        for (int k = 0; k < 3; k++) {
                item_init(&items[k], ids[k], k == 1 ? "" : "payload", k + 1);
                ip[k] = &items[k];
        }
        ch.n_items = 3;
        ch.items = ip;
        n = sluice__v1__debounce_chunk__pack(&ch, buf);

        assert_int_equal(sl_logpb_dbchunk_read(buf, n, NULL, 0, NULL), 3);
        while (sl_logpb_dbchunk_next(buf, n, &pos, &r)) {
                assert_int_equal(r.id_len, strlen(ids[i]));
                assert_memory_equal(r.id, ids[i], r.id_len);
                assert_int_equal(r.payload_len, i == 1 ? 0 : 7);
                assert_true(r.seq == (int64_t)i + 1);
                i++;
        }
        assert_int_equal(i, 3);
        /* One kept from the check, the other two from where it ends. */
        assert_int_equal(sl_logpb_dbchunk_read(buf, n, &r, 1, &pos), 3);
        assert_memory_equal(r.id, ids[0], r.id_len);
        for (i = 1; sl_logpb_dbchunk_next(buf, n, &pos, &r); i++)
                assert_memory_equal(r.id, ids[i], r.id_len);
        assert_int_equal(i, 3);

        /* Unknown fields, in the chunk and in an item, are skipped. */
        memcpy(more, "\x48\x05", 2); /* field 9, varint 5 */
        memcpy(more + 2, buf, n);
        memcpy(more + 2 + n, "\x7a\x01z", 3); /* field 15, 1 byte */
        assert_int_equal(sl_logpb_dbchunk_read(more, n + 5, NULL, 0, NULL), 3);

        /* items with another wire type: the whole chunk is refused. */
        memcpy(more + n, "\x08\x01", 2); /* field 1, varint */
        memcpy(more, buf, n);
        assert_int_equal(sl_logpb_dbchunk_read(more, n + 2, NULL, 0, NULL), -1);
        /* An item that is not a DebounceItem (its seq as bytes) refuses
         * the chunk, even after good ones. */
        memcpy(more, buf, n);
        memcpy(more + n, "\x0a\x03\x22\x01x", 5);
        assert_int_equal(sl_logpb_dbchunk_read(more, n + 5, NULL, 0, NULL), -1);
        /* So does a header that is not a Header. */
        memcpy(more + n, "\x0a\x04\x32\x02\x08\x01", 6);
        assert_int_equal(sl_logpb_dbchunk_read(more, n + 6, NULL, 0, NULL), -1);
        /* A chunk with no items is no error. */
        assert_int_equal(sl_logpb_dbchunk_read(buf, 0, NULL, 0, NULL), 0);
        pos = 0;
        assert_int_equal(sl_logpb_dbchunk_next(buf, 0, &pos, &r), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_item),
            cmocka_unit_test(test_chunk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
