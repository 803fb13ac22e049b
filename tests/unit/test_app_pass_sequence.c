/* One pass request from start to end (app/rp_pass_sequence.c) over a
 * pass-run port filled with the memory adapter: a store that cannot be
 * reached is a report, not a pass; the policy reconcile follows only a full
 * pass over every project that went well (a dry run reads, with dry_run
 * set), and its out-of-memory is the pass's; the open sightings and the next
 * lease deadline are read after the pass, unless stopping. The sweeper's
 * pass port over it: the run's results back to the sweeper, what the status
 * reply shows kept on finish, the tap's bindings asked again after a full
 * sweep only, nothing kept when cancelled, the store probed through the
 * port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "report_text.h"
#include "rp_config.h"
#include "rp_memory.h"
#include "rp_pass_request.h"
#include "rp_pass_sequence.h"
#include "rp_proto.h"

#define NOW ((rp_time_ms)1700000000000)

typedef struct fixture {
    rp_config cfg;
    rp_memory *m;
    rp_ports ports;
    rp_status connect_st; /* what connect answers */
    int connects;
    int reconciles;
    bool reconcile_dry_run;
    rp_status reconcile_st;
    bool stop;
    int probes;
    int after_sweeps;
} fixture;

static const rp_config *f_config(void *self) { return &((fixture *)self)->cfg; }

static rp_status f_connect(void *self, char *err, size_t n) {
    fixture *f = self;
    f->connects++;
    if (f->connect_st != RP_OK) snprintf(err, n, "connection refused");
    return f->connect_st;
}

static const rp_ports *f_ports(void *self) { return &((fixture *)self)->ports; }

static rp_status f_reconcile(void *self, const rp_config *cfg, bool dry_run,
                             rp_queue_listing *listing, rp_report *report) {
    fixture *f = self;
    (void)report;
    (void)listing;
    assert_ptr_equal(cfg, &f->cfg);
    f->reconciles++;
    f->reconcile_dry_run = dry_run;
    return f->reconcile_st;
}

static bool f_probe(void *self, bool check, char *detail, size_t cap) {
    fixture *f = self;
    f->probes++;
    snprintf(detail, cap, "%s", check ? "checked" : "asked");
    return true;
}

static void f_after_sweep(void *arg) { ((fixture *)arg)->after_sweeps++; }

static bool f_should_stop(void *arg) { return ((fixture *)arg)->stop; }

static rp_pass_run_port f_port(fixture *f) {
    return (rp_pass_run_port){.self = f,
                              .config = f_config,
                              .connect = f_connect,
                              .probe = f_probe,
                              .ports = f_ports,
                              .reconcile = f_reconcile};
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(rp_config_init(&f->cfg), RP_OK);
    rp_config_problems problems;
    rp_config_problems_init(&problems);
    assert_int_equal(rp_config_validate(&f->cfg, &problems), RP_OK);
    rp_config_problems_cleanup(&problems);
    f->m = rp_memory_new();
    assert_non_null(f->m);
    rp_memory_set_now(f->m, NOW);
    rp_memory_ports(f->m, &f->ports);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    rp_memory_free(f->m);
    rp_config_cleanup(&f->cfg);
    free(f);
    return 0;
}

/* A job leased by a live worker: the next lease deadline after the pass. */
static void seed_leased(fixture *f, rp_time_ms expires) {
    rp_mem_job j = {.project = "p", .kind = "k", .state = RP_JOB_LEASED, .max_attempts = 3,
                    .lease_owner = "w1", .lease_known = true, .lease_expires_at = expires};
    int64_t id;
    assert_int_equal(rp_memory_add_job(f->m, &j, &id), RP_OK);
}

static void unreachable_store_is_a_report(void **state) {
    fixture *f = *state;
    f->connect_st = RP_ERR_UNAVAILABLE;
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(f->connects, 1);
    assert_false(req.report.ok);
    assert_int_equal(req.report.n_unreadable, 1);
    assert_string_equal(req.report.unreadable[0], "job_queue");
    assert_int_equal(f->reconciles, 0);
    assert_int_equal(req.open_sightings, -1);
    assert_false(req.deadline_known);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_LIST_SIGHTINGS), 0);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_NEXT_DEADLINE), 0);
    rp_pass_request_cleanup(&req);
}

static void full_pass_reconciles_and_reads_what_follows(void **state) {
    fixture *f = *state;
    assert_int_equal(rp_memory_add_sighting(f->m, "q:/:a", RP_COND_WEDGED), RP_OK);
    seed_leased(f, NOW + 60000);
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);
    assert_int_equal(f->reconciles, 1);
    assert_false(f->reconcile_dry_run);
    assert_int_equal(req.started_at, NOW);
    assert_true(req.open_sightings >= 1);
    assert_true(req.open_by_condition[RP_COND_WEDGED] >= 1);
    assert_true(req.deadline_known);
    assert_int_equal(req.deadline_at, NOW + 60000 + f->cfg.reap.lease_grace_seconds * 1000);
    rp_pass_request_cleanup(&req);

    /* A dry run reads the policies too, saying so. */
    rp_pass_request_init(&req, RP_PASS_FULL, true);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(f->reconciles, 2);
    assert_true(f->reconcile_dry_run);
    rp_pass_request_cleanup(&req);
}

static void narrowed_passes_do_not_reconcile(void **state) {
    fixture *f = *state;
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    req.project = strdup("p");
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);
    rp_pass_request_cleanup(&req);
    rp_pass_request_init(&req, RP_PASS_LEASES, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);
    assert_int_equal(req.open_sightings, 0); /* still read */
    rp_pass_request_cleanup(&req);
    assert_int_equal(f->reconciles, 0);
    /* No broker half: no reconcile at all. */
    port.reconcile = NULL;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);
    assert_int_equal(f->reconciles, 0);
    rp_pass_request_cleanup(&req);
}

static void reconcile_out_of_memory_is_the_pass_status(void **state) {
    fixture *f = *state;
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    f->reconcile_st = RP_ERR_UNAVAILABLE; /* a broker that did not answer: in the report */
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);
    rp_pass_request_cleanup(&req);
    f->reconcile_st = RP_ERR_NOMEM;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_ERR_NOMEM);
    rp_pass_request_cleanup(&req);
}

static void stopping_skips_what_serves_the_next_pass(void **state) {
    fixture *f = *state;
    seed_leased(f, NOW + 60000);
    f->stop = true;
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    req.should_stop = f_should_stop;
    req.stop_arg = f;
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.open_sightings, -1);
    assert_false(req.deadline_known);
    assert_int_equal(rp_memory_calls(f->m, RP_MEM_NEXT_DEADLINE), 0);
    rp_pass_request_cleanup(&req);
}

/* The gauges as the observe part asks (the store is down: no count). */
static bool g_store_up(void *self) {
    (void)self;
    return false;
}

static rp_time_ms g_now(void *self) {
    (void)self;
    return NOW;
}

static void sweep_port_runs_and_finishes(void **state) {
    fixture *f = *state;
    assert_int_equal(rp_memory_add_sighting(f->m, "q:/:a", RP_COND_WEDGED), RP_OK);
    seed_leased(f, NOW + 60000);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    rp_metrics metrics;
    rp_metrics_init(&metrics, "test", "test");
    bool no = false;
    rp_observe_deps od = {.metrics = &metrics,
                          .stopping = &no,
                          .broker_up = &no,
                          .store_up = &no,
                          .clock = {.now_ms = g_now},
                          .gauges = {.store_up = g_store_up}};
    rp_observe *observe = rp_observe_new(base, &od);
    assert_non_null(observe);
    rp_time_ms last_pass_at = 0;
    int64_t open_sightings = -7;
    rp_sweep_passes sp = {.run = f_port(f),
                          .observe = observe,
                          .last_pass_at = &last_pass_at,
                          .open_sightings = &open_sightings,
                          .after_sweep = f_after_sweep,
                          .arg = f};
    rp_sweep_port port;
    rp_sweep_passes_port(&sp, &port);

    /* A sweep: the deadline back to the sweeper, the figures kept, the
     * bindings asked again. */
    rp_sweep_run run = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &run);
    assert_non_null(run.detail);
    assert_true(run.deadline_known);
    assert_int_equal(run.deadline_at, NOW + 60000 + f->cfg.reap.lease_grace_seconds * 1000);
    port.finish(port.self, &run, false);
    assert_null(run.detail);
    assert_true(open_sightings >= 1);
    assert_true(last_pass_at > 0);
    assert_int_equal(f->after_sweeps, 1);
    assert_int_equal(f->reconciles, 1);

    /* A lease reap: kept, no bindings asked. */
    last_pass_at = 0;
    rp_sweep_run lease = {.scope = RP_PASS_LEASES, .scope_name = "lease reap"};
    port.run(port.self, &lease);
    port.finish(port.self, &lease, false);
    assert_true(last_pass_at > 0);
    assert_int_equal(f->after_sweeps, 1);

    /* Cancelled (the store thread ended first): nothing kept, freed. */
    last_pass_at = 0;
    open_sightings = -7;
    rp_sweep_run gone = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &gone);
    port.finish(port.self, &gone, true);
    assert_null(gone.detail);
    assert_int_equal(last_pass_at, 0);
    assert_int_equal(open_sightings, -7);
    assert_int_equal(f->after_sweeps, 1);

    /* The store is probed through the pass-run port. */
    char detail[32] = "";
    assert_true(port.store(port.self, true, detail, sizeof detail));
    assert_int_equal(f->probes, 1);
    assert_string_equal(detail, "checked");

    rp_observe_free(observe);
    event_base_free(base);
}

/* What a file holds, from its start (heap, NUL-terminated). */
/* ---- the fleet's sweep turn (core/rp_sweep_turn.h) ---------------------- */

static struct {
    bool got;          /* what take answers */
    int takes, gives;
    char vhost[64];    /* the last vhost asked */
} T;

static uint64_t passes_of(rp_metrics *m, rp_metrics_scope scope) {
    uint64_t n = 0;
    for (int r = 0; r < RP_METRICS_RESULT_COUNT_; r++) n += m->passes[scope][r];
    return n;
}

static rp_status t_take(void *self, const char *vhost, bool *got) {
    (void)self;
    T.takes++;
    snprintf(T.vhost, sizeof T.vhost, "%s", vhost);
    *got = T.got;
    return RP_OK;
}

static rp_status t_give(void *self, const char *vhost) {
    (void)self;
    T.gives++;
    snprintf(T.vhost, sizeof T.vhost, "%s", vhost);
    return RP_OK;
}

/* A sweep whose turn another replica holds runs as a lease reap: no policy
 * reconcile, no bindings asked (no management listing); with the turn it
 * sweeps; a sweep that stopped early gives the turn back, and so does a
 * holder's lease reap once reap.enabled is false. */
static void sweep_turn_decides_the_scope(void **state) {
    fixture *f = *state;
    memset(&T, 0, sizeof T);
    f->ports.store.take_sweep_turn = t_take;
    f->ports.store.give_sweep_turn = t_give;
    free(f->cfg.broker.url);
    f->cfg.broker.url = strdup("amqp://reaper@h1:5672,h2:5672/tenant%2fa");
    assert_non_null(f->cfg.broker.url);
    struct event_base *base = event_base_new();
    assert_non_null(base);
    rp_metrics metrics;
    rp_metrics_init(&metrics, "test", "test");
    bool no = false;
    rp_observe_deps od = {.metrics = &metrics,
                          .stopping = &no,
                          .broker_up = &no,
                          .store_up = &no,
                          .clock = {.now_ms = g_now},
                          .gauges = {.store_up = g_store_up}};
    rp_observe *observe = rp_observe_new(base, &od);
    assert_non_null(observe);
    rp_time_ms last_pass_at = 0;
    int64_t open_sightings = -7;
    rp_sweep_passes sp = {.run = f_port(f),
                          .observe = observe,
                          .last_pass_at = &last_pass_at,
                          .open_sightings = &open_sightings,
                          .after_sweep = f_after_sweep,
                          .arg = f};
    rp_sweep_port port;
    rp_sweep_passes_port(&sp, &port);

    /* Held elsewhere: a lease reap, said so. */
    T.got = false;
    rp_sweep_run run = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &run);
    assert_int_equal(T.takes, 1);
    assert_string_equal(T.vhost, "tenant/a");
    assert_string_equal(run.scope_name, "lease reap (another replica sweeps)");
    port.finish(port.self, &run, false);
    assert_int_equal(f->reconciles, 0);
    assert_int_equal(f->after_sweeps, 0);
    assert_false(sp.turn_held);
    assert_int_equal(passes_of(&metrics, RP_METRICS_SCOPE_FULL), 0);
    assert_int_equal(passes_of(&metrics, RP_METRICS_SCOPE_LEASES), 1);

    /* Taken: the sweep, kept. */
    T.got = true;
    rp_sweep_run mine = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &mine);
    assert_string_equal(mine.scope_name, "sweep");
    port.finish(port.self, &mine, false);
    assert_int_equal(f->reconciles, 1);
    assert_int_equal(f->after_sweeps, 1);
    assert_true(sp.turn_held);
    assert_int_equal(T.gives, 0);
    assert_int_equal(passes_of(&metrics, RP_METRICS_SCOPE_FULL), 1);

    /* A lease reap asks for no turn. */
    rp_sweep_run lease = {.scope = RP_PASS_LEASES, .scope_name = "lease reap"};
    port.run(port.self, &lease);
    port.finish(port.self, &lease, false);
    assert_int_equal(T.takes, 2);
    assert_int_equal(T.gives, 0);

    /* A sweep that stopped early gives the turn back. */
    f->reconcile_st = RP_ERR_NOMEM;
    rp_sweep_run early = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &early);
    port.finish(port.self, &early, false);
    assert_int_equal(T.gives, 1);
    assert_false(sp.turn_held);
    f->reconcile_st = RP_OK;

    /* Taken again, then reap.enabled false: the next lease reap gives it
     * back. */
    rp_sweep_run again = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &again);
    port.finish(port.self, &again, false);
    assert_true(sp.turn_held);
    f->cfg.reap.enabled = false;
    rp_sweep_run off = {.scope = RP_PASS_LEASES, .scope_name = "lease reap"};
    port.run(port.self, &off);
    port.finish(port.self, &off, false);
    assert_int_equal(T.gives, 2);
    assert_false(sp.turn_held);

    rp_observe_free(observe);
    event_base_free(base);
}

/* ---- the turn vhost by vhost (app/rp_sweep_vhost_turns.h) --------------- */

static struct {
    char held_by_other[64]; /* take answers false for this vhost */
    char taken[256];        /* the vhosts asked, "a|b|" */
    char given[256];
    char listed[256];       /* the vhosts set for the broker half */
    int sets;
} V;

static rp_status v_take(void *self, const char *vhost, bool *got) {
    (void)self;
    strncat(V.taken, vhost, sizeof V.taken - strlen(V.taken) - 2);
    strcat(V.taken, "|");
    *got = strcmp(vhost, V.held_by_other) != 0;
    return RP_OK;
}

static rp_status v_give(void *self, const char *vhost) {
    (void)self;
    strncat(V.given, vhost, sizeof V.given - strlen(V.given) - 2);
    strcat(V.given, "|");
    return RP_OK;
}

static void v_set_vhosts(void *self, const char *const *vhosts, size_t n) {
    (void)self;
    if (n == 0) return; /* set back after the pass */
    V.sets++;
    V.listed[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(V.listed, vhosts[i], sizeof V.listed - strlen(V.listed) - 2);
        strcat(V.listed, "|");
    }
}

/* broker.url's vhost url_vhost (escaped) and broker.vhosts = {extra}. */
static void watch(fixture *f, const char *url, const char *extra) {
    free(f->cfg.broker.url);
    f->cfg.broker.url = strdup(url);
    assert_non_null(f->cfg.broker.url);
    const char *items[] = {extra};
    size_t lens[] = {strlen(extra)};
    rp_config_problems p;
    rp_config_problems_init(&p);
    assert_int_equal(rp_config_set_list(&f->cfg, RP_CFG_BROKER_VHOSTS, items, lens, 1,
                                        (rp_config_origin){.source = RP_CONFIG_FILE}, &p),
                     RP_OK);
    rp_config_problems_cleanup(&p);
}

/* Two watched vhosts (the URL's "/" and "b"): each one's turn asked; the
 * sweep lists the vhosts whose turn it took, only those; with every turn
 * held elsewhere it is a lease reap listing nothing; a sweep that could
 * not read everything gives back each turn it took. */
static void sweep_turn_per_vhost(void **state) {
    fixture *f = *state;
    memset(&V, 0, sizeof V);
    f->ports.store.take_sweep_turn = v_take;
    f->ports.store.give_sweep_turn = v_give;
    watch(f, "amqp://reaper@h1:5672/%2f", "b");
    struct event_base *base = event_base_new();
    assert_non_null(base);
    rp_metrics metrics;
    rp_metrics_init(&metrics, "test", "test");
    bool no = false;
    rp_observe_deps od = {.metrics = &metrics,
                          .stopping = &no,
                          .broker_up = &no,
                          .store_up = &no,
                          .clock = {.now_ms = g_now},
                          .gauges = {.store_up = g_store_up}};
    rp_observe *observe = rp_observe_new(base, &od);
    assert_non_null(observe);
    rp_time_ms last_pass_at = 0;
    int64_t open_sightings = -7;
    rp_sweep_passes sp = {.run = f_port(f),
                          .observe = observe,
                          .last_pass_at = &last_pass_at,
                          .open_sightings = &open_sightings,
                          .arg = f};
    sp.run.set_vhosts = v_set_vhosts;
    rp_sweep_port port;
    rp_sweep_passes_port(&sp, &port);

    /* "/" held by another replica: this one sweeps b only. */
    snprintf(V.held_by_other, sizeof V.held_by_other, "/");
    rp_sweep_run run = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &run);
    assert_string_equal(V.taken, "/|b|");
    assert_string_equal(run.scope_name, "sweep");
    assert_string_equal(V.listed, "b|");
    port.finish(port.self, &run, false);
    assert_true(sp.turn_held);
    assert_int_equal(sp.turns_held, 2); /* bit 1: b */
    assert_int_equal(f->reconciles, 1);

    /* The only watched vhost held elsewhere: a lease reap, nothing listed. */
    watch(f, "amqp://reaper@h1:5672/b", "b");
    snprintf(V.held_by_other, sizeof V.held_by_other, "b");
    V.taken[0] = '\0';
    V.sets = 0;
    rp_sweep_run held = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &held);
    assert_string_equal(V.taken, "b|");
    assert_string_equal(held.scope_name, "lease reap (another replica sweeps)");
    assert_int_equal(V.sets, 0);
    port.finish(port.self, &held, false);
    assert_int_equal(f->reconciles, 1);

    /* Both taken, the sweep stops early: both given back. */
    watch(f, "amqp://reaper@h1:5672/%2f", "b");
    V.held_by_other[0] = '\0';
    f->reconcile_st = RP_ERR_NOMEM;
    rp_sweep_run early = {.scope = RP_PASS_FULL, .scope_name = "sweep"};
    port.run(port.self, &early);
    assert_string_equal(V.listed, "/|b|");
    port.finish(port.self, &early, false);
    assert_string_equal(V.given, "/|b|");
    assert_false(sp.turn_held);
    assert_int_equal(sp.turns_held, 0);
    f->reconcile_st = RP_OK;

    rp_observe_free(observe);
    event_base_free(base);
}

static char *slurp(FILE *f) {
    rewind(f);
    char *buf = calloc(1, 65536);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    return buf;
}

/* reaperd --once's output of a pass run here: the JSON object and a newline,
 * or the text rp_report_print writes. */
static void once_output_json_and_text(void **state) {
    fixture *f = *state;
    rp_pass_run_port port = f_port(f);
    rp_pass_request req;
    rp_pass_request_init(&req, RP_PASS_FULL, false);
    rp_pass_sequence_run(&port, &req);
    assert_int_equal(req.status, RP_OK);

    FILE *out = tmpfile();
    assert_non_null(out);
    assert_int_equal(rp_report_output(out, &req.report, true, req.started_at, req.duration_ms), 0);
    char *got = slurp(out);
    char *want = NULL;
    assert_int_equal(rp_proto_report_json_text(&req.report, false, &want), RP_OK);
    size_t n = strlen(want);
    assert_int_equal(strlen(got), n + 1);
    assert_memory_equal(got, want, n);
    assert_int_equal(got[n], '\n');
    free(got);
    free(want);
    fclose(out);

    out = tmpfile();
    FILE *ref = tmpfile();
    assert_non_null(out);
    assert_non_null(ref);
    assert_int_equal(rp_report_output(out, &req.report, false, req.started_at, req.duration_ms), 0);
    rp_report_print(ref, &req.report, req.started_at, req.duration_ms);
    fflush(ref);
    got = slurp(out);
    want = slurp(ref);
    assert_true(strlen(got) > 0);
    assert_string_equal(got, want);
    free(got);
    free(want);
    fclose(out);
    fclose(ref);
    rp_pass_request_cleanup(&req);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unreachable_store_is_a_report, setup, teardown),
        cmocka_unit_test_setup_teardown(full_pass_reconciles_and_reads_what_follows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(narrowed_passes_do_not_reconcile, setup, teardown),
        cmocka_unit_test_setup_teardown(reconcile_out_of_memory_is_the_pass_status, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(stopping_skips_what_serves_the_next_pass, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(sweep_port_runs_and_finishes, setup, teardown),
        cmocka_unit_test_setup_teardown(sweep_turn_decides_the_scope, setup, teardown),
        cmocka_unit_test_setup_teardown(sweep_turn_per_vhost, setup, teardown),
        cmocka_unit_test_setup_teardown(once_output_json_and_text, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
