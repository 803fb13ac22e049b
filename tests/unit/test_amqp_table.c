/* AMQP properties and headers to JSON and to core's header model
 * (rp_amqp_table.h): every field kind, strings that jsonb would refuse,
 * keys with NUL bytes, deep nesting cut, wrong types modelled absent, and
 * the x-death array with entries that are not tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rp_amqp_table.h"

static amqp_field_value_t s_val(const char *s, size_t n) {
    amqp_field_value_t v;
    memset(&v, 0, sizeof v);
    v.kind = AMQP_FIELD_KIND_UTF8;
    v.value.bytes = (amqp_bytes_t){n, (void *)s};
    return v;
}

/* What jsonb takes: no NUL in any string or key. */
static bool no_nul(json_t *j) {
    if (json_is_string(j)) return strlen(json_string_value(j)) == json_string_length(j);
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach(j, k, v) if (!no_nul(v)) return false;
    }
    if (json_is_array(j)) {
        json_array_foreach(j, i, v) if (!no_nul(v)) return false;
    }
    return true;
}

static json_t *to_json(const amqp_table_t *t) {
    char *text = NULL;
    assert_int_equal(rp_amqp_table_json(t, &text), RP_OK);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e); /* refuses a NUL inside a key */
    assert_non_null(j);
    assert_true(no_nul(j));
    free(text);
    return j;
}

static void test_every_kind(void **state) {
    (void)state;
    amqp_table_entry_t e[16];
    memset(e, 0, sizeof e);
    int n = 0;
#define KEY(k) e[n].key = amqp_cstring_bytes(k)
    KEY("bool"); e[n].value.kind = AMQP_FIELD_KIND_BOOLEAN; e[n++].value.value.boolean = 1;
    KEY("i8"); e[n].value.kind = AMQP_FIELD_KIND_I8; e[n++].value.value.i8 = -8;
    KEY("u16"); e[n].value.kind = AMQP_FIELD_KIND_U16; e[n++].value.value.u16 = 65535;
    KEY("i64"); e[n].value.kind = AMQP_FIELD_KIND_I64; e[n++].value.value.i64 = INT64_MIN;
    KEY("u64big"); e[n].value.kind = AMQP_FIELD_KIND_U64; e[n++].value.value.u64 = UINT64_MAX;
    KEY("f64"); e[n].value.kind = AMQP_FIELD_KIND_F64; e[n++].value.value.f64 = 1.5;
    KEY("nan"); e[n].value.kind = AMQP_FIELD_KIND_F32; e[n++].value.value.f32 = NAN;
    KEY("dec"); e[n].value.kind = AMQP_FIELD_KIND_DECIMAL;
    e[n].value.value.decimal.decimals = 2; e[n++].value.value.decimal.value = 1234;
    KEY("ts"); e[n].value.kind = AMQP_FIELD_KIND_TIMESTAMP; e[n++].value.value.u64 = 1700000000;
    KEY("void"); e[n++].value.kind = AMQP_FIELD_KIND_VOID;
    KEY("text"); e[n++].value = s_val("héllo", strlen("héllo"));
    KEY("nul"); e[n++].value = s_val("a\0b", 3);
    KEY("badutf8"); e[n++].value = s_val("\xc3\x28", 2);
    KEY("bytes"); e[n].value.kind = AMQP_FIELD_KIND_BYTES;
    e[n++].value.value.bytes = (amqp_bytes_t){3, (void *)"xyz"};
    KEY("odd"); e[n++].value.kind = 'Z'; /* a kind nobody knows */
#undef KEY
    amqp_table_t t = {n, e};
    json_t *j = to_json(&t);
    assert_true(json_is_true(json_object_get(j, "bool")));
    assert_int_equal(json_integer_value(json_object_get(j, "i8")), -8);
    assert_int_equal(json_integer_value(json_object_get(j, "u16")), 65535);
    assert_true(json_integer_value(json_object_get(j, "i64")) == INT64_MIN);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "u64big"), "$u64")),
                        "18446744073709551615");
    assert_true(json_real_value(json_object_get(j, "f64")) == 1.5);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "nan"), "$float")),
                        "nan");
    json_t *dec = json_object_get(json_object_get(j, "dec"), "$decimal");
    assert_int_equal(json_integer_value(json_object_get(dec, "decimals")), 2);
    assert_int_equal(json_integer_value(json_object_get(dec, "value")), 1234);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "ts"), "$timestamp")),
                     1700000000);
    assert_true(json_is_null(json_object_get(j, "void")));
    assert_string_equal(json_string_value(json_object_get(j, "text")), "héllo");
    /* "a\0b" and invalid UTF-8 travel as base64; so does every byte array. */
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "nul"), "$bytes")),
                        "YQBi");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "badutf8"), "$bytes")), "wyg=");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "bytes"), "$bytes")),
                        "eHl6");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "odd"), "$kind")), 'Z');
    json_decref(j);
}

static void test_keys_and_nesting(void **state) {
    (void)state;
    /* 100 nested tables: cut at RP_AMQP_JSON_MAX_DEPTH, no crash. */
    amqp_table_entry_t nest[100];
    for (int i = 0; i < 100; i++) {
        nest[i].key = amqp_cstring_bytes("n");
        if (i == 99) {
            nest[i].value = s_val("bottom", 6);
        } else {
            nest[i].value.kind = AMQP_FIELD_KIND_TABLE;
            nest[i].value.value.table = (amqp_table_t){1, &nest[i + 1]};
        }
    }
    amqp_table_entry_t e[4];
    e[0].key = amqp_cstring_bytes("deep");
    e[0].value.kind = AMQP_FIELD_KIND_TABLE;
    e[0].value.value.table = (amqp_table_t){1, &nest[0]};
    e[1].key = (amqp_bytes_t){3, (void *)"k\0y"};
    e[1].value = s_val("v1", 2);
    e[2].key = amqp_cstring_bytes("dup");
    e[2].value = s_val("first", 5);
    e[3].key = amqp_cstring_bytes("dup");
    e[3].value = s_val("second", 6);
    amqp_table_t t = {4, e};
    json_t *j = to_json(&t);
    json_t *p = json_object_get(j, "deep");
    int depth = 0;
    while (json_object_get(p, "n")) {
        p = json_object_get(p, "n");
        depth++;
    }
    assert_true(depth < RP_AMQP_JSON_MAX_DEPTH + 1);
    assert_string_equal(json_string_value(json_object_get(p, "$cut")), "nested too deep");
    /* A key with a NUL is shown the untrusted way; the first duplicate wins. */
    assert_string_equal(json_string_value(json_object_get(j, "\"k\\u0000y\"")), "v1");
    assert_string_equal(json_string_value(json_object_get(j, "dup")), "first");
    json_decref(j);

    char *text = NULL;
    assert_int_equal(rp_amqp_table_json(NULL, &text), RP_OK);
    assert_string_equal(text, "{}");
    free(text);
    assert_int_equal(rp_amqp_table_json(&t, NULL), RP_ERR_INVALID);
}

static void test_properties(void **state) {
    (void)state;
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
               AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
    p.content_type = amqp_cstring_bytes("application/json");
    p.delivery_mode = 2;
    p.timestamp = 1700000000;
    p.message_id = (amqp_bytes_t){2, (void *)"\0x"};
    p.correlation_id = amqp_cstring_bytes("not flagged: never read");
    char *text = NULL;
    assert_int_equal(rp_amqp_props_json(&p, &text), RP_OK);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "content_type")), "application/json");
    assert_int_equal(json_integer_value(json_object_get(j, "delivery_mode")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "timestamp")), 1700000000);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "message_id"), "$bytes")), "AHg=");
    assert_null(json_object_get(j, "correlation_id"));
    assert_null(json_object_get(j, "headers"));
    json_decref(j);
    assert_int_equal(rp_amqp_props_json(NULL, &text), RP_ERR_INVALID);
}

static void test_model(void **state) {
    (void)state;
    /* x-death: [not a table, {queue: 7 (wrong type), time: "x"},
     *           {queue: "q", reason: "rejected", time: ts, count: 3}] */
    amqp_table_entry_t bad[2], good[4];
    bad[0].key = amqp_cstring_bytes("queue");
    bad[0].value.kind = AMQP_FIELD_KIND_I32;
    bad[0].value.value.i32 = 7;
    bad[1].key = amqp_cstring_bytes("time");
    bad[1].value = s_val("x", 1);
    good[0].key = amqp_cstring_bytes("queue");
    good[0].value = s_val("vibey.q", 7);
    good[1].key = amqp_cstring_bytes("reason");
    good[1].value = s_val("rejected", 8);
    good[2].key = amqp_cstring_bytes("time");
    good[2].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
    good[2].value.value.u64 = 1700000000;
    good[3].key = amqp_cstring_bytes("count");
    good[3].value.kind = AMQP_FIELD_KIND_I64;
    good[3].value.value.i64 = 3;
    amqp_field_value_t arr[3];
    arr[0].kind = AMQP_FIELD_KIND_BOOLEAN;
    arr[0].value.boolean = 1;
    arr[1].kind = AMQP_FIELD_KIND_TABLE;
    arr[1].value.table = (amqp_table_t){2, bad};
    arr[2].kind = AMQP_FIELD_KIND_TABLE;
    arr[2].value.table = (amqp_table_t){4, good};
    amqp_table_entry_t h[4];
    h[0].key = amqp_cstring_bytes("x-death");
    h[0].value.kind = AMQP_FIELD_KIND_ARRAY;
    h[0].value.value.array = (amqp_array_t){3, arr};
    h[1].key = amqp_cstring_bytes("x-first-death-queue");
    h[1].value.kind = AMQP_FIELD_KIND_TABLE; /* wrong type: absent */
    h[1].value.value.table = (amqp_table_t){0, NULL};
    h[2].key = amqp_cstring_bytes("x-first-death-reason");
    h[2].value = s_val("expired", 7);
    h[3].key = amqp_cstring_bytes("x-first-death-reason");
    h[3].value = s_val("second", 6);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    p.headers = (amqp_table_t){4, h};
    p.message_id = amqp_cstring_bytes("m-1");
    rp_amqp_dl_model m;
    assert_int_equal(rp_amqp_dl_model_init(&m, &p), RP_OK);
    assert_true(m.headers.message_id.present);
    assert_int_equal(m.headers.message_id.value.len, 3);
    assert_false(m.headers.first_death_queue.present);
    assert_true(m.headers.first_death_reason.present);
    assert_memory_equal(m.headers.first_death_reason.value.ptr, "expired", 7);
    assert_int_equal(m.headers.n_x_death, 3);
    assert_false(m.headers.x_death[0].queue.present);
    assert_false(m.headers.x_death[1].queue.present);
    assert_false(m.headers.x_death[1].time.present);
    assert_true(m.headers.x_death[2].queue.present);
    assert_true(m.headers.x_death[2].time.present);
    assert_int_equal(m.headers.x_death[2].time.value, 1700000000);
    assert_int_equal(m.headers.x_death[2].count.value, 3);
    assert_true(rp_amqp_dl_model_is_dead_letter(&m));
    /* Through core: the oldest entry with a time names the origin. */
    rp_dead_letter d;
    assert_int_equal(rp_dead_letter_examine(&m.headers, "tap", NULL,
                                            (rp_bytes){(const uint8_t *)"b", 1}, &d),
                     RP_OK);
    assert_string_equal(d.origin_queue, "vibey.q");
    assert_string_equal(d.reason, "expired");
    assert_string_equal(d.identity, "id:m-1");
    rp_dead_letter_cleanup(&d);
    rp_amqp_dl_model_cleanup(&m);

    /* No headers at all: not a dead letter. */
    memset(&p, 0, sizeof p);
    assert_int_equal(rp_amqp_dl_model_init(&m, &p), RP_OK);
    assert_false(rp_amqp_dl_model_is_dead_letter(&m));
    rp_amqp_dl_model_cleanup(&m);
    /* x-death that is not an array: no entries. */
    h[0].value = s_val("x", 1);
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){1, h};
    assert_int_equal(rp_amqp_dl_model_init(&m, &p), RP_OK);
    assert_int_equal(m.headers.n_x_death, 0);
    assert_false(rp_amqp_dl_model_is_dead_letter(&m));
    rp_amqp_dl_model_cleanup(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_keys_and_nesting),
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
