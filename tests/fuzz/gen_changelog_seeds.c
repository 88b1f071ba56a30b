/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gen_changelog_seeds.c — writes the seed corpora of the changelog fuzz
 * harnesses: VALID changelog, overflow and rates records, packed with the
 * generated protobuf-c code and framed as runtime_stub.inc describes, so
 * the fuzzer starts from meaningful state (timers due and not yet due,
 * debounce groups with items, throttle keys with checkpoints and backlogs).
 *
 *   gen_changelog_seeds DIR    writes DIR/changelog_<op>/seed-*
 *
 * Times are relative to the wall clock when it runs: seeds written earlier
 * than a fuzzing run hold timers already due, which is a case worth
 * fuzzing too (the catch-up after a rebuild).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice.pb-c.h"

#define SRC_CHANGELOG 0
#define SRC_SOURCE    1
#define SRC_TABLE     2
#define TAG_TOMBSTONE 4

typedef struct frame_s {
        uint8_t *buf;
        size_t len, size;
} frame_t;

static void put(frame_t *f, const void *p, size_t n) {
        if (f->len + n > f->size) {
                f->size = (f->len + n) * 2 + 64;
                f->buf = realloc(f->buf, f->size);
                if (!f->buf)
                        abort();
        }
        memcpy(f->buf + f->len, p, n);
        f->len += n;
}

static void put_u16(frame_t *f, size_t v) {
        uint8_t b[2] = {(uint8_t)(v & 0xff), (uint8_t)(v >> 8)};
        if (v > 0xffff)
                abort();
        put(f, b, 2);
}

/* The 8-byte header: clock offset, config variant, stub mode, wake-ups,
 * clock-step seed. */
static void header(frame_t *f, uint8_t variant, uint8_t mode, uint8_t wakes,
                   uint8_t seed) {
        uint8_t h[8] = {0, 0, 0, 0, variant, mode, wakes, seed};
        f->len = 0;
        put(f, h, sizeof(h));
}

static void record(frame_t *f, int src, const void *key, size_t keylen,
                   const void *value, size_t valuelen) {
        uint8_t tag = (uint8_t)src | (value ? 0 : TAG_TOMBSTONE);
        put(f, &tag, 1);
        put_u16(f, keylen);
        put(f, key, keylen);
        if (value) {
                put_u16(f, valuelen);
                put(f, value, valuelen);
        }
}

static void save(const frame_t *f, const char *dir, const char *op,
                 const char *name) {
        char path[512];
        FILE *fp;
        snprintf(path, sizeof(path), "%s/changelog_%s/seed-%s", dir, op, name);
        fp = fopen(path, "wb");
        if (!fp || fwrite(f->buf, 1, f->len, fp) != f->len || fclose(fp)) {
                perror(path);
                exit(1);
        }
}

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* delay                                                               */

/* A Timer record of id, to the changelog or (src SRC_SOURCE) the payload
 * topic. */
static void timer_to(frame_t *f, int src, const char *id, int64_t due,
                     const char *target, const char *tkey, int32_t tpart,
                     const char *payload, int nhdrs, int64_t seq) {
        Sluice__V1__Timer tm = SLUICE__V1__TIMER__INIT;
        Sluice__V1__Header hv[2], *hp[2];
        uint8_t *buf;
        size_t len;

        tm.due_ms = due;
        tm.target_topic = (char *)target;
        if (tkey) {
                tm.has_target_key = 1;
                tm.target_key.data = (uint8_t *)tkey;
                tm.target_key.len = strlen(tkey);
        }
        tm.target_partition = tpart;
        tm.payload.data = (uint8_t *)payload;
        tm.payload.len = strlen(payload);
        tm.seq = seq;
        tm.created_ms = due - 1000;
        for (int i = 0; i < nhdrs && i < 2; i++) {
                sluice__v1__header__init(&hv[i]);
                hv[i].name = i ? "trace" : "content-type";
                hv[i].value.data = (uint8_t *)(i ? "" : "text/plain");
                hv[i].value.len = i ? 0 : 10;
                hv[i].null_value = i == 1;
                hp[i] = &hv[i];
        }
        tm.n_headers = (size_t)nhdrs;
        tm.headers = hp;
        len = sluice__v1__timer__get_packed_size(&tm);
        buf = malloc(len + 1);
        sluice__v1__timer__pack(&tm, buf);
        record(f, src, id, strlen(id), buf, len);
        free(buf);
}

static void timer(frame_t *f, const char *id, int64_t due, const char *target,
                  const char *tkey, int32_t tpart, const char *payload,
                  int nhdrs, int64_t seq) {
        timer_to(f, SRC_CHANGELOG, id, due, target, tkey, tpart, payload, nhdrs,
                 seq);
}

/* payload_topic: the changelog's index record of id (logpb.h: 0xff,
 * version 1, varints of the due time and the payload record's offset). */
static void index_rec(frame_t *f, const char *id, int64_t due, int64_t off) {
        uint8_t buf[32];
        size_t n = 0;
        uint64_t v[2] = {(uint64_t)due, (uint64_t)off};
        buf[n++] = 0xff;
        buf[n++] = 1;
        for (int i = 0; i < 2; i++) {
                for (; v[i] >= 0x80; v[i] >>= 7)
                        buf[n++] = (uint8_t)(v[i] | 0x80);
                buf[n++] = (uint8_t)v[i];
        }
        record(f, SRC_CHANGELOG, id, strlen(id), buf, n);
}

static void delay_seeds(const char *dir, int64_t now) {
        frame_t f = {0};

        header(&f, 0, 0, 8, 1);
        timer(&f, "t-past", now - 60000, "out.a", NULL, -1, "late", 0, 1);
        timer(&f, "t-soon", now + 50, "out.a", "k", 2, "soon", 1, 2);
        timer(&f, "t-1s", now + 1000, "out.b", NULL, 0, "{\"x\":1}", 2, 3);
        timer(&f, "t-1h", now + 3600000, "out.b", NULL, -1, "hour", 0, 4);
        save(&f, dir, "delay", "timers");

        /* Reschedule, cancel, ties in seq order. */
        header(&f, 1, 0, 6, 2);
        timer(&f, "a", now + 10, "out.a", NULL, -1, "first", 0, 10);
        timer(&f, "b", now + 10, "out.a", NULL, -1, "tie", 0, 11);
        timer(&f, "a", now + 20, "out.c", "ka", 3, "rescheduled", 1, 12);
        record(&f, SRC_CHANGELOG, "b", 1, NULL, 0);
        timer(&f, "c", now - 5, "out.a", NULL, -1, "", 2, 13);
        save(&f, dir, "delay", "reschedule-cancel");

        /* Catch-up at 3/s, targets per topic, a refused target. */
        header(&f, 2, 3 | 8, 12, 3);
        for (int i = 0; i < 8; i++) {
                char id[16];
                snprintf(id, sizeof(id), "due-%d", i);
                timer(&f, id, now - 1000 * (8 - i), i % 3 ? "out.x" : "bad.t",
                      NULL, i % 2 ? -1 : i, "payload", i % 3, i);
        }
        save(&f, dir, "delay", "catchup");

        /* Too-large payloads (refused over 1000 bytes) and a missing
         * target topic. */
        {
                char big[1500];
                memset(big, 'p', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                header(&f, 0, 4 | 1, 4, 4);
                timer(&f, "big", now - 1, "out.big", NULL, -1, big, 1, 1);
                timer(&f, "small", now - 1, "out.big", NULL, -1, "s", 0, 2);
                save(&f, dir, "delay", "refused");
        }

        /* payload_topic (variant 3): the payload topic holds records at
         * offsets 0.. in order; the changelog indexes some of them, keeps
         * Timer records of before (old-*), and names an offset the topic
         * no longer holds (gone: payload-missing); d and e lie past the
         * highest offset indexed (indexed at rebuild, owed to the
         * changelog), e then tombstoned. */
        header(&f, 3, 0, 10, 5);
        timer_to(&f, SRC_SOURCE, "a", now - 1000, "out.a", NULL, -1, "pa", 1,
                 20);
        timer_to(&f, SRC_SOURCE, "b", now + 50, "out.b", "kb", 1, "pb", 0, 21);
        timer_to(&f, SRC_SOURCE, "c", now + 3600000, "out.a", NULL, -1, "pc", 2,
                 22);
        timer_to(&f, SRC_SOURCE, "d", now + 100, "out.c", NULL, 0, "pd", 0, 23);
        timer_to(&f, SRC_SOURCE, "e", now + 200, "out.c", NULL, -1, "pe", 0,
                 24);
        record(&f, SRC_SOURCE, "e", 1, NULL, 0);
        timer(&f, "old-1", now + 10, "out.a", NULL, -1, "old one", 1, 1);
        timer(&f, "old-2", now - 5, "out.b", NULL, -1, "old two", 0, 2);
        index_rec(&f, "a", now - 1000, 0);
        index_rec(&f, "b", now + 50, 1);
        index_rec(&f, "gone", now + 20, 1); /* offset of another id */
        index_rec(&f, "c", now + 3600000, 2);
        index_rec(&f, "old-1", now + 30, 2); /* moved to the payload topic */
        record(&f, SRC_CHANGELOG, "b", 1, NULL, 0);
        index_rec(&f, "b", now + 60, 1);
        save(&f, dir, "delay", "payloads-mixed");

        /* payload_topic with colliding hashes and a short look-ahead
         * (variant 4), an abort and a second rebuild (mode bit 4):
         * reschedules move a timer's record, payloads read back and let
         * go. */
        header(&f, 4, 16, 14, 6);
        for (int i = 0; i < 12; i++) {
                char id[16];
                snprintf(id, sizeof(id), "k-%d", i);
                timer_to(&f, SRC_SOURCE, id, now + 100 * i, "out.x", NULL, -1,
                         "payload", i % 3, 30 + i);
        }
        for (int i = 0; i < 12; i++) {
                char id[16];
                snprintf(id, sizeof(id), "k-%d", i);
                if (i % 4 == 3)
                        continue; /* left to the payload topic's tail */
                index_rec(&f, id, now + 100 * i, i);
        }
        timer_to(&f, SRC_SOURCE, "k-1", now + 5000, "out.y", NULL, -1, "v2", 0,
                 50);
        index_rec(&f, "k-1", now + 5000, 12);
        record(&f, SRC_CHANGELOG, "k-2", 3, NULL, 0);
        save(&f, dir, "delay", "payloads-collide");
        free(f.buf);
}

/* ------------------------------------------------------------------ */
/* debounce                                                            */

static void item(frame_t *f, const char *group, const char *id,
                 const char *payload, int64_t first, int64_t last,
                 int64_t seq) {
        Sluice__V1__DebounceItem it = SLUICE__V1__DEBOUNCE_ITEM__INIT;
        char key[256];
        size_t glen = strlen(group), ilen = strlen(id), len;
        uint8_t *buf;

        memcpy(key, group, glen);
        key[glen] = '\0';
        memcpy(key + glen + 1, id, ilen);
        it.payload.data = (uint8_t *)payload;
        it.payload.len = strlen(payload);
        it.first_seen_ms = first;
        it.last_update_ms = last;
        it.seq = seq;
        it.group_opened_ms = first;
        len = sluice__v1__debounce_item__get_packed_size(&it);
        buf = malloc(len + 1);
        sluice__v1__debounce_item__pack(&it, buf);
        record(f, SRC_CHANGELOG, key, glen + 1 + ilen, buf, len);
        free(buf);
}

static void item_gone(frame_t *f, const char *group, const char *id) {
        char key[256];
        size_t glen = strlen(group), ilen = strlen(id);
        memcpy(key, group, glen);
        key[glen] = '\0';
        memcpy(key + glen + 1, id, ilen);
        record(f, SRC_CHANGELOG, key, glen + 1 + ilen, NULL, 0);
}

/* A chunk record (debounce.h): n items of group, ids id0, id1, ...;
 * payload NULL: the chunk's tombstone. */
static void chunk(frame_t *f, const char *group, uint32_t no, int n,
                  const char *payload, int64_t first, int64_t seq) {
        Sluice__V1__DebounceChunk ch = SLUICE__V1__DEBOUNCE_CHUNK__INIT;
        Sluice__V1__DebounceItem its[8], *ip[8];
        char key[256], ids[8][16];
        size_t glen = strlen(group), len;
        uint8_t *buf;

        memcpy(key, group, glen);
        key[glen] = '\0';
        key[glen + 1] = '\0';
        key[glen + 2] = (char)(no >> 24);
        key[glen + 3] = (char)(no >> 16);
        key[glen + 4] = (char)(no >> 8);
        key[glen + 5] = (char)no;
        if (!payload) {
                record(f, SRC_CHANGELOG, key, glen + 6, NULL, 0);
                return;
        }
        for (int i = 0; i < n && i < 8; i++) {
                sluice__v1__debounce_item__init(&its[i]);
                snprintf(ids[i], sizeof(ids[i]), "id%d", i);
                its[i].id.data = (uint8_t *)ids[i];
                its[i].id.len = strlen(ids[i]);
                its[i].payload.data = (uint8_t *)payload;
                its[i].payload.len = strlen(payload);
                its[i].first_seen_ms = first + i;
                its[i].last_update_ms = first + i;
                its[i].seq = seq + i;
                ip[i] = &its[i];
        }
        ch.n_items = (size_t)(n < 8 ? n : 8);
        ch.items = ip;
        len = sluice__v1__debounce_chunk__get_packed_size(&ch);
        buf = malloc(len + 1);
        sluice__v1__debounce_chunk__pack(&ch, buf);
        record(f, SRC_CHANGELOG, key, glen + 6, buf, len);
        free(buf);
}

static void debounce_seeds(const char *dir, int64_t now) {
        frame_t f = {0};

        /* Chunks: two of one group, a group converted to item records
         * (its chunk tombstoned), a group emptied. */
        header(&f, 0, 0, 8, 1);
        chunk(&f, "wh-1", 1, 3, "{\"qty\":1}", now - 5000, 10);
        chunk(&f, "wh-1", 2, 2, "{\"qty\":2}", now - 4000, 20);
        chunk(&f, "wh-2", 1, 4, "text", now - 3000, 30);
        item(&f, "wh-2", "id0", "text", now - 3000, now - 2000, 30);
        chunk(&f, "wh-2", 1, 0, NULL, 0, 0);
        chunk(&f, "wh-3", 1, 2, "x", now - 100, 40);
        chunk(&f, "wh-3", 1, 0, NULL, 0, 0);
        save(&f, dir, "debounce", "chunks");

        header(&f, 0, 0, 8, 1);
        item(&f, "wh-1", "order-1", "{\"qty\":1}", now - 5000, now - 3000, 10);
        item(&f, "wh-1", "order-2", "{\"qty\":2}", now - 4000, now - 2500, 11);
        item(&f, "wh-1", "order-1", "{\"qty\":3}", now - 5000, now - 2100, 10);
        item(&f, "wh-2", "order-9", "plain text", now - 100, now - 100, 12);
        item_gone(&f, "wh-2", "order-9");
        item(&f, "wh-3", "o", "\xff\xfe not utf-8", now, now, 13);
        save(&f, dir, "debounce", "groups");

        /* Small limits: max_items 3, max_bytes 64, protobuf batches. */
        header(&f, 1, 0, 10, 2);
        for (int i = 0; i < 9; i++) {
                char id[16];
                snprintf(id, sizeof(id), "i%d", i);
                item(&f, i < 5 ? "g-a" : "g-b", id,
                     "0123456789abcdef0123456789", now - 2000 + i,
                     now - 1000 + i, 100 + i);
        }
        save(&f, dir, "debounce", "full-groups");

        /* Catch-up at 2 items/s; a batch too large for the producer,
         * split. */
        {
                char big[700];
                memset(big, 'x', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                header(&f, 0, 4, 12, 3);
                for (int i = 0; i < 4; i++) {
                        char id[16];
                        snprintf(id, sizeof(id), "big%d", i);
                        item(&f, "g-big", id, big, now - 60000, now - 60000, i);
                }
                item(&f, "g-late", "x", "y", now - 86400000, now - 86400000, 9);
                save(&f, dir, "debounce", "split");
        }
        header(&f, 2, 1, 8, 4);
        item(&f, "g", "a", "1", now - 10, now - 10, 1);
        item(&f, "g", "b", "2", now - 9, now - 9, 2);
        item(&f, "g", "c", "3", now - 8, now - 8, 3);
        item(&f, "h", "a", "4", now + 1000, now + 1000, 4);
        save(&f, dir, "debounce", "catchup-no-output");
        free(f.buf);
}

/* ------------------------------------------------------------------ */
/* throttle                                                            */

static void checkpoint(frame_t *f, int64_t from, int64_t now) {
        Sluice__V1__ThrottleCheckpoint c =
            SLUICE__V1__THROTTLE_CHECKPOINT__INIT;
        uint8_t buf[64];
        size_t len;
        c.from_offset = from;
        c.updated_ms = now;
        len = sluice__v1__throttle_checkpoint__pack(&c, buf);
        record(f, SRC_CHANGELOG, "c/", 2, buf, len);
}

static void tkey(frame_t *f, const char *key, int64_t drained_to, double tokens,
                 int64_t updated) {
        Sluice__V1__ThrottleKey r = SLUICE__V1__THROTTLE_KEY__INIT;
        char name[256];
        uint8_t buf[64];
        size_t len;
        snprintf(name, sizeof(name), "k/%s", key);
        r.drained_to = drained_to;
        r.tokens = tokens;
        r.updated_ms = updated;
        len = sluice__v1__throttle_key__pack(&r, buf);
        record(f, SRC_CHANGELOG, name, strlen(name), buf, len);
}

static void overflow(frame_t *f, const char *key, const char *payload,
                     int64_t deadline, int64_t source, int64_t now, int nhdrs) {
        Sluice__V1__OverflowRecord rec = SLUICE__V1__OVERFLOW_RECORD__INIT;
        Sluice__V1__Header hv[2], *hp[2];
        uint8_t *buf;
        size_t len;

        if (payload) {
                rec.payload.data = (uint8_t *)payload;
                rec.payload.len = strlen(payload);
        } else {
                rec.null_payload = 1;
        }
        for (int i = 0; i < nhdrs && i < 2; i++) {
                sluice__v1__header__init(&hv[i]);
                hv[i].name = i ? "null-one" : "x-id";
                hv[i].value.data = (uint8_t *)"42";
                hv[i].value.len = i ? 0 : 2;
                hv[i].null_value = i == 1;
                hp[i] = &hv[i];
        }
        rec.n_headers = (size_t)nhdrs;
        rec.headers = hp;
        rec.deadline_ms = deadline;
        rec.source_offset = source;
        rec.received_ms = now - 100;
        len = sluice__v1__overflow_record__get_packed_size(&rec);
        buf = malloc(len + 1);
        sluice__v1__overflow_record__pack(&rec, buf);
        record(f, SRC_SOURCE, key, strlen(key), buf, len);
        free(buf);
}

static void rate(frame_t *f, const char *key, const char *value) {
        record(f, SRC_TABLE, key, strlen(key), value,
               value ? strlen(value) : 0);
}

static void throttle_seeds(const char *dir, int64_t now) {
        frame_t f = {0};

        /* Checkpoint 0, two keys with backlogs, one drained past its
         * first record. */
        header(&f, 0, 0, 10, 1);
        rate(&f, "*", "5/s");
        rate(&f, "slow", "1/s burst=1");
        checkpoint(&f, 0, now - 2000);
        tkey(&f, "slow", 1, 0.0, now - 500);
        tkey(&f, "fast", 0, 3.5, now - 500);
        overflow(&f, "slow", "m0", now + 3600000, 100, now, 0);
        overflow(&f, "slow", "m1", now + 3600000, 101, now, 1);
        overflow(&f, "fast", "f0", now + 3600000, 102, now, 2);
        overflow(&f, "slow", "m2", now + 3600000, 103, now, 0);
        overflow(&f, "fast", NULL, now + 3600000, 104, now, 0);
        save(&f, dir, "throttle", "backlog");

        /* Expiries (deadline past) with and without a DLQ; no payload
         * cache: every head is re-read (sl_task_fetch -> fetched). */
        header(&f, 1, 0, 12, 2);
        checkpoint(&f, 1, now - 10000);
        tkey(&f, "k", 0, 0.0, now - 10);
        overflow(&f, "k", "gone", now - 5000, 1, now, 0);
        overflow(&f, "k", "expired", now - 1, 2, now, 1);
        overflow(&f, "k", "later", now + 2000, 3, now, 0);
        overflow(&f, "other", "o", now + 500, 4, now, 0);
        save(&f, dir, "throttle", "expire-refetch");

        /* Rates changed and reset, a tombstoned key, idle keys swept. */
        header(&f, 2, 3, 16, 3);
        rate(&f, "*", "100/m burst=2");
        rate(&f, "a", "0.5/s");
        rate(&f, "a", NULL);
        rate(&f, "b", "not a rate");
        tkey(&f, "a", 0, 1.0, now - 100000);
        record(&f, SRC_CHANGELOG, "k/a", 3, NULL, 0);
        tkey(&f, "idle", 0, 100.0, now - 100000);
        checkpoint(&f, 0, now);
        for (int i = 0; i < 6; i++)
                overflow(&f, i % 2 ? "a" : "b", "payload-bytes", now + 60000,
                         10 + i, now, i % 3);
        save(&f, dir, "throttle", "rates");
        free(f.buf);
}

int main(int argc, char **argv) {
        int64_t now = now_ms();
        if (argc != 2) {
                fprintf(stderr, "usage: %s DIR\n", argv[0]);
                return 2;
        }
        delay_seeds(argv[1], now);
        debounce_seeds(argv[1], now);
        throttle_seeds(argv[1], now);
        return 0;
}
