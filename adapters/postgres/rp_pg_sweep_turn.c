/* Issue 19 item 3: the fleet's turn to sweep a vhost (core/rp_sweep_turn.h,
 * rp_ports.h take_sweep_turn / give_sweep_turn): a session advisory lock
 * on (hashtext('reaper.sweep_turn'), hashtext(schema/vhost)), distinct from
 * the backfill's one-key locks. pg_try_advisory_lock stacks when a session
 * takes a lock it holds, so take asks pg_locks first and locks only when
 * this session does not hold it: the session holds it once, and one unlock
 * gives it back. give unlocks only a lock this session holds (no server
 * warning for one it lost with a reconnect). */
#include <string.h>

#include "rp_pg_store_internal.h"

#define RP_TURN_KEY "hashtext('reaper.sweep_turn'), hashtext($1::text || '/' || $2::text)"
#define RP_TURN_HELD                                                                    \
    "EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND "       \
    "pid = pg_backend_pid() AND objsubid = 2 AND "                                      \
    "classid = hashtext('reaper.sweep_turn')::oid AND "                                 \
    "objid = hashtext($1::text || '/' || $2::text)::oid AND "                           \
    "database = (SELECT oid FROM pg_database WHERE datname = current_database()))"

static rp_status rp_turn_sql(rp_pg_store *s, const char *vhost, const char *sql, const char *op,
                             bool *out) {
    *out = false;
    if (vhost == NULL) return RP_ERR_INVALID;
    rp_status st = rp__pg_enter(s, RP__PG_READ, op);
    if (st != RP_OK) return st;
    const char *vals[] = {s->schema, vhost};
    rp__pg_cmd k = {.stmt = -1, .sql = sql, .n = 2, .values = vals};
    PGresult *r = NULL;
    st = rp__pg_run(s, &k, 1, &r, op, NULL);
    if (st != RP_OK) return st;
    *out = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return RP_OK;
}

static rp_status rp_take_sweep_turn(void *self, const char *vhost, bool *got) {
    return rp_turn_sql(self, vhost,
                       "SELECT CASE WHEN " RP_TURN_HELD " THEN true "
                       "ELSE pg_try_advisory_lock(" RP_TURN_KEY ") END",
                       "take_sweep_turn", got);
}

static rp_status rp_give_sweep_turn(void *self, const char *vhost) {
    bool was;
    return rp_turn_sql(self, vhost,
                       "SELECT CASE WHEN " RP_TURN_HELD " THEN pg_advisory_unlock(" RP_TURN_KEY
                       ") ELSE false END",
                       "give_sweep_turn", &was);
}

void rp__pg_fill_sweep_turn(rp_store_port *out) {
    out->take_sweep_turn = rp_take_sweep_turn;
    out->give_sweep_turn = rp_give_sweep_turn;
}
