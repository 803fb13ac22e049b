/* The ledger payload of a verdict: the store encodes it itself with
 * support/rp_verdict_json.h, which the wire codec's JSON encoding uses too,
 * in the shape the control protocol gives a verdict (proto/SCHEMA.md): a
 * ledger row and a reply say a verdict the same way without the store
 * linking the codec. tests/unit/test_pg_payload.c pins the bytes. */
#include "rp_pg_store_internal.h"
#include "rp_verdict_json.h"

static bool rp_payload_valid(const rp_verdict *v) {
    return v != NULL && (int)v->condition >= 0 && v->condition < RP_COND_COUNT_ &&
           (int)v->action >= 0 && v->action < RP_ACTION_COUNT_ && (int)v->source >= 0 &&
           v->source < RP_SOURCE_COUNT_;
}

rp_status rp__pg_payload_to(rp_jout *w, const rp_verdict *v) {
    if (!rp_payload_valid(v)) return RP_ERR_INVALID;
    rp_jout_verdict(w, v);
    return w->failed ? RP_ERR_NOMEM : RP_OK;
}

rp_status rp__pg_payload(const rp_verdict *v, char **out) {
    *out = NULL;
    rp_jout w;
    rp_jout_init(&w);
    rp_status st = rp__pg_payload_to(&w, v);
    if (st != RP_OK) {
        rp_jout_free(&w);
        return st;
    }
    *out = rp_jout_take(&w);
    return *out ? RP_OK : RP_ERR_NOMEM;
}
