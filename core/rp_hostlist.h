/*
 * rp_hostlist.h - several broker hosts in one URL: broker.url and
 * broker.management_url may name a comma-separated host list in their
 * authority, libpq's multi-host form:
 *
 *     amqp://reaper@10.0.0.1:5672,10.0.0.2:5672,10.0.0.3:5672/%2f
 *     http://10.0.0.1:15672,10.0.0.2:15672,10.0.0.3:15672
 *
 * One user, one vhost and one path for all hosts (the nodes of one
 * cluster); each host has its own port (the URL's default when absent).
 * These functions only cut the list; the adapters try the hosts in turn.
 *
 * Pure: no I/O, no allocation. Ownership: the URL is borrowed; the
 * single-host URL goes into the caller's buffer.
 */
#ifndef RP_HOSTLIST_H
#define RP_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many hosts in one URL (a check of broker.url says so). */
#define RP_HOSTLIST_MAX 16

/* The number of hosts in url's authority (1 for a plain URL, 0 for a URL
 * without "://"). An empty entry ("h1,,h2", "h1,") counts as a host: use
 * rp_hostlist_check to refuse it. */
size_t rp_hostlist_count(const char *url);

/* The URL with only host i (0-based) of its list kept, into out; false when
 * i is past the list or out is too small. A plain URL is copied unchanged
 * for i == 0. */
bool rp_hostlist_pick(const char *url, size_t i, char *out, size_t outlen);

/* NULL when url's host list is usable, else a sentence naming the problem
 * (an empty host in the list, more than RP_HOSTLIST_MAX hosts). */
const char *rp_hostlist_check(const char *url);

/* The hosts of url's list (host:port as written, without user or path),
 * separated by ",", into out (cut to fit): for log lines and reports. */
void rp_hostlist_hosts(const char *url, char *out, size_t outlen);

#endif
