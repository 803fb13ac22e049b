/*
 * The batch replay calls on the real PostgreSQL (rp_pg_replay.h, "many"):
 * one transaction locks many gates and commits the claims of those that may
 * go ahead; one settles many, each decided as the single settle decides it:
 * an open gate claimed by this process is settled (its job, its ledger
 * event), an answered one gives its first answer, one claimed by another
 * process settles nothing (busy: the fence that keeps a message from being
 * published twice), an id that is no gate is not found.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pg_fixture.h"
#include "rp_pg_replay.h"

/* An open bus_dead_lettered gate on a job of its own; returns its id. */
static int64_t open_gate(pgfx *f) {
    int64_t job = pgfx_expired(f, 1, "rmany", 1, 5, "1 minute");
    return pgfx_i64(f, "INSERT INTO gate (job_id, kind, question, choices) VALUES (%" PRId64
                       ", 'bus_dead_lettered', 'q', ARRAY['replay','dismiss']) RETURNING id",
                    job);
}

static void test_lock_claim_settle_many(void **state) {
    (void)state;
    pgfx *f = pgfx_new("rmany");
    rp_pg_store_set_claimer(f->store, "me");
    int64_t a = open_gate(f), b = open_gate(f), answered = open_gate(f), other = open_gate(f);
    pgfx_exec(f, "UPDATE gate SET answer = 'dismiss', answered_by = 'x', answered_at = now() "
                 "WHERE id = %" PRId64, answered);
    pgfx_exec(f, "UPDATE gate SET claimed_by = 'someone', claimed_at = now() WHERE id = %" PRId64,
              other);
    int64_t ids[] = {a, b, answered, other, 999999999};
    const char *by[] = {"u", "u", "u", "u", "u"};
    rp_pg_replay_row rows[5];
    rp_status sts[5];
    assert_int_equal(rp_pg_replay_lock_many(f->store, ids, 5, by, rows, sts), RP_OK);
    assert_int_equal(sts[0], RP_OK);
    assert_true(rows[0].open);
    assert_true(rows[1].open);
    assert_true(rows[2].answered);
    assert_false(rows[2].open);
    assert_int_equal(rows[3].claim, RP_GATE_CLAIM_LIVE);
    assert_string_equal(rows[3].claimed_by, "someone");
    assert_int_equal(sts[4], RP_ERR_NOT_FOUND);
    for (int i = 0; i < 5; i++) rp_pg_replay_row_cleanup(&rows[i]);
    /* Claims a and b in the lock's transaction, one commit. */
    int64_t go[] = {a, b};
    rp_time_ms at[2];
    bool claimed[2];
    assert_int_equal(rp_pg_replay_claim_many_commit(f->store, go, 2, at, claimed), RP_OK);
    assert_true(claimed[0] && claimed[1]);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE claimed_by = 'me'"), 2);

    /* b's claim taken over by another meanwhile: b settles nothing. */
    pgfx_exec(f, "UPDATE gate SET claimed_by = 'thief' WHERE id = %" PRId64, b);
    const char *note[] = {NULL, NULL, NULL, NULL, NULL};
    rp_answer_result out[5];
    assert_int_equal(rp_pg_replay_settle_many(f->store, NULL, ids, 5, by, note, out, sts), RP_OK);
    assert_int_equal(sts[0], RP_OK);
    assert_true(out[0].committed);
    assert_int_equal(out[0].outcome, RP_OUTCOME_REPLAYED);
    assert_int_equal(sts[1], RP_ERR_BUSY);
    assert_string_equal(out[1].claimed_by, "thief");
    assert_int_equal(sts[2], RP_OK);
    assert_int_equal(out[2].outcome, RP_OUTCOME_ALREADY_ANSWERED);
    assert_false(out[2].committed);
    assert_int_equal(sts[3], RP_ERR_BUSY);
    assert_int_equal(sts[4], RP_ERR_NOT_FOUND);
    /* Only a is answered, with its job and one ledger event. */
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE answer = 'replay'"), 1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                 " AND answer = 'replay' AND answered_by = 'u' AND claimed_by "
                                 "IS NULL", a),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered' AND "
                                 "(payload->>'gate')::int8 = %" PRId64, a),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job j JOIN gate g ON g.job_id = j.id "
                                 "WHERE g.id = %" PRId64 " AND j.state = 'succeeded'", a),
                     1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                 " AND answer IS NULL AND claimed_by = 'thief'", b),
                     1);
    pgfx_free(f);
}

/* One batch of gates settled by one statement: each gets what a single
 * answer gives it (the gate answered by its own user, its job succeeded
 * and its lease gone, one GateAnswered event whose payload carries the
 * request's own "by" as note only when there is one), and the results
 * name each gate's own event and job. */
static void test_settle_many_each_its_own(void **state) {
    (void)state;
    pgfx *f = pgfx_new("rmany2");
    rp_pg_store_set_claimer(f->store, "me");
    int64_t ids[3];
    for (int i = 0; i < 3; i++) ids[i] = open_gate(f);
    rp_pg_replay_row rows[3];
    rp_status sts[3];
    const char *by[] = {"u1", "u2", "u3"};
    assert_int_equal(rp_pg_replay_lock_many(f->store, ids, 3, by, rows, sts), RP_OK);
    for (int i = 0; i < 3; i++) rp_pg_replay_row_cleanup(&rows[i]);
    rp_time_ms at[3];
    bool claimed[3];
    assert_int_equal(rp_pg_replay_claim_many_commit(f->store, ids, 3, at, claimed), RP_OK);
    const char *note[] = {NULL, "ops-bot", NULL};
    rp_answer_result out[3];
    assert_int_equal(rp_pg_replay_settle_many(f->store, NULL, ids, 3, by, note, out, sts), RP_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sts[i], RP_OK);
        assert_true(out[i].committed);
        assert_int_equal(out[i].outcome, RP_OUTCOME_REPLAYED);
        assert_int_equal(out[i].choice, RP_CHOICE_REPLAY);
        int64_t job = pgfx_i64(f, "SELECT job_id FROM gate WHERE id = %" PRId64, ids[i]);
        assert_int_equal(out[i].job_id, job);
        assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM gate WHERE id = %" PRId64
                                     " AND answer = 'replay' AND answered_by = '%s' AND "
                                     "answered_at IS NOT NULL AND claimed_by IS NULL AND "
                                     "claimed_at IS NULL", ids[i], by[i]),
                         1);
        assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM job WHERE id = %" PRId64 " AND state "
                                     "= 'succeeded' AND finished_at IS NOT NULL AND succeeded_at "
                                     "IS NOT NULL AND lease_owner IS NULL AND lease_expires_at "
                                     "IS NULL", job),
                         1);
        char want[300];
        snprintf(want, sizeof want,
                 "jsonb_build_object('gate', %" PRId64 "::int8, 'job', %" PRId64 "::int8, 'kind', "
                 "'bus_dead_lettered', 'choice', 'replay', 'outcome', 'replayed', 'by', '%s')%s",
                 ids[i], job, by[i], note[i] != NULL ? " || '{\"note\": \"ops-bot\"}'" : "");
        assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered' AND "
                                     "seq = %" PRId64 " AND payload = %s AND "
                                     "floor(extract(epoch FROM at) * 1000)::int8 = %" PRId64,
                                  out[i].event.seq, want, out[i].event.at),
                         1);
    }
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = 'GateAnswered'"), 3);
    pgfx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_claim_settle_many),
        cmocka_unit_test(test_settle_many_each_its_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
