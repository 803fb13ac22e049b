#include "rp_pass_policy.h"
#include "rp_pass_rules.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "rp_judge.h"
#include "rp_match.h"
#include "rp_queue_listing.h"

#define RP_POLICY_MAX_VHOSTS 4096
#define RP_POLICY_MAX_OTHERS 4096
#define RP_POLICY_MAX_NODLX RP_PASS_POLICY_MAX_NODLX
#define RP_POLICY_MAX_WANT_KEYS 2

/* ---- the port's values ------------------------------------------------------------ */

bool rp_policy_version_at_least(const rp_policy_version *v, int major, int minor) {
    return v->major > major || (v->major == major && v->minor >= minor);
}

void rp_policy_cleanup(rp_policy *p) {
    if (p == NULL) return;
    free(p->vhost);
    free(p->name);
    free(p->pattern);
    free(p->apply_to);
    for (size_t i = 0; i < p->n_keys; i++) free(p->keys[i].key);
    free(p->keys);
    memset(p, 0, sizeof *p);
}

rp_status rp_policy_set_string(char **field, const char *s) {
    char *copy = NULL;
    if (s != NULL && (copy = strdup(s)) == NULL) return RP_ERR_NOMEM;
    free(*field);
    *field = copy;
    return RP_OK;
}

rp_status rp_policy_add_key(rp_policy *p, const char *key, bool is_int, int64_t value,
                            bool is_string) {
    if (key == NULL) return RP_ERR_INVALID;
    if (p->n_keys == p->cap_keys) {
        size_t cap = p->cap_keys ? p->cap_keys * 2 : 4;
        rp_policy_key *k = realloc(p->keys, cap * sizeof *k);
        if (k == NULL) return RP_ERR_NOMEM;
        p->keys = k;
        p->cap_keys = cap;
    }
    rp_policy_key *k = &p->keys[p->n_keys];
    k->key = strdup(key);
    if (k->key == NULL) return RP_ERR_NOMEM;
    k->is_int = is_int;
    k->value = is_int ? value : 0;
    k->is_string = is_string;
    p->n_keys++;
    return RP_OK;
}

rp_status rp_policy_list_push(rp_policy_list *l, rp_policy **out) {
    *out = NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        rp_policy *v = realloc(l->items, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        l->items = v;
        l->cap = cap;
    }
    *out = &l->items[l->n++];
    memset(*out, 0, sizeof **out);
    return RP_OK;
}

void rp_policy_list_cleanup(rp_policy_list *l) {
    if (l == NULL) return;
    for (size_t i = 0; i < l->n; i++) rp_policy_cleanup(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static const rp_policy_key *rp_key_get(const rp_policy_key *keys, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].key, key) == 0) return &keys[i];
    return NULL;
}

/* ---- the pattern ---------------------------------------------------------------- */

static pcre2_code *rp_compile(const char *text, char *err, size_t errlen, const char *what) {
    int code = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    if (re == NULL && err && errlen) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        /* Cut to errlen when it must be (the return value read says so to
         * GCC's -Wformat-truncation at -O3). */
        if (snprintf(err, errlen, "%s does not compile at offset %zu: %s", what, (size_t)off,
                     (const char *)msg) < 0)
            err[0] = '\0';
    }
    return re;
}

static uint32_t rp_info_u32(const pcre2_code *re, uint32_t what) {
    uint32_t v = 0;
    pcre2_pattern_info(re, what, &v);
    return v;
}

/* A numbered subroutine call or recursion: (?1) (?+1) (?-1) (?R) (?&...)
 * is fine by name, \g<1> \g'1' \g<+1>. Their numbers would shift. */
static bool rp_has_numbered_call(const char *s) {
    for (const char *p = s; *p; p++) {
        if (*p == '\\' && p[1] != '\0') {
            if (p[1] == 'g' && (p[2] == '<' || p[2] == '\'') &&
                (p[3] == '+' || p[3] == '-' || (p[3] >= '0' && p[3] <= '9')))
                return true;
            p++; /* skip the escaped character */
            continue;
        }
        if (p[0] == '(' && p[1] == '?' &&
            (p[2] == 'R' || p[2] == '+' || p[2] == '-' || (p[2] >= '0' && p[2] <= '9'))) {
            /* (?-i) and (?-x:...) are option settings, not calls. */
            if (p[2] == '-' && !(p[3] >= '0' && p[3] <= '9')) continue;
            return true;
        }
    }
    return false;
}

/* name as a PCRE literal: every ASCII character but a letter or a digit
 * behind a backslash (literal whatever it is, in PCRE2 and in the broker's
 * Erlang re alike); bytes from 0x80 up as they are. Appended to *buf. */
static bool rp_append_literal(char **buf, size_t *len, const char *name) {
    size_t n = strlen(name);
    char *grown = realloc(*buf, *len + 2 * n + 1);
    if (grown == NULL) return false;
    *buf = grown;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        bool plain = (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                     (*c >= 'A' && *c <= 'Z') || *c >= 0x80;
        if (!plain) grown[(*len)++] = '\\';
        grown[(*len)++] = (char)*c;
    }
    grown[*len] = '\0';
    return true;
}

rp_status rp_pass_policy_pattern(const char *owned, const char *dead_letter, char **out,
                                 char *err, size_t errlen) {
    return rp_pass_policy_pattern_excluding(owned, dead_letter, NULL, 0, out, err, errlen);
}

rp_status rp_pass_policy_pattern_excluding(const char *owned, const char *dead_letter,
                                           const char *const *exclude, size_t n_exclude,
                                           char **out, char *err, size_t errlen) {
    if (out) *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (out == NULL || owned == NULL || dead_letter == NULL || *owned == '\0' ||
        *dead_letter == '\0') {
        if (err && errlen) snprintf(err, errlen, "both patterns are needed and must not be empty");
        return RP_ERR_INVALID;
    }
    pcre2_code *o = rp_compile(owned, err, errlen, "reap.owned_queue_pattern");
    if (o == NULL) return RP_ERR_INVALID;
    pcre2_code *d = rp_compile(dead_letter, err, errlen, "reap.dead_letter_queue_pattern");
    if (d == NULL) {
        pcre2_code_free(o);
        return RP_ERR_INVALID;
    }
    uint32_t groups_o = rp_info_u32(o, PCRE2_INFO_CAPTURECOUNT);
    uint32_t groups_d = rp_info_u32(d, PCRE2_INFO_CAPTURECOUNT);
    uint32_t backref_o = rp_info_u32(o, PCRE2_INFO_BACKREFMAX);
    uint32_t backref_d = rp_info_u32(d, PCRE2_INFO_BACKREFMAX);
    pcre2_code_free(o);
    pcre2_code_free(d);
    /* The dead-letter pattern comes first, so its numbers stay; the owned
     * pattern's would move up by groups_d. */
    if ((backref_o > 0 && groups_d > 0) || rp_has_numbered_call(owned) ||
        rp_has_numbered_call(dead_letter) || (backref_d > groups_d)) {
        if (err && errlen)
            snprintf(err, errlen,
                     "reap.owned_queue_pattern or reap.dead_letter_queue_pattern uses a numbered "
                     "back-reference or subroutine call, which cannot be joined into one policy "
                     "pattern; use a named group instead");
        return RP_ERR_INVALID;
    }
    /* Reaper's own queues first, each name whole: ^(?!(?:A|B)\z) */
    char *ex = NULL;
    size_t exlen = 0;
    size_t n_ex = 0;
    for (size_t i = 0; i < n_exclude; i++) {
        if (exclude[i] == NULL || exclude[i][0] == '\0') continue;
        if (n_ex++) {
            char *g = realloc(ex, exlen + 2);
            if (g == NULL) {
                free(ex);
                return RP_ERR_NOMEM;
            }
            ex = g;
            ex[exlen++] = '|';
            ex[exlen] = '\0';
        }
        if (!rp_append_literal(&ex, &exlen, exclude[i])) {
            free(ex);
            return RP_ERR_NOMEM;
        }
    }
    static const char ex_head[] = "(?!(?:", ex_tail[] = ")\\z)";
    static const char head[] = "^", neg[] = "(?!(?s:.*?)(?:", mid[] = "))(?=(?s:.*?)(?:",
                      tail[] = "))";
    size_t n = strlen(head) + (ex ? strlen(ex_head) + exlen + strlen(ex_tail) : 0) +
               strlen(neg) + strlen(dead_letter) + strlen(mid) + strlen(owned) + strlen(tail) + 1;
    char *s = malloc(n);
    if (s == NULL) {
        free(ex);
        return RP_ERR_NOMEM;
    }
    snprintf(s, n, "%s%s%s%s%s%s%s%s%s", head, ex ? ex_head : "", ex ? ex : "", ex ? ex_tail : "",
             neg, dead_letter, mid, owned, tail);
    free(ex);
    pcre2_code *c = rp_compile(s, err, errlen, "the joined policy pattern");
    if (c == NULL) {
        free(s);
        return RP_ERR_INVALID;
    }
    uint32_t groups = rp_info_u32(c, PCRE2_INFO_CAPTURECOUNT);
    pcre2_code_free(c);
    if (groups != groups_o + groups_d) {
        if (err && errlen)
            snprintf(err, errlen, "the joined policy pattern does not keep the two patterns apart "
                                  "(a group or comment runs across them)");
        free(s);
        return RP_ERR_INVALID;
    }
    *out = s;
    return RP_OK;
}

/* ---- the reconcile's state -------------------------------------------------------- */

typedef struct rp_want {
    const char *name;
    const char *apply_to;
    bool covers[RP_QUEUE_TYPE_COUNT_];
    rp_policy_key definition[RP_POLICY_MAX_WANT_KEYS]; /* keys are static strings */
    size_t n_definition;
    /* Over the managed vhosts. */
    unsigned in_force, written, would_write, refused, failed;
    char vh_detail[700];
    /* Per managed vhost (index into rp_rec.vhosts), for the per-vhost
     * verdicts (issue 19 item 1): RP_VH_IN_FORCE when in force there,
     * RP_VH_BAD when the last queue check found a selected queue there not
     * carrying it as wanted (or an owned dead-letter queue carrying it).
     * Owned by the rp_rec (freed in rp_rec_cleanup); NULL until the vhosts
     * are known. */
    unsigned char *vh_state;
    /* The last queue check. */
    size_t expected, carrying, other, none, wrong, missing, on_dlq, contended;
    char ex_other[200], ex_none[200], ex_wrong[240], ex_missing[200], ex_dlq[200],
        ex_contended[200];
} rp_want;

#define RP_VH_IN_FORCE 1u
#define RP_VH_BAD 2u

typedef struct rp_other {
    char *vhost, *name, *apply_to, *keys;
    int64_t priority;
    bool operator_policy;
    pcre2_code *re;
    size_t matches;
    char example[200];
} rp_other;

typedef struct rp_rec {
    const rp_policy_port *port;
    const rp_pass_policy_options *o;
    rp_report *report;
    rp_pass_policy_stats *stats;
    rp_policy_version v;
    char *pattern;
    pcre2_code *sel_re, *owned_re, *dlq_re;
    pcre2_match_data *md;
    pcre2_match_context *mc; /* rp_match.h's limits: other policies' patterns are anyone's */
    rp_want want[2];
    size_t n_want;
    char **vhosts;
    size_t n_vhosts, cap_vhosts;
    rp_policy_list policies;    /* reaper's own policies as read */
    const rp_policy **existing; /* [vhost * n_want + want], into policies, or NULL */
    rp_other *others;
    size_t n_others, cap_others;
    /* Owned quorum queues the policy pattern selects that have no
     * dead-letter exchange in force (issue 14 item 2): a delivery-limit
     * there would make the broker DROP a poison message, so they are left
     * out of the pattern by name (at most RP_POLICY_MAX_NODLX; past that,
     * delivery-limit is written nowhere). */
    char **nodlx;
    size_t n_nodlx, cap_nodlx;
    size_t nodlx_seen; /* all of them, kept or not */
    char nodlx_example[200];
    bool nomem;
} rp_rec;

void rp_pass_policy_options_default(rp_pass_policy_options *o) {
    memset(o, 0, sizeof *o);
    o->consumer_timeout_seconds = 21600;
    o->longest_lease_seconds = 7200;
    o->delivery_limit = 20;
    o->priority = 0;
    o->vhost = "/";
    o->verify_wait_ms = RP_PASS_POLICY_VERIFY_WAIT_MS;
    o->poll_ms = RP_PASS_POLICY_POLL_MS;
}

static void rp_appendf(char *buf, size_t cap, const char *fmt, ...) RP_PRINTF(3, 4);
static void rp_appendf(char *buf, size_t cap, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - n, fmt, ap);
    va_end(ap);
}

static void rp_example(char *ex, size_t cap, const char *vhost, const char *name, const char *more) {
    if (ex[0] != '\0') return;
    /* An example for a message: cutting it short is fine. */
    ex[0] = '\0';
    rp_appendf(ex, cap, "%s on vhost %s%s", name, vhost, more ? more : "");
}

/* A match that hits rp_match.h's limits counts as no match here: such a
 * policy is not reported as covering the queue. */
static bool rp_match(rp_rec *r, const pcre2_code *re, const char *s) {
    if (re == NULL || s == NULL) return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, r->md, r->mc);
    return rc >= 0;
}

/* Owned and a dead-letter queue, classified as the pass does. */
static bool rp_owned_dead_letter(rp_rec *r, const char *name) {
    if (!rp_match(r, r->dlq_re, name)) return false;
    if (rp_match(r, r->owned_re, name)) return true;
    char *base = NULL;
    bool owned = false;
    if (rp_match_cut(r->dlq_re, name, &base) == RP_OK) owned = rp_match(r, r->owned_re, base);
    else r->nomem = true;
    free(base);
    return owned;
}

static bool rp_apply_to_covers(const char *apply_to, rp_queue_type t) {
    if (apply_to == NULL) return false;
    if (strcmp(apply_to, "all") == 0 || strcmp(apply_to, "queues") == 0) return true;
    if (strcmp(apply_to, "classic_queues") == 0) return t == RP_QUEUE_TYPE_CLASSIC;
    if (strcmp(apply_to, "quorum_queues") == 0) return t == RP_QUEUE_TYPE_QUORUM;
    if (strcmp(apply_to, "streams") == 0) return t == RP_QUEUE_TYPE_STREAM;
    return false;
}

static rp_want *rp_want_for_type(rp_rec *r, rp_queue_type t) {
    if ((int)t < 0 || t >= RP_QUEUE_TYPE_COUNT_) return NULL;
    for (size_t i = 0; i < r->n_want; i++)
        if (r->want[i].covers[t]) return &r->want[i];
    return NULL;
}

static bool rp_is_our_name(const char *name) {
    return strcmp(name, RP_PASS_POLICY_NAME) == 0 || strcmp(name, RP_PASS_POLICY_CLASSIC_NAME) == 0;
}

static ssize_t rp_vhost_index(rp_rec *r, const char *vhost) {
    for (size_t i = 0; i < r->n_vhosts; i++)
        if (strcmp(r->vhosts[i], vhost) == 0) return (ssize_t)i;
    return -1;
}

static rp_status rp_add_vhost(rp_rec *r, const char *vhost) {
    if (rp_vhost_index(r, vhost) >= 0) return RP_OK;
    if (r->n_vhosts >= RP_POLICY_MAX_VHOSTS) return RP_ERR_TOO_LARGE;
    if (r->n_vhosts == r->cap_vhosts) {
        size_t cap = r->cap_vhosts ? r->cap_vhosts * 2 : 8;
        char **v = realloc(r->vhosts, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        r->vhosts = v;
        r->cap_vhosts = cap;
    }
    r->vhosts[r->n_vhosts] = strdup(vhost);
    if (r->vhosts[r->n_vhosts] == NULL) return RP_ERR_NOMEM;
    r->n_vhosts++;
    return RP_OK;
}

static void rp_rec_cleanup(rp_rec *r) {
    free(r->pattern);
    pcre2_code_free(r->sel_re);
    pcre2_code_free(r->owned_re);
    pcre2_code_free(r->dlq_re);
    pcre2_match_data_free(r->md);
    pcre2_match_context_free(r->mc);
    free(r->existing);
    rp_policy_list_cleanup(&r->policies);
    for (size_t i = 0; i < r->n_vhosts; i++) free(r->vhosts[i]);
    free(r->vhosts);
    for (size_t i = 0; i < r->n_nodlx; i++) free(r->nodlx[i]);
    free(r->nodlx);
    for (size_t i = 0; i < r->n_others; i++) {
        free(r->others[i].vhost);
        free(r->others[i].name);
        free(r->others[i].apply_to);
        free(r->others[i].keys);
        pcre2_code_free(r->others[i].re);
    }
    free(r->others);
    for (size_t i = 0; i < r->n_want; i++) free(r->want[i].vh_state);
}

static rp_status rp_note(rp_rec *r, const char *fmt, ...) RP_PRINTF(2, 3);
static rp_status rp_note(rp_rec *r, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return rp_report_add_note(r->report, buf);
}

static const char *rp_last_error(const rp_rec *r) {
    const char *e = r->port->last_error ? r->port->last_error(r->port->self) : NULL;
    return e ? e : "";
}

/* ---- what is wanted ---------------------------------------------------------------- */

static int64_t rp_timeout_ms(int64_t seconds) {
    if (seconds > INT64_MAX / 1000) return INT64_MAX;
    return seconds * 1000;
}

static void rp_want_add(rp_rec *r, const char *name, const char *apply_to,
                        const rp_queue_type *types, size_t n_types, bool with_timeout,
                        bool with_limit) {
    rp_want *w = &r->want[r->n_want++];
    memset(w, 0, sizeof *w);
    w->name = name;
    w->apply_to = apply_to;
    for (size_t i = 0; i < n_types; i++) w->covers[types[i]] = true;
    if (with_timeout)
        w->definition[w->n_definition++] =
            (rp_policy_key){(char *)"consumer-timeout", true,
                            rp_timeout_ms(r->o->consumer_timeout_seconds), false};
    if (with_limit)
        w->definition[w->n_definition++] =
            (rp_policy_key){(char *)"delivery-limit", true, r->o->delivery_limit, false};
}

/* The policy to write: borrows from r and w. */
static rp_policy rp_want_body(const rp_rec *r, const rp_want *w) {
    rp_policy p;
    memset(&p, 0, sizeof p);
    p.name = (char *)w->name;
    p.pattern = r->pattern;
    p.apply_to = (char *)w->apply_to;
    p.has_priority = true;
    p.priority = r->o->priority;
    p.definition_is_object = true;
    p.keys = (rp_policy_key *)w->definition;
    p.n_keys = p.cap_keys = w->n_definition;
    return p;
}

/* ---- comparing ------------------------------------------------------------------------ */

/* A wanted value (an integer) against what is there. */
static bool rp_value_equal(const rp_policy_key *got, const rp_policy_key *want) {
    return got != NULL && got->is_int && want->is_int && got->value == want->value;
}

/* Why an existing policy differs from the wanted one ("" when it does not). */
static void rp_policy_diff(const rp_policy *have, const rp_want *w, const rp_rec *r, char *why,
                           size_t cap) {
    why[0] = '\0';
    if (have == NULL) {
        snprintf(why, cap, "absent");
        return;
    }
    const char *pattern = have->pattern;
    const char *apply_to = have->apply_to;
    int64_t prio = have->priority;
    bool has_prio = have->has_priority;
    if (pattern == NULL || strcmp(pattern, r->pattern) != 0) rp_appendf(why, cap, "%spattern", why[0] ? ", " : "");
    if (apply_to == NULL || strcmp(apply_to, w->apply_to) != 0)
        rp_appendf(why, cap, "%sapply-to %s", why[0] ? ", " : "", apply_to ? apply_to : "(none)");
    if (!has_prio || prio != r->o->priority)
        rp_appendf(why, cap, "%spriority %" PRId64, why[0] ? ", " : "", has_prio ? prio : -1);
    if (!have->definition_is_object || have->n_keys != w->n_definition) {
        rp_appendf(why, cap, "%sdefinition keys", why[0] ? ", " : "");
        return;
    }
    for (size_t i = 0; i < w->n_definition; i++) {
        const rp_policy_key *want_v = &w->definition[i];
        if (!rp_value_equal(rp_key_get(have->keys, have->n_keys, want_v->key), want_v))
            rp_appendf(why, cap, "%s%s", why[0] ? ", " : "", want_v->key);
    }
}

/* ---- reading the broker ---------------------------------------------------------------- */

/* Whether a dead-letter exchange stays in force on a quorum queue once
 * reaper's policy applies to it: from its x-dead-letter-exchange argument,
 * or from an operator policy (the effective definition while the queue
 * carries reaper's policy or none). A dead-letter exchange from another
 * policy does not count: reaper's policy would displace it. */
static bool rp_dlx_stays(const rp_policy_queue *x) {
    if (x->dlx_argument) return true;
    if (x->policy != NULL && !rp_is_our_name(x->policy)) return false;
    const rp_policy_key *k = rp_key_get(x->effective, x->n_effective, "dead-letter-exchange");
    return k != NULL && k->is_string;
}

static rp_status rp_add_nodlx(rp_rec *r, const char *vhost, const char *name) {
    r->nodlx_seen++;
    rp_example(r->nodlx_example, sizeof r->nodlx_example, vhost, name, NULL);
    for (size_t i = 0; i < r->n_nodlx; i++)
        if (strcmp(r->nodlx[i], name) == 0) return RP_OK; /* same name, another vhost */
    if (r->n_nodlx >= RP_POLICY_MAX_NODLX) return RP_OK;
    if (r->n_nodlx == r->cap_nodlx) {
        size_t cap = r->cap_nodlx ? r->cap_nodlx * 2 : 8;
        char **v = realloc(r->nodlx, cap * sizeof *v);
        if (v == NULL) return RP_ERR_NOMEM;
        r->nodlx = v;
        r->cap_nodlx = cap;
    }
    r->nodlx[r->n_nodlx] = strdup(name);
    if (r->nodlx[r->n_nodlx] == NULL) return RP_ERR_NOMEM;
    r->n_nodlx++;
    return RP_OK;
}

/* One page of the queues: from the sweep's listing when it may be read
 * (fresh false and the listing usable), else from the broker. */
static rp_status rp_list(rp_rec *r, size_t page, bool with_arguments, bool fresh,
                         rp_policy_queue_page *out) {
    if (!fresh && rp_queue_listing_usable(r->o->listing))
        return rp_queue_listing_page(r->o->listing, page, out);
    if (page == 1) r->stats->listings++;
    return r->port->list_queues(r->port->self, page, with_arguments, out);
}

static rp_status rp_scan_vhosts(rp_rec *r) {
    rp_status st = rp_add_vhost(r, r->o->vhost ? r->o->vhost : "/");
    for (size_t i = 0; st == RP_OK && i < r->o->n_also_vhosts; i++)
        if (r->o->also_vhosts[i] != NULL) st = rp_add_vhost(r, r->o->also_vhosts[i]);
    r->stats->listing_reused = rp_queue_listing_usable(r->o->listing);
    for (size_t page = 1; st == RP_OK; page++) {
        rp_policy_queue_page pg;
        st = rp_list(r, page, true, false, &pg);
        if (st != RP_OK) return st;
        for (size_t i = 0; i < pg.n && st == RP_OK; i++) {
            const rp_policy_queue *q = &pg.queues[i];
            if (!rp_match(r, r->sel_re, q->name)) continue;
            st = rp_add_vhost(r, q->vhost);
            if (st == RP_OK && q->type == RP_QUEUE_TYPE_QUORUM && !rp_dlx_stays(q))
                st = rp_add_nodlx(r, q->vhost, q->name);
        }
        if (pg.last) break;
    }
    return st;
}

/* Composes the pattern again without the owned quorum queues that have no
 * dead-letter exchange (when there are some, and not too many), and
 * compiles it. */
static rp_status rp_exclude_nodlx(rp_rec *r, char *err, size_t errlen) {
    if (r->n_nodlx == 0 || r->nodlx_seen > RP_POLICY_MAX_NODLX) return RP_OK;
    const rp_pass_policy_options *o = r->o;
    size_t n = o->n_exclude + r->n_nodlx;
    const char **ex = calloc(n, sizeof *ex);
    if (ex == NULL) return RP_ERR_NOMEM;
    for (size_t i = 0; i < o->n_exclude; i++) ex[i] = o->exclude[i];
    for (size_t i = 0; i < r->n_nodlx; i++) ex[o->n_exclude + i] = r->nodlx[i];
    char *pattern = NULL;
    rp_status st = rp_pass_policy_pattern_excluding(o->owned_pattern, o->dead_letter_pattern, ex,
                                                    n, &pattern, err, errlen);
    free(ex);
    if (st != RP_OK) return st;
    pcre2_code *re = rp_compile(pattern, err, errlen, "the policy pattern");
    if (re == NULL) {
        free(pattern);
        return RP_ERR_INVALID;
    }
    free(r->pattern);
    r->pattern = pattern;
    pcre2_code_free(r->sel_re);
    r->sel_re = re;
    return RP_OK;
}

static rp_status rp_add_other(rp_rec *r, const rp_policy *p, bool operator_policy) {
    const char *vhost = p->vhost;
    const char *name = p->name;
    const char *pattern = p->pattern;
    const char *apply_to = p->apply_to;
    if (vhost == NULL || name == NULL || pattern == NULL) return RP_OK;
    if (rp_vhost_index(r, vhost) < 0) return RP_OK; /* not a vhost reaper manages */
    if (!operator_policy && rp_is_our_name(name)) return RP_OK;
    if (r->n_others >= RP_POLICY_MAX_OTHERS) return RP_OK;
    if (r->n_others == r->cap_others) {
        size_t cap = r->cap_others ? r->cap_others * 2 : 8;
        rp_other *o = realloc(r->others, cap * sizeof *o);
        if (o == NULL) return RP_ERR_NOMEM;
        r->others = o;
        r->cap_others = cap;
    }
    rp_other *o = &r->others[r->n_others];
    memset(o, 0, sizeof *o);
    o->operator_policy = operator_policy;
    o->priority = p->has_priority ? p->priority : 0;
    char keys[300] = "";
    for (size_t i = 0; i < p->n_keys; i++) {
        const rp_policy_key *k = &p->keys[i];
        if (k->is_int)
            rp_appendf(keys, sizeof keys, "%s%s=%" PRId64, keys[0] ? ", " : "", k->key, k->value);
        else
            rp_appendf(keys, sizeof keys, "%s%s", keys[0] ? ", " : "", k->key);
    }
    o->vhost = strdup(vhost);
    o->name = strdup(name);
    o->apply_to = strdup(apply_to ? apply_to : "all");
    o->keys = strdup(keys[0] ? keys : "no keys");
    r->n_others++;
    if (!o->vhost || !o->name || !o->apply_to || !o->keys) return RP_ERR_NOMEM;
    char err[200];
    o->re = rp_compile(pattern, err, sizeof err, "its pattern");
    if (o->re == NULL)
        return rp_note(r, "%s %s on vhost %s: %s here, so whether it applies to owned queues is "
                          "not checked",
                       operator_policy ? "operator policy" : "policy", name, vhost, err);
    return RP_OK;
}

/* Reads every policy (and operator policy) of the managed vhosts. */
static rp_status rp_read_policies(rp_rec *r) {
    r->existing = calloc(r->n_vhosts * r->n_want, sizeof *r->existing);
    if (r->existing == NULL) return RP_ERR_NOMEM;
    rp_status st = r->port->list_policies(r->port->self, false, &r->policies);
    if (st != RP_OK) return st;
    for (size_t i = 0; i < r->policies.n; i++) {
        const rp_policy *p = &r->policies.items[i];
        if (p->vhost == NULL || p->name == NULL) continue;
        ssize_t vi = rp_vhost_index(r, p->vhost);
        if (vi >= 0 && rp_is_our_name(p->name)) {
            bool wanted = false;
            for (size_t k = 0; k < r->n_want; k++) {
                if (strcmp(r->want[k].name, p->name) != 0) continue;
                wanted = true;
                r->existing[(size_t)vi * r->n_want + k] = p; /* the last one listed */
            }
            if (!wanted) {
                st = rp_note(r, "policy %s on vhost %s is reaper's but not wanted on RabbitMQ "
                                "%s: left as it is",
                             p->name, p->vhost, r->v.text);
                if (st != RP_OK) return st;
            }
            continue;
        }
        st = rp_add_other(r, p, false);
        if (st != RP_OK) return st;
    }
    rp_policy_list ops;
    memset(&ops, 0, sizeof ops);
    st = r->port->list_policies(r->port->self, true, &ops);
    for (size_t i = 0; st == RP_OK && i < ops.n; i++) {
        if (ops.items[i].vhost == NULL || ops.items[i].name == NULL) continue;
        st = rp_add_other(r, &ops.items[i], true);
    }
    rp_policy_list_cleanup(&ops);
    return st;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Reads, compares, writes when different, reads back: one policy, one vhost. */
static rp_status rp_reconcile_one(rp_rec *r, size_t vi, rp_want *w) {
    const char *vhost = r->vhosts[vi];
    const rp_policy *have = r->existing[vi * r->n_want + (size_t)(w - r->want)];
    char why[300];
    rp_policy_diff(have, w, r, why, sizeof why);
    const char *sep = w->vh_detail[0] ? "; " : "";
    if (why[0] == '\0') {
        w->in_force++;
        w->vh_state[vi] |= RP_VH_IN_FORCE;
        rp_appendf(w->vh_detail, sizeof w->vh_detail, "%sin force on vhost %s, unchanged", sep, vhost);
        return RP_OK;
    }
    if (r->o->dry_run) {
        w->would_write++;
        rp_appendf(w->vh_detail, sizeof w->vh_detail, "%sdry run: would write it on vhost %s (%s%s)",
                   sep, vhost, have ? "differs: " : "", why);
        return RP_OK;
    }
    rp_policy body = rp_want_body(r, w);
    bool refused = false;
    r->stats->writes++;
    rp_status st = r->port->put_policy(r->port->self, vhost, &body, why, &refused);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) {
        const char *reason = rp_last_error(r);
        if (st == RP_ERR_FORBIDDEN || refused) {
            w->refused++;
            r->stats->refused++;
            rp_appendf(w->vh_detail, sizeof w->vh_detail, "%swriting it on vhost %s was refused (%s)%s",
                       sep, vhost, reason,
                       st == RP_ERR_FORBIDDEN ? ": the management user needs the policymaker or "
                                                "administrator tag and access to the vhost"
                                              : "");
        } else {
            w->failed++;
            rp_appendf(w->vh_detail, sizeof w->vh_detail, "%swriting it on vhost %s failed (%s)", sep,
                       vhost, reason);
        }
        return RP_OK;
    }
    /* Read it back. */
    rp_policy back;
    memset(&back, 0, sizeof back);
    bool found = false;
    st = r->port->get_policy(r->port->self, vhost, w->name, &back, &found);
    if (st == RP_ERR_NOMEM) {
        rp_policy_cleanup(&back);
        return st;
    }
    rp_policy_diff(st == RP_OK && found ? &back : NULL, w, r, why, sizeof why);
    rp_policy_cleanup(&back);
    if (st == RP_OK && why[0] == '\0') {
        w->written++;
        w->in_force++;
        w->vh_state[vi] |= RP_VH_IN_FORCE;
        rp_appendf(w->vh_detail, sizeof w->vh_detail, "%swritten on vhost %s and read back in force",
                   sep, vhost);
    } else {
        w->failed++;
        rp_appendf(w->vh_detail, sizeof w->vh_detail,
                   "%swritten on vhost %s but reading it back %s", sep, vhost,
                   st != RP_OK ? rp_last_error(r) : why);
    }
    return RP_OK;
}

/* ---- checking the queues ----------------------------------------------------------- */

static void rp_reset_check(rp_rec *r) {
    for (size_t i = 0; i < r->n_want; i++) {
        rp_want *w = &r->want[i];
        w->expected = w->carrying = w->other = w->none = w->wrong = w->missing = w->on_dlq = 0;
        w->contended = 0;
        w->ex_other[0] = w->ex_none[0] = w->ex_wrong[0] = w->ex_missing[0] = w->ex_dlq[0] = '\0';
        w->ex_contended[0] = '\0';
        for (size_t v = 0; w->vh_state && v < r->n_vhosts; v++)
            w->vh_state[v] &= (unsigned char)~RP_VH_BAD;
    }
    for (size_t i = 0; i < r->n_others; i++) {
        r->others[i].matches = 0;
        r->others[i].example[0] = '\0';
    }
}

/* Checks one selected queue against the policy wanted for its type. */
static void rp_check_selected(rp_rec *r, const rp_policy_queue *q) {
    rp_want *w = rp_want_for_type(r, q->type);
    if (w == NULL) return; /* no reaper policy covers this type here */
    w->expected++;
    ssize_t vi = rp_vhost_index(r, q->vhost);
    for (size_t i = 0; vi >= 0 && i < r->n_others; i++) {
        rp_other *o = &r->others[i];
        if (o->re == NULL || strcmp(o->vhost, q->vhost) != 0 || !rp_apply_to_covers(o->apply_to, q->type))
            continue;
        if (!rp_match(r, o->re, q->name)) continue;
        o->matches++;
        rp_example(o->example, sizeof o->example, q->vhost, q->name, NULL);
        if (!o->operator_policy && o->priority >= r->o->priority) {
            w->contended++;
            w->vh_state[vi] |= RP_VH_BAD;
            char more[120];
            snprintf(more, sizeof more, " (policy %s)", o->name);
            rp_example(w->ex_contended, sizeof w->ex_contended, q->vhost, q->name, more);
        }
    }
    if (!q->policy_known || !q->effective_known) {
        w->missing++;
        rp_example(w->ex_missing, sizeof w->ex_missing, q->vhost, q->name, NULL);
        return;
    }
    if (q->policy == NULL) {
        w->none++;
        if (vi >= 0) w->vh_state[vi] |= RP_VH_BAD;
        rp_example(w->ex_none, sizeof w->ex_none, q->vhost, q->name, NULL);
        return;
    }
    if (strcmp(q->policy, w->name) != 0) {
        w->other++;
        if (vi >= 0) w->vh_state[vi] |= RP_VH_BAD;
        char more[120];
        snprintf(more, sizeof more, " (policy %s)", q->policy);
        rp_example(w->ex_other, sizeof w->ex_other, q->vhost, q->name, more);
        return;
    }
    char diff[160] = "";
    for (size_t i = 0; i < w->n_definition; i++) {
        const rp_policy_key *want_v = &w->definition[i];
        const rp_policy_key *got = rp_key_get(q->effective, q->n_effective, want_v->key);
        if (rp_value_equal(got, want_v)) continue;
        if (got && got->is_int)
            rp_appendf(diff, sizeof diff, "%s%s %" PRId64, diff[0] ? ", " : "", want_v->key, got->value);
        else
            rp_appendf(diff, sizeof diff, "%s%s absent", diff[0] ? ", " : "", want_v->key);
    }
    if (diff[0] == '\0') {
        w->carrying++;
        return;
    }
    w->wrong++;
    if (vi >= 0) w->vh_state[vi] |= RP_VH_BAD;
    char more[300];
    snprintf(more, sizeof more, ": %s%s%s", diff, q->operator_policy ? ", operator policy " : "",
             q->operator_policy ? q->operator_policy : "");
    rp_example(w->ex_wrong, sizeof w->ex_wrong, q->vhost, q->name, more);
}

/* fresh: read the broker (after a write, or on a later poll), not the
 * sweep's listing. */
static rp_status rp_check_queues(rp_rec *r, bool fresh) {
    rp_reset_check(r);
    for (size_t page = 1;; page++) {
        rp_policy_queue_page pg;
        rp_status st = rp_list(r, page, false, fresh, &pg);
        if (st != RP_OK) return st;
        for (size_t i = 0; i < pg.n; i++) {
            const rp_policy_queue *q = &pg.queues[i];
            if (rp_vhost_index(r, q->vhost) < 0) {
                /* Selected queues appeared in a new vhost since the first
                 * read: the next reconcile manages it. */
                if (rp_match(r, r->sel_re, q->name) && rp_want_for_type(r, q->type)) {
                    rp_want *w = rp_want_for_type(r, q->type);
                    w->expected++;
                    w->none++;
                    rp_example(w->ex_none, sizeof w->ex_none, q->vhost, q->name, " (a new vhost)");
                }
                continue;
            }
            if (rp_match(r, r->sel_re, q->name)) {
                rp_check_selected(r, q);
            } else if (q->policy && rp_is_our_name(q->policy) && rp_owned_dead_letter(r, q->name)) {
                for (size_t k = 0; k < r->n_want; k++) {
                    if (strcmp(r->want[k].name, q->policy) != 0) continue;
                    r->want[k].on_dlq++;
                    r->want[k].vh_state[rp_vhost_index(r, q->vhost)] |= RP_VH_BAD;
                    rp_example(r->want[k].ex_dlq, sizeof r->want[k].ex_dlq, q->vhost, q->name, NULL);
                }
            }
            if (r->nomem) return RP_ERR_NOMEM;
        }
        if (pg.last) return RP_OK;
    }
}

static size_t rp_pending(const rp_rec *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_want; i++) {
        const rp_want *w = &r->want[i];
        n += w->other + w->none + w->wrong + w->missing + w->on_dlq;
    }
    return n;
}

static size_t rp_missing(const rp_rec *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_want; i++) n += r->want[i].missing;
    return n;
}

/* ---- the report --------------------------------------------------------------------- */

static const char *rp_type_plural(const rp_want *w) {
    if (w->covers[RP_QUEUE_TYPE_QUORUM] && w->covers[RP_QUEUE_TYPE_CLASSIC]) return "queues";
    if (w->covers[RP_QUEUE_TYPE_QUORUM]) return "quorum queues";
    if (w->covers[RP_QUEUE_TYPE_CLASSIC]) return "classic queues";
    return "queues";
}

static rp_status rp_report_want(rp_rec *r, rp_want *w) {
    char d[2400];
    snprintf(d, sizeof d, "%s", w->vh_detail);
    bool ok = w->in_force == r->n_vhosts;
    if (w->expected == 0) {
        rp_appendf(d, sizeof d, "; no owned %s (other than dead-letter queues) to check it on yet",
                   rp_type_plural(w));
    } else {
        rp_appendf(d, sizeof d, "; carried as wanted by %zu of %zu owned %s", w->carrying,
                   w->expected, rp_type_plural(w));
    }
    if (w->other) {
        ok = false;
        rp_appendf(d, sizeof d, "; %zu carry another policy (e.g. %s)", w->other, w->ex_other);
    }
    if (w->none) {
        ok = false;
        rp_appendf(d, sizeof d, "; %zu carry no policy (e.g. %s)", w->none, w->ex_none);
    }
    if (w->wrong) {
        ok = false;
        rp_appendf(d, sizeof d, "; %zu show other values in force (e.g. %s)", w->wrong, w->ex_wrong);
    }
    if (w->contended) {
        ok = false;
        rp_appendf(d, sizeof d,
                   "; %zu are also matched by another policy of the same or a higher priority "
                   "(e.g. %s)",
                   w->contended, w->ex_contended);
    }
    if (w->on_dlq) {
        ok = false;
        rp_appendf(d, sizeof d, "; it applies to %zu owned dead-letter queue(s) (e.g. %s)", w->on_dlq,
                   w->ex_dlq);
    }
    if (w->missing)
        rp_appendf(d, sizeof d, "; %zu do not report their policy yet and were not checked (e.g. %s)",
                   w->missing, w->ex_missing);
    r->stats->selected += w->expected;
    r->stats->verified_queues += w->carrying;
    rp_status st = rp_report_add_policy(r->report, w->name, ok, d);
    /* Each managed vhost's own verdict (issue 19 item 1); the queues of a
     * vhost that appeared since the vhosts were read are in the detail
     * only (no vhost of theirs was checked). */
    for (size_t vi = 0; st == RP_OK && vi < r->n_vhosts; vi++)
        st = rp_report_add_policy_vhost(r->report, r->vhosts[vi],
                                        w->vh_state[vi] == RP_VH_IN_FORCE);
    return st;
}

static rp_status rp_report_others(rp_rec *r) {
    for (size_t i = 0; i < r->n_others; i++) {
        const rp_other *o = &r->others[i];
        if (o->matches == 0) continue;
        r->stats->conflicts++;
        rp_status st;
        if (o->operator_policy) {
            st = rp_note(r,
                         "operator policy %s on vhost %s (apply-to %s, %s) applies to %zu owned "
                         "queue(s), e.g. %s: the broker merges it with reaper's policy and the "
                         "stricter value of a key both set wins",
                         o->name, o->vhost, o->apply_to, o->keys, o->matches, o->example);
        } else if (o->priority > r->o->priority) {
            st = rp_note(r,
                         "policy conflict: policy %s on vhost %s (priority %" PRId64
                         ", apply-to %s) matches %zu owned queue(s), e.g. %s, and takes "
                         "precedence over reaper's policy (priority %" PRId64 ") there",
                         o->name, o->vhost, o->priority, o->apply_to, o->matches, o->example,
                         r->o->priority);
        } else if (o->priority == r->o->priority) {
            st = rp_note(r,
                         "policy conflict: policy %s on vhost %s has reaper's priority %" PRId64
                         " (apply-to %s) and matches %zu owned queue(s), e.g. %s: which of the "
                         "two applies there is the broker's choice",
                         o->name, o->vhost, o->priority, o->apply_to, o->matches, o->example);
        } else {
            st = rp_note(r,
                         "policy conflict: reaper's policy (priority %" PRId64
                         ") displaces policy %s on vhost %s (priority %" PRId64
                         ", apply-to %s, %s) on %zu owned queue(s), e.g. %s: its definition no "
                         "longer applies there",
                         r->o->priority, o->name, o->vhost, o->priority, o->apply_to, o->keys,
                         o->matches, o->example);
        }
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

/* Every wanted policy gets an entry saying why nothing could be checked. */
static rp_status rp_report_failure(rp_rec *r, const char *why) {
    if (r->n_want == 0) return rp_report_add_policy(r->report, RP_PASS_POLICY_NAME, false, why);
    for (size_t i = 0; i < r->n_want; i++) {
        rp_status st = rp_report_add_policy(r->report, r->want[i].name, false, why);
        if (st != RP_OK) return st;
    }
    return RP_OK;
}

/* ---- the reconcile -------------------------------------------------------------------- */

static rp_status rp_reconcile(rp_rec *r) {
    const rp_pass_policy_options *o = r->o;
    char why[600];
    rp_status st = r->port->version(r->port->self, &r->v);
    if (st != RP_OK) {
        snprintf(why, sizeof why, "not checked: %s", rp_last_error(r));
        rp_status rst = rp_report_failure(r, why);
        return rst != RP_OK ? rst : st;
    }
    r->stats->version = r->v;
    char err[300];
    st = rp_pass_policy_pattern_excluding(o->owned_pattern, o->dead_letter_pattern, o->exclude,
                                          o->n_exclude, &r->pattern, err, sizeof err);
    if (st == RP_OK) {
        r->sel_re = rp_compile(r->pattern, err, sizeof err, "the policy pattern");
        r->owned_re = rp_compile(o->owned_pattern, err, sizeof err, "reap.owned_queue_pattern");
        r->dlq_re = rp_compile(o->dead_letter_pattern, err, sizeof err, "reap.dead_letter_queue_pattern");
        r->md = pcre2_match_data_create(1, NULL);
        r->mc = rp_match_context_new();
        if (!r->sel_re || !r->owned_re || !r->dlq_re || !r->md || !r->mc)
            st = r->md && r->mc ? RP_ERR_INVALID : RP_ERR_NOMEM;
    }
    if (st != RP_OK) {
        if (st == RP_ERR_NOMEM) return st;
        snprintf(why, sizeof why, "not written: %s", err);
        rp_status rst = rp_report_failure(r, why);
        return rst != RP_OK ? rst : st;
    }

    /* Which vhosts hold selected queues, and which selected quorum queues
     * have no dead-letter exchange: those are left out of the pattern, so
     * that reaper's delivery-limit never makes the broker drop a message. */
    st = rp_scan_vhosts(r);
    if (st == RP_ERR_NOMEM) return st;
    if (st == RP_OK) st = rp_exclude_nodlx(r, err, sizeof err);
    if (st == RP_ERR_NOMEM) return st;
    if (st == RP_ERR_INVALID) {
        snprintf(why, sizeof why, "not written: %s", err);
        rp_status rst = rp_report_failure(r, why);
        return rst != RP_OK ? rst : st;
    }
    rp_status scan_st = st;
    bool with_limit = r->nodlx_seen <= RP_POLICY_MAX_NODLX;

    bool per_type = rp_policy_version_at_least(&r->v, 3, 12);
    if (per_type) {
        rp_queue_type quorum[] = {RP_QUEUE_TYPE_QUORUM}, classic[] = {RP_QUEUE_TYPE_CLASSIC};
        rp_want_add(r, RP_PASS_POLICY_NAME, "quorum_queues", quorum, 1, true, with_limit);
        rp_want_add(r, RP_PASS_POLICY_CLASSIC_NAME, "classic_queues", classic, 1, true, false);
    } else {
        /* 3.10/3.11: no consumer-timeout key, no per-type apply-to. The
         * broker applies a delivery-limit-only policy to quorum queues. */
        rp_queue_type quorum[] = {RP_QUEUE_TYPE_QUORUM};
        rp_want_add(r, RP_PASS_POLICY_NAME, "queues", quorum, 1, false, with_limit);
    }
    if (!per_type) {
        st = rp_note(r,
                     "RabbitMQ %s accepts neither the consumer-timeout policy key nor apply-to per "
                     "queue type: reaper writes %s (apply-to queues, delivery-limit %" PRId64
                     " only, which the broker applies to quorum queues), and the broker-wide "
                     "consumer_timeout is what bounds hung handlers (a)",
                     r->v.text, RP_PASS_POLICY_NAME, o->delivery_limit);
        /* So that value is read on every pass and said when it is out of
         * step with the configuration (or cannot be read). */
        if (st == RP_OK) {
            rp_wide_timeout_state ws;
            int64_t wms;
            const char *wwhy;
            if (r->port->wide_timeout(r->port->self, &ws, &wms, &wwhy) != RP_OK) {
                ws = RP_WIDE_TIMEOUT_UNREADABLE;
                wwhy = rp_last_error(r);
            }
            char *text = NULL;
            st = rp_judge_wide_timeout(ws, wms, wwhy, o->consumer_timeout_seconds,
                                       o->longest_lease_seconds, &text);
            if (st == RP_OK) st = rp_note(r, "%s", text);
            free(text);
        }
    } else if (rp_policy_version_at_least(&r->v, 4, 3)) {
        st = rp_note(r,
                     "RabbitMQ %s enforces consumer timeouts on quorum queues only: %s sets "
                     "consumer-timeout on classic queues, where the broker does not bound hung "
                     "handlers",
                     r->v.text, RP_PASS_POLICY_CLASSIC_NAME);
    }
    if (st != RP_OK) return st;
    if (r->nodlx_seen > 0 && with_limit) {
        st = rp_note(r,
                     "%zu owned quorum queue(s) have no dead-letter exchange (e.g. %s): reaper's "
                     "policy leaves them out, since its delivery-limit would make the broker "
                     "drop a poison message there%s; a limit in force there anyway is surfaced "
                     "as POISON",
                     r->nodlx_seen, r->nodlx_example,
                     per_type ? " (so they get no consumer-timeout from reaper either)" : "");
    } else if (!with_limit) {
        st = rp_note(r,
                     "%zu owned quorum queue(s) have no dead-letter exchange (e.g. %s), more "
                     "than reaper leaves out of its policy by name (%d): %s carries no "
                     "delivery-limit at all, so that the broker never drops a poison message "
                     "because of reaper",
                     r->nodlx_seen, r->nodlx_example, RP_POLICY_MAX_NODLX, RP_PASS_POLICY_NAME);
    }
    if (st != RP_OK) return st;

    st = scan_st;
    if (st == RP_OK) st = rp_read_policies(r);
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) {
        snprintf(why, sizeof why, "not checked: %s",
                 st == RP_ERR_TOO_LARGE ? "too many vhosts hold owned queues"
                                        : rp_last_error(r));
        rp_status rst = rp_report_failure(r, why);
        return rst != RP_OK ? rst : st;
    }
    r->stats->vhosts = (unsigned)r->n_vhosts;
    for (size_t k = 0; k < r->n_want; k++) {
        r->want[k].vh_state = calloc(r->n_vhosts ? r->n_vhosts : 1, 1);
        if (r->want[k].vh_state == NULL) return RP_ERR_NOMEM;
    }

    for (size_t vi = 0; vi < r->n_vhosts; vi++)
        for (size_t k = 0; k < r->n_want; k++) {
            st = rp_reconcile_one(r, vi, &r->want[k]);
            if (st != RP_OK) return st;
        }

    int64_t deadline = r->port->mono_ms(r->port->self) +
                       (o->verify_wait_ms > 0 ? o->verify_wait_ms : RP_PASS_POLICY_VERIFY_WAIT_MS);
    long poll = o->poll_ms > 0 ? o->poll_ms : RP_PASS_POLICY_POLL_MS;
    /* The sweep's listing shows the state the policies had when they were
     * read: it stands for the first check unless a write was tried. */
    bool fresh = r->stats->writes > 0;
    for (;; fresh = true) {
        st = rp_check_queues(r, fresh);
        if (st != RP_OK) break;
        /* The statistics that show a queue's policy lag (about 5 s), after
         * our writes and after anyone else's change: a mismatch is
         * looked at again until the deadline before it counts. A dry run
         * expects the mismatches it would write away. */
        size_t pending = o->dry_run ? rp_missing(r) : rp_pending(r);
        if (pending == 0 || r->port->mono_ms(r->port->self) + poll > deadline) break;
        r->port->sleep_ms(r->port->self, poll);
    }
    if (st == RP_ERR_NOMEM) return st;
    if (st != RP_OK) {
        snprintf(why, sizeof why, "the owned queues could not be checked: %s", rp_last_error(r));
        for (size_t k = 0; k < r->n_want; k++) {
            char d[1400];
            snprintf(d, sizeof d, "%s; %s", r->want[k].vh_detail, why);
            rp_status rst = rp_report_add_policy(r->report, r->want[k].name, false, d);
            if (rst != RP_OK) return rst;
        }
        return st;
    }
    for (size_t k = 0; k < r->n_want; k++) {
        st = rp_report_want(r, &r->want[k]);
        if (st != RP_OK) return st;
    }
    return rp_report_others(r);
}

rp_status rp_pass_policy_reconcile(const rp_policy_port *port, const rp_pass_policy_options *o,
                                   rp_report *report, rp_pass_policy_stats *stats) {
    rp_pass_policy_stats dummy;
    if (stats == NULL) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    if (port == NULL || o == NULL || report == NULL) return RP_ERR_INVALID;
    rp_rec r;
    memset(&r, 0, sizeof r);
    r.port = port;
    r.o = o;
    r.report = report;
    r.stats = stats;
    size_t from = report->n_policies;
    rp_status st = rp_reconcile(&r);
    rp_rec_cleanup(&r);
    /* A pass is ok only if reaper's policy is absent or verified (issue 18
     * item 5), whatever ended the reconcile. */
    rp_status sst = rp_pass_policies_settle(report, from, o->dry_run);
    if (sst == RP_ERR_NOMEM) return sst;
    return st;
}
