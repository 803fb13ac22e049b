/* The control protocol codec: content types, names, times, request round
 * trips, reply round trips through rp_proto_to_json, limits at their exact
 * edges, truncation and byte mutations, and msgpack/JSON equivalence. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_proto.h"
#include "rp_proto_internal.h"

static rp_bytes B(const char *s) { return (rp_bytes){(const uint8_t *)s, s ? strlen(s) : 0}; }
static rp_bytes BUF(const rp_proto_buf *b) { return (rp_bytes){b->ptr, b->len}; }
static rp_bytes CT(rp_encoding e) { return B(rp_encoding_content_type(e)); }

/* ---- transport, names --------------------------------------------------- */

static void test_content_types(void **state) {
    (void)state;
    rp_encoding e = RP_ENC_JSON;
    assert_int_equal(rp_encoding_parse((rp_bytes){NULL, 0}, &e), RP_OK);
    assert_int_equal(e, RP_ENC_MSGPACK);
    e = RP_ENC_JSON;
    assert_int_equal(rp_encoding_parse(B(""), &e), RP_OK);
    assert_int_equal(e, RP_ENC_MSGPACK);
    assert_int_equal(rp_encoding_parse(B("application/json"), &e), RP_OK);
    assert_int_equal(e, RP_ENC_JSON);
    assert_int_equal(rp_encoding_parse(B("application/msgpack"), &e), RP_OK);
    assert_int_equal(e, RP_ENC_MSGPACK);
    assert_int_equal(rp_encoding_parse(B(" Application/JSON ; charset=utf-8"), &e), RP_OK);
    assert_int_equal(e, RP_ENC_JSON);
    assert_int_equal(rp_encoding_parse(B("APPLICATION/X-MSGPACK"), &e), RP_OK);
    assert_int_equal(e, RP_ENC_MSGPACK);
    e = RP_ENC_JSON;
    assert_int_equal(rp_encoding_parse(B("text/plain"), &e), RP_ERR_BAD_REQUEST);
    assert_int_equal(e, RP_ENC_JSON); /* unchanged */
    assert_int_equal(rp_encoding_parse(B("application/jsonx"), &e), RP_ERR_BAD_REQUEST);
    assert_int_equal(rp_encoding_parse(B("application/json-seq"), &e), RP_ERR_BAD_REQUEST);
    assert_int_equal(rp_encoding_parse(B("application"), &e), RP_ERR_BAD_REQUEST);
    /* A reply to an unsupported type goes out in the default encoding. */
    assert_int_equal(rp_proto_reply_encoding(B("text/plain")), RP_ENC_MSGPACK);
    assert_int_equal(rp_proto_reply_encoding(B("application/json")), RP_ENC_JSON);
    assert_string_equal(rp_encoding_content_type(RP_ENC_JSON), "application/json");
    assert_string_equal(rp_encoding_content_type(RP_ENC_COUNT_), "unknown");
}

static void test_names_and_codes(void **state) {
    (void)state;
    for (int i = RP_OP_NONE + 1; i < RP_OP_COUNT_; i++) {
        rp_op op;
        assert_true(rp_op_parse(rp_op_string((rp_op)i), &op));
        assert_int_equal(op, i);
    }
    rp_op op;
    assert_false(rp_op_parse("none", &op));
    assert_false(rp_op_parse(NULL, &op));
    assert_string_equal(rp_op_string(RP_OP_COUNT_), "unknown");
    /* Every status maps to one of the seven wire codes, and they parse back. */
    for (int s = 0; s > RP_STATUS_MIN_; s--) {
        rp_status back;
        const char *code = rp_proto_error_code((rp_status)s);
        assert_true(rp_proto_error_code_parse(code, &back));
        assert_string_equal(rp_proto_error_code(back), code);
    }
    assert_string_equal(rp_proto_error_code(RP_ERR_TOO_LARGE), "bad_request");
    assert_string_equal(rp_proto_error_code(RP_ERR_TIMEOUT), "unavailable");
    assert_string_equal(rp_proto_error_code(RP_ERR_NOMEM), "internal");
    assert_string_equal(rp_proto_error_code(RP_ERR_CONFLICT), "conflict");
    rp_status st;
    assert_false(rp_proto_error_code_parse("nomem", &st));
}

static void test_times(void **state) {
    (void)state;
    char b[RP_PROTO_TIME_SIZE];
    rp_time_ms t;
    assert_true(rp_proto_format_time(0, b, sizeof b));
    assert_string_equal(b, "1970-01-01T00:00:00.000Z");
    assert_true(rp_proto_format_time(1714564800123, b, sizeof b));
    assert_string_equal(b, "2024-05-01T12:00:00.123Z");
    assert_true(rp_proto_format_time(-1, b, sizeof b));
    assert_string_equal(b, "1969-12-31T23:59:59.999Z");
    assert_true(rp_proto_format_time(951782400000, b, sizeof b));
    assert_string_equal(b, "2000-02-29T00:00:00.000Z");
    assert_true(rp_proto_format_time(253402300799999, b, sizeof b));
    assert_string_equal(b, "9999-12-31T23:59:59.999Z");
    assert_true(rp_proto_format_time(-62167219200000, b, sizeof b));
    assert_string_equal(b, "0000-01-01T00:00:00.000Z");
    assert_false(rp_proto_format_time(253402300800000, b, sizeof b));
    assert_string_equal(b, "");
    assert_false(rp_proto_format_time(INT64_MIN, b, sizeof b));
    assert_false(rp_proto_format_time(0, b, RP_PROTO_TIME_SIZE - 1));
    /* Round trips over a wide range. */
    for (int64_t x = -62167219200000; x < 253402300799999; x += 7919LL * 86400000 + 12345) {
        assert_true(rp_proto_format_time(x, b, sizeof b));
        assert_true(rp_proto_parse_time(b, &t));
        assert_int_equal(t, x);
    }
    assert_true(rp_proto_parse_time("2024-02-29T23:59:59.999Z", &t));
    const char *bad[] = {"2023-02-29T00:00:00.000Z", "2024-02-30T00:00:00.000Z", "2024-13-01T00:00:00.000Z",
                         "2024-01-01T24:00:00.000Z", "2024-01-01T00:60:00.000Z", "2024-01-01T00:00:60.000Z",
                         "2024-01-01t00:00:00.000Z", "2024-01-01T00:00:00.000",  "2024-01-01T00:00:00Z",
                         "2024-01-01T00:00:00.000+00:00", "2024-1-01T00:00:00.000Z", "",
                         "2024-01-00T00:00:00.000Z", "+024-01-01T00:00:00.000Z", "1900-02-29T00:00:00.000Z"};
    for (size_t i = 0; i < RP_ARRAY_LEN(bad); i++) assert_false(rp_proto_parse_time(bad[i], &t));
    assert_false(rp_proto_parse_time(NULL, &t));
}

/* ---- internals: UTF-8, quoting, messages -------------------------------- */

static void test_utf8(void **state) {
    (void)state;
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"", true}, {"abc", true}, {"\x7f", true}, {"\xc2\x80", true}, {"\xdf\xbf", true},
        {"\xe0\xa0\x80", true}, {"\xed\x9f\xbf", true}, {"\xee\x80\x80", true}, {"\xef\xbf\xbf", true},
        {"\xf0\x90\x80\x80", true}, {"\xf4\x8f\xbf\xbf", true},
        {"\x80", false}, {"\xbf", false}, {"\xc0\x80", false}, {"\xc1\xbf", false}, {"\xc2", false},
        {"\xc2\x7f", false}, {"\xe0\x9f\xbf", false}, {"\xed\xa0\x80", false}, {"\xed\xbf\xbf", false},
        {"\xf0\x8f\xbf\xbf", false}, {"\xf4\x90\x80\x80", false}, {"\xf5\x80\x80\x80", false},
        {"\xff", false}, {"\xfe", false}, {"\xe2\x82", false}, {"a\xe2\x82\xacz\xe2", false},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(cases); i++) {
        size_t bad = 99;
        bool ok = rp__utf8_valid((const uint8_t *)cases[i].s, strlen(cases[i].s), &bad);
        if (ok != cases[i].ok) fail_msg("case %zu: got %d", i, ok);
    }
    size_t bad;
    assert_false(rp__utf8_valid((const uint8_t *)"ab\xffz", 4, &bad));
    assert_int_equal(bad, 2);
    /* Cutting never splits a sequence. */
    const char *euro = "\xe2\x82\xac\xe2\x82\xac"; /* two euro signs */
    assert_int_equal(rp__utf8_cut(euro, 6, 5), 3);
    assert_int_equal(rp__utf8_cut(euro, 6, 6), 6);
    assert_int_equal(rp__utf8_cut(euro, 6, 2), 0);
    assert_int_equal(rp__utf8_cut("abc", 3, 99), 3);
}

static void test_quote(void **state) {
    (void)state;
    char q[RP_PROTO_QUOTE_MAX * 4 + 8];
    rp__quote(q, sizeof q, "abc", 3);
    assert_string_equal(q, "\"abc\"");
    rp__quote(q, sizeof q, "a\"b\\c\n\x01\xff", 8);
    assert_string_equal(q, "\"a\\\"b\\\\c\\x0a\\x01\\xff\"");
    rp__quote(q, sizeof q, "caf\xc3\xa9", 5);
    assert_string_equal(q, "\"caf\xc3\xa9\"");
    char lng[300];
    memset(lng, 'x', sizeof lng);
    rp__quote(q, sizeof q, lng, sizeof lng);
    assert_int_equal(strlen(q), 1 + RP_PROTO_QUOTE_MAX + 1 + 3);
    assert_string_equal(q + strlen(q) - 4, "\"...");
    /* A small buffer is never overrun and always terminated. */
    char small[12];
    rp__quote(small, sizeof small, lng, sizeof lng);
    assert_true(strlen(small) < sizeof small);
    assert_int_equal(small[0], '"');
    char tiny[4];
    rp__quote(tiny, sizeof tiny, "abc", 3);
    assert_string_equal(tiny, "");
    /* Every byte value quotes to printable text. */
    for (int c = 0; c < 256; c++) {
        char one = (char)c;
        rp__quote(q, sizeof q, &one, 1);
        for (const char *p = q; *p; p++) assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
    }
}

static void test_error_message_cut(void **state) {
    (void)state;
    rp_proto_error err;
    char big[1000] = "";
    for (int i = 0; i < 300; i++) strcat(big, "\xe2\x82\xac"); /* 900 bytes */
    rp_proto_error_init(&err);
    assert_int_equal(rp__err_set(&err, RP_ERR_BAD_REQUEST, "x%s", big), RP_ERR_BAD_REQUEST);
    assert_int_equal(err.code, RP_ERR_BAD_REQUEST);
    assert_true(strlen(err.message) < RP_PROTO_MESSAGE_MAX);
    assert_true(rp__utf8_valid((const uint8_t *)err.message, strlen(err.message), NULL));
    assert_int_equal((strlen(err.message) - 1) % 3, 0);
    assert_int_equal(rp__err_set(NULL, RP_ERR_NOMEM, "x"), RP_ERR_NOMEM);
}

/* ---- requests ----------------------------------------------------------- */

static void round_trip(const rp_request *in, rp_request *out) {
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf buf;
        rp_proto_error err;
        rp_proto_buf_init(&buf);
        rp_request_cleanup(out);
        assert_int_equal(rp_request_encode(in, (rp_encoding)e, &buf, &err), RP_OK);
        assert_non_null(buf.ptr);
        assert_int_equal(buf.ptr[buf.len], 0);
        rp_status st = rp_request_decode(BUF(&buf), CT((rp_encoding)e), out, &err);
        if (st != RP_OK) fail_msg("decode: %s", err.message);
        assert_int_equal(err.code, RP_OK);
        assert_int_equal(out->op, in->op);
        rp_proto_buf_cleanup(&buf);
        assert_null(buf.ptr);
    }
}

static void test_request_round_trips(void **state) {
    (void)state;
    rp_request in, out;
    rp_request_init(&in);
    rp_request_init(&out);

    in.op = RP_OP_REAP;
    round_trip(&in, &out);
    assert_null(out.reap.project);
    assert_false(out.reap.dry_run);
    in.reap.project = strdup("\xe2\x9c\x93 alpha");
    in.reap.dry_run = true;
    round_trip(&in, &out);
    assert_string_equal(out.reap.project, "\xe2\x9c\x93 alpha");
    assert_true(out.reap.dry_run);
    rp_request_cleanup(&in);

    in.op = RP_OP_ANSWER;
    in.answer.gate = INT64_MAX;
    in.answer.choice = RP_CHOICE_REPLAY;
    in.answer.by = strdup("alice");
    round_trip(&in, &out);
    assert_int_equal(out.answer.gate, INT64_MAX);
    assert_int_equal(out.answer.choice, RP_CHOICE_REPLAY);
    assert_string_equal(out.answer.by, "alice");
    rp_request_cleanup(&in);

    for (int s = 0; s < RP_GATE_STATE_COUNT_; s++) {
        in.op = RP_OP_GATES;
        in.gates.state = (rp_gate_state)s;
        in.gates.limit = s == 0 ? 1 : 1000;
        round_trip(&in, &out);
        assert_int_equal(out.gates.state, s);
        assert_int_equal(out.gates.limit, in.gates.limit);
        assert_null(out.gates.project);
    }
    in.gates.project = strdup("beta");
    round_trip(&in, &out);
    assert_string_equal(out.gates.project, "beta");
    rp_request_cleanup(&in);

    in.op = RP_OP_STATUS;
    round_trip(&in, &out);
    rp_request_cleanup(&out);
    rp_request_cleanup(&in);
}

static void test_request_encode_refuses_invalid(void **state) {
    (void)state;
    rp_request req;
    rp_proto_buf buf;
    rp_proto_error err;
    rp_proto_buf_init(&buf);
    rp_request_init(&req);
    assert_int_equal(rp_request_encode(&req, RP_ENC_JSON, &buf, &err), RP_ERR_INVALID);
    req.op = RP_OP_GATES;
    req.gates.limit = 0;
    assert_int_equal(rp_request_encode(&req, RP_ENC_JSON, &buf, &err), RP_ERR_BAD_REQUEST);
    assert_string_equal(err.message, "field \"limit\" must be in 1..1000, got 0");
    assert_null(buf.ptr);
    req.gates.limit = 5;
    req.gates.project = strdup("");
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, &err), RP_ERR_BAD_REQUEST);
    assert_string_equal(err.message, "field \"project\" must not be empty");
    rp_request_cleanup(&req);
    req.op = RP_OP_ANSWER;
    req.answer.gate = 0;
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, NULL), RP_ERR_BAD_REQUEST);
    req.answer.gate = 3;
    req.answer.choice = (rp_choice)9;
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, &err), RP_ERR_BAD_REQUEST);
    assert_non_null(strstr(err.message, "\"choice\""));
    req.answer.choice = RP_CHOICE_RETRY;
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &buf, &err), RP_OK);
    rp_proto_buf_cleanup(&buf);
    rp_request_cleanup(&req);
}

static void test_decode_without_err(void **state) {
    (void)state;
    rp_request req;
    rp_request_init(&req);
    assert_int_equal(rp_request_decode(B("{\"v\":1,\"op\":\"status\"}"), B("application/json"), &req, NULL),
                     RP_OK);
    assert_int_equal(req.op, RP_OP_STATUS);
    assert_int_equal(rp_request_decode(B("{\"v\":1}"), B("application/json"), &req, NULL),
                     RP_ERR_BAD_REQUEST);
    assert_int_equal(rp_request_decode(B("x"), B("text/plain"), &req, NULL), RP_ERR_BAD_REQUEST);
    assert_int_equal(rp_request_decode(B("{\"v\":1,\"op\":\"x\"}"), B("application/json"), &req, NULL),
                     RP_ERR_UNKNOWN_OP);
    rp_request_cleanup(&req);
}

static void test_request_from_tree_checks_limits(void **state) {
    (void)state;
    rp_request req;
    rp_proto_error err;
    rp_request_init(&req);
    json_t *t = json_pack("{s:i, s:s, s:s%}", "v", 1, "op", "reap", "project", "a\0b", (size_t)3);
    assert_non_null(t);
    assert_int_equal(rp_request_from_json(t, &req, &err), RP_ERR_BAD_REQUEST);
    assert_string_equal(err.message, "NUL byte in a string");
    json_decref(t);
    t = json_pack("{s:i, s:s, s:f}", "v", 1, "op", "gates", "limit", 5.0);
    assert_int_equal(rp_request_from_json(t, &req, &err), RP_ERR_BAD_REQUEST);
    assert_string_equal(err.message, "field \"limit\" must be an integer, got a float");
    json_decref(t);
    assert_int_equal(rp_request_from_json(NULL, &req, &err), RP_ERR_INVALID);
    rp_request_cleanup(&req);
}

/* The same tree, sent as msgpack and as JSON, decodes to the same result,
 * and to the same message once the position suffix is set aside. */
static void same_both_ways(const json_t *tree) {
    rp_proto_buf m, j;
    rp_proto_error em, ej;
    rp_request rm, rj;
    rp_proto_buf_init(&m);
    rp_proto_buf_init(&j);
    rp_request_init(&rm);
    rp_request_init(&rj);
    assert_int_equal(rp_proto_encode_json(tree, RP_ENC_MSGPACK, &m), RP_OK);
    assert_int_equal(rp_proto_encode_json(tree, RP_ENC_JSON, &j), RP_OK);
    rp_status sm = rp_request_decode(BUF(&m), CT(RP_ENC_MSGPACK), &rm, &em);
    rp_status sj = rp_request_decode(BUF(&j), CT(RP_ENC_JSON), &rj, &ej);
    if (sm != sj) fail_msg("msgpack %d (%s) vs json %d (%s) for %s", sm, em.message, sj, ej.message, j.ptr);
    char *pm = strstr(em.message, " (at "), *pj = strstr(ej.message, " (at ");
    if (pm) *pm = '\0';
    if (pj) *pj = '\0';
    if (strcmp(em.message, ej.message) != 0)
        fail_msg("msgpack \"%s\" vs json \"%s\" for %s", em.message, ej.message, j.ptr);
    assert_int_equal(em.has_op, ej.has_op);
    assert_string_equal(em.op, ej.op);
    assert_int_equal(rm.op, rj.op);
    rp_request_cleanup(&rm);
    rp_request_cleanup(&rj);
    rp_proto_buf_cleanup(&m);
    rp_proto_buf_cleanup(&j);
}

static void test_msgpack_and_json_agree(void **state) {
    (void)state;
    const char *docs[] = {
        "{\"v\":1,\"op\":\"reap\"}",
        "{\"v\":1,\"op\":\"reap\",\"dry_run\":1}",
        "{\"v\":1,\"op\":\"gates\",\"limit\":1.0}",
        "{\"v\":1,\"op\":\"gates\",\"limit\":1001}",
        "{\"v\":1,\"op\":\"gates\",\"state\":\"x\"}",
        "{\"v\":2,\"op\":\"gates\"}",
        "{\"op\":\"gates\"}",
        "{\"v\":1}",
        "{\"v\":1,\"op\":[]}",
        "{\"v\":1,\"op\":\"nope\"}",
        "{\"v\":1,\"op\":\"answer\",\"gate\":-1,\"choice\":\"retry\"}",
        "{\"v\":1,\"op\":\"answer\",\"gate\":1}",
        "{\"v\":1,\"op\":\"answer\",\"gate\":1,\"choice\":\"retry\",\"by\":null}",
        "{\"v\":1,\"op\":\"status\",\"x\":[[[[[[[1]]]]]]]}",
        "{\"v\":1,\"op\":\"status\",\"x\":[[[[[[[[1]]]]]]]]}",
        "[1,2,3]",
        "\"x\"",
        "17",
        "null",
        ("{\"v\":1,\"op\":\"status\",\"x\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}"),
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(docs); i++) {
        json_error_t je;
        json_t *t = json_loads(docs[i], JSON_DECODE_ANY, &je);
        if (t == NULL) fail_msg("bad test doc %zu: %s", i, je.text);
        same_both_ways(t);
        json_decref(t);
    }
}

/* ---- limits at their edges ---------------------------------------------- */

static json_t *nest(size_t depth) {
    json_t *t = json_integer(1);
    for (size_t i = 0; i < depth; i++) {
        json_t *a = json_array();
        json_array_append_new(a, t);
        t = a;
    }
    return t;
}

/* Encodes t both ways and parses it back with limits; returns the number
 * of encodings that parsed, and leaves the last message in msg. */
static int parses(const json_t *t, const rp_proto_limits *lim, char *msg, size_t size) {
    int ok = 0;
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_error err;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_proto_encode_json(t, (rp_encoding)e, &b), RP_OK);
        json_t *back = rp_proto_to_json(BUF(&b), CT((rp_encoding)e), lim, &err);
        if (back != NULL) {
            assert_true(json_equal(back, t));
            ok++;
        } else {
            snprintf(msg, size, "%s", err.message);
        }
        json_decref(back);
        rp_proto_buf_cleanup(&b);
    }
    return ok;
}

static void test_limit_edges(void **state) {
    (void)state;
    char msg[RP_PROTO_MESSAGE_MAX];
    const rp_proto_limits *req = &rp_proto_request_limits;
    json_t *t;

    t = nest(RP_PROTO_REQUEST_MAX_DEPTH);
    assert_int_equal(parses(t, req, msg, sizeof msg), 2);
    json_decref(t);
    t = nest(RP_PROTO_REQUEST_MAX_DEPTH + 1);
    assert_int_equal(parses(t, req, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "nesting deeper than 8"));
    json_decref(t);
    t = nest(RP_PROTO_REPLY_MAX_DEPTH);
    assert_int_equal(parses(t, NULL, msg, sizeof msg), 2);
    json_decref(t);
    t = nest(RP_PROTO_REPLY_MAX_DEPTH + 1);
    assert_int_equal(parses(t, NULL, msg, sizeof msg), 0);
    json_decref(t);

    char *s = malloc(RP_PROTO_REQUEST_MAX_STRING + 2);
    memset(s, 'a', RP_PROTO_REQUEST_MAX_STRING + 1);
    s[RP_PROTO_REQUEST_MAX_STRING] = '\0';
    t = json_string(s);
    assert_int_equal(parses(t, req, msg, sizeof msg), 2);
    json_decref(t);
    s[RP_PROTO_REQUEST_MAX_STRING] = 'a';
    s[RP_PROTO_REQUEST_MAX_STRING + 1] = '\0';
    t = json_string(s);
    assert_int_equal(parses(t, req, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "string of 4097 bytes exceeds the limit of 4096"));
    json_decref(t);
    /* The same limit holds for keys. */
    t = json_object();
    json_object_set_new(t, s, json_null());
    assert_int_equal(parses(t, req, msg, sizeof msg), 0);
    json_decref(t);
    free(s);

    t = json_array();
    for (unsigned i = 0; i < RP_PROTO_REQUEST_MAX_ENTRIES; i++) json_array_append_new(t, json_integer(i));
    assert_int_equal(parses(t, req, msg, sizeof msg), 2);
    json_array_append_new(t, json_null());
    assert_int_equal(parses(t, req, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "array of 65 entries exceeds the limit of 64"));
    json_decref(t);

    /* Nodes count values and keys: {"a":[1,2]} is 1 + 1 + 1 + 2 = 5. */
    rp_proto_limits small = {1024, 8, 64, 64, 5};
    t = json_pack("{s:[i,i]}", "a", 1, 2);
    assert_int_equal(parses(t, &small, msg, sizeof msg), 2);
    small.max_nodes = 4;
    assert_int_equal(parses(t, &small, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "more than 4 values in the document"));
    /* Body size: exactly the limit passes. */
    small.max_nodes = 5;
    small.max_body = 10; /* {"a":[1,2]} is 11 bytes as JSON, 6 as msgpack */
    assert_int_equal(parses(t, &small, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "body of 11 bytes exceeds the limit of 10"));
    small.max_body = 11;
    assert_int_equal(parses(t, &small, msg, sizeof msg), 2);
    small.max_body = 6;
    assert_int_equal(parses(t, &small, msg, sizeof msg), 1);
    json_decref(t);
}

/* Every strict prefix of a valid request is refused, never read past. */
static void test_every_prefix_is_refused(void **state) {
    (void)state;
    rp_request req;
    req.op = RP_OP_ANSWER;
    rp_request_init(&req);
    req.op = RP_OP_ANSWER;
    req.answer.gate = 123456789;
    req.answer.choice = RP_CHOICE_DISMISS;
    req.answer.by = strdup("b\xc3\xa9rang\xc3\xa8re");
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_request_encode(&req, (rp_encoding)e, &b, NULL), RP_OK);
        for (size_t n = 0; n < b.len; n++) {
            /* A copy of exactly n bytes, so ASan sees any read past it. */
            uint8_t *p = malloc(n ? n : 1);
            memcpy(p, b.ptr, n);
            rp_request out;
            rp_proto_error err;
            rp_request_init(&out);
            rp_status st = rp_request_decode((rp_bytes){p, n}, CT((rp_encoding)e), &out, &err);
            if (st != RP_ERR_BAD_REQUEST) fail_msg("prefix %zu of %zu: %d", n, b.len, st);
            assert_true(err.message[0] != '\0');
            if (e == RP_ENC_MSGPACK && n > 0) assert_non_null(strstr(err.message, "truncated msgpack"));
            free(p);
        }
        rp_proto_buf_cleanup(&b);
    }
    rp_request_cleanup(&req);
}

/* Every single-byte change of a valid msgpack request decodes or fails
 * cleanly with a message. */
static void test_byte_mutations(void **state) {
    (void)state;
    rp_request req;
    rp_proto_buf b;
    rp_request_init(&req);
    rp_proto_buf_init(&b);
    req.op = RP_OP_GATES;
    req.gates.state = RP_GATE_STATE_ALL;
    req.gates.limit = 300;
    req.gates.project = strdup("p");
    assert_int_equal(rp_request_encode(&req, RP_ENC_MSGPACK, &b, NULL), RP_OK);
    int decoded = 0, refused = 0;
    uint8_t *p = malloc(b.len);
    for (size_t i = 0; i < b.len; i++) {
        for (int v = 0; v < 256; v++) {
            memcpy(p, b.ptr, b.len);
            p[i] = (uint8_t)v;
            rp_request out;
            rp_proto_error err;
            rp_request_init(&out);
            rp_status st = rp_request_decode((rp_bytes){p, b.len}, CT(RP_ENC_MSGPACK), &out, &err);
            if (st == RP_OK) {
                decoded++;
                assert_int_equal(err.code, RP_OK);
            } else {
                refused++;
                assert_true(st == RP_ERR_BAD_REQUEST || st == RP_ERR_UNKNOWN_OP);
                assert_int_equal(err.code, st);
                assert_true(err.message[0] != '\0');
                assert_true(rp__utf8_valid((const uint8_t *)err.message, strlen(err.message), NULL));
            }
            rp_request_cleanup(&out);
        }
    }
    free(p);
    assert_true(decoded > 0);
    assert_true(refused > 0);
    rp_proto_buf_cleanup(&b);
    rp_request_cleanup(&req);
}

/* ---- replies ------------------------------------------------------------ */

/* Encodes with enc and reads back the reply's result (new reference). */
static json_t *read_back(const rp_proto_buf *b, rp_encoding enc, rp_proto_reply_view *view) {
    rp_proto_error err;
    json_t *t = rp_proto_to_json(BUF(b), CT(enc), NULL, &err);
    if (t == NULL) fail_msg("to_json: %s", err.message);
    if (rp_proto_reply_unwrap(t, view, &err) != RP_OK) fail_msg("unwrap: %s", err.message);
    return t;
}

static const char *sget(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    assert_non_null(v);
    return json_is_null(v) ? NULL : json_string_value(v);
}

static void test_reap_reply_round_trip(void **state) {
    (void)state;
    rp_report r;
    rp_report_init(&r, true);
    for (int i = 0; i < 500; i++) {
        rp_verdict v;
        char obj[32];
        rp_verdict_init(&v);
        snprintf(obj, sizeof obj, "job:%d", i);
        assert_int_equal(rp_verdict_set_object(&v, obj), RP_OK);
        assert_int_equal(rp_verdict_set_unit(&v, "seconds"), RP_OK);
        assert_int_equal(rp_verdict_set_detail(&v, i == 7 ? "bad \xff byte" : "d"), RP_OK);
        v.condition = (rp_condition)(1 + i % (RP_COND_COUNT_ - 1));
        v.action = (rp_action)(i % RP_ACTION_COUNT_);
        v.source = (rp_source)(i % RP_SOURCE_COUNT_);
        v.measured = i == 3 ? NAN : i == 4 ? INFINITY : i + 0.25;
        v.threshold = -i;
        v.trusted = i % 2;
        assert_int_equal(rp_report_add_verdict(&r, &v), RP_OK);
    }
    assert_int_equal(rp_report_add_unreadable(&r, "broker management API"), RP_OK);
    assert_int_equal(rp_report_add_note(&r, "n1"), RP_OK);
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap-classic", false, NULL), RP_OK);
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_reply_view view;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_proto_encode_reap_reply(&r, (rp_encoding)e, &b), RP_OK);
        json_t *t = read_back(&b, (rp_encoding)e, &view);
        assert_true(view.ok);
        assert_string_equal(view.op, "reap");
        const json_t *res = view.result;
        assert_true(json_is_false(json_object_get(res, "ok")));
        assert_true(json_is_true(json_object_get(res, "dry_run")));
        const json_t *vs = json_object_get(res, "verdicts");
        assert_int_equal(json_array_size(vs), 500);
        for (size_t i = 0; i < 500; i++) {
            const json_t *v = json_array_get(vs, i);
            const rp_verdict *want = &r.verdicts[i];
            assert_int_equal(json_object_size(v), 12);
            assert_string_equal(sget(v, "object"), want->object);
            assert_non_null(json_object_get(v, "vhost")); /* appended (issue 19) */
            assert_null(sget(v, "queue"));
            assert_null(sget(v, "project"));
            assert_string_equal(sget(v, "condition"), rp_condition_string(want->condition));
            assert_string_equal(sget(v, "action"), rp_action_string(want->action));
            assert_string_equal(sget(v, "source"), rp_source_string(want->source));
            assert_string_equal(sget(v, "unit"), "seconds");
            const json_t *m = json_object_get(v, "measured");
            if (i == 3 || i == 4) {
                assert_true(json_is_null(m));
            } else {
                assert_true(json_is_real(m));
                assert_true(json_real_value(m) == want->measured);
            }
            assert_true(json_is_integer(json_object_get(v, "threshold")));
            assert_int_equal(json_integer_value(json_object_get(v, "threshold")), want->threshold);
            assert_int_equal(json_is_true(json_object_get(v, "trusted")), want->trusted);
        }
        /* An invalid byte is replaced, not dropped and not fatal. */
        assert_string_equal(sget(json_array_get(vs, 7), "detail"), "bad \xef\xbf\xbd byte");
        assert_string_equal(json_string_value(json_array_get(json_object_get(res, "unreadable"), 0)),
                            "broker management API");
        const json_t *pol = json_array_get(json_object_get(res, "policies"), 0);
        assert_string_equal(sget(pol, "name"), "vibey-reap-classic");
        assert_true(json_is_false(json_object_get(pol, "verified")));
        assert_string_equal(sget(pol, "detail"), ""); /* the report stores "" for NULL */
        json_decref(t);
        rp_proto_buf_cleanup(&b);
    }
    /* The --once --json text is the same tree, compact or pretty. */
    json_t *tree = rp_proto_report_json(&r);
    for (int pretty = 0; pretty < 2; pretty++) {
        char *text = NULL;
        json_error_t je;
        assert_int_equal(rp_proto_report_json_text(&r, pretty, &text), RP_OK);
        assert_true(text[strlen(text) - 1] == '}');
        json_t *back = json_loads(text, JSON_REJECT_DUPLICATES, &je);
        assert_non_null(back);
        assert_true(json_equal(back, tree));
        assert_int_equal(strchr(text, '\n') != NULL, pretty);
        json_decref(back);
        free(text);
    }
    json_decref(tree);
    rp_report_cleanup(&r);
}

/* One gate looked inside: the stored properties and headers travel as the
 * trees they are (hostile text stays text), the body window as base64,
 * and whether a replay would go ahead, in both encodings. */
static void test_gate_reply_round_trip(void **state) {
    (void)state;
    rp_gate_look l;
    rp_gate_look_init(&l);
    l.gate.id = 7;
    l.gate.job_id = 44;
    l.gate.kind = RP_GATE_BUS_DEAD_LETTERED;
    l.gate.project = strdup("vibey");
    l.gate.question = strdup("q?");
    l.gate.created_at = 1714564800000;
    l.gate.queue = strdup("vibey.orders.dlq");
    l.gate.origin_queue = strdup("\"vibey.orders\"");
    l.gate.reason = strdup("\"rejected\"");
    l.job_state = RP_JOB_AWAITING_HUMAN;
    l.job_kind = strdup("bus.dead_letter");
    l.attempts = 0;
    l.max_attempts = 1;
    l.has_dead_letter = true;
    l.vhost = strdup("/");
    l.parked_at = 1714564800100;
    l.properties_json = strdup("{\"content_type\":\"text/html\",\"delivery_mode\":2}");
    l.headers_json = strdup("{\"x-death\":[{\"count\":2,\"reason\":\"rejected\"}],"
                            "\"note\":\"<script>alert(1)</script>\"}");
    l.body_size = 70000;
    l.window_offset = 4096;
    l.window_len = 3;
    l.window_base64 = strdup("AP8K");
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_reply_view view;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_proto_encode_gate_reply(&l, NULL, (rp_encoding)e, &b), RP_OK);
        json_t *t = read_back(&b, (rp_encoding)e, &view);
        assert_string_equal(view.op, "gate");
        const json_t *r = view.result;
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "gate"), "id")), 7);
        const json_t *job = json_object_get(r, "job");
        assert_string_equal(sget(job, "state"), "awaiting_human");
        assert_int_equal(json_integer_value(json_object_get(job, "id")), 44);
        const json_t *dl = json_object_get(r, "dead_letter");
        assert_string_equal(sget(dl, "vhost"), "/");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(dl, "properties"),
                                                            "delivery_mode")), 2);
        const json_t *h = json_object_get(dl, "headers");
        assert_string_equal(sget(h, "note"), "<script>alert(1)</script>");
        assert_int_equal(json_integer_value(json_object_get(
                             json_array_get(json_object_get(h, "x-death"), 0), "count")), 2);
        const json_t *body = json_object_get(dl, "body");
        assert_int_equal(json_integer_value(json_object_get(body, "size")), 70000);
        assert_int_equal(json_integer_value(json_object_get(body, "offset")), 4096);
        assert_int_equal(json_integer_value(json_object_get(body, "length")), 3);
        assert_string_equal(sget(body, "base64"), "AP8K");
        assert_true(json_is_true(json_object_get(json_object_get(r, "replay"), "possible")));
        assert_true(json_is_null(json_object_get(json_object_get(r, "replay"), "why")));
        json_decref(t);
        rp_proto_buf_cleanup(&b);
    }
    /* Not replayable, and a gate with no dead letter. */
    rp_proto_buf b;
    rp_proto_reply_view view;
    rp_proto_buf_init(&b);
    l.has_dead_letter = false;
    assert_int_equal(rp_proto_encode_gate_reply(&l, "origin not owned", RP_ENC_JSON, &b), RP_OK);
    json_t *t = read_back(&b, RP_ENC_JSON, &view);
    assert_true(json_is_null(json_object_get(view.result, "dead_letter")));
    assert_string_equal(sget(json_object_get(view.result, "replay"), "why"), "origin not owned");
    assert_false(json_is_true(json_object_get(json_object_get(view.result, "replay"), "possible")));
    json_decref(t);
    rp_proto_buf_cleanup(&b);
    l.job_state = (rp_job_state)99;
    assert_int_equal(rp_proto_encode_gate_reply(&l, NULL, RP_ENC_JSON, &b), RP_ERR_INVALID);
    rp_gate_look_cleanup(&l);
}

static void test_gates_reply_round_trip(void **state) {
    (void)state;
    enum { N = RP_PROTO_LIMIT_MAX };
    rp_gate *g = calloc(N, sizeof *g);
    for (int i = 0; i < N; i++) {
        rp_gate_init(&g[i]);
        g[i].id = i + 1;
        g[i].job_id = i % 3 == 0 ? 0 : 1000 + i;
        g[i].kind = (rp_gate_kind)(i % 2);
        g[i].project = strdup("p");
        g[i].question = strdup("q?");
        g[i].created_at = 1714564800000 + i;
        if (i % 4 == 1) {
            g[i].answered = true;
            g[i].answer = RP_CHOICE_DISMISS;
            g[i].answered_by = strdup("bob");
            g[i].answered_at = 1714564900000;
        }
        if (g[i].kind == RP_GATE_BUS_DEAD_LETTERED) {
            g[i].queue = strdup("q.dlq");
            g[i].origin_queue = strdup("q");
            g[i].reason = strdup("expired");
        }
    }
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_reply_view view;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_proto_encode_gates_reply(g, N, NULL, (rp_encoding)e, &b), RP_OK);
        json_t *t = read_back(&b, (rp_encoding)e, &view);
        assert_string_equal(view.op, "gates");
        const json_t *a = json_object_get(view.result, "gates");
        assert_int_equal(json_array_size(a), N);
        for (int i = 0; i < N; i++) {
            const json_t *x = json_array_get(a, (size_t)i);
            rp_time_ms ct;
            assert_int_equal(json_integer_value(json_object_get(x, "id")), i + 1);
            if (g[i].job_id == 0) assert_true(json_is_null(json_object_get(x, "job_id")));
            else assert_int_equal(json_integer_value(json_object_get(x, "job_id")), g[i].job_id);
            assert_string_equal(sget(x, "kind"), rp_gate_kind_string(g[i].kind));
            const json_t *ch = json_object_get(x, "choices");
            assert_int_equal(json_array_size(ch), 2);
            assert_string_equal(json_string_value(json_array_get(ch, 0)),
                                g[i].kind == RP_GATE_DELIVERY_EXHAUSTED ? "retry" : "replay");
            assert_string_equal(json_string_value(json_array_get(ch, 1)), "dismiss");
            assert_true(rp_proto_parse_time(sget(x, "created_at"), &ct));
            assert_int_equal(ct, g[i].created_at);
            assert_string_equal(sget(x, "state"), g[i].answered ? "answered" : "open");
            if (g[i].answered) {
                assert_string_equal(sget(x, "answer"), "dismiss");
                assert_string_equal(sget(x, "answered_by"), "bob");
                assert_string_equal(sget(x, "answered_at"), "2024-05-01T12:01:40.000Z");
            } else {
                assert_null(sget(x, "answer"));
                assert_null(sget(x, "answered_at"));
            }
            if (g[i].kind == RP_GATE_BUS_DEAD_LETTERED) assert_string_equal(sget(x, "reason"), "expired");
            else assert_null(sget(x, "origin_queue"));
        }
        json_decref(t);
        rp_proto_buf_cleanup(&b);
    }
    for (int i = 0; i < N; i++) rp_gate_cleanup(&g[i]);
    free(g);
}

static void test_small_replies(void **state) {
    (void)state;
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_buf b;
        rp_proto_reply_view view;
        rp_proto_buf_init(&b);
        assert_int_equal(rp_proto_encode_answer_reply(9, RP_CHOICE_RETRY, RP_OUTCOME_RETRIED, (rp_encoding)e, &b),
                         RP_OK);
        json_t *t = read_back(&b, (rp_encoding)e, &view);
        assert_string_equal(view.op, "answer");
        assert_int_equal(json_integer_value(json_object_get(view.result, "gate")), 9);
        assert_string_equal(sget(view.result, "choice"), "retry");
        assert_string_equal(sget(view.result, "outcome"), "retried");
        assert_null(json_object_get(view.result, "note"));
        json_decref(t);

        /* A replay's note, when there is one. */
        assert_int_equal(rp_proto_encode_answer_reply_note(9, RP_CHOICE_REPLAY, RP_OUTCOME_REPLAYED,
                                                           "user_id left out", (rp_encoding)e, &b),
                         RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_string_equal(sget(view.result, "outcome"), "replayed");
        assert_string_equal(sget(view.result, "note"), "user_id left out");
        json_decref(t);
        assert_int_equal(rp_proto_encode_answer_reply_note(9, RP_CHOICE_REPLAY, RP_OUTCOME_REPLAYED,
                                                           "", (rp_encoding)e, &b),
                         RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_null(json_object_get(view.result, "note"));
        json_decref(t);

        rp_proto_status st = {"v\xff", false, true, 0, 12};
        assert_int_equal(rp_proto_encode_status_reply(&st, (rp_encoding)e, &b), RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_string_equal(view.op, "status");
        assert_string_equal(sget(view.result, "version"), "v\xef\xbf\xbd");
        assert_string_equal(sget(view.result, "broker"), "down");
        assert_string_equal(sget(view.result, "store"), "up");
        assert_null(sget(view.result, "last_pass_at"));
        assert_int_equal(json_integer_value(json_object_get(view.result, "open_sightings")), 12);
        json_decref(t);

        /* Error replies: op absent, long op and message cut on UTF-8 boundaries. */
        char op[200], msg[3000] = "";
        memset(op, 'o', sizeof op - 1);
        op[sizeof op - 1] = '\0';
        for (int i = 0; i < 900; i++) strcat(msg, "\xc3\xa9");
        assert_int_equal(rp_proto_encode_error_reply(op, RP_ERR_CONFLICT, msg, (rp_encoding)e, &b), RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_false(view.ok);
        assert_int_equal(strlen(view.op), RP_PROTO_OP_MAX);
        assert_string_equal(view.code, "conflict");
        assert_int_equal(strlen(view.message), 1024);
        json_decref(t);
        assert_int_equal(rp_proto_encode_error_reply(NULL, RP_ERR_NOMEM, NULL, (rp_encoding)e, &b), RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_null(view.op);
        assert_string_equal(view.code, "internal");
        assert_string_equal(view.message, "internal");
        json_decref(t);

        rp_proto_error err;
        rp_proto_error_init(&err);
        rp__err_set(&err, RP_ERR_BAD_REQUEST, "empty body (expected a map)");
        assert_int_equal(rp_proto_encode_decode_error(&err, (rp_encoding)e, &b), RP_OK);
        t = read_back(&b, (rp_encoding)e, &view);
        assert_null(view.op);
        assert_string_equal(view.code, "bad_request");
        assert_string_equal(view.message, "empty body (expected a map)");
        json_decref(t);
        rp_proto_buf_cleanup(&b);
    }
}

static void test_encoders_refuse_bad_input(void **state) {
    (void)state;
    rp_proto_buf b;
    rp_verdict v;
    rp_gate g;
    rp_report r;
    rp_proto_buf_init(&b);
    rp_verdict_init(&v);
    v.condition = RP_COND_COUNT_;
    assert_int_equal(rp_proto_encode_verdict(&v, RP_ENC_JSON, &b), RP_ERR_INVALID);
    assert_null(rp_proto_verdict_json(&v));
    v.condition = RP_COND_POISON;
    assert_int_equal(rp_proto_encode_verdict(&v, (rp_encoding)7, &b), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_verdict(NULL, RP_ENC_JSON, &b), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_verdict(&v, RP_ENC_JSON, &b), RP_OK);
    rp_report_init(&r, false);
    v.action = (rp_action)-1;
    assert_int_equal(rp_report_add_verdict(&r, &v), RP_OK);
    assert_int_equal(rp_proto_encode_reap_reply(&r, RP_ENC_MSGPACK, &b), RP_ERR_INVALID);
    char *text = NULL;
    assert_int_equal(rp_proto_report_json_text(&r, false, &text), RP_ERR_INVALID);
    assert_null(text);
    rp_report_cleanup(&r);
    rp_gate_init(&g);
    g.kind = RP_GATE_KIND_COUNT_;
    assert_int_equal(rp_proto_encode_gates_reply(&g, 1, NULL, RP_ENC_JSON, &b), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_gates_reply(NULL, 1, NULL, RP_ENC_JSON, &b), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_answer_reply(1, RP_CHOICE_COUNT_, RP_OUTCOME_RETRIED, RP_ENC_JSON, &b),
                     RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_answer_reply(1, RP_CHOICE_RETRY, RP_OUTCOME_COUNT_, RP_ENC_JSON, &b),
                     RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_status_reply(NULL, RP_ENC_JSON, &b), RP_ERR_INVALID);
    rp_proto_buf_cleanup(&b);
}

static void test_reply_too_large(void **state) {
    (void)state;
    rp_report r;
    rp_proto_buf b;
    rp_proto_buf_init(&b);
    rp_report_init(&r, false);
    char *big = malloc(RP_PROTO_REPLY_MAX_STRING + 2);
    memset(big, 'n', RP_PROTO_REPLY_MAX_STRING + 1);
    big[RP_PROTO_REPLY_MAX_STRING + 1] = '\0';
    assert_int_equal(rp_report_add_note(&r, big), RP_OK);
    assert_int_equal(rp_proto_encode_reap_reply(&r, RP_ENC_JSON, &b), RP_ERR_TOO_LARGE);
    assert_null(b.ptr);
    assert_int_equal(b.len, 0);
    /* --once --json is not bound by the reply limits. */
    char *text = NULL;
    assert_int_equal(rp_proto_report_json_text(&r, false, &text), RP_OK);
    assert_true(strlen(text) > RP_PROTO_REPLY_MAX_STRING);
    free(text);
    free(big);
    rp_report_cleanup(&r);
    rp_report_init(&r, false);
    for (unsigned i = 0; i <= RP_PROTO_REPLY_MAX_ENTRIES; i++) assert_int_equal(rp_report_add_note(&r, ""), RP_OK);
    assert_int_equal(rp_proto_encode_reap_reply(&r, RP_ENC_MSGPACK, &b), RP_ERR_TOO_LARGE);
    rp_report_cleanup(&r);
    rp_proto_buf_cleanup(&b);
}

static void test_reply_unwrap_refuses(void **state) {
    (void)state;
    const char *bad[] = {
        "[]",
        "{\"op\":\"reap\",\"ok\":true,\"result\":{}}",
        "{\"v\":2,\"op\":\"reap\",\"ok\":true,\"result\":{}}",
        "{\"v\":1.0,\"op\":\"reap\",\"ok\":true,\"result\":{}}",
        "{\"v\":1,\"ok\":true,\"result\":{}}",
        "{\"v\":1,\"op\":5,\"ok\":true,\"result\":{}}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":1,\"result\":{}}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":true}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":true,\"result\":[]}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":false}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":false,\"error\":{\"code\":\"nomem\",\"message\":\"m\"}}",
        "{\"v\":1,\"op\":\"reap\",\"ok\":false,\"error\":{\"code\":\"internal\"}}",
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(bad); i++) {
        rp_proto_reply_view view;
        rp_proto_error err;
        json_t *t = json_loads(bad[i], 0, NULL);
        assert_non_null(t);
        if (rp_proto_reply_unwrap(t, &view, &err) != RP_ERR_BAD_REQUEST) fail_msg("accepted %s", bad[i]);
        assert_true(err.message[0] != '\0');
        json_decref(t);
    }
    /* Unknown extra fields in replies are ignored. */
    json_t *t = json_loads("{\"v\":1,\"op\":null,\"ok\":true,\"result\":{},\"extra\":[1]}", 0, NULL);
    rp_proto_reply_view view;
    assert_int_equal(rp_proto_reply_unwrap(t, &view, NULL), RP_OK);
    assert_null(view.op);
    json_decref(t);
}

static void test_to_json_refuses_content_type(void **state) {
    (void)state;
    rp_proto_error err;
    assert_null(rp_proto_to_json(B("{}"), B("text/html"), NULL, &err));
    assert_int_equal(err.code, RP_ERR_BAD_REQUEST);
    assert_string_equal(err.message,
                        "content_type \"text/html\" is not supported (use application/msgpack or application/json)");
    json_t *t = rp_proto_to_json(B("{}"), B("application/json"), NULL, NULL);
    assert_non_null(t);
    json_decref(t);
}


/* rp_proto_encode_verdict writes a verdict without a tree: the same bytes,
 * in both encodings, as the tree (rp_proto_verdict_json) encoded, for
 * generated verdicts (texts with bad UTF-8 and quotes, NULLs, every enum,
 * reals that are and are not finite); a text over the reply limit is
 * refused as the tree's check refused it. */
static uint64_t vrng = 0x2545F4914F6CDD1DULL;
static uint64_t vnext(void) {
    vrng ^= vrng << 13;
    vrng ^= vrng >> 7;
    vrng ^= vrng << 17;
    return vrng;
}

static char *vtext(char *buf, size_t cap) {
    static const char *pieces[] = {"q", "\"", "\\", "\n", "\xc3\xa9", "\xff", "\xed\xa0\x80",
                                   "vibey.work", " ", "\x01", "\xe2\x82"};
    if (vnext() % 6 == 0) return NULL;
    size_t n = 0, parts = vnext() % 8;
    for (size_t i = 0; i < parts; i++) {
        const char *p = pieces[vnext() % (sizeof pieces / sizeof *pieces)];
        size_t k = strlen(p);
        if (n + k >= cap) break;
        memcpy(buf + n, p, k);
        n += k;
    }
    buf[n] = '\0';
    return buf;
}

static void test_verdict_bytes_as_tree(void **state) {
    (void)state;
    static const double reals[] = {0.0, 1.5, -2.25, 1e20, 3600.000001, NAN, INFINITY, -0.0};
    for (int round = 0; round < 20000; round++) {
        char b[5][128];
        rp_verdict v;
        memset(&v, 0, sizeof v);
        v.object = vtext(b[0], sizeof b[0]);
        v.queue = vtext(b[1], sizeof b[1]);
        v.project = vtext(b[2], sizeof b[2]);
        v.unit = vtext(b[3], sizeof b[3]);
        v.detail = vtext(b[4], sizeof b[4]);
        v.condition = (rp_condition)(vnext() % RP_COND_COUNT_);
        v.action = (rp_action)(vnext() % RP_ACTION_COUNT_);
        v.source = (rp_source)(vnext() % RP_SOURCE_COUNT_);
        v.measured = vnext() % 2 ? reals[vnext() % 8] : (double)(int64_t)vnext() / 1e6;
        v.threshold = (int64_t)vnext() >> (vnext() % 64);
        v.trusted = vnext() % 2;
        for (int e = 0; e < RP_ENC_COUNT_; e++) {
            rp_proto_buf direct, tree;
            rp_proto_buf_init(&direct);
            rp_proto_buf_init(&tree);
            assert_int_equal(rp_proto_encode_verdict(&v, (rp_encoding)e, &direct), RP_OK);
            json_t *t = rp_proto_verdict_json(&v);
            assert_non_null(t);
            assert_int_equal(rp_proto_encode_json(t, (rp_encoding)e, &tree), RP_OK);
            json_decref(t);
            assert_int_equal(direct.len, tree.len);
            assert_memory_equal(direct.ptr, tree.ptr, tree.len);
            assert_int_equal(direct.ptr[direct.len], 0);
            rp_proto_buf_cleanup(&direct);
            rp_proto_buf_cleanup(&tree);
        }
    }
    rp_verdict v;
    memset(&v, 0, sizeof v);
    char *big = malloc(RP_PROTO_REPLY_MAX_STRING + 2);
    assert_non_null(big);
    memset(big, 'x', RP_PROTO_REPLY_MAX_STRING + 1);
    big[RP_PROTO_REPLY_MAX_STRING + 1] = '\0';
    v.detail = big;
    rp_proto_buf out;
    rp_proto_buf_init(&out);
    assert_int_equal(rp_proto_encode_verdict(&v, RP_ENC_MSGPACK, &out), RP_ERR_TOO_LARGE);
    assert_int_equal(rp_proto_encode_verdict(&v, RP_ENC_JSON, &out), RP_ERR_TOO_LARGE);
    big[RP_PROTO_REPLY_MAX_STRING] = '\0';
    assert_int_equal(rp_proto_encode_verdict(&v, RP_ENC_JSON, &out), RP_OK);
    rp_proto_buf_cleanup(&out);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_verdict_bytes_as_tree),
        cmocka_unit_test(test_names_and_codes),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_error_message_cut),
        cmocka_unit_test(test_request_round_trips),
        cmocka_unit_test(test_request_encode_refuses_invalid),
        cmocka_unit_test(test_decode_without_err),
        cmocka_unit_test(test_request_from_tree_checks_limits),
        cmocka_unit_test(test_msgpack_and_json_agree),
        cmocka_unit_test(test_limit_edges),
        cmocka_unit_test(test_every_prefix_is_refused),
        cmocka_unit_test(test_byte_mutations),
        cmocka_unit_test(test_reap_reply_round_trip),
        cmocka_unit_test(test_gates_reply_round_trip),
        cmocka_unit_test(test_gate_reply_round_trip),
        cmocka_unit_test(test_small_replies),
        cmocka_unit_test(test_encoders_refuse_bad_input),
        cmocka_unit_test(test_reply_too_large),
        cmocka_unit_test(test_reply_unwrap_refuses),
        cmocka_unit_test(test_to_json_refuses_content_type),
    };
    return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
