/* The ledger payload of a verdict: the store encodes it itself (the
 * streaming writer of support/rp_json_out.h: the bytes jansson would write),
 * in the shape the control protocol gives a verdict (proto/SCHEMA.md), so
 * that a ledger row and a reply say a verdict the same way without the
 * store linking the wire codec. tests/unit/test_pg_payload.c pins the
 * bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rp_json_out.h"
#include "rp_pg_store_internal.h"
#include "rp_utf8.h"

/* s as a JSON string; each byte that does not start strict UTF-8 becomes
 * U+FFFD; NULL gives null. */
static void rp_payload_string(rp_jout *w, const char *s) {
    if (s == NULL) {
        rp_jout_null(w);
        return;
    }
    size_t n = strlen(s);
    if (rp_utf8_valid((const uint8_t *)s, n)) {
        rp_jout_str(w, s, n);
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
    rp_jout_str(w, fixed, o);
    free(fixed);
}

static bool rp_payload_valid(const rp_verdict *v) {
    return v != NULL && (int)v->condition >= 0 && v->condition < RP_COND_COUNT_ &&
           (int)v->action >= 0 && v->action < RP_ACTION_COUNT_ && (int)v->source >= 0 &&
           v->source < RP_SOURCE_COUNT_;
}

rp_status rp__pg_payload(const rp_verdict *v, char **out) {
    *out = NULL;
    if (!rp_payload_valid(v)) return RP_ERR_INVALID;
    rp_jout w;
    rp_jout_init(&w);
    rp_jout_obj_open(&w);
    rp_jout_lit(&w, "object");
    rp_payload_string(&w, v->object);
    rp_jout_lit(&w, "queue");
    rp_payload_string(&w, v->queue);
    rp_jout_lit(&w, "project");
    rp_payload_string(&w, v->project);
    rp_jout_lit(&w, "condition");
    rp_jout_strz(&w, rp_condition_string(v->condition));
    rp_jout_lit(&w, "measured");
    if (isfinite(v->measured))
        rp_jout_real(&w, v->measured);
    else
        rp_jout_null(&w);
    rp_jout_lit(&w, "threshold");
    rp_jout_int(&w, v->threshold);
    rp_jout_lit(&w, "unit");
    rp_payload_string(&w, v->unit);
    rp_jout_lit(&w, "action");
    rp_jout_strz(&w, rp_action_string(v->action));
    rp_jout_lit(&w, "source");
    rp_jout_strz(&w, rp_source_string(v->source));
    rp_jout_lit(&w, "detail");
    rp_payload_string(&w, v->detail);
    rp_jout_lit(&w, "trusted");
    rp_jout_bool(&w, v->trusted);
    rp_jout_obj_close(&w);
    *out = rp_jout_take(&w);
    return *out ? RP_OK : RP_ERR_NOMEM;
}
