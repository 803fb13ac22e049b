/* reaperctl's text output (cmd/reaperctl/escape.h, print.h, table.h):
 * whatever a reply holds - queue names, dead-letter reasons, notes, the
 * daemon's messages - reaches the terminal with every control character
 * escaped, so ESC [ 2 J or a carriage return cannot clear the screen or
 * rewrite a line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "escape.h"
#include "print.h"

/* Nothing below 0x20 but the newlines that end lines, no DEL, no C1. */
static void assert_terminal_safe(const char *out) {
    for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
        if (*p == '\n') continue;
        if (*p < 0x20 || *p == 0x7f) fail_msg("control byte 0x%02x in:\n%s", *p, out);
        if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) fail_msg("C1 control in:\n%s", out);
    }
}

static char *capture(void (*fn)(FILE *, const json_t *), const json_t *j) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f, j);
    fclose(f);
    return buf;
}

static void rp_ctl_print_gates_now0(FILE *f, const json_t *r) { rp_ctl_print_gates(f, r, 0); }

static void test_escaped(void **state) {
    (void)state;
    struct {
        const char *in, *want;
    } cases[] = {
        {"vibey.orders", "vibey.orders"},
        {"a\x1b[2Jb", "a\\x1b[2Jb"},
        {"line\rover", "line\\rover"},
        {"two\nlines\ttab", "two\\nlines\\ttab"},
        {"^vibey\\.", "^vibey\\."}, /* a backslash is kept as it is */
        {"del\x7f", "del\\x7f"},
        {"c1\xc2\x9b" "2J", "c1\\x9b2J"},         /* U+009B, the one-byte CSI */
        {"bidi\xe2\x80\xae", "bidi\\u{202e}"},    /* right-to-left override */
        {"bad\xff\xfe", "bad\\xff\\xfe"},         /* not UTF-8 */
        {"caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"}, /* printable UTF-8 kept */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *e = rp_ctl_escaped(cases[i].in);
        assert_non_null(e);
        assert_string_equal(e, cases[i].want);
        free(e);
    }
    char *dash = rp_ctl_escaped(NULL);
    assert_string_equal(dash, "-");
    free(dash);
}

static void test_gates_table(void **state) {
    (void)state;
    json_t *r = json_pack("{s:[{s:i, s:s, s:s, s:s, s:s, s:s, s:[s,s], s:s, s:s, s:s}]}", "gates",
                          "id", 7, "kind", "bus_dead_lettered", "project", "p\x1b]0;title\x07",
                          "vhost", "tenant/\x1b[2Jb",
                          "queue", "vibey.q\x1b[2J.dlq", "origin_queue", "\"vibey.q\rX\"",
                          "reason", "\"rejected\x1b[31m\"", "choices", "replay", "dismiss",
                          "answer", "dismiss", "answered_by", "eve\r\nroot");
    assert_non_null(r);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rp_ctl_print_gates(f, r, 0);
    fclose(f);
    assert_terminal_safe(buf);
    assert_non_null(strstr(buf, "vibey.q\\x1b[2J.dlq"));
    assert_non_null(strstr(buf, "\"vibey.q\\rX\""));
    assert_non_null(strstr(buf, "eve\\r\\nroot"));
    /* The VHOST column (issue #19), escaped like the others. */
    assert_non_null(strstr(buf, "VHOST"));
    assert_non_null(strstr(buf, "tenant/\\x1b[2Jb"));
    free(buf);
    json_decref(r);
}

static void test_gates_page_line(void **state) {
    (void)state;
    json_t *r = json_pack("{s:[{s:i, s:s}], s:i, s:i}", "gates", "id", 9, "kind",
                          "bus_dead_lettered", "total", 250, "next_after", 9);
    char *out = capture(rp_ctl_print_gates_now0, r);
    assert_non_null(strstr(out, "1 shown of 250 matching; the next page: --after 9\n"));
    free(out);
    json_object_set_new(r, "next_after", json_null());
    json_object_set_new(r, "total", json_integer(1));
    out = capture(rp_ctl_print_gates_now0, r);
    assert_non_null(strstr(out, "1 shown of 1 matching\n"));
    free(out);
    /* A count that stopped at its cap says "at least". */
    json_object_set_new(r, "next_after", json_integer(9));
    json_object_set_new(r, "total", json_integer(10000));
    json_object_set_new(r, "total_capped", json_true());
    out = capture(rp_ctl_print_gates_now0, r);
    assert_non_null(strstr(out, "1 shown of 10,000+ matching; the next page: --after 9\n"));
    free(out);
    json_object_del(r, "total_capped");
    json_object_set_new(r, "next_after", json_null());
    /* A page past the last one: nothing shown, the count still said. */
    json_object_set_new(r, "gates", json_array());
    json_object_set_new(r, "total", json_integer(4));
    out = capture(rp_ctl_print_gates_now0, r);
    assert_string_equal(out, "no gates\n0 shown of 4 matching\n");
    free(out);
    /* An older reaperd says neither. */
    json_object_del(r, "total");
    out = capture(rp_ctl_print_gates_now0, r);
    assert_string_equal(out, "no gates\n");
    free(out);
    json_decref(r);
}

static void test_duration(void **state) {
    (void)state;
    static const struct {
        const char *in;
        bool ok;
        int64_t s;
    } cases[] = {
        {"90", true, 90},        {"90s", true, 90},     {"15m", true, 900},
        {"2h", true, 7200},      {"7d", true, 604800},  {"3650d", true, 315360000},
        {"3651d", false, 0},     {"0", false, 0},       {"0s", false, 0},
        {"", false, 0},          {"-5m", false, 0},     {"+5m", false, 0},
        {" 5m", false, 0},       {"5 m", false, 0},     {"5mm", false, 0},
        {"5w", false, 0},        {"m", false, 0},       {"99999999999999999999", false, 0},
        {"315360001", false, 0}, {"87600h", true, 315360000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t s = -1;
        bool ok = rp_ctl_duration_parse(cases[i].in, &s);
        if (ok != cases[i].ok || (ok && s != cases[i].s))
            fail_msg("\"%s\": got %s %lld", cases[i].in, ok ? "ok" : "refused", (long long)s);
    }
}

static void test_report_status_answer(void **state) {
    (void)state;
    json_t *rep = json_pack(
        "{s:b, s:b, s:[{s:s, s:s, s:s, s:s, s:s}], s:[s], s:[s], s:[{s:s, s:b, s:s}]}", "ok", 0,
        "dry_run", 0, "verdicts", "action", "SURFACED", "condition", "HOLDER_GONE", "source",
        "broker", "object", "vibey.\x1b[2J", "project", "x", "unreadable", "broker: \x1b[H gone",
        "notes", "note\rhidden", "policies", "name", "vibey-reap", "verified", 0, "detail",
        "refused (\x1b[8m)");
    char *out = capture(rp_ctl_print_report, rep);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "vibey.\\x1b[2J"));
    assert_non_null(strstr(out, "broker: \\x1b[H gone"));
    assert_non_null(strstr(out, "note\\rhidden"));
    free(out);
    json_decref(rep);

    /* The vhosts a policy was not verified in are named, escaped; the
     * verified ones are not; past three, a count. */
    rep = json_pack("{s:b, s:b, s:[], s:[], s:[], s:[{s:s, s:b, s:s, s:[{s:s, s:b}, {s:s, s:b}, "
                    "{s:s, s:b}, {s:s, s:b}, {s:s, s:b}]}]}",
                    "ok", 1, "dry_run", 0, "verdicts", "unreadable", "notes", "policies", "name",
                    "vibey-reap", "verified", 0, "detail", "2 vhosts", "vhosts", "vhost", "/",
                    "verified", 1, "vhost", "orders\x1b[2J", "verified", 0, "vhost", "b", "verified",
                    0, "vhost", "c", "verified", 0, "vhost", "d", "verified", 0);
    out = capture(rp_ctl_print_report, rep);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "NOT VERIFIED in orders\\x1b[2J, b, c +1 more"));
    free(out);
    json_decref(rep);
    rep = json_pack("{s:b, s:b, s:[], s:[], s:[], s:[{s:s, s:b, s:s, s:[{s:s, s:b}]}]}", "ok", 1,
                    "dry_run", 0, "verdicts", "unreadable", "notes", "policies", "name",
                    "vibey-reap", "verified", 1, "detail", "ok", "vhosts", "vhost", "/",
                    "verified", 1);
    out = capture(rp_ctl_print_report, rep);
    assert_non_null(strstr(out, "vibey-reap  verified"));
    free(out);
    json_decref(rep);

    json_t *st = json_pack("{s:s, s:s, s:s, s:s, s:i}", "version", "1\x1b[2J", "broker",
                           "up\r", "store", "up", "last_pass_at", "\x07", "open_sightings", 1);
    out = capture(rp_ctl_print_status, st);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "1\\x1b[2J"));
    free(out);
    json_decref(st);

    json_t *ans = json_pack("{s:i, s:s, s:s}", "gate", 3, "outcome", "replayed\x1b[2J", "choice",
                            "replay\r");
    out = capture(rp_ctl_print_answer, ans);
    assert_terminal_safe(out);
    assert_string_equal(out, "gate 3: replayed\\x1b[2J (choice replay\\r)\n");
    free(out);
    json_decref(ans);
}

/* Job triage: a job's project, kind, lease owner and payload are the
 * workers' text; the table, the job and the cancel line escape them. The
 * paging line says how to get the next page. */
static void test_jobs_output(void **state) {
    (void)state;
    json_t *page = json_pack("{s:[{s:i, s:s, s:s, s:s, s:i, s:i, s:s, s:s, s:s}], s:i, s:i}", "jobs",
                             "id", 41, "project", "p\x1b[2J", "kind", "k\rX", "state", "leased",
                             "attempts", 2, "max_attempts", 7, "lease_owner", "w\x1b]0;t\x07",
                             "lease_expires_at", "2024-05-01T12:05:00.000Z", "created_at",
                             "2024-05-01T11:00:00.000Z", "total", 9, "next_after", 41);
    assert_non_null(page);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rp_ctl_print_jobs(f, page, 1714564800000); /* 12:00: the lease has 5 min left */
    fclose(f);
    assert_terminal_safe(buf);
    assert_non_null(strstr(buf, "p\\x1b[2J"));
    assert_non_null(strstr(buf, "k\\rX"));
    assert_non_null(strstr(buf, "2/7"));
    assert_non_null(strstr(buf, "5m"));
    assert_non_null(strstr(buf, "1 shown, 9 match; more: --after 41"));
    free(buf);
    json_object_set_new(page, "next_after", json_null());
    json_object_set_new(page, "jobs", json_array());
    json_object_set_new(page, "total", json_integer(0));
    buf = NULL;
    f = open_memstream(&buf, &len);
    rp_ctl_print_jobs(f, page, 0);
    fclose(f);
    assert_string_equal(buf, "no jobs on this page (0 match)\n");
    free(buf);
    json_decref(page);

    json_t *job = json_pack("{s:{s:i, s:s, s:s, s:s}, s:s, s:b}", "job", "id", 5, "project", "p",
                            "kind", "k", "state", "ready", "payload", "{\"x\": \"\x1b[2J\"}",
                            "payload_truncated", 1);
    char *out = capture(rp_ctl_print_job, job);
    assert_terminal_safe(out);
    assert_non_null(strstr(out, "payload           {\"x\": \"\\x1b[2J\"}"));
    assert_non_null(strstr(out, "(cut: the payload is longer)"));
    free(out);
    json_decref(job);

    json_t *c = json_pack("{s:{s:i, s:s}, s:s, s:s, s:i}", "job", "id", 5, "state", "failed", "from",
                          "leased", "lease_owner", "w\r7", "seq", 901);
    out = capture(rp_ctl_print_cancel, c);
    assert_terminal_safe(out);
    assert_string_equal(out, "job 5 cancelled: leased -> failed (lease of w\\r7 cleared: its "
                             "settle will find no row); ledger seq 901\n");
    free(out);
    json_decref(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_output),
        cmocka_unit_test(test_escaped),
        cmocka_unit_test(test_gates_table),
        cmocka_unit_test(test_gates_page_line),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_report_status_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
