/*
 * rp_status.h - the one status enum of reaper.
 *
 * Every fallible function returns an rp_status: RP_OK (zero) or a negative
 * code. rp_status_string() gives a stable lower-case name for each code (used
 * in logs and, for the control protocol codes, on the wire); the unit test
 * test_status checks that the table covers every value.
 *
 * Ownership: the strings are static; nothing is allocated.
 */
#ifndef RP_STATUS_H
#define RP_STATUS_H

typedef enum rp_status {
    RP_OK = 0,
    RP_ERR_NOMEM = -1,        /* an allocation failed */
    RP_ERR_INVALID = -2,      /* an argument or input is invalid */
    RP_ERR_BAD_REQUEST = -3,  /* a control request is malformed */
    RP_ERR_UNKNOWN_OP = -4,   /* a control request names no known op */
    RP_ERR_FORBIDDEN = -5,    /* the sender is not allowed */
    RP_ERR_NOT_FOUND = -6,    /* the object does not exist */
    RP_ERR_CONFLICT = -7,     /* the state forbids the change */
    RP_ERR_UNAVAILABLE = -8,  /* a backend cannot be reached now */
    RP_ERR_INTERNAL = -9,     /* a bug or an unexpected library failure */
    RP_ERR_CONFIG = -10,      /* the configuration is refused */
    RP_ERR_IO = -11,          /* a file or socket operation failed */
    RP_ERR_TOO_LARGE = -12,   /* input exceeds a declared limit */
    RP_ERR_TIMEOUT = -13,     /* an operation did not finish in time */
    RP_ERR_CLOSED = -14,      /* the peer or handle is closed */
    RP_ERR_BUSY = -15,        /* asked again too soon (a rate limit); try later */
    RP_STATUS_MIN_ = -16      /* sentinel: one below the last code */
} rp_status;

/* Returns the static name of s ("ok", "nomem", ...), or "unknown_status"
 * for a value outside the enum. Never NULL. */
const char *rp_status_string(rp_status s);

#endif
