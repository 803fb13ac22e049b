#include "pg_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "itest.h"
#include "rp_log.h"
#include "rp_park.h"
#include "rp_pg_migrate.h"

static pid_t rp_main_pid;

__attribute__((constructor)) static void rp_remember_pid(void) { rp_main_pid = getpid(); }

static void rp_die(const char *what, const char *detail) {
    if (getpid() != rp_main_pid) {
        fprintf(stderr, "child %d: %s: %s\n", (int)getpid(), what, detail ? detail : "");
        _exit(253);
    }
    fail_msg("%s: %s", what, detail ? detail : "");
}

static rp_status rp_count_publish(void *self, const rp_ledger_event *ev) {
    pgfx *f = self;
    f->published++;
    f->last_published_seq = ev->seq;
    return RP_OK;
}

static PGconn *rp_plain(const char *schema) {
    PGconn *c = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    if (PQstatus(c) != CONNECTION_OK) rp_die("cannot connect", PQerrorMessage(c));
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    char sql[160];
    snprintf(sql, sizeof sql, "SET search_path TO %s", schema);
    PQclear(PQexec(c, sql));
    return c;
}

static rp_status rp_count_publish(void *self, const rp_ledger_event *ev);

static void rp_open_store(pgfx *f, const char *dsn) {
    f->conn = rp_pg_conn_new(dsn, 2);
    f->store = f->conn ? rp_pg_store_new(f->conn, f->schema) : NULL;
    if (f->conn == NULL || f->store == NULL) rp_die("store", "out of memory");
    memset(&f->ports, 0, sizeof f->ports);
    rp_pg_store_ports(f->store, &f->ports);
    f->ports.publisher.self = f;
    f->ports.publisher.publish = rp_count_publish;
}

void pgfx_reconnect(pgfx *f, const char *dsn, const char *extra) {
    rp_pg_store_free(f->store);
    rp_pg_conn_free(f->conn);
    char buf[1024];
    snprintf(buf, sizeof buf, "%s %s", dsn ? dsn : itest_env("REAPER_STORE_DSN"),
             extra ? extra : "");
    rp_open_store(f, buf);
}

static pgfx *rp_build(const char *schema, bool owner) {
    pgfx *f = calloc(1, sizeof *f);
    snprintf(f->schema, sizeof f->schema, "%s", schema);
    f->owner = owner;
    f->sql = rp_plain(schema);
    if (owner) {
        char err[512] = "";
        if (rp_pg_migrate(f->sql, f->schema, NULL, err, sizeof err) != RP_OK)
            rp_die("migrate", err);
    }
    rp_open_store(f, itest_env("REAPER_STORE_DSN"));
    rp_pass_options_default(&f->opt);
    /* The tests of the store move and count many ready rows of one kind:
     * issue 18's WAITING_DEPTH stays out of their reports unless a test
     * sets its threshold (test_pg_store_runbook does). */
    f->opt.thresholds.waiting_depth_threshold = INT32_MAX;
    f->opt.thresholds.divergence_min_waiting = INT32_MAX; /* and DIVERGENT */
    int code;
    PCRE2_SIZE off;
    f->owned = pcre2_compile((PCRE2_SPTR) "^vibey\\.", PCRE2_ZERO_TERMINATED, 0, &code, &off, NULL);
    f->dlq = pcre2_compile((PCRE2_SPTR) "(\\.dlq|\\.dead)$", PCRE2_ZERO_TERMINATED, 0, &code, &off,
                           NULL);
    f->opt.owned_queue_pattern = f->owned;
    f->opt.dead_letter_queue_pattern = f->dlq;
    return f;
}

pgfx *pgfx_new(const char *tag) {
    static int n;
    char schema[64];
    snprintf(schema, sizeof schema, "itest_%s_%d_%d", tag, (int)getpid(), n++);
    /* Warnings are what the adapter says about failures the tests cause on
     * purpose; keep them, they show what an operator would see. */
    rp_log_setup(RP_LOG_WARN, RP_LOG_FORMAT_TEXT);
    return rp_build(schema, true);
}

pgfx *pgfx_attach(const char *schema) { return rp_build(schema, false); }

void pgfx_free(pgfx *f) {
    if (f == NULL) return;
    rp_pg_store_free(f->store);
    rp_pg_conn_free(f->conn);
    if (f->owner) {
        char sql[160];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", f->schema);
        PGresult *r = PQexec(f->sql, sql);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            /* The connection may have died with a restart: one more try. */
            PQclear(r);
            PQfinish(f->sql);
            f->sql = rp_plain(f->schema);
            r = PQexec(f->sql, sql);
        }
        PQclear(r);
    }
    PQfinish(f->sql);
    pcre2_code_free(f->owned);
    pcre2_code_free(f->dlq);
    free(f);
}

static PGresult *rp_vexec(pgfx *f, const char *fmt, va_list ap) RP_PRINTF(2, 0);
static PGresult *rp_vexec(pgfx *f, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) rp_die("format", fmt);
    char *sql = malloc((size_t)n + 1);
    vsnprintf(sql, (size_t)n + 1, fmt, ap);
    PGresult *r = PQexec(f->sql, sql);
    if (PQstatus(f->sql) != CONNECTION_OK) {
        /* The plain connection died (a restart test): reconnect once. */
        PQclear(r);
        PQfinish(f->sql);
        f->sql = rp_plain(f->schema);
        r = PQexec(f->sql, sql);
    }
    free(sql);
    return r;
}

void pgfx_exec(pgfx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = rp_vexec(f, fmt, ap);
    va_end(ap);
    ExecStatusType t = PQresultStatus(r);
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK) rp_die("sql", PQresultErrorMessage(r));
    PQclear(r);
}

const char *pgfx_try(pgfx *f, const char *fmt, ...) {
    static char state[8];
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = rp_vexec(f, fmt, ap);
    va_end(ap);
    ExecStatusType t = PQresultStatus(r);
    const char *code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, sizeof state, "%s",
             (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK) ? "" : (code ? code : "?"));
    PQclear(r);
    return state;
}

static PGresult *rp_scalar(pgfx *f, const char *fmt, va_list ap) RP_PRINTF(2, 0);
static PGresult *rp_scalar(pgfx *f, const char *fmt, va_list ap) {
    PGresult *r = rp_vexec(f, fmt, ap);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) rp_die("sql", PQresultErrorMessage(r));
    if (PQntuples(r) < 1 || PQnfields(r) < 1) rp_die("sql", "no row");
    return r;
}

int64_t pgfx_i64(pgfx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = rp_scalar(f, fmt, ap);
    va_end(ap);
    int64_t v = PQgetisnull(r, 0, 0) ? 0 : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

char *pgfx_text(pgfx *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = rp_scalar(f, fmt, ap);
    va_end(ap);
    char *v = PQgetisnull(r, 0, 0) ? NULL : strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

int64_t pgfx_expired(pgfx *f, int n, const char *project, int attempts, int max_attempts,
                     const char *ago) {
    return pgfx_i64(f,
                    "WITH ins AS (INSERT INTO job (project_id, kind, state, attempts, max_attempts,"
                    " lease_owner, lease_expires_at, run_after)"
                    " SELECT '%s', 'send_email', 'leased', %d, %d, 'worker-' || g,"
                    " now() - interval '%s', now() - interval '2 hours'"
                    " FROM generate_series(1, %d) g RETURNING id) SELECT min(id) FROM ins",
                    project, attempts, max_attempts, ago, n);
}

rp_status pgfx_pass(pgfx *f, bool dry_run, rp_report *r) {
    f->opt.dry_run = dry_run;
    return rp_pass_run(&f->ports, &f->opt, r);
}

char *pgfx_dump(pgfx *f) {
    PGresult *rels = PQexecParams(
        f->sql,
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = $1 AND c.relkind IN ('r', 'S') ORDER BY c.relname",
        1, NULL, (const char *const[]){f->schema}, NULL, NULL, 0);
    if (PQresultStatus(rels) != PGRES_TUPLES_OK) rp_die("dump", PQresultErrorMessage(rels));
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (int i = 0; i < PQntuples(rels); i++) {
        const char *rel = PQgetvalue(rels, i, 0);
        bool seq = PQgetvalue(rels, i, 1)[0] == 'S';
        char *body = seq ? pgfx_text(f, "SELECT last_value::text || ' ' || is_called::text FROM %s",
                                     rel)
                         : pgfx_text(f,
                                     "SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text),"
                                     " '') FROM %s t",
                                     rel);
        size_t need = strlen(rel) + (body ? strlen(body) : 4) + 8;
        while (len + need + 1 > cap) out = realloc(out, cap *= 2);
        len += (size_t)sprintf(out + len, "== %s\n%s\n", rel, body ? body : "NULL");
        free(body);
    }
    PQclear(rels);
    return out;
}

bool pgfx_has_note(const rp_report *r, const char *needle) {
    for (size_t i = 0; i < r->n_notes; i++)
        if (strstr(r->notes[i], needle)) return true;
    return false;
}

rp_status pgfx_take1(const rp_store_port *s, const rp_lease_query *q, rp_held_job *job) {
    rp_lease_batch b;
    rp_status st = s->take_leases(s->self, q, 1, &b);
    if (st == RP_OK) *job = b.jobs[0];
    return st;
}

rp_status pgfx_move1(const rp_store_port *s, const rp_held_job *job, const rp_verdict *v,
                     rp_event_ref *ev) {
    rp_lease_move m = {.job = job, .v = v};
    rp_status st = s->commit_leases(s->self, &m, 1);
    *ev = m.event;
    return st != RP_OK ? st : m.result;
}

#define PGFX_OSTR(s) ((rp_opt_str){true, {(const uint8_t *)(s), strlen(s)}})

int64_t pgfx_park(pgfx *f, const char *vhost, const char *origin, const char *dlq,
                  const char *message_id, rp_bytes body, bool truncated,
                  const rp_pg_dl_handle *handle) {
    rp_xdeath xd = {PGFX_OSTR(origin), PGFX_OSTR("rejected"), {true, 1700000000}, {true, 1}};
    rp_dl_message msg;
    memset(&msg, 0, sizeof msg);
    msg.headers.message_id = PGFX_OSTR(message_id);
    msg.headers.first_death_queue = PGFX_OSTR(origin);
    msg.headers.first_death_reason = PGFX_OSTR("rejected");
    msg.headers.x_death = &xd;
    msg.headers.n_x_death = 1;
    msg.body = body;
    msg.body_truncated = truncated;
    msg.handle = handle;
    char found_on[200];
    snprintf(found_on, sizeof found_on, "%s", dlq ? dlq : origin);
    if (dlq == NULL) strncat(found_on, ".dlq", sizeof found_on - strlen(found_on) - 1);
    rp_park_site site = {vhost ? vhost : "/", found_on, f->dlq};
    rp_report r;
    rp_report_init(&r, false);
    rp_park_outcome out;
    assert_int_equal(rp_park_dead_letter(&f->ports, &site, &msg, false, &r, &out), RP_OK);
    assert_int_equal(out, RP_PARKED_NEW);
    rp_report_cleanup(&r);
    int64_t gate =
        pgfx_i64(f, "SELECT gate_id FROM dead_letter WHERE identity LIKE 'id:%%/%s'", message_id);
    assert_true(gate > 0);
    return gate;
}
