/*
 * rp_object.h - the names of the objects a verdict is about (the "object"
 * field of CONTRACT section 5).
 *
 *   job:<id>                 a row of the job table, id in decimal
 *   queue:<vhost>:<name>     a broker queue, e.g. "queue:/:vibey.x"
 *   dead_letter:<identity>   a dead letter, identity per rp_deadletter.h
 *   project:<project>        a project of the job table (sighting subjects)
 *   kind:<project>:<kind>    the jobs of one kind in one project (issue 18:
 *                            WAITING_DEPTH), the project encoded as a vhost
 *
 * In a queue object (and a kind object's project) the vhost has '%' written as "%25" and ':' as "%3A", so
 * that the first ':' after "queue:" always ends the vhost and two different
 * queues never share an object name (a queue name may hold any character, a
 * vhost name may hold ':'). The name is written as it is. For the usual vhost
 * "/" nothing is encoded.
 *
 * Ownership: every function that returns a string stores a new heap string
 * in *out that the caller frees with free(); on failure *out is NULL.
 * Arguments are borrowed for the duration of the call.
 */
#ifndef RP_OBJECT_H
#define RP_OBJECT_H

#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"

rp_status rp_object_job(int64_t id, char **out) RP_MUSTCHECK;
rp_status rp_object_queue(const char *vhost, const char *name, char **out) RP_MUSTCHECK;
rp_status rp_object_dead_letter(const char *identity, char **out) RP_MUSTCHECK;
rp_status rp_object_project(const char *project, char **out) RP_MUSTCHECK;
rp_status rp_object_kind(const char *project, const char *kind, char **out) RP_MUSTCHECK;

/* Splits a queue object back into its decoded vhost and name (two new heap
 * strings, both NULL on failure). RP_ERR_INVALID when object is not a queue
 * object or its vhost encoding is broken. */
rp_status rp_object_queue_split(const char *object, char **vhost, char **name) RP_MUSTCHECK;
/* The same for a kind object: its decoded project and kind. */
rp_status rp_object_kind_split(const char *object, char **project, char **kind) RP_MUSTCHECK;

#endif
