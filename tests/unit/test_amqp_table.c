/* AMQP headers to core's header model (rp_amqp_table.h): wrong types
 * modelled absent, the first of duplicate keys, and the x-death array with
 * entries that are not tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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
    assert_int_equal(rp_dead_letter_examine(&m.headers, "/", "tap", NULL,
                                            (rp_bytes){(const uint8_t *)"b", 1}, &d),
                     RP_OK);
    assert_string_equal(d.origin_queue, "vibey.q");
    assert_string_equal(d.reason, "expired");
    assert_string_equal(d.identity, "id:%2F/vibey.q/m-1");
    assert_int_equal(strncmp(d.death, "1700000000/", 11), 0);
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

/* x-death with 100 entries, the oldest last: 32 parsed (the first 31 and
 * the last), 68 counted; rp_amqp_death_headers keeps exactly those, with
 * only queue, reason, exchange, time and count, and the model of its table
 * is the model of the whole one. */
static void test_xdeath_cap_and_death_headers(void **state) {
    (void)state;
    enum { N = 100 };
    static amqp_table_entry_t f[N][6];
    static amqp_field_value_t arr[N];
    static char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "q%d", i);
        f[i][0].key = amqp_cstring_bytes("queue");
        f[i][0].value = s_val(names[i], strlen(names[i]));
        f[i][1].key = amqp_cstring_bytes("reason");
        f[i][1].value = s_val("rejected", 8);
        f[i][2].key = amqp_cstring_bytes("time");
        f[i][2].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
        f[i][2].value.value.u64 = (uint64_t)(1700000000 + N - i); /* newest first */
        f[i][3].key = amqp_cstring_bytes("count");
        f[i][3].value.kind = AMQP_FIELD_KIND_I64;
        f[i][3].value.value.i64 = 2;
        f[i][4].key = amqp_cstring_bytes("exchange");
        f[i][4].value = s_val("dlx", 3);
        f[i][5].key = amqp_cstring_bytes("routing-keys"); /* not kept */
        f[i][5].value.kind = AMQP_FIELD_KIND_ARRAY;
        f[i][5].value.value.array = (amqp_array_t){0, NULL};
        arr[i].kind = AMQP_FIELD_KIND_TABLE;
        arr[i].value.table = (amqp_table_t){6, f[i]};
    }
    static char big[100000];
    memset(big, 'p', sizeof big);
    amqp_table_entry_t h[3];
    h[0].key = amqp_cstring_bytes("pad");
    h[0].value = s_val(big, sizeof big);
    h[1].key = amqp_cstring_bytes("x-death");
    h[1].value.kind = AMQP_FIELD_KIND_ARRAY;
    h[1].value.value.array = (amqp_array_t){N, arr};
    h[2].key = amqp_cstring_bytes("x-first-death-queue");
    h[2].value = s_val("q99", 3);
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){3, h};

    rp_amqp_dl_model m;
    assert_int_equal(rp_amqp_dl_model_init(&m, &p), RP_OK);
    assert_int_equal(m.headers.n_x_death, RP_AMQP_XDEATH_MAX);
    assert_int_equal(m.x_death_unparsed, N - RP_AMQP_XDEATH_MAX);
    /* The oldest (the first death) is parsed. */
    const rp_xdeath *old = rp_dl_oldest_entry(&m.headers);
    assert_int_equal(old->time.value, 1700000001);
    assert_int_equal(old->queue.value.len, 3);
    assert_memory_equal(old->queue.value.ptr, "q99", 3);

    /* Every string and entry counts: more than the pad alone. */
    size_t fp = rp_amqp_table_footprint(&p.headers);
    assert_true(fp > sizeof big + N * (sizeof(amqp_table_entry_t) * 6));
    assert_true(rp_amqp_props_footprint(&p) >= fp);

    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_table_t kept;
    assert_int_equal(rp_amqp_death_headers(&pool, &p.headers, &kept), RP_OK);
    assert_int_equal(kept.num_entries, 2); /* x-first-death-queue and x-death */
    assert_true(rp_amqp_table_footprint(&kept) < 16 * 1024);
    amqp_basic_properties_t q = p;
    q.headers = kept;
    rp_amqp_dl_model m2;
    assert_int_equal(rp_amqp_dl_model_init(&m2, &q), RP_OK);
    assert_int_equal(m2.headers.n_x_death, RP_AMQP_XDEATH_MAX);
    assert_int_equal(m2.x_death_unparsed, 0);
    for (size_t i = 0; i < RP_AMQP_XDEATH_MAX; i++) {
        const rp_xdeath *a = &m.headers.x_death[i], *b = &m2.headers.x_death[i];
        assert_int_equal(a->time.value, b->time.value);
        assert_int_equal(a->count.value, b->count.value);
        assert_int_equal(a->queue.value.len, b->queue.value.len);
        assert_memory_equal(a->queue.value.ptr, b->queue.value.ptr, a->queue.value.len);
        assert_memory_equal(a->reason.value.ptr, b->reason.value.ptr, a->reason.value.len);
    }
    assert_int_equal(rp_dl_death_count(&m.headers), rp_dl_death_count(&m2.headers));
    assert_true(m2.headers.first_death_queue.present);
    rp_amqp_dl_model_cleanup(&m);
    rp_amqp_dl_model_cleanup(&m2);
    empty_amqp_pool(&pool);
}

/* A table nested deeper than the walk goes weighs "too much". */
static void test_footprint_depth(void **state) {
    (void)state;
    enum { D = RP_AMQP_FOOTPRINT_DEPTH + 5 };
    static amqp_table_entry_t e[D];
    for (int i = 0; i < D; i++) {
        e[i].key = amqp_cstring_bytes("n");
        e[i].value.kind = AMQP_FIELD_KIND_TABLE;
        e[i].value.value.table = (amqp_table_t){i + 1 < D ? 1 : 0, i + 1 < D ? &e[i + 1] : NULL};
    }
    amqp_table_t t = {1, e};
    assert_true(rp_amqp_table_footprint(&t) == SIZE_MAX);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_xdeath_cap_and_death_headers),
        cmocka_unit_test(test_footprint_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
