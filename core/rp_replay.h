/*
 * rp_replay.h - whether a parked dead letter may be replayed, and where to
 * (CONTRACT section 5: "only when that queue is owned and the body was
 * stored whole"; section 6: header values "are untrusted ... and never used
 * to choose a replay destination outside the owned pattern").
 *
 * The destination is the origin queue as the store keeps it: rendered by
 * rp_untrusted_render (quoted, escaped, cut to 200 characters).
 * rp_replay_origin_parse undoes that rendering exactly; a rendering that
 * shows a cut ("..." after the closing quote) cannot give the name back and
 * is refused, as is one that is not a rendering at all.
 *
 * Ownership: *name is a heap string the caller frees; *why is static.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#include "rp_common.h"
#include "rp_status.h"

/* The queue name a rendering shows. RP_ERR_INVALID (with *why) when it is
 * not a whole rendering, shows a cut, or names something that cannot be a
 * queue (empty, a NUL byte, longer than 255 bytes); RP_ERR_NOMEM. */
rp_status rp_replay_origin_parse(const char *rendered, char **name, const char **why) RP_MUSTCHECK;

/* The decision for one dead letter: RP_OK with the destination in *queue
 * (heap, caller frees), or RP_ERR_CONFLICT with *why saying why not
 * (static text). RP_ERR_NOMEM. owned is the owned_queue_pattern. */
rp_status rp_replay_decide(const char *rendered_origin, bool body_truncated,
                           const pcre2_code *owned, char **queue, const char **why) RP_MUSTCHECK;

/* Whether a stored `expiration` property is one the broker takes: a
 * non-negative integer of milliseconds written in decimal digits only (no
 * sign, no space), at most 4294967295 (RabbitMQ refuses anything else with
 * 406 PRECONDITION_FAILED and closes the channel). s is len bytes, not
 * NUL-terminated. */
bool rp_replay_expiration_valid(const char *s, size_t len);

/* Whether queue is one of reaper's own (the control queue, the tap queue,
 * given in own[0..n)) or a server-named queue ("amq." prefix: the broker
 * events subscription is one): never a replay destination, whatever
 * owned_queue_pattern says. NULL entries in own are skipped. */
bool rp_replay_reserved_queue(const char *queue, const char *const *own, size_t n);

#endif
