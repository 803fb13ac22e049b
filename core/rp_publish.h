/*
 * rp_publish.h - handing a committed ledger event to the publisher port.
 *
 * The ledger is the record; the events exchange is a copy of it for
 * listeners. So a publish that fails does not undo or fail the move it
 * reports: it becomes a note in the pass report, naming the ledger sequence
 * number, so that an operator can find the event that listeners missed.
 *
 * Ownership: everything is borrowed for the call; the note is copied into
 * the report.
 */
#ifndef RP_PUBLISH_H
#define RP_PUBLISH_H

#include "rp_ports.h"
#include "rp_report.h"

/* Publishes the event (seq/at from ev, kind RP_LEDGER_QUEUE_REAPED, payload
 * v). Returns RP_OK whether or not the publish worked (a failure is noted in
 * report); RP_ERR_NOMEM only when the note cannot be added. */
rp_status rp_publish_event(const rp_ports *ports, const rp_event_ref *ev, const rp_verdict *v,
                           rp_report *report) RP_MUSTCHECK;

#endif
