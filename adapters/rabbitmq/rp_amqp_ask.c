/* One control request as a given user, blocking (rp_amqp_ask.h). */
#include "rp_amqp_ask.h"

#include <amqp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "rp_amqp_conn.h"
#include "rp_amqp_open.h"
#include "rp_clock.h"

static bool rp_ask_ok(amqp_rpc_reply_t r, const char *what, char *err, size_t n) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

static bool rp_bytes_is(amqp_bytes_t b, const char *s) {
    size_t n = strlen(s);
    return b.len == n && (n == 0 || memcmp(b.bytes, s, n) == 0);
}

/* Publishes the request on channel 1 (direct reply-to consumed first). */
static rp_status rp_ask_send(amqp_connection_state_t c, const rp_config *cfg, const char *as,
                             const rp_amqp_ask_opts *o, const char *corr, const void *body,
                             size_t len, char *err, size_t errlen) {
    amqp_channel_open(c, 1);
    if (!rp_ask_ok(amqp_get_rpc_reply(c), "channel open", err, errlen)) return RP_ERR_IO;
    /* Direct reply-to: consume the pseudo-queue (no-ack) before publishing. */
    amqp_basic_consume(c, 1, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes, 0, 1,
                       0, amqp_empty_table);
    if (!rp_ask_ok(amqp_get_rpc_reply(c), "consuming direct reply-to", err, errlen))
        return RP_ERR_IO;
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_USER_ID_FLAG |
               AMQP_BASIC_DELIVERY_MODE_FLAG;
    p.content_type = amqp_cstring_bytes(o->content_type ? o->content_type : "application/json");
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.correlation_id = amqp_cstring_bytes(corr);
    /* The broker checks user_id against the login: reaperd's admission
     * (control.allowed_users) and the ledger see the signed-in user. */
    p.user_id = amqp_cstring_bytes(as);
    p.delivery_mode = 1;
    int rc = amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
                                amqp_cstring_bytes(cfg->broker.control_queue), 0, 0, &p,
                                (amqp_bytes_t){len, (void *)body});
    if (rc != AMQP_STATUS_OK) {
        snprintf(err, errlen, "publishing the request: %s", amqp_error_string2(rc));
        return RP_ERR_IO;
    }
    return RP_OK;
}

/* Takes reaperd's reply to corr into out; other messages are dropped (and
 * counted when they answer corr). */
static rp_status rp_ask_wait(amqp_connection_state_t c, const rp_config *cfg,
                             const rp_amqp_ask_opts *o, const char *corr, const char *reaperd,
                             rp_amqp_ask_reply *out, char *err, size_t errlen) {
    long until = (long)rp_clock_mono_ms() + o->timeout_ms;
    for (;;) {
        long left = until - (long)rp_clock_mono_ms();
        if (left <= 0) {
            snprintf(err, errlen,
                     "no reply from reaperd within %d s (is reaperd running and consuming %s? "
                     "it does not answer a user that control.allowed_users does not admit)",
                     o->timeout_ms / 1000, cfg->broker.control_queue);
            return RP_ERR_TIMEOUT;
        }
        struct timeval tv = {left / 1000, (left % 1000) * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            continue;
        if (!rp_ask_ok(r, "waiting for the reply", err, errlen)) return RP_ERR_IO;
        const amqp_basic_properties_t *rp = &env.message.properties;
        bool mine = (rp->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) &&
                    rp_bytes_is(rp->correlation_id, corr);
        bool from_reaperd = (rp->_flags & AMQP_BASIC_APP_ID_FLAG) &&
                            rp_bytes_is(rp->app_id, "reaperd") &&
                            (rp->_flags & AMQP_BASIC_USER_ID_FLAG) &&
                            rp_bytes_is(rp->user_id, reaperd);
        if (mine && !from_reaperd) out->forged++;
        if (!mine || !from_reaperd) {
            amqp_destroy_envelope(&env);
            continue;
        }
        if (rp->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
            snprintf(out->content_type, sizeof out->content_type, "%.*s",
                     (int)rp->content_type.len, (const char *)rp->content_type.bytes);
        out->len = env.message.body.len;
        out->body = malloc(out->len + 1);
        if (out->body == NULL) {
            amqp_destroy_envelope(&env);
            out->len = 0;
            snprintf(err, errlen, "out of memory");
            return RP_ERR_NOMEM;
        }
        if (out->len) memcpy(out->body, env.message.body.bytes, out->len);
        out->body[out->len] = '\0';
        amqp_destroy_envelope(&env);
        return RP_OK;
    }
}

rp_status rp_amqp_ask(const rp_config *cfg, const rp_amqp_ask_opts *o, const void *body,
                      size_t len, rp_amqp_ask_reply *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char own[256];
    if (!rp_amqp_url_user(cfg->broker.url, own, sizeof own)) {
        snprintf(err, errlen, "broker.url does not parse");
        return RP_ERR_UNAVAILABLE;
    }
    const char *as = o->user ? o->user : own;
    const char *reaperd = o->reaperd_user ? o->reaperd_user : own;
    const rp_config_tls *t = &cfg->broker.tls;
    bool refused = false;
    rp_amqp_open_opts oo = {
        .url = cfg->broker.url,
        .password = o->password,
        .ca_file = t->ca_file,
        .cert_file = t->cert_file,
        .key_file = t->key_file,
        .verify_peer = t->verify_peer,
        .connect_timeout_ms = 5000,
        .rpc_timeout_ms = 10000,
        .connection_name = o->client,
        .user = as,
        .login_refused = &refused,
    };
    amqp_connection_state_t c = rp_amqp_open(&oo, err, errlen);
    if (c == NULL) return refused ? RP_ERR_FORBIDDEN : RP_ERR_UNAVAILABLE;
    char corr[96];
    snprintf(corr, sizeof corr, "%s-%d-%ld", o->client, (int)getpid(), (long)rp_clock_mono_ms());
    rp_status st = rp_ask_send(c, cfg, as, o, corr, body, len, err, errlen);
    if (st == RP_OK) st = rp_ask_wait(c, cfg, o, corr, reaperd, out, err, errlen);
    (void)amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return st;
}

void rp_amqp_ask_cleanup(rp_amqp_ask_reply *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
}

rp_status rp_amqp_ask_console(void *self, const char *user, const char *password,
                              const void *body, size_t len, int timeout_ms, char **reply,
                              size_t *reply_len, char *err, size_t n) {
    rp_amqp_ask_opts o = {
        .user = user,
        .password = password,
        .client = "reaperd console",
        .timeout_ms = timeout_ms,
    };
    rp_amqp_ask_reply rep;
    rp_status st = rp_amqp_ask(self, &o, body, len, &rep, err, n);
    if (st == RP_OK) {
        *reply = (char *)rep.body;
        *reply_len = rep.len;
    }
    return st;
}
