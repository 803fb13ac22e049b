/* A publish's frames encoded into one buffer (rp_amqp_frames.h). */
#include "rp_amqp_frames.h"

#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

/* A frame: type (1), channel (2), payload size (4), payload, end (1). */
#define RP_FRAME_HEAD 7
#define RP_FRAME_OVERHEAD 8
#define RP_FRAME_END 0xCE

static void rp_put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void rp_put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void rp_put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* Room for n more bytes. */
static bool rp_reserve(rp_amqp_frames *b, size_t n) {
    if (b->cap - b->len >= n) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) return false;
        cap *= 2;
    }
    uint8_t *p = realloc(b->bytes, cap);
    if (p == NULL) return false;
    b->bytes = p;
    b->cap = cap;
    return true;
}

/* Closes the frame opened at start (its payload written after the head)
 * with payload bytes of payload. */
static void rp_close_frame(rp_amqp_frames *b, size_t start, uint8_t type, uint16_t channel,
                           size_t payload) {
    uint8_t *f = b->bytes + start;
    f[0] = type;
    rp_put16(f + 1, channel);
    rp_put32(f + 3, (uint32_t)payload);
    f[RP_FRAME_HEAD + payload] = RP_FRAME_END;
    b->len = start + RP_FRAME_HEAD + payload + 1;
}

int rp_amqp_frames_publish(rp_amqp_frames *b, uint16_t channel, size_t frame_max,
                           amqp_bytes_t exchange, amqp_bytes_t routing_key, bool mandatory,
                           bool immediate, const amqp_basic_properties_t *props,
                           amqp_bytes_t body) {
    if (frame_max <= RP_FRAME_OVERHEAD + 12) return AMQP_STATUS_INVALID_PARAMETER;
    size_t before = b->len;
    size_t room = frame_max - RP_FRAME_OVERHEAD; /* the most payload in one frame */
    /* basic.publish: the method number, then its arguments. */
    if (!rp_reserve(b, frame_max)) return AMQP_STATUS_NO_MEMORY;
    amqp_basic_publish_t m = {
        .ticket = 0,
        .exchange = exchange,
        .routing_key = routing_key,
        .mandatory = mandatory,
        .immediate = immediate,
    };
    uint8_t *pl = b->bytes + before + RP_FRAME_HEAD;
    rp_put32(pl, AMQP_BASIC_PUBLISH_METHOD);
    int n = amqp_encode_method(AMQP_BASIC_PUBLISH_METHOD, &m,
                               (amqp_bytes_t){room - 4, pl + 4});
    if (n < 0) return n;
    rp_close_frame(b, before, AMQP_FRAME_METHOD, channel, 4 + (size_t)n);
    /* The content header: class, weight 0, body size, the properties. */
    size_t start = b->len;
    if (!rp_reserve(b, frame_max)) {
        b->len = before;
        return AMQP_STATUS_NO_MEMORY;
    }
    amqp_basic_properties_t none;
    if (props == NULL) {
        memset(&none, 0, sizeof none);
        props = &none;
    }
    pl = b->bytes + start + RP_FRAME_HEAD;
    rp_put16(pl, AMQP_BASIC_CLASS);
    rp_put16(pl + 2, 0);
    rp_put64(pl + 4, (uint64_t)body.len);
    n = amqp_encode_properties(AMQP_BASIC_CLASS, (void *)props,
                               (amqp_bytes_t){room - 12, pl + 12});
    if (n < 0) {
        b->len = before;
        return n;
    }
    rp_close_frame(b, start, AMQP_FRAME_HEADER, channel, 12 + (size_t)n);
    /* The body, in frames of at most room bytes. */
    size_t frames = body.len / room + 1;
    if (!rp_reserve(b, body.len + frames * RP_FRAME_OVERHEAD)) {
        b->len = before;
        return AMQP_STATUS_NO_MEMORY;
    }
    for (size_t off = 0; off < body.len;) {
        size_t k = body.len - off < room ? body.len - off : room;
        start = b->len;
        memcpy(b->bytes + start + RP_FRAME_HEAD, (const uint8_t *)body.bytes + off, k);
        rp_close_frame(b, start, AMQP_FRAME_BODY, channel, k);
        off += k;
    }
    return AMQP_STATUS_OK;
}

void rp_amqp_frames_reset(rp_amqp_frames *b, size_t keep) {
    b->len = 0;
    if (b->cap > keep) {
        free(b->bytes);
        b->bytes = NULL;
        b->cap = 0;
    }
}

void rp_amqp_frames_free(rp_amqp_frames *b) {
    free(b->bytes);
    *b = (rp_amqp_frames){0};
}

int rp_amqp_frames_write(int fd, const uint8_t *buf, size_t len, int stall_ms) {
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int n = poll(&p, 1, stall_ms);
            if (n == 0) return AMQP_STATUS_TIMEOUT;
            if (n < 0 && errno != EINTR) return AMQP_STATUS_SOCKET_ERROR;
            continue;
        }
        return AMQP_STATUS_SOCKET_ERROR;
    }
    return AMQP_STATUS_OK;
}

size_t rp_amqp_socket_room(int fd, size_t *queued) {
    int sndbuf = 0, outq = 0;
    socklen_t n = sizeof sndbuf;
    *queued = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &n) != 0 || sndbuf <= 0 ||
        ioctl(fd, SIOCOUTQ, &outq) != 0 || outq < 0)
        return SIZE_MAX;
    *queued = (size_t)outq;
    size_t usable = (size_t)sndbuf / 4 * 3;
    return usable > (size_t)outq ? usable - (size_t)outq : 0;
}
