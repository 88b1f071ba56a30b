/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_debounce.c — what a debounce pipeline does with input bytes, minus
 * Kafka: sl_debounce_check() (the checks op_debounce.c makes on the group
 * key, the sluice-item headers and the value), then the window state
 * (upsert, remove, take, split) and both batch encodings.
 *
 * Only the pass over the record's headers itself (rd_kafka_header_get_all,
 * counting sluice-control and sluice-item) stays in op_debounce.c: it
 * needs an rd_kafka_message_t.
 *
 * Input: byte 0 picks max_items (1, 2, 3, 1000) and max_bytes (8, 100,
 * 1 MiB); the rest is records, one per line, "key\tid\tpayload": no tab
 * after the id means no sluice-item (an id from the offset, as the
 * operator makes); an id of "\x02" alone is a null sluice-item header, an
 * id starting with "\x03" is given twice; an id starting with "\x04" makes
 * the line a control record whose sluice-control value is the rest of the
 * id ("\x04flush": a flush), "\x04\x02" a null one, "\x04\x04..." given
 * twice; a payload of "\x01" alone is a null value (a removal);
 * max_record_bytes is 64 KiB.  An empty line is a commit: the state seals
 * (writes its chunk records) into an in-memory changelog.
 *
 * Checks: a control record is never an item, and a flush empties its
 * group in batches of reason "requested"; every JSON batch is JSON (as jansson
 * reads it, integers too big for it read as reals, which is how debounce.c
 * decides a payload is JSON) holding the batch's items; every protobuf batch
 * unpacks to the same key, id and items; a split keeps all items; a take
 * empties the state eventually; item counts add up; after each seal, a
 * state rebuilt from the changelog written so far holds as many items,
 * bytes and groups as the live one.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debounce.h"
#include "sluice.pb-c.h"

#include "check.inc"

static void check_batch(const sl_debounce_batch_t *b) {
        json_error_t jerr;
        json_t *j, *items;
        Sluice__V1__Batch *pb;
        size_t len;
        char *js;
        uint8_t *bin;

        CHECK(b->cnt >= 1);
        CHECK(strlen(b->id) == SL_DEBOUNCE_ID_LEN);

        js = sl_debounce_batch_json(b, &len);
        CHECK(js != NULL);
        /* As debounce.c judges payloads: an integer too big for jansson
         * (RFC 8259 sets no limit) is read as a real. */
        j = json_loadb(js, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
                       &jerr);
        if (!j) {
                fprintf(stderr, "invalid JSON batch (%s): %.*s\n", jerr.text,
                        (int)len, js);
                abort();
        }
        items = json_object_get(j, "items");
        CHECK(json_is_array(items) && json_array_size(items) == b->cnt);
        CHECK(json_is_string(json_object_get(j, "batch_id")));
        CHECK(
            !strcmp(json_string_value(json_object_get(j, "batch_id")), b->id));
        json_decref(j);
        free(js);

        bin = sl_debounce_batch_protobuf(b, &len);
        CHECK(bin != NULL || len == 0);
        pb = sluice__v1__batch__unpack(NULL, len, bin);
        CHECK(pb != NULL);
        CHECK(pb->n_items == b->cnt);
        CHECK(pb->key.len == b->keylen &&
              (!b->keylen || !memcmp(pb->key.data, b->key, b->keylen)));
        CHECK(!strcmp(pb->batch_id, b->id));
        sluice__v1__batch__free_unpacked(pb, NULL);
        free(bin);
}

/* The changelog the state writes, in memory. */
typedef struct rec_s {
        char *key, *val; /* val NULL: a tombstone */
        size_t keylen, len;
} rec_t;

typedef struct clog_s {
        rec_t *v;
        size_t n, cap;
} clog_t;

static int clog_write(void *opaque, const void *key, size_t keylen,
                      const void *value, size_t len, int64_t seq, int must) {
        clog_t *c = opaque;
        rec_t *r;
        (void)seq;
        (void)must;
        CHECK(keylen > 0);
        if (c->n == c->cap) {
                c->cap = c->cap ? 2 * c->cap : 64;
                c->v = realloc(c->v, c->cap * sizeof(*c->v));
                CHECK(c->v != NULL);
        }
        r = &c->v[c->n++];
        r->key = malloc(keylen);
        memcpy(r->key, key, keylen);
        r->keylen = keylen;
        r->val = NULL;
        r->len = len;
        if (value) {
                r->val = malloc(len ? len : 1);
                if (len)
                        memcpy(r->val, value, len);
        }
        return 0;
}

/* A rebuild from every record written so far matches the live state. */
static void check_rebuild(const sl_debounce_t *live, const clog_t *c,
                          const sl_debounce_params_t *p, int64_t now) {
        sl_debounce_t *d = sl_debounce_new(p);
        for (size_t i = 0; i < c->n; i++) {
                const char *why = NULL;
                CHECK(sl_debounce_restore_record(d, c->v[i].key, c->v[i].keylen,
                                                 c->v[i].val, c->v[i].len, now,
                                                 &why) == 0);
        }
        CHECK(sl_debounce_items(d) == sl_debounce_items(live));
        CHECK(sl_debounce_bytes(d) == sl_debounce_bytes(live));
        CHECK(sl_debounce_groups(d) == sl_debounce_groups(live));
        sl_debounce_destroy(d);
}

static void clog_free(clog_t *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->v[i].key);
                free(c->v[i].val);
        }
        free(c->v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const int64_t max_items[] = {1, 2, 3, 1000};
        static const int64_t max_bytes[] = {8, 100, 1 << 20, 1 << 20};
        sl_debounce_params_t p = {
            .idle_ms = 2000, .max_age_ms = 30000, .salt = "fuzz"};
        const uint8_t *s, *end = data + size;
        sl_debounce_t *d;
        sl_debounce_batch_t *b, *half;
        int64_t now = 1767225600000LL, seq = 0;
        size_t added = 0, taken = 0;
        clog_t clog = {0};

        if (size < 1)
                return 0;
        p.max_items = max_items[data[0] & 3];
        p.max_bytes = max_bytes[(data[0] >> 2) & 3];
        d = sl_debounce_new(&p);
        sl_debounce_set_writer(
            d, &(sl_debounce_writer_t){clog_write, NULL, &clog});

        for (s = data + 1; s < end;) {
                const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
                const uint8_t *le = nl ? nl : end;
                const uint8_t *t1 = memchr(s, '\t', (size_t)(le - s));
                const uint8_t *t2 =
                    t1 ? memchr(t1 + 1, '\t', (size_t)(le - t1 - 1)) : NULL;
                const char *key = (const char *)s, *id, *pl;
                size_t keylen = (size_t)((t1 ? t1 : le) - s), idlen, pllen;
                char idbuf[32], detail[256];
                const char *reason = NULL;
                sl_debounce_verb_t verb;
                int null_value, nids;

                seq++;
                now += data[0] >> 4; /* time moves on, or not */
                s = le + 1;
                if ((const char *)le == key) {
                        /* An empty line: the commit. */
                        CHECK(sl_debounce_seal(d) >= 0);
                        check_rebuild(d, &clog, &p, now);
                        continue;
                }
                nids = 0;
                id = NULL;
                idlen = 0;
                if (t2) {
                        id = (const char *)t1 + 1;
                        idlen = (size_t)(t2 - t1 - 1);
                        pl = (const char *)t2 + 1;
                        pllen = (size_t)(le - t2 - 1);
                        nids = 1;
                        if (idlen == 1 && id[0] == 2) {
                                id = NULL; /* a null header */
                                idlen = 0;
                        } else if (idlen && id[0] == 3) {
                                nids = 2;
                        }
                } else {
                        pl = t1 ? (const char *)t1 + 1 : "";
                        pllen = t1 ? (size_t)(le - t1 - 1) : 0;
                }
                if (nids && idlen && id && id[0] == 4) {
                        /* A control record: never an item. */
                        const char *ctl = id + 1;
                        size_t ctllen = idlen - 1, before = added - taken;
                        int nctl = 1;
                        if (ctllen == 1 && ctl[0] == 2)
                                ctl = NULL;
                        else if (ctllen && ctl[0] == 4)
                                nctl = 2;
                        verb = sl_debounce_check_control(
                            keylen ? key : NULL, keylen, nctl, ctl,
                            ctl ? ctllen : 0, &reason, detail, sizeof(detail));
                        if (verb == SL_DEBOUNCE_REFUSE) {
                                CHECK(reason && *reason && *detail);
                                continue;
                        }
                        CHECK(verb == SL_DEBOUNCE_FLUSH && nctl == 1 && ctl &&
                              ctllen == 5 && !memcmp(ctl, "flush", 5));
                        CHECK(keylen && sl_debounce_text_ok(key, keylen));
                        while (sl_debounce_take(d, key, keylen, now, &b)) {
                                check_batch(b);
                                taken += b->cnt;
                                sl_debounce_batch_free(b);
                        }
                        while (sl_debounce_take_requested(d, key, keylen, now,
                                                          &b)) {
                                CHECK(b->reason == SL_DEBOUNCE_REQUESTED &&
                                      b->due_ms == now);
                                check_batch(b);
                                taken += b->cnt;
                                sl_debounce_batch_free(b);
                        }
                        CHECK(!sl_debounce_group(d, key, keylen, NULL));
                        CHECK(sl_debounce_items(d) == added - taken &&
                              added - taken <= before);
                        continue;
                }
                null_value = pllen == 1 && pl[0] == 1;
                verb = sl_debounce_check(keylen ? key : NULL, keylen, nids, id,
                                         idlen, null_value, pllen, 65536,
                                         &reason, detail, sizeof(detail));
                if (verb == SL_DEBOUNCE_REFUSE) {
                        CHECK(reason && *reason && *detail);
                        continue;
                }
                /* What was accepted is what the state and encodings need. */
                CHECK(keylen && sl_debounce_text_ok(key, keylen));
                CHECK(!nids || (nids == 1 && id && idlen &&
                                idlen <= SL_DEBOUNCE_MAX_ID &&
                                sl_debounce_text_ok(id, idlen)));
                if (!nids) {
                        idlen = (size_t)snprintf(idbuf, sizeof(idbuf), "0-%lld",
                                                 (long long)seq);
                        id = idbuf;
                }
                if (verb == SL_DEBOUNCE_REMOVE) {
                        CHECK(null_value && nids);
                        if (sl_debounce_remove(d, key, keylen, id, idlen))
                                added--;
                        continue;
                }
                CHECK(!null_value && pllen <= 65536);
                /* A due group flushes before the record joins it. */
                while (sl_debounce_take(d, key, keylen, now, &b)) {
                        check_batch(b);
                        taken += b->cnt;
                        sl_debounce_batch_free(b);
                }
                if (sl_debounce_upsert(d, key, keylen, id, idlen, pl, pllen,
                                       now, seq) == 0)
                        added++;
                CHECK(sl_debounce_items(d) == added - taken);
        }

        CHECK(sl_debounce_seal(d) >= 0);
        check_rebuild(d, &clog, &p, now);
        /* Everything flushes once old enough; split the odd batch. */
        now += 3600000;
        while (sl_debounce_take(d, NULL, 0, now, &b)) {
                if (b->cnt >= 2 && (b->cnt & 1)) {
                        size_t cnt = b->cnt;
                        CHECK(sl_debounce_batch_split(d, b, &half) == 0);
                        CHECK(b->cnt + half->cnt == cnt);
                        check_batch(half);
                        taken += half->cnt;
                        sl_debounce_batch_free(half);
                }
                check_batch(b);
                taken += b->cnt;
                sl_debounce_batch_free(b);
        }
        CHECK(sl_debounce_items(d) == 0 && sl_debounce_groups(d) == 0);
        CHECK(taken == added);
        sl_debounce_destroy(d);
        clog_free(&clog);
        return 0;
}
