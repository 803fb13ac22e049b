#include "client.h"

#include <amqp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rp_amqp_open.h"
#include "rp_clock.h"

static bool rp_rpc_ok(amqp_rpc_reply_t r, const char *what, char *err, size_t n) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
        snprintf(err, n, "%s: %s", what, amqp_error_string2(r.library_error));
    else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
             r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const amqp_connection_close_t *m = r.reply.decoded;
        snprintf(err, n, "%s: the broker said %u %.*s", what, m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
               r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const amqp_channel_close_t *m = r.reply.decoded;
        snprintf(err, n, "%s: the broker said %u %.*s", what, m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else {
        snprintf(err, n, "%s: failed", what);
    }
    return false;
}

rp_status rp_ctl_request(const rp_config *cfg, const char *password, const char *ct,
                         const void *body, size_t len, int timeout_ms, rp_ctl_reply *out,
                         char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char user[256];
    if (!rp_amqp_url_user(cfg->broker.url, user, sizeof user)) {
        snprintf(err, errlen, "broker.url does not parse");
        return RP_ERR_UNAVAILABLE;
    }
    const rp_config_tls *t = &cfg->broker.tls;
    rp_amqp_open_opts o = {
        .url = cfg->broker.url,
        .password = password,
        .ca_file = t->ca_file,
        .cert_file = t->cert_file,
        .key_file = t->key_file,
        .verify_peer = t->verify_peer,
        .connect_timeout_ms = 5000,
        .rpc_timeout_ms = 10000,
        .connection_name = "reaperctl",
    };
    amqp_connection_state_t c = rp_amqp_open(&o, err, errlen);
    if (c == NULL) return RP_ERR_UNAVAILABLE;
    rp_status st = RP_ERR_UNAVAILABLE;
    amqp_channel_open(c, 1);
    if (!rp_rpc_ok(amqp_get_rpc_reply(c), "channel open", err, errlen)) goto out_close;
    /* Direct reply-to: consume the pseudo-queue (no-ack) before publishing. */
    amqp_basic_consume(c, 1, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes, 0, 1,
                       0, amqp_empty_table);
    if (!rp_rpc_ok(amqp_get_rpc_reply(c), "consuming direct reply-to", err, errlen))
        goto out_close;

    char corr[64];
    snprintf(corr, sizeof corr, "reaperctl-%d-%ld", (int)getpid(), (long)rp_clock_mono_ms());
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_USER_ID_FLAG |
               AMQP_BASIC_DELIVERY_MODE_FLAG;
    p.content_type = amqp_cstring_bytes(ct);
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.correlation_id = amqp_cstring_bytes(corr);
    /* The broker checks user_id against our login, so reaperd can trust it
     * for control.allowed_users. */
    p.user_id = amqp_cstring_bytes(user);
    p.delivery_mode = 1;
    int rc = amqp_basic_publish(c, 1, amqp_cstring_bytes(""),
                            amqp_cstring_bytes(cfg->broker.control_queue), 0, 0, &p,
                            (amqp_bytes_t){len, (void *)body});
    if (rc != AMQP_STATUS_OK) {
        snprintf(err, errlen, "publishing the request: %s", amqp_error_string2(rc));
        goto out_close;
    }
    /* reaperd's broker user: the user of broker.url (reaperctl runs with
     * reaperd's configuration), or REAPERCTL_REAPERD_USER when it logs in
     * as someone else. */
    const char *reaperd_user = getenv("REAPERCTL_REAPERD_USER");
    if (reaperd_user == NULL || *reaperd_user == '\0') reaperd_user = user;
    bool warned = false;
    long until = (long)rp_clock_mono_ms() + timeout_ms;
    for (;;) {
        long left = until - (long)rp_clock_mono_ms();
        if (left <= 0) {
            snprintf(err, errlen,
                     "no reply from reaperd within %d s (is reaperd running and consuming %s?)",
                     timeout_ms / 1000, cfg->broker.control_queue);
            st = RP_ERR_TIMEOUT;
            goto out_close;
        }
        struct timeval tv = {left / 1000, (left % 1000) * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            r.library_error == AMQP_STATUS_TIMEOUT)
            continue;
        if (!rp_rpc_ok(r, "waiting for the reply", err, errlen)) {
            st = RP_ERR_IO;
            goto out_close;
        }
        amqp_basic_properties_t *rp = &env.message.properties;
        bool mine = (rp->_flags & AMQP_BASIC_CORRELATION_ID_FLAG) &&
                    rp->correlation_id.len == strlen(corr) &&
                    memcmp(rp->correlation_id.bytes, corr, strlen(corr)) == 0;
        /* Only reaperd answers: app_id "reaperd" and user_id = the user
         * reaperd logs in as, which the broker checked on publish, so no
         * other consumer of the control queue can forge a reply. */
        bool from_reaperd =
            (rp->_flags & AMQP_BASIC_APP_ID_FLAG) && rp->app_id.len == 7 &&
            memcmp(rp->app_id.bytes, "reaperd", 7) == 0 &&
            (rp->_flags & AMQP_BASIC_USER_ID_FLAG) && rp->user_id.len == strlen(reaperd_user) &&
            memcmp(rp->user_id.bytes, reaperd_user, rp->user_id.len) == 0;
        if (mine && !from_reaperd && !warned) {
            fprintf(stderr,
                    "reaperctl: ignored a reply that is not from reaperd (app_id and user_id "
                    "must be \"reaperd\" and \"%s\")\n",
                    reaperd_user);
            warned = true;
        }
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
            st = RP_ERR_NOMEM;
            goto out_close;
        }
        memcpy(out->body, env.message.body.bytes, out->len);
        out->body[out->len] = '\0';
        amqp_destroy_envelope(&env);
        st = RP_OK;
        break;
    }
out_close:
    (void)amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
    return st;
}

void rp_ctl_reply_cleanup(rp_ctl_reply *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
}
