/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topicname.c — Kafka topic names (see topicname.h).
 */
#include "topicname.h"

const char *sl_topicname_illegal(const char *name, size_t len) {
        if (len == 0)
                return "empty topic name";
        if (len > SL_TOPICNAME_MAX)
                return "topic name longer than 249 characters";
        if ((len == 1 && name[0] == '.') ||
            (len == 2 && name[0] == '.' && name[1] == '.'))
                return "'.' and '..' are not topic names";
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)name[i];
                if (c >= 0x80)
                        return "topic name is not ASCII";
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return "topic name has a character outside "
                               "[A-Za-z0-9._-]";
        }
        return NULL;
}

int sl_topicname_kafka_internal(const char *name) {
        return name && name[0] == '_' && name[1] == '_';
}
