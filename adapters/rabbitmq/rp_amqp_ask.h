/*
 * rp_amqp_ask.h - one control request sent as a given broker user and its
 * reply awaited, blocking: reaperctl's requests, and the browser console's
 * answers and reads (run on a worker thread of reaperd, never on the loop).
 * A connection of its own logged in as that user, direct reply-to
 * (amq.rabbitmq.reply-to), user_id set to that user (the broker checks it
 * against the login, so reaperd's control admission and the ledger see
 * the signed-in user), a reply taken only when it comes from reaperd
 * (app_id "reaperd", user_id the user reaperd logs in as, which the broker
 * checked on its publish: no other consumer of the control queue can forge
 * one), time-outs on the connect, the login and the wait.
 *
 * Ownership: the reply body is heap memory freed by rp_amqp_ask_cleanup;
 * the options are borrowed for the call; err never holds the password.
 * Threads: any but the loop.
 */
#ifndef RP_AMQP_ASK_H
#define RP_AMQP_ASK_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"
#include "rp_status.h"

typedef struct rp_amqp_ask_opts {
    const char *user;         /* the login (NULL: broker.url's user) */
    const char *password;
    const char *content_type; /* the request's (NULL: application/json) */
    /* The connection's name in the broker's listings, and the prefix of
     * the request's correlation id ("reaperctl", "reaperd console"). */
    const char *client;
    /* The user reaperd logs in as, whose replies alone are taken (NULL:
     * broker.url's user). */
    const char *reaperd_user;
    int timeout_ms;
} rp_amqp_ask_opts;

typedef struct rp_amqp_ask_reply {
    unsigned char *body;   /* NUL-terminated (not counted) */
    size_t len;
    char content_type[64]; /* the reply's, "" when it names none */
    /* Replies to this request that were not reaperd's and were ignored
     * (set whatever the call returns). */
    unsigned forged;
} rp_amqp_ask_reply;

/* Sends body to cfg's control queue as o->user with o->password, and waits
 * up to o->timeout_ms for reaperd's reply. RP_OK with the reply;
 * RP_ERR_FORBIDDEN when the broker refused the login; RP_ERR_UNAVAILABLE (no
 * connection), RP_ERR_TIMEOUT (no reply: reaperd gives none to a user it
 * does not admit), RP_ERR_IO or RP_ERR_NOMEM, with err set. */
rp_status rp_amqp_ask(const rp_config *cfg, const rp_amqp_ask_opts *o, const void *body,
                      size_t len, rp_amqp_ask_reply *out, char *err,
                      size_t errlen) RP_MUSTCHECK;
void rp_amqp_ask_cleanup(rp_amqp_ask_reply *r);

/* The browser console's ask (adapters/http/rp_http_console_jobs.h) over
 * rp_amqp_ask: self is the configuration reaperd started with (broker.*
 * needs a restart, so it is read off the loop); RP_OK with *reply, the
 * reply's body (heap, NUL-terminated; the caller frees it). */
rp_status rp_amqp_ask_console(void *self, const char *user, const char *password,
                              const void *body, size_t len, int timeout_ms, char **reply,
                              size_t *reply_len, char *err, size_t n);

#endif
