/*
 * PostgreSQL failover under a dead-letter storm (issue #19 item 4).
 *
 * The private PostgreSQL (the primary) gets a streaming standby
 * (scripts/services start pgstandby: pg_basebackup -R, asynchronous), and
 * reaperd a multi-host DSN naming both, the primary first,
 * target_session_attrs=read-write (RP_STORE_FAILOVER_DSN). Mid-storm the
 * primary is stopped (fast: a clean stop, the standby receives everything
 * committed) and the standby promoted: from then on every connect is
 * refused by the first host and goes on to the second. Then: reaperd's
 * sessions find the new primary and the parks resume; every dead letter is
 * parked exactly once on the promoted server, and every delivery was acked
 * (stopped, reaperd hands nothing back), so every acked dead letter has its
 * row; the lease LISTEN session listens on the promoted server (its
 * non-blocking connect: the first host's refusal comes after the connect
 * started, and libpq opens the next host's socket under the same descriptor
 * number, which the listener must watch afresh); the sweep turn's advisory
 * lock is taken again on the promoted server. The gap (last park committed
 * before the stop, first after) is printed.
 *
 * Measurement modes (not run by CI; the figures in helm/reaper/README.md):
 * RP_PGFAIL_STOP=immediate stops the primary as a crash does (no shutdown
 * checkpoint: what it had not sent yet never reaches the standby): the
 * test then counts the acked dead letters the promoted server lacks instead
 * of asserting none; RP_PGFAIL_SYNC=1 first sets synchronous_standby_names
 * = '*' on the primary (each commit waits for the standby's flush).
 * RP_PGFAIL_FREEZE_MS=N (with the immediate stop) stops the standby's WAL
 * receiver (SIGSTOP) for N ms before the crash and kills it after (what
 * it had not read is lost), as a standby that lags behind (a slow link, a
 * busy disk) would: an asynchronous primary goes on
 * committing, and the tap acking, parks the standby never gets (the
 * promoted server lacks them: counted); a synchronous one commits nothing
 * meanwhile, so nothing acked may be missing (asserted).
 * RP_PGFAIL_CANCEL=1 (with the three above; ctest's
 * test_reaperd_pg_failover_sync_cancel) stops reaperd (SIGTERM) while its
 * parks wait for the frozen synchronous standby: after the stop grace
 * reaperd cancels the tap's command, and PostgreSQL answers a commit whose
 * wait for the standby was cancelled as a success (with a WARNING: it is
 * committed locally, not replicated). Those dead letters must not be acked:
 * after the crash and the promotion a reaperd started again parks every
 * one, none missing (asserted).
 * RP_PGFAIL_RESTART_MS=N (with the four above; ctest's
 * test_reaperd_pg_failover_sync_restart) starts reaperd again at once
 * after that stop, before the crash, the standby still frozen, and lets it
 * run N ms: the dead letters the stop handed back are delivered again,
 * some of them already on the primary (their commits' waits cancelled), so
 * their park inserts nothing; it must still wait for the standby (and
 * never return while it is frozen) rather than ack rows the promoted
 * server will lack: none missing (asserted; before the park's lead wrote
 * WAL, a few were, e.g. 2 of 3,000).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap_common.h"

#define STORM 3000L

static bool sync_mode;
static bool immediate_mode;
static long freeze_ms;
static bool cancel_mode;
static long restart_ms;
static int walreceiver; /* the standby's, while stopped (SIGSTOP) */

static long parked(void) {
    if (T.reaperd) rp_child_drain(T.reaperd, 0);
    return tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE 'f-%%'");
}

/* Reaperd's sessions of application_name app on the server T.pg reaches
 * whose current (or last) statement starts with what. */
static long sessions(const char *app, const char *what) {
    if (T.reaperd) rp_child_drain(T.reaperd, 0);
    return tap_sqln("SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s' AND "
                    "datname = current_database() AND query LIKE '%s%%'",
                    app, what);
}

/* Sweep turns held by reaperd sessions on the server T.pg reaches. */
static long turns_held(void) {
    if (T.reaperd) rp_child_drain(T.reaperd, 0);
    return tap_sqln("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE "
                    "l.locktype = 'advisory' AND l.granted AND a.application_name = 'reaperd' AND "
                    "l.classid = hashtext('reaper.sweep_turn')::oid");
}

static void admin_sql(const char *sql) {
    PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
    assert_int_equal(PQstatus(a), CONNECTION_OK);
    PGresult *r = PQexec(a, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(a));
    PQclear(r);
    PQfinish(a);
}

static void test_failover_mid_storm(void **state) {
    (void)state;
    /* The test's own reads go where reaperd's writes go. */
    PQfinish(T.pg);
    T.pg = PQconnectdb(itest_env("RP_STORE_FAILOVER_DSN"));
    assert_int_equal(PQstatus(T.pg), CONNECTION_OK);
    if (sync_mode) {
        /* In force from the reload on, and gone from the file again at
         * once: the primary started again at teardown must not wait for a
         * standby that is no more (its first write would hang). */
        admin_sql("ALTER SYSTEM SET synchronous_standby_names = '*'");
        admin_sql("SELECT pg_reload_conf()");
        /* The postmaster reads the file when the reload's signal reaches
         * it: reset the file only once the standby is seen synchronous. */
        PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
        long sync = -1;
        ITEST_POLL((sync = itest_sqln(a, "public", "SELECT count(*) FROM pg_stat_replication "
                                                   "WHERE sync_state = 'sync'")) == 1,
                   10000);
        PQfinish(a);
        assert_int_equal(sync, 1);
        admin_sql("ALTER SYSTEM RESET synchronous_standby_names");
    }
    char work[128], dlq[128];
    tap_dead_letter_source("pgfail", 0, work, dlq, sizeof work);
    char dsn[300];
    snprintf(dsn, sizeof dsn, "REAPER_STORE_DSN=%s", itest_env("RP_STORE_FAILOVER_DSN"));
    /* A sweep every 2 s: the sweep turn is asked for again after the
     * failover. */
    char *env[] = {dsn, "REAPER_REAP_INTERVAL_SECONDS=2", NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});

    /* Before: the listener and the sweep turn on the old primary. */
    long listening = -1, turns = -1;
    ITEST_POLL((listening = sessions("reaperd-lease-listen", "LISTEN")) == 1, 15000);
    assert_int_equal(listening, 1);
    ITEST_POLL((turns = turns_held()) == 1, 15000);
    assert_int_equal(turns, 1);

    tap_publish(work, "f", STORM);
    long at_stop = 0;
    ITEST_POLL((at_stop = parked()) >= STORM / 8, 20000);
    assert_true(at_stop >= STORM / 8);
    /* How far behind the standby is at that moment (what an immediate
     * stop can cost an asynchronous standby). */
    PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
    PGresult *lag = PQexec(a, "SELECT coalesce(max(pg_current_wal_lsn() - flush_lsn), -1), "
                              "coalesce(max(extract(epoch FROM flush_lag) * 1000)::int, -1) "
                              "FROM pg_stat_replication");
    if (PQresultStatus(lag) == PGRES_TUPLES_OK && PQntuples(lag) == 1)
        fprintf(stderr, "failover: the standby's flush is %s bytes behind (flush_lag %s ms)\n",
                PQgetvalue(lag, 0, 0), PQgetvalue(lag, 0, 1));
    PQclear(lag);
    PQfinish(a);
    long frozen_parks = -1;
    if (freeze_ms > 0) {
        /* The standby stops receiving; what the primary commits from now
         * on is on the primary alone. */
        PGconn *sbw = PQconnectdb(itest_env("RP_STORE_STANDBY_DSN"));
        assert_int_equal(PQstatus(sbw), CONNECTION_OK);
        long pid = itest_sqln(sbw, T.schema, "SELECT coalesce(max(pid), 0) FROM pg_stat_wal_receiver");
        PQfinish(sbw);
        assert_true(pid > 0);
        walreceiver = (int)pid;
        assert_int_equal(kill(walreceiver, SIGSTOP), 0);
        long at_freeze = parked();
        for (long long until = itest_mono_ms() + freeze_ms; itest_mono_ms() < until;)
            rp_child_drain(T.reaperd, 50);
        frozen_parks = parked() - at_freeze;
        if (cancel_mode) { /* its parks wait for the standby: the grace runs out */
            long long t0 = itest_mono_ms();
            int rc = rp_child_stop(T.reaperd, SIGTERM, 30000);
            fprintf(stderr, "failover: reaperd stopped in %lld ms, its parks waiting for the "
                            "standby; it said:\n", itest_mono_ms() - t0);
            for (const char *l = T.reaperd->log; l && *l;) {
                const char *e = strchr(l, '\n');
                size_t len = e ? (size_t)(e - l) : strlen(l);
                char line[1024];
                snprintf(line, sizeof line, "%.*s", (int)len, l);
                if (strstr(line, "grace") || strstr(line, "WARNING") || strstr(line, "closing") ||
                    strstr(line, "acked"))
                    fprintf(stderr, "  %s\n", line);
                l = e ? e + 1 : l + len;
            }
            rp_child_free(T.reaperd);
            T.reaperd = NULL;
            assert_int_equal(rc, 0);
        }
        if (restart_ms > 0) { /* started again before the crash */
            long at_restart = parked();
            T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
            for (long long until = itest_mono_ms() + restart_ms; itest_mono_ms() < until;)
                rp_child_drain(T.reaperd, 50);
            fprintf(stderr,
                    "failover: reaperd started again before the crash, the standby still "
                    "frozen; in %ld ms the primary's count of parks grew by %ld, the tap queue "
                    "holds %ld\n",
                    restart_ms, parked() - at_restart, tap_depth(T.tap));
        }
    }
    long long t_stop = itest_mono_ms();
    if (immediate_mode) setenv("RP_PG_STOP_MODE", "immediate", 1);
    assert_int_equal(itest_services("stop", "postgres"), 0);
    unsetenv("RP_PG_STOP_MODE");
    long long t_stopped = itest_mono_ms();
    if (walreceiver > 0) {
        /* The primary is gone. What the stopped receiver had not read
         * (the socket's buffers hold a few commits' WAL) goes with it, as
         * with a standby cut off: killed, its standby restarts recovery. */
        kill(walreceiver, SIGKILL);
        kill(walreceiver, SIGCONT);
        walreceiver = 0;
        fprintf(stderr,
                "failover: the standby's WAL receiver was stopped %ld ms before the crash and "
                "killed after it; the primary's count of parks grew by %ld meanwhile\n",
                freeze_ms, frozen_parks);
        PGconn *up = NULL;
        for (long long until = itest_mono_ms() + 30000; itest_mono_ms() < until; usleep(200000)) {
            up = PQconnectdb(itest_env("RP_STORE_STANDBY_DSN"));
            if (PQstatus(up) == CONNECTION_OK) break;
            PQfinish(up);
            up = NULL;
        }
        assert_non_null(up);
        PQfinish(up);
    }

    /* What the standby holds before it takes writes: what the old primary
     * committed and sent it. */
    PGconn *sb = PQconnectdb(itest_env("RP_STORE_STANDBY_DSN"));
    assert_int_equal(PQstatus(sb), CONNECTION_OK);
    long before = itest_sqln(sb, T.schema, "SELECT count(*) FROM dead_letter");
    char last_before[64];
    snprintf(last_before, sizeof last_before, "%s",
             itest_sql(sb, T.schema, "SELECT coalesce(max(parked_at)::text, '') FROM dead_letter"));
    PQfinish(sb);
    assert_int_equal(itest_services("promote", "pgstandby"), 0);
    long long t_promoted = itest_mono_ms();
    fprintf(stderr,
            "failover: %ld of %ld parked when the primary was stopped (%s, %lld ms); the standby "
            "had %ld; promoted %lld ms later\n",
            at_stop, STORM, immediate_mode ? "immediate" : "fast", t_stopped - t_stop, before,
            t_promoted - t_stopped);
    assert_true(before > 0);
    if (!immediate_mode) assert_true(before >= at_stop);
    if (cancel_mode && T.reaperd == NULL)
        T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});

    /* After: parks resume on the promoted server. */
    long now = -1;
    ITEST_POLL((now = parked()) > before, 30000);
    long long t_resumed = itest_mono_ms();
    /* (With the standby frozen, an asynchronous primary may have parked,
     * and the tap acked, the whole storm before the crash.) */
    if (freeze_ms == 0 || sync_mode) assert_true(now > before);
    /* Every dead letter parked (with a crash of the primary, until the
     * count stands still: what the standby never got is not coming). */
    long last = -1;
    long long still_since = itest_mono_ms();
    for (long long until = itest_mono_ms() + 60000; itest_mono_ms() < until;) {
        now = parked();
        if (now == STORM) break;
        if (now != last) last = now, still_since = itest_mono_ms();
        if (immediate_mode && itest_mono_ms() - still_since > 5000) break;
        rp_child_drain(T.reaperd, 100);
    }
    long rows = tap_sqln("SELECT count(*) FROM dead_letter");
    long distinct = tap_sqln("SELECT count(DISTINCT body) FROM dead_letter");
    long gap_ms = tap_sqln("SELECT coalesce((extract(epoch FROM min(parked_at) - '%s'::timestamptz) "
                           "* 1000)::bigint, -1) FROM dead_letter WHERE parked_at > '%s'",
                           last_before, last_before);

    /* reaperd's other sessions found the new primary too. */
    ITEST_POLL((listening = sessions("reaperd-lease-listen", "LISTEN")) == 1, 20000);
    assert_int_equal(listening, 1);
    ITEST_POLL((turns = turns_held()) == 1, 20000);
    assert_int_equal(turns, 1);
    if (!cancel_mode && (freeze_ms == 0 || sync_mode))
        assert_non_null(strstr(T.reaperd->log, "the tap parks again"));

    /* Stopped, reaperd hands back what it did not ack: what is neither
     * parked nor back in the tap queue was acked without its row. */
    tap_stop_reaperd(SIGTERM);
    long left = -1;
    ITEST_POLL((left = tap_depth(T.tap)) == STORM - now, 5000);
    fprintf(stderr,
            "failover: parks resumed %lld ms after the stop (seen by the test); gap between the "
            "last park before and the first after: %ld ms; parked %ld of %ld (%ld rows, %ld "
            "distinct bodies), %ld unacked, acked dead letters missing on the promoted server: "
            "%ld%s\n",
            t_resumed - t_stop, gap_ms, now, STORM, rows, distinct, left, STORM - now - left,
            sync_mode ? " (synchronous_standby_names = '*')" : "");
    assert_int_equal(rows, distinct); /* none twice */
    assert_int_equal(rows, now);
    if (freeze_ms == 0 || sync_mode) assert_true(gap_ms >= 0);
    if (!immediate_mode || sync_mode) { /* none lost */
        assert_int_equal(now, STORM);
        assert_int_equal(left, 0);
    }
    tap_source_done(work, dlq);
}

static int setup(void **state) {
    (void)state;
    sync_mode = getenv("RP_PGFAIL_SYNC") && strcmp(getenv("RP_PGFAIL_SYNC"), "1") == 0;
    immediate_mode = getenv("RP_PGFAIL_STOP") && strcmp(getenv("RP_PGFAIL_STOP"), "immediate") == 0;
    freeze_ms = getenv("RP_PGFAIL_FREEZE_MS") ? atol(getenv("RP_PGFAIL_FREEZE_MS")) : 0;
    cancel_mode = getenv("RP_PGFAIL_CANCEL") && strcmp(getenv("RP_PGFAIL_CANCEL"), "1") == 0;
    restart_ms = getenv("RP_PGFAIL_RESTART_MS") ? atol(getenv("RP_PGFAIL_RESTART_MS")) : 0;
    if (restart_ms > 0 && !cancel_mode) {
        fprintf(stderr, "RP_PGFAIL_RESTART_MS needs RP_PGFAIL_CANCEL=1\n");
        return -1;
    }
    if (cancel_mode && (freeze_ms <= 0 || !sync_mode)) {
        fprintf(stderr, "RP_PGFAIL_CANCEL needs RP_PGFAIL_SYNC=1 and RP_PGFAIL_FREEZE_MS\n");
        return -1;
    }
    if (freeze_ms > 0 && !immediate_mode) {
        /* A clean stop waits for the standby to have everything. */
        fprintf(stderr, "RP_PGFAIL_FREEZE_MS needs RP_PGFAIL_STOP=immediate\n");
        return -1;
    }
    if (tap_world_setup("pgfail") != 0) return -1;
    /* After the migration: the standby is a copy with the schema in it. */
    long long t0 = itest_mono_ms();
    if (itest_services("start", "pgstandby") != 0) {
        fprintf(stderr, "could not start the standby (scripts/services start pgstandby)\n");
        return -1;
    }
    fprintf(stderr, "standby made and started in %lld ms\n", itest_mono_ms() - t0);
    return 0;
}

/* Back to one primary whatever happened: the standby (promoted or not) is
 * stopped and the old primary started again; its schema is dropped there.
 * The standby's data is made afresh at its next start. */
static int teardown(void **state) {
    (void)state;
    if (walreceiver > 0) kill(walreceiver, SIGCONT);
    walreceiver = 0;
    if (T.reaperd) tap_stop_reaperd(SIGTERM);
    unsetenv("RP_PG_STOP_MODE");
    if (itest_services("stop", "pgstandby") != 0) fprintf(stderr, "could not stop the standby\n");
    if (itest_services("start", "postgres") != 0) fprintf(stderr, "could not start postgres again\n");
    if (sync_mode) { /* a primary that was not stopped: no standby to wait for any more */
        PGconn *a = PQconnectdb(itest_env("RP_PG_ADMIN_DSN"));
        PQclear(PQexec(a, "SELECT pg_reload_conf()"));
        PQfinish(a);
    }
    PQfinish(T.pg);
    T.pg = itest_pg_connect();
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failover_mid_storm),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
