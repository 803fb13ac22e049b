#include "rp_untrusted.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_utf8.h"

/* The longest rendering of one character is a six-byte \uXXXX escape; a
 * valid character copied raw takes at most four bytes. */
#define RP_MAX_PER_CHAR 6

rp_status rp_untrusted_render(rp_bytes in, char **out) {
    *out = NULL;
    if (in.ptr == NULL && in.len != 0) return RP_ERR_INVALID;
    /* Every character takes at least one byte of in: at most
     * min(in.len, RP_UNTRUSTED_MAX_CHARS) of them. Sized to the input, not
     * to the most: a queue's name rendered per dead letter took a block of
     * 1.2 KB, past glibc's per-thread cache (issue 21). */
    size_t chars_max = in.len < RP_UNTRUSTED_MAX_CHARS ? in.len : RP_UNTRUSTED_MAX_CHARS;
    size_t cap = 2 + chars_max * RP_MAX_PER_CHAR + 3 + 1;
    char *s = malloc(cap);
    if (s == NULL) return RP_ERR_NOMEM;
    size_t w = 0, i = 0, chars = 0;
    s[w++] = '"';
    while (i < in.len && chars < RP_UNTRUSTED_MAX_CHARS) {
        /* Printable ASCII but the two escaped: copied as it is, which is
         * what the decoding below does with it, without decoding. */
        unsigned char c = in.ptr[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            s[w++] = (char)c;
            i++;
            chars++;
            continue;
        }
        uint32_t cp;
        size_t n = rp_utf8_next(in.ptr + i, in.len - i, &cp);
        if (n == 0) {
            w += (size_t)snprintf(s + w, cap - w, "\\x%02X", (unsigned)in.ptr[i]);
            n = 1;
        } else if (cp == '"' || cp == '\\') {
            s[w++] = '\\';
            s[w++] = (char)cp;
        } else if (cp == '\n') {
            memcpy(s + w, "\\n", 2);
            w += 2;
        } else if (cp == '\r') {
            memcpy(s + w, "\\r", 2);
            w += 2;
        } else if (cp == '\t') {
            memcpy(s + w, "\\t", 2);
            w += 2;
        } else if (rp_utf8_is_control(cp)) {
            w += (size_t)snprintf(s + w, cap - w, "\\u%04X", (unsigned)cp);
        } else {
            memcpy(s + w, in.ptr + i, n);
            w += n;
        }
        i += n;
        chars++;
    }
    s[w++] = '"';
    if (i < in.len) {
        memcpy(s + w, "...", 3);
        w += 3;
    }
    s[w] = '\0';
    *out = s;
    return RP_OK;
}
