/*
 * rp_verdict_vhost.h - the vhost a verdict is about (issue #19 item 1:
 * "verdict objects name their vhost"), read from its object: a queue's
 * (`queue:<vhost>:<name>`, the vhost with '%' and ':' %XX-encoded) or a
 * dead letter's (`dead_letter:id:<vhost>/...` or
 * `dead_letter:sha256:<vhost>/<hex>`, the vhost %XX-escaped as
 * rp_dl_escape does). Jobs, projects and kinds name no vhost. The wire
 * codec and the ledger write it as the verdict's `vhost` field
 * (proto/SCHEMA.md section 5.2), appended after `trusted`.
 *
 * Pure; nothing allocated. Ownership: v borrowed for the call.
 */
#ifndef RP_VERDICT_VHOST_H
#define RP_VERDICT_VHOST_H

#include <stdbool.h>
#include <stddef.h>

#include "rp_verdict.h"

/* Room for any vhost (RabbitMQ's names are at most 255 bytes). */
#define RP_VERDICT_VHOST_MAX 512

/* The vhost of v's object, decoded, into out (n bytes). false (out "")
 * when the object names none, does not decode, or out is too small. */
bool rp_verdict_vhost(const rp_verdict *v, char *out, size_t n);

#endif
