/*
 * rp_untrusted.h - showing a value that a publisher chose (CONTRACT section
 * 6: dead-letter header values are untrusted, "stored and shown quoted, cut
 * to 200 characters").
 *
 * The rendering is one line of valid UTF-8 that cannot break out of a log
 * line, a terminal or a JSON string, and that shows where the value was cut:
 *
 *   - it is wrapped in double quotes;
 *   - '"' and '\' are written \" and \\; newline, carriage return and tab
 *     are written \n, \r and \t;
 *   - every other character of rp_utf8_is_control() (C0 and C1 controls,
 *     DEL, line and paragraph separators, the byte-order mark and the
 *     bidirectional controls, which can reorder what a terminal shows) is
 *     written \uXXXX with upper-case hex;
 *   - a byte that does not start a strict UTF-8 character (rp_utf8.h) is
 *     written \xNN and counts as one character;
 *   - only the first RP_UNTRUSTED_MAX_CHARS characters of the value are
 *     rendered (characters are counted in the value, before escaping, so a
 *     cut never splits a UTF-8 sequence or an escape); when anything was cut
 *     the closing quote is followed by "..." (outside the quotes, so a value
 *     that itself ends in "..." is told apart).
 *
 * Examples: abc -> "abc"; a"b -> "a\"b"; 300 x 'a' -> "aaa...a"... with 200
 * a's between the quotes; the empty value -> "".
 *
 * Ownership: rp_untrusted_render() stores a new heap string in *out that the
 * caller frees with free() (NULL on failure). The input is borrowed.
 */
#ifndef RP_UNTRUSTED_H
#define RP_UNTRUSTED_H

#include "rp_common.h"
#include "rp_status.h"

#define RP_UNTRUSTED_MAX_CHARS 200

/* Renders in (len may be 0; ptr may be NULL only when len is 0). */
rp_status rp_untrusted_render(rp_bytes in, char **out) RP_MUSTCHECK;

#endif
