/*
 * The tap's memory counts headers too (issue 14 item 6, cmd/reaperd/tap.c):
 * 3,000 dead letters with about 100 KiB of headers each (1,000 entries; some
 * 160 KiB decoded, over broker.tap_header_cap_bytes' 64 KiB) and 500 with
 * about 32 KiB (300 entries, under the cap) arrive while parking is blocked
 * (the dead_letter table locked by this test). Their bodies are tiny: a
 * tap that counted only bodies would take all 3,500 from the broker and
 * hold some 500 MiB of decoded headers. reaperd's resident memory (VmHWM)
 * stays under 100 MiB, the chart's limit of 128 MiB (helm/reaper/values.yaml)
 * less some headroom, and
 * once the lock is gone every dead letter is parked exactly once: the
 * heavy ones without their headers (only x-death and x-first-death-*),
 * marked not replayable (their properties say why, and a replay answers
 * `conflict` with that reason), the light ones whole.
 *
 * The tap has a connection of its own ("reaperd tap <queue>") that took the
 * broker's frame_max: the broker closing it stops neither control nor the
 * daemon's connection, and the tap connects again and parks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tap_common.h"

#define N_HEAVY 3000
#define N_LIGHT 500
#define HEAVY_ENTRIES 1000
#define LIGHT_ENTRIES 300
#define VALUE_BYTES 95
/* The chart's memory limit (helm/reaper/values.yaml resources.limits). */
#define CHART_LIMIT_KIB (128 * 1024)
/* What reaperd may reach in this test: the chart's limit less a fifth of
 * headroom. While rabbitmq-c's pools were released only between drains
 * (and so, with large frames, hardly ever) the peak after parking was
 * 108-167 MiB in ten runs and went over the chart's limit in one of
 * three; with them released every MiB decoded it is 69-80 MiB (3.10 and
 * 4.0). */
#define PEAK_LIMIT_KIB (100 * 1024)

#define status_kib itest_proc_status_kib

/* n persistent messages "<prefix>-<i>" (body and message_id) to queue, each
 * with a header table of entries string entries of VALUE_BYTES. */
static void publish_heavy(const char *queue, const char *prefix, int n, int entries) {
    amqp_table_entry_t *e = calloc((size_t)entries, sizeof *e);
    char(*keys)[16] = calloc((size_t)entries, sizeof *keys);
    char *value = malloc(VALUE_BYTES);
    assert_true(e && keys && value);
    memset(value, 'v', VALUE_BYTES);
    for (int k = 0; k < entries; k++) {
        snprintf(keys[k], sizeof keys[k], "h%04d", k);
        e[k].key = amqp_cstring_bytes(keys[k]);
        e[k].value.kind = AMQP_FIELD_KIND_UTF8;
        e[k].value.value.bytes = (amqp_bytes_t){VALUE_BYTES, value};
    }
    for (int i = 0; i < n; i++) {
        char body[32];
        snprintf(body, sizeof body, "%s-%d", prefix, i);
        amqp_basic_properties_t p;
        memset(&p, 0, sizeof p);
        p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
                   AMQP_BASIC_HEADERS_FLAG;
        p.delivery_mode = 2;
        p.message_id = amqp_cstring_bytes(body);
        p.headers = (amqp_table_t){entries, e};
        assert_int_equal(amqp_basic_publish(T.amqp, 1, amqp_cstring_bytes(""),
                                            amqp_cstring_bytes(queue), 0, 0, &p,
                                            amqp_cstring_bytes(body)),
                         AMQP_STATUS_OK);
    }
    free(value);
    free(keys);
    free(e);
}

/* Prints what is stored of one dead letter (for the log). */
static void show_row(const char *body) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT origin_queue, body_truncated, properties::text, left(headers::text, 600) "
             "FROM \"%s\".dead_letter WHERE encode(body, 'escape') = '%s'",
             T.schema, body);
    PGresult *r = PQexec(T.pg, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        fprintf(stderr, "%s: origin %s truncated %s properties %s headers %s\n", body,
                PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
                PQgetvalue(r, 0, 3));
    PQclear(r);
}

#define PARKED(prefix)                                                                             \
    "SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') LIKE '" prefix "-%'"

static void test_headers_counted(void **state) {
    (void)state;
    /* The dead-letter exchange routes to a queue reaper does not own (the
     * tap copies routes that reach some queue), so no backfill parks these
     * with their headers first. */
    char x[128], work[128], sink[128];
    tap_plain(x, sizeof x, "hdr.dlx");
    tap_exchange(x, "fanout");
    tap_plain(sink, sizeof sink, "hdr.sink");
    tap_queue(sink, NULL, NULL, -1);
    tap_bind(sink, x, "", amqp_empty_table);
    tap_owned(work, sizeof work, "hdr.work");
    tap_queue(work, x, NULL, 0);
    tap_start_reaperd();
    pid_t pid = T.reaperd->pid;
    long base_kib = status_kib(pid, "VmHWM");
    assert_true(base_kib > 0);

    tap_block_parking();
    long long t0 = itest_mono_ms();
    publish_heavy(work, "hv", N_HEAVY, HEAVY_ENTRIES);
    publish_heavy(work, "lt", N_LIGHT, LIGHT_ENTRIES);
    fprintf(stderr, "published %d + %d in %lld ms\n", N_HEAVY, N_LIGHT, itest_mono_ms() - t0);
    /* Let the broker hand over whatever the tap takes. */
    long rss_max = 0;
    t0 = itest_mono_ms();
    while (itest_mono_ms() - t0 < 20000) {
        rp_child_drain(T.reaperd, 500);
        long rss = status_kib(pid, "VmRSS");
        if (rss > rss_max) rss_max = rss;
    }
    long hwm = status_kib(pid, "VmHWM");
    long on_tap = tap_depth(T.tap);
    fprintf(stderr, "while parking is blocked: VmRSS at most %ld KiB, VmHWM %ld KiB (%ld KiB at "
                    "the start); %ld of %d ready on the tap queue (the rest held by reaperd)\n",
            rss_max, hwm, base_kib, on_tap, N_HEAVY + N_LIGHT);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter"), 0);
    assert_true(hwm > 0);
    assert_true(hwm < PEAK_LIMIT_KIB);

    tap_unblock_parking();
    long heavy = tap_wait_count(N_HEAVY, 180000, PARKED("hv"));
    long light = tap_wait_count(N_LIGHT, 60000, PARKED("lt"));
    if (heavy != N_HEAVY || light != N_LIGHT) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_int_equal(heavy, N_HEAVY);
    assert_int_equal(light, N_LIGHT);
    hwm = status_kib(pid, "VmHWM");
    fprintf(stderr, "after parking: VmHWM %ld KiB (limit %d KiB, the chart's %d KiB)\n", hwm,
            PEAK_LIMIT_KIB, CHART_LIMIT_KIB);
    assert_true(hwm < PEAK_LIMIT_KIB);
    /* Exactly once each: one row, one gate per message. */
    assert_int_equal(tap_sqln("SELECT count(DISTINCT body) FROM dead_letter"), N_HEAVY + N_LIGHT);
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter"), N_HEAVY + N_LIGHT);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate WHERE kind = 'bus_dead_lettered'"),
                     N_HEAVY + N_LIGHT);
    show_row("hv-7");
    show_row("lt-7");
    /* The heavy ones: without their headers but the death headers, not
     * replayable, and the reason kept; their origin still from x-death. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') "
                              "LIKE 'hv-%%' AND body_truncated AND NOT headers ? 'h0000' AND "
                              "headers ? 'x-death' AND headers ? 'x-first-death-queue' AND "
                              "properties->'$reaper'->>'not_replayable' LIKE "
                              "'%%broker.tap_header_cap_bytes%%' AND "
                              "(properties->'$reaper'->>'headers_bytes')::int8 > 65536 AND "
                              "origin_queue = '\"%s\"'",
                              work),
                     N_HEAVY);
    /* The light ones whole. */
    assert_int_equal(tap_sqln("SELECT count(*) FROM dead_letter WHERE encode(body, 'escape') "
                              "LIKE 'lt-%%' AND NOT body_truncated AND headers ? 'h0299' AND "
                              "NOT properties ? '$reaper' AND origin_queue = '\"%s\"'",
                              work),
                     N_LIGHT);
    for (int i = 0; i < 100 && tap_depth(T.tap) != 0; i++) rp_child_drain(T.reaperd, 100);
    assert_int_equal(tap_depth(T.tap), 0);

    /* A replay of a heavy one is refused with that reason. */
    long gate = tap_sqln("SELECT gate_id FROM dead_letter WHERE encode(body, 'escape') = 'hv-7'");
    assert_true(gate > 0);
    char body[200], control[128];
    tap_plain(control, sizeof control, "control");
    snprintf(body, sizeof body, "{\"v\":1,\"op\":\"answer\",\"gate\":%ld,\"choice\":\"replay\"}",
             gate);
    itest_reply r;
    if (itest_request(T.amqp, control, "application/json", body, strlen(body), NULL, true,
                      "hdr-1", &r, 20000) != 0)
        fail_msg("no reply; reaperd said:\n%s", T.reaperd->log);
    fprintf(stderr, "replay of a heavy one: %.*s\n", (int)r.len, r.body);
    assert_non_null(strstr(r.body, "\"ok\":false"));
    assert_non_null(strstr(r.body, "conflict"));
    assert_non_null(strstr(r.body, "broker.tap_header_cap_bytes"));
    itest_reply_free(&r);
    assert_int_equal(tap_sqln("SELECT count(*) FROM gate WHERE id = %ld AND answer IS NULL", gate),
                     1);
    tap_stop_reaperd(SIGTERM);
    tap_delete_queue(work);
    tap_delete_queue(sink);
    tap_delete_exchange(x);
}

/* GET or DELETE on the management API with curl; the body of a GET (heap),
 * NULL otherwise. */
static char *mgmt(const char *verb, const char *path) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -sf -u \"%s:$(cat '%s')\" -X %s '%s%s'", itest_broker_user(),
             itest_env("REAPER_BROKER_PASSWORD_FILE"), verb,
             itest_env("REAPER_BROKER_MANAGEMENT_URL"), path);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + n, 1, cap - 1 - n, f)) > 0) n += got;
    out[n] = '\0';
    assert_int_equal(pclose(f), 0);
    return out;
}

/* The management API's name of the connection whose client-provided name is
 * want, and its frame_max; false when there is none. */
static bool find_connection(const char *want, char *name, size_t n, long *frame_max) {
    char *text = mgmt("GET", "/api/connections?columns=name,frame_max,client_properties");
    json_t *all = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(all);
    bool found = false;
    size_t i;
    json_t *c;
    json_array_foreach(all, i, c) {
        const char *cn = json_string_value(
            json_object_get(json_object_get(c, "client_properties"), "connection_name"));
        if (cn == NULL || strcmp(cn, want) != 0) continue;
        snprintf(name, n, "%s", json_string_value(json_object_get(c, "name")));
        *frame_max = (long)json_integer_value(json_object_get(c, "frame_max"));
        found = true;
    }
    json_decref(all);
    return found;
}

static int log_count(const char *needle) {
    int n = 0;
    for (const char *p = T.reaperd->log; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void test_connection_of_its_own(void **state) {
    (void)state;
    char dlq[128], work[128], want[160], name[256], path[512], control[128];
    tap_dead_letter_source("own", -1, work, dlq, sizeof work);
    tap_start_reaperd();
    assert_true(rp_child_wait_for(T.reaperd, "\"msg\":\"tap connected\"", 10000));
    snprintf(want, sizeof want, "reaperd tap %s", T.tap);
    long frame_max = 0;
    long long t0 = itest_mono_ms(); /* the API lists a connection a moment late */
    bool found = false;
    while (!(found = find_connection(want, name, sizeof name, &frame_max)) &&
           itest_mono_ms() - t0 < 15000)
        rp_child_drain(T.reaperd, 500);
    if (!found) fprintf(stderr, "%s\n", T.reaperd->log);
    assert_true(found);
    fprintf(stderr, "the tap's connection %s: frame_max %ld\n", name, frame_max);
    /* The broker's own frame_max (its default; RabbitMQ takes the smaller). */
    assert_int_equal(frame_max, 131072);
    assert_non_null(strstr(T.reaperd->log, "\"frame_max\":\"131072\""));

    /* The broker closes it: the daemon's connection stays, control is
     * answered, and the tap connects again and parks. */
    char *enc = malloc(strlen(name) * 3 + 1);
    assert_non_null(enc);
    size_t k = 0;
    for (const char *p = name; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '.' || *p == '-' || *p == '_')
            enc[k++] = *p;
        else
            k += (size_t)sprintf(enc + k, "%%%02X", (unsigned char)*p);
    }
    enc[k] = '\0';
    snprintf(path, sizeof path, "/api/connections/%s", enc);
    free(enc);
    free(mgmt("DELETE", path));
    assert_true(rp_child_wait_for(T.reaperd, "the tap's broker connection is down", 15000));
    tap_plain(control, sizeof control, "control");
    itest_reply r;
    const char *status = "{\"v\":1,\"op\":\"status\"}";
    assert_int_equal(itest_request(T.amqp, control, "application/json", status, strlen(status),
                                   NULL, true, "own-1", &r, 10000),
                     0);
    assert_non_null(strstr(r.body, "\"ok\":true"));
    itest_reply_free(&r);
    t0 = itest_mono_ms();
    while (log_count("\"msg\":\"tap connected\"") < 2 && itest_mono_ms() - t0 < 30000)
        rp_child_drain(T.reaperd, 200);
    assert_int_equal(log_count("\"msg\":\"tap connected\""), 2);
    assert_int_equal(log_count("\"msg\":\"broker connected\""), 1);
    assert_int_equal(log_count("\"broker unreachable"), 0);
    tap_publish(work, "own", 20);
    tap_reject(work, 20);
    tap_wait_parked("own", 20, 30000);
    tap_source_done(work, dlq);
}

static int setup(void **state) {
    (void)state;
    return tap_world_setup("taphdr");
}

static int teardown(void **state) {
    (void)state;
    return tap_world_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_headers_counted),
        cmocka_unit_test(test_connection_of_its_own),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
