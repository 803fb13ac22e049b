/* A verdict as JSON through the streaming writer (rp_verdict_json.h). */
#include "rp_verdict_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rp_utf8.h"
#include "rp_verdict_vhost.h"

void rp_jout_text_fixed(rp_jout *w, const char *s) {
    if (s == NULL) {
        rp_jout_null(w);
        return;
    }
    size_t n = strlen(s);
    if (rp_utf8_valid((const uint8_t *)s, n)) {
        rp_jout_str_checked(w, s, n);
        return;
    }
    if (n > (SIZE_MAX - 1) / 3) {
        w->failed = true;
        return;
    }
    char *fixed = malloc(n * 3 + 1);
    if (fixed == NULL) {
        w->failed = true;
        return;
    }
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = rp_utf8_next(p + i, n - i, &cp);
        if (k == 0) {
            memcpy(fixed + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(fixed + o, p + i, k);
            o += k;
            i += k;
        }
    }
    rp_jout_str_checked(w, fixed, o); /* valid sequences and U+FFFD only */
    free(fixed);
}

void rp_jout_verdict(rp_jout *w, const rp_verdict *v) {
    rp_jout_obj_open(w);
    rp_jout_lit(w, "object");
    rp_jout_text_fixed(w, v->object);
    rp_jout_lit(w, "queue");
    rp_jout_text_fixed(w, v->queue);
    rp_jout_lit(w, "project");
    rp_jout_text_fixed(w, v->project);
    rp_jout_lit(w, "condition");
    rp_jout_strz(w, rp_condition_string(v->condition));
    rp_jout_lit(w, "measured");
    if (isfinite(v->measured))
        rp_jout_real(w, v->measured);
    else
        rp_jout_null(w);
    rp_jout_lit(w, "threshold");
    rp_jout_int(w, v->threshold);
    rp_jout_lit(w, "unit");
    rp_jout_text_fixed(w, v->unit);
    rp_jout_lit(w, "action");
    rp_jout_strz(w, rp_action_string(v->action));
    rp_jout_lit(w, "source");
    rp_jout_strz(w, rp_source_string(v->source));
    rp_jout_lit(w, "detail");
    rp_jout_text_fixed(w, v->detail);
    rp_jout_lit(w, "trusted");
    rp_jout_bool(w, v->trusted);
    /* Issue 19 item 1: the vhost its object names, or null. */
    char vhost[RP_VERDICT_VHOST_MAX];
    rp_jout_lit(w, "vhost");
    rp_jout_text_fixed(w, rp_verdict_vhost(v, vhost, sizeof vhost) ? vhost : NULL);
    rp_jout_obj_close(w);
}
