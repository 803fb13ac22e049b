/*
 * rp_amqp_replay_port.h - the replays part's publish port
 * (core/rp_replay_port.h) filled from the replay channel's publisher: the
 * message restored from its stored form (rp_amqp_control.h's replay
 * message, rp_amqp_restore.h's refusal), the vhost and user of broker.url
 * (rp_amqp_open.h), the publish with its outcome.
 *
 * Ownership: the port borrows *publisher, *up and url (the configuration
 * reaperd started with: broker.* needs a restart) for its life; they must
 * outlive it, and it the replays part. Threads: made and freed on the loop
 * thread; publish on the loop.
 */
#ifndef RP_AMQP_REPLAY_PORT_H
#define RP_AMQP_REPLAY_PORT_H

#include <stdbool.h>

#include "rp_amqp_conn.h"
#include "rp_amqp_publisher.h"
#include "rp_replay_port.h"

struct event_base;

typedef struct rp_amqp_replay_port rp_amqp_replay_port;

/* Fills *out. *publisher NULL or *up false: a publish is refused with
 * RP_ERR_UNAVAILABLE. NULL when out of memory. */
rp_amqp_replay_port *rp_amqp_replay_port_new(rp_amqp_publisher *const *publisher,
                                             const bool *up, const char *url,
                                             rp_replay_publish_port *out);
void rp_amqp_replay_port_free(rp_amqp_replay_port *p);

/* Another vhost reaperd publishes replays on (broker.vhosts): a gate found
 * on vhost is published through *publisher (a connection logged in to
 * that vhost), refused with RP_ERR_UNAVAILABLE while *up is false. vhost is
 * copied; publisher and up are borrowed as the port's own. RP_ERR_NOMEM. */
rp_status rp_amqp_replay_port_add_vhost(rp_amqp_replay_port *p, const char *vhost,
                                        rp_amqp_publisher *const *publisher,
                                        const bool *up) RP_MUSTCHECK;

/* A vhost of broker.vhosts with a publishing session of its own: a quiet
 * rp_amqp_session (it consumes nothing; body limit 64 KiB) on base,
 * logged in to vhost with params (copied, its vhost replaced) and
 * events_exchange (borrowed), added to p (rp_amqp_replay_port_add_vhost,
 * up while the session is) and started. *out is set as soon as it is
 * made, also on a failure, and freed with rp_amqp_replay_vhost_free (which
 * takes NULL) before p. RP_ERR_INTERNAL when it cannot be made or started
 * (*err: rp_amqp_session_new's reason, when it gave one). Loop thread. */
typedef struct rp_amqp_replay_vhost rp_amqp_replay_vhost;
rp_status rp_amqp_replay_vhost_start(rp_amqp_replay_port *p, struct event_base *base,
                                     const rp_amqp_params *params, const char *vhost,
                                     const char *events_exchange, rp_amqp_replay_vhost **out,
                                     const char **err) RP_MUSTCHECK;
/* Whether v's publishing session is up (false for NULL). Loop thread. */
bool rp_amqp_replay_vhost_up(const rp_amqp_replay_vhost *v);
void rp_amqp_replay_vhost_free(rp_amqp_replay_vhost *v);

#endif
