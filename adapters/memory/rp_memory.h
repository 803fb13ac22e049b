/*
 * rp_memory.h - an in-memory implementation of every port of rp_ports.h, for
 * core unit tests only.
 *
 * It keeps jobs, the ledger, sightings, gates, parked dead letters, broker
 * queues, dead-letter messages and published events in plain arrays, with a
 * clock the test sets. It follows the contracts written in rp_ports.h
 * (transactions are trivially atomic here: a call that fails changes
 * nothing), so a test of the pass against it is a test of the pass against
 * those contracts. Where the contract lets an adapter filter loosely, this
 * one does (take_leases returns every lease past its deadline, ignoring the
 * grace), so that core's own boundaries are what tests see.
 *
 * LEASE BATCHES. take_leases counts as RP_MEM_TAKE_LEASE, release_leases as
 * RP_MEM_RELEASE_LEASE; commit_leases counts one RP_MEM_MOVE_LEASE per row
 * it moves (an injected failure there is that row's own: RP_ERR_CONFLICT
 * or RP_ERR_INTERNAL leave the row as it was, rolled back alone, while the
 * others commit; RP_ERR_UNAVAILABLE loses the whole batch, as a lost
 * session would) and then one RP_MEM_COMMIT_LEASES for the batch's commit
 * (a failure there commits nothing of the batch).
 *
 * FAILURE INJECTION. rp_memory_fail() makes one operation fail with a given
 * status after a number of successful calls, and keep failing until it is
 * disarmed (status RP_OK). A failing call changes nothing (a move that fails
 * also drops its row lock, as a rolled-back transaction would).
 * rp_memory_calls() counts every call of an operation, failed ones included.
 *
 * Ownership: rp_memory_new() returns a store that rp_memory_free() frees
 * with everything in it. rp_memory_ports() fills a caller-owned rp_ports
 * whose self pointers borrow the store. Seeding functions copy what they are
 * given. The inspection accessors lend pointers into the store, valid until
 * the next call that changes it (a port call or a seeding call).
 * rp_memory_dump() returns a heap string the caller frees.
 */
#ifndef RP_MEMORY_H
#define RP_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_deadletter.h"
#include "rp_gate.h"
#include "rp_job.h"
#include "rp_judge.h"
#include "rp_ports.h"
#include "rp_status.h"
#include "rp_verdict.h"

typedef struct rp_memory rp_memory;

typedef enum rp_memory_op {
    RP_MEM_LIST_QUEUES = 0,
    RP_MEM_GET_QUEUE,
    RP_MEM_GET_TIMEOUT,
    RP_MEM_TAKE_LEASE,
    RP_MEM_MOVE_LEASE,
    RP_MEM_RELEASE_LEASE,
    RP_MEM_LIST_CLAIMABLE,
    RP_MEM_APPEND_EVENT,
    RP_MEM_OPEN_SIGHTING,
    RP_MEM_CLOSE_SIGHTING,
    RP_MEM_LIST_SIGHTINGS,
    RP_MEM_PEEK,
    RP_MEM_IS_PARKED,
    RP_MEM_PARK,
    RP_MEM_LIST_GATES,
    RP_MEM_ANSWER,
    RP_MEM_PUBLISH,
    RP_MEM_NEXT_DEADLINE,
    RP_MEM_COMMIT_LEASES,
    RP_MEM_OP_COUNT_
} rp_memory_op;

/* A job row. Strings are owned by the store once added. */
typedef struct rp_mem_job {
    int64_t id;                 /* assigned by rp_memory_add_job */
    char *project;
    char *kind;
    rp_job_state state;
    int32_t attempts;
    int32_t max_attempts;
    char *lease_owner;          /* NULL when none */
    bool lease_known;
    rp_time_ms lease_expires_at;
    rp_time_ms run_after;
    int64_t depends_on;         /* 0: none */
    bool finished_known;
    rp_time_ms finished_at;
    bool locked;                /* taken FOR UPDATE by a pass */
    bool foreign_lock;          /* locked by "another reaper": skipped */
} rp_mem_job;

/* A ledger event or a published one. */
typedef struct rp_mem_event {
    int64_t seq;
    rp_time_ms at;
    char *kind;
    rp_verdict verdict;
} rp_mem_event;

/* A parked dead letter (a row of the dead_letter table). */
typedef struct rp_mem_parked {
    char *identity;
    char *death;          /* rp_deadletter.h DEATH */
    int occurrence;       /* 1 for an identity's first */
    int64_t job_id;
    int64_t gate_id;
    char *vhost;
    char *queue;
    char *origin_queue;   /* rendered by rp_untrusted_render */
    char *reason;         /* likewise */
    bool first_death_known;
    int64_t first_death_at;
    uint8_t *body;
    size_t body_len;
    bool body_truncated;
    rp_time_ms parked_at;
} rp_mem_parked;

rp_memory *rp_memory_new(void);
void rp_memory_free(rp_memory *m);
void rp_memory_ports(rp_memory *m, rp_ports *out);

/* The clock the clock port reads, and the page size of list_queues
 * (default 100). */
void rp_memory_set_now(rp_memory *m, rp_time_ms now);
void rp_memory_set_page_size(rp_memory *m, size_t n);

/* Makes op fail with st once `after` further calls have succeeded, and on
 * every call from then on; st RP_OK disarms. */
void rp_memory_fail(rp_memory *m, rp_memory_op op, rp_status st, size_t after);
/* The same, but only that one call fails (one bad row among good ones). */
void rp_memory_fail_once(rp_memory *m, rp_memory_op op, rp_status st, size_t after);
size_t rp_memory_calls(const rp_memory *m, rp_memory_op op);
/* Every call of a writing operation (move, release of a locked row, append,
 * open/close sighting, park, answer, publish), for dry-run checks. */
size_t rp_memory_write_calls(const rp_memory *m);

/* ---- Seeding (copies its arguments) ---- */
/* Adds a job (spec->id and spec->locked are ignored); its id goes to *id. */
rp_status rp_memory_add_job(rp_memory *m, const rp_mem_job *spec, int64_t *id) RP_MUSTCHECK;
/* Marks a job locked by another reaper (skipped by take_leases). */
rp_status rp_memory_lock_job(rp_memory *m, int64_t id, bool locked) RP_MUSTCHECK;
/* Adds or replaces (same vhost and name) a queue. */
rp_status rp_memory_put_queue(rp_memory *m, const rp_queue_facts *q) RP_MUSTCHECK;
/* Appends a queue even when one of that vhost and name exists, as a
 * listing that shifted between pages shows one queue twice. */
rp_status rp_memory_append_queue(rp_memory *m, const rp_queue_facts *q) RP_MUSTCHECK;
rp_status rp_memory_remove_queue(rp_memory *m, const char *vhost, const char *name) RP_MUSTCHECK;
rp_status rp_memory_set_timeout(rp_memory *m, const char *vhost, const char *name,
                                const rp_timeout_in_force *t) RP_MUSTCHECK;
/* Puts a message on a dead-letter queue (deep copy of headers and body). */
rp_status rp_memory_add_dead_letter(rp_memory *m, const char *vhost, const char *queue,
                                    const rp_dl_headers *h, rp_bytes body) RP_MUSTCHECK;
/* Removes every message of a dead-letter queue, as an operator's purge
 * would; returns how many. (The memory peek reads a queue like a classic
 * one: up to the limit from the head, reporting the rest as unread
 * RP_DL_UNREAD_PEEK_LIMIT.) */
size_t rp_memory_purge_dead_letters(rp_memory *m, const char *vhost, const char *queue);
/* Adds a sighting row as another reaper would have (no ledger event). */
rp_status rp_memory_add_sighting(rp_memory *m, const char *key, rp_condition c) RP_MUSTCHECK;

/* ---- Inspection (lent) ---- */
const rp_mem_job *rp_memory_job(const rp_memory *m, int64_t id);
size_t rp_memory_n_jobs(const rp_memory *m);
size_t rp_memory_n_ledger(const rp_memory *m);
const rp_mem_event *rp_memory_ledger(const rp_memory *m, size_t i);
size_t rp_memory_n_published(const rp_memory *m);
const rp_mem_event *rp_memory_published(const rp_memory *m, size_t i);
size_t rp_memory_n_sightings(const rp_memory *m);
/* The open sighting with this key, or NULL. */
const rp_sighting_row *rp_memory_sighting(const rp_memory *m, const char *key);
size_t rp_memory_n_gates(const rp_memory *m);
const rp_gate *rp_memory_gate(const rp_memory *m, size_t i);
size_t rp_memory_n_parked(const rp_memory *m);
const rp_mem_parked *rp_memory_parked(const rp_memory *m, size_t i);

/* The whole state (jobs, locks, ledger, sightings, gates, parked dead
 * letters, published events, queues, dead-letter messages) as canonical
 * text, so that two states compare with strcmp. Call counters and failure
 * injection are not state. */
rp_status rp_memory_dump(const rp_memory *m, char **out) RP_MUSTCHECK;

#endif
