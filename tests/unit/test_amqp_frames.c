/* rp_amqp_frames against rabbitmq-c: the bytes amqp_basic_publish writes on
 * a socketpair are the bytes rp_amqp_frames_publish puts in its buffer, for
 * publishes with and without properties (every property, a headers table
 * with nested values), empty bodies, bodies of exactly one frame's room and
 * over several frames (a small frame_max), mandatory and the longest names;
 * several publishes in one buffer are the library's publishes one after the
 * other; what the library refuses to encode is refused too, leaving the
 * buffer as it was; rp_amqp_frames_write writes everything, also through a
 * non-blocking socket that fills up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <amqp_tcp_socket.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rp_amqp_feed.h"
#include "rp_amqp_frames.h"

typedef struct lib {
    int sv[2];
    amqp_connection_state_t c;
} lib;

/* A rabbitmq-c connection whose socket is one end of a socketpair (no
 * login: amqp_basic_publish only encodes and sends). */
static void lib_open(lib *l, int frame_max) {
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, l->sv), 0);
    int big = 1 << 20;
    (void)setsockopt(l->sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    (void)setsockopt(l->sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    l->c = amqp_new_connection();
    assert_non_null(l->c);
    amqp_socket_t *s = amqp_tcp_socket_new(l->c);
    assert_non_null(s);
    amqp_tcp_socket_set_sockfd(s, l->sv[0]);
    /* The protocol header, as a login starts (the library refuses to send
     * frames before it); read off here. */
    assert_int_equal(amqp_send_header(l->c), AMQP_STATUS_OK);
    uint8_t hdr[8];
    assert_int_equal(recv(l->sv[1], hdr, sizeof hdr, 0), 8);
    assert_memory_equal(hdr, "AMQP", 4);
    /* The library leaves its initial state with the first thing it reads:
     * a protocol header (what a broker sends when it refuses the version)
     * is taken as a pseudo-frame. */
    static const uint8_t proto[8] = {'A', 'M', 'Q', 'P', 0, 0, 9, 1};
    assert_int_equal(send(l->sv[1], proto, sizeof proto, 0), 8);
    amqp_frame_t f;
    struct timeval tv = {1, 0};
    assert_int_equal(amqp_simple_wait_frame_noblock(l->c, &f, &tv), AMQP_STATUS_OK);
    assert_int_equal(f.frame_type, 'A'); /* the library's pseudo-frame type */
    assert_int_equal(amqp_tune_connection(l->c, 0, frame_max, 0), AMQP_STATUS_OK);
    assert_int_equal(amqp_get_frame_max(l->c), frame_max);
}

static void lib_close(lib *l) {
    amqp_destroy_connection(l->c); /* closes sv[0] */
    close(l->sv[1]);
}

/* Everything written so far on the library's end (non-blocking read). */
static size_t lib_read(lib *l, uint8_t *buf, size_t cap) {
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(l->sv[1], buf + n, cap - n, MSG_DONTWAIT);
        if (r <= 0) break;
        n += (size_t)r;
        assert_true(n < cap);
    }
    return n;
}

typedef struct pub {
    const char *exchange, *routing_key;
    bool mandatory;
    const amqp_basic_properties_t *props;
    size_t body_len;
} pub;

static uint8_t *body_of(size_t len) {
    uint8_t *b = malloc(len ? len : 1);
    assert_non_null(b);
    for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(i * 7 + 3);
    return b;
}

/* The pubs through the library and through rp_amqp_frames (one buffer):
 * the same bytes. */
static void same_bytes(int frame_max, const pub *pubs, size_t n) {
    lib l;
    lib_open(&l, frame_max);
    rp_amqp_frames b = {0};
    for (size_t i = 0; i < n; i++) {
        uint8_t *body = body_of(pubs[i].body_len);
        amqp_bytes_t bb = {pubs[i].body_len, body};
        assert_int_equal(amqp_basic_publish(l.c, 5, amqp_cstring_bytes(pubs[i].exchange),
                                            amqp_cstring_bytes(pubs[i].routing_key),
                                            pubs[i].mandatory, 0, pubs[i].props, bb),
                         AMQP_STATUS_OK);
        assert_int_equal(rp_amqp_frames_publish(&b, 5, (size_t)amqp_get_frame_max(l.c),
                                                amqp_cstring_bytes(pubs[i].exchange),
                                                amqp_cstring_bytes(pubs[i].routing_key),
                                                pubs[i].mandatory, false, pubs[i].props, bb),
                         AMQP_STATUS_OK);
        free(body);
    }
    size_t cap = 1 << 20;
    uint8_t *want = malloc(cap);
    assert_non_null(want);
    size_t got = lib_read(&l, want, cap);
    assert_true(got > 0);
    assert_int_equal(b.len, got);
    assert_memory_equal(b.bytes, want, got);
    free(want);
    rp_amqp_frames_free(&b);
    lib_close(&l);
}

static amqp_basic_properties_t feed_props(void) {
    amqp_basic_properties_t p;
    rp_amqp_feed_props(&p, "application/msgpack", "ledger-123456", 1764680000, "QueueReaped");
    return p;
}

static void test_feed_event(void **state) {
    (void)state;
    amqp_basic_properties_t p = feed_props();
    pub one = {"reaper.events", "tap.dead_letter.parked", false, &p, 700};
    same_bytes(131072, &one, 1);
}

static void test_no_properties_empty_body(void **state) {
    (void)state;
    pub pubs[] = {
        {"", "q", false, NULL, 0},
        {"x", "", true, NULL, 1},
        {"", "", false, NULL, 0},
    };
    same_bytes(131072, pubs, RP_ARRAY_LEN(pubs));
}

static void test_every_property_and_headers(void **state) {
    (void)state;
    amqp_table_entry_t inner[] = {
        {amqp_cstring_bytes("reason"), {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("rejected")}}},
        {amqp_cstring_bytes("count"), {AMQP_FIELD_KIND_I64, {.i64 = 3}}},
    };
    amqp_field_value_t arr[] = {
        {AMQP_FIELD_KIND_TABLE, {.table = {2, inner}}},
        {AMQP_FIELD_KIND_I32, {.i32 = -7}},
    };
    amqp_table_entry_t h[] = {
        {amqp_cstring_bytes("x-death"), {AMQP_FIELD_KIND_ARRAY, {.array = {2, arr}}}},
        {amqp_cstring_bytes("flag"), {AMQP_FIELD_KIND_BOOLEAN, {.boolean = 1}}},
        {amqp_cstring_bytes("bin"), {AMQP_FIELD_KIND_BYTES, {.bytes = {3, (void *)"a\0b"}}}},
        {amqp_cstring_bytes("f"), {AMQP_FIELD_KIND_F64, {.f64 = 2.5}}},
    };
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_CONTENT_ENCODING_FLAG |
               AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
               AMQP_BASIC_PRIORITY_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
               AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_EXPIRATION_FLAG |
               AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_TYPE_FLAG |
               AMQP_BASIC_USER_ID_FLAG | AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_CLUSTER_ID_FLAG;
    p.content_type = amqp_cstring_bytes("text/plain");
    p.content_encoding = amqp_cstring_bytes("gzip");
    p.headers = (amqp_table_t){(int)RP_ARRAY_LEN(h), h};
    p.delivery_mode = 1;
    p.priority = 9;
    p.correlation_id = amqp_cstring_bytes("corr-1");
    p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    p.expiration = amqp_cstring_bytes("60000");
    p.message_id = amqp_cstring_bytes("m-1");
    p.timestamp = UINT64_C(0x0102030405060708);
    p.type = amqp_cstring_bytes("t");
    p.user_id = amqp_cstring_bytes("guest");
    p.app_id = amqp_cstring_bytes("app");
    p.cluster_id = amqp_cstring_bytes("c");
    pub one = {"ex", "rk", true, &p, 33};
    same_bytes(131072, &one, 1);
}

/* frame_max 4096: a body frame holds 4088 bytes. */
static void test_bodies_over_frames(void **state) {
    (void)state;
    amqp_basic_properties_t p = feed_props();
    pub pubs[] = {
        {"e", "k", false, &p, 4087},
        {"e", "k", false, &p, 4088},
        {"e", "k", false, &p, 4089},
        {"e", "k", false, &p, 4088 * 3},
        {"e", "k", false, &p, 4088 * 5 + 17},
        {"e", "k", false, NULL, 0},
    };
    same_bytes(4096, pubs, RP_ARRAY_LEN(pubs));
}

/* A frame_max above reaperd's own ask (131072; a broker may tune lower,
 * never higher, but rp_amqp_frames takes whatever the connection has): a
 * body of 150,000 bytes is one body frame at 262144. */
static void test_frame_max_over_131072(void **state) {
    (void)state;
    amqp_basic_properties_t p = feed_props();
    pub pubs[] = {
        {"e", "k", false, &p, 150000},
        {"e", "k", false, &p, 262144 - 8},
        {"e", "k", false, NULL, 3},
    };
    same_bytes(262144, pubs, 1);
    same_bytes(262144, pubs + 2, 1);
    same_bytes(300000, pubs + 1, 1);
}

static void test_longest_names(void **state) {
    (void)state;
    char name[256];
    memset(name, 'n', 255);
    name[255] = '\0';
    amqp_basic_properties_t p = feed_props();
    p.message_id = amqp_cstring_bytes(name);
    pub one = {name, name, false, &p, 10};
    same_bytes(131072, &one, 1);
}

/* What the library will not encode: a refusal, the buffer unchanged (the
 * publishes before it kept whole). */
static void test_refused_leaves_buffer(void **state) {
    (void)state;
    rp_amqp_frames b = {0};
    amqp_basic_properties_t p = feed_props();
    amqp_bytes_t body = {5, (void *)"hello"};
    assert_int_equal(rp_amqp_frames_publish(&b, 1, 131072, amqp_cstring_bytes("e"),
                                            amqp_cstring_bytes("k"), false, false, &p, body),
                     AMQP_STATUS_OK);
    size_t len = b.len;
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, b.bytes, len);
    char name[257];
    memset(name, 'n', 256);
    name[256] = '\0';
    assert_true(rp_amqp_frames_publish(&b, 1, 131072, amqp_cstring_bytes("e"),
                                       amqp_cstring_bytes(name), false, false, &p, body) < 0);
    assert_int_equal(b.len, len);
    /* Properties too big for one frame (a 5,000-byte header value at
     * frame_max 4096, the smallest the protocol allows). */
    char big[5001];
    memset(big, 'v', 5000);
    big[5000] = '\0';
    amqp_table_entry_t h[] = {
        {amqp_cstring_bytes("big"), {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(big)}}}};
    p._flags |= AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){1, h};
    assert_true(rp_amqp_frames_publish(&b, 1, 4096, amqp_cstring_bytes("e"),
                                       amqp_cstring_bytes("k"), false, false, &p, body) < 0);
    assert_int_equal(b.len, len);
    assert_memory_equal(b.bytes, copy, len);
    /* The library refuses the same publish. */
    lib l;
    lib_open(&l, 4096);
    assert_true(amqp_basic_publish(l.c, 1, amqp_cstring_bytes("e"), amqp_cstring_bytes("k"), 0,
                                   0, &p, body) < 0);
    lib_close(&l);
    free(copy);
    rp_amqp_frames_reset(&b, 0);
    assert_int_equal(b.len, 0);
    assert_null(b.bytes);
    rp_amqp_frames_free(&b);
}

typedef struct reader {
    int fd;
    size_t want, got;
    uint8_t *buf;
} reader;

static void *read_all(void *arg) {
    reader *r = arg;
    while (r->got < r->want) {
        usleep(r->got == 0 ? 50000 : 0); /* let the writer fill the socket first */
        ssize_t n = read(r->fd, r->buf + r->got, r->want - r->got);
        if (n <= 0) break;
        r->got += (size_t)n;
    }
    return NULL;
}

/* 4 MiB through a non-blocking socket with a small buffer: the writer
 * meets EAGAIN, waits and goes on; every byte arrives in order. */
static void test_write_all_nonblocking(void **state) {
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int small = 4096;
    (void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    assert_int_equal(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK), 0);
    size_t len = 4u << 20;
    uint8_t *out = body_of(len);
    reader r = {.fd = sv[1], .want = len, .buf = malloc(len)};
    assert_non_null(r.buf);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_all, &r), 0);
    assert_int_equal(rp_amqp_frames_write(sv[0], out, len, 10000), AMQP_STATUS_OK);
    pthread_join(t, NULL);
    assert_int_equal(r.got, len);
    assert_memory_equal(r.buf, out, len);
    /* A closed peer: an error, not a signal. */
    close(sv[1]);
    assert_int_equal(rp_amqp_frames_write(sv[0], out, 10, 10000), AMQP_STATUS_SOCKET_ERROR);
    close(sv[0]);
    free(r.buf);
    free(out);
}

/* A TCP connection on loopback whose accepting end (peer) reads nothing
 * until told. */
static void tcp_pair(int *writer, int *peer) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l, 1), 0);
    socklen_t n = sizeof sa;
    assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &n), 0);
    *writer = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(*writer, (struct sockaddr *)&sa, sizeof sa), 0);
    *peer = accept(l, NULL, NULL);
    assert_true(*peer >= 0);
    close(l);
    assert_int_equal(fcntl(*writer, F_SETFL, fcntl(*writer, F_GETFL) | O_NONBLOCK), 0);
}

/* A peer that reads nothing: the write gives up after stall_ms with
 * AMQP_STATUS_TIMEOUT instead of waiting for ever. */
static void test_write_gives_up_on_a_stalled_peer(void **state) {
    (void)state;
    int w, peer;
    tcp_pair(&w, &peer);
    size_t len = 64u << 20; /* far more than both buffers hold */
    uint8_t *out = body_of(len);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rp_amqp_frames_write(w, out, len, 200), AMQP_STATUS_TIMEOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 200 && ms < 5000);
    close(w);
    close(peer);
    free(out);
}

/* The room of a socket: most of its send buffer while the peer reads; 0
 * once a peer that reads nothing has let the buffer fill (a write would
 * then wait); back once the peer has read it all. */
static void test_socket_room(void **state) {
    (void)state;
    int w, peer;
    tcp_pair(&w, &peer);
    size_t queued = 1;
    size_t room = rp_amqp_socket_room(w, &queued);
    assert_int_equal(queued, 0);
    assert_true(room > 0 && room != SIZE_MAX);
    static uint8_t chunk[65536];
    size_t sent = 0;
    for (;;) {
        ssize_t n = send(w, chunk, sizeof chunk, MSG_NOSIGNAL);
        if (n < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        sent += (size_t)n;
    }
    room = rp_amqp_socket_room(w, &queued);
    assert_int_equal(room, 0);
    assert_true(queued > 0 && queued <= sent);
    /* The peer reads it all: the queue empties, the room comes back. */
    static uint8_t sink[65536];
    size_t got = 0;
    while (got < sent) {
        ssize_t n = recv(peer, sink, sizeof sink, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
    for (int i = 0; i < 100; i++) { /* the last acknowledgement may still be on its way */
        room = rp_amqp_socket_room(w, &queued);
        if (queued == 0) break;
        usleep(10000);
    }
    assert_int_equal(queued, 0);
    assert_true(room > 0);
    /* Not a socket: no bound. */
    assert_int_equal(rp_amqp_socket_room(-1, &queued), SIZE_MAX);
    close(w);
    close(peer);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_event),
        cmocka_unit_test(test_no_properties_empty_body),
        cmocka_unit_test(test_every_property_and_headers),
        cmocka_unit_test(test_bodies_over_frames),
        cmocka_unit_test(test_frame_max_over_131072),
        cmocka_unit_test(test_longest_names),
        cmocka_unit_test(test_refused_leaves_buffer),
        cmocka_unit_test(test_write_all_nonblocking),
        cmocka_unit_test(test_write_gives_up_on_a_stalled_peer),
        cmocka_unit_test(test_socket_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
