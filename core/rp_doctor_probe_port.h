/*
 * rp_doctor_probe_port.h - the doctor's probes (app/rp_doctor_probe.h runs
 * them in order into core's rp_doctor_facts): broker.url's user and vhost,
 * one AMQP login, the management API's half, the store's half.
 *
 * cmd/reaperd/ports.c fills it from adapters/rabbitmq/rp_amqp_doctor,
 * adapters/management/rp_mgmt_doctor (over a bridge, when there is one)
 * and adapters/postgres/rp_pg_doctor; tests/unit/test_app_doctor_probe.c
 * with a fake.
 *
 * CALLING CONVENTION (the shape of rp_ports.h: p->fn(p->self, ...)). Every
 * call blocks, each bounded by timeout_ms, on one thread that is not the
 * loop's (reaperd --doctor's probe thread, the daemon's store thread).
 * Ownership: self is borrowed; the strings a probe leaves in *f, *user,
 * *vhost and *why are lent for self's life (they live in self); cfg is
 * borrowed for the call.
 */
#ifndef RP_DOCTOR_PROBE_PORT_H
#define RP_DOCTOR_PROBE_PORT_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_config.h"
#include "rp_doctor.h"

typedef struct rp_doctor_probe_port {
    void *self;
    /* broker.url's user and vhost; false when the URL does not parse
     * (neither the AMQP login nor the management API is tried then). */
    bool (*identity)(void *self, const rp_config *cfg, const char **user, const char **vhost);
    /* One AMQP login: its reach, and why (n bytes) when not ok. */
    rp_doctor_reach (*amqp)(void *self, const rp_config *cfg, int timeout_ms, char *why,
                            size_t n);
    /* The management API's half of *f (f->user and f->vhost are set).
     * False when there is no client to ask: *why says why. */
    bool (*mgmt)(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *f,
                 const char **why);
    /* The store's half of *f. */
    void (*store)(void *self, const rp_config *cfg, int timeout_ms, rp_doctor_facts *f);
} rp_doctor_probe_port;

#endif
