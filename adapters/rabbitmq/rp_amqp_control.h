/*
 * rp_amqp_control.h - the AMQP side of the control protocol and of replay
 * (rp_amqp_control_port.c, rp_amqp_replay_port.c), so that the daemon's use
 * cases never touch rabbitmq-c: what a control request's properties say
 * (rp_control_envelope), a reply's properties, and a replayed message (its
 * restored properties, what is left out of them, its publish).
 *
 * Threads: rp_amqp_control_reply and rp_amqp_replay_msg_publish on the loop
 * (they queue on a publisher, rp_amqp_publisher.h); the rest on any thread.
 * Ownership: stated at each call.
 */
#ifndef RP_AMQP_CONTROL_H
#define RP_AMQP_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_amqp_msg.h"
#include "rp_amqp_publisher.h"
#include "rp_common.h"
#include "rp_control.h"
#include "rp_replay.h"
#include "rp_status.h"

/* Fills env from a control request (zeroes it first). Its strings are
 * copied (cut to the envelope's arrays); its rp_bytes borrow from msg. */
void rp_amqp_control_envelope(const rp_amqp_message *msg, rp_control_envelope *env);

/* Queues a control reply: body to reply_to on the default exchange,
 * mandatory, never retried, with content_type, delivery_mode 1, app_id
 * "reaperd", user_id own_user (NULL: none) and correlation_id (NULL:
 * none). Everything is copied. RP_ERR_NOMEM (done is then never called). */
rp_status rp_amqp_control_reply(rp_amqp_publisher *p, const char *reply_to,
                                const char *content_type, const char *own_user,
                                const char *correlation_id, rp_bytes body,
                                rp_publish_done_fn done, void *arg) RP_MUSTCHECK;

/* Whether the vhost of broker url is vhost ("/" when the URL names none).
 * False when the URL does not parse. */
bool rp_amqp_url_vhost_is(const char *url, const char *vhost);

/* The replay's view of a publish outcome. */
rp_replay_publish rp_amqp_replay_outcome(rp_publish_outcome o);

/* A stored message's properties, restored for a replay
 * (rp_amqp_restore_props). _new returns NULL when out of memory; _free
 * frees every property (NULL is fine). */
typedef struct rp_amqp_replay_msg rp_amqp_replay_msg;
rp_amqp_replay_msg *rp_amqp_replay_msg_new(void);
void rp_amqp_replay_msg_free(rp_amqp_replay_msg *m);

/* Restores the properties from the two stored JSON texts (as
 * rp_amqp_restore_props: RP_ERR_INVALID with the reason in err;
 * RP_ERR_NOMEM). */
rp_status rp_amqp_replay_msg_restore(rp_amqp_replay_msg *m, const char *props_json,
                                     const char *headers_json, char *err,
                                     size_t errlen) RP_MUSTCHECK;
/* The restored user_id and expiration (ptr NULL when absent; borrowed
 * from m). */
void rp_amqp_replay_msg_peek(const rp_amqp_replay_msg *m, rp_bytes *user_id,
                             rp_bytes *expiration);
/* Leaves out what rp_replay_strip_decide chose. */
void rp_amqp_replay_msg_strip(rp_amqp_replay_msg *m, rp_replay_strip s);

/* Queues the replay: body (copied) to queue on the default exchange with
 * m's properties, mandatory, never retried. RP_ERR_NOMEM (done is then
 * never called). */
rp_status rp_amqp_replay_msg_publish(rp_amqp_publisher *p, const rp_amqp_replay_msg *m,
                                     const char *queue, rp_bytes body, rp_publish_done_fn done,
                                     void *arg) RP_MUSTCHECK;

#endif
