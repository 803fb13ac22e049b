#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

rp_http *http_client_server(struct event_base *base, rp_metrics *metrics,
                            const rp_http_hooks *hooks) {
    char err[200] = "";
    rp_http *h = rp_http_new(base, "127.0.0.1:0", metrics, hooks, err, sizeof err);
    if (h == NULL) fail_msg("rp_http_new: %s", err);
    return h;
}

static void *loop_main(void *arg) {
    event_base_dispatch(arg);
    return NULL;
}

void http_client_loop_start(struct event_base *base, pthread_t *thread) {
    assert_int_equal(pthread_create(thread, NULL, loop_main, base), 0);
}

void http_client_loop_stop(struct event_base *base, pthread_t thread) {
    event_base_loopbreak(base);
    pthread_join(thread, NULL);
}

unsigned http_client_port(const rp_http *h) {
    const char *colon = strrchr(rp_http_bound(h), ':');
    assert_non_null(colon);
    return (unsigned)atoi(colon + 1);
}

int http_client_request(unsigned port, const char *method, const char *path, const char *headers,
                        const char *body, bool with_length, char *buf, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char length[48] = "";
    if (with_length)
        snprintf(length, sizeof length, "Content-Length: %zu\r\n", body ? strlen(body) : 0);
    char req[2048];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: x\r\n%s%s\r\n%s", method, path,
                     headers ? headers : "", length, body ? body : "");
    assert_true(n > 0 && (size_t)n < sizeof req);
    assert_int_equal(send(fd, req, (size_t)n, 0), n);
    size_t got = 0;
    for (ssize_t r; got + 1 < cap && (r = recv(fd, buf + got, cap - 1 - got, 0)) > 0;)
        got += (size_t)r;
    buf[got] = '\0';
    close(fd);
    int status = -1;
    if (sscanf(buf, "HTTP/%*d.%*d %d", &status) != 1) return -1;
    return status;
}

const char *http_client_body(const char *answer) {
    const char *b = strstr(answer, "\r\n\r\n");
    return b ? b + 4 : "";
}
