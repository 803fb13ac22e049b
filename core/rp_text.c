#include "rp_text.h"

#include <stdio.h>
#include <stdlib.h>

rp_status rp_text_vformat(char **out, const char *fmt, va_list ap) {
    *out = NULL;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return RP_ERR_INVALID;
    char *s = malloc((size_t)n + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    if (vsnprintf(s, (size_t)n + 1, fmt, ap) != n) {
        free(s);
        return RP_ERR_INVALID;
    }
    *out = s;
    return RP_OK;
}

rp_status rp_text_format(char **out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rp_status st = rp_text_vformat(out, fmt, ap);
    va_end(ap);
    return st;
}
