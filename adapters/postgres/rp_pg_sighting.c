/* Ledger appends and sightings: opened and closed fleet-wide once, each
 * with its ledger event in the same statement (rp_pg_store.h). */
#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

/* Runs one writing statement whose result is (seq, at) when it wrote, and
 * no row when it did not. */
static rp_status rp_write_event(rp_pg_store *s, rp__pg_stmt stmt, const char *const *vals, int n,
                                const char *op, bool *wrote, rp_event_ref *event) {
    rp__pg_cmd k = {.stmt = (int)stmt, .n = n, .values = vals};
    PGresult *r = NULL;
    rp_status st = rp__pg_run(s, &k, 1, &r, op, NULL);
    if (st != RP_OK) return st;
    if (PQntuples(r) == 1) {
        *wrote = true;
        event->seq = rp__pg_i64(r, 0, 0);
        event->at = rp__pg_i64(r, 0, 1);
    }
    PQclear(r);
    return RP_OK;
}

static rp_status rp_append_event(void *self, const rp_verdict *v, rp_event_ref *event) {
    rp_pg_store *s = self;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "append_event");
    if (st != RP_OK) return st;
    char *payload = NULL;
    if ((st = rp__pg_payload(v, &payload)) != RP_OK) return st;
    const char *vals[] = {v->project, payload};
    bool wrote = false;
    st = rp_write_event(s, RP__PG_APPEND, vals, 2, "append_event", &wrote, event);
    free(payload);
    if (st == RP_OK && !wrote) st = RP_ERR_INTERNAL;
    return st;
}

static rp_status rp_open_sighting(void *self, const char *key, const rp_verdict *v, bool *opened,
                                  rp_event_ref *event) {
    rp_pg_store *s = self;
    *opened = false;
    if (key == NULL || v == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "open_sighting");
    if (st != RP_OK) return st;
    char *payload = NULL;
    if ((st = rp__pg_payload(v, &payload)) != RP_OK) return st;
    const char *vals[] = {key, rp_condition_string(v->condition), v->project, payload};
    st = rp_write_event(s, RP__PG_OPEN_SIGHTING, vals, 4, "open_sighting", opened, event);
    free(payload);
    return st;
}

static rp_status rp_close_sighting(void *self, const char *key, const rp_verdict *v, bool *closed,
                                   rp_event_ref *event) {
    rp_pg_store *s = self;
    *closed = false;
    if (key == NULL || v == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_WRITE, "close_sighting");
    if (st != RP_OK) return st;
    char *payload = NULL;
    if ((st = rp__pg_payload(v, &payload)) != RP_OK) return st;
    const char *vals[] = {key, v->project, payload};
    st = rp_write_event(s, RP__PG_CLOSE_SIGHTING, vals, 3, "close_sighting", closed, event);
    free(payload);
    return st;
}

static rp_status rp_list_sightings(void *self, rp_sighting_list *out) {
    rp_pg_store *s = self;
    out->rows = NULL;
    out->n = 0;
    PQclear(s->sight_res);
    s->sight_res = NULL;
    free(s->sight_view);
    s->sight_view = NULL;
    rp_status st = rp__pg_enter(s, RP__PG_READ, "list_open_sightings");
    if (st != RP_OK) return st;
    rp__pg_cmd k = {.stmt = RP__PG_SIGHTINGS};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, "list_open_sightings", NULL);
    if (st != RP_OK) return st;
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        return RP_OK;
    }
    rp_sighting_row *view = calloc((size_t)n, sizeof *view);
    if (view == NULL) {
        PQclear(r);
        return RP_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        view[i].key = rp__pg_str(r, i, 0);
        /* A condition this version does not know (a newer reaper's) reads
         * as none; core goes by the key, which it leaves alone then. */
        if (!rp_condition_parse(PQgetvalue(r, i, 1), &view[i].condition))
            view[i].condition = RP_COND_NONE;
        view[i].opened_seq = rp__pg_i64(r, i, 2);
        view[i].opened_at = rp__pg_i64(r, i, 3);
    }
    s->sight_res = r;
    s->sight_view = view;
    out->rows = view;
    out->n = (size_t)n;
    return RP_OK;
}

void rp__pg_fill_sighting(rp_store_port *out) {
    out->append_event = rp_append_event;
    out->open_sighting = rp_open_sighting;
    out->close_sighting = rp_close_sighting;
    out->list_open_sightings = rp_list_sightings;
}
