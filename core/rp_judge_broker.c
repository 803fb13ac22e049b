/* The broker half of the judge: queues, the consumer timeout, dead letters
 * (declared in rp_judge.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_arith.h"
#include "rp_judge.h"
#include "rp_judge_internal.h"
#include "rp_object.h"
#include "rp_text.h"
#include "rp_untrusted.h"

static const char *const rp_queue_type_names[RP_QUEUE_TYPE_COUNT_] = {
    "unknown", "classic", "quorum", "stream"};

const char *rp_queue_type_string(rp_queue_type t) {
    if ((int)t < 0 || t >= RP_QUEUE_TYPE_COUNT_) return "unknown";
    return rp_queue_type_names[t];
}

rp_queue_type rp_queue_type_parse(const char *s) {
    if (s == NULL) return RP_QUEUE_TYPE_UNKNOWN;
    for (int i = 1; i < RP_QUEUE_TYPE_COUNT_; i++)
        if (strcmp(rp_queue_type_names[i], s) == 0) return (rp_queue_type)i;
    return RP_QUEUE_TYPE_UNKNOWN;
}

void rp_queue_judgement_init(rp_queue_judgement *j) {
    rp_verdict_init(&j->verdict);
    j->backfill = false;
    j->note = RP_QUEUE_NOTE_NONE;
    j->unmeasured = false;
}

void rp_queue_judgement_cleanup(rp_queue_judgement *j) {
    rp_verdict_cleanup(&j->verdict);
    rp_queue_judgement_init(j);
}

static const char *rp_or(const char *s, const char *dflt) { return s ? s : dflt; }

/* Fills a SURFACED broker verdict about queue q. Takes ownership of detail. */
static rp_status rp_queue_verdict(rp_verdict *v, const rp_queue_facts *q, rp_condition c,
                                  double measured, int64_t threshold, const char *unit,
                                  char *detail) {
    char *object = NULL;
    rp_status st = rp_object_queue(q->vhost, q->name, &object);
    if (st != RP_OK) {
        free(detail);
        return st;
    }
    rp__judged j = {
        .condition = c,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = measured,
        .threshold = threshold,
        .unit = unit,
        .trusted = true,
    };
    return rp__judge_fill(v, &j, object, q->name, NULL, detail);
}

static rp_status rp_judge_dead_letter_queue(const rp_queue_facts *q, const rp_thresholds *t,
                                            rp_queue_judgement *out) {
    int64_t depth = rp__sat_add(rp__nonneg(q->ready), rp__nonneg(q->unacked));
    if (depth < t->dead_letter_min_depth) return RP_OK;
    if (q->owned) {
        out->backfill = true;
        return RP_OK;
    }
    char *detail = NULL;
    rp_status st = rp_text_format(
        &detail,
        "dead-letter queue %s on vhost %s holds %" PRId64 " message(s), at or over the minimum "
        "depth of %" PRId64 "; it is not owned, so it is surfaced and never touched",
        rp_or(q->name, "?"), rp_or(q->vhost, "?"), depth, t->dead_letter_min_depth);
    if (st != RP_OK) return st;
    return rp_queue_verdict(&out->verdict, q, RP_COND_DEAD_LETTER, (double)depth,
                            t->dead_letter_min_depth, "messages", detail);
}

/* A work queue reaper does not own (issue 18 item 5): judged like an
 * owned one, surfaced, never touched. */
static bool rp_is_foreign_work(const rp_queue_facts *q) {
    return !q->owned && !q->is_dead_letter_queue && !q->reapers_own &&
           q->type != RP_QUEUE_TYPE_STREAM;
}

rp_status rp_judge_queue(const rp_queue_facts *q, const rp_thresholds *t, rp_time_ms now,
                         rp_queue_judgement *out) {
    rp_queue_judgement_init(out);
    if (q == NULL || t == NULL) return RP_ERR_INVALID;
    bool foreign = rp_is_foreign_work(q);
    if (!q->counts_known) {
        /* Absent statistics are not an empty queue: nothing is judged, and
         * whatever was sighted on it stays open until it is measured. */
        if (q->is_dead_letter_queue ||
            (q->owned && !q->reapers_own && q->type != RP_QUEUE_TYPE_STREAM)) {
            out->note = RP_QUEUE_NOTE_COUNTS_UNKNOWN;
            out->unmeasured = true;
        } else if (foreign) {
            out->unmeasured = true;
        }
        return RP_OK;
    }
    if (q->is_dead_letter_queue) return rp_judge_dead_letter_queue(q, t, out);
    if (q->reapers_own || q->type == RP_QUEUE_TYPE_STREAM) return RP_OK;
    /* What a foreign queue's detail adds: reaper only says. */
    const char *whose = foreign ? " (not owned: surfaced, never touched)" : "";

    int64_t ready = rp__nonneg(q->ready), unacked = rp__nonneg(q->unacked);
    if (!q->consumers_known) {
        if (rp__sat_add(ready, unacked) > 0) {
            if (!foreign) out->note = RP_QUEUE_NOTE_CONSUMERS_UNKNOWN;
            out->unmeasured = true;
        }
        return RP_OK;
    }
    if (q->consumers != 0) return RP_OK;

    char *detail = NULL;
    rp_status st;
    if (unacked > 0) {
        st = rp_text_format(&detail,
                            "queue %s on vhost %s holds %" PRId64
                            " unacknowledged message(s) with no consumer: surfaced, nothing "
                            "moved%s",
                            rp_or(q->name, "?"), rp_or(q->vhost, "?"), unacked, whose);
        if (st != RP_OK) return st;
        return rp_queue_verdict(&out->verdict, q, RP_COND_HOLDER_GONE, (double)unacked, 0,
                                "messages", detail);
    }
    if (ready == 0) return RP_OK;
    if (!q->head_timestamp_known) {
        if (!foreign)
            out->note = q->type == RP_QUEUE_TYPE_QUORUM ? RP_QUEUE_NOTE_QUORUM_NO_AGE
                                                        : RP_QUEUE_NOTE_NO_HEAD_TIMESTAMP;
        return RP_OK;
    }
    int64_t age_ms = rp__sat_sub(now, rp__s_to_ms(q->head_timestamp));
    if (!rp_judge_age_stale(age_ms, t->stale_ready_seconds)) return RP_OK;
    st = rp_text_format(&detail,
                        "queue %s on vhost %s has %" PRId64
                        " ready message(s) and no consumer, and its head message is %.3f s "
                        "old, at or over the threshold of %" PRId64 " s: surfaced, nothing "
                        "moved%s",
                        rp_or(q->name, "?"), rp_or(q->vhost, "?"), ready,
                        rp__judge_seconds(age_ms), t->stale_ready_seconds, whose);
    if (st != RP_OK) return st;
    return rp_queue_verdict(&out->verdict, q, RP_COND_STALE_READY, rp__judge_seconds(age_ms),
                            t->stale_ready_seconds, "seconds", detail);
}

rp_status rp_judge_delivery_limit_drop(const rp_queue_facts *q, rp_verdict *out) {
    if (out == NULL) return RP_ERR_INVALID;
    rp_verdict_init(out);
    if (q == NULL) return RP_ERR_INVALID;
    if (!q->owned || q->is_dead_letter_queue || q->type != RP_QUEUE_TYPE_QUORUM ||
        !q->delivery_limit_known || q->delivery_limit <= 0 || q->dead_letter_exchange)
        return RP_OK;
    char *detail = NULL;
    rp_status st = rp_text_format(
        &detail,
        "quorum queue %s on vhost %s has a delivery limit of %" PRId64 " in force and no "
        "dead-letter exchange: the broker DROPS a message after %" PRId64 " deliveries (a "
        "poison message is lost, never parked). Fix: give the queue a dead-letter exchange "
        "(x-dead-letter-exchange argument, or dead-letter-exchange in an operator policy) "
        "bound to a dead-letter queue, or lift the limit (x-delivery-limit -1 on RabbitMQ 4)",
        rp_or(q->name, "?"), rp_or(q->vhost, "?"), q->delivery_limit, q->delivery_limit);
    if (st != RP_OK) return st;
    return rp_queue_verdict(out, q, RP_COND_POISON, (double)q->delivery_limit,
                            q->delivery_limit, "deliveries", detail);
}

rp_status rp_judge_consumer_timeout(const char *vhost, const char *queue,
                                    const rp_timeout_in_force *f, const rp_thresholds *t,
                                    rp_verdict *out) {
    rp_verdict_init(out);
    if (vhost == NULL || queue == NULL || f == NULL || t == NULL) return RP_ERR_INVALID;
    const char *origin = rp_or(f->origin, "origin unknown");
    rp__judged j = {
        .condition = RP_COND_HUNG_HANDLER,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = -1,
        .threshold = t->consumer_timeout_seconds,
        .unit = "seconds",
        .trusted = true,
    };
    char *detail = NULL;
    rp_status st;
    if (!f->in_force) {
        st = rp_text_format(&detail,
                            "no consumer timeout is in force on queue %s on vhost %s: hung "
                            "handlers there are not bounded (configured %" PRId64 " s)",
                            queue, vhost, t->consumer_timeout_seconds);
    } else if (!f->value_known) {
        st = rp_text_format(&detail,
                            "a consumer timeout is in force on queue %s on vhost %s (%s) but its "
                            "value could not be read, so the bound of %" PRId64
                            " s is not verified",
                            queue, vhost, origin, t->consumer_timeout_seconds);
    } else {
        j.measured = rp__judge_seconds(f->value_ms);
        if (f->value_ms <= rp__s_to_ms(t->consumer_timeout_seconds)) {
            j.action = RP_ACTION_VERIFIED;
            st = rp_text_format(&detail,
                                "a consumer timeout of %.3f s (%s) is in force on queue %s on "
                                "vhost %s, within the configured %" PRId64
                                " s: the broker bounds hung handlers there",
                                j.measured, origin, queue, vhost, t->consumer_timeout_seconds);
        } else {
            st = rp_text_format(&detail,
                                "the consumer timeout in force on queue %s on vhost %s (%s) is "
                                "%.3f s, longer than the configured %" PRId64 " s",
                                queue, vhost, origin, j.measured, t->consumer_timeout_seconds);
        }
    }
    if (st != RP_OK) return st;
    char *object = NULL;
    st = rp_object_queue(vhost, queue, &object);
    if (st != RP_OK) {
        free(detail);
        return st;
    }
    return rp__judge_fill(out, &j, object, queue, NULL, detail);
}

rp_status rp_judge_wide_timeout(rp_wide_timeout_state state, int64_t value_ms, const char *why,
                                int64_t consumer_timeout_seconds, int64_t longest_lease_seconds,
                                char **note) {
    if (note == NULL) return RP_ERR_INVALID;
    *note = NULL;
    int64_t want_ms = rp__s_to_ms(consumer_timeout_seconds);
    int64_t lease_ms = rp__s_to_ms(longest_lease_seconds);
    switch (state) {
    case RP_WIDE_TIMEOUT_OFF:
        return rp_text_format(note,
                              "the broker-wide consumer_timeout is off: the broker bounds no hung "
                              "handler (reap.consumer_timeout_seconds is %" PRId64 " s)",
                              consumer_timeout_seconds);
    case RP_WIDE_TIMEOUT_VALUE:
        if (value_ms > want_ms)
            return rp_text_format(note,
                                  "the broker-wide consumer_timeout is %.3f s, longer than "
                                  "reap.consumer_timeout_seconds (%" PRId64
                                  " s): a hung handler holds its message longer than declared",
                                  rp__judge_seconds(value_ms), consumer_timeout_seconds);
        if (value_ms < lease_ms)
            return rp_text_format(note,
                                  "the broker-wide consumer_timeout is %.3f s, shorter than "
                                  "reap.longest_lease_seconds (%" PRId64
                                  " s): the broker cuts off a handler that legitimately holds a "
                                  "message that long",
                                  rp__judge_seconds(value_ms), longest_lease_seconds);
        return rp_text_format(note,
                              "the broker-wide consumer_timeout is %.3f s: within "
                              "reap.consumer_timeout_seconds (%" PRId64
                              " s) and not under reap.longest_lease_seconds (%" PRId64 " s)",
                              rp__judge_seconds(value_ms), consumer_timeout_seconds,
                              longest_lease_seconds);
    case RP_WIDE_TIMEOUT_UNREADABLE: break;
    }
    const char *at_default =
        RP_BROKER_DEFAULT_CONSUMER_TIMEOUT_MS < lease_ms
            ? "; at RabbitMQ's default of 1800 s it is shorter than reap.longest_lease_seconds, "
              "so the broker would cut off a handler that legitimately holds a message that long"
        : RP_BROKER_DEFAULT_CONSUMER_TIMEOUT_MS > want_ms
            ? "; at RabbitMQ's default of 1800 s it is longer than reap.consumer_timeout_seconds"
            : "";
    return rp_text_format(note,
                          "the broker-wide consumer_timeout could not be read (%s), so it is not "
                          "checked against reap.consumer_timeout_seconds (%" PRId64
                          " s) and reap.longest_lease_seconds (%" PRId64
                          " s)%s; on a broker node: rabbitmqctl eval "
                          "'application:get_env(rabbit, consumer_timeout).'",
                          why && *why ? why : "not exposed", consumer_timeout_seconds,
                          longest_lease_seconds, at_default);
}

rp_status rp_judge_dead_letter(const rp_dead_letter *d, const char *vhost, const char *dlq,
                               rp_verdict *out) {
    rp_verdict_init(out);
    if (d == NULL || d->identity == NULL || vhost == NULL || dlq == NULL) return RP_ERR_INVALID;
    char *origin = NULL, *reason = NULL, *object = NULL, *detail = NULL;
    char when[RP_DL_TIME_BUF];
    rp_dl_render_time(d->first_death_known, d->first_death_at, when);
    rp_status st = rp_untrusted_render(
        (rp_bytes){(const uint8_t *)d->origin_queue, d->origin_queue_len}, &origin);
    if (st == RP_OK)
        st = rp_untrusted_render((rp_bytes){(const uint8_t *)d->reason, d->reason_len}, &reason);
    if (st == RP_OK) st = rp_object_dead_letter(d->identity, &object);
    if (st == RP_OK) {
        /* Joined, not formatted (issue 21): the sentence of the format "a
         * dead letter on queue %s on vhost %s, dead-lettered from %s
         * (reason %s, first death %s%s), values from untrusted headers:
         * parked for a person (gate bus_dead_lettered)". */
        const char *parts[] = {"a dead letter on queue ", dlq, " on vhost ", vhost,
                               ", dead-lettered from ", origin, " (reason ", reason,
                               ", first death ",
                               d->first_death_known ? "at Unix second " : "unknown",
                               d->first_death_known ? when : "",
                               "), values from untrusted headers: parked for a person (gate "
                               "bus_dead_lettered)"};
        st = rp_text_join(&detail, parts, sizeof parts / sizeof parts[0]);
    }
    free(origin);
    free(reason);
    if (st != RP_OK) {
        free(object);
        return st;
    }
    rp__judged j = {
        .condition = RP_COND_DEAD_LETTER,
        .action = RP_ACTION_PARKED,
        .source = RP_SOURCE_BROKER,
        .measured = 1,
        .threshold = 1,
        .unit = "messages",
        .trusted = false,
    };
    return rp__judge_fill(out, &j, object, dlq, NULL, detail);
}

rp_status rp_judge_dead_letter_unread(const char *vhost, const char *dlq, int64_t unread,
                                      bool at_most, rp_dl_unread_reason reason,
                                      size_t peek_limit, rp_verdict *out) {
    rp_verdict_init(out);
    if (vhost == NULL || dlq == NULL || unread < 1 || (int)reason <= (int)RP_DL_UNREAD_NONE ||
        reason >= RP_DL_UNREAD_COUNT_)
        return RP_ERR_INVALID;
    char count[48];
    /* "up to 2 messages" when the port knows only a bound. */
    snprintf(count, sizeof count, "%s%" PRId64 " message%s", at_most ? "up to " : "", unread,
             unread == 1 ? "" : "s");
    rp__judged j = {
        .condition = RP_COND_DEAD_LETTER,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = (double)unread,
        .threshold = 0,
        .unit = "messages",
        .trusted = true,
    };
    char *detail = NULL;
    rp_status st;
    switch (reason) {
    case RP_DL_UNREAD_PEEK_LIMIT:
        j.threshold = (int64_t)peek_limit;
        st = rp_text_format(
            &detail,
            "dead-letter queue %s on vhost %s holds %s behind those this pass read (the dead "
            "letters at its head parked already, then at most %zu new ones: "
            "dead_letter_peek_limit): the backfill has not read them yet, so any that did not "
            "come through the tap are not parked yet; each later pass reads past what is parked "
            "and parks at most %zu more; nothing is removed; raise reap.dead_letter_peek_limit (at "
            "most 1000) to go faster",
            dlq, vhost, count, peek_limit, peek_limit);
        break;
    case RP_DL_UNREAD_READ_ONCE:
        j.threshold = (int64_t)peek_limit;
        st = rp_text_format(
            &detail,
            "dead-letter queue %s on vhost %s holds %s that lay behind what the backfill's one "
            "read of it took: a quorum queue is read once, ever (each read spends a delivery), "
            "so they are not read again, and any that did not come through the tap are not "
            "parked; nothing is removed; read them with a tool of your own (the management UI, "
            "or a shovel to a classic dead-letter queue, which the backfill reads at every pass)",
            dlq, vhost, count);
        break;
    case RP_DL_UNREAD_NOT_READABLE:
        st = rp_text_format(
            &detail,
            "dead-letter queue %s on vhost %s holds %s that the backfill cannot read (a stream "
            "queue: basic.get does not apply), so any that did not come through the tap are not "
            "parked; nothing is removed; read it with a stream consumer, or dead-letter into a "
            "classic or quorum queue",
            dlq, vhost, count);
        break;
    case RP_DL_UNREAD_DRY_RUN:
    default:
        st = rp_text_format(
            &detail,
            "dead-letter queue %s on vhost %s holds %s that this dry run did not read: each read "
            "of a quorum queue spends a delivery, so only a pass that is not a dry run reads it "
            "(once, up to dead_letter_peek_limit); nothing is removed; run the pass without "
            "--dry-run to park them",
            dlq, vhost, count);
        break;
    }
    if (st != RP_OK) return st;
    char *object = NULL;
    st = rp_object_queue(vhost, dlq, &object);
    if (st != RP_OK) {
        free(detail);
        return st;
    }
    return rp__judge_fill(out, &j, object, dlq, NULL, detail);
}

/* The detail of a route through the default exchange. */
static rp_status rp_route_default_detail(const rp_dl_route *r, char **detail) {
    const char *fix = "fix: declare a named dead-letter exchange, bind the dead-letter queue to it "
                      "and name it in the queue's x-dead-letter-exchange argument (or a policy's "
                      "dead-letter-exchange): the tap then parks each dead letter as it dies";
    if (r->routing_key == NULL)
        return rp_text_format(detail,
                              "owned queue %s on vhost %s dead-letters through the default "
                              "exchange \"\" with no dead-letter routing key: the tap cannot be "
                              "bound to the default exchange, and each dead letter goes to the "
                              "queue its own routing key names, which reaper cannot tell, so "
                              "none of them is parked; %s",
                              r->queue, r->vhost, fix);
    if (r->target_known && !r->target_exists)
        return rp_text_format(detail,
                              "owned queue %s on vhost %s dead-letters through the default "
                              "exchange \"\" to queue %s, which does not exist: the broker drops "
                              "its dead letters, and the tap cannot be bound to the default "
                              "exchange; %s",
                              r->queue, r->vhost, r->routing_key, fix);
    char held[64] = "";
    if (r->target_depth_known)
        snprintf(held, sizeof held, ", which holds %" PRId64 " message%s", r->target_depth,
                 r->target_depth == 1 ? "" : "s");
    return rp_text_format(detail,
                          "owned queue %s on vhost %s dead-letters through the default exchange "
                          "\"\", which the tap cannot be bound to: its dead letters go straight to "
                          "queue %s%s, which each sweep's backfill reads like a dead-letter "
                          "queue and parks from (dead_letter_peek_limit per pass), not as they "
                          "die; %s",
                          r->queue, r->vhost, r->routing_key, held, fix);
}

rp_status rp_judge_dead_letter_route(const rp_dl_route *r, rp_verdict *out) {
    if (out == NULL) return RP_ERR_INVALID;
    rp_verdict_init(out);
    if (r == NULL || r->vhost == NULL || r->queue == NULL || r->exchange == NULL)
        return RP_ERR_INVALID;
    rp__judged j = {
        .condition = RP_COND_DEAD_LETTER,
        .action = RP_ACTION_SURFACED,
        .source = RP_SOURCE_BROKER,
        .measured = -1,
        .threshold = 0,
        .unit = "messages",
        .trusted = true,
    };
    char *detail = NULL;
    rp_status st;
    if (r->exchange[0] == '\0') {
        if (r->routing_key != NULL && r->target_known && r->target_exists &&
            r->target_depth_known)
            j.measured = (double)rp__nonneg(r->target_depth);
        st = rp_route_default_detail(r, &detail);
    } else {
        if (!r->exchange_known) return RP_OK;
        if (r->exchange_exists && (!r->bound_known || r->bound)) return RP_OK;
        if (r->exchange_exists)
            st = rp_text_format(&detail,
                                "owned queue %s on vhost %s names dead-letter exchange %s, which "
                                "exists but has nothing bound to it: the broker drops the "
                                "queue's dead letters, and the tap (bound like the dead-letter "
                                "queues) gets none; fix: bind the dead-letter queue to exchange "
                                "%s (the tap follows within a second)",
                                r->queue, r->vhost, r->exchange, r->exchange);
        else
            st = rp_text_format(&detail,
                                "owned queue %s on vhost %s names dead-letter exchange %s, which "
                                "does not exist (yet): the broker drops the queue's dead letters, "
                                "and the tap cannot be bound to it; fix: declare exchange %s and "
                                "bind the dead-letter queue to it (the tap follows within a "
                                "second)",
                                r->queue, r->vhost, r->exchange, r->exchange);
    }
    if (st != RP_OK) return st;
    char *object = NULL;
    st = rp_object_queue(r->vhost, r->queue, &object);
    if (st != RP_OK) {
        free(detail);
        return st;
    }
    return rp__judge_fill(out, &j, object, r->queue, NULL, detail);
}
