/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c — the config loader: INI text through libinih, our line
 * reader, the key table, the value parsers, finalize, and the SLUICE_*
 * environment overrides; then `sluice config dump` of what loaded.
 *
 * Input: the INI file, optionally followed by a NUL byte and environment
 * overrides, one per line "NAME=VALUE", each set as SLUICE_NAME (so
 * "KAFKA_CLIENT_ID=x" sets SLUICE_KAFKA_CLIENT_ID; at most 8).  The file is
 * a memfd, loaded by path (/proc/self/fd/N) as `sluice config check` does.
 *
 * Checks: every error is one line "PATH:LINE: key: ...", "PATH: key: ..."
 * or "env VAR: key: ..." and their count is the return value; a
 * configuration that loads dumps to a file that loads back (without the
 * environment) and dumps to the same text, comments aside.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

#include "check.inc"

#define MAX_ENV 8

/* A memfd holding data; its path in path. */
static int memfile(const void *data, size_t size, char *path, size_t psize) {
        int fd = memfd_create("fuzz-config", 0);

        CHECK(fd >= 0);
        CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
        snprintf(path, psize, "/proc/self/fd/%d", fd);
        return fd;
}

/* Loads path; checks the error lines against the count. */
static int load(const char *path, int flags, sl_conf_t **conf) {
        char *errs = NULL, *p;
        size_t esize = 0, plen = strlen(path);
        FILE *mem = open_memstream(&errs, &esize);
        int n, lines = 0;

        n = sl_conf_load_flags(path, flags, conf, mem);
        fclose(mem);
        CHECK(n >= 0);
        CHECK(n == 0 ? *conf != NULL : *conf == NULL);
        for (p = errs; *p; lines++) {
                char *nl = strchr(p, '\n');
                CHECK(nl); /* every error ends its line */
                CHECK(!strncmp(p, "env SLUICE_", 11) ||
                      (!strncmp(p, path, plen) &&
                       (p[plen] == ':' || p[plen] == '\0')));
                p = nl + 1;
        }
        CHECK(lines == n);
        free(errs);
        return n;
}

static char *dump(const sl_conf_t *conf, size_t *lenp) {
        char *buf = NULL;
        FILE *mem = open_memstream(&buf, lenp);

        sl_conf_dump(conf, mem);
        fclose(mem);
        return buf;
}

/* The dump without its comment lines. */
static void strip_comments(char *s) {
        char *o = s;

        for (char *p = s; *p;) {
                char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
                if (*p != ';') {
                        memmove(o, p, n);
                        o += n;
                }
                p += n;
        }
        *o = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nul = memchr(data, '\0', size);
        size_t ilen = nul ? (size_t)(nul - data) : size;
        char path[64], path2[64], *names[MAX_ENV], *d1, *d2;
        sl_conf_t *conf = NULL, *again = NULL;
        int fd, fd2, nenv = 0;
        size_t l1, l2;

        /* librdkafka loads plugins named by this property, at set time. */
        if (memmem(data, size, "plugin", 6))
                return 0;

        /* The environment part: "NAME=VALUE" lines after the NUL. */
        for (const uint8_t *s = nul ? nul + 1 : data + size, *end = data + size;
             s < end && nenv < MAX_ENV;) {
                const uint8_t *nl = memchr(s, '\n', (size_t)(end - s));
                size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
                char *line = malloc(n + 8), *eq;
                memcpy(line, "SLUICE_", 7);
                memcpy(line + 7, s, n);
                line[n + 7] = '\0';
                s += n + 1;
                eq = strchr(line, '=');
                if (!eq || strlen(line) != n + 7) {
                        free(line);
                        continue;
                }
                *eq = '\0';
                if (setenv(line, eq + 1, 1) == 0)
                        names[nenv++] = line;
                else
                        free(line);
        }

        fd = memfile(data, ilen, path, sizeof(path));
        if (load(path, SL_CONF_ENV, &conf) == 0) {
                char err[256];
                rd_kafka_conf_t *kc = sl_conf_rdkafka(conf, err, sizeof(err));
                if (kc)
                        rd_kafka_conf_destroy(kc);

                d1 = dump(conf, &l1);
                fd2 = memfile(d1, l1, path2, sizeof(path2));
                if (load(path2, 0, &again) != 0) {
                        fprintf(stderr, "the dump does not load:\n%s", d1);
                        sl_conf_load_flags(path2, 0, &again, stderr);
                        abort();
                }
                d2 = dump(again, &l2);
                strip_comments(d1);
                strip_comments(d2);
                if (strcmp(d1, d2)) {
                        fprintf(stderr, "dump differs:\n%s---\n%s", d1, d2);
                        abort();
                }
                free(d1);
                free(d2);
                sl_conf_destroy(again);
                close(fd2);
        }
        sl_conf_destroy(conf);
        close(fd);
        for (int i = 0; i < nenv; i++) {
                unsetenv(names[i]);
                free(names[i]);
        }
        return 0;
}
