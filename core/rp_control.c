/* The control protocol's decisions (rp_control.h). */
#include "rp_control.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rp_replay.h"

uint64_t rp_control_identity(const rp_control_envelope *env) {
    rp_bytes idp[5] = {{NULL, 0}};
    if (env->message_id.ptr != NULL) {
        idp[0] = env->message_id;
    } else {
        if (env->reply_to[0])
            idp[1] = (rp_bytes){(const uint8_t *)env->reply_to, strlen(env->reply_to)};
        if (env->has_correlation_id)
            idp[2] = (rp_bytes){(const uint8_t *)env->correlation_id,
                                strlen(env->correlation_id)};
        if (env->has_user) idp[3] = (rp_bytes){(const uint8_t *)env->user, strlen(env->user)};
        idp[4] = (rp_bytes){env->body.ptr ? env->body.ptr : (const uint8_t *)"", env->body.len};
    }
    return rp_redelivery_key(idp, RP_ARRAY_LEN(idp));
}

bool rp_control_redelivered_too_often(rp_redelivery *t, uint64_t identity, bool redelivered,
                                      unsigned *count) {
    *count = 0;
    if (!redelivered) return false;
    *count = rp_redelivery_note(t, identity);
    return *count > RP_REDELIVERY_MAX;
}

const char *rp_control_admission_string(rp_control_admission a) {
    switch (a) {
    case RP_CONTROL_ADMIT: return "";
    case RP_CONTROL_REFUSE_NO_USER: return "control request refused: no user_id property";
    case RP_CONTROL_REFUSE_USER:
        return "control request refused: sender not allowed by control.allowed_users";
    case RP_CONTROL_REFUSE_REPLY_TO:
        return "control request refused: reply_to is neither direct reply-to nor matched by "
               "control.reply_queue_pattern";
    case RP_CONTROL_TOO_LARGE: return "control request refused: too large";
    case RP_CONTROL_ADMISSION_COUNT_: break;
    }
    return "unknown";
}

bool rp_control_admission_silent(rp_control_admission a) {
    return a == RP_CONTROL_REFUSE_NO_USER || a == RP_CONTROL_REFUSE_USER ||
           a == RP_CONTROL_REFUSE_REPLY_TO;
}

bool rp_control_user_allowed(const rp_control_rules *rules, const char *user) {
    /* A request without user_id is from nobody the broker vouched for. */
    if (user == NULL) return false;
    const rp_config_strlist *users = rules->allowed_users;
    if (users == NULL || users->n == 0)
        return rules->own_user != NULL && strcmp(rules->own_user, user) == 0;
    for (size_t i = 0; i < users->n; i++)
        if (strcmp(users->items[i], "*") == 0 || strcmp(users->items[i], user) == 0) return true;
    return false;
}

bool rp_control_reply_to_is_direct(const char *reply_to) {
    static const char direct[] = "amq.rabbitmq.reply-to";
    size_t n = strlen(direct);
    return strncmp(reply_to, direct, n) == 0 && (reply_to[n] == '\0' || reply_to[n] == '.');
}

bool rp_control_reply_to_allowed(const rp_config_pattern *pattern, const char *reply_to) {
    /* Direct reply-to or a queue the pattern names, nowhere else: reaperd
     * is not a relay into other queues. */
    if (rp_control_reply_to_is_direct(reply_to)) return true;
    return pattern != NULL && rp_config_pattern_match(pattern, reply_to, strlen(reply_to)) == 1;
}

rp_control_admission rp_control_admit(const rp_control_rules *rules,
                                      const rp_control_envelope *env, char *why, size_t n) {
    if (!rp_control_user_allowed(rules, env->has_user ? env->user : NULL))
        return env->has_user ? RP_CONTROL_REFUSE_USER : RP_CONTROL_REFUSE_NO_USER;
    if (env->reply_to[0] != '\0' &&
        !rp_control_reply_to_allowed(rules->reply_queue_pattern, env->reply_to))
        return RP_CONTROL_REFUSE_REPLY_TO;
    if (env->truncated) {
        snprintf(why, n, "the request body is %" PRIu64 " bytes; the limit is 65536",
                 env->body_size);
        return RP_CONTROL_TOO_LARGE;
    }
    return RP_CONTROL_ADMIT;
}

rp_control_sender *rp_control_sender_of(rp_control_senders *t, const char *user) {
    if (user == NULL) user = "";
    for (size_t i = 0; i < RP_CONTROL_SENDERS; i++)
        if (t->slot[i].used && strcmp(t->slot[i].user, user) == 0) return &t->slot[i];
    rp_control_sender *s = &t->slot[t->next++ % RP_CONTROL_SENDERS];
    memset(s, 0, sizeof *s);
    s->used = true;
    snprintf(s->user, sizeof s->user, "%s", user);
    return s;
}

bool rp_control_tell_once(rp_control_senders *t, const char *user, rp_control_admission a) {
    rp_control_sender *s = rp_control_sender_of(t, user);
    bool *told = a == RP_CONTROL_REFUSE_REPLY_TO ? &s->told_reply_to : &s->told_forbidden;
    if (*told) return false;
    *told = true;
    return true;
}

bool rp_control_reap_too_soon(rp_control_senders *t, const char *user, int64_t rate_seconds,
                              int64_t now_ms, char *why, size_t n) {
    rp_control_sender *s = rp_control_sender_of(t, user);
    int64_t gap = rate_seconds * 1000;
    if (gap > 0 && s->reaped && now_ms - s->last_reap_ms < gap) {
        snprintf(why, n,
                 "one reap per %" PRId64 " s per user (control.reap_rate_seconds); ask again "
                 "in %" PRId64 " s",
                 rate_seconds, (gap - (now_ms - s->last_reap_ms) + 999) / 1000);
        return true;
    }
    s->reaped = true;
    s->last_reap_ms = now_ms;
    return false;
}

rp_control_answer_route rp_control_route_answer(rp_choice choice, bool replay_in_flight) {
    if (choice == RP_CHOICE_REPLAY) return RP_CONTROL_ANSWER_REPLAY;
    return replay_in_flight ? RP_CONTROL_ANSWER_IN_FLIGHT : RP_CONTROL_ANSWER_STORE;
}

const char *rp_control_answer_refusal(rp_status st) {
    switch (st) {
    case RP_ERR_NOT_FOUND: return "no such gate";
    case RP_ERR_CONFLICT: return "this gate does not take that choice";
    case RP_ERR_UNAVAILABLE: return "the store is unreachable";
    default: return "answering the gate failed";
    }
}

const char *rp_control_gates_refusal(rp_status st) {
    return st == RP_ERR_UNAVAILABLE ? "the store is unreachable" : "listing gates failed";
}

void rp_control_busy_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                          rp_time_ms claimed_at) {
    static const char tail[] = "; ask again for its outcome later";
    if (n <= 64) {
        if (n) buf[0] = '\0';
        return;
    }
    rp_replay_claim_text(buf, n - 64, gate, claimed_by, claimed_at);
    strcat(buf, tail);
}

void rp_control_in_flight_text(char *buf, size_t n, int64_t gate, const char *claimer) {
    static const char tail[] = " (this reaperd); ask again for its outcome later";
    if (n <= 64) {
        if (n) buf[0] = '\0';
        return;
    }
    rp_replay_claim_text(buf, n - 64, gate, claimer, 0);
    /* No claim time is known on the loop: say "now" rather than a time. */
    char *since = strstr(buf, " since ");
    if (since) *since = '\0';
    strcat(buf, tail);
}

void rp_control_encode_failure(rp_status est, rp_status *code, const char **message) {
    bool large = est == RP_ERR_TOO_LARGE;
    *code = large ? RP_ERR_INTERNAL : est;
    *message = large ? "the reply is too large to send; use reaperd --once"
                     : "the reply could not be encoded";
}
