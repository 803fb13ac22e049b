/* Answering a gate with replay (replay.h). */
#include "replay.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_internal.h"
#include "rp_amqp_restore.h"
#include "rp_log.h"
#include "rp_pg_replay.h"
#include "rp_replay.h"

typedef struct rp_replay_job {
    rp_daemon *d;
    int64_t gate;
    char *by;
    char *by_note;             /* the request's `by`, kept as the ledger's note */
    rp_replay_done_fn done;
    void *arg;
    /* Filled on the store thread. */
    rp_replay_result res;
    char message[600];
    char note[600];            /* what was left out of the publish, and why */
    bool settled_early;        /* answered already: nothing to send */
    bool claimed;              /* this process's claim is on the gate */
    char *queue;               /* the destination */
    uint8_t *body;
    size_t body_len;
    amqp_pool_t pool;          /* the restored properties */
    amqp_basic_properties_t props;
} rp_replay_job;

/* ---- the in-flight set (loop thread) -------------------------------------- */

static bool rp_inflight_has(const rp_daemon *d, int64_t gate) {
    for (size_t i = 0; i < d->n_replaying; i++)
        if (d->replaying[i] == gate) return true;
    return false;
}

static bool rp_inflight_add(rp_daemon *d, int64_t gate) {
    if (d->n_replaying == d->cap_replaying) {
        size_t cap = d->cap_replaying ? d->cap_replaying * 2 : 8;
        int64_t *g = realloc(d->replaying, cap * sizeof *g);
        if (g == NULL) return false;
        d->replaying = g;
        d->cap_replaying = cap;
    }
    d->replaying[d->n_replaying++] = gate;
    return true;
}

static void rp_inflight_remove(rp_daemon *d, int64_t gate) {
    for (size_t i = 0; i < d->n_replaying; i++)
        if (d->replaying[i] == gate) {
            d->replaying[i] = d->replaying[--d->n_replaying];
            return;
        }
}

bool rp_replay_busy(const rp_daemon *d, int64_t gate) { return rp_inflight_has(d, gate); }

void rp_replay_cleanup(rp_daemon *d) {
    free(d->replaying);
    d->replaying = NULL;
    d->n_replaying = d->cap_replaying = 0;
}

/* ---- the end ------------------------------------------------------------- */

static void rp_job_free(rp_replay_job *j) {
    empty_amqp_pool(&j->pool);
    free(j->by);
    free(j->by_note);
    free(j->queue);
    free(j->body);
    free(j);
}

static void rp_finish(rp_replay_job *j) {
    rp_inflight_remove(j->d, j->gate);
    if (j->res.message == NULL && j->message[0]) j->res.message = j->message;
    if (j->res.st == RP_OK && j->note[0]) j->res.note = j->note;
    j->done(j->arg, &j->res);
    rp_job_free(j);
}

static void rp_fail(rp_replay_job *j, rp_status st, const char *fmt, ...) RP_PRINTF(3, 4);
static void rp_fail(rp_replay_job *j, rp_status st, const char *fmt, ...) {
    j->res.st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->message, sizeof j->message, fmt, ap);
    va_end(ap);
    j->res.message = j->message;
}

/* ---- 1. store thread: read and decide ------------------------------------ */

/* The vhost of broker.url ("/" when the URL names none). */
static bool rp_same_vhost(const char *url, const char *vhost) {
    char *copy = strdup(url);
    if (copy == NULL) return false;
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    bool same = amqp_parse_url(copy, &info) == AMQP_STATUS_OK && info.vhost &&
                strcmp(info.vhost, vhost) == 0;
    free(copy);
    return same;
}

/* The user reaperd logs in as (broker.url's user; "guest" when it names
 * none, as rabbitmq-c does). False when the URL does not parse. */
static bool rp_own_user(const char *url, char *out, size_t n) {
    char *copy = strdup(url);
    if (copy == NULL) return false;
    struct amqp_connection_info info;
    amqp_default_connection_info(&info);
    bool ok = amqp_parse_url(copy, &info) == AMQP_STATUS_OK && info.user != NULL;
    if (ok) snprintf(out, n, "%s", info.user);
    free(copy);
    return ok;
}

/* Appends one sentence to the job's note. */
static void rp_note(rp_replay_job *j, const char *fmt, ...) RP_PRINTF(2, 3);
static void rp_note(rp_replay_job *j, const char *fmt, ...) {
    size_t used = strlen(j->note);
    if (used > 0 && used + 1 < sizeof j->note) j->note[used++] = ' ', j->note[used] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->note + used, sizeof j->note - used, fmt, ap);
    va_end(ap);
}

/* Takes out of the restored properties what the broker would refuse with a
 * channel error, saying so in the note (the stored record keeps them):
 * a user_id other than reaperd's own user (the broker checks it against
 * the connection's user: 406), and an expiration that is not a
 * non-negative integer string (406). */
static void rp_replay_sanitize(rp_replay_job *j, const char *url) {
    amqp_basic_properties_t *p = &j->props;
    if (p->_flags & AMQP_BASIC_USER_ID_FLAG) {
        char own[256] = "";
        bool have_own = rp_own_user(url, own, sizeof own);
        if (!have_own || p->user_id.len != strlen(own) ||
            memcmp(p->user_id.bytes, own, p->user_id.len) != 0) {
            p->_flags &= ~(amqp_flags_t)AMQP_BASIC_USER_ID_FLAG;
            rp_note(j, "user_id \"%.*s\" was left out of the replay: the broker accepts only "
                       "reaperd's own user (%s) there; the stored dead letter keeps it.",
                    (int)(p->user_id.len > 200 ? 200 : p->user_id.len),
                    (const char *)p->user_id.bytes, have_own ? own : "unknown");
        }
    }
    if ((p->_flags & AMQP_BASIC_EXPIRATION_FLAG) &&
        !rp_replay_expiration_valid(p->expiration.bytes, p->expiration.len)) {
        p->_flags &= ~(amqp_flags_t)AMQP_BASIC_EXPIRATION_FLAG;
        rp_note(j, "expiration \"%.*s\" was left out of the replay: the broker takes only a "
                   "non-negative integer of milliseconds; the stored dead letter keeps it.",
                (int)(p->expiration.len > 100 ? 100 : p->expiration.len),
                (const char *)p->expiration.bytes);
    }
}

void rp_replay_claim_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                          rp_time_ms claimed_at) {
    char at[40] = "an unknown time";
    time_t t = (time_t)(claimed_at / 1000);
    struct tm tm;
    if (claimed_at > 0 && gmtime_r(&t, &tm) != NULL)
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(buf, n, "gate %" PRId64 " is being replayed by %s since %s", gate,
             claimed_by && *claimed_by ? claimed_by : "another reaperd", at);
}

void rp_replay_takeover_text(char *buf, size_t n, int64_t gate, const char *claimed_by,
                             rp_time_ms claimed_at) {
    char claim[300];
    rp_replay_claim_text(claim, sizeof claim, gate, claimed_by, claimed_at);
    /* "gate N is being replayed by X since T" -> reworded as the past. */
    const char *by = strstr(claim, " by ");
    snprintf(buf, n,
             "the replay of gate %" PRId64 " claimed%s was never settled (that reaperd stopped "
             "or hung between publishing and settling): the message may have been published "
             "once already; the stale claim was taken over and recorded on the ledger "
             "(GateClaimTakenOver)",
             gate, by ? by : "");
}

/* Store thread: the rest of the decision, with the gate locked and open. */
static void rp_prepare_decide(rp_daemon *d, rp_replay_job *j, rp_pg_replay_row *row) {
    rp_status st;
    char kept_why[256];
    if (!rp_gate_accepts(row->kind, RP_CHOICE_REPLAY)) {
        rp_fail(j, RP_ERR_CONFLICT, "this gate does not take that choice");
    } else if (!row->has_dead_letter) {
        rp_fail(j, RP_ERR_CONFLICT, "no dead letter is stored for this gate");
    } else if (rp_amqp_restore_refusal(row->properties_json, kept_why, sizeof kept_why)) {
        /* Kept without its headers (the tap's header cap): its stored
         * properties say why. */
        rp_fail(j, RP_ERR_CONFLICT, "not replayed: %s", kept_why);
    } else {
        const char *why = NULL;
        st = rp_replay_decide(row->origin_queue, row->body_truncated || row->headers_json == NULL,
                              d->runner.cfg->reap.owned_queue_pattern.code, &j->queue, &why);
        if (st == RP_ERR_NOMEM) {
            rp_fail(j, RP_ERR_INTERNAL, "out of memory");
        } else if (st != RP_OK) {
            rp_fail(j, RP_ERR_CONFLICT, "not replayed: %s (origin queue %s)", why,
                    row->origin_queue);
        } else if (rp_replay_reserved_queue(
                       j->queue,
                       (const char *const[]){d->runner.cfg->broker.control_queue,
                                             d->runner.cfg->broker.tap_queue},
                       2)) {
            rp_fail(j, RP_ERR_CONFLICT,
                    "not replayed: the origin queue %s is one of reaper's own queues (control, "
                    "tap or events), never a replay destination whatever owned_queue_pattern "
                    "says", row->origin_queue);
        } else if (row->vhost != NULL && !rp_same_vhost(d->runner.cfg->broker.url, row->vhost)) {
            rp_fail(j, RP_ERR_CONFLICT,
                    "not replayed: the dead letter was found on vhost %s, and reaperd publishes "
                    "only on the vhost of broker.url", row->vhost);
        } else {
            char perr[200];
            st = rp_amqp_restore_props(&j->pool, row->properties_json, row->headers_json,
                                       &j->props, perr, sizeof perr);
            if (st != RP_OK) {
                rp_fail(j, st == RP_ERR_NOMEM ? RP_ERR_INTERNAL : RP_ERR_CONFLICT,
                        "not replayed: the stored properties cannot be restored: %s", perr);
            } else {
                rp_replay_sanitize(j, d->runner.cfg->broker.url);
                j->body = row->body;
                j->body_len = row->body_len;
                row->body = NULL;
                j->res.st = RP_OK;
            }
        }
    }
}

static void rp_prepare_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_replay_job *j = arg;
    char err[256];
    if (rp_pg_conn_ensure(d->runner.conn, err, sizeof err) != RP_OK) {
        rp_fail(j, RP_ERR_UNAVAILABLE, "the store is unreachable");
        return;
    }
    rp_pg_store_set_claim_seconds(d->runner.store, d->runner.cfg->control.replay_claim_seconds);
    /* 1. Lock the gate and read it and its claim (rp_pg_replay.h). */
    rp_pg_replay_row row;
    rp_status st = rp_pg_replay_lock(d->runner.store, j->gate, j->by, &row);
    if (st == RP_ERR_NOT_FOUND) {
        rp_fail(j, st, "no such gate");
        return;
    }
    if (st != RP_OK) {
        rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                "reading the gate failed");
        return;
    }
    if (row.answered) {
        j->settled_early = true;
        j->res.st = RP_OK;
        j->res.answer.outcome = RP_OUTCOME_ALREADY_ANSWERED;
        j->res.answer.choice = row.answer;
        j->res.answer.kind = row.kind;
    } else if (row.claim == RP_GATE_CLAIM_LIVE) {
        char claim[300];
        rp_replay_claim_text(claim, sizeof claim, j->gate, row.claimed_by, row.claimed_at);
        rp_fail(j, RP_ERR_BUSY, "%s; ask again for its outcome later", claim);
        j->res.answer.claim = RP_GATE_CLAIM_LIVE;
    } else if (row.claim == RP_GATE_CLAIM_STALE) {
        /* Taken over and committed by rp_pg_replay_lock; not published
         * again: whether the claimer published cannot be known here. */
        char text[500], gate[24], at[24];
        rp_replay_takeover_text(text, sizeof text, j->gate, row.claimed_by, row.claimed_at);
        snprintf(gate, sizeof gate, "%" PRId64, j->gate);
        snprintf(at, sizeof at, "%" PRId64, (int64_t)row.claimed_at);
        RP_WARN("a stale replay claim on a gate was taken over: its message may have been "
                "published once already, so it was not published again", "gate", gate,
                "claimed_by", row.claimed_by, "claimed_at_ms", at, "choice", "replay", NULL);
        rp_fail(j, RP_ERR_CONFLICT,
                "not replayed: %s. The claim is released and the gate stays open: look for the "
                "message on its origin queue, then answer again (replay publishes it, dismiss "
                "closes the gate)", text);
        j->res.answer.claim = RP_GATE_CLAIM_STALE;
        snprintf(j->res.answer.claimed_by, sizeof j->res.answer.claimed_by, "%s", row.claimed_by);
        j->res.answer.claimed_at = row.claimed_at;
    } else {
        rp_prepare_decide(d, j, &row);
        /* 2. Claim it (the gate is "replaying" from the commit on), or
         * leave it as it was. */
        if (j->res.st == RP_OK) {
            rp_time_ms at = 0;
            st = rp_pg_replay_claim_commit(d->runner.store, j->gate, &at);
            if (st == RP_OK) {
                j->claimed = true;
            } else {
                rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                        "claiming the gate for the replay failed; nothing was sent");
            }
        } else if (rp_pg_replay_claim_abandon(d->runner.store) != RP_OK) {
            /* The session was closed: the lock went with it. */
        }
    }
    rp_pg_replay_row_cleanup(&row);
}

/* ---- store thread: release a claim after a publish that delivered nothing */

static void rp_release_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_replay_job *j = arg;
    char err[256];
    bool released = false;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    if (rp_pg_conn_ensure(d->runner.conn, err, sizeof err) != RP_OK ||
        rp_pg_replay_release(d->runner.store, j->gate, &released) != RP_OK)
        RP_WARN("a replay's claim on its gate could not be released; it goes stale after "
                "control.replay_claim_seconds", "gate", gate, NULL);
    else if (released)
        j->claimed = false;
}

static void rp_release_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    if (cancelled) j->res.cancelled = true;
    rp_finish(j);
}

/* Loop: releases the claim (store thread), then finishes. */
static void rp_release_then_finish(rp_replay_job *j) {
    if (j->claimed &&
        rp_daemon_store_job(j->d, rp_release_work, rp_release_done, j) == RP_OK)
        return;
    rp_finish(j);
}

/* ---- 3. store thread: settle --------------------------------------------- */

static void rp_settle_work(void *ctx, void *arg) {
    rp_daemon *d = ctx;
    rp_replay_job *j = arg;
    char err[256];
    /* A test hook (docs/DEVELOPING.md): a pause between the confirm and the
     * settle, so that a test can kill reaperd there. */
    const char *pause = getenv("RP_TEST_PAUSE_AFTER_REPLAY_PUBLISH_MS");
    if (pause != NULL) {
        long ms = strtol(pause, NULL, 10);
        if (ms > 0 && ms <= 600000) {
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0) {}
        }
    }
    rp_status st = rp_pg_conn_ensure(d->runner.conn, err, sizeof err);
    if (st == RP_OK) {
        /* Fenced on this process's claim (rp_pg_store.h GATES). */
        rp_pg_store_set_claim_seconds(d->runner.store, d->runner.cfg->control.replay_claim_seconds);
        const rp_gate_port *g = &d->runner.ports.gates;
        st = g->answer(g->self, j->gate, RP_CHOICE_REPLAY, j->by, j->by_note, &j->res.answer);
    }
    if (st == RP_ERR_BUSY) {
        char claim[300];
        rp_replay_claim_text(claim, sizeof claim, j->gate, j->res.answer.claimed_by,
                             j->res.answer.claimed_at);
        rp_fail(j, RP_ERR_CONFLICT,
                "the message was published to %s and confirmed, but this reaperd's claim on "
                "the gate was taken over meanwhile (%s), so the gate was not settled by this "
                "replay", j->queue, claim);
    } else if (st != RP_OK) {
        rp_fail(j, st == RP_ERR_UNAVAILABLE ? st : RP_ERR_INTERNAL,
                "the message was published to %s and confirmed, but the gate could not be "
                "settled (%s); the gate stays claimed: after control.replay_claim_seconds the "
                "next answer reports it and does not publish it again",
                j->queue, rp_status_string(st));
    } else {
        j->claimed = false;
    }
}

static void rp_settle_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    if (cancelled) {
        RP_ERROR("a replay was published but reaperd stopped before settling its gate", "gate",
                 gate, "queue", j->queue, NULL);
        j->res.cancelled = true;
    } else if (j->res.st != RP_OK) {
        RP_ERROR("a replay was published but its gate could not be settled", "gate", gate,
                 "queue", j->queue, NULL);
    } else {
        if (j->res.answer.outcome == RP_OUTCOME_ALREADY_ANSWERED)
            RP_WARN("a replay was published, and the gate had been answered meanwhile", "gate",
                    gate, "queue", j->queue, NULL);
        else
            RP_INFO("dead letter replayed", "gate", gate, "queue", j->queue, NULL);
    }
    rp_finish(j);
}

/* ---- 2. loop: publish ------------------------------------------------------ */

static void rp_published(void *arg, rp_publish_outcome outcome) {
    rp_replay_job *j = arg;
    char gate[24];
    snprintf(gate, sizeof gate, "%" PRId64, j->gate);
    switch (outcome) {
    case RP_PUBLISH_CONFIRMED:
        if (rp_daemon_store_job(j->d, rp_settle_work, rp_settle_done, j) == RP_OK) return;
        rp_fail(j, RP_ERR_UNAVAILABLE,
                "the message was published to %s and confirmed, but reaperd is shutting down "
                "and did not settle the gate", j->queue);
        break;
    case RP_PUBLISH_RETURNED:
        rp_fail(j, RP_ERR_CONFLICT,
                "not replayed: the broker could not route the message to queue %s (does it "
                "exist?); nothing was delivered and the gate stays open", j->queue);
        break;
    case RP_PUBLISH_REFUSED:
        rp_fail(j, RP_ERR_CONFLICT,
                "not replayed: the broker refused the message for queue %s (%s); nothing was "
                "delivered and the gate stays open",
                j->queue, rp_amqp_publisher_refusal(j->d->replay_publisher));
        break;
    case RP_PUBLISH_NACKED:
        rp_fail(j, RP_ERR_UNAVAILABLE,
                "not replayed: the broker refused the message for queue %s (nack: full, or an "
                "internal error); the gate stays open", j->queue);
        break;
    case RP_PUBLISH_DROPPED:
        /* Only when the publisher is freed (reaperd stopping) or its queue
         * is full: no reply can go out through it now, so none is tried;
         * the request stays unacked and is delivered again. */
        RP_WARN("replay dropped: reaperd is stopping", "gate", gate, "queue", j->queue, NULL);
        j->res.cancelled = true;
        rp_finish(j);
        return;
    case RP_PUBLISH_LOST:
    default:
        /* It may have been delivered: the claim stays, so that no answer
         * publishes it again before a person has been told (rp_gate.h). */
        rp_fail(j, RP_ERR_UNAVAILABLE,
                "the broker connection was lost before the broker confirmed the message for %s; "
                "it may or may not have been delivered; the gate stays open and claimed by this "
                "replay until control.replay_claim_seconds pass, then the next answer reports "
                "it", j->queue);
        RP_WARN("replay not confirmed", "gate", gate, "queue", j->queue, "outcome",
                rp_publish_outcome_string(outcome), NULL);
        rp_finish(j);
        return;
    }
    RP_WARN("replay not confirmed", "gate", gate, "queue", j->queue, "outcome",
            rp_publish_outcome_string(outcome), NULL);
    /* Nothing was delivered: the claim goes. */
    rp_release_then_finish(j);
}

static void rp_prepare_done(void *arg, bool cancelled) {
    rp_replay_job *j = arg;
    rp_daemon *d = j->d;
    if (cancelled) {
        j->res.cancelled = true;
        rp_finish(j);
        return;
    }
    if (j->res.st != RP_OK || j->settled_early) {
        rp_finish(j);
        return;
    }
    if (!d->broker_up || d->replay_publisher == NULL) {
        rp_fail(j, RP_ERR_UNAVAILABLE,
                "the broker is not connected; nothing was sent and the gate stays open");
        rp_release_then_finish(j);
        return;
    }
    rp_publish pub = {
        .exchange = "",
        .routing_key = j->queue,
        .props = &j->props,
        .body = {j->body, j->body_len},
        .mandatory = true,
        .retry = false,
        .done = rp_published,
        .arg = j,
    };
    if (rp_amqp_publisher_publish(d->replay_publisher, &pub) != RP_OK) {
        rp_fail(j, RP_ERR_INTERNAL, "out of memory");
        rp_release_then_finish(j);
    }
}

rp_status rp_replay_start(rp_daemon *d, int64_t gate, const char *by, const char *note,
                          rp_replay_done_fn done, void *arg) {
    if (rp_inflight_has(d, gate)) return RP_ERR_CONFLICT;
    rp_replay_job *j = calloc(1, sizeof *j);
    if (j == NULL) return RP_ERR_NOMEM;
    init_amqp_pool(&j->pool, 4096);
    j->d = d;
    j->gate = gate;
    j->done = done;
    j->arg = arg;
    j->res.st = RP_ERR_INTERNAL;
    if ((by && (j->by = strdup(by)) == NULL) || (note && (j->by_note = strdup(note)) == NULL) ||
        !rp_inflight_add(d, gate)) {
        rp_job_free(j);
        return RP_ERR_NOMEM;
    }
    rp_status st = rp_daemon_store_job(d, rp_prepare_work, rp_prepare_done, j);
    if (st != RP_OK) {
        rp_inflight_remove(d, gate);
        rp_job_free(j);
    }
    return st;
}
