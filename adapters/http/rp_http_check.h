/*
 * rp_http_check.h - reaperd --healthcheck, the HTTP client side: asks a running reaperd's /healthz,
 * found where the configuration in force puts it (http.listen), so that a
 * container's HEALTHCHECK follows the configuration rather than a port
 * written into the image.
 *
 * A one-shot command, not part of the loop: it blocks, for at most the
 * timeout given.
 */
#ifndef RP_HTTP_CHECK_H
#define RP_HTTP_CHECK_H

#include <stddef.h>

/* GETs /healthz from the address http.listen names (listen: host:port,
 * [v6]:port or :port); a wildcard host (empty, 0.0.0.0, ::) is asked on
 * loopback. Gives up after timeout_ms for the whole exchange. Returns 0
 * when the answer is 200, 1 otherwise (an error, a timeout, another status:
 * err says which, NUL-terminated, cut to errlen). */
int rp_healthcheck(const char *listen, int timeout_ms, char *err, size_t errlen);

/* When process 1 is reaperd (as in its container), writes the FILE of its
 * --config FILE / -c FILE / --config=FILE into buf and returns buf; NULL
 * when process 1 is not reaperd, has no --config, or cannot be read. */
const char *rp_healthcheck_pid1_config(char *buf, size_t cap);

#endif
