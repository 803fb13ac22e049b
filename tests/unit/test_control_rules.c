/* The control protocol's decisions (core/rp_control.h): who may ask, where
 * a reply may go, the size, redeliveries, the reap rate, the answer's route
 * and the refusals' texts. Table-driven: each row is one rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_control.h"

static rp_config_pattern pattern(const char *text) {
    int err;
    PCRE2_SIZE off;
    rp_config_pattern p = {(char *)text, NULL};
    p.code = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(p.code);
    return p;
}

static rp_control_envelope envelope(const char *user, const char *reply_to) {
    rp_control_envelope e;
    memset(&e, 0, sizeof e);
    if (user) {
        e.has_user = true;
        snprintf(e.user, sizeof e.user, "%s", user);
    }
    if (reply_to) snprintf(e.reply_to, sizeof e.reply_to, "%s", reply_to);
    e.body = (rp_bytes){(const uint8_t *)"{}", 2};
    e.body_size = 2;
    return e;
}

/* ---- admission ----------------------------------------------------------- */

static void test_admit(void **state) {
    (void)state;
    rp_config_pattern replies = pattern("^vibey\\.replies\\.");
    char *anyone[] = {"*"};
    char *alice_bob[] = {"alice", "bob"};
    rp_config_strlist none = {NULL, 0}, star = {anyone, 1}, two = {alice_bob, 2};
    static const struct {
        const char *name;
        int users; /* 0 none, 1 "*", 2 alice and bob */
        const char *own;
        const char *user;
        const char *reply_to;
        bool truncated;
        rp_control_admission want;
    } rows[] = {
        {"own user, empty list", 0, "reaper", "reaper", "", false, RP_CONTROL_ADMIT},
        {"other user, empty list", 0, "reaper", "alice", "", false, RP_CONTROL_REFUSE_USER},
        {"own user unknown", 0, NULL, "reaper", "", false, RP_CONTROL_REFUSE_USER},
        {"no user_id, empty list", 0, "reaper", NULL, "", false, RP_CONTROL_REFUSE_NO_USER},
        {"no user_id, star", 1, "reaper", NULL, "", false, RP_CONTROL_REFUSE_NO_USER},
        {"anyone with star", 1, "reaper", "mallory", "", false, RP_CONTROL_ADMIT},
        {"listed", 2, "reaper", "bob", "", false, RP_CONTROL_ADMIT},
        {"not listed (own user too)", 2, "reaper", "reaper", "", false, RP_CONTROL_REFUSE_USER},
        {"direct reply-to", 2, NULL, "alice", "amq.rabbitmq.reply-to", false, RP_CONTROL_ADMIT},
        {"direct reply-to, pseudo queue", 2, NULL, "alice",
         "amq.rabbitmq.reply-to.g1h2AA==.abc", false, RP_CONTROL_ADMIT},
        {"direct reply-to look-alike", 2, NULL, "alice", "amq.rabbitmq.reply-tox", false,
         RP_CONTROL_REFUSE_REPLY_TO},
        {"reply queue pattern", 2, NULL, "alice", "vibey.replies.1", false, RP_CONTROL_ADMIT},
        {"other queue", 2, NULL, "alice", "vibey.orders", false, RP_CONTROL_REFUSE_REPLY_TO},
        {"sender checked first", 2, NULL, "eve", "vibey.orders", true, RP_CONTROL_REFUSE_USER},
        {"reply_to before size", 2, NULL, "alice", "vibey.orders", true,
         RP_CONTROL_REFUSE_REPLY_TO},
        {"too large", 2, NULL, "alice", "", true, RP_CONTROL_TOO_LARGE},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        rp_control_rules rules = {
            .allowed_users = rows[i].users == 0 ? &none : rows[i].users == 1 ? &star : &two,
            .own_user = rows[i].own,
            .reply_queue_pattern = &replies,
        };
        rp_control_envelope e = envelope(rows[i].user, rows[i].reply_to);
        e.truncated = rows[i].truncated;
        e.body_size = rows[i].truncated ? 70000 : 2;
        char why[128] = "untouched";
        rp_control_admission got = rp_control_admit(&rules, &e, why, sizeof why);
        if (got != rows[i].want) fail_msg("%s: got %d, want %d", rows[i].name, got, rows[i].want);
        if (got == RP_CONTROL_TOO_LARGE)
            assert_string_equal(why, "the request body is 70000 bytes; the limit is 65536");
        else
            assert_string_equal(why, "untouched");
    }
    pcre2_code_free(replies.code);
}

static void test_admission_strings(void **state) {
    (void)state;
    static const struct {
        rp_control_admission a;
        bool silent;
        const char *text;
    } rows[] = {
        {RP_CONTROL_ADMIT, false, ""},
        {RP_CONTROL_REFUSE_NO_USER, true, "control request refused: no user_id property"},
        {RP_CONTROL_REFUSE_USER, true,
         "control request refused: sender not allowed by control.allowed_users"},
        {RP_CONTROL_REFUSE_REPLY_TO, true,
         "control request refused: reply_to is neither direct reply-to nor matched by "
         "control.reply_queue_pattern"},
        {RP_CONTROL_TOO_LARGE, false, "control request refused: too large"},
    };
    /* Every value has its row (the table is complete). */
    assert_int_equal(RP_ARRAY_LEN(rows), RP_CONTROL_ADMISSION_COUNT_);
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        assert_string_equal(rp_control_admission_string(rows[i].a), rows[i].text);
        assert_int_equal(rp_control_admission_silent(rows[i].a), rows[i].silent);
    }
    assert_string_equal(rp_control_admission_string(RP_CONTROL_ADMISSION_COUNT_), "unknown");
}

/* ---- redeliveries -------------------------------------------------------- */

static void test_identity(void **state) {
    (void)state;
    rp_control_envelope a = envelope("alice", "amq.rabbitmq.reply-to"), b = a;
    b.body = (rp_bytes){(const uint8_t *)"{ }", 3};
    /* Without message_id, every part counts. */
    assert_true(rp_control_identity(&a) != rp_control_identity(&b));
    rp_control_envelope c = a;
    c.reply_to[0] = '\0';
    assert_true(rp_control_identity(&a) != rp_control_identity(&c));
    rp_control_envelope d = a;
    d.has_correlation_id = true;
    assert_true(rp_control_identity(&a) != rp_control_identity(&d));
    rp_control_envelope e = a;
    snprintf(e.user, sizeof e.user, "bob");
    assert_true(rp_control_identity(&a) != rp_control_identity(&e));
    /* A message_id is the identity: the rest no longer counts. */
    a.message_id = b.message_id = (rp_bytes){(const uint8_t *)"m-1", 3};
    assert_int_equal(rp_control_identity(&a), rp_control_identity(&b));
    rp_control_envelope f = a;
    f.message_id = (rp_bytes){(const uint8_t *)"m-2", 3};
    assert_true(rp_control_identity(&a) != rp_control_identity(&f));
    /* The same envelope, the same identity. */
    rp_control_envelope g = envelope("alice", "amq.rabbitmq.reply-to");
    rp_control_envelope h = envelope("alice", "amq.rabbitmq.reply-to");
    assert_int_equal(rp_control_identity(&g), rp_control_identity(&h));
}

static void test_redelivered_too_often(void **state) {
    (void)state;
    rp_redelivery t;
    rp_redelivery_init(&t);
    unsigned n = 99;
    /* A first delivery is not counted. */
    for (int i = 0; i < 10; i++) {
        assert_false(rp_control_redelivered_too_often(&t, 42, false, &n));
        assert_int_equal(n, 0);
    }
    /* Redeliveries 1..3 are answered normally, the 4th is given up. */
    static const struct {
        unsigned count;
        bool too_often;
    } rows[] = {{1, false}, {2, false}, {3, false}, {4, true}, {5, true}};
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        assert_int_equal(rp_control_redelivered_too_often(&t, 42, true, &n), rows[i].too_often);
        assert_int_equal(n, rows[i].count);
    }
    /* Another request has its own count; a forgotten one starts again. */
    assert_false(rp_control_redelivered_too_often(&t, 43, true, &n));
    assert_int_equal(n, 1);
    rp_redelivery_forget(&t, 42);
    assert_false(rp_control_redelivered_too_often(&t, 42, true, &n));
    assert_int_equal(n, 1);
    assert_non_null(strstr(RP_CONTROL_REDELIVERED_MESSAGE, "more than 3 times"));
}

/* ---- senders ------------------------------------------------------------- */

static void test_tell_once(void **state) {
    (void)state;
    static rp_control_senders t;
    memset(&t, 0, sizeof t);
    static const struct {
        const char *user;
        rp_control_admission a;
        bool tell;
    } rows[] = {
        {"eve", RP_CONTROL_REFUSE_USER, true},
        {"eve", RP_CONTROL_REFUSE_USER, false},
        {"eve", RP_CONTROL_REFUSE_REPLY_TO, true}, /* its own flag */
        {"eve", RP_CONTROL_REFUSE_REPLY_TO, false},
        {"mallory", RP_CONTROL_REFUSE_USER, true},  /* per sender */
        {NULL, RP_CONTROL_REFUSE_NO_USER, true},
        {NULL, RP_CONTROL_REFUSE_NO_USER, false},
        {"", RP_CONTROL_REFUSE_NO_USER, false},    /* no user is "" */
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++)
        if (rp_control_tell_once(&t, rows[i].user, rows[i].a) != rows[i].tell)
            fail_msg("row %zu: want %d", i, rows[i].tell);
}

static void test_senders_bounded(void **state) {
    (void)state;
    static rp_control_senders t;
    memset(&t, 0, sizeof t);
    char name[32];
    for (int i = 0; i < RP_CONTROL_SENDERS; i++) {
        snprintf(name, sizeof name, "user%d", i);
        assert_true(rp_control_tell_once(&t, name, RP_CONTROL_REFUSE_USER));
    }
    /* All remembered ... */
    assert_false(rp_control_tell_once(&t, "user0", RP_CONTROL_REFUSE_USER));
    assert_false(rp_control_tell_once(&t, "user255", RP_CONTROL_REFUSE_USER));
    /* ... until one more: the oldest slot is reused. */
    assert_true(rp_control_tell_once(&t, "newcomer", RP_CONTROL_REFUSE_USER));
    assert_true(rp_control_tell_once(&t, "user0", RP_CONTROL_REFUSE_USER));
    assert_string_equal(rp_control_sender_of(&t, "newcomer")->user, "newcomer");
}

static void test_reap_rate(void **state) {
    (void)state;
    static rp_control_senders t;
    memset(&t, 0, sizeof t);
    static const struct {
        const char *user;
        int64_t rate, now;
        bool too_soon;
        const char *why;
    } rows[] = {
        {"alice", 10, 1000, false, NULL},
        {"alice", 10, 1001, true,
         "one reap per 10 s per user (control.reap_rate_seconds); ask again in 10 s"},
        {"alice", 10, 10999, true,
         "one reap per 10 s per user (control.reap_rate_seconds); ask again in 1 s"},
        {"bob", 10, 10999, false, NULL}, /* per user */
        {"alice", 10, 11000, false, NULL},
        {"alice", 10, 11500, true,
         "one reap per 10 s per user (control.reap_rate_seconds); ask again in 10 s"},
        {"alice", 0, 11600, false, NULL}, /* 0: no limit */
        {"alice", 0, 11601, false, NULL},
        {"alice", 0, 500, false, NULL}, /* no limit, whatever the clock says */
        {"alice", 60, 11602, true,
         "one reap per 60 s per user (control.reap_rate_seconds); ask again in 49 s"},
        {NULL, 10, 0, false, NULL},
        {"", 10, 5, true,
         "one reap per 10 s per user (control.reap_rate_seconds); ask again in 10 s"},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        char why[200] = "";
        bool got = rp_control_reap_too_soon(&t, rows[i].user, rows[i].rate, rows[i].now, why,
                                            sizeof why);
        if (got != rows[i].too_soon) fail_msg("row %zu: want %d", i, rows[i].too_soon);
        if (rows[i].why) assert_string_equal(why, rows[i].why);
    }
}

/* ---- answers ------------------------------------------------------------- */

static void test_route_answer(void **state) {
    (void)state;
    static const struct {
        rp_choice choice;
        bool in_flight;
        rp_control_answer_route want;
    } rows[] = {
        {RP_CHOICE_REPLAY, false, RP_CONTROL_ANSWER_REPLAY},
        {RP_CHOICE_REPLAY, true, RP_CONTROL_ANSWER_REPLAY}, /* rp_replay_start refuses it */
        {RP_CHOICE_DISMISS, false, RP_CONTROL_ANSWER_STORE},
        {RP_CHOICE_DISMISS, true, RP_CONTROL_ANSWER_IN_FLIGHT},
        {RP_CHOICE_RETRY, false, RP_CONTROL_ANSWER_STORE},
        {RP_CHOICE_RETRY, true, RP_CONTROL_ANSWER_IN_FLIGHT},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++)
        assert_int_equal(rp_control_route_answer(rows[i].choice, rows[i].in_flight),
                         rows[i].want);
}

static void test_refusal_texts(void **state) {
    (void)state;
    static const struct {
        rp_status st;
        const char *answer, *gates;
    } rows[] = {
        {RP_ERR_NOT_FOUND, "no such gate", "listing gates failed"},
        {RP_ERR_CONFLICT, "this gate does not take that choice", "listing gates failed"},
        {RP_ERR_UNAVAILABLE, "the store is unreachable", "the store is unreachable"},
        {RP_ERR_INTERNAL, "answering the gate failed", "listing gates failed"},
        {RP_ERR_IO, "answering the gate failed", "listing gates failed"},
    };
    for (size_t i = 0; i < RP_ARRAY_LEN(rows); i++) {
        assert_string_equal(rp_control_answer_refusal(rows[i].st), rows[i].answer);
        assert_string_equal(rp_control_gates_refusal(rows[i].st), rows[i].gates);
    }
    rp_status code;
    const char *msg;
    rp_control_encode_failure(RP_ERR_TOO_LARGE, &code, &msg);
    assert_int_equal(code, RP_ERR_INTERNAL);
    assert_string_equal(msg, "the reply is too large to send; use reaperd --once");
    rp_control_encode_failure(RP_ERR_NOMEM, &code, &msg);
    assert_int_equal(code, RP_ERR_NOMEM);
    assert_string_equal(msg, "the reply could not be encoded");
}

static void test_busy_texts(void **state) {
    (void)state;
    char buf[400];
    /* 2026-01-02T03:04:05Z */
    rp_control_busy_text(buf, sizeof buf, 7, "reaperd-a", 1767323045000);
    assert_string_equal(buf, "gate 7 is being replayed by reaperd-a since 2026-01-02T03:04:05Z; "
                             "ask again for its outcome later");
    rp_control_busy_text(buf, sizeof buf, 7, NULL, 0);
    assert_string_equal(buf, "gate 7 is being replayed by another reaperd since an unknown "
                             "time; ask again for its outcome later");
    rp_control_in_flight_text(buf, sizeof buf, 12, "host-1:4242");
    assert_string_equal(buf, "gate 12 is being replayed by host-1:4242 (this reaperd); ask "
                             "again for its outcome later");
    /* A long claimer is cut, the advice kept whole. */
    char longname[600];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    rp_control_busy_text(buf, sizeof buf, 1, longname, 0);
    assert_int_equal(strlen(buf), 400 - 64 - 1 + strlen("; ask again for its outcome later"));
    assert_non_null(strstr(buf, "xxx; ask again for its outcome later"));
    rp_control_in_flight_text(buf, sizeof buf, 1, longname);
    assert_non_null(strstr(buf, "xxx (this reaperd); ask again for its outcome later"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_admission_strings),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_redelivered_too_often),
        cmocka_unit_test(test_tell_once),
        cmocka_unit_test(test_senders_bounded),
        cmocka_unit_test(test_reap_rate),
        cmocka_unit_test(test_route_answer),
        cmocka_unit_test(test_refusal_texts),
        cmocka_unit_test(test_busy_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
