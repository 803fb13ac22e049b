#include "migrate_cli.h"

#include <stdio.h>

#include "rp_log.h"
#include "rp_pg_conn.h"
#include "rp_pg_migrate.h"

int rp_cli_migrate(const rp_config *cfg) {
    char err[512] = "";
    rp_pg_conn *pg = rp_pg_conn_new(cfg->store.dsn, 10);
    /* The daemon's session settings, less the statement time-out: a
     * migration may build an index over a large job table. */
    rp_pg_session s = {
        .schema = cfg->store.schema,
        .statement_timeout_ms = 0,
        .lock_timeout_ms = (int)cfg->store.lock_timeout_ms,
        .idle_in_transaction_timeout_ms = (int)cfg->store.idle_in_transaction_timeout_ms,
        .tcp_user_timeout_ms = (int)cfg->store.tcp_user_timeout_ms,
    };
    if (pg != NULL && rp_pg_conn_set_session(pg, &s) != RP_OK) {
        rp_pg_conn_free(pg);
        pg = NULL;
    }
    if (pg == NULL) {
        RP_ERROR("out of memory", NULL);
        return 1;
    }
    if (rp_pg_conn_ensure(pg, err, sizeof err) != RP_OK) {
        RP_ERROR("cannot migrate: store unreachable", "reason", err, NULL);
        rp_pg_conn_free(pg);
        return 1;
    }
    int before = 0, applied = 0;
    rp_status st = rp_pg_schema_version(rp_pg_conn_handle(pg), cfg->store.schema, &before, err,
                                        sizeof err);
    if (st == RP_OK)
        st = rp_pg_migrate(rp_pg_conn_handle(pg), cfg->store.schema, &applied, err, sizeof err);
    char from[16], to[16], n[16];
    snprintf(from, sizeof from, "%d", before);
    snprintf(to, sizeof to, "%d", rp_pg_schema_version_known());
    snprintf(n, sizeof n, "%d", applied);
    if (st != RP_OK) {
        RP_ERROR("migration refused", "schema", cfg->store.schema, "store", rp_pg_conn_peer(pg),
                 "reason", err, NULL);
        rp_pg_conn_free(pg);
        return 1;
    }
    if (applied == 0)
        RP_INFO("schema already current", "schema", cfg->store.schema, "version", to, NULL);
    else
        RP_INFO("schema migrated", "schema", cfg->store.schema, "from_version", from,
                "to_version", to, "applied", n, NULL);
    rp_pg_conn_free(pg);
    return 0;
}
