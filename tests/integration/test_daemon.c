#include "test_daemon.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

enum { ITEST_DAEMON_MAX_ENV = 32, ITEST_DAEMON_MAX_ARGS = 8 };

/* What a start or a run of o passes: argv and env (NULL-ended), the two
 * "K=V" buffers they point into. */
typedef struct itest_daemon_call {
    char schema[160], control[224];
    char *env[ITEST_DAEMON_MAX_ENV];
    char *argv[ITEST_DAEMON_MAX_ARGS + 2];
} itest_daemon_call;

static void itest_daemon_prepare(const itest_daemon_opts *o, itest_daemon_call *k) {
    size_t n = 0;
    for (size_t i = 0; o->env && o->env[i]; i++) {
        assert_true(n < ITEST_DAEMON_MAX_ENV - 5);
        k->env[n++] = o->env[i];
    }
    if (o->schema) {
        snprintf(k->schema, sizeof k->schema, "REAPER_STORE_SCHEMA=%s", o->schema);
        k->env[n++] = k->schema;
    }
    if (o->control) {
        snprintf(k->control, sizeof k->control, "REAPER_BROKER_CONTROL_QUEUE=%s", o->control);
        k->env[n++] = k->control;
    }
    k->env[n++] = ITEST_DAEMON_LOG_JSON;
    if (!o->no_interval) k->env[n++] = ITEST_DAEMON_HOURLY;
    k->env[n] = NULL;
    size_t a = 0;
    k->argv[a++] = (char *)itest_env("REAPERD");
    for (size_t i = 0; o->args && o->args[i]; i++) {
        assert_true(a <= ITEST_DAEMON_MAX_ARGS);
        k->argv[a++] = o->args[i];
    }
    k->argv[a] = NULL;
}

rp_child *itest_daemon_start(const itest_daemon_opts *o) {
    itest_daemon_call k;
    itest_daemon_prepare(o, &k);
    rp_child *c = rp_child_start(k.argv, k.env);
    assert_non_null(c);
    if (o->no_wait) return c;
    const char *ready[2] = {o->ready[0], o->ready[1]};
    if (ready[0] == NULL && ready[1] == NULL) {
        ready[0] = ITEST_READY_BROKER;
        ready[1] = ITEST_READY_PASS;
    }
    int ms = o->ready_ms > 0 ? o->ready_ms : 60000;
    for (int i = 0; i < 2; i++) {
        if (ready[i] == NULL || rp_child_wait_for(c, ready[i], ms)) continue;
        fprintf(stderr, "reaperd never said %s; it said:\n%s\n", ready[i], c->log);
        rp_child_free(c); /* killed: a failed test must not leave it running */
        fail();
    }
    return c;
}

int itest_daemon_run(const itest_daemon_opts *o, char **out, char **err) {
    itest_daemon_call k;
    itest_daemon_prepare(o, &k);
    return rp_run_capture(k.argv, k.env, out, err);
}

int itest_daemon_stop_sig(rp_child *c, int sig) {
    if (c == NULL) return 0;
    int rc = rp_child_stop(c, sig, 20000);
    if (rc != 0 && sig != SIGKILL) fprintf(stderr, "reaperd exit %d; it said:\n%s\n", rc, c->log);
    rp_child_free(c);
    return rc;
}

int itest_daemon_stop(rp_child *c) { return itest_daemon_stop_sig(c, SIGTERM); }

int itest_daemon_stop_group(rp_child *c, amqp_connection_state_t amqp, const char *control) {
    int rc = itest_daemon_stop(c);
    amqp_queue_delete(amqp, 1, amqp_cstring_bytes(control), 0, 0);
    amqp_get_rpc_reply(amqp);
    return rc;
}
