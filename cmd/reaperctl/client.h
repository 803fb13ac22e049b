/*
 * client.h - reaperctl's AMQP client: one blocking request and its reply
 * (rp_amqp_ask.h: direct reply-to, time-outs on the connect, the login and
 * the wait, only reaperd's reply taken), logged in as broker.url's user; a
 * reply that is not reaperd's is said on standard error. A command-line
 * tool may block; the daemon never uses this.
 *
 * Ownership: a reply's body is heap memory freed by rp_ctl_reply_cleanup.
 * err never holds the password.
 */
#ifndef RP_CTL_CLIENT_H
#define RP_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_amqp_ask.h"
#include "rp_config.h"
#include "rp_status.h"

typedef rp_amqp_ask_reply rp_ctl_reply;

/* Sends body (content type ct) to the control queue and waits up to
 * timeout_ms for the reply. RP_OK; RP_ERR_UNAVAILABLE (cannot connect),
 * RP_ERR_FORBIDDEN (the login refused), RP_ERR_TIMEOUT (no reply in time),
 * RP_ERR_IO or RP_ERR_NOMEM, with err set. */
rp_status rp_ctl_request(const rp_config *cfg, const char *password, const char *ct,
                         const void *body, size_t len, int timeout_ms, rp_ctl_reply *out,
                         char *err, size_t errlen) RP_MUSTCHECK;
void rp_ctl_reply_cleanup(rp_ctl_reply *r);

#endif
