#include "rp_pass.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rp_object.h"
#include "rp_pass_internal.h"
#include "rp_publish.h"
#include "rp_sweep_vhosts.h"
#include "rp_text.h"

void rp_pass_options_default(rp_pass_options *o) {
    memset(o, 0, sizeof *o);
    rp_thresholds_default(&o->thresholds);
    o->dead_letter_peek_limit = 100;
    o->lease_batch_size = 100;
    o->max_report_verdicts = RP_PASS_REPORT_VERDICTS;
}

rp_status rp__pass_note(rp__pass *p, const char *fmt, ...) {
    char *note = NULL;
    va_list ap;
    va_start(ap, fmt);
    rp_status st = rp_text_vformat(&note, fmt, ap);
    va_end(ap);
    if (st != RP_OK) return st;
    st = rp_report_add_note(p->report, note);
    free(note);
    return st;
}

rp_status rp__pass_unreadable(rp__pass *p, rp_source src, const char *what, rp_status why) {
    const char *name = rp_source_string(src);
    bool listed = false;
    for (size_t i = 0; i < p->report->n_unreadable; i++)
        if (strcmp(p->report->unreadable[i], name) == 0) listed = true;
    rp_status st = listed ? RP_OK : rp_report_add_unreadable(p->report, name);
    if (st != RP_OK) return st;
    p->report->ok = false;
    char *note = NULL;
    st = rp_text_format(&note, "%s: %s: %s", name, what, rp_status_string(why));
    if (st != RP_OK) return st;
    bool noted = false;
    for (size_t i = 0; i < p->report->n_notes && !noted; i++)
        noted = strcmp(p->report->notes[i], note) == 0;
    if (!noted) st = rp_report_add_note(p->report, note);
    free(note);
    return st;
}

rp_status rp__pass_unreadable_object(rp__pass *p, const char *object) {
    p->report->ok = false;
    for (size_t i = 0; i < p->report->n_unreadable; i++)
        if (strcmp(p->report->unreadable[i], object) == 0) return RP_OK;
    return rp_report_add_unreadable(p->report, object);
}

rp_status rp__strs_add(rp__strs *l, const char *s) {
    if (rp__strs_has(l, s)) return RP_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **v = realloc(l->v, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        l->v = v;
        l->cap = cap;
    }
    char *c = strdup(s);
    if (c == NULL) return RP_ERR_NOMEM;
    l->v[l->n++] = c;
    return RP_OK;
}

bool rp__strs_has(const rp__strs *l, const char *s) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0) return true;
    return false;
}

void rp__strs_cleanup(rp__strs *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int rp_cmp_open(const void *a, const void *b) {
    return strcmp(((const rp__open_sighting *)a)->key, ((const rp__open_sighting *)b)->key);
}

static const rp__open_sighting *rp_find_open(const rp__pass *p, const char *key) {
    if (!p->open_known || p->n_open == 0) return NULL;
    rp__open_sighting probe = {.key = (char *)key};
    return bsearch(&probe, p->open, p->n_open, sizeof *p->open, rp_cmp_open);
}

static bool rp_was_seen(const rp__pass *p, const char *key) {
    for (size_t i = 0; i < p->n_seen; i++)
        if (strcmp(p->seen[i], key) == 0) return true;
    return false;
}

/* Takes ownership of key. */
static rp_status rp_add_seen(rp__pass *p, char *key) {
    if (p->n_seen == p->cap_seen) {
        size_t cap = p->cap_seen ? p->cap_seen * 2 : 16;
        char **s = realloc(p->seen, cap * sizeof *s);
        if (s == NULL) {
            free(key);
            return RP_ERR_NOMEM;
        }
        p->seen = s;
        p->cap_seen = cap;
    }
    p->seen[p->n_seen++] = key;
    return RP_OK;
}

rp_status rp__pass_surface(rp__pass *p, rp_verdict *v) {
    char *key = NULL;
    rp_status st = rp_sighting_key_for(v, &key);
    if (st != RP_OK) goto out;
    /* The same condition twice in one pass (a queue listed on two pages
     * while the listing shifted) is one sighting. */
    if (rp_was_seen(p, key)) {
        free(key);
        goto out;
    }
    st = rp_add_seen(p, key);
    if (st != RP_OK) goto out;
    /* Open when the pass began: it was recorded then, not again now. */
    if (rp_find_open(p, key) != NULL) goto out;
    if (p->opt->dry_run) {
        st = rp_report_add_verdict(p->report, v);
        goto out;
    }
    bool opened = false;
    rp_event_ref ev = {0};
    rp_status ost = p->ports->store.open_sighting(p->ports->store.self, key, v, &opened, &ev);
    if (ost != RP_OK) {
        /* It could not be recorded, so it is reported now and will be
         * offered again by the next pass. */
        st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "opening a sighting", ost);
        if (st == RP_OK) st = rp_report_add_verdict(p->report, v);
        goto out;
    }
    /* Another reaper may have opened it since the pass began: then it is
     * theirs to report. */
    if (!opened) goto out;
    st = rp_publish_event(p->ports, &ev, v, p->report);
    if (st == RP_OK) st = rp_report_add_verdict(p->report, v);
out:
    rp_verdict_cleanup(v);
    return st;
}

rp_status rp__pass_load_open(rp__pass *p) {
    rp_sighting_list list = {0};
    rp_status lst = p->ports->store.list_open_sightings(p->ports->store.self, &list);
    if (lst != RP_OK) {
        p->open_known = false;
        p->store_whole = false;
        return rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "listing open sightings", lst);
    }
    if (list.n == 0) {
        p->open_known = true;
        return RP_OK;
    }
    p->open = calloc(list.n, sizeof *p->open);
    if (p->open == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < list.n; i++) {
        const rp_sighting_row *r = &list.rows[i];
        p->open[i].key = strdup(r->key ? r->key : "");
        if (p->open[i].key == NULL) return RP_ERR_NOMEM;
        p->open[i].condition = r->condition;
        p->open[i].opened_seq = r->opened_seq;
        p->open[i].opened_at = r->opened_at;
        p->n_open++;
    }
    qsort(p->open, p->n_open, sizeof *p->open, rp_cmp_open);
    p->open_known = true;
    return RP_OK;
}

/* Whether the queue subject's vhost is one the pass listed (a subject
 * that names no queue: as before, the listing's). */
static bool rp_sweep_vhosts_listed(const rp_pass_options *opt, const char *subject) {
    char *vhost = NULL, *name = NULL;
    if (rp_object_queue_split(subject, &vhost, &name) != RP_OK) return true;
    bool listed = rp_sweep_vhosts_has(opt->vhosts, opt->n_vhosts, vhost);
    free(vhost);
    free(name);
    return listed;
}

/* Whether this pass judged the condition of sighting parts whole enough to
 * clear it. */
static bool rp_may_clear(const rp__pass *p, const rp_sighting_key_parts *parts) {
    if (parts->source == RP_SOURCE_JOB_QUEUE) {
        if (p->targeted) return false; /* a targeted check reads no job table */
        if (!p->store_whole) return false;
        if (parts->condition == RP_COND_STALLED) {
            /* A job subject names no project: only a pass over every
             * project that read the long-held rows whole clears it. */
            return p->stalled_read && p->opt->project == NULL;
        }
        if (parts->condition == RP_COND_WAITING_DEPTH || parts->condition == RP_COND_WEDGED ||
            parts->condition == RP_COND_DIVERGENT) {
            if (!(parts->condition == RP_COND_WEDGED      ? p->wedged_read
                  : parts->condition == RP_COND_DIVERGENT ? p->divergent_read
                                                          : p->waiting_read))
                return false;
            if (p->opt->project == NULL) return true;
            char *project = NULL, *kind = NULL;
            bool mine = rp_object_kind_split(parts->subject, &project, &kind) == RP_OK &&
                        strcmp(project, p->opt->project) == 0;
            free(project);
            free(kind);
            return mine;
        }
        if (parts->condition != RP_COND_STALE_READY) return false;
        if (p->opt->project == NULL) return true;
        static const char pfx[] = "project:";
        return strncmp(parts->subject, pfx, sizeof pfx - 1) == 0 &&
               strcmp(parts->subject + sizeof pfx - 1, p->opt->project) == 0;
    }
    bool judged = parts->condition == RP_COND_HOLDER_GONE ||
                  parts->condition == RP_COND_STALE_READY || parts->condition == RP_COND_DEAD_LETTER ||
                  parts->condition == RP_COND_POISON || /* a delivery limit that drops */
                  parts->condition == RP_COND_WAITING_DEPTH ||
                  (parts->condition == RP_COND_DIVERGENT &&
                   rp__pass_divergent_sampled(p, parts->subject)) ||
                  (parts->condition == RP_COND_STALLED && p->stall_broker_read &&
                   !rp__strs_has(&p->stall_unsure, parts->subject)) ||
                  (parts->condition == RP_COND_WEDGED &&
                   rp__pass_wedged_broker_judged(p, parts->subject));
    /* A queue read but not measured keeps what was sighted on it. */
    if (!judged || rp__strs_has(&p->kept, parts->subject)) return false;
    if (p->opt->n_vhosts > 0 && !rp_sweep_vhosts_listed(p->opt, parts->subject)) return false;
    if (p->targeted) return rp__strs_has(&p->read, parts->subject);
    return p->broker_ran && p->broker_whole;
}

static rp_status rp_clear_one(rp__pass *p, const rp__open_sighting *o) {
    rp_sighting_row row = {o->key, o->condition, o->opened_seq, o->opened_at};
    rp_verdict v;
    rp_status st = rp_judge_cleared(&row, &p->opt->thresholds, &v);
    if (st != RP_OK) goto out;
    if (p->opt->dry_run) {
        st = rp_report_add_verdict(p->report, &v);
        goto out;
    }
    bool closed = false;
    rp_event_ref ev = {0};
    rp_status cst = p->ports->store.close_sighting(p->ports->store.self, o->key, &v, &closed, &ev);
    if (cst != RP_OK) {
        st = rp__pass_unreadable(p, RP_SOURCE_JOB_QUEUE, "closing a sighting", cst);
        goto out;
    }
    if (!closed) goto out; /* another reaper closed it first */
    st = rp_publish_event(p->ports, &ev, &v, p->report);
    if (st == RP_OK) st = rp_report_add_verdict(p->report, &v);
out:
    rp_verdict_cleanup(&v);
    return st;
}

rp_status rp__pass_clear(rp__pass *p) {
    if (!p->open_known) return RP_OK;
    for (size_t i = 0; i < p->n_open; i++) {
        rp_sighting_key_parts parts;
        /* A key this version cannot read is another version's: left alone. */
        if (!rp_sighting_key_split(p->open[i].key, &parts)) continue;
        if (rp_was_seen(p, p->open[i].key) || !rp_may_clear(p, &parts)) continue;
        rp_status st = rp_clear_one(p, &p->open[i]);
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

void rp__pass_cleanup(rp__pass *p) {
    for (size_t i = 0; i < p->n_open; i++) free(p->open[i].key);
    free(p->open);
    for (size_t i = 0; i < p->n_seen; i++) free(p->seen[i]);
    free(p->seen);
    for (size_t i = 0; i < p->n_targets; i++) {
        free(p->targets[i].vhost);
        free(p->targets[i].queue);
    }
    free(p->targets);
    rp__strs_cleanup(&p->kept);
    rp__strs_cleanup(&p->divergent_unread);
    rp__strs_cleanup(&p->stall_unsure);
    rp__pass_wedged_broker_cleanup(p);
    rp__strs_cleanup(&p->read);
    rp__pass_routes_cleanup(p);
    memset(p, 0, sizeof *p);
}

void rp__pass_init(rp__pass *p, const rp_ports *ports, const rp_pass_options *opt,
                   rp_report *report) {
    memset(p, 0, sizeof *p);
    p->ports = ports;
    p->opt = opt;
    p->report = report;
    p->now = ports->clock.now_ms(ports->clock.self);
    p->store_whole = true;
    p->broker_whole = true;
}

rp_status rp_pass_run(const rp_ports *ports, const rp_pass_options *opt, rp_report *out) {
    rp_report_init(out, opt ? opt->dry_run : false);
    if (opt != NULL) {
        out->max_verdicts = opt->max_report_verdicts;
        out->on_verdict = opt->on_verdict;
        out->on_verdict_arg = opt->on_verdict_arg;
    }
    if (ports == NULL || opt == NULL || opt->owned_queue_pattern == NULL ||
        opt->dead_letter_queue_pattern == NULL || opt->dead_letter_peek_limit < 1 ||
        opt->dead_letter_peek_limit > 1000 || opt->lease_batch_size < RP_PASS_LEASE_BATCH_MIN ||
        opt->lease_batch_size > RP_PASS_LEASE_BATCH_MAX)
        return RP_ERR_INVALID;
    rp__pass p;
    rp__pass_init(&p, ports, opt, out);
    rp_status st;
    if (opt->scope == RP_PASS_LEASES) {
        st = rp__pass_leases(&p);
    } else {
        st = rp__pass_load_open(&p);
        if (st == RP_OK) st = rp__pass_store(&p);
        if (st == RP_OK) st = rp__pass_broker(&p);
        if (st == RP_OK) st = rp__pass_clear(&p);
    }
    if (st == RP_OK && out->n_omitted > 0)
        st = rp__pass_note(&p, "%zu more verdicts are not listed in this report (it lists the "
                               "first %zu); the ledger has every one",
                           out->n_omitted, out->n_verdicts);
    rp__pass_cleanup(&p);
    return st;
}
