/*
 * rp_pg_store.h - the PostgreSQL side of reaper: the store, gate, clock and
 * dead-letter park ports of rp_ports.h, filled from one connection
 * (rp_pg_conn) and the configured schema (CONTRACT section 6).
 *
 * TRANSACTIONS. Expired leases are taken in batches (take_leases, up to
 * the batch size, lowest id first) FOR UPDATE SKIP LOCKED in one
 * transaction (begun by take_leases, ended by commit_leases or
 * release_leases), so two reapers split the work and never move a row
 * twice. commit_leases moves every row fenced on the row as it was when
 * locked (id, lease_owner, lease_expires_at to the microsecond, attempts),
 * with its QueueReaped ledger row (plus, for a park, its
 * delivery_exhausted gate), and commits the batch: every move and its
 * ledger event commit together. First all the moves go as one statement
 * (move_batch) inside SAVEPOINT rp_lease_batch; if a row makes it fail,
 * the batch goes back to that savepoint and each row is moved inside a
 * SAVEPOINT of its own, so that a row whose statement fails (a trigger
 * raising on it, a constraint) is rolled back to its savepoint alone,
 * logged with its SQLSTATE and reported in its move's result, while the
 * others commit.
 * Every other write (ledger append, sighting open/close, dead-letter park,
 * gate answer) is one transaction too. A call that has to run a write
 * while a batch's transaction is still open (a caller that broke the
 * take/commit protocol) first rolls that transaction back, so that no
 * write is ever swallowed by it; the later commit of that batch then
 * returns RP_ERR_CONFLICT.
 *
 * ROUND TRIPS. Statements are prepared once per session (and again after a
 * reconnect: one round trip for all of them) and sent in libpq pipeline
 * mode: take is one round trip (BEGIN, the batch transaction's plan
 * settings and the locking SELECT), a commit is one round trip (SAVEPOINT,
 * move_batch, RELEASE SAVEPOINT, COMMIT); when a row fails, one more
 * (for each row SAVEPOINT, its CTE, RELEASE SAVEPOINT; then COMMIT) plus one
 * for each further row that fails (ROLLBACK TO SAVEPOINT and the rows after
 * it); release one (ROLLBACK). So a batch of 100 rows costs two round
 * trips and one commit.
 *
 * SUBTRANSACTIONS. Each savepoint that writes takes a subtransaction id.
 * The first try takes one per batch; the row-by-row fallback one per row,
 * and past 64 in a transaction the backend's cache of them
 * (PGPROC_MAX_CACHED_SUBXIDS) overflows until the batch commits, during
 * which other sessions' snapshots consult pg_subtrans. The batch size
 * (store.lease_batch_size) bounds it.
 *
 * PLANS. The session plans every statement afresh (plan_cache_mode
 * force_custom_plan, JIT off), so that no plan made while a table was small
 * is kept once it has grown (POSTGRES.md); the lease reap's row transaction
 * caches its plans but rules out every plan except the index walks it
 * needs (rp_pg_sql.c). The oldest-claimable query walks indexes only, so
 * its cost follows the number of projects, not the ready backlog.
 *
 * CLOCK. Expiry is judged with the database's clock: the take query filters
 * lease_expires_at < now() - grace (the transaction's start, hence a little
 * loosely: a row that expired after the pass read its clock is taken and
 * core releases it), and the clock port reads the database's time, so
 * core's own judgement (rp_judge_held_job) uses it too.
 *
 * FAILURES. Library detail (SQLSTATE, message) is logged here (RP_WARN) and
 * core sees a status:
 *   - RP_ERR_UNAVAILABLE: the connection is down, was lost, or a call did
 *     not finish within the timeout (rp_pg_store_set_timeout; the connection
 *     is then closed, never reused half-way); also SQLSTATE classes 08, 53,
 *     57P01-57P03 (shutdown, crash, starting up). The next call reconnects
 *     (rp_pg_conn_ensure); whatever was open on the old session (a taken
 *     row's transaction, its lock) is gone with it and is never reused.
 *   - RP_ERR_CONFLICT as a move's result (commit_leases): the row is not
 *     one taken (fence) or was not taken with a lock: nothing is done for
 *     it, core goes on.
 *   - RP_ERR_INTERNAL as a move's result: the row failed on its own (a
 *     trigger raising on it, a constraint...): rolled back to its
 *     savepoint alone, the SQLSTATE is logged here, and core notes "could
 *     not be moved" and goes on; the rest of the batch commits.
 *   - RP_ERR_INTERNAL: anything else (e.g. a schema that was never
 *     migrated).
 *
 * DEAD LETTERS. park() applies the OCCURRENCE rule of rp_deadletter.h: it
 * stores a dead_letter row (primary key (identity, death), ON CONFLICT DO
 * NOTHING) only for a death that is not parked and not covered by its
 * identity's open gate, and, only when it was inserted, the job (kind
 * bus.dead_letter, project RP_PG_BUS_PROJECT, state awaiting_human, payload
 * {identity, vhost, queue, origin_queue, reason}), its bus_dead_lettered
 * gate (choices replay, dismiss) and the ledger event: one statement, one
 * commit. origin_queue and reason are stored as rp_untrusted_render()
 * shows them (quoted, escaped, cut to 200 characters). The message's
 * headers and properties come, as JSON text, from an rp_pg_dl_handle that
 * rp_dl_message.handle points to (NULL: both "{}"). The peek function of the
 * dead-letter port is the broker's and is left NULL here.
 *
 * GATES. list() reads newest first (by id); answer() locks the gate row
 * (FOR UPDATE), settles it once, applies the choice to its job and appends
 * a ledger event of kind RP_PG_LEDGER_GATE_ANSWERED, all in one
 * transaction. retry: job ready, run_after now(), lease and finished_at
 * cleared; dismiss: job failed, finished_at now(); replay: job succeeded,
 * finished_at now(). The committed event's seq and at, the job and the
 * gate's kind come back in rp_answer_result (committed true).
 *
 * Threading: one thread at a time per store (the store thread). Blocking.
 *
 * Ownership: rp_pg_store_new borrows conn (the caller keeps it open while
 * the store lives and frees it after rp_pg_store_free) and copies schema.
 * The port-filling functions fill caller-owned structs whose self pointers
 * borrow the store. What the ports lend stays owned by the store (see
 * rp_ports.h OWNERSHIP).
 */
#ifndef RP_PG_STORE_H
#define RP_PG_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_backfill_port.h"
#include "rp_common.h"
#include "rp_park_batch_port.h"
#include "rp_pg_conn.h"
#include "rp_ports.h"

/* The project of the jobs that park dead letters. A dead letter belongs to
 * no job-table project, and its origin queue comes from untrusted headers,
 * so one fixed, trusted name groups them: `gates --project bus` lists them
 * all. */
#define RP_PG_BUS_PROJECT "bus"
/* The kind of those jobs. */
#define RP_PG_BUS_JOB_KIND "bus.dead_letter"
/* The ledger kind of a gate answer (a gate answer has no verdict). */
#define RP_PG_LEDGER_GATE_ANSWERED RP_LEDGER_GATE_ANSWERED
/* The ledger kind that records a stale replay claim taken over (rp_gate.h):
 * payload {gate, job, claimed_by, claimed_at, by, choice}. On the ledger
 * only (not published to the events exchange). */
#define RP_PG_LEDGER_CLAIM_TAKEN_OVER "GateClaimTakenOver"
/* The most body bytes park stores. A longer body, or one the caller marked
 * body_truncated, is stored as its first RP_PG_DL_BODY_MAX bytes (at most)
 * with body_truncated true, and can then not be replayed. */
#define RP_PG_DL_BODY_MAX (4u * 1024u * 1024u)
/* The default time one call may take before the connection is given up. */
#define RP_PG_STORE_TIMEOUT_MS 30000

/* The largest batch take_leases takes (rp_pass.h RP_PASS_LEASE_BATCH_MAX). */
#define RP_PG_LEASE_BATCH_MAX 10000

/* What the AMQP side hands park() through rp_dl_message.handle: the
 * message's headers table and basic properties, each as one JSON object in
 * text (valid UTF-8, no \u0000, which jsonb refuses). NULL members mean
 * "{}". Borrowed for the call. */
typedef rp_dl_stored rp_pg_dl_handle; /* core's stored form (rp_backfill_port.h) */

typedef struct rp_pg_store rp_pg_store;

/* A store over conn in schema (a name, quoted here). Nothing is sent until
 * the first port call. NULL when out of memory or an argument is NULL. */
rp_pg_store *rp_pg_store_new(rp_pg_conn *conn, const char *schema);
/* Rolls back a taken row's transaction if one is open, frees what the
 * ports lent, and the store. The connection stays open (it is the
 * caller's). NULL is a no-op. */
void rp_pg_store_free(rp_pg_store *s);

/* How long one port call may wait on the server (ms, >= 1; default
 * RP_PG_STORE_TIMEOUT_MS). Past it the connection is closed and the call
 * returns RP_ERR_UNAVAILABLE. */
void rp_pg_store_set_timeout(rp_pg_store *s, int timeout_ms);

/* The claimer a replay records on a gate (rp_gate.h): this process's
 * instance id, "host:pid:start" (start: the first call's Unix ms, so that a
 * restarted process with the same pid, as in a container, is another
 * claimer). Static, set once (thread-safe). */
const char *rp_pg_instance_id(void);
/* The store's claimer (default rp_pg_instance_id(); copied, cut to 159
 * bytes). Tests set two stores apart with it. */
void rp_pg_store_set_claimer(rp_pg_store *s, const char *claimer);
const char *rp_pg_store_claimer(const rp_pg_store *s);
/* After how many seconds another process's replay claim on a gate is stale
 * (control.replay_claim_seconds; default RP_PG_CLAIM_SECONDS). */
void rp_pg_store_set_claim_seconds(rp_pg_store *s, int64_t seconds);
#define RP_PG_CLAIM_SECONDS 60

/* Fill one port each. */
void rp_pg_store_port(rp_pg_store *s, rp_store_port *out);
void rp_pg_gate_port(rp_pg_store *s, rp_gate_port *out);
/* Fills *out (core/rp_gate_look.h) over s (borrowed: it must outlive the
 * port). Store thread. */
struct rp_gate_look_port;
void rp_pg_gate_look_port(rp_pg_store *s, struct rp_gate_look_port *out);
void rp_pg_clock_port(rp_pg_store *s, rp_clock_port *out);
/* is_parked and park; peek is left NULL (the broker side fills it). */
void rp_pg_dead_letter_port(rp_pg_store *s, rp_dead_letter_port *out);
/* All four at once, into ports->store, ->gates, ->clock and ->dead_letters;
 * the broker and publisher ports are left as they are. */
void rp_pg_store_ports(rp_pg_store *s, rp_ports *ports);

/* The open gates (no answer yet) by kind, for the daemon's metrics; one
 * read-only query. RP_OK, RP_ERR_UNAVAILABLE, RP_ERR_INTERNAL, RP_ERR_NOMEM
 * (by_kind all zero then). */
rp_status rp_pg_store_count_open_gates(rp_pg_store *s,
                                       int64_t by_kind[RP_GATE_KIND_COUNT_]) RP_MUSTCHECK;
/* The same, and how long ago the oldest open gate of each kind was
 * created (ms, on the database's clock; 0 where none is open). */
rp_status rp_pg_store_count_open_gates_aged(rp_pg_store *s, int64_t by_kind[RP_GATE_KIND_COUNT_],
                                            int64_t oldest_age_ms[RP_GATE_KIND_COUNT_]) RP_MUSTCHECK;
/* The open sightings by condition (the same statuses). */
rp_status rp_pg_store_count_open_sightings(rp_pg_store *s,
                                           int64_t by_condition[RP_COND_COUNT_]) RP_MUSTCHECK;

/* The metrics' gauges port (core/rp_gauges_port.h) over these counts:
 * store_up is the store's connection as it is now (no round trip), the
 * gates aged and the sightings as above. self is *store read at each call
 * (the daemon makes its store thread's store after the port is handed
 * out); it must outlive the port. Store thread. */
struct rp_gauges_port;
void rp_pg_gauges_port(rp_pg_store *const *store, struct rp_gauges_port *out);

/* One dead letter of a batch park (the dead-letter tap's): the arguments
 * park() takes, all borrowed, and its result (core's park-batch item,
 * rp_park_batch_port.h). */
typedef rp_park_batch_item rp_pg_park_item;

/* The tap parks batches through the park-batch port over its own sessions
 * (rp_pg_park_batch.h); the batch park itself (rp_pg_park_batch,
 * rp_pg_park_send/recv) is internal to this adapter
 * (rp_pg_store_internal.h). */

#endif
