/* The replay decision: undoing the untrusted rendering, and refusing what
 * is not owned, cut or not whole (core/rp_replay.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rp_gate.h"
#include "rp_replay.h"
#include "rp_untrusted.h"

static pcre2_code *compile(const char *pattern) {
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    assert_non_null(re);
    return re;
}

/* Renders bytes and parses them back: the same bytes. */
static void roundtrip(const char *s, size_t len) {
    char *shown = NULL, *back = NULL;
    const char *why = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)s, len}, &shown), RP_OK);
    assert_int_equal(rp_replay_origin_parse(shown, &back, &why), RP_OK);
    assert_int_equal(strlen(back), len);
    assert_memory_equal(back, s, len);
    free(shown);
    free(back);
}

static void test_origin_roundtrip(void **state) {
    (void)state;
    roundtrip("vibey.orders", 12);
    roundtrip("a\"b\\c", 5);
    roundtrip("tab\there\nnew\rcr", 15);
    roundtrip("bell\x07 del\x7f", 10);
    roundtrip("bad\xff\xfe utf8", 10);
    roundtrip("caf\xc3\xa9 \xe2\x80\xae rlo", 13); /* U+202E is escaped \u202E */
    /* Every byte but NUL, 200 at a time (the rendering's bound). */
    char all[255];
    for (int i = 0; i < 255; i++) all[i] = (char)(i + 1);
    roundtrip(all, 200);
    roundtrip(all + 55, 200);
}

static void test_origin_refused(void **state) {
    (void)state;
    char *name = NULL;
    const char *why = NULL;
    const char *bad[] = {
        NULL, "", "\"", "vibey.x", "\"vibey.x", "vibey.x\"", "\"a\"b\"", "\"a\\\"",
        "\"a\\q\"", "\"\\x4\"", "\"\\xZZ\"", "\"\\u12\"", "\"\\u00zz\"", "\"\"",
        "\"\\u0000\"", "\"a\\x00b\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(rp_replay_origin_parse(bad[i], &name, &why), RP_ERR_INVALID);
        assert_null(name);
        assert_non_null(why);
    }
    /* A cut rendering: 300 characters shown as 200 and "...". */
    char longname[301];
    memset(longname, 'a', 300);
    longname[300] = '\0';
    memcpy(longname, "vibey.", 6);
    char *shown = NULL;
    assert_int_equal(rp_untrusted_render((rp_bytes){(const uint8_t *)longname, 300}, &shown), RP_OK);
    assert_int_equal(rp_replay_origin_parse(shown, &name, &why), RP_ERR_INVALID);
    assert_non_null(strstr(why, "cut"));
    free(shown);
    /* A value that itself ends in "..." inside the quotes is whole. */
    assert_int_equal(rp_replay_origin_parse("\"vibey.x...\"", &name, &why), RP_OK);
    assert_string_equal(name, "vibey.x...");
    free(name);
}

static void test_decide(void **state) {
    (void)state;
    pcre2_code *owned = compile("^vibey\\.");
    char *q = NULL;
    const char *why = NULL;
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", false, owned, &q, &why), RP_OK);
    assert_string_equal(q, "vibey.orders");
    free(q);
    /* Forged headers naming a foreign queue. */
    assert_int_equal(rp_replay_decide("\"celery\"", false, owned, &q, &why), RP_ERR_CONFLICT);
    assert_null(q);
    assert_non_null(strstr(why, "not owned"));
    /* A name that only looks owned once unescaped wrongly. */
    assert_int_equal(rp_replay_decide("\"x\\nvibey.orders\"", false, owned, &q, &why),
                     RP_ERR_CONFLICT);
    /* Not stored whole. */
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", true, owned, &q, &why), RP_ERR_CONFLICT);
    assert_non_null(strstr(why, "whole"));
    /* Not a rendering. */
    assert_int_equal(rp_replay_decide("vibey.orders", false, owned, &q, &why), RP_ERR_CONFLICT);
    /* No pattern: nothing is owned. */
    assert_int_equal(rp_replay_decide("\"vibey.orders\"", false, NULL, &q, &why), RP_ERR_CONFLICT);
    pcre2_code_free(owned);
}

/* The expiration the broker takes: decimal digits, 0..4294967295. */
static void test_expiration(void **state) {
    (void)state;
#define EXP(s) rp_replay_expiration_valid(s, strlen(s))
    assert_true(EXP("0"));
    assert_true(EXP("60000"));
    assert_true(EXP("4294967295"));
    assert_false(EXP("4294967296"));
    assert_false(EXP("99999999999"));
    assert_false(EXP(""));
    assert_false(EXP("-1"));
    assert_false(EXP("+5"));
    assert_false(EXP("1.5"));
    assert_false(EXP(" 5"));
    assert_false(EXP("soon"));
    assert_false(rp_replay_expiration_valid("12\0003", 4));
    assert_false(rp_replay_expiration_valid(NULL, 0));
#undef EXP
}

/* reaper's own queues are never a destination, whatever the pattern. */
static void test_reserved(void **state) {
    (void)state;
    const char *own[] = {"vibey.reap.control", NULL, "vibey.reap.tap"};
    assert_true(rp_replay_reserved_queue("vibey.reap.control", own, 3));
    assert_true(rp_replay_reserved_queue("vibey.reap.tap", own, 3));
    assert_true(rp_replay_reserved_queue("amq.gen-JzTY20BRgKO-HjmUJj0wLg", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.reap.control2", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.orders", own, 3));
    assert_false(rp_replay_reserved_queue("vibey.orders", NULL, 0));
}

/* A replay's claim on a gate (rp_gate.h): live until the bound has passed
 * on the store's clock, stale from then on, whatever the claimer. */
static void test_claim_judge(void **state) {
    (void)state;
    const rp_time_ms t = 1700000000000;
    assert_int_equal(rp_gate_claim_judge(false, t, t + 999999, 60), RP_GATE_CLAIM_NONE);
    assert_int_equal(rp_gate_claim_judge(true, t, t, 60), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 59999, 60), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 60000, 60), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 86400000, 60), RP_GATE_CLAIM_STALE);
    /* A claim "from the future" (a clock that went back) is live. */
    assert_int_equal(rp_gate_claim_judge(true, t + 5000, t, 1), RP_GATE_CLAIM_LIVE);
    assert_int_equal(rp_gate_claim_judge(true, t, t + 1000, 1), RP_GATE_CLAIM_STALE);
    /* No bound: every claim is stale; extremes do not overflow. */
    assert_int_equal(rp_gate_claim_judge(true, t, t, 0), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, INT64_MIN, INT64_MAX, 60), RP_GATE_CLAIM_STALE);
    assert_int_equal(rp_gate_claim_judge(true, 0, INT64_MAX - 1, INT64_MAX), RP_GATE_CLAIM_LIVE);
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_NONE), "none");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_LIVE), "live");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_STALE), "stale");
    assert_string_equal(rp_gate_claim_state_string(RP_GATE_CLAIM_STATE_COUNT_), "unknown");
}

/* ---- a replay's states and checks (moved from cmd/reaperd/replay.c) ------ */

static void test_claim_texts(void **state) {
    (void)state;
    char buf[600];
    rp_replay_claim_text(buf, sizeof buf, 9, "host-1:77", 1767323045000);
    assert_string_equal(buf, "gate 9 is being replayed by host-1:77 since 2026-01-02T03:04:05Z");
    rp_replay_claim_text(buf, sizeof buf, 9, "", -5);
    assert_string_equal(buf, "gate 9 is being replayed by another reaperd since an unknown time");
    rp_replay_claim_text(buf, 20, 9, "host-1:77", 0);
    assert_string_equal(buf, "gate 9 is being rep");
    rp_replay_takeover_text(buf, sizeof buf, 9, "host-1:77", 1767323045000);
    assert_string_equal(buf,
                        "the replay of gate 9 claimed by host-1:77 since 2026-01-02T03:04:05Z was "
                        "never settled (that reaperd stopped or hung between publishing and "
                        "settling): the message may have been published once already; the stale "
                        "claim was taken over and recorded on the ledger (GateClaimTakenOver)");
}

static void test_state(void **state) {
    (void)state;
    static const struct {
        bool answered;
        rp_gate_claim_state claim;
        rp_replay_state want;
        rp_status st;
        const char *msg;
    } rows[] = {
        {true, RP_GATE_CLAIM_NONE, RP_REPLAY_STATE_ANSWERED, RP_OK, ""},
        {true, RP_GATE_CLAIM_LIVE, RP_REPLAY_STATE_ANSWERED, RP_OK, ""},
        {true, RP_GATE_CLAIM_STALE, RP_REPLAY_STATE_ANSWERED, RP_OK, ""},
        {false, RP_GATE_CLAIM_NONE, RP_REPLAY_STATE_OPEN, RP_OK, ""},
        {false, RP_GATE_CLAIM_LIVE, RP_REPLAY_STATE_BUSY, RP_ERR_BUSY,
         "gate 3 is being replayed by r2 since 2026-01-02T03:04:05Z; ask again for its "
         "outcome later"},
        {false, RP_GATE_CLAIM_STALE, RP_REPLAY_STATE_TAKEN_OVER, RP_ERR_CONFLICT,
         "not replayed: the replay of gate 3 claimed by r2 since 2026-01-02T03:04:05Z was never "
         "settled (that reaperd stopped or hung between publishing and settling): the message "
         "may have been published once already; the stale claim was taken over and recorded on "
         "the ledger (GateClaimTakenOver). The claim is released and the gate stays open: look "
         "for the message on its origin queue, then answer again (replay publishes it, dismiss "
         "closes the gate)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rp_replay_state s = rp_replay_state_of(rows[i].answered, rows[i].claim);
        assert_int_equal(s, rows[i].want);
        char msg[600] = "x";
        assert_int_equal(rp_replay_state_refusal(s, 3, "r2", 1767323045000, msg, sizeof msg),
                         rows[i].st);
        assert_string_equal(msg, rows[i].msg);
    }
}

static void test_check(void **state) {
    (void)state;
    pcre2_code *owned = compile("^vibey\\.");
    const char *own[] = {"vibey.reap.control", "vibey.reap.tap"};
    static const struct {
        const char *name;
        rp_gate_kind kind;
        bool has_dl;
        const char *not_replayable;
        const char *origin;
        bool whole;
        const char *vhost;
        bool ours;
        rp_status st;
        const char *msg; /* the whole reason, or the queue for RP_OK */
    } rows[] = {
        {"replayable", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"vibey.orders\"", true, "/", true,
         RP_OK, "vibey.orders"},
        {"vhost unknown", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"vibey.orders\"", true, NULL,
         false, RP_OK, "vibey.orders"},
        {"kind", RP_GATE_DELIVERY_EXHAUSTED, true, NULL, "\"vibey.orders\"", true, "/", true,
         RP_ERR_CONFLICT, "this gate does not take that choice"},
        {"no dead letter", RP_GATE_BUS_DEAD_LETTERED, false, NULL, "\"vibey.orders\"", true, "/",
         true, RP_ERR_CONFLICT, "no dead letter is stored for this gate"},
        {"kept without headers", RP_GATE_BUS_DEAD_LETTERED, true, "its headers were 9 bytes",
         "\"vibey.orders\"", true, "/", true, RP_ERR_CONFLICT,
         "not replayed: its headers were 9 bytes"},
        {"not owned", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"celery\"", true, "/", true,
         RP_ERR_CONFLICT,
         "not replayed: the origin queue named by the message's (untrusted) dead-letter headers "
         "is not owned by reaper (owned_queue_pattern): reaper replays only to queues it owns "
         "(origin queue \"celery\")"},
        {"not whole", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"vibey.orders\"", false, "/", true,
         RP_ERR_CONFLICT,
         "not replayed: the message's body (or its properties) was not stored whole, so it "
         "cannot be replayed byte for byte (origin queue \"vibey.orders\")"},
        {"own queue", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"vibey.reap.tap\"", true, "/",
         true, RP_ERR_CONFLICT,
         "not replayed: the origin queue \"vibey.reap.tap\" is one of reaper's own queues "
         "(control, tap or events), never a replay destination whatever owned_queue_pattern "
         "says"},
        {"other vhost", RP_GATE_BUS_DEAD_LETTERED, true, NULL, "\"vibey.orders\"", true, "/prod",
         false, RP_ERR_CONFLICT,
         "not replayed: the dead letter was found on vhost /prod, and reaperd publishes only on "
         "the vhost of broker.url and those of broker.vhosts"},
        {"kind before the rest", RP_GATE_DELIVERY_EXHAUSTED, false, "x", "\"celery\"", false,
         "/prod", false, RP_ERR_CONFLICT, "this gate does not take that choice"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rp_replay_facts f = {
            .kind = rows[i].kind,
            .has_dead_letter = rows[i].has_dl,
            .not_replayable = rows[i].not_replayable,
            .origin_queue = rows[i].origin,
            .stored_whole = rows[i].whole,
            .owned = owned,
            .own_queues = own,
            .n_own = 2,
            .vhost = rows[i].vhost,
            .vhost_is_ours = rows[i].ours,
        };
        char *queue = (char *)"junk";
        char msg[600];
        rp_status st = rp_replay_check(&f, &queue, msg, sizeof msg);
        if (st != rows[i].st) fail_msg("%s: status %d, want %d", rows[i].name, st, rows[i].st);
        if (st == RP_OK) {
            assert_string_equal(queue, rows[i].msg);
            free(queue);
        } else {
            assert_null(queue);
            assert_string_equal(msg, rows[i].msg);
        }
    }
    char msg[600];
    assert_int_equal(rp_replay_restore_refusal(RP_ERR_INVALID, "bad json", msg, sizeof msg),
                     RP_ERR_CONFLICT);
    assert_string_equal(msg, "not replayed: the stored properties cannot be restored: bad json");
    assert_int_equal(rp_replay_restore_refusal(RP_ERR_NOMEM, "x", msg, sizeof msg),
                     RP_ERR_INTERNAL);
    pcre2_code_free(owned);
}

#define B(s) ((rp_bytes){(const uint8_t *)(s), sizeof(s) - 1})
static void test_strip(void **state) {
    (void)state;
    static const rp_bytes none = {NULL, 0};
    const struct {
        rp_bytes user_id, expiration;
        const char *own;
        bool strip_user, strip_exp;
        const char *note;
    } rows[] = {
        {none, none, "reaper", false, false, ""},
        {B("reaper"), B("60000"), "reaper", false, false, ""},
        {B("reaper2"), none, "reaper", true, false,
         "user_id \"reaper2\" was left out of the replay: the broker accepts only reaperd's own "
         "user (reaper) there; the stored dead letter keeps it."},
        {B("reape"), none, "reaper", true, false,
         "user_id \"reape\" was left out of the replay: the broker accepts only reaperd's own "
         "user (reaper) there; the stored dead letter keeps it."},
        {B("reaper"), none, NULL, true, false,
         "user_id \"reaper\" was left out of the replay: the broker accepts only reaperd's own "
         "user (unknown) there; the stored dead letter keeps it."},
        {none, B("-1"), "reaper", false, true,
         "expiration \"-1\" was left out of the replay: the broker takes only a non-negative "
         "integer of milliseconds; the stored dead letter keeps it."},
        {B("eve"), B("soon"), "reaper", true, true,
         "user_id \"eve\" was left out of the replay: the broker accepts only reaperd's own user "
         "(reaper) there; the stored dead letter keeps it. expiration \"soon\" was left out of "
         "the replay: the broker takes only a non-negative integer of milliseconds; the stored "
         "dead letter keeps it."},
        {B(""), B(""), "reaper", true, true,
         "user_id \"\" was left out of the replay: the broker accepts only reaperd's own user "
         "(reaper) there; the stored dead letter keeps it. expiration \"\" was left out of the "
         "replay: the broker takes only a non-negative integer of milliseconds; the stored dead "
         "letter keeps it."},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char note[600] = "stale";
        rp_replay_strip s =
            rp_replay_strip_decide(rows[i].user_id, rows[i].expiration, rows[i].own, note,
                                   sizeof note);
        if (s.user_id != rows[i].strip_user || s.expiration != rows[i].strip_exp)
            fail_msg("row %zu: strip %d %d", i, s.user_id, s.expiration);
        assert_string_equal(note, rows[i].note);
    }
}
#undef B

static void test_after_publish(void **state) {
    (void)state;
    static const struct {
        rp_replay_publish o;
        rp_replay_next next;
        rp_status st;
        const char *msg;
    } rows[] = {
        {RP_REPLAY_PUBLISH_CONFIRMED, RP_REPLAY_NEXT_SETTLE, RP_OK, NULL},
        {RP_REPLAY_PUBLISH_RETURNED, RP_REPLAY_NEXT_RELEASE, RP_ERR_CONFLICT,
         "not replayed: the broker could not route the message to queue vibey.q (does it "
         "exist?); nothing was delivered and the gate stays open"},
        {RP_REPLAY_PUBLISH_REFUSED, RP_REPLAY_NEXT_RELEASE, RP_ERR_CONFLICT,
         "not replayed: the broker refused the message for queue vibey.q (406 PRECONDITION); "
         "nothing was delivered and the gate stays open"},
        {RP_REPLAY_PUBLISH_NACKED, RP_REPLAY_NEXT_RELEASE, RP_ERR_UNAVAILABLE,
         "not replayed: the broker refused the message for queue vibey.q (nack: full, or an "
         "internal error); the gate stays open"},
        {RP_REPLAY_PUBLISH_DROPPED, RP_REPLAY_NEXT_CANCEL, RP_OK, NULL},
        {RP_REPLAY_PUBLISH_LOST, RP_REPLAY_NEXT_KEEP_CLAIM, RP_ERR_UNAVAILABLE,
         "the broker connection was lost before the broker confirmed the message for vibey.q; "
         "it may or may not have been delivered; the gate stays open and claimed by this replay "
         "until control.replay_claim_seconds pass, then the next answer reports it"},
    };
    assert_int_equal(sizeof rows / sizeof rows[0], RP_REPLAY_PUBLISH_COUNT_);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        rp_status st = RP_OK;
        char msg[600] = "";
        assert_int_equal(rp_replay_after_publish(rows[i].o, "vibey.q", "406 PRECONDITION", &st,
                                                 msg, sizeof msg),
                         rows[i].next);
        assert_int_equal(st, rows[i].st);
        if (rows[i].msg) assert_string_equal(msg, rows[i].msg);
    }
}

static void test_settle_refusal(void **state) {
    (void)state;
    char msg[600];
    assert_int_equal(rp_replay_settle_refusal(RP_OK, 4, "q", NULL, 0, msg, sizeof msg), RP_OK);
    assert_string_equal(msg, "");
    assert_int_equal(rp_replay_settle_refusal(RP_ERR_BUSY, 4, "vibey.q", "r2", 1767323045000, msg,
                                              sizeof msg),
                     RP_ERR_CONFLICT);
    assert_string_equal(msg, "the message was published to vibey.q and confirmed, but this "
                             "reaperd's claim on the gate was taken over meanwhile (gate 4 is "
                             "being replayed by r2 since 2026-01-02T03:04:05Z), so the gate was "
                             "not settled by this replay");
    assert_int_equal(rp_replay_settle_refusal(RP_ERR_UNAVAILABLE, 4, "vibey.q", NULL, 0, msg,
                                              sizeof msg),
                     RP_ERR_UNAVAILABLE);
    assert_non_null(strstr(msg, "could not be settled (unavailable)"));
    assert_int_equal(rp_replay_settle_refusal(RP_ERR_IO, 4, "vibey.q", NULL, 0, msg, sizeof msg),
                     RP_ERR_INTERNAL);
    assert_non_null(strstr(msg, "the message was published to vibey.q and confirmed, but the "
                                "gate could not be settled ("));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_origin_roundtrip),
        cmocka_unit_test(test_origin_refused),
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_expiration),
        cmocka_unit_test(test_reserved),
        cmocka_unit_test(test_claim_judge),
        cmocka_unit_test(test_claim_texts),
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_after_publish),
        cmocka_unit_test(test_settle_refusal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
