/* What the tap's integration tests share (tap_common.h). */
#include "tap_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

tap_world T;

const char *tap_owned(char *buf, size_t n, const char *what) {
    snprintf(buf, n, "vibey.%s.%s", T.tag, what);
    return buf;
}

const char *tap_plain(char *buf, size_t n, const char *what) {
    snprintf(buf, n, "%s.%s", T.tag, what);
    return buf;
}

int tap_world_setup(const char *name) {
    memset(&T, 0, sizeof T);
    snprintf(T.tag, sizeof T.tag, "itt%d", (int)getpid());
    snprintf(T.schema, sizeof T.schema, "itest_%s_%d", name, (int)getpid());
    snprintf(T.tap, sizeof T.tap, "%s.tap", T.tag);
    snprintf(T.env_tap, sizeof T.env_tap, "REAPER_BROKER_TAP_QUEUE=%s", T.tap);
    snprintf(T.control, sizeof T.control, "%s.control", T.tag);
    snprintf(T.env_owned, sizeof T.env_owned, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.%s\\.",
             T.tag);
    /* The sweep's backfill of dead-letter queues is not the tap's to test:
     * no queue of these tests is a dead-letter queue by name (a test that
     * wants the backfill sets its own pattern, as test_reaperd_tap_replay's
     * start_with_backfill does). */
    snprintf(T.env_dlq, sizeof T.env_dlq,
             "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=\\.%s-no-such-dlq$", T.tag);
    if (itest_migrate(T.schema) != 0) return -1;
    T.amqp = itest_amqp_connect();
    amqp_channel_open(T.amqp, 2);
    if (amqp_get_rpc_reply(T.amqp).reply_type != AMQP_RESPONSE_NORMAL) return -1;
    T.pg = itest_pg_connect();
    return 0;
}

void tap_source_done(const char *work, const char *dlq) {
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(dlq);
}

/* The session of tap_block_parking, while it holds the lock. */
static PGconn *parking_lock;

void tap_block_parking(void) {
    parking_lock = itest_pg_connect();
    assert_non_null(parking_lock);
    char sql[256];
    snprintf(sql, sizeof sql, "BEGIN; LOCK TABLE \"%s\".dead_letter IN EXCLUSIVE MODE", T.schema);
    PGresult *r = PQexec(parking_lock, sql);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
}

void tap_unblock_parking(void) {
    PQclear(PQexec(parking_lock, "COMMIT"));
    PQfinish(parking_lock);
    parking_lock = NULL;
}

int tap_world_teardown(void) {
    /* A failed test's lock goes with its session. */
    if (parking_lock) PQfinish(parking_lock);
    parking_lock = NULL;
    if (T.reaperd) tap_stop_reaperd(SIGTERM);
    /* A fresh connection: a failed assertion may have left the channel
     * closed. Deleting what is already gone closes channel 1 (404): open
     * it again each time. */
    if (T.amqp) itest_amqp_close(T.amqp);
    T.amqp = itest_amqp_connect();
    for (int i = 0; i < T.n_made; i++) {
        if (T.made_exchange[i])
            amqp_exchange_delete(T.amqp, 1, amqp_cstring_bytes(T.made[i]), 0);
        else
            amqp_queue_delete(T.amqp, 1, amqp_cstring_bytes(T.made[i]), 0, 0);
        if (amqp_get_rpc_reply(T.amqp).reply_type != AMQP_RESPONSE_NORMAL) {
            itest_amqp_close(T.amqp);
            T.amqp = itest_amqp_connect();
        }
    }
    amqp_queue_delete(T.amqp, 1, amqp_cstring_bytes(T.tap), 0, 0);
    char q[128];
    tap_plain(q, sizeof q, "control");
    amqp_queue_delete(T.amqp, 1, amqp_cstring_bytes(q), 0, 0);
    itest_amqp_close(T.amqp);
    T.amqp = NULL;
    if (T.pg == NULL || PQstatus(T.pg) != CONNECTION_OK) {
        if (T.pg) PQfinish(T.pg);
        T.pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    }
    itest_drop_schema(T.pg, T.schema);
    PQfinish(T.pg);
    T.pg = NULL;
    return 0;
}

void tap_start_reaperd(void) { tap_start_reaperd_every(3600); }

void tap_start_reaperd_every(int interval_seconds) {
    if (T.reaperd) tap_stop_reaperd(SIGTERM); /* a failed test left it running */
    char interval[64];
    snprintf(interval, sizeof interval, "REAPER_REAP_INTERVAL_SECONDS=%d", interval_seconds);
    /* The tests ask for passes back to back: no reap rate limit here
     * (test_control tests it). */
    char *env[] = {interval, "REAPER_CONTROL_REAP_RATE_SECONDS=0", NULL};
    T.reaperd = tap_daemon_start((itest_daemon_opts){.env = env});
}

rp_child *tap_daemon_start(itest_daemon_opts o) {
    char *env[24];
    size_t n = 0;
    for (size_t i = 0; o.env && o.env[i] && n < 19; i++) env[n++] = o.env[i];
    env[n++] = T.env_tap;
    env[n++] = T.env_owned;
    env[n++] = T.env_dlq;
    env[n] = NULL;
    o.env = env;
    o.schema = T.schema;
    o.control = T.control;
    if (o.ready[0] == NULL && o.ready[1] == NULL) {
        o.ready[0] = ITEST_READY_BROKER;
        o.ready[1] = ITEST_READY_TAP;
    }
    return itest_daemon_start(&o);
}

void tap_stop_reaperd(int sig) {
    if (T.reaperd == NULL) return;
    int rc = itest_daemon_stop_sig(T.reaperd, sig);
    T.reaperd = NULL;
    /* A clean stop exits 0 (under the sanitizers, also free of leaks). */
    if (sig == SIGTERM) assert_int_equal(rc, 0);
}

static void tap_track(const char *name, bool exchange) {
    for (int i = 0; i < T.n_made; i++)
        if (strcmp(T.made[i], name) == 0 && T.made_exchange[i] == exchange) return;
    if (T.n_made == 64) return;
    snprintf(T.made[T.n_made], sizeof T.made[0], "%s", name);
    T.made_exchange[T.n_made++] = exchange;
}

static void tap_rpc_ok(const char *what) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(T.amqp);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) fail_msg("%s failed (reply %d)", what, r.reply_type);
}

void tap_exchange(const char *name, const char *type) {
    tap_track(name, true);
    amqp_exchange_declare(T.amqp, 1, amqp_cstring_bytes(name), amqp_cstring_bytes(type), 0, 1, 0,
                          0, amqp_empty_table);
    tap_rpc_ok("exchange.declare");
}

void tap_queue(const char *name, const char *dlx, const char *dlrk, long ttl_ms) {
    amqp_table_entry_t e[3];
    int n = 0;
    if (dlx) {
        e[n].key = amqp_cstring_bytes("x-dead-letter-exchange");
        e[n].value.kind = AMQP_FIELD_KIND_UTF8;
        e[n].value.value.bytes = amqp_cstring_bytes(dlx);
        n++;
    }
    if (dlrk) {
        e[n].key = amqp_cstring_bytes("x-dead-letter-routing-key");
        e[n].value.kind = AMQP_FIELD_KIND_UTF8;
        e[n].value.value.bytes = amqp_cstring_bytes(dlrk);
        n++;
    }
    if (ttl_ms >= 0) {
        e[n].key = amqp_cstring_bytes("x-message-ttl");
        e[n].value.kind = AMQP_FIELD_KIND_I64;
        e[n].value.value.i64 = ttl_ms;
        n++;
    }
    amqp_table_t args = {n, e};
    tap_track(name, false);
    amqp_queue_declare(T.amqp, 1, amqp_cstring_bytes(name), 0, 1, 0, 0, args);
    tap_rpc_ok("queue.declare");
}

void tap_bind(const char *queue, const char *exchange, const char *key, amqp_table_t args) {
    amqp_queue_bind(T.amqp, 1, amqp_cstring_bytes(queue), amqp_cstring_bytes(exchange),
                    amqp_cstring_bytes(key), args);
    tap_rpc_ok("queue.bind");
}

void tap_delete_queue(const char *name) { itest_queue_delete(T.amqp, 1, name); }

void tap_delete_exchange(const char *name) {
    amqp_exchange_delete(T.amqp, 1, amqp_cstring_bytes(name), 0);
    tap_rpc_ok("exchange.delete");
}

void tap_publish(const char *queue, const char *prefix, int n) {
    for (int i = 0; i < n; i++) {
        char body[128], id[128];
        snprintf(body, sizeof body, "%s-%d", prefix, i);
        snprintf(id, sizeof id, "%s-%d", prefix, i);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
        p.delivery_mode = 2;
        p.content_type = amqp_cstring_bytes("text/plain");
        if (i % 2 == 0) {
            p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
            p.message_id = amqp_cstring_bytes(id);
        }
        assert_int_equal(amqp_basic_publish(T.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(queue), 0, 0, &p,
                                            amqp_cstring_bytes(body)),
                         AMQP_STATUS_OK);
    }
}

void tap_reject(const char *queue, int n) {
    amqp_basic_qos(T.amqp, 2, 0, 0, 0);
    tap_rpc_ok("basic.qos");
    amqp_basic_consume_ok_t *ok = amqp_basic_consume(T.amqp, 2, amqp_cstring_bytes(queue),
                                                     amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    tap_rpc_ok("basic.consume");
    amqp_bytes_t ctag = amqp_bytes_malloc_dup(ok->consumer_tag);
    uint64_t last = 0;
    for (int i = 0; i < n; i++) {
        amqp_envelope_t env;
        struct timeval tv = {10, 0};
        amqp_maybe_release_buffers(T.amqp);
        amqp_rpc_reply_t r = amqp_consume_message(T.amqp, &env, &tv, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) fail_msg("consumed %d of %d", i, n);
        last = env.delivery_tag;
        amqp_destroy_envelope(&env);
    }
    assert_int_equal(amqp_basic_nack(T.amqp, 2, last, 1, 0), 0);
    amqp_basic_cancel(T.amqp, 2, ctag);
    tap_rpc_ok("basic.cancel");
    amqp_bytes_free(ctag);
}

long tap_depth(const char *queue) { return itest_queue_depth(T.amqp, 1, queue); }

static long tap_sqlv(const char *query) { return itest_sqln(T.pg, T.schema, "%s", query); }

long tap_sqln(const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tap_sqlv(buf);
}

/* Why a wait for parks ran out (stderr): what the tap queue holds, ready
 * and unacked (by then the management API's counts are current), how many
 * consume it and the exchanges it is bound to; and what the database's
 * sessions are doing. A wait that runs out fails its test; this says
 * whether the dead letters never reached the tap, were taken and not
 * parked, or wait on PostgreSQL. */
static void tap_explain(void) {
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(T.amqp, 2, amqp_cstring_bytes(T.tap), 1, 0,
                                                     0, 0, amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(T.amqp);
    if (r.reply_type == AMQP_RESPONSE_NORMAL && ok != NULL)
        fprintf(stderr, "tap queue %s: %u ready, %u consumers\n", T.tap, ok->message_count,
                ok->consumer_count);
    else
        fprintf(stderr, "tap queue %s: passive declare failed (reply %d)\n", T.tap,
                r.reply_type);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "curl -s -u \"reaper:$(cat '%s')\" "
             "'%s/api/queues/%%2F/%s?columns=messages_ready,messages_unacknowledged' >&2; "
             "echo >&2",
             itest_env("REAPER_BROKER_PASSWORD_FILE"), itest_env("REAPER_BROKER_MANAGEMENT_URL"),
             T.tap);
    fprintf(stderr, "tap queue %s, as the management API counts it: ", T.tap);
    fflush(stderr);
    if (system(cmd) != 0) fprintf(stderr, "  (could not read it)\n");
    snprintf(cmd, sizeof cmd,
             "curl -s -u \"reaper:$(cat '%s')\" '%s/api/queues/%%2F/%s/bindings' | "
             "tr '{' '\\n' | sed -n 's/.*\"source\":\"\\([^\"]*\\)\".*/  bound to \"\\1\"/p' >&2",
             itest_env("REAPER_BROKER_PASSWORD_FILE"), itest_env("REAPER_BROKER_MANAGEMENT_URL"),
             T.tap);
    fprintf(stderr, "tap queue %s, its bindings:\n", T.tap);
    fflush(stderr);
    if (system(cmd) != 0) fprintf(stderr, "  (could not list them)\n");
    /* And what reaperd's sessions are doing (a park waiting on a lock?). */
    PGresult *act = PQexec(T.pg, "SELECT pid, application_name, state, "
                               "coalesce(wait_event_type || '/' || wait_event, '-'), "
                               "coalesce(round(extract(epoch FROM now() - xact_start))::text, '-'), "
                               "left(regexp_replace(query, '\\s+', ' ', 'g'), 100) "
                               "FROM pg_stat_activity WHERE datname = current_database() AND "
                               "backend_type = 'client backend' AND pid <> pg_backend_pid()");
    if (PQresultStatus(act) == PGRES_TUPLES_OK) {
        fprintf(stderr, "the database's other sessions (pid, application, state, waiting on, "
                        "transaction's age in s, query):\n");
        for (int i = 0; i < PQntuples(act); i++)
            fprintf(stderr, "  %s | %s | %s | %s | %s | %s\n", PQgetvalue(act, i, 0),
                    PQgetvalue(act, i, 1), PQgetvalue(act, i, 2), PQgetvalue(act, i, 3),
                    PQgetvalue(act, i, 4), PQgetvalue(act, i, 5));
    }
    PQclear(act);
}

long tap_wait_count(long want, int timeout_ms, const char *query) {
    long v = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 200) {
        v = tap_sqlv(query);
        if (v == want) return v;
        if (T.reaperd) rp_child_drain(T.reaperd, 200);
        else usleep(200 * 1000);
    }
    fprintf(stderr, "waited %d ms for %ld, found %ld: %s\n", timeout_ms, want, v, query);
    tap_explain();
    return v;
}

int tap_broker_major(void) {
    const amqp_table_t *p = amqp_get_server_properties(T.amqp);
    for (int i = 0; p && i < p->num_entries; i++)
        if (p->entries[i].key.len == 7 && memcmp(p->entries[i].key.bytes, "version", 7) == 0 &&
            p->entries[i].value.kind == AMQP_FIELD_KIND_UTF8)
            return atoi((const char *)p->entries[i].value.value.bytes.bytes);
    return 0;
}

void tap_dead_letter_source(const char *what, long ttl_ms, char *work, char *dlq, size_t n) {
    char x[128], name[96];
    snprintf(name, sizeof name, "%s.dlx", what);
    tap_plain(x, sizeof x, name);
    tap_exchange(x, "fanout");
    snprintf(name, sizeof name, "%s.dlq", what);
    tap_owned(dlq, n, name);
    tap_queue(dlq, NULL, NULL, -1);
    tap_bind(dlq, x, "", amqp_empty_table);
    snprintf(name, sizeof name, "%s.work", what);
    tap_owned(work, n, name);
    tap_queue(work, x, NULL, ttl_ms);
}

static void tap_exec(const char *sql) {
    char set[128];
    snprintf(set, sizeof set, "SET search_path TO %s", T.schema);
    PQclear(PQexec(T.pg, set));
    PGresult *r = PQexec(T.pg, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

void tap_refuse_parks(const char *condition) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "CREATE FUNCTION itest_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF %s "
             "THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$",
             condition);
    tap_exec(sql);
    tap_exec("CREATE TRIGGER itest_refuse BEFORE INSERT ON dead_letter FOR EACH ROW "
             "EXECUTE FUNCTION itest_refuse()");
}

void tap_accept_parks(void) {
    tap_exec("DROP TRIGGER itest_refuse ON dead_letter");
    tap_exec("DROP FUNCTION itest_refuse()");
}

void tap_wait_parked(const char *prefix, long want, int timeout_ms) {
    char q[256];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '%s-%%'", prefix);
    long got = tap_wait_count(want, timeout_ms, q);
    if (got != want && T.reaperd) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(got, want);
}
