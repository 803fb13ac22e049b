/* The one AMQP connect and login (rp_amqp_open.h). */
#include "rp_amqp_open.h"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_conn.h"
#include "rp_common.h"
#include "rp_hostlist.h"

static bool rp_set(const char *s) { return s != NULL && s[0] != '\0'; }

static amqp_socket_t *rp_tls_socket(amqp_connection_state_t c, const rp_amqp_open_opts *o,
                                    char *err, size_t n) {
    amqp_socket_t *s = amqp_ssl_socket_new(c);
    if (s == NULL) {
        snprintf(err, n, "cannot create a TLS socket");
        return NULL;
    }
    int st = AMQP_STATUS_OK;
    if (rp_set(o->ca_file) && (st = amqp_ssl_socket_set_cacert(s, o->ca_file)) != AMQP_STATUS_OK) {
        snprintf(err, n, "TLS: broker.tls.ca_file %s cannot be used: %s", o->ca_file,
                 amqp_error_string2(st));
        return NULL;
    }
    if (rp_set(o->cert_file) != rp_set(o->key_file)) {
        snprintf(err, n, "TLS: broker.tls.cert_file and broker.tls.key_file go together");
        return NULL;
    }
    if (rp_set(o->cert_file) &&
        (st = amqp_ssl_socket_set_key(s, o->cert_file, o->key_file)) != AMQP_STATUS_OK) {
        snprintf(err, n, "TLS: the client certificate %s or key %s cannot be used: %s",
                 o->cert_file, o->key_file, amqp_error_string2(st));
        return NULL;
    }
    amqp_ssl_socket_set_verify_peer(s, o->verify_peer);
    amqp_ssl_socket_set_verify_hostname(s, o->verify_peer);
    return s;
}

/* One host: url names exactly one. *fatal: a failure no other host of the
 * list can cure (the URL, a TLS file, memory). */
static amqp_connection_state_t rp_amqp_open_one(const rp_amqp_open_opts *o, const char *one,
                                                char *err, size_t n, bool *fatal) {
    *fatal = true;
    if (o->login_refused) *o->login_refused = false;
    char *url = strdup(one);
    if (url == NULL) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) {
        snprintf(err, n, "broker.url does not parse (expected amqp[s]://user@host:port/vhost)");
        free(url);
        return NULL;
    }
    amqp_connection_state_t c = amqp_new_connection();
    if (c == NULL) {
        snprintf(err, n, "out of memory");
        free(url);
        return NULL;
    }
    amqp_socket_t *s = info.ssl ? rp_tls_socket(c, o, err, n) : amqp_tcp_socket_new(c);
    if (s == NULL) {
        if (!info.ssl) snprintf(err, n, "cannot create a TCP socket");
        goto fail;
    }
    *fatal = false;
    int cms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000;
    struct timeval ctv = {cms / 1000, (cms % 1000) * 1000};
    int st = amqp_socket_open_noblock(s, info.host, info.port, &ctv);
    if (st != AMQP_STATUS_OK) {
        snprintf(err, n, "cannot connect to the broker at %s:%d: %s", info.host, info.port,
                 amqp_error_string2(st));
        goto fail;
    }
    int rms = o->rpc_timeout_ms > 0 ? o->rpc_timeout_ms : 10000;
    struct timeval rtv = {rms / 1000, (rms % 1000) * 1000};
    (void)amqp_set_handshake_timeout(c, &rtv);
    (void)amqp_set_rpc_timeout(c, &rtv);
    amqp_table_entry_t caps[] = {
        {amqp_cstring_bytes("consumer_cancel_notify"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("publisher_confirms"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("basic.nack"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("connection.blocked"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("authentication_failure_close"),
         {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("exchange_exchange_bindings"),
         {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
    };
    amqp_table_entry_t props[3];
    int np = 0;
    props[np++] = (amqp_table_entry_t){amqp_cstring_bytes("product"),
                                       {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("reaper")}}};
    if (o->connection_name)
        props[np++] = (amqp_table_entry_t){
            amqp_cstring_bytes("connection_name"),
            {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(o->connection_name)}}};
    if (o->capabilities)
        props[np++] = (amqp_table_entry_t){
            amqp_cstring_bytes("capabilities"),
            {AMQP_FIELD_KIND_TABLE, {.table = {(int)RP_ARRAY_LEN(caps), caps}}}};
    amqp_table_t props_table = {np, props};
    amqp_rpc_reply_t r = amqp_login_with_properties(
        c, o->vhost ? o->vhost : info.vhost, 0, o->frame_max > 0 ? o->frame_max : 131072,
        o->heartbeat_s > 0 ? o->heartbeat_s : 0, &props_table, AMQP_SASL_METHOD_PLAIN,
        o->user ? o->user : info.user, o->password ? o->password : "");
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        if (o->login_refused) *o->login_refused = true;
        char buf[200];
        snprintf(err, n, "broker login: %s", rp_amqp_reply_string(r, buf, sizeof buf));
        goto fail;
    }
    free(url);
    return c;
fail:
    amqp_destroy_connection(c);
    free(url);
    return NULL;
}

amqp_connection_state_t rp_amqp_open(const rp_amqp_open_opts *o, char *err, size_t n) {
    const char *url = o->url ? o->url : "";
    size_t count = rp_hostlist_count(url);
    if (count <= 1) { /* one host: its own error, as it always was */
        bool fatal;
        amqp_connection_state_t c = rp_amqp_open_one(o, url, err, n, &fatal);
        if (c != NULL && o->host_used) *o->host_used = 0;
        return c;
    }
    /* A host list: each in turn, from the one that answered last; the
     * error names every host's failure. */
    size_t first = o->host_used ? *o->host_used % count : 0;
    char one[1024], why[256];
    size_t used = 0;
    used += (size_t)snprintf(err, n, "no broker host answered:");
    for (size_t k = 0; k < count; k++) {
        size_t i = (first + k) % count;
        if (!rp_hostlist_pick(url, i, one, sizeof one)) {
            snprintf(err, n, "broker.url does not parse (host %zu of its list)", i + 1);
            return NULL;
        }
        bool fatal;
        amqp_connection_state_t c = rp_amqp_open_one(o, one, why, sizeof why, &fatal);
        if (c != NULL) {
            if (o->host_used) *o->host_used = i;
            return c;
        }
        if (fatal) {
            snprintf(err, n, "%s", why);
            return NULL;
        }
        if (used < n) used += (size_t)snprintf(err + used, n - used, "%s %s", k ? ";" : "", why);
    }
    return NULL;
}

/* The URL with only the first host of its list (user and vhost are the
 * same for all), into a new string for amqp_parse_url; NULL: no memory. */
char *rp_amqp_url_first(const char *url) {
    const char *u = url ? url : "";
    size_t len = strlen(u) + 1;
    char *one = malloc(len);
    if (one == NULL) return NULL;
    if (!rp_hostlist_pick(u, 0, one, len)) snprintf(one, len, "%s", u);
    return one;
}

bool rp_amqp_url_user(const char *url, char *buf, size_t n) {
    char *copy = rp_amqp_url_first(url);
    if (copy == NULL) return false;
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    bool ok = amqp_parse_url(copy, &info) == AMQP_STATUS_OK;
    if (ok) snprintf(buf, n, "%s", info.user);
    free(copy);
    return ok;
}

int rp_amqp_quorum_group_size(const char *url) {
    size_t hosts = rp_hostlist_count(url);
    if (hosts <= 1) return 0;
    return hosts < RP_AMQP_QUORUM_GROUP_MAX ? (int)hosts : RP_AMQP_QUORUM_GROUP_MAX;
}
