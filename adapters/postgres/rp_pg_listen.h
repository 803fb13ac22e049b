/*
 * rp_pg_listen.h - hearing lease deadlines as they are set (issue #15).
 *
 * The job table's lease trigger (migration 0004) NOTIFYs channel
 * 'reaper_lease_<oid of the job table>' with each new lease deadline, in
 * Unix milliseconds. A listener keeps one PostgreSQL
 * session of its own that LISTENs there, driven entirely by the libevent
 * loop: the connect (PQconnectStartParams/PQconnectPoll), the two setup
 * queries (the table's oid, LISTEN) and the notifications (PQconsumeInput,
 * PQnotifies) are all non-blocking, so the loop never waits on the
 * database. A session lost or refused is opened again after 1 s, doubling
 * to 30 s; each time it is up again, on_up runs (notifications sent while
 * it was down are lost: the owner looks at the table once then). A
 * multi-host DSN works as for the blocking sessions (each host in turn).
 * libpq's non-blocking connect ignores connect_timeout, so the listener
 * keeps it: a host that neither answers nor refuses (a hung server, a
 * proxy whose server is gone: the TCP connection is up, so TCP never
 * gives up) is given up after the DSN's connect_timeout (default 10 s),
 * as libpq's blocking connect would, and the next connect starts at the
 * host after it (rp_pg_hosts.h); the two setup queries get one such wait
 * together. The DSN's keywords win over the listener's defaults
 * (connect_timeout, keepalives, application_name), and its
 * tcp_user_timeout is store.tcp_user_timeout_ms unless the DSN sets one.
 *
 * Ownership: the DSN and schema are copied; the PGconn and the events are
 * the listener's. Callbacks run on the loop thread, never from inside
 * rp_pg_listen_new or rp_pg_listen_free. Threads: the loop thread only.
 */
#ifndef RP_PG_LISTEN_H
#define RP_PG_LISTEN_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_sweep_port.h"

typedef struct rp_pg_listen rp_pg_listen;

typedef struct rp_pg_listen_hooks {
    /* A deadline was set: at_ms is the lease's expiry on the database's
     * clock (Unix milliseconds). */
    void (*on_deadline)(void *arg, int64_t at_ms);
    /* The session is LISTENing (at start and after every reconnect). */
    void (*on_up)(void *arg);
    void *arg;
} rp_pg_listen_hooks;

/* Starts connecting at once. tcp_user_timeout_ms: libpq's tcp_user_timeout
 * (0: the system's). NULL when out of memory. */
rp_pg_listen *rp_pg_listen_new(struct event_base *base, const char *dsn, const char *schema,
                               int tcp_user_timeout_ms, const rp_pg_listen_hooks *hooks);
void rp_pg_listen_free(rp_pg_listen *l);

/* The sweeper's lease-listen port (core/rp_sweep_port.h): listeners on
 * base to (*cfg)'s store.dsn and store.schema, read at each open. self =
 * src, borrowed (and what it points at) for the port's life. */
typedef struct rp_pg_listen_src {
    struct event_base *base;
    const rp_config *const *cfg;
} rp_pg_listen_src;
void rp_pg_listen_port(rp_pg_listen_src *src, rp_lease_listen_port *out);

/* Whether the session is LISTENing now. */
bool rp_pg_listen_is_up(const rp_pg_listen *l);
/* Notifications heard so far (each a deadline handed to on_deadline). */
uint64_t rp_pg_listen_heard(const rp_pg_listen *l);

#endif
