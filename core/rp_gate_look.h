/*
 * rp_gate_look.h - looking inside one gate (issue #20 item 2; the control op
 * `gate`, proto/SCHEMA.md): the gate, its job, and for a dead letter the
 * stored message: its properties and headers as the store keeps them (JSON
 * text), and its body, a window of it at a time (base64, so that any bytes
 * travel in either encoding of the protocol, within a reply's largest
 * string).
 *
 * adapters/postgres fills the port (rp_pg_gate_look_port). Whether the gate
 * could be replayed now is decided by core's replay checks (rp_replay.h)
 * from what the look returns.
 *
 * Ownership: an rp_gate_look owns its gate and strings
 * (rp_gate_look_cleanup frees them). Threading: the store thread.
 */
#ifndef RP_GATE_LOOK_H
#define RP_GATE_LOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_gate.h"
#include "rp_job.h"
#include "rp_status.h"

/* The largest window of a body one look returns: 32 KiB, whose base64
 * (43,692 bytes) stays within a reply's largest string (64 KiB). */
#define RP_GATE_LOOK_WINDOW_MAX 32768
/* The window when none is asked for: the first 4 KiB. */
#define RP_GATE_LOOK_WINDOW_DEFAULT 4096

typedef struct rp_gate_look {
    rp_gate gate;
    /* Its job. */
    rp_job_state job_state;
    char *job_kind;
    int32_t attempts, max_attempts;
    /* The stored dead letter (bus_dead_lettered gates). */
    bool has_dead_letter;
    char *vhost;             /* where it was found; NULL when not known */
    bool has_first_death;
    rp_time_ms first_death_at;
    rp_time_ms parked_at;
    char *headers_json;      /* as stored (JSON text) */
    char *properties_json;   /* as stored (JSON text) */
    int64_t body_size;       /* bytes stored */
    bool body_truncated;     /* the message's body was longer: cut when parked */
    int64_t window_offset;   /* the window returned: from this byte */
    int64_t window_len;      /* this many bytes (0 past the end) */
    char *window_base64;     /* those bytes, base64 (no line breaks) */
} rp_gate_look;

void rp_gate_look_init(rp_gate_look *l);
void rp_gate_look_cleanup(rp_gate_look *l);

typedef struct rp_gate_look_port {
    void *self;
    /* Reads gate with the body window [offset, offset + len) (len
     * 1..RP_GATE_LOOK_WINDOW_MAX, offset >= 0). RP_OK; RP_ERR_NOT_FOUND (no
     * such gate); RP_ERR_INVALID (a window outside its bounds);
     * RP_ERR_UNAVAILABLE; RP_ERR_INTERNAL; RP_ERR_NOMEM. */
    rp_status (*look)(void *self, int64_t gate, int64_t offset, size_t len, rp_gate_look *out);
} rp_gate_look_port;

#endif
