/*
 * Issue 18 item 4 through reaperd itself (reaperd --once --json, its
 * --migrate's wedge_check table, its configuration and its events feed): a
 * kind of the job table with claimable jobs, no live lease and no
 * completion for reap.wedged_seconds is surfaced as WEDGED on the
 * reap.wedged_checks-th pass (each pass a process of its own: the count
 * survives in PostgreSQL), once, and its event reaches the events exchange
 * as job_queue.wedged.surfaced (what a supervisor of job-table workers
 * subscribes to); when a job of it succeeds the sighting clears. Both
 * brokers (the feed). An exchange and a schema of the test's own.
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
#include <unistd.h>

#include "feed_common.h"
#include "itest.h"
#include "test_daemon.h"

typedef struct fixture {
    PGconn *pg;
    char schema[64];
    char exchange[128];
    char env_exchange[192];
    char env_owned[128], env_dlq[160];
    feed_sub sub;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->pg = itest_pg_connect();
    snprintf(f->schema, sizeof f->schema, "itest_wedged_%d", (int)getpid());
    snprintf(f->exchange, sizeof f->exchange, "vibey.reap.events.itest.wedged.%d", (int)getpid());
    snprintf(f->env_exchange, sizeof f->env_exchange, "REAPER_BROKER_EVENTS_EXCHANGE=%s",
             f->exchange);
    itest_env_owned(f->env_owned, sizeof f->env_owned, "wedged");
    itest_env_dead_letters(f->env_dlq, sizeof f->env_dlq, "wedged");
    if (itest_migrate(f->schema) != 0) return -1;
    feed_sub_open(&f->sub, f->exchange, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    feed_sub_delete(&f->sub);
    itest_drop_schema(f->pg, f->schema);
    PQfinish(f->pg);
    free(f);
    return 0;
}

/* reaperd --once --json with a 1 s window and 3 checks; the report. */
static json_t *once(fixture *f) {
    char *args[] = {"--once", "--json", NULL};
    char *env[] = {f->env_exchange, f->env_owned, f->env_dlq, "REAPER_LOG_LEVEL=warn",
                   "REAPER_REAP_WEDGED_SECONDS=1", "REAPER_REAP_WEDGED_CHECKS=3", NULL};
    itest_daemon_opts o = {.schema = f->schema, .env = env, .args = args, .no_interval = true};
    char *out = NULL, *err = NULL;
    int rc = itest_daemon_run(&o, &out, &err);
    if (rc != 0) fprintf(stderr, "reaperd --once: exit %d\n%s\n%s\n", rc, out, err);
    assert_int_equal(rc, 0);
    json_error_t e;
    json_t *rep = json_loads(out, 0, &e);
    assert_non_null(rep);
    free(out);
    free(err);
    return rep;
}

static int count(const json_t *rep, const char *action, const char *object) {
    int n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(rep, "verdicts"), i, v) {
        n += strcmp(json_string_value(json_object_get(v, "condition")), "WEDGED") == 0 &&
             strcmp(json_string_value(json_object_get(v, "action")), action) == 0 &&
             strcmp(json_string_value(json_object_get(v, "object")), object) == 0;
    }
    return n;
}

/* The feed's messages with routing key `key` and object `object`. */
static size_t fed(fixture *f, feed_msgs *m, const char *key, const char *object) {
    feed_sub_read(&f->sub, m, 0, 500, 5000);
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        const char *o = json_string_value(json_object_get(m->items[i].body, "object"));
        n += strcmp(m->items[i].routing_key, key) == 0 && o && strcmp(o, object) == 0;
    }
    return n;
}

static void test_wedged_through_reaperd_and_the_feed(void **state) {
    fixture *f = *state;
    const char *obj = "kind:itw:render";
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, run_after, created_at) SELECT 'itw',"
              " 'render', 'ready', now() - interval '1 hour', now() - interval '1 hour' FROM"
              " generate_series(1, 2)");
    itest_sql(f->pg, f->schema,
              "INSERT INTO job (project_id, kind, state, finished_at) VALUES ('itw', 'render',"
              " 'succeeded', now() - interval '30 minutes')");
    for (int pass = 1; pass <= 2; pass++) {
        json_t *rep = once(f);
        assert_int_equal(count(rep, "SURFACED", obj), 0);
        json_decref(rep);
        assert_int_equal(atol(itest_sql(f->pg, f->schema, "SELECT consecutive FROM wedge_check"
                                                          " WHERE subject = '%s'", obj)),
                         pass);
    }
    json_t *rep = once(f);
    assert_int_equal(count(rep, "SURFACED", obj), 1);
    json_decref(rep);
    feed_msgs m = {0};
    assert_int_equal(fed(f, &m, "job_queue.wedged.surfaced", obj), 1);
    feed_msgs_free(&m);
    /* Open: not again. */
    rep = once(f);
    assert_int_equal(count(rep, "SURFACED", obj), 0);
    json_decref(rep);
    /* A job of it succeeds: cleared, on the feed too. */
    itest_sql(f->pg, f->schema,
              "UPDATE job SET state = 'succeeded', finished_at = now() WHERE id = (SELECT"
              " min(id) FROM job WHERE kind = 'render' AND state = 'ready')");
    rep = once(f);
    assert_int_equal(count(rep, "CLEARED", obj), 1);
    json_decref(rep);
    feed_msgs m2 = {0};
    assert_int_equal(fed(f, &m2, "job_queue.wedged.cleared", obj), 1);
    assert_int_equal(fed(f, &m2, "job_queue.wedged.surfaced", obj), 0);
    feed_msgs_free(&m2);
    assert_int_equal(atol(itest_sql(f->pg, f->schema, "SELECT count(*) FROM ledger WHERE"
                                                      " payload->>'condition' = 'WEDGED'")),
                     2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wedged_through_reaperd_and_the_feed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("reaperd_wedged", tests, NULL, NULL);
}
