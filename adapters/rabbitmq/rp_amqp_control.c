/* The AMQP side of the control protocol and of replay (rp_amqp_control.h). */
#include "rp_amqp_control.h"
#include "rp_amqp_open.h"

#include <amqp.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_restore.h"

void rp_amqp_control_envelope(const rp_amqp_message *msg, rp_control_envelope *env) {
    memset(env, 0, sizeof *env);
    const amqp_basic_properties_t *p = &msg->props;
    rp_amqp_prop_string(p, AMQP_BASIC_REPLY_TO_FLAG, env->reply_to, sizeof env->reply_to);
    env->has_correlation_id = rp_amqp_prop_string(p, AMQP_BASIC_CORRELATION_ID_FLAG,
                                                   env->correlation_id,
                                                   sizeof env->correlation_id);
    /* The broker checks user_id against the connection's user, so it is
     * the sender's real name (a message without it is from nobody). */
    env->has_user = rp_amqp_prop_string(p, AMQP_BASIC_USER_ID_FLAG, env->user, sizeof env->user);
    if (p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
        env->content_type = (rp_bytes){p->content_type.bytes, p->content_type.len};
    if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG)
        /* An empty message_id is still one: never a NULL ptr. */
        env->message_id = (rp_bytes){p->message_id.bytes ? p->message_id.bytes
                                                          : (const uint8_t *)"",
                                     p->message_id.len};
    env->body = (rp_bytes){msg->body, msg->body_len};
    env->body_size = msg->body_size;
    env->truncated = msg->truncated;
    env->redelivered = msg->redelivered;
}

rp_status rp_amqp_control_reply(rp_amqp_publisher *p, const char *reply_to,
                                const char *content_type, const char *own_user,
                                const char *correlation_id, rp_bytes body,
                                rp_publish_done_fn done, void *arg) {
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                   AMQP_BASIC_APP_ID_FLAG;
    props.content_type = amqp_cstring_bytes(content_type);
    props.delivery_mode = 1;
    /* Who answers: the broker checks user_id against our login, so a
     * client can tell reaperd's replies from anyone else's. */
    props.app_id = amqp_cstring_bytes("reaperd");
    if (own_user != NULL) {
        props._flags |= AMQP_BASIC_USER_ID_FLAG;
        props.user_id = amqp_cstring_bytes(own_user);
    }
    if (correlation_id != NULL) {
        props._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
        props.correlation_id = amqp_cstring_bytes(correlation_id);
    }
    /* Mandatory only to a reply queue: RabbitMQ 3.10 returns a mandatory
     * publish to a direct reply-to name although it delivers it (the name
     * routes to no queue), so every reply would read as undelivered; and a
     * client that left takes its direct reply-to name with it, where the
     * reply is dropped either way. */
    bool direct = rp_control_reply_to_is_direct(reply_to);
    rp_publish pub = {
        .exchange = "",
        .routing_key = reply_to,
        .props = &props,
        .body = body,
        .mandatory = !direct,
        .retry = false,
        .done = done,
        .arg = arg,
    };
    return rp_amqp_publisher_publish(p, &pub);
}

bool rp_amqp_url_vhost_is(const char *url, const char *vhost) {
    char *copy = rp_amqp_url_first(url);
    if (copy == NULL) return false;
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    bool same = amqp_parse_url(copy, &info) == AMQP_STATUS_OK && info.vhost &&
                strcmp(info.vhost, vhost) == 0;
    free(copy);
    return same;
}

rp_replay_publish rp_amqp_replay_outcome(rp_publish_outcome o) {
    switch (o) {
    case RP_PUBLISH_CONFIRMED: return RP_REPLAY_PUBLISH_CONFIRMED;
    case RP_PUBLISH_RETURNED: return RP_REPLAY_PUBLISH_RETURNED;
    case RP_PUBLISH_REFUSED: return RP_REPLAY_PUBLISH_REFUSED;
    case RP_PUBLISH_NACKED: return RP_REPLAY_PUBLISH_NACKED;
    case RP_PUBLISH_DROPPED: return RP_REPLAY_PUBLISH_DROPPED;
    case RP_PUBLISH_LOST:
    default: return RP_REPLAY_PUBLISH_LOST;
    }
}

struct rp_amqp_replay_msg {
    amqp_pool_t pool; /* the restored properties */
    amqp_basic_properties_t props;
};

rp_amqp_replay_msg *rp_amqp_replay_msg_new(void) {
    rp_amqp_replay_msg *m = calloc(1, sizeof *m);
    if (m != NULL) init_amqp_pool(&m->pool, 4096);
    return m;
}

void rp_amqp_replay_msg_free(rp_amqp_replay_msg *m) {
    if (m == NULL) return;
    empty_amqp_pool(&m->pool);
    free(m);
}

rp_status rp_amqp_replay_msg_restore(rp_amqp_replay_msg *m, const char *props_json,
                                     const char *headers_json, char *err, size_t errlen) {
    return rp_amqp_restore_props(&m->pool, props_json, headers_json, &m->props, err, errlen);
}

void rp_amqp_replay_msg_peek(const rp_amqp_replay_msg *m, rp_bytes *user_id,
                             rp_bytes *expiration) {
    const amqp_basic_properties_t *p = &m->props;
    *user_id = (rp_bytes){NULL, 0};
    *expiration = (rp_bytes){NULL, 0};
    if (p->_flags & AMQP_BASIC_USER_ID_FLAG)
        *user_id = (rp_bytes){p->user_id.bytes ? p->user_id.bytes : (const uint8_t *)"",
                              p->user_id.len};
    if (p->_flags & AMQP_BASIC_EXPIRATION_FLAG)
        *expiration = (rp_bytes){p->expiration.bytes ? p->expiration.bytes
                                                     : (const uint8_t *)"",
                                 p->expiration.len};
}

void rp_amqp_replay_msg_strip(rp_amqp_replay_msg *m, rp_replay_strip s) {
    if (s.user_id) m->props._flags &= ~(amqp_flags_t)AMQP_BASIC_USER_ID_FLAG;
    if (s.expiration) m->props._flags &= ~(amqp_flags_t)AMQP_BASIC_EXPIRATION_FLAG;
}

rp_status rp_amqp_replay_msg_publish(rp_amqp_publisher *p, const rp_amqp_replay_msg *m,
                                     const char *queue, rp_bytes body, rp_publish_done_fn done,
                                     void *arg) {
    rp_publish pub = {
        .exchange = "",
        .routing_key = queue,
        .props = &m->props,
        .body = body,
        .mandatory = true,
        .retry = false,
        .done = done,
        .arg = arg,
    };
    return rp_amqp_publisher_publish(p, &pub);
}
