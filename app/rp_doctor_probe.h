/*
 * rp_doctor_probe.h - every probe of the doctor run in order into core's
 * facts (core/rp_doctor.h judges them): what the configuration says
 * (the URLs, the DSN, the schema, the tap queue, the consumer timeout),
 * broker.url's user and vhost, one AMQP login, the management API, the
 * store; each probe bounded by RP_DOCTOR_TIMEOUT_MS. A broker.url that does
 * not parse leaves AMQP not tried and the management API not tried with
 * "broker.url does not parse". Run by reaperd --doctor and by the control
 * op doctor (app/rp_ctl_doctor.c), through the probe port
 * (core/rp_doctor_probe_port.h).
 *
 * Ownership: out owns the two reasons' buffers; the rest of its facts
 * points into cfg and into the port's self, which must outlive it.
 * Threads: a thread that is not the loop's (every probe blocks).
 */
#ifndef RP_DOCTOR_PROBE_H
#define RP_DOCTOR_PROBE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdio.h>

#include "rp_config.h"
#include "rp_doctor.h"
#include "rp_doctor_probe_port.h"

/* Each probe's own bound: a doctor answers in seconds, not a pass's time. */
#define RP_DOCTOR_TIMEOUT_MS 5000

/* What the probes saw, with the reasons' text. */
typedef struct rp_doctor_probed {
    rp_doctor_facts facts;
    char amqp_why[512];
    char mgmt_why[256];
} rp_doctor_probed;

void rp_doctor_probe_run(const rp_doctor_probe_port *port, const rp_config *cfg,
                         rp_doctor_probed *out);

/* reaperd --doctor's output: the facts judged (rp_doctor_judge) and
 * written to f as text, or as one JSON object and a newline with json, then
 * f flushed. Returns the exit code: rp_doctor_exit_code (0 when no check
 * failed), 1 when out of memory (logged) or f could not be flushed. */
int rp_doctor_output(FILE *f, const rp_doctor_facts *facts, bool json);

/* reaperd --doctor's run: probe(arg) on a thread of its own ("doctor")
 * while base's loop turns (it carries what the probes call through it, e.g.
 * the management API's bridge), then, on the loop, before_join(arg) (may
 * be NULL) and the thread joined. RP_ERR_INTERNAL (logged "cannot start
 * the probe thread") when the thread cannot start: probe never ran.
 * Loop thread; base borrowed for the call. */
rp_status rp_doctor_probe_on_thread(struct event_base *base, void (*probe)(void *arg),
                                    void (*before_join)(void *arg), void *arg) RP_MUSTCHECK;

#endif
