/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsontext.c — whether bytes are one JSON text (see jsontext.h).
 *
 * DESIGN
 *
 * One pass, no recursion: a container's kind is one bit of a 64-bit
 * stack (1 = object), so nesting costs no memory and stops at
 * SL_JSON_SCAN_DEPTH.  Three states: a value is expected (VALUE), an
 * object key is expected (KEY), a value just ended (AFTER: a comma, the
 * container's close, or the end of the text).  Strings go eight bytes at
 * a time over the common case, printable ASCII (SWAR: tests on a word
 * that are exact as yes/no answers, since a borrow across bytes only
 * starts at a byte that already answers yes).
 */
#include "jsontext.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static uint64_t word_at(const unsigned char *s) {
        uint64_t v;
        memcpy(&v, s, sizeof(v));
        return v;
}

/* Nonzero when some byte of v is zero. */
static uint64_t has_zero(uint64_t v) {
        return (v - ONES) & ~v & HIGHS;
}

/* Nonzero when some byte of v is non-ASCII, below 0x20, '"' or '\\'. */
static uint64_t has_special(uint64_t v) {
        return (v & HIGHS) | ((v - ONES * 0x20) & ~v & HIGHS) |
               has_zero(v ^ (ONES * '"')) | has_zero(v ^ (ONES * '\\'));
}

static int plain(unsigned char c) {
        return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

size_t sl_ascii_len(const void *p, size_t n, int allow_nul) {
        const unsigned char *s = p;
        size_t i = 0;
        for (; n - i >= 8; i += 8) {
                uint64_t v = word_at(s + i);
                if ((v & HIGHS) || (!allow_nul && has_zero(v)))
                        break;
        }
        while (i < n && s[i] < 0x80 && (s[i] || allow_nul))
                i++;
        return i;
}

size_t sl_json_plain_len(const void *p, size_t n) {
        const unsigned char *s = p;
        size_t i = 0;
        while (n - i >= 8 && !has_special(word_at(s + i)))
                i += 8;
        while (i < n && plain(s[i]))
                i++;
        return i;
}

size_t sl_utf8_seq(const unsigned char *p, size_t n) {
        unsigned char c = p[0];
        size_t len, i;
        unsigned char lo = 0x80, hi = 0xbf;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4;
        else
                return 0;
        if (n < len)
                return 0;
        if (c == 0xe0)
                lo = 0xa0;
        else if (c == 0xed)
                hi = 0x9f;
        else if (c == 0xf0)
                lo = 0x90;
        else if (c == 0xf4)
                hi = 0x8f;
        if (p[1] < lo || p[1] > hi)
                return 0;
        for (i = 2; i < len; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return len;
}

static const unsigned char *skip_ws(const unsigned char *p,
                                    const unsigned char *e) {
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
                p++;
        return p;
}

/* The code unit of "\uXXXX" at p (p[0] == '\\'), or -1. */
static long u_escape(const unsigned char *p, const unsigned char *e) {
        long v = 0;
        if (e - p < 6 || p[0] != '\\' || p[1] != 'u')
                return -1;
        for (int i = 2; i < 6; i++) {
                int h = sl_hexval(p[i]);
                if (h < 0)
                        return -1;
                v = v * 16 + h;
        }
        return v;
}

/* A string at *pp (at its opening quote); *pp moves past its close. */
static sl_json_verdict_t scan_string(const unsigned char **pp,
                                     const unsigned char *e, int key) {
        const unsigned char *p = *pp + 1;
        for (;;) {
                size_t l;
                p += sl_json_plain_len(p, (size_t)(e - p));
                if (p == e)
                        return SL_JSON_NO;
                if (*p == '"') {
                        *pp = p + 1;
                        return SL_JSON_YES;
                }
                if (*p < 0x20)
                        return SL_JSON_NO;
                if (*p != '\\') { /* non-ASCII */
                        if (!(l = sl_utf8_seq(p, (size_t)(e - p))))
                                return SL_JSON_NO;
                        p += l;
                        continue;
                }
                if (e - p < 2)
                        return SL_JSON_NO;
                if (p[1] != 'u') {
                        if (!strchr("\"\\/bfnrt", p[1]) || !p[1])
                                return SL_JSON_NO;
                        p += 2;
                        continue;
                }
                {
                        long v = u_escape(p, e), w;
                        if (v < 0 || (v >= 0xdc00 && v <= 0xdfff))
                                return SL_JSON_NO;
                        if (v == 0 && key) /* jansson: no NUL in keys */
                                return SL_JSON_NO;
                        p += 6;
                        if (v >= 0xd800 && v <= 0xdbff) {
                                w = u_escape(p, e);
                                if (w < 0xdc00 || w > 0xdfff)
                                        return SL_JSON_NO;
                                p += 6;
                        }
                }
        }
}

/* A number at *pp; *pp moves past it.  SL_JSON_ASK when a double might
 * not hold it. */
static sl_json_verdict_t scan_number(const unsigned char **pp,
                                     const unsigned char *e) {
        const unsigned char *p = *pp, *d;
        int ask = 0;
        if (*p == '-')
                p++;
        if (p == e || *p < '0' || *p > '9')
                return SL_JSON_NO;
        d = p;
        if (*p == '0')
                p++;
        else
                while (p < e && *p >= '0' && *p <= '9')
                        p++;
        if (p - d > 300)
                ask = 1;
        if (p < e && *p == '.') {
                p++;
                if (p == e || *p < '0' || *p > '9')
                        return SL_JSON_NO;
                while (p < e && *p >= '0' && *p <= '9')
                        p++;
        }
        if (p < e && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < e && (*p == '+' || *p == '-'))
                        p++;
                if (p == e || *p < '0' || *p > '9')
                        return SL_JSON_NO;
                while (p < e && *p >= '0' && *p <= '9')
                        p++;
                ask = 1;
        }
        *pp = p;
        return ask ? SL_JSON_ASK : SL_JSON_YES;
}

/* true, false or null at *pp (which starts with t, f or n). */
static int literal(const unsigned char **pp, const unsigned char *e) {
        const char *word = **pp == 't'   ? "true"
                           : **pp == 'f' ? "false"
                                         : "null";
        size_t len = strlen(word);
        if ((size_t)(e - *pp) < len || memcmp(*pp, word, len))
                return 0;
        *pp += len;
        return 1;
}

sl_json_verdict_t sl_json_text_scan(const void *buf, size_t n) {
        const unsigned char *p = buf, *e = p + n;
        uint64_t objects = 0; /* bit 0: the innermost container */
        int depth = 0, ask = 0;
        sl_json_verdict_t r;

        if (!buf)
                return SL_JSON_NO;
        p = skip_ws(p, e);
value:
        if (p == e)
                return SL_JSON_NO;
        switch (*p) {
        case '{':
                p = skip_ws(p + 1, e);
                if (p < e && *p == '}') {
                        p++;
                        goto after;
                }
                if (depth == SL_JSON_SCAN_DEPTH)
                        return SL_JSON_ASK;
                objects = objects << 1 | 1;
                depth++;
                goto key;
        case '[':
                p = skip_ws(p + 1, e);
                if (p < e && *p == ']') {
                        p++;
                        goto after;
                }
                if (depth == SL_JSON_SCAN_DEPTH)
                        return SL_JSON_ASK;
                objects <<= 1;
                depth++;
                goto value;
        case '"':
                if ((r = scan_string(&p, e, 0)) != SL_JSON_YES)
                        return r;
                goto after;
        case 't':
        case 'f':
        case 'n':
                if (!literal(&p, e))
                        return SL_JSON_NO;
                goto after;
        default:
                if ((r = scan_number(&p, e)) == SL_JSON_NO)
                        return r;
                if (r == SL_JSON_ASK)
                        ask = 1; /* unless the grammar says no later */
                goto after;
        }
key:
        if (p == e || *p != '"')
                return SL_JSON_NO;
        if ((r = scan_string(&p, e, 1)) != SL_JSON_YES)
                return r;
        p = skip_ws(p, e);
        if (p == e || *p != ':')
                return SL_JSON_NO;
        p = skip_ws(p + 1, e);
        goto value;
after:
        p = skip_ws(p, e);
        if (!depth) {
                if (p != e)
                        return SL_JSON_NO;
                return ask ? SL_JSON_ASK : SL_JSON_YES;
        }
        if (p == e)
                return SL_JSON_NO;
        if (*p == ',') {
                p = skip_ws(p + 1, e);
                if (objects & 1)
                        goto key;
                goto value;
        }
        if (*p != ((objects & 1) ? '}' : ']'))
                return SL_JSON_NO;
        p++;
        objects >>= 1;
        depth--;
        goto after;
}
