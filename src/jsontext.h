/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsontext.h — whether bytes are one JSON text, without building it.
 *
 * The debounce operator embeds an item's payload in a JSON batch verbatim
 * when the payload is a JSON text (debounce.h), so it asks this of every
 * payload of every batch.  Asking jansson meant building and freeing a
 * tree per payload: ~1.5 µs of CPU per item of a 100-byte JSON object,
 * twice what the rest of the item's state and encoding cost
 * (bench/debounce_state.c with DS_JSON=1).  The scan here walks the bytes
 * once, allocates nothing, and recurses into nothing.
 *
 * The answer must stay jansson's (json_loadb() with JSON_DECODE_ANY |
 * JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, which is how consumers of the
 * batch read it): RFC 8259 with strict UTF-8, surrogate escapes in pairs,
 * no \u0000 in an object key.  Where jansson's answer depends on more than
 * the grammar — a number with an exponent or over 300 digits (jansson
 * refuses a double that overflows) or nesting deeper than
 * SL_JSON_SCAN_DEPTH — the scan answers SL_JSON_ASK and the caller asks
 * jansson.  One difference on purpose: jansson drops a NUL byte that
 * directly follows a number or a literal (it takes it for the end of its
 * input) and so accepts "0\0", which embedded verbatim would put a raw NUL
 * into the batch, and no strict JSON reader takes that; the scan says no,
 * and such a payload goes as a JSON string.  tests/fuzz/fuzz_jsontext.c
 * holds the two to the same answer on any other bytes.
 *
 * Pure functions; any thread.
 */
#ifndef SL_JSONTEXT_H
#define SL_JSONTEXT_H

#include <stddef.h>

#define SL_JSON_SCAN_DEPTH 64

typedef enum {
        SL_JSON_NO = 0,   /* not one JSON text */
        SL_JSON_YES = 1,  /* one JSON text (any value, whitespace around) */
        SL_JSON_ASK = -1, /* ask jansson (see above) */
} sl_json_verdict_t;

sl_json_verdict_t sl_json_text_scan(const void *p, size_t n);

/* Length of the valid UTF-8 sequence at p (at most n bytes, n >= 1): 1 to
 * 4, or 0 when the bytes there are not one (overlong, surrogate, above
 * U+10FFFF, truncated, a stray continuation byte). */
size_t sl_utf8_seq(const unsigned char *p, size_t n);

/* Length of the leading run of ASCII bytes of p[0..n), NUL bytes included
 * only when allow_nul.  Eight bytes at a time. */
size_t sl_ascii_len(const void *p, size_t n, int allow_nul);

/* Length of the leading run of p[0..n) that a JSON string holds verbatim:
 * printable ASCII (0x20 to 0x7f) other than '"' and '\\'.  Eight bytes at
 * a time. */
size_t sl_json_plain_len(const void *p, size_t n);

#endif
