/*
 * rp_amqp_session.h - the daemon's AMQP session: one rp_amqp_conn on the
 * loop, what reaper declares on it (CONTRACT section 8), its consumers, the
 * frame drain, and acks checked against the connection's generation.
 *
 * What it owns:
 *  - the connection (login, reconnect with backoff: rp_amqp_conn.h);
 *  - the declarations, made on the connect thread at every (re)connect so
 *    the loop never waits for an RPC: the events exchange (topic, durable),
 *    the control queue with its prefetch and its consumer
 *    (RP_AMQP_SESSION_CONTROL_TAG), a server-named exclusive queue bound to
 *    amq.rabbitmq.event with its no-ack consumer (RP_AMQP_SESSION_EVENTS_TAG),
 *    the publish channel in confirm mode and the replay channel
 *    (params.replay_channel, confirm mode);
 *  - the frame drain: confirms go to the two publishers, deliveries are
 *    assembled and handed to the handler registered for their consumer tag
 *    (rp_amqp_session_on), a basic.cancel rebuilds the connection;
 *  - the two publishers (rp_amqp_publisher.h): the feed's and replies'
 *    (channel 1) and the replays' (params.replay_channel). A channel error
 *    on the replay channel opens that channel again in place; any other
 *    rebuilds the connection.
 * It knows nothing of what the handlers do with a delivery: the daemon
 * registers them (control, events, ...).
 *
 * Generations. Every connection that comes up gets the next generation
 * (starting at 1). A delivery tag is only valid on the connection that
 * delivered it: rp_amqp_session_ack drops a tag of an older generation
 * (the broker redelivers that message anyway).
 *
 * Logs (as reaperd always said them): "broker connected" (broker, the
 * control queue), "broker unreachable; retrying", "broker connecting"
 * (debug), a delivery for an unknown consumer (rejected with requeue).
 *
 * Threads: everything on the loop thread, except the setup, which runs on
 * the connect thread and reads only what _new copied.
 * Ownership: _new copies the params and the names; hooks.arg and every
 * handler's arg are borrowed and must outlive the session. The publishers
 * lent by rp_amqp_session_publisher / _replay_publisher live until
 * rp_amqp_session_free. Never free the session from one of its hooks.
 */
#ifndef RP_AMQP_SESSION_H
#define RP_AMQP_SESSION_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_amqp_conn.h"
#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_common.h"
#include "rp_status.h"

#define RP_AMQP_SESSION_CONTROL_TAG "reaper.control"
#define RP_AMQP_SESSION_EVENTS_TAG "reaper.events"
/* At most this many consumer tags get a handler. */
#define RP_AMQP_SESSION_MAX_HANDLERS 4

typedef struct rp_amqp_session_params {
    const rp_amqp_params *amqp;  /* the connection (copied) */
    const char *events_exchange; /* broker.events_exchange */
    /* broker.control_queue. NULL: a publishing session (reaperd --once's
     * feed), which declares the events exchange and its publish channel
     * and consumes nothing. */
    const char *control_queue;
    uint16_t control_prefetch;   /* unacked control requests at most */
    uint16_t replay_channel;     /* the replays' confirm channel (not 1); 0: none */
    size_t body_limit;           /* the largest delivery body kept whole */
    /* The connection's ups and downs are logged at debug level only
     * (reaperd --once says what became of its feed once, at the end). */
    bool quiet;
} rp_amqp_session_params;

typedef struct rp_amqp_session_hooks {
    /* Loop: may the session hand out a delivery now? False (stopping): it
     * is left unacked, and goes to the next consumer when this connection
     * closes. NULL: always. */
    bool (*accepting)(void *arg);
    /* Loop: a connection came up with this generation; called before
     * "broker connected" is logged and before the publishers resume. */
    void (*on_up)(void *arg, unsigned generation);
    /* Loop: after "broker connected" and the publishers resumed. */
    void (*on_ready)(void *arg);
    /* Loop: the connection is down (was_up: it had come up; why: a short
     * reason without secrets), before "broker unreachable" is logged. */
    void (*on_down)(void *arg, bool was_up, const char *why);
    void *arg;
} rp_amqp_session_hooks;

/* A delivery for the consumer tag it was registered for. The message's
 * memory is the session's and dies after the call. */
typedef void (*rp_amqp_session_handler)(void *arg, const rp_amqp_message *msg);

typedef struct rp_amqp_session rp_amqp_session;

/* Makes the session (connects nothing yet: rp_amqp_session_start). NULL
 * with *err set to a static reason when the URL does not parse (the same
 * reason rp_amqp_conn_new gives) or memory runs out. */
rp_amqp_session *rp_amqp_session_new(struct event_base *base, const rp_amqp_session_params *p,
                                     const rp_amqp_session_hooks *hooks, const char **err);
/* ---- reaperd's own session (moved from cmd/reaperd/daemon.c) ---------------- */

#define RP_HEARTBEAT_SECONDS 10
/* The largest delivery body kept on the session's connection: a control
 * request is at most 64 KiB (proto/SCHEMA.md; a longer one is kept only to
 * say it is too large, truncated at the limit), broker events are small.
 * The tap has a connection of its own (app/rp_tap.h), which keeps a dead letter
 * whole up to what the store keeps. */
#define RP_DELIVERY_BODY_LIMIT 65536
#define RP_CONTROL_PREFETCH 16
/* Replays publish on a confirm-mode channel of their own: a stored message
 * the broker refuses with a channel error (406) closes only this channel,
 * never the control, events or tap channel (app/rp_replays.h). */
#define RP_REPLAY_CHANNEL 4

/* The AMQP parameters of reaperd's session and tap, from the configuration
 * reaperd started with (broker.* needs a restart): rp_amqp_params_from_config
 * (borrowed from cfg and password), a heartbeat of RP_HEARTBEAT_SECONDS, a
 * 5 s connect time-out and the connection name "reaperd". */
void rp_amqp_params_daemon(const rp_config *cfg, const char *password, rp_amqp_params *ap);

/* reaperd's session over ap (copied): cfg's broker.events_exchange and
 * broker.control_queue (copied), RP_CONTROL_PREFETCH, RP_REPLAY_CHANNEL and
 * RP_DELIVERY_BODY_LIMIT. As rp_amqp_session_new otherwise. */
rp_amqp_session *rp_amqp_session_daemon_new(struct event_base *base, const rp_config *cfg,
                                            const rp_amqp_params *ap,
                                            const rp_amqp_session_hooks *hooks, const char **err);

/* Registers handler for deliveries whose consumer tag is tag (copied).
 * RP_ERR_INVALID when the tag is empty, already registered, or the table
 * is full. Before _start. */
rp_status rp_amqp_session_on(rp_amqp_session *s, const char *tag, rp_amqp_session_handler fn,
                             void *arg) RP_MUSTCHECK;
/* Begins connecting (then keeps reconnecting until stopped). */
rp_status rp_amqp_session_start(rp_amqp_session *s) RP_MUSTCHECK;
/* The publishers (borrowed; NULL when s is NULL, and the replay one when
 * the session has no replay channel). */
rp_amqp_publisher *rp_amqp_session_publisher(const rp_amqp_session *s);
rp_amqp_publisher *rp_amqp_session_replay_publisher(const rp_amqp_session *s);
/* "host:port vhost V" for logs. */
const char *rp_amqp_session_peer(const rp_amqp_session *s);
bool rp_amqp_session_up(const rp_amqp_session *s);
unsigned rp_amqp_session_generation(const rp_amqp_session *s);

typedef enum rp_amqp_ack_result {
    RP_AMQP_ACK_SENT = 0,     /* the ack went out */
    RP_AMQP_ACK_STALE,        /* the tag is of an older connection: dropped */
    RP_AMQP_ACK_NO_CONNECTION, /* current generation, but not connected */
    RP_AMQP_ACK_FAILED,       /* the library refused it: the connection is rebuilt */
    RP_AMQP_ACK_COUNT_
} rp_amqp_ack_result;
const char *rp_amqp_ack_result_string(rp_amqp_ack_result r);

/* Acks tag of a delivery of connection generation on channel 1. */
rp_amqp_ack_result rp_amqp_session_ack(rp_amqp_session *s, unsigned generation, uint64_t tag);

/* Hands msg to the handler of its consumer tag, as the frame drain does
 * (public so the dispatch can be tested without a broker). Returns true
 * when a handler took it; false when the session is not accepting, or no
 * handler has the tag (then the delivery is rejected with requeue when
 * connected, and a warning logged). */
bool rp_amqp_session_dispatch(rp_amqp_session *s, const rp_amqp_message *msg);

/* Frees the publishers (their pending callbacks run now, as lost), closes
 * the connection and frees. NULL is a no-op. */
void rp_amqp_session_free(rp_amqp_session *s);

#endif
