/* SPDX-License-Identifier: Apache-2.0 */
/*
 * outbox.c — records decided during a commit, in order (outbox.h).
 *
 * LAYOUT
 *
 * A chunk is a header followed by records laid end to end, each an
 * ob_rec_t (the fixed fields) and then its topic (NUL-terminated), key and
 * value bytes, padded to 8 bytes.  Chunks form a FIFO list: records are
 * appended to the last chunk (a new one when it is full) and taken from the
 * first; a chunk whose every record was taken is kept for reuse (up to 16)
 * or freed on the next pop, so the record returned last stays readable
 * until then.  The kept chunks are freed by sl_outbox_trim() once a burst
 * is over.
 */
#include "outbox.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct ob_rec_s {
        int32_t partition;
        int32_t task_partition;
        uint32_t topiclen, epoch;
        int pl_index;
        unsigned has_key : 1, has_value : 1;
        size_t keylen, valuelen;
        rd_kafka_headers_t *hdrs;
        uintptr_t flags;
        int64_t decided_ms;
        int64_t timestamp_ms;
        /* topic, NUL, key, value follow */
} ob_rec_t;

typedef struct ob_chunk_s {
        struct ob_chunk_s *next;
        size_t size; /* of data[] */
        size_t used; /* bytes written */
        size_t head; /* next record to take */
        char data[];
} ob_chunk_t;

struct sl_outbox_s {
        ob_chunk_t *first, *last;
        ob_chunk_t *spent; /* emptied by the last pop, kept by the next */
        ob_chunk_t *spare; /* emptied chunks kept for pushes (a list) */
        int spare_cnt;
        size_t max_bytes, bytes;
        int64_t max_records, count;
};

#define OB_ALIGN(n) (((n) + 7) & ~(size_t)7)

static size_t ob_rec_size(size_t topiclen, size_t keylen, size_t valuelen) {
        return OB_ALIGN(sizeof(ob_rec_t) + topiclen + 1 + keylen + valuelen);
}

sl_outbox_t *sl_outbox_new(size_t max_bytes, int64_t max_records) {
        sl_outbox_t *ob = sl_calloc(1, sizeof(*ob));
        ob->max_bytes = max_bytes;
        ob->max_records = max_records;
        return ob;
}

/* Emptied chunks kept for reuse: an outbox fills and empties with every
 * commit, and mapping and unmapping its chunks each time costs page
 * faults.  At most this many (4 MiB) are kept. */
#define OB_SPARE_MAX 16

/* The chunk the last pop emptied: kept as a spare, or freed. */
static void ob_free_spent(sl_outbox_t *ob) {
        ob_chunk_t *c = ob->spent;
        ob->spent = NULL;
        if (c && c->size == SL_OUTBOX_CHUNK && ob->spare_cnt < OB_SPARE_MAX) {
                c->next = ob->spare;
                ob->spare = c;
                ob->spare_cnt++;
        } else {
                free(c);
        }
}

void sl_outbox_clear(sl_outbox_t *ob) {
        sl_outbox_rec_t rec;
        while (sl_outbox_pop(ob, &rec))
                if (rec.hdrs)
                        rd_kafka_headers_destroy(rec.hdrs);
        ob_free_spent(ob);
}

size_t sl_outbox_trim(sl_outbox_t *ob) {
        size_t freed = 0;
        while (ob->spare) {
                ob_chunk_t *c = ob->spare;
                ob->spare = c->next;
                freed += sizeof(*c) + c->size;
                free(c);
        }
        ob->spare_cnt = 0;
        return freed;
}

void sl_outbox_destroy(sl_outbox_t *ob) {
        if (!ob)
                return;
        sl_outbox_clear(ob);
        sl_outbox_trim(ob);
        free(ob);
}

void sl_outbox_push(sl_outbox_t *ob, const sl_outbox_rec_t *rec) {
        size_t topiclen = strlen(rec->topic);
        size_t keylen = rec->key ? rec->keylen : 0;
        size_t valuelen = rec->value ? rec->valuelen : 0;
        size_t need = ob_rec_size(topiclen, keylen, valuelen);
        ob_chunk_t *c = ob->last;
        ob_rec_t *r;
        char *p;

        if (!c || c->size - c->used < need) {
                size_t size = SL_MAX(need, (size_t)SL_OUTBOX_CHUNK);
                if (size == SL_OUTBOX_CHUNK && ob->spare) {
                        c = ob->spare;
                        ob->spare = c->next;
                        ob->spare_cnt--;
                } else {
                        c = sl_malloc(sizeof(*c) + size);
                }
                c->next = NULL;
                c->size = size;
                c->used = c->head = 0;
                if (ob->last)
                        ob->last->next = c;
                else
                        ob->first = c;
                ob->last = c;
        }
        r = (ob_rec_t *)(void *)(c->data + c->used);
        r->partition = rec->partition;
        r->task_partition = rec->task_partition;
        r->topiclen = (uint32_t)topiclen;
        r->epoch = rec->epoch;
        r->pl_index = rec->pl_index;
        r->has_key = rec->key != NULL;
        r->has_value = rec->value != NULL;
        r->keylen = keylen;
        r->valuelen = valuelen;
        r->hdrs = rec->hdrs;
        r->flags = rec->flags;
        r->decided_ms = rec->decided_ms;
        r->timestamp_ms = rec->timestamp_ms;
        p = (char *)(r + 1);
        memcpy(p, rec->topic, topiclen + 1);
        p += topiclen + 1;
        if (keylen)
                memcpy(p, rec->key, keylen);
        p += keylen;
        if (valuelen)
                memcpy(p, rec->value, valuelen);
        c->used += need;
        ob->bytes += need;
        ob->count++;
}

int sl_outbox_pop(sl_outbox_t *ob, sl_outbox_rec_t *rec) {
        ob_chunk_t *c;
        ob_rec_t *r;
        char *p;
        size_t size;

        ob_free_spent(ob);
        c = ob->first;
        if (!c || c->head == c->used)
                return 0;
        r = (ob_rec_t *)(void *)(c->data + c->head);
        p = (char *)(r + 1);
        rec->topic = p;
        p += r->topiclen + 1;
        rec->partition = r->partition;
        rec->key = r->has_key ? (const void *)p : NULL;
        rec->keylen = r->keylen;
        p += r->keylen;
        rec->value = r->has_value ? (const void *)p : NULL;
        rec->valuelen = r->valuelen;
        rec->hdrs = r->hdrs;
        rec->flags = r->flags;
        rec->decided_ms = r->decided_ms;
        rec->timestamp_ms = r->timestamp_ms;
        rec->pl_index = r->pl_index;
        rec->task_partition = r->task_partition;
        rec->epoch = r->epoch;
        size = ob_rec_size(r->topiclen, r->keylen, r->valuelen);
        c->head += size;
        ob->bytes -= size;
        ob->count--;
        if (c->head == c->used) {
                /* Every record of c was taken: free it on the next pop
                 * (rec points into it until then). */
                ob->first = c->next;
                if (!ob->first)
                        ob->last = NULL;
                ob->spent = c;
        }
        return 1;
}

int sl_outbox_room(const sl_outbox_t *ob) {
        return ob->bytes < ob->max_bytes && ob->count < ob->max_records;
}

int64_t sl_outbox_count(const sl_outbox_t *ob) {
        return ob->count;
}

size_t sl_outbox_bytes(const sl_outbox_t *ob) {
        return ob->bytes;
}
