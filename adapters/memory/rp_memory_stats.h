/*
 * rp_memory_stats.h - the stats store port (core/rp_stats.h) over the
 * memory store, for unit tests of the op stats and of its use case.
 *
 * kinds counts the store's jobs per (project, kind): waiting the claimable
 * ones at the store's clock (ready, run_after reached, no dependency or a
 * succeeded one), active the leased ones, and the oldest claimable job's
 * claimable-since (the later of its run_after and its dependency's
 * finished_at). The memory store keeps no creation or success times, so
 * intake and drained are 0 and only groups with waiting or active jobs are
 * listed. queue_rates says not known (no samples are kept). sightings lists
 * the open sightings that flag rows, a job subject's with its job's project
 * and kind. RP_MEM_LIST_SIGHTINGS's injected failure fails sightings.
 *
 * Ownership as rp_stats.h: what the port returns is the caller's. The
 * port's self borrows the store.
 */
#ifndef RP_MEMORY_STATS_H
#define RP_MEMORY_STATS_H

#include "rp_memory.h"
#include "rp_stats.h"

void rp_memory_stats_port(rp_memory *m, rp_stats_store_port *out);

#endif
