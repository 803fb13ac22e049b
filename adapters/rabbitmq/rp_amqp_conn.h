/*
 * rp_amqp_conn.h - one AMQP connection (rabbitmq-c 0.11) driven by a
 * libevent loop, which is lost and rebuilt without ever blocking the loop.
 *
 * rabbitmq-c does nothing in the background, heartbeats included, and its
 * login is a blocking exchange. So:
 *  - connecting (TCP with a time-out, TLS, login with capabilities, channel
 *    open) runs on a short-lived thread; the finished connection is handed
 *    to the loop thread, which alone touches it from then on;
 *  - on the loop, the socket is watched for reading and a timer fires at
 *    least every heartbeat/2; both drain every frame the library already
 *    holds or can read without waiting (amqp_simple_wait_frame_noblock with
 *    a zero time-out until AMQP_STATUS_TIMEOUT), which also sends and checks
 *    heartbeats;
 *  - on any failure the connection is destroyed and rebuilt after a backoff
 *    (0.5 s doubling to 10 s, with +-20% jitter). No automatic recovery
 *    exists in the library: the on_state(UP) hook redeclares everything.
 *
 * Login advertises consumer_cancel_notify (so a deleted queue cancels its
 * consumer instead of leaving it dead silently), publisher_confirms,
 * basic.nack, connection.blocked, authentication_failure_close and
 * exchange_exchange_bindings.
 *
 * Threads: every function here is for the loop thread only; the loop's
 * event_base must be made after evthread_use_pthreads().
 * Ownership: rp_amqp_conn_new copies the params (the password is wiped when
 * freed). The amqp_connection_state_t returned by rp_amqp_conn_handle is
 * borrowed: valid until the next state change; never destroy it.
 * rp_amqp_conn_free must not be called from one of the conn's own hooks.
 */
#ifndef RP_AMQP_CONN_H
#define RP_AMQP_CONN_H

#include <amqp.h>
#include <event2/event.h>
#include <stdbool.h>

#include "rp_common.h"
#include "rp_config.h"
#include "rp_status.h"

typedef struct rp_amqp_params {
    const char *url;      /* amqp[s]://user@host:port/vhost; no password */
    const char *password; /* may be NULL or "" */
    const char *vhost;    /* log in to this vhost instead of the URL's; NULL: the URL's */
    int heartbeat_seconds;
    int connect_timeout_ms;
    const char *connection_name; /* shown in the management UI */
    const char *ca_file, *cert_file, *key_file; /* TLS; "" or NULL: unset */
    bool verify_peer;
    /* The largest frame asked for at login; the broker's own frame_max
     * wins when smaller (rabbitmq-c takes the smaller of the two, and the
     * broker's default is 131072). 0: 131072. rabbitmq-c 0.11 cannot ask
     * for "no limit" (0 would size its output buffer to nothing). */
    int frame_max;
    /* Time-outs of the handshake and of every RPC of the set-up; 0: 10 s. */
    int rpc_timeout_ms;
    /* An attempt running longer is said in the log (with its step), each
     * such period again; 0: 30 s. */
    int slow_connect_ms;
} rp_amqp_params;

/* The connection's address and credentials from cfg's broker.url and
 * broker.tls.* (borrowed from cfg and password); every other field 0. */
void rp_amqp_params_from_config(const rp_config *cfg, const char *password,
                                rp_amqp_params *out);

typedef enum rp_amqp_state {
    RP_AMQP_DOWN = 0,   /* not connected; a retry is scheduled */
    RP_AMQP_CONNECTING, /* the connect thread is running */
    RP_AMQP_UP,         /* logged in, channel 1 open */
    RP_AMQP_STATE_COUNT_
} rp_amqp_state;

const char *rp_amqp_state_string(rp_amqp_state s);

typedef struct rp_amqp_hooks {
    /* The state changed. why is a short sentence without secrets (the
     * failure on the way down, the peer on the way up). At UP the handle is
     * usable: declare, consume. */
    void (*on_state)(void *arg, rp_amqp_state state, const char *why);
    /* A frame the connection does not handle itself (deliveries, confirms,
     * cancels, content frames). The frame's memory dies after the call. */
    void (*on_frame)(void *arg, const amqp_frame_t *frame);
    /* Runs on the connect thread, after login and channel open, before the
     * connection is handed to the loop: do the blocking declarations here so
     * the loop never waits for them. It may touch only what no other thread
     * changes meanwhile. Return false with a reason in err to fail this
     * attempt (it is retried after the backoff). May be NULL. */
    bool (*on_setup)(void *arg, amqp_connection_state_t conn, char *err, size_t errlen);
    /* The broker closed a channel (a channel error; close-ok is already
     * sent). why is "CODE TEXT" as the broker gave it. Return true when the
     * hook takes care of that channel (opens it again itself): the
     * connection then stays up. False (or no hook): the connection is
     * rebuilt, which restores every channel, declaration and consumer.
     * May be NULL. */
    bool (*on_channel_close)(void *arg, uint16_t channel, const char *why);
    void *arg;
} rp_amqp_hooks;

typedef struct rp_amqp_conn rp_amqp_conn;

/* Returns NULL (with *err set to a static reason) when the URL does not
 * parse or an allocation fails. Does not connect: call _start. */
rp_amqp_conn *rp_amqp_conn_new(struct event_base *base, const rp_amqp_params *params,
                               const rp_amqp_hooks *hooks, const char **err);
/* Begins connecting now (then keeps reconnecting until freed). */
rp_status rp_amqp_conn_start(rp_amqp_conn *c) RP_MUSTCHECK;
/* The live connection, or NULL when not UP. */
amqp_connection_state_t rp_amqp_conn_handle(rp_amqp_conn *c);
/* True when broker.url is amqps:// (the bytes go through the library's
 * TLS socket); false for plain TCP, whose socket a caller may write frames
 * on itself (rp_amqp_frames.h) between the library's own calls. */
bool rp_amqp_conn_tls(const rp_amqp_conn *c);
/* The loop the connection runs on. */
struct event_base *rp_amqp_conn_base(const rp_amqp_conn *c);
/* "host:port vhost V" for logs (no user, no password). */
const char *rp_amqp_conn_peer(const rp_amqp_conn *c);
/* Serves frames already buffered and what one read of the socket brings
 * (plain TCP: the loop's watch of the socket serves the rest; TLS: reads
 * until nothing is left); call after every RPC and publish. */
void rp_amqp_conn_drain(rp_amqp_conn *c);
/* A caller saw a failure on the handle (an RPC error): drop and rebuild. */
void rp_amqp_conn_fail(rp_amqp_conn *c, const char *why);
/* Closes (politely when up), joins the connect thread, frees. */
void rp_amqp_conn_free(rp_amqp_conn *c);

/* A short description of an RPC reply for logs: "ok", "library: ...",
 * "server: 404 NOT_FOUND - no queue ...". Writes into buf, returns it. */
const char *rp_amqp_reply_string(amqp_rpc_reply_t r, char *buf, size_t n);

#endif
