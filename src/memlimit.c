/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memlimit.c — the memory budget the byte caps share (see memlimit.h for
 * the arithmetic).
 *
 * The sum and the product cap * budget are taken in 128 bits: each may be
 * near INT64_MAX.  The result is below cap (budget < sum, cap <= sum), so
 * it fits back.  A cap scaled to 0 would read as unlimited: it becomes 1
 * (so n caps may pass the budget by n bytes at most).
 */
#include "memlimit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "parse.h"
#include "util.h"

int64_t sl_memlimit_parse(const char *text) {
        unsigned long long v;
        char *end;

        while (*text == ' ' || *text == '\t' || *text == '\n')
                text++;
        if (!strncmp(text, "max", 3)) {
                end = (char *)text + 3;
                v = UINT64_MAX;
        } else {
                if (*text < '0' || *text > '9')
                        return -1;
                errno = 0;
                v = strtoull(text, &end, 10);
                if (errno == ERANGE)
                        v = UINT64_MAX;
        }
        while (*end == ' ' || *end == '\t' || *end == '\n')
                end++;
        if (*end)
                return -1;
        if (v >= (unsigned long long)SL_MEMLIMIT_HUGE)
                return 0;
        return (int64_t)v;
}

/* The limit in the file at path; 0 none or unreadable, -2 missing. */
static int64_t memlimit_read(const char *path) {
        char buf[64];
        size_t n;
        FILE *f = fopen(path, "r");
        int64_t v;

        if (!f)
                return errno == ENOENT ? -2 : 0;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        v = sl_memlimit_parse(buf);
        return v > 0 ? v : 0;
}

int64_t sl_memlimit_cgroup(const char *v2, const char *v1, const char **path) {
        int64_t v;

        *path = v2;
        if ((v = memlimit_read(v2)) != -2)
                return v;
        *path = v1;
        if ((v = memlimit_read(v1)) != -2)
                return v;
        *path = NULL;
        return 0;
}

int64_t sl_memlimit_share(int64_t budget, int64_t *caps, int n) {
        unsigned __int128 sum = 0;

        for (int i = 0; i < n; i++)
                sum += (uint64_t)(caps[i] > 0 ? caps[i] : SL_MAX(budget, 0));
        if (budget > 0 && sum > (uint64_t)budget) {
                for (int i = 0; i < n; i++) {
                        int64_t c = caps[i] > 0 ? caps[i] : budget;
                        caps[i] = (int64_t)((unsigned __int128)c *
                                            (uint64_t)budget / sum);
                        if (caps[i] < 1)
                                caps[i] = 1;
                }
        }
        return sum > INT64_MAX ? INT64_MAX : (int64_t)sum;
}

int64_t sl_memlimit_apply(sl_conf_t *conf, const char *v2, const char *v1) {
        char b[32], s[32], from[32], to[32], cg[32], whence[320] = "";
        const char *path = NULL;
        int64_t budget = conf->memory_limit, cgroup = 0, sum, *v;
        sl_conf_memcap_t *caps;
        int n;

        if (budget < 0) {
                cgroup = sl_memlimit_cgroup(v2, v1, &path);
                budget = cgroup / 100 * SL_MEMLIMIT_PCT +
                         cgroup % 100 * SL_MEMLIMIT_PCT / 100;
        }
        if (!budget) {
                sl_log(LOG_INFO, "MEMORY",
                       "memory_limit: none (%s): the byte caps apply per "
                       "pipeline",
                       conf->memory_limit == 0 ? "memory_limit = 0"
                       : path                  ? "the cgroup sets no limit"
                                               : "no cgroup memory limit file");
                return 0;
        }
        caps = sl_conf_memcaps(conf, &n);
        v = sl_calloc((size_t)n + 1, sizeof(*v));
        for (int i = 0; i < n; i++)
                v[i] = *caps[i].bytes;
        sum = sl_memlimit_share(budget, v, n);
        sl_size_format(budget, b, sizeof(b));
        sl_size_format(sum, s, sizeof(s));
        sl_size_format(cgroup, cg, sizeof(cg));
        if (path)
                snprintf(whence, sizeof(whence),
                         " (%d %% of the cgroup's limit %s in %s)",
                         SL_MEMLIMIT_PCT, cg, path);
        sl_log(sum > budget ? LOG_NOTICE : LOG_INFO, "MEMORY",
               "memory_limit %s%s: %d byte cap%s, %s in all%s", b, whence, n,
               n == 1 ? "" : "s", s,
               sum > budget ? ": each is scaled to share it" : ": they fit");
        for (int i = 0; sum > budget && i < n; i++) {
                int64_t was = *caps[i].bytes;
                sl_size_format(was, from, sizeof(from));
                sl_size_format(v[i], to, sizeof(to));
                sl_log(LOG_NOTICE, "MEMORY",
                       "%s: %s scaled from %s to %s: %" PRId64 " * %" PRId64
                       " / %" PRId64 " = %" PRId64
                       " (memory_limit %s, byte caps %s in all%s)",
                       caps[i].pc->name, caps[i].key,
                       was ? from : "0 (unlimited)", to, was ? was : budget,
                       budget, sum, v[i], b, s,
                       was ? "" : "; unlimited counts as the budget");
                *caps[i].bytes = v[i];
        }
        free(v);
        free(caps);
        return budget;
}
