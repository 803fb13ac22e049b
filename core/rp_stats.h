/*
 * rp_stats.h - issue 18 item 7's `stats`: one row per owned queue and one
 * per (project, kind) of the job table, each with its counts, its intake
 * and drain over reap.divergence_window_seconds, the age of its oldest
 * waiting work when known, and the flags of its open sightings (STALLED,
 * WEDGED, DIVERGENT, WAITING_DEPTH). The control op `stats` (proto/SCHEMA.md)
 * answers with it; `reaperctl stats` prints it.
 *
 * Core assembles the rows (rp_stats_collect): which queues are owned work
 * queues (the configured patterns, reaper's own queues left out, as a pass
 * classifies them), the ages from the clock it is given, and which open
 * sighting flags which row. It reads through two ports: the broker port of
 * rp_ports.h (list_queues, may be absent) and the stats store port below,
 * which adapters/postgres/rp_pg_stats.h fills. No I/O of its own, no
 * clock, no logging.
 *
 * Which sighting flags which row (rp_sighting.h's keys):
 *   an owned queue:     broker|<COND>|queue:<vhost>:<name>
 *   a (project, kind):  job_queue|<COND>|kind:<project>:<kind>, or
 *                       job_queue|<COND>|job:<id> of a job of that kind
 *                       (STALLED on the job table is sighted per job)
 *   for COND in STALLED, WEDGED, DIVERGENT, WAITING_DEPTH only.
 *
 * Ownership: an rp_stats owns its rows and every string in them
 * (rp_stats_cleanup). The port's outputs are owned by the caller and freed
 * with the cleanup functions named at each. Arguments are borrowed.
 * Threading: one thread at a time (the store thread).
 */
#ifndef RP_STATS_H
#define RP_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_judge_divergent.h"
#include "rp_match.h"
#include "rp_ports.h"
#include "rp_status.h"

/* The flags a row may carry, as bits; their wire names are the
 * conditions' (rp_stats_flag_string). */
typedef enum rp_stats_flag {
    RP_STATS_STALLED = 1u << 0,
    RP_STATS_WEDGED = 1u << 1,
    RP_STATS_DIVERGENT = 1u << 2,
    RP_STATS_WAITING_DEPTH = 1u << 3,
} rp_stats_flag;
#define RP_STATS_FLAG_COUNT 4

/* The i-th flag (0..RP_STATS_FLAG_COUNT-1), in wire order. */
rp_stats_flag rp_stats_flag_at(size_t i);
/* "STALLED", "WEDGED", "DIVERGENT", "WAITING_DEPTH"; "unknown" for any other
 * value. Static, never NULL. */
const char *rp_stats_flag_string(rp_stats_flag f);
/* The flag of a condition; 0 for a condition that flags no row. */
unsigned rp_stats_flag_of(rp_condition c);

/* One owned work queue. */
typedef struct rp_stats_queue {
    char *vhost;
    char *name;
    bool counts_known;      /* ready and unacked reported by the broker */
    int64_t ready;
    int64_t unacked;
    bool consumers_known;
    int64_t consumers;
    bool rates_known;       /* a pass sampled its counters before (migration 0009) */
    int64_t intake;         /* publishes over the window */
    int64_t drained;        /* acks over the window */
    bool age_known;         /* ready > 0 and the head message's timestamp known */
    int64_t oldest_waiting_ms;
    unsigned flags;         /* rp_stats_flag bits */
} rp_stats_queue;

/* One (project, kind) of the job table. */
typedef struct rp_stats_kind {
    char *project;
    char *kind;
    int64_t waiting;        /* claimable now (as WAITING_DEPTH counts them) */
    int64_t active;         /* leased */
    int64_t intake;         /* rows created in the window */
    int64_t drained;        /* rows that reached succeeded in the window */
    bool age_known;         /* waiting > 0 */
    int64_t oldest_waiting_ms;
    unsigned flags;
} rp_stats_kind;

/* The most rows of each table a reply carries (with names of 255 bytes a
 * full reply stays under the protocol's 8 MiB); the rest are counted in
 * queues_omitted / kinds_omitted. */
#define RP_STATS_ROWS_MAX 5000

typedef struct rp_stats {
    int64_t window_seconds;
    /* false: the broker's queues could not be read (broker_note says why:
     * a heap string) and queues is empty; the kinds are still there. */
    bool broker_read;
    char *broker_note;
    rp_stats_queue *queues; /* by vhost, then name */
    size_t n_queues;
    rp_stats_kind *kinds;   /* by project, then kind */
    size_t n_kinds;
    /* Rows past the scope's max_rows (the last ones in the order above):
     * not in the arrays, counted here. */
    size_t queues_omitted;
    size_t kinds_omitted;
} rp_stats;

void rp_stats_init(rp_stats *s);
void rp_stats_cleanup(rp_stats *s);

/* ---- the store port --------------------------------------------------------- */

/* One (project, kind) as the store counts it: rows of rp_stats_kind with
 * flags 0, and oldest_since the time its oldest claimable job became
 * claimable (the latest of its run_after, created_at and its dependency's
 * finished_at) when waiting > 0. */
typedef struct rp_stats_kind_count {
    rp_stats_kind row;      /* age fields unset: core sets them */
    bool oldest_known;
    rp_time_ms oldest_since;
} rp_stats_kind_count;

/* An open sighting of a condition that flags rows: its key, and for a job
 * subject ("job:<id>") the project and kind of that job (NULL otherwise, or
 * when the job is gone). */
typedef struct rp_stats_sighting {
    char *key;
    char *project;
    char *kind;
} rp_stats_sighting;

typedef struct rp_stats_store_port {
    void *self;
    /* Every (project, kind) with claimable or leased jobs, or with rows
     * created or succeeded in the window ending at now; by project then
     * kind. *rows is a new array the caller frees with
     * rp_stats_kind_counts_free. RP_OK; RP_ERR_UNAVAILABLE; RP_ERR_INTERNAL;
     * RP_ERR_NOMEM. */
    rp_status (*kinds)(void *self, rp_time_ms now, int64_t window_seconds,
                       rp_stats_kind_count **rows, size_t *n);
    /* An owned queue's publishes and acks over the window, read from the
     * samples the passes keep (nothing written): out->known false when no
     * pass sampled the queue yet. Errors as kinds. */
    rp_status (*queue_rates)(void *self, const char *vhost, const char *name, rp_time_ms now,
                             int64_t window_seconds, rp_queue_rates *out);
    /* The open sightings of STALLED, WEDGED, DIVERGENT and WAITING_DEPTH.
     * *rows is a new array freed with rp_stats_sightings_free. Errors as
     * kinds. */
    rp_status (*sightings)(void *self, rp_stats_sighting **rows, size_t *n);
} rp_stats_store_port;

void rp_stats_kind_counts_free(rp_stats_kind_count *rows, size_t n);
void rp_stats_sightings_free(rp_stats_sighting *rows, size_t n);

/* ---- the use case ----------------------------------------------------------- */

/* What makes a queue an owned work queue here: the patterns of the
 * configuration (required) and reaper's own queues (NULL entries skipped),
 * as rp_pass_options holds them. */
typedef struct rp_stats_scope {
    const pcre2_code *owned_queue_pattern;
    const pcre2_code *dead_letter_queue_pattern;
    const char *own_queues[2];
    int64_t window_seconds; /* reap.divergence_window_seconds */
    size_t max_rows;        /* per table; 0: RP_STATS_ROWS_MAX */
} rp_stats_scope;

/* Reads every row and assembles *out (initialised by the caller; filled on
 * RP_OK, left empty otherwise). broker NULL, or without list_queues: no
 * queue rows, broker_read false with a note. A broker listing that fails
 * is the same (its status in the note), not a failure of the whole: the
 * job table's rows still answer. A queue whose rates cannot be read has
 * rates_known false. Each table keeps its first max_rows rows (the rates
 * are read for those only) and counts the others. RP_OK; the store's
 * errors of kinds and sightings; RP_ERR_INVALID for NULL arguments;
 * RP_ERR_NOMEM. */
rp_status rp_stats_collect(const rp_stats_store_port *store, const rp_broker_port *broker,
                           const rp_stats_scope *scope, rp_time_ms now, rp_stats *out) RP_MUSTCHECK;

/* The pure half of collect: sets every row's flags from sightings[0..n)
 * (the rules at the top). Rows already in *s; nothing is read. A key that
 * does not split, or whose subject names no row, flags nothing.
 * RP_ERR_INVALID for NULL; RP_ERR_NOMEM. */
rp_status rp_stats_assemble(rp_stats *s, const rp_stats_sighting *sightings,
                            size_t n_sightings) RP_MUSTCHECK;

/* The age of waiting work that has waited since `since`: now - since, 0
 * when since is later than now (clocks of two hosts). */
int64_t rp_stats_age_ms(rp_time_ms now, rp_time_ms since);

/* The reason a stats failure is given (the store's statuses). Static. */
const char *rp_stats_refusal(rp_status st);

#endif
