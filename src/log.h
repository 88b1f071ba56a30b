/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h — one line per event: time, level, facility, message.
 *
 * librdkafka's own log lines are routed here too (sl_kafka_log_cb in kafka.h),
 * so an operator reads one stream.  Levels are syslog's.  Never log secrets.
 *
 * Two formats of the same four fields ([sluice] log_format):
 *   text  2026-01-31T12:00:00.123Z warning TXN commit failed: ...
 *   json  {"time":"2026-01-31T12:00:00.123Z","level":"warning",
 *          "facility":"TXN","message":"commit failed: ..."}
 * A json line is one JSON object whatever the message holds (log.c says
 * how), for log pipelines that read JSON.
 */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <pthread.h>
#include <stdint.h>
#include <syslog.h>

/* Lines above this level are dropped.  Default LOG_INFO. */
void sl_log_set_level(int level);

/* The format of every line from now on.  Default SL_LOG_TEXT.  Set it
 * before other threads log (as sl_log_set_level). */
typedef enum {
        SL_LOG_TEXT = 0,
        SL_LOG_JSON,
} sl_log_format_t;
void sl_log_set_format(sl_log_format_t format);

/* The json line of an event, without its newline: a malloc'd string the
 * caller frees, or NULL when out of memory.  time and fac are text, msg is
 * len bytes that may hold anything (NUL, control bytes, bytes that are not
 * UTF-8).  Pure; any thread. */
char *sl_log_json_line(const char *time, int level, const char *fac,
                       const char *msg, size_t len);

void sl_log(int level, const char *fac, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Level name ("info", "warning", ...) to syslog level; -1 if unknown. */
int sl_log_level_parse(const char *name);

/*
 * A budget of lines for a source that others can make talk: libmicrohttpd
 * logs a line for each client that leaves in the middle of a request, and
 * a flood of clients must not become a flood of lines.  At most
 * SL_LOG_BUDGET_LINES lines per SL_LOG_BUDGET_MS; the others are counted.
 * Initialise with SL_LOG_BUDGET_INIT.
 */
#define SL_LOG_BUDGET_LINES 10
#define SL_LOG_BUDGET_MS    10000
typedef struct sl_log_budget_s {
        pthread_mutex_t lock;
        int64_t start_ms;
        int used;
        uint64_t dropped;
} sl_log_budget_t;
#define SL_LOG_BUDGET_INIT                                                     \
        { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 }

/* 1 when a line may be logged now, with *dropped the lines dropped since
 * the last one allowed (say so in the line); 0 when it is to be dropped.
 * Any thread. */
int sl_log_budget_take(sl_log_budget_t *b, uint64_t *dropped);

/* Logs line (a warning of facility fac, line its text) if b allows it,
 * saying how many lines were dropped before it.  Any thread. */
void sl_log_budgeted(sl_log_budget_t *b, const char *fac, const char *line);

#endif
