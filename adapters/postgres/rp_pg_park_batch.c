/* The dead-letter tap's sessions and the park-batch port over them
 * (rp_pg_park_batch.h). */
#include "rp_pg_park_batch.h"

#include <stdlib.h>
#include <string.h>

#include "rp_pg_store_internal.h"

/* The heap hint of the park sessions (rp__pg_store_keep_heap): 8 MiB, so
 * that the backend keeps up to 16 MiB, what a storm's transactions of 250
 * hold (a few MiB) with room to spare; a transaction of heavy headers (up
 * to RP_TAP_TXN_BYTES, 4 MiB, bound several times over) may still give
 * some back. */
#define RP_PG_PARK_HEAP_BYTES (8u * 1024u * 1024u)

struct rp_pg_park_sessions {
    rp_pg_conn *conn[RP_PG_PARK_SESSIONS];
    rp_pg_store *store[RP_PG_PARK_SESSIONS];
};

static rp_status rp_pb_send(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    rp_pg_park_sessions *s = self;
    if (session >= RP_PG_PARK_SESSIONS) return RP_ERR_INVALID;
    return rp_pg_park_send(s->store[session], items, n);
}

static rp_status rp_pb_recv(void *self, size_t session, rp_park_batch_item *items, size_t n) {
    rp_pg_park_sessions *s = self;
    if (session >= RP_PG_PARK_SESSIONS) return RP_ERR_INVALID;
    return rp_pg_park_recv(s->store[session], items, n);
}

rp_pg_park_sessions *rp_pg_park_sessions_new(rp_pg_conn *conns[RP_PG_PARK_SESSIONS],
                                             const char *schema) {
    rp_pg_park_sessions *s = calloc(1, sizeof *s);
    bool ok = s != NULL;
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++) {
        if (s == NULL) {
            rp_pg_conn_free(conns[k]);
            continue;
        }
        s->conn[k] = conns[k];
        s->store[k] = conns[k] ? rp_pg_store_new(conns[k], schema) : NULL;
        ok = ok && s->store[k] != NULL;
        rp__pg_store_keep_heap(s->store[k], RP_PG_PARK_HEAP_BYTES);
    }
    if (!ok) {
        rp_pg_park_sessions_free(s);
        return NULL;
    }
    return s;
}

void rp_pg_park_sessions_free(rp_pg_park_sessions *s) {
    if (s == NULL) return;
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++) {
        rp_pg_store_free(s->store[k]);
        rp_pg_conn_free(s->conn[k]);
    }
    free(s);
}

void rp_pg_park_sessions_cancel(rp_pg_park_sessions *s) {
    if (s == NULL) return;
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++)
        if (s->conn[k] != NULL) rp_pg_conn_cancel(s->conn[k]);
}

void rp_pg_park_sessions_port(rp_pg_park_sessions *s, rp_park_batch_port *out) {
    *out = (rp_park_batch_port){
        .self = s,
        .sessions = RP_PG_PARK_SESSIONS,
        .send = rp_pb_send,
        .recv = rp_pb_recv,
    };
}

void rp_pg_park_sessions_ports(rp_pg_park_sessions *s, rp_ports *out) {
    rp_pg_store_ports(s->store[0], out);
}

static void rp_pb_tap_cancel(void *self) { rp_pg_park_sessions_cancel(self); }

void rp_pg_park_sessions_tap_port(rp_pg_park_sessions *s, rp_tap_store_port *out) {
    memset(out, 0, sizeof *out);
    rp_pg_park_sessions_port(s, &out->batch);
    rp_pg_park_sessions_ports(s, &out->ports);
    out->self = s;
    out->cancel = rp_pb_tap_cancel;
}
