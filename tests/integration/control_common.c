#include "control_common.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rp_proto.h"
#include "test_daemon.h"

enum { CTL_MAX_ENV = 16 };

void ctl_group_begin(ctl_group *g, const char *schema_prefix, const char *queue_prefix,
                     const char *tag, const char *corr) {
    int pid = (int)getpid();
    snprintf(g->schema, sizeof g->schema, "%s%d", schema_prefix, pid);
    snprintf(g->queue, sizeof g->queue, "%s%d", queue_prefix, pid);
    snprintf(g->env_queue, sizeof g->env_queue, "REAPER_BROKER_CONTROL_QUEUE=%s", g->queue);
    itest_env_owned(g->env_owned, sizeof g->env_owned, tag);
    itest_env_dead_letters(g->env_dlq, sizeof g->env_dlq, tag);
    g->corr = corr;
    g->pg = itest_pg_connect();
}

rp_child *ctl_group_start(ctl_group *g, char *const *env) {
    char *all[CTL_MAX_ENV];
    size_t n = 0;
    for (size_t i = 0; env && env[i]; i++) {
        assert_true(n < CTL_MAX_ENV - 3);
        all[n++] = env[i];
    }
    all[n++] = g->env_owned;
    all[n++] = g->env_dlq;
    all[n] = NULL;
    itest_daemon_opts o = {.schema = g->schema, .control = g->queue, .env = all};
    return itest_daemon_start(&o);
}

void ctl_group_restart(ctl_group *g, char *const *env) {
    itest_daemon_stop(g->reaperd);
    g->reaperd = ctl_group_start(g, env);
}

void ctl_group_end(ctl_group *g, const char *const *queues, size_t n) {
    itest_daemon_stop(g->reaperd);
    g->reaperd = NULL;
    if (g->amqp) itest_amqp_close(g->amqp);
    g->amqp = NULL;
    itest_drop_schema(g->pg, g->schema);
    PQfinish(g->pg);
    g->pg = NULL;
    amqp_connection_state_t c = itest_amqp_connect();
    amqp_queue_delete(c, 1, amqp_cstring_bytes(g->queue), 0, 0);
    amqp_get_rpc_reply(c);
    for (size_t i = 0; i < n; i++) {
        amqp_queue_delete(c, 1, amqp_cstring_bytes(queues[i]), 0, 0);
        amqp_get_rpc_reply(c);
    }
    itest_amqp_close(c);
}

json_t *ctl_call(ctl_group *g, const char *ct, const void *body, size_t len, const char *user) {
    char corr[48];
    snprintf(corr, sizeof corr, "%s-%d", g->corr, ++g->calls);
    itest_reply r;
    if (itest_request(g->amqp, g->queue, ct, body, len, user, true, corr, &r, 20000) != 0) {
        fprintf(stderr, "no reply; reaperd said:\n%s\n", g->reaperd->log);
        fail();
    }
    assert_string_equal(r.correlation_id, corr);
    if (g->strict) {
        const char *want_ct = ct && strcmp(ct, "application/json") == 0 ? "application/json"
                                                                       : "application/msgpack";
        assert_string_equal(r.content_type, want_ct);
        /* Every reply says it is reaperd's, with the user the broker checked. */
        assert_string_equal(r.app_id, "reaperd");
        assert_string_equal(r.user_id, itest_broker_user());
    }
    rp_proto_error err;
    rp_proto_error_init(&err);
    rp_bytes ctb = {(const uint8_t *)r.content_type, strlen(r.content_type)};
    json_t *j = rp_proto_to_json((rp_bytes){(const uint8_t *)r.body, r.len}, ctb, NULL, &err);
    if (j == NULL) fprintf(stderr, "undecodable reply: %s\n", err.message);
    assert_non_null(j);
    itest_reply_free(&r);
    return j;
}

json_t *ctl_call_json(ctl_group *g, const char *text) {
    return ctl_call(g, "application/json", text, strlen(text), NULL);
}

json_t *ctl_call_msgpack(ctl_group *g, const char *text) {
    json_t *t = json_loads(text, 0, NULL);
    assert_non_null(t);
    rp_request req;
    rp_request_init(&req);
    rp_proto_error err;
    assert_int_equal(rp_request_from_json(t, &req, &err), RP_OK);
    rp_proto_buf buf = {0};
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, &err), RP_OK);
    json_t *reply = ctl_call(g, "application/msgpack", buf.ptr, buf.len, NULL);
    rp_proto_buf_cleanup(&buf);
    rp_request_cleanup(&req);
    json_decref(t);
    return reply;
}

const json_t *ctl_result(const json_t *reply) {
    if (!json_is_true(json_object_get(reply, "ok"))) {
        char *s = json_dumps(reply, JSON_COMPACT);
        fprintf(stderr, "not ok: %s\n", s);
        free(s);
        fail();
    }
    return json_object_get(reply, "result");
}

const char *ctl_err_code(const json_t *reply) {
    assert_true(json_is_false(json_object_get(reply, "ok")));
    return json_string_value(json_object_get(json_object_get(reply, "error"), "code"));
}

const char *ctl_err_message(const json_t *reply) {
    return json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
}
