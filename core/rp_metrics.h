/*
 * rp_metrics.h - reaper's metrics (CONTRACT section 7): the registry. Its
 * rendering in the Prometheus text format (version 0.0.4) is the HTTP
 * adapter's (adapters/http/rp_http_prom.h).
 *
 * One rp_metrics holds every series as fixed arrays indexed by the core's
 * enums (source, condition, action, gate kind, choice) or by small fixed
 * label sets (control op and outcome, pass scope and result), so that an
 * update is one atomic add or store: no lock, no allocation, callable from
 * any thread (the loop, the store thread). Rendering reads each value once
 * with an atomic load; a scrape sees every counter at some moment between
 * the start and the end of the render, never a torn value.
 *
 * The names, kept exactly (dashboards and alert rules use them):
 *   process_cpu_seconds_total, process_resident_memory_bytes,
 *   process_open_fds, process_max_fds, process_start_time_seconds
 *     (the names every Prometheus client library uses; set by the caller
 *     before each render with rp_metrics_set_process)
 *   reaper_build_info{version,revision} 1
 *   reaper_reconnects_total{backend}
 *   reaper_up{backend="broker"|"store"}
 *   reaper_reaped_total{source,condition,action}
 *   reaper_sightings_open{condition}
 *   reaper_dead_letters_parked_total{vhost}
 *   reaper_tap_ignored_total{vhost}
 *   reaper_broker_events_refused_total
 *   reaper_gates_open{kind}
 *   reaper_gates_answered_total{kind,choice}
 *   reaper_pass_duration_seconds{scope="full"|"leases"} (histogram)
 *   reaper_passes_total{scope,result="ok"|"unreadable"|"error"}
 *   reaper_last_successful_pass_timestamp_seconds{scope}
 *   reaper_oldest_open_gate_age_seconds{kind}
 *   reaper_event_lag_seconds
 *   reaper_control_requests_total{op,outcome}
 *   reaper_feed_publish_failures_total
 *   reaper_feed_published_total
 *   reaper_tap_held_bytes{vhost}, reaper_tap_paused{vhost}
 *   reaper_tap_park_delay_seconds{vhost} (histogram)
 *   reaper_policy_verified{policy,vhost} (issue 18 item 5, issue 19
 *     item 1: 1 when the last reconcile that checked reaper's policy in
 *     that watched vhost found it in force there and carried as wanted by
 *     every selected queue there, 0 when not; only the watched vhosts'
 *     slots, and only the policies checked there so far, appear)
 *
 * The vhost label (issue 19 item 1: everything vhost-scoped says its
 * vhost). The series above with {vhost} are those of one watched vhost's
 * own machinery: each watched vhost has a tap of its own (its memory, its
 * pause, its park delays, the deliveries it ignored) and its own dead
 * letters (a park's verdict names its vhost). They live in a fixed table
 * of RP_METRICS_VHOSTS slots (the cap on watched vhosts,
 * RP_SWEEP_VHOSTS_MAX), registered by name with rp_metrics_vhost_register
 * on the loop at start-up, before any thread updates them; an update finds
 * its slot by name among the registered ones (a scan of fixed names, no
 * lock, no allocation) and is one atomic add or store there. A registered
 * vhost's counters and histogram appear from its registration at 0, so
 * that rate() sees the first event; its tap gauges once set.
 *   reaper_policy_verified{policy,vhost} lives in the same slots: the
 * reconcile reports each policy once (its detail naming the vhosts) and,
 * on that entry, one verdict per vhost it managed (rp_report.h's
 * rp_policy_vhost); each registered vhost's verdict sets its series. A
 * vhost reaper manages without watching it (it holds a selected queue)
 * has no slot: its problems are in the report's detail only, never in the
 * overflow slot. A reconcile that failed before it checked any vhost sets
 * every registered vhost's series of that policy to 0.
 *   Left without the label, and why: the passes, the gates, the reaped events, the control
 * requests, the feed and the broker events are the daemon's (one pass
 * covers every vhost; the broker events and the control queue are
 * broker.url's vhost's).
 *   A vhost without a slot (the table full, or a vhost never registered)
 * is never lost: its counts go to one overflow slot, rendered with an
 * empty label value, vhost="" (which Prometheus stores as the series
 * without the label, so sums over vhost still add up), and only once
 * used. The hook that first uses the overflow slot returns true, so that
 * its caller logs it once.
 *   A vhost no longer watched after a reload keeps its series until the
 * restart, as Prometheus clients do (broker.vhosts is a restart key:
 * today the set only changes at a restart); registering a name again is a
 * no-op.
 *
 * Which series appear: every gauge and every series with a fixed, small
 * label set always appears (zero until set); reaper_reaped_total has every
 * combination of source, condition and action a ledger event can carry
 * (rp_metrics_reaped_valid) from the start at 0, so that rate() and
 * increase() see the first event; the error outcomes of
 * reaper_control_requests_total appear once non-zero. A gauge that was
 * never measured (gates open before the first count, the event lag before
 * the first event, the last successful pass before the first one, the
 * process and the tap before they are set) is left out rather than
 * reported as zero.
 *
 * Time: the core has no clock. Gauges that are ages are kept as the
 * moment they started (wall clock, ms) and rendered against the wall
 * clock the caller gives with rp_metrics_set_clock before the render.
 *
 * Ownership: an rp_metrics is plain memory the caller places (embedded or
 * static); rp_metrics_init zeroes it and copies the version. The rendered
 * text is a heap string the caller frees.
 */
#ifndef RP_METRICS_H
#define RP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_gate.h"
#include "rp_report.h"
#include "rp_status.h"
#include "rp_verdict.h"

/* The pass-duration buckets, in seconds (upper bounds; +Inf is implied). */
#define RP_METRICS_BUCKETS 14
extern const double rp_metrics_bucket_bounds[RP_METRICS_BUCKETS];
/* The tap's park-delay buckets, in seconds (same count, shorter). */
extern const double rp_metrics_delay_bounds[RP_METRICS_BUCKETS];

typedef enum rp_metrics_backend {
    RP_METRICS_BROKER = 0,
    RP_METRICS_STORE,
    RP_METRICS_BACKEND_COUNT_
} rp_metrics_backend;

typedef enum rp_metrics_scope {
    RP_METRICS_SCOPE_FULL = 0,
    RP_METRICS_SCOPE_LEASES,
    RP_METRICS_SCOPE_COUNT_
} rp_metrics_scope;

typedef enum rp_metrics_result {
    RP_METRICS_RESULT_OK = 0,     /* the pass read everything */
    RP_METRICS_RESULT_UNREADABLE, /* it ran, and some source was unreadable */
    RP_METRICS_RESULT_ERROR,      /* it stopped early */
    RP_METRICS_RESULT_COUNT_
} rp_metrics_result;

/* The control ops as labels: the twelve of CONTRACT section 5 (job triage's
 * jobs, job and cancel, gate, doctor, stats, answer_many and answer_set
 * included), and "unknown" for a request refused before its op was known. */
#define RP_METRICS_OPS 13
/* The outcomes: "ok" and the seven error codes of CONTRACT section 5. */
#define RP_METRICS_OUTCOMES 8

/* The vhost slots: the most vhosts one reaperd watches
 * (core/rp_sweep_vhosts.h's RP_SWEEP_VHOSTS_MAX, checked by a static
 * assert in rp_metrics.c), and the room for a name (RabbitMQ's vhost names
 * are at most 255 bytes). */
#define RP_METRICS_VHOSTS 64
#define RP_METRICS_VHOST_NAME_MAX 256

/* Reaper's policies as labels of reaper_policy_verified: vibey-reap and
 * vibey-reap-classic (core/rp_pass_policy.h). */
#define RP_METRICS_POLICIES 2

typedef struct rp_metrics_histogram {
    uint64_t buckets[RP_METRICS_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
    uint64_t count;
    uint64_t sum_us; /* microseconds */
} rp_metrics_histogram;

/* What the process uses, read from the system by the HTTP adapter
 * (adapters/http/rp_http_process.h). */
typedef struct rp_metrics_process {
    int64_t cpu_us;         /* user + system CPU time */
    int64_t resident_bytes; /* resident set size */
    int64_t open_fds;
    int64_t max_fds;       /* the soft limit on open files */
    int64_t start_time_ms; /* wall clock, since the epoch */
} rp_metrics_process;

/* One watched vhost's series (rp_metrics.vhosts). */
typedef struct rp_metrics_vhost {
    char name[RP_METRICS_VHOST_NAME_MAX]; /* written once, before n_vhosts counts it */
    uint64_t dead_letters_parked;
    uint64_t tap_ignored;
    uint32_t tap_known;
    uint32_t tap_paused;
    int64_t tap_held_bytes;
    rp_metrics_histogram tap_park_delay;
    /* reaper_policy_verified, per name of rp_metrics_policy_name. */
    uint32_t policy_verified[RP_METRICS_POLICIES];
    uint32_t policy_known[RP_METRICS_POLICIES];
} rp_metrics_vhost;

typedef struct rp_metrics {
    char version[64];
    char revision[64];
    int64_t now_ms; /* wall clock of the coming render (rp_metrics_set_clock) */
    uint32_t process_known;
    rp_metrics_process process;
    uint64_t connects[RP_METRICS_BACKEND_COUNT_];
    uint32_t up[RP_METRICS_BACKEND_COUNT_];
    uint64_t reaped[RP_SOURCE_COUNT_][RP_COND_COUNT_][RP_ACTION_COUNT_];
    int64_t sightings_open[RP_COND_COUNT_];
    uint32_t sightings_known;
    uint64_t events_refused;
    int64_t gates_open[RP_GATE_KIND_COUNT_];
    uint32_t gates_open_known;
    uint64_t gates_answered[RP_GATE_KIND_COUNT_][RP_CHOICE_COUNT_];
    rp_metrics_histogram pass_duration[RP_METRICS_SCOPE_COUNT_];
    uint64_t passes[RP_METRICS_SCOPE_COUNT_][RP_METRICS_RESULT_COUNT_];
    int64_t event_lag_ms;
    uint32_t event_lag_known;
    uint64_t control[RP_METRICS_OPS][RP_METRICS_OUTCOMES];
    uint64_t feed_publish_failures;
    uint64_t feed_published;
    int64_t last_ok_ms[RP_METRICS_SCOPE_COUNT_]; /* wall clock; 0: none yet */
    int64_t oldest_gate_ms[RP_GATE_KIND_COUNT_]; /* wall clock it opened; 0: none open */
    uint32_t oldest_gate_known;
    /* The watched vhosts' series: [0, n_vhosts) registered (n_vhosts
     * stored with release after the slot's name, loaded with acquire);
     * [RP_METRICS_VHOSTS] the overflow slot (name ""), rendered once
     * overflowed is set. */
    rp_metrics_vhost vhosts[RP_METRICS_VHOSTS + 1];
    uint32_t n_vhosts;
    uint32_t overflowed;
} rp_metrics;

/* Zeroes *m and records the version and revision for reaper_build_info
 * (each cut to 63 bytes; NULL is ""). */
void rp_metrics_init(rp_metrics *m, const char *version, const char *revision);

/* Whether a ledger event can carry this source, condition and action (the
 * series of reaper_reaped_total rendered from the start). */
bool rp_metrics_reaped_valid(rp_source s, rp_condition c, rp_action a);

/* ---- the hooks: one per event, any thread ------------------------------ */

void rp_metrics_set_up(rp_metrics *m, rp_metrics_backend b, bool up);
/* A connection to the backend was established; every one after the first
 * counts in reaper_reconnects_total. */
void rp_metrics_connected(rp_metrics *m, rp_metrics_backend b);
/* The wall clock (ms since the epoch) the next render measures ages at. */
void rp_metrics_set_clock(rp_metrics *m, int64_t now_ms);
/* The process's figures, as read just now. */
void rp_metrics_set_process(rp_metrics *m, const rp_metrics_process *p);
/* A committed ledger event (the events feed sees every one). Values outside
 * the enums are ignored. */
void rp_metrics_reaped(rp_metrics *m, rp_source s, rp_condition c, rp_action a);
/* The open sightings after a pass, per condition (index by rp_condition;
 * RP_COND_NONE is not rendered). */
void rp_metrics_set_sightings_open(rp_metrics *m, const int64_t by_condition[RP_COND_COUNT_]);
/* ---- the watched vhosts' series (see "The vhost label" above) ---------- */

/* Gives vhost a slot (its series appear at 0 from now). Loop thread, at
 * start-up, before any thread updates a vhost's series; a name already
 * registered: RP_OK, nothing changes. RP_ERR_INVALID: vhost NULL or longer
 * than RP_METRICS_VHOST_NAME_MAX - 1 bytes; RP_ERR_TOO_LARGE: the table is
 * full (the caller logs it: that vhost's counts go to the overflow slot). */
rp_status rp_metrics_vhost_register(rp_metrics *m, const char *vhost) RP_MUSTCHECK;
/* The slot of vhost: 0..n_vhosts-1, or RP_METRICS_VHOSTS (the overflow
 * slot) when it has none (NULL included). Any thread. */
int rp_metrics_vhost_slot(const rp_metrics *m, const char *vhost);
/* The per-vhost hooks, any thread. Each returns true when it was the first
 * update counted in the overflow slot (vhost has no slot): the caller logs
 * that once, naming the vhost. */
/* n dead letters of vhost parked (new parks only, not duplicates). */
bool rp_metrics_dead_letters_parked(rp_metrics *m, const char *vhost, uint64_t n);
/* n deliveries on vhost's tap that were not dead letters (acked, not parked). */
bool rp_metrics_tap_ignored(rp_metrics *m, const char *vhost, uint64_t n);
/* One delivery on the broker-event queue that did not come from
 * amq.rabbitmq.event (a forgery): refused. Returns the new total. */
uint64_t rp_metrics_event_refused(rp_metrics *m);
/* The open gates per kind, as last counted in the store. */
void rp_metrics_set_gates_open(rp_metrics *m, const int64_t by_kind[RP_GATE_KIND_COUNT_]);
/* A gate answered (not "already answered"). */
void rp_metrics_gate_answered(rp_metrics *m, rp_gate_kind k, rp_choice c);
/* A pass ended: its scope, result and duration (negative counts as 0). */
void rp_metrics_pass(rp_metrics *m, rp_metrics_scope scope, rp_metrics_result result,
                     int64_t duration_us);
/* A pass of this scope ended ok at wall clock at_ms. */
void rp_metrics_pass_succeeded(rp_metrics *m, rp_metrics_scope scope, int64_t at_ms);
/* The oldest open gate of each kind: the wall-clock moment it opened (ms),
 * 0 when none of that kind is open. */
void rp_metrics_set_oldest_gates(rp_metrics *m, const int64_t opened_ms[RP_GATE_KIND_COUNT_]);
/* vhost's dead-letter tap: what it holds in memory, whether it is paused
 * (not consuming at its memory bound, or waiting to retry the store). */
bool rp_metrics_set_tap(rp_metrics *m, const char *vhost, int64_t held_bytes, bool paused);
/* A dead letter parked by vhost's tap, delay_us after reaperd received it. */
bool rp_metrics_tap_parked(rp_metrics *m, const char *vhost, int64_t delay_us);
/* A ledger event the events exchange confirmed. */
void rp_metrics_feed_published(rp_metrics *m);
/* The lag of the last broker event handled (now - its timestamp_in_ms). */
void rp_metrics_set_event_lag_ms(rp_metrics *m, int64_t lag_ms);
/* A control request answered. op: the wire name ("reap", "answer", "gates",
 * "status", "jobs", "job", "cancel", "gate", "doctor"); NULL or anything else counts as
 * "unknown". outcome: "ok" or an
 * error code of CONTRACT section 5 (anything else counts as "internal"). */
void rp_metrics_control(rp_metrics *m, const char *op, const char *outcome);
/* A ledger event the feed could not publish (nacked, dropped...). */
void rp_metrics_feed_publish_failed(rp_metrics *m);

/* The label values of the registry's dimensions, by index (static;
 * "unknown" outside): backend, scope, result, control op and outcome. The
 * text-format rendering (adapters/http/rp_http_prom.h) names its series
 * with them. */
const char *rp_metrics_backend_name(int i);
const char *rp_metrics_scope_name(int i);
const char *rp_metrics_result_name(int i);
const char *rp_metrics_op_name(int i);
const char *rp_metrics_outcome_name(int i);

/* ---- reaper's policies (issue 18 item 5) ----------------------------- */

/* The label of policy i in 0..RP_METRICS_POLICIES-1 (NULL outside). */
const char *rp_metrics_policy_name(int i);
/* A reconcile checked policy `name` on vhost: verified there or not.
 * vhost NULL: on every registered vhost (a reconcile that checked none).
 * A name that is not one of reaper's policies, or a vhost without a slot,
 * is ignored (never the overflow slot). Any thread. */
void rp_metrics_set_policy_verified(rp_metrics *m, const char *name, const char *vhost,
                                    bool verified);
/* One policy entry of a reconcile's report: each of its vhost records into
 * that vhost's series; an entry without any (the reconcile checked no
 * vhost) sets every registered vhost's series to its verdict. Borrows pc. */
void rp_metrics_set_policy_check(rp_metrics *m, const rp_policy_check *pc);

#endif
