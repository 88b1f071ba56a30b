/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c — the log sink (see log.h).  Lines go to stderr, which is what a
 * container runtime collects.
 */
#include "log.h"

#include <inttypes.h>

#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int log_level = LOG_INFO;

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

void sl_log(int level, const char *fac, const char *fmt, ...) {
        char ts[32];
        struct timeval tv;
        struct tm tm;
        va_list ap;

        if (level > log_level)
                return;
        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);

        flockfile(stderr);
        fprintf(stderr, "%s.%03dZ %s %s ", ts, (int)(tv.tv_usec / 1000),
                level >= 0 && level < 8 ? level_names[level] : "?", fac);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        funlockfile(stderr);
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
