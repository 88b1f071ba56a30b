/* SPDX-License-Identifier: Apache-2.0 */
/*
 * groupcheck.c — unowned input partitions of a Stable group, and who
 * repairs them (see groupcheck.h).
 */
#include "groupcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Member a repairs before member b: fewer partitions, then the smaller
 * member id. */
static int member_before(const sl_groupcheck_member_t *a,
                         const sl_groupcheck_member_t *b) {
        int na = a->assignment ? a->assignment->cnt : 0;
        int nb = b->assignment ? b->assignment->cnt : 0;
        if (na != nb)
                return na < nb;
        return strcmp(a->consumer_id ? a->consumer_id : "",
                      b->consumer_id ? b->consumer_id : "") < 0;
}

int sl_groupcheck_look(const sl_groupcheck_topic_t *topics, int topic_cnt,
                       const sl_groupcheck_member_t *members, int member_cnt,
                       const char *my_member_id, sl_groupcheck_look_t *look) {
        unsigned char **owned;
        memset(look, 0, sizeof(*look));
        look->repairer = -1;
        look->mine = -1;
        /* One pass over every assignment marks what is owned (the look
         * runs on the loop thread, groups may have thousands of
         * partitions); then one pass over the served partitions. */
        owned =
            sl_calloc((size_t)(topic_cnt > 0 ? topic_cnt : 1), sizeof(*owned));
        for (int t = 0; t < topic_cnt; t++)
                owned[t] = sl_calloc((size_t)(topics[t].partition_cnt > 0
                                                  ? topics[t].partition_cnt
                                                  : 1),
                                     1);
        for (int i = 0; i < member_cnt; i++) {
                const rd_kafka_topic_partition_list_t *a =
                    members[i].assignment;
                for (int e = 0; a && e < a->cnt; e++)
                        for (int t = 0; t < topic_cnt; t++)
                                if (a->elems[e].partition >= 0 &&
                                    a->elems[e].partition <
                                        topics[t].partition_cnt &&
                                    !strcmp(a->elems[e].topic, topics[t].name))
                                        owned[t][a->elems[e].partition] = 1;
        }
        for (int t = 0; t < topic_cnt; t++) {
                for (int p = 0; p < topics[t].partition_cnt; p++) {
                        if (owned[t][p])
                                continue;
                        if (!look->unowned++)
                                snprintf(look->example, sizeof(look->example),
                                         "%s [%d]", topics[t].name, p);
                }
                free(owned[t]);
        }
        free(owned);
        for (int i = 0; i < member_cnt; i++) {
                if (my_member_id && *my_member_id && members[i].consumer_id &&
                    !strcmp(members[i].consumer_id, my_member_id))
                        look->mine = i;
                if (look->repairer < 0 ||
                    member_before(&members[i], &members[look->repairer]))
                        look->repairer = i;
        }
        if (!look->unowned)
                look->repairer = -1;
        return look->unowned;
}

/* Big-endian reads within [*p, end). */
static int rd_i16(const uint8_t **p, const uint8_t *end, int16_t *v) {
        if (end - *p < 2)
                return -1;
        *v = (int16_t)(((uint16_t)(*p)[0] << 8) | (*p)[1]);
        *p += 2;
        return 0;
}

static int rd_i32(const uint8_t **p, const uint8_t *end, int32_t *v) {
        if (end - *p < 4)
                return -1;
        *v = (int32_t)(((uint32_t)(*p)[0] << 24) | ((uint32_t)(*p)[1] << 16) |
                       ((uint32_t)(*p)[2] << 8) | (*p)[3]);
        *p += 4;
        return 0;
}

rd_kafka_topic_partition_list_t *sl_groupcheck_parse_assignment(const void *buf,
                                                                size_t len) {
        const uint8_t *p = buf, *end = p + len;
        rd_kafka_topic_partition_list_t *l;
        int16_t version, name_len;
        int32_t topic_cnt, part_cnt, part;
        char name[256];

        l = rd_kafka_topic_partition_list_new(0);
        if (!len)
                return l;
        if (!buf || rd_i16(&p, end, &version) || version < 0 ||
            rd_i32(&p, end, &topic_cnt) || topic_cnt < 0)
                goto bad;
        for (int32_t t = 0; t < topic_cnt; t++) {
                /* Topic names are at most 249 bytes. */
                if (rd_i16(&p, end, &name_len) || name_len <= 0 ||
                    name_len >= (int16_t)sizeof(name) || end - p < name_len)
                        goto bad;
                memcpy(name, p, (size_t)name_len);
                name[name_len] = '\0';
                p += name_len;
                /* Each partition needs 4 bytes: a count beyond what is
                 * left is a lie, not a reason to allocate. */
                if (rd_i32(&p, end, &part_cnt) || part_cnt < 0 ||
                    part_cnt > (end - p) / 4)
                        goto bad;
                for (int32_t i = 0; i < part_cnt; i++) {
                        if (rd_i32(&p, end, &part) || part < 0)
                                goto bad;
                        rd_kafka_topic_partition_list_add(l, name, part);
                }
        }
        return l; /* user data, if any, is not ours */
bad:
        rd_kafka_topic_partition_list_destroy(l);
        return NULL;
}

sl_groupcheck_verdict_t sl_groupcheck_judge(sl_groupcheck_t *gc, int64_t now_ms,
                                            int stable,
                                            const sl_groupcheck_look_t *look) {
        int64_t age;
        if (!stable || !look->unowned) {
                gc->gap_since_ms = 0;
                return SL_GROUPCHECK_OK;
        }
        if (!gc->gap_since_ms) {
                gc->gap_since_ms = now_ms;
                return SL_GROUPCHECK_WATCH;
        }
        age = now_ms - gc->gap_since_ms;
        /* Not a member (between two joins): nothing to leave. */
        if (look->mine < 0)
                return SL_GROUPCHECK_WATCH;
        if ((age >= SL_GROUPCHECK_GAP_MS && look->mine == look->repairer) ||
            age >= 3 * SL_GROUPCHECK_GAP_MS) {
                gc->gap_since_ms = 0;
                return SL_GROUPCHECK_REPAIR;
        }
        return SL_GROUPCHECK_WATCH;
}
