/* rp_pg_binarray: the bytes array_recv reads (ndim, flags, element type,
 * dimension, lower bound, then each element's length and bytes; NULL is -1),
 * and the refusals (a count other than announced, an empty array). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rp_pg_binarray.h"

static uint32_t be32(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void test_layout(void **state) {
    (void)state;
    rp_pg_binarray a;
    rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, 3);
    rp_pg_binarray_add_str(&a, "ab");
    rp_pg_binarray_add_str(&a, NULL);
    rp_pg_binarray_add(&a, "", 0);
    assert_true(rp_pg_binarray_ok(&a));
    /* header 20 bytes; "ab" 4+2; NULL 4; "" 4 */
    assert_int_equal(a.len, 20 + 6 + 4 + 4);
    assert_int_equal(be32(a.data), 1);        /* ndim */
    assert_int_equal(be32(a.data + 4), 0);    /* flags */
    assert_int_equal(be32(a.data + 8), 25);   /* text */
    assert_int_equal(be32(a.data + 12), 3);   /* dimension */
    assert_int_equal(be32(a.data + 16), 1);   /* lower bound */
    assert_int_equal(be32(a.data + 20), 2);
    assert_memory_equal(a.data + 24, "ab", 2);
    assert_int_equal(be32(a.data + 26), UINT32_MAX); /* NULL */
    assert_int_equal(be32(a.data + 30), 0);          /* empty, not NULL */
    rp_pg_binarray_cleanup(&a);
    assert_null(a.data);
}

static void test_bytes_kept_whole(void **state) {
    (void)state;
    static const char body[] = {'\0', '"', '\\', '{', '\xff'};
    rp_pg_binarray a;
    rp_pg_binarray_begin(&a, RP_PG_OID_BYTEA, 1);
    rp_pg_binarray_add(&a, body, sizeof body);
    assert_true(rp_pg_binarray_ok(&a));
    assert_int_equal(be32(a.data + 8), 17);
    assert_int_equal(be32(a.data + 20), sizeof body);
    assert_memory_equal(a.data + 24, body, sizeof body);
    rp_pg_binarray_cleanup(&a);
}

static void test_refused(void **state) {
    (void)state;
    rp_pg_binarray a;
    rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, 2);
    rp_pg_binarray_add_str(&a, "x");
    assert_false(rp_pg_binarray_ok(&a)); /* one of two */
    rp_pg_binarray_add_str(&a, "y");
    assert_true(rp_pg_binarray_ok(&a));
    rp_pg_binarray_add_str(&a, "z");
    assert_false(rp_pg_binarray_ok(&a)); /* three of two */
    rp_pg_binarray_cleanup(&a);
    rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, 0);
    assert_false(rp_pg_binarray_ok(&a)); /* empty: never bound */
    rp_pg_binarray_cleanup(&a);
}

/* Reserved room: the elements are added without the buffer moving, and the
 * bytes are those of an array built without the reservation; a reservation
 * that cannot be had shows in rp_pg_binarray_ok. */
static void test_reserve(void **state) {
    (void)state;
    char text[300];
    memset(text, 'q', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    rp_pg_binarray a, b;
    rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, 250);
    rp_pg_binarray_begin(&b, RP_PG_OID_TEXT, 250);
    rp_pg_binarray_reserve(&a, 250 * (4 + strlen(text)));
    const char *before = a.data;
    for (int i = 0; i < 250; i++) {
        rp_pg_binarray_add(&a, text, strlen(text));
        rp_pg_binarray_add_str(&b, text);
    }
    assert_ptr_equal(a.data, before); /* never reallocated */
    assert_true(rp_pg_binarray_ok(&a));
    assert_true(rp_pg_binarray_ok(&b));
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    rp_pg_binarray_cleanup(&a);
    rp_pg_binarray_cleanup(&b);
    rp_pg_binarray_begin(&a, RP_PG_OID_TEXT, 1);
    rp_pg_binarray_reserve(&a, SIZE_MAX - 8);
    rp_pg_binarray_add_str(&a, "x");
    assert_false(rp_pg_binarray_ok(&a));
    rp_pg_binarray_cleanup(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_bytes_kept_whole),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
