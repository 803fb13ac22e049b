/* The policy reconcile's decisions (core/rp_pass_policy.c) on a fake
 * policy port: what is written per broker version, no write when what is
 * there is semantically what is wanted, the conflicts' notes, the owned
 * quorum queues without a dead-letter exchange left out by name (and past
 * 100 of them, no delivery-limit at all), and the queue check's outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_pass_policy.h"
#include "rp_pass_rules.h"
#include "rp_queue_listing.h"

#define OWNED "^vibey\\."
#define DLQ "(\\.dlq|\\.dead)$"
#define MAX_QUEUES 256
#define MAX_KEYS 4

typedef struct fkey {
    const char *key;
    int64_t value;
    bool is_string;
} fkey;

typedef struct fpolicy {
    const char *vhost, *name, *pattern, *apply_to;
    int64_t priority;
    fkey keys[MAX_KEYS];
    size_t n_keys;
} fpolicy;

typedef struct fqueue {
    const char *name;
    rp_queue_type type;
    const char *policy;          /* NULL: none */
    const char *operator_policy; /* NULL: none */
    fkey effective[MAX_KEYS];
    size_t n_effective;
    bool dlx_argument;
    bool unreported; /* policy fields absent */
    const char *vhost; /* NULL: "/" */
} fqueue;

typedef struct fwrite_ {
    char vhost[64], name[64], pattern[8192], apply_to[32], was[300];
    int64_t priority;
    fkey keys[MAX_KEYS];
    char key_names[MAX_KEYS][32];
    size_t n_keys;
} fwrite_;

typedef struct fake {
    const char *version;
    fpolicy policies[8];
    size_t n_policies;
    fpolicy operator_policies[4];
    size_t n_operator_policies;
    fqueue queues[MAX_QUEUES];
    size_t n_queues;
    char names[MAX_QUEUES][32];
    fwrite_ writes[8];
    size_t n_writes;
    /* the lent page */
    rp_policy_queue page[MAX_QUEUES];
    rp_policy_key page_keys[MAX_QUEUES * MAX_KEYS];
    int64_t now;
    unsigned sleeps;
    bool refuse; /* every write refused (no policymaker tag) */
    unsigned lists;      /* list_queues calls at page 1 */
    unsigned lists_args; /* of which with_arguments */
} fake;

static rp_status f_version(void *self, rp_policy_version *out) {
    fake *f = self;
    memset(out, 0, sizeof *out);
    assert_int_equal(sscanf(f->version, "%d.%d.%d", &out->major, &out->minor, &out->patch), 3);
    snprintf(out->text, sizeof out->text, "%s", f->version);
    return RP_OK;
}

static rp_status f_wide(void *self, rp_wide_timeout_state *state, int64_t *ms, const char **why) {
    (void)self;
    *state = RP_WIDE_TIMEOUT_UNREADABLE;
    *ms = 0;
    *why = "GET /api/config/effective answered 404";
    return RP_OK;
}

static rp_status f_fill(const fpolicy *p, rp_policy *out) {
    rp_status st = rp_policy_set_string(&out->vhost, p->vhost);
    if (st == RP_OK) st = rp_policy_set_string(&out->name, p->name);
    if (st == RP_OK) st = rp_policy_set_string(&out->pattern, p->pattern);
    if (st == RP_OK) st = rp_policy_set_string(&out->apply_to, p->apply_to);
    out->has_priority = true;
    out->priority = p->priority;
    out->definition_is_object = true;
    for (size_t i = 0; st == RP_OK && i < p->n_keys; i++)
        st = rp_policy_add_key(out, p->keys[i].key, !p->keys[i].is_string, p->keys[i].value,
                               p->keys[i].is_string);
    return st;
}

static rp_status f_list_policies(void *self, bool op, rp_policy_list *out) {
    fake *f = self;
    const fpolicy *ps = op ? f->operator_policies : f->policies;
    size_t n = op ? f->n_operator_policies : f->n_policies;
    for (size_t i = 0; i < n; i++) {
        rp_policy *p;
        assert_int_equal(rp_policy_list_push(out, &p), RP_OK);
        assert_int_equal(f_fill(&ps[i], p), RP_OK);
    }
    return RP_OK;
}

static fpolicy *f_find(fake *f, const char *vhost, const char *name) {
    for (size_t i = 0; i < f->n_policies; i++)
        if (strcmp(f->policies[i].vhost, vhost) == 0 && strcmp(f->policies[i].name, name) == 0)
            return &f->policies[i];
    return NULL;
}

static rp_status f_get_policy(void *self, const char *vhost, const char *name, rp_policy *out,
                              bool *found) {
    fake *f = self;
    fpolicy *p = f_find(f, vhost, name);
    *found = p != NULL;
    return p ? f_fill(p, out) : RP_OK;
}

/* Records the write and keeps it, so that reading it back finds it. */
static rp_status f_put_policy(void *self, const char *vhost, const rp_policy *p, const char *was,
                              bool *refused) {
    fake *f = self;
    *refused = false;
    if (f->refuse) {
        *refused = true;
        return RP_ERR_FORBIDDEN;
    }
    assert_true(f->n_writes < 8);
    fwrite_ *w = &f->writes[f->n_writes++];
    memset(w, 0, sizeof *w);
    snprintf(w->vhost, sizeof w->vhost, "%s", vhost);
    snprintf(w->name, sizeof w->name, "%s", p->name);
    snprintf(w->pattern, sizeof w->pattern, "%s", p->pattern);
    snprintf(w->apply_to, sizeof w->apply_to, "%s", p->apply_to);
    snprintf(w->was, sizeof w->was, "%s", was);
    w->priority = p->priority;
    assert_true(p->n_keys <= MAX_KEYS);
    for (size_t i = 0; i < p->n_keys; i++) {
        assert_true(p->keys[i].is_int);
        snprintf(w->key_names[i], sizeof w->key_names[i], "%s", p->keys[i].key);
        w->keys[i].key = w->key_names[i];
        w->keys[i].value = p->keys[i].value;
    }
    w->n_keys = p->n_keys;
    fpolicy *kept = f_find(f, vhost, p->name);
    if (kept == NULL) {
        assert_true(f->n_policies < 8);
        kept = &f->policies[f->n_policies++];
    }
    *kept = (fpolicy){.vhost = w->vhost, .name = w->name, .pattern = w->pattern,
                      .apply_to = w->apply_to, .priority = w->priority, .n_keys = w->n_keys};
    memcpy(kept->keys, w->keys, sizeof w->keys);
    return RP_OK;
}

static rp_status f_list_queues(void *self, size_t page, bool with_arguments,
                               rp_policy_queue_page *out) {
    fake *f = self;
    assert_int_equal(page, 1);
    f->lists++;
    if (with_arguments) f->lists_args++;
    size_t used = 0;
    for (size_t i = 0; i < f->n_queues; i++) {
        const fqueue *q = &f->queues[i];
        rp_policy_queue *p = &f->page[i];
        memset(p, 0, sizeof *p);
        p->vhost = q->vhost ? q->vhost : "/";
        p->name = q->name;
        p->type = q->type;
        p->policy_known = p->effective_known = !q->unreported;
        p->policy = q->policy;
        p->operator_policy = q->operator_policy;
        p->dlx_argument = q->dlx_argument;
        p->effective = &f->page_keys[used];
        for (size_t k = 0; k < q->n_effective; k++) {
            rp_policy_key *pk = &f->page_keys[used++];
            pk->key = (char *)q->effective[k].key;
            pk->is_string = q->effective[k].is_string;
            pk->is_int = !pk->is_string;
            pk->value = q->effective[k].value;
            p->n_effective++;
        }
    }
    out->queues = f->page;
    out->n = f->n_queues;
    out->last = true;
    return RP_OK;
}

static const char *f_last_error(void *self) {
    (void)self;
    return "";
}

static int64_t f_mono(void *self) {
    return ((fake *)self)->now;
}

static void f_sleep(void *self, long ms) {
    fake *f = self;
    f->now += ms;
    f->sleeps++;
}

static rp_policy_port f_port(fake *f) {
    return (rp_policy_port){.self = f, .version = f_version, .wide_timeout = f_wide,
                            .list_policies = f_list_policies, .get_policy = f_get_policy,
                            .put_policy = f_put_policy, .list_queues = f_list_queues,
                            .last_error = f_last_error, .mono_ms = f_mono, .sleep_ms = f_sleep};
}

static void f_queue(fake *f, const char *name, rp_queue_type type, bool dlx) {
    assert_true(f->n_queues < MAX_QUEUES);
    fqueue *q = &f->queues[f->n_queues++];
    memset(q, 0, sizeof *q);
    q->name = name;
    q->type = type;
    q->dlx_argument = dlx;
}

static rp_pass_policy_options options(void) {
    rp_pass_policy_options o;
    rp_pass_policy_options_default(&o);
    o.owned_pattern = OWNED;
    o.dead_letter_pattern = DLQ;
    o.verify_wait_ms = 3000;
    o.poll_ms = 1000;
    return o;
}

static char *pattern_excluding(const char *const *names, size_t n) {
    char *p = NULL;
    char err[200];
    assert_int_equal(rp_pass_policy_pattern_excluding(OWNED, DLQ, names, n, &p, err, sizeof err),
                     RP_OK);
    return p;
}

static const rp_policy_check *entry(const rp_report *r, const char *name) {
    for (size_t i = 0; i < r->n_policies; i++)
        if (strcmp(r->policies[i].name, name) == 0) return &r->policies[i];
    fail_msg("no report entry for policy %s", name);
    return NULL;
}

/* How many notes contain s. */
static size_t notes_with(const rp_report *r, const char *s) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], s) != NULL) n++;
    return n;
}

static void dump(const rp_report *r) {
    for (size_t i = 0; i < r->n_notes; i++) print_message("note: %s\n", r->notes[i]);
    for (size_t i = 0; i < r->n_policies; i++)
        print_message("policy %s %s: %s\n", r->policies[i].name,
                      r->policies[i].verified ? "verified" : "NOT verified", r->policies[i].detail);
}

static rp_status run(fake *f, const rp_pass_policy_options *o, rp_report *r,
                     rp_pass_policy_stats *s) {
    rp_report_init(r, o->dry_run);
    rp_policy_port port = f_port(f);
    rp_status st = rp_pass_policy_reconcile(&port, o, r, s);
    dump(r);
    return st;
}

/* ---- what is written per broker version --------------------------------------------- */

typedef struct want_write {
    const char *name, *apply_to;
    fkey keys[MAX_KEYS];
    size_t n_keys;
} want_write;

typedef struct version_case {
    const char *version;
    want_write writes[2];
    size_t n_writes;
    const char *note;    /* a note that must be there (NULL: none) */
    const char *no_note; /* one that must not */
} version_case;

static void test_wanted_per_version(void **state) {
    (void)state;
    static const version_case cases[] = {
        {"3.10.8",
         {{"vibey-reap", "queues", {{"delivery-limit", 20, false}}, 1}},
         1,
         "RabbitMQ 3.10.8 accepts neither the consumer-timeout policy key nor apply-to per queue "
         "type: reaper writes vibey-reap (apply-to queues, delivery-limit 20 only, which the "
         "broker applies to quorum queues), and the broker-wide consumer_timeout is what bounds "
         "hung handlers (a)",
         "enforces consumer timeouts"},
        {"3.12.0",
         {{"vibey-reap", "quorum_queues", {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2},
          {"vibey-reap-classic", "classic_queues", {{"consumer-timeout", 21600000, false}}, 1}},
         2,
         NULL,
         "accepts neither"},
        {"4.0.5",
         {{"vibey-reap", "quorum_queues", {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2},
          {"vibey-reap-classic", "classic_queues", {{"consumer-timeout", 21600000, false}}, 1}},
         2,
         NULL,
         "enforces consumer timeouts"},
        {"4.3.0",
         {{"vibey-reap", "quorum_queues", {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2},
          {"vibey-reap-classic", "classic_queues", {{"consumer-timeout", 21600000, false}}, 1}},
         2,
         "RabbitMQ 4.3.0 enforces consumer timeouts on quorum queues only: vibey-reap-classic "
         "sets consumer-timeout on classic queues, where the broker does not bound hung handlers",
         "accepts neither"},
    };
    char *pattern = pattern_excluding(NULL, 0);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const version_case *vc = &cases[c];
        print_message("case %s\n", vc->version);
        fake *f = calloc(1, sizeof *f);
        f->version = vc->version;
        f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
        rp_pass_policy_options o = options();
        o.priority = 3;
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        assert_int_equal(f->n_writes, vc->n_writes);
        assert_int_equal(s.writes, vc->n_writes);
        assert_int_equal(r.n_policies, vc->n_writes);
        for (size_t i = 0; i < vc->n_writes; i++) {
            const want_write *ww = &vc->writes[i];
            const fwrite_ *w = &f->writes[i];
            assert_string_equal(w->vhost, "/");
            assert_string_equal(w->name, ww->name);
            assert_string_equal(w->apply_to, ww->apply_to);
            assert_string_equal(w->pattern, pattern);
            assert_string_equal(w->was, "absent");
            assert_int_equal(w->priority, 3);
            assert_int_equal(w->n_keys, ww->n_keys);
            for (size_t k = 0; k < ww->n_keys; k++) {
                assert_string_equal(w->keys[k].key, ww->keys[k].key);
                assert_int_equal(w->keys[k].value, ww->keys[k].value);
            }
            assert_non_null(strstr(entry(&r, ww->name)->detail,
                                   "written on vhost / and read back in force"));
        }
        if (vc->note) assert_int_equal(notes_with(&r, vc->note), 1);
        assert_int_equal(notes_with(&r, vc->no_note), 0);
        assert_int_equal(s.version.major * 100 + s.version.minor,
                         atoi(vc->version) * 100 + atoi(strchr(vc->version, '.') + 1));
        rp_report_cleanup(&r);
        free(f);
    }
    free(pattern);
}

/* ---- the semantic diff: what is there and wanted is not written ---------------------------- */

typedef struct diff_case {
    const char *what;
    fpolicy have;   /* vibey-reap as it is on the broker (pattern filled in) */
    size_t writes;  /* of vibey-reap */
    const char *was; /* why it is written */
} diff_case;

static void test_unchanged_is_not_written(void **state) {
    (void)state;
    static const diff_case cases[] = {
        {"same", {"/", "vibey-reap", NULL, "quorum_queues", 0,
                  {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2}, 0, NULL},
        {"same keys in another order", {"/", "vibey-reap", NULL, "quorum_queues", 0,
                  {{"delivery-limit", 20, false}, {"consumer-timeout", 21600000, false}}, 2}, 0, NULL},
        {"another limit", {"/", "vibey-reap", NULL, "quorum_queues", 0,
                  {{"consumer-timeout", 21600000, false}, {"delivery-limit", 5, false}}, 2}, 1,
         "delivery-limit"},
        {"a key more", {"/", "vibey-reap", NULL, "quorum_queues", 0,
                  {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false},
                   {"max-length", 10, false}}, 3}, 1, "definition keys"},
        {"another apply-to and priority", {"/", "vibey-reap", NULL, "all", 7,
                  {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2}, 1,
         "apply-to all, priority 7"},
    };
    char *pattern = pattern_excluding(NULL, 0);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        print_message("case %s\n", cases[c].what);
        fake *f = calloc(1, sizeof *f);
        f->version = "4.0.5";
        f->policies[0] = cases[c].have;
        f->policies[0].pattern = pattern;
        f->policies[1] = (fpolicy){"/", "vibey-reap-classic", pattern, "classic_queues", 0,
                                   {{"consumer-timeout", 21600000, false}}, 1};
        f->n_policies = 2;
        f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
        f->queues[0].policy = "vibey-reap";
        f->queues[0].effective[0] = (fkey){"consumer-timeout", 21600000, false};
        f->queues[0].effective[1] = (fkey){"delivery-limit", 20, false};
        f->queues[0].n_effective = 2;
        rp_pass_policy_options o = options();
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        assert_int_equal(f->n_writes, cases[c].writes);
        if (cases[c].writes) {
            assert_string_equal(f->writes[0].name, "vibey-reap");
            assert_string_equal(f->writes[0].was, cases[c].was);
        } else {
            assert_string_equal(entry(&r, "vibey-reap")->detail,
                                "in force on vhost /, unchanged; carried as wanted by 1 of 1 "
                                "owned quorum queues");
        }
        assert_true(entry(&r, "vibey-reap")->verified);
        assert_string_equal(entry(&r, "vibey-reap-classic")->detail,
                            "in force on vhost /, unchanged; no owned classic queues (other than "
                            "dead-letter queues) to check it on yet");
        rp_report_cleanup(&r);
        free(f);
    }
    free(pattern);
}

/* ---- conflicts with other policies ---------------------------------------------------------- */

typedef struct conflict_case {
    const char *what;
    fpolicy other;
    bool operator_policy;
    const char *note;
    bool verified; /* vibey-reap's entry */
} conflict_case;

static void test_conflicts(void **state) {
    (void)state;
    static const conflict_case cases[] = {
        {"higher priority", {"/", "ops", "^vibey", "quorum_queues", 5, {{"max-length", 100, false}}, 1},
         false,
         "policy conflict: policy ops on vhost / (priority 5, apply-to quorum_queues) matches 1 "
         "owned queue(s), e.g. vibey.orders on vhost /, and takes precedence over reaper's policy "
         "(priority 2) there",
         false},
        {"same priority", {"/", "ops", "orders", "all", 2, {{"max-length", 100, false}}, 1},
         false,
         "policy conflict: policy ops on vhost / has reaper's priority 2 (apply-to all) and "
         "matches 1 owned queue(s), e.g. vibey.orders on vhost /: which of the two applies there "
         "is the broker's choice",
         false},
        {"lower priority", {"/", "ops", ".*", "queues", 1,
                            {{"max-length", 100, false}, {"dead-letter-exchange", 0, true}}, 2},
         false,
         "policy conflict: reaper's policy (priority 2) displaces policy ops on vhost / "
         "(priority 1, apply-to queues, max-length=100, dead-letter-exchange) on 1 owned "
         "queue(s), e.g. vibey.orders on vhost /: its definition no longer applies there",
         true},
        {"operator policy", {"/", "limits", "^vibey", "quorum_queues", 0, {{"delivery-limit", 50, false}}, 1},
         true,
         "operator policy limits on vhost / (apply-to quorum_queues, delivery-limit=50) applies "
         "to 1 owned queue(s), e.g. vibey.orders on vhost /: the broker merges it with reaper's "
         "policy and the stricter value of a key both set wins",
         true},
        {"classic queues only: no conflict on a quorum queue",
         {"/", "ops", "^vibey", "classic_queues", 9, {{"max-length", 1, false}}, 1},
         false, NULL, true},
        {"another vhost: no conflict", {"other", "ops", "^vibey", "all", 9, {{"max-length", 1, false}}, 1},
         false, NULL, true},
    };
    char *pattern = pattern_excluding(NULL, 0);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const conflict_case *cc = &cases[c];
        print_message("case %s\n", cc->what);
        fake *f = calloc(1, sizeof *f);
        f->version = "4.0.5";
        f->policies[0] = (fpolicy){"/", "vibey-reap", pattern, "quorum_queues", 2,
                                   {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2};
        f->policies[1] = (fpolicy){"/", "vibey-reap-classic", pattern, "classic_queues", 2,
                                   {{"consumer-timeout", 21600000, false}}, 1};
        f->n_policies = 2;
        if (cc->operator_policy) f->operator_policies[f->n_operator_policies++] = cc->other;
        else f->policies[f->n_policies++] = cc->other;
        f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
        f->queues[0].policy = "vibey-reap";
        f->queues[0].effective[0] = (fkey){"consumer-timeout", 21600000, false};
        f->queues[0].effective[1] = (fkey){"delivery-limit", 20, false};
        f->queues[0].n_effective = 2;
        rp_pass_policy_options o = options();
        o.priority = 2;
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        assert_int_equal(f->n_writes, 0);
        /* An unverified policy adds its note and fails the pass (issue 18
         * item 5). */
        size_t settled = cc->verified ? 0 : 1;
        if (cc->note) {
            assert_int_equal(r.n_notes, 1 + settled);
            assert_string_equal(r.notes[0], cc->note);
            assert_int_equal(s.conflicts, 1);
        } else {
            assert_int_equal(r.n_notes, settled);
            assert_int_equal(s.conflicts, 0);
        }
        assert_int_equal(notes_with(&r, "policy vibey-reap is not verified: the pass is not ok"),
                         settled);
        assert_int_equal(r.ok, cc->verified);
        assert_int_equal(entry(&r, "vibey-reap")->verified, cc->verified);
        if (!cc->verified)
            assert_non_null(strstr(entry(&r, "vibey-reap")->detail,
                                   "; 1 are also matched by another policy of the same or a "
                                   "higher priority (e.g. vibey.orders on vhost / (policy ops))"));
        rp_report_cleanup(&r);
        free(f);
    }
    free(pattern);
}

/* ---- issue 19 item 1: each vhost's own verdict ------------------------------------------ */

static const rp_policy_vhost *vhost_of(const rp_policy_check *pc, const char *vhost) {
    for (size_t i = 0; i < pc->n_vhosts; i++)
        if (strcmp(pc->vhosts[i].vhost, vhost) == 0) return &pc->vhosts[i];
    fail_msg("no record of vhost %s on policy %s", vhost, pc->name);
    return NULL;
}

/* Two watched vhosts, both with reaper's policies in force and a selected
 * quorum queue carrying vibey-reap; on vhost b another policy of a higher
 * priority also matches it: vibey-reap is verified on / and not on b (the
 * entry, one per policy, is not verified, its detail as before). In a dry
 * run with vibey-reap-classic absent on b: that one is not in force there,
 * so it is not verified on b, and is on / (no classic queues to carry it). */
static void test_per_vhost_verdicts(void **state) {
    (void)state;
    char *pattern = pattern_excluding(NULL, 0);
    static const char *const also[] = {"b"};
    for (int dry = 0; dry < 2; dry++) {
        fake *f = calloc(1, sizeof *f);
        f->version = "4.0.5";
        const char *vhosts[] = {"/", "b"};
        for (size_t v = 0; v < 2; v++) {
            f->policies[f->n_policies++] =
                (fpolicy){vhosts[v], "vibey-reap", pattern, "quorum_queues", 0,
                          {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2};
            if (!dry || v == 0)
                f->policies[f->n_policies++] =
                    (fpolicy){vhosts[v], "vibey-reap-classic", pattern, "classic_queues", 0,
                              {{"consumer-timeout", 21600000, false}}, 1};
            f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
            fqueue *q = &f->queues[f->n_queues - 1];
            q->vhost = vhosts[v];
            q->policy = "vibey-reap";
            q->effective[0] = (fkey){"consumer-timeout", 21600000, false};
            q->effective[1] = (fkey){"delivery-limit", 20, false};
            q->n_effective = 2;
        }
        f->policies[f->n_policies++] =
            (fpolicy){"b", "ops", "^vibey", "quorum_queues", 5, {{"max-length", 100, false}}, 1};
        rp_pass_policy_options o = options();
        o.also_vhosts = also;
        o.n_also_vhosts = 1;
        o.dry_run = dry;
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        assert_int_equal(f->n_writes, 0);
        assert_int_equal(r.n_policies, 2);
        const rp_policy_check *q = entry(&r, "vibey-reap");
        assert_false(q->verified);
        assert_non_null(strstr(q->detail, "in force on vhost /, unchanged; in force on vhost b, "
                                          "unchanged; carried as wanted by 2 of 2 owned quorum "
                                          "queues; 1 are also matched by another policy of the "
                                          "same or a higher priority (e.g. vibey.orders on "
                                          "vhost b (policy ops))"));
        assert_int_equal(q->n_vhosts, 2);
        assert_true(vhost_of(q, "/")->verified);
        assert_false(vhost_of(q, "b")->verified);
        const rp_policy_check *c = entry(&r, "vibey-reap-classic");
        assert_int_equal(c->verified, !dry);
        assert_int_equal(c->n_vhosts, 2);
        assert_true(vhost_of(c, "/")->verified);
        assert_int_equal(vhost_of(c, "b")->verified, !dry);
        rp_report_cleanup(&r);
        free(f);
    }
    free(pattern);
}

/* ---- quorum queues without a dead-letter exchange ---------------------------------------- */

static void test_nodlx_left_out_by_name(void **state) {
    (void)state;
    fake *f = calloc(1, sizeof *f);
    f->version = "4.0.5";
    f_queue(f, "vibey.nodlx", RP_QUEUE_TYPE_QUORUM, false);
    f_queue(f, "vibey.safe", RP_QUEUE_TYPE_QUORUM, true);
    f_queue(f, "vibey.classic", RP_QUEUE_TYPE_CLASSIC, false); /* a classic queue: not concerned */
    /* Its dead-letter exchange comes from an operator policy in force under reaper's. */
    f_queue(f, "vibey.opdlx", RP_QUEUE_TYPE_QUORUM, false);
    f->queues[3].effective[0] = (fkey){"dead-letter-exchange", 0, true};
    f->queues[3].n_effective = 1;
    rp_pass_policy_options o = options();
    o.exclude[0] = "vibey.control";
    o.n_exclude = 1;
    rp_report r;
    rp_pass_policy_stats s;
    assert_int_equal(run(f, &o, &r, &s), RP_OK);
    const char *ex[] = {"vibey.control", "vibey.nodlx"};
    char *pattern = pattern_excluding(ex, 2);
    assert_int_equal(f->n_writes, 2);
    assert_string_equal(f->writes[0].pattern, pattern);
    assert_string_equal(f->writes[1].pattern, pattern);
    assert_int_equal(f->writes[0].n_keys, 2);
    assert_string_equal(f->writes[0].keys[1].key, "delivery-limit");
    assert_int_equal(notes_with(&r, "1 owned quorum queue(s) have no dead-letter exchange (e.g. "
                                    "vibey.nodlx on vhost /): reaper's policy leaves them out, "
                                    "since its delivery-limit would make the broker drop a poison "
                                    "message there (so they get no consumer-timeout from reaper "
                                    "either); a limit in force there anyway is surfaced as POISON"),
                     1);
    rp_report_cleanup(&r);
    free(pattern);
    free(f);
}

static void test_nodlx_past_100_no_delivery_limit(void **state) {
    (void)state;
    for (size_t n = 100; n <= 101; n++) {
        print_message("case %zu queues\n", n);
        fake *f = calloc(1, sizeof *f);
        f->version = n == 100 ? "4.0.5" : "3.10.8";
        for (size_t i = 0; i < n; i++) {
            snprintf(f->names[i], sizeof f->names[i], "vibey.q%03zu", i);
            f_queue(f, f->names[i], RP_QUEUE_TYPE_QUORUM, false);
        }
        rp_pass_policy_options o = options();
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        const fwrite_ *w = &f->writes[0];
        assert_string_equal(w->name, "vibey-reap");
        if (n == 100) {
            /* Each left out by name, the limit kept for the others. */
            const char *ex[100];
            for (size_t i = 0; i < n; i++) ex[i] = f->names[i];
            char *pattern = pattern_excluding(ex, n);
            assert_string_equal(w->pattern, pattern);
            free(pattern);
            assert_int_equal(w->n_keys, 2);
            assert_string_equal(w->keys[1].key, "delivery-limit");
            assert_int_equal(notes_with(&r, "100 owned quorum queue(s) have no dead-letter "
                                            "exchange (e.g. vibey.q000 on vhost /): reaper's "
                                            "policy leaves them out"),
                             1);
        } else {
            /* Past 100: no name left out, and no delivery-limit at all. */
            char *pattern = pattern_excluding(NULL, 0);
            assert_string_equal(w->pattern, pattern);
            free(pattern);
            assert_int_equal(w->n_keys, 0);
            assert_string_equal(w->apply_to, "queues");
            assert_int_equal(notes_with(&r, "101 owned quorum queue(s) have no dead-letter "
                                            "exchange (e.g. vibey.q000 on vhost /), more than "
                                            "reaper leaves out of its policy by name (100): "
                                            "vibey-reap carries no delivery-limit at all, so "
                                            "that the broker never drops a poison message "
                                            "because of reaper"),
                             1);
            assert_int_equal(notes_with(&r, "leaves them out, since"), 0);
        }
        rp_report_cleanup(&r);
        free(f);
    }
}

/* ---- the queue check --------------------------------------------------------------------- */

typedef struct check_case {
    const char *what;
    fqueue queue;
    bool verified;
    const char *detail; /* after "in force on vhost /, unchanged" */
    unsigned sleeps;    /* polls before the mismatch counts */
} check_case;

static void test_queue_check(void **state) {
    (void)state;
    static const check_case cases[] = {
        {"carried", {"vibey.a", RP_QUEUE_TYPE_QUORUM, "vibey-reap", NULL,
                     {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2, true, false, NULL},
         true, "; carried as wanted by 1 of 1 owned quorum queues", 0},
        {"other values", {"vibey.a", RP_QUEUE_TYPE_QUORUM, "vibey-reap", "limits",
                          {{"consumer-timeout", 21600000, false}, {"delivery-limit", 5, false}}, 2, true, false, NULL},
         false, "; carried as wanted by 0 of 1 owned quorum queues; 1 show other values in force "
                "(e.g. vibey.a on vhost /: delivery-limit 5, operator policy limits)", 3},
        {"no policy", {"vibey.a", RP_QUEUE_TYPE_QUORUM, NULL, NULL, {{0}}, 0, true, false, NULL},
         false, "; carried as wanted by 0 of 1 owned quorum queues; 1 carry no policy (e.g. "
                "vibey.a on vhost /)", 3},
        {"another policy", {"vibey.a", RP_QUEUE_TYPE_QUORUM, "mine", NULL, {{0}}, 0, true, false, NULL},
         false, "; carried as wanted by 0 of 1 owned quorum queues; 1 carry another policy (e.g. "
                "vibey.a on vhost / (policy mine))", 3},
        {"not reporting", {"vibey.a", RP_QUEUE_TYPE_QUORUM, NULL, NULL, {{0}}, 0, true, true, NULL},
         true, "; carried as wanted by 0 of 1 owned quorum queues; 1 do not report their policy "
               "yet and were not checked (e.g. vibey.a on vhost /)", 3},
        {"a dead-letter queue carrying it", {"vibey.a.dlq", RP_QUEUE_TYPE_QUORUM, "vibey-reap", NULL,
                                             {{0}}, 0, true, false, NULL},
         false, "; no owned quorum queues (other than dead-letter queues) to check it on yet; it "
                "applies to 1 owned dead-letter queue(s) (e.g. vibey.a.dlq on vhost /)", 3},
    };
    char *pattern = pattern_excluding(NULL, 0);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const check_case *cc = &cases[c];
        print_message("case %s\n", cc->what);
        fake *f = calloc(1, sizeof *f);
        f->version = "4.0.5";
        f->policies[0] = (fpolicy){"/", "vibey-reap", pattern, "quorum_queues", 0,
                                   {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}}, 2};
        f->policies[1] = (fpolicy){"/", "vibey-reap-classic", pattern, "classic_queues", 0,
                                   {{"consumer-timeout", 21600000, false}}, 1};
        f->n_policies = 2;
        f->queues[0] = cc->queue;
        f->n_queues = 1;
        rp_pass_policy_options o = options();
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        assert_int_equal(f->n_writes, 0);
        char want[600];
        snprintf(want, sizeof want, "in force on vhost /, unchanged%s", cc->detail);
        assert_string_equal(entry(&r, "vibey-reap")->detail, want);
        assert_int_equal(entry(&r, "vibey-reap")->verified, cc->verified);
        /* The one vhost's own verdict is the entry's (issue 19 item 1). */
        assert_int_equal(entry(&r, "vibey-reap")->n_vhosts, 1);
        assert_string_equal(entry(&r, "vibey-reap")->vhosts[0].vhost, "/");
        assert_int_equal(entry(&r, "vibey-reap")->vhosts[0].verified, cc->verified);
        assert_int_equal(f->sleeps, cc->sleeps);
        rp_report_cleanup(&r);
        free(f);
    }
    free(pattern);
}

/* ---- issue 18 item 5: a pass is ok only if the policy is absent or verified ---- */

static void test_policies_ok_rule(void **state) {
    (void)state;
    rp_policy_check two[2] = {{"vibey-reap", true, "d", NULL, 0}, {"vibey-reap-classic", true, "d", NULL, 0}};
    assert_true(rp_pass_policies_ok(NULL, 0, false)); /* absent */
    assert_true(rp_pass_policies_ok(two, 2, false));  /* all verified */
    two[1].verified = false;
    assert_false(rp_pass_policies_ok(two, 2, false)); /* one not */
    assert_false(rp_pass_policies_ok(two + 1, 1, false));
    assert_true(rp_pass_policies_ok(two, 1, false)); /* only the verified one */
    assert_true(rp_pass_policies_ok(two, 2, true));  /* a dry run writes none */
    assert_false(rp_pass_policies_ok(NULL, 1, false));

    /* Settling: only the entries from `from` on count. */
    rp_report r;
    rp_report_init(&r, false);
    assert_int_equal(rp_report_add_policy(&r, "old", false, "an earlier entry"), RP_OK);
    assert_int_equal(rp_pass_policies_settle(&r, 1, false), RP_OK); /* none added: absent */
    assert_true(r.ok);
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap", true, "in force"), RP_OK);
    assert_int_equal(rp_pass_policies_settle(&r, 1, false), RP_OK);
    assert_true(r.ok);
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap-classic", false, "refused"), RP_OK);
    assert_int_equal(rp_pass_policies_settle(&r, 1, true), RP_OK);
    assert_true(r.ok);
    assert_int_equal(r.n_notes, 0);
    assert_int_equal(rp_pass_policies_settle(&r, 1, false), RP_OK);
    assert_false(r.ok);
    assert_int_equal(r.n_notes, 1);
    assert_string_equal(r.notes[0], "policy vibey-reap-classic is not verified: the pass is not ok");
    assert_int_equal(rp_pass_policies_settle(NULL, 0, false), RP_ERR_INVALID);
    rp_report_cleanup(&r);
}

/* The reconcile applies it: a refused write (no policymaker tag) makes the
 * pass not ok; the same broker with the policy in force, or a dry run,
 * leaves it ok. */
static void test_refused_policy_fails_the_pass(void **state) {
    (void)state;
    for (int c = 0; c < 3; c++) {
        fake *f = calloc(1, sizeof *f);
        f->version = "4.0.5";
        f->refuse = c == 0;
        f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
        rp_pass_policy_options o = options();
        o.dry_run = c == 2;
        o.verify_wait_ms = 0;
        rp_report r;
        rp_pass_policy_stats s;
        assert_int_equal(run(f, &o, &r, &s), RP_OK);
        if (c == 0) {
            assert_int_equal(s.refused, 2);
            assert_false(entry(&r, "vibey-reap")->verified);
            assert_false(r.ok);
            assert_int_equal(notes_with(&r, "is not verified: the pass is not ok"), 2);
        } else if (c == 1) {
            /* Written: the queue does not show it yet in the fake, so the
             * entry says what it found; ok follows the entries exactly. */
            bool all = entry(&r, "vibey-reap")->verified && entry(&r, "vibey-reap-classic")->verified;
            assert_int_equal(r.ok, all);
            assert_int_equal(notes_with(&r, "is not verified: the pass is not ok") == 0, all);
        } else {
            assert_int_equal(f->n_writes, 0);
            assert_true(r.ok);
            assert_int_equal(notes_with(&r, "is not verified"), 0);
        }
        rp_report_cleanup(&r);
        free(f);
    }
}


/* ---- one listing per sweep (issue 19 item 5) ------------------------------------------------ */

/* The sweep's listing as the pass keeps it: the fake's queues as one page,
 * ended whole (or not). The caller frees listing and pattern. */
static rp_queue_listing *sweep_listing(fake *f, bool whole, pcre2_code **owned) {
    int code;
    PCRE2_SIZE off;
    *owned = pcre2_compile((PCRE2_SPTR)OWNED, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    assert_non_null(*owned);
    rp_queue_listing *l = rp_queue_listing_new(*owned, 0);
    assert_non_null(l);
    rp_queue_listing_begin(l);
    rp_policy_queue_page pg;
    assert_int_equal(f_list_queues(f, 1, true, &pg), RP_OK);
    rp_queue_listing_add(l, pg.queues, pg.n);
    rp_queue_listing_end(l, whole);
    f->lists = f->lists_args = 0;
    return l;
}

/* A fake broker in the steady state: both policies in force as wanted, an
 * owned quorum queue carrying vibey-reap, one without a dead-letter
 * exchange (left out by name), and a queue reaper does not own. */
static fake *steady(const char *queue_policy) {
    fake *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->version = "4.0.5";
    static const char *const nodlx[] = {"vibey.nodlx"};
    char *pattern = pattern_excluding(nodlx, 1);
    f->policies[0] = (fpolicy){"/", "vibey-reap", pattern, "quorum_queues", 0,
                               {{"consumer-timeout", 21600000, false}, {"delivery-limit", 20, false}},
                               2};
    f->policies[1] = (fpolicy){"/", "vibey-reap-classic", pattern, "classic_queues", 0,
                               {{"consumer-timeout", 21600000, false}}, 1};
    f->n_policies = 2;
    f_queue(f, "vibey.orders", RP_QUEUE_TYPE_QUORUM, true);
    f->queues[0].policy = queue_policy;
    if (queue_policy != NULL) {
        f->queues[0].effective[0] = (fkey){"consumer-timeout", 21600000, false};
        f->queues[0].effective[1] = (fkey){"delivery-limit", 20, false};
        f->queues[0].n_effective = 2;
    }
    f_queue(f, "vibey.nodlx", RP_QUEUE_TYPE_QUORUM, false);
    f_queue(f, "other.work", RP_QUEUE_TYPE_QUORUM, true);
    return f;
}

static void test_listing_reused(void **state) {
    (void)state;
    /* Without the sweep's listing: the scan and the check list the broker. */
    fake *f = steady("vibey-reap");
    rp_pass_policy_options o = options();
    rp_report r0, r1;
    rp_pass_policy_stats s;
    assert_int_equal(run(f, &o, &r0, &s), RP_OK);
    assert_int_equal(f->lists, 2);
    assert_int_equal(s.listings, 2);
    assert_false(s.listing_reused);
    assert_int_equal(f->n_writes, 0);

    /* With it: no listing of the broker at all, and the same outcome. */
    pcre2_code *owned;
    rp_queue_listing *l = sweep_listing(f, true, &owned);
    assert_int_equal(rp_queue_listing_kept(l), 2); /* other.work is not kept */
    o.listing = l;
    assert_int_equal(run(f, &o, &r1, &s), RP_OK);
    assert_int_equal(f->lists, 0);
    assert_int_equal(s.listings, 0);
    assert_true(s.listing_reused);
    assert_int_equal(f->n_writes, 0);
    assert_int_equal(r1.n_policies, r0.n_policies);
    for (size_t i = 0; i < r0.n_policies; i++) {
        assert_string_equal(r1.policies[i].name, r0.policies[i].name);
        assert_string_equal(r1.policies[i].detail, r0.policies[i].detail);
        assert_int_equal(r1.policies[i].verified, r0.policies[i].verified);
    }
    assert_true(entry(&r1, "vibey-reap")->verified);
    assert_int_equal(r1.n_notes, r0.n_notes);
    for (size_t i = 0; i < r0.n_notes; i++) assert_string_equal(r1.notes[i], r0.notes[i]);
    assert_int_equal(notes_with(&r1, "vibey.nodlx"), 1);
    rp_report_cleanup(&r0);
    rp_report_cleanup(&r1);
    rp_queue_listing_free(l);
    pcre2_code_free(owned);

    /* A listing not read to its end is not used. */
    l = sweep_listing(f, false, &owned);
    o.listing = l;
    assert_int_equal(run(f, &o, &r1, &s), RP_OK);
    assert_int_equal(f->lists, 2);
    assert_int_equal(f->lists_args, 1);
    assert_false(s.listing_reused);
    rp_report_cleanup(&r1);
    rp_queue_listing_free(l);
    pcre2_code_free(owned);
    free((char *)f->policies[0].pattern);
    free(f);
}

/* After a write the check reads the broker; a listing that shows what the
 * statistics showed before (lagging) is looked at again on the broker. */
static void test_listing_fresh_after_write(void **state) {
    (void)state;
    fake *f = steady("vibey-reap");
    char *pattern = (char *)f->policies[0].pattern; /* a write replaces the fake's copy */
    f->policies[0].keys[1].value = 5; /* another delivery-limit: written */
    pcre2_code *owned;
    rp_queue_listing *l = sweep_listing(f, true, &owned);
    rp_pass_policy_options o = options();
    o.listing = l;
    rp_report r;
    rp_pass_policy_stats s;
    assert_int_equal(run(f, &o, &r, &s), RP_OK);
    assert_int_equal(f->n_writes, 1);
    assert_int_equal(f->lists_args, 0); /* the scan read the listing */
    assert_int_equal(f->lists, 1);      /* the check read the broker */
    assert_int_equal(s.listings, 1);
    assert_true(entry(&r, "vibey-reap")->verified);
    rp_report_cleanup(&r);
    rp_queue_listing_free(l);
    pcre2_code_free(owned);
    free(pattern);
    free(f);

    /* Nothing written, but the listing shows no policy on the queue yet:
     * the check polls the broker, which shows it. */
    f = steady(NULL);
    l = sweep_listing(f, true, &owned);
    f->queues[0].policy = "vibey-reap";
    f->queues[0].effective[0] = (fkey){"consumer-timeout", 21600000, false};
    f->queues[0].effective[1] = (fkey){"delivery-limit", 20, false};
    f->queues[0].n_effective = 2;
    o.listing = l;
    assert_int_equal(run(f, &o, &r, &s), RP_OK);
    assert_int_equal(f->n_writes, 0);
    assert_int_equal(f->sleeps, 1);
    assert_int_equal(f->lists, 1);
    assert_true(entry(&r, "vibey-reap")->verified);
    rp_report_cleanup(&r);
    rp_queue_listing_free(l);
    pcre2_code_free(owned);
    free((char *)f->policies[0].pattern);
    free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wanted_per_version),
        cmocka_unit_test(test_unchanged_is_not_written),
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_per_vhost_verdicts),
        cmocka_unit_test(test_nodlx_left_out_by_name),
        cmocka_unit_test(test_nodlx_past_100_no_delivery_limit),
        cmocka_unit_test(test_queue_check),
        cmocka_unit_test(test_policies_ok_rule),
        cmocka_unit_test(test_refused_policy_fails_the_pass),
        cmocka_unit_test(test_listing_reused),
        cmocka_unit_test(test_listing_fresh_after_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
