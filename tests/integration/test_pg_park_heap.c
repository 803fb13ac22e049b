/*
 * The park session's heap hint (rp__pg_store_keep_heap, rp_pg_store_internal.h)
 * against the real database: a store with the hint the tap's sessions have
 * makes its server backend build and drop one text of that size when its
 * session is set up, once, and a plain store does not. Seen from outside
 * through each backend's peak resident memory (/proc/<pid>/status, VmHWM):
 * after the same first call, the hinted backend's peak is the hint's size
 * above the plain one's. Then both park the same batches (250 dead letters
 * a transaction at most, two outstanding, as the tap sends them) and the
 * hinted one parks them as the plain one does; each backend's page faults
 * over them are printed (what the hint is for shows in a storm, where
 * bench/tap counts them: bench/REPORT.md, "The park's memory in PostgreSQL").
 * Skips when the server is not on this machine (its /proc entry
 * unreadable).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"
#include "pg_fixture.h"
#include "rp_park.h"
#include "rp_pg_park_batch.h"
#include "rp_pg_store_internal.h" /* the batch park and the hint: internal to the adapter */

#define STR(s) ((rp_opt_str){true, {(const uint8_t *)(s), sizeof(s) - 1}})

enum { PER_TXN = 250, ROUNDS = 6 };
#define HINT_BYTES (8u * 1024u * 1024u)

/* A storm's dead letter: about what bench/tap's carry (x-death headers as
 * the broker sets them, a short body). */
static const char headers_json[] =
    "{\"x-death\":[{\"count\":1,\"reason\":\"expired\",\"queue\":\"vibey.orders\","
    "\"time\":{\"$timestamp\":1700000000},\"exchange\":\"\",\"routing-keys\":[\"vibey.orders\"],"
    "\"original-expiration\":\"0\"}],\"x-first-death-exchange\":\"\","
    "\"x-first-death-queue\":\"vibey.orders\",\"x-first-death-reason\":\"expired\"}";
static const char props_json[] = "{\"content_type\":\"application/json\",\"delivery_mode\":2}";

typedef struct letters {
    rp_xdeath death[PER_TXN];
    rp_pg_dl_handle handle[PER_TXN];
    rp_dl_message msg[PER_TXN];
    char ids[PER_TXN][48];
    rp_dead_letter facts[PER_TXN];
    rp_verdict v[PER_TXN];
    rp_pg_park_item items[PER_TXN];
} letters;

static void make_letters(pgfx *f, letters *b, const char *prefix, int round) {
    static const uint8_t body[] = "order 1234 1700000000000000";
    memset(b, 0, sizeof *b);
    for (size_t i = 0; i < PER_TXN; i++) {
        snprintf(b->ids[i], sizeof b->ids[i], "%s-%d-%zu", prefix, round, i);
        b->death[i].queue = STR("vibey.orders");
        b->death[i].reason = STR("expired");
        b->death[i].time = (rp_opt_i64){true, 1700000000};
        b->death[i].count = (rp_opt_i64){true, 1};
        rp_dl_message *m = &b->msg[i];
        m->headers.message_id = (rp_opt_str){true, {(const uint8_t *)b->ids[i], strlen(b->ids[i])}};
        m->headers.first_death_queue = STR("vibey.orders");
        m->headers.first_death_reason = STR("expired");
        m->headers.x_death = &b->death[i];
        m->headers.n_x_death = 1;
        m->body = (rp_bytes){body, sizeof body - 1};
        b->handle[i].headers_json = headers_json;
        b->handle[i].properties_json = props_json;
        m->handle = &b->handle[i];
        assert_int_equal(rp_dead_letter_examine(&m->headers, "/", "vibey.orders.dlq", f->dlq,
                                                m->body, &b->facts[i]),
                         RP_OK);
        assert_int_equal(rp_judge_dead_letter(&b->facts[i], "/", "vibey.orders.dlq", &b->v[i]),
                         RP_OK);
        b->items[i] = (rp_pg_park_item){"/", "vibey.orders.dlq", m, &b->facts[i], &b->v[i], {0}};
    }
}

static void letters_cleanup(letters *b) {
    for (size_t i = 0; i < PER_TXN; i++) {
        rp_verdict_cleanup(&b->v[i]);
        rp_dead_letter_cleanup(&b->facts[i]);
    }
}

/* One "Key:  value kB" line of /proc/<pid>/status, in bytes; -1 when
 * unreadable. */
static long long status_bytes(int pid, const char *key) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) return -1;
    long long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, fp))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtoll(line + kl + 1, NULL, 10) * 1024;
            break;
        }
    fclose(fp);
    return v;
}

/* The minor page faults of process pid so far (/proc/<pid>/stat field 10);
 * -1 when unreadable. */
static long long minor_faults(int pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (fp == NULL) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the fields after the command: state is 3 */
    if (p == NULL) return -1;
    int field = 2;
    for (const char *q = p + 1; *q; q++)
        if (*q == ' ' && ++field == 10) return strtoll(q + 1, NULL, 10);
    return -1;
}

/* The session set up by a first call; its backend's pid. */
static int first_call(pgfx *f) {
    bool parked = true;
    letters *b = malloc(sizeof *b);
    assert_non_null(b);
    make_letters(f, b, "first", 0);
    assert_int_equal(f->ports.dead_letters.is_parked(f->ports.dead_letters.self, &b->facts[0],
                                                     &parked),
                     RP_OK);
    assert_false(parked);
    letters_cleanup(b);
    free(b);
    return PQbackendPID(rp_pg_conn_handle(f->conn));
}

/* Parks ROUNDS x 2 transactions of various sizes through f's store, two
 * outstanding at a time; the faults of its backend meanwhile. */
static long long park_rounds(pgfx *f, int pid, const char *prefix) {
    static const size_t sizes[] = {250, 40, 180, 90, 250, 12, 130, 70};
    letters *b[2] = {malloc(sizeof(letters)), malloc(sizeof(letters))};
    assert_non_null(b[0]);
    assert_non_null(b[1]);
    long long before = minor_faults(pid);
    for (int r = 0; r < ROUNDS; r++) {
        size_t n[2] = {sizes[(2 * r) % 8], sizes[(2 * r + 1) % 8]};
        for (int k = 0; k < 2; k++) make_letters(f, b[k], prefix, 2 * r + k);
        for (int k = 0; k < 2; k++)
            assert_int_equal(rp_pg_park_send(f->store, b[k]->items, n[k]), RP_OK);
        for (int k = 0; k < 2; k++) {
            assert_int_equal(rp_pg_park_recv(f->store, b[k]->items, n[k]), RP_OK);
            for (size_t i = 0; i < n[k]; i++) assert_true(b[k]->items[i].result.parked);
            letters_cleanup(b[k]);
        }
    }
    long long after = minor_faults(pid);
    free(b[0]);
    free(b[1]);
    return before < 0 || after < 0 ? -1 : after - before;
}

static void test_hinted_session_sets_its_heap_up(void **state) {
    (void)state;
    pgfx *plain = pgfx_new("parkheap");
    pgfx *hinted = pgfx_attach(plain->schema);
    rp__pg_store_keep_heap(hinted->store, HINT_BYTES);
    int pp = first_call(plain), hp = first_call(hinted);
    long long ph = status_bytes(pp, "VmHWM"), hh = status_bytes(hp, "VmHWM");
    if (ph < 0 || hh < 0) {
        pgfx_free(hinted);
        pgfx_free(plain);
        printf("the server's backends are not on this machine: skipped\n");
        skip();
    }
    printf("peak resident memory after the first call: plain backend %lld KiB, hinted %lld KiB\n",
           ph / 1024, hh / 1024);
    /* The hinted backend made and dropped a text of HINT_BYTES: its peak
     * is that much above the plain one's (the rest of both is the same). */
    assert_true(hh - ph >= (long long)HINT_BYTES * 3 / 4);
    long long pf = park_rounds(plain, pp, "plain");
    long long hf = park_rounds(hinted, hp, "hinted");
    printf("page faults over %d transactions: plain backend %lld, hinted %lld\n", 2 * ROUNDS, pf,
           hf);
    /* The hint changes nothing the park writes. */
    assert_int_equal(pgfx_i64(plain, "SELECT count(*) FROM dead_letter WHERE identity LIKE "
                                     "'%%/plain-%%'"),
                     pgfx_i64(plain, "SELECT count(*) FROM dead_letter WHERE identity LIKE "
                                     "'%%/hinted-%%'"));
    assert_int_equal(pgfx_i64(plain, "SELECT count(*) FROM job"),
                     pgfx_i64(plain, "SELECT count(*) FROM dead_letter"));
    pgfx_free(hinted);
    pgfx_free(plain);
}

/* The tap's sessions (rp_pg_park_sessions_new) carry the hint: each one's
 * backend, after its first transaction, peaks the hint's size above a
 * plain store's after its first call. */
static void test_tap_sessions_are_hinted(void **state) {
    (void)state;
    pgfx *plain = pgfx_new("parkheaptap");
    int pp = first_call(plain);
    rp_pg_conn *conns[RP_PG_PARK_SESSIONS];
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++)
        assert_non_null(conns[k] = rp_pg_conn_new(itest_env("REAPER_STORE_DSN"), 2));
    rp_pg_park_sessions *ps = rp_pg_park_sessions_new(conns, plain->schema);
    assert_non_null(ps);
    rp_park_batch_port port;
    rp_pg_park_sessions_port(ps, &port);
    letters *b = malloc(sizeof *b);
    assert_non_null(b);
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++) {
        make_letters(plain, b, k == 0 ? "tap0" : "tap1", 0);
        rp_park_batch_item *items = calloc(PER_TXN, sizeof *items);
        assert_non_null(items);
        for (size_t i = 0; i < 10; i++) items[i] = b->items[i];
        assert_int_equal(port.send(port.self, k, items, 10), RP_OK);
        assert_int_equal(port.recv(port.self, k, items, 10), RP_OK);
        for (size_t i = 0; i < 10; i++) assert_true(items[i].result.parked);
        free(items);
        letters_cleanup(b);
    }
    free(b);
    long long ph = status_bytes(pp, "VmHWM");
    for (size_t k = 0; k < RP_PG_PARK_SESSIONS; k++) {
        long long h = status_bytes(PQbackendPID(rp_pg_conn_handle(conns[k])), "VmHWM");
        if (ph < 0 || h < 0) break;
        printf("peak resident memory: plain backend %lld KiB, tap session %zu %lld KiB\n",
               ph / 1024, k, h / 1024);
        assert_true(h - ph >= (long long)HINT_BYTES * 3 / 4);
    }
    rp_pg_park_sessions_free(ps);
    pgfx_free(plain);
    if (ph < 0) skip();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hinted_session_sets_its_heap_up),
        cmocka_unit_test(test_tap_sessions_are_hinted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
