/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_globs.c — sl_globs_parse() and sl_globs_match() (a delay pipeline's
 * allowed_targets against a sluice-target header).
 *
 * Input: "<glob list>\n<name>".  Checks: a parsed list formats to a text
 * that parses to the same patterns, and every pattern matches the name
 * exactly when a plain backtracking matcher written from the parse.h
 * contract says it does (differential test; the reference only runs on
 * short inputs, as it is exponential in the number of stars).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#include "check.inc"

/* Whether c is in the set of the bracket at p ('['); *after is past it.
 * -1 when not closed (then '[' is a literal). */
static int ref_bracket(const char *p, char c, const char **after) {
        const char *set = p + 1, *close;
        size_t len;
        int neg = 0, in = 0;

        if (*set == '!' || *set == '^') {
                neg = 1;
                set++;
        }
        close = strchr(*set == ']' ? set + 1 : set, ']');
        if (!close)
                return -1;
        len = (size_t)(close - set);
        for (size_t i = 0; i < len;) {
                if (i + 2 < len && set[i + 1] == '-') {
                        if ((unsigned char)c >= (unsigned char)set[i] &&
                            (unsigned char)c <= (unsigned char)set[i + 2])
                                in = 1;
                        i += 3;
                } else {
                        if (set[i] == c)
                                in = 1;
                        i++;
                }
        }
        *after = close + 1;
        return in != neg;
}

static int ref_match(const char *p, const char *s) {
        const char *after;
        int r;

        if (!*p)
                return !*s;
        if (*p == '*') {
                int cross = p[1] == '*';
                while (*p == '*')
                        p++;
                for (size_t i = 0;; i++) {
                        if (ref_match(p, s + i))
                                return 1;
                        if (!s[i] || (!cross && s[i] == '.'))
                                return 0;
                }
        }
        if (!*s)
                return 0;
        if (*p == '?')
                return *s != '.' && ref_match(p + 1, s + 1);
        if (*p == '[' && (r = ref_bracket(p, *s, &after)) >= 0)
                return r && *s != '.' && ref_match(after, s + 1);
        return *p == *s && ref_match(p + 1, s + 1);
}

static int stars(const char *p) {
        int n = 0;
        for (; *p; p++)
                n += *p == '*';
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t plen = nl ? (size_t)(nl - data) : size;
        char err[512], *list = malloc(plen + 1), *name, *text;
        sl_globs_t g = {NULL, 0}, again = {NULL, 0};
        int any = 0;

        memcpy(list, data, plen);
        list[plen] = '\0';
        name = malloc(size - plen + 1);
        if (nl)
                memcpy(name, nl + 1, size - plen - 1);
        name[nl ? size - plen - 1 : 0] = '\0';

        if (sl_globs_parse(list, &g, err, sizeof(err)) != 0) {
                CHECK(g.cnt == 0 && g.pat == NULL);
                CHECK(strlen(err) > 0);
                goto out;
        }
        /* Format and parse again: the same patterns. */
        text = malloc(plen * 2 + 16);
        sl_globs_format(&g, text, plen * 2 + 16);
        CHECK(sl_globs_parse(text, &again, err, sizeof(err)) == 0);
        CHECK(again.cnt == g.cnt);
        for (int i = 0; i < g.cnt; i++)
                CHECK(!strcmp(again.pat[i], g.pat[i]));
        free(text);
        sl_globs_free(&again);

        for (int i = 0; i < g.cnt; i++) {
                sl_globs_t one = {&g.pat[i], 1};
                int m = sl_globs_match(&one, name);
                CHECK(m == 0 || m == 1);
                any |= m;
                if (stars(g.pat[i]) <= 6 && strlen(name) <= 128 &&
                    ref_match(g.pat[i], name) != m) {
                        fprintf(stderr, "pattern '%s' name '%s': %d\n",
                                g.pat[i], name, m);
                        abort();
                }
                if (!strcmp(g.pat[i], "**"))
                        CHECK(m == 1);
        }
        CHECK(sl_globs_match(&g, name) == any);
out:
        sl_globs_free(&g);
        free(list);
        free(name);
        return 0;
}
