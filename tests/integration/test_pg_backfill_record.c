/*
 * The backfill's record of a quorum dead-letter queue it has read
 * (adapters/postgres/rp_pg_replay.h) against the real database: the count
 * of messages that lay behind the one read is kept and read back (issue
 * #5), an unknown count is stored as null and read as unknown, and a
 * record written before the count was kept reads as unknown too; queues
 * and vhosts are told apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>

#include "pg_fixture.h"
#include "rp_pg_replay.h"

static void was_read(pgfx *f, const char *vhost, const char *queue, bool want_read,
                     int64_t want_unread) {
    bool read = !want_read;
    int64_t unread = 12345;
    assert_int_equal(rp_pg_backfill_was_read(f->store, vhost, queue, &read, &unread), RP_OK);
    assert_int_equal(read, want_read);
    assert_int_equal(unread, want_unread);
}

static void test_backfill_record_keeps_the_remainder(void **state) {
    (void)state;
    pgfx *f = pgfx_new("bfrec");
    was_read(f, "/", "q.dlq", false, -1);

    assert_int_equal(rp_pg_backfill_mark_read(f->store, "/", "q.dlq", 3, 2), RP_OK);
    was_read(f, "/", "q.dlq", true, 2);
    was_read(f, "other", "q.dlq", false, -1);
    was_read(f, "/", "q.dlq2", false, -1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE kind = "
                                 "'DeadLetterBackfillRead' AND payload = '{\"vhost\": \"/\", "
                                 "\"queue\": \"q.dlq\", \"read\": 3, \"unread\": 2}'::jsonb"),
                     1);

    /* Nothing behind the read, and a count that was not known. */
    assert_int_equal(rp_pg_backfill_mark_read(f->store, "/", "all.dlq", 1, 0), RP_OK);
    was_read(f, "/", "all.dlq", true, 0);
    assert_int_equal(rp_pg_backfill_mark_read(f->store, "v", "unknown.dlq", 3, -1), RP_OK);
    was_read(f, "v", "unknown.dlq", true, -1);
    assert_int_equal(pgfx_i64(f, "SELECT count(*) FROM ledger WHERE payload->>'queue' = "
                                 "'unknown.dlq' AND jsonb_typeof(payload->'unread') = 'null'"),
                     1);

    /* A record written before the count was kept. */
    pgfx_exec(f, "INSERT INTO ledger (kind, project_id, payload) VALUES "
                 "('DeadLetterBackfillRead', 'bus', '{\"vhost\": \"/\", \"queue\": \"old.dlq\", "
                 "\"read\": 100}')");
    was_read(f, "/", "old.dlq", true, -1);

    /* The first record of a queue is the one read (there is one). */
    assert_int_equal(rp_pg_backfill_mark_read(f->store, "/", "q.dlq", 3, 7), RP_OK);
    was_read(f, "/", "q.dlq", true, 2);
    pgfx_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backfill_record_keeps_the_remainder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
