/*
 * rp_console.h - the browser console's decisions (adapters/http/rp_console.h
 * serves it): who may do what through it, and the HTTP Basic credentials.
 *
 * The console sends every read and every answer as a control request
 * (proto/SCHEMA.md), the way reaperctl does: over an AMQP connection that
 * reaperd opens as the signed-in broker user, so control.allowed_users and
 * the ledger's broker-validated user apply unchanged. Only reads may go
 * without a sign-in, and only when http.console_read_anonymous is on: they
 * then run as reaperd's own broker user. The console offers the ops below
 * and no other (reap, cancel, doctor stay with reaperctl).
 *
 * Pure: no I/O, no logging. Ownership: the caller's buffers.
 */
#ifndef RP_CONSOLE_H
#define RP_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum rp_console_access {
    RP_CONSOLE_AS_USER = 0,  /* send it as the signed-in user */
    RP_CONSOLE_AS_SELF,      /* an anonymous read: send it as reaperd's own user */
    RP_CONSOLE_SIGN_IN,      /* 401: a sign-in is needed */
    RP_CONSOLE_NOT_OFFERED,  /* 403: the console does not send this op */
    RP_CONSOLE_ACCESS_COUNT_
} rp_console_access;

/* A sentence for each ("" for RP_CONSOLE_AS_USER and AS_SELF); "unknown"
 * outside the enum. Static. */
const char *rp_console_access_string(rp_console_access a);

/* Whether the console sends op (its wire name) at all, and whether it is a
 * read (gates, gate, status). The writes: answer, answer_many (a group's
 * bulk answer and its dry run) and answer_set (its progress; it can
 * cancel, so it needs a sign-in like the other two). */
bool rp_console_op_offered(const char *op);
bool rp_console_op_is_read(const char *op);

/* The decision for one request: op its wire name (NULL or unknown: not
 * offered), signed_in whether credentials came with it, anonymous_read
 * http.console_read_anonymous. */
rp_console_access rp_console_decide(const char *op, bool signed_in, bool anonymous_read);

/* Parses an Authorization header value "Basic base64(user:password)".
 * true with both NUL-terminated in user (ucap) and password (pcap); false
 * when the header is not Basic, the base64 is malformed, there is no colon,
 * the user is empty, either does not fit, or either holds a control
 * character (a NUL, a newline). On false both buffers are zeroed. */
bool rp_console_basic_parse(const char *header, char *user, size_t ucap, char *password,
                            size_t pcap);

#endif
