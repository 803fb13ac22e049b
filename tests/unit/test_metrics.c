/* The metrics registry (core/rp_metrics.h): what each hook changes, the
 * histogram's cumulative buckets and bounds, label escaping, and that the
 * whole rendering is well-formed text format (every sample belongs to a
 * family declared by # TYPE before it, one sample per line, each value a
 * number). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_http_prom.h"
#include "rp_metrics.h"

/* Not inlined: GCC 12 at -O3 takes the string it returns for a pointer to
 * its local text and warns (-Wdangling-pointer) where it is read. */
__attribute__((noinline)) static char *render(const rp_metrics *m) {
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(rp_metrics_render(m, &text, &len), RP_OK);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* The value of the sample whose name-and-labels is exactly series; fails
 * the test when it is absent. */
static double value_of(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        assert_non_null(end);
        if ((size_t)(end - line) > n && strncmp(line, series, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = end + 1;
    }
    fail_msg("no sample %s in:\n%s", series, text);
    return -1;
}

static bool has_series(const char *text, const char *series) {
    char needle[512];
    snprintf(needle, sizeof needle, "\n%s ", series);
    return strstr(text, needle) != NULL;
}

/* Checks the shape of every line: comments are HELP or TYPE; a sample's
 * family (its name less _bucket/_sum/_count for a histogram) was typed
 * before it; labels are name="value" pairs; the value parses whole. */
static void assert_well_formed(const char *text) {
    char typed[64][80];
    char types[64][16];
    size_t ntyped = 0;
    assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        char buf[1024];
        size_t len = (size_t)(end - line);
        assert_true(len > 0 && len < sizeof buf);
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = end + 1;
        if (buf[0] == '#') {
            char kw[8], name[80], type[16];
            if (strncmp(buf, "# HELP ", 7) == 0) continue;
            assert_int_equal(sscanf(buf, "# %7s %79s %15s", kw, name, type), 3);
            assert_string_equal(kw, "TYPE");
            assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            assert_true(ntyped < 64);
            snprintf(typed[ntyped], sizeof typed[ntyped], "%s", name);
            snprintf(types[ntyped], sizeof types[ntyped], "%s", type);
            ntyped++;
            continue;
        }
        size_t nlen = strspn(buf, "abcdefghijklmnopqrstuvwxyz_");
        assert_true(nlen > 0);
        char name[80];
        snprintf(name, sizeof name, "%.*s", (int)nlen, buf);
        bool found = false;
        for (size_t i = 0; i < ntyped && !found; i++) {
            size_t tl = strlen(typed[i]);
            if (strcmp(name, typed[i]) == 0) found = true;
            else if (strcmp(types[i], "histogram") == 0 && strncmp(name, typed[i], tl) == 0 &&
                     (strcmp(name + tl, "_bucket") == 0 || strcmp(name + tl, "_sum") == 0 ||
                      strcmp(name + tl, "_count") == 0))
                found = true;
        }
        assert_true(found);
        const char *p = buf + nlen;
        if (*p == '{') {
            p++;
            while (*p != '}') {
                size_t ln = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
                assert_true(ln > 0);
                p += ln;
                assert_int_equal(*p++, '=');
                assert_int_equal(*p++, '"');
                while (*p != '"') {
                    assert_true(*p != '\0' && *p != '\n');
                    if (*p == '\\') {
                        p++;
                        assert_true(*p == '\\' || *p == '"' || *p == 'n');
                    }
                    p++;
                }
                p++;
                if (*p == ',') p++;
                else assert_int_equal(*p, '}');
            }
            p++;
        }
        assert_int_equal(*p++, ' ');
        char *vend = NULL;
        strtod(p, &vend);
        assert_true(vend != p && *vend == '\0');
    }
}

static void test_a_fresh_registry(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "1.2.3", "abc1234");
    char *t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_build_info{version=\"1.2.3\",revision=\"abc1234\"}") == 1);
    assert_true(value_of(t, "reaper_reconnects_total{backend=\"broker\"}") == 0);
    assert_true(value_of(t, "reaper_feed_published_total") == 0);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count") == 0);
    /* Every series a ledger event can carry is there from the start, at 0
     * (so that increase() sees the first one), and only those. */
    size_t reaped = 0, valid = 0;
    for (const char *p = strstr(t, "\nreaper_reaped_total{"); p; p = strstr(p + 1, "\nreaper_reaped_total{")) {
        const char *eol = strchr(p + 1, '\n');
        assert_true(eol - p > 3 && strncmp(eol - 2, " 0", 2) == 0);
        reaped++;
    }
    for (int so = 0; so < RP_SOURCE_COUNT_; so++)
        for (int c = 0; c < RP_COND_COUNT_; c++)
            for (int a = 0; a < RP_ACTION_COUNT_; a++)
                valid += rp_metrics_reaped_valid((rp_source)so, (rp_condition)c, (rp_action)a);
    assert_int_equal(reaped, valid);
    assert_true(valid >= 10);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"lease_expired\",action=\"requeued\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"poison\",action=\"parked\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"broker\",condition=\"dead_letter\",action=\"parked\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"broker\",condition=\"holder_gone\",action=\"cleared\"}") == 0);
    /* Issue 18's conditions, from the start. */
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"stalled\",action=\"surfaced\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"stalled\",action=\"requeued\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"waiting_depth\",action=\"surfaced\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"broker\",condition=\"waiting_depth\",action=\"cleared\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"wedged\",action=\"surfaced\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"wedged\",action=\"cleared\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"divergent\",action=\"surfaced\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"broker\",condition=\"divergent\",action=\"surfaced\"}") == 0);
    assert_false(has_series(t, "reaper_reaped_total{source=\"job_queue\",condition=\"dead_letter\",action=\"parked\"}"));
    assert_true(value_of(t, "reaper_up{backend=\"broker\"}") == 0);
    assert_true(value_of(t, "reaper_up{backend=\"store\"}") == 0);
    assert_true(value_of(t, "reaper_dead_letters_parked_total") == 0);
    assert_true(value_of(t, "reaper_tap_ignored_total") == 0);
    assert_true(value_of(t, "reaper_broker_events_refused_total") == 0);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"reap\",outcome=\"ok\"}") == 0);
    assert_true(value_of(t, "reaper_gates_answered_total{kind=\"bus_dead_lettered\",choice=\"replay\"}") == 0);
    assert_true(value_of(t, "reaper_passes_total{scope=\"leases\",result=\"error\"}") == 0);
    assert_true(value_of(t, "reaper_pass_duration_seconds_count{scope=\"full\"}") == 0);
    /* Never measured: left out, not zero. */
    assert_false(has_series(t, "reaper_event_lag_seconds"));
    assert_null(strstr(t, "reaper_gates_open{"));
    assert_null(strstr(t, "reaper_sightings_open{"));
    assert_null(strstr(t, "\nprocess_"));
    assert_null(strstr(t, "reaper_oldest_open_gate_age_seconds{"));
    assert_null(strstr(t, "reaper_last_successful_pass_timestamp_seconds{"));
    assert_false(has_series(t, "reaper_tap_held_bytes"));
    /* But every family is declared. */
    assert_non_null(strstr(t, "# TYPE reaper_reaped_total counter\n"));
    assert_non_null(strstr(t, "# TYPE reaper_event_lag_seconds gauge\n"));
    assert_non_null(strstr(t, "# TYPE reaper_pass_duration_seconds histogram\n"));
    free(t);
}

static void test_hooks_change_their_series(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "v", NULL);
    rp_metrics_set_up(&m, RP_METRICS_STORE, true);
    rp_metrics_reaped(&m, RP_SOURCE_JOB_QUEUE, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED);
    rp_metrics_reaped(&m, RP_SOURCE_JOB_QUEUE, RP_COND_LEASE_EXPIRED, RP_ACTION_REQUEUED);
    rp_metrics_reaped(&m, RP_SOURCE_BROKER, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED);
    rp_metrics_reaped(&m, (rp_source)7, RP_COND_DEAD_LETTER, RP_ACTION_SURFACED); /* ignored */
    int64_t sightings[RP_COND_COUNT_] = {0};
    sightings[RP_COND_STALE_READY] = 3;
    sightings[RP_COND_STALLED] = 2;
    sightings[RP_COND_WAITING_DEPTH] = 1;
    sightings[RP_COND_WEDGED] = 4;
    sightings[RP_COND_DIVERGENT] = 4;
    rp_metrics_set_sightings_open(&m, sightings);
    rp_metrics_dead_letters_parked(&m, 5);
    rp_metrics_tap_ignored(&m, 2);
    assert_true(rp_metrics_event_refused(&m) == 1);
    assert_true(rp_metrics_event_refused(&m) == 2);
    int64_t gates[RP_GATE_KIND_COUNT_] = {4, 2};
    rp_metrics_set_gates_open(&m, gates);
    rp_metrics_gate_answered(&m, RP_GATE_DELIVERY_EXHAUSTED, RP_CHOICE_RETRY);
    rp_metrics_set_event_lag_ms(&m, 1234);
    rp_metrics_control(&m, "status", "ok");
    rp_metrics_control(&m, "answer", "conflict");
    rp_metrics_control(&m, "cancel", "conflict");
    rp_metrics_control(&m, "jobs", "ok");
    rp_metrics_control(&m, "doctor", "ok");
    rp_metrics_control(&m, "stats", "unavailable");
    rp_metrics_control(&m, NULL, "forbidden");
    rp_metrics_control(&m, "bogus", "weird");
    rp_metrics_feed_publish_failed(&m);
    rp_metrics_feed_published(&m);
    rp_metrics_feed_published(&m);
    rp_metrics_connected(&m, RP_METRICS_BROKER);
    rp_metrics_connected(&m, RP_METRICS_BROKER);
    rp_metrics_connected(&m, RP_METRICS_BROKER);
    rp_metrics_connected(&m, RP_METRICS_STORE);
    rp_metrics_process proc = {.cpu_us = 1500000, .resident_bytes = 4096, .open_fds = 12,
                               .max_fds = 1024, .start_time_ms = 1700000000123};
    rp_metrics_set_process(&m, &proc);
    rp_metrics_set_clock(&m, 1700000100000);
    int64_t opened[RP_GATE_KIND_COUNT_] = {0};
    opened[RP_GATE_BUS_DEAD_LETTERED] = 1700000090500; /* 9.5 s before the clock */
    rp_metrics_set_oldest_gates(&m, opened);
    rp_metrics_pass_succeeded(&m, RP_METRICS_SCOPE_FULL, 1700000099250);
    rp_metrics_set_tap(&m, 65536, true);
    rp_metrics_tap_parked(&m, 700);      /* 0.0007 s: le 0.001 */
    rp_metrics_tap_parked(&m, 20000);    /* 0.02 s: le 0.025 */
    rp_metrics_tap_parked(&m, 99000000); /* 99 s: +Inf only */
    char *t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_up{backend=\"store\"}") == 1);
    assert_true(value_of(t, "reaper_up{backend=\"broker\"}") == 0);
    assert_true(value_of(t, "reaper_reaped_total{source=\"job_queue\",condition=\"lease_expired\",action=\"requeued\"}") == 2);
    assert_true(value_of(t, "reaper_reaped_total{source=\"broker\",condition=\"dead_letter\",action=\"surfaced\"}") == 1);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"stale_ready\"}") == 3);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"holder_gone\"}") == 0);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"stalled\"}") == 2);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"waiting_depth\"}") == 1);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"wedged\"}") == 4);
    assert_true(value_of(t, "reaper_sightings_open{condition=\"divergent\"}") == 4);
    assert_false(has_series(t, "reaper_sightings_open{condition=\"none\"}"));
    assert_true(value_of(t, "reaper_dead_letters_parked_total") == 5);
    assert_true(value_of(t, "reaper_tap_ignored_total") == 2);
    assert_true(value_of(t, "reaper_broker_events_refused_total") == 2);
    assert_true(value_of(t, "reaper_gates_open{kind=\"delivery_exhausted\"}") == 4);
    assert_true(value_of(t, "reaper_gates_open{kind=\"bus_dead_lettered\"}") == 2);
    assert_true(value_of(t, "reaper_gates_answered_total{kind=\"delivery_exhausted\",choice=\"retry\"}") == 1);
    assert_true(value_of(t, "reaper_event_lag_seconds") == 1.234);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"status\",outcome=\"ok\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"answer\",outcome=\"conflict\"}") == 1);
    /* Job triage's ops have labels of their own, not "unknown". */
    assert_true(value_of(t, "reaper_control_requests_total{op=\"cancel\",outcome=\"conflict\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"jobs\",outcome=\"ok\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"doctor\",outcome=\"ok\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"stats\",outcome=\"unavailable\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"unknown\",outcome=\"forbidden\"}") == 1);
    assert_true(value_of(t, "reaper_control_requests_total{op=\"unknown\",outcome=\"internal\"}") == 1);
    assert_true(value_of(t, "reaper_feed_publish_failures_total") == 1);
    assert_true(value_of(t, "reaper_feed_published_total") == 2);
    assert_true(value_of(t, "reaper_reconnects_total{backend=\"broker\"}") == 2);
    assert_true(value_of(t, "reaper_reconnects_total{backend=\"store\"}") == 0);
    assert_true(value_of(t, "process_cpu_seconds_total") == 1.5);
    assert_true(value_of(t, "process_resident_memory_bytes") == 4096);
    assert_true(value_of(t, "process_open_fds") == 12);
    assert_true(value_of(t, "process_max_fds") == 1024);
    assert_non_null(strstr(t, "\nprocess_start_time_seconds 1700000000.123\n"));
    assert_true(value_of(t, "reaper_oldest_open_gate_age_seconds{kind=\"bus_dead_lettered\"}") == 9.5);
    assert_true(value_of(t, "reaper_oldest_open_gate_age_seconds{kind=\"delivery_exhausted\"}") == 0);
    assert_non_null(strstr(t, "\nreaper_last_successful_pass_timestamp_seconds{scope=\"full\"} 1700000099.250\n"));
    assert_false(has_series(t, "reaper_last_successful_pass_timestamp_seconds{scope=\"leases\"}"));
    assert_true(value_of(t, "reaper_tap_held_bytes") == 65536);
    assert_true(value_of(t, "reaper_tap_paused") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{le=\"0.001\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{le=\"0.025\"}") == 2);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{le=\"30\"}") == 2);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{le=\"+Inf\"}") == 3);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count") == 3);
    assert_non_null(strstr(t, "\nreaper_tap_park_delay_seconds_sum 99.020700\n"));
    free(t);
    /* The clock moves: the gate's age with it. */
    rp_metrics_set_clock(&m, 1700000110500);
    t = render(&m);
    assert_true(value_of(t, "reaper_oldest_open_gate_age_seconds{kind=\"bus_dead_lettered\"}") == 20);
    free(t);
    /* A negative lag (clocks apart) reads as zero, not as a negative age. */
    rp_metrics_set_event_lag_ms(&m, -50);
    t = render(&m);
    assert_true(value_of(t, "reaper_event_lag_seconds") == 0);
    free(t);
}

static void test_histogram_buckets_are_cumulative(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "v", NULL);
    rp_metrics_pass(&m, RP_METRICS_SCOPE_FULL, RP_METRICS_RESULT_OK, 5000);       /* 0.005 s */
    rp_metrics_pass(&m, RP_METRICS_SCOPE_FULL, RP_METRICS_RESULT_OK, 1000000);    /* 1 s: le="1" */
    rp_metrics_pass(&m, RP_METRICS_SCOPE_FULL, RP_METRICS_RESULT_UNREADABLE, 1000001);
    rp_metrics_pass(&m, RP_METRICS_SCOPE_FULL, RP_METRICS_RESULT_ERROR, 400000000); /* 400 s */
    rp_metrics_pass(&m, RP_METRICS_SCOPE_LEASES, RP_METRICS_RESULT_OK, -7);         /* as 0 */
    char *t = render(&m);
    assert_well_formed(t);
    const char *h = "reaper_pass_duration_seconds_bucket{scope=\"full\",le=";
    char s[160];
    struct {
        const char *le;
        double want;
    } want[] = {{"0.01", 1}, {"0.5", 1}, {"1", 2}, {"2.5", 3}, {"300", 3}, {"+Inf", 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(s, sizeof s, "%s\"%s\"}", h, want[i].le);
        assert_true(value_of(t, s) == want[i].want);
    }
    /* Buckets never decrease, in the order written. */
    double last = -1;
    size_t buckets = 0;
    for (const char *p = strstr(t, h); p; p = strstr(p + 1, h)) {
        double v = strtod(strchr(p, ' ') + 1, NULL);
        assert_true(v >= last);
        last = v;
        buckets++;
    }
    assert_int_equal(buckets, RP_METRICS_BUCKETS + 1);
    assert_true(value_of(t, "reaper_pass_duration_seconds_count{scope=\"full\"}") == 4);
    assert_true(value_of(t, "reaper_pass_duration_seconds_sum{scope=\"full\"}") == 402.005001);
    assert_non_null(strstr(t, "reaper_pass_duration_seconds_sum{scope=\"full\"} 402.005001\n"));
    assert_true(value_of(t, "reaper_pass_duration_seconds_bucket{scope=\"leases\",le=\"0.01\"}") == 1);
    assert_true(value_of(t, "reaper_pass_duration_seconds_sum{scope=\"leases\"}") == 0);
    assert_true(value_of(t, "reaper_passes_total{scope=\"full\",result=\"ok\"}") == 2);
    assert_true(value_of(t, "reaper_passes_total{scope=\"full\",result=\"unreadable\"}") == 1);
    assert_true(value_of(t, "reaper_passes_total{scope=\"full\",result=\"error\"}") == 1);
    assert_true(value_of(t, "reaper_passes_total{scope=\"leases\",result=\"ok\"}") == 1);
    free(t);
    /* The bounds are increasing, as the format requires. */
    for (size_t i = 1; i < RP_METRICS_BUCKETS; i++)
        assert_true(rp_metrics_bucket_bounds[i] > rp_metrics_bucket_bounds[i - 1]);
}

static void test_label_escaping(void **state) {
    (void)state;
    char buf[64];
    assert_int_equal(rp_metrics_escape_label("plain", buf, sizeof buf), 5);
    assert_string_equal(buf, "plain");
    assert_int_equal(rp_metrics_escape_label("a\"b\\c\nd", buf, sizeof buf), 10);
    assert_string_equal(buf, "a\\\"b\\\\c\\nd");
    assert_int_equal(rp_metrics_escape_label(NULL, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    /* Cut to the room, never in the middle of an escape. */
    assert_int_equal(rp_metrics_escape_label("ab\"cd", buf, 4), 6);
    assert_string_equal(buf, "ab");
    assert_int_equal(rp_metrics_escape_label("abc", buf, 1), 3);
    assert_string_equal(buf, "");
    /* In the rendering: the version label is escaped. */
    rp_metrics m;
    rp_metrics_init(&m, "1.0 \"odd\"\\\nbuild", "r\"1");
    char *t = render(&m);
    assert_well_formed(t);
    assert_non_null(strstr(t, "reaper_build_info{version=\"1.0 \\\"odd\\\"\\\\\\nbuild\",revision=\"r\\\"1\"} 1\n"));
    free(t);
}

/* Issue 18 item 5: reaper_policy_verified{policy}, absent until a
 * reconcile checked the policy, then 1 or 0; other names are ignored. */
static void test_policy_verified_gauge(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "1", "r");
    char *t = render(&m);
    assert_null(strstr(t, "reaper_policy_verified"));
    free(t);
    rp_metrics_set_policy_verified(&m, "vibey-reap", true);
    rp_metrics_set_policy_verified(&m, "someone-elses", false);
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\"}") == 1);
    assert_null(strstr(t, "vibey-reap-classic"));
    assert_null(strstr(t, "someone-elses"));
    assert_non_null(strstr(t, "# TYPE reaper_policy_verified gauge\n"));
    free(t);
    rp_metrics_set_policy_verified(&m, "vibey-reap", false);
    rp_metrics_set_policy_verified(&m, "vibey-reap-classic", true);
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\"}") == 0);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap-classic\"}") == 1);
    free(t);
    assert_null(rp_metrics_policy_name(-1));
    assert_null(rp_metrics_policy_name(RP_METRICS_POLICIES));
    rp_metrics_set_policy_verified(NULL, "vibey-reap", true); /* no crash */
    rp_metrics_set_policy_verified(&m, NULL, true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_fresh_registry),
        cmocka_unit_test(test_hooks_change_their_series),
        cmocka_unit_test(test_histogram_buckets_are_cumulative),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_policy_verified_gauge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
