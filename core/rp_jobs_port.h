/*
 * rp_jobs_port.h - job triage (issue #18 item 7): list the job table's rows
 * by id (keyset paging, with the total that match), read one row, and cancel
 * a ready or leased job (it becomes failed, its lease cleared, and a
 * JobCancelled ledger event commits with it). The control ops `jobs`, `job`
 * and `cancel` (proto/SCHEMA.md) run these on the store thread;
 * adapters/postgres/rp_pg_jobs.h fills the port.
 *
 * The rules that are not storage (which states a cancel takes, the texts of
 * its refusals) are core's, in rp_jobs.c, pure: no I/O, no clock, no log.
 *
 * Ownership: every string of an rp_job_row is heap memory the row owns
 * (rp_job_row_cleanup frees it); an rp_job_page owns its rows
 * (rp_job_page_cleanup). Query strings are borrowed for the call.
 * Threading: a port is used by one thread at a time (the store thread).
 */
#ifndef RP_JOBS_PORT_H
#define RP_JOBS_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_job.h"
#include "rp_status.h"

/* The ledger kind a cancel appends: payload {job, project, kind, from,
 * owner, by, reason} (SCHEMA.md). On the ledger only: it is not a verdict
 * and not a gate answer, so it is not published to the events exchange. */
#define RP_LEDGER_JOB_CANCELLED "JobCancelled"

/* How many characters of a job's payload (its jsonb as text) `job` shows;
 * a longer one is cut there and marked payload_truncated. 16,384
 * characters are at most 65,536 bytes: a reply's largest string. */
#define RP_JOB_PAYLOAD_SHOWN 16384

/* One row of the job table. Times are Unix ms on the database's clock; 0
 * (or has_* false) when NULL. */
typedef struct rp_job_row {
    int64_t id;
    char *project;
    char *kind;
    rp_job_state state;
    int32_t attempts;
    int32_t max_attempts;
    char *lease_owner;          /* NULL when none */
    bool has_lease_expires;
    rp_time_ms lease_expires_at;
    rp_time_ms run_after;
    int64_t depends_on;         /* 0 when none */
    bool has_finished;
    rp_time_ms finished_at;
    rp_time_ms created_at;
    rp_time_ms updated_at;
    /* Only from get: the payload as JSON text (NULL: SQL NULL), cut to
     * RP_JOB_PAYLOAD_SHOWN characters with payload_truncated set. */
    char *payload;
    bool payload_truncated;
} rp_job_row;

void rp_job_row_init(rp_job_row *r);
void rp_job_row_cleanup(rp_job_row *r);

/* A listing's filters. Rows come lowest id first, each with id > after. */
typedef struct rp_job_query {
    bool any_state;        /* true: every state; else only `state` */
    rp_job_state state;
    const char *project;   /* NULL: every project */
    const char *kind;      /* NULL: every kind */
    size_t limit;          /* 1..1000 */
    int64_t after;         /* >= 0; 0: from the first row */
} rp_job_query;

/* One page. total counts every row that matches the filters (whatever
 * `after`); next_after is the last row's id when more rows follow it, else
 * 0 (the listing is over). */
typedef struct rp_job_page {
    rp_job_row *jobs;
    size_t n;
    int64_t total;
    int64_t next_after;
} rp_job_page;

void rp_job_page_init(rp_job_page *p);
void rp_job_page_cleanup(rp_job_page *p);

/* What a cancel did, or why it did not. */
typedef struct rp_job_cancel_result {
    rp_job_state was;       /* the state the job was in (set for RP_OK and RP_ERR_CONFLICT) */
    char *was_owner;        /* the lease owner it had (NULL: none); owned */
    rp_job_row job;         /* RP_OK: the row as the cancel left it */
    int64_t seq;            /* RP_OK: the JobCancelled event's ledger seq */
} rp_job_cancel_result;

void rp_job_cancel_result_init(rp_job_cancel_result *r);
void rp_job_cancel_result_cleanup(rp_job_cancel_result *r);

typedef struct rp_jobs_port {
    void *self;
    /* One page of rows (*out initialised by the caller, filled on RP_OK).
     * RP_OK; RP_ERR_INVALID (a query outside its bounds);
     * RP_ERR_UNAVAILABLE; RP_ERR_INTERNAL; RP_ERR_NOMEM. */
    rp_status (*list)(void *self, const rp_job_query *q, rp_job_page *out);
    /* One row with its payload. RP_ERR_NOT_FOUND when there is none;
     * otherwise as list. */
    rp_status (*get)(void *self, int64_t id, rp_job_row *out);
    /* Cancels job id under its row lock, in one transaction: when its
     * state is cancellable (rp_job_cancellable) it becomes failed with
     * lease_owner and lease_expires_at cleared and finished_at now, and a
     * RP_LEDGER_JOB_CANCELLED event (by: the broker-validated user; reason
     * the person's) is appended. RP_OK; RP_ERR_NOT_FOUND; RP_ERR_CONFLICT
     * (another state: nothing changed, out->was says which); otherwise as
     * list (nothing committed). A worker that held the lease then finds
     * its fenced settle (WHERE lease_owner = it) matching no row. */
    rp_status (*cancel)(void *self, int64_t id, const char *by, const char *reason,
                        rp_job_cancel_result *out);
} rp_jobs_port;

/* ---- rules (rp_jobs.c) ----------------------------------------------------- */

/* Whether a job in state s may be cancelled: ready and leased only (the
 * others are settled, or wait for a person's answer on their gate). */
bool rp_job_cancellable(rp_job_state s);

/* The conflict reply's sentence for a job that cannot be cancelled:
 * "job N is <state>; only a ready or leased job can be cancelled" plus the
 * way out for awaiting_human (answer its gate). Written into buf (n bytes,
 * cut to fit). */
void rp_job_cancel_refusal(char *buf, size_t n, int64_t id, rp_job_state s);

/* The not_found reply's sentence: "job N does not exist". */
void rp_job_not_found_text(char *buf, size_t n, int64_t id);

/* The reason a jobs/job/cancel failure is given, for the statuses that
 * are not NOT_FOUND or CONFLICT (those have the texts above). Static. */
const char *rp_jobs_refusal(rp_status st);

#endif
