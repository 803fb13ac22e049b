/*
 * rp_http_check.c - reaperd --healthcheck (rp_http_check.h).
 */
#include "rp_http_check.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rp_clock.h"

/* Splits listen into host and port text; false when it is not host:port. */
static bool rp_hc_split(const char *listen, char *host, size_t hcap, char *port, size_t pcap) {
    const char *p;
    size_t hl;
    const char *h = listen;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (close == NULL || close[1] != ':') return false;
        h = listen + 1;
        hl = (size_t)(close - h);
        p = close + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (colon == NULL) return false;
        hl = (size_t)(colon - listen);
        p = colon + 1;
    }
    if (hl >= hcap || strlen(p) >= pcap || *p == '\0') return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, pcap, "%s", p);
    return true;
}

/* Waits until fd is ready for events or the deadline passes. */
static bool rp_hc_wait(int fd, short events, long deadline) {
    for (;;) {
        long left = (long)(deadline - rp_clock_mono_ms());
        if (left <= 0) return false;
        struct pollfd pfd = {.fd = fd, .events = events};
        int n = poll(&pfd, 1, (int)left);
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

int rp_healthcheck(const char *listen, int timeout_ms, char *err, size_t errlen) {
    char host[256], port[8];
    if (listen == NULL || !rp_hc_split(listen, host, sizeof host, port, sizeof port)) {
        snprintf(err, errlen, "http.listen %s is not host:port", listen ? listen : "(unset)");
        return 1;
    }
    if (strcmp(port, "0") == 0) {
        snprintf(err, errlen, "http.listen %s names no fixed port (port 0)", listen);
        return 1;
    }
    if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) snprintf(host, sizeof host, "127.0.0.1");
    else if (strcmp(host, "::") == 0) snprintf(host, sizeof host, "::1");

    long deadline = (long)(rp_clock_mono_ms() + timeout_ms);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "%s: %s", host, gai_strerror(gai));
        return 1;
    }
    int fd = -1;
    snprintf(err, errlen, "cannot connect to %s port %s", host, port);
    for (struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        int e = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            socklen_t sl = sizeof e;
            if (!rp_hc_wait(fd, POLLOUT, deadline)) e = ETIMEDOUT;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) != 0) e = errno;
        }
        if (e != 0) {
            snprintf(err, errlen, "cannot connect to %s port %s: %s", host, port, strerror(e));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) return 1;

    char req[384];
    int rl = snprintf(req, sizeof req, "GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n",
                      strchr(host, ':') ? "localhost" : host);
    size_t sent = 0;
    while (sent < (size_t)rl) {
        if (!rp_hc_wait(fd, POLLOUT, deadline)) break;
        ssize_t n = send(fd, req + sent, (size_t)rl - sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) break;
        sent += (size_t)n;
    }
    char line[128];
    size_t got = 0;
    while (sent == (size_t)rl && got + 1 < sizeof line && memchr(line, '\n', got) == NULL) {
        if (!rp_hc_wait(fd, POLLIN, deadline)) break;
        ssize_t n = recv(fd, line + got, sizeof line - 1 - got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    line[got] = '\0';
    char *eol = strpbrk(line, "\r\n");
    if (eol != NULL) *eol = '\0';
    int status = 0;
    if (sscanf(line, "HTTP/%*d.%*d %3d", &status) != 1) {
        snprintf(err, errlen, "no HTTP answer from %s port %s%s", host, port,
                 sent == (size_t)rl ? "" : " (request not sent)");
        return 1;
    }
    if (status != 200) {
        snprintf(err, errlen, "/healthz on %s port %s answered %d", host, port, status);
        return 1;
    }
    snprintf(err, errlen, "/healthz on %s port %s answered 200", host, port);
    return 0;
}

const char *rp_healthcheck_pid1_config(char *buf, size_t cap) {
    char args[4096];
    int fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    ssize_t n = read(fd, args, sizeof args - 1);
    close(fd);
    if (n <= 0) return NULL;
    args[n] = '\0';
    /* The arguments, NUL-separated; the first is the program. */
    const char *a = args, *end = args + n;
    const char *base = strrchr(a, '/');
    if (strcmp(base ? base + 1 : a, "reaperd") != 0) return NULL;
    for (a += strlen(a) + 1; a < end; a += strlen(a) + 1) {
        const char *v = NULL, *next = a + strlen(a) + 1;
        if (strcmp(a, "--") == 0) break;
        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) v = next < end ? next : NULL;
        else if (strncmp(a, "--config=", 9) == 0) v = a + 9;
        else if (strncmp(a, "-c", 2) == 0) v = a + 2;
        if (v != NULL && *v != '\0' && strlen(v) < cap) {
            snprintf(buf, cap, "%s", v);
            return buf;
        }
    }
    return NULL;
}
