/*
 * rp_pg_store_internal.h - the PostgreSQL store's state and the helpers its
 * files share (rp_pg_store.c: session, pipeline, errors, clock;
 * rp_pg_sql.c: the statements; rp_pg_lease.c, rp_pg_ready.c,
 * rp_pg_sighting.c, rp_pg_gate.c, rp_pg_park.c: one port area each). Not
 * for use outside adapters/postgres.
 *
 * Ownership: struct rp_pg_store owns its schema copies, the statement names
 * and every PGresult and view array it lends (freed when the same function
 * is called again, or by rp_pg_store_free). It borrows the connection.
 */
#ifndef RP_PG_STORE_INTERNAL_H
#define RP_PG_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "rp_pg_store.h"

/* The prepared statements, one per query the ports run. */
typedef enum rp__pg_stmt {
    RP__PG_NOW = 0,
    RP__PG_LEASE_PLANS,
    RP__PG_TAKE_LOCK,
    RP__PG_TAKE_READ,
    RP__PG_MOVE_REQUEUE,
    RP__PG_MOVE_PARK,
    RP__PG_MOVE_BATCH,
    RP__PG_NEXT_DEADLINE,
    RP__PG_CLAIMABLE,
    RP__PG_APPEND,
    RP__PG_OPEN_SIGHTING,
    RP__PG_CLOSE_SIGHTING,
    RP__PG_SIGHTINGS,
    RP__PG_GATES,
    RP__PG_GATE_LOCK,
    RP__PG_GATE_ANSWER,
    RP__PG_GATE_LOOK,
    RP__PG_IS_PARKED,
    RP__PG_PARK_SET,
    RP__PG_LONG_HELD,
    RP__PG_WAITING,
    RP__PG_EVICT_HELD,
    RP__PG_WEDGE_GROUPS,
    RP__PG_WEDGE_COUNT,
    RP__PG_WEDGE_PEEK,
    RP__PG_DIVERGENT,
    RP__PG_COUNTER_FIRST,
    RP__PG_COUNTER_SAMPLE,
    RP__PG_COUNTER_PRUNE,
    RP__PG_COUNTER_SUMS,
    RP__PG_WEDGE_RESTART_LOCK,
    RP__PG_WEDGE_RESTART_PRUNE,
    RP__PG_WEDGE_RESTART_LIST,
    RP__PG_WEDGE_RESTART_ADD,
    RP__PG_WEDGE_RESTART_LOOP,
    RP__PG_COUNTER_FIRST_MANY,
    RP__PG_COUNTER_SAMPLE_MANY,
    RP__PG_COUNTER_SUMS_MANY,
    RP__PG_STMT_COUNT_
} rp__pg_stmt;

/* A statement's text, with placeholders that rp__pg_sql_expand fills:
 * {s} the quoted schema; {ledger_seq}, {job_seq}, {gate_seq} the identity
 * sequences of ledger.seq, job.id and gate.id as quoted literals. */
typedef struct rp__pg_sql_def {
    const char *name;
    const char *text;
} rp__pg_sql_def;

extern const rp__pg_sql_def rp__pg_sql[RP__PG_STMT_COUNT_];

/* What to substitute into a template. */
typedef struct rp__pg_subst {
    const char *schema;      /* quoted identifier */
    const char *ledger_seq;  /* quoted literals */
    const char *job_seq;
    const char *gate_seq;
} rp__pg_subst;

/* Expands a template into a new heap string (*out, free()). RP_ERR_NOMEM;
 * RP_ERR_INTERNAL for an unknown placeholder. */
rp_status rp__pg_sql_expand(const char *text, const rp__pg_subst *sub, char **out) RP_MUSTCHECK;

/* A template with only {s}, the store's schema, expanded into a new heap
 * string (*out, free()). RP_ERR_NOMEM (no connection either). */
rp_status rp__pg_schema_sql(rp_pg_store *s, const char *text, char **out) RP_MUSTCHECK;

/* One row of the batch taken by take_leases, as it was when taken: the
 * fence of its move. */
typedef struct rp__pg_row {
    int64_t id;
    int32_t attempts;
    bool expires_known;
    rp_time_ms expires_ms;
    int64_t expires_us;   /* to the microsecond, for the fence */
    const char *owner;    /* into held_res; NULL when NULL */
} rp__pg_row;

/* The batch taken by take_leases. rows and view (what core is lent) have
 * n entries; both arrays are the store's, kept for the next batch. */
typedef struct rp__pg_taken {
    bool active;          /* a batch is taken (locked or read) */
    bool locked;          /* taken FOR UPDATE: its transaction is open */
    rp__pg_row *rows;
    rp_held_job *view;
    size_t n;
    size_t cap;
} rp__pg_taken;

/* Rows a read lends to the port's caller until the next read of its kind
 * or the store's close: the result and the view into it (rp__pg_lend). */
typedef struct rp__pg_lent {
    PGresult *res;
    void *view;
} rp__pg_lent;

struct rp_pg_store {
    rp_pg_conn *conn;     /* borrowed */
    char *schema;         /* as configured */
    int timeout_ms;
    /* The session the statements are prepared on (rp_pg_conn_generation). */
    unsigned long gen;
    bool ready;
    char names[RP__PG_STMT_COUNT_][48];
    /* The taken batch and its open transaction. */
    rp__pg_taken taken;
    PGresult *held_res;
    /* What list_oldest_claimable and list_open_sightings lend. */
    PGresult *claim_res;
    rp_claimable_job *claim_view;
    PGresult *sight_res;
    rp_sighting_row *sight_view;
    /* What list_long_held and count_waiting (rp_pg_runbook.c),
     * list_wedge_groups (rp_pg_wedged.c) and count_divergent
     * (rp_pg_divergent.c) lend. */
    rp__pg_lent held_long, waiting, wedge, divergent;
    bool clock_fell_back; /* logged once per outage */
    /* The replay claim on gates (rp_gate.h). */
    char claimer[160];
    int64_t claim_seconds;
    /* Segments sent (rp__pg_send) whose results are not read yet, and the
     * session they were sent on. */
    size_t pending;
    unsigned long pending_gen;
    /* rp__pg_store_keep_heap's bytes; 0: none. */
    size_t keep_heap_bytes;
};

/* How a call relates to a taken row's open transaction. */
typedef enum rp__pg_mode {
    RP__PG_READ = 0, /* read only: may run inside it */
    RP__PG_WRITE,    /* a write of its own: rolls it back first */
    RP__PG_ROW,      /* move or release: works on it */
} rp__pg_mode;

/* Starts a port call: connects when needed, prepares the statements on a
 * new session (forgetting whatever the old one held), and settles a taken
 * row's transaction as mode says. RP_OK; RP_ERR_UNAVAILABLE; RP_ERR_INTERNAL
 * (statements that cannot be prepared: a schema not migrated). */
rp_status rp__pg_enter(rp_pg_store *s, rp__pg_mode mode, const char *op) RP_MUSTCHECK;

/* The heap hint, for a session that sends large statements (the tap's
 * park sessions: a transaction of 250 dead letters binds about 350 KiB of
 * arrays, and the statement holds them a few times over). A PostgreSQL
 * server linked with glibc frees a statement's memory at its end, and
 * glibc gives the top of its heap back to the kernel once more than its
 * trim threshold is free there, so every such statement took its memory
 * fresh: a page fault for each 4 KiB page it touched. glibc raises that
 * threshold by itself (to twice its mmap threshold, which follows the
 * largest block freed that it had mapped, up to 32 MiB; mallopt(3),
 * "dynamic mmap threshold"). So each new session first makes the server
 * build and drop one text of bytes (one block that large, mapped and
 * unmapped): from then on the backend keeps up to twice that free
 * instead of returning it at every statement. Measured in 50,000-dead-
 * letter storms (bench/REPORT.md, "The park's memory in PostgreSQL"): the park
 * backend's page faults 82,000-90,000 -> 26,000-28,000, its CPU per park
 * about a fifth less, as with glibc.malloc.trim_threshold set on the
 * server. Other allocators: the text is made and dropped, nothing more.
 * Set before the session's first call (it is sent with the session's
 * settings, once per session). */
void rp__pg_store_keep_heap(rp_pg_store *s, size_t bytes);

/* One command of a pipeline: a prepared statement (stmt >= 0) or plain SQL
 * (stmt < 0: BEGIN, COMMIT, ROLLBACK...). values/lengths/formats as
 * PQexecParams takes them (lengths and formats only for binary values). */
typedef struct rp__pg_cmd {
    int stmt;
    const char *sql;
    int n;
    const char *const *values;
    const int *lengths;
    const int *formats;
} rp__pg_cmd;

/* Frees what l lent (safe on an empty one). */
void rp__pg_lent_forget(rp__pg_lent *l);
/* A read whose rows are lent: forgets what l lent before, enters the store
 * for reading, runs k (op names it in the log) and, when it returns rows,
 * keeps them in l with a zeroed view of *n elements of elem bytes each for
 * the caller to fill from *r (*view NULL and *n 0 when none). Errors as
 * rp__pg_run, or RP_ERR_NOMEM. */
rp_status rp__pg_lend(rp_pg_store *s, rp__pg_lent *l, const rp__pg_cmd *k, const char *op,
                      size_t elem, PGresult **r, void **view, int *n) RP_MUSTCHECK;

/* Sends the n commands in one pipeline with one sync (one round trip) and
 * reads every result within the store's timeout. On RP_OK every command
 * succeeded and res[i] holds each one's result (the caller PQclear()s them:
 * rp__pg_clear). Otherwise res holds nothing; the first failure has been
 * logged (op, SQLSTATE, message); a transaction left open or failed on the
 * session has been rolled back (a taken row is forgotten with it); a lost or
 * timed-out connection has been closed. Returns RP_ERR_UNAVAILABLE for the
 * connection or the server going away (SQLSTATE 08, 53, 57P01-57P03,
 * 57014), RP_ERR_CONFLICT for class 40 (serialization, deadlock),
 * RP_ERR_INTERNAL otherwise; *sqlstate (may be NULL) gets the code or "". */
rp_status rp__pg_run(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                     const char *op, char sqlstate[6]) RP_MUSTCHECK;
void rp__pg_clear(PGresult **res, size_t n);

/* rp__pg_run in two halves, so that a caller can send the next segment
 * before reading the last one's results (the server then never waits for
 * the client between them). rp__pg_send sends n commands and a sync (one
 * segment; without BEGIN it is one implicit transaction, committed at its
 * sync, or rolled back alone when one of its commands fails, the next
 * segment unaffected) without reading. rp__pg_recv reads the oldest
 * segment's results, the same n (cmds: the commands sent, only stmt and
 * sql are read, to name a failure), as rp__pg_run reports them, except
 * that it rolls nothing back (a failed implicit transaction is over at its
 * sync). The caller reads every segment it sent, in order, before any other
 * call on the store (rp__pg_enter, rp__pg_run...); call rp__pg_enter only
 * when nothing is outstanding. When the session is lost every outstanding
 * segment is lost with it: each later rp__pg_recv returns
 * RP_ERR_UNAVAILABLE at once (whether it committed is unknown). */
rp_status rp__pg_send(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n,
                      const char *op) RP_MUSTCHECK;
rp_status rp__pg_recv(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                      const char *op, char sqlstate[6]) RP_MUSTCHECK;

/* Sends the n commands in one pipeline with one sync and reads every
 * result, failed ones included, without judging them: RP_OK when all n
 * results were read (res[i] each command's result, whatever its status:
 * the caller inspects and PQclear()s them; after a failure the later ones
 * are PGRES_PIPELINE_ABORTED), rolling nothing back; RP_ERR_UNAVAILABLE
 * when the session broke or timed out (closed; res empty). For a
 * transaction the caller steps through (the lease batch's savepoints). */
rp_status rp__pg_run_each(rp_pg_store *s, const rp__pg_cmd *cmds, size_t n, PGresult **res,
                          const char *op) RP_MUSTCHECK;
/* A failed result of rp__pg_run_each: logs it (op, step, SQLSTATE,
 * message), copies its SQLSTATE into code, and maps it as rp__pg_run does
 * (RP_ERR_UNAVAILABLE also closes the session). */
rp_status rp__pg_failure(rp_pg_store *s, const PGresult *r, const char *op, const char *step,
                         char code[6]) RP_MUSTCHECK;

/* Ends the session's open transaction, if any, with ROLLBACK and forgets
 * the taken row. RP_OK, or the failure of the ROLLBACK (the connection is
 * then closed). */
rp_status rp__pg_rollback(rp_pg_store *s, const char *op) RP_MUSTCHECK;
/* Closes the session (whatever it held, outstanding segments included, is
 * gone); the next port call connects afresh. */
void rp__pg_lose_session(rp_pg_store *s);
/* Forgets the taken row without touching the session. */
void rp__pg_forget_row(rp_pg_store *s);

/* Result readers (text format). A NULL field gives 0 / NULL / false. */
int64_t rp__pg_i64(const PGresult *r, int row, int col);
const char *rp__pg_str(const PGresult *r, int row, int col);
bool rp__pg_null(const PGresult *r, int row, int col);

/* The verdict as its ledger payload (rp_pg_payload.c), compact JSON text in
 * *out (free()): the keys object, queue, project, condition, measured,
 * threshold, unit, action, source, detail, trusted in that order, the
 * control protocol's verdict shape (proto/SCHEMA.md) byte for byte, without
 * linking the codec. RP_ERR_INVALID for a NULL verdict or one outside its
 * enums; RP_ERR_NOMEM. */
rp_status rp__pg_payload(const rp_verdict *v, char **out) RP_MUSTCHECK;
/* The same text appended to w (a writer the caller owns, at depth 0: the
 * park writes every payload of a transaction into one buffer, issue 21).
 * RP_ERR_INVALID as above (nothing written); RP_ERR_NOMEM when w failed. */
struct rp_jout;
rp_status rp__pg_payload_to(struct rp_jout *w, const rp_verdict *v) RP_MUSTCHECK;

/* Formats a signed integer into buf (at least 24 bytes); returns buf. */
const char *rp__pg_itoa(int64_t v, char buf[24]);

/* Inside the caller's open transaction, with gate_id's row locked: clears
 * a stale replay claim on it and appends a ledger event of kind
 * RP_PG_LEDGER_CLAIM_TAKEN_OVER ({gate, job, claimed_by, claimed_at, by,
 * choice}) saying so. *seq gets the event's seq. Errors as rp__pg_run (the
 * transaction is then rolled back). */
rp_status rp__pg_claim_take_over(rp_pg_store *s, int64_t gate_id, const char *by,
                                 rp_choice choice, int64_t *seq) RP_MUSTCHECK;

/* The port functions, one file per area. */
void rp__pg_fill_lease(rp_store_port *out);
void rp__pg_fill_ready(rp_store_port *out);
void rp__pg_fill_runbook(rp_store_port *out);
void rp__pg_fill_wedged(rp_store_port *out);
void rp__pg_fill_divergent(rp_store_port *out);
void rp__pg_fill_sighting(rp_store_port *out);
void rp__pg_fill_sweep_turn(rp_store_port *out);
void rp__pg_fill_gates(rp_gate_port *out);
void rp__pg_fill_park(rp_dead_letter_port *out);

/* ---- The batch park (the tap's, through rp_pg_park_batch.h's port) ------ */

/* Parks n (>= 1) dead letters as park() would each, but in ONE transaction
 * sent in one round trip (the plan mode and the set statement PARK_SET for
 * all n, bound as arrays, in one pipeline segment, one implicit transaction
 * committed at its sync): one commit and one statement for all, which is
 * what makes a storm affordable. A batch naming one identity more than once
 * takes one statement per run of distinct identities (rp_pg_park.c), so the
 * OCCURRENCE rule sees its deaths in order; results, events and ledger
 * numbers follow the items' order.
 * All or nothing: on any failure nothing is committed and the status is
 * park()'s mapping (RP_ERR_UNAVAILABLE for the connection or server;
 * RP_ERR_INVALID for an item park() would refuse; RP_ERR_INTERNAL or
 * RP_ERR_CONFLICT otherwise), so that the caller can park them one by one
 * to find the one that fails alone. Within a batch a death given twice
 * is parked once (the second finds the first's row). The caller publishes
 * the events of the parked ones after this returns (committed).
 * RP_ERR_INVALID while sent batches are unread. */
rp_status rp_pg_park_batch(rp_pg_store *s, rp_pg_park_item *items, size_t n) RP_MUSTCHECK;

/* rp_pg_park_batch in two halves, so that the next batch is on its way
 * before the last one's results are read and the server never waits for
 * the caller between them. rp_pg_park_send sends one batch's transaction
 * without waiting (RP_OK: sent; else as rp_pg_park_batch, nothing sent;
 * RP_ERR_UNAVAILABLE: the session was lost, with whatever was outstanding).
 * rp_pg_park_recv reads the results of the OLDEST batch sent and not yet
 * read (the same items and n: the results are filled) and returns what
 * rp_pg_park_batch would have. Each batch commits or fails alone: one that
 * fails does not touch the next. The caller reads every batch it sent, in
 * order, before any other call on the store (a port call, or
 * rp_pg_park_batch); items (and what they point to) stay the caller's and
 * only need to live until each call returns. Keep few outstanding (two: one
 * on the server, one in its socket). When the session is lost, every
 * outstanding batch's recv returns RP_ERR_UNAVAILABLE (committed or not:
 * park again; it is idempotent). */
rp_status rp_pg_park_send(rp_pg_store *s, rp_pg_park_item *items, size_t n) RP_MUSTCHECK;
rp_status rp_pg_park_recv(rp_pg_store *s, rp_pg_park_item *items, size_t n) RP_MUSTCHECK;

/* The bound parameters of one batch's park, built exactly as
 * rp_pg_park_send binds them (texts rendered, arrays built) and handed to
 * visit (may be NULL) as the segment's commands, without a session: for
 * bench/tap_cost, which counts the instructions of a dead letter's park.
 * Freed when visit returns. */
typedef void (*rp__pg_park_visit)(void *arg, const rp__pg_cmd *k, size_t n);
rp_status rp__pg_park_params(rp_pg_park_item *items, size_t n, rp__pg_park_visit visit,
                             void *arg) RP_MUSTCHECK;

#endif
