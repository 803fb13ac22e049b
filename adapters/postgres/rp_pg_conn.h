/*
 * rp_pg_conn.h - a libpq connection owned by the store thread.
 *
 * reaperd keeps all PostgreSQL work on one thread of its own (the store
 * thread, see cmd/reaperd/worker.h): a pass is a sequence of short
 * transactions, and the loop thread must never wait for one. So the calls
 * here are blocking, bounded by connect_timeout and TCP keepalives, and must
 * not be made on the loop thread.
 *
 * A multi-host DSN (host=a,b port=p,q target_session_attrs=read-write) is
 * libpq's: each connect tries the hosts in turn and keeps the first that
 * suits; rp_pg_conn_peer names the one it got.
 *
 * Errors are scrubbed: libpq's message is reduced to one line; a DSN never
 * holds a password (the configuration refuses one), so none can leak.
 *
 * Ownership: rp_pg_conn_new copies the DSN. rp_pg_conn_free closes and
 * frees. The PGconn from rp_pg_conn_handle is borrowed.
 */
#ifndef RP_PG_CONN_H
#define RP_PG_CONN_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_status.h"

typedef struct rp_pg_conn rp_pg_conn;

/* What every session is set to as soon as it connects, before any other
 * statement (SET, so that no options= in the DSN can undo it):
 * search_path "pg_catalog, schema" (nothing else, so no object in another
 * schema can stand in for one of ours or a built-in), synchronous_commit on
 * (the tap acks a dead letter once its park is committed: that commit must
 * be durable), and the three time-outs (milliseconds, 0 for none). The
 * connection itself gets tcp_user_timeout (ms; 0 leaves the system's) and
 * TCP keepalives, so a server that stops answering fails a call in bounded
 * time instead of the kernel's ~15 min of retransmissions. */
typedef struct rp_pg_session {
    const char *schema; /* copied; NULL or "": the search_path is left alone */
    int statement_timeout_ms;
    int lock_timeout_ms;
    int idle_in_transaction_timeout_ms;
    int tcp_user_timeout_ms;
} rp_pg_session;

rp_pg_conn *rp_pg_conn_new(const char *dsn, int connect_timeout_s);
void rp_pg_conn_free(rp_pg_conn *c);
/* Sets what the NEXT connect applies (copies *s). RP_OK or RP_ERR_NOMEM. */
rp_status rp_pg_conn_set_session(rp_pg_conn *c, const rp_pg_session *s) RP_MUSTCHECK;
/* A connection to cfg's store.dsn with the session store.* says (schema,
 * the three time-outs, tcp_user_timeout); connects at its first use. NULL
 * when out of memory. */
rp_pg_conn *rp_pg_conn_from_config(const rp_config *cfg, int connect_timeout_s);
/* Whether c is up; with check, connects it when down or pings it when up
 * first. Up: detail says "<peer> (server <version>)"; down after a check:
 * why. */
bool rp_pg_conn_probe(rp_pg_conn *c, bool check, char *detail, size_t cap);

/* libpq's own reading of a connection string (PQconninfoParse): NULL when
 * dsn parses and sets neither password nor sslpassword, in whatever
 * spelling (a percent-encoded URI query key included), else a message that
 * does not quote dsn. An rp_config_dsn_inspector (rp_config.h). */
const char *rp_pg_dsn_leak(const char *dsn);

/* Connects when not connected (or when the old connection went bad).
 * RP_OK when usable, else RP_ERR_UNAVAILABLE with a one-line reason in err. */
rp_status rp_pg_conn_ensure(rp_pg_conn *c, char *err, size_t errlen) RP_MUSTCHECK;
/* Checks the connection with a round trip that must answer within the
 * connect time-out (a server that stopped answering is dropped then, not
 * after TCP gives up); drops it when dead. */
rp_status rp_pg_conn_ping(rp_pg_conn *c, char *err, size_t errlen) RP_MUSTCHECK;
bool rp_pg_conn_is_up(const rp_pg_conn *c);
PGconn *rp_pg_conn_handle(rp_pg_conn *c);
/* From ANY thread (the loop, while the store thread waits on the server):
 * asks the server to cancel the command in progress, if any (PQcancel).
 * The waiting call then fails as cancelled (SQLSTATE 57014). True when the
 * request was sent. */
bool rp_pg_conn_cancel(rp_pg_conn *c);
/* Closes the connection now (a caller that gave up waiting on it, or saw
 * it broken mid-protocol); the next rp_pg_conn_ensure connects afresh. */
void rp_pg_conn_close(rp_pg_conn *c);
/* Counts successful connects: a value that changed since a caller last
 * looked means a NEW session, so whatever that caller kept of the old one
 * (prepared statements, an open transaction, row locks) is gone. */
unsigned long rp_pg_conn_generation(const rp_pg_conn *c);
/* The WARNINGs on this connection so far (every session of it) that say
 * a commit is not what it seems, read by the thread that uses the
 * connection: PostgreSQL answers a commit whose wait for a synchronous
 * standby was cancelled (PQcancel, pg_cancel_backend) or cut short by a
 * terminate as a success with a WARNING: committed locally, perhaps not
 * replicated. Those are raised by the server's SyncRepWaitForLSN, which
 * the notice names (its routine field, never translated); a WARNING that
 * names another routine (a trigger's RAISE WARNING, an extension's) is
 * not counted, and one that names none is (its origin is unknown). */
unsigned long rp_pg_conn_sync_warnings(const rp_pg_conn *c);
/* "host:port/dbname" for logs. Valid while connected, else "". */
const char *rp_pg_conn_peer(const rp_pg_conn *c);
/* Server version as an integer (150018), 0 when not connected. */
int rp_pg_conn_server_version(const rp_pg_conn *c);

/* Copies libpq's message for conn (or the result's) into err as one line:
 * its first line, and each further host's "connection to server at ...
 * failed: ..." line of a multi-host DSN, joined with "; ". */
void rp_pg_error_line(const char *msg, char *err, size_t errlen);

#endif
