/* The ledger payload of a verdict: the store encodes it itself (jansson),
 * in the shape the control protocol gives a verdict (proto/SCHEMA.md), so
 * that a ledger row and a reply say a verdict the same way without the
 * store linking the wire codec. tests/unit/test_pg_payload.c pins the
 * bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "rp_pg_store_internal.h"
#include "rp_utf8.h"

/* A JSON string of s; each byte that does not start strict UTF-8 becomes
 * U+FFFD; NULL gives null. NULL only when out of memory. */
static json_t *rp_payload_string(const char *s) {
    if (s == NULL) return json_null();
    size_t n = strlen(s);
    if (rp_utf8_valid((const uint8_t *)s, n)) return json_stringn_nocheck(s, n);
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *fixed = malloc(n * 3 + 1);
    if (fixed == NULL) return NULL;
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
    json_t *j = json_stringn_nocheck(fixed, o);
    free(fixed);
    return j;
}

/* Sets key on obj to value, stealing value; false when value is NULL or
 * the set failed. */
static bool rp_payload_set(json_t *obj, const char *key, json_t *value) {
    if (value == NULL) return false;
    return json_object_set_new_nocheck(obj, key, value) == 0;
}

static bool rp_payload_valid(const rp_verdict *v) {
    return v != NULL && (int)v->condition >= 0 && v->condition < RP_COND_COUNT_ &&
           (int)v->action >= 0 && v->action < RP_ACTION_COUNT_ && (int)v->source >= 0 &&
           v->source < RP_SOURCE_COUNT_;
}

rp_status rp__pg_payload(const rp_verdict *v, char **out) {
    *out = NULL;
    if (!rp_payload_valid(v)) return RP_ERR_INVALID;
    json_t *t = json_object();
    bool ok = t != NULL && rp_payload_set(t, "object", rp_payload_string(v->object)) &&
              rp_payload_set(t, "queue", rp_payload_string(v->queue)) &&
              rp_payload_set(t, "project", rp_payload_string(v->project)) &&
              rp_payload_set(t, "condition", json_string(rp_condition_string(v->condition))) &&
              rp_payload_set(t, "measured",
                             isfinite(v->measured) ? json_real(v->measured) : json_null()) &&
              rp_payload_set(t, "threshold", json_integer(v->threshold)) &&
              rp_payload_set(t, "unit", rp_payload_string(v->unit)) &&
              rp_payload_set(t, "action", json_string(rp_action_string(v->action))) &&
              rp_payload_set(t, "source", json_string(rp_source_string(v->source))) &&
              rp_payload_set(t, "detail", rp_payload_string(v->detail)) &&
              rp_payload_set(t, "trusted", json_boolean(v->trusted));
    if (ok) *out = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    return *out ? RP_OK : RP_ERR_NOMEM;
}
