#include "test_mgmt_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <amqp_tcp_socket.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long mt_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void mt_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

const char *mt_mgmt_url(void) { return itest_env("REAPER_BROKER_MANAGEMENT_URL"); }
const char *mt_password(void) { return itest_broker_password(); }

static struct amqp_connection_info *mt_amqp_info(void) {
    static char url[512];
    static struct amqp_connection_info info;
    static bool done;
    if (!done) {
        snprintf(url, sizeof url, "%s", itest_env("REAPER_BROKER_URL"));
        assert_int_equal(amqp_parse_url(url, &info), AMQP_STATUS_OK);
        done = true;
    }
    return &info;
}

const char *mt_user(void) { return mt_amqp_info()->user; }

char *mt_enc(const char *s) {
    CURL *c = curl_easy_init();
    char *e = curl_easy_escape(c, s, 0);
    char *out = strdup(e);
    curl_free(e);
    curl_easy_cleanup(c);
    return out;
}

typedef struct mt_buf {
    char *p;
    size_t n;
} mt_buf;

static size_t mt_on_data(char *ptr, size_t size, size_t nmemb, void *ud) {
    mt_buf *b = ud;
    size_t n = size * nmemb;
    b->p = realloc(b->p, b->n + n + 1);
    memcpy(b->p + b->n, ptr, n);
    b->n += n;
    b->p[b->n] = '\0';
    return n;
}

long mt_http_as(const char *user, const char *password, const char *method, const char *path,
                const char *json_body, char **body) {
    CURL *c = curl_easy_init();
    char url[2048];
    snprintf(url, sizeof url, "%s%s", mt_mgmt_url(), path);
    mt_buf b = {calloc(1, 1), 0};
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERNAME, user);
    curl_easy_setopt(c, CURLOPT_PASSWORD, password);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (json_body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mt_on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    long code = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (body) *body = b.p;
    else free(b.p);
    return code;
}

long mt_http(const char *method, const char *path, const char *json_body, char **body) {
    return mt_http_as(mt_user(), mt_password(), method, path, json_body, body);
}

json_t *mt_get_json(const char *path) {
    char *body = NULL;
    long code = mt_http("GET", path, NULL, &body);
    json_t *j = code == 200 ? json_loads(body, 0, NULL) : NULL;
    free(body);
    return j;
}

bool mt_queue_bound_to(const char *vhost, const char *queue, const char *exchange) {
    char *ev = mt_enc(vhost), *eq = mt_enc(queue), path[512];
    snprintf(path, sizeof path, "/api/queues/%s/%s/bindings", ev, eq);
    free(ev);
    free(eq);
    json_t *b = mt_get_json(path);
    bool found = false;
    size_t i;
    json_t *it;
    json_array_foreach(b, i, it) {
        const char *src = json_string_value(json_object_get(it, "source"));
        if (src != NULL && strcmp(src, exchange) == 0) found = true;
    }
    json_decref(b);
    return found;
}

void mt_hold(amqp_connection_state_t c, amqp_channel_t ch, const char *q, const char *consumer,
             int n) {
    if (ch != 1) {
        amqp_channel_open(c, ch);
        assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    }
    amqp_basic_qos(c, ch, 0, 10, 0);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    amqp_basic_consume(c, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(consumer), 0, 0, 0,
                       amqp_empty_table);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    for (int i = 0; i < n; i++) {
        amqp_envelope_t env;
        struct timeval tv = {10, 0};
        amqp_maybe_release_buffers(c);
        assert_int_equal(amqp_consume_message(c, &env, &tv, 0).reply_type, AMQP_RESPONSE_NORMAL);
        amqp_destroy_envelope(&env);
    }
}

const rp_mgmt_version *mt_version(void) {
    static rp_mgmt_version v;
    static bool done;
    if (!done) {
        char *body = NULL;
        assert_int_equal(mt_http("GET", "/api/overview", NULL, &body), 200);
        assert_int_equal(rp_mgmt_parse_overview_version(body, strlen(body), &v), RP_OK);
        free(body);
        fprintf(stderr, "broker under test: RabbitMQ %s\n", v.text);
        done = true;
    }
    return &v;
}

void mt_vhost_create(const char *vhost) {
    char *ev = mt_enc(vhost), *eu = mt_enc(mt_user());
    char path[512];
    snprintf(path, sizeof path, "/api/vhosts/%s", ev);
    long code = mt_http("PUT", path, NULL, NULL);
    assert_true(code == 201 || code == 204);
    snprintf(path, sizeof path, "/api/permissions/%s/%s", ev, eu);
    code = mt_http("PUT", path, "{\"configure\":\".*\",\"write\":\".*\",\"read\":\".*\"}", NULL);
    assert_true(code == 201 || code == 204);
    free(ev);
    free(eu);
}

void mt_vhost_delete(const char *vhost) {
    char *ev = mt_enc(vhost);
    char path[512];
    snprintf(path, sizeof path, "/api/vhosts/%s", ev);
    mt_http("DELETE", path, NULL, NULL);
    free(ev);
}

amqp_connection_state_t mt_amqp(const char *vhost) {
    struct amqp_connection_info *info = mt_amqp_info();
    amqp_connection_state_t c = amqp_new_connection();
    amqp_socket_t *s = amqp_tcp_socket_new(c);
    assert_non_null(s);
    assert_int_equal(amqp_socket_open(s, info->host, info->port), AMQP_STATUS_OK);
    amqp_rpc_reply_t r = amqp_login(c, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info->user,
                                    mt_password());
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    amqp_channel_open(c, 1);
    assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
    return c;
}

void mt_amqp_close(amqp_connection_state_t c) {
    amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(c, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(c);
}

void mt_declare(amqp_connection_state_t c, const char *name, const char *type) {
    amqp_table_entry_t e = {amqp_cstring_bytes("x-queue-type"),
                            {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(type)}}};
    amqp_table_t args = {1, &e};
    amqp_queue_declare(c, 1, amqp_cstring_bytes(name), 0, 1, 0, 0, args);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) fprintf(stderr, "declare %s failed\n", name);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
}

void mt_publish(amqp_connection_state_t c, const char *queue, const char *body, int64_t timestamp) {
    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
    props.delivery_mode = 2;
    if (timestamp) {
        props._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
        props.timestamp = (uint64_t)timestamp;
    }
    assert_int_equal(amqp_basic_publish(c, 1, amqp_empty_bytes, amqp_cstring_bytes(queue), 0, 0,
                                        &props, amqp_cstring_bytes(body)),
                     AMQP_STATUS_OK);
}

bool mt_get_unacked(amqp_connection_state_t c, const char *queue) {
    amqp_rpc_reply_t r = amqp_basic_get(c, 1, amqp_cstring_bytes(queue), 0);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    if (r.reply.id != AMQP_BASIC_GET_OK_METHOD) return false;
    amqp_message_t msg;
    r = amqp_read_message(c, 1, &msg, 0);
    assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
    amqp_destroy_message(&msg);
    return true;
}

json_t *mt_queue(const char *vhost, const char *name) {
    char *ev = mt_enc(vhost), *en = mt_enc(name);
    char path[1024];
    snprintf(path, sizeof path, "/api/queues/%s/%s", ev, en);
    free(ev);
    free(en);
    return mt_get_json(path);
}

bool mt_wait_queue_field(const char *vhost, const char *name, const char *field, const char *want,
                         int64_t want_int, int ms) {
    long until = mt_now_ms() + ms;
    for (;;) {
        json_t *q = mt_queue(vhost, name);
        json_t *v = q ? json_object_get(q, field) : NULL;
        bool ok = false;
        if (v != NULL) {
            if (want == NULL) ok = json_is_null(v);
            else if (strcmp(want, "#") == 0) ok = json_is_integer(v) && json_integer_value(v) == want_int;
            else ok = json_is_string(v) && strcmp(json_string_value(v), want) == 0;
        }
        if (q) json_decref(q);
        if (ok) return true;
        if (mt_now_ms() > until) return false;
        mt_sleep_ms(250);
    }
}

rp_mgmt_loop *mt_loop_as(const char *url, const char *user, const char *password) {
    rp_mgmt_http_params p = {
        .base_url = url ? url : mt_mgmt_url(),
        .user = user ? user : mt_user(),
        .password = password ? password : mt_password(),
        .verify_peer = true,
    };
    const char *err = NULL;
    rp_mgmt_loop *l = rp_mgmt_loop_new(&p, &err);
    if (l == NULL) fprintf(stderr, "management loop: %s\n", err);
    assert_non_null(l);
    return l;
}

rp_mgmt_loop *mt_loop(void) { return mt_loop_as(NULL, NULL, NULL); }

static const char mt_listener_py[] =
    "import http.server, socketserver, sys, time, json\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def reply(self, code, body, chunked=False):\n"
    "        self.send_response(code)\n"
    "        self.send_header('Content-Type', 'application/json')\n"
    "        if chunked:\n"
    "            self.send_header('Transfer-Encoding', 'chunked'); self.end_headers()\n"
    "            for i in range(0, len(body), 65536):\n"
    "                c = body[i:i+65536]\n"
    "                self.wfile.write(b'%x\\r\\n' % len(c) + c + b'\\r\\n')\n"
    "            self.wfile.write(b'0\\r\\n\\r\\n')\n"
    "        else:\n"
    "            self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
    "            self.wfile.write(body)\n"
    "    def any(self):\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        body = self.rfile.read(n) if n else b''\n"
    "        p = self.path.split('/')\n"
    "        try:\n"
    "            if p[1] == 'slow':\n"
    "                time.sleep(float(p[2])); return self.reply(200, b'{\"slow\":true}')\n"
    "            if p[1] == 'big':\n"
    "                return self.reply(200, b'x' * int(p[2]), len(p) > 3 and p[3] == 'chunked')\n"
    "            if p[1] == 'echo':\n"
    "                out = {'method': self.command, 'path': self.path,\n"
    "                       'auth': self.headers.get('Authorization'),\n"
    "                       'content_type': self.headers.get('Content-Type'),\n"
    "                       'body': body.decode('utf-8', 'replace')}\n"
    "                return self.reply(200, json.dumps(out).encode())\n"
    "            return self.reply(404, b'{\"error\":\"Object Not Found\",\"reason\":\"Not Found\"}')\n"
    "        except (BrokenPipeError, ConnectionResetError):\n"
    "            pass\n"
    "    do_GET = do_PUT = do_DELETE = any\n"
    "class S(socketserver.ThreadingMixIn, http.server.HTTPServer):\n"
    "    daemon_threads = True\n"
    "s = S(('127.0.0.1', 0), H)\n"
    "sys.stderr.write('PORT %d\\n' % s.server_address[1]); sys.stderr.flush()\n"
    "s.serve_forever()\n";

rp_child *mt_listener_start(int *port) {
    char *argv[] = {"/usr/bin/python3", "-c", (char *)mt_listener_py, NULL};
    rp_child *c = rp_child_start(argv, NULL);
    assert_non_null(c);
    assert_true(rp_child_wait_for(c, "PORT ", 10000));
    const char *at = strstr(c->log, "PORT ");
    *port = atoi(at + 5);
    assert_true(*port > 0);
    return c;
}
