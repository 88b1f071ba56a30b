/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_timerpb.c — sl_logpb_timer_read() against protobuf-c's
 * sluice__v1__timer__unpack() on any bytes: the same records refused, and
 * of the others the same fields (strings as strlen() of protobuf-c's copy
 * reads them).
 *
 * Input: the bytes are the Timer record as they are.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logpb.h"
#include "sluice.pb-c.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The same bytes, or both empty (protobuf-c gives no data for no bytes). */
static int same(const void *a, size_t alen, const void *b, size_t blen) {
        return alen == blen && (!alen || !memcmp(a, b, alen));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Sluice__V1__Timer *pc = sluice__v1__timer__unpack(NULL, size, data);
        sl_logpb_timer_t t;
        int r = sl_logpb_timer_read(&t, data, size);

        if (!pc) {
                CHECK(r == -1);
                sl_logpb_timer_free(&t);
                return 0;
        }
        CHECK(r == 0);
        CHECK(t.due_ms == pc->due_ms);
        CHECK(same(t.target_topic, t.target_topic_len, pc->target_topic,
                   strlen(pc->target_topic)));
        CHECK(same(t.target_key, t.target_key_len, pc->target_key.data,
                   pc->target_key.len));
        CHECK(!t.has_target_key == !pc->has_target_key);
        CHECK(t.target_partition == pc->target_partition);
        CHECK(
            same(t.payload, t.payload_len, pc->payload.data, pc->payload.len));
        CHECK(!t.null_payload == !pc->null_payload);
        CHECK(t.seq == pc->seq);
        CHECK(t.created_ms == pc->created_ms);
        CHECK(!t.null_target_key == !pc->null_target_key);
        CHECK(same(t.every, t.every_len, pc->every, strlen(pc->every)));
        CHECK(same(t.cron, t.cron_len, pc->cron, strlen(pc->cron)));
        CHECK(same(t.tz, t.tz_len, pc->tz, strlen(pc->tz)));
        CHECK(t.start_ms == pc->start_ms);
        CHECK(t.until_ms == pc->until_ms);
        CHECK(t.count == pc->count);
        CHECK(t.catch_up == pc->catch_up);
        CHECK(t.fired == pc->fired);
        CHECK(t.last_fired_ms == pc->last_fired_ms);
        CHECK(t.n_headers == pc->n_headers);
        for (size_t i = 0; i < t.n_headers; i++) {
                const sl_logpb_timer_hdr_t *h = &t.headers[i];
                const Sluice__V1__Header *ph = pc->headers[i];
                CHECK(same(h->name, h->name_len, ph->name, strlen(ph->name)));
                CHECK(same(h->value, h->value_len, ph->value.data,
                           ph->value.len));
                CHECK(!h->null_value == !ph->null_value);
        }
        sl_logpb_timer_free(&t);
        sluice__v1__timer__free_unpacked(pc, NULL);
        return 0;
}
