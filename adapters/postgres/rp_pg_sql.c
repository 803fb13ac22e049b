/* Every statement the PostgreSQL store prepares, in one place to review
 * (rp_pg_store_internal.h). Times travel as Unix milliseconds (int8) and,
 * for the lease fence, microseconds; parameters are cast in the text, so no
 * parameter types are declared. */
#include <stdlib.h>
#include <string.h>

#include "rp_gate.h"
#include "rp_pg_store_internal.h"

/* A timestamptz as Unix ms, rounded down (exact: extract gives numeric). */
#define MS(x) "floor(extract(epoch FROM " x ") * 1000)::int8"
/* ... and as Unix microseconds, exactly: the fence compares these. */
#define US(x) "(extract(epoch FROM " x ") * 1000000)::int8"
/* Unix ms (a parameter) as a timestamptz. */
#define TS(p) "to_timestamp(" p "::int8 / 1000.0)"

/* The row as it was when taken: a move changes nothing unless every one of
 * these still holds ($1 id, $2 lease_owner, $3 attempts, $4 expiry in us). */
#define FENCE                                                              \
    "id = $1::int8 AND state = 'leased' AND lease_owner IS NOT DISTINCT FROM " \
    "$2::text AND attempts = $3::int4 AND " US("lease_expires_at") " = $4::int8"

#define TAKE                                                                        \
    "SELECT id, project_id, kind, attempts, max_attempts, lease_owner, "            \
    MS("lease_expires_at") ", " US("lease_expires_at") " FROM {s}.job "             \
    "WHERE state = 'leased' AND id > $1::int8 "                                     \
    "AND lease_expires_at < now() - $2::int8 * interval '1 second' "                \
    "AND ($3::text IS NULL OR project_id = $3::text) ORDER BY id LIMIT $4::int8"

/* The gates statement counts RP_GATE_TOTAL_CAP + 1 matches (below). */
_Static_assert(RP_GATE_TOTAL_CAP + 1 == 10001, "GATE_CAP_PLUS_ONE is RP_GATE_TOTAL_CAP + 1");

const rp__pg_sql_def rp__pg_sql[RP__PG_STMT_COUNT_] = {
    /* clock_timestamp(), not now(): now() would be the start of a
     * transaction if one were open. */
    [RP__PG_NOW] = {"now", "SELECT " MS("clock_timestamp()")},

    /* The plans of a row transaction (take, then move or release). The
     * session plans every statement afresh (force_custom_plan, see
     * rp_pg_store.c), which is safe but costs a planning per statement; the
     * reap's own statements run once per row, so inside their transaction
     * cached plans are allowed again, with every plan but the right one
     * ruled out: the take walks job_leased_by_id in id order from after_id
     * (no sequential scan, no bitmap scan, no sort: each of those reads
     * every expired lease for every row taken, which is what a planner
     * without statistics chose here, 500 rows/s instead of 2,900), and the
     * move is a primary key lookup. Whatever the table held when a plan was
     * cached, and whatever statistics it has, the plan stays an index walk.
     * The settings end with the transaction. */
    [RP__PG_LEASE_PLANS] = {"lease_plans",
                            "SELECT set_config('enable_seqscan', 'off', true), "
                            "set_config('enable_bitmapscan', 'off', true), "
                            "set_config('enable_sort', 'off', true), "
                            "set_config('plan_cache_mode', 'auto', true)"},

    /* $1 after_id, $2 grace seconds, $3 project or NULL, $4 the batch
     * size. Lowest id first, over job_leased_by_id (0002). */
    [RP__PG_TAKE_LOCK] = {"take_lock", TAKE " FOR UPDATE SKIP LOCKED"},
    [RP__PG_TAKE_READ] = {"take_read", TAKE},

    /* FENCE, $5 the ledger payload. Requeue: ready, lease cleared, run_after
     * not in the past, attempts unchanged. */
    [RP__PG_MOVE_REQUEUE] =
        {"move_requeue",
         "WITH moved AS (UPDATE {s}.job SET state = 'ready', lease_owner = NULL, "
         "lease_expires_at = NULL, run_after = greatest(run_after, now()), updated_at = now() "
         "WHERE " FENCE " RETURNING project_id) "
         "INSERT INTO {s}.ledger (kind, project_id, payload) "
         "SELECT 'QueueReaped', project_id, $5::jsonb FROM moved "
         "RETURNING seq, " MS("at")},
    /* Park: awaiting_human, lease cleared, one attempt refunded, and a
     * delivery_exhausted gate whose question names the job and attempts. */
    [RP__PG_MOVE_PARK] =
        {"move_park",
         "WITH moved AS (UPDATE {s}.job SET state = 'awaiting_human', lease_owner = NULL, "
         "lease_expires_at = NULL, attempts = greatest(attempts - 1, 0), updated_at = now() "
         "WHERE " FENCE " RETURNING id, project_id, kind, max_attempts), "
         "gate AS (INSERT INTO {s}.gate (job_id, kind, question, choices) "
         "SELECT id, 'delivery_exhausted', format('Job %s (kind %L, project %L) was handed "
         "out %s times (max_attempts %s) and never settled; one attempt is refunded. Retry it "
         "once more, or dismiss it?', id, kind, project_id, $3::int4, max_attempts), "
         "ARRAY['retry', 'dismiss'] FROM moved RETURNING id), "
         "ev AS (INSERT INTO {s}.ledger (kind, project_id, payload) "
         "SELECT 'QueueReaped', project_id, $5::jsonb FROM moved RETURNING seq, at) "
         "SELECT ev.seq, " MS("ev.at") ", gate.id FROM ev, gate"},

    /* A whole lease batch in one statement, the commit's first try
     * (rp_pg_lease.c): MOVE_REQUEUE or MOVE_PARK for every row, as
     * arrays in id order: $1 ids, $2 lease owners, $3 attempts, $4 expiries
     * in us (the fences), $5 ledger payloads, $6 park (true) or requeue.
     * The ledger numbers are drawn in id order for the rows that moved, so
     * that the events' order is the rows' order, as row by row; a row the
     * fence refuses is absent from the result. If any row fails (a trigger,
     * a constraint) the statement fails whole and the commit goes row by
     * row, each in a savepoint. */
    [RP__PG_MOVE_BATCH] =
        {"move_batch",
         "WITH u AS (SELECT * FROM unnest($1::int8[], $2::text[], $3::int4[], $4::int8[], "
         "$5::text[], $6::bool[]) WITH ORDINALITY AS i(id, owner, attempts, exp_us, payload, "
         "park, ord)), "
         "moved AS (UPDATE {s}.job j SET "
         "state = CASE WHEN u.park THEN 'awaiting_human' ELSE 'ready' END, "
         "lease_owner = NULL, lease_expires_at = NULL, "
         "run_after = CASE WHEN u.park THEN j.run_after ELSE greatest(j.run_after, now()) END, "
         "attempts = CASE WHEN u.park THEN greatest(j.attempts - 1, 0) ELSE j.attempts END, "
         "updated_at = now() FROM u "
         "WHERE j.id = u.id AND j.state = 'leased' AND j.lease_owner IS NOT DISTINCT FROM u.owner "
         "AND j.attempts = u.attempts AND " US("j.lease_expires_at") " = u.exp_us "
         "RETURNING j.id, j.project_id, j.kind, j.max_attempts, u.attempts AS taken, u.payload, "
         "u.park, u.ord), "
         "seqd AS (SELECT m.*, nextval({ledger_seq}) AS seq FROM "
         "(SELECT * FROM moved ORDER BY ord) m), "
         "gate AS (INSERT INTO {s}.gate (job_id, kind, question, choices) "
         "SELECT id, 'delivery_exhausted', format('Job %s (kind %L, project %L) was handed "
         "out %s times (max_attempts %s) and never settled; one attempt is refunded. Retry it "
         "once more, or dismiss it?', id, kind, project_id, taken, max_attempts), "
         "ARRAY['retry', 'dismiss'] FROM seqd WHERE park ORDER BY ord RETURNING job_id), "
         "ev AS (INSERT INTO {s}.ledger (seq, kind, project_id, payload) OVERRIDING SYSTEM VALUE "
         "SELECT seq, 'QueueReaped', project_id, payload::jsonb FROM seqd ORDER BY seq "
         "RETURNING seq, at) "
         "SELECT s.id, ev.seq, " MS("ev.at") " FROM seqd s JOIN ev ON ev.seq = s.seq "
         "ORDER BY s.ord"},

    /* $1 grace seconds. min() over job_leased_by_expiry. */
    [RP__PG_NEXT_DEADLINE] = {"next_deadline",
                              "SELECT " MS("min(lease_expires_at) + $1::int8 * interval '1 second'")
                              " FROM {s}.job WHERE state = 'leased' "
                              "AND lease_expires_at IS NOT NULL"},

    /* $1 project or NULL, $2 now (ms). Per project, the claimable job whose
     * wait began first: the later of run_after and the dependency's
     * finished_at (greatest() ignores a NULL), lowest id on a tie.
     * One query, index walks only, whatever the ready backlog holds (a
     * DISTINCT ON over every claimable row sorted them all: 370 ms for
     * 500,000 ready rows, against 1-3 ms here):
     *   p:     the projects that have ready rows, one index probe each
     *          (a skip scan of job_ready_by_project);
     *   first: the project's first claimable job by run_after; its wait
     *          began at `since`;
     *   best:  since a job's wait never begins before its run_after, no job
     *          with a later run_after than first.since can have waited
     *          longer, so the answer is among the jobs with run_after <=
     *          first.since: ordered by when their wait began, then id. */
    [RP__PG_CLAIMABLE] =
        {"claimable",
         "WITH RECURSIVE p (project_id) AS ("
         "(SELECT project_id FROM {s}.job WHERE state = 'ready' "
         "AND ($1::text IS NULL OR project_id = $1::text) ORDER BY project_id LIMIT 1) "
         "UNION ALL "
         "SELECT (SELECT project_id FROM {s}.job WHERE state = 'ready' "
         "AND project_id > p.project_id AND ($1::text IS NULL OR project_id = $1::text) "
         "ORDER BY project_id LIMIT 1) FROM p WHERE p.project_id IS NOT NULL) "
         "SELECT p.project_id, best.id, best.kind, " MS("best.run_after") ", "
         "best.finished_at IS NOT NULL, " MS("best.finished_at") " "
         "FROM p CROSS JOIN LATERAL ("
         "SELECT greatest(j.run_after, d.finished_at) AS since "
         "FROM {s}.job j LEFT JOIN {s}.job d ON d.id = j.depends_on "
         "WHERE j.project_id = p.project_id AND j.state = 'ready' "
         "AND j.run_after <= " TS("$2") " AND (j.depends_on IS NULL OR d.state = 'succeeded') "
         "ORDER BY j.run_after, j.id LIMIT 1) first "
         "CROSS JOIN LATERAL ("
         "SELECT j.id, j.kind, j.run_after, d.finished_at "
         "FROM {s}.job j LEFT JOIN {s}.job d ON d.id = j.depends_on "
         "WHERE j.project_id = p.project_id AND j.state = 'ready' "
         "AND j.run_after <= least(first.since, " TS("$2") ") "
         "AND (j.depends_on IS NULL OR d.state = 'succeeded') "
         "ORDER BY greatest(j.run_after, d.finished_at), j.id LIMIT 1) best "
         "WHERE p.project_id IS NOT NULL ORDER BY p.project_id"},

    /* $1 project or NULL, $2 payload. */
    [RP__PG_APPEND] = {"append",
                       "INSERT INTO {s}.ledger (kind, project_id, payload) "
                       "VALUES ('QueueReaped', $1::text, $2::jsonb) RETURNING seq, " MS("at")},
    /* $1 key, $2 condition, $3 project, $4 payload. The sighting row comes
     * first and the ledger row only when it was inserted; the sighting
     * names its ledger row, so the sequence number is drawn up front (a
     * conflict wastes one number, as a rolled-back insert would). Under a
     * concurrent insert of the same key, ON CONFLICT waits for the other
     * transaction and then does nothing. */
    [RP__PG_OPEN_SIGHTING] =
        {"open_sighting",
         "WITH s AS (INSERT INTO {s}.sighting (key, condition, opened_seq, opened_at) "
         "VALUES ($1::text, $2::text, nextval({ledger_seq}), now()) "
         "ON CONFLICT (key) DO NOTHING RETURNING opened_seq, opened_at) "
         "INSERT INTO {s}.ledger (seq, at, kind, project_id, payload) OVERRIDING SYSTEM VALUE "
         "SELECT opened_seq, opened_at, 'QueueReaped', $3::text, $4::jsonb FROM s "
         "RETURNING seq, " MS("at")},
    /* $1 key, $2 project, $3 payload: the event only when a row was
     * deleted (a concurrent delete of the same row leaves none here). */
    [RP__PG_CLOSE_SIGHTING] = {"close_sighting",
                               "WITH d AS (DELETE FROM {s}.sighting WHERE key = $1::text "
                               "RETURNING key) "
                               "INSERT INTO {s}.ledger (kind, project_id, payload) "
                               "SELECT 'QueueReaped', $2::text, $3::jsonb FROM d "
                               "RETURNING seq, " MS("at")},
    [RP__PG_SIGHTINGS] = {"sightings", "SELECT key, condition, opened_seq, " MS("opened_at")
                                       " FROM {s}.sighting ORDER BY key"},

    /* $1 state, $2 project, $3 limit, $4 kind, $5 queue, $6 origin queue,
     * $7 reason, $8 older than (ms), $9 after (id): NULL filters nothing
     * (the session plans each call with its values, rp_pg_store.c, so a
     * NULL filter folds away). One row per gate of the page, newest first,
     * at most limit + 1 (one more than the page: a next page exists), with
     * the replay claim and the store's now (to judge it, rp_gate.h), each
     * row with the count of the matches, whatever after says, counted up to
     * RP_GATE_TOTAL_CAP + 1 (bench/REPORT.md, "bench/gates": an exact count
     * of a million matches took seconds); one row of NULL gate columns when
     * the page is empty. Every filter is on the gate row (the dead letter's
     * queue, origin and reason are copied onto its gate at park time,
     * migration 0013): no dead letter is read. The count and the page's
     * ids walk one index of the open gates, the filter's
     * gate_open_by_origin, _by_reason or _by_queue (migration 0013) or
     * gate_open_by_id (0012), kind and age checked in the index (an
     * index-only scan), and stop after RP_GATE_TOTAL_CAP + 1 and limit + 1;
     * answered gates the primary key backwards. The page's rows are read
     * by id after: with the row's columns wanted in the same scan, the
     * planner took the primary key backwards, filtering every newer row
     * (`--older-than 7d`: 236,000 rows read for 1,001, bench/REPORT.md). */
#define GATE_STATE "($1::text = 'all' OR ($1::text = 'open') = (g.answer IS NULL)) "
#define GATE_FILTERS                                                                  \
    "AND ($4::text IS NULL OR g.kind = $4::text) "                                    \
    "AND ($8::int8 IS NULL OR g.created_at <= now() - $8::int8 * interval '1 millisecond') " \
    "AND ($5::text IS NULL OR g.queue = $5::text) "                                   \
    "AND ($6::text IS NULL OR g.origin_queue = $6::text) "                            \
    "AND ($7::text IS NULL OR g.reason = $7::text) "
#define GATE_PROJECT_EXISTS                                                     \
    "AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM {s}.job j WHERE j.id = g.job_id " \
    "AND j.project_id = $2::text)) "
#define GATE_CAP_PLUS_ONE "10001"
    [RP__PG_GATES] = {"gates",
                      "WITH c AS (SELECT count(*) AS total FROM (SELECT 1 FROM {s}.gate g "
                      "WHERE " GATE_STATE GATE_PROJECT_EXISTS GATE_FILTERS
                      "LIMIT " GATE_CAP_PLUS_ONE ") m) "
                      "SELECT p.id, p.job_id, p.kind, p.project_id, p.question, p.answer, "
                      "p.answered_by, p.answered_ms, p.created_ms, p.queue, p.origin_queue, "
                      "p.reason, p.claimed_by, p.claimed_ms, " MS("now()") ", c.total, p.vhost "
                      "FROM c LEFT JOIN LATERAL (SELECT g.id, g.job_id, g.kind, j.project_id, "
                      "g.question, g.answer, g.answered_by, " MS("g.answered_at")
                      " AS answered_ms, " MS("g.created_at") " AS created_ms, g.queue, "
                      "g.origin_queue, g.reason, g.claimed_by, " MS("g.claimed_at")
                      " AS claimed_ms, g.vhost "
                      "FROM (SELECT g.id FROM {s}.gate g WHERE " GATE_STATE GATE_PROJECT_EXISTS
                      GATE_FILTERS "AND ($9::int8 IS NULL OR g.id < $9::int8) "
                      "ORDER BY g.id DESC LIMIT $3::int8 + 1) k "
                      "JOIN {s}.gate g ON g.id = k.id JOIN {s}.job j ON j.id = g.job_id) p ON true "
                      "ORDER BY p.id DESC"},
    /* $1 gate id, $2 the body window's first byte (0-based, at most
     * RP_PG_DL_BODY_MAX), $3 its length:
     * the gate's columns as RP__PG_GATES gives them (0-14), then its job,
     * and its dead letter when it has one, with that window of the body in
     * base64 (line breaks taken out), then the gate's vhost (29: migration
     * 0015; RP__PG_GATES gives it last too, 16). */
    [RP__PG_GATE_LOOK] =
        {"gate_look",
         "SELECT g.id, g.job_id, g.kind, j.project_id, g.question, g.answer, g.answered_by, "
         MS("g.answered_at") ", " MS("g.created_at") ", dl.queue, dl.origin_queue, dl.reason, "
         "g.claimed_by, " MS("g.claimed_at") ", " MS("now()") ", "
         "j.state, j.kind, j.attempts, j.max_attempts, j.payload ->> 'vhost', "
         "dl.gate_id IS NOT NULL, " MS("dl.first_death_at") ", " MS("dl.parked_at") ", "
         "dl.headers::text, dl.properties::text, length(dl.body), dl.body_truncated, "
         "translate(encode(substring(dl.body FROM $2::int + 1 FOR $3::int), 'base64'), "
         "E'\\n', ''), length(substring(dl.body FROM $2::int + 1 FOR $3::int)), g.vhost "
         "FROM {s}.gate g JOIN {s}.job j ON j.id = g.job_id "
         "LEFT JOIN {s}.dead_letter dl ON dl.gate_id = g.id WHERE g.id = $1::int8"},
    /* $1 gate id: locks the gate so that it is settled once. */
    [RP__PG_GATE_LOCK] = {"gate_lock",
                          "SELECT kind, answer, claimed_by, " MS("claimed_at") ", " MS("now()")
                          " FROM {s}.gate WHERE id = $1::int8 FOR UPDATE"},
    /* $1 gate id, $2 choice, $3 by (the broker-validated user), $4
     * outcome, $5 note (the request's own, unverified "by") or NULL. Runs
     * after GATE_LOCK in the same transaction; clears a replay's claim
     * (the caller has checked that it may). */
    [RP__PG_GATE_ANSWER] =
        {"gate_answer",
         "WITH g AS (UPDATE {s}.gate SET answer = $2::text, answered_by = $3::text, "
         "answered_at = now(), claimed_by = NULL, claimed_at = NULL "
         "WHERE id = $1::int8 AND answer IS NULL RETURNING id, job_id, kind, vhost), "
         "j AS (UPDATE {s}.job SET "
         "state = CASE $2::text WHEN 'retry' THEN 'ready' WHEN 'dismiss' THEN 'failed' "
         "ELSE 'succeeded' END, "
         "run_after = CASE WHEN $2::text = 'retry' THEN now() ELSE run_after END, "
         "finished_at = CASE WHEN $2::text = 'retry' THEN NULL ELSE now() END, "
         "lease_owner = NULL, lease_expires_at = NULL, updated_at = now() "
         "FROM g WHERE job.id = g.job_id RETURNING job.id, job.project_id), "
         "ev AS (INSERT INTO {s}.ledger (kind, project_id, payload) "
         "SELECT 'GateAnswered', j.project_id, jsonb_build_object('gate', g.id, 'job', j.id, "
         "'kind', g.kind, 'choice', $2::text, 'outcome', $4::text, 'by', $3::text) "
         "|| CASE WHEN $5::text IS NULL THEN '{}'::jsonb "
         "ELSE jsonb_build_object('note', $5::text) END "
         "|| CASE WHEN g.vhost IS NULL THEN '{}'::jsonb "
         "ELSE jsonb_build_object('vhost', g.vhost) END "
         "FROM g JOIN j ON j.id = g.job_id RETURNING seq, at) "
         "SELECT g.id, (SELECT seq FROM ev), (SELECT " MS("at") " FROM ev), g.job_id, g.vhost "
         "FROM g"},

    /* The OCCURRENCE rule of rp_deadletter.h is the schema's function
     * dead_letter_next_occurrence(identity, death) (migration 0006): the
     * occurrence number a park of that death gives its new row, or NULL when
     * the rule opens none (the death is parked already, or the identity's
     * latest row, highest occurrence then gate, has this death's lineage and
     * an open gate). An identity with no rows costs it one index probe: the
     * rest of the lookup runs only when there are rows. In the park's own
     * statement the lookup cost every park about 8% of its instructions,
     * because PostgreSQL sets up every node of a plan at each execution
     * whether it runs or not (bench/REPORT.md, "The park's cost"). */
    /* $1 identity, $2 death: true when a park would park nothing. */
    [RP__PG_IS_PARKED] = {"is_parked",
                          "SELECT {s}.dead_letter_next_occurrence($1::text, $2::text) IS NULL"},
    /* The park of a set of dead letters, one statement (issue #21: what a
     * statement costs beyond its rows, about half of a one-row park's
     * instructions, is paid once per set). Arrays in the binary format
     * (rp_pg_binarray.h), one element per dead letter, in the caller's order:
     * $1 identity, $2 queue, $3 origin (rendered), $4 reason (rendered),
     * $5 first death (Unix s, as text) or NULL, $6 headers, $7 properties
     * (JSON text), $8 body (bytea), $9 body_truncated ('t'/'f'), $10 job
     * payload, $11 gate question, $12 ledger payload, $13 death, $14 vhost
     * (migration 0015); $15 the project (one text). No identity twice in one set (the caller splits a
     * batch into rounds: rp_pg_park.c).
     * Per dead letter, the dead_letter row first, only when the OCCURRENCE
     * rule opens one: an identity with no rows takes occurrence 1 from one
     * index probe (a subplan: no function call), one with rows asks
     * dead_letter_next_occurrence (migration 0006; NULL: parked already or
     * covered); the job, gate and event only for rows inserted (the gate with
     * the dead letter's queue, origin and reason: migration 0013). Ids and
     * ledger numbers are drawn up front in the set's order (a row that then
     * conflicts leaves a gap), so the events' order is the caller's; the
     * dead_letter row names its job and gate (foreign keys are checked at
     * the end of the statement). Result: one row per dead letter parked,
     * its position in the set (1-based), event seq and time, job, gate.
     * Race-safe without locks: two parks of one death at once (two
     * sessions, two replicas) both find it unseen and insert the same
     * (identity, death): the second waits for the first's commit at ON
     * CONFLICT and inserts nothing. Two different deaths of one identity at
     * once are both parked (their occurrence numbers may then be equal);
     * a death parked while the gate that covers it is being answered is
     * covered by that gate when the answer has not committed yet, which
     * cannot happen to a replayed message (a new lineage, never covered).
     * Each wide row (bodies, headers, the texts) is copied as few times as
     * the statement allows: into u's and ids' stores only. The job, gate and
     * event read ids through a semi-join on dl's job ids (a hash of the
     * job ids only), in ids' order, with no sort; an earlier form copied every row
     * again into a joined CTE and four sorts, and in a storm PostgreSQL
     * took each copy's memory fresh from the kernel at every statement
     * (page faults: 2.25 a park against 1.7; bench/REPORT.md, "The park's
     * memory in PostgreSQL"). */
    [RP__PG_PARK_SET] =
        {"park_set",
         "WITH u AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
         "$5::text[], $6::text[], $7::text[], $8::bytea[], $9::text[], $10::text[], $11::text[], "
         "$12::text[], $13::text[], $14::text[]) WITH ORDINALITY AS u(identity, queue, origin, "
         "reason, first_death, headers, props, body, truncated, job_payload, question, "
         "ledger_payload, death, vhost, ord)), "
         "ids AS (SELECT u.*, o AS occurrence, nextval({job_seq}) AS job_id, "
         "nextval({gate_seq}) AS gate_id, nextval({ledger_seq}) AS seq FROM u, "
         "LATERAL (SELECT CASE WHEN NOT EXISTS (SELECT FROM {s}.dead_letter d "
         "WHERE d.identity = u.identity) THEN 1 "
         "ELSE {s}.dead_letter_next_occurrence(u.identity, u.death) END AS o OFFSET 0) prev "
         "WHERE o IS NOT NULL ORDER BY u.ord), "
         "dl AS (INSERT INTO {s}.dead_letter (identity, death, occurrence, job_id, gate_id, "
         "queue, origin_queue, reason, first_death_at, headers, properties, body, "
         "body_truncated, vhost) "
         "SELECT identity, death, occurrence, job_id, gate_id, queue, origin, reason, "
         "to_timestamp(first_death::int8), headers::jsonb, props::jsonb, body, truncated::bool, "
         "vhost "
         "FROM ids ON CONFLICT (identity, death) DO NOTHING RETURNING job_id), "
         "j AS (INSERT INTO {s}.job (id, project_id, kind, state, payload) "
         "SELECT job_id, $15::text, '" RP_PG_BUS_JOB_KIND "', 'awaiting_human', "
         "job_payload::jsonb FROM ids WHERE ids.job_id IN (SELECT job_id FROM dl) RETURNING id), "
         "g AS (INSERT INTO {s}.gate (id, job_id, kind, question, choices, queue, origin_queue, "
         "reason, vhost) SELECT gate_id, job_id, 'bus_dead_lettered', question, "
         "ARRAY['replay', 'dismiss'], queue, origin, reason, vhost FROM ids "
         "WHERE ids.job_id IN (SELECT job_id FROM dl) RETURNING id), "
         "ev AS (INSERT INTO {s}.ledger (seq, kind, project_id, payload) OVERRIDING SYSTEM VALUE "
         "SELECT seq, 'QueueReaped', $15::text, ledger_payload::jsonb FROM ids "
         "WHERE ids.job_id IN (SELECT job_id FROM dl) RETURNING seq, at) "
         "SELECT ids.ord, ev.seq, " MS("ev.at") ", ids.job_id, ids.gate_id FROM ids "
         "JOIN ev ON ev.seq = ids.seq ORDER BY ids.ord"},

    /* Issue 18 (rp_pg_runbook.c). $1 claimed_before (ms), $2 now (ms), $3
     * grace seconds, $4 project or NULL, $5 limit. Leased rows held since
     * $1 or earlier (claimed_at: migration 0007) whose lease is not past
     * the grace or has no deadline, longest held first, over
     * job_leased_by_claim. */
    [RP__PG_LONG_HELD] =
        {"long_held",
         "SELECT id, project_id, kind, lease_owner, lease_expires_at IS NOT NULL, "
         MS("lease_expires_at") ", " MS("claimed_at") " FROM {s}.job "
         "WHERE state = 'leased' AND claimed_at <= " TS("$1") " "
         "AND (lease_expires_at IS NULL OR lease_expires_at >= " TS("$2")
         " - $3::int8 * interval '1 second') "
         "AND ($4::text IS NULL OR project_id = $4::text) "
         "ORDER BY claimed_at, id LIMIT $5::int8"},
    /* $1 project or NULL, $2 now (ms), $3 more_than. Claimable jobs per
     * (project, kind), as CLAIMABLE counts them claimable. */
    [RP__PG_WAITING] =
        {"waiting",
         "SELECT j.project_id, j.kind, count(*) FROM {s}.job j "
         "LEFT JOIN {s}.job d ON d.id = j.depends_on "
         "WHERE j.state = 'ready' AND j.run_after <= " TS("$2") " "
         "AND (j.depends_on IS NULL OR d.state = 'succeeded') "
         "AND ($1::text IS NULL OR j.project_id = $1::text) "
         "GROUP BY j.project_id, j.kind HAVING count(*) > $3::int8 "
         "ORDER BY j.project_id, j.kind"},
    /* $1 id, $2 lease_owner, $3 claimed_at (ms) as listed: the fence; $4
     * the ledger payload. The requeue of MOVE_REQUEUE (the trigger clears
     * claimed_at). */
    [RP__PG_EVICT_HELD] =
        {"evict_held",
         "WITH moved AS (UPDATE {s}.job SET state = 'ready', lease_owner = NULL, "
         "lease_expires_at = NULL, run_after = greatest(run_after, now()), updated_at = now() "
         "WHERE id = $1::int8 AND state = 'leased' AND lease_owner IS NOT DISTINCT FROM $2::text "
         "AND " MS("claimed_at") " = $3::int8 RETURNING project_id) "
         "INSERT INTO {s}.ledger (kind, project_id, payload) "
         "SELECT 'QueueReaped', project_id, $4::jsonb FROM moved "
         "RETURNING seq, " MS("at")},

    /* Issue 18 item 4 (rp_pg_wedged.c). $1 project or NULL, $2 now (ms),
     * $3 grace seconds. Per (project, kind) with claimable jobs (as
     * WAITING counts them): the count, since when the oldest is claimable,
     * the leases alive (with the grace), and the newest completion (over
     * job_succeeded_by_kind, migration 0008). */
    [RP__PG_WEDGE_GROUPS] =
        {"wedge_groups",
         "WITH c AS (SELECT j.project_id, j.kind, count(*) AS n, "
         "min(greatest(j.run_after, j.created_at, d.finished_at)) AS since FROM {s}.job j "
         "LEFT JOIN {s}.job d ON d.id = j.depends_on "
         "WHERE j.state = 'ready' AND j.run_after <= " TS("$2") " "
         "AND (j.depends_on IS NULL OR d.state = 'succeeded') "
         "AND ($1::text IS NULL OR j.project_id = $1::text) "
         "GROUP BY j.project_id, j.kind) "
         "SELECT c.project_id, c.kind, c.n, "
         "(SELECT count(*) FROM {s}.job l WHERE l.state = 'leased' "
         "AND l.project_id = c.project_id AND l.kind = c.kind AND (l.lease_expires_at IS NULL "
         "OR l.lease_expires_at >= " TS("$2") " - $3::int8 * interval '1 second')), "
         MS("c.since") ", "
         "(SELECT " MS("max(f.finished_at)") " FROM {s}.job f WHERE f.state = 'succeeded' "
         "AND f.project_id = c.project_id AND f.kind = c.kind) "
         "FROM c ORDER BY c.project_id, c.kind"},
    /* $1 scope (a subject prefix), $2 the subjects wedged on this check
     * (text[]). One statement: the others of the scope deleted, these
     * counted up (1 when new); returns each subject's count. */
    [RP__PG_WEDGE_COUNT] =
        {"wedge_count",
         "WITH gone AS (DELETE FROM {s}.wedge_check WHERE left(subject, length($1::text)) = "
         "$1::text AND subject <> ALL ($2::text[])), "
         "up AS (INSERT INTO {s}.wedge_check AS w (subject, consecutive) "
         "SELECT DISTINCT unnest($2::text[]), 1 "
         "ON CONFLICT (subject) DO UPDATE SET consecutive = w.consecutive + 1, "
         "checked_at = now() RETURNING subject, consecutive) "
         "SELECT subject, consecutive FROM up"},
    /* $1 the subjects (text[]): their counts as they are (a dry run). */
    [RP__PG_WEDGE_PEEK] =
        {"wedge_peek",
         "SELECT subject, consecutive FROM {s}.wedge_check WHERE subject = ANY ($1::text[])"},
    /* Issue 18 item 3 (rp_pg_divergent.c). $1 project or NULL, $2 now
     * (ms), $3 window seconds, $4 more_than. Per (project, kind) with more
     * than $4 claimable (as WAITING counts them): rows created since now -
     * window (job_by_created), rows that reached succeeded since then
     * (succeeded_at: migration 0009, job_succeeded_by_time), claimable. */
    [RP__PG_DIVERGENT] =
        {"divergent",
         "WITH w AS (SELECT j.project_id, j.kind, count(*) AS n FROM {s}.job j "
         "LEFT JOIN {s}.job d ON d.id = j.depends_on "
         "WHERE j.state = 'ready' AND j.run_after <= " TS("$2") " "
         "AND (j.depends_on IS NULL OR d.state = 'succeeded') "
         "AND ($1::text IS NULL OR j.project_id = $1::text) "
         "GROUP BY j.project_id, j.kind HAVING count(*) > $4::int8), "
         "i AS (SELECT project_id, kind, count(*) AS n FROM {s}.job "
         "WHERE created_at >= " TS("$2") " - $3::int8 * interval '1 second' "
         "AND ($1::text IS NULL OR project_id = $1::text) GROUP BY project_id, kind), "
         "c AS (SELECT project_id, kind, count(*) AS n FROM {s}.job "
         "WHERE succeeded_at >= " TS("$2") " - $3::int8 * interval '1 second' "
         "AND ($1::text IS NULL OR project_id = $1::text) GROUP BY project_id, kind) "
         "SELECT w.project_id, w.kind, coalesce(i.n, 0), coalesce(c.n, 0), w.n FROM w "
         "LEFT JOIN i ON i.project_id = w.project_id AND i.kind = w.kind "
         "LEFT JOIN c ON c.project_id = w.project_id AND c.kind = w.kind "
         "ORDER BY w.project_id, w.kind"},
    /* Issue 18 item 3, broker (rp_pg_divergent.c): one reading of a
     * queue's counters, the three in one transaction. $1 vhost, $2 queue,
     * $3 published, $4 acked, $5 read_at (ms). The first reading of a queue
     * is its baseline (a row returned). */
    [RP__PG_COUNTER_FIRST] =
        {"counter_first",
         "INSERT INTO {s}.queue_counter (vhost, queue, published, acked, read_at, acked_at) "
         "VALUES ($1::text, $2::text, $3::int8, $4::int8, $5::int8, $5::int8) "
         "ON CONFLICT (vhost, queue) DO NOTHING RETURNING 1"},
    /* The same parameters. The stored reading locked (a replica sampling
     * the same queue waits, then reads this one's); a newer reading
     * replaces it and its increment (a counter below the stored one was
     * reset: counted from 0) is recorded; an older one adds nothing. */
    [RP__PG_COUNTER_SAMPLE] =
        {"counter_sample",
         "WITH prev AS (SELECT published, acked, read_at FROM {s}.queue_counter "
         "WHERE vhost = $1::text AND queue = $2::text FOR UPDATE), "
         "up AS (UPDATE {s}.queue_counter c SET published = $3::int8, acked = $4::int8, "
         "read_at = $5::int8, acked_at = CASE WHEN (CASE WHEN $4::int8 >= prev.acked "
         "THEN $4::int8 - prev.acked ELSE $4::int8 END) > 0 THEN $5::int8 ELSE c.acked_at END "
         "FROM prev WHERE c.vhost = $1::text AND c.queue = $2::text "
         "AND $5::int8 > prev.read_at RETURNING "
         "CASE WHEN $3::int8 >= prev.published THEN $3::int8 - prev.published ELSE $3::int8 END "
         "AS dp, CASE WHEN $4::int8 >= prev.acked THEN $4::int8 - prev.acked ELSE $4::int8 END "
         "AS da), "
         "ins AS (INSERT INTO {s}.queue_increment (vhost, queue, at, published, acked) "
         "SELECT $1::text, $2::text, " TS("$5") ", dp, da FROM up WHERE dp > 0 OR da > 0 "
         "RETURNING 1) "
         "SELECT count(*) FROM ins"},
    /* $1 vhost, $2 queue, $3 now (ms), $4 window seconds: the publishes and
     * acks of the window, in a statement of its own (a snapshot that sees
     * what a replica committed while this one waited for its lock). */
    [RP__PG_COUNTER_SUMS] =
        {"counter_sums",
         "SELECT coalesce(sum(published), 0)::int8, coalesce(sum(acked), 0)::int8, "
         "(SELECT coalesce(c.acked_at, c.read_at) FROM {s}.queue_counter c "
         "WHERE c.vhost = $1::text AND c.queue = $2::text) "
         "FROM {s}.queue_increment WHERE vhost = $1::text AND queue = $2::text "
         "AND at >= " TS("$3") " - $4::int8 * interval '1 second'"},
    /* $1 now (ms), $2 window seconds: increments older than the window. */
    [RP__PG_COUNTER_PRUNE] =
        {"counter_prune",
         "DELETE FROM {s}.queue_increment WHERE at < " TS("$1") " - $2::int8 * interval '1 second'"},
    /* Issue 18 item 4's breaker (rp_pg_wedged.c, migration 0010), inside
     * the caller's transaction. $1 subject: its consecutive-check row
     * locked (replicas decide one after the other), and whether a
     * RESTART_LOOP is recorded on it. */
    [RP__PG_WEDGE_RESTART_LOCK] =
        {"wedge_restart_lock",
         "SELECT looped_at IS NOT NULL FROM {s}.wedge_check WHERE subject = $1::text FOR UPDATE"},
    /* $1 prune_before (ms): restarts that left every window. */
    [RP__PG_WEDGE_RESTART_PRUNE] = {"wedge_restart_prune",
                                    "DELETE FROM {s}.wedge_restart WHERE at < $1::int8"},
    /* $1 subject: its restarts (ms), oldest first. */
    [RP__PG_WEDGE_RESTART_LIST] = {"wedge_restart_list",
                                   "SELECT at FROM {s}.wedge_restart WHERE subject = $1::text "
                                   "ORDER BY at"},
    /* $1 subject, $2 now (ms): one restart. */
    [RP__PG_WEDGE_RESTART_ADD] = {"wedge_restart_add",
                                  "INSERT INTO {s}.wedge_restart (subject, at) "
                                  "VALUES ($1::text, $2::int8) ON CONFLICT DO NOTHING"},
    /* $1 subject: a RESTART_LOOP recorded for this wedge. */
    [RP__PG_WEDGE_RESTART_LOOP] = {"wedge_restart_loop",
                                   "UPDATE {s}.wedge_check SET looped_at = now() "
                                   "WHERE subject = $1::text"},
    /* Issue 19 item 5: COUNTER_FIRST, COUNTER_SAMPLE and COUNTER_SUMS for a
     * page of queues, bound as arrays (rp_pg_divergent.c): $1 vhosts, $2
     * names (text[]), $3 published, $4 acked (int8[]), $5 read_at (ms), $6
     * window seconds. A queue given twice is written once, from its first
     * reading (the second, at the same read_at, would add nothing). Rows
     * are inserted and locked in (vhost, queue) order, so that two replicas
     * sampling overlapping pages wait for each other instead of
     * deadlocking. FIRST: the baselines inserted (vhost, queue). */
    [RP__PG_COUNTER_FIRST_MANY] =
        {"counter_first_many",
         "INSERT INTO {s}.queue_counter (vhost, queue, published, acked, read_at, acked_at) "
         "SELECT DISTINCT ON (v, q) v, q, p, a, $5::int8, $5::int8 "
         "FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[]) WITH ORDINALITY "
         "AS r(v, q, p, a, i) ORDER BY v, q, i "
         "ON CONFLICT (vhost, queue) DO NOTHING RETURNING vhost, queue"},
    /* COUNTER_SAMPLE's rule per queue (the same parameters): the stored
     * readings locked, the newer readings written with their increments. */
    [RP__PG_COUNTER_SAMPLE_MANY] =
        {"counter_sample_many",
         "WITH r AS (SELECT DISTINCT ON (v, q) v, q, p, a "
         "FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[]) WITH ORDINALITY "
         "AS r(v, q, p, a, i) ORDER BY v, q, i), "
         "prev AS (SELECT c.vhost, c.queue, c.published, c.acked, c.read_at, r.p, r.a "
         "FROM {s}.queue_counter c JOIN r ON c.vhost = r.v AND c.queue = r.q "
         "ORDER BY c.vhost, c.queue FOR UPDATE OF c), "
         "up AS (UPDATE {s}.queue_counter c SET published = prev.p, acked = prev.a, "
         "read_at = $5::int8, acked_at = CASE WHEN (CASE WHEN prev.a >= prev.acked "
         "THEN prev.a - prev.acked ELSE prev.a END) > 0 THEN $5::int8 ELSE c.acked_at END "
         "FROM prev WHERE c.vhost = prev.vhost AND c.queue = prev.queue "
         "AND $5::int8 > prev.read_at RETURNING c.vhost, c.queue, "
         "CASE WHEN prev.p >= prev.published THEN prev.p - prev.published ELSE prev.p END "
         "AS dp, CASE WHEN prev.a >= prev.acked THEN prev.a - prev.acked ELSE prev.a END "
         "AS da), "
         "ins AS (INSERT INTO {s}.queue_increment (vhost, queue, at, published, acked) "
         "SELECT vhost, queue, " TS("$5") ", dp, da FROM up WHERE dp > 0 OR da > 0 "
         "RETURNING 1) "
         "SELECT count(*) FROM ins"},
    /* $1 vhosts, $2 names (text[]), $3 now (ms), $4 window seconds: per
     * queue in the order given, COUNTER_SUMS's three columns, in a
     * statement of its own (the same snapshot rule). */
    [RP__PG_COUNTER_SUMS_MANY] =
        {"counter_sums_many",
         "SELECT coalesce(s.p, 0)::int8, coalesce(s.a, 0)::int8, "
         "(SELECT coalesce(c.acked_at, c.read_at) FROM {s}.queue_counter c "
         "WHERE c.vhost = r.v AND c.queue = r.q) "
         "FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS r(v, q, i) "
         "LEFT JOIN LATERAL (SELECT sum(published) AS p, sum(acked) AS a "
         "FROM {s}.queue_increment WHERE vhost = r.v AND queue = r.q "
         "AND at >= " TS("$3") " - $4::int8 * interval '1 second') s ON true ORDER BY r.i"},
};

rp_status rp__pg_sql_expand(const char *text, const rp__pg_subst *sub, char **out) {
    *out = NULL;
    const struct {
        const char *key;
        const char *val;
    } keys[] = {{"{s}", sub->schema},
                {"{ledger_seq}", sub->ledger_seq},
                {"{job_seq}", sub->job_seq},
                {"{gate_seq}", sub->gate_seq}};
    /* Two passes: measure, then write. */
    char *buf = NULL;
    size_t need = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t n = 0;
        for (const char *p = text; *p;) {
            bool hit = false;
            if (*p == '{') {
                for (size_t k = 0; k < RP_ARRAY_LEN(keys) && !hit; k++) {
                    size_t kl = strlen(keys[k].key);
                    if (strncmp(p, keys[k].key, kl) != 0) continue;
                    if (keys[k].val == NULL) {
                        free(buf);
                        return RP_ERR_INTERNAL;
                    }
                    size_t vl = strlen(keys[k].val);
                    if (buf) memcpy(buf + n, keys[k].val, vl);
                    n += vl;
                    p += kl;
                    hit = true;
                }
            }
            if (!hit) {
                if (buf) buf[n] = *p;
                n++;
                p++;
            }
        }
        if (pass == 0) {
            need = n;
            buf = malloc(need + 1);
            if (buf == NULL) return RP_ERR_NOMEM;
        } else {
            buf[n] = '\0';
        }
    }
    (void)need;
    *out = buf;
    return RP_OK;
}
