/*
 * escape.h - what reaperctl prints for people, made safe for a terminal.
 *
 * Everything reaperctl prints as text can come from someone else: queue
 * names, dead-letter header values, reasons and error messages from the
 * daemon, the broker's own reply text. A terminal obeys what it is sent,
 * so ESC [ 2 J clears the screen and \r rewrites the line. Every such
 * string goes through here first: valid UTF-8 that prints is kept as it
 * is; \t \n \r as those two-character escapes, any other control
 * character (C0, DEL, C1, and the direction and line-separator marks
 * rp_utf8_is_control names) as \xHH for one byte or \u{HHHH} beyond, and a
 * byte that is not UTF-8 as \xHH.
 * So "\x1b[2J" prints as the eight characters \x1b[2J. A backslash is left
 * as it is (patterns such as ^vibey\. read as they are written), so a name
 * holding the text \x1b reads like one holding ESC: the aim is that nothing
 * reaches the terminal that it would obey, not a reversible encoding.
 *
 * Ownership: rp_ctl_escaped returns a heap string the caller frees (NULL
 * when out of memory); the input is borrowed. JSON output (--json) needs
 * none of this: jansson escapes every control character itself.
 */
#ifndef RP_CTL_ESCAPE_H
#define RP_CTL_ESCAPE_H

#include <stdio.h>

/* The escaped form of s (NULL reads as "-"). */
char *rp_ctl_escaped(const char *s);

/* Writes the escaped form of s to f (nothing but "?" when out of memory). */
void rp_ctl_fputs(FILE *f, const char *s);

#endif
