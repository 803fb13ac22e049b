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
    assert_int_equal(rp_metrics_vhost_register(&m, "/"), RP_OK);
    char *t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_build_info{version=\"1.2.3\",revision=\"abc1234\"}") == 1);
    assert_true(value_of(t, "reaper_reconnects_total{backend=\"broker\"}") == 0);
    assert_true(value_of(t, "reaper_feed_published_total") == 0);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"/\"}") == 0);
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
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"/\"}") == 0);
    assert_true(value_of(t, "reaper_tap_ignored_total{vhost=\"/\"}") == 0);
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
    assert_false(has_series(t, "reaper_tap_held_bytes{vhost=\"/\"}"));
    assert_null(strstr(t, "reaper_tap_held_bytes{"));
    assert_null(strstr(t, "reaper_tap_paused{"));
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
    assert_int_equal(rp_metrics_vhost_register(&m, "/"), RP_OK);
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
    assert_false(rp_metrics_dead_letters_parked(&m, "/", 5));
    assert_false(rp_metrics_tap_ignored(&m, "/", 2));
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
    assert_false(rp_metrics_set_tap(&m, "/", 65536, true));
    rp_metrics_tap_parked(&m, "/", 700);      /* 0.0007 s: le 0.001 */
    rp_metrics_tap_parked(&m, "/", 20000);    /* 0.02 s: le 0.025 */
    rp_metrics_tap_parked(&m, "/", 99000000); /* 99 s: +Inf only */
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
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"/\"}") == 5);
    assert_true(value_of(t, "reaper_tap_ignored_total{vhost=\"/\"}") == 2);
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
    assert_true(value_of(t, "reaper_tap_held_bytes{vhost=\"/\"}") == 65536);
    assert_true(value_of(t, "reaper_tap_paused{vhost=\"/\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"/\",le=\"0.001\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"/\",le=\"0.025\"}") == 2);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"/\",le=\"30\"}") == 2);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"/\",le=\"+Inf\"}") == 3);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"/\"}") == 3);
    assert_non_null(strstr(t, "\nreaper_tap_park_delay_seconds_sum{vhost=\"/\"} 99.020700\n"));
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

/* Issue 18 item 5, issue 19 item 1: reaper_policy_verified{policy,vhost},
 * absent until a reconcile checked the policy in a watched vhost, then 1
 * or 0 per vhost; other names, and vhosts without a slot, are ignored
 * (never the overflow slot); the vhost label is escaped. */
static void test_policy_verified_gauge(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "1", "r");
    assert_int_equal(rp_metrics_vhost_register(&m, "/"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&m, "b\"q"), RP_OK);
    char *t = render(&m);
    assert_null(strstr(t, "reaper_policy_verified"));
    free(t);
    rp_metrics_set_policy_verified(&m, "vibey-reap", "/", true);
    rp_metrics_set_policy_verified(&m, "someone-elses", "/", false);
    rp_metrics_set_policy_verified(&m, "vibey-reap", "unwatched", false);
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"/\"}") == 1);
    assert_null(strstr(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"b"));
    assert_null(strstr(t, "vibey-reap-classic"));
    assert_null(strstr(t, "someone-elses"));
    assert_null(strstr(t, "unwatched"));
    assert_null(strstr(t, "vhost=\"\"")); /* no overflow slot */
    assert_non_null(strstr(t, "# TYPE reaper_policy_verified gauge\n"));
    free(t);
    rp_metrics_set_policy_verified(&m, "vibey-reap", "b\"q", false);
    rp_metrics_set_policy_verified(&m, "vibey-reap-classic", "b\"q", true);
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"/\"}") == 1);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"b\\\"q\"}") == 0);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap-classic\",vhost=\"b\\\"q\"}") ==
                1);
    assert_null(strstr(t, "reaper_policy_verified{policy=\"vibey-reap-classic\",vhost=\"/\"}"));
    free(t);

    /* A report entry: its vhost records, each into its vhost's series. */
    rp_report r;
    rp_report_init(&r, false);
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap-classic", false, "d"), RP_OK);
    assert_int_equal(rp_report_add_policy_vhost(&r, "/", false), RP_OK);
    assert_int_equal(rp_report_add_policy_vhost(&r, "b\"q", true), RP_OK);
    assert_int_equal(rp_report_add_policy_vhost(&r, "unwatched", false), RP_OK);
    rp_metrics_set_policy_check(&m, &r.policies[0]);
    /* An entry without records (the reconcile checked no vhost): every
     * registered vhost's series of that policy. */
    assert_int_equal(rp_report_add_policy(&r, "vibey-reap", false, "not checked: down"), RP_OK);
    rp_metrics_set_policy_check(&m, &r.policies[1]);
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap-classic\",vhost=\"/\"}") == 0);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap-classic\",vhost=\"b\\\"q\"}") ==
                1);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"/\"}") == 0);
    assert_true(value_of(t, "reaper_policy_verified{policy=\"vibey-reap\",vhost=\"b\\\"q\"}") == 0);
    assert_null(strstr(t, "unwatched"));
    free(t);
    rp_report_cleanup(&r);
    assert_null(rp_metrics_policy_name(-1));
    assert_null(rp_metrics_policy_name(RP_METRICS_POLICIES));
    rp_metrics_set_policy_verified(NULL, "vibey-reap", "/", true); /* no crash */
    rp_metrics_set_policy_verified(&m, NULL, "/", true);
    rp_metrics_set_policy_check(&m, NULL);
    assert_int_equal(rp_report_add_policy_vhost(&r, "/", true), RP_ERR_INVALID); /* no entry */
}

/* Issue 19 item 1: the vhost label. Two registered vhosts, each with its
 * own series from the start at 0 (so that rate() sees the first event),
 * and each hook counting under its own vhost only. */
static void test_vhost_series_two_vhosts(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "v", "r");
    /* Nothing registered: the families are declared, with no series. */
    char *t = render(&m);
    assert_well_formed(t);
    assert_non_null(strstr(t, "# TYPE reaper_dead_letters_parked_total counter\n"));
    assert_null(strstr(t, "\nreaper_dead_letters_parked_total"));
    assert_null(strstr(t, "\nreaper_tap_park_delay_seconds_count"));
    free(t);
    assert_int_equal(rp_metrics_vhost_register(&m, "a"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&m, "b"), RP_OK);
    assert_int_equal(rp_metrics_vhost_register(&m, "a"), RP_OK); /* again: no second slot */
    assert_int_equal(m.n_vhosts, 2);
    assert_int_equal(rp_metrics_vhost_slot(&m, "a"), 0);
    assert_int_equal(rp_metrics_vhost_slot(&m, "b"), 1);
    assert_int_equal(rp_metrics_vhost_slot(&m, "c"), RP_METRICS_VHOSTS);
    assert_int_equal(rp_metrics_vhost_slot(&m, NULL), RP_METRICS_VHOSTS);
    t = render(&m);
    assert_well_formed(t);
    const char *zero[] = {"reaper_dead_letters_parked_total{vhost=\"a\"}",
                          "reaper_dead_letters_parked_total{vhost=\"b\"}",
                          "reaper_tap_ignored_total{vhost=\"a\"}",
                          "reaper_tap_ignored_total{vhost=\"b\"}",
                          "reaper_tap_park_delay_seconds_count{vhost=\"a\"}",
                          "reaper_tap_park_delay_seconds_count{vhost=\"b\"}",
                          "reaper_tap_park_delay_seconds_bucket{vhost=\"b\",le=\"+Inf\"}",
                          "reaper_tap_park_delay_seconds_sum{vhost=\"a\"}"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) assert_true(value_of(t, zero[i]) == 0);
    /* The tap gauges only once measured; no overflow series unused. */
    assert_null(strstr(t, "reaper_tap_held_bytes{"));
    assert_null(strstr(t, "vhost=\"\""));
    free(t);
    assert_false(rp_metrics_dead_letters_parked(&m, "a", 2));
    assert_false(rp_metrics_dead_letters_parked(&m, "b", 1));
    assert_false(rp_metrics_dead_letters_parked(&m, "a", 1));
    assert_false(rp_metrics_tap_ignored(&m, "b", 4));
    assert_false(rp_metrics_tap_parked(&m, "b", 3000)); /* 0.003 s: le 0.005 */
    assert_false(rp_metrics_set_tap(&m, "a", 100, false));
    assert_false(rp_metrics_set_tap(&m, "b", 7, true));
    t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"a\"}") == 3);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"b\"}") == 1);
    assert_true(value_of(t, "reaper_tap_ignored_total{vhost=\"a\"}") == 0);
    assert_true(value_of(t, "reaper_tap_ignored_total{vhost=\"b\"}") == 4);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"a\"}") == 0);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"b\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"b\",le=\"0.0025\"}") == 0);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"b\",le=\"0.005\"}") == 1);
    assert_true(value_of(t, "reaper_tap_held_bytes{vhost=\"a\"}") == 100);
    assert_true(value_of(t, "reaper_tap_held_bytes{vhost=\"b\"}") == 7);
    assert_true(value_of(t, "reaper_tap_paused{vhost=\"a\"}") == 0);
    assert_true(value_of(t, "reaper_tap_paused{vhost=\"b\"}") == 1);
    /* No unlabelled sample of a vhost series is left. */
    assert_null(strstr(t, "\nreaper_dead_letters_parked_total "));
    assert_null(strstr(t, "\nreaper_tap_park_delay_seconds_count "));
    free(t);
}

/* Vhost names are label values: '"', '\' and line feeds escaped as the
 * text format says, in every vhost series (the histogram's too). */
static void test_vhost_label_escaping(void **state) {
    (void)state;
    rp_metrics m;
    rp_metrics_init(&m, "v", "r");
    const char *odd = "q\"u\\o\nte";
    assert_int_equal(rp_metrics_vhost_register(&m, odd), RP_OK);
    rp_metrics_dead_letters_parked(&m, odd, 6);
    rp_metrics_set_tap(&m, odd, 9, false);
    rp_metrics_tap_parked(&m, odd, 10);
    char *t = render(&m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"q\\\"u\\\\o\\nte\"}") == 6);
    assert_true(value_of(t, "reaper_tap_held_bytes{vhost=\"q\\\"u\\\\o\\nte\"}") == 9);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_bucket{vhost=\"q\\\"u\\\\o\\nte\",le=\"0.001\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"q\\\"u\\\\o\\nte\"}") == 1);
    free(t);
    /* The longest name RabbitMQ allows (255 bytes), all quotes: escaped
     * whole; one byte more is refused. */
    char big[RP_METRICS_VHOST_NAME_MAX + 1];
    memset(big, '"', RP_METRICS_VHOST_NAME_MAX - 1);
    big[RP_METRICS_VHOST_NAME_MAX - 1] = '\0';
    assert_int_equal(rp_metrics_vhost_register(&m, big), RP_OK);
    rp_metrics_tap_parked(&m, big, 10);
    t = render(&m);
    assert_well_formed(t);
    char series[2 * RP_METRICS_VHOST_NAME_MAX + 80];
    int n = snprintf(series, sizeof series, "reaper_tap_park_delay_seconds_count{vhost=\"");
    for (int i = 0; i < RP_METRICS_VHOST_NAME_MAX - 1; i++) n += snprintf(series + n, sizeof series - (size_t)n, "\\\"");
    snprintf(series + n, sizeof series - (size_t)n, "\"}");
    assert_true(value_of(t, series) == 1);
    free(t);
    memset(big, 'x', RP_METRICS_VHOST_NAME_MAX);
    big[RP_METRICS_VHOST_NAME_MAX] = '\0';
    assert_int_equal(rp_metrics_vhost_register(&m, big), RP_ERR_INVALID);
    assert_int_equal(rp_metrics_vhost_register(&m, NULL), RP_ERR_INVALID);
}

/* A vhost without a slot (the table full, or never registered) is counted
 * in the overflow slot, rendered as vhost="" once used, and the first
 * update there says so (its caller logs it once). */
static void test_vhost_overflow(void **state) {
    (void)state;
    rp_metrics *m = malloc(sizeof *m);
    assert_non_null(m);
    rp_metrics_init(m, "v", "r");
    char name[16];
    for (int i = 0; i < RP_METRICS_VHOSTS; i++) {
        snprintf(name, sizeof name, "v%d", i);
        assert_int_equal(rp_metrics_vhost_register(m, name), RP_OK);
    }
    assert_int_equal(rp_metrics_vhost_register(m, "one-too-many"), RP_ERR_TOO_LARGE);
    assert_int_equal(rp_metrics_vhost_register(m, "v3"), RP_OK); /* registered already */
    char *t = render(m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"v63\"}") == 0);
    assert_null(strstr(t, "vhost=\"\""));
    free(t);
    assert_true(rp_metrics_dead_letters_parked(m, "one-too-many", 2));   /* the first: logged */
    assert_false(rp_metrics_dead_letters_parked(m, "never-registered", 1)); /* once only */
    assert_false(rp_metrics_tap_parked(m, NULL, 5));
    assert_false(rp_metrics_tap_ignored(m, "one-too-many", 1));
    assert_false(rp_metrics_dead_letters_parked(m, "v63", 1));
    t = render(m);
    assert_well_formed(t);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"\"}") == 3);
    assert_true(value_of(t, "reaper_tap_ignored_total{vhost=\"\"}") == 1);
    assert_true(value_of(t, "reaper_tap_park_delay_seconds_count{vhost=\"\"}") == 1);
    assert_true(value_of(t, "reaper_dead_letters_parked_total{vhost=\"v63\"}") == 1);
    assert_null(strstr(t, "one-too-many"));
    /* The overflow series come after every registered vhost's. */
    assert_true(strstr(t, "reaper_dead_letters_parked_total{vhost=\"\"}") >
                strstr(t, "reaper_dead_letters_parked_total{vhost=\"v63\"}"));
    free(t);
    free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_fresh_registry),
        cmocka_unit_test(test_hooks_change_their_series),
        cmocka_unit_test(test_histogram_buckets_are_cumulative),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_policy_verified_gauge),
        cmocka_unit_test(test_vhost_series_two_vhosts),
        cmocka_unit_test(test_vhost_label_escaping),
        cmocka_unit_test(test_vhost_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
