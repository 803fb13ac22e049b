#include "rp_amqp_conn.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "rp_amqp_open.h"
#include "rp_amqp_table.h"
#include "rp_clock.h"
#include "rp_hostlist.h"
#include "rp_log.h"

#define RP_AMQP_CHANNEL 1
#define RP_AMQP_FRAME_MAX 131072
#define RP_AMQP_BACKOFF_MIN_MS 500
#define RP_AMQP_BACKOFF_MAX_MS 10000
#define RP_AMQP_RPC_TIMEOUT_S 10
/* A connect attempt still running after this long is said in the log,
 * with the step it is at, every period again until it ends. */
#define RP_AMQP_SLOW_CONNECT_MS 30000

struct rp_amqp_conn {
    struct event_base *base;
    rp_amqp_hooks hooks;
    /* Copies of the parameters (read-only once made, so the connect thread
     * may read them). */
    char *url;      /* as given (rp_amqp_open parses it again) */
    char *url_copy; /* amqp_parse_url points into it */
    struct amqp_connection_info info;
    char *password;
    char *vhost; /* NULL: the URL's */
    char *connection_name;
    char *ca_file, *cert_file, *key_file;
    bool verify_peer;
    int heartbeat;
    int connect_timeout_ms;
    int rpc_timeout_ms;
    int slow_connect_ms;
    int frame_max;
    char peer[300];
    /* The host of broker.url's host list tried first at the next connect:
     * the one that answered last (written by the connect thread, read by
     * the loop after the join). */
    size_t host;

    rp_amqp_state state;
    amqp_connection_state_t conn; /* owned; non-NULL only while UP */
    struct event *read_ev;
    struct event *tick_ev;    /* heartbeat-period drain */
    struct event *retry_ev;   /* reconnect after backoff */
    struct event *done_ev;    /* the connect thread finished */
    struct event *slow_ev;    /* the attempt runs long: say so */
    int backoff_ms;

    /* Connect thread and its result (written by the thread, read after join). */
    pthread_t thread;
    bool thread_running;
    /* The step the connect thread is at (a string literal), for the slow
     * attempt's log line; written by the thread, read by the loop. */
    _Atomic(const char *) phase;
    int64_t attempt_started_ms;
    amqp_connection_state_t result;
    char result_err[256];

    /* What frames decoded since the library's pools were last released
     * weigh (rp_amqp_frame_weight), over drains: a release is skipped
     * while a frame is half read, which is how most drains end when frames
     * are large. */
    size_t unreleased;
    /* A failure seen while draining is finished after the drain returns. */
    bool draining;
    bool failed;
    char fail_why[256];
};

static const char *const rp_amqp_state_names[RP_AMQP_STATE_COUNT_] = {"down", "connecting",
                                                                      "up"};

const char *rp_amqp_state_string(rp_amqp_state s) {
    if ((int)s < 0 || s >= RP_AMQP_STATE_COUNT_) return "unknown";
    return rp_amqp_state_names[s];
}

const char *rp_amqp_reply_string(amqp_rpc_reply_t r, char *buf, size_t n) {
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        snprintf(buf, n, "ok");
        break;
    case AMQP_RESPONSE_NONE:
        snprintf(buf, n, "no reply");
        break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(buf, n, "%s", amqp_error_string2(r.library_error));
        break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
            const amqp_connection_close_t *m = r.reply.decoded;
            snprintf(buf, n, "server closed the connection: %u %.*s", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            const amqp_channel_close_t *m = r.reply.decoded;
            snprintf(buf, n, "server closed the channel: %u %.*s", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
        } else {
            snprintf(buf, n, "server error (method 0x%08x)", r.reply.id);
        }
        break;
    }
    return buf;
}

static char *rp_dup_or_null(const char *s) {
    return (s && *s) ? strdup(s) : NULL;
}

rp_amqp_conn *rp_amqp_conn_new(struct event_base *base, const rp_amqp_params *p,
                               const rp_amqp_hooks *hooks, const char **err) {
    rp_amqp_conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        *err = "out of memory";
        return NULL;
    }
    c->base = base;
    c->hooks = *hooks;
    c->url = strdup(p->url ? p->url : "");
    c->url_copy = rp_amqp_url_first(p->url);
    c->password = strdup(p->password ? p->password : "");
    c->vhost = rp_dup_or_null(p->vhost);
    c->connection_name = strdup(p->connection_name ? p->connection_name : "reaperd");
    c->ca_file = rp_dup_or_null(p->ca_file);
    c->cert_file = rp_dup_or_null(p->cert_file);
    c->key_file = rp_dup_or_null(p->key_file);
    c->verify_peer = p->verify_peer;
    c->heartbeat = p->heartbeat_seconds > 0 ? p->heartbeat_seconds : 0;
    c->connect_timeout_ms = p->connect_timeout_ms > 0 ? p->connect_timeout_ms : 5000;
    c->frame_max = p->frame_max > 0 ? p->frame_max : RP_AMQP_FRAME_MAX;
    c->rpc_timeout_ms = p->rpc_timeout_ms > 0 ? p->rpc_timeout_ms : RP_AMQP_RPC_TIMEOUT_S * 1000;
    c->slow_connect_ms = p->slow_connect_ms > 0 ? p->slow_connect_ms : RP_AMQP_SLOW_CONNECT_MS;
    c->backoff_ms = RP_AMQP_BACKOFF_MIN_MS;
    if (c->url == NULL || c->url_copy == NULL || c->password == NULL ||
        c->connection_name == NULL || (p->vhost != NULL && *p->vhost && c->vhost == NULL)) {
        *err = "out of memory";
        rp_amqp_conn_free(c);
        return NULL;
    }
    amqp_default_connection_info(&c->info);
    if (amqp_parse_url(c->url_copy, &c->info) != AMQP_STATUS_OK) {
        *err = "the broker URL does not parse (expected amqp://user@host:port/vhost)";
        rp_amqp_conn_free(c);
        return NULL;
    }
    if (c->vhost != NULL) c->info.vhost = c->vhost;
    snprintf(c->peer, sizeof c->peer, "%s:%d vhost %s", c->info.host, c->info.port, c->info.vhost);
    if (rp_hostlist_count(c->url) > 1) { /* until one of them answers */
        char hosts[200];
        rp_hostlist_hosts(c->url, hosts, sizeof hosts);
        snprintf(c->peer, sizeof c->peer, "%s vhost %s", hosts, c->info.vhost);
    }
    return c;
}

const char *rp_amqp_conn_peer(const rp_amqp_conn *c) { return c->peer; }
bool rp_amqp_conn_tls(const rp_amqp_conn *c) { return c->info.ssl != 0; }

struct event_base *rp_amqp_conn_base(const rp_amqp_conn *c) { return c->base; }

amqp_connection_state_t rp_amqp_conn_handle(rp_amqp_conn *c) {
    return (c->state == RP_AMQP_UP && !c->failed) ? c->conn : NULL;
}

static void rp_amqp_set_state(rp_amqp_conn *c, rp_amqp_state s, const char *why) {
    c->state = s;
    if (c->hooks.on_state) c->hooks.on_state(c->hooks.arg, s, why);
}

/* ---- the connect thread -------------------------------------------------- */

static bool rp_amqp_rpc_ok(amqp_rpc_reply_t r, const char *what, char *err, size_t n) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL) return true;
    char buf[200];
    snprintf(err, n, "%s: %s", what, rp_amqp_reply_string(r, buf, sizeof buf));
    return false;
}

/* Everything blocking happens here, on a thread of its own, with time-outs
 * on the TCP connect, the handshake and every RPC (rp_amqp_open.h). */
static amqp_connection_state_t rp_amqp_connect_blocking(rp_amqp_conn *c, char *err, size_t n) {
    rp_amqp_open_opts o = {
        .url = c->url,
        .password = c->password,
        .vhost = c->vhost,
        .ca_file = c->ca_file,
        .cert_file = c->cert_file,
        .key_file = c->key_file,
        .verify_peer = c->verify_peer,
        .connect_timeout_ms = c->connect_timeout_ms,
        .rpc_timeout_ms = c->rpc_timeout_ms,
        .heartbeat_s = c->heartbeat,
        .frame_max = c->frame_max,
        .connection_name = c->connection_name,
        .capabilities = true,
        .host_used = &c->host,
    };
    atomic_store(&c->phase, "opening the connection (TCP connect and login)");
    amqp_connection_state_t conn = rp_amqp_open(&o, err, n);
    if (conn == NULL) return NULL;
    atomic_store(&c->phase, "opening channel 1");
    amqp_channel_open(conn, RP_AMQP_CHANNEL);
    if (!rp_amqp_rpc_ok(amqp_get_rpc_reply(conn), "channel open", err, n)) goto fail;
    atomic_store(&c->phase, "declaring and consuming (set-up)");
    if (c->hooks.on_setup && !c->hooks.on_setup(c->hooks.arg, conn, err, n)) goto fail;
    atomic_store(&c->phase, "done");
    return conn;
fail:
    amqp_destroy_connection(conn);
    return NULL;
}

static void *rp_amqp_connect_main(void *arg) {
    rp_amqp_conn *c = arg;
    c->result_err[0] = '\0';
    c->result = rp_amqp_connect_blocking(c, c->result_err, sizeof c->result_err);
    event_active(c->done_ev, 0, 0);
    return NULL;
}

/* ---- the loop side ------------------------------------------------------- */

static void rp_amqp_schedule_retry(rp_amqp_conn *c) {
    /* +-20% jitter so that many reapers do not reconnect in step. */
    int jitter = c->backoff_ms / 5;
    int ms = c->backoff_ms - jitter + (jitter > 0 ? rand() % (2 * jitter + 1) : 0);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(c->retry_ev, &tv);
    c->backoff_ms = c->backoff_ms * 2 > RP_AMQP_BACKOFF_MAX_MS ? RP_AMQP_BACKOFF_MAX_MS
                                                                : c->backoff_ms * 2;
}

static void rp_amqp_teardown(rp_amqp_conn *c, bool polite) {
    if (c->read_ev) event_del(c->read_ev);
    if (c->tick_ev) event_del(c->tick_ev);
    if (c->conn) {
        if (polite) {
            (void)amqp_channel_close(c->conn, RP_AMQP_CHANNEL, AMQP_REPLY_SUCCESS);
            (void)amqp_connection_close(c->conn, AMQP_REPLY_SUCCESS);
        }
        amqp_destroy_connection(c->conn);
        c->conn = NULL;
    }
    if (c->read_ev) {
        event_free(c->read_ev);
        c->read_ev = NULL;
    }
}

static void rp_amqp_lost(rp_amqp_conn *c, const char *why) {
    rp_amqp_teardown(c, false);
    c->failed = false;
    rp_amqp_set_state(c, RP_AMQP_DOWN, why);
    rp_amqp_schedule_retry(c);
}

void rp_amqp_conn_fail(rp_amqp_conn *c, const char *why) {
    if (c->state != RP_AMQP_UP) return;
    if (c->draining) { /* finished by the drain loop once it unwinds */
        if (!c->failed) snprintf(c->fail_why, sizeof c->fail_why, "%s", why);
        c->failed = true;
        return;
    }
    rp_amqp_lost(c, why);
}

/* Handles what the connection itself must answer; everything else goes to
 * the on_frame hook. */
static void rp_amqp_dispatch(rp_amqp_conn *c, const amqp_frame_t *f) {
    if (f->frame_type == AMQP_FRAME_METHOD) {
        char why[256];
        switch (f->payload.method.id) {
        case AMQP_CONNECTION_CLOSE_METHOD: {
            const amqp_connection_close_t *m = f->payload.method.decoded;
            amqp_connection_close_ok_t ok = {0};
            (void)amqp_send_method(c->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
            snprintf(why, sizeof why, "broker closed the connection: %u %.*s", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
            rp_amqp_conn_fail(c, why);
            return;
        }
        case AMQP_CHANNEL_CLOSE_METHOD: {
            /* Rebuilding the whole connection restores every declaration
             * and consumer through one path. */
            const amqp_channel_close_t *m = f->payload.method.decoded;
            amqp_channel_close_ok_t ok = {0};
            (void)amqp_send_method(c->conn, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
            char reason[200];
            snprintf(reason, sizeof reason, "%u %.*s", m->reply_code, (int)m->reply_text.len,
                     (const char *)m->reply_text.bytes);
            /* A channel someone opens again on its own (the replay
             * channel) does not cost the connection. */
            if (c->hooks.on_channel_close &&
                c->hooks.on_channel_close(c->hooks.arg, f->channel, reason))
                return;
            snprintf(why, sizeof why, "broker closed channel %u: %s", f->channel, reason);
            rp_amqp_conn_fail(c, why);
            return;
        }
        case AMQP_CONNECTION_BLOCKED_METHOD: {
            /* Passed on too: a publisher must stop writing (rp_amqp_publisher.h). */
            const amqp_connection_blocked_t *m = f->payload.method.decoded;
            char reason[128];
            snprintf(reason, sizeof reason, "%.*s", m ? (int)m->reason.len : 0,
                     m ? (const char *)m->reason.bytes : "");
            RP_WARN("broker blocked publishing (resource alarm); publishes wait until it "
                    "unblocks",
                    "broker", c->peer, "reason", reason, NULL);
            break;
        }
        case AMQP_CONNECTION_UNBLOCKED_METHOD:
            RP_INFO("broker unblocked publishing", "broker", c->peer, NULL);
            break;
        default:
            break;
        }
    }
    if (c->hooks.on_frame) c->hooks.on_frame(c->hooks.arg, f);
}

/* Frames decoded live in the library's channel pools until they are
 * released, and a release (amqp_maybe_release_buffers) does nothing while
 * a frame is half read: with one socket read a drain, a drain of large
 * frames (a header table of 100 KiB) most often ends half-way through the
 * next one. So what was decoded is weighed across drains, and past this
 * many bytes the pools are released right after a frame is handed on
 * (the library is then between frames). Without it the pools of a burst
 * of 3,000 header-heavy dead letters held 45 MiB, kept for good (a
 * released pool keeps its pages): test_reaperd_tap_headers. */
#define RP_AMQP_RELEASE_BYTES (1u * 1024u * 1024u)

/* About what one decoded frame holds in the library's pool: a body its
 * fragment; a content header its properties twice (the frame as read and
 * the table decoded from it); a method a small fixed cost. */
static size_t rp_amqp_frame_weight(const amqp_frame_t *f) {
    enum { RP_FRAME_FIXED = 256 };
    switch (f->frame_type) {
    case AMQP_FRAME_BODY:
        return RP_FRAME_FIXED + f->payload.body_fragment.len;
    case AMQP_FRAME_HEADER:
        return RP_FRAME_FIXED + 2 * rp_amqp_props_footprint(f->payload.properties.decoded);
    default:
        return RP_FRAME_FIXED;
    }
}

/* Releases the library's pools when it is between frames; true if it did. */
static bool rp_amqp_release(rp_amqp_conn *c) {
    if (!amqp_release_buffers_ok(c->conn)) return false;
    amqp_maybe_release_buffers(c->conn);
    c->unreleased = 0;
    return true;
}

void rp_amqp_conn_drain(rp_amqp_conn *c) {
    if (c->state != RP_AMQP_UP || c->draining || c->conn == NULL) return;
    c->draining = true;
    for (bool first = true;; first = false) {
        /* One read of the socket a drain: the first wait reads what is
         * there (up to the library's 128 KiB buffer); later ones decode
         * what that read left in the buffer. Once the buffer is empty the
         * drain ends rather than read again: a read then would most often
         * find nothing (recvfrom EAGAIN, then a poll with no wait, two
         * system calls for each wake-up), and the socket, watched level-
         * triggered, wakes the loop again at once if more came meanwhile.
         * Over TLS, records the TLS library holds decrypted are not seen
         * by the socket's readiness: that drain reads until nothing is
         * left, as before. */
        if (!first && !c->info.ssl && !amqp_data_in_buffer(c->conn) &&
            !amqp_frames_enqueued(c->conn))
            break;
        amqp_frame_t frame;
        struct timeval zero = {0, 0};
        int st = amqp_simple_wait_frame_noblock(c->conn, &frame, &zero);
        if (st == AMQP_STATUS_TIMEOUT) break;
        if (st != AMQP_STATUS_OK) {
            if (!c->failed)
                snprintf(c->fail_why, sizeof c->fail_why, "connection lost: %s",
                         amqp_error_string2(st));
            c->failed = true;
            break;
        }
        c->unreleased += rp_amqp_frame_weight(&frame);
        rp_amqp_dispatch(c, &frame);
        if (c->failed) break;
        if (c->unreleased >= RP_AMQP_RELEASE_BYTES) (void)rp_amqp_release(c);
    }
    c->draining = false;
    if (c->failed) {
        char why[256];
        snprintf(why, sizeof why, "%s", c->fail_why);
        rp_amqp_lost(c, why);
        return;
    }
    (void)rp_amqp_release(c);
}

static void rp_amqp_on_io(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_conn_drain(arg);
}

static void rp_amqp_start_connect(rp_amqp_conn *c);

static void rp_amqp_on_retry(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_start_connect(arg);
}

/* c->peer names the host of the list that answered (host:port vhost V). */
static void rp_amqp_name_peer(rp_amqp_conn *c) {
    if (rp_hostlist_count(c->url) <= 1) return;
    char one[1024];
    if (!rp_hostlist_pick(c->url, c->host, one, sizeof one)) return;
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(one, &info) != AMQP_STATUS_OK) return;
    snprintf(c->peer, sizeof c->peer, "%s:%d vhost %s", info.host, info.port,
             c->vhost != NULL ? c->vhost : info.vhost);
}

static void rp_amqp_on_connected(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_conn *c = arg;
    pthread_join(c->thread, NULL);
    c->thread_running = false;
    event_del(c->slow_ev);
    if (c->result == NULL) {
        rp_amqp_name_peer(c); /* the host that failed after its login, if one did */
        rp_amqp_set_state(c, RP_AMQP_DOWN, c->result_err);
        rp_amqp_schedule_retry(c);
        return;
    }
    c->conn = c->result;
    c->unreleased = 0;
    c->result = NULL;
    c->read_ev = event_new(c->base, amqp_get_sockfd(c->conn), EV_READ | EV_PERSIST,
                           rp_amqp_on_io, c);
    /* Heartbeats are sent and checked only inside library calls: make one
     * at least every heartbeat/2 even when nothing arrives. */
    int period_ms = c->heartbeat > 0 ? c->heartbeat * 500 : 1000;
    struct timeval tv = {period_ms / 1000, (period_ms % 1000) * 1000};
    if (c->read_ev == NULL || event_add(c->read_ev, NULL) != 0 ||
        event_add(c->tick_ev, &tv) != 0) {
        rp_amqp_teardown(c, false);
        rp_amqp_set_state(c, RP_AMQP_DOWN, "cannot watch the broker socket");
        rp_amqp_schedule_retry(c);
        return;
    }
    c->backoff_ms = RP_AMQP_BACKOFF_MIN_MS;
    rp_amqp_name_peer(c);
    rp_amqp_set_state(c, RP_AMQP_UP, c->peer);
    /* Frames may already sit in the library's buffers from the set-up. */
    rp_amqp_conn_drain(c);
}

/* Every step of an attempt has a time-out (rp_amqp_open.h), but a set-up
 * of many steps can add up, and an attempt that never ends would leave the
 * daemon silent: the log says so while it runs. */
static void rp_amqp_on_slow(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_amqp_conn *c = arg;
    if (!c->thread_running) return;
    char secs[24];
    snprintf(secs, sizeof secs, "%lld",
             (long long)((rp_clock_mono_ms() - c->attempt_started_ms) / 1000));
    RP_WARN("broker connect attempt still running", "broker", c->peer, "seconds", secs, "step",
            atomic_load(&c->phase), NULL);
}

static void rp_amqp_start_connect(rp_amqp_conn *c) {
    if (c->thread_running) return;
    rp_amqp_set_state(c, RP_AMQP_CONNECTING, c->peer);
    c->result = NULL;
    atomic_store(&c->phase, "starting");
    c->attempt_started_ms = rp_clock_mono_ms();
    int rc = pthread_create(&c->thread, NULL, rp_amqp_connect_main, c);
    if (rc != 0) {
        rp_amqp_set_state(c, RP_AMQP_DOWN, strerror(rc));
        rp_amqp_schedule_retry(c);
        return;
    }
    c->thread_running = true;
    struct timeval tv = {c->slow_connect_ms / 1000, (c->slow_connect_ms % 1000) * 1000};
    event_add(c->slow_ev, &tv);
}

rp_status rp_amqp_conn_start(rp_amqp_conn *c) {
    c->retry_ev = evtimer_new(c->base, rp_amqp_on_retry, c);
    c->tick_ev = event_new(c->base, -1, EV_PERSIST, rp_amqp_on_io, c);
    c->done_ev = event_new(c->base, -1, 0, rp_amqp_on_connected, c);
    c->slow_ev = event_new(c->base, -1, EV_PERSIST, rp_amqp_on_slow, c);
    if (c->retry_ev == NULL || c->tick_ev == NULL || c->done_ev == NULL || c->slow_ev == NULL)
        return RP_ERR_NOMEM;
    rp_amqp_start_connect(c);
    return RP_OK;
}

void rp_amqp_conn_free(rp_amqp_conn *c) {
    if (c == NULL) return;
    if (c->thread_running) {
        pthread_join(c->thread, NULL);
        if (c->result) amqp_destroy_connection(c->result);
    }
    rp_amqp_teardown(c, c->state == RP_AMQP_UP);
    if (c->retry_ev) event_free(c->retry_ev);
    if (c->tick_ev) event_free(c->tick_ev);
    if (c->done_ev) event_free(c->done_ev);
    if (c->slow_ev) event_free(c->slow_ev);
    free(c->url);
    free(c->url_copy);
    if (c->password) {
        explicit_bzero(c->password, strlen(c->password));
        free(c->password);
    }
    free(c->connection_name);
    free(c->vhost);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

void rp_amqp_params_from_config(const rp_config *cfg, const char *password,
                                rp_amqp_params *out) {
    *out = (rp_amqp_params){
        .url = cfg->broker.url,
        .password = password,
        .ca_file = cfg->broker.tls.ca_file,
        .cert_file = cfg->broker.tls.cert_file,
        .key_file = cfg->broker.tls.key_file,
        .verify_peer = cfg->broker.tls.verify_peer,
    };
}
