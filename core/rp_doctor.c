/* doctor's verdicts (rp_doctor.h). */
#include "rp_doctor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_pass_policy.h"
#include "rp_text.h"
#include "rp_untrusted.h"
#include "rp_utf8.h"
#include "rp_verdict.h"

static const char *const rp_doctor_names[RP_DOC_COUNT_] = {
    "broker_connection", "management_api", "event_exchange",  "permissions",
    "policies",          "consumer_timeout", "tap_bindings",   "store_connection",
    "schema_version",    "queue_health",   "wedged_queue",    "divergent_queue",
    "dead_letter_backlog", "remainders",
};

const char *rp_doctor_check_name(rp_doctor_check_id id) {
    return (unsigned)id < RP_DOC_COUNT_ ? rp_doctor_names[id] : "?";
}

const char *rp_doctor_status_string(rp_doctor_status s) {
    switch (s) {
    case RP_DOCTOR_OK: return "ok";
    case RP_DOCTOR_WARN: return "warn";
    case RP_DOCTOR_FAIL: return "fail";
    }
    return "?";
}

const char *rp_doctor_reach_string(rp_doctor_reach r) {
    switch (r) {
    case RP_REACH_NOT_TRIED: return "not_tried";
    case RP_REACH_OK: return "ok";
    case RP_REACH_UNREACHABLE: return "unreachable";
    case RP_REACH_REFUSED: return "refused";
    case RP_REACH_AUTH: return "authentication";
    case RP_REACH_FORBIDDEN: return "forbidden";
    case RP_REACH_ERROR: return "error";
    }
    return "?";
}

void rp_doctor_facts_init(rp_doctor_facts *f) { memset(f, 0, sizeof *f); }

static const char *rp_s(const char *s) { return s != NULL ? s : ""; }

/* Sets one check; false when out of memory. */
RP_PRINTF(4, 5)
static bool rp_doc_set(rp_doctor_check *c, rp_doctor_status st, const char *fix, const char *fmt,
                       ...) {
    va_list ap;
    va_start(ap, fmt);
    rp_status s = rp_text_vformat(&c->detail, fmt, ap);
    va_end(ap);
    /* A reason quoted at the end may bring its own full stop. */
    size_t len = s == RP_OK ? strlen(c->detail) : 0;
    while (len >= 2 && c->detail[len - 1] == '.' && c->detail[len - 2] == '.')
        c->detail[--len] = '\0';
    c->status = st;
    c->fix = strdup(fix != NULL ? fix : "");
    return s == RP_OK && c->fix != NULL;
}

/* A duration in the largest whole unit that fits ("3 h", "12 min", "40 s"). */
static void rp_doc_age(int64_t s, char *buf, size_t n) {
    if (s < 0) s = 0;
    if (s >= 86400) snprintf(buf, n, "%" PRId64 " d", s / 86400);
    else if (s >= 3600) snprintf(buf, n, "%" PRId64 " h", s / 3600);
    else if (s >= 60) snprintf(buf, n, "%" PRId64 " min", s / 60);
    else snprintf(buf, n, "%" PRId64 " s", s);
}

/* Whether the comma-separated list holds word. */
static bool rp_doc_has_word(const char *list, const char *word) {
    size_t w = strlen(word);
    for (const char *p = rp_s(list); *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > p && t[-1] == ' ') t--;
        if ((size_t)(t - p) == w && memcmp(p, word, w) == 0) return true;
        p = e;
    }
    return false;
}

/* ---- the broker ------------------------------------------------------------------ */

static bool rp_doc_amqp(const rp_doctor_facts *f, rp_doctor_check *c) {
    const char *url = rp_s(f->broker_url), *why = rp_s(f->amqp_why);
    switch (f->amqp) {
    case RP_REACH_OK:
        return rp_doc_set(c, RP_DOCTOR_OK, "", "logged in to %s as %s over AMQP.", url,
                          rp_s(f->user));
    case RP_REACH_NOT_TRIED:
        return rp_doc_set(c, RP_DOCTOR_WARN, "broker.url", "not checked: %s.",
                          f->amqp_why ? why : "broker.url did not parse");
    case RP_REACH_REFUSED:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "broker.url",
                          "nothing accepts AMQP connections at %s (connection refused: %s).",
                          url, why);
    case RP_REACH_UNREACHABLE:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "broker.url", "the broker at %s is unreachable: %s.",
                          url, why);
    case RP_REACH_AUTH:
    case RP_REACH_FORBIDDEN:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "REAPER_BROKER_PASSWORD or broker.password_file",
                          "the broker at %s refused the login of %s: %s.", url, rp_s(f->user),
                          why);
    case RP_REACH_ERROR: break;
    }
    return rp_doc_set(c, RP_DOCTOR_FAIL, "broker.url", "cannot connect to %s: %s.", url, why);
}

static bool rp_doc_mgmt(const rp_doctor_facts *f, rp_doctor_check *c) {
    const char *url = rp_s(f->management_url), *why = rp_s(f->mgmt_why);
    switch (f->mgmt) {
    case RP_REACH_OK:
        return rp_doc_set(c, RP_DOCTOR_OK, "", "the management API at %s answers (RabbitMQ %s).",
                          url, f->broker_version ? f->broker_version : "of an unknown version");
    case RP_REACH_NOT_TRIED:
        return rp_doc_set(c, RP_DOCTOR_WARN, "broker.management_url", "not checked: %s.",
                          f->mgmt_why ? why : "broker.management_url is not usable");
    case RP_REACH_REFUSED:
    case RP_REACH_UNREACHABLE:
        return rp_doc_set(c, RP_DOCTOR_FAIL,
                          "broker.management_url (rabbitmq-plugins enable rabbitmq_management)",
                          "the management API at %s does not answer: %s.", url, why);
    case RP_REACH_AUTH:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "REAPER_BROKER_PASSWORD or broker.password_file",
                          "the management API at %s refused the login of %s: %s.", url,
                          rp_s(f->user), why);
    case RP_REACH_FORBIDDEN: {
        char fix[512];
        snprintf(fix, sizeof fix, "rabbitmqctl set_user_tags %s management policymaker",
                 rp_s(f->user));
        return rp_doc_set(c, RP_DOCTOR_FAIL, fix,
                          "the management API at %s does not let %s in (no management tag): "
                          "%s.",
                          url, rp_s(f->user), why);
    }
    case RP_REACH_ERROR: break;
    }
    return rp_doc_set(c, RP_DOCTOR_FAIL, "broker.management_url",
                      "the management API at %s answered wrongly: %s.", url, why);
}

/* A check that reads through the management API: false and *done when the
 * read did not go through (the check is then set). */
static bool rp_doc_mgmt_gate(const rp_doctor_facts *f, rp_doctor_reach read, const char *what,
                             rp_doctor_check *c, bool *ok) {
    *ok = true;
    if (read == RP_REACH_OK) return false;
    if (read == RP_REACH_NOT_TRIED || f->mgmt != RP_REACH_OK) {
        *ok = rp_doc_set(c, RP_DOCTOR_WARN, "broker.management_url",
                         "not checked: the management API did not answer.");
        return true;
    }
    if (read == RP_REACH_FORBIDDEN || read == RP_REACH_AUTH) {
        char fix[512];
        snprintf(fix, sizeof fix, "rabbitmqctl set_permissions -p %s %s '.*' '.*' '.*'",
                 rp_s(f->vhost), rp_s(f->user));
        *ok = rp_doc_set(c, RP_DOCTOR_FAIL, fix, "%s cannot read %s in vhost %s.", rp_s(f->user),
                         what, rp_s(f->vhost));
        return true;
    }
    *ok = rp_doc_set(c, RP_DOCTOR_FAIL, "broker.management_url", "cannot read %s: %s.", what,
                     f->mgmt_why ? f->mgmt_why : rp_doctor_reach_string(read));
    return true;
}

static bool rp_doc_event_exchange(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_mgmt_gate(f, f->event_exchange_read, "the exchanges", c, &ok)) return ok;
    if (f->event_exchange_present)
        return rp_doc_set(c, RP_DOCTOR_OK, "",
                          "the exchange amq.rabbitmq.event exists in vhost %s (the "
                          "rabbitmq_event_exchange plugin is enabled).",
                          rp_s(f->vhost));
    return rp_doc_set(c, RP_DOCTOR_FAIL, "rabbitmq-plugins enable rabbitmq_event_exchange",
                      "the exchange amq.rabbitmq.event does not exist in vhost %s: the "
                      "rabbitmq_event_exchange plugin is not enabled (or declares it in another "
                      "vhost, rabbitmq_event_exchange.vhost), so reaper does not see consumers "
                      "come and go.",
                      rp_s(f->vhost));
}

static bool rp_doc_permissions(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_mgmt_gate(f, f->whoami, "its own user", c, &ok)) return ok;
    const char *tags = rp_s(f->tags);
    if (rp_doc_has_word(tags, "administrator"))
        return rp_doc_set(c, RP_DOCTOR_OK, "",
                          "%s is an administrator (policies, the broker-wide consumer_timeout "
                          "and every queue are within reach).",
                          rp_s(f->user));
    char fix[512];
    snprintf(fix, sizeof fix, "rabbitmqctl set_user_tags %s management policymaker monitoring",
             rp_s(f->user));
    if (!rp_doc_has_word(tags, "policymaker"))
        return rp_doc_set(c, RP_DOCTOR_FAIL, fix,
                          "%s has the tags [%s] but not policymaker: reaper cannot write its "
                          "policies (delivery-limit, consumer-timeout).",
                          rp_s(f->user), tags);
    /* Without monitoring the management API shows a user its own channels
     * only: a consumer channel of another user holding messages without
     * acking (broker STALLED) cannot be seen. */
    if (!rp_doc_has_word(tags, "monitoring"))
        return rp_doc_set(c, RP_DOCTOR_WARN, fix,
                          "%s has the tags [%s], policymaker among them, but not monitoring: it "
                          "sees only its own channels, so a channel that holds messages without "
                          "acking (STALLED on a queue) is not judged.",
                          rp_s(f->user), tags);
    return rp_doc_set(c, RP_DOCTOR_OK, "",
                      "%s has the tags [%s], policymaker and monitoring among them.",
                      rp_s(f->user), tags);
}

static bool rp_doc_policies(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_mgmt_gate(f, f->policies_read, "the policies", c, &ok)) return ok;
    /* 3.12 and later: one policy per queue type (rp_pass_policy.h). */
    bool classic = f->version_major > 3 || (f->version_major == 3 && f->version_minor >= 12);
    const char *missing = NULL;
    if (!rp_doc_has_word(f->policies_present, RP_PASS_POLICY_NAME)) missing = RP_PASS_POLICY_NAME;
    else if (classic && !rp_doc_has_word(f->policies_present, RP_PASS_POLICY_CLASSIC_NAME))
        missing = RP_PASS_POLICY_CLASSIC_NAME;
    if (missing == NULL)
        return rp_doc_set(c, RP_DOCTOR_OK, "", "reaper's polic%s in place in vhost %s.",
                          classic ? "ies " RP_PASS_POLICY_NAME " and " RP_PASS_POLICY_CLASSIC_NAME
                                    " are"
                                  : "y " RP_PASS_POLICY_NAME " is",
                          rp_s(f->vhost));
    return rp_doc_set(c, RP_DOCTOR_WARN, "reaperd --once (or start reaperd)",
                      "reaper's policy %s is not in place in vhost %s yet: a pass writes it.",
                      missing, rp_s(f->vhost));
}

static bool rp_doc_timeout(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_mgmt_gate(f, f->timeout_read, "the broker's configuration", c, &ok)) return ok;
    const char *fix = "consumer_timeout in rabbitmq.conf, or reap.consumer_timeout_seconds";
    int64_t want_ms = f->consumer_timeout_seconds * 1000;
    switch (f->timeout_state) {
    case RP_WIDE_TIMEOUT_VALUE:
        if (f->timeout_ms <= want_ms)
            return rp_doc_set(c, RP_DOCTOR_OK, "",
                              "the broker-wide consumer_timeout is %" PRId64
                              " ms, within reap.consumer_timeout_seconds (%" PRId64 " s).",
                              f->timeout_ms, f->consumer_timeout_seconds);
        return rp_doc_set(c, RP_DOCTOR_WARN, fix,
                          "the broker-wide consumer_timeout is %" PRId64
                          " ms, longer than reap.consumer_timeout_seconds (%" PRId64
                          " s): where no policy of reaper's applies, a hung handler holds its "
                          "message that long.",
                          f->timeout_ms, f->consumer_timeout_seconds);
    case RP_WIDE_TIMEOUT_OFF:
        return rp_doc_set(c, RP_DOCTOR_WARN, fix,
                          "the broker has no broker-wide consumer_timeout: where no policy of "
                          "reaper's applies, nothing bounds a hung handler.");
    case RP_WIDE_TIMEOUT_UNREADABLE: break;
    }
    return rp_doc_set(c, RP_DOCTOR_WARN, fix,
                      "the broker-wide consumer_timeout cannot be read (RabbitMQ %s: before 4.0 "
                      "no endpoint has it, on 4.x it needs the administrator tag), so it is not "
                      "verified.",
                      f->broker_version ? f->broker_version : "of an unknown version");
}

static rp_status rp_doc_buf(rp_text_buf *b);
static rp_status rp_doc_done(rp_text_buf *b, char **out);

/* The untappable queues the probe named, each quoted and escaped, and how
 * many more were counted: `"a", "b" and 4 more`; "" when none is named.
 * NULL when out of memory. */
static char *rp_doc_unbindable_names(const rp_doctor_facts *f) {
    rp_text_buf b;
    if (rp_doc_buf(&b) != RP_OK) return NULL;
    size_t named = 0;
    for (size_t i = 0; i < RP_DOCTOR_TAP_NAMED && i < f->tap_unbindable; i++) {
        const char *name = f->tap_unbindable_names[i];
        if (name == NULL) break;
        char *shown = NULL;
        if (rp_untrusted_render((rp_bytes){(const uint8_t *)name, strlen(name)}, &shown) !=
            RP_OK) {
            free(b.p);
            return NULL;
        }
        rp_text_buf_printf(&b, "%s%s", named ? ", " : "", shown);
        free(shown);
        named++;
    }
    if (named > 0 && f->tap_unbindable > named)
        rp_text_buf_printf(&b, " and %zu more", f->tap_unbindable - named);
    char *out = NULL;
    return rp_doc_done(&b, &out) == RP_OK ? out : NULL;
}

static bool rp_doc_tap(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_mgmt_gate(f, f->tap_read, "the queues and bindings", c, &ok)) return ok;
    const char *tap = rp_s(f->tap_queue);
    if (f->tap_missing && f->tap_wanted == 0)
        return rp_doc_set(c, RP_DOCTOR_WARN, "start reaperd (it declares broker.tap_queue)",
                          "the tap queue %s does not exist in vhost %s yet; no owned queue "
                          "dead-letters anywhere, so nothing is missed.",
                          tap, rp_s(f->vhost));
    if (f->tap_missing)
        return rp_doc_set(c, RP_DOCTOR_FAIL, "start reaperd (it declares broker.tap_queue)",
                          "the tap queue %s does not exist in vhost %s: dead letters of owned "
                          "queues are not parked.",
                          tap, rp_s(f->vhost));
    if (f->tap_absent > 0)
        return rp_doc_set(c, RP_DOCTOR_FAIL,
                          "start reaperd (every pass binds what is missing)",
                          "%zu of the %zu bindings the tap queue %s needs are missing: dead "
                          "letters routed there are not parked.",
                          f->tap_absent, f->tap_wanted, tap);
    if (f->tap_unbindable > 0) {
        char *names = rp_doc_unbindable_names(f);
        if (names == NULL) return false;
        bool done = rp_doc_set(c, RP_DOCTOR_WARN,
                               "x-dead-letter-exchange (or a policy's dead-letter-exchange) of "
                               "a named exchange",
                               "%zu owned queue%s dead-letter%s through the default exchange, "
                               "which cannot be tapped%s%s; the other %zu binding%s of the tap "
                               "queue %s are in place.",
                               f->tap_unbindable, f->tap_unbindable == 1 ? "" : "s",
                               f->tap_unbindable == 1 ? "s" : "", names[0] ? ": " : "", names,
                               f->tap_wanted, f->tap_wanted == 1 ? "" : "s", tap);
        free(names);
        return done;
    }
    return rp_doc_set(c, RP_DOCTOR_OK, "",
                      "every dead-letter exchange of the %zu owned queue%s (%zu with one) is "
                      "tapped: %zu binding%s on %s.",
                      f->tap_owned, f->tap_owned == 1 ? "" : "s", f->tap_with_dlx,
                      f->tap_wanted, f->tap_wanted == 1 ? "" : "s", tap);
}

/* ---- the store --------------------------------------------------------------------- */

static bool rp_doc_store(const rp_doctor_facts *f, rp_doctor_check *c) {
    const char *why = rp_s(f->store_why);
    switch (f->store) {
    case RP_REACH_OK: break;
    case RP_REACH_NOT_TRIED:
        return rp_doc_set(c, RP_DOCTOR_WARN, "store.dsn", "not checked: %s.",
                          f->store_why ? why : "store.dsn is not usable");
    case RP_REACH_UNREACHABLE:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "store.dsn (host, port)",
                          "the store cannot be reached (layer: unreachable): %s.", why);
    case RP_REACH_REFUSED:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "store.dsn (is PostgreSQL running there?)",
                          "the store refused the connection (layer: refused, nothing listens): "
                          "%s.",
                          why);
    case RP_REACH_AUTH:
    case RP_REACH_FORBIDDEN:
        return rp_doc_set(c, RP_DOCTOR_FAIL,
                          "PGPASSWORD or PGPASSFILE for store.dsn's user (pg_hba.conf)",
                          "the store refused the login (layer: authentication): %s.", why);
    case RP_REACH_ERROR:
        return rp_doc_set(c, RP_DOCTOR_FAIL, "store.dsn", "cannot use the store: %s.", why);
    }
    if (f->schema_read != RP_REACH_OK)
        return rp_doc_set(c, RP_DOCTOR_FAIL, "store.schema",
                          "connected, but the schema %s cannot be read (layer: schema): %s.",
                          rp_s(f->schema), f->store_why ? why : "no reason given");
    if (f->schema_version == 0)
        return rp_doc_set(c, RP_DOCTOR_FAIL, "reaperd --migrate",
                          "connected, but the schema %s holds no reaper tables (layer: "
                          "schema).",
                          rp_s(f->schema));
    return rp_doc_set(c, RP_DOCTOR_OK, "", "connected to the store, schema %s.",
                      rp_s(f->schema));
}

static bool rp_doc_schema(const rp_doctor_facts *f, rp_doctor_check *c) {
    if (f->store != RP_REACH_OK || f->schema_read != RP_REACH_OK)
        return rp_doc_set(c, RP_DOCTOR_WARN, "store.dsn",
                          "not checked: the store did not answer.");
    if (f->schema_version < f->schema_known)
        return rp_doc_set(c, RP_DOCTOR_FAIL, "reaperd --migrate",
                          "the schema %s is at migration %d of this reaperd's %d.",
                          rp_s(f->schema), f->schema_version, f->schema_known);
    if (f->schema_version > f->schema_known)
        return rp_doc_set(c, RP_DOCTOR_FAIL, "upgrade reaperd",
                          "the schema %s is at migration %d, newer than this reaperd's %d.",
                          rp_s(f->schema), f->schema_version, f->schema_known);
    return rp_doc_set(c, RP_DOCTOR_OK, "", "the schema %s is at migration %d, this reaperd's.",
                      rp_s(f->schema), f->schema_version);
}

/* A check over open sightings: false and the check set when they could not
 * be read. */
static bool rp_doc_open_gate(const rp_doctor_facts *f, const rp_doctor_open *o, const char *what,
                             rp_doctor_check *c, bool *ok) {
    *ok = true;
    if (o->read == RP_REACH_OK) return false;
    if (o->read == RP_REACH_NOT_TRIED || f->store != RP_REACH_OK ||
        f->schema_version != f->schema_known) {
        *ok = rp_doc_set(c, RP_DOCTOR_WARN, "store.dsn, then reaperd --migrate",
                         "not checked: the store or its schema is not usable.");
        return true;
    }
    *ok = rp_doc_set(c, RP_DOCTOR_FAIL, "store.dsn", "cannot read %s: %s.", what,
                     f->store_why ? f->store_why : rp_doctor_reach_string(o->read));
    return true;
}

static bool rp_doc_health(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_open_gate(f, &f->stalled, "the open sightings", c, &ok)) return ok;
    if (rp_doc_open_gate(f, &f->waiting_depth, "the open sightings", c, &ok)) return ok;
    int64_t n = f->stalled.n + f->waiting_depth.n;
    if (n == 0)
        return rp_doc_set(c, RP_DOCTOR_OK, "", "no STALLED or WAITING_DEPTH sighting is open.");
    const rp_doctor_open *o = f->stalled.n > 0 ? &f->stalled : &f->waiting_depth;
    char age[32];
    rp_doc_age(o->oldest_age_s, age, sizeof age);
    return rp_doc_set(c, RP_DOCTOR_WARN,
                      "reaperctl jobs list --state leased (STALLED on a job: "
                      "reap.held_evict_factor; on a queue: the channel the sighting names; "
                      "WAITING_DEPTH: cap admission)",
                      "%" PRId64 " STALLED and %" PRId64
                      " WAITING_DEPTH sighting%s open, e.g. %s (open %s).",
                      f->stalled.n, f->waiting_depth.n, n == 1 ? " is" : "s are",
                      rp_s(o->example), age);
}

static bool rp_doc_condition(const rp_doctor_facts *f, const rp_doctor_open *o,
                             const char *cond, rp_doctor_check *c) {
    rp_condition known;
    if (!rp_condition_parse(cond, &known))
        return rp_doc_set(c, RP_DOCTOR_WARN, "upgrade reaperd",
                          "%s is not judged yet by this reaperd: not judged, so not checked.",
                          cond);
    bool ok;
    if (rp_doc_open_gate(f, o, "the open sightings", c, &ok)) return ok;
    if (o->n == 0) return rp_doc_set(c, RP_DOCTOR_OK, "", "no %s sighting is open.", cond);
    char age[32];
    rp_doc_age(o->oldest_age_s, age, sizeof age);
    return rp_doc_set(c, RP_DOCTOR_WARN, "reaperctl status",
                      "%" PRId64 " %s sighting%s open, e.g. %s (the oldest open %s).", o->n, cond,
                      o->n == 1 ? " is" : "s are", rp_s(o->example), age);
}

static bool rp_doc_gates(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_open_gate(f, &f->gates, "the gates", c, &ok)) return ok;
    if (f->gates.n == 0) return rp_doc_set(c, RP_DOCTOR_OK, "", "no gate is open.");
    char age[32];
    rp_doc_age(f->gates.oldest_age_s, age, sizeof age);
    return rp_doc_set(c, RP_DOCTOR_WARN, "reaperctl gates",
                      "%" PRId64 " gate%s open (parked dead letters waiting for an answer), "
                      "the oldest %s old.",
                      f->gates.n, f->gates.n == 1 ? " is" : "s are", age);
}

static bool rp_doc_remainders(const rp_doctor_facts *f, rp_doctor_check *c) {
    bool ok;
    if (rp_doc_open_gate(f, &f->remainders, "the open sightings", c, &ok)) return ok;
    if (f->remainders.n == 0)
        return rp_doc_set(c, RP_DOCTOR_OK, "",
                          "no other sighting is open (hung handler, holder gone, lease "
                          "expired, poison, stale ready, dead letter).");
    char age[32];
    rp_doc_age(f->remainders.oldest_age_s, age, sizeof age);
    return rp_doc_set(c, RP_DOCTOR_WARN, "reaperctl status",
                      "%" PRId64 " other sighting%s open, e.g. %s (the oldest open %s).",
                      f->remainders.n, f->remainders.n == 1 ? " is" : "s are",
                      rp_s(f->remainders.example), age);
}

rp_status rp_doctor_judge(const rp_doctor_facts *f, rp_doctor_report *out) {
    memset(out, 0, sizeof *out);
    bool ok = true;
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) out->checks[i].id = (rp_doctor_check_id)i;
    rp_doctor_check *c = out->checks;
    ok = ok && rp_doc_amqp(f, &c[RP_DOC_BROKER_CONNECTION]);
    ok = ok && rp_doc_mgmt(f, &c[RP_DOC_MANAGEMENT_API]);
    ok = ok && rp_doc_event_exchange(f, &c[RP_DOC_EVENT_EXCHANGE]);
    ok = ok && rp_doc_permissions(f, &c[RP_DOC_PERMISSIONS]);
    ok = ok && rp_doc_policies(f, &c[RP_DOC_POLICIES]);
    ok = ok && rp_doc_timeout(f, &c[RP_DOC_CONSUMER_TIMEOUT]);
    ok = ok && rp_doc_tap(f, &c[RP_DOC_TAP_BINDINGS]);
    ok = ok && rp_doc_store(f, &c[RP_DOC_STORE_CONNECTION]);
    ok = ok && rp_doc_schema(f, &c[RP_DOC_SCHEMA_VERSION]);
    ok = ok && rp_doc_health(f, &c[RP_DOC_QUEUE_HEALTH]);
    ok = ok && rp_doc_condition(f, &f->wedged, "WEDGED", &c[RP_DOC_WEDGED_QUEUE]);
    ok = ok && rp_doc_condition(f, &f->divergent, "DIVERGENT", &c[RP_DOC_DIVERGENT_QUEUE]);
    ok = ok && rp_doc_gates(f, &c[RP_DOC_DEAD_LETTER_BACKLOG]);
    ok = ok && rp_doc_remainders(f, &c[RP_DOC_REMAINDERS]);
    if (!ok) {
        rp_doctor_report_cleanup(out);
        return RP_ERR_NOMEM;
    }
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) {
        if (c[i].status == RP_DOCTOR_OK) out->n_ok++;
        else if (c[i].status == RP_DOCTOR_WARN) out->n_warn++;
        else out->n_fail++;
    }
    return RP_OK;
}

void rp_doctor_report_cleanup(rp_doctor_report *r) {
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) {
        free(r->checks[i].detail);
        free(r->checks[i].fix);
    }
    memset(r, 0, sizeof *r);
}

int rp_doctor_exit_code(const rp_doctor_report *r) { return r->n_fail == 0 ? 0 : 1; }

/* A JSON string: quotes, backslash and controls escaped; a byte that is not
 * UTF-8 becomes U+FFFD. */
static void rp_doc_json_str(rp_text_buf *b, const char *s) {
    rp_text_buf_printf(b, "\"");
    const uint8_t *p = (const uint8_t *)rp_s(s);
    size_t len = strlen((const char *)p);
    while (len > 0) {
        uint32_t cp;
        size_t k = rp_utf8_next(p, len, &cp);
        if (k == 0) {
            rp_text_buf_printf(b, "\\ufffd");
            k = 1;
        } else if (cp == '"' || cp == '\\') {
            rp_text_buf_printf(b, "\\%c", (char)cp);
        } else if (cp < 0x20 || cp == 0x7f) {
            rp_text_buf_printf(b, "\\u%04x", (unsigned)cp);
        } else {
            rp_text_buf_printf(b, "%.*s", (int)k, (const char *)p);
        }
        p += k;
        len -= k;
    }
    rp_text_buf_printf(b, "\"");
}

static rp_status rp_doc_buf(rp_text_buf *b) {
    b->cap = 4096;
    b->len = 0;
    b->nomem = false;
    b->p = malloc(b->cap);
    if (b->p == NULL) return RP_ERR_NOMEM;
    b->p[0] = '\0';
    return RP_OK;
}

static rp_status rp_doc_done(rp_text_buf *b, char **out) {
    if (b->nomem) {
        free(b->p);
        *out = NULL;
        return RP_ERR_NOMEM;
    }
    *out = b->p;
    return RP_OK;
}

rp_status rp_doctor_json(const rp_doctor_report *r, char **out) {
    rp_text_buf b;
    *out = NULL;
    if (rp_doc_buf(&b) != RP_OK) return RP_ERR_NOMEM;
    rp_text_buf_printf(&b, "{\"ok\":%s,\"fail\":%zu,\"warn\":%zu,\"checks\":[",
                       r->n_fail == 0 ? "true" : "false", r->n_fail, r->n_warn);
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) {
        const rp_doctor_check *c = &r->checks[i];
        rp_text_buf_printf(&b, "%s{\"name\":\"%s\",\"status\":\"%s\",\"detail\":", i ? "," : "",
                           rp_doctor_check_name(c->id), rp_doctor_status_string(c->status));
        rp_doc_json_str(&b, c->detail);
        rp_text_buf_printf(&b, ",\"fix\":");
        rp_doc_json_str(&b, c->fix);
        rp_text_buf_printf(&b, "}");
    }
    rp_text_buf_printf(&b, "]}");
    return rp_doc_done(&b, out);
}

rp_status rp_doctor_text(const rp_doctor_report *r, char **out) {
    rp_text_buf b;
    *out = NULL;
    if (rp_doc_buf(&b) != RP_OK) return RP_ERR_NOMEM;
    for (size_t i = 0; i < RP_DOC_COUNT_; i++) {
        const rp_doctor_check *c = &r->checks[i];
        rp_text_buf_printf(&b, "%-4s  %-19s %s", c->status == RP_DOCTOR_OK     ? "ok"
                                                 : c->status == RP_DOCTOR_WARN ? "WARN"
                                                                               : "FAIL",
                           rp_doctor_check_name(c->id), rp_s(c->detail));
        if (c->fix != NULL && c->fix[0] != '\0') rp_text_buf_printf(&b, " (fix: %s)", c->fix);
        rp_text_buf_printf(&b, "\n");
    }
    rp_text_buf_printf(&b, "%zu ok, %zu warn, %zu fail\n", r->n_ok, r->n_warn, r->n_fail);
    return rp_doc_done(&b, out);
}
