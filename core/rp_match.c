#include "rp_match.h"

#include <stdlib.h>
#include <string.h>

pcre2_match_context *rp_match_context_new(void) {
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (mc == NULL) return NULL;
    pcre2_set_match_limit(mc, RP_MATCH_LIMIT);
    pcre2_set_depth_limit(mc, RP_MATCH_DEPTH_LIMIT);
    pcre2_set_heap_limit(mc, RP_MATCH_HEAP_LIMIT_KIB);
    return mc;
}

pcre2_code *rp_match_compile_untrusted(const char *text, int *err, size_t *off) {
    *err = 0;
    *off = 0;
    if (text == NULL) return NULL;
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (cc == NULL) {
        *err = PCRE2_ERROR_NOMEMORY;
        return NULL;
    }
    pcre2_set_max_pattern_length(cc, RP_MATCH_MAX_PATTERN);
    PCRE2_SIZE o = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, err, &o, cc);
    pcre2_compile_context_free(cc);
    *off = (size_t)o;
    return re;
}

rp_status rp_match_find(const pcre2_code *re, const uint8_t *s, size_t len, bool *matched,
                        size_t *start, size_t *end) {
    *matched = false;
    if (re == NULL || (s == NULL && len != 0)) return RP_ERR_INVALID;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = rp_match_context_new();
    if (md == NULL || mc == NULL) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return RP_ERR_NOMEM;
    }
    /* PCRE2 wants a non-NULL subject even when it is empty. */
    static const uint8_t empty[1] = {0};
    int rc = pcre2_match(re, len ? (PCRE2_SPTR)s : (PCRE2_SPTR)empty, len, 0, 0, md, mc);
    pcre2_match_context_free(mc);
    rp_status st = RP_OK;
    if (rc >= 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        *matched = true;
        /* \K inside an assertion can report an end before the start; such a
         * match is read as empty at its start, so callers can trust
         * start <= end <= len. */
        if (start) *start = ov[0];
        if (end) *end = ov[1] < ov[0] ? ov[0] : ov[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
        st = RP_ERR_INVALID;
    }
    pcre2_match_data_free(md);
    return st;
}

rp_status rp_match_name(const pcre2_code *re, const char *name, bool *matched) {
    *matched = false;
    if (name == NULL) return RP_ERR_INVALID;
    return rp_match_find(re, (const uint8_t *)name, strlen(name), matched, NULL, NULL);
}

rp_status rp_match_cut(const pcre2_code *re, const char *name, char **out) {
    *out = NULL;
    if (name == NULL) return RP_ERR_INVALID;
    size_t len = strlen(name), start = 0, end = 0;
    bool matched = false;
    if (re != NULL &&
        rp_match_find(re, (const uint8_t *)name, len, &matched, &start, &end) != RP_OK)
        matched = false; /* a name the pattern cannot read is used whole */
    if (!matched || end - start == len) {
        *out = strdup(name);
        return *out ? RP_OK : RP_ERR_NOMEM;
    }
    char *s = malloc(len - (end - start) + 1);
    if (s == NULL) return RP_ERR_NOMEM;
    memcpy(s, name, start);
    memcpy(s + start, name + end, len - end);
    s[len - (end - start)] = '\0';
    *out = s;
    return RP_OK;
}
