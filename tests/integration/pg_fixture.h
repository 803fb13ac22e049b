/*
 * pg_fixture.h - what the PostgreSQL store's integration tests share: a
 * schema of their own (migrated with rp_pg_migrate, dropped after), a store
 * over its own connection with every port a pass needs (no broker; a
 * publisher that counts), and SQL helpers on a second, plain connection
 * whose search_path is that schema.
 *
 * Every helper fails the test (cmocka) on an unexpected error, except in a
 * forked child, where they _exit(253).
 *
 * Ownership: pgfx_new returns a heap fixture that pgfx_free frees (closing
 * both connections and dropping the schema). Strings returned by pgfx_text
 * and pgfx_dump are heap strings the caller frees.
 */
#ifndef RP_PG_FIXTURE_H
#define RP_PG_FIXTURE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_pass.h"
#include "rp_pg_conn.h"
#include "rp_pg_store.h"

typedef struct pgfx {
    char schema[64];
    PGconn *sql;          /* plain connection, search_path = schema */
    rp_pg_conn *conn;     /* the store's */
    rp_pg_store *store;
    rp_ports ports;
    rp_pass_options opt;
    pcre2_code *owned, *dlq;
    size_t published;     /* events the publisher port saw */
    int64_t last_published_seq;
    bool owner;           /* created the schema: drops it on free */
} pgfx;

/* A migrated schema of its own (tag names it) and a store over it. */
pgfx *pgfx_new(const char *tag);
/* Another store over the same schema, on a connection of its own (for
 * racing and forked children); drops nothing on free. */
pgfx *pgfx_attach(const char *schema);
void pgfx_free(pgfx *f);

/* Gives the store a new connection whose DSN is dsn (NULL: the test DSN)
 * followed by extra (e.g. "application_name=x"; may be NULL), and a new
 * store over it; the ports are filled again. */
void pgfx_reconnect(pgfx *f, const char *dsn, const char *extra);

/* Runs SQL on the plain connection; fails on error. */
void pgfx_exec(pgfx *f, const char *fmt, ...) RP_PRINTF(2, 3);
/* Runs SQL and returns the SQLSTATE ("" when it succeeded). Static buffer. */
const char *pgfx_try(pgfx *f, const char *fmt, ...) RP_PRINTF(2, 3);
/* The first column of the first row as an integer (0 when NULL). */
int64_t pgfx_i64(pgfx *f, const char *fmt, ...) RP_PRINTF(2, 3);
/* ... as a heap string (NULL when SQL NULL). */
char *pgfx_text(pgfx *f, const char *fmt, ...) RP_PRINTF(2, 3);

/* Inserts n leased rows in project, with attempts/max_attempts, whose lease
 * expired `ago` (an SQL interval, e.g. '10 minutes') before now(). Returns
 * the first id (ids are consecutive). */
int64_t pgfx_expired(pgfx *f, int n, const char *project, int attempts, int max_attempts,
                     const char *ago);

/* One pass over the fixture's ports (opt as set; dry_run as given). */
rp_status pgfx_pass(pgfx *f, bool dry_run, rp_report *r) RP_MUSTCHECK;

/* Every table and sequence of the schema, every row, in a fixed order, as
 * text: two dumps are equal exactly when the schema's data is. */
char *pgfx_dump(pgfx *f);

/* Whether the report has a note containing needle. */
bool pgfx_has_note(const rp_report *r, const char *needle);

/* Parks a dead letter the way the tap does (rp_park_dead_letter over the
 * fixture's ports): message_id, first died on origin ("rejected", one
 * x-death at 1700000000, count 1), found on dlq (NULL: "<origin>.dlq") of
 * vhost (NULL: "/"), with body (truncated: not stored whole) and handle (its
 * stored headers and properties; NULL: none). Fails the test unless it is
 * parked new; returns its gate. */
int64_t pgfx_park(pgfx *f, const char *vhost, const char *origin, const char *dlq,
                  const char *message_id, rp_bytes body, bool truncated,
                  const rp_pg_dl_handle *handle);
/* A lease batch of one row, for tests of a single row: takes it into *job
 * (lent as take_leases lends), or commits one move of it and returns the
 * commit's failure or else the move's result (*ev set when RP_OK). */
rp_status pgfx_take1(const rp_store_port *s, const rp_lease_query *q, rp_held_job *job);
rp_status pgfx_move1(const rp_store_port *s, const rp_held_job *job, const rp_verdict *v,
                     rp_event_ref *ev);

#endif
