/* What a pass run by reaperd starts from and ends with (rp_pass_setup.h). */
#include "rp_pass_setup.h"

#include <stdio.h>
#include <string.h>

void rp_pass_options_from_config(const rp_config *cfg, rp_pass_options *opt) {
    rp_pass_options_default(opt);
    opt->thresholds.lease_grace_seconds = cfg->reap.lease_grace_seconds;
    opt->thresholds.stale_ready_seconds = cfg->reap.stale_ready_seconds;
    opt->thresholds.dead_letter_min_depth = cfg->reap.dead_letter_min_depth;
    opt->thresholds.consumer_timeout_seconds = cfg->reap.consumer_timeout_seconds;
    opt->thresholds.delivery_limit = cfg->reap.delivery_limit;
    opt->thresholds.held_ceiling_seconds = cfg->reap.held_ceiling_seconds;
    opt->thresholds.held_evict_factor = cfg->reap.held_evict_factor;
    opt->thresholds.waiting_depth_threshold = cfg->reap.waiting_depth_threshold;
    opt->thresholds.queue_depth_threshold = cfg->reap.queue_depth_threshold;
    opt->thresholds.wedged_seconds = cfg->reap.wedged_seconds;
    opt->thresholds.wedged_checks = cfg->reap.wedged_checks;
    opt->thresholds.divergence_window_seconds = cfg->reap.divergence_window_seconds;
    opt->thresholds.divergence_ratio = cfg->reap.divergence_ratio;
    opt->thresholds.divergence_min_waiting = cfg->reap.divergence_min_waiting;
    opt->thresholds.wedge_restart = cfg->reap.wedge_restart;
    opt->thresholds.wedge_restart_max = cfg->reap.wedge_restart_max;
    opt->thresholds.wedge_restart_window_seconds = cfg->reap.wedge_restart_window_seconds;
    opt->owned_queue_pattern = cfg->reap.owned_queue_pattern.code;
    opt->dead_letter_queue_pattern = cfg->reap.dead_letter_queue_pattern.code;
    opt->own_queues[0] = cfg->broker.control_queue;
    opt->own_queues[1] = cfg->broker.tap_queue;
    opt->dead_letter_peek_limit = (size_t)cfg->reap.dead_letter_peek_limit;
    opt->lease_batch_size = (size_t)cfg->store.lease_batch_size;
}

rp_status rp_pass_report_unreachable(rp_report *r, bool dry_run, const char *why) {
    rp_report_init(r, dry_run);
    char note[400];
    snprintf(note, sizeof note, "job_queue: store unreachable: %s", why ? why : "");
    if (rp_report_add_unreadable(r, "job_queue") != RP_OK || rp_report_add_note(r, note) != RP_OK)
        return RP_ERR_NOMEM;
    return RP_OK;
}

void rp_sightings_by_condition(const rp_sighting_list *list, int64_t out[RP_COND_COUNT_]) {
    memset(out, 0, sizeof(int64_t) * RP_COND_COUNT_);
    for (size_t i = 0; i < list->n; i++)
        if ((int)list->rows[i].condition >= 0 && list->rows[i].condition < RP_COND_COUNT_)
            out[list->rows[i].condition]++;
}
