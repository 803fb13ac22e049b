/*
 * rp_utf8.h - strict UTF-8 decoding of bytes that came from outside.
 *
 * Strict means what RFC 3629 allows and nothing else: no overlong forms, no
 * surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Header values and
 * message ids are bytes chosen by publishers; whatever is not strict UTF-8
 * is treated byte by byte as invalid.
 *
 * Ownership: nothing here allocates; inputs are borrowed for the call.
 */
#ifndef RP_UTF8_H
#define RP_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"

/* Decodes the character at s (len > 0 bytes available). Returns its length
 * in bytes (1..4) and stores the code point in *cp, or returns 0 when the
 * bytes at s do not start a valid character (*cp is then s[0]). */
size_t rp_utf8_next(const uint8_t *s, size_t len, uint32_t *cp);

/* Whether cp changes or hides what a terminal or log line shows: the C0
 * and C1 controls and DEL (U+0000..U+001F, U+007F..U+009F), the line and
 * paragraph separators (U+2028, U+2029), the byte-order mark (U+FEFF) and
 * the bidirectional controls (U+200E, U+200F, U+202A..U+202E,
 * U+2066..U+2069), which can reorder the text around them. */
bool rp_utf8_is_control(uint32_t cp);

/* Whether all len bytes are strict UTF-8. */
bool rp_utf8_valid(const uint8_t *s, size_t len);

#endif
