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
    /* Log in as this user instead of the URL's (the browser console's
     * signed-in user); NULL: the URL's. */
    const char *user;
    /* When not NULL: set true when the connect worked and the login was
     * refused (a wrong user or password), false otherwise. */
    bool *login_refused;
} rp_amqp_open_opts;

/* A logged-in connection, or NULL with a sentence in err (no secret in it):
 * the URL does not parse, a TLS file cannot be used, the connect failed
 * (refused, timed out, certificate not verified), or the login was refused. */
amqp_connection_state_t rp_amqp_open(const rp_amqp_open_opts *o, char *err, size_t errlen);

/* The user name in url (for the user_id property), into buf; false when
 * the URL does not parse. */
bool rp_amqp_url_user(const char *url, char *buf, size_t n);

#endif
