/*
 * rp_http_process.h - the process_* figures of /metrics (CPU time,
 * resident memory, open and maximum descriptors, start time), read from
 * /proc/self/stat, /proc/stat and /proc/self/fd, as every Prometheus client
 * library reports them.
 *
 * Threads: the loop (the boot time is read once and kept in a static).
 * Reads /proc only: never blocks on the network.
 */
#ifndef RP_HTTP_PROCESS_H
#define RP_HTTP_PROCESS_H

#include <stdbool.h>

#include "rp_metrics.h"

/* Fills *out; false (out untouched) when /proc cannot be read. */
bool rp_http_process_sample(rp_metrics_process *out);

#endif
