#include "itest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *itest_env(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') {
        fprintf(stderr, "integration test: %s is not set; run through scripts/test\n", name);
        exit(1);
    }
    return v;
}

const char *itest_broker_password(void) {
    static char buf[256];
    FILE *f = fopen(itest_env("REAPER_BROKER_PASSWORD_FILE"), "r");
    if (f == NULL || fgets(buf, sizeof buf, f) == NULL) {
        fprintf(stderr, "integration test: cannot read the broker password file\n");
        exit(1);
    }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

static long rp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static char **rp_merge_env(char *const extra[]) {
    size_t n = 0, m = 0;
    while (environ[n]) n++;
    while (extra && extra[m]) m++;
    char **env = calloc(n + m + 1, sizeof *env);
    size_t k = 0;
    /* Extra entries replace ours with the same name; "K=" alone unsets. */
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t j = 0; j < m; j++) {
            size_t klen = strcspn(extra[j], "=");
            if (strncmp(environ[i], extra[j], klen + 1) == 0) replaced = true;
        }
        if (!replaced) env[k++] = environ[i];
    }
    for (size_t j = 0; j < m; j++) {
        const char *eq = strchr(extra[j], '=');
        if (eq && eq[1] != '\0') env[k++] = extra[j];
    }
    env[k] = NULL;
    return env;
}

rp_child *rp_child_start(char *const argv[], char *const extra_env[]) {
    int p[2];
    if (pipe(p) != 0) return NULL;
    rp_child *c = calloc(1, sizeof *c);
    char **env = rp_merge_env(extra_env);
    pid_t parent = getpid();
    c->pid = fork();
    if (c->pid == 0) {
        /* A test killed at its time-out (ctest) or by a signal must not
         * leave its reaperd running, reconnecting forever to whatever later
         * listens on those ports. The signal follows the forking thread:
         * children are started from a test's main thread only. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execve(argv[0], argv, env);
        _exit(127);
    }
    free(env);
    close(p[1]);
    c->err_fd = p[0];
    fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
    c->log_cap = 4096;
    c->log = calloc(1, c->log_cap);
    return c;
}

/* Reads whatever stderr has now (waiting up to wait_ms for the first byte). */
static void rp_child_read(rp_child *c, int wait_ms) {
    struct pollfd pfd = {c->err_fd, POLLIN, 0};
    if (c->err_fd < 0 || poll(&pfd, 1, wait_ms) <= 0) return;
    for (;;) {
        if (c->log_len + 4096 + 1 > c->log_cap) {
            c->log_cap *= 2;
            c->log = realloc(c->log, c->log_cap);
        }
        ssize_t n = read(c->err_fd, c->log + c->log_len, 4096);
        if (n > 0) {
            c->log_len += (size_t)n;
            c->log[c->log_len] = '\0';
            continue;
        }
        if (n == 0) {
            close(c->err_fd);
            c->err_fd = -1;
        }
        return;
    }
}

void rp_child_read_ready(rp_child *c) { rp_child_read(c, 0); }

void rp_child_drain(rp_child *c, int ms) {
    long until = rp_now_ms() + ms;
    do {
        rp_child_read(c, 10);
    } while (rp_now_ms() < until && c->err_fd >= 0);
}

bool rp_child_wait_for(rp_child *c, const char *needle, int timeout_ms) {
    long until = rp_now_ms() + timeout_ms;
    for (;;) {
        if (strstr(c->log, needle)) return true;
        long left = until - rp_now_ms();
        if (left <= 0 || (c->err_fd < 0)) return strstr(c->log, needle) != NULL;
        rp_child_read(c, (int)(left < 100 ? left : 100));
    }
}

int rp_child_wait_exit(rp_child *c, int timeout_ms) {
    long until = rp_now_ms() + timeout_ms;
    while (!c->exited) {
        rp_child_read(c, 20);
        pid_t r = waitpid(c->pid, &c->status, WNOHANG);
        if (r == c->pid) {
            c->exited = true;
            break;
        }
        if (rp_now_ms() > until) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &c->status, 0);
            c->exited = true;
            return -1;
        }
    }
    rp_child_read(c, 0);
    if (WIFEXITED(c->status)) return WEXITSTATUS(c->status);
    return -2;
}

int rp_child_stop(rp_child *c, int sig, int timeout_ms) {
    if (!c->exited) kill(c->pid, sig);
    return rp_child_wait_exit(c, timeout_ms);
}

void rp_child_free(rp_child *c) {
    if (c == NULL) return;
    if (!c->exited) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
    }
    if (c->err_fd >= 0) close(c->err_fd);
    free(c->log);
    free(c);
}

static char *rp_slurp_fd(int fd) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 + 1 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, 4096);
        if (n <= 0) break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

int rp_run_capture(char *const argv[], char *const extra_env[], char **out, char **err) {
    char tmpl_out[] = "/tmp/rp-out-XXXXXX", tmpl_err[] = "/tmp/rp-err-XXXXXX";
    int fo = mkstemp(tmpl_out), fe = mkstemp(tmpl_err);
    unlink(tmpl_out);
    unlink(tmpl_err);
    char **env = rp_merge_env(extra_env);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        dup2(devnull, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execve(argv[0], argv, env);
        _exit(127);
    }
    free(env);
    int status = 0;
    waitpid(pid, &status, 0);
    lseek(fo, 0, SEEK_SET);
    lseek(fe, 0, SEEK_SET);
    *out = rp_slurp_fd(fo);
    *err = rp_slurp_fd(fe);
    close(fo);
    close(fe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- HTTP ---- */
#include <netinet/in.h>
#include <sys/socket.h>

int itest_reaperd_http_port(rp_child *c, int timeout_ms) {
    if (!rp_child_wait_for(c, "http listening", timeout_ms)) return -1;
    const char *line = strstr(c->log, "http listening");
    const char *at = strstr(line, "127.0.0.1:");
    if (at == NULL) return -1;
    return atoi(at + strlen("127.0.0.1:"));
}

int itest_http(int port, const char *method, const char *path, char **body, int timeout_ms) {
    if (body) *body = NULL;
    long until = rp_now_ms() + timeout_ms;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        long left = until - rp_now_ms();
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
            free(buf);
            close(fd);
            return -1;
        }
        if (len + 4096 + 1 > cap) buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, 4096);
        if (r < 0) {
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    int code = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1) code = -1;
    const char *sep = strstr(buf, "\r\n\r\n");
    if (body) *body = strdup(sep ? sep + 4 : "");
    free(buf);
    return code;
}

/* ---- AMQP client for tests ---- */
long long itest_mono_ms(void) { return rp_now_ms(); }

char *itest_scrape(int port) {
    char *body = NULL;
    int code = itest_http(port, "GET", "/metrics", &body, 5000);
    if (code != 200) {
        fprintf(stderr, "GET /metrics on port %d: %d\n", port, code);
        free(body);
        exit(1);
    }
    return body;
}

double itest_metric(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, series, n) == 0 && line[n] == ' ') return strtod(line + n + 1, NULL);
        line = end ? end + 1 : NULL;
    }
    return -1;
}

double itest_metric_sum(const char *text, const char *name) {
    size_t n = strlen(name);
    double sum = 0;
    bool any = false;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, name, n) == 0 && (line[n] == ' ' || line[n] == '{')) {
            const char *v = line[n] == ' ' ? line + n : strchr(line + n, '}');
            if (v != NULL && (end == NULL || v < end) && (v = strchr(v, ' ')) != NULL) {
                sum += strtod(v + 1, NULL);
                any = true;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return any ? sum : -1;
}

#include <amqp_tcp_socket.h>

amqp_connection_state_t itest_amqp_connect_plain(void) {
    char url[512];
    snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
    struct amqp_connection_info info;
    if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) {
        fprintf(stderr, "bad REAPER_BROKER_URL\n");
        exit(1);
    }
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    if (amqp_socket_open(s, info.host, info.port) != AMQP_STATUS_OK) {
        fprintf(stderr, "cannot connect to the broker\n");
        exit(1);
    }
    amqp_rpc_reply_t r = amqp_login(c, info.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
                                    info.user, itest_broker_password());
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "broker login failed\n");
        exit(1);
    }
    amqp_channel_open(c, 1);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "cannot open channel 1\n");
        exit(1);
    }
    return c;
}

amqp_connection_state_t itest_amqp_connect(void) {
    amqp_connection_state_t c = itest_amqp_connect_plain();
    amqp_basic_consume(c, 1, amqp_cstring_bytes("amq.rabbitmq.reply-to"), amqp_empty_bytes, 0, 1,
                       0, amqp_empty_table);
    if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
        fprintf(stderr, "cannot consume direct reply-to\n");
        exit(1);
    }
    return c;
}

void itest_amqp_close(amqp_connection_state_t c) {
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

const char *itest_broker_user(void) {
    static char user[128];
    if (user[0] == '\0') {
        char url[512];
        snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
        struct amqp_connection_info info;
        amqp_default_connection_info(&info);
        if (amqp_parse_url(url, &info) != AMQP_STATUS_OK) {
            fprintf(stderr, "bad REAPER_BROKER_URL\n");
            exit(1);
        }
        snprintf(user, sizeof user, "%s", info.user);
    }
    return user;
}

int itest_request(amqp_connection_state_t c, const char *queue, const char *content_type,
                  const void *body, size_t len, const char *user_id, bool want_reply,
                  const char *correlation_id, itest_reply *out, int timeout_ms) {
    memset(out, 0, sizeof *out);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    if (content_type) {
        p._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
        p.content_type = amqp_cstring_bytes(content_type);
    }
    if (user_id == NULL) user_id = itest_broker_user();
    if (user_id[0] != '\0') {
        p._flags |= AMQP_BASIC_USER_ID_FLAG;
        p.user_id = amqp_cstring_bytes(user_id);
    }
    if (correlation_id) {
        p._flags |= AMQP_BASIC_CORRELATION_ID_FLAG;
        p.correlation_id = amqp_cstring_bytes(correlation_id);
    }
    if (want_reply) {
        p._flags |= AMQP_BASIC_REPLY_TO_FLAG;
        p.reply_to = amqp_cstring_bytes("amq.rabbitmq.reply-to");
    }
    amqp_bytes_t b = {len, (void *)body};
    if (amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(queue), 0, 0, &p, b) !=
        AMQP_STATUS_OK)
        return -1;
    long until = rp_now_ms() + timeout_ms;
    for (;;) {
        long left = until - rp_now_ms();
        if (left <= 0) return -1;
        struct timeval tv = {left / 1000, (left % 1000) * 1000};
        amqp_envelope_t env;
        amqp_maybe_release_buffers(c);
        amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) return -1;
        amqp_basic_properties_t *rp = &env.message.properties;
        char corr[128] = "";
        if (rp->_flags & AMQP_BASIC_CORRELATION_ID_FLAG)
            snprintf(corr, sizeof corr, "%.*s", (int)rp->correlation_id.len,
                     (char *)rp->correlation_id.bytes);
        if (correlation_id && strcmp(corr, correlation_id) != 0) {
            amqp_destroy_envelope(&env); /* a late reply to an earlier request */
            continue;
        }
        snprintf(out->correlation_id, sizeof out->correlation_id, "%s", corr);
        if (rp->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG)
            snprintf(out->content_type, sizeof out->content_type, "%.*s",
                     (int)rp->content_type.len, (char *)rp->content_type.bytes);
        if (rp->_flags & AMQP_BASIC_APP_ID_FLAG)
            snprintf(out->app_id, sizeof out->app_id, "%.*s", (int)rp->app_id.len,
                     (char *)rp->app_id.bytes);
        if (rp->_flags & AMQP_BASIC_USER_ID_FLAG)
            snprintf(out->user_id, sizeof out->user_id, "%.*s", (int)rp->user_id.len,
                     (char *)rp->user_id.bytes);
        out->len = env.message.body.len;
        out->body = malloc(out->len + 1);
        memcpy(out->body, env.message.body.bytes, out->len);
        out->body[out->len] = '\0';
        amqp_destroy_envelope(&env);
        return 0;
    }
}

void itest_reply_free(itest_reply *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* ---- PostgreSQL and the services ---------------------------------------- */

#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

PGconn *itest_pg_connect(void) {
    PGconn *pg = PQconnectdb(itest_env("REAPER_STORE_DSN"));
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "integration test: cannot connect to PostgreSQL: %s", PQerrorMessage(pg));
        exit(1);
    }
    PQclear(PQexec(pg, "SET client_min_messages = warning"));
    return pg;
}

static PGresult *itest_sql_run(PGconn *pg, const char *schema, const char *fmt, va_list ap,
                               char *sql, size_t n) __attribute__((format(printf, 3, 0)));
static PGresult *itest_sql_run(PGconn *pg, const char *schema, const char *fmt, va_list ap,
                               char *sql, size_t n) {
    vsnprintf(sql, n, fmt, ap);
    char set[160];
    snprintf(set, sizeof set, "SET search_path TO %s", schema);
    PQclear(PQexec(pg, set));
    return PQexec(pg, sql);
}

const char *itest_sql(PGconn *pg, const char *schema, const char *fmt, ...) {
    static char value[8192];
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = itest_sql_run(pg, schema, fmt, ap, sql, sizeof sql);
    va_end(ap);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        fprintf(stderr, "sql failed: %s\n%s", sql, PQresultErrorMessage(r));
        PQclear(r);
        fail();
    }
    snprintf(value, sizeof value, "%s",
             (s == PGRES_TUPLES_OK && PQntuples(r) > 0) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return value;
}

long itest_sqln(PGconn *pg, const char *schema, const char *fmt, ...) {
    if (PQstatus(pg) != CONNECTION_OK) PQreset(pg);
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = itest_sql_run(pg, schema, fmt, ap, sql, sizeof sql);
    va_end(ap);
    long n = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? atol(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return n;
}

void itest_drop_schema(PGconn *pg, const char *schema) {
    char sql[160];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    PQclear(PQexec(pg, "SET client_min_messages = warning"));
    PQclear(PQexec(pg, sql));
}

int itest_migrate(const char *schema) {
    char env_schema[160];
    snprintf(env_schema, sizeof env_schema, "REAPER_STORE_SCHEMA=%s", schema);
    char *argv[] = {(char *)itest_env("REAPERD"), "--migrate", NULL};
    char *env[] = {env_schema, NULL};
    char *out, *err;
    int rc = rp_run_capture(argv, env, &out, &err);
    if (rc != 0) fprintf(stderr, "reaperd --migrate: exit %d\n%s\n%s\n", rc, out, err);
    free(out);
    free(err);
    return rc;
}

const char *itest_env_owned(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "REAPER_REAP_OWNED_QUEUE_PATTERN=^vibey\\.itest\\.%s%d\\.", tag,
             (int)getpid());
    return buf;
}

const char *itest_env_dead_letters(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "REAPER_REAP_DEAD_LETTER_QUEUE_PATTERN=^vibey\\.itest\\.%s%d\\..*\\.dlq$",
             tag, (int)getpid());
    return buf;
}

int itest_services(const char *verb, const char *what) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services %s %s >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), verb, what);
    return system(cmd);
}

const char *itest_broker_service(void) {
    const char *service = getenv("RP_BROKER_SERVICE");
    return service && *service ? service : "rabbitmq";
}

int itest_broker_ctl(const char *args) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s/scripts/services ctl %s %s >/dev/null 2>&1",
             itest_env("REAPER_SOURCE_DIR"), itest_broker_service(), args);
    return system(cmd);
}

int itest_closed_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "integration test: cannot find a closed port\n");
        exit(1);
    }
    close(s);
    return ntohs(a.sin_port);
}

long itest_queue_depth(amqp_connection_state_t c, int channel, const char *queue) {
    amqp_queue_declare_ok_t *ok = amqp_queue_declare(
        c, (amqp_channel_t)channel, amqp_cstring_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL || ok == NULL)
        fail_msg("passive declare of %s failed (reply %d)", queue, r.reply_type);
    return (long)ok->message_count;
}

void itest_queue_delete(amqp_connection_state_t c, int channel, const char *queue) {
    amqp_queue_delete(c, (amqp_channel_t)channel, amqp_cstring_bytes(queue), 0, 0);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
        fail_msg("delete of %s failed (reply %d)", queue, r.reply_type);
}

static void itest_rpc_ok(amqp_connection_state_t c, const char *what, const char *name) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL)
        fail_msg("%s %s failed (reply %d)", what, name, r.reply_type);
}

void itest_dead_letters(amqp_connection_state_t c, const char *origin, const char *dlq, int n,
                        int quorum_limit) {
    char dlx[300];
    snprintf(dlx, sizeof dlx, "%s.dlx", origin);
    amqp_exchange_declare(c, 1, amqp_cstring_bytes(dlx), amqp_cstring_bytes("fanout"), 0, 0, 1, 0,
                          amqp_empty_table);
    itest_rpc_ok(c, "exchange declare", dlx);
    amqp_table_entry_t qargs[2] = {
        {amqp_cstring_bytes("x-queue-type"),
         {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("quorum")}}},
        {amqp_cstring_bytes("x-delivery-limit"), {AMQP_FIELD_KIND_I64, {.i64 = quorum_limit}}},
    };
    bool quorum = quorum_limit > 0;
    amqp_queue_declare(c, 1, amqp_cstring_bytes(dlq), 0, quorum, 0, 0,
                       quorum ? (amqp_table_t){2, qargs} : amqp_empty_table);
    itest_rpc_ok(c, "queue declare", dlq);
    amqp_queue_bind(c, 1, amqp_cstring_bytes(dlq), amqp_cstring_bytes(dlx), amqp_cstring_bytes(""),
                    amqp_empty_table);
    itest_rpc_ok(c, "queue bind", dlq);
    amqp_table_entry_t oargs[1] = {{amqp_cstring_bytes("x-dead-letter-exchange"),
                                    {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(dlx)}}}};
    amqp_queue_declare(c, 1, amqp_cstring_bytes(origin), 0, 0, 0, 0, (amqp_table_t){1, oargs});
    itest_rpc_ok(c, "queue declare", origin);
    for (int i = 0; i < n; i++) {
        char id[320], body[32];
        snprintf(id, sizeof id, "%s-m%d", origin, i);
        snprintf(body, sizeof body, "body %d", i);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
        p.message_id = amqp_cstring_bytes(id);
        p.content_type = amqp_cstring_bytes("text/plain");
        if (amqp_basic_publish(c, 1, amqp_cstring_bytes(""), amqp_cstring_bytes(origin), 0, 0, &p,
                               amqp_cstring_bytes(body)) != AMQP_STATUS_OK)
            fail_msg("publish to %s failed", origin);
    }
    for (int i = 0; i < n; i++) {
        amqp_rpc_reply_t r;
        for (int tries = 0;; tries++) {
            r = amqp_basic_get(c, 1, amqp_cstring_bytes(origin), 0);
            if (r.reply_type != AMQP_RESPONSE_NORMAL) fail_msg("get from %s failed", origin);
            if (r.reply.id == AMQP_BASIC_GET_OK_METHOD) break;
            if (tries >= 100) fail_msg("%s never gave message %d", origin, i);
            usleep(20 * 1000);
        }
        uint64_t tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
        amqp_message_t m;
        if (amqp_read_message(c, 1, &m, 0).reply_type != AMQP_RESPONSE_NORMAL)
            fail_msg("reading a message of %s failed", origin);
        amqp_destroy_message(&m);
        if (amqp_basic_reject(c, 1, tag, 0) != 0) fail_msg("reject on %s failed", origin);
    }
    ITEST_POLL(itest_queue_depth(c, 1, dlq) == n, 10000);
    long got = itest_queue_depth(c, 1, dlq);
    if (got != n) fail_msg("%s holds %ld dead letters, not %d", dlq, got, n);
}

bool itest_wait_until(bool (*pred)(void *ctx), void *ctx, int deadline_ms) {
    long long until = itest_mono_ms() + deadline_ms;
    for (;;) {
        if (pred(ctx)) return true;
        if (itest_mono_ms() >= until) return false;
        usleep(20 * 1000);
    }
}

bool itest_poll_sleep(long long until) {
    long long left = until - itest_mono_ms();
    if (left <= 0) return false;
    usleep((useconds_t)(left < 20 ? left : 20) * 1000);
    return true;
}

typedef struct itest_lock_waiters {
    PGconn *pg;
    long n;
} itest_lock_waiters;

static bool itest_has_lock_waiters(void *ctx) {
    itest_lock_waiters *w = ctx;
    PGresult *r = PQexec(w->pg, "SELECT count(*) FROM pg_locks WHERE NOT granted");
    long got = PQresultStatus(r) == PGRES_TUPLES_OK ? atol(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return got >= w->n;
}

bool itest_pg_wait_lock_waiters(int n, int deadline_ms) {
    itest_lock_waiters w = {itest_pg_connect(), n};
    bool ok = itest_wait_until(itest_has_lock_waiters, &w, deadline_ms);
    if (!ok) fprintf(stderr, "fewer than %d sessions waited for a lock in %d ms\n", n, deadline_ms);
    PQfinish(w.pg);
    return ok;
}

amqp_table_entry_t itest_te(const char *k, amqp_field_value_t v) {
    amqp_table_entry_t e;
    e.key = amqp_cstring_bytes(k);
    e.value = v;
    return e;
}

amqp_field_value_t itest_fstr(const char *s) {
    amqp_field_value_t v;
    memset(&v, 0, sizeof v);
    v.kind = AMQP_FIELD_KIND_UTF8;
    v.value.bytes = amqp_cstring_bytes(s);
    return v;
}

void itest_made_add(itest_made *m, const char *queue) {
    assert_true(m->n < ITEST_MADE_MAX);
    snprintf(m->names[m->n++], sizeof m->names[0], "%s", queue);
}

void itest_made_delete(itest_made *m, amqp_connection_state_t c) {
    for (int i = 0; i < m->n; i++) {
        amqp_queue_delete(c, 1, amqp_cstring_bytes(m->names[i]), 0, 0);
        if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) {
            amqp_channel_open(c, 1);
            amqp_get_rpc_reply(c);
        }
    }
    m->n = 0;
}

void itest_ok_rpc(amqp_connection_state_t c, const char *what) {
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) fprintf(stderr, "%s failed\n", what);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
}

long itest_proc_status_kib(pid_t pid, const char *field) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    long kib = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kib = atol(line + n + 1);
            break;
        }
    fclose(f);
    return kib;
}
