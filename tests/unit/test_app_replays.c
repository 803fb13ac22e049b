/* The replays part (app/rp_replays.h) on a real event_base and store thread
 * (support/worker.h) with fake ports (core/rp_replay_port.h): a confirmed
 * publish settles the gate; a returned one releases the claim and is a
 * conflict; a lost one keeps the claim; the broker not connected releases
 * it; a second replay of a gate whose replay is in flight is refused with
 * conflict and touches nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rp_config.h"
#include "rp_replays.h"
#include "worker.h"

#define GATE 7

/* ---- the fake store (store thread; read by the test after the loop) ------ */

typedef struct fake_store {
    const rp_config *cfg;
    pthread_t loop;
    bool off_loop;           /* every call ran off the loop thread */
    int locks, claims, abandons, releases, settles;
    rp_gate_claim_state claim; /* this process's claim on GATE */
} fake_store;

static void off_loop(fake_store *s) {
    if (pthread_equal(pthread_self(), s->loop)) s->off_loop = false;
}

static rp_status fs_ready(void *self) {
    off_loop(self);
    return RP_OK;
}

static const rp_config *fs_config(void *self) { return ((fake_store *)self)->cfg; }

static rp_status fs_lock(void *self, int64_t gate, const char *by, rp_replay_row *out) {
    fake_store *s = self;
    off_loop(s);
    assert_int_equal(gate, GATE);
    assert_string_equal(by, "alice");
    s->locks++;
    memset(out, 0, sizeof *out);
    out->kind = RP_GATE_BUS_DEAD_LETTERED;
    out->claim = s->claim; /* a live claim would be BUSY */
    out->has_dead_letter = true;
    out->origin_queue = strdup("\"vibey.orders\"");
    out->vhost = strdup("/");
    out->body = (uint8_t *)strdup("hello");
    out->body_len = 5;
    out->headers_json = strdup("{}");
    out->properties_json = strdup("{}");
    return RP_OK;
}

static rp_status fs_claim(void *self, int64_t gate, rp_time_ms *at) {
    fake_store *s = self;
    off_loop(s);
    assert_int_equal(gate, GATE);
    s->claims++;
    s->claim = RP_GATE_CLAIM_LIVE;
    *at = 1000;
    return RP_OK;
}

static rp_status fs_abandon(void *self) {
    ((fake_store *)self)->abandons++;
    return RP_OK;
}

static rp_status fs_release(void *self, int64_t gate, bool *released) {
    fake_store *s = self;
    off_loop(s);
    assert_int_equal(gate, GATE);
    s->releases++;
    *released = s->claim == RP_GATE_CLAIM_LIVE;
    s->claim = RP_GATE_CLAIM_NONE;
    return RP_OK;
}

static rp_status fs_settle(void *self, int64_t gate, const char *by, const char *note,
                           rp_answer_result *out) {
    fake_store *s = self;
    off_loop(s);
    assert_int_equal(gate, GATE);
    assert_string_equal(by, "alice");
    assert_string_equal(note, "on-call");
    /* Fenced on the claim: nothing to settle without it. */
    assert_int_equal(s->claim, RP_GATE_CLAIM_LIVE);
    s->settles++;
    s->claim = RP_GATE_CLAIM_NONE;
    memset(out, 0, sizeof *out);
    out->outcome = RP_OUTCOME_REPLAYED;
    out->choice = RP_CHOICE_REPLAY;
    out->kind = RP_GATE_BUS_DEAD_LETTERED;
    return RP_OK;
}

/* ---- the fake broker (loop thread) ----------------------------------------- */

typedef struct fake_broker {
    struct event_base *base;
    rp_replay_publish outcome; /* what the broker does with a publish */
    bool hold;                 /* keep the publish pending until the test says */
    bool down;                 /* not connected: a publish is refused */
    int publishes;
    char queue[64];
    rp_replay_published_fn done;
    void *arg;
} fake_broker;

static rp_replay_msg *fb_msg_new(void *self) {
    RP_UNUSED(self);
    return malloc(1);
}

static void fb_msg_free(void *self, rp_replay_msg *m) {
    RP_UNUSED(self);
    free(m);
}

static rp_status fb_msg_restore(void *self, rp_replay_msg *m, const char *p, const char *h,
                                char *err, size_t n) {
    RP_UNUSED(self), RP_UNUSED(m), RP_UNUSED(p), RP_UNUSED(h), RP_UNUSED(err), RP_UNUSED(n);
    return RP_OK;
}

static void fb_msg_peek(void *self, const rp_replay_msg *m, rp_bytes *user_id,
                        rp_bytes *expiration) {
    RP_UNUSED(self), RP_UNUSED(m);
    *user_id = (rp_bytes){0};
    *expiration = (rp_bytes){0};
}

static void fb_msg_strip(void *self, rp_replay_msg *m, rp_replay_strip s) {
    RP_UNUSED(self), RP_UNUSED(m), RP_UNUSED(s);
}

static bool fb_kept_refusal(void *self, const char *p, char *why, size_t n) {
    RP_UNUSED(self), RP_UNUSED(p), RP_UNUSED(why), RP_UNUSED(n);
    return false;
}

static bool fb_vhost_is_ours(void *self, const char *vhost) {
    RP_UNUSED(self);
    return strcmp(vhost, "/") == 0;
}

static bool fb_own_user(void *self, char *buf, size_t n) {
    RP_UNUSED(self), RP_UNUSED(buf), RP_UNUSED(n);
    return false;
}

static const char *const outcome_names[] = {"confirmed", "returned", "refused",
                                            "nacked", "dropped", "lost"};

static void fb_settle(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd), RP_UNUSED(what);
    fake_broker *b = arg;
    b->done(b->arg, b->outcome, outcome_names[b->outcome], NULL);
}

static rp_status fb_publish(void *self, const rp_replay_msg *m, const char *vhost,
                            const char *queue, rp_bytes body, rp_replay_published_fn done,
                            void *arg) {
    RP_UNUSED(m);
    RP_UNUSED(vhost);
    fake_broker *b = self;
    if (b->down) return RP_ERR_UNAVAILABLE;
    b->publishes++;
    snprintf(b->queue, sizeof b->queue, "%s", queue);
    assert_int_equal(body.len, 5);
    assert_memory_equal(body.ptr, "hello", 5);
    b->done = done;
    b->arg = arg;
    if (b->hold) {
        event_base_loopbreak(b->base); /* back to the test, the publish pending */
        return RP_OK;
    }
    /* Later, never inside the call (rp_replay_port.h). */
    assert_int_equal(event_base_once(b->base, -1, EV_TIMEOUT, fb_settle, b, NULL), 0);
    return RP_OK;
}

/* ---- the fixture ---------------------------------------------------------- */

typedef struct fixture {
    struct event_base *base;
    rp_worker *worker;
    rp_config cfg;
    fake_store store;
    fake_broker broker;
    rp_replays *replays;
    int done_calls;
    rp_replay_result res;
    char message[600];
} fixture;

static rp_status fx_store_job(void *self, rp_work_fn fn, rp_done_fn done, void *job) {
    return rp_worker_submit(((fixture *)self)->worker, fn, done, job);
}

static void on_done(void *arg, const rp_replay_result *r) {
    fixture *f = arg;
    f->done_calls++;
    f->res = *r;
    snprintf(f->message, sizeof f->message, "%s", r->message ? r->message : "");
    f->res.message = f->message;
    if (r->st != RP_OK) print_message("replay: %s\n", f->message);
    event_base_loopbreak(f->base);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
    RP_UNUSED(fd), RP_UNUSED(what);
    event_base_loopbreak(arg);
}

/* Turns the loop until done() was called n times (or 10 s passed). */
static void run_until_done(fixture *f, int n) {
    struct event *t = evtimer_new(f->base, on_timeout, f->base);
    struct timeval tv = {10, 0};
    evtimer_add(t, &tv);
    while (f->done_calls < n) {
        struct timeval left;
        if (evtimer_pending(t, &left) == 0) break;
        event_base_dispatch(f->base);
    }
    event_free(t);
    assert_int_equal(f->done_calls, n);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    rp_config_problems p;
    rp_config_problems_init(&p);
    const char *pat = "^vibey\\.";
    rp_config_origin env = {RP_CONFIG_ENV, 0, 0};
    assert_int_equal(rp_config_set_scalar(&f->cfg, RP_CFG_REAP_OWNED_QUEUE_PATTERN, pat,
                                          strlen(pat), false, env, &p),
                     RP_OK);
    rp_status vst = rp_config_validate(&f->cfg, &p); /* compiles the pattern */
    rp_config_problems_cleanup(&p);
    assert_non_null(f->cfg.reap.owned_queue_pattern.code);
    RP_UNUSED(vst); /* the defaults lack a DSN: only the pattern matters here */
    f->base = event_base_new();
    assert_non_null(f->base);
    f->worker = rp_worker_new(f->base, "store", NULL, NULL, 1000);
    assert_non_null(f->worker);
    f->store = (fake_store){.cfg = &f->cfg, .loop = pthread_self(), .off_loop = true};
    f->broker = (fake_broker){.base = f->base, .outcome = RP_REPLAY_PUBLISH_CONFIRMED};
    rp_replays_deps deps = {
        .store = {.self = &f->store, .ready = fs_ready, .config = fs_config, .lock = fs_lock,
                  .claim = fs_claim, .abandon = fs_abandon, .release = fs_release,
                  .settle = fs_settle},
        .publish = {.self = &f->broker, .msg_new = fb_msg_new, .msg_free = fb_msg_free,
                    .msg_restore = fb_msg_restore, .msg_peek = fb_msg_peek,
                    .msg_strip = fb_msg_strip, .kept_refusal = fb_kept_refusal,
                    .vhost_is_ours = fb_vhost_is_ours, .own_user = fb_own_user,
                    .publish = fb_publish},
        .store_job = fx_store_job,
        .store_job_self = f,
    };
    f->replays = rp_replays_new(f->base, &deps);
    assert_non_null(f->replays);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_replays_stop(f->replays);
    rp_worker_free(f->worker);
    rp_replays_free(f->replays);
    event_base_free(f->base);
    rp_config_cleanup(&f->cfg);
    free(f);
    return 0;
}

static void start(fixture *f) {
    assert_int_equal(rp_replays_start(f->replays, GATE, "alice", "on-call", on_done, f), RP_OK);
    assert_true(rp_replays_busy(f->replays, GATE));
}

/* Confirmed: the gate is settled (fenced on the claim), the claim is gone
 * with the settle, nothing is released, and the reply says replayed. */
static void test_confirmed_settles(void **state) {
    fixture *f = *state;
    start(f);
    run_until_done(f, 1);
    assert_int_equal(f->res.st, RP_OK);
    assert_false(f->res.cancelled);
    assert_int_equal(f->res.answer.outcome, RP_OUTCOME_REPLAYED);
    assert_int_equal(f->broker.publishes, 1);
    assert_string_equal(f->broker.queue, "vibey.orders");
    assert_int_equal(f->store.claims, 1);
    assert_int_equal(f->store.settles, 1);
    assert_int_equal(f->store.releases, 0);
    assert_int_equal(f->store.claim, RP_GATE_CLAIM_NONE);
    assert_true(f->store.off_loop);
    assert_false(rp_replays_busy(f->replays, GATE));
}

/* Returned (no such queue): surely delivered nothing, so the claim is
 * released and the replay is a conflict; nothing is settled. */
static void test_returned_releases(void **state) {
    fixture *f = *state;
    f->broker.outcome = RP_REPLAY_PUBLISH_RETURNED;
    start(f);
    run_until_done(f, 1);
    assert_int_equal(f->res.st, RP_ERR_CONFLICT);
    assert_false(f->res.cancelled);
    assert_int_equal(f->store.claims, 1);
    assert_int_equal(f->store.releases, 1);
    assert_int_equal(f->store.settles, 0);
    assert_int_equal(f->store.claim, RP_GATE_CLAIM_NONE);
    assert_non_null(strstr(f->message, "vibey.orders"));
    assert_true(f->store.off_loop);
    assert_false(rp_replays_busy(f->replays, GATE));
}

/* Lost with the connection: it may have been delivered, so the claim stays
 * (it goes stale and the next answer reports it); nothing is settled. */
static void test_lost_keeps_claim(void **state) {
    fixture *f = *state;
    f->broker.outcome = RP_REPLAY_PUBLISH_LOST;
    start(f);
    run_until_done(f, 1);
    assert_int_equal(f->res.st, RP_ERR_UNAVAILABLE);
    assert_int_equal(f->store.claims, 1);
    assert_int_equal(f->store.releases, 0);
    assert_int_equal(f->store.settles, 0);
    assert_int_equal(f->store.claim, RP_GATE_CLAIM_LIVE);
    assert_false(rp_replays_busy(f->replays, GATE));
}

/* The broker not connected: nothing was sent, so the claim is released and
 * the replay is unavailable; nothing is settled. */
static void test_broker_down_releases(void **state) {
    fixture *f = *state;
    f->broker.down = true;
    start(f);
    run_until_done(f, 1);
    assert_int_equal(f->res.st, RP_ERR_UNAVAILABLE);
    assert_non_null(strstr(f->message, "the broker is not connected"));
    assert_int_equal(f->broker.publishes, 0);
    assert_int_equal(f->store.claims, 1);
    assert_int_equal(f->store.releases, 1);
    assert_int_equal(f->store.settles, 0);
    assert_int_equal(f->store.claim, RP_GATE_CLAIM_NONE);
    assert_false(rp_replays_busy(f->replays, GATE));
}

/* A second replay of the gate while the first is in flight: refused at once
 * with conflict, nothing read, claimed or published for it; the first ends
 * once, and afterwards the gate may be replayed again. */
static void test_second_replay_in_flight_conflicts(void **state) {
    fixture *f = *state;
    f->broker.hold = true;
    start(f);
    /* Turn the loop until the first replay's publish is pending. */
    struct event *t = evtimer_new(f->base, on_timeout, f->base);
    struct timeval tv = {10, 0};
    evtimer_add(t, &tv);
    event_base_dispatch(f->base);
    event_free(t);
    assert_int_equal(f->broker.publishes, 1);
    assert_int_equal(f->done_calls, 0);

    assert_true(rp_replays_busy(f->replays, GATE));
    assert_false(rp_replays_busy(f->replays, GATE + 1));
    assert_int_equal(rp_replays_start(f->replays, GATE, "alice", "on-call", on_done, f),
                     RP_ERR_CONFLICT);
    assert_int_equal(f->store.locks, 1);
    assert_int_equal(f->store.claims, 1);
    assert_int_equal(f->broker.publishes, 1);

    /* The broker confirms the first: settled, done once. */
    f->broker.hold = false;
    assert_int_equal(event_base_once(f->base, -1, EV_TIMEOUT, fb_settle, &f->broker, NULL), 0);
    run_until_done(f, 1);
    assert_int_equal(f->res.st, RP_OK);
    assert_int_equal(f->store.settles, 1);
    assert_false(rp_replays_busy(f->replays, GATE));
    /* Over: a new replay of the gate is taken. */
    start(f);
    run_until_done(f, 2);
    assert_int_equal(f->store.locks, 2);
}

/* Stopped: no new replay (RP_ERR_CLOSED), nothing read. */
static void test_stopped_refuses(void **state) {
    fixture *f = *state;
    rp_replays_stop(f->replays);
    assert_int_equal(rp_replays_start(f->replays, GATE, "alice", NULL, on_done, f),
                     RP_ERR_CLOSED);
    assert_false(rp_replays_busy(f->replays, GATE));
    assert_int_equal(f->store.locks, 0);
}

int main(void) {
    if (evthread_use_pthreads() != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_confirmed_settles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_returned_releases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_keeps_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_down_releases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_replay_in_flight_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stopped_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
