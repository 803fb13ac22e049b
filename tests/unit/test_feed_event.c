/* The events feed without a broker: the message a ledger event becomes
 * (rp_proto_encode_event, SCHEMA.md section 7) for both ledger kinds and
 * bad input, and the gate port wrapper (rp_gate_feed_wrap) that hands every
 * committed answer, and nothing else, to the publisher. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rp_memory.h"
#include "rp_proto.h"
#include "rp_publish.h"

#define NOW ((rp_time_ms)1700000000123LL)

static json_t *body_json(const rp_proto_event_msg *m, rp_encoding enc) {
    const char *ct = rp_encoding_content_type(enc);
    rp_proto_error err;
    json_t *t = rp_proto_to_json((rp_bytes){m->body.ptr, m->body.len},
                                 (rp_bytes){(const uint8_t *)ct, strlen(ct)}, NULL, &err);
    assert_non_null(t);
    return t;
}

static void verdict(rp_verdict *v) {
    rp_verdict_init(v);
    v->condition = RP_COND_HOLDER_GONE;
    v->action = RP_ACTION_SURFACED;
    v->source = RP_SOURCE_BROKER;
    v->measured = 3;
    v->threshold = 0;
    assert_int_equal(rp_verdict_set_object(v, "queue:/:vibey.q"), RP_OK);
}

static void test_verdict_event(void **state) {
    (void)state;
    rp_verdict v;
    verdict(&v);
    rp_ledger_event ev = {.seq = 42, .at = NOW, .kind = RP_LEDGER_QUEUE_REAPED, .verdict = &v};
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        rp_proto_event_msg m;
        memset(&m, 0, sizeof m);
        assert_int_equal(rp_proto_encode_event(&ev, (rp_encoding)e, &m), RP_OK);
        assert_string_equal(m.routing_key, "broker.holder_gone.surfaced");
        assert_string_equal(m.message_id, "ledger-42");
        assert_string_equal(m.type, "QueueReaped");
        assert_int_equal(m.timestamp, 1700000000);
        json_t *b = body_json(&m, (rp_encoding)e);
        assert_string_equal(json_string_value(json_object_get(b, "condition")), "HOLDER_GONE");
        assert_string_equal(json_string_value(json_object_get(b, "object")), "queue:/:vibey.q");
        assert_null(json_object_get(b, "v")); /* no envelope */
        json_decref(b);
        rp_proto_event_msg_cleanup(&m);
        assert_null(m.body.ptr);
    }
    rp_verdict_cleanup(&v);
}

/* The message id is "ledger-%" PRId64 of the sequence, written without a
 * format (issue 21): the same text at the ends of the range. */
static void test_message_id_extremes(void **state) {
    (void)state;
    rp_verdict v;
    verdict(&v);
    const int64_t seqs[] = {0, 1, 9, 10, 99999, INT64_MAX, -1, INT64_MIN};
    for (size_t k = 0; k < sizeof seqs / sizeof *seqs; k++) {
        rp_ledger_event ev = {.seq = seqs[k], .at = NOW, .kind = RP_LEDGER_QUEUE_REAPED,
                              .verdict = &v};
        rp_proto_event_msg m;
        memset(&m, 0, sizeof m);
        assert_int_equal(rp_proto_encode_event(&ev, RP_ENC_MSGPACK, &m), RP_OK);
        char want[64];
        snprintf(want, sizeof want, "ledger-%" PRId64, seqs[k]);
        assert_string_equal(m.message_id, want);
        rp_proto_event_msg_cleanup(&m);
    }
    rp_verdict_cleanup(&v);
}

static void test_answer_event(void **state) {
    (void)state;
    rp_gate_answered a = {.gate_id = 7, .job_id = 9, .kind = RP_GATE_BUS_DEAD_LETTERED,
                          .choice = RP_CHOICE_DISMISS, .outcome = RP_OUTCOME_DISMISSED,
                          .by = NULL};
    rp_ledger_event ev = {.seq = 5, .at = -1500, .kind = RP_LEDGER_GATE_ANSWERED, .answer = &a};
    rp_proto_event_msg m;
    memset(&m, 0, sizeof m);
    assert_int_equal(rp_proto_encode_event(&ev, RP_ENC_JSON, &m), RP_OK);
    assert_string_equal(m.routing_key, "gate.bus_dead_lettered.dismissed");
    assert_string_equal(m.message_id, "ledger-5");
    assert_string_equal(m.type, "GateAnswered");
    assert_int_equal(m.timestamp, -2); /* rounded down */
    json_t *b = body_json(&m, RP_ENC_JSON);
    json_t *want = json_pack("{s:I, s:I, s:s, s:s, s:s, s:n}", "gate", (json_int_t)7, "job",
                             (json_int_t)9, "kind", "bus_dead_lettered", "choice", "dismiss",
                             "outcome", "dismissed", "by");
    assert_true(json_equal(b, want));
    json_decref(b);
    json_decref(want);
    a.by = "ops";
    a.kind = RP_GATE_DELIVERY_EXHAUSTED;
    a.choice = RP_CHOICE_RETRY;
    a.outcome = RP_OUTCOME_RETRIED;
    assert_int_equal(rp_proto_encode_event(&ev, RP_ENC_MSGPACK, &m), RP_OK);
    assert_string_equal(m.routing_key, "gate.delivery_exhausted.retried");
    b = body_json(&m, RP_ENC_MSGPACK);
    assert_string_equal(json_string_value(json_object_get(b, "by")), "ops");
    assert_null(json_object_get(b, "vhost")); /* a gate without one: absent */
    json_decref(b);
    /* A dead-letter gate's vhost (issue #19), in both encodings. */
    a.vhost = "tenant/b";
    for (int e = 0; e < RP_ENC_COUNT_; e++) {
        assert_int_equal(rp_proto_encode_event(&ev, (rp_encoding)e, &m), RP_OK);
        b = body_json(&m, (rp_encoding)e);
        assert_string_equal(json_string_value(json_object_get(b, "vhost")), "tenant/b");
        json_decref(b);
    }
    rp_proto_event_msg_cleanup(&m);
}

static void test_bad_events_refused(void **state) {
    (void)state;
    rp_verdict v;
    verdict(&v);
    rp_gate_answered a = {.gate_id = 1, .job_id = 1, .kind = RP_GATE_DELIVERY_EXHAUSTED,
                          .choice = RP_CHOICE_RETRY, .outcome = RP_OUTCOME_RETRIED};
    rp_proto_event_msg m;
    memset(&m, 0, sizeof m);
    rp_ledger_event none = {.seq = 1, .at = NOW};
    assert_int_equal(rp_proto_encode_event(&none, RP_ENC_JSON, &m), RP_ERR_INVALID);
    rp_ledger_event both = {.seq = 1, .at = NOW, .verdict = &v, .answer = &a};
    assert_int_equal(rp_proto_encode_event(&both, RP_ENC_JSON, &m), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_event(NULL, RP_ENC_JSON, &m), RP_ERR_INVALID);
    rp_ledger_event ok = {.seq = 1, .at = NOW, .answer = &a};
    assert_int_equal(rp_proto_encode_event(&ok, RP_ENC_COUNT_, &m), RP_ERR_INVALID);
    assert_int_equal(rp_proto_encode_event(&ok, RP_ENC_JSON, NULL), RP_ERR_INVALID);
    a.outcome = RP_OUTCOME_COUNT_;
    assert_int_equal(rp_proto_encode_event(&ok, RP_ENC_JSON, &m), RP_ERR_INVALID);
    a.outcome = RP_OUTCOME_RETRIED;
    a.kind = (rp_gate_kind)-1;
    assert_int_equal(rp_proto_encode_event(&ok, RP_ENC_JSON, &m), RP_ERR_INVALID);
    v.condition = RP_COND_COUNT_;
    rp_ledger_event badv = {.seq = 1, .at = NOW, .verdict = &v};
    assert_int_equal(rp_proto_encode_event(&badv, RP_ENC_JSON, &m), RP_ERR_INVALID);
    assert_null(m.body.ptr);
    rp_verdict_cleanup(&v);
}

/* ---- rp_gate_feed_wrap ---- */

typedef struct recorder {
    size_t n;
    rp_status answer_with;
    int64_t seq, gate, job;
    rp_gate_kind kind;
    rp_outcome outcome;
    char by[32];
    const char *ledger_kind;
} recorder;

static rp_status record(void *self, const rp_ledger_event *ev) {
    recorder *r = self;
    r->n++;
    assert_null(ev->verdict);
    assert_non_null(ev->answer);
    r->seq = ev->seq;
    r->ledger_kind = ev->kind;
    r->gate = ev->answer->gate_id;
    r->job = ev->answer->job_id;
    r->kind = ev->answer->kind;
    r->outcome = ev->answer->outcome;
    snprintf(r->by, sizeof r->by, "%s", ev->answer->by ? ev->answer->by : "(null)");
    return r->answer_with;
}

/* A parked job with its delivery_exhausted gate; returns the gate id. */
static int64_t parked_gate(rp_memory *m, const rp_ports *p, int64_t *job) {
    rp_mem_job j = {.project = "alpha", .kind = "k", .state = RP_JOB_LEASED, .attempts = 7,
                    .max_attempts = 7, .lease_known = true, .lease_expires_at = NOW - 1000};
    assert_int_equal(rp_memory_add_job(m, &j, job), RP_OK);
    rp_lease_query q = {.now = NOW, .lock = true};
    rp_lease_batch held;
    assert_int_equal(p->store.take_leases(p->store.self, &q, 1, &held), RP_OK);
    rp_verdict v;
    rp_verdict_init(&v);
    v.condition = RP_COND_POISON;
    v.action = RP_ACTION_PARKED;
    assert_int_equal(rp_verdict_set_object(&v, "job:1"), RP_OK);
    rp_lease_move mv = {.job = &held.jobs[0], .v = &v};
    assert_int_equal(p->store.commit_leases(p->store.self, &mv, 1), RP_OK);
    assert_int_equal(mv.result, RP_OK);
    rp_verdict_cleanup(&v);
    return rp_memory_gate(m, rp_memory_n_gates(m) - 1)->id;
}

static void test_gate_feed_publishes_committed_answers_only(void **state) {
    (void)state;
    rp_memory *m = rp_memory_new();
    rp_memory_set_now(m, NOW);
    rp_ports p;
    rp_memory_ports(m, &p);
    recorder rec = {0};
    p.publisher = (rp_publisher_port){.self = &rec, .publish = record};
    rp_gate_feed feed;
    rp_gate_feed_wrap(&feed, &p);
    int64_t job;
    int64_t gate = parked_gate(m, &p, &job);

    rp_answer_result a;
    /* Refused or unknown: nothing committed, nothing published. */
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_REPLAY, "ops", NULL, &a),
                     RP_ERR_CONFLICT);
    assert_int_equal(p.gates.answer(p.gates.self, 999, RP_CHOICE_RETRY, "ops", NULL, &a),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rec.n, 0);
    /* Committed: its GateAnswered ledger row, published once. */
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_RETRY, "ops", NULL, &a), RP_OK);
    assert_true(a.committed);
    assert_int_equal(rec.n, 1);
    const rp_mem_event *last = rp_memory_ledger(m, rp_memory_n_ledger(m) - 1);
    assert_string_equal(last->kind, RP_LEDGER_GATE_ANSWERED);
    assert_int_equal(rec.seq, last->seq);
    assert_string_equal(rec.ledger_kind, RP_LEDGER_GATE_ANSWERED);
    assert_int_equal(rec.gate, gate);
    assert_int_equal(rec.job, job);
    assert_int_equal(rec.kind, RP_GATE_DELIVERY_EXHAUSTED);
    assert_int_equal(rec.outcome, RP_OUTCOME_RETRIED);
    assert_string_equal(rec.by, "ops");
    /* Already answered: commits nothing, publishes nothing. */
    assert_int_equal(p.gates.answer(p.gates.self, gate, RP_CHOICE_DISMISS, NULL, NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_ALREADY_ANSWERED);
    assert_false(a.committed);
    assert_int_equal(rec.n, 1);
    /* A publisher that fails does not undo or fail the answer. */
    int64_t job2;
    int64_t gate2 = parked_gate(m, &p, &job2);
    rec.answer_with = RP_ERR_UNAVAILABLE;
    assert_int_equal(p.gates.answer(p.gates.self, gate2, RP_CHOICE_DISMISS, NULL, NULL, &a), RP_OK);
    assert_int_equal(a.outcome, RP_OUTCOME_DISMISSED);
    assert_int_equal(rec.n, 2);
    assert_string_equal(rec.by, "(null)");
    assert_int_equal(rp_memory_job(m, job2)->state, RP_JOB_FAILED);
    /* list goes through to the wrapped port. */
    rp_gate_query gq = {.state = RP_GATE_STATE_ALL, .limit = 10};
    rp_gate *gates;
    size_t n;
    assert_int_equal(p.gates.list(p.gates.self, &gq, &gates, &n, NULL), RP_OK);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) rp_gate_cleanup(&gates[i]);
    free(gates);
    /* No publisher: answers still work. */
    rp_ports p2;
    rp_memory_ports(m, &p2);
    p2.publisher.publish = NULL;
    rp_gate_feed feed2;
    rp_gate_feed_wrap(&feed2, &p2);
    int64_t job3;
    int64_t gate3 = parked_gate(m, &p2, &job3);
    assert_int_equal(p2.gates.answer(p2.gates.self, gate3, RP_CHOICE_RETRY, NULL, NULL, &a), RP_OK);
    assert_true(a.committed);
    rp_memory_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdict_event),
        cmocka_unit_test(test_answer_event),
        cmocka_unit_test(test_message_id_extremes),
        cmocka_unit_test(test_bad_events_refused),
        cmocka_unit_test(test_gate_feed_publishes_committed_answers_only),
    };
    return cmocka_run_group_tests_name("feed_event", tests, NULL, NULL);
}
