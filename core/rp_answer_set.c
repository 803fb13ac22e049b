/* Answer sets: states, pace and the verdict on one answer (rp_answer_set.h). */
#include "rp_answer_set.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const rp_state_names[RP_ANSWER_SET_STATE_COUNT_] = {
    [RP_ANSWER_SET_RUNNING] = "running",
    [RP_ANSWER_SET_DONE] = "done",
    [RP_ANSWER_SET_CANCELLED] = "cancelled",
    [RP_ANSWER_SET_STOPPED] = "stopped",
};

const char *rp_answer_set_state_string(rp_answer_set_state s) {
    if ((int)s < 0 || s >= RP_ANSWER_SET_STATE_COUNT_) return "unknown";
    return rp_state_names[s];
}

bool rp_answer_set_state_parse(const char *s, rp_answer_set_state *out) {
    if (s == NULL) return false;
    for (int i = 0; i < RP_ANSWER_SET_STATE_COUNT_; i++)
        if (strcmp(s, rp_state_names[i]) == 0) {
            *out = (rp_answer_set_state)i;
            return true;
        }
    return false;
}

bool rp_answer_set_state_final(rp_answer_set_state s) { return s != RP_ANSWER_SET_RUNNING; }

bool rp_answer_set_choice_ok(rp_choice c) {
    return c == RP_CHOICE_REPLAY || c == RP_CHOICE_DISMISS;
}

void rp_answer_pace_init(rp_answer_pace *p, int rate) {
    if (rate < 1) rate = 1;
    if (rate > RP_ANSWER_SET_RATE_MAX) rate = RP_ANSWER_SET_RATE_MAX;
    p->interval_us = 1000000 / rate;
    p->next_us = 0;
}

int64_t rp_answer_pace_wait_ms(const rp_answer_pace *p, int64_t now_ms) {
    int64_t now_us = now_ms * 1000;
    if (p->next_us <= now_us) return 0;
    /* Rounded up: an answer never starts before its time. */
    return (p->next_us - now_us + 999) / 1000;
}

void rp_answer_pace_took(rp_answer_pace *p, int64_t now_ms) {
    int64_t now_us = now_ms * 1000;
    /* On time (or late by at most the catch-up window): the next one
     * follows the schedule, so that the mean rate holds across the timer's
     * own lateness. Later than that: a pause; start again from now. */
    int64_t window_us = (int64_t)RP_ANSWER_PACE_CATCHUP_MS * 1000;
    if (window_us < p->interval_us) window_us = p->interval_us;
    if (p->next_us == 0 || now_us - p->next_us > window_us)
        p->next_us = now_us + p->interval_us;
    else
        p->next_us += p->interval_us;
}

static const char *const rp_verdict_names[RP_ANSWER_ITEM_VERDICT_COUNT_] = {
    [RP_ANSWER_ITEM_ANSWERED] = "answered",
    [RP_ANSWER_ITEM_FAILED] = "failed",
    [RP_ANSWER_ITEM_LATER] = "later",
    [RP_ANSWER_ITEM_STOP] = "stop",
    [RP_ANSWER_ITEM_PAUSE] = "pause",
};

const char *rp_answer_item_verdict_string(rp_answer_item_verdict v) {
    if ((int)v < 0 || v >= RP_ANSWER_ITEM_VERDICT_COUNT_) return "unknown";
    return rp_verdict_names[v];
}

rp_answer_item_verdict rp_answer_item_judge(rp_status st) {
    switch (st) {
    case RP_OK: return RP_ANSWER_ITEM_ANSWERED;
    case RP_ERR_BUSY: return RP_ANSWER_ITEM_LATER;
    case RP_ERR_NOT_FOUND:
    case RP_ERR_CONFLICT:
    case RP_ERR_INVALID:
    case RP_ERR_BAD_REQUEST: return RP_ANSWER_ITEM_FAILED;
    default: return RP_ANSWER_ITEM_STOP;
    }
}

rp_answer_item_verdict rp_answer_item_judge_away(rp_status st, bool broker_away) {
    if (broker_away && st == RP_ERR_UNAVAILABLE) return RP_ANSWER_ITEM_PAUSE;
    return rp_answer_item_judge(st);
}

void rp_answer_set_stop_text(char *buf, size_t n, int64_t gate, rp_status st,
                             const char *message) {
    if (n == 0) return;
    snprintf(buf, n, "gate %" PRId64 ": %s", gate,
             message != NULL && message[0] != '\0' ? message : rp_status_string(st));
}
