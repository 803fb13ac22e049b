/* doctor's AMQP probe (rp_amqp_doctor.h). */
#include "rp_amqp_doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A bare TCP connect to host:port: RP_REACH_OK, RP_REACH_REFUSED (every
 * address refused) or RP_REACH_UNREACHABLE (why says which). */
static rp_doctor_reach rp_doc_tcp(const char *host, int port, int timeout_ms, char *why,
                                  size_t n) {
    char serv[16];
    snprintf(serv, sizeof serv, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(host, serv, &hints, &res);
    if (g != 0) {
        snprintf(why, n, "cannot resolve %s: %s", host, gai_strerror(g));
        return RP_REACH_UNREACHABLE;
    }
    rp_doctor_reach out = RP_REACH_UNREACHABLE;
    int last = ETIMEDOUT;
    for (struct addrinfo *a = res; a != NULL && out != RP_REACH_OK; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        int e = rc == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, timeout_ms) == 1) {
                socklen_t len = sizeof e;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
            } else {
                e = ETIMEDOUT;
            }
        }
        close(fd);
        if (e == 0) out = RP_REACH_OK;
        else if (e == ECONNREFUSED) out = out == RP_REACH_UNREACHABLE ? RP_REACH_REFUSED : out;
        last = e;
    }
    freeaddrinfo(res);
    if (out != RP_REACH_OK) snprintf(why, n, "%s:%d: %s", host, port, strerror(last));
    return out;
}

rp_doctor_reach rp_amqp_doctor_probe(const rp_amqp_open_opts *o, char *why, size_t n) {
    why[0] = '\0';
    amqp_connection_state_t c = rp_amqp_open(o, why, n);
    if (c != NULL) {
        (void)amqp_connection_close(c, AMQP_REPLY_SUCCESS);
        amqp_destroy_connection(c);
        return RP_REACH_OK;
    }
    if (strncmp(why, "broker login", 12) == 0) return RP_REACH_AUTH;
    /* A host list none of whose hosts answered (each failure is in why). */
    if (strncmp(why, "no broker host answered", 23) == 0) return RP_REACH_UNREACHABLE;
    if (strncmp(why, "cannot connect", 14) != 0) return RP_REACH_ERROR;
    /* Which layer: ask TCP alone. */
    char *copy = strdup(o->url);
    struct amqp_connection_info info;
    rp_doctor_reach r = RP_REACH_UNREACHABLE;
    if (copy != NULL && amqp_parse_url(copy, &info) == AMQP_STATUS_OK) {
        char tcp[256];
        r = rp_doc_tcp(info.host, info.port, o->connect_timeout_ms > 0 ? o->connect_timeout_ms
                                                                       : 5000,
                       tcp, sizeof tcp);
        if (r == RP_REACH_OK) r = RP_REACH_ERROR; /* TCP is fine: AMQP is not */
        else snprintf(why, n, "%s", tcp);
    }
    free(copy);
    return r;
}

rp_doctor_reach rp_amqp_doctor_probe_config(const rp_config *cfg, const char *password,
                                            int timeout_ms, char *why, size_t n) {
    rp_amqp_open_opts o = {
        .url = cfg->broker.url,
        .password = password,
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
        .connect_timeout_ms = timeout_ms,
        .rpc_timeout_ms = timeout_ms,
        .connection_name = "reaper doctor",
    };
    return rp_amqp_doctor_probe(&o, why, n);
}
