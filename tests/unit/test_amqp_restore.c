/* AMQP properties and headers to JSON and back (rp_amqp_restore.h): every
 * field kind survives the round trip, the dead-letter headers are left out
 * of a replay, and bad JSON is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_amqp_restore.h"

static amqp_table_entry_t entry(const char *k, amqp_field_value_t v) {
    amqp_table_entry_t e;
    e.key = amqp_cstring_bytes(k);
    e.value = v;
    return e;
}

static amqp_field_value_t fv(uint8_t kind) {
    amqp_field_value_t v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    return v;
}

static const amqp_table_entry_t *find(const amqp_table_t *t, const char *k) {
    for (int i = 0; i < t->num_entries; i++)
        if (t->entries[i].key.len == strlen(k) && memcmp(t->entries[i].key.bytes, k, strlen(k)) == 0)
            return &t->entries[i];
    return NULL;
}

static void assert_bytes(amqp_bytes_t b, const void *p, size_t n) {
    assert_int_equal(b.len, n);
    if (n) assert_memory_equal(b.bytes, p, n);
}

static void test_roundtrip(void **state) {
    (void)state;
    amqp_field_value_t v[20];
    for (int i = 0; i < 20; i++) memset(&v[i], 0, sizeof v[i]);
    v[0] = fv(AMQP_FIELD_KIND_BOOLEAN); v[0].value.boolean = 1;
    v[1] = fv(AMQP_FIELD_KIND_I8); v[1].value.i8 = -5;
    v[2] = fv(AMQP_FIELD_KIND_U8); v[2].value.u8 = 250;
    v[3] = fv(AMQP_FIELD_KIND_I16); v[3].value.i16 = -30000;
    v[4] = fv(AMQP_FIELD_KIND_U16); v[4].value.u16 = 60000;
    v[5] = fv(AMQP_FIELD_KIND_I32); v[5].value.i32 = -2000000000;
    v[6] = fv(AMQP_FIELD_KIND_U32); v[6].value.u32 = 4000000000u;
    v[7] = fv(AMQP_FIELD_KIND_I64); v[7].value.i64 = INT64_MIN;
    v[8] = fv(AMQP_FIELD_KIND_U64); v[8].value.u64 = UINT64_MAX;
    v[9] = fv(AMQP_FIELD_KIND_F32); v[9].value.f32 = 1.5f;
    v[10] = fv(AMQP_FIELD_KIND_F64); v[10].value.f64 = 0.1;
    v[11] = fv(AMQP_FIELD_KIND_DECIMAL); v[11].value.decimal.decimals = 2; v[11].value.decimal.value = 12345;
    v[12] = fv(AMQP_FIELD_KIND_UTF8); v[12].value.bytes = amqp_cstring_bytes("h\xc3\xa9llo");
    v[13] = fv(AMQP_FIELD_KIND_UTF8); v[13].value.bytes = (amqp_bytes_t){4, "a\0\xff" "b"};
    v[14] = fv(AMQP_FIELD_KIND_BYTES); v[14].value.bytes = (amqp_bytes_t){5, "\x00\x01\x02\xfe\xff"};
    v[15] = fv(AMQP_FIELD_KIND_TIMESTAMP); v[15].value.u64 = 1700000000;
    v[16] = fv(AMQP_FIELD_KIND_VOID);
    /* An array of two, and a table holding the tag's own key. */
    amqp_field_value_t arr[2] = {v[1], v[12]};
    v[17] = fv(AMQP_FIELD_KIND_ARRAY); v[17].value.array = (amqp_array_t){2, arr};
    amqp_table_entry_t inner[1] = {entry("$amqp", v[12])};
    v[18] = fv(AMQP_FIELD_KIND_TABLE); v[18].value.table = (amqp_table_t){1, inner};
    const char *names[19] = {"t", "b", "B", "s", "u", "I", "i", "l", "L", "f", "d", "D", "S",
                             "S2", "x", "T", "V", "A", "F"};
    /* Plus the dead-letter headers, which a replay leaves out. */
    amqp_table_entry_t e[22];
    for (int i = 0; i < 19; i++) e[i] = entry(names[i], v[i]);
    e[19] = entry("x-death", v[17]);
    e[20] = entry("x-first-death-queue", v[12]);
    e[21] = entry("x-last-death-reason", v[12]);

    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_HEADERS_FLAG |
               AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_PRIORITY_FLAG |
               AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
               AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_APP_ID_FLAG;
    p.content_type = amqp_cstring_bytes("application/json");
    p.headers = (amqp_table_t){22, e};
    p.delivery_mode = 2;
    p.priority = 7;
    p.message_id = amqp_cstring_bytes("m-1");
    p.timestamp = 1700000001;
    p.correlation_id = (amqp_bytes_t){3, "c\0d"};
    p.app_id = amqp_cstring_bytes("");

    char *pj = NULL, *hj = NULL;
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_OK);
    assert_non_null(strstr(hj, "x-death")); /* stored whole */
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t r;
    char err[200];
    assert_int_equal(rp_amqp_restore_props(&pool, pj, hj, &r, err, sizeof err), RP_OK);
    assert_int_equal(r._flags, p._flags);
    assert_bytes(r.content_type, "application/json", 16);
    assert_bytes(r.message_id, "m-1", 3);
    assert_bytes(r.correlation_id, "c\0d", 3);
    assert_bytes(r.app_id, "", 0);
    assert_int_equal(r.delivery_mode, 2);
    assert_int_equal(r.priority, 7);
    assert_int_equal(r.timestamp, 1700000001);
    assert_int_equal(r.headers.num_entries, 19);
    assert_null(find(&r.headers, "x-death"));
    assert_null(find(&r.headers, "x-first-death-queue"));
    assert_null(find(&r.headers, "x-last-death-reason"));
    for (int i = 0; i < 19; i++) {
        const amqp_table_entry_t *g = find(&r.headers, names[i]);
        assert_non_null(g);
        assert_int_equal(g->value.kind, v[i].kind);
    }
    assert_true(find(&r.headers, "t")->value.value.boolean);
    assert_int_equal(find(&r.headers, "b")->value.value.i8, -5);
    assert_int_equal(find(&r.headers, "B")->value.value.u8, 250);
    assert_int_equal(find(&r.headers, "s")->value.value.i16, -30000);
    assert_int_equal(find(&r.headers, "u")->value.value.u16, 60000);
    assert_int_equal(find(&r.headers, "I")->value.value.i32, -2000000000);
    assert_int_equal(find(&r.headers, "i")->value.value.u32, 4000000000u);
    assert_true(find(&r.headers, "l")->value.value.i64 == INT64_MIN);
    assert_true(find(&r.headers, "L")->value.value.u64 == UINT64_MAX);
    assert_true(find(&r.headers, "f")->value.value.f32 == 1.5f);
    assert_true(find(&r.headers, "d")->value.value.f64 == 0.1);
    assert_int_equal(find(&r.headers, "D")->value.value.decimal.decimals, 2);
    assert_int_equal(find(&r.headers, "D")->value.value.decimal.value, 12345);
    assert_bytes(find(&r.headers, "S")->value.value.bytes, "h\xc3\xa9llo", 6);
    assert_bytes(find(&r.headers, "S2")->value.value.bytes, "a\0\xff" "b", 4);
    assert_bytes(find(&r.headers, "x")->value.value.bytes, "\x00\x01\x02\xfe\xff", 5);
    assert_int_equal(find(&r.headers, "T")->value.value.u64, 1700000000);
    const amqp_array_t *a = &find(&r.headers, "A")->value.value.array;
    assert_int_equal(a->num_entries, 2);
    assert_int_equal(a->entries[0].kind, AMQP_FIELD_KIND_I8);
    assert_int_equal(a->entries[1].kind, AMQP_FIELD_KIND_UTF8);
    const amqp_table_t *t = &find(&r.headers, "F")->value.value.table;
    assert_int_equal(t->num_entries, 1);
    assert_bytes(t->entries[0].key, "$amqp", 5);
    free(pj);
    free(hj);
    empty_amqp_pool(&pool);
}

static void test_only_death_headers(void **state) {
    (void)state;
    amqp_pool_t pool;
    init_amqp_pool(&pool, 1024);
    amqp_basic_properties_t r;
    char err[200];
    /* Headers that were all the broker's: no headers table at all. */
    assert_int_equal(rp_amqp_restore_props(&pool, "{}", "{\"x-death\":[],\"x-first-death-queue\":\"q\"}",
                                           &r, err, sizeof err),
                     RP_OK);
    assert_int_equal(r._flags, 0);
    assert_int_equal(rp_amqp_restore_props(&pool, NULL, NULL, &r, err, sizeof err), RP_OK);
    assert_int_equal(r._flags, 0);
    /* An original-expiration the broker would not write (a tagged float, a
     * forged header) is left out: the replay is not refused for it (found
     * by fuzz_capture: it was "not a text value"). */
    assert_int_equal(rp_amqp_restore_props(
                         &pool, "{}",
                         "{\"x-death\":[{\"original-expiration\":{\"$amqp\":\"f\",\"value\":1.5}}]}",
                         &r, err, sizeof err),
                     RP_OK);
    assert_int_equal(r._flags, 0);
    /* Text (plain or tagged "S") is put back. */
    assert_int_equal(rp_amqp_restore_props(
                         &pool, "{}",
                         "{\"x-death\":[{\"original-expiration\":{\"$amqp\":\"S\",\"value\":\"NTAwMA==\"}}]}",
                         &r, err, sizeof err),
                     RP_OK);
    assert_int_equal(r._flags, AMQP_BASIC_EXPIRATION_FLAG);
    assert_memory_equal(r.expiration.bytes, "5000", 4);
    empty_amqp_pool(&pool);
}

static void test_refused(void **state) {
    (void)state;
    amqp_pool_t pool;
    init_amqp_pool(&pool, 1024);
    amqp_basic_properties_t r;
    char err[200];
    const char *props[] = {"[]", "not json", "{\"delivery_mode\":300}", "{\"priority\":-1}",
                           "{\"unknown\":1}", "{\"content_type\":5}", "{\"timestamp\":\"x\"}"};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        assert_int_equal(rp_amqp_restore_props(&pool, props[i], "{}", &r, err, sizeof err),
                         RP_ERR_INVALID);
        assert_true(err[0] != '\0');
        assert_int_equal(r._flags, 0);
    }
    const char *headers[] = {"[1]", "{\"a\":{\"$amqp\":\"b\",\"value\":200}}",
                             "{\"a\":{\"$amqp\":\"x\",\"value\":\"!!\"}}",
                             "{\"a\":{\"$amqp\":\"Q\",\"value\":1}}",
                             "{\"a\":{\"$amqp\":\"I\"}}",
                             "{\"a\":{\"$amqp\":\"i\",\"value\":-1}}"};
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
        assert_int_equal(rp_amqp_restore_props(&pool, "{}", headers[i], &r, err, sizeof err),
                         RP_ERR_INVALID);
    /* A header name that is not text cannot be stored losslessly. */
    amqp_field_value_t v = fv(AMQP_FIELD_KIND_VOID);
    amqp_table_entry_t e = {(amqp_bytes_t){2, "\xff\x00"}, v};
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){1, &e};
    char *pj = NULL, *hj = NULL;
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_ERR_INVALID);
    assert_null(pj);
    assert_null(hj);
    empty_amqp_pool(&pool);
}

/* Arrays and tables nested RP_AMQP_RESTORE_MAX_DEPTH deep are kept and
 * come back; one level more is refused on capture (a hostile header could
 * nest some 26,000 levels in one frame) and on restore. */
static void test_nesting_depth(void **state) {
    (void)state;
    enum { MAX = RP_AMQP_RESTORE_MAX_DEPTH };
    /* chain[0] is the header's value; chain[i] holds chain[i + 1]. Tables
     * at even levels, arrays at odd ones. */
    amqp_field_value_t chain[MAX + 2];
    amqp_table_entry_t ents[MAX + 2];
    for (int deep = MAX; deep <= MAX + 1; deep++) {
        /* Built from the inside out, each holding its finished child. */
        chain[deep] = fv(AMQP_FIELD_KIND_UTF8);
        chain[deep].value.bytes = amqp_cstring_bytes("bottom");
        for (int i = deep - 1; i >= 0; i--) {
            if (i % 2 == 0) {
                ents[i] = entry("n", chain[i + 1]);
                chain[i] = fv(AMQP_FIELD_KIND_TABLE);
                chain[i].value.table = (amqp_table_t){1, &ents[i]};
            } else {
                chain[i] = fv(AMQP_FIELD_KIND_ARRAY);
                chain[i].value.array = (amqp_array_t){1, &chain[i + 1]};
            }
        }
        amqp_table_entry_t h = entry("deep", chain[0]);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_HEADERS_FLAG;
        p.headers = (amqp_table_t){1, &h};
        char *pj = NULL, *hj = NULL;
        rp_status st = rp_amqp_restore_capture(&p, &pj, &hj);
        if (deep > MAX) {
            assert_int_equal(st, RP_ERR_INVALID);
            assert_null(hj);
            continue;
        }
        assert_int_equal(st, RP_OK);
        assert_non_null(strstr(hj, "\"bottom\""));
        amqp_pool_t pool;
        init_amqp_pool(&pool, 4096);
        amqp_basic_properties_t r;
        char err[200];
        assert_int_equal(rp_amqp_restore_props(&pool, pj, hj, &r, err, sizeof err), RP_OK);
        /* Walk down to the bottom again. */
        const amqp_field_value_t *at = &find(&r.headers, "deep")->value;
        for (int i = 0; i < deep; i++) {
            assert_int_equal(at->kind, i % 2 == 0 ? AMQP_FIELD_KIND_TABLE : AMQP_FIELD_KIND_ARRAY);
            at = i % 2 == 0 ? &at->value.table.entries[0].value : &at->value.array.entries[0];
        }
        assert_int_equal(at->kind, AMQP_FIELD_KIND_UTF8);
        assert_bytes(at->value.bytes, "bottom", 6);
        /* The same text one level deeper is refused on restore. */
        size_t n = strlen(hj);
        char *deeper = malloc(n + 3);
        assert_non_null(deeper);
        /* {"deep":X} -> {"deep":[X]} */
        size_t at_colon = strlen("{\"deep\":");
        memcpy(deeper, hj, at_colon);
        deeper[at_colon] = '[';
        memcpy(deeper + at_colon + 1, hj + at_colon, n - at_colon - 1);
        deeper[n] = ']';
        deeper[n + 1] = '}';
        deeper[n + 2] = '\0';
        assert_int_equal(rp_amqp_restore_props(&pool, "{}", deeper, &r, err, sizeof err),
                         RP_ERR_INVALID);
        assert_non_null(strstr(err, "nested too deep"));
        free(deeper);
        free(pj);
        free(hj);
        empty_amqp_pool(&pool);
    }
}

static void test_death_header_names(void **state) {
    (void)state;
    assert_true(rp_amqp_restore_is_death_header("x-death", 7));
    assert_true(rp_amqp_restore_is_death_header("x-first-death-exchange", 22));
    assert_true(rp_amqp_restore_is_death_header("x-last-death-queue", 18));
    assert_false(rp_amqp_restore_is_death_header("x-deaths", 8));
    assert_false(rp_amqp_restore_is_death_header("x-delivery-count", 16));
    assert_false(rp_amqp_restore_is_death_header("x-dea", 5));
}

/* Reals jsonb would not give back as reals (it prints numeric without an
 * exponent, so 1e300 would read back as an integer; -0.0 as 0.0; NaN and
 * the infinities are no JSON number): tagged with their exact text; a
 * plain real stays a plain JSON number. */
static void test_reals_jsonb_cannot_carry(void **state) {
    (void)state;
    static const double d[] = {1e300, -1.5e17, 1e15, -0.0, 0.0 / 0.0, 1.0 / 0.0, -1.0 / 0.0,
                               123456.789};
    static const float f[] = {3.0e38f, -0.0f, 1.0f / 0.0f, 0.25f};
    enum { ND = sizeof d / sizeof d[0], NF = sizeof f / sizeof f[0] };
    amqp_table_entry_t e[ND + NF];
    char names[ND + NF][8];
    for (int i = 0; i < ND + NF; i++) {
        snprintf(names[i], sizeof names[i], "r%d", i);
        amqp_field_value_t v = fv(i < ND ? AMQP_FIELD_KIND_F64 : AMQP_FIELD_KIND_F32);
        if (i < ND) v.value.f64 = d[i];
        else v.value.f32 = f[i - ND];
        e[i] = entry(names[i], v);
    }
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){ND + NF, e};
    char *pj, *hj;
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_OK);
    assert_non_null(strstr(hj, "\"r0\":{\"$amqp\":\"d\",\"value\":\"1.0000000000000001e+300\"}"));
    assert_non_null(strstr(hj, "\"r4\":{\"$amqp\":\"d\",\"value\":\"nan\"}"));
    assert_non_null(strstr(hj, "\"r7\":123456.789"));
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t r;
    char err[128];
    assert_int_equal(rp_amqp_restore_props(&pool, pj, hj, &r, err, sizeof err), RP_OK);
    for (int i = 0; i < ND + NF; i++) {
        const amqp_table_entry_t *g = find(&r.headers, names[i]);
        assert_non_null(g);
        assert_int_equal(g->value.kind, e[i].value.kind);
        if (i < ND)
            assert_memory_equal(&g->value.value.f64, &d[i], sizeof(double));
        else
            assert_memory_equal(&g->value.value.f32, &f[i - ND], sizeof(float));
    }
    /* A tagged real that is not one is refused. */
    assert_int_equal(rp_amqp_restore_props(&pool, "{}", "{\"r\":{\"$amqp\":\"d\",\"value\":\"1x\"}}",
                                           &r, err, sizeof err),
                     RP_ERR_INVALID);
    assert_int_equal(rp_amqp_restore_props(&pool, "{}", "{\"r\":{\"$amqp\":\"d\",\"value\":true}}",
                                           &r, err, sizeof err),
                     RP_ERR_INVALID);
    empty_amqp_pool(&pool);
    free(pj);
    free(hj);
}

/* reaper's note in the properties: a not_replayable reason is refused by
 * restore and read back by rp_amqp_restore_refusal; a note with only an
 * x-death count is no refusal. */
static void test_note(void **state) {
    (void)state;
    char *props = strdup("{\"message_id\":\"m-1\"}");
    assert_non_null(props);
    assert_int_equal(rp_amqp_restore_note(&props, "too heavy", 70000, 0), RP_OK);
    char why[64];
    assert_true(rp_amqp_restore_refusal(props, why, sizeof why));
    assert_string_equal(why, "too heavy");
    amqp_pool_t pool;
    init_amqp_pool(&pool, 4096);
    amqp_basic_properties_t out;
    char err[200];
    assert_int_equal(rp_amqp_restore_props(&pool, props, "{}", &out, err, sizeof err),
                     RP_ERR_INVALID);
    assert_non_null(strstr(err, "too heavy"));
    free(props);
    props = strdup("{\"message_id\":\"m-2\"}");
    assert_int_equal(rp_amqp_restore_note(&props, NULL, 0, 57), RP_OK);
    assert_non_null(strstr(props, "\"x_death_entries\":57"));
    assert_false(rp_amqp_restore_refusal(props, why, sizeof why));
    assert_int_equal(rp_amqp_restore_props(&pool, props, "{}", &out, err, sizeof err), RP_OK);
    assert_int_equal(out.message_id.len, 3);
    assert_false(rp_amqp_restore_refusal("{}", why, sizeof why));
    assert_false(rp_amqp_restore_refusal(NULL, why, sizeof why));
    free(props);
    empty_amqp_pool(&pool);
}


/* The exact texts: properties by name (as JSON_SORT_KEYS had them), a
 * header key that repeats written once at its first place with its last
 * value (as a JSON object keeps one), in a small table and in one past 16
 * keys (sorted, not compared pairwise); a replaced value that cannot be
 * stored still refuses the message (it did when a tree was built). */
static void test_capture_exact_texts(void **state) {
    (void)state;
    amqp_field_value_t one = fv(AMQP_FIELD_KIND_I64), text = fv(AMQP_FIELD_KIND_UTF8),
                       later = fv(AMQP_FIELD_KIND_UTF8);
    one.value.i64 = 1;
    text.value.bytes = amqp_cstring_bytes("x");
    later.value.bytes = amqp_cstring_bytes("y\n\"");
    amqp_table_entry_t e[3] = {entry("a", one), entry("b", text), entry("a", later)};
    amqp_basic_properties_t p;
    memset(&p, 0, sizeof p);
    p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_APP_ID_FLAG |
               AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_TYPE_FLAG;
    p.message_id = amqp_cstring_bytes("m-1");
    p.app_id = amqp_cstring_bytes("");
    p.type = (amqp_bytes_t){2, "\xff\x01"};
    p.delivery_mode = 2;
    p.headers = (amqp_table_t){3, e};
    char *pj = NULL, *hj = NULL;
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_OK);
    assert_string_equal(pj, "{\"app_id\":\"\",\"delivery_mode\":2,\"message_id\":\"m-1\","
                            "\"type\":{\"$amqp\":\"S\",\"value\":\"/wE=\"}}");
    assert_string_equal(hj, "{\"a\":\"y\\n\\\"\",\"b\":\"x\"}");
    free(pj);
    free(hj);

    amqp_table_entry_t many[20];
    char keys[20][8];
    for (int i = 0; i < 20; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i % 7);
        amqp_field_value_t v = fv(AMQP_FIELD_KIND_I64);
        v.value.i64 = i;
        many[i] = entry(keys[i], v);
    }
    p._flags = AMQP_BASIC_HEADERS_FLAG;
    p.headers = (amqp_table_t){20, many};
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_OK);
    assert_string_equal(pj, "{}");
    assert_string_equal(hj, "{\"k0\":14,\"k1\":15,\"k2\":16,\"k3\":17,\"k4\":18,\"k5\":19,\"k6\":13}");
    free(pj);
    free(hj);

    amqp_table_entry_t bad_inner[1] = {{.key = {1, "\xff"}, .value = one}};
    amqp_field_value_t bad = fv(AMQP_FIELD_KIND_TABLE);
    bad.value.table = (amqp_table_t){1, bad_inner};
    amqp_table_entry_t shadow[2] = {entry("a", bad), entry("a", one)};
    p.headers = (amqp_table_t){2, shadow};
    assert_int_equal(rp_amqp_restore_capture(&p, &pj, &hj), RP_ERR_INVALID);
    assert_null(pj);
    assert_null(hj);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_note),
        cmocka_unit_test(test_capture_exact_texts),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_only_death_headers),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_nesting_depth),
        cmocka_unit_test(test_death_header_names),
        cmocka_unit_test(test_reals_jsonb_cannot_carry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
