/*
 * Hardened PostgreSQL sessions (issue 15 item 5), against the real
 * database: what every session reaperd opens is set to (search_path,
 * synchronous_commit, the three time-outs, tcp_user_timeout), that a
 * statement held past lock_timeout or statement_timeout fails the pass
 * cleanly instead of hanging it, and that store.dsn is read with libpq's
 * own parser, so a percent-encoded password key is refused and never
 * printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "itest.h"
#include "rp_pg_conn.h"

static char schema[64];

static int setup(void **state) {
    (void)state;
    static int n;
    snprintf(schema, sizeof schema, "itest_sess_%d_%d", (int)getpid(), n++);
    return itest_migrate(schema);
}

static int teardown(void **state) {
    (void)state;
    PGconn *pg = itest_pg_connect();
    itest_drop_schema(pg, schema);
    PQfinish(pg);
    return 0;
}

static char *show(PGconn *pg, const char *name) {
    char sql[128];
    snprintf(sql, sizeof sql, "SHOW %s", name);
    PGresult *r = PQexec(pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void assert_show(PGconn *pg, const char *name, const char *want) {
    char *got = show(pg, name);
    if (strcmp(got, want) != 0) fprintf(stderr, "SHOW %s: %s, want %s\n", name, got, want);
    assert_string_equal(got, want);
    free(got);
}

/* A session is set as configured as soon as it connects, and an options=
 * in the DSN (the operator's, or an attacker's who can only edit the DSN)
 * does not undo it; the next connect after a drop is set the same. */
static void test_session_is_set_on_connect(void **state) {
    (void)state;
    char dsn[1024];
    snprintf(dsn, sizeof dsn,
             "%s options='-c search_path=public -c synchronous_commit=off "
             "-c statement_timeout=0 -c lock_timeout=0'",
             itest_env("REAPER_STORE_DSN"));
    rp_pg_conn *c = rp_pg_conn_new(dsn, 2);
    rp_pg_session s = {.schema = schema,
                       .statement_timeout_ms = 1500,
                       .lock_timeout_ms = 700,
                       .idle_in_transaction_timeout_ms = 9000,
                       .tcp_user_timeout_ms = 4000};
    assert_int_equal(rp_pg_conn_set_session(c, &s), RP_OK);
    char err[256] = "";
    for (int round = 0; round < 2; round++) {
        assert_int_equal(rp_pg_conn_ensure(c, err, sizeof err), RP_OK);
        PGconn *pg = rp_pg_conn_handle(c);
        char want[128];
        snprintf(want, sizeof want, "pg_catalog, %s", schema);
        assert_show(pg, "search_path", want);
        assert_show(pg, "synchronous_commit", "on");
        assert_show(pg, "statement_timeout", "1500ms");
        assert_show(pg, "lock_timeout", "700ms");
        assert_show(pg, "idle_in_transaction_session_timeout", "9s");
        /* tcp_user_timeout and keepalives are the client socket's. */
        int v = -1;
        socklen_t vl = sizeof v;
        assert_int_equal(getsockopt(PQsocket(pg), IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &vl), 0);
        assert_int_equal(v, 4000);
        vl = sizeof v;
        assert_int_equal(getsockopt(PQsocket(pg), SOL_SOCKET, SO_KEEPALIVE, &v, &vl), 0);
        assert_int_equal(v, 1);
        /* Unqualified names find the schema's tables, and nothing else. */
        PGresult *r = PQexec(pg, "SELECT count(*) FROM job");
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        PQclear(r);
        assert_int_equal(rp_pg_conn_ping(c, err, sizeof err), RP_OK);
        rp_pg_conn_close(c);
    }
    rp_pg_conn_free(c);
}

typedef struct backend {
    PGconn *pg; /* another session, to look */
    int pid;
} backend;

/* Whether the server process pid is gone. */
static bool backend_gone(void *ctx) {
    backend *b = ctx;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d", b->pid);
    PGresult *r = PQexec(b->pg, sql);
    bool gone = PQresultStatus(r) == PGRES_TUPLES_OK && atol(PQgetvalue(r, 0, 0)) == 0;
    PQclear(r);
    return gone;
}

/* A transaction left idle past idle_in_transaction_session_timeout is ended
 * by the server (its locks released), and the connection is found dead. */
static void test_idle_in_transaction_is_ended(void **state) {
    (void)state;
    rp_pg_conn *c = rp_pg_conn_new(itest_env("REAPER_STORE_DSN"), 2);
    rp_pg_session s = {.schema = schema, .idle_in_transaction_timeout_ms = 300};
    assert_int_equal(rp_pg_conn_set_session(c, &s), RP_OK);
    char err[256] = "";
    assert_int_equal(rp_pg_conn_ensure(c, err, sizeof err), RP_OK);
    char sql[160];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE %s.job IN ACCESS EXCLUSIVE MODE", schema);
    PGresult *r = PQexec(rp_pg_conn_handle(c), sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    assert_int_equal(PQtransactionStatus(rp_pg_conn_handle(c)), PQTRANS_INTRANS);
    /* Until the server has ended the session (asked from another one: a
     * query on this one would restart its idle time). */
    backend b = {itest_pg_connect(), PQbackendPID(rp_pg_conn_handle(c))};
    (void)itest_wait_until(backend_gone, &b, 10000);
    PQfinish(b.pg);
    assert_int_equal(rp_pg_conn_ping(c, err, sizeof err), RP_ERR_UNAVAILABLE);
    PGconn *pg = itest_pg_connect();
    /* The lock went with the session. */
    assert_int_equal(itest_sqln(pg, schema, "SET lock_timeout = 1000; SELECT count(*) FROM job"),
                     0);
    PQfinish(pg);
    rp_pg_conn_free(c);
}

/* Holds an ACCESS EXCLUSIVE lock on the job table in an open transaction
 * and runs reaperd --once --json with env: the pass must end (exit 1, the
 * job queue unreadable) well before the lock is released. */
static void pass_behind_a_lock(char *const env_extra[], const char *why) {
    PGconn *holder = itest_pg_connect();
    char sql[256];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE %s.job IN ACCESS EXCLUSIVE MODE", schema);
    PGresult *r = PQexec(holder, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);

    char schema_env[96], owned[128], dlq[160];
    snprintf(schema_env, sizeof schema_env, "REAPER_STORE_SCHEMA=%s", schema);
    itest_env_owned(owned, sizeof owned, "sess");
    itest_env_dead_letters(dlq, sizeof dlq, "sess");
    char *env[8] = {schema_env, owned, dlq, "REAPER_LOG_FORMAT=json"};
    for (int i = 0; env_extra[i] != NULL && i < 3; i++) env[4 + i] = env_extra[i];
    char *argv[] = {(char *)itest_env("REAPERD"), "--once", "--json", NULL};
    long long t0 = itest_mono_ms();
    rp_child *ch = rp_child_start(argv, env);
    int rc = rp_child_wait_exit(ch, 20000);
    long long took = itest_mono_ms() - t0;
    /* Released before any assertion, so that a failure does not leave the
     * schema locked for the teardown. */
    PQclear(PQexec(holder, "ROLLBACK"));
    PQfinish(holder);
    if (rc != 1) fprintf(stderr, "%s: exit %d after %lld ms\n%s\n", why, rc, took, ch->log);
    assert_int_equal(rc, 1);
    assert_true(took < 15000);
    /* The reason is in the log: the server cancelled the statement. */
    assert_non_null(strstr(ch->log, why));
    rp_child_free(ch);
}

static void test_lock_timeout_fails_the_pass(void **state) {
    (void)state;
    char *env[] = {"REAPER_STORE_LOCK_TIMEOUT_MS=300", "REAPER_STORE_STATEMENT_TIMEOUT_MS=0",
                   NULL};
    pass_behind_a_lock(env, "lock timeout");
}

static void test_statement_timeout_fails_the_pass(void **state) {
    (void)state;
    char *env[] = {"REAPER_STORE_LOCK_TIMEOUT_MS=0", "REAPER_STORE_STATEMENT_TIMEOUT_MS=500",
                   NULL};
    pass_behind_a_lock(env, "statement timeout");
}

/* --check-config lists the new keys with their defaults and their env
 * overrides. */
static void test_check_config_shows_the_keys(void **state) {
    (void)state;
    char *argv[] = {(char *)itest_env("REAPERD"), "--check-config", NULL};
    char *env[] = {"REAPER_STORE_STATEMENT_TIMEOUT_MS=1234", NULL};
    char *out, *err;
    int rc = rp_run_capture(argv, env, &out, &err);
    if (rc != 0) fprintf(stderr, "%s%s", out, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "statement_timeout_ms: 1234"));
    assert_non_null(strstr(out, "REAPER_STORE_STATEMENT_TIMEOUT_MS"));
    assert_non_null(strstr(out, "lock_timeout_ms: 10000"));
    assert_non_null(strstr(out, "idle_in_transaction_timeout_ms: 60000"));
    assert_non_null(strstr(out, "tcp_user_timeout_ms: 30000"));
    free(out);
    free(err);
}

/* Every spelling of a password libpq reads is refused (exit 2), and the
 * value is printed nowhere: core's scan knows password= and user:pw@; a
 * percent-encoded key in a URI query is only seen by libpq's parser. */
static void test_encoded_password_is_refused(void **state) {
    (void)state;
    static const char *const dsns[] = {
        "REAPER_STORE_DSN=postgresql://reaper@db/vibey?%70assword=x",
        "REAPER_STORE_DSN=postgresql://reaper@db/vibey?ssl%70assword=x",
        "REAPER_STORE_DSN=postgresql://reaper@db/vibey?%70%61%73%73%77%6f%72%64=x",
    };
    for (size_t i = 0; i < sizeof dsns / sizeof dsns[0]; i++) {
        char *argv[] = {(char *)itest_env("REAPERD"), "--check-config", NULL};
        char *env[] = {(char *)dsns[i], NULL};
        char *out, *err;
        int rc = rp_run_capture(argv, env, &out, &err);
        if (rc != 2) fprintf(stderr, "%s: exit %d\n%s%s", dsns[i], rc, out, err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(err, "store.dsn"));
        assert_non_null(strstr(err, "password"));
        assert_null(strstr(out, "assword=x"));
        assert_null(strstr(err, "assword=x"));
        assert_null(strstr(out, "%7"));
        assert_null(strstr(err, "%7"));
        free(out);
        free(err);
    }
    /* The adapter's check alone, on more spellings. */
    assert_non_null(rp_pg_dsn_leak("postgresql://reaper@db/vibey?%70assword=x"));
    assert_non_null(rp_pg_dsn_leak("host=db password = x"));
    assert_non_null(rp_pg_dsn_leak("host=db sslpassword='x y'"));
    assert_non_null(rp_pg_dsn_leak("postgresql://reaper:x@db/vibey"));
    assert_non_null(rp_pg_dsn_leak("host=db user='unterminated"));
    assert_null(rp_pg_dsn_leak("host=db dbname=vibey user=reaper sslmode=verify-full"));
    assert_null(rp_pg_dsn_leak("postgresql://reaper@db/vibey?sslmode=verify-full"));
}

/* The port of REAPER_STORE_DSN (the tests' primary). */
static int store_port(void) {
    PQconninfoOption *o = PQconninfoParse(itest_env("REAPER_STORE_DSN"), NULL);
    assert_non_null(o);
    int port = 0;
    for (PQconninfoOption *i = o; i->keyword != NULL; i++)
        if (strcmp(i->keyword, "port") == 0 && i->val != NULL) port = atoi(i->val);
    PQconninfoFree(o);
    assert_true(port > 0);
    return port;
}

/* A multi-host DSN (issue #19 item 4, PostgreSQL failover): accepted as it
 * is (no password in it), a connect skips a host that refuses and names
 * the one it got, and a connect that gets none says why for EVERY host
 * tried, on one line (libpq gives one line per host). */
static void test_multi_host_dsn(void **state) {
    (void)state;
    int live = store_port(), dead1 = itest_closed_port(), dead2 = itest_closed_port();
    char dsn[256];
    snprintf(dsn, sizeof dsn,
             "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=vibey user=reaper "
             "target_session_attrs=read-write",
             dead1, live);
    assert_null(rp_pg_dsn_leak(dsn));
    rp_pg_conn *c = rp_pg_conn_new(dsn, 5);
    char err[512] = "";
    assert_int_equal(rp_pg_conn_ensure(c, err, sizeof err), RP_OK);
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%d/vibey", live);
    fprintf(stderr, "multi-host connect got %s\n", rp_pg_conn_peer(c));
    assert_string_equal(rp_pg_conn_peer(c), want);
    rp_pg_conn_free(c);

    snprintf(dsn, sizeof dsn, "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=vibey user=reaper",
             dead1, dead2);
    c = rp_pg_conn_new(dsn, 5);
    assert_int_equal(rp_pg_conn_ensure(c, err, sizeof err), RP_ERR_UNAVAILABLE);
    fprintf(stderr, "both hosts down: %s\n", err);
    assert_null(strchr(err, '\n'));
    char p1[32], p2[32];
    snprintf(p1, sizeof p1, "port %d failed", dead1);
    snprintf(p2, sizeof p2, "port %d failed", dead2);
    assert_non_null(strstr(err, p1));
    assert_non_null(strstr(err, p2));
    assert_null(strstr(err, "Is the server running")); /* hints left out */
    rp_pg_conn_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_host_dsn),
        cmocka_unit_test(test_encoded_password_is_refused),
        cmocka_unit_test(test_check_config_shows_the_keys),
        cmocka_unit_test_setup_teardown(test_session_is_set_on_connect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_in_transaction_is_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_timeout_fails_the_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_statement_timeout_fails_the_pass, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
