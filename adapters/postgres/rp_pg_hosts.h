/*
 * rp_pg_hosts.h - a multi-host DSN's host list, started at another host.
 *
 * libpq tries the hosts of a DSN ("host=a,b port=5432,5433", or
 * "postgresql://a:5432,b:5433/db") in turn. Its blocking connect gives up
 * on a host after connect_timeout and moves on; its non-blocking connect
 * (PQconnectStartParams + PQconnectPoll), which the lease listener uses on
 * the loop, ignores connect_timeout and never moves on from a host that
 * accepts the connection and then says nothing (a hung server, a proxy
 * whose server is gone). The listener times such a host out itself and
 * starts its next connect at the host after it: these functions read the
 * lists (host, hostaddr, port) with libpq's own parser and give them back
 * rotated, as keywords that override the DSN's.
 *
 * No I/O. Ownership: an rp_pg_hosts owns its strings (rp_pg_hosts_cleanup
 * frees them); the rotated lists are heap strings the caller frees.
 */
#ifndef RP_PG_HOSTS_H
#define RP_PG_HOSTS_H

#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"

typedef struct rp_pg_hosts {
    char *host;     /* the DSN's lists as written (NULL: not given) */
    char *hostaddr;
    char *port;
    size_t n;       /* hosts: the longest list's entries, 1 at least */
} rp_pg_hosts;

/* The lists of dsn into *out (zeroed first). RP_ERR_INVALID when libpq
 * cannot parse the DSN; RP_ERR_NOMEM. */
rp_status rp_pg_hosts_parse(const char *dsn, rp_pg_hosts *out) RP_MUSTCHECK;

/* The index of the entry whose host (or hostaddr, where host is empty)
 * and port are host and port (libpq's PQhost and PQport of a connection
 * to this DSN); n when none is. */
size_t rp_pg_hosts_find(const rp_pg_hosts *h, const char *host, const char *port);

/* Each list with more than one entry rotated to start at entry first
 * (first < n); a list of one entry (one port for every host) or none is
 * NULL, as it needs no override. RP_ERR_NOMEM. */
rp_status rp_pg_hosts_rotated(const rp_pg_hosts *h, size_t first, char **host,
                              char **hostaddr, char **port) RP_MUSTCHECK;

void rp_pg_hosts_cleanup(rp_pg_hosts *h);

#endif
