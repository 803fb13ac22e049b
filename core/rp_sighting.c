#include "rp_sighting.h"

#include <stdlib.h>
#include <string.h>

#include "rp_object.h"
#include "rp_text.h"

rp_status rp_sighting_key(rp_source source, rp_condition condition, const char *subject,
                          char **out) {
    *out = NULL;
    if (subject == NULL || subject[0] == '\0') return RP_ERR_INVALID;
    if ((int)source < 0 || source >= RP_SOURCE_COUNT_) return RP_ERR_INVALID;
    if ((int)condition <= (int)RP_COND_NONE || condition >= RP_COND_COUNT_) return RP_ERR_INVALID;
    return rp_text_format(out, "%s|%s|%s", rp_source_string(source),
                          rp_condition_string(condition), subject);
}

rp_status rp_sighting_key_for(const rp_verdict *v, char **out) {
    *out = NULL;
    if (v->source == RP_SOURCE_JOB_QUEUE && v->condition == RP_COND_STALE_READY) {
        if (v->project == NULL) return RP_ERR_INVALID;
        char *subject;
        rp_status st = rp_object_project(v->project, &subject);
        if (st != RP_OK) return st;
        st = rp_sighting_key(v->source, v->condition, subject, out);
        free(subject);
        return st;
    }
    if (v->object == NULL) return RP_ERR_INVALID;
    return rp_sighting_key(v->source, v->condition, v->object, out);
}

bool rp_sighting_key_split(const char *key, rp_sighting_key_parts *out) {
    if (key == NULL) return false;
    const char *bar1 = strchr(key, '|');
    if (bar1 == NULL) return false;
    const char *bar2 = strchr(bar1 + 1, '|');
    if (bar2 == NULL || bar2[1] == '\0') return false;
    /* Source and condition names are short; anything longer is not a key. */
    char source[32], condition[32];
    size_t ls = (size_t)(bar1 - key), lc = (size_t)(bar2 - bar1 - 1);
    if (ls >= sizeof source || lc >= sizeof condition) return false;
    memcpy(source, key, ls);
    source[ls] = '\0';
    memcpy(condition, bar1 + 1, lc);
    condition[lc] = '\0';
    rp_source s;
    rp_condition c;
    if (!rp_source_parse(source, &s) || !rp_condition_parse(condition, &c)) return false;
    if (c == RP_COND_NONE) return false;
    out->source = s;
    out->condition = c;
    out->subject = bar2 + 1;
    return true;
}
