/* One pass request from start to end (rp_pass_sequence.h). */
#include "rp_pass_sequence.h"

#include <stdlib.h>

#include "report_text.h"
#include "rp_clock.h"
#include "rp_log.h"
#include "rp_pass_setup.h"
#include "rp_queue_listing.h"
#include "rp_sweep_turn.h"
#include "rp_sweep_vhost_turns.h"
#include "rp_sweep_vhosts.h"

void rp_pass_sequence_options(const rp_config *cfg, rp_pass_options *opt) {
    rp_pass_options_from_config(cfg, opt);
    opt->on_verdict = rp_verdict_log;
}

void rp_pass_sequence_run(const rp_pass_run_port *port, rp_pass_request *req) {
    void *self = port->self;
    const rp_config *cfg = port->config(self);
    int64_t t0 = rp_clock_mono_ms();
    rp_report_cleanup(&req->report);
    req->deadline_known = false;
    req->open_sightings = -1;
    char err[256] = "";
    if (port->connect(self, err, sizeof err) != RP_OK) {
        /* The pass cannot read the job table at all: say so in the report
         * the way a pass would, so every caller handles one shape. */
        req->started_at = rp_clock_wall_ms();
        req->status = rp_pass_report_unreachable(&req->report, req->dry_run, err);
        req->duration_ms = rp_clock_mono_ms() - t0;
        return;
    }
    const rp_ports *ports = port->ports(self);
    rp_backfill_read *backfill = port->backfill ? port->backfill(self) : NULL;
    rp_pass_options opt;
    rp_pass_sequence_options(cfg, &opt);
    opt.scope = req->scope;
    opt.dry_run = req->dry_run;
    opt.project = req->project;
    opt.progress = req->progress;
    opt.progress_arg = req->progress_arg;
    opt.should_stop = req->should_stop;
    opt.stop_arg = req->stop_arg;
    opt.stall_memory = port->stall_memory ? port->stall_memory(self) : NULL;
    req->started_at = ports->clock.now_ms(ports->clock.self);
    req->clock_offset_ms = rp_clock_wall_ms() - req->started_at;
    /* Policies (CONTRACT section 8): with every full pass over the broker,
     * reading the pass's own queue listing (issue 19 item 5: one listing
     * per sweep). Without memory for it the reconcile lists the broker. */
    bool reconcile = port->reconcile != NULL && req->scope == RP_PASS_FULL && req->project == NULL;
    rp_queue_listing *listing =
        reconcile ? rp_queue_listing_new(opt.owned_queue_pattern, 0) : NULL;
    opt.keep_listing = listing;
    /* Issue 19 item 1: the broker half over the watched vhosts (or those
     * the request names), one listing of GET /api/queues/VHOST pages. */
    rp_sweep_vhosts watched = {0};
    if (req->scope == RP_PASS_FULL && req->project == NULL && port->set_vhosts != NULL) {
        if (req->n_vhosts > 0) {
            opt.vhosts = req->vhosts;
            opt.n_vhosts = req->n_vhosts;
        } else if (rp_sweep_vhosts_watched(cfg, &watched) == RP_OK) {
            opt.vhosts = (const char *const *)watched.names;
            opt.n_vhosts = watched.n;
        }
        port->set_vhosts(self, opt.vhosts, opt.n_vhosts);
    }
    if (backfill) rp_backfill_read_pass_begin(backfill, req->dry_run);
    req->status = rp_pass_run(ports, &opt, &req->report);
    if (backfill) rp_backfill_read_pass_end(backfill);
    /* A dry run reads the policies and writes nothing. */
    if (req->status == RP_OK && reconcile) {
        if (port->reconcile(self, cfg, req->dry_run, listing, &req->report) == RP_ERR_NOMEM)
            req->status = RP_ERR_NOMEM;
    }
    if (opt.n_vhosts > 0) port->set_vhosts(self, NULL, 0);
    rp_sweep_vhosts_cleanup(&watched);
    rp_queue_listing_free(listing);
    req->duration_ms = rp_clock_mono_ms() - t0;
    /* Stopping (SIGTERM): what follows serves the next pass; skip it. */
    if (req->should_stop && req->should_stop(req->stop_arg)) return;
    rp_sighting_list open = {0};
    if (ports->store.list_open_sightings(ports->store.self, &open) == RP_OK) {
        req->open_sightings = (int64_t)open.n;
        rp_sightings_by_condition(&open, req->open_by_condition);
    }
    if (ports->store.next_lease_deadline &&
        ports->store.next_lease_deadline(ports->store.self, cfg->reap.lease_grace_seconds,
                                         &req->deadline_at, &req->deadline_known) != RP_OK)
        req->deadline_known = false;
}

/* ---- the sweeper's pass port (rp_pass_sequence.h) ---------------------------- */

/* Store thread: the pass, then the open sightings and gates into the
 * metrics. */
static void rp_sweep_passes_run(void *self, rp_sweep_run *run) {
    rp_sweep_passes *sp = self;
    rp_pass_request *req = calloc(1, sizeof *req);
    run->detail = req;
    if (req == NULL) return;
    /* The fleet's turn of each watched vhost (rp_sweep_vhost_turns.h): the
     * sweep lists those this replica holds; none: a lease reap. */
    rp_sweep_vhost_turns turns;
    rp_sweep_vhost_turns_take(&turns, &sp->run, run->scope, &sp->turns_held);
    sp->turn_held = sp->turns_held != 0;
    rp_pass_scope scope = rp_sweep_vhost_turns_scope(&turns, run->scope);
    if (scope != run->scope) run->scope_name = "lease reap (another replica sweeps)";
    rp_pass_request_init(req, scope, false);
    req->progress = run->progress;
    req->progress_arg = run->progress_arg;
    req->should_stop = run->should_stop;
    req->stop_arg = run->stop_arg;
    req->vhosts = turns.swept;
    req->n_vhosts = turns.n_swept;
    rp_pass_sequence_run(&sp->run, req);
    rp_sweep_vhost_turns_give_back(&turns, &sp->run, req->status == RP_OK, req->report.ok,
                                   &sp->turns_held);
    sp->turn_held = sp->turns_held != 0;
    rp_sweep_vhost_turns_cleanup(&turns);
    req->vhosts = NULL;
    req->n_vhosts = 0;
    rp_observe_pass_store(sp->observe, req->open_sightings >= 0 ? req->open_by_condition : NULL);
    run->clock_offset_ms = req->clock_offset_ms;
    run->deadline_known = req->deadline_known;
    run->deadline_at = req->deadline_at;
}

/* Loop thread: log the outcome and what follows a pass. */
static void rp_sweep_passes_finish(void *self, rp_sweep_run *run, bool cancelled) {
    rp_sweep_passes *sp = self;
    rp_pass_request *req = run->detail;
    if (!cancelled && req == NULL) RP_ERROR("out of memory: pass skipped", NULL);
    if (!cancelled && req != NULL) {
        if (req->status != RP_OK)
            RP_ERROR("pass stopped early", "scope", run->scope_name, "status",
                     rp_status_string(req->status), NULL);
        rp_report_log(&req->report, run->scope_name, req->duration_ms);
        rp_observe_pass_done(sp->observe, req->scope, req->status, req->report.ok,
                             req->duration_ms);
        if (!req->dry_run) rp_observe_pass_policies(sp->observe, &req->report);
        *sp->last_pass_at = rp_clock_wall_ms();
        if (req->open_sightings >= 0) *sp->open_sightings = req->open_sightings;
        /* After a sweep the tap's bindings are looked at again (the
         * daemon's after_sweep), on the tap's own binding thread like every
         * other reconcile, so two reconciles never overlap (one reading the
         * broker before the other's change could undo it). */
        if (req->scope == RP_PASS_FULL && !req->dry_run && req->project == NULL &&
            sp->after_sweep != NULL)
            sp->after_sweep(sp->arg);
    }
    if (req != NULL) rp_pass_request_cleanup(req);
    free(req);
    run->detail = NULL;
}

static bool rp_sweep_passes_store(void *self, bool check, char *detail, size_t cap) {
    rp_sweep_passes *sp = self;
    return sp->run.probe(sp->run.self, check, detail, cap);
}

void rp_sweep_passes_port(rp_sweep_passes *sp, rp_sweep_port *out) {
    *out = (rp_sweep_port){.self = sp,
                           .run = rp_sweep_passes_run,
                           .finish = rp_sweep_passes_finish,
                           .store = rp_sweep_passes_store};
}
