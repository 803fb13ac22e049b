/*
 * control_answer_set.h - the control ops `answer_many` (make an answer set,
 * or count it: dry_run) and `answer_set` (its progress, or its cancel)
 * (issue #20 item 3, proto/SCHEMA.md): the use case on the store thread
 * over the answer-set port, and its reply on the loop. The set itself is
 * worked through by app/rp_answer_sets.h, in this reaperd or another.
 *
 * Ownership: rp_ctl_answer_set owns what it holds (cleanup frees it).
 */
#ifndef RP_CTL_ANSWER_SET_H
#define RP_CTL_ANSWER_SET_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_answer_set_port.h"
#include "rp_proto.h"

typedef struct rp_ctl_answer_set {
    rp_status st;             /* the port's status */
    rp_answer_set_made made;  /* answer_many */
    rp_answer_set_row row;    /* answer_set */
} rp_ctl_answer_set;

/* Zeroing (calloc) is a valid initial state. */
void rp_ctl_answer_set_cleanup(rp_ctl_answer_set *a);

/* Store thread: runs req (op answer_many or answer_set) through port; user
 * is the broker-validated user (the set's requested_by, a cancel's by). */
void rp_ctl_answer_set_run(const rp_answer_set_port *port, const rp_request *req,
                           const char *user, rp_ctl_answer_set *a);

/* Loop: the reply of a run. RP_OK: *buf holds the encoded result (*est its
 * encoder's status); else the error to answer with, its reason in msg. */
rp_status rp_ctl_answer_set_reply(const rp_request *req, const rp_ctl_answer_set *a,
                                  const char *user, rp_encoding enc, rp_proto_buf *buf,
                                  rp_status *est, char *msg, size_t n);

#endif
