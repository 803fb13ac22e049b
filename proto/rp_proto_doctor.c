/* doctor's reply (SCHEMA.md section 4 `doctor`). */
#include "rp_proto.h"
#include "rp_proto_internal.h"

rp_status rp_proto_encode_doctor_reply(const rp_doctor_report *r, rp_encoding enc,
                                       rp_proto_buf *out) {
    if (r == NULL) return RP_ERR_INVALID;
    json_t *t = json_object(), *a = json_array();
    bool ok = t != NULL && a != NULL;
    for (size_t i = 0; ok && i < RP_DOC_COUNT_; i++) {
        const rp_doctor_check *c = &r->checks[i];
        json_t *o = json_object();
        ok = o != NULL && rp__set(o, "name", json_string(rp_doctor_check_name(c->id))) &&
             rp__set(o, "status", json_string(rp_doctor_status_string(c->status))) &&
             rp__set(o, "detail", rp__json_string(c->detail ? c->detail : "")) &&
             rp__set(o, "fix", rp__json_string(c->fix ? c->fix : ""));
        if (!ok) json_decref(o); /* NULL-safe */
        else ok = json_array_append_new(a, o) == 0; /* steals o either way */
    }
    ok = ok && rp__set(t, "ok", json_boolean(r->n_fail == 0)) &&
         rp__set(t, "fail", json_integer((json_int_t)r->n_fail)) &&
         rp__set(t, "warn", json_integer((json_int_t)r->n_warn)) &&
         rp__set(t, "checks", json_incref(a));
    json_decref(a);
    if (!ok) {
        json_decref(t);
        t = NULL;
    }
    return rp__reply(RP_OP_DOCTOR, t, enc, out);
}
