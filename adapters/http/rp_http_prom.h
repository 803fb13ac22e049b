/*
 * rp_http_prom.h - the metrics registry (core/rp_metrics.h) in the
 * Prometheus text format (version 0.0.4), as GET /metrics serves it
 * (rp_http.h). The series' names and labels are listed in rp_metrics.h.
 *
 * Ownership: the registry is borrowed for the call; *out is the caller's.
 * Threads: any (every value is read with an atomic load).
 */
#ifndef RP_HTTP_PROM_H
#define RP_HTTP_PROM_H

#include <stddef.h>

#include "rp_common.h"
#include "rp_metrics.h"
#include "rp_status.h"

/* Renders every metric in the text format into *out (a heap string the
 * caller frees; *len its length, len may be NULL). RP_ERR_NOMEM (*out NULL). */
rp_status rp_metrics_render(const rp_metrics *m, char **out, size_t *len) RP_MUSTCHECK;

/* Escapes a label value as the text format requires (backslash, double
 * quote and line feed become \\, \" and \n) into buf (NUL-terminated, cut
 * to cap without splitting an escape). Returns the full escaped length. */
size_t rp_metrics_escape_label(const char *v, char *buf, size_t cap);

#endif
