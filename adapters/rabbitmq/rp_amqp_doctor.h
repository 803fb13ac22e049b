/*
 * rp_amqp_doctor.h - doctor's AMQP probe (core's rp_doctor.h decides what it
 * means): one connect and login through rp_amqp_open, closed at once, and
 * when the connect failed, which layer: a refused TCP connection (nothing
 * listens) or an unreachable host (no route, no such name, a time-out).
 *
 * Threads: any but the loop's (blocking, bounded by the time-outs).
 * Ownership: the options are borrowed; why is the caller's buffer.
 */
#ifndef RP_AMQP_DOCTOR_H
#define RP_AMQP_DOCTOR_H

#include <stddef.h>

#include "rp_amqp_open.h"
#include "rp_config.h"
#include "rp_doctor.h"

rp_doctor_reach rp_amqp_doctor_probe(const rp_amqp_open_opts *o, char *why, size_t n);

/* The probe with cfg's broker.url and TLS files, password, timeout_ms for
 * the connect and each RPC, named "reaper doctor" (borrowed for the call). */
rp_doctor_reach rp_amqp_doctor_probe_config(const rp_config *cfg, const char *password,
                                            int timeout_ms, char *why, size_t n);

#endif
