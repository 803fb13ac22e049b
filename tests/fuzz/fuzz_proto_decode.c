/* libFuzzer target for the control protocol decoders.
 *
 * The first byte picks what the rest is fed to (mode % 4):
 *   0  rp_request_decode as msgpack     1  rp_request_decode as JSON
 *   2  rp_proto_to_json as msgpack      3  rp_proto_to_json as JSON
 * (reply limits for 2 and 3). Beyond "no crash, no leak, no UB" it checks
 * properties and aborts when one breaks:
 *   - a decoded request re-encodes in both encodings and decodes the same;
 *   - a refused request has a non-empty UTF-8 message and an error reply
 *     that reads back with the same code, message and op echo;
 *   - msgpack and JSON agree: a msgpack body that parses is re-sent as JSON
 *     and must give the same status and message (position aside);
 *   - a tree from rp_proto_to_json re-encodes and parses back equal.
 * Seeds: tests/fuzz/corpus/proto_decode/ (vec_* are written by
 * proto/vectors/gen.py from the vectors, the others are kept finds). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

static rp_bytes ct_of(rp_encoding e) {
    const char *s = rp_encoding_content_type(e);
    return (rp_bytes){(const uint8_t *)s, strlen(s)};
}

static bool same_request(const rp_request *a, const rp_request *b) {
    if (a->op != b->op) return false;
#define SAME_STR(x, y) (((x) == NULL && (y) == NULL) || ((x) && (y) && strcmp((x), (y)) == 0))
    switch (a->op) {
    case RP_OP_REAP:
        return a->reap.dry_run == b->reap.dry_run && SAME_STR(a->reap.project, b->reap.project);
    case RP_OP_ANSWER:
        return a->answer.gate == b->answer.gate && a->answer.choice == b->answer.choice &&
               SAME_STR(a->answer.by, b->answer.by);
    case RP_OP_GATES:
        return a->gates.state == b->gates.state && a->gates.limit == b->gates.limit &&
               SAME_STR(a->gates.project, b->gates.project);
    default:
        return true;
    }
#undef SAME_STR
}

static void strip_position(char *msg) {
    char *p = strstr(msg, " (at ");
    if (p != NULL) *p = '\0';
}

static void check_ok(const rp_request *req) {
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_request again;
        rp_proto_error err;
        rp_proto_buf_init(&b);
        rp_request_init(&again);
        CHECK(rp_request_encode(req, (rp_encoding)e, &b, &err) == RP_OK);
        CHECK(rp_request_decode((rp_bytes){b.ptr, b.len}, ct_of((rp_encoding)e), &again, &err) == RP_OK);
        CHECK(same_request(req, &again));
        rp_request_cleanup(&again);
        rp_proto_buf_cleanup(&b);
    }
}

static void check_refused(rp_status st, const rp_proto_error *err, rp_encoding enc) {
    CHECK(st == RP_ERR_BAD_REQUEST || st == RP_ERR_UNKNOWN_OP);
    CHECK(err->code == st);
    CHECK(err->message[0] != '\0');
    CHECK(rp__utf8_valid((const uint8_t *)err->message, strlen(err->message), NULL));
    rp_proto_buf b;
    rp_proto_error e2;
    rp_proto_reply_view view;
    rp_proto_buf_init(&b);
    CHECK(rp_proto_encode_decode_error(err, enc, &b) == RP_OK);
    json_t *t = rp_proto_to_json((rp_bytes){b.ptr, b.len}, ct_of(enc), NULL, &e2);
    CHECK(t != NULL);
    CHECK(rp_proto_reply_unwrap(t, &view, &e2) == RP_OK);
    CHECK(!view.ok);
    CHECK(strcmp(view.code, rp_proto_error_code(st)) == 0);
    CHECK(strcmp(view.message, err->message) == 0);
    CHECK(err->has_op ? (view.op != NULL && strcmp(view.op, err->op) == 0) : view.op == NULL);
    json_decref(t);
    rp_proto_buf_cleanup(&b);
}

/* The msgpack body parsed: the same tree as JSON must decode alike. */
static void check_agree(rp_bytes body, rp_status st, const rp_proto_error *err) {
    json_t *tree = rp_proto_to_json(body, ct_of(RP_ENC_MSGPACK), &rp_proto_request_limits, NULL);
    if (tree == NULL) return;
    rp_proto_buf j;
    rp_proto_buf_init(&j);
    CHECK(rp_proto_encode_json(tree, RP_ENC_JSON, &j) == RP_OK);
    if (j.len <= RP_PROTO_REQUEST_MAX_BODY) {
        rp_request r2;
        rp_proto_error e2;
        char m1[RP_PROTO_MESSAGE_MAX], m2[RP_PROTO_MESSAGE_MAX];
        rp_request_init(&r2);
        rp_status st2 = rp_request_decode((rp_bytes){j.ptr, j.len}, ct_of(RP_ENC_JSON), &r2, &e2);
        if (st2 != st) {
            fprintf(stderr, "msgpack: %d %s\njson: %d %s\n", st, err->message, st2, e2.message);
            abort();
        }
        memcpy(m1, err->message, sizeof m1);
        memcpy(m2, e2.message, sizeof m2);
        strip_position(m1);
        strip_position(m2);
        if (strcmp(m1, m2) != 0) {
            fprintf(stderr, "msgpack: %s\njson: %s\n", m1, m2);
            abort();
        }
        rp_request_cleanup(&r2);
    }
    rp_proto_buf_cleanup(&j);
    json_decref(tree);
}

static void fuzz_request(rp_bytes body, rp_encoding enc) {
    rp_request req;
    rp_proto_error err;
    rp_request_init(&req);
    rp_status st = rp_request_decode(body, ct_of(enc), &req, &err);
    if (st == RP_ERR_NOMEM) return;
    if (st == RP_OK) {
        CHECK(err.code == RP_OK);
        check_ok(&req);
    } else {
        check_refused(st, &err, enc);
    }
    if (enc == RP_ENC_MSGPACK) check_agree(body, st, &err);
    rp_request_cleanup(&req);
}

static void fuzz_tree(rp_bytes body, rp_encoding enc) {
    rp_proto_error err;
    json_t *t = rp_proto_to_json(body, ct_of(enc), NULL, &err);
    if (t == NULL) {
        CHECK(err.code == RP_ERR_BAD_REQUEST || err.code == RP_ERR_NOMEM);
        CHECK(err.message[0] != '\0');
        return;
    }
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_buf_init(&b);
        CHECK(rp_proto_encode_json(t, (rp_encoding)e, &b) == RP_OK);
        json_t *back = rp_proto_to_json((rp_bytes){b.ptr, b.len}, ct_of((rp_encoding)e), NULL, &err);
        /* JSON can outgrow the body limit (escapes, floats); nothing else may differ. */
        CHECK(back != NULL || strstr(err.message, "body of") != NULL);
        if (back != NULL) CHECK(json_equal(back, t));
        json_decref(back);
        rp_proto_buf_cleanup(&b);
    }
    json_decref(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0] % 4;
    /* A heap copy of exactly the body, so any read past it is caught. */
    size_t n = size - 1;
    uint8_t *body = malloc(n ? n : 1);
    if (body == NULL) return 0;
    memcpy(body, data + 1, n);
    rp_bytes b = {body, n};
    switch (mode) {
    case 0: fuzz_request(b, RP_ENC_MSGPACK); break;
    case 1: fuzz_request(b, RP_ENC_JSON); break;
    case 2: fuzz_tree(b, RP_ENC_MSGPACK); break;
    default: fuzz_tree(b, RP_ENC_JSON); break;
    }
    free(body);
    return 0;
}
