/*
 * rp_pg_migrate.h - the versioned schema (adapters/postgres/migrations).
 *
 * Each migrations/NNNN_name.sql is embedded in the binary at build time.
 * rp_pg_migrate applies the missing ones in order, each in its own
 * transaction with its schema_version row, under a transaction-scoped
 * advisory lock so that two processes migrating at once apply each version
 * once. It refuses a schema newer than the binary knows (a newer reaper has
 * been run against this database; running an older one could damage it).
 * Running it again is a no-op.
 *
 * Blocking (libpq synchronous calls): the store thread or a command-line
 * path only. Ownership: nothing is kept.
 */
#ifndef RP_PG_MIGRATE_H
#define RP_PG_MIGRATE_H

#include <libpq-fe.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_status.h"

typedef struct rp_pg_migration {
    int version;
    const char *name;
    const char *sql;
} rp_pg_migration;

extern const rp_pg_migration rp_pg_migrations[];
extern const int rp_pg_migration_count;

/* The newest version this binary knows. */
int rp_pg_schema_version_known(void);

/* Reads the version applied in schema (0 when none). RP_OK, or
 * RP_ERR_UNAVAILABLE with err set. */
rp_status rp_pg_schema_version(PGconn *pg, const char *schema, int *version, char *err,
                               size_t errlen) RP_MUSTCHECK;

/* Applies what is missing. *applied gets how many were applied now (may be
 * NULL). RP_OK; RP_ERR_CONFLICT when the schema is newer than known;
 * RP_ERR_UNAVAILABLE or RP_ERR_INTERNAL (a failing migration, rolled back)
 * with err set. */
rp_status rp_pg_migrate(PGconn *pg, const char *schema, int *applied, char *err,
                        size_t errlen) RP_MUSTCHECK;

/* reaperd --migrate: connects (the daemon's session settings, less the
 * statement time-out: a migration may build an index over a large job
 * table), applies, logs what it did. Blocking: runs before (instead of) the
 * loop. Borrows cfg. Returns 0 when the schema is current (applied now or
 * before), 1 when the store could not be reached or refused (logged). */
int rp_pg_migrate_cli(const rp_config *cfg);

#endif
