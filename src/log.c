/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the log sink (see log.h).  Lines go to stderr, which is what a
 * container runtime collects.
 *
 * JSON LINES
 *
 * A json line is built with jansson, already the JSON library of the API
 * and of debounce's batches: it escapes quotes, backslashes and control
 * bytes (\n, \t, \u001b ...) and NUL (\u0000), so a message that holds
 * a newline stays one line.  jansson takes only valid UTF-8, and a message
 * may hold anything — a topic name, a key, librdkafka's text — so the
 * message and facility are made valid first: each byte that does not start
 * a valid UTF-8 sequence (jsontext.h's sl_utf8_seq: no overlong forms, no
 * surrogates, nothing above U+10FFFF, no truncated sequence) becomes
 * U+FFFD, and the rest passes as it is.  A line is never broken JSON;
 * should memory run out, the event is written as a text line instead of
 * being lost.
 */
#include "log.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>

#include "jsontext.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int log_level = LOG_INFO;
static sl_log_format_t log_format = SL_LOG_TEXT;

static const char *level_names[] = {"emerg",   "alert",  "crit", "error",
                                    "warning", "notice", "info", "debug"};

void sl_log_set_level(int level) {
        log_level = level;
}

int sl_log_level_parse(const char *name) {
        for (int i = 0; i < 8; i++)
                if (!strcmp(name, level_names[i]))
                        return i;
        if (!strcmp(name, "err"))
                return LOG_ERR;
        if (!strcmp(name, "warn"))
                return LOG_WARNING;
        return -1;
}

void sl_log_set_format(sl_log_format_t format) {
        log_format = format;
}

static const char *level_name(int level) {
        return level >= 0 && level < 8 ? level_names[level] : "?";
}

/* s[0..n) as valid UTF-8 (see the top of this file) in a JSON string. */
static json_t *utf8_string(const char *s, size_t n) {
        sl_buf_t b = {0};
        const unsigned char *p = (const unsigned char *)s;
        json_t *j;

        for (size_t i = 0; i < n;) {
                size_t k = sl_utf8_seq(p + i, n - i);
                if (k) {
                        sl_buf_put(&b, p + i, k);
                        i += k;
                } else {
                        sl_buf_put(&b, "\xef\xbf\xbd", 3); /* U+FFFD */
                        i++;
                }
        }
        j = json_stringn(b.p ? b.p : "", b.len);
        free(b.p);
        return j;
}

char *sl_log_json_line(const char *time, int level, const char *fac,
                       const char *msg, size_t len) {
        json_t *o = json_object();
        char *line = NULL;

        if (o &&
            !json_object_set_new(o, "time", utf8_string(time, strlen(time))) &&
            !json_object_set_new(o, "level", json_string(level_name(level))) &&
            !json_object_set_new(o, "facility",
                                 utf8_string(fac, strlen(fac))) &&
            !json_object_set_new(o, "message", utf8_string(msg, len)))
                line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        return line;
}

/* The event as a json line; the text line when memory is short. */
static void log_json(const char *ts, int level, const char *fac,
                     const char *fmt, va_list ap) {
        char stack[1024], *msg = stack, *line;
        va_list ap2;
        int n;

        va_copy(ap2, ap);
        n = vsnprintf(stack, sizeof(stack), fmt, ap);
        if (n >= (int)sizeof(stack) && (msg = malloc((size_t)n + 1)))
                vsnprintf(msg, (size_t)n + 1, fmt, ap2);
        va_end(ap2);
        if (!msg) { /* no memory for it all: its first 1023 bytes */
                msg = stack;
                n = (int)strlen(stack);
        }
        if (n < 0)
                n = 0;
        line = sl_log_json_line(ts, level, fac, msg, (size_t)n);
        flockfile(stderr);
        if (line)
                fprintf(stderr, "%s\n", line);
        else
                fprintf(stderr, "%s %s %s %.*s\n", ts, level_name(level), fac,
                        n, msg);
        funlockfile(stderr);
        free(line);
        if (msg != stack)
                free(msg);
}

void sl_log(int level, const char *fac, const char *fmt, ...) {
        char ts[40], sec[32];
        struct timeval tv;
        struct tm tm;
        va_list ap;

        if (level > log_level)
                return;
        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(ts, sizeof(ts), "%s.%03dZ", sec, (int)(tv.tv_usec / 1000));

        va_start(ap, fmt);
        if (log_format == SL_LOG_JSON) {
                log_json(ts, level, fac, fmt, ap);
        } else {
                flockfile(stderr);
                fprintf(stderr, "%s %s %s ", ts, level_name(level), fac);
                vfprintf(stderr, fmt, ap);
                fputc('\n', stderr);
                funlockfile(stderr);
        }
        va_end(ap);
}

int sl_log_budget_take(sl_log_budget_t *b, uint64_t *dropped) {
        int64_t now = sl_mono_us() / 1000;
        int ok;

        pthread_mutex_lock(&b->lock);
        if (!b->start_ms || now - b->start_ms >= SL_LOG_BUDGET_MS) {
                b->start_ms = now;
                b->used = 0;
        }
        ok = b->used < SL_LOG_BUDGET_LINES;
        if (ok) {
                b->used++;
                *dropped = b->dropped;
                b->dropped = 0;
        } else {
                b->dropped++;
        }
        pthread_mutex_unlock(&b->lock);
        return ok;
}

void sl_log_budgeted(sl_log_budget_t *b, const char *fac, const char *line) {
        uint64_t dropped;
        if (!sl_log_budget_take(b, &dropped))
                return;
        if (dropped)
                sl_log(LOG_WARNING, fac,
                       "%s (and %" PRIu64 " more libmicrohttpd messages "
                       "in the last %d s)",
                       line, dropped, SL_LOG_BUDGET_MS / 1000);
        else
                sl_log(LOG_WARNING, fac, "%s", line);
}
