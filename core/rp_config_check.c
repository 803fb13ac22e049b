/*
 * rp_config_check.c - whole-config validation: each key's rule (ranges from
 * the table, then the row's validator), the rules between keys, the PCRE2
 * patterns, and the detection of passwords inside URLs and DSNs.
 *
 * Messages here never quote a URL, a DSN or a secret: they say what is wrong
 * and where, not what the value is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rp_config.h"
#include "rp_config_internal.h"
#include "rp_hostlist.h"

#define RP_PATTERN_MAX 4096 /* bytes of pattern text */

/* ---- URLs and DSNs ------------------------------------------------------- */

typedef struct rp_url {
    size_t scheme_len;       /* 0 when there is no "scheme://" */
    size_t auth, auth_end;   /* the authority [auth, auth_end) */
    size_t at;               /* index of the '@' ending the userinfo, or SIZE_MAX */
} rp_url;

static bool rp_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool rp_is_digit(char c) { return c >= '0' && c <= '9'; }
static bool rp_is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Splits a URL. Without "scheme://" the whole value is taken as an authority,
 * so that "user:pw@host" is still seen to carry a password. */
static void rp_url_split(const char *v, rp_url *u) {
    size_t len = strlen(v), i = 0;
    u->scheme_len = 0;
    if (len > 0 && rp_is_alpha(v[0])) {
        i = 1;
        while (i < len && (rp_is_alpha(v[i]) || rp_is_digit(v[i]) || v[i] == '+' ||
                           v[i] == '-' || v[i] == '.'))
            i++;
        if (len - i >= 3 && memcmp(v + i, "://", 3) == 0)
            u->scheme_len = i;
    }
    u->auth = u->scheme_len ? u->scheme_len + 3 : 0;
    size_t e = u->auth;
    while (e < len && v[e] != '/' && v[e] != '?' && v[e] != '#') e++;
    u->auth_end = e;
    u->at = SIZE_MAX;
    for (size_t k = u->auth; k < e; k++)
        if (v[k] == '@') u->at = k;
}

static bool rp_scheme_is(const char *v, const rp_url *u, const char *scheme) {
    size_t n = strlen(scheme);
    if (u->scheme_len != n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != scheme[i]) return false;
    }
    return true;
}

static bool rp_url_has_password(const char *v, const rp_url *u) {
    if (u->at == SIZE_MAX) return false;
    return memchr(v + u->auth, ':', u->at - u->auth) != NULL;
}

/* Whether the query of a URL carries name=... (name lower-case). */
static bool rp_query_has(const char *v, const char *name) {
    const char *q = strchr(v, '?');
    if (q == NULL) return false;
    size_t n = strlen(name);
    for (const char *s = q + 1; *s;) {
        const char *end = s + strcspn(s, "&#");
        const char *eq = memchr(s, '=', (size_t)(end - s));
        size_t kl = eq ? (size_t)(eq - s) : (size_t)(end - s);
        if (kl == n && strncasecmp(s, name, n) == 0) return true;
        if (*end != '&') break;
        s = end + 1;
    }
    return false;
}

const char *rp__cfg_leak_url(const char *value) {
    rp_url u;
    rp_url_split(value, &u);
    if (!rp_url_has_password(value, &u)) return NULL;
    return "the URL carries a password (user:password@): remove it; reaper reads the "
           "broker password from broker.password_file or the environment variable "
           "REAPER_BROKER_PASSWORD";
}

/* Parses a libpq keyword=value string as libpq's conninfo_parse does. Sets
 * *secret when a password keyword is present. Returns true when it parses,
 * false with *err_at (a byte offset) when not. */
static bool rp_dsn_parse(const char *v, bool *secret, size_t *err_at) {
    size_t i = 0, len = strlen(v);
    *secret = false;
    for (;;) {
        while (i < len && rp_is_space(v[i])) i++;
        if (i >= len) return true;
        size_t k = i;
        while (i < len && !rp_is_space(v[i]) && v[i] != '=') i++;
        size_t kl = i - k;
        while (i < len && rp_is_space(v[i])) i++;
        if (kl == 0 || i >= len || v[i] != '=') {
            *err_at = i < len ? i : len;
            return false;
        }
        if ((kl == 8 && strncasecmp(v + k, "password", 8) == 0) ||
            (kl == 11 && strncasecmp(v + k, "sslpassword", 11) == 0))
            *secret = true;
        i++;
        while (i < len && rp_is_space(v[i])) i++;
        if (i < len && v[i] == '\'') {
            i++;
            for (;;) {
                if (i >= len) {
                    *err_at = len;
                    return false; /* unterminated quote */
                }
                if (v[i] == '\\') {
                    i += 2;
                    continue;
                }
                if (v[i++] == '\'') break;
            }
        } else {
            while (i < len && !rp_is_space(v[i])) i += v[i] == '\\' && i + 1 < len ? 2 : 1;
        }
    }
}

/* A conservative scan used when the DSN does not parse: any "password"
 * followed (after spaces) by '=' counts. */
static bool rp_dsn_mentions_password(const char *v) {
    for (const char *s = v; *s; s++) {
        if (strncasecmp(s, "password", 8) != 0) continue;
        const char *t = s + 8;
        while (rp_is_space(*t)) t++;
        if (*t == '=') return true;
    }
    return false;
}

static bool rp_dsn_is_uri(const char *v, rp_url *u) {
    rp_url_split(v, u);
    return rp_scheme_is(v, u, "postgresql") || rp_scheme_is(v, u, "postgres");
}

/* The store library's own parser, when the program installed one. */
static rp_config_dsn_inspector rp_dsn_inspector;

void rp_config_set_dsn_inspector(rp_config_dsn_inspector inspect) {
    rp_dsn_inspector = inspect;
}

/* Core's own scan first (it names the spelling it found), then the store
 * library's parser, which decodes what the scan cannot (a percent-encoded
 * key in a URI query, "%70assword=x"). */
static const char *rp_leak_dsn_scan(const char *value);

const char *rp__cfg_leak_dsn(const char *value) {
    const char *why = rp_leak_dsn_scan(value);
    if (why == NULL && rp_dsn_inspector != NULL) why = rp_dsn_inspector(value);
    return why;
}

static const char *rp_leak_dsn_scan(const char *value) {
    rp_url u;
    if (rp_dsn_is_uri(value, &u)) {
        if (rp_url_has_password(value, &u))
            return "the DSN URI carries a password (user:password@): remove it; give "
                   "libpq the password through PGPASSWORD or a passfile (~/.pgpass, or "
                   "passfile=... in the DSN)";
        if (rp_query_has(value, "password") || rp_query_has(value, "sslpassword"))
            return "the DSN URI carries a password (password= in the query): remove "
                   "it; give libpq the password through PGPASSWORD or a passfile "
                   "(~/.pgpass, or passfile=... in the DSN)";
        return NULL;
    }
    bool secret = false;
    size_t at = 0;
    bool ok = rp_dsn_parse(value, &secret, &at);
    if (secret || (!ok && rp_dsn_mentions_password(value)) ||
        (!ok && rp_url_has_password(value, &u)))
        return "the DSN carries a password (password=...): remove it; give libpq the "
               "password through PGPASSWORD or a passfile (~/.pgpass, or passfile=... "
               "in the DSN)";
    return NULL;
}

/* ---- per-key validators -------------------------------------------------- */

static const char *rp_str(const rp_config *cfg, const rp__config_row *row) {
    const char *s = *(char *const *)rp__config_cfield(cfg, row);
    return s ? s : "";
}

static rp_status rp_check_url(const rp__config_row *row, rp_config *cfg,
                              rp_config_problems *p, const char *a, const char *b) {
    const char *v = rp_str(cfg, row);
    if (v[0] == '\0') {
        rp__cfg_problem(p, cfg, row->id, "must not be empty");
        return RP_OK;
    }
    rp_url u;
    rp_url_split(v, &u);
    if (!rp_scheme_is(v, &u, a) && !rp_scheme_is(v, &u, b)) {
        rp__cfg_problem(p, cfg, row->id, "must be a %s:// or %s:// URL", a, b);
        return RP_OK;
    }
    size_t host = u.at == SIZE_MAX ? u.auth : u.at + 1;
    const char *why = NULL;
    if (host >= u.auth_end || v[host] == ':')
        rp__cfg_problem(p, cfg, row->id, "the URL names no host");
    else if ((why = rp_hostlist_check(v)) != NULL)
        rp__cfg_problem(p, cfg, row->id, "%s", why);
    return RP_OK;
}

rp_status rp__cfg_check_amqp_url(const rp__config_row *row, rp_config *cfg,
                                 rp_config_problems *p) {
    return rp_check_url(row, cfg, p, "amqp", "amqps");
}

rp_status rp__cfg_check_http_url(const rp__config_row *row, rp_config *cfg,
                                 rp_config_problems *p) {
    return rp_check_url(row, cfg, p, "http", "https");
}

rp_status rp__cfg_check_amqp_name(const rp__config_row *row, rp_config *cfg,
                                  rp_config_problems *p) {
    const char *v = rp_str(cfg, row);
    size_t len = strlen(v);
    char shown[128];
    if (len == 0)
        rp__cfg_problem(p, cfg, row->id, "must not be empty");
    else if (len > 255)
        rp__cfg_problem(p, cfg, row->id, "is %zu bytes long; AMQP names are at most 255",
                        len);
    else if (strncmp(v, "amq.", 4) == 0)
        rp__cfg_problem(p, cfg, row->id,
                        "%s starts with \"amq.\", which the broker reserves for itself",
                        rp__cfg_quote(v, len, shown, sizeof shown));
    return RP_OK;
}

rp_status rp__cfg_check_dsn(const rp__config_row *row, rp_config *cfg,
                            rp_config_problems *p) {
    const char *v = rp_str(cfg, row);
    if (v[0] == '\0') {
        rp__cfg_problem(p, cfg, row->id, "must not be empty");
        return RP_OK;
    }
    rp_url u;
    if (rp_dsn_is_uri(v, &u)) return RP_OK;
    bool secret;
    size_t at = 0;
    if (!rp_dsn_parse(v, &secret, &at))
        rp__cfg_problem(p, cfg, row->id,
                        "is not a libpq connection string: expected keyword=value at "
                        "character %zu (or use a postgresql:// URI)",
                        at + 1);
    return RP_OK;
}

rp_status rp__cfg_check_sql_identifier(const rp__config_row *row, rp_config *cfg,
                                       rp_config_problems *p) {
    const char *v = rp_str(cfg, row);
    size_t len = strlen(v);
    bool ok = len > 0 && len <= 63 && !rp_is_digit(v[0]);
    for (size_t i = 0; ok && i < len; i++)
        ok = (v[i] >= 'a' && v[i] <= 'z') || rp_is_digit(v[i]) || v[i] == '_';
    if (!ok) {
        char shown[128];
        rp__cfg_problem(p, cfg, row->id,
                        "%s is not a plain SQL identifier (lower-case letters, digits and "
                        "_, not starting with a digit, at most 63 bytes)",
                        rp__cfg_quote(v, len, shown, sizeof shown));
    }
    return RP_OK;
}

rp_status rp__cfg_check_users(const rp__config_row *row, rp_config *cfg,
                              rp_config_problems *p) {
    const rp_config_strlist *l = rp__config_cfield(cfg, row);
    for (size_t i = 0; i < l->n; i++) {
        size_t len = strlen(l->items[i]);
        if (len == 0)
            rp__cfg_problem(p, cfg, row->id, "item %zu is empty: a user name is needed",
                            i + 1);
        else if (len > 255)
            rp__cfg_problem(p, cfg, row->id,
                            "item %zu is %zu bytes long; an AMQP user_id is at most 255",
                            i + 1, len);
    }
    return RP_OK;
}

rp_status rp__cfg_check_vhosts(const rp__config_row *row, rp_config *cfg,
                               rp_config_problems *p) {
    const rp_config_strlist *l = rp__config_cfield(cfg, row);
    for (size_t i = 0; i < l->n; i++) {
        size_t len = strlen(l->items[i]);
        if (len == 0)
            rp__cfg_problem(p, cfg, row->id, "item %zu is empty: a vhost name is needed (\"/\" "
                            "for the default vhost)", i + 1);
        else if (len > 255)
            rp__cfg_problem(p, cfg, row->id,
                            "item %zu is %zu bytes long; an AMQP vhost name is at most 255",
                            i + 1, len);
        for (size_t j = 0; j < i; j++)
            if (strcmp(l->items[i], l->items[j]) == 0) {
                rp__cfg_problem(p, cfg, row->id, "item %zu repeats item %zu (\"%s\")", i + 1,
                                j + 1, len <= 64 ? l->items[i] : "...");
                break;
            }
    }
    return RP_OK;
}

rp_status rp__cfg_check_listen(const rp__config_row *row, rp_config *cfg,
                               rp_config_problems *p) {
    const char *v = rp_str(cfg, row);
    size_t len = strlen(v);
    char shown[128];
    const char *port = NULL;
    bool ok = true;
    if (len > 0 && v[0] == '[') {
        const char *close = strchr(v, ']');
        ok = close != NULL && close > v + 1 && close[1] == ':';
        if (ok) port = close + 2;
    } else {
        const char *colon = strrchr(v, ':');
        ok = colon != NULL && memchr(v, ':', (size_t)(colon - v)) == NULL;
        if (ok) port = colon + 1;
    }
    long n = 0;
    if (ok) {
        ok = *port != '\0' && strlen(port) <= 5;
        for (const char *s = port; ok && *s; s++) ok = rp_is_digit(*s);
        if (ok) n = strtol(port, NULL, 10);
        ok = ok && n >= 0 && n <= 65535;
    }
    /* Port 0 binds an ephemeral port, which reaperd logs (tests use it). */
    if (!ok)
        rp__cfg_problem(p, cfg, row->id,
                        "%s is not host:port (e.g. 127.0.0.1:9464, [::1]:9464 or :9464; "
                        "port 0..65535, 0 for any free port)",
                        rp__cfg_quote(v, len, shown, sizeof shown));
    return RP_OK;
}

/* ---- patterns ------------------------------------------------------------ */

int rp_config_pattern_match(const rp_config_pattern *pat, const char *name, size_t len) {
    if (pat == NULL || pat->code == NULL || (name == NULL && len > 0)) return -1;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(pat->code, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    int result = -1;
    if (md != NULL && mc != NULL) {
        /* Names are short (at most 255 bytes); a pattern that needs more
         * than this to decide is treated as not matching. */
        pcre2_set_match_limit(mc, 100000);
        pcre2_set_depth_limit(mc, 10000);
        int rc = pcre2_match(pat->code, (PCRE2_SPTR)(name ? name : ""), len, 0, 0, md, mc);
        result = rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
    }
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    return result;
}

/* Names no sensible pattern matches all of: a pattern that does is taken
 * to match every name. */
static const char *const rp_probe_names[] = {
    "a", "Z", "0", ".", "-", "_", " ", "~", "\xc3\xa9", "x.y", "queue-1",
};

/* Compiles and checks a pattern key. Returns the compiled pattern's status;
 * reports empty, uncompilable and catch-all patterns. */
static rp_status rp_compile_pattern(const rp__config_row *row, rp_config *cfg,
                                    rp_config_problems *p, bool *usable) {
    rp_config_pattern *pat = rp__config_field(cfg, row);
    *usable = false;
    pcre2_code_free(pat->code);
    pat->code = NULL;
    const char *text = pat->text ? pat->text : "";
    size_t len = strlen(text);
    char shown[128];
    if (len == 0) {
        rp__cfg_problem(p, cfg, row->id,
                        "must not be empty: an empty pattern matches every name");
        return RP_OK;
    }
    if (len > RP_PATTERN_MAX) {
        rp__cfg_problem(p, cfg, row->id, "is %zu bytes long; at most %d", len,
                        RP_PATTERN_MAX);
        return RP_OK;
    }
    int err = 0;
    PCRE2_SIZE off = 0;
    pat->code = pcre2_compile((PCRE2_SPTR)text, len, 0, &err, &off, NULL);
    if (pat->code == NULL) {
        if (err == PCRE2_ERROR_NOMEMORY) return RP_ERR_NOMEM;
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(err, msg, sizeof msg) < 0)
            snprintf((char *)msg, sizeof msg, "error %d", err);
        rp__cfg_problem(p, cfg, row->id, "pattern %s does not compile: %s at offset %zu",
                        rp__cfg_quote_pattern(text, len, shown, sizeof shown), (const char *)msg,
                        (size_t)off);
        return RP_OK;
    }
    if (rp_config_pattern_match(pat, "", 0) == 1) {
        rp__cfg_problem(p, cfg, row->id,
                        "pattern %s matches the empty string, so it matches every name",
                        rp__cfg_quote_pattern(text, len, shown, sizeof shown));
        return RP_OK;
    }
    size_t hits = 0;
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_probe_names); i++)
        hits += rp_config_pattern_match(pat, rp_probe_names[i],
                                        strlen(rp_probe_names[i])) == 1;
    if (hits == RP_ARRAY_LEN(rp_probe_names)) {
        rp__cfg_problem(p, cfg, row->id,
                        "pattern %s matches every name (it matches \"a\", \"0\", \".\" "
                        "and the other probe names alike)",
                        rp__cfg_quote_pattern(text, len, shown, sizeof shown));
        return RP_OK;
    }
    *usable = true;
    return RP_OK;
}

rp_status rp__cfg_check_pattern(const rp__config_row *row, rp_config *cfg,
                                rp_config_problems *p) {
    bool usable;
    return rp_compile_pattern(row, cfg, p, &usable);
}

rp_status rp__cfg_check_reply_pattern(const rp__config_row *row, rp_config *cfg,
                                      rp_config_problems *p) {
    rp_config_pattern *pat = rp__config_field(cfg, row);
    if (pat->text == NULL || pat->text[0] == '\0') {
        pcre2_code_free(pat->code);
        pat->code = NULL;
        return RP_OK;
    }
    bool usable;
    rp_status st = rp_compile_pattern(row, cfg, p, &usable);
    if (st != RP_OK || !usable) return st;
    const char *own[] = {cfg->broker.control_queue, cfg->broker.tap_queue};
    for (size_t i = 0; i < RP_ARRAY_LEN(own); i++) {
        const char *name = own[i] ? own[i] : "";
        if (rp_config_pattern_match(pat, name, strlen(name)) == 1)
            rp__cfg_problem(p, cfg, row->id,
                            "matches reaper's own queue \"%s\": replies must go to queues "
                            "of the requesters",
                            name);
    }
    return RP_OK;
}

/* Names that belong to others on a shared broker: a Celery queue, a
 * server-named queue, direct reply-to. */
static const char *const rp_foreign_names[] = {
    "celery",
    "amq.gen-x",
    "amq.rabbitmq.reply-to",
};

rp_status rp__cfg_check_owned_pattern(const rp__config_row *row, rp_config *cfg,
                                      rp_config_problems *p) {
    bool usable;
    rp_status st = rp_compile_pattern(row, cfg, p, &usable);
    if (st != RP_OK || !usable) return st;
    const rp_config_pattern *pat = rp__config_cfield(cfg, row);
    char shown[128];
    for (size_t i = 0; i < RP_ARRAY_LEN(rp_foreign_names); i++) {
        const char *name = rp_foreign_names[i];
        if (rp_config_pattern_match(pat, name, strlen(name)) == 1)
            rp__cfg_problem(p, cfg, row->id,
                            "pattern %s matches \"%s\", a queue reaper does not own; make "
                            "it match only reaper's queues (e.g. '^vibey\\.')",
                            rp__cfg_quote_pattern(pat->text, strlen(pat->text), shown, sizeof shown),
                            name);
    }
    return RP_OK;
}

/* ---- between keys -------------------------------------------------------- */

rp_status rp__cfg_check_cross(rp_config *cfg, rp_config_problems *p) {
    if (cfg->reap.consumer_timeout_seconds >= 1 &&
        cfg->reap.consumer_timeout_seconds < cfg->reap.longest_lease_seconds) {
        char where[512];
        rp_config_where(cfg, RP_CFG_REAP_LONGEST_LEASE_SECONDS,
                        cfg->origin[RP_CFG_REAP_LONGEST_LEASE_SECONDS], where, sizeof where);
        rp__cfg_problem(p, cfg, RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS,
                        "%lld%s is under reap.longest_lease_seconds (%lld%s%s): the broker "
                        "would cancel a consumer still inside a lease; raise the timeout or "
                        "lower the longest lease",
                        (long long)cfg->reap.consumer_timeout_seconds,
                        cfg->origin[RP_CFG_REAP_CONSUMER_TIMEOUT_SECONDS].source ==
                                RP_CONFIG_DEFAULT
                            ? " (the default)"
                            : "",
                        (long long)cfg->reap.longest_lease_seconds, where[0] ? ", " : "",
                        where[0] ? where : ", the default");
    }
    const char *cert = cfg->broker.tls.cert_file ? cfg->broker.tls.cert_file : "";
    const char *key = cfg->broker.tls.key_file ? cfg->broker.tls.key_file : "";
    if (cert[0] != '\0' && key[0] == '\0')
        rp__cfg_problem(p, cfg, RP_CFG_BROKER_TLS_CERT_FILE,
                        "is set but broker.tls.key_file is not: a client certificate needs "
                        "its key");
    if (key[0] != '\0' && cert[0] == '\0')
        rp__cfg_problem(p, cfg, RP_CFG_BROKER_TLS_KEY_FILE,
                        "is set but broker.tls.cert_file is not: a client key needs its "
                        "certificate");
    return RP_OK;
}

/* ---- the whole config ---------------------------------------------------- */

rp_status rp_config_validate(rp_config *cfg, rp_config_problems *p) {
    size_t before = rp_config_problems_count(p);
    for (int i = 0; i < RP_CFG_KEY_COUNT_; i++) {
        const rp__config_row *row = rp__config_row_get((rp_config_key_id)i);
        const void *f = rp__config_cfield(cfg, row);
        switch (row->type) {
        case RP_CFG_TYPE_INT: {
            int64_t v = *(const int64_t *)f;
            if (v < row->min || v > row->max) {
                if (row->max >= INT64_C(2147483647))
                    rp__cfg_problem(p, cfg, row->id, "must be at least %lld, got %lld",
                                    (long long)row->min, (long long)v);
                else
                    rp__cfg_problem(p, cfg, row->id, "must be between %lld and %lld, got %lld",
                                    (long long)row->min, (long long)row->max, (long long)v);
            }
            break;
        }
        case RP_CFG_TYPE_ENUM: {
            int v = *(const int *)f;
            int n = 0;
            while (row->choices[n] != NULL) n++;
            if (v < 0 || v >= n)
                rp__cfg_problem(p, cfg, row->id, "holds no valid choice (%d)", v);
            break;
        }
        case RP_CFG_TYPE_STRING:
            if (row->leak != NULL) {
                const char *why = row->leak(rp_str(cfg, row));
                if (why != NULL) {
                    rp__cfg_problem(p, cfg, row->id, "%s", why);
                    continue; /* nothing more is said about a value with a secret */
                }
            }
            break;
        case RP_CFG_TYPE_BOOL:
        case RP_CFG_TYPE_STRLIST:
        case RP_CFG_TYPE_PATTERN:
            break;
        }
        if (row->check != NULL) {
            rp_status st = row->check(row, cfg, p);
            if (st != RP_OK) return st;
        }
    }
    rp_status st = rp__cfg_check_cross(cfg, p);
    if (st != RP_OK) return st;
    if (p != NULL && p->nomem) return RP_ERR_NOMEM;
    return rp_config_problems_count(p) > before ? RP_ERR_CONFIG : RP_OK;
}
