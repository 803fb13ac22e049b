/*
 * itest.h - helpers for integration tests: the private services'
 * coordinates (from the environment that scripts/test exports) and a child
 * process whose standard error is read line by line.
 *
 * Ownership: rp_child_start returns a heap child freed by rp_child_free
 * (which kills it if still running). Strings returned by the env helpers are
 * static or from getenv.
 */
#ifndef RP_ITEST_H
#define RP_ITEST_H

#include <stdbool.h>
#include <sys/types.h>

/* Fails the test (skip is not allowed: CI starts the services) when a
 * variable is missing. */
const char *itest_env(const char *name);
/* The broker password from REAPER_BROKER_PASSWORD_FILE; static buffer. */
const char *itest_broker_password(void);

typedef struct rp_child {
    pid_t pid;
    int err_fd;      /* read end of the child's stderr */
    char *log;       /* everything read so far, NUL-terminated */
    size_t log_len, log_cap;
    int status;      /* valid once exited */
    bool exited;
} rp_child;

/* Starts argv[0] with argv, extra environment entries ("K=V", NULL-ended,
 * may be NULL) added to ours, stdout to /dev/null unless keep_stdout. */
rp_child *rp_child_start(char *const argv[], char *const extra_env[]);
/* Reads stderr until the log contains needle or timeout_ms passes. */
bool rp_child_wait_for(rp_child *c, const char *needle, int timeout_ms);
/* Reads what the child wrote for up to ms (so its stderr pipe never fills
 * while a test waits on something else). */
void rp_child_drain(rp_child *c, int ms);
/* Reads what the child has written so far, without waiting (for loops
 * paced by something else: rp_child_drain waits at least 10 ms). */
void rp_child_read_ready(rp_child *c);
/* Sends sig and waits up to timeout_ms for the exit; returns the exit code,
 * or -1 on time-out (the child is then killed), -2 when killed by a signal. */
int rp_child_stop(rp_child *c, int sig, int timeout_ms);
/* Waits for the child to exit on its own. Same return values. */
int rp_child_wait_exit(rp_child *c, int timeout_ms);
void rp_child_free(rp_child *c);

/* A test reaperd: test_daemon.h. */

/* Runs argv to completion, capturing stdout and stderr (heap strings the
 * caller frees). Returns the exit code, or -1 if it could not run. */
int rp_run_capture(char *const argv[], char *const extra_env[], char **out, char **err);

/* The port a running reaperd's HTTP endpoints are bound to, read from its
 * "http listening" log line (JSON or text), waiting up to timeout_ms; -1
 * when it never said. (Tests run reaperd with REAPER_HTTP_LISTEN at port 0:
 * tests/CMakeLists.txt.) */
int itest_reaperd_http_port(rp_child *c, int timeout_ms);
/* GET (or another method) path from 127.0.0.1:port, HTTP/1.0, waiting at
 * most timeout_ms in all. Returns the status code with the body in *body
 * (heap, NUL-terminated; may be NULL), or -1 when no answer came in time. */
int itest_http(int port, const char *method, const char *path, char **body, int timeout_ms);

/* A field of /proc/PID/status in KiB ("VmRSS", "VmHWM"), -1 when
 * unreadable. */
long itest_proc_status_kib(pid_t pid, const char *field);

/* Milliseconds on CLOCK_MONOTONIC (for time-outs and measured durations). */
long long itest_mono_ms(void);
/* Asks pred(ctx) until it says true or deadline_ms have passed (it is
 * asked every 20 ms, and once more at the deadline). true when it did. For
 * a wait that stands for "until X happened"; a wait that must let time
 * pass (to show that something did NOT happen) sleeps, and says so. */
bool itest_wait_until(bool (*pred)(void *ctx), void *ctx, int deadline_ms);
/* ITEST_POLL's step: false once itest_mono_ms() has reached until (no
 * sleep then); otherwise sleeps 20 ms (or what is left, if less) and
 * returns true. */
bool itest_poll_sleep(long long until);
/* Evaluates cond (an expression; it may have effects, e.g. read a queue's
 * depth) until it is true or deadline_ms have passed on the monotonic clock
 * (asked every 20 ms, the last time at most 20 ms before the deadline).
 * The same as itest_wait_until for a condition written in place; the test
 * asserts the condition after it (the poll itself fails nothing):
 *     ITEST_POLL(depth(q) == 1, 10000);
 *     assert_int_equal(depth(q), 1);
 * A deadline is measured time, not a count of sleeps: a loaded machine
 * makes each round slower, not the wait longer. */
#define ITEST_POLL(cond, deadline_ms)                                                              \
    for (long long itest_poll_until_ = itest_mono_ms() + (deadline_ms);                            \
         !(cond) && itest_poll_sleep(itest_poll_until_);) {                                        \
    }

/* GET /metrics from a reaperd's HTTP port; fails the test unless it answers
 * 200. Heap string, the caller frees. */
char *itest_scrape(int port);
/* The value of the sample named exactly series (name and labels, as
 * rendered) in a Prometheus text body; -1 when absent. */
double itest_metric(const char *text, const char *series);
/* The sum of every sample of the family name (each label set, and the
 * sample without labels), e.g. a per-vhost counter over every vhost; -1
 * when there is none. */
double itest_metric_sum(const char *text, const char *name);


/* ---- AMQP client for tests (rabbitmq-c, blocking, test side only) ---- */
#include <amqp.h>

/* Connects to REAPER_BROKER_URL with the password file, opens channel 1 and
 * consumes direct reply-to (amq.rabbitmq.reply-to, no-ack). Fails the test
 * on error. */
amqp_connection_state_t itest_amqp_connect(void);
/* The same without the direct reply-to consumer (channel 1 open). */
amqp_connection_state_t itest_amqp_connect_plain(void);
void itest_amqp_close(amqp_connection_state_t c);

/* Messages ready in queue (a passive declare on channel); fails the test
 * (cmocka) when the broker refuses. */
long itest_queue_depth(amqp_connection_state_t c, int channel, const char *queue);
/* Deletes queue (unconditionally) on channel; fails the test when refused. */
void itest_queue_delete(amqp_connection_state_t c, int channel, const char *queue);
/* Real dead letters, on channel 1 of c: declares a fanout dead-letter
 * exchange "<origin>.dlx", dlq bound to it (quorum with x-delivery-limit
 * quorum_limit when quorum_limit > 0, else classic) and origin dead-lettering
 * to it; publishes n messages to origin (message_id "<origin>-m<i>",
 * content_type text/plain, body "body <i>"), rejects each, and waits until
 * dlq holds n. Fails the test on any refusal. */
void itest_dead_letters(amqp_connection_state_t c, const char *origin, const char *dlq, int n,
                        int quorum_limit);

typedef struct itest_reply {
    char *body;          /* heap, NUL-terminated (msgpack may hold NULs: use len) */
    size_t len;
    char content_type[64];
    char correlation_id[128];
    char app_id[64];     /* "" when absent */
    char user_id[128];   /* "" when absent */
} itest_reply;

/* The user of REAPER_BROKER_URL (the tests' and reaperd's login); static. */
const char *itest_broker_user(void);

/* Publishes body to queue with content_type (NULL: property absent),
 * user_id (NULL: the login user, itest_broker_user(), which reaperd
 * allows by default; "": absent), correlation_id, reply_to direct reply-to when
 * want_reply; waits up to timeout_ms for the reply. Returns 0 with *out
 * filled, -1 on time-out (or no reply wanted and none came). */
int itest_request(amqp_connection_state_t c, const char *queue, const char *content_type,
                  const void *body, size_t len, const char *user_id, bool want_reply,
                  const char *correlation_id, itest_reply *out, int timeout_ms);
void itest_reply_free(itest_reply *r);

/* ---- PostgreSQL and the services for tests (libpq, blocking) ---- */
/* A table entry k = v, and a UTF-8 string field value (both point into
 * their arguments: no copy), for headers a test writes in place. */
amqp_table_entry_t itest_te(const char *k, amqp_field_value_t v);
amqp_field_value_t itest_fstr(const char *s);

/* The queues a test group made, deleted at its end whatever happened. */
enum { ITEST_MADE_MAX = 24 };
typedef struct itest_made {
    char names[ITEST_MADE_MAX][160];
    int n;
} itest_made;
/* Adds queue to m; fails the test when m is full. */
void itest_made_add(itest_made *m, const char *queue);
/* Deletes every queue of m on channel 1 of c (a refusal reopens the
 * channel and goes on), then empties m. */
void itest_made_delete(itest_made *m, amqp_connection_state_t c);
/* Fails the test, saying what failed, unless c's last RPC went well. */
void itest_ok_rpc(amqp_connection_state_t c, const char *what);

#include <libpq-fe.h>

/* Connects to REAPER_STORE_DSN (client_min_messages = warning); exits on
 * failure. */
PGconn *itest_pg_connect(void);
/* Runs SQL with search_path = schema; fails the test (cmocka) on an error.
 * Returns the first column of the first row ("" when none) in a static
 * buffer that the next call overwrites. */
const char *itest_sql(PGconn *pg, const char *schema, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same as a number, without failing: -1 on any error (a connection that
 * went bad is reset first, so a test can poll across a database restart). */
long itest_sqln(PGconn *pg, const char *schema, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Waits until at least n lock requests of the database wait (pg_locks,
 * not granted), asking on a connection of its own every 20 ms, for up to
 * deadline_ms. true when they did. For a test whose other sessions must
 * be queued behind a lock it holds before it lets go. */
bool itest_pg_wait_lock_waiters(int n, int deadline_ms);
/* DROP SCHEMA IF EXISTS schema CASCADE. */
void itest_drop_schema(PGconn *pg, const char *schema);
/* Runs reaperd --migrate with REAPER_STORE_SCHEMA=schema; 0 on success
 * (its output on stderr otherwise). */
int itest_migrate(const char *schema);
/* Writes "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\.itest\.<tag><pid>\." into
 * buf (n bytes) and returns buf: the owned pattern for every reaperd of a
 * test process, whose own queues are then named "vibey.itest.<tag><pid>.*".
 * Tests share a broker and may run at once: with the default '^vibey\.' a
 * test's reaperd owns every other test's queues too (its passes read, park
 * and note their dead-letter queues, spending deliveries on quorum ones, and
 * its tap binds to their dead-letter exchanges). */
const char *itest_env_owned(char *buf, size_t n, const char *tag);
/* Writes "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=^vibey\.itest\.<tag><pid>\..*\.dlq$"
 * into buf and returns buf: for a test that counts every verdict or ledger
 * event of a whole pass, so that the dead-letter queues other tests leave
 * on the shared broker (surfaced when not owned) do not add to its counts. */
const char *itest_env_dead_letters(char *buf, size_t n, const char *tag);
/* scripts/services verb what (e.g. "stop", "postgres"), quiet; the exit
 * code of the script. */
int itest_services(const char *verb, const char *what);
/* The broker's service name for itest_services: RP_BROKER_SERVICE (set by
 * scripts/test --broker) or "rabbitmq". */
const char *itest_broker_service(void);
/* rabbitmqctl ARGS on the tests' broker (scripts/services ctl), quiet; the
 * exit status of system(). */
int itest_broker_ctl(const char *args);
/* A local TCP port nothing listens on (bound, then closed). */
int itest_closed_port(void);

#endif
