#include "rp_utf8.h"

#include <stdint.h>
#include <string.h>

static bool rp_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

size_t rp_utf8_next(const uint8_t *s, size_t len, uint32_t *cp) {
    uint8_t b0 = s[0];
    *cp = b0;
    if (b0 < 0x80) return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        if (len < 2 || !rp_cont(s[1])) return 0;
        *cp = ((uint32_t)(b0 & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (len < 3 || !rp_cont(s[1]) || !rp_cont(s[2])) return 0;
        /* E0 needs A0..BF (else overlong), ED needs 80..9F (else a surrogate). */
        if (b0 == 0xE0 && s[1] < 0xA0) return 0;
        if (b0 == 0xED && s[1] > 0x9F) return 0;
        *cp = ((uint32_t)(b0 & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (len < 4 || !rp_cont(s[1]) || !rp_cont(s[2]) || !rp_cont(s[3])) return 0;
        /* F0 needs 90..BF (else overlong), F4 needs 80..8F (else > U+10FFFF). */
        if (b0 == 0xF0 && s[1] < 0x90) return 0;
        if (b0 == 0xF4 && s[1] > 0x8F) return 0;
        *cp = ((uint32_t)(b0 & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
              ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        return 4;
    }
    return 0;
}

bool rp_utf8_valid(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        /* Eight ASCII bytes at a time (issue 21): a word with no high bit. */
        if (len - i >= 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if ((x & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) { /* ASCII, most of what a broker carries */
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = rp_utf8_next(s + i, len - i, &cp);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

bool rp_utf8_is_control(uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0xFEFF || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}
