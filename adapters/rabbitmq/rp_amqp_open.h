/*
 * rp_amqp_open.h - the one blocking, bounded AMQP connect and login that
 * every connection of reaper goes through: the daemon's (on its connect
 * thread, rp_amqp_conn.h, which --once's feed uses too), the backfill's
 * peek (rp_amqp_peek.h) and reaperctl. TCP or TLS as
 * the URL's scheme says (amqp:// or amqps://); with TLS, broker.tls.*: the
 * CA file, an optional client certificate and key, and peer verification
 * (the certificate chain and the host name) unless verify_peer is false.
 * A TLS file that cannot be used is an error that names it, never a
 * silently unverified connection.
 *
 * Threads: any but the loop's (it blocks, bounded by the time-outs).
 * Ownership: the options are borrowed; the connection returned is the
 * caller's (amqp_destroy_connection). No channel is open.
 */
#ifndef RP_AMQP_OPEN_H
#define RP_AMQP_OPEN_H

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct rp_amqp_open_opts {
    const char *url;       /* amqp[s]://user@host:port/vhost, without the password */
    const char *password;  /* NULL: empty */
    const char *vhost;     /* NULL: the URL's */
    const char *ca_file, *cert_file, *key_file; /* NULL or "": not set */
    bool verify_peer;
    int connect_timeout_ms; /* TCP connect and TLS handshake; <= 0: 5000 */
    int rpc_timeout_ms;     /* the AMQP handshake and every RPC after; <= 0: 10000 */
    int heartbeat_s;        /* 0: none */
    int frame_max;          /* <= 0: 131072 */
    const char *connection_name; /* shown in the management UI; NULL: none */
    /* Advertise the capabilities the daemon handles: consumer cancel
     * notifications, publisher confirms, basic.nack, connection.blocked,
     * authentication_failure_close, exchange-to-exchange bindings. */
    bool capabilities;
    /* With a host list in url (rp_hostlist.h): NULL, or where the hosts
     * are tried from (an index into the list, taken modulo its length)
     * and, on success, the index of the host that answered. */
    size_t *host_used;

    /* Log in as this user instead of the URL's (the browser console's
     * signed-in user); NULL: the URL's. */
    const char *user;
    /* When not NULL: set true when the connect worked and the login was
     * refused (a wrong user or password), false otherwise. */
    bool *login_refused;
} rp_amqp_open_opts;

/* A logged-in connection, or NULL with a sentence in err (no secret in it):
 * the URL does not parse, a TLS file cannot be used, the connect failed
 * (refused, timed out, certificate not verified), or the login was refused.
 * A URL with a host list (amqp://user@h1:p1,h2:p2/vhost) tries its hosts in
 * turn, each with the connect time-out, until one logs in; err then names
 * every host's failure. The caller backs off before trying the list again. */
amqp_connection_state_t rp_amqp_open(const rp_amqp_open_opts *o, char *err, size_t errlen);

/* The user name in url (for the user_id property), into buf; false when
 * the URL does not parse. */
bool rp_amqp_url_user(const char *url, char *buf, size_t n);

/* url with only the first host of its host list, for amqp_parse_url (user
 * and vhost are the same for every host); the caller frees it. NULL: out
 * of memory. */
char *rp_amqp_url_first(const char *url);

/* The initial quorum group size of reaper's own queues (the tap, the
 * control queue) for broker.url: 0 for one host (no argument sent, and the
 * control queue stays a classic queue), else min(hosts listed,
 * RP_AMQP_QUORUM_GROUP_MAX): three replicas, a majority of which must
 * stand, on a cluster of three or more. */
#define RP_AMQP_QUORUM_GROUP_MAX 3
int rp_amqp_quorum_group_size(const char *url);

#endif
