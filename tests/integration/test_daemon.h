/*
 * test_daemon.h - the one way integration tests start a reaperd and stop
 * it: the environment a test's daemon runs with (its schema, its control
 * queue, its owned queues, JSON logs, a pass an hour unless told), the
 * wait until its log says it is ready, and the stop that prints its log
 * when the exit was not clean.
 *
 * What differs between tests is an option; what is the same is not
 * written again in each test.
 *
 * Ownership: itest_daemon_start returns a heap child (itest.h) that
 * itest_daemon_stop (or rp_child_stop + rp_child_free) frees. The options
 * and the strings they point to are the caller's and are only read during
 * the call (the child copies its environment).
 */
#ifndef RP_TEST_DAEMON_H
#define RP_TEST_DAEMON_H

#include <stdbool.h>

#include "itest.h"

typedef struct itest_daemon_opts {
    /* REAPER_STORE_SCHEMA=schema; NULL: not set. */
    const char *schema;
    /* REAPER_BROKER_CONTROL_QUEUE=control; NULL: not set. */
    const char *control;
    /* More "K=V" entries (NULL-ended; may be NULL). They come before the
     * defaults below, and the first entry of a name is the one reaperd
     * reads (as getenv): an entry here replaces a default, e.g.
     * "REAPER_LOG_FORMAT=text" or "REAPER_REAP_INTERVAL_SECONDS=2". An
     * empty value ("K=") unsets K; NULL entries in the middle are not
     * allowed (the list ends at the first). */
    char *const *env;
    /* Arguments after the program (NULL-ended; NULL: none). */
    char *const *args;
    /* What the log must say, in this order, before start returns
     * (ready[1] may be NULL). Both NULL: "broker connected" and then
     * "pass finished" in the JSON form. Ignored when no_wait. */
    const char *ready[2];
    /* Return as soon as the process runs; the test waits itself. */
    bool no_wait;
    /* No ITEST_DAEMON_HOURLY: the interval is reaperd's default, or a
     * --config file's. */
    bool no_interval;
    /* Each wait's deadline; 0: 60 s. */
    int ready_ms;
} itest_daemon_opts;

/* The defaults after opts->env: JSON logs and a pass an hour (a test asks
 * for passes itself). */
#define ITEST_DAEMON_LOG_JSON "REAPER_LOG_FORMAT=json"
#define ITEST_DAEMON_HOURLY "REAPER_REAP_INTERVAL_SECONDS=3600"
/* The JSON ready lines. */
#define ITEST_READY_BROKER "\"msg\":\"broker connected\""
#define ITEST_READY_PASS "\"msg\":\"pass finished\""
#define ITEST_READY_TAP "\"msg\":\"tap bindings "

/* Starts REAPERD with opts (see above) and waits for its ready lines; on a
 * time-out prints the log, kills it and fails the test (cmocka). Never
 * NULL. */
rp_child *itest_daemon_start(const itest_daemon_opts *opts);
/* Runs REAPERD with opts (ready, no_wait and ready_ms are not used) to
 * completion, capturing stdout and stderr (heap strings the caller frees);
 * as rp_run_capture (itest.h): the exit code, -1 if it could not run. For
 * --once, --migrate, --check-config. */
int itest_daemon_run(const itest_daemon_opts *opts, char **out, char **err);
/* Sends sig and waits up to 20 s for the exit; prints the log when the
 * exit code is not 0; frees c (NULL: nothing, returns 0). Returns the exit
 * code (rp_child_stop's values). */
int itest_daemon_stop_sig(rp_child *c, int sig);
/* itest_daemon_stop_sig(c, SIGTERM). */
int itest_daemon_stop(rp_child *c);
/* The end of a test group's daemon: itest_daemon_stop(c), then its
 * control queue (durable) deleted on channel 1 of amqp (a refusal is
 * ignored). Returns the stop's exit code. */
int itest_daemon_stop_group(rp_child *c, amqp_connection_state_t amqp, const char *control);

#endif
