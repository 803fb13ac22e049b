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

/* Hands the GateAnswered event of a committed answer (res->committed) to
 * publisher. Returns the publisher's status; RP_OK when there is no
 * publisher or nothing was committed (an already answered gate). The answer
 * itself stands whatever this returns: the ledger is the record. */
rp_status rp_publish_answer(const rp_publisher_port *publisher, int64_t gate_id, const char *by,
                            const char *note, const rp_answer_result *res);

/* A gate port that answers through another one and hands every answer it
 * commits to a publisher, so that every caller of the gate port (the
 * control protocol's retry and dismiss, the replay's settle) feeds the
 * events exchange. rp_gate_feed_wrap copies ports->gates and
 * ports->publisher into f (set the publisher first) and points ports->gates
 * at f; f must outlive ports. A publish that fails is the publisher's to
 * report (the daemon's feed logs it). Same thread rules as the ports. */
typedef struct rp_gate_feed {
    rp_gate_port inner;
    rp_publisher_port publisher;
} rp_gate_feed;

void rp_gate_feed_wrap(rp_gate_feed *f, rp_ports *ports);

#endif
