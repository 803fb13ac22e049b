/* One pass's events feed over a publish-only session (rp_amqp_pass_feed.h). */
#include "rp_amqp_pass_feed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rp_amqp_session.h"
#include "rp_log.h"

struct rp_amqp_pass_feed {
    rp_amqp_pass_feed_params p;
    rp_amqp_session *session;
    rp_amqp_feed *feed;
    struct event *flush_ev;
    bool started, flushing;
    /* What came of the feed (loop thread, but events: committing thread, atomic). */
    size_t events, seen, settled, confirmed, retried;
    int64_t first_failed_seq, last_failed_seq;
    bool failed_once;
    char why[256]; /* the first failure, without secrets */
};

static void rp_apf_why(rp_amqp_pass_feed *f, const char *why) {
    if (f->why[0] == '\0') snprintf(f->why, sizeof f->why, "%s", why);
}

static void rp_apf_flushed(rp_amqp_pass_feed *f) { f->p.on_flushed(f->p.flushed_arg); }

/* Loop: the pass is done and every event it gave the feed is settled. */
static void rp_apf_maybe_end(rp_amqp_pass_feed *f) {
    if (f->flushing && f->settled == __atomic_load_n(&f->events, __ATOMIC_ACQUIRE))
        rp_apf_flushed(f);
}

/* ---- the feed's hooks (loop thread) ---------------------------------------- */

static rp_status rp_apf_post(void *ctx, rp_amqp_feed_loop_fn fn, void *job) {
    rp_amqp_pass_feed *f = ctx;
    return f->p.post(f->p.post_ctx, fn, job);
}

static rp_amqp_publisher *rp_apf_publisher(void *ctx) {
    return rp_amqp_session_publisher(((rp_amqp_pass_feed *)ctx)->session);
}

/* An event reached the loop: the first one starts the session. One that
 * arrives while a failed connection is being made again is sent again. */
static void rp_apf_on_event(void *ctx) {
    rp_amqp_pass_feed *f = ctx;
    f->seen++;
    if (!f->started) {
        f->started = true;
        if (rp_amqp_session_start(f->session) != RP_OK)
            rp_apf_why(f, "cannot start the broker connection");
    } else if (f->failed_once && !rp_amqp_session_up(f->session)) {
        f->retried++;
    }
}

static void rp_apf_on_settled(void *ctx, int64_t seq, rp_publish_outcome outcome) {
    rp_amqp_pass_feed *f = ctx;
    f->settled++;
    if (outcome == RP_PUBLISH_CONFIRMED) {
        f->confirmed++;
    } else {
        if (outcome == RP_PUBLISH_NACKED) rp_apf_why(f, "the broker nacked an event");
        if (f->first_failed_seq == 0 || seq < f->first_failed_seq) f->first_failed_seq = seq;
        if (seq > f->last_failed_seq) f->last_failed_seq = seq;
    }
    rp_apf_maybe_end(f);
}

/* The session went down: what was not confirmed goes out again on the next
 * connection. During the flush, a connection attempt that fails ends it. */
static void rp_apf_on_down(void *arg, bool was_up, const char *why) {
    rp_amqp_pass_feed *f = arg;
    rp_apf_why(f, why);
    f->failed_once = true;
    if (was_up) f->retried += f->seen - f->settled;
    if (f->flushing && !was_up) rp_apf_flushed(f);
}

static void rp_apf_flush_timeout(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd);
    RP_UNUSED(what);
    rp_apf_flushed(arg);
}

/* Committing thread: the port the pass publishes through, counting what it
 * accepted. */
static rp_status rp_apf_publish(void *self, const rp_ledger_event *ev) {
    rp_amqp_pass_feed *f = self;
    rp_publisher_port inner;
    rp_amqp_feed_port(f->feed, &inner);
    rp_status st = inner.publish(inner.self, ev);
    if (st == RP_OK) __atomic_add_fetch(&f->events, 1, __ATOMIC_ACQ_REL);
    return st;
}

/* ---- life ---------------------------------------------------------------------- */

rp_amqp_pass_feed *rp_amqp_pass_feed_new(const rp_amqp_pass_feed_params *p, const char **err) {
    rp_amqp_pass_feed *f = calloc(1, sizeof *f);
    if (f == NULL) {
        *err = "out of memory";
        return NULL;
    }
    f->p = *p;
    const rp_config *cfg = p->cfg;
    rp_amqp_params ap;
    rp_amqp_params_from_config(cfg, p->password, &ap);
    ap.heartbeat_seconds = 10;
    ap.connect_timeout_ms = 5000;
    ap.connection_name = "reaperd --once";
    rp_amqp_session_params sp = {.amqp = &ap,
                                 .events_exchange = cfg->broker.events_exchange,
                                 .body_limit = 4096,
                                 .quiet = true};
    rp_amqp_session_hooks sh = {.on_down = rp_apf_on_down, .arg = f};
    f->session = rp_amqp_session_new(p->base, &sp, &sh, err);
    if (f->session == NULL) {
        free(f);
        return NULL;
    }
    rp_amqp_feed_hooks fh = {.post = rp_apf_post,
                             .publisher = rp_apf_publisher,
                             .on_loop = rp_apf_on_event,
                             .on_settled = rp_apf_on_settled,
                             .ctx = f};
    f->feed = rp_amqp_feed_from_config(cfg, p->metrics, &fh);
    if (f->feed == NULL) {
        *err = "out of memory";
        rp_amqp_pass_feed_close(f);
        free(f);
        return NULL;
    }
    /* NULL: the flush does not wait. */
    f->flush_ev = evtimer_new(p->base, rp_apf_flush_timeout, f);
    return f;
}

void rp_amqp_pass_feed_port(rp_amqp_pass_feed *f, rp_publisher_port *out) {
    *out = (rp_publisher_port){.self = f, .publish = rp_apf_publish};
}

void rp_amqp_pass_feed_flush(rp_amqp_pass_feed *f, long flush_ms) {
    f->flushing = true;
    if (!f->started) {
        rp_apf_flushed(f);
        return;
    }
    struct timeval tv = {flush_ms / 1000, (flush_ms % 1000) * 1000};
    if (f->flush_ev == NULL || evtimer_add(f->flush_ev, &tv) != 0) {
        rp_apf_flushed(f);
        return;
    }
    rp_apf_maybe_end(f);
}

void rp_amqp_pass_feed_close(rp_amqp_pass_feed *f) {
    if (f == NULL) return;
    rp_amqp_session_free(f->session);
    f->session = NULL;
    rp_amqp_feed_free(f->feed);
    f->feed = NULL;
    if (f->flush_ev) event_free(f->flush_ev);
    f->flush_ev = NULL;
}

rp_status rp_amqp_pass_feed_finish(rp_amqp_pass_feed *f, rp_report *report) {
    if (f == NULL || !f->started) return RP_OK;
    const rp_config *cfg = f->p.cfg;
    size_t events = __atomic_load_n(&f->events, __ATOMIC_ACQUIRE);
    size_t failed = events - f->confirmed;
    char n[24], ok[24], again[24];
    snprintf(n, sizeof n, "%zu", events);
    snprintf(ok, sizeof ok, "%zu", f->confirmed);
    snprintf(again, sizeof again, "%zu", f->retried);
    if (failed == 0) {
        if (f->retried > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    "first_failure", f->why, NULL);
        else if (events > 0)
            RP_INFO("ledger events published to the events exchange", "exchange",
                    cfg->broker.events_exchange, "events", n, "confirmed", ok, "retried", again,
                    NULL);
        return RP_OK;
    }
    rp_apf_why(f, "no confirm from the broker in time");
    char nfailed[24], range[64], note[640];
    snprintf(nfailed, sizeof nfailed, "%zu", failed);
    snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, f->first_failed_seq,
             f->last_failed_seq);
    RP_WARN("ledger events committed but not published to the events exchange (the ledger "
            "has them)",
            "exchange", cfg->broker.events_exchange, "events", n, "not_published", nfailed,
            "seq", range, "reason", f->why, NULL);
    snprintf(note, sizeof note,
             "events feed: %zu of %zu committed ledger events were not published to the events "
             "exchange %s (%s); the ledger has them (seq %s)",
             failed, events, cfg->broker.events_exchange, f->why, range);
    return rp_report_add_note(report, note);
}

void rp_amqp_pass_feed_free(rp_amqp_pass_feed *f) {
    if (f == NULL) return;
    rp_amqp_pass_feed_close(f);
    free(f);
}
