/* Issue 18 item 4's broker judge and the restart-loop breaker's decision
 * (rp_wedged_broker.h). */
#include "rp_wedged_broker.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"

int64_t rp_wedge_queue_quiet_ms(const rp_queue_rates *r, rp_time_ms now) {
    if (r == NULL || !r->ack_known) return INT64_MIN;
    return rp__sat_sub(now, r->acked_at);
}

bool rp_judge_wedge_queue_check(const rp_queue_facts *q, const rp_queue_rates *r,
                                const rp_thresholds *t, rp_time_ms now) {
    if (q == NULL || r == NULL || t == NULL) return false;
    if (!q->owned || q->is_dead_letter_queue || q->reapers_own || q->type == RP_QUEUE_TYPE_STREAM)
        return false;
    if (!q->counts_known || !q->consumers_known || q->ready <= 0 || q->consumers <= 0)
        return false;
    if (!r->ack_known) return false;
    int64_t quiet = rp_wedge_queue_quiet_ms(r, now);
    return quiet >= 0 && quiet >= rp__s_to_ms(t->wedged_seconds);
}

rp_status rp_judge_wedged_queue(const rp_queue_facts *q, const rp_queue_rates *r,
                                const rp_thresholds *t, rp_time_ms now, int64_t consecutive,
                                rp_verdict *out) {
    rp_verdict_init(out);
    if (q == NULL || r == NULL || t == NULL || q->vhost == NULL || q->name == NULL)
        return RP_ERR_INVALID;
    if (!rp_judge_wedge_queue_check(q, r, t, now) || !rp_judge_wedge_count(consecutive, t))
        return RP_OK;
    int64_t quiet = rp_wedge_queue_quiet_ms(r, now);
    rp__judged j = {
        .condition = RP_COND_WEDGED,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = rp__judge_seconds(quiet),
        .threshold = t->wedged_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &object);
    if (st != RP_OK) return st;
    st = rp_text_format(&detail,
                        "queue %s on vhost %s has %" PRId64 " ready messages and %" PRId64
                        " consumers but acked none for %.3f s, at or past %" PRId64
                        " s on %" PRId64 " consecutive checks: its consumers take no work; "
                        "surfaced%s",
                        q->name, q->vhost, q->ready, q->consumers, rp__judge_seconds(quiet),
                        t->wedged_seconds, consecutive,
                        t->wedge_restart ? " (reap.wedge_restart: their connections are closed "
                                           "so that their supervisors reconnect them)"
                                         : ", nothing moved (reap.wedge_restart is off)");
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, q->name, NULL, detail);
}

static const char *const rp_choice_names[RP_WEDGE_RESTART_COUNT_] = {"none", "restart", "loop"};

const char *rp_wedge_restart_choice_string(rp_wedge_restart_choice c) {
    if ((int)c < 0 || c >= RP_WEDGE_RESTART_COUNT_) return "unknown";
    return rp_choice_names[c];
}

bool rp_wedge_restart_in_window(rp_time_ms at, rp_time_ms now, int64_t window_seconds) {
    return rp__sat_sub(now, at) < rp__s_to_ms(window_seconds);
}

rp_wedge_restart_choice rp_wedge_restart_decide(const rp_wedge_restarts *h,
                                                const rp_thresholds *t, rp_time_ms now) {
    if (h == NULL || t == NULL || !t->wedge_restart || h->looped) return RP_WEDGE_RESTART_NONE;
    if (h->last_known && rp__sat_sub(now, h->last_at) < rp__s_to_ms(t->wedged_seconds))
        return RP_WEDGE_RESTART_NONE;
    if (h->in_window >= t->wedge_restart_max) return RP_WEDGE_RESTART_LOOP;
    return RP_WEDGE_RESTART_GO;
}

/* "a, b, c and 2 more" of the first connection names, cut to fit. */
static void rp_names_text(char *buf, size_t cap, const char *const *names, size_t n) {
    buf[0] = '\0';
    size_t shown = 0, len = 0;
    for (size_t i = 0; names != NULL && i < n && shown < 3; i++) {
        if (names[i] == NULL) continue;
        int w = snprintf(buf + len, cap - len, "%s\"%.120s\"", shown ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= cap - len) break;
        len += (size_t)w;
        shown++;
    }
    if (shown < n && len < cap) snprintf(buf + len, cap - len, " and %zu more", n - shown);
}

rp_status rp_judge_wedge_restart(const char *vhost, const char *name,
                                 rp_wedge_restart_choice c, const rp_wedge_restarts *h,
                                 const rp_thresholds *t, const char *const *connections,
                                 size_t n_connections, rp_verdict *out) {
    rp_verdict_init(out);
    if (vhost == NULL || name == NULL || h == NULL || t == NULL ||
        (c != RP_WEDGE_RESTART_GO && c != RP_WEDGE_RESTART_LOOP))
        return RP_ERR_INVALID;
    rp__judged j = {
        .condition = RP_COND_WEDGED,
        .action = c == RP_WEDGE_RESTART_GO ? RP_ACTION_RESTARTED : RP_ACTION_RESTART_LOOP,
        .source = RP_SOURCE_BROKER,
        .measured = (double)(c == RP_WEDGE_RESTART_GO ? rp__sat_add(h->in_window, 1)
                                                      : h->in_window),
        .threshold = t->wedge_restart_max,
        .unit = "restarts",
        .trusted = true,
    };
    char *object = NULL, *detail = NULL;
    rp_status st = rp_object_queue(vhost, name, &object);
    if (st != RP_OK) return st;
    if (c == RP_WEDGE_RESTART_GO) {
        char names[512];
        rp_names_text(names, sizeof names, connections, n_connections);
        st = rp_text_format(&detail,
                            "queue %s on vhost %s is wedged: closing the %zu connection(s) of "
                            "its consumers (%s) through the management API so that their "
                            "supervisors reconnect them; restart %" PRId64 " of at most %" PRId64
                            " in %" PRId64 " s",
                            name, vhost, n_connections, names, rp__sat_add(h->in_window, 1),
                            t->wedge_restart_max, t->wedge_restart_window_seconds);
    } else {
        st = rp_text_format(&detail,
                            "queue %s on vhost %s is wedged again after %" PRId64
                            " restarts in %" PRId64 " s (reap.wedge_restart_max %" PRId64
                            "): a restart loop; no more restarts until its WEDGED sighting "
                            "clears: look at what its consumers do with the message they hold",
                            name, vhost, h->in_window, t->wedge_restart_window_seconds,
                            t->wedge_restart_max);
    }
    if (st != RP_OK) {
        free(object);
        return st;
    }
    return rp__judge_fill(out, &j, object, name, NULL, detail);
}

void rp_wedge_restarts_from(const rp_time_ms *restarts, size_t n, bool looped, rp_time_ms now,
                            int64_t window_seconds, rp_wedge_restarts *out) {
    memset(out, 0, sizeof *out);
    out->looped = looped;
    for (size_t i = 0; restarts != NULL && i < n; i++) {
        if (rp_wedge_restart_in_window(restarts[i], now, window_seconds)) out->in_window++;
        if (!out->last_known || restarts[i] > out->last_at) out->last_at = restarts[i];
        out->last_known = true;
    }
}
