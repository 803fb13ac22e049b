/*
 * rp_mgmt_loop.h - a management client with a loop thread of its own, for
 * callers that have no libevent loop turning: `reaperd --once`,
 * `--check-config`, tools and tests. It makes an event_base (after
 * evthread_use_pthreads()), an rp_mgmt_http on it, an rp_mgmt_bridge over
 * that, and one thread that runs the base until rp_mgmt_loop_free().
 *
 * The daemon does NOT need this: it makes its own rp_mgmt_http and
 * rp_mgmt_bridge on its loop (see rp_mgmt_bridge.h).
 *
 * Threads: rp_mgmt_loop_new and rp_mgmt_loop_free on one thread (not the
 * loop's); the bridge from any thread but the loop's.
 * Ownership: the loop owns the base, the client and the bridge;
 * rp_mgmt_loop_bridge() lends the bridge until rp_mgmt_loop_free().
 */
#ifndef RP_MGMT_LOOP_H
#define RP_MGMT_LOOP_H

#include "rp_mgmt_bridge.h"
#include "rp_mgmt_http.h"

typedef struct rp_mgmt_loop rp_mgmt_loop;

/* NULL with *err set to a static reason when the URL is refused (see
 * rp_mgmt_http_new) or the loop or its thread cannot be made. */
rp_mgmt_loop *rp_mgmt_loop_new(const rp_mgmt_http_params *params, const char **err);
rp_mgmt_bridge *rp_mgmt_loop_bridge(rp_mgmt_loop *l);
/* Closes the bridge (releasing waiting callers), stops and joins the loop
 * thread, then frees everything. */
void rp_mgmt_loop_free(rp_mgmt_loop *l);

#endif
