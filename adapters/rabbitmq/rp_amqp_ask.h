/*
 * rp_amqp_ask.h - one control request sent as a given broker user and its
 * reply awaited, blocking (the browser console's answers and reads, run on
 * a worker thread of reaperd, never on the loop): a connection of its own
 * logged in as that user, direct reply-to, user_id set to that user (the
 * broker checks it against the login, so reaperd's control admission and
 * the ledger see the signed-in user), a reply taken only when it comes from
 * reaperd (app_id "reaperd", user_id reaperd's own user), time-outs on the
 * connect, the login and the wait.
 *
 * Ownership: the reply body is heap memory freed by rp_amqp_ask_cleanup;
 * err never holds the password. Threads: any but the loop.
 */
#ifndef RP_AMQP_ASK_H
#define RP_AMQP_ASK_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"
#include "rp_status.h"

typedef struct rp_amqp_ask_reply {
    unsigned char *body; /* NUL-terminated (not counted) */
    size_t len;
} rp_amqp_ask_reply;

/* Sends body (JSON) to cfg's control queue as user (NULL: broker.url's
 * user) with password, waits up to timeout_ms. RP_OK with the reply;
 * RP_ERR_FORBIDDEN when the broker refused the login; RP_ERR_UNAVAILABLE (no
 * connection), RP_ERR_TIMEOUT (no reply: reaperd refuses a user it does
 * not admit without a reply), RP_ERR_IO or RP_ERR_NOMEM, with err set. */
rp_status rp_amqp_ask(const rp_config *cfg, const char *user, const char *password,
                      const void *body, size_t len, int timeout_ms, rp_amqp_ask_reply *out,
                      char *err, size_t errlen) RP_MUSTCHECK;
void rp_amqp_ask_cleanup(rp_amqp_ask_reply *r);

/* The browser console's ask (adapters/http/rp_http_console_jobs.h) over
 * rp_amqp_ask: self is the configuration reaperd started with (broker.*
 * needs a restart, so it is read off the loop); RP_OK with *reply, the
 * reply's body (heap, NUL-terminated; the caller frees it). */
rp_status rp_amqp_ask_console(void *self, const char *user, const char *password,
                              const void *body, size_t len, int timeout_ms, char **reply,
                              size_t *reply_len, char *err, size_t n);

#endif
