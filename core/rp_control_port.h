/*
 * rp_control_port.h - what the control part (app/rp_controller.h) needs
 * from outside:
 *
 *   rp_control_transport_port: the broker session the requests come on:
 *     the reply (mandatory, confirmed) and the ack, on the loop thread;
 *     reaperd's own broker user (any thread).
 *   rp_control_store_port: the backends of the use cases, on the store
 *     thread: the pass (reap), the gate port (gates, answer), the gate look
 *     (gate), the jobs port (jobs, job, cancel), the stats readers (stats),
 *     the answer-set port (answer_many, answer_set) and the doctor's
 *     probes, with the few broker facts the gate look's judgement needs.
 *
 * cmd/reaperd/ports.c fills both from the adapters (the AMQP session's
 * publisher and the store thread's pass runner: PostgreSQL, the management
 * API and the AMQP probes); tests/unit/test_app_control.c fills them with
 * the memory adapter.
 *
 * CALLING CONVENTION as core/rp_ports.h. Ownership: self is borrowed and
 * must outlive the part; what a function lends is said with it.
 */
#ifndef RP_CONTROL_PORT_H
#define RP_CONTROL_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_answer_set_port.h"
#include "rp_common.h"
#include "rp_config.h"
#include "rp_doctor.h"
#include "rp_gate_look.h"
#include "rp_jobs_port.h"
#include "rp_pass_request.h"
#include "rp_ports.h"
#include "rp_stats.h"
#include "rp_status.h"

/* How the broker settled a reply. */
typedef enum rp_control_reply_fate {
    RP_CONTROL_REPLY_CONFIRMED = 0, /* taken: the request is acked */
    RP_CONTROL_REPLY_UNDELIVERED,   /* returned (the reply_to queue is gone) or
                                       nacked: acked all the same, logged */
    RP_CONTROL_REPLY_LOST,          /* never confirmed (the connection went,
                                       dropped, refused): left unacked, so
                                       the broker delivers the request again */
    RP_CONTROL_REPLY_FATE_COUNT_
} rp_control_reply_fate;

/* Loop thread: a reply settled; outcome is the transport's word for the
 * log ("confirmed", "returned", "lost", ...), lent for the call. */
typedef void (*rp_control_replied_fn)(void *arg, rp_control_reply_fate fate, const char *outcome);

typedef struct rp_control_transport_port {
    void *self;
    /* Whether a reply can be queued now (the session has a publisher). */
    bool (*connected)(void *self);
    /* Queues a reply: body (copied) to reply_to on the default exchange,
     * mandatory, with content_type, app_id "reaperd", user_id own_user
     * (NULL: none) and correlation_id (NULL: none). RP_OK: done is called
     * later, once; an error (RP_ERR_NOMEM): done is never called. */
    rp_status (*reply)(void *self, const char *reply_to, const char *content_type,
                       const char *own_user, const char *correlation_id, rp_bytes body,
                       rp_control_replied_fn done, void *arg);
    /* Acks a delivery of connection generation (a stale one is dropped). */
    void (*ack)(void *self, unsigned generation, uint64_t tag);
    /* reaperd's own broker user (cfg's broker.url) into buf (n bytes);
     * false when unknown. Any thread. */
    bool (*own_user)(void *self, const rp_config *cfg, char *buf, size_t n);
} rp_control_transport_port;

/* The doctor's probes and the strings their facts point into (the
 * filler's). */
typedef struct rp_control_doctor rp_control_doctor;

/* What the op stats reads through (core/rp_stats.h). */
typedef struct rp_control_stats_ports {
    rp_stats_store_port store;    /* the job table, the samples, the sightings */
    const rp_broker_port *broker; /* the queue listing; NULL: none (no management
                                     API client), said in the reply */
    rp_clock_port clock;          /* the time the rows are read at (Unix ms) */
} rp_control_stats_ports;

typedef struct rp_control_store_port {
    void *self;
    /* The configuration the store thread's runner holds (borrowed until the
     * next call of any function of this port). Store thread. */
    const rp_config *(*config)(void *self);
    /* Connects the store when needed: RP_OK, or RP_ERR_UNAVAILABLE. */
    rp_status (*ready)(void *self);
    /* Runs one pass (the store unreachable is in req's report, never
     * fatal), then reads the open sightings and the next lease deadline. */
    void (*reap)(void *self, rp_pass_request *req);
    /* The gate port (lent for the part's life; answers go through the
     * events feed). */
    const rp_gate_port *(*gates)(void *self);
    /* How long a replay's claim is live, before an answer or a look. */
    void (*set_claim_seconds)(void *self, int64_t seconds);
    /* The gate look port over the store (filled into *out). */
    void (*gate_look)(void *self, rp_gate_look_port *out);
    /* The jobs port over the store (filled into *out). */
    void (*jobs)(void *self, rp_jobs_port *out);
    /* The stats readers over the store and the broker (filled into *out;
     * broker lent until the next call of any function of this port). */
    void (*stats)(void *self, rp_control_stats_ports *out);
    /* The answer-set port over the store (filled into *out; issue 20 item
     * 3). */
    void (*answer_sets)(void *self, rp_answer_set_port *out);
    /* This process's replay claimer name (lent for the part's life). Any
     * thread. */
    const char *(*claimer)(void *self);
    /* Whether stored properties carry a "kept without its headers" note
     * (the reason into why, n bytes). Any thread. */
    bool (*kept_refusal)(void *self, const char *props_json, char *why, size_t n);
    /* Whether vhost is cfg's broker.url's or one of its broker.vhosts. Any
     * thread. */
    bool (*vhost_is_ours)(void *self, const rp_config *cfg, const char *vhost);
    /* Loop: a new set of probes (NULL when out of memory); doctor_free(NULL)
     * is fine. */
    rp_control_doctor *(*doctor_new)(void *self);
    void (*doctor_free)(void *self, rp_control_doctor *d);
    /* Store thread: every probe against cfg (borrowed for the call), each
     * bounded by its time-out. */
    void (*doctor_run)(void *self, rp_control_doctor *d, const rp_config *cfg);
    /* What the probes saw (lent until doctor_free). */
    const rp_doctor_facts *(*doctor_facts)(void *self, const rp_control_doctor *d);
} rp_control_store_port;

#endif
